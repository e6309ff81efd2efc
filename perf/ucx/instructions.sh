#!/usr/bin/env bash
# perf/ucx/instructions.sh [--prefix HOSHMEM_PREFIX] [--count N] [--keep] [--only PAIRING]...
# User-space instructions per operation, hoshmem next to Open MPI's OSHMEM over UCX, on the
# software HCA (test/softhca), a node per PE, in one run:
#   rc  hoshmem HOSHMEM_ATOMICS=hw HOSHMEM_TRANSPORT=rc  vs OSHMEM UCX_TLS=rc_mlx5,ud_mlx5:aux
#   dc  hoshmem HOSHMEM_ATOMICS=hw HOSHMEM_TRANSPORT=dc  vs OSHMEM UCX_TLS=dc_mlx5,ud_mlx5:aux
#   ud  hoshmem HOSHMEM_ATOMICS=sw HOSHMEM_TRANSPORT=ud  vs OSHMEM UCX_TLS=ud_mlx5
#       (hoshmem without its progress thread, HOSHMEM_UD_PROGRESS_THREAD=0, so that all of its
#       work for an operation is in the counted thread, as UCX's is)
# Rows: p, 8-byte putmem and putmem_nbi, 8-byte getmem, g, long add, fetch_add, compare_swap,
# swap, int add and fetch_add (32-bit: mlx5 masked atomics in all-HW mode), and a quiet after 16
# 8-byte putmem_nbi (the puts not counted). Ratio = hoshmem/OSHMEM: < 1 means fewer instructions.
#
# Method. perf/ucx/instr_ops.c (one source, built with each library's oshcc) calls each operation
# N times (--count, default 200) inside a noinline op_<row> function, after 100 uncounted warm-up
# calls per row; non-blocking rows quiet every 8 calls outside the counted function, so no counted
# call waits for room. PE 0 runs under `valgrind --tool=callgrind --collect-atstart=no
# --toggle-collect=op_* --separate-threads=yes --dump-instr=yes`: only the calling thread's
# instructions inside op_* count (the library's and the model's other threads, e.g. hoshmem's UD
# progress thread and softhca's doorbell and message threads, are not counted), one profile per
# row (CALLGRIND_DUMP_STATS_AT). perf/ucx/cg_rows.py then takes out of each row:
#   - model code: instructions of the softhca libraries (libibverbs/libmlx5/kernel shim) and of
#     what they call, should any run in the calling thread (normally none: the doorbell thread is
#     kept polling, SOFTHCA_DOORBELL_SPIN_US=1000000, so doorbell stores never fault);
#   - waiting: under valgrind the model's threads run only when the calling thread yields or its
#     time slice ends, so a fetching operation's (and quiet's) waiting loop polls from a few
#     (hoshmem over UD, whose loop yields) to thousands of times (UCX; hoshmem's RC/DC loop spins
#     1,000 times before it yields). polls = calls per operation of the most called waiting
#     function ($wait_re below); waiting code = contexts under one of them (callgrind
#     --separate-callers=6). Counted once per operation, as if the completion had been there at
#     the first look (so the poll that finds it, "from the completion to the return", stays in):
#     any instruction executed at least 24 times per operation (no operation here loops that
#     often by itself: quiet retires 16 completions), and in waiting code any instruction every
#     poll runs (at least polls/2 per operation) or that ran at least 17 times per operation (a
#     loop's slower path taken every so many polls); the rest of their executions is dropped.
#     Waiting code that ran 2-16 times per operation is kept and shown as `unsure` (completion
#     processing, or the slower paths of a short wait: the true count lies between the two).
#   - the empty baseline: op_empty (the same call, nothing in it).
# per operation = (total - model - waiting) / N - empty.  What remains: the API call, the library
# down to the doorbell (WQE, doorbell record, BlueFlame/doorbell store), and for fetching rows and
# quiet the poll that finds the completion and the way back (and the `unsure` residue above).
# Numbers from a VM without a PMU (`perf stat -e instructions:u` is not supported here), hence
# callgrind. Top functions: for each row where hoshmem is above half of OSHMEM's, hoshmem's
# largest self costs per operation (waiting and model excluded) follow the table.
# Needs Debian's valgrind (scripts/debian-packages.txt), openmpi-bin, libopenmpi-dev, ucx-utils.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here="$root/perf/ucx"
softhca="$root/test/softhca/with-softhca"
prefix="" count=200 keep=0 only=() top=8
while (($#)); do
  case $1 in
    --prefix) prefix=$2; shift ;;
    --count) count=$2; shift ;;
    --keep) keep=1 ;;
    --only) only+=("$2"); shift ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "instructions.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
