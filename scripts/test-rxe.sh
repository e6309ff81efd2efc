#!/usr/bin/env bash
# The third command of README.md: hoshmem's multi-PE tests over real verbs, the Linux kernel's
# soft-RoCE (rdma_rxe), in a QEMU guest, for machines without an RDMA device.
#
#   scripts/test-rxe.sh [NAME...]       NAME: a program (amo, lock, ...), a test (ud_amo_np4) or
#                                       a mode (rc, ud, ring, udnode; with names: only their runs
#                                       in it);
#                                       default: every test of the table below
#   scripts/test-rxe.sh two [NAME...]   the same with two guests and Open MPI's mpirun, MPICH's
#                                       Hydra for the modes hrc and hud, or Slurm's srun for the
#                                       modes src and sud (below)
#
# Installs what is missing (scripts/debian-packages.txt and scripts/rxe/debian-packages.txt),
# takes Debian's own kernel and its modules out of the linux-image package (downloaded with
# apt-get, not installed) and builds a small initramfs (busybox, virtio, 9p, overlay, rdma_rxe,
# ib_uverbs) in build/rxe/ (kept for the next run), builds the test programs with Bazel, and boots
# one guest (QEMU, TCG unless KVM is available) that sees this machine's root read-only over 9p
# (its /tmp, /run and /dev/shm are its own tmpfs: the checkout and Bazel's output base come as
# 9p shares of their own at their host paths, so the checkout may be anywhere; a guest that
# cannot see what it must run stops the command with one line) and runs scripts/rxe/guest-run.sh: rxe0 on eth0, then each test through test/shmem/run_test.sh
# with HOSHMEM_PES_PER_NODE=1 (every PE its own node, all traffic over rxe0), in all-HW mode over
# RC, in all-SW mode over UD, and in all-SW mode over RC with the AMOs through the receive rings
# (HOSHMEM_AM=ring); and over UD with 2 PEs per node and one server per node (udnode:
# HOSHMEM_PES_PER_NODE=2 HOSHMEM_PROGRESS=node). Prints a line per test, the end of each failing test's log, then
# "N passed, N failed" and the time taken; exits non-zero if a test failed or the guest did not
# finish. Bazel's output goes to build/logs/test-rxe.log, the guest's console to
# build/rxe/console.log, the results and every test's log to build/rxe/results/.
#
# `two`: two guests, rxe-a (10.0.0.1) and rxe-b (10.0.0.2), each with rxe0 on its eth0 (MTU
# 9000), linked by one TCP connection on 127.0.0.1 (QEMU's stream netdev: nothing leaves this
# machine, and no frame is lost: a guest that falls behind slows its peer, as on the PFC Ethernet
# RoCE is deployed on; RXE_LINK=dgram: a pair of UDP sockets, which drop frames whenever a guest
# falls behind, up to 18% of them under TCG, and Debian 6.1's rxe then stalls RDMA reads of
# 1 MiB for minutes; docs/testing.md), and a real launcher across them: Open MPI's mpirun in rxe-a
# starts orted in rxe-b with ssh (the ssh server comes from Debian's openssh-server package, downloaded with apt-get
# and unpacked into build/rxe/sshd, not installed: installing it would start an ssh server on
# this machine; keys are made at boot in each guest's tmpfs). One PE per guest (two for 4 PEs),
# no HOSHMEM_PES_PER_NODE: the library learns from PMIx which PEs share its node, and
# HOSHMEM_RC_TIMEOUT=21 (an ACK can take over a second between TCG guests; see two-run.sh).
# The guests run scripts/rxe/two-run.sh, the launcher is scripts/rxe/mpirun.sh (hrc and hud:
# scripts/rxe/hydra.sh, Hydra's proxy started in rxe-b over the same ssh; src and sud:
# scripts/rxe/srun.sh, srun --mpi=pmix or --mpi=pmi2 against slurmctld in rxe-a and slurmd in
# each guest, with munged and a key made at boot, started only when such a test is selected:
# installed here from Debian's packages, the system's own daemons are never started); consoles in
# build/rxe/console-{a,b}.log, results and logs in build/rxe/two/ (with each test's changes to
# both guests' rxe0 hw_counters and eth0 statistics: logs/ID.counters; the Slurm logs in slurm/).
#
# Env: RXE_TIMEOUT (s for the whole guest, default 2700; two: 3600), RXE_MEM (MiB per guest,
#      default 2048), RXE_SMP (vCPUs per guest, default 2; two: 1, as each guest has one PE or two
#      and this machine's cores run both guests); two: RXE_MTU_A, RXE_MTU_B (each guest's eth0
#      MTU, default 9000), RXE_LINK (stream or dgram, default stream); RXE_PERF (a test ID, or an
#      extended regex of IDs: the guest profiles those tests with perf, every CPU, kernel and
#      programs, into results/logs/ID.perf.txt; one guest only).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
begin=$SECONDS
two=0
if [[ ${1:-} == two ]]; then two=1; shift; fi
filters=("$@")

