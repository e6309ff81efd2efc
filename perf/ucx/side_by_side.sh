#!/usr/bin/env bash
# perf/ucx/side_by_side.sh [--quick] [--prefix HOSHMEM_PREFIX] [--keep] [--only PAIRING]...
# One set of OpenSHMEM benchmark programs (perf/src putget, amo, barrier, coll: the sources
# perf/compare.sh builds) compiled with hoshmem's oshcc and with Open MPI's OSHMEM oshcc, run on
# 2 PEs in one run, paired:
#   rc   over softhca, a node per PE: hoshmem HOSHMEM_PES_PER_NODE=1 HOSHMEM_ATOMICS=hw
#        HOSHMEM_TRANSPORT=rc  vs  OSHMEM UCX_TLS=rc_mlx5,ud_mlx5:aux; limit: perf/hw/verbs_rc;
#        same-path limit: perf/hw/raw_rc (WQEs written by lib/transport/ib, doorbell record and
#        doorbell store, CQEs polled by owner bit: the path both libraries take; see limits.sh)
#   dc   the same with HOSHMEM_TRANSPORT=dc vs dc_mlx5,ud_mlx5:aux; limit: perf/hw/verbs_dc
#   ud   HOSHMEM_ATOMICS=sw HOSHMEM_TRANSPORT=ud vs ud_mlx5; limit: perf/hw/verbs_ud (poll mode
#        request/answer round trip for put_lat/get_lat, its 8-byte rate for put_nbi_rate)
#   shm  one node, shared memory, no softhca: both libraries' defaults (as perf/compare.sh)
# and prints one table per pairing: ratio = oshmem/hoshmem for latencies (us), hoshmem/oshmem for
# rates: > 1 means hoshmem is better. "vs same" = hoshmem / same-path limit for latencies, limit
# / hoshmem for rates: how far hoshmem is from the same path with no library (1.0: at the limit). Numbers, not a test: nothing here asserts a timing, but a
# program's verification errors (ERROR lines) and failed runs are printed.
#   --quick    short timed loops (bench -q); --prefix: use an installed hoshmem instead of
#              `bazel run //:install`; --keep: keep the work directory; --only rc|dc|ud|shm;
#   --from DIR print the tables again from a kept run's raw outputs (DIR = its "raw outputs")
# Environment: SBS_TIMEOUT (seconds per program run, default 300), SBS_ALL_ROWS=1 (every row;
# default: putget with the message rates of 8-byte put_nbi and get_nbi, the long/uint64 blocking
# AMOs, barriers and the sum_long reductions of 8 B-1 MiB).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
perf="$root/perf"
softhca="$root/test/softhca/with-softhca"
quick=0 keep=0 prefix="" only=() from=""
while (($#)); do
  case $1 in
    --quick | -q) quick=1 ;;
    --keep) keep=1 ;;
    --prefix) prefix=$2; shift ;;
    --only) only+=("$2"); shift ;;
    --from) from=$2; shift ;;
    -h | --help) sed -n 2,20p "$0"; exit 0 ;;
    *) echo "side_by_side.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
