#!/usr/bin/env bash
# Bad command lines give one line on stderr and a non-zero status, and start nothing.
source "$(dirname "$0")/testlib.sh"
oshrun=$(abspath "$1")
client=$(abspath "$2")
out=$TEST_TMPDIR/out err=$TEST_TMPDIR/err

# bad NAME REGEX args...
bad() {
  local name=$1 line=$2
  shift 2
  run_job 10 "$out" "$err" "$oshrun" "$@"
  if ((rc == 0)); then
    fail "$name: exit status 0"
  elif [[ $(wc -l <"$err") -ne 1 ]] || ! grep -Eq "^oshrun: $line" "$err"; then
    fail "$name: expected one line 'oshrun: $line', got: $(cat "$err")"
  elif grep -q '^ok rank' "$out"; then
    fail "$name: a PE ran"
  else
    pass "$name (status $rc): $(cat "$err")"
  fi
}

bad "-np 0" "invalid number of PEs '0'" -np 0 "$client"
bad "-np -2" "invalid number of PEs '-2'" -np -2 "$client"
bad "-np x" "invalid number of PEs 'x'" -np x "$client"
bad "-n 1.5" "invalid number of PEs '1.5'" -n 1.5 "$client"
bad "-np without value" "option -np needs a value" -np
bad "missing program" "missing program" -np 2
bad "no such program" "cannot run 'no-such-program-$marker': No such file or directory" -np 2 "no-such-program-$marker"
touch "$TEST_TMPDIR/not-executable"
chmod 644 "$TEST_TMPDIR/not-executable"
bad "not executable" "cannot run '.*not-executable': Permission denied" -np 2 "$TEST_TMPDIR/not-executable"
bad "a directory" "cannot run '.*': Is a directory" -np 2 "$TEST_TMPDIR"
bad "unknown option" "unknown option '--frobnicate'" --frobnicate -np 2 "$client"
bad "bad --bind-to" "invalid --bind-to value 'socket'" --bind-to socket -np 2 "$client"

# -h prints usage and succeeds; --np=N and -n N work.
run_job 10 "$out" "$err" "$oshrun" --help
((rc == 0)) && grep -q '^usage: oshrun' "$out" && pass "--help" || fail "--help: status $rc"
run_job 30 "$out" "$err" "$oshrun" --np=2 "$client" --expect-size 2
((rc == 0)) && pass "--np=2" || fail "--np=2: status $rc: $(cat "$err")"
run_job 30 "$out" "$err" "$oshrun" -n 3 "$client" --expect-size 3
((rc == 0)) && pass "-n 3" || fail "-n 3: status $rc: $(cat "$err")"
check_no_leftovers "usage"
finish
