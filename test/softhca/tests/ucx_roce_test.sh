#!/usr/bin/env bash
# Unmodified UCX (Debian's ucx-utils 1.13) over the model's RoCE link (SOFTHCA_LINK=roce) with
# UCX_IB_GID_INDEX=auto (its default): UCX takes each GID's type from sysfs
# (ports/P/gid_attrs/types/I, which the kernel shim presents) and its address family from the GID,
# and prefers RoCE v2 over IPv4: GID index 3 of the model's table (fe80:: v1, fe80:: v2,
# ::ffff:10.77.x.y v1, the same v2). Without the types file it took every GID for RoCE v1 and
# chose index 2. Checked in UCX's debug log ("mlx5_0:1 using gid_index 3") of `ucx_info -d` and of
# ucx_perftest server/client pairs over rc_mlx5 and ud_mlx5, whose traffic then runs on RoCE v2
# address vectors. Skipped, saying so, only where UCX is not installed.
#
# rc_mlx5 runs with UCX_IB_MLX5_DEVX=n: on RoCE the model's DevX INIT2RTR_QP does not take the
# Ethernet address path UCX writes (rmac, src_addr_index, udp_sport) and fails, at any GID index.
set -uo pipefail
common="$(dirname "$0")/ucx_common.sh"
[[ -n ${TEST_SRCDIR:-} ]] && common="$TEST_SRCDIR/hoshmem/test/softhca/tests/ucx_common.sh"
# shellcheck source=ucx_common.sh
source "$common"
ucx_setup ucxroce
export UCX_LOG_LEVEL=debug
export SOFTHCA_LINK=roce UCX_IB_GID_INDEX=auto
passed=0; failed=0; failures=()
ok() { passed=$((passed + 1)); echo "ok: $1"; }
fail() { failed=$((failed + 1)); failures+=("$1"); echo "FAIL: $1"; }

# The GID index UCX chose in a debug log: every choice must be 3, and there must be one; and no
# sysfs GID file UCX looked for may be missing.
gid_choice() {  # log what
  local log=$1 what=$2 picks
  picks=$(grep -o 'mlx5_0:1 using gid_index [0-9]*' "$log" | awk '{print $4}' | sort -u | tr '\n' ' ')
  if [[ $picks == "3 " ]]; then ok "$what: gid_index 3"
  else fail "$what: gid_index '${picks:-none}', want 3"; fi
  if grep -q "failed to read /sys/class/infiniband" "$log"; then
    fail "$what: $(grep -m1 -o 'failed to read /sys/class/infiniband[^ :]*' "$log")"
  fi
}

# 1. ucx_info -d: the interfaces UCX opens to describe them choose their GID.
export SOFTHCA_FABRIC="$token-info"
for tls in rc_mlx5 ud_mlx5; do
  UCX_TLS=$tls timeout 60 "${wrap[@]}" ucx_info -d >"$tmp/info" 2>&1
  if awk '/Transport:/ {t=$3} /Device:/ && t==tl && $3=="mlx5_0:1" {f=1} END {exit !f}' tl="$tls" "$tmp/info"; then
    ok "ucx_info -d: $tls on mlx5_0:1"
  else
    fail "ucx_info -d: no $tls on mlx5_0:1"; tail -20 "$tmp/info"
  fi
  gid_choice "$tmp/info" "ucx_info -d UCX_TLS=$tls"
done

# 2. ucx_perftest server/client pairs, each process a host of its own on one fabric.
run_once() {  # port tls test...: 0 ok, 1 failed, 2 port taken
  local port=$1 tls=$2; shift 2
  local rc=0
  ucx_pair "$port" 60 UCX_TLS="$tls" UCX_IB_MLX5_DEVX=n -- "$@" || rc=$?
  ((rc == 1)) && { echo "--- server"; grep -v DEBUG "$tmp/srv" | tail -20; echo "--- client"; grep -v DEBUG "$tmp/cli" | tail -20; }
  return $rc
}
port=$((20000 + RANDOM % 19000))
check() {  # tls test...
  local rc
  for _ in 0 1 2; do
    port=$((port + 1)); run_once $port "$@"; rc=$?
    ((rc == 2)) || break
  done
  if ((rc == 0)); then ok "ucx_perftest UCX_TLS=$1 ${*:2}"; else fail "ucx_perftest UCX_TLS=$1 ${*:2}"; fi
  gid_choice "$tmp/srv" "server UCX_TLS=$1 ${*:2}"
  gid_choice "$tmp/cli" "client UCX_TLS=$1 ${*:2}"
}
check rc_mlx5,ud_mlx5:aux -t ucp_put_lat
check rc_mlx5,ud_mlx5:aux -t ucp_am_bw
check ud_mlx5 -t ucp_am_lat
echo "$passed passed, $failed failed"
for f in "${failures[@]}"; do echo "FAIL: $f"; done
((failed == 0))
