#!/bin/sh
# oshcc / oshc++: compile and link OpenSHMEM programs against hoshmem.
#
# Installed as PREFIX/bin/oshcc and PREFIX/bin/oshc++ (one script; the name picks the language).
# Every argument goes to the compiler unchanged (${HOSHMEM_CC:-cc} or ${HOSHMEM_CXX:-c++});
# the wrapper only adds -I PREFIX/include/shmem and, when linking, -L/-l/-rpath for
# PREFIX/lib/libhoshmem.so, whose own dependencies (libpmix, pthread) are recorded in it.
#   -showme          print the command that would run, run nothing
#   -showme:compile  print the compile flags the wrapper adds
#   -showme:link     print the link flags the wrapper adds
set -u

self=$0
resolved=$(readlink -f -- "$self" 2>/dev/null) && self=$resolved
prefix=$(cd -- "$(dirname -- "$self")/.." && pwd) || exit 1

case $(basename -- "$0") in
  *++* | *cxx* | *CC) compiler=${HOSHMEM_CXX:-c++} ;;
  *) compiler=${HOSHMEM_CC:-cc} ;;
esac

# For -showme:*; the command itself is built below with the same flags, quoted.
compile_flags="-I$prefix/include/shmem"
link_flags="-L$prefix/lib -lhoshmem -Wl,-rpath,$prefix/lib"

showme=
link=yes
only_info=yes   # only --version and the like: pass through untouched
for arg in "$@"; do
  case $arg in
    -showme) showme=yes ;;
    -showme:compile) echo "$compile_flags"; exit 0 ;;
    -showme:link) echo "$link_flags"; exit 0 ;;
    -showme:*) echo "oshcc: unknown option '$arg' (use -showme, -showme:compile or -showme:link)" >&2; exit 2 ;;
    -c | -S | -E | -M | -MM) link=no ;;
  esac
  case $arg in
    -showme | --version | -v | --help | -dumpversion | -dumpfullversion | -dumpmachine) ;;
    *) only_info=no ;;
  esac
done

if [ -n "$showme" ]; then
  # Drop -showme itself from the arguments shown.
  for arg in "$@"; do
    shift
    [ "$arg" = -showme ] || set -- "$@" "$arg"
  done
fi

if [ "$only_info" = yes ] && [ $# -gt 0 ]; then
  set -- "$compiler" "$@"
elif [ "$link" = yes ]; then
  # Libraries after the user's objects and libraries, as the linker resolves left to right.
  set -- "$compiler" "-I$prefix/include/shmem" "$@" "-L$prefix/lib" -lhoshmem "-Wl,-rpath,$prefix/lib"
else
  set -- "$compiler" "-I$prefix/include/shmem" "$@"
fi

if [ -n "$showme" ]; then
  echo "$*"
  exit 0
fi
exec "$@"
