#!/usr/bin/env bash
# UD messages across nodes over the software mlx5 HCA (test/softhca): hoshmem's AMOs to a PE of
# another node in all-SW mode (each AMO a UD message that the target PE's CPU executes), with the
# target PE polling, asleep or computing; puts and gets over UD next to RC; the progress thread's
# CPU time while idle; and the same request/answer written directly in verbs, the limit of an AMO
# over UD on this model. Numbers, not a test: nothing here asserts a timing.
#   perf/hw/ud.sh [ITERATIONS]       (default 1000; UD_BATCH=64 AMO rate batch, UD_RMA_BATCH=16
#                                     bandwidth batch, UD_WINDOW=32 verbs requests in flight,
#                                     UD_IDLE_S=3 idle interval, UD_STALL_MS=1000 bounded stall,
#                                     UD_PASSES=2 runs of every AMO job,
#                                     UD_PREFIX=dir: an installed hoshmem instead of building one,
#                                     UD_NODE=0 skips section 5, UD_NODE=only runs only section 5)
#
# Every hoshmem run: perf/hw/ud_amo.c on 2 PEs, HOSHMEM_PES_PER_NODE=1 (each PE a node of its
# own, so PE 1 is reached over the network) HOSHMEM_ATOMICS=sw, PE r pinned to CPU r
# (perf/pin.sh; a PE's progress thread shares its CPU), `oshrun` of the installed tree under
# test/softhca/with-softhca in a fabric of its own. PE 0 drives, PE 1 is the target. Every value
# is the best of 5 timed loops after one untimed; a loop is ITERATIONS long (sizes above 8 KiB:
# ITERATIONS * 8 KiB / size) but cut to ~200 ms at the untimed loop's speed (at least 20
# iterations), so that a slow state does not make the run last minutes. Every AMO job runs
# UD_PASSES times (the passes interleaved): the AMO tables show the best pass ("hoshmem", the
# ratios use it) and the worst ("worst"), since a whole job is sometimes slow in every row.
#
# 1. AMOs over UD (64-bit, on a word of PE 1):
#    latency  fetch_add = shmem_long_atomic_fetch_add (blocking), add = shmem_long_atomic_add +
#             shmem_quiet, compare_swap = shmem_long_atomic_compare_swap (blocking); ns per call
#    rate     UD_BATCH of fetch_add_nbi / add / compare_swap_nbi back to back, then quiet; Mops/s
#    target   what PE 1 does meanwhile:
#             library  waits in shmem_long_wait_until on a flag PE 0 sets at the end (the library
#                      serves UD while it spins and yields, the progress thread while it sleeps)
#             asleep   nanosleep(10 ms) in a loop, a plain load of the flag between sleeps: only
#                      its progress thread, woken by the receive CQ's completion event, answers
#             computing  an arithmetic loop with no library call, a plain load of the flag every
#                      4096 steps: the progress thread has to get the CPU from it
#    threads  which PEs have a progress thread (HOSHMEM_UD_PROGRESS_THREAD=1, the default, or 0:
#             served only inside library calls): "both"; "PE 1" (PE 0, the initiator, started
#             with HOSHMEM_UD_PROGRESS_THREAD=0 by a wrapper that sets it for PMIX_RANK 0 only:
#             shows what the initiator's own thread costs); "none"
#    Without the thread a target outside the library never answers: instead of a run that would
#    end with the give-up error after HOSHMEM_UD_GIVE_UP_MS, the "no progress" rows are one
#    fetch-add issued while PE 1 is asleep or computing for a bounded UD_STALL_MS and then enters
#    shmem_barrier_all: the fetch-add completes only after that (times from CLOCK_MONOTONIC,
#    which both processes share; each run under `timeout`).
#    limit    perf/hw/verbs_ud.c, two processes (nodes), one UD QP each, pinned to CPUs 0 and 1:
#             the round trip of a 64-byte datagram and its same-size answer (an AMO request is a
#             56-byte datagram, its reply 32), the responder polling its CQ ("poll") or blocked in
#             ibv_get_cq_event on its completion channel ("event"); the rate limit: 8-byte
#             requests, UD_WINDOW in flight, a new one per answer. In the verbs table also
#             "ppoll": the responder blocks in ppoll on the channel's fd before ibv_get_cq_event,
#             as hoshmem's progress thread does (the model hands its inbox back to its own thread
#             only in ibv_get_cq_event, so this order can cost more on softhca).
#             Two more requester variants (responder polling), in the verbs table: "yield"
#             (sched_yield after every empty poll, as hoshmem's blocking calls wait) and "armed"
#             (as yield, plus the receive CQ armed before each request and a second thread taking
#             its events on the channel: what a hoshmem initiator with its progress thread does).
#             An AMO needs a request and an answer, so its limit is a round trip (RTT), not the
#             one-way latency (RTT/2) of the verbs table.
#    hosh/rtt, hosh/rate   hoshmem divided by the limit: for latencies > 1 means hoshmem is slower,
#             for rates < 1 means hoshmem is slower.
#    progress thread while measuring: for each run, each PE's thread wake-ups per second (its
#             voluntary context switches: sleeps that ended) and CPU time (schedstat) as % of the
#             run's wall time.
# 2. Puts and gets: put = shmem_putmem + shmem_quiet, get = shmem_getmem (ns per call); put bw,
#    get bw = UD_RMA_BATCH shmem_putmem_nbi / shmem_getmem_nbi then quiet (MB/s = 10^6 B/s);
#    8 B .. 64 KiB, symmetric buffers, PE 1 in shmem_barrier_all. Columns: HOSHMEM_TRANSPORT=rc
#    and HOSHMEM_TRANSPORT=ud (both HOSHMEM_ATOMICS=sw); ud/rc > 1 means UD is slower for
#    latencies, faster for bandwidths. A build where UD does not carry puts and gets yet fails at
#    shmem_init: its column says "n/a" and a line gives the library's one-line reason.
# 3. Idle: both PEs sleep UD_IDLE_S outside the library, right after init and again after 1000
#    fetch-adds and 1000 adds; each PE reads its progress thread's utime+stime
#    (/proc/self/task/TID/stat, clock ticks: 10 ms resolution), its schedstat run time (ns) and
#    voluntary context switches (= wake-ups) before and after, and its whole process's
#    utime+stime (the RDMA model's own threads included). The thread is found by its name
#    "hoshmem-progress" in /proc/self/task/*/comm or, if no thread has that name, as the thread
#    blocked in ppoll on 2 descriptors (the "found by" column).
# 4. The verbs ping-pong itself, 8 B .. the port's MTU: one-way latency (RTT/2) and RTT, the
#    responder modes (ppoll: 8 and 64 B), the two requester variants (8 and 64 B), and the rates.
# 5. Two PEs per node, who serves a node's messages (HOSHMEM_PROGRESS): 4 PEs,
#    HOSHMEM_PES_PER_NODE=2, node A = PEs 0 and 1 drive, node B = PEs 2 and 3 are the targets
#    (PE 0 -> PE 2, PE 1 -> PE 3, both drivers at once), each target polling, asleep or computing
#    as in 1. pe: each target's own queue pair and progress thread answer its AMOs; node: PE 2's
#    answer both targets' (PE 3's thread only sees answers to its own requests, and it makes
#    none). Not pinned (4 PEs on this machine's CPUs: the scheduler places them). Latency and
#    rate of each driver (best of UD_PASSES runs), and every PE's progress thread: wake-ups per
#    second and CPU time as % of the run (PE 2 and PE 3 are the targets).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
iters=${1:-1000}
batch=${UD_BATCH:-64}
rma_batch=${UD_RMA_BATCH:-16}
window=${UD_WINDOW:-32}
idle_s=${UD_IDLE_S:-3}
stall_ms=${UD_STALL_MS:-1000}
passes=${UD_PASSES:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== machine: $(nproc) CPUs, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)," \
  "kernel $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg); iterations $iters," \
  "AMO batch $batch, RMA batch $rma_batch, verbs window $window"
