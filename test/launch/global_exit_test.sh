#!/usr/bin/env bash
# shmem_global_exit(256) ends a job with 255, not 0 (256 is 0 modulo 256, and an exit status is
# taken modulo 256): the library maps the status itself, so this holds as a singleton (no
# launcher) and under Open MPI's mpirun too, not only under oshrun (test/shmem:launch_global_exit).
source "$(dirname "$0")/testlib.sh"
prog=$(abspath "$1")
out=$TEST_TMPDIR/out err=$TEST_TMPDIR/err

# check NAME cmd...: the job must exit 255.
check() {
  local name=$1
  shift
  run_job 60 "$out" "$err" "$@"
  if ((rc == 255)); then
    pass "$name: status 255"
  else
    fail "$name: status $rc, expected 255; stderr: $(cat "$err")"
  fi
}

check "singleton shmem_global_exit(256)" env -u PMIX_NAMESPACE GLOBAL_EXIT_STATUS=256 "$prog" "$marker"
check "singleton shmem_global_exit(-256)" env -u PMIX_NAMESPACE GLOBAL_EXIT_STATUS=-256 "$prog" "$marker"
if command -v mpirun >/dev/null; then
  check "mpirun -np 2 shmem_global_exit(256)" mpirun --allow-run-as-root --oversubscribe -np 2 \
    -x GLOBAL_EXIT_STATUS=256 "$prog" "$marker"
else
  fail "mpirun not found (install openmpi-bin)"
fi
check_no_leftovers "global_exit"
finish
