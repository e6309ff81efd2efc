#!/usr/bin/env bash
# A PE that exits with status 0 before shmem_init (before connecting to oshrun's PMIx server)
# while other PEs connect would leave them waiting in the fence forever: oshrun ends the job at
# once with one line naming that PE, whether the early PE is reaped before or after the others
# connect. Jobs in which no PE ever connects (programs that do not use SHMEM) still succeed.
source "$(dirname "$0")/testlib.sh"
oshrun=$(abspath "$1")
client=$(abspath "$2")
out=$TEST_TMPDIR/out err=$TEST_TMPDIR/err
# The PEs are killed before they could report oshrun's directory: give oshrun a base directory of
# our own (short: oshrun ignores a long TMPDIR) and check that it is left empty.
base=$(mktemp -d /tmp/ole.XXXXXX)
trap 'rm -rf "$base"' EXIT
export TMPDIR=$base
line="PE 1 exited \(status 0\) before shmem_init while other PEs were starting \(killed the other 3 PEs\)$"

# expect_early NAME client-args...: status 1 and the one line above, no leftovers.
expect_early() {
  local name=$1
  shift
  run_job 20 "$out" "$err" "$oshrun" -np 4 "$client" "$@" "$marker"
  if ((rc == 124 || rc == 137)); then
    fail "$name: oshrun did not finish within 20 s (the other PEs hang)"
  elif ((rc != 1)); then
    fail "$name: exit status $rc, expected 1; stderr: $(cat "$err")"
  elif [[ $(grep -c '^oshrun:' "$err") -ne 1 ]] || ! grep -Eq "^oshrun: $line" "$err"; then
    fail "$name: expected one line matching 'oshrun: $line', got: $(cat "$err")"
  else
    pass "$name: status $rc, '$(grep '^oshrun:' "$err")'"
  fi
  [[ -z $(ls -A "$base") ]] || fail "$name: left behind in $base: $(ls -A "$base")"
  check_no_leftovers "$name"
}

# The others connect at once: PE 1 may be reaped before or after they connect.
expect_early "PE 1 exits 0 early" --exit-early 1 -
# The others connect only after oshrun reaped PE 1: oshrun must remember it.
rm -f "$TEST_TMPDIR/early.pid"
expect_early "PE 1 exits 0 early, reaped before the others connect" --exit-early 1 "$TEST_TMPDIR/early.pid"

# No PE ever connects: a plain program run by oshrun succeeds.
for cmd in /bin/true "/bin/sh -c exit"; do
  run_job 20 "$out" "$err" "$oshrun" -np 2 $cmd
  if ((rc == 0)) && ! grep -q '^oshrun:' "$err"; then
    pass "oshrun -np 2 $cmd: status 0"
  else
    fail "oshrun -np 2 $cmd: status $rc, stderr: $(cat "$err")"
  fi
done
finish
