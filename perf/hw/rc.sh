#!/usr/bin/env bash
# RC across nodes over the software mlx5 HCA (test/softhca): hoshmem's puts, gets and AMOs to a PE
# of another node next to the same operations written directly in verbs, in one run. Numbers, not
# a test: nothing here asserts a timing.
#   perf/hw/rc.sh [ITERATIONS]       (default 1000; RC_BATCH=64 rate batch, RC_COUNT=1000 adds,
#                                     RC_ONLY_COUNT=1: the instruction count alone,
#                                     RC_CALLGRIND_OUT=file: keep its profile)
#
# Columns (every value the best of 5 timed loops after one untimed; loops on sizes above 8 KiB
# run ITERATIONS * 8 KiB / size times, at least 10):
#   hoshmem  perf/hw/rc_rma.c: 2 PEs, HOSHMEM_PES_PER_NODE=1 HOSHMEM_ATOMICS=hw
#            HOSHMEM_TRANSPORT=rc (so the other PE is on another node), PE r pinned to CPU r
#            (perf/pin.sh). put = shmem_putmem + shmem_quiet in a loop (not a ping-pong), get =
#            shmem_getmem, symmetric (registered) buffers; put_nbi rate = 8-byte shmem_putmem_nbi,
#            quiet after every RC_BATCH; AMO latency = one blocking call (non-fetching ones + quiet);
#            AMO rate = RC_BATCH back to back (fetching ones in their _nbi form), then quiet.
#   verbs    perf/hw/verbs_rc.c: the same loops as ibv_post_send + ibv_poll_cq between two processes
#            (two nodes of the fabric), one RC QP each: RDMA write (inline up to 128 B, signaled),
#            RDMA read, FA/CS (the standard atomics hoshmem uses for 64-bit fetch, fetch_add, add,
#            inc, fetch_inc, compare_swap); rates signal only the last WQE of each batch.
#   raw      perf/hw/raw_amo.cc --table (AMOs only): hoshmem's own WQE for each AMO
#            (lib/transport/ib + lib/atomics/hca_encoding), written into the SQ, doorbell record
#            and register, completion polled by owner bit, in ONE process over two loopback QPs:
#            the limit of the raw-WQE path on this model, the one perf/hw/compare.sh measures.
#   hosh/verbs, hosh/raw   hoshmem divided by the other column: for latencies (ns) > 1 means
#            hoshmem is slower, for rates (Mops/s) < 1 means hoshmem is slower.
#
# Instructions per call (callgrind; `perf stat -e instructions:u` needs a PMU, which a VM may not
# have): perf/hw/rc_add_count.c makes RC_COUNT calls of count_add (a noinline function holding one
# shmem_long_atomic_add of a global of the other node's PE, the inline shim of shmem.h included),
# as many of count_add_heap (the same on a heap word) and of count_empty (the same function,
# empty), after warm-up adds that connect the QP. PE 0 runs under `valgrind --tool=callgrind
# --collect-atstart=no --toggle-collect=count_add --toggle-collect=count_add_heap
# --toggle-collect=count_empty --separate-threads=yes`, so only the calling thread's instructions
# inside those functions count (the model's doorbell and message threads run in the process
# but are other threads, not counted). From the main thread's profile:
#   per call = (incl(count_add) - incl(waits) - incl(count_empty)) / RC_COUNT
# (count_add_heap likewise)
# where waits are the functions that wait for a completion (RC_WAIT_FNS, a regex, default
# `Transport::wait_for\(`): the current tree's add waits for its completion inside the call, and
# those polling loops' instructions depend on how long the model takes, not on the code path from
# the API call to the doorbell. Any instruction of the model's own libraries (libibverbs/libmlx5
# of softhca) in the calling thread is listed and subtracted too (the doorbell thread is kept
# polling, SOFTHCA_DOORBELL_SPIN_US=1000000, so a doorbell store never faults into the model's
# handler; such lines normally do not appear). Needs Debian's valgrind package.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
iters=${1:-1000}
batch=${RC_BATCH:-64}
count=${RC_COUNT:-1000}
wait_fns=${RC_WAIT_FNS:-'Transport::wait_for(_room)?\('}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== machine: $(nproc) CPUs, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg); iterations $iters, batch $batch"
echo "== building hoshmem (log: $work/build.log)"
(cd "$root" && bazel run //:install -- "$work/prefix" >"$work/build.log" 2>&1 &&
  bazel shutdown >/dev/null 2>&1) ||
  { tail -20 "$work/build.log"; exit 1; }
echo "== compiling the programs"
"$work/prefix/bin/oshcc" -O2 "$root/perf/hw/rc_rma.c" -o "$work/rc_rma"
"$work/prefix/bin/oshcc" -O2 "$root/perf/hw/rc_add_count.c" -o "$work/rc_add_count"
cc -O2 "$root/perf/hw/verbs_rc.c" -o "$work/verbs_rc" -libverbs
c++ -std=c++20 -O2 -I"$root" "$root/perf/hw/raw_amo.cc" "$root/lib/transport/ib/queue.cc" \
  "$root/lib/transport/ib/wqe.cc" "$root/lib/atomics/hca_encoding.cc" -o "$work/raw_amo" \
  -libverbs -lmlx5

export SOFTHCA_FABRIC="perf-rc-$$"
softhca="$root/test/softhca/with-softhca"
hosh_env=(env HOSHMEM_PES_PER_NODE=1 HOSHMEM_ATOMICS=hw HOSHMEM_TRANSPORT=rc PERF_PIN=1)
if [ "${RC_ONLY_COUNT:-0}" = 0 ]; then
echo "== hoshmem: rc_rma on 2 PEs, one per node"
"$softhca" "${hosh_env[@]}" "$work/prefix/bin/oshrun" -np 2 "$root/perf/pin.sh" \
  "$work/rc_rma" "$iters" "$batch" >"$work/hoshmem"
