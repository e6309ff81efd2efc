#!/bin/bash
# The launcher run_test.sh starts in guest a of `scripts/test-rxe.sh two` for the Slurm runs
# (scripts/rxe/two-run.sh), called as: srun.sh -np N --bind-to none PROGRAM. Slurm's srun with
# its PMIx plugin, or with SRUN_MPI=pmi2 its PMI-2 plugin (PMI-1, and PMI-2 with HOSHMEM_PMI=pmi2),
# against the slurmctld and the two slurmd two-run.sh started ($SLURM_CONF): both nodes, tasks
# dealt cyclically, so PEs alternate between the guests (PE 0 on rxe-a, PE 1 on rxe-b, ...);
# --overcommit: 4 PEs on two 1-CPU nodes. srun passes the whole environment on. SRUN_OPTS adds
# srun options (--kill-on-bad-exit=1: the PMI-2 plugin does not end the step when a PE dies).
# A copy of stdout and stderr goes to $RXE_STDOUT and $RXE_STDERR.
set -u
[[ ${1:-} == -np && -n ${2:-} ]] || { echo "usage: srun.sh -np N ARGS..." >&2; exit 2; }
np=$2
shift 2
[[ ${1:-} == --bind-to ]] && shift 2 # TaskPlugin=task/none binds nothing
# shellcheck disable=SC2086 # SRUN_OPTS is a list of options
exec srun --mpi="${SRUN_MPI:-pmix}" -N 2 -n "$np" --distribution=cyclic --overcommit ${SRUN_OPTS:-} "$@" \
  > >(tee -a "$RXE_STDOUT") 2> >(tee -a "$RXE_STDERR" >&2)
