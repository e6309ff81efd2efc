#!/usr/bin/env bash
# DC against RC across nodes over the software mlx5 HCA (test/softhca), in one run: per-operation
# costs, the DC initiator pool's throughput when every PE targets every other PE, and how both
# transports scale with the job (memory, queue pairs, first touch). Numbers, not a test: nothing
# here asserts a timing.
#   perf/hw/dc.sh [ITERATIONS]      (default 1000; DC_BATCH=64 rate batch, DC_PASSES=3 runs of
#                                    every per-operation program, DC_POOL_PASSES=3 runs of every
#                                    pool job, DC_SECONDS=0.3 s per pool loop, DC_REPS=3 timed
#                                    pool loops per job, DC_DCIS="1 2 4 8 16", DC_POOL_PES="4 8",
#                                    DC_SCALE_PES="2 4 8 16 32 64", DC_SCALE_PASSES=2,
#                                    DC_TRAP=1: the touch times again with SOFTHCA_DOORBELL=trap
#                                    (0: not), DC_PREFIX=dir: an installed hoshmem, not built)
#
# Every hoshmem job: `oshrun` of the installed tree (bazel run //:install) under
# test/softhca/with-softhca, HOSHMEM_PES_PER_NODE=1 (every PE a node of its own, reached over the
# network) HOSHMEM_ATOMICS=hw, HOSHMEM_TRANSPORT=rc or dc (HOSHMEM_DCI_COUNT initiators per
# context, default 8), each job in a fabric of its own (SOFTHCA_FABRIC, its /dev/shm segment
# removed afterwards) and under `timeout`. Jobs with no more PEs than CPUs pin PE r to CPU r
# (perf/pin.sh); larger ones are left to the scheduler. The runs of one table are interleaved
# (pass 1 of every column, then pass 2, ...) and every cell is the best pass: on a shared machine
# a whole job is now and then several times slower in every row (host load, not the code).
#
# 1. DC against RC per operation (perf/hw/rc_rma.c on 2 PEs and the raw verbs programs;
#    every value the best of 5 timed loops after one untimed, then the best of DC_PASSES runs;
#    loops on sizes above 8 KiB run ITERATIONS * 8 KiB / size times, at least 10):
#    rc, dc     rc_rma with HOSHMEM_TRANSPORT=rc / dc: put = shmem_putmem + shmem_quiet in a loop,
#               get = shmem_getmem, symmetric buffers; put_nbi rate = 8-byte shmem_putmem_nbi,
#               quiet after every DC_BATCH; AMO latency = one blocking call (non-fetching ones +
#               quiet); AMO rate = DC_BATCH back to back (fetching ones in their _nbi form), then
#               quiet. One target PE: with DC the peer keeps its initiator, no switching.
#    verbs_rc   perf/hw/verbs_rc.c: the same loops as ibv_post_send + ibv_poll_cq between two
#               processes (nodes), one RC QP each (RDMA write inline up to 128 B, read, FA/CS)
#    verbs_dc   perf/hw/verbs_dc.c: the same over DC (one DCI, the target's DCT, extended send
#               API with mlx5dv_wr_set_dc_addr, one doorbell per operation)
#    dc/rc, dc/verbs_dc   the first divided by the second: for latencies (ns) > 1 means DC
#               (hoshmem) is slower, for rates (Mops/s) < 1 means it is slower.
# 2. DCI pool throughput when every PE targets every other PE (perf/hw/dc_alltoall.c, N PEs):
#    each PE issues to PE (r + 1 + i mod (N-1)) mod N (the target changes at every operation)
#    8-byte shmem_putmem_nbi, then in a second phase shmem_long_atomic_add, quiet every DC_BATCH,
#    for DC_SECONDS after a barrier; the value is the aggregate Mops/s, the sum over PEs of each
#    PE's operations / its own time (shmemx_wtime), best of DC_REPS loops after one untimed, then
#    best of DC_POOL_PASSES jobs.
#    dci=K      HOSHMEM_TRANSPORT=dc HOSHMEM_DCI_COUNT=K; rc: HOSHMEM_TRANSPORT=rc (its queue
#               pairs connected in the untimed loop)
#    best       the DCI count with the highest rate in that row; dc8/rc = the default pool
#               against RC (< 1: DC slower)
#    score      per DCI count, the geometric mean over the rows of rate / the row's best rate;
#               the recommended default is the smallest count whose score is within 5% of the
#               best score
#    verbs_dc rr T   perf/hw/verbs_dc.c --targets T: one process, ONE DCI, 8-byte inline writes
#               round-robin over T target processes, signaled every DC_BATCH: the raw rate of one
#               initiator that switches target at every write (T = N-1 as each PE above sees)
# 3. Scale (dc_alltoall --touch, SHMEM_SYMMETRIC_SIZE=32M, N PEs, best of DC_SCALE_PASSES jobs):
#    every PE does one 8-byte shmem_putmem to every other PE then shmem_quiet, timed from leaving
#    a barrier to the end of the quiet; the slowest PE's time (ms), twice: "first" (RC connects its
#    queue pairs there; DC makes the peers' address handles) and "second". Then PE 0 and PE N-1
#    print shmemx_info_print()'s network state (the numbers are PE 0's; a NOTE says if PE N-1's
#    differ):
#    QPs        queue pairs the PE holds (RC: one per connected peer, plus its connection
#               manager's; DC: HOSHMEM_DCI_COUNT initiators plus one DC target)
#    KiB        KiB in the queues plus KiB in the lanes (CQs, bounce buffers)
#    B/peer     bytes the PE keeps per PE of the job (endpoint pointers, addresses, address
#               handles, memory keys); times N on top of the KiB above
#    first ms, second ms   the touch times above
#    trap       (DC_TRAP=1) the touch times again with SOFTHCA_DOORBELL=trap: every doorbell store
#               executed inside the store, no doorbell thread (see the reading in perf/HISTORY.md)
#    Extrapolation, per PE: RC = fixed + (KiB per connected queue pair) * (N-1) + B/peer * N, with
#    the per-QP KiB the slope of the queue KiB between the smallest and largest N measured and
#    fixed the rest; DC = its KiB at the largest N (a constant) + B/peer * N.
# 4. Crossover: the smallest N of the scale table from which DC's first touch (slowest PE) and its
#    memory are both below RC's (at that N and every larger one measured), next to the steady
#    per-operation factors of table 1 (geometric mean of dc/rc over the 8-byte latencies and
#    the rates) and of table 2 (dc8/rc).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
iters=${1:-1000}
batch=${DC_BATCH:-64}
passes=${DC_PASSES:-3}
pool_passes=${DC_POOL_PASSES:-3}
seconds=${DC_SECONDS:-0.3}
reps=${DC_REPS:-3}
dcis=${DC_DCIS:-1 2 4 8 16}
pool_pes=${DC_POOL_PES:-4 8}
scale_pes=${DC_SCALE_PES:-2 4 8 16 32 64}
scale_passes=${DC_SCALE_PASSES:-2}
trap_touch=${DC_TRAP:-1}
ncpu=$(nproc)
work=$(mktemp -d)
mkdir "$work/log"
fabric_prefix="perf-dc-$$"
trap 'rm -rf "$work"; rm -f /dev/shm/softhca."$fabric_prefix"-*' EXIT

