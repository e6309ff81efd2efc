#!/usr/bin/env bash
# Distributed locks over the software mlx5 HCA (test/softhca): the MCS queue lock against the
# hybrid lock (HOSHMEM_LOCK=hybrid: CPU atomics on the home's node, HCA atomics or the home's lock
# manager elsewhere, migrating between the two per HOSHMEM_LOCK_POLICY, default 4), on 2 nodes of
# 2 PEs (HOSHMEM_PES_PER_NODE=2, 4 PEs: PE 0 and 1 on one node, 2 and 3 on the other), the
# experiments of the MVAPICH2 hybrid-lock study, each run four ways:
#   mcs-sw   HOSHMEM_ATOMICS=sw: the MCS lock with CPU atomics on a node, UD messages across nodes
#   mcs-hw   HOSHMEM_ATOMICS=hw: the MCS lock with HCA atomics everywhere (loopback included)
#   hyb-hw   HOSHMEM_ATOMICS=hw HOSHMEM_LOCK=hybrid
#   hyb-sw   HOSHMEM_ATOMICS=sw HOSHMEM_LOCK=hybrid (its network word by messages across nodes)
# with RMA over RC and messages over UD (HOSHMEM_TRANSPORT=rc HOSHMEM_AM=ud). perf/hw/lock.c:
#   intra      PE 1 locks and unlocks a lock homed on PE 0 (its node), the others in a barrier
#   computing  the same from PE 2 (the other node) while PE 0 computes outside the library
#   spread     every PE locks a lock homed on PE (me+1)%4, all at once: the locks all on PE 0
#              (HOSHMEM_LOCK_HOME=pe0) and each on its own PE (hash, the lock chosen by its home)
#   contend    one lock homed on PE 0, PEs 0..k-1 contending, k = 1 to 4
#   ring       a token round the PEs: each waits for it inside the library, locks the lock homed
#              on its successor, puts, sets the successor's token, unlocks, then computes 20 us
#              outside the library (homes by hash)
#   migrate    PE 1 locks a lock homed on PE 0 ITERS times in x blocks (x = 0, ITERS/100,
#              ITERS/10, ITERS), PE 2 locks it once after each block; also the hybrid lock with
#              HOSHMEM_LOCK_POLICY=eager (migrate at the first request from the other side)
#   tasks      a leader per node (PE 0, PE 2): lock-put-unlock to each PE of its node's lock,
#              to the other leader's, to its node's again (homes by hash)
# Homes by hash: `lock homes` (an MCS job) finds a lock homed on each PE among lock.c's locks; the
# home is a function of the lock's place only, the same for both locks and every later run.
# Columns: us (ms for ring and tasks) per configuration, hyb-hw/mcs-hw (< 1: the hybrid lock is
# faster), then from the SHMEM_INFO finalize lines, per acquisition over the whole job (untimed
# loops and barriers included): UD requests delivered (msg/acq) and, for hyb-hw, the share of
# acquisitions taken with CPU atomics / the network word / a manager, and its migrations.
# Numbers, not a test: nothing here asserts a timing.
#   perf/hw/lock.sh [ITERS]   (default 1000; LOCK_CONFIGS="mcs-sw mcs-hw hyb-hw hyb-sw",
#                              LOCK_PREFIX=dir: an installed hoshmem instead of building one)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
iters=${1:-1000}
configs=${LOCK_CONFIGS:-mcs-sw mcs-hw hyb-hw hyb-sw}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg);" \
  "$iters iterations per loop"
source "$root/perf/hw/install.sh"
install_hoshmem LOCK_PREFIX "$work"
"$prefix/bin/oshcc" -O2 "$root/perf/hw/lock.c" -o "$work/lock"
softhca="$root/test/softhca/with-softhca"
"$softhca" true  # builds the model now if needed, not inside a timed run

