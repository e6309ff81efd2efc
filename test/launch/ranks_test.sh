#!/usr/bin/env bash
# 1, 2, 4 and 8 PEs under oshrun: every PE sees correct job info and every other PE's data
# (the checks are in pmix_client), the job exits 0, nothing is left in /tmp.
source "$(dirname "$0")/testlib.sh"
oshrun=$(abspath "$1")
client=$(abspath "$2")
out=$TEST_TMPDIR/out err=$TEST_TMPDIR/err

for n in 1 2 4 8; do
  run_job 60 "$out" "$err" "$oshrun" -np "$n" "$client" --expect-size "$n" --barriers 5 --print-tmpdir "$marker"
  if ((rc != 0)); then
    fail "$n PEs: oshrun exited $rc: $(cat "$err")"
  else
    for ((r = 0; r < n; r++)); do
      grep -qx "ok rank $r size $n" "$out" || fail "$n PEs: no 'ok' from rank $r"
    done
    [[ $(grep -c '^ok rank' "$out") -eq $n ]] || fail "$n PEs: wrong number of 'ok' lines"
    [[ -s $err ]] && fail "$n PEs: unexpected stderr: $(cat "$err")"
    pass "$n PEs"
  fi
  check_tmpdir_removed "$n PEs" "$out"
  check_no_leftovers "$n PEs"
done

# A private short TMPDIR: oshrun puts its directory there, and must leave it empty.
private=$(mktemp -d /tmp/oshrun-test.XXXXXX)
TMPDIR=$private run_job 60 "$out" "$err" "$oshrun" -np 4 "$client" --expect-size 4 --print-tmpdir "$marker"
((rc == 0)) || fail "TMPDIR run exited $rc: $(cat "$err")"
grep -q "^tmpdir $private/" "$out" || fail "oshrun did not use TMPDIR=$private: $(grep tmpdir "$out" | head -1)"
leftover=$(ls -A "$private")
[[ -z $leftover ]] && pass "TMPDIR left empty" || fail "files left in TMPDIR: $leftover"
rm -rf "$private"
finish
