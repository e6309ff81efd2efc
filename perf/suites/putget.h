/* put/get/p/g suite: latency, bandwidth and message rate from PE 0 to the highest PE.
 *
 * Results (size in bytes):
 *   put_lat S        shmem_putmem(S) + shmem_quiet, one at a time              us
 *   get_lat S        shmem_getmem(S), one at a time                             us
 *   p_lat 8          shmem_long_p + shmem_quiet                                 us
 *   g_lat 8          shmem_long_g                                               us
 *   putmem_bw S      shmem_putmem back to back, quiet at the end                MB/s
 *   putmem_nbi_bw S  shmem_putmem_nbi, quiet every PG_BW_WINDOW                 MB/s
 *   getmem_bw S      shmem_getmem back to back                                  MB/s
 *   getmem_nbi_bw S  shmem_getmem_nbi, quiet every PG_BW_WINDOW                 MB/s
 *   put_nbi_rate 8   8-byte shmem_putmem_nbi, PG_RATE_WINDOW outstanding, quiet Mops/s
 *   p_rate 8         shmem_long_p, PG_RATE_WINDOW outstanding, quiet            Mops/s
 *   get_nbi_rate 8   8-byte shmem_getmem_nbi, PG_RATE_WINDOW outstanding, quiet Mops/s
 * Every run is verified: put data is read back and compared, get data is compared with the
 * pattern the target wrote, p/g values are checked. */
#ifndef PERF_SUITE_PUTGET_H
#define PERF_SUITE_PUTGET_H

#include "../common/bench.h"

#define PG_MAX ((size_t)4 << 20)
#define PG_BW_WINDOW 16
#define PG_RATE_WINDOW 128

static const long pg_lat_sizes[] = {8, 32, 128, 512, 2048, 8192, 32768, 131072, 524288, 1048576};
static const long pg_bw_sizes[] = {8,     32,     128,    512,     2048,    8192,
                                   32768, 131072, 524288, 2097152, 4194304};

static struct {
  int peer;
  unsigned char *dst;    /* symmetric: put target */
  unsigned char *src;    /* symmetric: get source, filled with pg_pattern(owner) */
  long *dstl;            /* symmetric: p target slots */
  long *srcl;            /* symmetric: g / get_nbi source slots */
  unsigned char *local;  /* private: put source / get destination */
  unsigned char *scratch;/* private: read-back for checks */
  unsigned char *expect; /* private: the peer's get pattern */
  long gsum;
  int stamp;
} pg;

static unsigned char pg_pattern(size_t j, int pe) { return (unsigned char)(j * 7 + (size_t)pe * 13 + 1); }
static long pg_long_pattern(long j, int pe) { return 1000003L * (j + 1) + pe; }

/* put: each run writes a fresh stamp, so a put that did nothing cannot pass the check */
static void pg_put_reset(struct bench_case *c) {
  pg.stamp = pg.stamp % 250 + 1;
  memset(pg.local, pg.stamp, (size_t)c->size);
}
static int pg_put_check(struct bench_case *c, long iters) {
  (void)iters;
  bk_getmem(pg.scratch, pg.dst, (size_t)c->size, pg.peer);
  if (memcmp(pg.scratch, pg.local, (size_t)c->size) != 0) {
    bench_error(c->name, c->size, "target memory does not hold the data put");
    return 0;
  }
  return 1;
}
static void pg_put_lat(struct bench_case *c, long n) {
  for (long i = 0; i < n; i++) {
    bk_putmem(pg.dst, pg.local, (size_t)c->size, pg.peer);
    bk_quiet();
  }
}
static void pg_putmem_bw(struct bench_case *c, long n) {
  for (long i = 0; i < n; i++) bk_putmem(pg.dst, pg.local, (size_t)c->size, pg.peer);
  bk_quiet();
}
static void pg_putmem_nbi_bw(struct bench_case *c, long n) {
  for (long i = 0; i < n; i++) {
    bk_putmem_nbi(pg.dst, pg.local, (size_t)c->size, pg.peer);
    if (i % PG_BW_WINDOW == PG_BW_WINDOW - 1) bk_quiet();
  }
  bk_quiet();
}

