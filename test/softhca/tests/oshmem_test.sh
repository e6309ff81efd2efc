#!/usr/bin/env bash
# Open MPI's OSHMEM (Debian's openmpi-bin/libopenmpi-dev 4.1: SPML ucx over Debian's UCX 1.13)
# over the model, every PE a node of its own: a put/AMO/barrier program, compiled here with
# OSHMEM's oshcc, must give exact results at 2 and 4 PEs with UCX_TLS limited to one network
# transport (rc_verbs, rc_mlx5, dc_mlx5, ud_mlx5; RC/DC with UD for wireup only), no shared memory,
# no self/loopback transport. UCX's own log (ep_cfg lines) must show that transport carrying
# every endpoint's traffic. Skipped, saying so, only where OSHMEM or UCX is not installed
# (scripts/debian-packages.txt lists openmpi-bin, libopenmpi-dev, ucx-utils).
#   OSHMEM_TEST_TLS="rc_mlx5 ..."  restricts the transports, OSHMEM_TEST_NP="2" the PE counts.
set -uo pipefail
dir="${TEST_SRCDIR:-}/hoshmem/test/softhca/softlib"
if [[ -n "${TEST_SRCDIR:-}" && -d "$dir" ]]; then
  lib="$dir"
else
  wrap="$(cd "$(dirname "$0")/.." && pwd)/with-softhca"
  "$wrap" true || exit 1  # build the model
  lib="${SOFTHCA_BUILD_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/softhca}"
fi
lib=$(cd "$lib" && pwd -P)
for c in oshcc oshrun ucx_info; do
  command -v $c >/dev/null || {
    echo "SKIPPED: $c is not installed (apt-get install openmpi-bin libopenmpi-dev ucx-utils)"
    exit 0
  }
done
# Short paths: Open MPI's session directory holds unix sockets (108-byte limit).
tmp=$(mktemp -d /tmp/osh.XXXXXX)
token="osh$(od -An -N5 -tx1 /dev/urandom | tr -d ' \n')"
cleanup() { rm -rf "$tmp"; rm -f /dev/shm/softhca."$token"*; }
trap cleanup EXIT
export TMPDIR="$tmp" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_plm_rsh_agent=false   # one host: never ssh

cat >"$tmp/paa.c" <<'CEOF'
/* Exact-result check of puts, AMOs and barriers: prints "OK: <n> PEs" on PE 0 or exits 1. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#define ITERS 5
static long slots[64];
static long counter, incs, cs_winner, bits_or, bits_xor, bits_and, setv, swapv;
int main(void) {
  shmem_init();
  int me = shmem_my_pe(), n = shmem_n_pes(), bad = 0;
  if (n > 64) shmem_global_exit(2);
  for (int i = 0; i < 64; i++) slots[i] = -1;
  counter = incs = 0; cs_winner = -1; bits_or = 0; bits_xor = 0; bits_and = -1L;
  setv = 0; swapv = 0;
  shmem_barrier_all();
  /* each PE puts me+1000*k into slot me of every PE, last put wins: k = ITERS-1 */
  for (int k = 0; k < ITERS; k++)
    { for (int p = 0; p < n; p++) shmem_long_p(&slots[me], me + 1000L * k, p); shmem_fence(); }
  shmem_quiet();
  long prev = -1, total = ITERS * ((long)n * (n + 1) / 2 + 2L * n);
  for (int k = 0; k < ITERS; k++) {
    /* this PE's previous fetch_add (complete: it returned) raised the counter by me + 1 */
    long f = shmem_long_atomic_fetch_add(&counter, me + 1, 0);
    if (f < 0 || f >= total || (prev >= 0 && f < prev + me + 1)) {
      printf("PE %d: fetch_add #%d returned %ld after %ld\n", me, k, f, prev); bad = 1;
    }
    prev = f;
    shmem_long_atomic_add(&counter, 2, 0);
    (void)shmem_long_atomic_fetch_inc(&incs, 0);
    shmem_long_atomic_inc(&incs, 0);
  }
  long old = shmem_long_atomic_compare_swap(&cs_winner, -1, me, 0);
  shmem_long_atomic_or(&bits_or, 1L << me, 0);
  shmem_long_atomic_xor(&bits_xor, 3L << (2 * me), 0);
  shmem_long_atomic_and(&bits_and, ~(1L << me), 0);
  shmem_long_atomic_set(&setv, 7, 0);
  long sw = shmem_long_atomic_swap(&swapv, me + 1, 0);
  shmem_barrier_all();
  for (int p = 0; p < n; p++)
    if (slots[p] != p + 1000L * (ITERS - 1)) { printf("PE %d: slot %d = %ld, want %ld\n", me, p, slots[p], p + 1000L * (ITERS - 1)); bad = 1; }
  /* one winner of compare_swap: old == -1 on exactly one PE */
  static long won; won = 0;
  shmem_barrier_all();
  if (old == -1) shmem_long_atomic_inc(&won, 0);
  else if (old < 0 || old >= n) { printf("PE %d: cswap returned %ld\n", me, old); bad = 1; }
  /* swap: the values returned plus the final one are exactly {0, 1..n} */
  static long swsum; swsum = 0;
  shmem_barrier_all();
  shmem_long_atomic_add(&swsum, sw, 0);
  shmem_barrier_all();
  if (me == 0) {
    long want_c = ITERS * ((long)n * (n + 1) / 2 + 2L * n), want_i = 2L * ITERS * n;
    long want_or = 0, want_xor = 0;
    for (int p = 0; p < n; p++) { want_or |= 1L << p; want_xor ^= 3L << (2 * p); }
    long want_and = ~want_or;
    long allsw = (long)n * (n + 1) / 2;
    if (counter != want_c) { printf("counter %ld, want %ld\n", counter, want_c); bad = 1; }
    if (incs != want_i) { printf("incs %ld, want %ld\n", incs, want_i); bad = 1; }
    if (won != 1 || cs_winner < 0 || cs_winner >= n) { printf("cswap winners %ld value %ld\n", won, cs_winner); bad = 1; }
    if (bits_or != want_or || bits_xor != want_xor || bits_and != want_and) { printf("or/xor/and %lx %lx %lx\n", bits_or, bits_xor, bits_and); bad = 1; }
    if (setv != 7) { printf("set %ld\n", setv); bad = 1; }
    if (swsum + swapv != allsw) { printf("swap returned %ld + final %ld, want %ld\n", swsum, swapv, allsw); bad = 1; }
  }
  static long nbad; nbad = 0;
  shmem_barrier_all();
  if (bad) shmem_long_atomic_inc(&nbad, 0);
  shmem_barrier_all();
  if (me == 0) {
    if (nbad) printf("FAIL: %ld PEs saw wrong results (%d PEs)\n", nbad, n);
    else printf("OK: %d PEs, counter %ld incs %ld\n", n, counter, incs);
  }
  long r = nbad;  /* read on PE 0 only; others fetch */
  if (me != 0) r = shmem_long_atomic_fetch(&nbad, 0);
  shmem_finalize();
  return r ? 1 : 0;
}
CEOF
if ! oshcc -O2 -Wall -o "$tmp/paa" "$tmp/paa.c" >"$tmp/cc.log" 2>&1; then
  cat "$tmp/cc.log"; echo "FAIL: oshcc could not build the test program"; exit 1
