#!/bin/bash
# The guest side of scripts/test-rxe.sh: runs as root in the soft-RoCE guest, in a chroot of the
# host's root (read-only under a tmpfs overlay), with the results share at /results. Brings up
# rxe0 on eth0, then runs every line of /results/plan through the repository's own judge,
# test/shmem/run_test.sh (its timeout per test, the expected status and output of the BUILD
# file's shmem_test). Writes one line per test to /results/progress and /results/results, each
# test's output to /results/logs/ID.log. Exit status: 0 if every test passed, else 1.
set -u
source /results/env # REPO, OSHRUN, BINDIR (host paths, the same inside the guest)
exec >>/results/guest.log 2>&1
progress() { echo "$*" >>/results/progress; }
# The first check: every program of the plan and the judge are visible here (the host's paths,
# shared by scripts/rxe/init); if not, one line for the host (/results/fatal) and no test at all.
while IFS=$'\t' read -r -a f; do
  for need in "$REPO/test/shmem/run_test.sh" "$OSHRUN" "$BINDIR/info" "$BINDIR/${f[3]:-}"; do
    [[ -e $need ]] && continue
    echo "the guest cannot see $need (the host's path; scripts/rxe/init mounts what it shares)" >/results/fatal
    exit 2
  done
done </results/plan

# devtmpfs has no /dev/fd (bash's process substitution needs it)
[[ -e /dev/fd ]] || ln -s /proc/self/fd /dev/fd
ip link set lo up
ip addr add 10.0.0.1/24 dev eth0
ip link set eth0 up
if ! rdma link add rxe0 type rxe netdev eth0; then
  progress "guest: rdma link add rxe0 failed (see $RESULTS_HOST/guest.log)"
  exit 2
fi
# GID 0 (RoCE v2, the IPv6 link-local address) appears once IPv6 has configured eth0
gid=/sys/class/infiniband/rxe0/ports/1/gids/0
for _ in $(seq 100); do
  [[ -r $gid && $(cat "$gid") != 0000:0000:0000:0000:0000:0000:0000:0000 ]] && break
  sleep 0.2
done
ibv_devinfo -v -d rxe0 | grep -E 'state|link_layer|GID\[ *0\]' | head -5
progress "guest: rxe0 up on eth0 ($(cut -d' ' -f1 /proc/uptime) s after boot), GID 0 $(cat "$gid" 2>/dev/null)"