load() { echo "$(cut -d' ' -f1-3 /proc/loadavg), ${SECONDS}s elapsed"; }
echo "== machine: $ncpu CPUs, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)," \
  "kernel $(uname -r), load average $(load); iterations $iters, batch $batch"
source "$root/perf/hw/install.sh"
install_hoshmem DC_PREFIX "$work"
echo "== compiling the programs"
"$prefix/bin/oshcc" -O2 "$root/perf/hw/rc_rma.c" -o "$work/rc_rma"
"$prefix/bin/oshcc" -O2 "$root/perf/hw/dc_alltoall.c" -o "$work/dc_alltoall"
cc -O2 "$root/perf/hw/verbs_rc.c" -o "$work/verbs_rc" -libverbs
cc -O2 "$root/perf/hw/verbs_dc.c" -o "$work/verbs_dc" -libverbs -lmlx5

softhca="$root/test/softhca/with-softhca"
SOFTHCA_FABRIC="$fabric_prefix-build" "$softhca" true  # builds the model now, not in a timed run
jobs_run=0
# job NAME OUT SECONDS COMMAND...: one run in a fabric of its own; a failure is reported, not fatal
job() {
  local name=$1 out=$2 limit=$3 status=0; shift 3
  jobs_run=$((jobs_run + 1))
  local fabric
  fabric=$(printf '%s-%04d' "$fabric_prefix" "$jobs_run")
  local err
  err="$work/log/$(basename "$out")"
  SOFTHCA_FABRIC=$fabric timeout -k 10 "$limit" "$softhca" "$@" >"$out" 2>"$err" || status=$?
  rm -f /dev/shm/softhca."$fabric" /dev/shm/softhca."$fabric".* /dev/shm/softhca."$fabric"-*
  if [ "$status" != 0 ]; then
    echo "   $name: FAILED (exit $status$([ "$status" = 124 ] && echo ", timeout ${limit}s")):" \
      "$(tail -1 "$err")"
    return 1
  fi
}
# hosh NAME OUT SECONDS NP ENV... -- PROGRAM ARGS...: one hoshmem job of NP PEs
hosh() {
  local name=$1 out=$2 limit=$3 np=$4 pin=0; shift 4
  [ "$np" -le "$ncpu" ] && pin=1
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  job "$name" "$out" "$limit" env HOSHMEM_PES_PER_NODE=1 HOSHMEM_ATOMICS=hw PERF_PIN=$pin \
    "${envs[@]}" "$prefix/bin/oshrun" -np "$np" "$root/perf/pin.sh" "$@"
}