fi

declare -A tls_of=([rc_verbs]="rc_verbs,ud_verbs:aux" [rc_mlx5]="rc_mlx5,ud_mlx5:aux"
  [dc_mlx5]="dc_mlx5,ud_mlx5:aux" [ud_mlx5]="ud_mlx5")
passed=0; failed=0; failures=()
run=0
for tl in ${OSHMEM_TEST_TLS:-rc_verbs rc_mlx5 dc_mlx5 ud_mlx5}; do
  for np in ${OSHMEM_TEST_NP:-2 4}; do
    run=$((run + 1))
    fabric="$token-$run"
    env=(LD_LIBRARY_PATH="$lib" LD_PRELOAD="$lib/libsofthca_kernel.so" SOFTHCA_FABRIC="$fabric"
      UCX_TLS="${tls_of[$tl]}" UCX_NET_DEVICES=mlx5_0:1 UCX_VFS_ENABLE=n UCX_LOG_LEVEL=info
      UCX_WARN_UNUSED_ENV_VARS=n)
    xs=()
    for e in "${env[@]}"; do xs+=(-x "$e"); done
    start=$(date +%s)
    timeout -k 10 240 oshrun --allow-run-as-root --oversubscribe --bind-to none -np "$np" \
      --mca pml ucx --mca spml ucx --mca osc ucx --mca btl ^openib,vader,sm "${xs[@]}" \
      "$tmp/paa" >"$tmp/out" 2>&1
    rc=$?
    rm -f /dev/shm/softhca."$fabric"*
    why=""
    ((rc == 0)) || why="exit status $rc"
    grep -q "^OK: $np PEs" "$tmp/out" || why="${why:+$why, }no OK line"
    # Every endpoint configuration UCX chose (MPI's pml and OSHMEM's spml, one per peer incl.
    # the PE itself) names only the transport under test on the model's device.
    cfg=$(grep -o 'ep_cfg\[[0-9]*\]: .*' "$tmp/out" | sort -u)
    [[ -n "$cfg" ]] || why="${why:+$why, }no ep_cfg lines in UCX's log"
    grep -q "rma.*$tl/mlx5_0:1\|am.*$tl/mlx5_0:1" <<<"$cfg" || why="${why:+$why, }$tl carries no RMA/AMO"
    other=$(grep -oE '\(([a-z0-9_]+)/[^)]*\)' <<<"$cfg" | grep -v "($tl/mlx5_0:1)" | sort -u | tr '\n' ' ')
    [[ -z "$other" ]] || why="${why:+$why, }other transports used: $other"
    if [[ -z "$why" ]]; then
      passed=$((passed + 1))
      echo "ok: $tl, $np PEs ($(($(date +%s) - start)) s): $(grep "^OK:" "$tmp/out")"
      sed 's/^/    /' <<<"$cfg"
    else
      failed=$((failed + 1)); failures+=("$tl, $np PEs: $why")
      echo "--- $tl, $np PEs failed ($why); output tail:"
      grep -v 'UCX  INFO\|UCX  DIAG' "$tmp/out" | tail -25
    fi
  done
done
echo "$passed passed, $failed failed"
for f in "${failures[@]}"; do echo "FAIL: $f"; done
((failed == 0))
