#!/usr/bin/env bash
# Unmodified Debian ibverbs-utils over the model: ibv_devices, ibv_devinfo -v and the RC, UD and
# SRQ ping-pong programs as a server and a client process. Each run gets its own fabric name and
# must leave no shared memory behind.
set -uo pipefail
dir="${TEST_SRCDIR:-}/hoshmem/test/softhca/softlib"
[[ -d "$dir" ]] || dir="$(cd "$(dirname "$0")/.." && pwd)/softlib"
export LD_LIBRARY_PATH="$dir"
token="utils-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
tmp="${TEST_TMPDIR:-/tmp}"
passed=0; failed=0
check() { if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $*"; fi; }

devices() { out=$(timeout 20 ibv_devices) && grep -q mlx5_0 <<<"$out"; }
devinfo() {
  out=$(timeout 20 ibv_devinfo -v) || return 1
  grep -q "vendor_part_id:.*4123" <<<"$out" && grep -q "PORT_ACTIVE" <<<"$out" &&
    grep -q "vendor_id:.*0x02c9" <<<"$out" && grep -q "GID\[  0\]" <<<"$out"
}
pingpong() {  # prog port extra-args...: a taken TCP port is retried with another one
  local prog=$1 port=$2 attempt rc; shift 2
  for attempt in 0 1 2; do
    pingpong_once "$prog" $((port + 1000 * attempt)) "$@"; rc=$?
    ((rc == 2)) || return $rc
  done
  return 1
}
pingpong_once() {
  local prog=$1 port=$2; shift 2
  local fab="$token-$prog-$port"
  SOFTHCA_FABRIC=$fab timeout 60 "$prog" -p "$port" -n 200 "$@" >"$tmp/srv.$port" 2>&1 &
  local srv=$!
  local ok=1
  for _ in $(seq 50); do
    SOFTHCA_FABRIC=$fab timeout 60 "$prog" -p "$port" -n 200 "$@" localhost >"$tmp/cli.$port" 2>&1 && { ok=0; break; }
    grep -q "Couldn't connect" "$tmp/cli.$port" || break
    grep -q "Couldn't listen" "$tmp/srv.$port" && break
    sleep 0.1  # server not listening yet
  done
  wait $srv || ok=1
  if grep -q "Couldn't listen" "$tmp/srv.$port"; then echo "port $port taken"; return 2; fi
  grep -q "200 iters" "$tmp/cli.$port" || ok=1
  grep -q "200 iters" "$tmp/srv.$port" || ok=1
  # every process left the fabric, also those that exited without closing the device
  if [[ -e "/dev/shm/softhca.$fab" ]]; then echo "shared memory $fab left behind"; ok=1; fi
  ((ok == 0)) || { echo "--- server"; cat "$tmp/srv.$port"; echo "--- client"; cat "$tmp/cli.$port"; }
  return $ok
}
base=$((20000 + RANDOM % 19000))
check devices
check devinfo
check pingpong ibv_rc_pingpong $base
check pingpong ibv_rc_pingpong $((base + 1)) -e          # completion events
check pingpong ibv_rc_pingpong $((base + 2)) -s 100000   # larger messages
check pingpong ibv_ud_pingpong $((base + 3))
check pingpong ibv_ud_pingpong $((base + 5)) -g 0        # with a GRH (global address, GID 0)
check pingpong ibv_rc_pingpong $((base + 6)) -g 0
check pingpong ibv_srq_pingpong $((base + 4)) -q 4
echo "$passed passed, $failed failed"
((failed == 0))
