#!/usr/bin/env bash
# perf/ucx/limits.sh [ITERATIONS [BATCH]]   (defaults 1000, 64; PASSES=3 interleaved passes)
# The two limits of the model across nodes over RC, side by side, in side_by_side.sh's row names:
#   verbs  perf/hw/verbs_rc.c: ibv_post_send + ibv_poll_cq (the model executes inside the post),
#          the limit side_by_side.sh prints today
#   raw    perf/hw/raw_rc.cc: the WQE written into the send queue by lib/transport/ib, doorbell
#          record and doorbell store, CQEs read by owner bit - the path hoshmem and UCX's rc_mlx5
#          take (the model executes in its doorbell thread or the store's fault): the same-path
#          limit; every AMO as the WQE hoshmem writes (masked atomics for 4-byte and bitwise ones)
# Both: two processes, each a node of its own on a fresh softhca fabric, unpinned (as
# side_by_side.sh runs them); each cell the best of PASSES runs (a run's value is already the best
# of 5 timed loops). Latencies in us (lower is better), rates in Mops/s; raw/verbs > 1 means the
# raw path is slower (latency) or faster (rate). Numbers, not a test.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
softhca="$root/test/softhca/with-softhca"
iters=${1:-1000} batch=${2:-64} passes=${PASSES:-3}
work=$(mktemp -d /tmp/limits.XXXXXX)
token="lim$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')"
trap 'rm -rf "$work"; rm -f /dev/shm/softhca."$token"*' EXIT
echo "== compiling perf/hw/verbs_rc.c and perf/hw/raw_rc.cc" >&2
cc -O2 -I"$root/perf/hw" "$root/perf/hw/verbs_rc.c" -o "$work/verbs_rc" -libverbs || exit 1
c++ -std=c++20 -O2 -I"$root" "$root/perf/hw/raw_rc.cc" "$root/lib/transport/ib/queue.cc" \
  "$root/lib/transport/ib/wqe.cc" "$root/lib/atomics/hca_encoding.cc" -o "$work/raw_rc" \
  -libverbs -lmlx5 || exit 1
"$softhca" true || exit 1
n=0
for pass in $(seq "$passes"); do
  for prog in verbs_rc raw_rc; do
    n=$((n + 1))
    echo "== pass $pass: $prog $iters $batch" >&2
    SOFTHCA_FABRIC="$token-$n" timeout 600 "$softhca" "$work/$prog" "$iters" "$batch" \
      >"$work/$prog.$pass" 2>"$work/err" || { echo "$prog failed:" >&2; tail -3 "$work/err" >&2; }
    rm -f /dev/shm/softhca."$token-$n"*
  done
done
echo "# model limits over RC, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $iters iterations, batch $batch, best of $passes passes"
printf '%-28s %8s %7s %10s %10s %9s\n' benchmark size unit verbs raw raw/verbs
cat "$work"/verbs_rc.* | sed 's/^/V /' >"$work/all"
cat "$work"/raw_rc.* | sed 's/^/R /' >>"$work/all"
awk '
  function row(kind, name, size,   t) {  # side_by_side.sh names: put_lat, amo_long_add_lat, ...
    if (name == "put" || name == "get") return name "_lat"
    if (name == "put_nbi") return "put_nbi_rate"
    sub(/^amo_/, "", name)
    return "amo_" (size == 4 ? "int" : "long") "_" name "_" (kind == "lat" ? "lat" : "rate")
  }
  {
    key = row($2, $3, $4) SUBSEP $4
    v = $2 == "lat" ? $5 / 1000 : $5  # ns -> us
    if (!(key in seen)) { seen[key] = 1; order[++k] = key; unit[key] = $2 == "lat" ? "us" : "Mops/s" }
    better = ($1, key) in val && ($2 == "lat" ? v >= val[$1, key] : v <= val[$1, key])
    if (!better) val[$1, key] = v
  }
  END {
    for (i = 1; i <= k; i++) {
      key = order[i]; split(key, p, SUBSEP)
      v = ("V", key) in val ? val["V", key] : ""; r = ("R", key) in val ? val["R", key] : ""
      printf "%-28s %8s %7s %10s %10s %9s\n", p[1], p[2], unit[key], v == "" ? "-" : sprintf("%.4g", v),
        r == "" ? "-" : sprintf("%.4g", r), v == "" || r == "" || v == 0 ? "-" : sprintf("%.2f", r / v)
    }
  }' "$work/all"
