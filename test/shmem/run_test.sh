#!/usr/bin/env bash
# Runs one multi-PE test program under a launcher and a hard timeout, then judges the result.
#
#   run_test.sh [options] LAUNCHER PROGRAM
#     --np N                 number of PEs (default 2)
#     --timeout S            kill the whole launch after S seconds (default 120)
#     --env K=V              set K=V for the launch (repeatable)
#     --expect-status S      expected exit status: an integer, "nonzero", or 0 (default 0)
#     --expect-stderr RE     extended regex that must match a line of stderr (repeatable;
#                            "{np}" is replaced by N)
#     --expect-output RE     same, but matched against stdout+stderr (repeatable)
#     --softhca LIB          run over the software HCA: LIB is its libibverbs.so.1 (its directory
#                            goes first in LD_LIBRARY_PATH), in a fabric of this run's own; with
#                            SOFTHCA_KERNEL_SHIM=1 (--env) its kernel-interface shim is preloaded
#                            too (the devices' sysfs files, their PCI locality among them)
#     --requires-cpu FLAGS   CPU flags (/proc/cpuinfo) the run needs; if one is missing, say so
#                            and pass without running
#     --no-leftovers         nothing of the job is left in /dev/shm: the library makes nothing
#                            there, and (over softhca) the model's segment of this run has no
#                            live node, so the model's next start removes it
#     --stderr-lines N       stderr has exactly N lines (a failing job says one thing, once)
#     --no-survivors         the program writes its PID to $SHTEST_PIDDIR/<pe>; after the launcher
#                            exits, none of those processes may still be alive (5 s grace)
#     --huge-pages N         make N free 2 MiB huge pages available for the run (as root, through
#                            /proc/sys/vm/nr_hugepages, under a lock shared by such runs), put the
#                            count back afterwards, and check the job gave its pages back; if they
#                            cannot be reserved, or another job took them mid-run (a run that says
#                            "needs N free 2 MiB pages"), say "not run: ..." and pass
#
# The launcher is started as: timeout -k 5 S LAUNCHER -np N --bind-to none PROGRAM.
# On any failure the captured stdout/stderr are printed.
set -u

np=2 timeout_s=120 expect_status=0 no_survivors=0 requires_cpu="" softhca="" stderr_lines="" no_leftovers=0 huge_pages=""
envs=() stderr_res=() output_res=()
while [[ $# -gt 2 ]]; do
  case "$1" in
    --np) np=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --env) envs+=("$2"); shift 2 ;;
    --expect-status) expect_status=$2; shift 2 ;;
    --expect-stderr) stderr_res+=("$2"); shift 2 ;;
    --expect-output) output_res+=("$2"); shift 2 ;;
    --no-survivors) no_survivors=1; shift ;;
    --stderr-lines) stderr_lines=$2; shift 2 ;;
    --no-leftovers) no_leftovers=1; shift ;;
    --requires-cpu) requires_cpu=$2; shift 2 ;;
    --softhca) softhca=$2; shift 2 ;;
    --huge-pages) huge_pages=$2; shift 2 ;;
    *) echo "run_test.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ $# -eq 2 ]] || { echo "usage: run_test.sh [options] LAUNCHER PROGRAM" >&2; exit 2; }
launcher=$1 program=$2

cpu_flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
for flag in $requires_cpu; do
  if [[ $cpu_flags != *" $flag "* ]]; then
    echo "not run: this CPU lacks $flag (needed for: $requires_cpu)"
    exit 0
  fi
done

work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/shtest.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/pids"

if [[ -n $softhca ]]; then
  export LD_LIBRARY_PATH="$(cd "$(dirname "$softhca")" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # test sandboxes share /dev/shm but not PIDs: the fabric's name comes from /dev/urandom
  export SOFTHCA_FABRIC="shtest-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
  # the model's fabric segment outlives PEs that were killed: remove it with the work directory
  trap 'rm -rf "$work"; rm -f "/dev/shm/softhca.$SOFTHCA_FABRIC"' EXIT
fi

# 2 MiB pages free and not promised to a mapping: what a new heap can get
hp=/sys/kernel/mm/hugepages/hugepages-2048kB
huge_available() { echo $(($(cat $hp/free_hugepages) - $(cat $hp/resv_hugepages))); }
# any process with a hugetlb mapping (numa_maps says "huge" for them)
huge_holders() { grep -l huge /proc/[0-9]*/numa_maps 2>/dev/null | cut -d/ -f3 | tr '\n' ' '; }
if [[ -n $huge_pages ]]; then
  # Runs that change the count take turns; the count goes back when this script exits.
  exec 9>/tmp/hoshmem-nr_hugepages.lock
  flock 9
  huge_before=$(cat /proc/sys/vm/nr_hugepages)
  missing=$((huge_pages - $(huge_available)))
  if ((missing > 0)); then
    if ! echo $((huge_before + missing)) 2>/dev/null >/proc/sys/vm/nr_hugepages; then
      echo "not run: cannot reserve $huge_pages 2 MiB huge pages (writing /proc/sys/vm/nr_hugepages needs root)"
      exit 0
    fi
    trap 'echo "$huge_before" >/proc/sys/vm/nr_hugepages; rm -rf "$work"; [[ -z $softhca ]] || rm -f "/dev/shm/softhca.$SOFTHCA_FABRIC"' EXIT
  fi
  if (($(huge_available) < huge_pages)); then
    echo "not run: the kernel gave only $(huge_available) free 2 MiB huge pages of $huge_pages (memory too fragmented?)"
    exit 0
  fi
  huge_start=$(huge_available)
