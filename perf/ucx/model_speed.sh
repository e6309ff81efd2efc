#!/usr/bin/env bash
# perf/ucx/model_speed.sh [-n ITERATIONS] [TRANSPORT...]
# How fast the software HCA (test/softhca) carries UCX's own mlx5 paths, next to its verbs path:
# unmodified ucx_perftest pairs (perf/ucx/pair.sh: server and client each a node of its own) of
# ucp_put_lat, ucp_fadd and ucp_am_lat on rc_verbs (ibv_post_send/ibv_poll_cq: the model runs
# inside those calls) and on each mlx5 transport (raw WQEs, BlueFlame doorbell stores, CQEs read
# from memory: the model runs in the doorbell store's fault, sends included, writing into the peer
# with process_vm_writev; responses and the message path run in its message thread).
# Prints each median and its ratio to rc_verbs' median of the same test in this run.
# Default transports: rc_mlx5 dc_mlx5 ud_mlx5, with UCX's defaults (the DevX path where the model
# offers it); e.g. UCX_IB_MLX5_DEVX=n perf/ucx/model_speed.sh for the verbs-created mlx5 objects.
# Numbers, not a test: they measure the model and this machine's scheduler, not an HCA.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
n=2000
if [[ ${1:-} == -n ]]; then n=$2; shift 2; fi
transports=("$@")
((${#transports[@]})) || transports=(rc_mlx5 dc_mlx5 ud_mlx5)
tests=(ucp_put_lat ucp_fadd ucp_am_lat)

median() {  # TRANSPORT TEST -> the 50th percentile latency (us) of the client's Final line
  "$here/pair.sh" "$1" -t "$2" -n "$n" 2>&1 | awk '/^Final:/ {print $3}' | tail -1
}

declare -A base
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs, $n iterations per pair"
printf '%-9s %-12s %12s %12s\n' transport test "median us" "x rc_verbs"
for t in "${tests[@]}"; do
  base[$t]=$(median rc_verbs "$t")
  printf '%-9s %-12s %12s %12s\n' rc_verbs "$t" "${base[$t]:-failed}" 1.0
done
for tr in "${transports[@]}"; do
  for t in "${tests[@]}"; do
    m=$(median "$tr" "$t")
    ratio=$(awk -v a="$m" -v b="${base[$t]}" 'BEGIN { if (a == "" || b + 0 == 0) print "-"; else printf "%.1f", a / b }')
    printf '%-9s %-12s %12s %12s\n' "$tr" "$t" "${m:-failed}" "$ratio"
  done
done
