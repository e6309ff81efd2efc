#!/usr/bin/env bash
# Builds hoshmem and every benchmark (with hoshmem's oshcc and with Open MPI's OSHMEM oshcc),
# runs them, and prints one table: hoshmem vs OSHMEM vs the shared-memory "limit".
#
#   perf/compare.sh [--quick] [--no-deps] [--keep] [--passes N] [--best] [--suite NAME]...
#     --quick    short runs (about a minute in all, plus build time): a smoke test
#     --no-deps  do not run scripts/deps.sh
#     --keep     keep the work directory (raw outputs, binaries) and print its path
#     --passes N run every program N times (libraries interleaved) and show the median per row
#     --best     show the best pass per row instead of the median (every column alike): on a
#                shared VM a whole program run is sometimes ~2x slower for all three columns
#                (host noise), which the median of a few passes does not always hide
#     --suite S  run only suite S (putget, amo, barrier, gups, coll); may be repeated
# Environment: PERF_BAZEL_BASE (Bazel output base, default /tmp/bz-perf), PERF_TIMEOUT (seconds
# per program run). See perf/README.md for what the columns mean.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
perf="$root/perf"
quick=0 deps=1 keep=0 passes=1 best=0 only=()
args=("$@")
for ((ai = 0; ai < ${#args[@]}; ai++)); do
  a=${args[ai]}
  case "$a" in
    --passes) passes=${args[ai + 1]:-}; ai=$((ai + 1))
      [[ $passes =~ ^[1-9][0-9]?$ ]] || { echo "compare.sh: --passes takes 1..99" >&2; exit 2; } ;;
    --suite) only+=("${args[ai + 1]:-}"); ai=$((ai + 1))
      [[ " putget amo barrier gups coll " == *" ${only[-1]} "* ]] ||
        { echo "compare.sh: --suite takes putget, amo, barrier, gups or coll" >&2; exit 2; } ;;
    --quick|-q) quick=1 ;;
    --no-deps) deps=0 ;;
    --keep) keep=1 ;;
    --best) best=1 ;;
    -h|--help) sed -n '2,15p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "compare.sh: unknown argument $a" >&2; exit 2 ;;
  esac
done
qflag=(); ((quick)) && qflag=(-q)
timeout_s=${PERF_TIMEOUT:-$((quick ? 30 : 60))} # a normal program run takes < 20 s
tmp=$(mktemp -d /tmp/perf.XXXXXX)
((keep)) || trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin/hoshmem" "$tmp/bin/oshmem" "$tmp/bin/limit" "$tmp/out"
log() { echo "compare: $*" >&2; }

if ((deps)); then "$root/scripts/deps.sh" || { log "scripts/deps.sh failed"; exit 1; }; fi

