# perf/hw/install.sh, sourced by the perf/hw scripts (with `root` set to the checkout): the
# build and install, the machine line, the model.
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

# machine_line TEXT: the header line every run prints (CPUs, model, load), then TEXT.
machine_line() {
  echo "== machine: $(nproc) CPUs, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)," \
    "load average $(cut -d' ' -f1-3 /proc/loadavg); $1"
}

# use_softhca: sets `softhca` to the model's wrapper and builds the model now if needed, not
# inside a timed run.
use_softhca() {
  softhca="$root/test/softhca/with-softhca"
  "$softhca" true
}
