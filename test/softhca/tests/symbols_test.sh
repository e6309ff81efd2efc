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
# Other rdma-core (and rdma-core based) libraries programs load next to libibverbs resolve every
# symbol they need against the model when it is selected.
for lib in librdmacm.so.1 libmlx4.so.1 libefa.so.1 libmana.so.1 ucx/libuct_ib.so.0 libfabric.so.1; do
  path="/usr/lib/x86_64-linux-gnu/$lib"
  [[ -e "$path" ]] || { echo "skip: $lib not installed"; continue; }
  out=$(LD_LIBRARY_PATH="$dir" ldd -r "$path" 2>&1)
  if grep -q "undefined symbol" <<<"$out" || ! grep -q "libibverbs.so.1 => $dir/" <<<"$out"; then
    echo "FAIL: $lib does not load against the model"; grep -E "undefined|libibverbs" <<<"$out"; fail=1
  else
    echo "ok: $lib loads against the model"
  fi
done
exit $fail
