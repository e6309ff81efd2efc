#!/usr/bin/env bash
# The demo's second half (scripts/demo-ways.sh) as a newcomer sees it: a title, one line per way
# with its result, mode and transport, and the pointer to the README section that explains them;
# every check exact. Runs the built example with the built oshrun and the software HCA.
set -uo pipefail
demo=$1 oshrun=$2 program=$3 softlib=$(cd "$(dirname "$4")" && pwd) readme=$5
out=$(NP=4 "$demo" "$oshrun" "$program" "$softlib" 2>&1)
rc=$?
echo "$out"
fail() { echo "FAIL: $*"; exit 1; }
((rc == 0)) || fail "demo-ways.sh exited $rc"
(($(wc -l <<<"$out") == 5)) || fail "expected 5 lines, got $(wc -l <<<"$out")"
line() { sed -n "${1}p" <<<"$out"; }
[[ $(line 1) == "== examples/histogram.c: "* ]] || fail "line 1 is not the title"
result=' 4 PEs +[0-9]+\.[0-9] [Mk] AMOs/s  counter exact  histogram exact  '
grep -Eq "^   one node, all-SW \(CPU atomics\) +$result\[all-sw over shared memory, [0-9]+s\]$" <<<"$(line 2)" ||
  fail "line 2: $(line 2)"
grep -Eq "^   2 nodes on the software HCA, all-HW over RC +$result\[all-hw over rc, [0-9]+s\]$" <<<"$(line 3)" ||
  fail "line 3: $(line 3)"
grep -Eq "^   2 nodes, all-SW over UD, PE 0 computing +$result\[all-sw over ud, [0-9]+s\]$" <<<"$(line 4)" ||
  fail "line 4: $(line 4)"
section=$(sed -n 's/.*README.md, "\(.*\)"\.$/\1/p' <<<"$(line 5)")
[[ -n $section ]] || fail "line 5 does not point at a README section"
grep -qx "## $section" "$readme" || fail "README.md has no section \"$section\""
echo "PASS"