# ---- the tests: MODE NP PROGRAM [TIMEOUT_S [run_test.sh options...]] ----
# rc: all-HW mode (every AMO by the HCA) over RC; ud: all-SW mode, AMOs as UD messages executed by
# the target's CPU, RMA over UD as well. The guest's default heap is SHMEM_SYMMETRIC_SIZE=64M
# (rxe pins registered memory: the default 1G gets the guest OOM-killed). SHMEM_INFO=1 on the
# contended AMOs: over UD every PE says at finalize what its traffic cost (resends, timeouts,
# duplicates, progress-thread wake-ups), which the guest sums on the test's line; on the 1 MiB
# transfers too; on both, HOSHMEM_UD_DEBUG_MS: a wait of 20 s prints each peer's state to stderr
# (a hang with no datagram lost was a window-full wait that missed its wake-up; one run of five
# after that fix still ran out of time on amo_contention -np 2: the next one says where).
die_re='^oshrun:.PE.[0-9]+.died.from.SIG' # run_test.sh options: no spaces
table() {
  local m
  for m in rc ud; do
    cat <<TESTS
$m 2 amo
$m 4 amo
$m 2 amo_contention 240 --env SHMEM_INFO=1 --env HOSHMEM_UD_DEBUG_MS=20000
$m 4 amo_contention 240 --env SHMEM_INFO=1 --env HOSHMEM_UD_DEBUG_MS=20000
$m 2 rma_typed
$m 2 fence_amo_put
$m 4 fence_amo_put
$m 2 pitfall_1_implied_quiet
$m 2 signal_basic
$m 2 put_signal_peers 240 --expect-output put_signal_peers:.OK.on.{np}.PEs
$m 4 put_signal_peers 240 --expect-output put_signal_peers:.OK.on.{np}.PEs
$m 2 sync_families
$m 2 pitfall_9_team_immediate
$m 2 lock
$m 4 lock
$m 2 fail_sigkill 60 --expect-status nonzero --no-survivors --expect-stderr ${die_re}KILL
$m 2 fail_abort 60 --expect-status nonzero --no-survivors --expect-stderr ${die_re}ABRT
TESTS
    # Over RC, RMA from 0 bytes to 64 MiB (rma_large) and the large reduction program (~20 s
    # each); over UD under TCG, rma_large takes more than 5 min and coll_reduce up to 5: there
    # the sized and mem routines (rma_sized) and pitfall_3_completion's 1 MiB transfers stand for
    # the larger size classes, and pitfall_9_team_immediate's sum_reduce for the reductions.
    case $m in
      rc) cat <<TESTS ;;
rc 2 pitfall_3_completion
rc 2 rma_large 300 --env SHMEM_SYMMETRIC_SIZE=100M
rc 2 coll_reduce 400 --env SHMEM_SYMMETRIC_SIZE=16M
TESTS
      ud) cat <<TESTS ;;
ud 2 pitfall_3_completion 400 --env SHMEM_INFO=1 --env HOSHMEM_UD_DEBUG_MS=20000
ud 2 rma_sized
TESTS
    esac
  done
  # ring: all-SW mode over RC with the messages (AMOs) through the receive rings (HOSHMEM_AM=ring:
  # HCA fetch-adds, RDMA writes, writes with immediate into a shared receive queue).
  cat <<TESTS
ring 2 amo 240 --env SHMEM_INFO=1
ring 4 amo
ring 4 amo_contention 240 --env SHMEM_INFO=1
ring 2 fence_amo_put
ring 2 lock
ring 2 amo_busy_target
ring 2 fail_sigkill 60 --expect-status nonzero --no-survivors --expect-stderr ${die_re}KILL
TESTS
  # udnode: all-SW mode over UD, 2 nodes of 2 PEs, every request for a node's PEs served by its
  # first PE (HOSHMEM_PROGRESS=node): the second PE of each node is never sent one.
  cat <<TESTS
