#!/usr/bin/env bash
# The model's libraries export exactly the symbols (with versions) of Debian's rdma-core 44.
set -euo pipefail
dir="${TEST_SRCDIR:-$(dirname "$0")/..}/hoshmem/test/softhca/softlib"
[[ -d "$dir" ]] || dir="$(dirname "$0")/../softlib"
syms() { objdump -T "$1" | awk '$0 !~ /\*UND\*/ && ($3 == "DF" || $3 == "DO") { print $(NF-1), $NF }' |
  grep -v SOFTHCA_PRIVATE | grep -v '^Base' | sort -u; }
fail=0
for lib in libibverbs.so.1 libmlx5.so.1; do
  if ! diff <(syms "/usr/lib/x86_64-linux-gnu/$lib") <(syms "$dir/$lib"); then
    echo "FAIL: $lib exports differ from Debian's"; fail=1
  else
    echo "ok: $lib: $(syms "$dir/$lib" | wc -l) versioned symbols match"
  fi
done
exit $fail