/* get: the destination is spoiled before each run and compared with the peer's pattern after */
static void pg_get_reset(struct bench_case *c) {
  pg.local[0] = (unsigned char)~pg.expect[0];
  pg.local[c->size - 1] = (unsigned char)~pg.expect[c->size - 1];
}
static int pg_get_check(struct bench_case *c, long iters) {
  (void)iters;
  if (memcmp(pg.local, pg.expect, (size_t)c->size) != 0) {
    bench_error(c->name, c->size, "fetched data differs from the target's memory");
    return 0;
  }
  return 1;
}
static void pg_get_lat(struct bench_case *c, long n) {
  for (long i = 0; i < n; i++) bk_getmem(pg.local, pg.src, (size_t)c->size, pg.peer);
}
static void pg_getmem_nbi_bw(struct bench_case *c, long n) {
  for (long i = 0; i < n; i++) {
    bk_getmem_nbi(pg.local, pg.src, (size_t)c->size, pg.peer);
    if (i % PG_BW_WINDOW == PG_BW_WINDOW - 1) bk_quiet();
  }
  bk_quiet();
}

/* p: slot i % W receives value i; the slots are spoiled before a run, the last W checked */
static void pg_p_reset(struct bench_case *c) {
  (void)c;
  for (long j = 0; j < PG_RATE_WINDOW; j++) bk_long_p(&pg.dstl[j], -1, pg.peer);
  bk_quiet();
}
static int pg_p_check_slots(struct bench_case *c, long n, long window) {
  for (long i = n > window ? n - window : 0; i < n; i++) {
    long got = bk_long_g(&pg.dstl[i % window], pg.peer);
    if (got != i) {
      bench_error(c->name, c->size, "slot %ld holds %ld, expected %ld", i % window, got, i);
      return 0;
    }
  }
  return 1;
}
static int pg_p_lat_check(struct bench_case *c, long n) { return pg_p_check_slots(c, n, 1); }
static int pg_p_rate_check(struct bench_case *c, long n) {
  return pg_p_check_slots(c, n, PG_RATE_WINDOW);
}
static void pg_p_lat(struct bench_case *c, long n) {
  (void)c;
  for (long i = 0; i < n; i++) {
    bk_long_p(pg.dstl, i, pg.peer);
    bk_quiet();
  }
}
static void pg_p_rate(struct bench_case *c, long n) {
  (void)c;
  for (long i = 0; i < n; i++) {
    bk_long_p(&pg.dstl[i % PG_RATE_WINDOW], i, pg.peer);
    if (i % PG_RATE_WINDOW == PG_RATE_WINDOW - 1) bk_quiet();
  }
  bk_quiet();
}

/* put_nbi rate: 8-byte puts of the value i into slot i % W */
static void pg_put_nbi_rate(struct bench_case *c, long n) {
  (void)c;
  long *vals = (long *)pg.local; /* vals[i % W] must stay intact until the quiet */
  for (long i = 0; i < n; i++) {
    long *v = &vals[i % PG_RATE_WINDOW];
    *v = i;
    bk_putmem_nbi(&pg.dstl[i % PG_RATE_WINDOW], v, 8, pg.peer);
    if (i % PG_RATE_WINDOW == PG_RATE_WINDOW - 1) bk_quiet();
  }
  bk_quiet();
}

/* g and get_nbi read slot values the peer wrote (pg_long_pattern) */
static void pg_g_reset(struct bench_case *c) { (void)c; pg.gsum = 0; }
static void pg_g_lat(struct bench_case *c, long n) {
  (void)c;
  long s = 0;
  for (long i = 0; i < n; i++) s += bk_long_g(pg.srcl, pg.peer);
  pg.gsum = s;
}
static int pg_g_check(struct bench_case *c, long n) {
  long want = (long)((unsigned long)n * (unsigned long)pg_long_pattern(0, pg.peer));
  if (pg.gsum != want) {
    bench_error(c->name, c->size, "sum of fetched values %ld, expected %ld", pg.gsum, want);
    return 0;
  }
  return 1;
}
static void pg_get_nbi_rate_reset(struct bench_case *c) {
  (void)c;
  memset(pg.local, 0, PG_RATE_WINDOW * sizeof(long));
}
static void pg_get_nbi_rate(struct bench_case *c, long n) {
  (void)c;
  long *vals = (long *)pg.local;
  for (long i = 0; i < n; i++) {
    bk_getmem_nbi(&vals[i % PG_RATE_WINDOW], &pg.srcl[i % PG_RATE_WINDOW], 8, pg.peer);
    if (i % PG_RATE_WINDOW == PG_RATE_WINDOW - 1) bk_quiet();
  }
  bk_quiet();
}
static int pg_get_nbi_rate_check(struct bench_case *c, long n) {
  const long *vals = (const long *)pg.local;
  for (long j = 0; j < PG_RATE_WINDOW && j < n; j++)
    if (vals[j] != pg_long_pattern(j, pg.peer)) {
      bench_error(c->name, c->size, "slot %ld holds %ld, expected %ld", j, vals[j],
                  pg_long_pattern(j, pg.peer));
      return 0;
    }
  return 1;
}