fi
for kv in "${envs[@]+"${envs[@]}"}"; do export "${kv?}"; done
if [[ -n $softhca && ${SOFTHCA_KERNEL_SHIM:-0} == 1 ]]; then  # as with-softhca preloads it
  export LD_PRELOAD="$(cd "$(dirname "$softhca")" && pwd)/libsofthca_kernel.so${LD_PRELOAD:+:$LD_PRELOAD}"
fi
export SHTEST_PIDDIR="$work/pids"

start=$(date +%s.%N)
timeout -k 5 "$timeout_s" "$launcher" -np "$np" --bind-to none "$program" \
  >"$work/out" 2>"$work/err" </dev/null
status=$?
end=$(date +%s.%N)
elapsed=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')

problems=()
if [[ -n $huge_pages && $expect_status == 0 && $status -ne 0 ]] &&
   grep -Eq "needs [0-9]+ free 2 MiB pages" "$work/err"; then
  echo "not run: another job took the reserved huge pages: $(head -1 "$work/err")"
  exit 0
fi
if [[ -n $huge_pages ]]; then
  # Every page of the job's heaps goes back to the pool when its last mapping goes, however the
  # job ended; only a process still holding hugetlb memory (another job) may keep some.
  for _ in $(seq 50); do
    (($(huge_available) >= huge_start)) && break
    sleep 0.1
  done
  if (($(huge_available) < huge_start)) && [[ -z $(huge_holders) ]]; then
    problems+=("huge pages not returned: $(huge_available) free after the job, $huge_start before")
  fi
fi
# timeout(1) gives 124, or 137 when it had to KILL; a PE killed by SIGKILL also gives 137, so
# only a launch that lasted the whole timeout counts as timed out.
timed_out=$(awk -v e="$elapsed" -v t="$timeout_s" 'BEGIN { print (e >= t) ? 1 : 0 }')
if [[ $status -eq 124 || ($status -eq 137 && $timed_out -eq 1) ]]; then
  problems+=("timed out after ${timeout_s}s (status $status)")
elif [[ $expect_status == nonzero ]]; then
  [[ $status -ne 0 ]] || problems+=("exit status 0, expected non-zero")
elif [[ $status -ne $expect_status ]]; then
  problems+=("exit status $status, expected $expect_status")
fi
for re in "${stderr_res[@]+"${stderr_res[@]}"}"; do
  re=${re//\{np\}/$np}
  grep -Eq -- "$re" "$work/err" || problems+=("no stderr line matches /$re/")
done
for re in "${output_res[@]+"${output_res[@]}"}"; do
  re=${re//\{np\}/$np}
  cat "$work/out" "$work/err" | grep -Eq -- "$re" || problems+=("no output line matches /$re/")
done
if [[ -n $stderr_lines ]]; then
  lines=$(wc -l <"$work/err")
  [[ $lines -eq $stderr_lines ]] || problems+=("stderr has $lines lines, expected $stderr_lines")
fi
if [[ $no_survivors -eq 1 ]]; then
  for _ in $(seq 50); do
    alive=()
    for f in "$work"/pids/*; do
      [[ -e $f ]] || continue
      pid=$(cat "$f")
      # a zombie is dead; only a running/sleeping process survives
      st=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)
      [[ -n $st && $st != Z && $st != X ]] && alive+=("PE $(basename "$f") pid $pid")
    done
    [[ ${#alive[@]} -eq 0 ]] && break
    sleep 0.1
  done
  [[ ${#alive[@]} -eq 0 ]] || problems+=("still alive 5 s after the launcher exited: ${alive[*]}")
  npid=$(ls "$work/pids" | wc -l)
  [[ $npid -eq $np ]] || problems+=("only $npid of $np PEs started (pid files)")
fi

if [[ $no_leftovers -eq 1 ]]; then
  left=$(ls /dev/shm | grep -i hoshmem || true)
  [[ -z $left ]] && left=$(find /dev/shm -maxdepth 1 -newer "$work/pids" -name '*oshrun*' | head -3)
  [[ -z $left ]] || problems+=("left in /dev/shm: $left")
  if [[ -n $softhca ]]; then
    # a fresh start of the model removes segments in which no node is alive, then leaves
    ibv_devinfo >/dev/null 2>&1
    [[ ! -e /dev/shm/softhca.$SOFTHCA_FABRIC ]] ||
      problems+=("the model's segment softhca.$SOFTHCA_FABRIC still has a live node")
  fi
fi
name=$(basename "$program")
if [[ ${#problems[@]} -eq 0 ]]; then
  echo "ok: $name -np $np (status $status, ${elapsed}s)"
  [[ -s $work/out ]] && sed 's/^/  | /' "$work/out" | tail -n 20
  exit 0
fi
echo "FAILED: $name -np $np (${elapsed}s)"
for p in "${problems[@]}"; do echo "  - $p"; done
echo "---- stdout ----"; tail -n 200 "$work/out"
echo "---- stderr ----"; tail -n 60 "$work/err"
exit 1
