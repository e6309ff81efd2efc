#!/usr/bin/env bash
# Jobs across "nodes" (HOSHMEM_PES_PER_NODE=1: every PE its own node) under Open MPI's mpirun, an
# external PMIx launcher, over the software HCA: the RC paths need nothing from oshrun.
#   mpirun_across_nodes_test.sh SOFTHCA_LIBIBVERBS PROGRAM...
set -u
softhca=$1; shift
export LD_LIBRARY_PATH="$(cd "$(dirname "$softhca")" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SOFTHCA_FABRIC="mpirun-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
trap 'rm -f "/dev/shm/softhca.$SOFTHCA_FABRIC"' EXIT
export HOSHMEM_PES_PER_NODE=1 HOSHMEM_ATOMICS=hw
if ! command -v mpirun >/dev/null; then
  echo "FAIL: mpirun not found (install openmpi-bin)"
  exit 1
fi
status=0
for program in "$@"; do
  out=$(timeout 120 mpirun --allow-run-as-root --oversubscribe -np 4 -x LD_LIBRARY_PATH \
    -x SOFTHCA_FABRIC -x HOSHMEM_PES_PER_NODE -x HOSHMEM_ATOMICS "$program" 2>&1)
  rc=$?
  name=$(basename "$program")
  if ((rc != 0)) || ! grep -q "^PASS $name: 4 PEs" <<<"$out"; then
    echo "FAIL: $name under mpirun across nodes (status $rc):"
    tail -5 <<<"$out"
    status=1
  else
    echo "ok: $name under mpirun, 4 PEs on 4 nodes"
  fi
done
exit $status