static void pg_run(const char *name, long size, enum bench_unit unit,
                   void (*reset)(struct bench_case *), void (*run)(struct bench_case *, long),
                   int (*check)(struct bench_case *, long)) {
  struct bench_case c = {name, size, unit, 1.0, reset, run, check, NULL, 0};
  bench_measure(&c);
}

static void suite_putget(void) {
  int me = bk_me();
  pg.peer = bk_npes() - 1;
  pg.dst = (unsigned char *)bk_malloc(PG_MAX);
  pg.src = (unsigned char *)bk_malloc(PG_MAX);
  pg.dstl = (long *)bk_malloc(PG_RATE_WINDOW * sizeof(long));
  pg.srcl = (long *)bk_malloc(PG_RATE_WINDOW * sizeof(long));
  for (size_t j = 0; j < PG_MAX; j++) pg.src[j] = pg_pattern(j, me);
  memset(pg.dst, 0, PG_MAX);
  for (long j = 0; j < PG_RATE_WINDOW; j++) {
    pg.srcl[j] = pg_long_pattern(j, me);
    pg.dstl[j] = -1;
  }
  bk_barrier();
  if (me == 0) {
    pg.local = (unsigned char *)malloc(PG_MAX);
    pg.scratch = (unsigned char *)malloc(PG_MAX);
    pg.expect = (unsigned char *)malloc(PG_MAX);
    for (size_t j = 0; j < PG_MAX; j++) pg.expect[j] = pg_pattern(j, pg.peer);
    memset(pg.local, 0, PG_MAX);

    for (size_t k = 0; k < sizeof pg_lat_sizes / sizeof *pg_lat_sizes; k++)
      pg_run("put_lat", pg_lat_sizes[k], UNIT_US, pg_put_reset, pg_put_lat, pg_put_check);
    for (size_t k = 0; k < sizeof pg_lat_sizes / sizeof *pg_lat_sizes; k++)
      pg_run("get_lat", pg_lat_sizes[k], UNIT_US, pg_get_reset, pg_get_lat, pg_get_check);
    pg_run("p_lat", 8, UNIT_US, pg_p_reset, pg_p_lat, pg_p_lat_check);
    pg_run("g_lat", 8, UNIT_US, pg_g_reset, pg_g_lat, pg_g_check);
    for (size_t k = 0; k < sizeof pg_bw_sizes / sizeof *pg_bw_sizes; k++) {
      long s = pg_bw_sizes[k];
      pg_run("putmem_bw", s, UNIT_MBPS, pg_put_reset, pg_putmem_bw, pg_put_check);
      pg_run("putmem_nbi_bw", s, UNIT_MBPS, pg_put_reset, pg_putmem_nbi_bw, pg_put_check);
      pg_run("getmem_bw", s, UNIT_MBPS, pg_get_reset, pg_get_lat, pg_get_check);
      pg_run("getmem_nbi_bw", s, UNIT_MBPS, pg_get_reset, pg_getmem_nbi_bw, pg_get_check);
    }
    pg_run("put_nbi_rate", 8, UNIT_MOPS, pg_p_reset, pg_put_nbi_rate, pg_p_rate_check);
    pg_run("p_rate", 8, UNIT_MOPS, pg_p_reset, pg_p_rate, pg_p_rate_check);
    pg_run("get_nbi_rate", 8, UNIT_MOPS, pg_get_nbi_rate_reset, pg_get_nbi_rate,
           pg_get_nbi_rate_check);
    free(pg.local);
    free(pg.scratch);
    free(pg.expect);
  }
  bk_barrier();
  /* the target's own view of the last put-rate run: slot values are recent loop indices; a run
   * of fewer than PG_RATE_WINDOW iterations (a slow transport) leaves the later slots at -1 */
  if (me == pg.peer && me != 0)
    for (long j = 0; j < PG_RATE_WINDOW; j++)
      if ((pg.dstl[j] < 0 && (j == 0 || pg.dstl[j] != -1)) ||
          (pg.dstl[j] >= 0 && pg.dstl[j] % PG_RATE_WINDOW != j)) {
        bench_error("p_rate", 8, "target slot %ld holds %ld", j, pg.dstl[j]);
        break;
      }
  bk_barrier();
}

#endif