udnode 4 amo 240 --env SHMEM_INFO=1 --expect-output hoshmem:.PE.1:.UD:.*.0.requests.delivered --expect-output hoshmem:.PE.3:.UD:.*.0.requests.delivered
udnode 4 amo_contention 240 --env SHMEM_INFO=1 --env HOSHMEM_UD_DEBUG_MS=20000
udnode 4 put_signal_peers 240 --expect-output put_signal_peers:.OK.on.{np}.PEs
udnode 4 lock
TESTS
}
# Two guests: 2 PEs (one per guest) and some on 4 (two per guest: a peer on the same node and
# one on the other). The first test of each mode has the library say what it uses (SHMEM_INFO=1)
# and checks that it sees the PEs on two nodes and uses rxe0's IPv4 RoCE v2 GID ({v4gid}: its
# index, which two-run.sh fills in).
table_two() {
  local m
  for m in rc ud; do
    cat <<TESTS
$m 2 amo 240 --env SHMEM_INFO=1 --expect-output PEs:.2,.1.on.this.node --expect-output rxe0:1.*GID.index.{v4gid}\\)
$m 4 amo 240 --env SHMEM_INFO=1 --expect-output PEs:.4,.2.on.this.node
$m 2 amo_contention 600 --env SHMEM_INFO=1
$m 4 amo_contention 600 --env SHMEM_INFO=1
$m 2 rma_typed
$m 2 rma_sized
$m 2 fence_amo_put
$m 2 sync_families
$m 2 pitfall_9_team_immediate
$m 2 lock
$m 4 lock
TESTS
  done
  # Messages of many packets, and a heap that cannot be pinned: two PEs in a 2 GiB guest with
  # the default 1G heaps each must stop at shmem_init with one line, not be OOM-killed.
  cat <<TESTS
rc 2 pitfall_3_completion 400
rc 2 rma_large 400 --env SHMEM_SYMMETRIC_SIZE=100M
ud 2 pitfall_3_completion 400 --env SHMEM_INFO=1
rc 4 info 240 --env SHMEM_SYMMETRIC_SIZE=1G --expect-status nonzero --expect-stderr ^hoshmem:.PE.[0-9]+:.shmem_init:.registering.the.symmetric.heap.with.rxe0.pins.it:.[0-9]+.MiB.for.2.PE
TESTS
  # MPICH's Hydra instead of mpirun (scripts/rxe/hydra.sh: the PMI wire protocol, PMI-1 unless
  # HOSHMEM_PMI=pmi2): hrc all-HW over RC, hud all-SW over UD; a PE killed (Hydra names its
  # guest and signal) and shmem_global_exit end the job with a non-zero status. (No
  # --no-survivors: a PE's pid file stays in its own guest; two-run.sh looks in both instead.)
  cat <<TESTS
hrc 2 amo 240 --env SHMEM_INFO=1 --expect-output PEs:.2,.1.on.this.node --expect-output launcher:.pmi-1
hrc 4 amo 240 --env SHMEM_INFO=1 --env HOSHMEM_PMI=pmi2 --expect-output PEs:.4,.2.on.this.node --expect-output launcher:.pmi-2
hrc 2 rma_typed
hrc 4 lock
hrc 2 fail_sigkill 60 --expect-status nonzero --expect-output RUNNING.AT.rxe-b --expect-output EXIT.CODE:.9
hrc 2 launch_global_exit 60 --expect-status 255 --expect-stderr ^PE.[0-9]+:.calling.shmem_global_exit
hud 2 amo 240 --env SHMEM_INFO=1 --expect-output PEs:.2,.1.on.this.node
hud 4 amo_contention 600 --env SHMEM_INFO=1
hud 2 sync_families
TESTS
  # Slurm's srun (scripts/rxe/srun.sh) against slurmd in each guest: src all-HW over RC, sud all-SW
  # over UD. PMIx unless SRUN_MPI=pmi2 (Slurm's PMI-2 plugin: PMI-1, or PMI-2 with
  # HOSHMEM_PMI=pmi2). A PE that dies ends the step for sure only with srun -K: the PMI-2 plugin
  # never ends it itself, the PMIx one when its PMIx server reports the PE's lost connection, which
  # it did in 3 runs of 4 across these guests (in the fourth the other PE waited until the timeout).
  # The PE that dies or calls shmem_global_exit is the last, in rxe-b; srun names it (and whether a
  # PE outlives the job, two-run.sh checks in both guests). Statuses: a killed PE 137 or 143 (srun
  # ends the others with SIGTERM; 137 when the PMIx plugin was first); shmem_global_exit(7) 7 under
  # PMIx, 137 under PMI-2 (the plugin takes PMI's abort as "kill the step" and drops the status).
  cat <<TESTS