source "$root/perf/hw/install.sh"
install_hoshmem UD_PREFIX "$work"
echo "== compiling the programs"
"$prefix/bin/oshcc" -O2 "$root/perf/hw/ud_amo.c" -o "$work/ud_amo"
cc -O2 "$root/perf/hw/verbs_ud.c" -o "$work/verbs_ud" -libverbs -lpthread

export SOFTHCA_FABRIC="perf-ud-$$"
softhca="$root/test/softhca/with-softhca"
"$softhca" true  # builds the model now if needed, not inside a timed run
hosh=(env HOSHMEM_PES_PER_NODE=1 HOSHMEM_ATOMICS=sw PERF_PIN=1)
# PE0_ENV="VAR=value": set for PE 0 only
cat >"$work/pe0_env.sh" <<'EOF2'
#!/bin/sh
if [ -n "${PE0_ENV:-}" ] && [ "${PMIX_RANK:-}" = 0 ]; then export "$PE0_ENV"; fi
exec "$@"
EOF2
chmod +x "$work/pe0_env.sh"
oshrun=("$prefix/bin/oshrun" -np 2 "$work/pe0_env.sh" "$root/perf/pin.sh" "$work/ud_amo")
oshrun4=("$prefix/bin/oshrun" -np 4 "$work/ud_amo")

