#!/usr/bin/env bash
# Coherent mode (HOSHMEM_COHERENT) over the software mlx5 HCA (test/softhca): what it saves on
# this node and what it costs towards other nodes. perf/hw/hw_amo.c on 2 PEs (PE r pinned to CPU
# r, perf/pin.sh), PE 0 timing each AMO on a word of PE 1 and of itself, blocking calls, best of
# 5 loops, in five configurations:
#   one node (both PEs on this node):
#     hw        all-HW mode, the model's HCA atomics not coherent: every AMO through loopback
#     coherent  all-HW mode, SOFTHCA_PCIE_ATOMICS=1: CPU atomics (the inline fast path)
#     sw        all-SW mode: CPU atomics (the inline fast path), the reference
#   two nodes (HOSHMEM_PES_PER_NODE=1: PE 1 on another node):
#     hw        all-HW mode: 32-bit and bitwise AMOs are the HCA's masked atomics
#     coherent  SOFTHCA_PCIE_ATOMICS=1: only fetch-add and compare-swap on the HCA, the other
#               operations compare-swap loops on them; this PE's own words by CPU atomics
# coh/hw < 1: coherent mode is faster. On the model a coherent atomic to another process is
# executed by that process's model thread (one CPU atomic instruction cannot reach another
# process's memory), not directly like its other atomics: the two-node coherent column is slower
# on the model than a PCIe atomic is on hardware, where the HCA issues it as any other atomic.
# Numbers, not a test: nothing here asserts a timing.
#   perf/hw/coherent.sh [ITERATIONS]   (default 2000; COHERENT_PREFIX=dir: an installed hoshmem)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
iters=${1:-2000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

source "$root/perf/hw/install.sh"
machine_line "$iters iterations per loop"
install_hoshmem COHERENT_PREFIX "$work"
"$prefix/bin/oshcc" -O2 "$root/perf/hw/hw_amo.c" -o "$work/hw_amo"
use_softhca

# run OUT ENV...: one job (a fabric of its own); a failure is reported, not fatal
run() {
  local out=$1
  shift
  echo "== $(basename "$out"): $*"
  if ! timeout 300 "$softhca" env SOFTHCA_FABRIC="perf-coh-$$-$RANDOM" PERF_PIN=1 SHMEM_INFO=1 \
      "$@" "$prefix/bin/oshrun" -np 2 "$root/perf/pin.sh" "$work/hw_amo" "$iters" \
      >"$out" 2>"$out.err"; then
    echo "   FAILED: $(tail -1 "$out.err")"
    : >"$out"
  fi
  grep -E '^  coherent atomics:' "$out" | sed 's/^  /   /' || true
}
run "$work/node.hw" HOSHMEM_ATOMICS=hw
run "$work/node.coherent" HOSHMEM_ATOMICS=hw SOFTHCA_PCIE_ATOMICS=1
run "$work/node.sw" HOSHMEM_ATOMICS=sw
run "$work/two.hw" HOSHMEM_ATOMICS=hw HOSHMEM_PES_PER_NODE=1
run "$work/two.coherent" HOSHMEM_ATOMICS=hw HOSHMEM_PES_PER_NODE=1 SOFTHCA_PCIE_ATOMICS=1

val() { awk -v n="$2" '$1 == n { print $2 }' "$1" 2>/dev/null; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-";
  else printf (a / b < 0.1 ? "%.2g" : "%.2f"), a / b }'; }
orr() { [ -n "$1" ] && echo "$1" || echo -; }
names=$(awk 'NF == 2 && $2 ~ /^[0-9]+$/ { print $1 }' "$work/node.hw" "$work/node.coherent" |
  awk '!seen[$1]++')

echo
echo "AMO latency, ns per blocking call (PE 0 to PE 1, and to itself: _self)"
printf '%-18s | %9s %9s %9s %8s | %9s %9s %8s\n' "" "one node" "" "" "" "two nodes" "" ""
printf '%-18s | %9s %9s %9s %8s | %9s %9s %8s\n' AMO hw coherent sw coh/hw hw coherent coh/hw
for n in $names; do
  a=$(val "$work/node.hw" "$n") b=$(val "$work/node.coherent" "$n") c=$(val "$work/node.sw" "$n")
  d=$(val "$work/two.hw" "$n") e=$(val "$work/two.coherent" "$n")
  printf '%-18s | %9s %9s %9s %8s | %9s %9s %8s\n' "$n" "$(orr "$a")" "$(orr "$b")" "$(orr "$c")" \
    "$(ratio "$b" "$a")" "$(orr "$d")" "$(orr "$e")" "$(ratio "$e" "$d")"
done
