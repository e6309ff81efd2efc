/* Distributed locks: the MCS queue lock against the hybrid lock (perf/hw/lock.sh runs it on 2
 * nodes of 2 PEs over the software mlx5 HCA, HOSHMEM_PES_PER_NODE=2, 4 PEs; PE 0 and 1 on one
 * node, 2 and 3 on the other). Every lock is one of `locks` (a global, so its place in the
 * segment, and with HOSHMEM_LOCK_HOME=hash its home, is the same in every run of this binary).
 * "the lock homed on PE p": with HOSHMEM_LOCK_HOME=pe0 lock p (all of them on PE 0); with
 * LOCK_HOMES=i0,i1,...  (from `lock homes`, HOSHMEM_LOCK_HOME=hash) lock i_p, which is on PE p.
 *   lock homes               PE 0 takes each lock in turn (MCS lock only) and reads every PE's
 *                            copy of it: the home's copy is the one whose low half (the MCS
 *                            tail) is set. "homes I0 I1 ..." : a lock index homed on each PE.
 *   lock intra N             PE 1 takes and releases the lock homed on PE 0 (its own node) N
 *                            times; the others wait in a barrier. "intra 1 US" (per lock+unlock).
 *   lock computing N         the same from PE 2 (the other node) while PE 0 computes (no library
 *                            call: an arithmetic loop, a plain load of a flag every 4096 steps).
 *                            "computing 2 US".
 *   lock spread N            every PE takes the lock homed on PE (me+1)%npes N times, all at once.
 *                            "spread 0 US" (the slowest PE's time per acquisition).
 *   lock contend N           for k = 1..npes: PEs 0..k-1 take the lock homed on PE 0 N times each,
 *                            all at once. "contend K US" (the slowest contender's time per its own
 *                            acquisition).
 *   lock ring N              a token goes round the PEs N times; PE i waits for it inside the
 *                            library, takes the lock homed on its successor, puts a value there,
 *                            sets the successor's token, releases, then computes LOCK_COMPUTE_US
 *                            (default 20 us; no library call) while the token goes on. "ring N MS"
 *                            (total) and "hop N US" (per hand-over).
 *   lock migrate N X         PE 1 takes the lock homed on PE 0 N times, in X blocks (one if X is
 *                            0); after each block PE 2 takes it once (the two hand turns over with
 *                            puts, waiting inside the library). "migrate X US": PE 1's time per
 *                            acquisition, its blocks only; "remote X US": PE 2's.
 *   lock tasks N             a leader per node (PE 0 and PE npes/2), N rounds of lock-put-unlock
 *                            to each PE of its node's lock, then to the other leader's lock, then
 *                            to its node's locks again. "tasks N MS" (total, slower leader).
 * Timed loops (intra, computing, spread, contend): best of 3 after an untimed one. Every run ends with
 * "acquisitions A" (all PEs' shmem_set_lock calls, untimed ones included), the divisor for the
 * counts SHMEM_INFO prints at finalize. */
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NLOCKS 64
#define MAXPES 64

static long locks[NLOCKS][8];  /* one cache line each: lock i is locks[i][0] */
static long flag, progress, token, value, slots[MAXPES], acq_all[MAXPES];
static double took, took_all[MAXPES];
static long acquired;  /* this PE's shmem_set_lock calls */
static int homes[MAXPES], me, npes;

static long *lock_on(int pe) { return &locks[homes[pe]][0]; }

static void take(long *l) {
  shmem_set_lock(l);
  acquired++;
}

static double now(void) { return shmemx_wtime(); }

/* An arithmetic loop outside the library for `us` microseconds. */
static void compute_for(double us) {
  volatile double x = 1.0;
  const double until = now() + us * 1e-6;
  while (now() < until)
    for (int i = 0; i < 256; i++) x = x * 1.0000001 + 1e-9;
}

/* An arithmetic loop outside the library until *f (plain loads) reaches `until`. */
static void compute_until(long *f, long until) {
  volatile double x = 1.0;
  for (unsigned long i = 0;; i++) {
    x = x * 1.0000001 + 1e-9;
    if ((i & 4095) == 0 && __atomic_load_n(f, __ATOMIC_ACQUIRE) >= until) break;
  }
}

/* Seconds per lock+unlock of `l`, n per loop: best of 3 after an untimed loop. */
static double lock_loop(long *l, long n) {
  double best = 1e30;
  for (int rep = 0; rep < 4; rep++) {
    const double t0 = now();
    for (long i = 0; i < n; i++) {
      take(l);
      shmem_clear_lock(l);
    }
    const double per = (now() - t0) / (double)n;
    if (rep > 0 && per < best) best = per;
  }
  return best;
}