# run NAME OUT SECONDS ENV... -- ARGS...: one hoshmem job; a failure is reported, not fatal
run() {
  local name=$1 out=$2 limit=$3; shift 3
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  if ! timeout "$limit" "$softhca" "${hosh[@]}" "${envs[@]}" "${oshrun[@]}" "$@" \
      >"$out" 2>"$out.err"; then
    echo "   $name: FAILED (exit or timeout after ${limit}s): $(tail -1 "$out.err")"
    return 1
  fi
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || a == "-" || b == "-" ||
  b + 0 == 0) print "-"; else printf "%.2f\n", a / b }'; }
state_name() { case $1 in lib) echo "polling in library" ;; sleep) echo "asleep (nanosleep)" ;;
  compute) echo "computing" ;; esac; }

# Section 5: runs its jobs and prints its tables.
node_section() {
  local mode state pass
  for pass in $(seq 1 "$passes"); do
    for state in lib sleep compute; do
      for mode in pe node; do
        echo "== pass $pass: 2 PEs per node, HOSHMEM_PROGRESS=$mode, targets $state"
        timeout 300 "$softhca" env HOSHMEM_PES_PER_NODE=2 HOSHMEM_ATOMICS=sw \
          HOSHMEM_PROGRESS="$mode" "${oshrun4[@]}" amo "$state" "$iters" "$batch" \
          >"$work/node.$mode.$state.$pass" 2>"$work/node.$mode.$state.$pass.err" ||
          echo "   FAILED (exit or timeout): $(tail -1 "$work/node.$mode.$state.$pass.err")"
      done
    done
  done
  cat "$work"/node.* 2>/dev/null | grep '^# WRONG' || true
  # pick FILES KIND NAME STATE PE min|max: the best value of driver PE over the passes
  pick() { local f=$1 k=$2 n=$3 st=$4 pe=$5 m=$6
    cat "$work"/node."$f"."$st".[0-9]* 2>/dev/null | awk -v k="$k" -v n="$n" -v s="$st" \
      -v pe="$pe" -v m="$m" '$1 == k && $2 == n && $3 == s && $5 == pe {
        if (c++ == 0 || (m == "min" ? $4 < v : $4 > v)) v = $4 } END { print c ? v : "-" }'; }
  echo
  echo "two PEs per node (PE 0 -> PE 2, PE 1 -> PE 3 at once): latency (ns) and rate (Mops/s) of each driver; node/pe < 1: node faster (latency), > 1: node faster (rate)"
  printf '%-20s %-13s %9s %9s %9s %9s %9s %9s\n' target operation "pe PE0" "pe PE1" \
    "node PE0" "node PE1" "node/pe 0" "node/pe 1"
  for state in lib sleep compute; do
    for what in "lat fetch_add min" "lat add min" "rate fetch_add max" "rate add max"; do
      set -- $what
      local a0 a1 b0 b1
      a0=$(pick pe "$1" "$2" "$state" 0 "$3"); a1=$(pick pe "$1" "$2" "$state" 1 "$3")
      b0=$(pick node "$1" "$2" "$state" 0 "$3"); b1=$(pick node "$1" "$2" "$state" 1 "$3")
      printf '%-20s %-13s %9s %9s %9s %9s %9s %9s\n' "$(state_name "$state")" "$1 $2" \
        "$a0" "$a1" "$b0" "$b1" "$(ratio "$b0" "$a0")" "$(ratio "$b1" "$a1")"
    done
  done
  echo
  echo "two PEs per node: progress threads during the runs (wake-ups per second; CPU = schedstat run time / wall time), pass by pass"
  printf '%-20s %-5s %4s %8s %11s %11s %11s %11s\n' target mode pass "wall ms" "PE 0 wk/s CPU" \
    "PE 1" "PE 2" "PE 3"
  for state in lib sleep compute; do
    for mode in pe node; do
      for pass in $(seq 1 "$passes"); do
        [ -f "$work/node.$mode.$state.$pass" ] || continue
        awk -v s="$(state_name "$state")" -v m="$mode" -v p="$pass" '
          $1 == "thread" { wall[$3] = $6; wk[$3] = $4; cpu[$3] = $5; if ($6 > w) w = $6 }
          function one(pe) { if (!(pe in wk) || wk[pe] == "-" || wall[pe] == 0) return "-"
            return sprintf("%.0f %.1f%%", wk[pe] * 1000 / wall[pe], 100 * cpu[pe] / wall[pe]) }
          END { printf "%-20s %-5s %4s %8s %13s %11s %11s %11s\n", s, m, p, w, one(0), one(1),
            one(2), one(3) }' "$work/node.$mode.$state.$pass"
      done
    done
  done
}
if [ "${UD_NODE:-1}" = only ]; then
  node_section
  exit 0
