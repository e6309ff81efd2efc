#!/usr/bin/env bash
# The test command of README.md: installs what is missing, builds everything and runs every test
# (unit tests, multi-PE tests through oshrun). Ends with the line "N passed, N failed", counted
# from the test.xml files of the tests run now (a test target that did not build counts as failed).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/deps.sh || exit 1
targets=${*:-//...}
bazel test --keep_going $targets
status=$?
passed=0; failed=0
for t in $(bazel query "tests($targets)" 2>/dev/null); do
  pkg=${t#//}; pkg=${pkg%%:*}; name=${t##*:}
  xml="bazel-testlogs/${pkg:+$pkg/}$name/test.xml"
  if [[ ! -f "$xml" ]]; then failed=$((failed + 1)); echo "no result: $t"; continue; fi
  # one count per <testcase>; a case is failed if a <failure> or <error> follows it
  read -r cases bad < <(awk '
    /<testcase/ { n++; cur = n }
    /<(failure|error)[ >]/ { if (!(cur in f)) { f[cur] = 1; b++ } }
    END { if (n == 0) { n = 1; b = (b > 0) } print n + 0, b + 0 }' "$xml")
  failed=$((failed + bad)); passed=$((passed + cases - bad))
done
bazel shutdown >/dev/null 2>&1
echo "$passed passed, $failed failed"
((status == 0 && failed == 0))