# ---- 1. per operation -----------------------------------------------------------------------
echo "== 1. per operation: rc_rma (2 PEs) rc and dc, verbs_rc, verbs_dc; $passes passes" \
  "(load average $(load))"
for pass in $(seq 1 "$passes"); do
  for t in rc dc; do
    echo "   pass $pass: rc_rma, HOSHMEM_TRANSPORT=$t"
    hosh "rc_rma $t" "$work/op.$t.p$pass" 300 2 HOSHMEM_TRANSPORT=$t -- "$work/rc_rma" "$iters" \
      "$batch" || true
  done
  for v in verbs_rc verbs_dc; do
    echo "   pass $pass: $v"
    job "$v" "$work/op.$v.p$pass" 120 taskset -c 0 "$work/$v" "$iters" "$batch" || true
  done
done
cat "$work"/op.* 2>/dev/null | grep '^# WRONG' || true

# best FILE_PREFIX: "kind name size value" per row, the best over the passes (lat: lowest)
best() {
  { cat "$1".p* 2>/dev/null || true; } | awk '$1 == "lat" || $1 == "rate" {
    k = $1 " " $2 " " $3
    if (!(k in v)) { order[n++] = k; v[k] = $4 }
    else if ($1 == "lat" ? $4 < v[k] : $4 > v[k]) v[k] = $4
  } END { for (i = 0; i < n; i++) print order[i], v[order[i]] }'
}
for f in rc dc verbs_rc verbs_dc; do best "$work/op.$f" >"$work/best.$f"; done