fi

echo "== configuration (SHMEM_INFO=1 of the same job)"
run info "$work/info" 60 SHMEM_INFO=1 -- info || true
grep -E '^  (atomicity mode|RDMA device|transport):|^  HOSHMEM_(UD_[A-Z_]+|TRANSPORT|WAIT) ' \
  "$work/info" | sed 's/^  /   /' | cut -c1-200 || true

for pass in $(seq 1 "$passes"); do
  for state in lib sleep compute; do
    echo "== pass $pass: hoshmem AMOs over UD, target $state, progress threads on both PEs"
    run "amo $state" "$work/amo.both.$state.$pass" 180 -- amo "$state" "$iters" "$batch" || true
  done
  for state in lib sleep compute; do
    echo "== pass $pass: hoshmem AMOs over UD, target $state, progress thread on PE 1 only"
    run "amo $state, thread on PE 1" "$work/amo.pe1.$state.$pass" 180 \
      PE0_ENV=HOSHMEM_UD_PROGRESS_THREAD=0 -- amo "$state" "$iters" "$batch" || true
  done
  echo "== pass $pass: hoshmem AMOs over UD, target lib, HOSHMEM_UD_PROGRESS_THREAD=0 (no thread)"
  run "amo lib, no thread" "$work/amo.none.lib.$pass" 180 HOSHMEM_UD_PROGRESS_THREAD=0 -- \
    amo lib "$iters" "$batch" || true
done
for state in sleep compute; do
  echo "== no progress thread, target $state for ${stall_ms} ms (bounded), one fetch-add"
  run "stall $state" "$work/stall.$state" 60 HOSHMEM_UD_PROGRESS_THREAD=0 -- \
    stall "$state" "$stall_ms" || true
done
echo "== verbs: verbs_ud, two processes (the limit)"
timeout 120 "$softhca" "$work/verbs_ud" "$iters" "$window" >"$work/verbs" 2>"$work/verbs.err" ||
  echo "   verbs_ud: FAILED: $(tail -1 "$work/verbs.err")"
echo "== puts and gets: HOSHMEM_TRANSPORT=rc"
run "rma rc" "$work/rma.rc" 180 HOSHMEM_TRANSPORT=rc -- rma "$iters" "$rma_batch" || true
echo "== puts and gets: HOSHMEM_TRANSPORT=ud"
ud_rma_note=""
if ! run "rma ud" "$work/rma.ud" 180 HOSHMEM_TRANSPORT=ud -- rma "$iters" "$rma_batch" \
    >"$work/rma.ud.note"; then
  if ! grep -q '^lat ' "$work/rma.ud" && grep -q 'shmem_init' "$work/rma.ud.err"; then
    ud_rma_note="HOSHMEM_TRANSPORT=ud: not available in this build ($(grep -m1 -o 'shmem_init: .*' \
      "$work/rma.ud.err" | sed 's/ (killed the other PE)$//'))"
    echo "   not available in this build"
  else
    cat "$work/rma.ud.note"
    ud_rma_note="HOSHMEM_TRANSPORT=ud: the run failed: $(tail -1 "$work/rma.ud.err")"
  fi
fi
echo "== idle: both PEs asleep outside the library for ${idle_s} s, twice"
run idle "$work/idle" 120 -- idle "$idle_s" 1000 || true

cat "$work"/amo.* "$work"/stall.* "$work"/rma.* "$work/idle" 2>/dev/null | grep '^# WRONG' || true

# ---- tables ---------------------------------------------------------------------------------
# value FILE KIND NAME WHAT: the 4th field of the first line "KIND NAME WHAT v"
value() { [ -f "$1" ] && awk -v k="$2" -v n="$3" -v w="$4" '$1 == k && $2 == n && $3 == w {
  print $4; exit }' "$1" || true; }
