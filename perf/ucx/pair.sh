#!/usr/bin/env bash
# perf/ucx/pair.sh TRANSPORT [ucx_perftest client options...]
# Runs one unmodified ucx_perftest server/client pair over the software HCA (test/softhca), each
# process a node of its own on a fresh fabric, and prints the client's result table.
#   TRANSPORT: rc_verbs rc_mlx5 ud_verbs ud_mlx5 dc_mlx5 (RC/DC get UD for wireup only, as
#              UCX's rc_v/rc_x/dc_x aliases do)
#   e.g.  perf/ucx/pair.sh rc_mlx5 -t ucp_put_lat -n 10000
#         UCX_IB_MLX5_DEVX=n perf/ucx/pair.sh dc_mlx5 -t tag_bw -s 65536
# Numbers from the model measure the model and this machine's scheduler, not an HCA.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
wrap="$root/test/softhca/with-softhca"
[[ $# -ge 1 ]] || { sed -n 2,10p "$0"; exit 2; }
command -v ucx_perftest >/dev/null || { echo "ucx_perftest missing (apt-get install ucx-utils)" >&2; exit 1; }
case $1 in
  rc_verbs) tls=rc_verbs,ud_verbs:aux ;;
  rc_mlx5) tls=rc_mlx5,ud_mlx5:aux ;;
  dc_mlx5) tls=dc_mlx5,ud_mlx5:aux ;;
  ud_verbs | ud_mlx5) tls=$1 ;;
  *) echo "unknown transport $1" >&2; exit 2 ;;
esac
shift
"$wrap" true || exit 1  # build the model once, before both processes start
export UCX_TLS="$tls" UCX_NET_DEVICES="${UCX_NET_DEVICES:-mlx5_0:1}" UCX_VFS_ENABLE=n
export SOFTHCA_FABRIC="ucxperf$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; rm -f /dev/shm/softhca."$SOFTHCA_FABRIC"*' EXIT
port=$((20000 + RANDOM % 19000))
timeout "${PAIR_TIMEOUT:-300}" stdbuf -oL "$wrap" ucx_perftest -p "$port" >"$tmp/srv" 2>&1 &
srv=$!
for _ in $(seq 300); do  # until the server listens
  grep -q "Waiting for connection" "$tmp/srv" && break
  kill -0 $srv 2>/dev/null || break
  sleep 0.1
done
timeout "${PAIR_TIMEOUT:-300}" "$wrap" ucx_perftest localhost -p "$port" "$@"
rc=$?
wait $srv || { echo "--- server:"; cat "$tmp/srv"; rc=1; }
exit $rc
