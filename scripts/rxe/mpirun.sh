#!/bin/bash
# The launcher run_test.sh starts in guest a of `scripts/test-rxe.sh two` (scripts/rxe/two-run.sh),
# called as: mpirun.sh -np N --bind-to none PROGRAM. Open MPI's mpirun, an external PMIx launcher:
# N/2 slots on each guest, PEs placed round-robin by node (PE 0 on rxe-a, PE 1 on rxe-b, ...); it
# reaches rxe-b with its rsh agent, ssh (the configuration two-run.sh wrote, $RXE_SSH_CONFIG), and
# starts orted there; orted and mpirun talk over 10.0.0.0/24 only. The library's and the tests'
# variables go to every PE (-x). A copy of stdout and stderr goes to $RXE_STDOUT and $RXE_STDERR.
set -u
[[ ${1:-} == -np && -n ${2:-} ]] || { echo "usage: mpirun.sh -np N ARGS..." >&2; exit 2; }
per=$((($2 + 1) / 2))
forward=()
for v in $(compgen -e); do
  case $v in HOSHMEM_* | SHMEM_* | SHTEST_*) forward+=(-x "$v") ;; esac
done
exec mpirun --allow-run-as-root --host "rxe-a:$per,rxe-b:$per" --map-by node \
  --mca plm rsh --mca plm_rsh_agent "ssh -F $RXE_SSH_CONFIG" \
  --mca oob_tcp_if_include 10.0.0.0/24 "${forward[@]}" "$@" \
  > >(tee -a "$RXE_STDOUT") 2> >(tee -a "$RXE_STDERR" >&2)
