#!/bin/bash
# The guest side of `scripts/test-rxe.sh two`: runs as root in each of the two guests, in a chroot
# of the host's root (read-only under a tmpfs overlay), with the share both guests write to at
# /results. The kernel command line says which guest this is: rxe.role=a (10.0.0.1, hostname
# rxe-a) or rxe.role=b (10.0.0.2, rxe-b). Both bring up eth0 (MTU rxe.mtu=, default 9000) and
# rxe0 on it.
#
# b: takes the ssh server out of the openssh-server package the host downloaded ($SSHD_ROOT),
#    makes a host key, waits for a's public key, starts sshd on 10.0.0.2 only, publishes its host
#    key, then waits until a says it is done.
# a: makes a client key, publishes it, waits for b's host key, checks that ssh reaches rxe-b
#    (one connection, kept for the run) and that mpirun starts a process in each guest, then runs
#    every line of /results/plan through test/shmem/run_test.sh with scripts/rxe/mpirun.sh as the
#    launcher: Open MPI's mpirun starts one PE here and one in b (its rsh agent: ssh).
# Slurm (tests src_* and sud_*, only when the plan has one): a makes a munge key and slurm.conf in
# /results/slurm; each guest starts munged with that key and slurmd, a also slurmctld; a waits
# until both nodes are idle and srun starts a process in each guest; those tests run with
# scripts/rxe/srun.sh as the launcher. The Slurm logs go to /results/slurm.
# After each test, no process of its program may be left in either guest (5 s of grace; the pid
# files of run_test.sh's --no-survivors see only a's PEs).
# Every key lives in the guest's tmpfs and dies with it. a writes one line per test to
# /results/progress and /results/results, b its own lines to /results/progress-b. Exit status:
# a: 0 if every test passed, else 1; b: 0 once a is done, 2 if something failed to start.
set -u
source /results/env # REPO, BINDIR, SSHD_ROOT (host paths, the same inside the guest), WAIT_S
role="" ip="" mtu=9000
for arg in $(cat /proc/cmdline); do
  case $arg in
    rxe.role=*) role=${arg#rxe.role=} ;;
    rxe.mtu=*) mtu=${arg#rxe.mtu=} ;;
  esac
done
case $role in
  a) ip=10.0.0.1 peer=rxe-b ;;
  b) ip=10.0.0.2 peer=rxe-a ;;
  *) echo "two-run.sh: no rxe.role=a|b on the kernel command line" >&2; exit 2 ;;
esac
exec >>"/results/guest-$role.log" 2>&1
if [[ $role == a ]]; then out=/results/progress; else out=/results/progress-b; fi
progress() { echo "$role: $*" >>"$out"; }
# The first check: what this guest runs is visible here (the host's paths, shared by
# scripts/rxe/init); if not, one line for the host (/results/fatal) and no test at all.
needs=("$SSHD_ROOT/usr/sbin/sshd")
if [[ $role == a ]]; then
  needs=("$REPO/test/shmem/run_test.sh" "$REPO/scripts/rxe/mpirun.sh" "$REPO/scripts/rxe/hydra.sh"
    "$REPO/scripts/rxe/srun.sh")
  while IFS=$'\t' read -r -a f; do needs+=("$BINDIR/${f[3]:-}"); done </results/plan
fi
for need in "${needs[@]}"; do
  [[ -e $need ]] && continue
  echo "rxe-$role cannot see $need (the host's path; scripts/rxe/init mounts what it shares)" >/results/fatal
  exit 2
done
uptime_s() { cut -d' ' -f1 /proc/uptime; }
# wait_for FILE: until FILE exists (the other guest writes it), at most WAIT_S seconds
wait_for() {
  local i
  for ((i = 0; i < WAIT_S * 5; i++)); do
    [[ -e $1 ]] && return 0
    sleep 0.2
  done
  progress "gave up waiting $WAIT_S s for $1 (see $RESULTS_HOST/guest-*.log)"
  return 1
}
# b stops when a stops, whatever happened; the munge key leaves the share in any case
[[ $role == a ]] && trap 'rm -f /results/slurm/munge.key; touch /results/done' EXIT

