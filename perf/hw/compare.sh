#!/usr/bin/env bash
# All-HW mode AMO latency over the software mlx5 HCA (test/softhca): hoshmem's AMOs (2 PEs,
# HOSHMEM_ATOMICS=hw; to the other PE and to itself through loopback) next to two limits in one
# process: the same atomics as raw mlx5 WQEs written by lib/transport/ib (hoshmem's own path, no
# library around it) and as ibv_post_send + ibv_poll_cq (verbs: FA and CS only). The model runs
# ibv_post_send's atomics inside the call but notices a raw doorbell through its doorbell thread,
# so the raw column, not the verbs one, is what hoshmem's path can reach here: hoshmem/raw is the
# ratio that says what the library adds (to itself; to another PE the model's two processes add
# their own hand-off). Numbers, not a test.
#   perf/hw/compare.sh [ITERATIONS]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
iters=${1:-2000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== building hoshmem (log: $work/build.log)"
(cd "$root" && bazel run //:install -- "$work/prefix" >"$work/build.log" 2>&1 && bazel shutdown >/dev/null 2>&1) ||
  { tail -20 "$work/build.log"; exit 1; }
"$work/prefix/bin/oshcc" -O2 "$root/perf/hw/hw_amo.c" -o "$work/hw_amo"
cc -O2 "$root/perf/hw/verbs_amo.c" -o "$work/verbs_amo" -libverbs
c++ -std=c++20 -O2 -I"$root" "$root/perf/hw/raw_amo.cc" "$root/lib/transport/ib/queue.cc" \
  "$root/lib/transport/ib/wqe.cc" "$root/lib/atomics/hca_encoding.cc" -o "$work/raw_amo" \
  -libverbs -lmlx5
export SOFTHCA_FABRIC="perf-hw-$$"
"$root/test/softhca/with-softhca" env HOSHMEM_ATOMICS=hw PERF_PIN=1 \
  "$work/prefix/bin/oshrun" -np 2 "$root/perf/pin.sh" "$work/hw_amo" "$iters" >"$work/hoshmem"
"$root/test/softhca/with-softhca" taskset -c 0 "$work/verbs_amo" "$iters" >"$work/verbs"
"$root/test/softhca/with-softhca" taskset -c 0 "$work/raw_amo" "$iters" >"$work/raw"
printf '%-20s %10s %10s %10s %10s\n' "AMO (ns per call)" hoshmem "raw WQE" verbs hosh/raw
while read -r name ns; do
  base=${name%_self}
  raw=$(awk -v n="$base" '$1 == n { print $2 }' "$work/raw")
  verbs=$(awk -v n="$base" '$1 == n { print $2 }' "$work/verbs")
  ratio=-
  [[ -n $raw ]] && ratio=$(awk -v a="$ns" -v b="$raw" 'BEGIN { printf "%.2f", a / b }')
  printf '%-20s %10s %10s %10s %10s\n' "$name" "$ns" "${raw:--}" "${verbs:--}" "$ratio"
done <"$work/hoshmem"