pairings=(rc dc ud)
((${#only[@]})) && pairings=("${only[@]}")
work=$(mktemp -d /tmp/instr.XXXXXX)
token="instr$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')"
cleanup() { ((keep)) || rm -rf "$work"; rm -f /dev/shm/softhca."$token"*; }
trap cleanup EXIT
log() { echo "instructions: $*" >&2; }
command -v valgrind >/dev/null && command -v python3 >/dev/null ||
  { log "needs valgrind and python3 (scripts/deps.sh installs valgrind)"; exit 1; }

if [[ -z "$prefix" ]]; then
  prefix="$work/prefix"
  log "building hoshmem (bazel run //:install; log $work/bazel.log)"
  (cd "$root" && bazel run --jobs=2 //:install -- "$prefix") >"$work/bazel.log" 2>&1
  rc=$?
  (cd "$root" && bazel shutdown) >/dev/null 2>&1
  ((rc == 0)) || { tail -n 10 "$work/bazel.log" >&2; log "hoshmem build failed"; exit 1; }
fi
log "compiling perf/ucx/instr_ops.c with each library's oshcc"
"$prefix/bin/oshcc" -O2 -g -o "$work/instr_hoshmem" "$here/instr_ops.c" || exit 1
/usr/bin/oshcc -O2 -g -o "$work/instr_oshmem" "$here/instr_ops.c" || exit 1
"$softhca" true || exit 1
lib=$(cd "${SOFTHCA_BUILD_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/softhca}" && pwd -P)

# PE 0 (PMIX_RANK 0) under callgrind; the target PE runs natively.
cat >"$work/under_callgrind.sh" <<EOS
#!/bin/sh
if [ "\${PMIX_RANK:-0}" = 0 ]; then
  exec valgrind --tool=callgrind --separate-threads=yes --collect-atstart=no \\
    --compress-strings=no --compress-pos=no --dump-instr=yes --separate-callers=6 --toggle-collect='op_*' \\
    --callgrind-out-file="\$INSTR_OUT/cg.%p" "\$@" 2>"\$INSTR_OUT/valgrind.log"
fi
exec "\$@"
EOS
chmod +x "$work/under_callgrind.sh"

# The functions a waiting loop calls once per look (hoshmem's and Open MPI/UCX's): their calls
# per operation are the polls, and code under them is the waiting code cg_rows.py scales.
wait_re='Transport::wait_for|Transport::progress\(|ud::Transport::serve\(|Transport::take_slot|'
wait_re+='ucp_worker_progress|ucp_request_check_status|opal_progress|sched_yield'
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
n=0
measure() {  # label lib cmd...: run, then the per-row numbers into $work/<label>.rows
  local label=$1; shift
  local out="$work/$label" t0=$SECONDS
  n=$((n + 1)); mkdir -p "$out"
  log "running $label"
  INSTR_OUT="$out" SOFTHCA_FABRIC="$token-$n" SOFTHCA_DOORBELL_SPIN_US=1000000 \
    timeout -k 10 900 "$@" >"$out/stdout" 2>"$out/stderr"
  local rc=$?
  rm -f /dev/shm/softhca."$token-$n"*
  grep -h 'WRONG' "$out/stdout" >&2
  local files; files=$(ls "$out"/cg.*.*-01 2>/dev/null)
  if ((rc)) || [[ -z "$files" ]]; then
    log "$label failed (status $rc); stderr tail:"; tail -n 4 "$out/stderr" "$out/valgrind.log" >&2
    return
  fi
  python3 "$here/cg_rows.py" "$lib" "$count" "$top" "$wait_re" $files >"$work/$label.rows"
  log "$label took $((SECONDS - t0)) s"
}
hosh() {  # label env...
  local label=$1; shift
  measure "$label" "$softhca" env HOSHMEM_PES_PER_NODE=1 "$@" INSTR_OUT="$work/$label" \
    "$prefix/bin/oshrun" -np 2 "$work/under_callgrind.sh" "$work/instr_hoshmem" "$count"
}
osh() {  # label tls env...
  local label=$1 tls=$2 xs=() e
  shift 2
  for e in "$@" LD_LIBRARY_PATH="$lib" LD_PRELOAD="$lib/libsofthca_kernel.so" SOFTHCA_FABRIC="$token-$((n + 1))" \
    SOFTHCA_DOORBELL_SPIN_US=1000000 INSTR_OUT="$work/$label" UCX_TLS="$tls" \
    UCX_NET_DEVICES=mlx5_0:1 UCX_VFS_ENABLE=n UCX_WARN_UNUSED_ENV_VARS=n; do
    xs+=(-x "$e")
  done
  measure "$label" /usr/bin/oshrun --allow-run-as-root --oversubscribe --bind-to none -np 2 \
    --mca pml ucx --mca spml ucx --mca osc ucx --mca btl ^openib,vader,sm "${xs[@]}" \
    "$work/under_callgrind.sh" "$work/instr_oshmem" "$count"
}
start=$SECONDS
for p in "${pairings[@]}"; do
  case $p in
    rc) hosh rc.hoshmem HOSHMEM_ATOMICS=hw HOSHMEM_TRANSPORT=rc; osh rc.oshmem rc_mlx5,ud_mlx5:aux ;;
    dc) hosh dc.hoshmem HOSHMEM_ATOMICS=hw HOSHMEM_TRANSPORT=dc; osh dc.oshmem dc_mlx5,ud_mlx5:aux ;;
    ud) hosh ud.hoshmem HOSHMEM_ATOMICS=sw HOSHMEM_TRANSPORT=ud HOSHMEM_UD_PROGRESS_THREAD=0
        osh ud.oshmem ud_mlx5 ;;
    *) log "unknown pairing $p"; exit 2 ;;
  esac
