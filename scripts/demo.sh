#!/usr/bin/env bash
# The main command of README.md: installs what is missing, builds hoshmem, installs it into
# build/install, compiles examples/hello.c with the installed oshcc and runs it on 4 PEs with the
# installed oshrun (exactly what a user does with an installed tree); then compiles
# examples/histogram.c the same way and runs it three ways (scripts/demo-ways.sh): one node in
# all-SW mode, and two "nodes" of this machine on the software HCA in all-HW mode over RC and in
# all-SW mode over UD. Bazel's output goes to build/logs/demo.log; the terminal gets a short
# progress and the programs' output.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/deps.sh
source scripts/quiet-bazel.sh
prefix="$PWD/build/install"
log=build/logs/demo.log
mkdir -p build/logs
: >"$log"
step "building hoshmem and installing it into build/install (Bazel's output: $log)"
# One build of both (in parallel), then the install (nothing left to build).
if ! bazel_logged "$log" build //:install //test/softhca:libs ||
  ! bazel_logged "$log" run //:install -- "$prefix"; then
  show_build_errors "$log" || tail -20 "$log"
  bazel shutdown >/dev/null 2>&1 || true
  exit 1
fi
bazel shutdown >/dev/null 2>&1 || true
step "compiling examples/hello.c with build/install/bin/oshcc"
"$prefix/bin/oshcc" -O2 examples/hello.c -o build/hello
step "running it on ${NP:-4} PEs with build/install/bin/oshrun"
"$prefix/bin/oshrun" -np "${NP:-4}" build/hello
softlib=$(readlink -f bazel-bin/test/softhca/softlib)
step "compiling examples/histogram.c with build/install/bin/oshcc"
"$prefix/bin/oshcc" -O2 examples/histogram.c -o build/histogram
NP=${NP:-4} scripts/demo-ways.sh "$prefix/bin/oshrun" build/histogram "$softlib"
