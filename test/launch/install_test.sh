#!/usr/bin/env bash
# The installed tree works on its own: install (twice) into a fresh PREFIX, check the files and
# the wrappers' -showme output, then build OpenSHMEM programs with PREFIX/bin/oshcc, oshc++,
# pkg-config and the static archive, and run them with PREFIX/bin/oshrun in a clean environment
# (no Bazel runfiles, no LD_LIBRARY_PATH).
source "$(dirname "$0")/testlib.sh"
install=$(abspath "$1")
histogram_src=$(abspath "$2")            # examples/histogram.c
softlib=$(dirname "$(abspath "$3")")    # the software HCA's libibverbs.so.1
work=$TEST_TMPDIR/work
prefix=$work/prefix
mkdir -p "$work"
cd "$work" || exit 1

for round in 1 2; do
  if ! "$install" "$prefix" >install.log 2>&1; then
    fail "install round $round: $(cat install.log)"
    finish
  fi
done
pass "installed twice into $prefix"
for f in bin/oshcc bin/oshc++ bin/oshrun; do [[ -x $prefix/$f ]] || fail "$f missing or not executable"; done
for f in lib/libhoshmem.so lib/libhoshmem.a lib/pkgconfig/hoshmem.pc include/shmem/shmem.h include/shmem/shmemx.h; do
  [[ -f $prefix/$f ]] || fail "$f missing"
done
if ldd "$prefix/bin/oshrun" | grep -q 'not found'; then fail "oshrun has unresolved libraries: $(ldd "$prefix/bin/oshrun")"; fi

clean_env=(env -i PATH=/usr/bin:/bin HOME="$work")

check_eq() { [[ $2 == "$3" ]] && pass "$1" || fail "$1: got '$2', expected '$3'"; }
check_eq "oshcc -showme" "$("${clean_env[@]}" "$prefix/bin/oshcc" -showme)" \
  "cc -I$prefix/include/shmem -L$prefix/lib -lhoshmem -Wl,-rpath,$prefix/lib"
check_eq "oshcc -showme:compile" "$("$prefix/bin/oshcc" -showme:compile)" "-I$prefix/include/shmem"
check_eq "oshcc -showme:link" "$("$prefix/bin/oshcc" -showme:link)" "-L$prefix/lib -lhoshmem -Wl,-rpath,$prefix/lib"
check_eq "oshc++ -showme -c" "$("$prefix/bin/oshc++" -showme -c x.cc -o x.o)" "c++ -I$prefix/include/shmem -c x.cc -o x.o"
check_eq "HOSHMEM_CC" "$(HOSHMEM_CC=gcc "$prefix/bin/oshcc" -showme:compile -c)" "-I$prefix/include/shmem"
check_eq "HOSHMEM_CC -showme" "$(HOSHMEM_CC=gcc "$prefix/bin/oshcc" -showme -E a.c)" "gcc -I$prefix/include/shmem -E a.c"

cat >hello.c <<'HELLO'
#include <shmem.h>
#include <stdio.h>
int main(void) {
  shmem_init();
  printf("hello from PE %d of %d\n", shmem_my_pe(), shmem_n_pes());
  shmem_barrier_all();
  shmem_finalize();
  return 0;
}
HELLO
cp hello.c hello.cc

# run_hello NAME BINARY NPES: runs it with the installed oshrun, checks one line per PE.
run_hello() {
  local name=$1 binary=$2 n=$3
  run_job 60 out err "${clean_env[@]}" "$prefix/bin/oshrun" -np "$n" "$binary" "$marker"
  if ((rc != 0)); then
    fail "$name: oshrun -np $n exited $rc: $(cat err)"
    return
  fi
  for ((pe = 0; pe < n; pe++)); do
    grep -qx "hello from PE $pe of $n" out || fail "$name: no hello from PE $pe: $(cat out)"
  done
  pass "$name: oshrun -np $n"
}

if "${clean_env[@]}" "$prefix/bin/oshcc" hello.c -o hello 2>err; then
  # Compare files, not strings: inside Bazel's sandbox the same directory has several spellings.
  loaded=$(ldd ./hello | awk '$1 == "libhoshmem.so" { print $3 }')
  [[ -n $loaded && $loaded -ef $prefix/lib/libhoshmem.so ]] ||
    fail "hello does not load the installed libhoshmem.so: $(ldd ./hello)"
  run_hello "oshcc" ./hello 4
