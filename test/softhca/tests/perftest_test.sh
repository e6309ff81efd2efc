#!/usr/bin/env bash
# Unmodified Debian perftest programs over the model, server and client on localhost: DC atomic
# latency and DC RDMA-write bandwidth (mlx5dv DCI/DCT with creation flags, DCI address setters,
# ibv_get_srq_num). Skipped, saying so, where perftest is not installed.
set -uo pipefail
# Under Bazel the libraries built there are selected; run from a checkout, the programs go
# through with-softhca (which builds the model with g++ if needed).
dir="${TEST_SRCDIR:-}/hoshmem/test/softhca/softlib"
wrap=()
if [[ -n "${TEST_SRCDIR:-}" && -d "$dir" ]]; then
  export LD_LIBRARY_PATH="$dir"
else
  wrap=("$(cd "$(dirname "$0")/.." && pwd)/with-softhca")
  "${wrap[@]}" true || exit 1  # build once, before server and client start together
fi
if ! command -v ib_write_bw >/dev/null || ! command -v ib_atomic_lat >/dev/null; then
  echo "SKIPPED: perftest is not installed (apt-get install perftest; see scripts/debian-packages.txt)"
  exit 0
fi
token="perftest-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
tmp="${TEST_TMPDIR:-/tmp}"
passed=0; failed=0
run_once() {  # port prog args...: 0 ok, 1 failed, 2 port taken or clock estimate failed: again
  local port=$1 prog=$2; shift 2
  local fab="$token-$prog-$port"
  SOFTHCA_FABRIC=$fab timeout 60 "${wrap[@]}" "$prog" -p "$port" "$@" >"$tmp/srv.$port" 2>&1 &
  local srv=$! ok=1
  for _ in $(seq 50); do
    SOFTHCA_FABRIC=$fab timeout 60 "${wrap[@]}" "$prog" -p "$port" "$@" localhost >"$tmp/cli.$port" 2>&1 && { ok=0; break; }
    grep -q "Couldn't connect\|Unable to open file descriptor for socket" "$tmp/cli.$port" || break
    grep -qi "couldn't listen\|bind" "$tmp/srv.$port" && break
    sleep 0.1  # server not listening yet
  done
  wait $srv || ok=1
  if grep -qi "couldn't listen\|bind failed" "$tmp/srv.$port"; then return 2; fi
  # perftest estimates the CPU's clock by timing a loop; on a loaded machine the estimate fails
  # its own fit ("Correlation coefficient ... < 0.9") and no report is made: that run says
  # nothing about the model, so it goes again
  if grep -q "Correlation coefficient" "$tmp/cli.$port" "$tmp/srv.$port"; then return 2; fi
  # the result line (size, iterations, ...): the client prints it, a bandwidth server too
  local files=("$tmp/cli.$port")
  [[ $prog == *_bw ]] && files+=("$tmp/srv.$port")
  for f in "${files[@]}"; do
    grep -Eq "^ +[0-9]+ +$N_ITERS " "$f" || ok=1
  done
  if ((ok)); then echo "--- server"; cat "$tmp/srv.$port"; echo "--- client"; cat "$tmp/cli.$port"; fi
  return $ok
}
check() {  # port prog args...
  local port=$1 rc; shift
  for attempt in 0 1 2; do
    run_once $((port + 1000 * attempt)) "$@"; rc=$?
    ((rc == 2)) || break
  done
  if ((rc == 0)); then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $*"; fi
}
N_ITERS=200
base=$((20000 + RANDOM % 19000))
check $base ib_atomic_lat -c DC -n $N_ITERS
check $((base + 1)) ib_write_bw -c DC -n $N_ITERS
check $((base + 2)) ib_atomic_lat -c DC -A FETCH_AND_ADD -n $N_ITERS
echo "$passed passed, $failed failed"
((failed == 0))
