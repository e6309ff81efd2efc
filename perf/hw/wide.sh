#!/usr/bin/env bash
# Masked atomics for programs across nodes over the software mlx5 HCA (test/softhca): perf/hw/wide.c
# on 2 PEs, each its own node (HOSHMEM_PES_PER_NODE=1), PE r pinned to CPU r (perf/pin.sh), PE 0
# updating PE 1's words, in three configurations:
#   hca    all-HW over RC, SOFTHCA_EXT_ATOMIC_MAX=256: 16-128 bytes as the HCA's extended atomics
#          (256 under the stripe locks: its compare-swap fits no work request)
#   lock   all-HW over RC, the model's default (8 bytes): every size above 8 under the target's
#          stripe locks (lock and release by HCA atomics, RDMA get and put)
#   sw     all-SW (AMOs as UD messages, puts and gets over RC): above 8 bytes the same lock
#          fallback, the locks taken by messages the target's CPU executes
# Numbers, not a test: nothing here asserts a timing.
#   perf/hw/wide.sh [MAX_ITERS]   (default 2000; WIDE_PREFIX=dir: an installed hoshmem)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
iters=${1:-2000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

source "$root/perf/hw/install.sh"
machine_line "at most $iters iterations per loop"
install_hoshmem WIDE_PREFIX "$work"
"$prefix/bin/oshcc" -O2 "$root/perf/hw/wide.c" -o "$work/wide"
use_softhca

# run OUT ENV...: one job (a fabric of its own); a failure is reported, not fatal
run() {
  local out=$1
  shift
  if ! timeout 600 "$softhca" env SOFTHCA_FABRIC="perf-wide-$$-$RANDOM" HOSHMEM_PES_PER_NODE=1 \
      PERF_PIN=1 "$@" "$prefix/bin/oshrun" -np 2 "$root/perf/pin.sh" "$work/wide" "$iters" \
      >"$out" 2>"$out.err"; then
    echo "   FAILED ($*): $(tail -1 "$out.err")"
    : >"$out"
  fi
}
run "$work/hca" HOSHMEM_ATOMICS=hw HOSHMEM_TRANSPORT=rc SOFTHCA_EXT_ATOMIC_MAX=256
run "$work/lock" HOSHMEM_ATOMICS=hw HOSHMEM_TRANSPORT=rc
run "$work/sw" HOSHMEM_ATOMICS=sw HOSHMEM_TRANSPORT=rc
col() { awk -v t="$2" -v k="$3" -v c="$4" '$1 == t && $2 == k { print $c }' "$1"; }

echo "== K 16-bit counters: one fetch-add with fields of 2K bytes vs K 8-byte fetch-adds (us per update of all K)"
printf '   %5s %6s | %9s %9s | %9s %9s | %9s %9s\n' K bytes "hca:fld" "hca:sep" "lock:fld" \
  "lock:sep" "sw:fld" "sw:sep"
for k in 4 8 16 32 64 128; do
  printf '   %5s %6s | %9s %9s | %9s %9s | %9s %9s\n' "$k" $((2 * k)) \
    "$(col "$work/hca" packed "$k" 4)" "$(col "$work/hca" packed "$k" 5)" \
    "$(col "$work/lock" packed "$k" 4)" "$(col "$work/lock" packed "$k" 5)" \
    "$(col "$work/sw" packed "$k" 4)" "$(col "$work/sw" packed "$k" 5)"
done
echo "== 16-byte compare-swap (pointer and tag) vs the same update under shmem_set_lock (us)"
printf '   %-6s %12s %12s\n' config masked locked
for c in hca lock sw; do
  printf '   %-6s %12s %12s\n' "$c" "$(col "$work/$c" cas16 16 3)" "$(col "$work/$c" cas16 16 4)"
done