else
  fail "oshcc hello.c: $(cat err)"
fi

if "${clean_env[@]}" "$prefix/bin/oshc++" hello.cc -o hello_cxx 2>err; then
  run_hello "oshc++" ./hello_cxx 2
else
  fail "oshc++ hello.cc: $(cat err)"
fi

# Programs written for SGI/Cray SHMEM include <mpp/shmem.h> and <mpp/shmemx.h>.
cat >hello_mpp.c <<'HELLO_MPP'
#include <mpp/shmem.h>
#include <mpp/shmemx.h>
#include <stdio.h>
int main(void) {
  shmem_init();
  printf("hello from PE %d of %d\n", shmem_my_pe(), shmem_n_pes());
  shmem_barrier_all();
  (void)shmemx_wtime();
  shmem_finalize();
  return 0;
}
HELLO_MPP
if "${clean_env[@]}" "$prefix/bin/oshcc" hello_mpp.c -o hello_mpp 2>err; then
  run_hello "oshcc with <mpp/shmem.h>" ./hello_mpp 2
else
  fail "oshcc hello_mpp.c (<mpp/shmem.h>, <mpp/shmemx.h>): $(cat err)"
fi

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# shellcheck disable=SC2046
if cc hello.c -o hello_pc $(pkg-config --cflags --libs hoshmem) 2>err; then
  run_hello "pkg-config" ./hello_pc 2
else
  fail "cc with pkg-config hoshmem: $(cat err)"
fi
# shellcheck disable=SC2046
if cc hello.c -o hello_static $(pkg-config --cflags hoshmem) "$prefix/lib/libhoshmem.a" \
  $(pkg-config --static --libs-only-other --libs-only-l hoshmem | sed 's/-lhoshmem//') 2>err; then
  ldd ./hello_static | grep -q libhoshmem && fail "hello_static still needs libhoshmem.so"
  run_hello "static libhoshmem.a" ./hello_static 2
else
  fail "static link with libhoshmem.a: $(cat err)"
fi

# shmem_global_exit through the real library reaches oshrun as an abort.
cat >global_exit.c <<'GLOBAL_EXIT'
#include <shmem.h>
#include <unistd.h>
int main(void) {
  shmem_init();
  if (shmem_my_pe() == 1) shmem_global_exit(5);
  sleep(60); /* the others must be killed by oshrun */
  shmem_finalize();
  return 0;
}
GLOBAL_EXIT
if "${clean_env[@]}" "$prefix/bin/oshcc" global_exit.c -o global_exit 2>err; then
  run_job 30 out err "${clean_env[@]}" "$prefix/bin/oshrun" -np 4 ./global_exit "$marker"
  if ((rc == 5)) && grep -q '^oshrun: PE 1 called shmem_global_exit(5)' err; then
    pass "shmem_global_exit(5): $(grep '^oshrun:' err)"
  else
    fail "shmem_global_exit(5): status $rc, stderr: $(cat err)"
  fi
else
  fail "oshcc global_exit.c: $(cat err)"
fi
# The installed shared library across nodes (the software HCA, all-HW over RC): RDMA, the
# registration cache and its memory-release hooks run inside libhoshmem.so, not a static link.
if "${clean_env[@]}" "$prefix/bin/oshcc" -O2 "$histogram_src" -o histogram 2>err; then
  run_job 120 out err "${clean_env[@]}" LD_LIBRARY_PATH="$softlib" SOFTHCA_FABRIC="inst$marker" \
    HOSHMEM_PES_PER_NODE=1 HOSHMEM_ATOMICS=hw HOSHMEM_TRANSPORT=rc \
    "$prefix/bin/oshrun" -np 4 ./histogram 2000 "$marker"
  if ((rc == 0)) && grep -q 'counter exact  histogram exact' out; then
    pass "libhoshmem.so across nodes over RC: $(cat out)"
  else
    fail "libhoshmem.so across nodes over RC: status $rc: $(cat out err)"
  fi
else
  fail "oshcc histogram.c: $(cat err)"
fi
check_no_leftovers "install tree"
finish
