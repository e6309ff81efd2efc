#!/usr/bin/env bash
# The main command of README.md: installs what is missing, builds hoshmem, installs it into
# build/install, compiles examples/hello.c with the installed oshcc and runs it on 4 PEs with the
# installed oshrun (exactly what a user does with an installed tree).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/deps.sh
prefix="$PWD/build/install"
bazel run //:install -- "$prefix"
bazel shutdown >/dev/null 2>&1 || true
"$prefix/bin/oshcc" -O2 examples/hello.c -o build/hello
"$prefix/bin/oshrun" -np "${NP:-4}" build/hello