# ---- hoshmem ----------------------------------------------------------------------------------
hosh_note=""
prefix="$tmp/prefix"
bazel_base=${PERF_BAZEL_BASE:-/tmp/bz-perf}
log "building hoshmem (bazel run //:install, output base $bazel_base)"
if (cd "$root" && bazel --output_base="$bazel_base" run --jobs=2 //:install -- "$prefix") \
    >"$tmp/bazel.log" 2>&1 && [[ -x "$prefix/bin/oshcc" && -x "$prefix/bin/oshrun" ]]; then
  log "hoshmem installed in $prefix"
else
  hosh_note="hoshmem could not be built or installed with bazel run //:install (log tail on stderr), so its column is n/a"
  log "$hosh_note"
  tail -n 5 "$tmp/bazel.log" | sed 's/^/  bazel: /' >&2
fi
(cd "$root" && bazel --output_base="$bazel_base" shutdown) >/dev/null 2>&1 || true

# ---- build the benchmarks ---------------------------------------------------------------------
suites=(putget amo barrier gups coll)
((${#only[@]})) && suites=("${only[@]}")
cflags=(-O2 -g -Wall -Werror=implicit-function-declaration)
osh_cc=/usr/bin/oshcc
# The collectives suite uses each routine family only where the library has it (compiles and
# links): the others print n/a. Families as in perf/common/backend_shmem_coll.h.
coll_families=(AS_BARRIER AS_SYNC AS_BCAST AS_REDUCE AS_ALLTOALL AS_FCOLLECT AS_COLLECT
               TEAM_SYNC TEAM_BCAST TEAM_REDUCE TEAM_ALLTOALL TEAM_FCOLLECT TEAM_COLLECT)
declare -A coll_missing=()
probe_coll() { # lib cc: sets coll_flags, records the missing families
  local lib=$1 cc=$2 f
  coll_flags=()
  for f in "${coll_families[@]}"; do
    if "$cc" "${cflags[@]}" -DPROBE_$f -o "$tmp/probe-$lib" "$perf/src/coll_probe.c" >/dev/null 2>&1; then
      coll_flags+=(-DBK_$f=1)
    else
      coll_flags+=(-DBK_$f=0)
      coll_missing[$lib]+=" ${f,,}"
    fi
  done
}
build() { # lib cc suite
  local lib=$1 cc=$2 s=$3
  local -a extra=()
  if [[ $s == coll ]]; then probe_coll "$lib" "$cc"; extra=("${coll_flags[@]}"); fi
  "$cc" "${cflags[@]}" "${extra[@]}" -o "$tmp/bin/$lib/$s" "$perf/src/$s.c" 2>"$tmp/build-$lib-$s.log" ||
    { log "$lib build of $s failed:"; sed 's/^/  /' "$tmp/build-$lib-$s.log" | head -20 >&2; }
}
for s in "${suites[@]}"; do
  [[ -z "$hosh_note" ]] && build hoshmem "$prefix/bin/oshcc" "$s"
  build oshmem "$osh_cc" "$s"
done
gcc "${cflags[@]}" -o "$tmp/bin/limit/limit" "$perf/limit/limit.c" ||
  { log "limit build failed"; exit 1; }

# ---- run --------------------------------------------------------------------------------------
ncpu=$(nproc)
# Placement: the same for every column. PEs are pinned one per CPU by perf/pin.sh (the limit
# program pins itself) when the job fits the machine; oversubscribed jobs are not pinned.
# OSHMEM runs with --bind-to none so that its own binding does not interfere with pin.sh.
pin_for() { (($1 <= ncpu)) && echo 1 || echo 0; }

run_lib() { # lib suite np
  local lib=$1 s=$2 np=$3 out="$tmp/out/$1.txt" rc=0
  local -a cmd
  case $lib in
    hoshmem)
      [[ -x "$tmp/bin/hoshmem/$s" ]] || return 0
      cmd=("$prefix/bin/oshrun" -np "$np" "$perf/pin.sh" "$tmp/bin/hoshmem/$s" "${qflag[@]}") ;;
    oshmem)
      [[ -x "$tmp/bin/oshmem/$s" ]] || return 0
      cmd=(env OMPI_MCA_osc=^rdma UCX_TLS=^self /usr/bin/oshrun --allow-run-as-root --oversubscribe
           --bind-to none -np "$np" "$perf/pin.sh" "$tmp/bin/oshmem/$s" "${qflag[@]}") ;;
    limit)
      cmd=("$tmp/bin/limit/limit" -n "$np" "${qflag[@]}" "$s") ;;
  esac
  PERF_PIN=$(pin_for "$np") timeout -k 5 "$timeout_s" "${cmd[@]}" >>"$out" 2>"$tmp/out/$lib-$s-$np.err" || rc=$?
  if ((rc != 0)); then
    echo "# $lib $s -np $np exited with status $rc" >>"$out"
    log "$lib $s -np $np exited with status $rc (stderr tail follows)"
    grep -v '^\s*$' "$tmp/out/$lib-$s-$np.err" | tail -n 4 | sed 's/^/  /' >&2
  fi
}

start=$(date +%s)
for s in "${suites[@]}"; do
  nps=(2); [[ $s == barrier || $s == coll ]] && nps=(2 4 8)
  for np in "${nps[@]}"; do
    for ((pass = 1; pass <= passes; pass++)); do
      for lib in hoshmem oshmem limit; do
        log "running $s on $lib with $np PEs$( ((passes > 1)) && echo ", pass $pass of $passes")"
        run_lib "$lib" "$s" "$np"
      done
    done
  done
done
elapsed=$(($(date +%s) - start))

# ---- table ------------------------------------------------------------------------------------
touch "$tmp/out/hoshmem.txt" "$tmp/out/oshmem.txt" "$tmp/out/limit.txt"
echo "# hoshmem vs OpenSHMEM (Open MPI $(/usr/bin/ompi_info --version 2>/dev/null | head -n1 | awk '{print $NF}') OSHMEM) vs limit (plain shared memory, no library)"
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n1), load $(cut -d' ' -f1-3 /proc/loadavg), runs took ${elapsed}s$( ((quick)) && echo ', --quick')$( ((passes > 1)) && echo ", $( ((best)) && echo best || echo median) of $passes passes")"
echo "# every result: median of several timed runs, each verified (ERR = the library produced a wrong result)"
echo "# ratio = oshmem/hoshmem for latencies (us), hoshmem/oshmem for rates (MB/s, Mops/s, GUP/s): >1 means hoshmem is better"
echo "# hoshmem/limit = fraction of the hardware limit reached (limit/hoshmem for latencies): 1 = at the limit"
echo "# size: bytes per operation; for barrier_all_lat the number of PEs; for gups the whole table"
echo "# collectives: <op>.<form>.np<PEs>, size = bytes per PE (per destination PE for alltoall); form as = active-set routines with pSync, team = 1.5 team routines; the limit column of a team row is its as row's"
[[ -n "$hosh_note" ]] && echo "# NOTE: $hosh_note"
for lib in hoshmem oshmem; do
  [[ -n "${coll_missing[$lib]:-}" ]] && echo "# NOTE: $lib lacks the collective families${coll_missing[$lib]} (n/a rows)"