src 2 amo 240 --env SHMEM_INFO=1 --expect-output PEs:.2,.1.on.this.node --expect-output launcher:.pmix
src 4 amo 240 --env SHMEM_INFO=1 --env SRUN_MPI=pmi2 --env HOSHMEM_PMI=pmi2 --expect-output PEs:.4,.2.on.this.node --expect-output launcher:.pmi-2
src 2 rma_typed
src 4 lock
src 2 fail_sigkill 60 --env SRUN_OPTS=--kill-on-bad-exit=1 --expect-status nonzero --expect-stderr ^srun:.error:.rxe-b:.task.1:.Killed
src 2 launch_global_exit 60 --env GLOBAL_EXIT_STATUS=7 --expect-status 7 --expect-stderr ^PE.1:.calling.shmem_global_exit --expect-stderr ^srun:.error:.rxe-b:.task.1:.Exited.with.exit.code.7
src 4 fail_sigkill 60 --env SRUN_MPI=pmi2 --env SRUN_OPTS=--kill-on-bad-exit=1 --expect-status 143 --expect-stderr ^srun:.error:.rxe-b:.task.3:.Killed
src 4 launch_global_exit 60 --env SRUN_MPI=pmi2 --env GLOBAL_EXIT_STATUS=7 --expect-status 137 --expect-stderr ^PE.3:.calling.shmem_global_exit --expect-stderr ^srun:.error:.rxe-b:.task.3:.Exited.with.exit.code.7
sud 2 amo 240 --env SHMEM_INFO=1 --expect-output PEs:.2,.1.on.this.node
sud 4 amo_contention 600 --env SHMEM_INFO=1
sud 2 sync_families 240 --env SHMEM_INFO=1 --env SRUN_MPI=pmi2 --expect-output PEs:.2,.1.on.this.node --expect-output launcher:.pmi-1
TESTS
}
# wanted MODE PROGRAM ID: selected by the command's arguments? Modes (rc, ud) and the other names
# (a program, or a test's ID such as ud_amo_contention_np4) narrow each other: `ud amo` is the
# UD runs of amo; names of one kind add up (`amo lock`: both programs, in both modes).
wanted() {
  local a mode_ok=1 name_ok=1
  for a in "${filters[@]+"${filters[@]}"}"; do
    case $a in rc | ud | ring | udnode | hrc | hud | src | sud) mode_ok=0 ;; *) name_ok=0 ;; esac
  done
  for a in "${filters[@]+"${filters[@]}"}"; do
    case $a in
      rc | ud | ring | udnode | hrc | hud | src | sud) [[ $a == "$1" ]] && mode_ok=1 ;;
      *) [[ $a == "$2" || $a == "$3" ]] && name_ok=1 ;;
    esac
  done
  ((mode_ok && name_ok))
}

