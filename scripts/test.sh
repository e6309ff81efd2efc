#!/usr/bin/env bash
# The test command of README.md: installs what is missing, builds everything and runs every test
# (unit tests, multi-PE tests through oshrun). Prints a short progress, the failing tests with the
# end of their logs, and last the line "N passed, N failed", counted from the test.xml files of the
# tests run now (a test target that did not build counts as failed). Bazel's own output goes to
# build/logs/test.log.
#
#   scripts/test.sh [TARGET...]      default: //...
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/deps.sh || exit 1
source scripts/quiet-bazel.sh
targets=("${@:-//...}")
log=build/logs/test.log
mkdir -p build/logs

step "listing tests"
query="tests(${targets[0]})"
for t in "${targets[@]:1}"; do query+=" + tests($t)"; done
tests=$(bazel query "$query" 2>"$log") || {
  echo "bazel query failed:"; tail -20 "$log"; bazel shutdown >/dev/null 2>&1; exit 1; }
total=$(wc -w <<<"$tests")
step "building and running $total tests (Bazel's output: $log)"
bazel_logged "$log" test --keep_going "${targets[@]}"
status=$?

# Bazel's summary has a line per test target that ran or had a cached result ("//p:t  PASSED in
# 1s", "(cached) PASSED", "FAILED", "TIMEOUT"); a target without one (it did not build) has no
# result of this run, whatever an earlier run left in bazel-testlogs.
declare -A ran=()
while read -r t; do ran[$t]=1; done < <(
  grep -aE '^//[^ ]+ +(\(cached\) )?(PASSED|FAILED|FLAKY|TIMEOUT) in ' "$log" | awk '{ print $1 }')
passed=0; failed=0; failed_tests=()
for t in $tests; do
  pkg=${t#//}; pkg=${pkg%%:*}; name=${t##*:}
  dir="bazel-testlogs/${pkg:+$pkg/}$name"
  if [[ -z ${ran[$t]:-} || ! -f "$dir/test.xml" ]]; then
    failed=$((failed + 1)); failed_tests+=("$t"); continue
  fi
  # one count per <testcase>; a case is failed if a <failure> or <error> follows it
  read -r cases bad < <(awk '
    /<testcase/ { n++; cur = n }
    /<(failure|error)[ >]/ { if (!(cur in f)) { f[cur] = 1; b++ } }
    END { if (n == 0) { n = 1; b = (b > 0) } print n + 0, b + 0 }' "$dir/test.xml")
  failed=$((failed + bad)); passed=$((passed + cases - bad))
  ((bad)) && failed_tests+=("$t")
done
bazel shutdown >/dev/null 2>&1

if ((${#failed_tests[@]})); then
  show_build_errors "$log"
  report_failed_tests "$log" "${failed_tests[@]}"
fi
echo "$passed passed, $failed failed"
((status == 0 && failed == 0))