done
awk -v files="$tmp/out/hoshmem.txt $tmp/out/oshmem.txt $tmp/out/limit.txt" -v no_hosh="${hosh_note:+1}" -v best="$best" '
  function human(n) {
    if (n >= 1048576 && n % 1048576 == 0) return (n / 1048576) "M"
    if (n >= 1024 && n % 1024 == 0) return (n / 1024) "K"
    return n
  }
  function num(v) { return v ~ /^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/ }
  function fmt(v) { return num(v) ? sprintf("%.4g", v) : v }
  function median(i, key,   n, a, j, k, t) { # of the passes (one value without --passes)
    n = cnt[i, key]
    for (j = 1; j <= n; j++) a[j] = vals[i, key, j]
    for (j = 2; j <= n; j++) for (k = j; k > 1 && a[k - 1] > a[k]; k--) { t = a[k]; a[k] = a[k - 1]; a[k - 1] = t }
    if (best) return unit[key] == "us" ? a[1] : a[n] # lowest latency, highest rate
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  function ratio(a, b, lat) {   # a: hoshmem-like, b: reference; >1 means a is better
    if (!num(a) || !num(b) || a == 0 || b == 0) return "-"
    return sprintf("%.3f", lat ? b / a : a / b)
  }
  BEGIN {
    n = split(files, f, " ")
    for (i = 1; i <= n; i++) {
      while ((getline line < f[i]) > 0) {
        m = split(line, w, " ")
        if (w[1] == "ERROR" && m >= 3) { key = w[2] SUBSEP w[3]; err[i, key] = 1; seen(key, "") ; continue }
        if (line ~ /^#/ || m != 4) continue
        key = w[1] SUBSEP w[2]
        if (num(w[3])) { c = ++cnt[i, key]; vals[i, key, c] = w[3] + 0 } else word[i, key] = w[3]
        unit[key] = w[4]; seen(key, w[4])
      }
    }
    printf "%-32s %6s %8s %10s %10s %8s %10s %10s\n", "benchmark", "size", "unit", "hoshmem", "oshmem", "ratio", "limit", "hosh/limit"
    for (k = 1; k <= nkeys; k++) {
      key = order[k]; split(key, p, SUBSEP)
      for (i = 1; i <= 3; i++) {
        k2 = key
        if (i == 3) sub(/\.team\./, ".as.", k2) # the limit has one algorithm for both forms
        v[i] = err[i, k2] ? "ERR" : (cnt[i, k2] ? median(i, k2) : ((i, k2) in word ? word[i, k2] : "-"))
      }
      if (no_hosh) v[1] = "n/a"
      lat = unit[key] == "us"
      size = p[1] == "barrier_all_lat" ? p[2] " PEs" : (p[2] == 0 ? "-" : human(p[2]))
      printf "%-32s %6s %8s %10s %10s %8s %10s %10s\n", p[1], size, unit[key], fmt(v[1]), fmt(v[2]),
             ratio(v[1], v[2], lat), fmt(v[3]), ratio(v[1], v[3], lat)
    }
  }
  function seen(key, u) { if (!(key in known)) { known[key] = 1; order[++nkeys] = key } }
'
if grep -q '^ERROR' "$tmp/out/"*.txt; then
  echo "# verification errors:"
  grep -h '^ERROR' "$tmp/out/hoshmem.txt" | sed 's/^/#   hoshmem: /'
  grep -h '^ERROR' "$tmp/out/oshmem.txt" | sed 's/^/#   oshmem: /'
  grep -h '^ERROR' "$tmp/out/limit.txt" | sed 's/^/#   limit: /'
fi
grep -h '^# skipped' "$tmp/out/"*.txt | sort -u
grep -h '^# .* exited with status' "$tmp/out/"*.txt
((keep)) && echo "# raw outputs: $tmp/out"
exit 0
