#!/usr/bin/env bash
# The README's test command keeps a newcomer's terminal short: scripts/test.sh, run in a copy of
# the scripts with a stand-in `bazel` that floods its output with sandbox debug lines and reports
# one passing and one failing test, prints at most 60 lines: its progress, the failing test's name
# and the end of its log, and the result line last. A second run has a compile error and no test
# results: the error lines are shown, not the flood.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/quiet.XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

mkdir -p "$work/repo/scripts" "$work/bin"
cp "$src/scripts/test.sh" "$src/scripts/quiet-bazel.sh" "$work/repo/scripts/"
# deps.sh stands in too: the real one is tested by every CI run
printf '#!/usr/bin/env bash\nexit 0\n' >"$work/repo/scripts/deps.sh"
chmod +x "$work/repo/scripts/"*.sh

cat >"$work/bin/bazel" <<'FAKE'
#!/usr/bin/env bash
# A stand-in for bazel: MODE=fail (one test fails) or MODE=broken (a compile error).
sub=$1
case "$sub" in
  query) echo "//fake:a_test"; echo "//fake:b_test" ;;
  test)
    for i in $(seq 3700); do echo "1795.$i: src/main/tools/linux-sandbox-pid1.cc:291: remount ro: /x"; done
    if [[ $MODE == broken ]]; then
      echo "lib/x.cc:12:3: error: 'frobnicate' was not declared in this scope"
      echo "ERROR: /repo/lib/BUILD.bazel:3:11: Compiling lib/x.cc failed: (Exit 1)"
      exit 1
    fi
    mkdir -p bazel-testlogs/fake/a_test bazel-testlogs/fake/b_test
    echo '<testsuites><testcase name="a"/></testsuites>' >bazel-testlogs/fake/a_test/test.xml
    echo '<testsuites><testcase name="b"><failure message="x"/></testcase></testsuites>' \
      >bazel-testlogs/fake/b_test/test.xml
    echo "//fake:a_test                PASSED in 0.4s"
    echo "//fake:b_test                FAILED in 0.6s"
    { for i in $(seq 200); do echo "1795.$i: src/main/tools/linux-sandbox.cc:152: calling pipe(2)..."; done
      for i in $(seq 100); do echo "b_test progress line $i"; done
      echo "b_test: expected 42, got 41"; } >bazel-testlogs/fake/b_test/test.log
    exit 3 ;;
  *) exit 0 ;;
esac
FAKE
chmod +x "$work/bin/bazel"

run() {  # MODE -> output in $work/out.MODE
  (cd "$work/repo" && MODE=$1 PATH="$work/bin:$PATH" scripts/test.sh) >"$work/out.$1" 2>&1
}

run fail
out="$work/out.fail"
lines=$(wc -l <"$out")
((lines <= 60)) || fail "failing run printed $lines lines (at most 60)"
grep -q 'linux-sandbox' "$out" && fail "failing run shows sandbox debug lines"
grep -q '^FAILED //fake:b_test' "$out" || fail "the failing test is not named"
grep -q 'b_test: expected 42, got 41' "$out" || fail "the end of the failing test's log is not shown"
grep -q 'FAILED //fake:a_test' "$out" && fail "the passing test is reported as failed"
[[ $(tail -1 "$out") == "1 passed, 1 failed" ]] || fail "last line: '$(tail -1 "$out")'"

run broken
out="$work/out.broken"
lines=$(wc -l <"$out")
((lines <= 60)) || fail "broken build printed $lines lines (at most 60)"
grep -q 'linux-sandbox' "$out" && fail "broken build shows sandbox debug lines"
grep -q "error: 'frobnicate' was not declared" "$out" || fail "the compile error is not shown"
[[ $(tail -1 "$out") == "0 passed, 2 failed" ]] || fail "last line: '$(tail -1 "$out")'"

if ((failures)); then
  for m in fail broken; do echo "---- output ($m) ----"; cat "$work/out.$m"; done
  exit 1
fi
echo "PASS: the test command's output is short and says what failed"
