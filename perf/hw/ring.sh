#!/usr/bin/env bash
# Active messages to other nodes' CPUs over the software mlx5 HCA (test/softhca), UD datagrams
# (HOSHMEM_AM=ud) against the receive ring (HOSHMEM_AM=ring: RDMA writes into one ring per PE,
# room reserved with HCA fetch-adds), in all-SW mode over RC, every PE its own node:
#   latency    perf/hw/ring.c lat on 2 PEs: a fetching AMO and owner-computed accumulates of 8 B
#              to 4 KiB (one message and its reply per 2 KiB or so), blocking, PE 1 waiting
#              inside the library;
#   fan-in     ring.c fan on 2 to 8 PEs: 1 to 7 senders of fetching AMOs to one receiver, the
#              slowest sender's time per AMO, and the retries each transport needed (UD: segments
#              resent and timeouts; ring: reads of the receiver's consumer counter for room);
#   memory     ring.c spread on 2 to RING_MAX_PES PEs (every PE one AMO to every other), the
#              memory each PE's message transport holds at finalize (SHMEM_INFO: UD its send and
#              receive slots and per-peer state, the ring its area: counters, reply slots, ring).
# Numbers, not a test: nothing here asserts a timing.
#   perf/hw/ring.sh [MAX_ITERS]   (default 2000; RING_MAX_PES=32, RING_PREFIX=dir: an installed
#                                  hoshmem instead of building one)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
iters=${1:-2000}
max_pes=${RING_MAX_PES:-32}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg);" \
  "at most $iters iterations per loop"
source "$root/perf/hw/install.sh"
install_hoshmem RING_PREFIX "$work"
"$prefix/bin/oshcc" -O2 "$root/perf/hw/ring.c" -o "$work/ring"
softhca="$root/test/softhca/with-softhca"
"$softhca" true  # builds the model now if needed, not inside a timed run

# run OUT NP AM WHAT: one job (a fabric of its own); a failure is reported, not fatal
run() {
  local out=$1 np=$2 am=$3 what=$4
  if ! timeout 900 "$softhca" env SOFTHCA_FABRIC="perf-ring-$$-$RANDOM" HOSHMEM_PES_PER_NODE=1 \
      HOSHMEM_ATOMICS=sw HOSHMEM_TRANSPORT=rc HOSHMEM_AM="$am" SHMEM_INFO=1 \
      SHMEM_SYMMETRIC_SIZE=4M "$prefix/bin/oshrun" -np "$np" "$work/ring" "$what" "$iters" \
      >"$out" 2>"$out.err"; then
    echo "   FAILED (np $np, HOSHMEM_AM=$am, $what): $(tail -1 "$out.err")"
  fi
}
val() { awk -v k="$2" -v b="$3" '$1 == k && $2 == b { print $3 }' "$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "-"; else printf "%.2f", a / b }'; }
# sum of the number before WORD over the PEs' finalize lines of one transport
total() { awk -v w="$2" '/hoshmem: PE [0-9]+: (UD|ring):/ { for (i = 2; i <= NF; i++) if ($i == w || $i == w ",") s += $(i - 1) } END { print s + 0 }' "$1"; }
memory() { awk '/hoshmem: PE [0-9]+: (UD|ring):/ { for (i = 1; i < NF; i++) if ($i == "memory:") { s += $(i + 1); n++ } } END { if (n) printf "%d", s / n; else print "-" }' "$1"; }

echo "== latency, 2 PEs (us; ring/ud > 1: the ring is slower)"
run "$work/lat.ud" 2 ud lat
run "$work/lat.ring" 2 ring lat
printf '   %-22s %10s %10s %8s\n' "operation" "ud" "ring" "ring/ud"
for b in 0 8 64 512 2048 4096; do
  u=$(val "$work/lat.ud" lat "$b"); r=$(val "$work/lat.ring" lat "$b")
  label=$([ "$b" = 0 ] && echo "fetch_add (8 B)" || echo "accumulate $b B")
  printf '   %-22s %10s %10s %8s\n' "$label" "${u:--}" "${r:--}" "$(ratio "$r" "$u")"
done

echo "== fan-in: senders of fetching AMOs to one PE (us per AMO, slowest sender; retries)"
printf '   %-8s %10s %10s %8s %16s %20s\n' senders "ud" "ring" "ring/ud" "ud resent/tmo" "ring consumer reads"
for np in 2 3 4 5 6 7 8; do
  run "$work/fan.ud.$np" "$np" ud fan
  run "$work/fan.ring.$np" "$np" ring fan
  u=$(val "$work/fan.ud.$np" fan $((np - 1))); r=$(val "$work/fan.ring.$np" fan $((np - 1)))
  printf '   %-8s %10s %10s %8s %16s %20s\n' $((np - 1)) "${u:--}" "${r:--}" "$(ratio "$r" "$u")" \
    "$(total "$work/fan.ud.$np" segments)/$(total "$work/fan.ud.$np" timeouts)" \
    "$(total "$work/fan.ring.$np" consumer)"
done

echo "== memory of the message transport per PE at finalize, after one AMO to every peer (KiB)"
printf '   %-6s %10s %10s\n' PEs ud ring
np=2
while [ "$np" -le "$max_pes" ]; do
  run "$work/mem.ud.$np" "$np" ud spread
  run "$work/mem.ring.$np" "$np" ring spread
  printf '   %-6s %10s %10s\n' "$np" "$(memory "$work/mem.ud.$np")" "$(memory "$work/mem.ring.$np")"
  np=$((np * 2))
done
