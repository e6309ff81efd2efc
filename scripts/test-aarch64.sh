#!/usr/bin/env bash
# hoshmem on aarch64 (Arm hosts: Grace, BlueField), from an x86-64 machine: the library compiled
# with Debian's cross compiler and its unit tests run under QEMU's user-mode emulation.
#
#   scripts/test-aarch64.sh
#
# Installs what is missing (the cross compiler, qemu-user, make, and the headers the library
# compiles against: googletest's sources, rdma-core's, PMIx's and hwloc's headers, which are the
# same on every architecture, so the host's serve). Nothing is linked against libibverbs, PMIx or
# hwloc, which the unit tests do not call: the library is compiled with a section per function
# and the tests linked with --gc-sections, so the functions that call them drop out (a test that
# called one would not link). Then, in build/aarch64 (kept: the next run recompiles only what
# changed):
#  - compiles every source file of the library for aarch64 and examples/hello.c (the public header
#    with its inline fast path; all of them must compile), googletest and the unit tests of
#    test/unit;
#  - checks what the CPU-to-HCA barriers, cpu_relax and a doorbell compile to, for aarch64 and
#    for x86-64 (test/aarch64/barrier_instructions.cc, read back with objdump), against the table
#    below: one case per function and architecture;
#  - runs each unit test under qemu-aarch64, put_copy_test once more with each put copy variant
#    aarch64 has forced (HOSHMEM_PUT_COPY).
# Prints a line per step and per test binary, the output of whatever failed, the time taken and
# last "N passed, N failed" (test cases, counted from googletest's output; a binary that crashed
# counts its cases that did not pass as failed), and exits non-zero if anything failed. The
# compilers' and tests' output: build/logs/test-aarch64.log and build/aarch64/logs/.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
begin=$SECONDS
out=build/aarch64
log=build/logs/test-aarch64.log
mkdir -p build/logs "$out/logs"
: >"$log"
rm -f "$out"/logs/*.log
step() { echo "== $*"; }

# Every unit test of test/unit: none needs an RDMA device, libibverbs, PMIx or hwloc at run time
# (a test links only what it uses, out of an archive of the whole library).
mapfile -t tests < <(cd test/unit && ls ./*_test.cc | sed -E 's|^\./||; s|\.cc$||')
# The put copy's variants on aarch64 (lib/transport/shm/put_copy.cc).
put_copy_variants=(generic)
# What each probe of test/aarch64/barrier_instructions.cc compiles to, per architecture: its
# barrier instructions in order, "store" for one or more stores between them, "-" for nothing
# (a compiler barrier only). Stores before the first barrier and after the last are ignored.
barrier_table() {
  cat <<'TABLE'
probe_wqe_before_doorbell_record      aarch64 dmb oshst
probe_doorbell_record_before_doorbell aarch64 dsb st
probe_doorbell_out                    aarch64 dsb st
probe_cqe_owner_before_body           aarch64 dmb oshld
probe_cpu_relax                       aarch64 isb
probe_post_one                        aarch64 dmb oshst store dsb st store dsb st
probe_wqe_before_doorbell_record      x86_64  -
probe_doorbell_record_before_doorbell x86_64  sfence
probe_doorbell_out                    x86_64  sfence
probe_cqe_owner_before_body           x86_64  -
probe_cpu_relax                       x86_64  pause
probe_post_one                        x86_64  sfence store sfence
TABLE
}

passed=0 failed=0 skipped=0

# ---- packages ----
step "packages"
need=(g++-aarch64-linux-gnu qemu-user make binutils g++ libgtest-dev libibverbs-dev libpmix-dev
      libhwloc-dev)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "   installing ${missing[*]}"
  sudo=""; [[ $(id -u) -ne 0 ]] && sudo=sudo
  if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
           --no-install-recommends "${missing[@]}"; } >>"$log" 2>&1; then
    echo "apt-get failed:"; tail -5 "$log"; echo "0 passed, 1 failed"; exit 1
  fi
fi
gtest_src=/usr/src/googletest/googletest
pmix_inc=$(dirname "$(dpkg -L libpmix-dev | grep -m1 '/pmix\.h$')")
hwloc_autogen=$(dirname "$(dpkg -L libhwloc-dev | grep -m1 '/hwloc/autogen/config\.h$')")
for f in "$gtest_src/src/gtest-all.cc" /usr/include/infiniband/mlx5dv.h "$pmix_inc/pmix.h" \
         /usr/include/hwloc.h "$hwloc_autogen/config.h"; do
  [[ -f $f ]] || { echo "$f is missing"; echo "0 passed, 1 failed"; exit 1; }
done

# ---- build ----
# The host's rdma-core, PMIx and hwloc headers, searched after the cross compiler's own (so its
# libc and kernel headers win): a directory of links to them alone, not /usr/include. hwloc's
# autogen/config.h lives in the host's multiarch directory (it sets no type sizes).
mkdir -p "$out/include/hwloc"
ln -sfn /usr/include/infiniband "$out/include/infiniband"
for f in "$pmix_inc"/*; do ln -sfn "$f" "$out/include/$(basename "$f")"; done
ln -sfn /usr/include/hwloc.h "$out/include/hwloc.h"
for f in /usr/include/hwloc/*; do ln -sfn "$f" "$out/include/hwloc/$(basename "$f")"; done
ln -sfn "$hwloc_autogen" "$out/include/hwloc/autogen"
lib_sources=$(find lib -name '*.cc' | sort | tr '\n' ' ')
must_compile="$lib_sources examples/hello.c"
cat >"$out/Makefile" <<MAKE
# Written by scripts/test-aarch64.sh on each run.
O := $out
CXX := aarch64-linux-gnu-g++
# As .bazelrc builds, plus dependency files for the next run and a section per function and
# object (for --gc-sections).
CXXFLAGS := -std=c++20 -O2 -Wall -Wextra -I. -Iinclude/shmem -idirafter \$(O)/include -MMD -MP
LIB_FLAGS := -ffunction-sections -fdata-sections
GTEST := -isystem $gtest_src/include
LIB_OBJS := \$(patsubst %.cc,\$(O)/obj/%.o,$lib_sources)
TESTS := \$(patsubst %,\$(O)/bin/%,${tests[*]})

all: \$(LIB_OBJS) \$(O)/obj/examples/hello.o \$(TESTS) \$(O)/probe/aarch64.o \$(O)/probe/x86_64.o
# Keep the objects of tests and googletest for the next run (make removes intermediate files).
.SECONDARY:

# lib/BUILD.bazel: these layers define the routines the public header would inline.
NO_INLINE := \$(O)/obj/lib/transport/shm/%.o \$(O)/obj/lib/core/%.o \$(O)/obj/lib/api/%.o
\$(NO_INLINE): CXXFLAGS += -DHOSHMEM_NO_INLINE
\$(O)/obj/test/%.o: CXXFLAGS += \$(GTEST)
\$(O)/obj/lib/%.o: CXXFLAGS += \$(LIB_FLAGS)

\$(O)/obj/%.o: %.cc
	@mkdir -p \$(@D)
	\$(CXX) \$(CXXFLAGS) -c \$< -o \$@

\$(O)/obj/%.o: %.c
	@mkdir -p \$(@D)
	aarch64-linux-gnu-gcc -std=c11 -O2 -Wall -Wextra -Iinclude/shmem -MMD -MP -c \$< -o \$@

\$(O)/libhoshmem.a: \$(LIB_OBJS)
	rm -f \$@ && aarch64-linux-gnu-ar rcs \$@ \$^

\$(O)/obj/gtest/%.o: $gtest_src/src/%.cc
	@mkdir -p \$(@D)
	\$(CXX) -std=c++20 -O2 -I$gtest_src \$(GTEST) -c \$< -o \$@

# A test links what it uses out of the archive, without the functions it never calls.
GTEST_OBJS := \$(O)/obj/gtest/gtest-all.o \$(O)/obj/gtest/gtest_main.o
\$(O)/bin/%: \$(O)/obj/test/unit/%.o \$(O)/libhoshmem.a \$(GTEST_OBJS)
	@mkdir -p \$(@D)
	\$(CXX) \$< \$(O)/libhoshmem.a \$(GTEST_OBJS) -Wl,--gc-sections -pthread -ldl -o \$@

\$(O)/probe/aarch64.o: test/aarch64/barrier_instructions.cc
	@mkdir -p \$(@D)
	\$(CXX) \$(CXXFLAGS) -c \$< -o \$@
\$(O)/probe/x86_64.o: test/aarch64/barrier_instructions.cc
	@mkdir -p \$(@D)
	g++ \$(CXXFLAGS) -c \$< -o \$@

-include \$(shell find \$(O)/obj \$(O)/probe -name '*.d' 2>/dev/null)
MAKE
step "compiling for aarch64: $(wc -w <<<"$lib_sources") library files, examples/hello.c," \
  "googletest, ${#tests[@]} unit tests"
build_begin=$SECONDS
make -f "$out/Makefile" -k -j"$(nproc)" all >>"$log" 2>&1
build_status=$?
warnings=$(grep -c ': warning: ' "$log")
msg="   took $((SECONDS - build_begin)) s"
((warnings)) && msg+=", $warnings compiler warnings"
msg+=" (output: $log)"
echo "$msg"
# up_to_date TARGET: make has TARGET and nothing it depends on is newer (a file left from an
# earlier run does not count once its sources changed).
up_to_date() { make -f "$out/Makefile" -q "$1" >/dev/null 2>&1; }
if ((build_status != 0)); then
  echo "build errors (all of them in $log):"
  grep -aE ': error: |: fatal error: |undefined reference' "$log" | head -30
  # Every library file must compile, whether or not a test uses it: each one that did not is a
  # failure (a test that did not build is one below).
  bad=$(for f in $must_compile; do up_to_date "$out/obj/${f%.*}.o" || echo "$f"; done)
  if [[ -n $bad ]]; then
    echo "did not compile for aarch64:"; sed 's/^/   /' <<<"$bad"
    failed=$((failed + $(grep -c . <<<"$bad")))
  fi
fi

# ---- barrier instructions ----
# trace OBJDUMP OBJECT FUNCTION: the function's barriers and stores, as the table writes them.
trace() {
  "$1" -d --no-show-raw-insn "$2" | awk -v fn="<$3>:" '
    $2 == fn { on = 1; next }
    on && /^$/ { exit }
    on {
      sub(/^ *[0-9a-f]+:[ \t]*/, ""); gsub(/[ \t]+/, " "); sub(/ *(\/\/|#).*$/, "")
      split($0, w, " "); m = w[1]
      if (m ~ /^(dmb|dsb|isb|sfence|lfence|mfence|pause)$/) { print; last = "" }
      else if ((m ~ /^st/) || (m !~ /^(cmp|test|ret|j|call|push|nop)/ && $0 ~ /,[^,]*\([^,]*$/)) {
        if (last != "store") print "store"; last = "store" }
    }' | tr '\n' ' ' | sed -E 's/ $//; s/^store( |$)//; s/( |^)store$//'
}
step "barrier instructions (test/aarch64/barrier_instructions.cc)"
while read -r fn arch want; do
  case $arch in
    aarch64) obj=$out/probe/aarch64.o dump=aarch64-linux-gnu-objdump ;;
    x86_64) obj=$out/probe/x86_64.o dump=objdump ;;
  esac
  if ! up_to_date "$obj"; then
    echo "FAIL $arch $fn: the probe did not compile"; failed=$((failed + 1)); continue
  fi
  got=$(trace "$dump" "$obj" "$fn")
  [[ -n $got ]] || got=-
  if [[ $got == "$want" ]]; then
    passed=$((passed + 1))
  else
    echo "FAIL $arch $fn: compiles to '$got', expected '$want'"; failed=$((failed + 1))
  fi
