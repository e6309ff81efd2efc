#!/usr/bin/env bash
# All-HW mode AMO latency over the software mlx5 HCA (test/softhca): hoshmem's AMOs (2 PEs,
# HOSHMEM_ATOMICS=hw; to the other PE and to itself through loopback) next to the same atomics
# written directly in verbs (post and poll: the limit of this path). Prints a table with the
# ratio hoshmem/verbs. The model's own cost dominates both columns: the ratio, not the
# nanoseconds, says what hoshmem adds. Numbers, not a test.
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
export SOFTHCA_FABRIC="perf-hw-$$"
"$root/test/softhca/with-softhca" env HOSHMEM_ATOMICS=hw PERF_PIN=1 \
  "$work/prefix/bin/oshrun" -np 2 "$root/perf/pin.sh" "$work/hw_amo" "$iters" >"$work/hoshmem"
"$root/test/softhca/with-softhca" taskset -c 0 "$work/verbs_amo" "$iters" >"$work/verbs"
printf '%-20s %12s %12s %8s\n' "AMO (ns per call)" hoshmem verbs ratio
while read -r name ns; do
  base=${name%_self}
  limit=$(awk -v n="$base" '$1 == n { print $2 }' "$work/verbs")
  if [[ -n $limit ]]; then
    printf '%-20s %12s %12s %8.2f\n' "$name" "$ns" "$limit" "$(echo "$ns / $limit" | bc -l)"
  else
    printf '%-20s %12s %12s %8s\n' "$name" "$ns" "-" "-"
  fi
done <"$work/hoshmem"