# over FILE_PREFIX KIND NAME WHAT min|max: the smallest or largest value over the passes
over() { for f in "$1".*; do value "$f" "$2" "$3" "$4"; done | awk -v m="$5" 'NF {
  if (n++ == 0 || (m == "min" ? $1 < v : $1 > v)) v = $1 } END { if (n) print v }'; }
orr() { [ -n "$1" ] && echo "$1" || echo -; }
runs="both.lib both.sleep both.compute pe1.lib pe1.sleep pe1.compute none.lib"
threads_name() { case $1 in both) echo both ;; pe1) echo "PE 1" ;; none) echo none ;; esac; }

rtt_poll=$(awk '$1 == "pp" && $2 == "poll" && $3 == 64 { print $5 }' "$work/verbs" 2>/dev/null)
rtt_event=$(awk '$1 == "pp" && $2 == "event" && $3 == 64 { print $5 }' "$work/verbs" 2>/dev/null)
rate_poll=$(awk '$1 == "rate" && $2 == "poll" { print $4 }' "$work/verbs" 2>/dev/null)
rate_event=$(awk '$1 == "rate" && $2 == "event" { print $4 }' "$work/verbs" 2>/dev/null)

echo
echo "AMOs over UD, 8 bytes: latency (ns); limit = verbs UD round trip of 64 B (responder polling: rtt poll; blocked on its channel: rtt event)"
printf '%-13s %-20s %7s %9s %9s %9s %9s %9s %9s\n' operation target threads hoshmem worst \
  "rtt poll" hosh/rtt "rtt event" hosh/rtt