config_env() {
  case $1 in
    mcs-sw) echo HOSHMEM_ATOMICS=sw HOSHMEM_LOCK=mcs ;;
    mcs-hw) echo HOSHMEM_ATOMICS=hw HOSHMEM_LOCK=mcs ;;
    hyb-hw) echo HOSHMEM_ATOMICS=hw HOSHMEM_LOCK=hybrid ;;
    hyb-sw) echo HOSHMEM_ATOMICS=sw HOSHMEM_LOCK=hybrid ;;
    hyb-eager) echo HOSHMEM_ATOMICS=hw HOSHMEM_LOCK=hybrid HOSHMEM_LOCK_POLICY=eager ;;
  esac
}
# run OUT CONFIG HOME ARGS...: one job (a fabric of its own); a failure is reported, not fatal
run() {
  local out=$1 config=$2 home=$3
  shift 3
  # shellcheck disable=SC2046
  if ! timeout 300 "$softhca" env SOFTHCA_FABRIC="perf-lock-$$-$RANDOM" HOSHMEM_PES_PER_NODE=2 \
      HOSHMEM_TRANSPORT=rc HOSHMEM_AM=ud HOSHMEM_LOCK_HOME="$home" LOCK_HOMES="$homes" \
      SHMEM_INFO=1 SHMEM_SYMMETRIC_SIZE=4M $(config_env "$config") \
      "$prefix/bin/oshrun" -np 4 "$work/lock" "$@" >"$out" 2>"$out.err"; then
    echo "   FAILED ($config, HOSHMEM_LOCK_HOME=$home, lock $*): $(tail -1 "$out.err")"
  fi
}
val() { [[ -e $1 ]] && awk -v k="$2" -v p="$3" '$1 == k && $2 == p { print $3 }' "$1" || true; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "-"; else printf (a / b < 0.1 ? "%.3f" : "%.2f"), a / b }'; }
acquisitions() { [[ -e $1 ]] && awk '$1 == "acquisitions" { print $2 }' "$1" || true; }
# the UD requests delivered, summed over the PEs' finalize lines ("N requests delivered")
delivered() { awk '/hoshmem: PE [0-9]+: UD:/ { for (i = 2; i < NF; i++) if ($i == "requests" && $(i + 1) ~ /^delivered/) s += $(i - 1) } END { print s + 0 }' "$1"; }
# UD requests delivered per acquisition
msgs() {
  local a
  a=$(acquisitions "$1")
  [[ -z $a || $a == 0 ]] && { echo -; return; }
  awk -v m="$(delivered "$1")" -v a="$a" 'BEGIN { printf "%.2f", m / a }'
}
# the hybrid lock's counters summed over the PEs: "CPU% net% manager% migrations"
hybrid() {
  [[ -e $1 ]] || { echo "- -"; return; }
  awk '/: locks: acquired/ { gsub(/[^0-9]+/, " "); split($0, f, " ");
         c += f[2]; n += f[3]; m += f[4]; mig += f[5] + f[6] }
       END { a = c + n + m; if (a == 0) { print "-"; exit }
             printf "%.0f/%.0f/%.0f %d", 100 * c / a, 100 * n / a, 100 * m / a, mig }' "$1"
}