done

echo "# instructions per operation, PE 0 under callgrind, hoshmem vs Open MPI $(/usr/bin/ompi_info --version 2>/dev/null | awk 'NR==1 {print $NF}') OSHMEM (UCX $(ucx_info -v 2>/dev/null | sed -n 's/^# Version //p' | head -1)) on softhca, a node per PE"
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $count calls per row, $(valgrind --version), runs took $((SECONDS - start)) s"
echo "# per op = (total - model - waiting) / N - empty. polls: calls per op of the most called waiting"
echo "#   function. unsure: instructions per op kept although in waiting code that ran 2-16 times per"
echo "#   op (processing completions, or a waiting loop's slower paths): the true count is between"
echo "#   per op - unsure and per op"
echo "# ratio = hoshmem/OSHMEM (< 1: hoshmem runs fewer instructions; goal <= 0.5)"
: >"$work/above"
printf '%-3s %-12s | %8s %7s %6s | %8s %7s %6s | %6s\n' tr row hoshmem unsure polls OSHMEM unsure polls ratio
for p in "${pairings[@]}"; do
  awk -v p="$p" -v n="$count" -v H="$work/$p.hoshmem.rows" -v O="$work/$p.oshmem.rows" -v A="$work/above" '
    function load(f, i,   line, w) {
      while ((getline line < f) > 0) {
        split(line, w, " ")
        if (w[1] != "row") continue
        v[i, w[2]] = (w[3] - w[4] - w[5]) / n; polls[i, w[2]] = w[7]; un[i, w[2]] = w[8] / n
      }
    }
    function cell(i, r) {
      if (!((i, r) in v) || !((i, "empty") in v)) return sprintf("%8s %7s %6s", "-", "-", "-")
      return sprintf("%8.0f %7.0f %6.0f", v[i, r] - v[i, "empty"], un[i, r], polls[i, r])
    }
    BEGIN {
      load(H, 1); load(O, 2)
      k = split("p put put_nbi get g add fetch_add compare_swap swap add32 fetch_add32 quiet16", order, " ")
      for (j = 1; j <= k; j++) {
        r = order[j]
        h = ((1, r) in v) ? v[1, r] - v[1, "empty"] : ""
        o = ((2, r) in v) ? v[2, r] - v[2, "empty"] : ""
        printf "%-3s %-12s | %s | %s | %6s\n", p, r, cell(1, r), cell(2, r),
          (h == "" || o == "" || o <= 0) ? "-" : sprintf("%.2f", h / o)
        if (h != "" && o != "" && h > o / 2) print p, r >> A
      }
    }'
done
echo
echo "# hoshmem's largest self costs (instructions per op, waiting and model excluded) where hoshmem > OSHMEM/2:"
while read -r p r; do
  echo "## $p $r"
  awk -v r="$r" -v n="$count" '$1 == "top" && $2 == r { c = $3; $1 = $2 = $3 = "";
    sub(/^ +/, ""); printf "  %7.1f  %s\n", c / n, substr($0, 1, 150) }' "$work/$p.hoshmem.rows"
done <"$work/above"
((keep)) && echo "# profiles and rows: $work"
exit 0
