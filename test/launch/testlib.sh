# Shared helpers for the launcher tests (sourced). Every launch runs under `timeout`.
set -uo pipefail

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
finish() {
  if ((failures > 0)); then echo "$failures check(s) failed" >&2; exit 1; fi
  echo "all checks passed"
}

# Absolute path of a runfile given relative to the workspace (what $(rootpath) gives).
abspath() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }

# A marker unique to this test run, put on PE command lines to find leftover processes.
marker="launchtest-$$-$RANDOM$RANDOM"

# run_job LIMIT OUTFILE ERRFILE cmd...: runs the job under `timeout LIMIT`; sets $rc.
run_job() {
  local limit=$1 out=$2 err=$3
  shift 3
  timeout -k 2 "$limit" "$@" >"$out" 2>"$err"
  rc=$?
}

# Fails if any process with our marker on its command line is still around.
check_no_leftovers() {
  local what=$1 left
  left=$(pgrep -f -- "$marker" || true)
  if [[ -n $left ]]; then
    fail "$what: processes left behind: $(ps -o pid,args -p "${left//$'\n'/,}" 2>/dev/null | tail -n +2)"
    pkill -KILL -f -- "$marker" || true
  fi
}

# Fails if the PMIx directory the PEs reported ("tmpdir DIR" lines) still exists.
check_tmpdir_removed() {
  local what=$1 out=$2 dir
  dir=$(awk '$1 == "tmpdir" { print $2; exit }' "$out")
  if [[ -z $dir ]]; then fail "$what: no PE reported its PMIx tmpdir"; return; fi
  [[ -e $dir ]] && fail "$what: $dir was left behind"
  return 0
}