# pick EXP LABEL CONFIG: the job of that row (a row of its own, else the job of the experiment)
pick() { if [[ -e $work/$1.$2.$3 ]]; then echo "$work/$1.$2.$3"; else echo "$work/$1.job.$3"; fi; }
# table EXP UNIT LABEL:KEY...: a row per label, the times from the lines "EXP KEY VALUE"
table() {
  local exp=$1 unit=$2 c row
  shift 2
  printf '   %-8s' "$exp"
  for c in $configs; do printf ' %10s' "$c $unit"; done
  printf ' %8s %8s %8s %8s %11s %6s\n' hyb/mcs msg/acq msg/acq msg/acq hyb-hw hyb-hw
  printf '   %-8s' ""
  for c in $configs; do printf ' %10s' ""; done
  printf ' %8s %8s %8s %8s %11s %6s\n' "(hw)" mcs-sw hyb-hw hyb-sw cpu/net/mg% migr
  for row in "$@"; do
    local label=${row%%:*} key=${row#*:} v share mig
    printf '   %-8s' "$label"
    for c in $configs; do
      v=$(val "$(pick "$exp" "$label" "$c")" "$exp" "$key")
      printf ' %10s' "${v:--}"
    done
    read -r share mig <<<"$(hybrid "$(pick "$exp" "$label" hyb-hw)")"
    printf ' %8s %8s %8s %8s %11s %6s\n' \
      "$(ratio "$(val "$(pick "$exp" "$label" hyb-hw)" "$exp" "$key")" \
               "$(val "$(pick "$exp" "$label" mcs-hw)" "$exp" "$key")")" \
      "$(msgs "$(pick "$exp" "$label" mcs-sw)")" "$(msgs "$(pick "$exp" "$label" hyb-hw)")" \
      "$(msgs "$(pick "$exp" "$label" hyb-sw)")" "${share:--}" "${mig:--}"
  done
}

echo "== homes: a lock homed on each PE (HOSHMEM_LOCK_HOME=hash, found by an MCS job)"
homes=""
run "$work/homes" mcs-hw hash homes 1
homes=$(awk '$1 == "homes" { print $2 }' "$work/homes")
echo "   lock.c's lock index per home PE 0..3: ${homes:-none found}"
if [[ -z $homes || $homes == *-1* ]]; then
  echo "   (not every PE is some lock's home: the hash-homed experiments fall back to PE 0's homes)"
  homes=0,1,2,3
  hash=pe0
else
  hash=hash
fi

echo "== intra-node: PE 1 locks a lock homed on PE 0 (same node), us per lock+unlock"
for c in $configs; do run "$work/intra.1.$c" "$c" pe0 intra "$iters"; done
table intra us "1:1"

echo "== target computing: PE 2 (other node) locks a lock homed on PE 0 while PE 0 computes," \
  "us per lock+unlock"
for c in $configs; do run "$work/computing.2.$c" "$c" pe0 computing "$iters"; done
table computing us "2:2"

echo "== spread: every PE locks a lock homed on PE (me+1)%4, us per acquisition (slowest PE)"
for c in $configs; do
  run "$work/spread.pe0.$c" "$c" pe0 spread "$iters"
  run "$work/spread.$hash.$c" "$c" "$hash" spread "$iters"
done
if [[ $hash == hash ]]; then table spread us "pe0:0" "hash:0"; else table spread us "pe0:0"; fi

echo "== contention: PEs 0..k-1 lock one lock homed on PE 0, us per acquisition (slowest" \
  "contender); counts over the job (k = 1..4)"
for c in $configs; do run "$work/contend.job.$c" "$c" pe0 contend "$iters"; done
table contend us "1:1" "2:2" "3:3" "4:4"

echo "== ring: $iters rounds of a token, each PE: wait for it, lock homed on the successor" \
  "($hash homes), put, token, unlock, compute 20 us; total ms"
for c in $configs; do run "$work/ring.$iters.$c" "$c" "$hash" ring "$iters"; done
table ring ms "$iters:$iters"

echo "== migration: PE 1 (the home's node) locks a lock homed on PE 0 $iters times in x blocks," \
  "PE 2 (the other node) once after each block; us per PE-1 acquisition (its blocks only)"
rows=()
for x in $(printf '%s\n' 0 $((iters / 100)) $((iters / 10)) "$iters" | awk '!seen[$0]++'); do
  for c in $configs; do run "$work/migrate.x=$x.$c" "$c" pe0 migrate "$iters" "$x"; done
  run "$work/migrate.x=$x.hyb-eager" hyb-eager pe0 migrate "$iters" "$x"
  rows+=("x=$x:$x")
done
table migrate us "${rows[@]}"
echo "-- the hybrid lock (all-HW) by policy: HOSHMEM_LOCK_POLICY=4 (hyb-hw) and eager; us per" \
  "acquisition of PE 1 and of PE 2, migrations (to CPU + to network mode, all PEs)"
printf '   %-8s %10s %10s %10s %10s %8s %8s\n' "" "PE 1 4" "PE 1 eager" "PE 2 4" "PE 2 eager" \
  "migr 4" "migr eag"
for row in "${rows[@]}"; do
  label=${row%%:*} x=${row#*:} h=$work/migrate.${row%%:*}.hyb-hw e=$work/migrate.${row%%:*}.hyb-eager
  printf '   %-8s %10s %10s %10s %10s %8s %8s\n' "$label" "$(val "$h" migrate "$x")" \
    "$(val "$e" migrate "$x")" "$(val "$h" remote "$x")" "$(val "$e" remote "$x")" \
    "$(hybrid "$h" | cut -d' ' -f2)" "$(hybrid "$e" | cut -d' ' -f2)"
done

echo "== task sharing: $iters rounds of a leader per node (PE 0, PE 2) locking each local PE's" \
  "lock, the other leader's, the local ones again ($hash homes); total ms"
for c in $configs; do run "$work/tasks.$iters.$c" "$c" "$hash" tasks "$iters"; done
table tasks ms "$iters:$iters"
echo "== load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