done < <(barrier_table)
echo "   $(barrier_table | wc -l) checks, x86-64 and aarch64"

# ---- unit tests under qemu ----
qemu=(qemu-aarch64 -L /usr/aarch64-linux-gnu)  # with the cross toolchain's loader and libc
# run_test NAME [VAR=VALUE]: runs build/aarch64/bin/NAME under qemu-aarch64 with VAR=VALUE in
# its environment; counts its cases.
run_test() {
  local name=$1 env=${2:-} bin=$out/bin/$1 label=$1 tlog total p s f
  [[ -n $env ]] && label="$name ($env)"
  tlog=$out/logs/$name${env:+.${env#*=}}.log
  if ! up_to_date "$bin"; then
    echo "FAIL $label: did not build"; failed=$((failed + 1)); return
  fi
  total=$("${qemu[@]}" "$bin" --gtest_list_tests 2>/dev/null | grep -c '^  ')
  local t0=$SECONDS
  env $env timeout 900 "${qemu[@]}" "$bin" --gtest_color=no >"$tlog" 2>&1
  local status=$?
  p=$(sed -nE 's/^\[  PASSED  \] ([0-9]+) tests?\..*/\1/p' "$tlog"); p=${p:-0}
  s=$(sed -nE 's/^\[  SKIPPED \] ([0-9]+) tests?, listed below.*/\1/p' "$tlog"); s=${s:-0}
  f=$((total - p - s))
  ((status != 0 && f == 0)) && f=1  # failed with every case passing: count the binary
  passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
  local line="$p passed"
  ((s)) && line+=", $s skipped"
  if ((f == 0)); then
    echo "ok   $label: $line ($((SECONDS - t0)) s)"
  else
    echo "FAIL $label: $f failed, $line (exit status $status; log: $tlog)"
    # each failed case from its RUN line to its FAILED line, at most 20 lines each
    local cases c
    cases=$(sed -nE 's/^\[  FAILED  \] ([^ ]+) \(.*/\1/p' "$tlog" | head -3)
    if [[ -z $cases ]]; then
      tail -12 "$tlog" | sed 's/^/   | /'
    else
      for c in $cases; do
        sed -n "/^\[ RUN      \] $c\$/,/^\[  FAILED  \] $c /p" "$tlog" | head -20 | sed 's/^/   | /'
      done
    fi
  fi
}
step "running ${#tests[@]} unit tests under qemu-aarch64" \
  "(put_copy_test also with each variant forced)"
tests_begin=$SECONDS
for t in "${tests[@]}"; do
  run_test "$t"
  if [[ $t == put_copy_test ]]; then
    for v in "${put_copy_variants[@]}"; do run_test "$t" "HOSHMEM_PUT_COPY=$v"; done
  fi
done
msg="   tests took $((SECONDS - tests_begin)) s"
((skipped)) && msg+=", $skipped cases skipped (not counted)"
echo "$msg"
echo "== total time $((SECONDS - begin)) s"
echo "$passed passed, $failed failed"
((failed == 0))
