#!/usr/bin/env bash
# The symmetric heap's page size (HOSHMEM_HEAP_PAGES) against its start-up costs, one PE, for
# each heap size given (default: 1G 8G). Numbers, not a test: nothing here asserts a timing.
#   perf/heap_pages.sh [SIZE...]      (as root: it reserves the huge pages each run needs through
#                                      /sys/kernel/mm/hugepages and puts the counts back at exit)
#
# Columns (each the best of HEAP_PAGES_RUNS=3 runs of perf/src/heap_pages.c):
#   pages     what the heap got (SHMEM_INFO's "heap pages:" line)
#   init sw   shmem_init in all-SW mode, no RDMA device: create and map the heap
#   init hw   shmem_init over the software mlx5 HCA (test/softhca) in all-HW mode, which
#             registers the heap (HOSHMEM_ATOMICS=hw HOSHMEM_PES_PER_NODE=1)
#   reg       init hw - init sw: the registration and the rest of the RDMA set-up. The model checks
#             the range and counts it against the locked-memory limit but faults nothing in; a
#             kernel registration (a real HCA, rxe) also faults in and pins every page, which is
#             what the next column costs
#   touch     the first write to every 4 KiB of the heap after shmem_init (the page faults)
#   fini      shmem_finalize (unmapping: the pages go back)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
sizes=("${@:-1G}")
[[ $# -gt 0 ]] || sizes=(1G 8G)
runs=${HEAP_PAGES_RUNS:-3}
hp2=/sys/kernel/mm/hugepages/hugepages-2048kB
hp1=/sys/kernel/mm/hugepages/hugepages-1048576kB
before2=$(cat $hp2/nr_hugepages)
before1=$(cat $hp1/nr_hugepages 2>/dev/null || echo "")
work=$(mktemp -d)
restore() {
  echo "$before2" >$hp2/nr_hugepages
  [[ -z $before1 ]] || echo "$before1" >$hp1/nr_hugepages
  rm -rf "$work"
}
trap restore EXIT

echo "== machine: $(nproc) CPUs, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)," \
  "$(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg); THP for shared memory:" \
  "$(cat /sys/kernel/mm/transparent_hugepage/shmem_enabled)"
echo "== building hoshmem and the model (log: $work/build.log)"
(cd "$root" && bazel run //:install -- "$work/prefix" >"$work/build.log" 2>&1 &&
  bazel build //test/softhca:softlib/libibverbs.so.1 >>"$work/build.log" 2>&1) ||
  { tail -20 "$work/build.log"; exit 1; }
softlib=$(cd "$root/bazel-bin/test/softhca/softlib" && pwd)
"$work/prefix/bin/oshcc" -O2 "$root/perf/src/heap_pages.c" -o "$work/heap_pages"

bytes_of() { numfmt --from=iec "$1"; }
# reserve POOL N: make N pages of that pool free; prints how many are
# (pages other jobs hold stay theirs: with HOSHMEM_HEAP_PAGES=auto, the default, any hoshmem job
# on the machine takes free 2 MiB pages)
reserve() {
  local dir=$1 n=$2
  local avail=$(($(cat "$dir/free_hugepages") - $(cat "$dir/resv_hugepages")))
  echo $(($(cat "$dir/nr_hugepages") - avail + n)) >"$dir/nr_hugepages" 2>/dev/null || true
  echo $(($(cat "$dir/free_hugepages") - $(cat "$dir/resv_hugepages")))
}
# one PE, best of $runs: "init touch fini" (ms) and the pages line
run() {  # MODE SIZE ENV...
  local mode=$1 size=$2; shift 2
  local best="" line
  for _ in $(seq "$runs"); do
    env "$@" SHMEM_INFO=1 HOSHMEM_HEAP_PAGES="$mode" SHMEM_SYMMETRIC_SIZE="$size" \
      "$work/prefix/bin/oshrun" -np 1 "$work/heap_pages" "$(bytes_of "$size")" >"$work/out" 2>&1 ||
      { echo "failed: $(grep -m1 hoshmem: "$work/out" || tail -1 "$work/out")" >"$work/pages"
        echo "- - -"; return; }
    line=$(grep -E '^[0-9.]+ [0-9.]+ [0-9.]+$' "$work/out")
    best=$(awk -v a="$best" -v b="$line" 'BEGIN {
      if (a == "") { print b; exit }
      split(a, x, " "); split(b, y, " ")
      for (i = 1; i <= 3; i++) printf "%s%s", (y[i] < x[i] ? y[i] : x[i]), (i < 3 ? " " : "\n") }')
  done
  echo "$best"
  grep -m1 -o 'heap pages: [^(]*([^;)]*' "$work/out" | sed 's/heap pages: //' >"$work/pages"
}

printf '\n%-5s %-5s %-42s %9s %9s %9s %9s %9s\n' heap asked pages "init sw" "init hw" reg touch fini
for size in "${sizes[@]}"; do
  bytes=$(bytes_of "$size")
  need2=$((bytes / 2097152)) need1=$(((bytes + 1073741823) / 1073741824))
  for mode in 4k 2m auto 1g; do
    case $mode in
      2m | auto) got=$(reserve $hp2 "$need2") ;;
      1g)
        echo "$before2" >$hp2/nr_hugepages
        if [[ -z $before1 ]]; then
          printf '%-5s %-5s %s\n' "$size" 1g "no 1 GiB pages in this kernel"; continue
        fi
        got=$(reserve $hp1 "$need1")
        if ((got < need1)); then
          printf '%-5s %-5s %s\n' "$size" 1g "the kernel gave $got of $need1 1 GiB pages (memory too fragmented: reserve them at boot, hugepagesz=1G hugepages=$need1)"
          echo 0 >$hp1/nr_hugepages; continue
        fi ;;
      *) got=0; echo "$before2" >$hp2/nr_hugepages ;;
    esac
    if [[ $mode == 2m || $mode == auto ]] && ((got < need2)); then
      printf '%-5s %-5s %s\n' "$size" "$mode" "the kernel gave $got of $need2 2 MiB pages"
      continue
    fi
    read -r init_sw touch fini <<<"$(run $mode "$size" HOSHMEM_ATOMICS=sw)"
    pages=$(cat "$work/pages")
    if [[ $init_sw == - ]]; then
      printf '%-5s %-5s %s\n' "$size" "$mode" "$pages"
      [[ $mode != 1g ]] || echo 0 >$hp1/nr_hugepages
      continue
    fi
    read -r init_hw _ _ <<<"$(run $mode "$size" LD_LIBRARY_PATH="$softlib" \
      SOFTHCA_FABRIC="perf-pages-$$" HOSHMEM_ATOMICS=hw HOSHMEM_PES_PER_NODE=1)"
    rm -f "/dev/shm/softhca.perf-pages-$$"
    reg=$(awk -v a="$init_hw" -v b="$init_sw" 'BEGIN { printf "%.1f", a - b }')
    printf '%-5s %-5s %-42.42s %9s %9s %9s %9s %9s\n' "$size" "$mode" "$pages" "$init_sw" \
      "$init_hw" "$reg" "$touch" "$fini"
    [[ $mode != 1g ]] || echo 0 >$hp1/nr_hugepages
  done
done
echo
echo "(ms; huge page counts put back: 2 MiB $before2${before1:+, 1 GiB $before1})"
