#!/usr/bin/env bash
# The same PMIx client runs under Open MPI's mpirun (an external PMIx server), so code that
# works under oshrun is not relying on anything oshrun-specific.
source "$(dirname "$0")/testlib.sh"
client=$(abspath "$1")
out=$TEST_TMPDIR/out err=$TEST_TMPDIR/err
if ! command -v mpirun >/dev/null; then
  fail "mpirun not found (install openmpi-bin)"
  finish
fi
run_job 60 "$out" "$err" mpirun --allow-run-as-root --oversubscribe -np 2 "$client" --expect-size 2 "$marker"
if ((rc != 0)); then
  fail "mpirun -np 2: status $rc: $(cat "$err")"
else
  grep -qx 'ok rank 0 size 2' "$out" && grep -qx 'ok rank 1 size 2' "$out" && pass "mpirun -np 2" ||
    fail "mpirun -np 2: output: $(cat "$out")"
fi
check_no_leftovers "mpirun"
finish
