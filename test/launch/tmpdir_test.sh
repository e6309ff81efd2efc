#!/usr/bin/env bash
# oshrun's PMIx directory (TMPDIR/oshrun.*) never outlives a dead job for long: a job killed by
# SIGKILL cannot remove it, so the next oshrun removes it. Each oshrun holds a lock on a file in
# its directory while it lives, and only a directory whose lock nobody holds is removed: never a
# live job's, never one without a lock file (an older oshrun's, or one being created), never
# another user's.
source "$(dirname "$0")/testlib.sh"
oshrun=$(abspath "$1")
client=$(abspath "$2")
out=$TEST_TMPDIR/out err=$TEST_TMPDIR/err
# A base directory of our own (short: oshrun ignores a long TMPDIR), like /tmp.
base=$(mktemp -d /tmp/olt.XXXXXX)
chmod 1777 "$base"
trap 'rm -rf "$base"' EXIT
export TMPDIR=$base

# wait_lines FILE N: waits until FILE has N "tmpdir" lines (the PEs are up); returns the directory.
wait_lines() {
  for _ in $(seq 300); do
    [[ $(grep -c '^tmpdir' "$1") -ge $2 ]] && break
    sleep 0.1
  done
  awk '$1 == "tmpdir" { print $2; exit }' "$1"
}

# 1. oshrun killed by SIGKILL: its directory stays; the next oshrun removes it.
timeout -k 2 60 "$oshrun" -np 2 "$client" --sleep 60 --print-tmpdir "$marker" >"$out" 2>"$err" &
job=$!
dir=$(wait_lines "$out" 2)
osh=$(pgrep -P "$job" | head -1)
if [[ -z $dir || -z $osh ]]; then
  fail "SIGKILL: the job did not start: $(cat "$out" "$err")"
else
  kill -KILL "$osh"
  wait "$job"
  # the PEs die with oshrun (parent-death signal); wait until they are gone
  for _ in $(seq 100); do pgrep -f -- "$marker" >/dev/null || break; sleep 0.1; done
  check_no_leftovers "SIGKILL"
  if [[ ! -d $dir ]]; then
    fail "SIGKILL: $dir is already gone: this test cannot tell whether the next oshrun removes it"
  else
    run_job 20 "$out" "$err" "$oshrun" -np 1 /bin/true
    ((rc == 0)) || fail "SIGKILL: the next oshrun failed with status $rc: $(cat "$err")"
    [[ -e $dir ]] && fail "SIGKILL: the next oshrun left the dead job's $dir" || pass "SIGKILL: the next oshrun removed $dir"
  fi
fi

# 2. A live job's directory is never removed by a concurrent oshrun: job A waits for a file
#    while job B runs; A then completes normally.
rm -f "$base/go"
timeout -k 2 60 "$oshrun" -np 2 "$client" --wait-file "$base/go" --print-tmpdir "$marker" >"$out.a" 2>"$err.a" &
job=$!
dir=$(wait_lines "$out.a" 2)
run_job 20 "$out" "$err" "$oshrun" -np 2 "$client" "$marker"
((rc == 0)) || fail "live job: the concurrent job failed with status $rc: $(cat "$err")"
[[ -n $dir && -d $dir ]] && pass "live job: $dir kept while a concurrent oshrun ran" ||
  fail "live job: a concurrent oshrun removed the live job's directory '$dir'"
touch "$base/go"
wait "$job"
rc=$?
((rc == 0)) && pass "live job: completed after the concurrent oshrun" ||
  fail "live job: status $rc: $(cat "$err.a")"
[[ -n $dir && ! -e $dir ]] || fail "live job: $dir left behind after the job"

# 3. Directories the next oshrun must leave alone even though no process holds their lock: one
#    without a lock file (an older oshrun's live job has none), and another user's.
mkdir -m 700 "$base/oshrun.nolock"
touch -d '1 hour ago' "$base/oshrun.nolock"
if ((EUID == 0)); then
  mkdir -m 700 "$base/oshrun.other"
  touch "$base/oshrun.other/lock"
  chown -R 65534:65534 "$base/oshrun.other"
fi
run_job 20 "$out" "$err" "$oshrun" -np 1 /bin/true
((rc == 0)) || fail "others' directories: oshrun failed with status $rc: $(cat "$err")"
[[ -d $base/oshrun.nolock ]] && pass "a directory without a lock file is kept" ||
  fail "oshrun removed a directory without a lock file"
if ((EUID == 0)); then
  [[ -d $base/oshrun.other ]] && pass "another user's directory is kept" ||
    fail "oshrun removed another user's directory"
else
  echo "not run: another user's directory (needs root to chown)"
fi
check_no_leftovers "tmpdir"
finish