/* The largest of every PE's `took`, on PE 0 (a collective). */
static double slowest(void) {
  shmem_double_p(&took_all[me], took, 0);
  shmem_barrier_all();
  double worst = 0;
  if (me == 0)
    for (int p = 0; p < npes; p++)
      if (took_all[p] > worst) worst = took_all[p];
  return worst;
}

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "intra";
  const long n = argc > 2 ? atol(argv[2]) : 100;
  const long x = argc > 3 ? atol(argv[3]) : 0;
  const double compute_us = getenv("LOCK_COMPUTE_US") ? atof(getenv("LOCK_COMPUTE_US")) : 20;
  shmem_init();
  me = shmem_my_pe();
  npes = shmem_n_pes();
  if (npes < 4 || npes > MAXPES) {
    if (me == 0) fprintf(stderr, "lock: needs 4 to %d PEs\n", MAXPES);
    shmem_global_exit(2);
  }
  for (int p = 0; p < npes; p++) homes[p] = p;
  const char *given = getenv("LOCK_HOMES");
  if (given) {
    char *end = (char *)given;
    for (int p = 0; p < npes; p++) {
      homes[p] = (int)strtol(end, &end, 10);
      if (homes[p] < 0 || homes[p] >= NLOCKS) {
        if (me == 0) fprintf(stderr, "lock: LOCK_HOMES has no lock for PE %d\n", p);
        shmem_global_exit(2);
      }
      if (*end == ',') end++;
    }
  }
  shmem_barrier_all();

  if (strcmp(what, "homes") == 0) {
    if (me == 0) {
      int first[MAXPES];
      for (int p = 0; p < npes; p++) first[p] = -1;
      for (int i = 0; i < NLOCKS; i++) {
        take(&locks[i][0]);
        int home = -1;
        for (int p = 0; p < npes; p++)
          if (shmem_long_g(&locks[i][0], p) & 0xffffffffL) home = p;
        shmem_clear_lock(&locks[i][0]);
        if (home >= 0 && first[home] < 0) first[home] = i;
      }
      printf("homes");
      for (int p = 0; p < npes; p++) printf("%s%d", p ? "," : " ", first[p]);
      printf("\n");
    }
  } else if (strcmp(what, "intra") == 0) {
    if (me == 1) printf("intra 1 %.2f\n", 1e6 * lock_loop(lock_on(0), n));
  } else if (strcmp(what, "computing") == 0) {
    if (me == 0) {
      compute_until(&flag, 1);
    } else if (me == 2) {
      printf("computing 2 %.2f\n", 1e6 * lock_loop(lock_on(0), n));
      fflush(stdout);
      shmem_long_p(&flag, 1, 0);
      shmem_quiet();
    }
  } else if (strcmp(what, "spread") == 0) {
    took = lock_loop(lock_on((me + 1) % npes), n);
    const double worst = slowest();
    if (me == 0) printf("spread 0 %.2f\n", 1e6 * worst);
  } else if (strcmp(what, "contend") == 0) {
    for (int k = 1; k <= npes; k++) {
      took = 0;
      shmem_barrier_all();
      if (me < k) took = lock_loop(lock_on(0), n);
      const double worst = slowest();
      if (me == 0) printf("contend %d %.2f\n", k, 1e6 * worst);
      fflush(stdout);
    }
  } else if (strcmp(what, "ring") == 0) {
    const int succ = (me + 1) % npes;
    long *l = lock_on(succ);
    const double t0 = now();
    if (me == 0) token = 1;  /* PE 0 holds the token of round 1 */
    for (long r = 1; r <= n; r++) {
      shmem_long_wait_until(&token, SHMEM_CMP_GE, r);
      take(l);
      shmem_long_p(&value, r, succ);
      shmem_fence();
      /* the successor's turn: round r, or r + 1 when it is PE 0 */
      shmem_long_p(&token, succ == 0 ? r + 1 : r, succ);
      shmem_clear_lock(l);
      compute_for(compute_us);
    }
    if (me == 0) {
      shmem_long_wait_until(&token, SHMEM_CMP_GE, n + 1);
      const double total = now() - t0;
      printf("ring %ld %.2f\nhop %ld %.2f\n", n, 1e3 * total, n, 1e6 * total / (double)(n * npes));
    }
  } else if (strcmp(what, "migrate") == 0) {
    long *l = lock_on(0);
    if (me == 1) {
      /* blocks of n/x acquisitions (timed), PE 2's j-th acquisition between block j and j+1 */
      double busy = 0;
      long j = 0;
      for (long i = 0; i < n;) {
        const long end = x > 0 && j < x ? (j + 1) * n / x : n;
        const double t0 = now();
        for (; i < end; i++) {
          take(l);
          shmem_clear_lock(l);
        }
        busy += now() - t0;
        if (x > 0 && j < x) {
          shmem_long_p(&token, ++j, 2);  /* PE 2's turn */
          shmem_quiet();
          shmem_long_wait_until(&progress, SHMEM_CMP_GE, j);
        }
      }
      printf("migrate %ld %.2f\n", x, 1e6 * busy / (double)n);
    } else if (me == 2) {
      double busy = 0;
      for (long j = 1; j <= x; j++) {
        shmem_long_wait_until(&token, SHMEM_CMP_GE, j);
        const double t0 = now();
        take(l);
        shmem_clear_lock(l);
        busy += now() - t0;
        shmem_long_p(&progress, j, 1);
        shmem_quiet();
      }
      if (x > 0) printf("remote %ld %.2f\n", x, 1e6 * busy / (double)x);
    }
  } else if (strcmp(what, "tasks") == 0) {
    const int half = npes / 2, leader = me < half ? 0 : half, other = me < half ? half : 0;
    if (me == leader) {
      const double t0 = now();
      for (long r = 0; r < n; r++) {
        for (int phase = 0; phase < 3; phase++) {
          const int lo = phase == 1 ? other : leader, hi = phase == 1 ? other + 1 : leader + half;
          for (int p = lo; p < hi; p++) {
            take(lock_on(p));
            shmem_long_p(&slots[me], r, p);
            shmem_clear_lock(lock_on(p));
          }
        }
      }
      took = now() - t0;
    }
    const double worst = slowest();
    if (me == 0) printf("tasks %ld %.2f\n", n, 1e3 * worst);
  } else {
    if (me == 0) fprintf(stderr, "lock: unknown experiment %s\n", what);
    shmem_global_exit(2);
  }

  fflush(stdout);
  shmem_barrier_all();
  shmem_long_p(&acq_all[me], acquired, 0);
  shmem_barrier_all();
  if (me == 0) {
    long sum = 0;
    for (int p = 0; p < npes; p++) sum += acq_all[p];
    printf("acquisitions %ld\n", sum);
    fflush(stdout);
  }
  shmem_barrier_all();
  shmem_finalize();
  return 0;
}
