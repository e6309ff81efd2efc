/* One-sided accumulate (shmemx_TYPENAME_OP_accumulate, <shmemx.h>).
 * 1. Every PE sums integer-valued doubles and longs into PE 0's arrays, short ones and ones that
 *    span several 64 KiB lock stripes, in rounds: the sums are exact.
 * 2. Overlapping ranges of different sizes from every PE on every PE's array (a PE's range
 *    overlaps both neighbours'; a big call and many small ones on the same elements): exact.
 * 3. min, max, prod, and, or, xor, replace on several types: the serial result.
 * 4. _nbi forms completed by shmem_quiet, ctx forms on a private context, the C11 generics.
 * 5. A target that computes without calling the library while the others accumulate into it.
 * Run with SHMEM_INFO=1 to see the scheme the job uses (HOSHMEM_ACC forces one). */
#include <complex.h>
#include <shmemx.h>

#include "shtest.h"

#define SMALL 12
#define BIG (64 * 1024 / 8 + 5) /* 8-byte elements over 2 or 3 stripes */

static double dsmall[SMALL], dbig[BIG];
static long lsmall[SMALL];
static long lbig[BIG];

static void check_sums(int rounds) {
  /* element i gets (pe + 1) * (i % 7 + 1) per round from each PE */
  const long per = (long)shtest_npes * (shtest_npes + 1) / 2;
  for (int i = 0; i < SMALL; i++) {
    CHECK(dsmall[i] == (double)(per * (i % 7 + 1) * rounds), "dsmall[%d] = %g, expected %ld", i,
          dsmall[i], per * (i % 7 + 1) * rounds);
    CHECK_EQ_U("lsmall", per * (i % 7 + 1) * rounds, lsmall[i]);
  }
  for (int i = 0; i < BIG; i++) {
    CHECK(dbig[i] == (double)(per * (i % 7 + 1)), "dbig[%d] = %g, expected %ld", i, dbig[i],
          per * (i % 7 + 1));
    CHECK_EQ_U("lbig", per * (i % 7 + 1), lbig[i]);
  }
}

static void exact_sums(void) {
  const int me = shtest_me;
  static double dsrc[BIG];
  static long lsrc[BIG];
  for (int i = 0; i < BIG; i++) {
    dsrc[i] = (double)((me + 1) * (i % 7 + 1));
    lsrc[i] = (long)((me + 1) * (i % 7 + 1));
  }
  const int rounds = (int)shtest_scaled(40);
  for (int r = 0; r < rounds; r++) {
    shmemx_double_sum_accumulate(dsmall, dsrc, SMALL, 0);
    shmemx_long_sum_accumulate(lsmall, lsrc, SMALL, 0);
  }
  shmemx_double_sum_accumulate(dbig, dsrc, BIG, 0);
  shmemx_long_sum_accumulate(lbig, lsrc, BIG, 0);
  shmem_barrier_all();
  if (me == 0) check_sums(rounds);
  shmem_barrier_all();
}

/* Every PE adds 1 to [me * K, me * K + 3 * K) of every PE's ring of n * K ints (wrapping): one
 * call for the first half of its range, single elements for the rest, so big and small
 * accumulates meet on the same elements. Each element ends at 3 per round. */
#define K 600
static int ring[8 * K];
static float fring[8 * K];

static void overlapping(void) {
  const int me = shtest_me, n = shtest_npes, len = n * K;
  static int ones[3 * K];
  static float fones[3 * K];
  for (int i = 0; i < 3 * K; i++) {
    ones[i] = 1;
    fones[i] = 1.0f;
  }
  const int rounds = 2;
  for (int r = 0; r < rounds; r++)
    for (int t = 0; t < n; t++) {
      const int pe = (me + t) % n;
      int start = me * K, done = 0;
      while (done < 3 * K) {
        const int at = (start + done) % len;
        /* up to the ring's end; the first stretch as one call, then one element at a time */
        int take = done < 3 * K / 2 ? 3 * K / 2 - done : 1;
        if (at + take > len) take = len - at;
        shmemx_int_sum_accumulate(&ring[at], ones, (size_t)take, pe);
        shmemx_float_sum_accumulate(&fring[at], fones, (size_t)take, pe);
        done += take;
      }
    }
  shmem_barrier_all();
  for (int i = 0; i < len; i++) {
    CHECK(ring[i] == 3 * rounds, "ring[%d] = %d, expected %d", i, ring[i], 3 * rounds);
    CHECK(fring[i] == 3.0f * rounds, "fring[%d] = %g, expected %d", i, fring[i], 3 * rounds);
  }
  shmem_barrier_all();
}

