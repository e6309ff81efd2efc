/* GUPS suite: random 64-bit xor updates to a table distributed over all PEs, issued by every PE
 * with shmem_ulong_atomic_xor (RandomAccess-style, but atomic, so no update may be lost).
 *   gups <total table bytes>   GUP/s (updates by all PEs per second / 1e9)
 * Each PE draws from its own deterministic random stream; an update with random r xors r into
 * word (r mod words per PE) of PE ((r >> 40) mod npes). At the end every PE replays all PEs'
 * streams for the updates aimed at itself and compares its table word by word. */
#ifndef PERF_SUITE_GUPS_H
#define PERF_SUITE_GUPS_H

#include "../common/bench.h"

#define GUPS_BATCH 1024 /* updates per iteration */

static struct {
  unsigned long *table; /* symmetric, gups.words per PE */
  long words;           /* power of two */
  uint64_t state;       /* this PE's stream */
  long done;            /* updates this PE issued; the same on every PE */
} gups;

static inline uint64_t gups_next(uint64_t *s) { /* xorshift64* */
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1Dull;
}
static uint64_t gups_seed(int pe) { return 0x9E3779B97F4A7C15ull * (uint64_t)(pe + 1) | 1; }

static void gups_run(struct bench_case *c, long n) {
  (void)c;
  uint64_t s = gups.state;
  unsigned long *t = gups.table;
  const uint64_t wmask = (uint64_t)gups.words - 1;
  const int np = bk_npes();
  for (long k = 0; k < n * GUPS_BATCH; k++) {
    uint64_t r = gups_next(&s);
    BK_XOR(ulong, &t[r & wmask], (unsigned long)r, (int)((r >> 40) % (uint64_t)np));
  }
  bk_quiet();
  gups.state = s;
  gups.done += n * GUPS_BATCH;
}

static int gups_verify(void) {
  int me = bk_me(), np = bk_npes();
  const uint64_t wmask = (uint64_t)gups.words - 1;
  unsigned long *want = (unsigned long *)calloc((size_t)gups.words, sizeof *want);
  for (int pe = 0; pe < np; pe++) {
    uint64_t s = gups_seed(pe);
    for (long k = 0; k < gups.done; k++) {
      uint64_t r = gups_next(&s);
      if ((int)((r >> 40) % (uint64_t)np) == me) want[r & wmask] ^= (unsigned long)r;
    }
  }
  long bad = 0;
  for (long w = 0; w < gups.words; w++) bad += gups.table[w] != want[w];
  free(want);
  if (bad) bench_error("gups", gups.words * 8L * np, "%ld of %ld table words wrong", bad, gups.words);
  return bad == 0;
}

static void suite_gups(void) {
  bench_collective_init();
  gups.words = bench_quick ? (1L << 18) : (1L << 20);
  gups.table = (unsigned long *)bk_malloc((size_t)gups.words * sizeof(unsigned long));
  memset(gups.table, 0, (size_t)gups.words * sizeof(unsigned long));
  gups.state = gups_seed(bk_me());
  gups.done = 0;
  bk_barrier();
  struct bench_case c = {"gups", gups.words * 8L * bk_npes(), UNIT_GUPS,
                         (double)GUPS_BATCH * bk_npes(), NULL, gups_run, NULL, NULL, 0};
  bench_measure_all(&c);
  bk_barrier();
  gups_verify();
  bk_barrier();
}

#endif