pairings=(rc dc ud shm)
((${#only[@]})) && pairings=("${only[@]}")
qflag=(); ((quick)) && qflag=(-q)
tmo=${SBS_TIMEOUT:-300}
work=$(mktemp -d /tmp/sbs.XXXXXX)
token="sbs$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')"
cleanup() { ((keep)) || rm -rf "$work"; rm -f /dev/shm/softhca."$token"*; }
trap cleanup EXIT
log() { echo "side_by_side: $*" >&2; }
mkdir -p "$work/bin/hoshmem" "$work/bin/oshmem" "$work/out"
elapsed=0
if [[ -n "$from" ]]; then
  cp "$from"/* "$work/out/" || exit 1
  pairings=(); for p in rc dc ud shm; do [[ -f "$work/out/$p.hoshmem" ]] && pairings+=("$p"); done
else

# ---- build ----------------------------------------------------------------------------------
if [[ -z "$prefix" ]]; then
  prefix="$work/prefix"
  log "building hoshmem (bazel run //:install; log $work/bazel.log)"
  (cd "$root" && bazel run --jobs=2 //:install -- "$prefix") >"$work/bazel.log" 2>&1
  rc=$?
  (cd "$root" && bazel shutdown) >/dev/null 2>&1
  ((rc == 0)) || { tail -n 10 "$work/bazel.log" >&2; log "hoshmem build failed"; exit 1; }
fi
[[ -x "$prefix/bin/oshcc" && -x "$prefix/bin/oshrun" ]] || { log "no oshcc/oshrun in $prefix"; exit 1; }
cflags=(-O2 -g -Wall -Werror=implicit-function-declaration)
coll_families=(AS_BARRIER AS_SYNC AS_BCAST AS_REDUCE AS_ALLTOALL AS_FCOLLECT AS_COLLECT
               TEAM_SYNC TEAM_BCAST TEAM_REDUCE TEAM_ALLTOALL TEAM_FCOLLECT TEAM_COLLECT)
for lib in hoshmem oshmem; do
  cc=/usr/bin/oshcc; [[ $lib == hoshmem ]] && cc="$prefix/bin/oshcc"
  for s in putget amo barrier coll; do
    extra=()
    if [[ $s == coll ]]; then  # each collective family only where the library has it
      for f in "${coll_families[@]}"; do
        if "$cc" "${cflags[@]}" -DPROBE_$f -o "$work/probe" "$perf/src/coll_probe.c" >/dev/null 2>&1
        then extra+=(-DBK_$f=1); else extra+=(-DBK_$f=0); fi
      done
    fi
    log "compiling $s with $lib's oshcc"
    "$cc" "${cflags[@]}" "${extra[@]}" -o "$work/bin/$lib/$s" "$perf/src/$s.c" 2>"$work/cc.log" ||
      { sed 's/^/  /' "$work/cc.log" | head >&2; log "$lib: $s failed to build"; }
  done
done
log "compiling perf/hw/verbs_rc.c, verbs_dc.c, verbs_ud.c"
cc -O2 -I"$perf/hw" "$perf/hw/verbs_rc.c" -o "$work/bin/verbs_rc" -libverbs || exit 1
cc -O2 -I"$perf/hw" "$perf/hw/verbs_dc.c" -o "$work/bin/verbs_dc" -libverbs -lmlx5 || exit 1
cc -O2 -I"$perf/hw" "$perf/hw/verbs_ud.c" -o "$work/bin/verbs_ud" -libverbs || exit 1
c++ -std=c++20 -O2 -I"$root" "$perf/hw/raw_rc.cc" "$root/lib/transport/ib/queue.cc" \
  "$root/lib/transport/ib/wqe.cc" "$root/lib/atomics/hca_encoding.cc" -o "$work/bin/raw_rc" \
  -libverbs -lmlx5 || exit 1
"$softhca" true || exit 1  # build the model now, not inside a timed run
lib=$(cd "${SOFTHCA_BUILD_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/softhca}" && pwd -P)

# ---- run ------------------------------------------------------------------------------------
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
n=0
run() {  # out-file label cmd...: run under the timeout, append to out-file
  local out=$1 label=$2; shift 2
  n=$((n + 1))
  local t0=$SECONDS rc=0
  log "running $label"
  SOFTHCA_FABRIC="$token-$n" timeout -k 10 "$tmo" "$@" >>"$out" 2>"$work/err" || rc=$?
  rm -f /dev/shm/softhca."$token-$n"*
  if ((rc)); then
    echo "# $label exited with status $rc" >>"$out"
    log "$label exited with status $rc after $((SECONDS - t0)) s; stderr tail:"
    grep -v '^\s*$' "$work/err" | tail -n 4 | sed 's/^/  /' >&2
  else
    log "$label took $((SECONDS - t0)) s"
  fi
}
osh_run() {  # pairing suite tls
  local p=$1 s=$2 tls=$3 xs=() e
  for e in LD_LIBRARY_PATH="$lib" LD_PRELOAD="$lib/libsofthca_kernel.so" SOFTHCA_FABRIC="$token-$((n + 1))" \
    UCX_TLS="$tls" UCX_NET_DEVICES=mlx5_0:1 UCX_VFS_ENABLE=n UCX_WARN_UNUSED_ENV_VARS=n; do
    xs+=(-x "$e")
  done
  run "$work/out/$p.oshmem" "oshmem $s ($tls)" /usr/bin/oshrun --allow-run-as-root --oversubscribe \
    --bind-to none -np 2 --mca pml ucx --mca spml ucx --mca osc ucx --mca btl ^openib,vader,sm \
    "${xs[@]}" "$work/bin/oshmem/$s" "${qflag[@]}"
}
hosh_run() {  # pairing suite env...
  local p=$1 s=$2; shift 2
  run "$work/out/$p.hoshmem" "hoshmem $s ($*)" "$softhca" env "$@" \
    "$prefix/bin/oshrun" -np 2 "$work/bin/hoshmem/$s" "${qflag[@]}"
}
verbs_iters=$((quick ? 100 : 1000))
start=$SECONDS
for p in "${pairings[@]}"; do
  : >"$work/out/$p.hoshmem"; : >"$work/out/$p.oshmem"; : >"$work/out/$p.limit"
  for s in putget amo barrier coll; do
    case $p in
      rc) hosh_run rc $s HOSHMEM_PES_PER_NODE=1 HOSHMEM_ATOMICS=hw HOSHMEM_TRANSPORT=rc
          osh_run rc $s rc_mlx5,ud_mlx5:aux ;;
      dc) hosh_run dc $s HOSHMEM_PES_PER_NODE=1 HOSHMEM_ATOMICS=hw HOSHMEM_TRANSPORT=dc
          osh_run dc $s dc_mlx5,ud_mlx5:aux ;;
      ud) hosh_run ud $s HOSHMEM_PES_PER_NODE=1 HOSHMEM_ATOMICS=sw HOSHMEM_TRANSPORT=ud
          osh_run ud $s ud_mlx5 ;;
      shm)
        run "$work/out/shm.hoshmem" "hoshmem $s (one node)" "$prefix/bin/oshrun" -np 2 \
          "$work/bin/hoshmem/$s" "${qflag[@]}"
        run "$work/out/shm.oshmem" "oshmem $s (one node, UCX_TLS=^self)" env OMPI_MCA_osc=^rdma \
          UCX_TLS=^self UCX_VFS_ENABLE=n /usr/bin/oshrun --allow-run-as-root --oversubscribe \
          --bind-to none -np 2 "$work/bin/oshmem/$s" "${qflag[@]}" ;;
    esac
  done
  case $p in
    rc) run "$work/out/rc.verbs" "verbs_rc" "$softhca" "$work/bin/verbs_rc" "$verbs_iters"
        run "$work/out/rc.raw" "raw_rc" "$softhca" "$work/bin/raw_rc" "$verbs_iters" ;;
    dc) run "$work/out/dc.verbs" "verbs_dc" "$softhca" "$work/bin/verbs_dc" "$verbs_iters" ;;
    ud) run "$work/out/ud.verbs" "verbs_ud" "$softhca" "$work/bin/verbs_ud" "$verbs_iters" ;;
  esac
  # the verbs programs' lines as rows of the benchmark table (ns -> us)
  if [[ -f "$work/out/$p.verbs" ]]; then
    awk -v ud=$([[ $p == ud ]] && echo 1 || echo 0) '
      !ud && $1 == "lat" && $2 == "put" { print "put_lat", $3, $4 / 1000, "us" }
      !ud && $1 == "lat" && $2 == "get" { print "get_lat", $3, $4 / 1000, "us" }
      !ud && $1 == "rate" && $2 == "put_nbi" { print "put_nbi_rate", $3, $4, "Mops/s" }
      !ud && $1 == "lat" && $2 ~ /^amo_/ { sub(/^amo_/, "", $2); print "amo_long_" $2 "_lat", 8, $4 / 1000, "us" }
      !ud && $1 == "rate" && $2 ~ /^amo_/ { sub(/^amo_/, "", $2); print "amo_long_" $2 "_rate", 8, $4, "Mops/s" }
      ud && $1 == "pp" && $2 == "poll" { print "put_lat", $3, $5 / 1000, "us"; print "get_lat", $3, $5 / 1000, "us" }
      ud && $1 == "rate" && $2 == "poll" { print "put_nbi_rate", $3, $4, "Mops/s" }
    ' "$work/out/$p.verbs" >"$work/out/$p.limit"
  fi
  # the same-path limit's lines, named as limits.sh names them
  if [[ -f "$work/out/$p.raw" ]]; then
    awk '
      $2 == "put" || $2 == "get" { print $2 "_lat", $3, $4 / 1000, "us"; next }
      $2 == "put_nbi" { print "put_nbi_rate", $3, $4, "Mops/s"; next }
      $2 ~ /^amo_/ { n = $2; sub(/^amo_/, "", n)
        print "amo_" ($3 == 4 ? "int" : "long") "_" n "_" ($1 == "lat" ? "lat" : "rate"), $3,
          $1 == "lat" ? $4 / 1000 : $4, $1 == "lat" ? "us" : "Mops/s" }
    ' "$work/out/$p.raw" >"$work/out/$p.same"
  fi
done
elapsed=$((SECONDS - start))
fi

# ---- tables ---------------------------------------------------------------------------------
echo "# hoshmem vs Open MPI $(/usr/bin/ompi_info --version 2>/dev/null | awk 'NR==1 {print $NF}') OSHMEM (UCX $(ucx_info -v 2>/dev/null | sed -n 's/^# Version //p' | head -1)), 2 PEs"
if [[ -n "$from" ]]; then echo "# tables of the kept run $from"; else
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), runs took ${elapsed}s$( ((quick)) && echo ', --quick')"; fi
echo "# ratio = oshmem/hoshmem (latency, us) or hoshmem/oshmem (rates): > 1 means hoshmem is better"
echo "# limit: the model's own post-and-poll loop (perf/hw/verbs_*.c), same unit; '-' where none"
for p in "${pairings[@]}"; do
  case $p in
    rc) echo; echo "## rc: hoshmem HOSHMEM_TRANSPORT=rc ATOMICS=hw, a node per PE | OSHMEM rc_mlx5 | limit verbs_rc" ;;
    dc) echo; echo "## dc: hoshmem HOSHMEM_TRANSPORT=dc ATOMICS=hw, a node per PE | OSHMEM dc_mlx5 | limit verbs_dc" ;;
    ud) echo; echo "## ud: hoshmem HOSHMEM_TRANSPORT=ud ATOMICS=sw, a node per PE | OSHMEM ud_mlx5 | limit verbs_ud (poll round trip)" ;;
    shm) echo; echo "## shm: one node, shared memory, no softhca (both libraries' defaults)" ;;
  esac
  awk -v all="${SBS_ALL_ROWS:-0}" -v H="$work/out/$p.hoshmem" -v O="$work/out/$p.oshmem" \
    -v L="$work/out/$p.limit" -v S="$work/out/$p.same" '
    function num(v) { return v ~ /^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/ }
    function fmt(v) { return num(v) ? sprintf("%.4g", v) : (v == "" ? "-" : v) }
    function ratio(a, b, lat) {
      if (!num(a) || !num(b) || a == 0 || b == 0) return "-"
      return sprintf("%.3f", lat ? b / a : a / b)
    }
    function keep(name) {
      if (all) return 1
      if (name ~ /^(put|get)_nbi_rate$/) return 1  # message rates of small puts and gets
      if (name ~ /^amo_(int|uint32)_/ || name ~ /_nbi_(lat|rate)$/) return 0
      if (name ~ /^amo_|^barrier|^sync\.|^sum_long\.|^(put|get|p|g)_|^putmem_bw|^getmem_bw|_rate$/) return 1
      return 0
    }
    function load(f, i,   line, w, m, key) {
      while ((getline line < f) > 0) {
        m = split(line, w, " ")
        if (w[1] == "ERROR") { err[i, w[2] SUBSEP w[3]] = 1; continue }
        if (line ~ /^#/ || m != 4) continue
        key = w[1] SUBSEP w[2]; val[i, key] = w[3]; unit[key] = w[4]
        if (i < 3 && !(key in seen)) { seen[key] = 1; order[++nk] = key }
      }
    }
    BEGIN {
      load(H, 1); load(O, 2); load(L, 3); load(S, 4)
      printf "%-30s %7s %7s %10s %10s %8s %10s %10s %9s\n", "benchmark", "size", "unit", "hoshmem",
        "oshmem", "ratio", "limit", "same-path", "vs same"
      for (k = 1; k <= nk; k++) {
        key = order[k]; split(key, p, SUBSEP)
        if (!keep(p[1])) continue
        for (i = 1; i <= 4; i++) v[i] = err[i, key] ? "ERR" : val[i, key]
        printf "%-30s %7s %7s %10s %10s %8s %10s %10s %9s\n", p[1], p[2], unit[key], fmt(v[1]),
          fmt(v[2]), ratio(v[1], v[2], unit[key] == "us"), fmt(v[3]), fmt(v[4]),
          ratio(v[4], v[1], unit[key] == "us")
      }
    }'
  grep -h '^ERROR\|^# .* exited with status' "$work/out/$p.hoshmem" "$work/out/$p.oshmem" | sed 's/^/# /'
done
((keep)) && echo "# raw outputs: $work/out"
exit 0