scripts/deps.sh || exit 1
missing=()
while read -r pkg; do
  [[ -z $pkg || $pkg == \#* ]] && continue
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done <scripts/rxe/debian-packages.txt
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}" >&2
  sudo=""; [[ $(id -u) -ne 0 ]] && sudo=sudo
  # Installing munge and the Slurm daemons would start the system's own on this machine and leave
  # them running (only the guests run Slurm): policy-rc.d's 101 tells the packages not to.
  policy=""
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    policy=/usr/sbin/policy-rc.d
    trap '$sudo rm -f "$policy"' EXIT
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null && $sudo chmod 755 "$policy"
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    exit 1
  [[ -z $policy ]] || $sudo rm -f "$policy"
  trap - EXIT
fi
source scripts/quiet-bazel.sh
log=build/logs/test-rxe.log
guest=build/rxe
mkdir -p build/logs "$guest"
: >"$log"

# ---- the guest: Debian's kernel and modules, a busybox initramfs ----
modules="virtio_pci virtio_net 9pnet_virtio 9p overlay crc32_generic rdma_rxe ib_uverbs"
module_order() { # MODDIR MODULE...: the modules' .ko files, each after its dependencies
  local dir=$1; shift
  local -A done_=()
  visit() {
    local m=$1 ko dep
    [[ -n ${done_[$m]:-} ]] && return 0
    done_[$m]=1
    ko=$(find "$dir/kernel" -name "$m.ko*" -o -name "${m//_/-}.ko*" | head -1)
    [[ -n $ko ]] || { echo "kernel module $m not found in $dir" >&2; return 1; }
    for dep in $(readelf -p .modinfo "$ko" | sed -n 's/.*depends=//p' | tr , ' '); do
      visit "$dep" || return 1
    done
    echo "$ko"
  }
  for m in "$@"; do visit "$m" || return 1; done
}
prepare_guest() {
  local kpkg kver stamp deb root ko
  kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/ { print $2; exit }')
  [[ -n $kpkg ]] || { echo "no linux-image-amd64 in apt's lists (apt-get update?)"; return 1; }
  kver=${kpkg#linux-image-}
  stamp="$kpkg $modules $({ cat scripts/rxe/init; declare -f prepare_guest module_order; } | sha1sum | cut -c1-12)"
  if [[ -f $guest/initramfs.gz && -f $guest/vmlinuz && $(cat "$guest/stamp" 2>/dev/null) == "$stamp" ]]; then
    echo "   cached: $kpkg"
    return 0
  fi
  rm -f "$guest/stamp"
  mkdir -p "$guest/debs"
  chmod 777 "$guest/debs" # apt's _apt user downloads into it
  deb=$(ls "$guest/debs/${kpkg}_"*.deb 2>/dev/null | head -1)
  if [[ -z $deb ]]; then
    (cd "$guest/debs" && apt-get download -qq "$kpkg") >>"$log" 2>&1 || {
      sudo=""; [[ $(id -u) -ne 0 ]] && sudo=sudo
      $sudo apt-get update -qq >>"$log" 2>&1
      (cd "$guest/debs" && apt-get download -qq "$kpkg") >>"$log" 2>&1
    } || { echo "apt-get download $kpkg failed (see $log)"; return 1; }
    deb=$(ls "$guest/debs/${kpkg}_"*.deb | head -1)
  fi
  rm -rf "$guest/kernel" && dpkg-deb -x "$deb" "$guest/kernel" || return 1
  cp "$guest/kernel/boot/vmlinuz-$kver" "$guest/vmlinuz" || return 1
  root=$guest/initramfs
  rm -rf "$root" && mkdir -p "$root"/{bin,sbin,proc,sys,dev,tmp,modules}
  cp /bin/busybox "$root/bin/busybox"
  for a in $(/bin/busybox --list); do [[ $a == busybox ]] || ln -sf busybox "$root/bin/$a"; done
  module_order "$guest/kernel/lib/modules/$kver" $modules >"$guest/modules.txt" || return 1
  : >"$root/modules.order"
  while read -r ko; do
    case $ko in
      *.ko.xz) xz -dc "$ko" >"$root/modules/$(basename "${ko%.xz}")" ;;
      *) cp "$ko" "$root/modules/" ;;
    esac
    basename "${ko%.xz}" >>"$root/modules.order"
  done <"$guest/modules.txt"
  cp scripts/rxe/init "$root/init"
  chmod +x "$root/init"
  (cd "$root" && find . | /bin/busybox cpio -o -H newc 2>/dev/null) | gzip -1 >"$guest/initramfs.gz" || return 1
  rm -rf "$guest/kernel"
  echo "$stamp" >"$guest/stamp"
  echo "   $kpkg, $(wc -l <"$root/modules.order") modules"
}
# two guests: sshd and the library it needs, out of Debian's packages (downloaded, not installed)
prepare_sshd() {
  local dir=$guest/sshd pkg deb
  if [[ -x $dir/usr/sbin/sshd && -e $dir/usr/lib/x86_64-linux-gnu/libwrap.so.0 ]]; then
    echo "   cached: $(ls "$guest/debs" | grep -m1 openssh-server)"
    return 0
  fi
  mkdir -p "$guest/debs"
  chmod 777 "$guest/debs"
  rm -rf "$dir"
  for pkg in openssh-server libwrap0; do
    deb=$(ls -t "$guest/debs/${pkg}_"*.deb 2>/dev/null | head -1)
    if [[ -z $deb ]]; then
      (cd "$guest/debs" && apt-get download -qq "$pkg") >>"$log" 2>&1 ||
        { echo "apt-get download $pkg failed (see $log)"; return 1; }
      deb=$(ls -t "$guest/debs/${pkg}_"*.deb | head -1)
    fi
    dpkg-deb -x "$deb" "$dir" || return 1
    echo "   ${deb##*/}"
  done
}
step "guest: kernel and initramfs ($guest)"
prepare_guest || exit 1