table1() {  # KIND UNIT
  printf '\n%-18s %8s %10s %10s %7s %10s %10s %12s\n' "operation ($2)" size rc dc dc/rc \
    verbs_rc verbs_dc dc/verbs_dc
  awk -v kind="$1" -v w="$work" '
    function load(file, into) {
      while ((getline line < file) > 0) { split(line, f, " "); into[f[1] " " f[2] " " f[3]] = f[4] }
    }
    function ratio(a, b) { return a == "" || b == "" || b == 0 ? "-" : sprintf("%.2f", a / b) }
    function orr(x) { return x == "" ? "-" : x }
    function size(b) {
      return b >= 1048576 ? b / 1048576 " MiB" : b >= 1024 ? b / 1024 " KiB" : b " B"
    }
    BEGIN { load(w "/best.dc", dc); load(w "/best.verbs_rc", vr); load(w "/best.verbs_dc", vd) }
    $1 == kind {
      k = $1 " " $2 " " $3
      printf "%-18s %8s %10s %10s %7s %10s %10s %12s\n", $2, size($3), $4, orr(dc[k]),
        ratio(dc[k], $4), orr(vr[k]), orr(vd[k]), ratio(dc[k], vd[k])
    }' "$work/best.rc"
}

# ---- 2. DCI pool ----------------------------------------------------------------------------
echo "== 2. DCI pool: dc_alltoall on $pool_pes PEs, DCI counts $dcis and rc; $pool_passes passes" \
  "(load average $(load))"
for pass in $(seq 1 "$pool_passes"); do
  for np in $pool_pes; do
    for d in $dcis rc; do
      if [ "$d" = rc ]; then e=(HOSHMEM_TRANSPORT=rc); else
        e=(HOSHMEM_TRANSPORT=dc HOSHMEM_DCI_COUNT="$d"); fi
      echo "   pass $pass: $np PEs, $([ "$d" = rc ] && echo rc || echo "dc, $d DCIs")"
      hosh "pool $np $d" "$work/pool.$np.dci$d.p$pass" 120 "$np" "${e[@]}" -- "$work/dc_alltoall" \
        "$seconds" "$batch" "$reps" || true
    done
  done
done
for np in $pool_pes; do
  echo "   verbs_dc --targets $((np - 1))"
  job "verbs_dc rr" "$work/rr.$np" 120 taskset -c 0 "$work/verbs_dc" --targets "$((np - 1))" \
    "$iters" "$batch" || true
done
cat "$work"/pool.* 2>/dev/null | grep '^# WRONG' || true

# ---- 3. scale -------------------------------------------------------------------------------
echo "== 3. scale: dc_alltoall --touch on $scale_pes PEs, rc and dc; $scale_passes passes" \
  "(load average $(load))"
for pass in $(seq 1 "$scale_passes"); do
  for np in $scale_pes; do
    for t in rc dc; do
      echo "   pass $pass: $np PEs, $t"
      hosh "touch $np $t" "$work/touch.$np.$t.p$pass" 180 "$np" HOSHMEM_TRANSPORT=$t \
        SHMEM_SYMMETRIC_SIZE=32M -- "$work/dc_alltoall" --touch || true
    done
  done
done
if [ "$trap_touch" = 1 ]; then
  for np in $scale_pes; do
    for t in rc dc; do
      echo "   SOFTHCA_DOORBELL=trap: $np PEs, $t"
      hosh "touch trap $np $t" "$work/trap.$np.$t.p1" 180 "$np" HOSHMEM_TRANSPORT=$t \
        SHMEM_SYMMETRIC_SIZE=32M SOFTHCA_DOORBELL=trap -- "$work/dc_alltoall" --touch || true
    done
  done
fi
cat "$work"/touch.* "$work"/trap.* 2>/dev/null | grep '^# ' || true
echo "== done (load average $(load))"
(cd "$root" && bazel shutdown >/dev/null 2>&1) || true

# ---- tables ---------------------------------------------------------------------------------
echo
echo "1. DC against RC per operation, 2 PEs on two nodes (best of $passes runs)"
table1 lat ns
table1 rate Mops/s

echo
echo "2. DCI pool: aggregate Mops/s over all PEs, every PE round-robin over every other PE" \
  "(8 B, quiet every $batch; best of $pool_passes jobs)"