echo "== verbs: verbs_rc, two processes"
"$softhca" taskset -c 0 "$work/verbs_rc" "$iters" "$batch" >"$work/verbs"
echo "== raw WQE: raw_amo --table, one process"
"$softhca" taskset -c 0 "$work/raw_amo" "$iters" --table "$batch" >"$work/raw"
grep '^# WRONG' "$work/hoshmem" || true

# table KIND UNIT: one line per hoshmem result of that kind
table() {
  local kind=$1 unit=$2
  printf '\n%-18s %8s %12s %12s %10s %12s %10s\n' "operation ($unit)" size hoshmem verbs \
    hosh/verbs raw hosh/raw
  awk -v kind="$kind" -v vf="$work/verbs" -v rf="$work/raw" '
    function load(file, into,   k, n, s, v) {
      while ((getline line < file) > 0) {
        split(line, f, " ")
        if (f[1] == kind) into[f[2] " " f[3]] = f[4]
      }
    }
    function ratio(a, b) { return b == "" || b == 0 ? "-" : sprintf("%.2f", a / b) }
    function size(b) {
      return b >= 1048576 ? b / 1048576 " MiB" : b >= 1024 ? b / 1024 " KiB" : b " B"
    }
    BEGIN { load(vf, verbs); load(rf, raw) }
    $1 == kind {
      key = $2 " " $3; v = verbs[key]; r = raw[key]
      printf "%-18s %8s %12s %12s %10s %12s %10s\n", $2, size($3), $4, v == "" ? "-" : v,
        ratio($4, v), r == "" ? "-" : r, ratio($4, r)
    }' "$work/hoshmem"
}
table lat ns
table rate Mops/s
fi

echo
echo "== instructions per shmem_long_atomic_add to another node's PE (callgrind, $count calls)"
if ! command -v valgrind >/dev/null || ! command -v callgrind_annotate >/dev/null; then
  echo "NOTE: valgrind is not installed (Debian package valgrind): no instruction count"
  exit 0
fi
cat >"$work/under_callgrind.sh" <<EOF
#!/bin/sh
if [ "\${PMIX_RANK:-0}" = 0 ]; then
  exec valgrind --tool=callgrind --separate-threads=yes --collect-atstart=no \\
    --toggle-collect=count_add --toggle-collect=count_add_heap --toggle-collect=count_empty \\
    --callgrind-out-file="$work/callgrind.%p" "\$@" 2>"$work/valgrind.log"
fi
exec "\$@"
EOF
chmod +x "$work/under_callgrind.sh"
SOFTHCA_DOORBELL_SPIN_US=1000000 "$softhca" "${hosh_env[@]}" "$work/prefix/bin/oshrun" -np 2 \
  "$work/under_callgrind.sh" "$work/rc_add_count" "$count" >"$work/count.out" ||
  { echo "callgrind run failed:"; tail -5 "$work/valgrind.log" "$work/count.out"; exit 1; }
main=$(ls "$work"/callgrind.*-01)
# RC_CALLGRIND_OUT=file keeps the profile (callgrind_annotate --auto=yes shows it line by line)
if [ -n "${RC_CALLGRIND_OUT:-}" ]; then cp "$main" "$RC_CALLGRIND_OUT"; fi
callgrind_annotate --auto=no --inclusive=yes --threshold=100 "$main" >"$work/inclusive.txt"
callgrind_annotate --auto=no --threshold=100 "$main" >"$work/self.txt"
# "N,NNN (x%)  file:function [object]": sum the costs of the lines whose rest matches
# (only the function listing, after its "file:function" header)
sum() {
  awk -v re="$1" '/file:function/ { on = 1; next } on && $1 ~ /^[0-9,]+$/ && $0 ~ re {
    gsub(",", "", $1); s += $1 } END { print s + 0 }' "$2"
}
add=$(sum ':count_add( |$)' "$work/inclusive.txt")
add_heap=$(sum ':count_add_heap( |$)' "$work/inclusive.txt")
empty=$(sum ':count_empty( |$)' "$work/inclusive.txt")
waits=$(sum "$wait_fns" "$work/inclusive.txt")
model=$(sum 'softhca|libibverbs\.so|libmlx5\.so' "$work/self.txt")
# waits and model code are summed over the whole profile (both counted functions): normally 0.
awk -v a="$add" -v h="$add_heap" -v e="$empty" -v w="$waits" -v m="$model" -v n="$count" 'BEGIN {
  printf "count_add inclusive      %12d  (%.1f per call; a global)\n", a, a / n
  printf "count_add_heap inclusive %12d  (%.1f per call; a heap word)\n", h, h / n
  printf "  waiting for completion %12d  (%.1f per call; functions matching RC_WAIT_FNS)\n", w, w / n
  printf "  model (softhca) code   %12d  (%.1f per call)\n", m, m / n
  printf "count_empty inclusive    %12d  (%.1f per call)\n", e, e / n
  printf "hoshmem, API call to doorbell and return, no waiting: %.1f instructions per call to a global, %.1f to a heap word (target 100)\n",
    (a - w - m - e) / n, (h - e) / n
}'
echo "largest self costs inside count_add and count_add_heap (instructions per add, the two together; waiting functions included):"
awk -v n="$((2 * count))" '/file:function/ { on = 1; next } on && $1 ~ /^[0-9,]+$/ {
  c = $1; gsub(",", "", c); sub(/^ *[0-9,]+ +\([ 0-9.]+%\) +/, "")
  if (c / n >= 5 && shown++ < 20) printf "  %8.1f  %s\n", c / n, substr($0, 1, 110) }' "$work/self.txt"
cat "$work/count.out"