[[ -e /dev/fd ]] || ln -s /proc/self/fd /dev/fd
hostname "rxe-$role"
printf '127.0.0.1 localhost\n10.0.0.1 rxe-a\n10.0.0.2 rxe-b\n' >/etc/hosts
ip link set lo up
ip addr add "$ip/24" dev eth0
ip link set eth0 mtu "$mtu" # rxe's RoCE MTU is the largest below it: 4096 for 9000
ip link set eth0 up
if ! rdma link add rxe0 type rxe netdev eth0; then
  progress "rdma link add rxe0 failed (see $RESULTS_HOST/guest-$role.log)"
  exit 2
fi
# rxe adds a RoCE v2 GID per IP address of eth0: wait for the IPv4 one (::ffff:10.0.0.x)
gids=/sys/class/infiniband/rxe0/ports/1/gids
v4gid=""
for _ in $(seq 100); do
  v4gid=$(grep -l "^0000:0000:0000:0000:0000:ffff:" "$gids"/* 2>/dev/null | head -1)
  [[ -n $v4gid ]] && break
  sleep 0.2
done
ibv_devinfo -v -d rxe0 | grep -E 'state|active_mtu|GID\[ *[0-9]+\]'
progress "rxe0 up on eth0 (MTU $(cat /sys/class/net/eth0/mtu), $(uptime_s) s after boot)," \
  "IPv4 GID ${v4gid:+index ${v4gid##*/} }$(cat "${v4gid:-/dev/null}")"

ulimit -l unlimited # the PEs inherit it, in b through sshd and orted
export SHMEM_SYMMETRIC_SIZE=64M TEST_TMPDIR=/tmp
# An ACK can take over a second between these TCG guests (frames queue in the link while a guest
# falls behind): the default 1.07 s timeout then retransmits what arrived, and Debian 6.1's rxe
# has left a queue pair stalled after such a retry (rma_large: no packet, no retry, until the
# test's timeout). 8.6 s per try (60 s for 7).
export HOSHMEM_RC_TIMEOUT=21

