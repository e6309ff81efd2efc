# Sourced by the README's commands: run Bazel with its output in a log file and show the user a
# short progress and, on failure, only what explains it (the build errors, the failing tests' logs).

step() { echo "== $*"; }

# bazel_logged LOG SUBCOMMAND ARGS...: runs `bazel SUBCOMMAND ARGS...` with its output in LOG;
# every 30 s prints Bazel's latest progress line ("[actions done / total] tests done / total"), so
# a cold build (several minutes) shows it is alive without filling the screen. Returns Bazel's
# status.
bazel_logged() {
  local log=$1 sub=$2; shift 2
  bazel "$sub" --color=no --curses=no --show_progress_rate_limit=10 "$@" >>"$log" 2>&1 &
  local pid=$! last="" waited=0
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    waited=$((waited + 1))
    ((waited % 30)) && continue
    local now
    now=$(grep -aoE '^\[[0-9,]+ / [0-9,]+\]( [0-9]+ / [0-9]+ tests)?' "$log" | tail -1)
    [[ -n "$now" && "$now" != "$last" ]] && echo "   ${waited}s: $now" && last=$now
  done
  wait "$pid"
}

# show_build_errors LOG: the compiler and Bazel error lines of LOG, at most 30.
show_build_errors() {
  local errors
  errors=$(grep -aE '^ERROR: |: error: |: fatal error: |undefined reference' "$1" | grep -av 'test.log)$' |
    grep -av '^ERROR: Build did NOT complete' | head -30)
  [[ -n "$errors" ]] && printf 'build errors (all of them in %s):\n%s\n' "$1" "$errors"
}

# show_test_log LOG: what a failed test printed. For a googletest binary, each failed case from its
# RUN line to its FAILED line (what it and its children wrote, and which expectation failed), at
# most 20 lines each. For a script, its first three "FAIL:" lines with the reasons indented under
# each, then the log's last 6 lines; otherwise the last 12.
show_test_log() {
  local cases
  cases=$(grep -aE '^\[  FAILED  \] [^ ]+ \(' "$1" | awk '{ print $4 }' | head -3)
  if [[ -z "$cases" ]]; then
    if grep -aq '^FAIL' "$1"; then
      awk '/^FAIL/ { n++; on = (n <= 3); if (on) print; next }
           on && /^    / && !/^    ---/ { print; next } { on = 0 }' "$1" | head -15
      echo "..."
      grep -av 'linux-sandbox' "$1" | grep -av '^$' | tail -6
    else
      grep -av 'linux-sandbox' "$1" | grep -av '^$' | tail -12
    fi
    return
  fi
  local c
  for c in $cases; do
    awk -v c="$c" '$0 == "[ RUN      ] " c { on = 1 } on { print } on && index($0, "[  FAILED  ] " c " (") == 1 { exit }' "$1" |
      head -20
  done
}

# report_failed_tests LOG TARGET...: names each failed test with its log; the first three logs'
# ends are shown (Bazel's sandbox lines left out), the rest are only named. LOG is Bazel's output.
report_failed_tests() {
  local log=$1 shown=0 t pkg name logf
  shift
  for t in "$@"; do
    pkg=${t#//}; pkg=${pkg%%:*}; name=${t##*:}
    logf="bazel-testlogs/${pkg:+$pkg/}$name/test.log"
    if [[ $(grep -acE "^$t +(\(cached\) )?(PASSED|FAILED|FLAKY|TIMEOUT) in " "$log") == 0 ||
      ! -f "$logf" ]]; then
      echo "FAILED $t (did not build or run)"
      continue
    fi
    echo "FAILED $t (log: $logf)"
    if ((shown < 3)); then
      show_test_log "$logf" | sed 's/^/    /'
      shown=$((shown + 1))
    fi
  done
}
