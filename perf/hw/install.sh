# perf/hw/install.sh, sourced by the perf/hw scripts (with `root` set to the checkout).
# install_hoshmem VAR WORK: sets `prefix` to an installed hoshmem: the directory in the variable
# named VAR when it is set (not built), else this checkout built and installed into WORK/prefix
# (Bazel's output in WORK/build.log; a failed build prints its end and exits). No Bazel server
# stays up during the timed runs.
install_hoshmem() {
  local var=$1 work=$2
  prefix=$work/prefix
  if [ -n "${!var:-}" ]; then
    prefix=${!var}
    echo "== using the hoshmem installed in $prefix ($var; not built)"
    return
  fi
  echo "== building hoshmem (log: $work/build.log)"
  (cd "$root" && bazel run //:install -- "$prefix" >"$work/build.log" 2>&1) ||
    { tail -20 "$work/build.log"; (cd "$root" && bazel shutdown >/dev/null 2>&1) || true; exit 1; }
  (cd "$root" && bazel shutdown >/dev/null 2>&1) || true
}
