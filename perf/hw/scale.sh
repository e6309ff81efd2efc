#!/usr/bin/env bash
# Startup and memory at scale across nodes over the software mlx5 HCA (test/softhca): for rc, dc
# (all-HW mode) and ud (all-SW mode), N PEs each a node of its own, in one run:
#   init ms        shmem_init, the slowest PE and the mean (monotonic clock around the call)
#   touch ms       the first 8-byte put + quiet from every PE to every other PE, slowest PE
#                  (RC connects its queue pairs there), then the same again (second)
#   qps, queues KiB, lanes KiB, B/peer   PE 0's network state (SHMEM_INFO's line: RC/DC queue
#                  pairs, their queues, the lanes' CQs and bounce buffers, per-peer tables)
#   ud KiB         PE 0's UD engine memory at finalize (datagram buffers and the reliability
#                  engine's, ud only)
#   pinned MiB     what PE 0 registers with the device: the symmetric heap (registered whole at
#                  shmem_init: SHMEM_SYMMETRIC_SIZE, SCALE_HEAP, default 64M here, 1G by default
#                  in the library) + queues + lanes (+ ud)
# Numbers, not a test: nothing here asserts a timing.
#   perf/hw/scale.sh            SCALE_PES="2 16 64", SCALE_TRANSPORTS="rc dc ud", SCALE_PASSES=2
#                               (every cell the best pass), SCALE_HEAP=64M, SCALE_PREFIX=dir: an
#                               installed hoshmem, not built
# Every job: `oshrun` of the installed tree under test/softhca/with-softhca,
# HOSHMEM_PES_PER_NODE=1, HOSHMEM_ATOMICS=hw (rc, dc) or sw (ud), each in a fabric of its own and
# under `timeout`; jobs of more PEs than CPUs are left to the scheduler (perf/pin.sh).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
pes=${SCALE_PES:-2 16 64}
transports=${SCALE_TRANSPORTS:-rc dc ud}
passes=${SCALE_PASSES:-2}
heap=${SCALE_HEAP:-64M}
ncpu=$(nproc)
work=$(mktemp -d)
fabric_prefix="perf-scale-$$"
trap 'rm -rf "$work"; rm -f /dev/shm/softhca."$fabric_prefix"-*' EXIT

source "$root/perf/hw/install.sh"
machine_line "PEs $pes, transports $transports, $passes passes, heap $heap"
install_hoshmem SCALE_PREFIX "$work"
"$prefix/bin/oshcc" -O2 "$root/perf/hw/dc_alltoall.c" -o "$work/dc_alltoall"
softhca="$root/test/softhca/with-softhca"
SOFTHCA_FABRIC="$fabric_prefix-build" "$softhca" true  # the model is built now, not in a run

n=0
for pass in $(seq 1 "$passes"); do
  for np in $pes; do
    for t in $transports; do
      n=$((n + 1))
      atomics=hw
      [ "$t" = ud ] && atomics=sw
      out="$work/$t.$np.p$pass"
      fabric=$(printf '%s-%04d' "$fabric_prefix" "$n")
      pin=0
      [ "$np" -le "$ncpu" ] && pin=1
      echo "   pass $pass: $t, $np PEs (load $(cut -d' ' -f1 /proc/loadavg))"
      SOFTHCA_FABRIC=$fabric timeout -k 10 600 "$softhca" env HOSHMEM_PES_PER_NODE=1 \
        HOSHMEM_ATOMICS=$atomics HOSHMEM_TRANSPORT=$t SHMEM_SYMMETRIC_SIZE="$heap" SHMEM_INFO=1 \
        PERF_PIN=$pin "$prefix/bin/oshrun" -np "$np" "$root/perf/pin.sh" "$work/dc_alltoall" \
        --touch >"$out" 2>"$out.err" || echo "   $t $np: FAILED (exit $?): $(tail -1 "$out.err")"
      rm -f /dev/shm/softhca."$fabric" /dev/shm/softhca."$fabric".*
    done
  done
done

heap_mib=$(numfmt --from=iec "$heap" | awk '{ printf "%.0f", $1 / 1048576 }')
echo
printf '%-3s %4s %9s %9s %9s %9s %5s %10s %9s %6s %7s %10s\n' transport PEs "init max" \
  "init mean" "touch 1" "touch 2" qps "queues KiB" "lanes KiB" "B/peer" "ud KiB" "pinned MiB"
for t in $transports; do
  for np in $pes; do
    cat "$work/$t.$np".p*.err "$work/$t.$np".p* 2>/dev/null | awk -v t="$t" -v np="$np" \
      -v heap="$heap_mib" '
      function best(k, v) { if (!(k in m) || v < m[k]) m[k] = v }
      $1 == "init" { best("init", $3); best("mean", $4) }
      $1 == "touch" && $2 == "first" { best("t1", $4) }
      $1 == "touch" && $2 == "second" { best("t2", $4) }
      $1 == "state" && $2 == 0 { q = $3; qk = $4; lk = $5; b = $6 }
      /hoshmem: PE 0: UD:/ { for (i = 1; i < NF; i++) if ($i == "memory:") ud = $(i + 1) }
      END {
        printf "%-9s %4s %9s %9s %9s %9s %5s %10s %9s %6s %7s %10.1f\n", t, np, m["init"], m["mean"],
          m["t1"], m["t2"], q == "" ? "-" : q, qk == "" ? "-" : qk, lk == "" ? "-" : lk,
          b == "" ? "-" : b, ud == "" ? "-" : ud, heap + (qk + lk + ud) / 1024
      }'
  done
done
grep -h "^# WRONG\|unparsed" "$work"/*.p* 2>/dev/null | sort -u | head
