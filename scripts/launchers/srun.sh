#!/usr/bin/env bash
# srun as test/shmem/run_test.sh's launcher, which calls it as: srun.sh -np N --bind-to none PROGRAM
# SRUN_MPI (pmix or pmi2) chooses Slurm's MPI plugin, SRUN_OPTS adds srun options (e.g. -K);
# SLURM_CONF names the private Slurm of scripts/test-launchers.sh. --overcommit lets a job have
# more tasks than the node has CPUs (4 PEs on a 2-core machine); --bind-to has no srun
# counterpart here (TaskPlugin=task/none binds nothing).
np=1
while [[ $# -gt 0 && $1 == -* ]]; do
  case $1 in
    -np) np=$2; shift 2 ;;
    --bind-to) shift 2 ;;
    *) echo "srun.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
# shellcheck disable=SC2086 # SRUN_OPTS is a list of options
exec srun --mpi="${SRUN_MPI:?srun.sh: SRUN_MPI (pmix or pmi2) not set}" -n "$np" --overcommit ${SRUN_OPTS:-} "$@"