for np in $pool_pes; do
  for d in $dcis rc; do
    for phase in put_nbi add; do
      v=$({ cat "$work/pool.$np.dci$d".p* 2>/dev/null || true; } | awk -v p="$phase" '$1 == "rate" &&
        $2 == p { if (n++ == 0 || $4 > b) b = $4 } END { if (n) print b }')
      echo "$np $d $phase ${v:-}"
    done
  done
done >"$work/pool.best"
awk -v dcis="$dcis" -v pes="$pool_pes" -v w="$work" '
  BEGIN {
    nd = split(dcis, d, " "); np = split(pes, p, " ")
    while ((getline line < (w "/pool.best")) > 0) {
      split(line, f, " "); if (f[4] != "") v[f[1] " " f[2] " " f[3]] = f[4]
    }
    for (i = 1; i <= np; i++) {  # the verbs reference
      file = w "/rr." p[i]
      while ((getline line < file) > 0) { split(line, f, " "); if (f[1] == "rate") rr[p[i]] = f[4] }
    }
    printf "%-14s", "operation"
    for (j = 1; j <= nd; j++) printf " %8s", "dci=" d[j]
    printf " %8s %6s %7s\n", "rc", "best", "dc8/rc"
    rows = 0
    for (i = 1; i <= np; i++) for (ph = 1; ph <= 2; ph++) {
      name = (ph == 1 ? "put_nbi" : "add")
      printf "%-14s", name " N=" p[i]
      bv = 0; bd = "-"
      for (j = 1; j <= nd; j++) {
        x = v[p[i] " " d[j] " " name]
        printf " %8s", x == "" ? "-" : x
        if (x != "" && x + 0 > bv) { bv = x + 0; bd = d[j] }
      }
      r = v[p[i] " rc " name]; e = v[p[i] " 8 " name]
      printf " %8s %6s %7s\n", r == "" ? "-" : r, bd,
        r == "" || e == "" || r == 0 ? "-" : sprintf("%.2f", e / r)
      rows++
      for (j = 1; j <= nd; j++) {
        x = v[p[i] " " d[j] " " name]
        if (x != "" && bv > 0) { lsum[j] += log((x + 0 > 0 ? x : 1e-9) / bv); cnt[j]++ }
      }
    }
    printf "%-14s", "score"
    top = -1
    for (j = 1; j <= nd; j++) {
      s[j] = cnt[j] ? exp(lsum[j] / cnt[j]) : 0
      printf " %8.3f", s[j]; if (s[j] > top) { top = s[j]; topd = d[j] }
    }
    printf "\n"
    rec = "-"
    for (j = 1; j <= nd; j++) if (s[j] >= 0.95 * top) { rec = d[j]; break }
    for (i = 1; i <= np; i++)
      printf "verbs_dc rr %d (one process, one DCI, round-robin over %d targets): %s Mops/s\n",
        p[i] - 1, p[i] - 1, rr[p[i]] == "" ? "-" : rr[p[i]]
    printf "best DCI count by score: %s; recommended default (smallest within 5%% of it): %s\n",
      topd, rec
    print rec > (w "/dci.rec")
  }'

echo
echo "3. Scale: one 8-byte put from every PE to every other PE (first and second time), then" \
  "the network state of PE 0 (SHMEM_SYMMETRIC_SIZE=32M; times: slowest PE, best of" \
  "$scale_passes jobs)"
for np in $scale_pes; do
  for t in rc dc; do
    for kind in touch trap; do
      { cat "$work/$kind.$np.$t".p* 2>/dev/null || true; } | awk -v np="$np" -v t="$t" -v kind="$kind" '
        $1 == "touch" { k = $2; if (!(k in m) || $4 < m[k]) m[k] = $4 }
        $1 == "state" && $2 == 0 { s0 = $3 " " $4 " " $5 " " $6 }
        $1 == "state" && $2 != 0 { s1 = $3 " " $4 " " $5 " " $6 }
        END {
          printf "%s %s %s %s %s %s\n", kind, np, t, ("first" in m) ? m["first"] : "-",
            ("second" in m) ? m["second"] : "-", s0 == "" ? "- - - -" : s0
          if (s1 != "" && s0 != "" && s1 != s0 && kind == "touch")
            printf "NOTE %s PEs, %s: PE %d network state %s differs from PE 0 %s\n", np, t,
              np - 1, s1, s0 > "/dev/stderr"
        }'
    done
  done
done >"$work/scale" 2>"$work/scale.notes"
awk -v trap="$trap_touch" '
  $1 == "touch" { n[$2] = 1; ft[$2 " " $3] = $4; st[$2 " " $3] = $5; q[$2 " " $3] = $6
    kib[$2 " " $3] = ($7 == "-" ? "-" : $7 + $8); qk[$2 " " $3] = $7; pp[$2 " " $3] = $9
    if (!($2 in seen)) { seen[$2] = 1; order[cnt++] = $2 } }
  $1 == "trap" { tf[$2 " " $3] = $4; ts[$2 " " $3] = $5 }
  END {
    printf "%5s %6s %6s %8s %8s %11s %17s %17s", "N", "rc QPs", "dc QPs", "rc KiB", "dc KiB",
      "B/peer rc/dc", "first ms rc/dc", "second ms rc/dc"
    if (trap == 1) printf " %17s %17s", "trap 1st rc/dc", "trap 2nd rc/dc"
    printf "\n"
    for (i = 0; i < cnt; i++) {
      N = order[i]; r = N " rc"; d = N " dc"
      printf "%5s %6s %6s %8s %8s %11s %17s %17s", N, q[r], q[d], kib[r], kib[d],
        pp[r] "/" pp[d], ft[r] "/" ft[d], st[r] "/" st[d]
      if (trap == 1) printf " %17s %17s", tf[r] "/" tf[d], ts[r] "/" ts[d]
      printf "\n"
    }
  }' "$work/scale"
cat "$work/scale.notes"

echo
echo "Extrapolation, network memory per PE (MiB): RC = fixed + KiB per connected QP * (N-1) +" \
  "B/peer * N; DC = constant + B/peer * N"
awk -v pes="$scale_pes" -v w="$work" '
  BEGIN {
    np = split(pes, p, " ")
    while ((getline line < (w "/scale")) > 0) {
      split(line, f, " ")
      if (f[1] != "touch" || f[6] == "-") continue
      k = f[2] " " f[3]; qp[k] = f[6]; qk[k] = f[7]; lk[k] = f[8]; pb[k] = f[9]
      ok[k] = 1
    }
    lo = ""; hi = ""
    for (i = 1; i <= np; i++) if ((p[i] " rc") in ok && (p[i] " dc") in ok) {
      if (lo == "") lo = p[i]; hi = p[i]
    }
    if (lo == "" || lo == hi) { print "  (not enough scale points)"; exit }
    slope = (qk[hi " rc"] - qk[lo " rc"]) / (hi - lo)        # KiB per connected peer
    qslope = (qp[hi " rc"] - qp[lo " rc"]) / (hi - lo)       # QPs per connected peer
    per_qp = qslope > 0 ? slope / qslope : 0
    fixed = qk[hi " rc"] + lk[hi " rc"] - slope * (hi - 1)
    dconst = qk[hi " dc"] + lk[hi " dc"]
    printf "  RC: fixed %.0f KiB, %.1f QPs and %.1f KiB per connected peer (%.1f KiB per QP),"\
      " %d B/peer; DC: %d KiB, %d B/peer (fit over N = %s..%s)\n", fixed, qslope, slope, per_qp,
      pb[hi " rc"], dconst, pb[hi " dc"], lo, hi
    print fixed, slope, pb[hi " rc"], dconst, pb[hi " dc"] > (w "/model")
    printf "  %8s %12s %12s %8s\n", "PEs", "RC MiB", "DC MiB", "RC/DC"
    split("1024 65536 1048576", xs, " ")
    for (i = 1; i <= 3; i++) {
      N = xs[i]
      rc = (fixed + slope * (N - 1) + pb[hi " rc"] * N / 1024) / 1024
      dc = (dconst + pb[hi " dc"] * N / 1024) / 1024
      printf "  %8s %12.1f %12.1f %8.0f\n", N == 1024 ? "1K" : N == 65536 ? "64K" : "1M", rc,
        dc, rc / dc
    }
  }'

echo
echo "4. Crossover"
awk -v pes="$scale_pes" -v w="$work" '
  function gm_add(kind, a, b) { if (a != "" && b != "" && a > 0 && b > 0) {
    s[kind] += log(a / b); c[kind]++ } }
  BEGIN {
    np = split(pes, p, " ")
    while ((getline line < (w "/scale")) > 0) {
      split(line, f, " ")
      if (f[1] != "touch") continue
      k = f[2] " " f[3]; ft[k] = f[4]; mem[k] = (f[7] == "-" ? "" : f[7] + f[8] + f[9] * f[2] / 1024)
    }
    if ((getline line < (w "/model")) > 0) {  # where the fitted memory lines cross
      split(line, f, " ")
      per = f[2] + (f[3] - f[5]) / 1024
      if (per > 0) mem_model = (f[4] - f[1] + f[2]) / per
    }
    mem_from = ""; touch_from = ""
    for (i = np; i >= 1; i--) {  # from the top down: the smallest N from which it holds
      r = p[i] " rc"; d = p[i] " dc"
      if (mem_ok == "" && mem[r] != "" && mem[d] != "" && mem[d] < mem[r]) mem_from = p[i]
      else mem_ok = "no"
      if (touch_ok == "" && ft[r] != "-" && ft[d] != "-" && ft[r] != "" && ft[d] + 0 < ft[r] + 0)
        touch_from = p[i]
      else touch_ok = "no"
    }
    while ((getline line < (w "/best.rc")) > 0) { split(line, f, " "); rc[f[1] " " f[2] " " f[3]] = f[4] }
    while ((getline line < (w "/best.dc")) > 0) { split(line, f, " "); dc[f[1] " " f[2] " " f[3]] = f[4] }
    for (k in rc) {
      split(k, f, " ")
      if (f[1] == "lat" && f[3] == 8) gm_add("lat", dc[k], rc[k])
      if (f[1] == "rate") gm_add("rate", dc[k], rc[k])
    }
    while ((getline line < (w "/pool.best")) > 0) {
      split(line, f, " "); if (f[4] != "") pool[f[1] " " f[2] " " f[3]] = f[4]
    }
    for (k in pool) { split(k, f, " "); if (f[2] == 8) gm_add("pool", pool[k], pool[f[1] " rc " f[3]]) }
    printf "  DC memory below RC from N = %s of those measured (%s), from N = %s by the fitted lines\n",
      mem_from == "" ? "none" : mem_from, pes, mem_model == "" ? "-" : int(mem_model) + 1
    printf "  DC first touch (slowest PE) below RC from N = %s of those measured\n",
      touch_from == "" ? "none" : touch_from
    for (x in c) g[x] = sprintf("%.2f", exp(s[x] / c[x]))
    printf "  steady per operation, dc/rc geometric means: 8-byte latencies %s (> 1: DC slower), "\
      "rates %s, pool with 8 DCIs %s (< 1: DC slower)\n", ("lat" in g) ? g["lat"] : "-",
      ("rate" in g) ? g["rate"] : "-", ("pool" in g) ? g["pool"] : "-"
    cross = mem_from == "" || touch_from == "" ? "" : (mem_from + 0 > touch_from + 0 ? mem_from : touch_from)
    printf "  crossover (both below RC from there on): N = %s\n", cross == "" ? "not within the measured range" : cross
  }'
auto=$(grep -o 'kDcCrossover = [0-9]*' "$root/lib/core/rdma.cc" | grep -o '[0-9]*$' || true)
echo "  (HOSHMEM_TRANSPORT=auto in this tree picks DC from ${auto:-?} PEs: lib/core/rdma.cc kDcCrossover)"
