#!/usr/bin/env bash
# hoshmem's multi-PE test programs under the launchers that are not oshrun: Slurm's srun (with its
# PMIx plugin and with its PMI-2 plugin, which also serves PMI-1) and MPICH's Hydra
# (mpiexec.hydra, PMI-1 and PMI-2).
#
#   scripts/test-launchers.sh [WORD...]   WORD: run only the tests whose name contains one of
#                                         them (pmix, pmi2, hydra, fault, lock, ...); default: all
#
# Installs what is missing (scripts/debian-packages.txt, scripts/launchers/debian-packages.txt;
# the system's own munged and Slurm daemons are not started by the installation), builds the test
# programs with Bazel, and starts a private Slurm on this machine: munged with a key and socket of
# its own, slurmctld and slurmd as root on ports other than Slurm's defaults, one node (this
# host, all its CPUs), everything in a temporary directory (/tmp/hoshmem-slurm.*). Then runs
# each test through test/shmem/run_test.sh (a timeout, the expected exit status, regexes on the
# output) with scripts/launchers/srun.sh or test/shmem/hydra.sh as its launcher, checks that no
# PE process is left after the launcher returned, and prints "ok: ..." or "FAIL: ..." (with
# the end of its output) per test, "N passed, N failed" and the time taken. On exit, also after
# Ctrl-C or a failure, everything it started is stopped and the directory removed; the last line
# before the summary says whether anything of it was still running.
# Bazel's and apt's output: build/logs/test-launchers.log; each test's output and the Slurm logs
# of the last run: build/launchers/.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
begin=$SECONDS
filters=("$@")
log=build/logs/test-launchers.log
out=build/launchers
mkdir -p build/logs "$out"
: >"$log"
rm -f "$out"/*.log
source scripts/quiet-bazel.sh # step, bazel_logged, show_build_errors

# ---- the tests: LAUNCHER NP PROGRAM [options] ----
# LAUNCHER: pmix or pmi2 (srun --mpi=...), hydra (mpiexec.hydra). Options: run_test.sh's
# (--env, --expect-status, --expect-output, --expect-stderr, --no-survivors, --timeout) and -K
# (srun --kill-on-bad-exit). Without --expect-status a test must exit 0 and print
# "PASS PROGRAM: NP PEs". Regexes have no spaces ('.' stands for one).
ge='--expect-stderr ^PE.[0-9]+:.calling.shmem_global_exit --no-survivors --timeout 30'
fault='--env SHMEM_SYMMETRIC_SIZE=64M --expect-status nonzero --no-survivors --timeout 30'
table() {
  local l p info
  for l in pmix pmi2 hydra; do
    case $l in
      pmix) info='launcher:.pmix.\(namespace.slurm\.pmix\.' ;;
      *) info='launcher:.pmi-1.\(PMI_FD\)' ;;
    esac
    # the four programs of the hydra_* Bazel tests; SHMEM_INFO=1 once: the launcher line
    if [[ $l == hydra ]]; then
      echo "$l 4 amo --env SHMEM_INFO=1 --expect-output $info"
    else
      echo "$l 2 amo --env SHMEM_INFO=1 --expect-output $info"
      echo "$l 4 amo"
    fi
    for p in rma_typed coll_data lock; do
      [[ $l == hydra ]] || echo "$l 2 $p"
      echo "$l 4 $p"
    done
  done
  # PMI-2 (HOSHMEM_PMI=pmi2) from Slurm's pmi2 plugin and from Hydra. 20 s: these take about a
  # second when they work.
  cat <<TESTS
pmi2 2 amo --env HOSHMEM_PMI=pmi2 --env SHMEM_INFO=1 --expect-output launcher:.pmi-2.\(PMI_FD\) --timeout 20
pmi2 4 amo --env HOSHMEM_PMI=pmi2 --timeout 20
pmi2 4 coll_data --env HOSHMEM_PMI=pmi2 --timeout 20
pmi2 4 lock --env HOSHMEM_PMI=pmi2 --timeout 20
hydra 4 amo --env HOSHMEM_PMI=pmi2 --env SHMEM_INFO=1 --expect-output launcher:.pmi-2.\(PMI_FD\)
TESTS
  # A PE that dies: the job ends, non-zero, in seconds, and no PE is left. Slurm's PMIx plugin
  # ends the step when a PE's connection closes before PMIx_Finalize; its PMI-2 plugin does
  # not, so there a dead PE ends the job only with srun -K (or KillOnBadExit=1 in slurm.conf).
  cat <<TESTS
pmix 4 fault_amo_kill --env FAULT=amo_kill $fault
pmix 4 fault_amo_kill --env FAULT=exit3 $fault
pmi2 4 fault_amo_kill -K --env FAULT=amo_kill $fault
pmi2 4 fault_amo_kill -K --env FAULT=exit3 $fault
hydra 4 fault_amo_kill --env FAULT=amo_kill $fault
hydra 4 fault_amo_kill --env FAULT=exit3 $fault
TESTS
  # shmem_global_exit(256) must not read as success: 255 (the library's mapping), and 7 stays 7.
  # Slurm's PMI-2 plugin takes PMI-1's abort as "kill the step" and drops its exit code: srun
  # then exits 137 (SIGKILL), whatever the status, so there only a non-zero status is expected.
  cat <<TESTS
pmix 4 launch_global_exit --expect-status 255 $ge
pmix 4 launch_global_exit --env GLOBAL_EXIT_STATUS=7 --expect-status 7 $ge
pmi2 4 launch_global_exit --expect-status nonzero $ge
pmi2 4 launch_global_exit --env GLOBAL_EXIT_STATUS=7 --expect-status nonzero $ge
hydra 4 launch_global_exit --expect-status 255 $ge
hydra 4 launch_global_exit --env GLOBAL_EXIT_STATUS=7 --expect-status 7 $ge
TESTS
}

# The test's name: the launch command as a user would type it, with the environment it adds.
test_name() { # LAUNCHER NP PROGRAM OPTIONS...
  local l=$1 np=$2 prog=$3 env="" kill=""
  shift 3
  while (($#)); do
    case $1 in
      --env) [[ $2 == SHMEM_SYMMETRIC_SIZE=* ]] || env+="$2 "; shift 2 ;;
      -K) kill="-K "; shift ;;
      *) shift ;;
    esac
  done
  case $l in
    hydra) echo "${env}mpiexec.hydra -n $np $prog" ;;
    *) echo "${env}srun ${kill}--mpi=$l -n $np $prog" ;;
  esac
}
wanted() { # NAME: selected by the command's words?
  ((${#filters[@]})) || return 0
  local w
  for w in "${filters[@]}"; do [[ $1 == *"$w"* ]] && return 0; done
  return 1
}

# ---- cleanup: whatever this command started ----
tmp="" conf="" policy_made="" current="" daemons=()
# Processes of the private Slurm: everything started with its SLURM_CONF in the environment
# (the daemons, slurmstepd, srun and the tasks inherit it). The variable is never exported in
# this shell itself, so only those processes carry it.
ours() {
  [[ -n $conf ]] || return 0
  local e kv pid
  for e in /proc/[0-9]*/environ; do
    pid=${e#/proc/}; pid=${pid%/environ}
    { while IFS= read -r -d '' kv; do
      [[ $kv == "SLURM_CONF=$conf" ]] && { echo "$pid"; break; }
    done <"$e"; } 2>/dev/null # kernel threads and processes gone meanwhile
  done
}
not_daemons() { # PID...: those that are neither a daemon nor its child (slurmctld's slurmscriptd:
  # killing it first makes slurmctld's own stop hang)
  local p ppid
  for p in "$@"; do
    ppid=$(ps -o ppid= -p "$p" 2>/dev/null) || continue
    [[ " ${daemons[*]} " == *" $p "* || " ${daemons[*]} " == *" ${ppid// /} "* ]] || echo "$p"
  done
}
descendants() { # PID: its children, grandchildren, ...
  local c
  for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do
    echo "$c"
    descendants "$c"
  done
}
reap() { # SECONDS PID...: waits until they are gone, at most SECONDS, then KILLs the rest
  local wait=$1 p i
  shift
  (($#)) || return 0
  for ((i = 0; i < wait * 10; i++)); do
    for p in "$@"; do kill -0 "$p" 2>/dev/null && break; done
    kill -0 "$p" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$@" 2>/dev/null
}
stop_pids() { # SECONDS PID...: TERM, then KILL whatever is still there after SECONDS
  (($# > 1)) || return 0
  kill -TERM "${@:2}" 2>/dev/null
  reap "$@"
}
# shellcheck disable=SC2046 # the PID lists are split on purpose
cleanup() {
  trap '' INT TERM
  local left d
  [[ -n $policy_made ]] && rm -f /usr/sbin/policy-rc.d
  # a job still running (Ctrl-C): Slurm's own cancel ends its tasks (slurmstepd sends them
  # SIGTERM, and SIGKILL KillWait=5 s later), then the test's own processes go (timeout(1) put
  # them in a process group of their own, which Ctrl-C did not reach)
  [[ -n $tmp ]] && SLURM_CONF=$conf timeout 10 scancel --user=root </dev/null >/dev/null 2>&1
  [[ -n $current ]] && stop_pids 10 $(descendants "$current") "$current"
  if [[ -n $tmp ]]; then
    # what is left of the jobs gets 10 s after the cancel, then SIGKILL; then the daemons,
    # munged last
    reap 10 $(not_daemons $(ours))
    for d in 1 2 0; do # slurmctld, slurmd, munged
      [[ -n ${daemons[d]:-} ]] || continue
      stop_pids 10 "${daemons[d]}"
      { wait "${daemons[d]}"; } 2>/dev/null # no "Killed" message from bash
    done
    # and no test program of this checkout
    left=$({ ours; [[ -z ${bindir:-} ]] || pgrep -f "^$bindir/"; } | sort -u)
    if [[ -n $left ]]; then
      echo "== still running after the stop, killed: $(ps -o pid=,args= -p "${left//$'\n'/,}" | head -5)"
      kill -KILL $left 2>/dev/null
    fi
    cp "$tmp"/log/*.log "$out/" 2>/dev/null
    rm -rf "$tmp"
    echo "== private Slurm and munged stopped, $tmp removed; $([[ -z $left ]] && echo "nothing of them left running (ps)" || echo "see above")"
  fi
}
trap cleanup EXIT
trap 'echo; echo "== interrupted"; exit 130' INT TERM

[[ $(id -u) -eq 0 ]] || { echo "scripts/test-launchers.sh runs slurmd and slurmctld as root: run it as root"; exit 1; }

# ---- packages ----
install_packages() {
  scripts/deps.sh >>"$log" 2>&1 || { echo "scripts/deps.sh failed (see $log)"; return 1; }
  local missing=() pkg
  while read -r pkg; do
    [[ -z $pkg || $pkg == \#* ]] && continue
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done <scripts/launchers/debian-packages.txt
  if ((${#missing[@]})); then
    step "installing ${missing[*]}"
    # Installing munge and the Slurm daemons would start the system's own (default ports,
    # /etc/munge's key) and leave them running: policy-rc.d's 101 tells the packages not to.
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
      printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d
      policy_made=1
    fi
    apt-get update -qq >>"$log" 2>&1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$log" 2>&1 ||
      { echo "apt-get install failed (see $log)"; return 1; }
    [[ -n $policy_made ]] && rm -f /usr/sbin/policy-rc.d && policy_made=""
  fi
  # The MPI plugins srun --mpi=pmix and --mpi=pmi2 load; the PMIx one dlopens libpmix.so, the
  # unversioned name that only libpmix-dev installs (in scripts/debian-packages.txt).
  local so files
  files=$(dpkg -L slurm-wlm-basic-plugins libpmix-dev)
  for so in /mpi_pmix.so /mpi_pmi2.so /pmix2/lib/libpmix.so; do
    [[ $files$'\n' == *"$so"$'\n'* ]] || { echo "no $so in slurm-wlm-basic-plugins or libpmix-dev"; return 1; }
  done
}

# ---- the private Slurm ----
free_port() { # FROM: the first TCP port from FROM on that nothing listens on
  local p=$1
  while [[ -n $(ss -Htln "sport = :$p" 2>/dev/null) ]]; do p=$((p + 1)); done
  echo "$p"
}
wait_for() { # SECONDS COMMAND...: true once COMMAND succeeds
  local i
  for ((i = 0; i < $1 * 10; i++)); do
    "${@:2}" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  return 1
}
daemon_died() { # NAME LOG
  echo "$1 did not start; the end of $2:"
  tail -n 8 "$2" | sed 's/^/    /'
  cp "$tmp"/log/*.log "$out/" 2>/dev/null
  return 1
}
start_slurm() {
  local host ctld_port slurmd_port
  host=$(hostname -s)
  tmp=$(mktemp -d /tmp/hoshmem-slurm.XXXXXX) || return 1
  # munged refuses a socket whose directories are not searchable by all
  chmod 755 "$tmp"
  mkdir -p "$tmp"/{munge,run,state,spool,log,tmp}
  chmod 700 "$tmp/munge"
  conf=$tmp/slurm.conf

  # munge: a key of its own and its own socket, so that a system munged (or its absence) does
  # not matter and no other Slurm can talk to this one
  if command -v mungekey >/dev/null; then
    mungekey --create --keyfile="$tmp/munge/munge.key" >>"$log" 2>&1
  else
    dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none && chmod 600 "$tmp/munge/munge.key"
  fi
  # setsid: a session of their own, so that Ctrl-C does not reach the daemons (slurmctld would
  # stop at once, and the cleanup could not cancel the jobs through it)
  SLURM_CONF=$conf setsid munged --foreground --socket="$tmp/run/munge.sock" --key-file="$tmp/munge/munge.key" \
    --pid-file="$tmp/run/munged.pid" --seed-file="$tmp/munge/seed" --log-file="$tmp/log/munged.log" \
    >>"$tmp/log/munged.log" 2>&1 &
  daemons+=($!)
  wait_for 10 bash -c "munge -S '$tmp/run/munge.sock' -n | unmunge -S '$tmp/run/munge.sock'" ||
    daemon_died munged "$tmp/log/munged.log" || return 1

  ctld_port=$(free_port 16817)
  slurmd_port=$(free_port $((ctld_port + 1)))
  # One node: this host at 127.0.0.1 with all its CPUs. No cgroups (proctrack/linuxproc,
  # task/none), no accounting; KillWait=5: a cancelled step's tasks get SIGKILL 5 s after
  # SIGTERM (default 30).
  cat >"$conf" <<EOF
ClusterName=hoshmem
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/run/munge.sock
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
TmpFS=$tmp/tmp
SlurmctldPidFile=$tmp/run/slurmctld.pid
SlurmdPidFile=$tmp/run/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
KillWait=5
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
  SLURM_CONF=$conf setsid slurmctld -D -c -f "$conf" >>"$tmp/log/slurmctld.out" 2>&1 &
  daemons+=($!)
  SLURM_CONF=$conf setsid slurmd -D -f "$conf" >>"$tmp/log/slurmd.out" 2>&1 &
  daemons+=($!)
  local i state=""
  for ((i = 0; i < 60; i++)); do
    kill -0 "${daemons[1]}" 2>/dev/null || { daemon_died slurmctld "$tmp/log/slurmctld.out"; return 1; }
    kill -0 "${daemons[2]}" 2>/dev/null || { daemon_died slurmd "$tmp/log/slurmd.out"; return 1; }
    state=$(SLURM_CONF=$conf sinfo -h -n "$host" -o %t 2>/dev/null)
    [[ $state == idle ]] && break
    sleep 1
  done
  [[ $state == idle ]] || { echo "node $host not idle after 60 s (sinfo: '$state'); logs in $out/"; cp "$tmp"/log/* "$out/"; return 1; }
  echo "   $host idle: slurmctld port $ctld_port, slurmd port $slurmd_port, $(nproc) CPUs ($tmp)"
}

# ---- one test ----
passed=0 failed=0 n=0
run_one() { # LAUNCHER NP PROGRAM OPTIONS...
  local l=$1 np=$2 prog=$3 name bin opts=() srun_opts="" has_status=0 launcher res status t left i
  shift 3
  name=$(test_name "$l" "$np" "$prog" "$@")
  bin=$bindir/$prog
  while (($#)); do
    case $1 in
      -K) srun_opts="--kill-on-bad-exit=1"; shift ;;
      --expect-status) has_status=1; opts+=("$1" "$2"); shift 2 ;;
      --no-survivors) opts+=("$1"); shift ;;
      *) opts+=("$1" "$2"); shift 2 ;;
    esac
  done
  ((has_status)) || opts+=(--expect-status 0 --expect-output "^PASS.$prog:.{np}.PEs")
  [[ " ${opts[*]} " == *" --timeout "* ]] || opts+=(--timeout 60)
  case $l in
    hydra) launcher=test/shmem/hydra.sh ;;
    *) launcher=scripts/launchers/srun.sh ;;
  esac
  n=$((n + 1))
  res=$out/$(printf %02d "$n")-$l-$prog-np$np.log
  echo "$name" >"$res"
  SLURM_CONF=$conf SRUN_MPI=$l SRUN_OPTS=$srun_opts \
    test/shmem/run_test.sh --np "$np" "${opts[@]}" "$launcher" "$bin" >>"$res" 2>&1 &
  current=$!
  wait "$current"
  status=$?
  current=""
  # no PE of this program may outlive its launcher (5 s grace, as run_test.sh's --no-survivors)
  for ((i = 0; i < 50; i++)); do
    left=$(pgrep -f "^$bin( |\$)" | tr '\n' ' ')
    [[ -z $left ]] && break
    sleep 0.1
  done
  if [[ -n $left ]]; then
    echo "  - PE processes of $prog still running 5 s after the launcher returned: $left" >>"$res"
    kill -KILL $left 2>/dev/null
    status=1
  fi
  if ((status == 0)); then
    t=$(grep -m1 -oE '\(status [0-9]+, [0-9.]+s\)' "$res")
    echo "ok: $name $t"
    passed=$((passed + 1))
  else
    echo "FAIL: $name (all of it: $res)"
    # what run_test.sh found wrong, then the end of the launch's stderr
    grep -E '^  - ' "$res" | sed 's/^  /    /'
    sed -n '/^---- stderr ----$/,$p' "$res" | tail -n +2 | grep -v '^$' | tail -n 8 | sed 's/^/    | /'
    failed=$((failed + 1))
  fi
}

# ---- main ----
plan=()
while read -r line; do
  read -ra words <<<"$line" # split without globbing the regexes
  wanted "$(test_name "${words[@]}")" && plan+=("$line")
done < <(table)
((${#plan[@]})) || { echo "no test matches: ${filters[*]}"; exit 2; }
need_slurm=0
for line in "${plan[@]}"; do [[ $line == hydra* ]] || need_slurm=1; done

step "packages (scripts/launchers/debian-packages.txt)"
install_packages || exit 1
programs=()
for line in "${plan[@]}"; do
  read -r _ _ prog _ <<<"$line"
  [[ " ${programs[*]} " == *" //test/shmem:$prog "* ]] || programs+=("//test/shmem:$prog")
done
step "building ${#programs[@]} test programs (Bazel's output: $log)"
if ! bazel_logged "$log" build "${programs[@]}"; then
  show_build_errors "$log"
  exit 1
fi
bindir=$(realpath bazel-bin/test/shmem)
if ((need_slurm)); then
  step "starting a private Slurm (Slurm $(dpkg-query -W -f='${Version}' slurmd)) and munged"
  start_slurm || exit 1
fi
step "running ${#plan[@]} tests (each one's output: $out/)"
tests_begin=$SECONDS
for line in "${plan[@]}"; do
  read -ra words <<<"$line"
  run_one "${words[@]}"
done
echo "   tests took $((SECONDS - tests_begin)) s"
cleanup
tmp="" current=""
trap - EXIT
echo "$passed passed, $failed failed"
echo "== total time $((SECONDS - begin)) s"
((failed == 0))
