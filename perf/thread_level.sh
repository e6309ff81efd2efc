#!/usr/bin/env bash
# What the thread level costs: builds perf/src/thread_level.c with an installed hoshmem (every
# call into the library: -DHOSHMEM_NO_INLINE) and runs it at SHMEM_THREAD_SINGLE and at
# SHMEM_THREAD_MULTIPLE, 2 PEs, pinned. Prints ns per call at each level and their ratio.
#   perf/thread_level.sh PREFIX     (PREFIX: from `bazel run //:install -- PREFIX`)
set -euo pipefail
prefix=${1:?usage: perf/thread_level.sh PREFIX}
perf=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$prefix/bin/oshcc" -O2 -DHOSHMEM_NO_INLINE "$perf/src/thread_level.c" -o "$work/thread_level"
for level in 0 3; do
  PERF_THREAD_LEVEL=$level PERF_PIN=1 "$prefix/bin/oshrun" -np 2 "$perf/pin.sh" \
    "$work/thread_level" | grep -v '^#' >"$work/level$level"
done
printf '%-26s %10s %10s %8s\n' call "SINGLE ns" "MULTI ns" "S/M"
join "$work/level0" "$work/level3" |
  awk '{ printf "%-26s %10.1f %10.1f %8.2f\n", $1, $2, $3, $2 / $3 }'