# ---- the plan and the build ----
plan=()
programs=()
while read -r mode np prog limit opts; do
  wanted "$mode" "$prog" "${mode}_${prog}_np$np" || continue
  case $mode in
    rc | hrc | src) env="--env HOSHMEM_ATOMICS=hw --env HOSHMEM_TRANSPORT=rc" ;;
    ring) env="--env HOSHMEM_ATOMICS=sw --env HOSHMEM_TRANSPORT=rc --env HOSHMEM_AM=ring" ;;
    udnode) env="--env HOSHMEM_ATOMICS=sw --env HOSHMEM_TRANSPORT=ud --env HOSHMEM_PES_PER_NODE=2 --env HOSHMEM_PROGRESS=node" ;;
    *) env="--env HOSHMEM_ATOMICS=sw --env HOSHMEM_TRANSPORT=ud" ;;
  esac
  line=$(printf '%s\t%s\t%s\t%s' "${mode}_${prog}_np$np" "$np" "${limit:-240}" "$prog")
  set -f
  for o in $env ${opts:-}; do line+=$'\t'"$o"; done
  set +f
  plan+=("$line")
  [[ " ${programs[*]} " == *" //test/shmem:$prog "* ]] || programs+=("//test/shmem:$prog")
done < <(if ((two)); then table_two; else table; fi)
((${#plan[@]})) || { echo "no test matches: ${filters[*]}"; exit 2; }

step "building oshrun and ${#programs[@]} test programs (Bazel's output: $log)"
bazel_logged "$log" build //tools/oshrun:oshrun //test/shmem:info "${programs[@]}"
status=$?
bindir=$(bazel info bazel-bin 2>>"$log")
output_base=$(bazel info output_base 2>>"$log")
bazel shutdown >/dev/null 2>&1
if ((status != 0)) || [[ -z $bindir ]]; then
  show_build_errors "$log"
  echo "0 passed, ${#plan[@]} failed (the build failed)"
  exit 1
fi

# ---- the run ----
repo=$(pwd -P)
if ((two)); then results=$guest/two; else results=$guest/results; fi
rm -rf "$results" && mkdir -p "$results"
printf '%s\n' "${plan[@]}" >"$results/plan"
# What the guest runs lives at host paths: the checkout and Bazel's output base (the programs).
# The guest's /tmp, /run and /dev/shm are its own tmpfs, so each of the two comes as a 9p share
# of its own, mounted read-only at its host path by scripts/rxe/init (one that lies inside the
# other needs no share of its own): a checkout works from any directory, /tmp included.
candidates=("$repo" "$(cd "$output_base" 2>/dev/null && pwd -P)")
shares=()
for dir in "${candidates[@]}"; do
  [[ -n $dir ]] || continue
  covered=0
  for d in "${candidates[@]}"; do [[ -n $d && $dir == "$d"/* ]] && covered=1; done # inside
  for d in "${shares[@]+"${shares[@]}"}"; do [[ $dir == "$d" ]] && covered=1; done  # twice
  ((covered)) || shares+=("$dir")
done
share_args=()
: >"$results/mounts"
for i in "${!shares[@]}"; do
  share_args+=(-virtfs "local,path=${shares[i]},mount_tag=share$i,security_model=none,readonly=on,multidevs=remap")
  printf 'share%d %s\n' "$i" "${shares[i]}" >>"$results/mounts"
done
cat >"$results/env" <<ENV
REPO=$repo
OSHRUN=$bindir/tools/oshrun/oshrun
BINDIR=$bindir/test/shmem
RESULTS_HOST=$repo/$results
SSHD_ROOT=$repo/$guest/sshd
WAIT_S=600
RXE_PERF='${RXE_PERF:-}'
ENV
: >"$results/progress"
accel=(-accel tcg,tb-size=256)
if grep -qwE 'vmx|svm' /proc/cpuinfo && [[ -w /dev/kvm ]]; then
  accel=(-accel kvm "${accel[@]}") # QEMU falls back to the next -accel if KVM does not start
fi
if ((two)); then limit=${RXE_TIMEOUT:-3600} smp=${RXE_SMP:-1}
else limit=${RXE_TIMEOUT:-2700} smp=${RXE_SMP:-2}; fi
# boot NAME RUNNER APPEND NETDEV...: one guest in the background (its PID in $booted), running
# the host path RUNNER; console in $guest/console-NAME.log (console.log for the single guest)
boot() {
  local name=$1 runner=$2 append=$3 console=$guest/console${1:+-$1}.log
  shift 3
  timeout -k 10 "$limit" qemu-system-x86_64 -nodefaults -no-reboot -display none -monitor none \
    "${accel[@]}" -cpu max -smp "$smp" -m "${RXE_MEM:-2048}" \
    -kernel "$guest/vmlinuz" -initrd "$guest/initramfs.gz" \
    -append "console=ttyS0 panic=-1 quiet rxe.run=$repo/$runner $append" \
    -serial "file:$console" "$@" \
    -device isa-debug-exit,iobase=0xf4,iosize=4 \
    -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
    -virtfs "local,path=$repo/$results,mount_tag=results,security_model=none,multidevs=remap" \
    "${share_args[@]}" \
    </dev/null >"$guest/qemu${name:+-$name}.log" 2>&1 &
  booted=$!
}
# guest_end NAME STATUS: why the guest's QEMU ended, if not with its runner's status 0 or 1
# (isa-debug-exit: QEMU exits with 2*N+1 for the runner's status N; 124/137: our timeout)
guest_end() {
  local what="the guest${1:+ rxe-$1}"
  case $2 in
    124 | 137) echo "$what did not finish within ${limit} s (timeout)" ;;
    1 | 3) ;;
    *) if (($2 % 2)); then echo "$what: its runner ended with status $((($2 - 1) / 2))"
       else echo "$what: QEMU ended with status $2 (see $guest/qemu${1:+-$1}.log)"; fi ;;
  esac
}
# stop_if_fatal QEMU_PID...: the guest could not run what it must (scripts/rxe/init or the
# runner's first check wrote /results/fatal): that one line, no test results, exit 2
stop_if_fatal() {
  [[ -s $results/fatal ]] || return 0
  sleep 1 # the guest powers off on its own; the other guest of `two` would wait for it
  kill "$@" 2>/dev/null
  wait "$@" 2>/dev/null
  echo "the soft-RoCE guest cannot run the tests: $(head -1 "$results/fatal")"
  exit 2
}
declare -A shown=()
show_progress() { # FILE...: the lines of each FILE not shown yet
  local f n
  for f in "$@"; do
    [[ -e $f ]] || continue
    n=$(wc -l <"$f")
    ((n > ${shown[$f]:-0})) && sed -n "$((${shown[$f]:-0} + 1)),${n}p" "$f" | sed "s/^/   $((SECONDS - begin))s: /"
    shown[$f]=$n
  done
}
run_start=$SECONDS
if ((two)); then
  step "the ssh server for rxe-b (openssh-server, unpacked into $guest/sshd)"
  prepare_sshd || exit 1
  # The link: the guests' Ethernet frames between the two QEMUs over 127.0.0.1, nowhere else.
  # stream (default): one TCP connection, lossless like the PFC Ethernet RoCE is deployed on: a
  # guest that cannot keep up slows its peer down. dgram: a pair of UDP sockets, which drop
  # frames whenever a guest falls behind (the header above).
  link_kind=${RXE_LINK:-stream}
  for _ in $(seq 20); do
    port=$((20000 + RANDOM % 30000))
    [[ -z $(ss -Hluotn "( sport = :$port or sport = :$((port + 1)) )" 2>/dev/null) ]] && break
  done
  case $link_kind in
    stream)
      link() { echo "stream,id=n0,server=$1,addr.type=inet,addr.host=127.0.0.1,addr.port=$port"; }
      link_a=$(link on) link_b=$(link off) link_text="TCP 127.0.0.1:$port" ;;
    dgram)
      link() { echo "dgram,id=n0,local.type=inet,local.host=127.0.0.1,local.port=$1,remote.type=inet,remote.host=127.0.0.1,remote.port=$2"; }
      link_a=$(link "$port" $((port + 1))) link_b=$(link $((port + 1)) "$port")
      link_text="UDP 127.0.0.1:$port <-> :$((port + 1))" ;;
    *) echo "RXE_LINK=$link_kind: expected stream or dgram"; exit 2 ;;
  esac
  step "running ${#plan[@]} tests on two guests (${accel[1]%%,*}, $smp vCPU each; link: $link_text; consoles: $guest/console-{a,b}.log; at most ${limit} s)"
  boot a scripts/rxe/two-run.sh "rxe.role=a rxe.mtu=${RXE_MTU_A:-9000}" \
    -netdev "$link_a" -device virtio-net-pci,netdev=n0,mac=52:54:00:0a:00:01,romfile=
  qemu=$booted
  if [[ $link_kind == stream ]]; then # b connects to a's listening socket
    for _ in $(seq 100); do
      [[ -n $(ss -Hltn "( sport = :$port )" 2>/dev/null) ]] && break
      sleep 0.1
    done
  fi
  boot b scripts/rxe/two-run.sh "rxe.role=b rxe.mtu=${RXE_MTU_B:-9000}" \
    -netdev "$link_b" -device virtio-net-pci,netdev=n0,mac=52:54:00:0a:00:02,romfile=
  qemu_b=$booted
  trap 'kill "$qemu" "$qemu_b" 2>/dev/null; exit 130' INT TERM
  while kill -0 "$qemu" 2>/dev/null || kill -0 "$qemu_b" 2>/dev/null; do
    sleep 2
    show_progress "$results/progress-b" "$results/progress"
    stop_if_fatal "$qemu" "$qemu_b"
  done
  stop_if_fatal "$qemu" "$qemu_b"
  wait "$qemu"
  qrc=$?
  wait "$qemu_b"
  qrc_b=$?
  show_progress "$results/progress-b" "$results/progress"
  guest_end=$(guest_end a "$qrc")
  end_b=$(guest_end b "$qrc_b")
  consoles=("$guest/console-a.log" "$guest/console-b.log")
  if [[ -n $end_b ]]; then
    guest_end+="${guest_end:+; }$end_b"
    qrc=99
  fi
else
  step "running ${#plan[@]} tests in the guest (${accel[1]%%,*}; console: $guest/console.log; at most ${limit} s)"
  boot "" scripts/rxe/guest-run.sh "" -netdev user,id=n0 -device virtio-net-pci,netdev=n0,romfile=
  qemu=$booted
  trap 'kill "$qemu" 2>/dev/null; exit 130' INT TERM
  while kill -0 "$qemu" 2>/dev/null; do
    sleep 2
    show_progress "$results/progress"
    stop_if_fatal "$qemu"
  done
  stop_if_fatal "$qemu"
  wait "$qemu"
  qrc=$?
  show_progress "$results/progress"
  guest_end=$(guest_end "" "$qrc")
  consoles=("$guest/console.log")
fi
run_secs=$((SECONDS - run_start))

passed=0 failed=0 failed_ids=()
declare -A done_ids=()
while read -r word id _; do
  done_ids[$id]=1
  if [[ $word == PASS ]]; then passed=$((passed + 1)); else failed=$((failed + 1)); failed_ids+=("$id"); fi
done < <(cat "$results/results" 2>/dev/null)
notrun=0
for line in "${plan[@]}"; do [[ -n ${done_ids[${line%%$'\t'*}]:-} ]] || notrun=$((notrun + 1)); done
shown_logs=0
for id in "${failed_ids[@]+"${failed_ids[@]}"}"; do
  echo "FAILED $id (log: $results/logs/$id.log)"
  if ((shown_logs < 3)); then
    grep -av '^$' "$results/logs/$id.log" | tail -12 | sed 's/^/    /'
    shown_logs=$((shown_logs + 1))
  fi
done
if [[ -n $guest_end ]]; then
  echo "$guest_end; the console says:"
  for c in "${consoles[@]}"; do
    tr -d '\r' <"$c" | grep -aiE 'rxe-init|panic|fail|error|out of memory|killed' |
      tail -8 | sed "s|^|    ${c##*/}: |"
  done
fi
((notrun)) && echo "$notrun tests did not run (counted as failed)"
failed=$((failed + notrun))
echo "$passed passed, $failed failed"
echo "took $(((SECONDS - begin) / 60)) min $(((SECONDS - begin) % 60)) s" \
  "(the guest$( ((two)) && echo s) from boot to power-off: $((run_secs / 60)) min $((run_secs % 60)) s)"
((failed == 0 && qrc == 1))