# ---- Slurm, for the tests src_* and sud_* ----
slurm=0
grep -q '^s' /results/plan && slurm=1
sdir=/results/slurm   # shared: the configuration, the key until both guests hold it, the logs
stmp=/tmp/slurm       # this guest's own: sockets, pid files, state, spool, its copy of the key
export SLURM_CONF=$sdir/slurm.conf
# slurm_conf: what both guests read. As scripts/test-launchers.sh's private Slurm: root, no
# cgroups, no accounting, KillWait=5 (a cancelled step's tasks get SIGKILL 5 s after SIGTERM);
# MessageTimeout=30: an RPC between these TCG guests can take seconds.
slurm_conf() {
  cat <<CONF
ClusterName=rxe
SlurmctldHost=rxe-a(10.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$stmp/run/munge.sock
StateSaveLocation=$stmp/state
SlurmdSpoolDir=$stmp/spool
SlurmctldPidFile=$stmp/run/slurmctld.pid
SlurmdPidFile=$stmp/run/slurmd.pid
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
MessageTimeout=30
NodeName=rxe-a NodeAddr=10.0.0.1 CPUs=$(nproc) State=UNKNOWN
NodeName=rxe-b NodeAddr=10.0.0.2 CPUs=$(nproc) State=UNKNOWN
PartitionName=rxe Nodes=rxe-a,rxe-b Default=YES MaxTime=INFINITE State=UP
CONF
}
# slurm_start: munged with the shared key, then slurmctld (a only) and slurmd; setsid: sessions
# of their own, out of reach of the tests' process groups
slurm_start() {
  local d
  mkdir -p -m 755 "$stmp" "$stmp/run" "$stmp/state" "$stmp/spool" # munged wants its socket's
  mkdir -p -m 700 "$stmp/munge"                                    # directories searchable
  cp "$sdir/munge.key" "$stmp/munge/munge.key" && chmod 600 "$stmp/munge/munge.key" || return 1
  setsid munged --foreground --socket="$stmp/run/munge.sock" --key-file="$stmp/munge/munge.key" \
    --pid-file="$stmp/run/munged.pid" --seed-file="$stmp/munge/seed" \
    --log-file="$sdir/munged-$role.log" >>"$sdir/munged-$role.log" 2>&1 &
  for ((d = 0; d < 150; d++)); do
    munge -S "$stmp/run/munge.sock" -n 2>/dev/null | unmunge -S "$stmp/run/munge.sock" >/dev/null 2>&1 && break
    sleep 0.2
  done
  ((d < 150)) || { progress "munged did not start (see $RESULTS_HOST/slurm/munged-$role.log)"; return 1; }
  # slurmd 22.05 wants a cgroup hierarchy even with proctrack/linuxproc and task/none (it has no
  # CgroupPlugin=disabled): a cgroup v1 layout, a tmpfs with one named hierarchy in it
  if ! mountpoint -q /sys/fs/cgroup; then
    mount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup && mkdir /sys/fs/cgroup/systemd &&
      mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd || return 1
  fi
  if [[ $role == a ]]; then
    setsid slurmctld -D -c -f "$SLURM_CONF" -L "$sdir/slurmctld.log" >>"$sdir/slurmctld.out" 2>&1 &
    slurmctld_pid=$!
  fi
  setsid slurmd -D -f "$SLURM_CONF" -N "rxe-$role" -L "$sdir/slurmd-$role.log" >>"$sdir/slurmd-$role.out" 2>&1 &
  slurmd_pid=$!
  progress "munged, $([[ $role == a ]] && echo "slurmctld, ")slurmd started ($(uptime_s) s after boot)"
}
# slurm_dead: the first of this guest's Slurm daemons that is not running, with its log's end
slurm_dead() {
  local name pid log
  for name in slurmctld slurmd; do
    pid=${name}_pid
    [[ -n ${!pid:-} ]] || continue
    kill -0 "${!pid}" 2>/dev/null && continue
    log=$sdir/$name; [[ $name == slurmd ]] && log+=-$role
    echo "$name died: $(cat "$log.log" "$log.out" 2>/dev/null | grep -v '^$' | tail -n 2 | tr '\n' ' ')"
    return 0
  done
  return 1
}

if [[ $role == b ]]; then
  # sshd from the downloaded package, into this guest's overlay only
  cp "$SSHD_ROOT/usr/sbin/sshd" /usr/sbin/sshd
  cp -a "$SSHD_ROOT"/usr/lib/x86_64-linux-gnu/libwrap.so.0* /usr/lib/x86_64-linux-gnu/
  grep -q '^sshd:' /etc/passwd || echo 'sshd:x:101:65534::/run/sshd:/usr/sbin/nologin' >>/etc/passwd
  mkdir -p /run/sshd /tmp/sshd
  chmod 755 /run/sshd
  ssh-keygen -q -t ed25519 -N '' -C rxe-b -f /tmp/sshd/host_key || exit 2
  cat >/tmp/sshd/config <<CONFIG
ListenAddress 10.0.0.2
HostKey /tmp/sshd/host_key
PidFile /tmp/sshd/pid
AuthorizedKeysFile /tmp/sshd/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
CONFIG
  wait_for /results/a.pub || exit 2
  cp /results/a.pub /tmp/sshd/authorized_keys
  if ! /usr/sbin/sshd -f /tmp/sshd/config -E /results/sshd-b.log; then
    progress "sshd did not start (see $RESULTS_HOST/sshd-b.log)"
    exit 2
  fi
  echo "rxe-b,10.0.0.2 $(cut -d' ' -f1-2 /tmp/sshd/host_key.pub)" >/results/b.hostkey.new
  mv /results/b.hostkey.new /results/b.hostkey
  progress "sshd up on 10.0.0.2 ($(uptime_s) s after boot)"
  if ((slurm)); then
    wait_for "$sdir/ready" || exit 2
    slurm_start || exit 2
  fi
  said=""
  for ((;;)); do
    [[ -e /results/done ]] && break
    if ((slurm)) && [[ -z $said ]] && said=$(slurm_dead); then progress "$said (see $RESULTS_HOST/slurm/)"; fi
    sleep 1
  done
  progress "done ($(uptime_s) s after boot)"
  exit 0
fi

# ---- a: the client key, then the tests ----
mkdir -p /tmp/ssh
ssh-keygen -q -t ed25519 -N '' -C rxe-a -f /tmp/ssh/id || exit 2
cp /tmp/ssh/id.pub /results/a.pub.new && mv /results/a.pub.new /results/a.pub
if ((slurm)); then
  mkdir -p -m 755 "$sdir"
  (umask 077 && dd if=/dev/urandom of="$sdir/munge.key" bs=1024 count=1 status=none) || exit 2
  slurm_conf >"$sdir/slurm.conf"
  touch "$sdir/ready"
  slurm_start || exit 2
fi
cat >/tmp/ssh/config <<CONFIG
Host rxe-b
  HostName 10.0.0.2
  User root
  IdentityFile /tmp/ssh/id
  IdentitiesOnly yes
  UserKnownHostsFile /tmp/ssh/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  BatchMode yes
  ConnectTimeout 60
  # one connection for the whole run (its key exchange takes seconds under TCG): the check below
  # opens it, mpirun's ssh commands go through it
  ControlMaster auto
  ControlPath /tmp/ssh/cm-%C
  ControlPersist yes
CONFIG
wait_for /results/b.hostkey || exit 2
cp /results/b.hostkey /tmp/ssh/known_hosts
export RXE_SSH_CONFIG=/tmp/ssh/config
start=$(date +%s.%N)
said=$(timeout 120 ssh -F /tmp/ssh/config rxe-b 'hostname; ulimit -l' 2>&1 | tr '\n' ' ')
if [[ $said != "rxe-b unlimited " ]]; then
  progress "ssh rxe-b failed: $said"
  exit 2
fi
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
progress "ssh rxe-b works ($(since "$start") s for the first command)"
# the launcher across the guests: one process on each
start=$(date +%s.%N)
said=$(RXE_STDOUT=/dev/null RXE_STDERR=/dev/null timeout 300 "$REPO/scripts/rxe/mpirun.sh" -np 2 hostname 2>&1 |
  sort | tr '\n' ' ')
if [[ $said != "rxe-a rxe-b " ]]; then
  progress "mpirun -np 2 hostname failed: $said"
  exit 2
fi
progress "mpirun -np 2 hostname: $said($(since "$start") s)"
if ((slurm)); then
  # slurmd in b registers once its munged is up; then srun starts one task in each guest
  start=$(date +%s.%N)
  for ((i = 0; i < WAIT_S; i += 2)); do
    nodes=$(sinfo -h -N -o '%N %t' 2>&1 | sort | tr '\n' ' ')
    [[ $nodes == "rxe-a idle rxe-b idle " ]] && break
    if said=$(slurm_dead); then progress "$said (see $RESULTS_HOST/slurm/)"; exit 2; fi
    sleep 2
  done
  if [[ $nodes != "rxe-a idle rxe-b idle " ]]; then
    progress "Slurm's nodes not idle after $WAIT_S s: $nodes(see $RESULTS_HOST/slurm/)"
    exit 2
  fi
  rm -f "$sdir/munge.key" # both guests hold it now
  progress "Slurm: rxe-a and rxe-b idle ($(since "$start") s)"
  start=$(date +%s.%N)
  said=$(RXE_STDOUT=/dev/null RXE_STDERR=/dev/null SRUN_MPI=none timeout 300 "$REPO/scripts/rxe/srun.sh" -np 2 hostname 2>&1 |
    sort | tr '\n' ' ')
  if [[ $said != "rxe-a rxe-b " ]]; then
    progress "srun -N 2 -n 2 hostname failed: $said"
    exit 2
  fi
  progress "srun -N 2 -n 2 hostname: $said($(since "$start") s)"
fi

mkdir -p /results/logs
counters=/sys/class/infiniband/rxe0/ports/1/hw_counters
packets() { cat "$counters/sent_pkts" 2>/dev/null || echo 0; }
# counters: rxe0's hw_counters and eth0's statistics of this guest ("name value" lines), to tell
# a lost frame (eth0 drops, rxe retries and timeouts) from a slow peer
counters() {
  local f
  for f in "$counters"/* /sys/class/net/eth0/statistics/{rx,tx}_{packets,dropped,errors,fifo_errors}; do
    echo "${f##*/} $(cat "$f")"
  done
}
# counters_diff BEFORE AFTER: the counters that changed, "name +delta" on one line
counters_diff() {
  awk 'NR == FNR { a[$1] = $2; next } $2 != a[$1] { printf "%s +%d ", $1, $2 - a[$1] }' "$1" "$2"
}
# survivors PATTERN (in either guest): the PIDs of the processes PATTERN matches still running
# after at most 5 s, on one line (run_test.sh's pid files see a's PEs only)
survivors() {
  local i left
  for ((i = 0; i < 10; i++)); do
    left=$(pgrep -f "$1" | tr '\n' ' ')
    [[ -z $left ]] && break
    sleep 0.5
  done
  echo "$left"
}
v4gid_tag='{v4gid}'
failed=0
while IFS=$'\t' read -r -a f; do
  ((${#f[@]})) || continue
  id=${f[0]} np=${f[1]} limit=${f[2]} prog=${f[3]}
  before=$(packets)
  counters >/tmp/counters-a.before
  ssh -n -F /tmp/ssh/config rxe-b "$(declare -f counters); counters=$counters counters" >/tmp/counters-b.before
  start=$(date +%s.%N)
  export RXE_STDOUT=/results/logs/$id.stdout RXE_STDERR=/results/logs/$id.stderr
  opts=("${f[@]:4}")
  opts=("${opts[@]//"$v4gid_tag"/${v4gid##*/}}") # the plan's {v4gid}: the IPv4 GID's index
  # hrc_*, hud_*: MPICH's Hydra (PMI); src_*, sud_*: Slurm's srun (PMIx or PMI); the others
  # Open MPI's mpirun (PMIx)
  launcher=$REPO/scripts/rxe/mpirun.sh
  [[ $id == h* ]] && launcher=$REPO/scripts/rxe/hydra.sh
  [[ $id == s* ]] && launcher=$REPO/scripts/rxe/srun.sh
  timeout -k 5 $((limit + 30)) bash "$REPO/test/shmem/run_test.sh" --np "$np" --timeout "$limit" \
    "${opts[@]}" "$launcher" "$BINDIR/$prog" >"/results/logs/$id.log" 2>&1 </dev/null
  status=$?
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
  # no PE may outlive the launcher, in either guest (b's check rides on the ssh that reads its
  # counters below: an ssh to b takes seconds under TCG)
  pes="^$BINDIR/$prog( |\$)"
  left_a=$(survivors "$pes")
  # what the library said about itself (SHMEM_INFO=1): nodes, device, transport
  said=$(sed -n 's/^ *PEs: \([^,]*\), \([0-9]*\) on this node.*/\1 PEs, \2 per node;/p
    s/^ *RDMA device: \([^;]*\);.*/\1;/p; s/^ *transport: \([a-z]*\) .*/transport \1/p' \
    "$RXE_STDOUT" | tr '\n' ' ' | sed 's/[ ;]*$//')
  counters >/tmp/counters-a.after
  ssh -n -F /tmp/ssh/config rxe-b "$(declare -f counters survivors); counters=$counters counters;
    echo \"left \$(survivors $(printf %q "$pes"))\"" >/tmp/after-b
  grep -v '^left ' /tmp/after-b >/tmp/counters-b.after
  left_b=$(sed -n 's/^left //p' /tmp/after-b)
  if [[ -n ${left_a// /}${left_b// /} ]]; then # whatever is left is named and killed
    echo "FAILED here: PEs still running 5 s after the launcher returned:" \
      "${left_a:+rxe-a: $left_a}${left_b:+rxe-b: $left_b}" >>"/results/logs/$id.log"
    pkill -KILL -f "$pes"
    ssh -n -F /tmp/ssh/config rxe-b "pkill -KILL -f $(printf %q "$pes")"
    status=1
  fi
  {
    echo "rxe-a: $(counters_diff /tmp/counters-a.before /tmp/counters-a.after)"
    echo "rxe-b: $(counters_diff /tmp/counters-b.before /tmp/counters-b.after)"
  } >"/results/logs/$id.counters"
  if ((status == 0)); then word=PASS; else word=FAIL failed=1; fi
  echo "$word $id $secs" >>/results/results
  progress "$word $id (${secs} s, $(($(packets) - before)) packets on a's rxe0)${said:+: $said}"
done </results/plan
progress "done ($(uptime_s) s after boot)"
exit $failed