/* The other operations, on PE (me + 1) % n's arrays, which every PE targets once: the result is
 * the serial one whatever the order. */
#define N 300
static long lmin[N], lmax[N], lprod[N];
static int imax[N];
static unsigned long uand[N], uor[N], uxor[N];
static double dmax[N], dprod[N], drep[N];
static long double ldmax[N];
static short smin[N];
static double _Complex csum[N];
static unsigned int urep[N];

static void operations(void) {
  const int me = shtest_me, n = shtest_npes;
  for (int i = 0; i < N; i++) {
    lmin[i] = 1000; lmax[i] = -1000; lprod[i] = 1; imax[i] = -5;
    uand[i] = ~0ul; uor[i] = 0; uxor[i] = 0;
    dmax[i] = -1e9; dprod[i] = 1.0; drep[i] = -1.0; ldmax[i] = -1e9L;
    smin[i] = 30000; csum[i] = 0; urep[i] = 0;
  }
  shmem_barrier_all();
  long lv[N], lp[N]; int iv[N]; unsigned long ub[N], un[N]; double dv[N], dp[N];
  long double ldv[N]; short sv[N]; double _Complex cv[N]; unsigned int ur[N];
  for (int i = 0; i < N; i++) {
    lv[i] = (long)((me * 37 + i * 11) % 101) - 50;
    lp[i] = (i % 3 == 0) ? -2 : 2;
    iv[i] = (me * 13 + i) % 17;
    ub[i] = ~(1ul << (me + i % 3));
    un[i] = 1ul << (me + i % 3);
    dv[i] = (double)lv[i] * 0.5;
    dp[i] = 2.0;
    ldv[i] = (long double)lv[i];
    sv[i] = (short)lv[i];
    cv[i] = (double)me + (double)i * I;
    ur[i] = (unsigned)(me * 1000 + i);
  }
  const int to = (me + 1) % n;  /* every PE is the target of exactly one PE ... */
  for (int pe = 0; pe < n; pe++) {  /* ... and of every PE, for the order-free operations */
    shmemx_long_min_accumulate(lmin, lv, N, pe);
    shmemx_long_max_accumulate(lmax, lv, N, pe);
    shmemx_long_prod_accumulate(lprod, lp, N, pe);
    shmemx_int_max_accumulate(imax, iv, N, pe);
    shmemx_ulong_and_accumulate(uand, ub, N, pe);
    shmemx_ulong_or_accumulate(uor, un, N, pe);
    shmemx_ulong_xor_accumulate(uxor, un, N, pe);
    shmemx_double_max_accumulate(dmax, dv, N, pe);
    shmemx_double_prod_accumulate(dprod, dp, N, pe);
    shmemx_longdouble_max_accumulate(ldmax, ldv, N, pe);
    shmemx_short_min_accumulate(smin, sv, N, pe);
    shmemx_complexd_sum_accumulate(csum, cv, N, pe);
  }
  shmemx_double_replace_accumulate(drep, dv, N, to);
  shmemx_uint_replace_accumulate(urep, ur, N, to);
  shmem_barrier_all();
  const int from = (me + n - 1) % n;
  for (int i = 0; i < N; i++) {
    long emin = 1000, emax = -1000, eprod = 1; int eimax = -5;
    unsigned long eand = ~0ul, eor = 0, exor = 0; double edmax = -1e9, edprod = 1.0;
    long double eldmax = -1e9L; short esmin = 30000; double _Complex ecsum = 0;
    for (int pe = 0; pe < n; pe++) {
      const long v = (long)((pe * 37 + i * 11) % 101) - 50;
      emin = v < emin ? v : emin;
      emax = v > emax ? v : emax;
      eprod *= (i % 3 == 0) ? -2 : 2;
      const int w = (pe * 13 + i) % 17;
      eimax = w > eimax ? w : eimax;
      eand &= ~(1ul << (pe + i % 3));
      eor |= 1ul << (pe + i % 3);
      exor ^= 1ul << (pe + i % 3);
      edmax = (double)v * 0.5 > edmax ? (double)v * 0.5 : edmax;
      edprod *= 2.0;
      eldmax = (long double)v > eldmax ? (long double)v : eldmax;
      esmin = (short)v < esmin ? (short)v : esmin;
      ecsum += (double)pe + (double)i * I;
    }
    CHECK(lmin[i] == emin, "long min [%d]: %ld, expected %ld", i, lmin[i], emin);
    CHECK(lmax[i] == emax, "long max [%d]: %ld, expected %ld", i, lmax[i], emax);
    CHECK(lprod[i] == eprod, "long prod [%d]: %ld, expected %ld", i, lprod[i], eprod);
    CHECK(imax[i] == eimax, "int max [%d]: %d, expected %d", i, imax[i], eimax);
    CHECK(uand[i] == eand, "ulong and [%d]: %lx, expected %lx", i, uand[i], eand);
    CHECK(uor[i] == eor, "ulong or [%d]: %lx, expected %lx", i, uor[i], eor);
    CHECK(uxor[i] == exor, "ulong xor [%d]: %lx, expected %lx", i, uxor[i], exor);
    CHECK(dmax[i] == edmax, "double max [%d]: %g, expected %g", i, dmax[i], edmax);
    CHECK(dprod[i] == edprod, "double prod [%d]: %g, expected %g", i, dprod[i], edprod);
    CHECK(ldmax[i] == eldmax, "long double max [%d]: %Lg, expected %Lg", i, ldmax[i], eldmax);
    CHECK(smin[i] == esmin, "short min [%d]: %d, expected %d", i, smin[i], esmin);
    CHECK(csum[i] == ecsum, "complex sum [%d]: %g%+gi, expected %g%+gi", i, creal(csum[i]),
          cimag(csum[i]), creal(ecsum), cimag(ecsum));
    const long v = (long)((from * 37 + i * 11) % 101) - 50;
    CHECK(drep[i] == (double)v * 0.5, "double replace [%d]: %g, expected %g", i, drep[i],
          (double)v * 0.5);
    CHECK_EQ_U("uint replace", (unsigned)(from * 1000 + i), urep[i]);
  }
  shmem_barrier_all();
}