ulimit -l unlimited
export HOSHMEM_PES_PER_NODE=1 SHMEM_SYMMETRIC_SIZE=64M
export TEST_TMPDIR=/tmp
mkdir -p /results/logs
# rxe0's packet counter: each test's line says how many packets it sent over rxe0
counters=/sys/class/infiniband/rxe0/ports/1/hw_counters
packets() { cat "$counters/sent_pkts" 2>/dev/null || echo 0; }
# rxe0's hw_counters ("name value" lines); each test's changes go to logs/ID.counters
counters() { for f in "$counters"/*; do echo "${f##*/} $(cat "$f")"; done; }
counters_diff() { # BEFORE AFTER: the counters that changed, "name +delta" on one line
  awk 'NR == FNR { a[$1] = $2; next } $2 != a[$1] { printf "%s +%d ", $1, $2 - a[$1] }' "$1" "$2"
}
# ud_summary LOG: the library's UD counters of every PE (SHMEM_INFO=1 prints them at finalize),
# summed: what the job's retransmissions and wake-ups were
ud_summary() {
  grep -a '^hoshmem: PE [0-9]*: UD:' "$1" | tr -d ',;()' | awk '
    { for (i = 1; i < NF; i++) if ($i ~ /^[0-9]+$/) {
        w = $(i + 1); if (w == "segments" || w == "replies" || w == "timeouts" || w == "wake-ups" ||
          w == "datagrams" || w == "duplicates") n[w] += $i } }
    END { if (NR) printf "; UD: %d datagrams, %d resent, %d replays, %d timeouts, %d duplicates, %d wake-ups",
            n["datagrams"], n["segments"], n["replies"], n["timeouts"], n["duplicates"], n["wake-ups"] }'
}
# what the library says it uses (device, transport, atomics), once per mode, into info-MODE.log
# (the info program: hello.c, which says it and ends, not the first test's whole run)
failed=0
while IFS=$'\t' read -r -a f; do
  ((${#f[@]})) || continue
  id=${f[0]} np=${f[1]} limit=${f[2]} prog=${f[3]}
  mode=${id%%_*}
  if [[ ! -e /results/info-$mode.log ]]; then
    envs=()
    for ((i = 4; i < ${#f[@]} - 1; i++)); do [[ ${f[i]} == --env ]] && envs+=("${f[i + 1]}"); done
    env "${envs[@]}" SHMEM_INFO=1 timeout 60 "$OSHRUN" -np 2 --bind-to none "$BINDIR/info" \
      >"/results/info-$mode.log" 2>&1 </dev/null
    info=/results/info-$mode.log
    progress "guest: $mode: $(sed -n 's/^  atomicity mode: \([^ ]*\).*/atomicity \1,/p; s/^  transport: \([a-z]*\) .*/transport \1,/p; s/^  RDMA device: \([^;]*\);.*/device \1/p' "$info" | tr '\n' ' ' | sed 's/[ ,]*$//')"
  fi
  before=$(packets)
  counters >/tmp/counters.before
  start=$(date +%s.%N)
  # the outer timeout only guards against run_test.sh itself hanging
  export OSHRUN RXE_STDERR=/results/logs/$id.stderr
  # RXE_PERF: where the guest's CPUs go during the test (kernel and programs, every CPU)
  perf_pid=""
  if [[ -n ${RXE_PERF:-} && $id =~ ^($RXE_PERF)$ ]] && command -v perf >/dev/null; then
    perf record -a -F 250 -o "/tmp/$id.perf" >/dev/null 2>&1 &
    perf_pid=$!
  fi
  timeout -k 5 $((limit + 30)) bash "$REPO/test/shmem/run_test.sh" --np "$np" --timeout "$limit" \
    "${f[@]:4}" "$REPO/scripts/rxe/launch.sh" "$BINDIR/$prog" >"/results/logs/$id.log" 2>&1 </dev/null
  status=$?
  if [[ -n $perf_pid ]]; then
    kill -INT "$perf_pid"
    wait "$perf_pid"
    { perf report -i "/tmp/$id.perf" --stdio --sort comm 2>&1 | grep -v '^$' | head -40
      perf report -i "/tmp/$id.perf" --stdio --sort comm,dso,symbol 2>&1 |
        grep -v '^$' | head -150; } >"/results/logs/$id.perf.txt"
    rm -f "/tmp/$id.perf"
  fi
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
  counters >/tmp/counters.after
  counters_diff /tmp/counters.before /tmp/counters.after >"/results/logs/$id.counters"
  # a job expected to fail must end with one clear line: its stderr has exactly one line, shown
  said=""
  if [[ " ${f[*]:4} " == *" --expect-status "* ]]; then
    lines=$(wc -l <"$RXE_STDERR")
    said=": $(grep -m1 '^oshrun:' "$RXE_STDERR")"
    if ((lines != 1)); then
      said+=" ($lines lines on stderr, expected 1)"
      ((status)) || { status=1; echo "FAILED here: stderr has $lines lines, expected 1:" >>"/results/logs/$id.log"; cat "$RXE_STDERR" >>"/results/logs/$id.log"; }
    fi
  fi
  if ((status == 0)); then
    word=PASS
  else
    word=FAIL failed=1
  fi
  echo "$word $id $secs" >>/results/results
  progress "$word $id (${secs} s, $(($(packets) - before)) packets on rxe0$(ud_summary "/results/logs/$id.log"))$said"
done </results/plan
progress "guest: done ($(cut -d' ' -f1 /proc/uptime) s after boot)"
exit $failed