for op in fetch_add add compare_swap; do
  for run_ in $runs; do
    t=${run_%%.*} s=${run_#*.}
    v=$(over "$work/amo.$run_" lat "$op" "$s" min)
    w=$(over "$work/amo.$run_" lat "$op" "$s" max)
    printf '%-13s %-20s %7s %9s %9s %9s %9s %9s %9s\n' "$op" "$(state_name "$s")" \
      "$(threads_name "$t")" "$(orr "$v")" "$(orr "$w")" "$(orr "$rtt_poll")" \
      "$(ratio "$v" "$rtt_poll")" "$(orr "$rtt_event")" "$(ratio "$v" "$rtt_event")"
  done
done
for s in sleep compute; do
  f="$work/stall.$s"
  if grep -q '^stall ' "$f" 2>/dev/null && grep -q '^stall_target ' "$f"; then
    awk -v s="$(state_name "$s")" -v ms="$stall_ms" '
      $1 == "stall" { issued = $3; done = $4 } $1 == "stall_target" { begin = $3; end = $4 }
      END { printf "%-13s %-20s %7s %10s  no progress: issued %.0f ms into the target'"'"'s %d ms, completed %.1f ms after it entered the library (%.0f ms in all)\n",
        "fetch_add", s, "none", "-", (issued - begin) / 1e6, ms, (done - end) / 1e6, (done - issued) / 1e6 }' "$f"
  else
    printf '%-13s %-20s %7s %10s  no result (see the FAILED line above)\n' fetch_add \
      "$(state_name "$s")" none -
  fi
done

echo
echo "AMOs over UD, 8 bytes: rate (Mops/s), $batch back to back then quiet; limit = verbs, $window requests in flight"
printf '%-13s %-20s %7s %9s %9s %9s %9s %9s %9s\n' operation target threads hoshmem worst \
  "verbs pl" hosh/verbs "verbs ev" hosh/verbs
for op in fetch_add add compare_swap; do
  for run_ in $runs; do
    t=${run_%%.*} s=${run_#*.}
    v=$(over "$work/amo.$run_" rate "$op" "$s" max)
    w=$(over "$work/amo.$run_" rate "$op" "$s" min)
    printf '%-13s %-20s %7s %9s %9s %9s %9s %9s %9s\n' "$op" "$(state_name "$s")" \
      "$(threads_name "$t")" "$(orr "$v")" "$(orr "$w")" "$(orr "$rate_poll")" \
      "$(ratio "$v" "$rate_poll")" "$(orr "$rate_event")" "$(ratio "$v" "$rate_event")"
  done
done

echo
echo "progress threads during the AMO runs (wake-ups = voluntary context switches; CPU = schedstat run time / wall time)"
printf '%-20s %7s %4s %10s %12s %8s %12s %8s\n' target threads pass "wall ms" "PE 0 wk/s" \
  "PE 0 CPU" "PE 1 wk/s" "PE 1 CPU"
for run_ in $runs; do
  t=${run_%%.*} s=${run_#*.}
  for pass in $(seq 1 "$passes"); do
    [ -f "$work/amo.$run_.$pass" ] || continue
    awk -v s="$(state_name "$s")" -v t="$(threads_name "$t")" -v p="$pass" '
      $1 == "thread" { wall[$3] = $6; wk[$3] = $4; cpu[$3] = $5 }
      function rate(pe) { return wk[pe] == "-" || wall[pe] == 0 ? "-" : sprintf("%.0f", wk[pe] * 1000 / wall[pe]) }
      function pct(pe) { return cpu[pe] == "-" || wall[pe] == 0 ? "-" : sprintf("%.1f%%", 100 * cpu[pe] / wall[pe]) }
      END { printf "%-20s %7s %4s %10s %12s %8s %12s %8s\n", s, t, p, wall[0], rate(0), pct(0), rate(1), pct(1) }' \
      "$work/amo.$run_.$pass"
  done
done

echo
echo "puts and gets (HOSHMEM_ATOMICS=sw): latency (ns), bandwidth (MB/s, $rma_batch nbi then quiet)"
printf '%-8s %8s %12s %12s %8s\n' operation size "rc" "ud" "ud/rc"
for kind in lat bw; do
  for op in put get; do
    awk -v k="$kind" -v o="$op" '$1 == k && $2 == o { print $3 }' "$work/rma.rc" 2>/dev/null |
      while read -r size; do
        rc=$(value "$work/rma.rc" "$kind" "$op" "$size")
        ud=$(value "$work/rma.ud" "$kind" "$op" "$size")
        label=$op; [ "$kind" = bw ] && label="$op bw"
        printf '%-8s %8s %12s %12s %8s\n' "$label" \
          "$(awk -v b="$size" 'BEGIN { print (b >= 1024 ? b / 1024 " KiB" : b " B") }')" \
          "$(orr "$rc")" "$([ -n "$ud" ] && echo "$ud" || echo n/a)" "$(ratio "$ud" "$rc")"
      done
  done
done
[ -n "$ud_rma_note" ] && echo "$ud_rma_note"

echo
echo "progress thread while idle (${idle_s} s asleep outside the library; CPU % = schedstat / interval)"
printf '%-18s %3s %8s %11s %11s %8s %9s %12s %9s\n' phase PE "wall ms" "utime+stime" \
  "sched ms" "CPU %" "wake-ups" "process ms" "found by"
awk '$1 == "idle" { line[$2, $3] = sprintf("%-18s %3s %8s %11s %11s %8s %9s %12s %9s",
  $2 == "init" ? "after init" : "after 2000 AMOs", $3, $4, $5 == "-" ? "-" : $5 " ms", $6,
  $6 == "-" ? "-" : sprintf("%.4f%%", 100 * $6 / $4), $7, $8, $9) }
  END { split("init after", p, " "); for (i = 1; i <= 2; i++) for (pe = 0; pe < 2; pe++)
    if ((p[i], pe) in line) print line[p[i], pe] }' "$work/idle" 2>/dev/null

echo
echo "verbs UD ping-pong (verbs_ud, the limit), ns; requester polling unless yield/armed; rates in Mops/s ($window in flight)"
printf '%-8s %11s %11s %11s %11s %11s %11s %11s\n' size "poll 1-way" "poll rtt" "event 1-way" \
  "event rtt" "ppoll rtt" "yield rtt" "armed rtt"
awk '$1 == "pp" { rtt[$2, $3] = $5; one[$2, $3] = $4
    if (!($3 in seen)) { seen[$3] = 1; order[n++] = $3 } }
  $1 == "rate" { r[$2] = $4 }
  function v(x) { return x == "" ? "-" : x }
  END {
    for (i = 0; i < n; i++) { s = order[i]
      printf "%-8s %11s %11s %11s %11s %11s %11s %11s\n", s " B", v(one["poll", s]), v(rtt["poll", s]),
        v(one["event", s]), v(rtt["event", s]), v(rtt["ppoll", s]), v(rtt["yield", s]), v(rtt["armed", s]) }
    printf "%-8s %11s %11s %11s %11s %11s\n", "rate 8 B", v(r["poll"]), "", v(r["event"]), "", v(r["ppoll"])
  }' "$work/verbs" 2>/dev/null

[ "${UD_NODE:-1}" = 0 ] || node_section
