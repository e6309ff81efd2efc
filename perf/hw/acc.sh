#!/usr/bin/env bash
# One-sided accumulate across nodes over the software mlx5 HCA (test/softhca): owner computes
# against caller computes, and the HCA computing (NIC) in all-HW mode, with the target PE polling
# inside the library, asleep or computing, and the interrupt that wakes a sleeping target's
# progress thread delayed by 0, 12 and 54.5 us (SOFTHCA_EVENT_DELAY_US: the model's knob; 12 and
# 54.5 us are the two interrupt costs the owner-computes design was first measured with).
# Numbers, not a test: nothing here asserts a timing.
#   perf/hw/acc.sh [MAX_ITERS]   (default 2000; ACC_DELAYS="0 12 54.5", ACC_TARGETS="polling
#                                 asleep computing", ACC_MAX_BYTES=1048576, ACC_BATCH=8,
#                                 ACC_PREFIX=dir: an installed hoshmem instead of building one)
#
# Every run: perf/hw/acc.c on 2 PEs, each its own node (HOSHMEM_PES_PER_NODE=1), PE r pinned to
# CPU r (perf/pin.sh; a PE's progress thread shares its CPU), PE 0 accumulating sums into PE 1.
#   all-SW (HOSHMEM_ATOMICS=sw, puts and gets over RC, messages over UD): HOSHMEM_ACC=owner (the
#     elements in UD messages, applied by PE 1's CPU under its stripe locks) and
#     HOSHMEM_ACC=caller (PE 1's stripe lock by a UD message, an RDMA get, the sum, an RDMA put,
#     the release): for every target state and delay.
#   all-HW (HOSHMEM_ATOMICS=hw over RC): HOSHMEM_ACC=owner (the caller takes PE 1's stripe lock
#     with an HCA atomic, the elements go in UD messages PE 1's CPU applies, the caller releases)
#     and HOSHMEM_ACC=caller (lock, get, sum, put, release: all HCA, no target CPU), for every
#     target state and delay; then auto, where longs go to the HCA (a non-fetching add per
#     element), against caller computes (target polling, no delay: its CPU takes no part).
# Columns: latency of one blocking accumulate + quiet (us) and bandwidth of ACC_BATCH _nbi
# accumulates + quiet (MB/s = 10^6 B/s); owner/caller < 1 means owner computes is faster in
# latency, > 1 in bandwidth. The summary lines list, per target state and delay, the sizes at
# which owner computes had the lower latency.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
iters=${1:-2000}
delays=${ACC_DELAYS:-0 12 54.5}
targets=${ACC_TARGETS:-polling asleep computing}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== machine: $(nproc) CPUs, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg); at most $iters iterations per loop"
source "$root/perf/hw/install.sh"
install_hoshmem ACC_PREFIX "$work"
"$prefix/bin/oshcc" -O2 "$root/perf/hw/acc.c" -o "$work/acc"
softhca="$root/test/softhca/with-softhca"
"$softhca" true  # builds the model now if needed, not inside a timed run

