#!/usr/bin/env bash
# oshrun --simulate-nodes 2 tells the PEs they live on two nodes; with no RDMA device, shmem_init
# must fail on every PE with a clear line, and the job must end (non-zero) instead of hanging.
set -u
oshrun=$1 hello=$2
out=$(timeout 30 "$oshrun" -np 4 --simulate-nodes 2 --bind-to none "$hello" 2>&1)
status=$?
echo "$out"
[[ $status -ne 0 && $status -ne 124 ]] || { echo "FAIL: status $status (want non-zero, no timeout)"; exit 1; }
grep -q "shmem_init: the job spans several nodes.*: no RDMA device" <<<"$out" || { echo "FAIL: no clear line"; exit 1; }
! grep -q "^hello from" <<<"$out" || { echo "FAIL: a PE got past shmem_init"; exit 1; }
echo PASS