/* _nbi forms, completed by quiet; ctx forms on a private context; the C11 generics. */
static long nbi_sum[64];
static int ctx_sum[64];
static double gen_sum[64];

static void nbi_ctx_generic(void) {
  const int me = shtest_me, n = shtest_npes;
  long one[64];
  int ione[64];
  double done[64];
  for (int i = 0; i < 64; i++) { one[i] = 1; ione[i] = 2; done[i] = 0.5; }
  shmem_ctx_t ctx;
  CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) == 0, "shmem_ctx_create failed");
  for (int pe = 0; pe < n; pe++) {
    shmemx_long_sum_accumulate_nbi(nbi_sum, one, 64, pe);
    shmemx_ctx_int_sum_accumulate(ctx, ctx_sum, ione, 64, pe);
    shmemx_ctx_int_sum_accumulate_nbi(ctx, ctx_sum, ione, 64, pe);
    shmemx_sum_accumulate(gen_sum, done, 64, pe);
    shmemx_sum_accumulate(ctx, gen_sum, done, 64, pe);
    shmemx_sum_accumulate_nbi(gen_sum, done, 64, pe);
  }
  shmem_quiet();
  shmem_ctx_quiet(ctx);
  shmem_ctx_destroy(ctx);
  shmem_barrier_all();
  for (int i = 0; i < 64; i++) {
    CHECK_EQ_U("nbi long sum", (unsigned long)n, nbi_sum[i]);
    CHECK_EQ_U("ctx int sum", (unsigned long)(4 * n), ctx_sum[i]);
    CHECK(gen_sum[i] == 1.5 * n, "generic double sum [%d]: %g, expected %g", i, gen_sum[i], 1.5 * n);
  }
  (void)me;
  shmem_barrier_all();
}

/* PE 0 spins on its own clock, out of the library, while the others accumulate into it. */
static long busy_target[256];

static void computing_target(void) {
  const int me = shtest_me, n = shtest_npes;
  long v[256];
  for (int i = 0; i < 256; i++) v[i] = i;
  shmem_barrier_all();
  if (me == 0) {
    const double until = shmemx_wtime() + 0.3;
    volatile unsigned long spin = 0;
    while (shmemx_wtime() < until) spin++;
  } else {
    for (int r = 0; r < 20; r++) shmemx_long_sum_accumulate(busy_target, v, 256, 0);
  }
  shmem_barrier_all();
  if (me == 0)
    for (int i = 0; i < 256; i++) CHECK_EQ_U("busy target sum", 20L * i * (n - 1), busy_target[i]);
  shmem_barrier_all();
}

int main(void) {
  shtest_init();
  exact_sums();
  overlapping();
  operations();
  nbi_ctx_generic();
  computing_target();
  shtest_done("accumulate");
  return 0;
}