# run OUT TARGET ENV...: one job (a fabric of its own); a failure is reported, not fatal
run() {
  local out=$1 target=$2
  shift 2
  if ! timeout 600 "$softhca" env SOFTHCA_FABRIC="perf-acc-$$-$RANDOM" HOSHMEM_PES_PER_NODE=1 \
      PERF_PIN=1 "$@" "$prefix/bin/oshrun" -np 2 "$root/perf/pin.sh" "$work/acc" "$target" \
      "$iters" >"$out" 2>"$out.err"; then
    echo "   FAILED ($* $target): $(tail -1 "$out.err")"
    : >"$out"
  fi
}
col() { awk -v t="$2" -v b="$3" -v c="$4" '$1 == t && $2 == b { print $c }' "$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "-"; else printf "%.2f", a / b }'; }
size() { awk -v b="$1" 'BEGIN { if (b >= 1048576) printf "%d MiB", b / 1048576; else if (b >= 1024) printf "%d KiB", b / 1024; else printf "%d B", b }'; }
sizes="8 64 512 4096 16384 65536 262144 1048576"

# table A B LABEL_A LABEL_B TYPE: latency and bandwidth of two runs side by side
table() {
  local a=$1 b=$2 la=$3 lb=$4 type=$5 s
  printf '   %-8s %10s %10s %8s %10s %10s %8s\n' "$type" "$la us" "$lb us" "$la/$lb" "$la MB/s" \
    "$lb MB/s" "$la/$lb"
  for s in $sizes; do
    local al bl ab bb
    al=$(col "$a" "$type" "$s" 3); bl=$(col "$b" "$type" "$s" 3)
    ab=$(col "$a" "$type" "$s" 4); bb=$(col "$b" "$type" "$s" 4)
    [[ -z $al$bl ]] && continue
    printf '   %-8s %10s %10s %8s %10s %10s %8s\n' "$(size "$s")" "${al:--}" "${bl:--}" \
      "$(ratio "$al" "$bl")" "${ab:--}" "${bb:--}" "$(ratio "$ab" "$bb")"
  done
}
# crossover A B TYPE: the sizes at which A's latency is below B's ("-": none), and how many
crossover() {
  local a=$1 b=$2 type=$3 s won=() n=0
  for s in $sizes; do
    local al bl
    al=$(col "$a" "$type" "$s" 3); bl=$(col "$b" "$type" "$s" 3)
    [[ -z $al || -z $bl ]] && continue
    n=$((n + 1))
    awk -v x="$al" -v y="$bl" 'BEGIN { exit !(x < y) }' && won+=("$(size "$s" | tr -d ' ')")
  done
  echo "${#won[@]}/$n: ${won[*]:--}"
}

# owner_vs_caller MODE: every target state and delay, owner computes against caller computes
owner_vs_caller() {
  local mode=$1
  summary=()
  for delay in $delays; do
    for target in $targets; do
      o=$work/$mode.owner.$target.$delay c=$work/$mode.caller.$target.$delay
      run "$o" "$target" HOSHMEM_ATOMICS="$mode" HOSHMEM_TRANSPORT=rc HOSHMEM_ACC=owner SOFTHCA_EVENT_DELAY_US="$delay"
      run "$c" "$target" HOSHMEM_ATOMICS="$mode" HOSHMEM_TRANSPORT=rc HOSHMEM_ACC=caller SOFTHCA_EVENT_DELAY_US="$delay"
      echo "-- target $target, event delay $delay us"
      table "$o" "$c" owner caller double
      table "$o" "$c" owner caller long
      summary+=("$(printf '   %-10s %5s us  doubles %-44s longs %s' "$target" "$delay" \
        "$(crossover "$o" "$c" double)" "$(crossover "$o" "$c" long)")")
    done
  done
  echo "== $mode: sizes at which owner computes has the lower latency (of those measured)"
  printf '%s\n' "${summary[@]}"
}

echo "== all-SW mode (messages over UD, RMA over RC): owner computes vs caller computes"
echo "   (caller computes takes the stripe locks with UD messages: the target's CPU serves them too)"
owner_vs_caller sw
echo "== all-HW mode over RC: owner computes (UD messages, the caller holding the locks by HCA"
echo "   atomics) vs caller computes (locks, get, put: no target CPU)"
owner_vs_caller hw

echo "== all-HW mode over RC, target polling: the HCA (auto: longs) vs caller computes"
run "$work/hw.auto" polling HOSHMEM_ATOMICS=hw HOSHMEM_TRANSPORT=rc
table "$work/hw.auto" "$work/hw.caller.polling.0" nic caller long
echo "   the HCA has the lower latency at: longs $(crossover "$work/hw.auto" "$work/hw.caller.polling.0" long)"
