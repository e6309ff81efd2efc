#!/usr/bin/env bash
# Unmodified UCX (Debian's ucx-utils / libucx0) over the model: `ucx_info -d` lists the device with
# its IB transports, and `ucx_perftest` server/client pairs (each process a node of its own on one
# fabric) run put/get, tag and AM latency/bandwidth and the 32/64-bit atomics on each transport
# that works over the model, with UCX's default settings (on rc_mlx5 and dc_mlx5 UCX's DevX path:
# the model's DevX objects, KSM mkeys and hardware atomics) and with DevX off. Skipped, saying so,
# only where UCX is not installed (scripts/debian-packages.txt lists ucx-utils).
#   UCX_TEST_TLS="rc_verbs ..."  restricts the transports, UCX_TEST_QUICK=1 runs one test each.
set -uo pipefail
common="$(dirname "$0")/ucx_common.sh"
[[ -n ${TEST_SRCDIR:-} ]] && common="$TEST_SRCDIR/hoshmem/test/softhca/tests/ucx_common.sh"
# shellcheck source=ucx_common.sh
source "$common"
ucx_setup ucx
passed=0; failed=0; failures=()

# 1. ucx_info -d: the model's device with every IB transport UCX has for it.
export SOFTHCA_FABRIC="$token-info"
timeout 120 "${wrap[@]}" ucx_info -d >"$tmp/info" 2>&1
for tl in rc_verbs rc_mlx5 ud_verbs ud_mlx5 dc_mlx5; do
  if awk -v tl="$tl" '/Transport:/ {t=$3} /Device:/ && t==tl && $3=="mlx5_0:1" {f=1} END {exit !f}' "$tmp/info"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); failures+=("ucx_info -d: no $tl on mlx5_0:1")
  fi
done

# 2. ucx_perftest pairs. "rc_verbs,ud_verbs:aux" is UCX's own rc_v alias: UD only for wireup.
run_once() {  # port tls devx test...: 0 ok, 1 failed, 2 port taken
  local port=$1 tls=$2 devx=$3; shift 3
  local ok=0
  ucx_pair "$port" 120 UCX_TLS="$tls" UCX_IB_MLX5_DEVX="$devx" "${extra_env[@]}" -- "$@" || ok=$?
  ((ok == 2)) && return 2
  if [[ -n $require ]] && ! grep -q "$require" "$tmp/cli"; then
    ok=1; echo "--- client: no line matching '$require'"
  fi
  if ((ok)); then echo "--- server"; tail -20 "$tmp/srv"; echo "--- client"; tail -20 "$tmp/cli"; fi
  return $ok
}
port=$((20000 + RANDOM % 19000))
check() {  # tls devx test...
  local rc
  for _ in 0 1 2; do
    port=$((port + 1)); run_once $port "$@"; rc=$?
    ((rc == 2)) || break
  done
  if ((rc == 0)); then passed=$((passed + 1)); echo "ok: ${extra_env[*]} UCX_TLS=$1 UCX_IB_MLX5_DEVX=$2 ${*:3}"
  else failed=$((failed + 1)); failures+=("${extra_env[*]} UCX_TLS=$1 UCX_IB_MLX5_DEVX=$2 ${*:3}"); fi
}
tests=("-t ucp_put_lat" "-t ucp_put_bw" "-t ucp_get" "-t tag_lat" "-t tag_bw" "-t ucp_am_lat"
  "-t ucp_am_bw" "-t ucp_add -s 4" "-t ucp_add -s 8" "-t ucp_fadd -s 4" "-t ucp_fadd -s 8"
  "-t ucp_swap -s 4" "-t ucp_swap -s 8" "-t ucp_cswap -s 4" "-t ucp_cswap -s 8")
[[ "${UCX_TEST_QUICK:-0}" == 1 ]] && tests=("-t ucp_put_lat")
declare -A tls_of=([rc_verbs]="rc_verbs,ud_verbs:aux" [ud_verbs]="ud_verbs"
  [rc_mlx5]="rc_mlx5,ud_mlx5:aux" [ud_mlx5]="ud_mlx5" [dc_mlx5]="dc_mlx5,ud_mlx5:aux")
# UCX's defaults (UCX_IB_MLX5_DEVX=try) and DevX off. With its defaults UCX takes its DevX path on
# rc_mlx5 and dc_mlx5 (QPs, DCIs, DCTs and RMPs made by DevX commands, HCA atomics on 4 and 8
# bytes, its atomic key a KSM indirect mkey at an offset, relaxed ordering as UCX decides). UCX
# falls back to verbs quietly, so there the client's model must say it made DevX QPs (the
# SOFTHCA_STATS line at exit; SOFTHCA_STATS only prints).
extra_env=(SOFTHCA_STATS=1)
for tl in ${UCX_TEST_TLS:-rc_verbs ud_verbs rc_mlx5 ud_mlx5 dc_mlx5}; do
  for devx in try n; do  # try: UCX's default
    require=""
    [[ $devx == try && ($tl == rc_mlx5 || $tl == dc_mlx5) ]] && require='devx qps [1-9]'
    for t in "${tests[@]}"; do
      # shellcheck disable=SC2086
      check "${tls_of[$tl]}" "$devx" $t
    done
  done
done
# UCX's atomic key on the DevX path: a KSM mkey made with DevX CREATE_MKEY (UCX's debug log says
# so), used by puts (ucp_put_lat waits for each value at its target) and atomics.
extra_env=(SOFTHCA_STATS=1 UCX_LOG_LEVEL=debug)
require='KSM registered memory'
for tl in ${UCX_TEST_DEVX_TLS:-rc_mlx5 dc_mlx5}; do
  for t in "-t ucp_put_lat" "-t ucp_fadd -s 8"; do
    # shellcheck disable=SC2086
    check "${tls_of[$tl]}" try $t
  done
done
echo "$passed passed, $failed failed"
for f in "${failures[@]}"; do echo "FAIL: $f"; done
((failed == 0))
