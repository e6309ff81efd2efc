#!/bin/sh
# Runs a benchmark PE pinned to one core, the same way under any launcher, so that libraries are
# compared with identical placement: with PERF_PIN=1, PE r runs on online CPU (r mod ncpus).
# The rank comes from the PMIx environment every PMIx launcher sets (PMIX_RANK), or Open MPI's.
# compare.sh sets PERF_PIN=1 only when the job has no more PEs than CPUs; oversubscribed jobs
# are left to the scheduler (pinning several spinning PEs to one core would only measure that).
rank=${PMIX_RANK:-${OMPI_COMM_WORLD_RANK:-}}
if [ "${PERF_PIN:-0}" = 1 ] && [ -n "$rank" ] && command -v taskset >/dev/null 2>&1; then
  ncpu=$(nproc --all)  # not plain nproc: a launcher may already have bound us to one CPU
  exec taskset -c "$((rank % ncpu))" "$@"
fi
exec "$@"
