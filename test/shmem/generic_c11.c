/* C11 type-generic interfaces, built with -std=c11 -pedantic (test/api/BUILD.bazel):
 * - each generic selects the typed routine of its argument's type (compile-time checks on the
 *   result type, runtime checks that values of every base type round-trip through the right
 *   neighbour unchanged, which a wrong-size routine would not do);
 * - ctx overloads (RMA incl. ibput/ibget, AMO, put_signal, signal_add/set) select by the first
 *   argument, on a created context and on SHMEM_CTX_DEFAULT;
 * - collectives select by dest, shmem_sync by its first argument (team or int);
 * - the deprecated generic AMO names and the deprecated C routine shmem_wait_until(long *, int,
 *   long) still compile and work, also called by name as (shmem_wait_until)(...). */
#define _DEFAULT_SOURCE /* usleep, sysconf in shtest.h under strict C11 */
#include "shtest.h"

#include <complex.h>

#if !defined(__STDC_VERSION__) || __STDC_VERSION__ < 201112L
#error "build this test as C11"
#endif

#define IS(expr, T) _Generic((expr), T: 1, default: 0)

static int right, left;

/* put/get/p/g/iput/iget/put_nbi/get_nbi for one base type */
#define RMA_CASE(T, V0)                                                                            \
  do {                                                                                             \
    static T src[4], dst[4], strided[8], one;                                                      \
    T got[4];                                                                                      \
    for (int i = 0; i < 4; i++) src[i] = (T)((V0) + shtest_me * 4 + i);                              \
    shmem_barrier_all();                                                                           \
    shmem_put(dst, src, 4, right);                                                                 \
    shmem_p(&one, (T)((V0) + shtest_me), right);                                                     \
    shmem_iput(strided, src, 2, 1, 4, right);                                                      \
    shmem_barrier_all();                                                                           \
    for (int i = 0; i < 4; i++) {                                                                  \
      CHECK(dst[i] == (T)((V0) + left * 4 + i), "shmem_put(" #T ") element %d", i);                \
      CHECK(strided[2 * i] == (T)((V0) + left * 4 + i), "shmem_iput(" #T ") element %d", i);       \
    }                                                                                              \
    CHECK(one == (T)((V0) + left), "shmem_p(" #T ")");                                               \
    _Static_assert(IS(shmem_g(&one, 0), T), "shmem_g(" #T " *) returns " #T);                    \
    CHECK(shmem_g(&one, right) == (T)((V0) + shtest_me), "shmem_g(" #T ")");                         \
    shmem_get(got, dst, 4, right);                                                                 \
    for (int i = 0; i < 4; i++) CHECK(got[i] == (T)((V0) + shtest_me * 4 + i), "shmem_get(" #T ")"); \
    shmem_iget(got, strided, 1, 2, 4, right);                                                      \
    for (int i = 0; i < 4; i++) CHECK(got[i] == (T)((V0) + shtest_me * 4 + i), "shmem_iget(" #T ")"); \
    shmem_barrier_all(); /* every PE checked its dst before the next writes to it */              \
    shmem_get_nbi(got, src, 4, left);                                                              \
    shmem_put_nbi(dst, got, 4, right);                                                             \
    shmem_quiet();                                                                                 \
    shmem_barrier_all();                                                                           \
    for (int i = 0; i < 4; i++)                                                                    \
      CHECK(dst[i] == (T)((V0) + ((left + shtest_npes - 1) % shtest_npes) * 4 + i),                  \
            "shmem_get_nbi/put_nbi(" #T ") element %d", i);                                        \
  } while (0)

static void test_rma(void) {
  RMA_CASE(float, 0.5f);
  RMA_CASE(double, 1e10);
  RMA_CASE(long double, 1e20L);
  RMA_CASE(char, 1);
  RMA_CASE(signed char, -100);
  RMA_CASE(short, -30000);
  RMA_CASE(int, -2000000000);
  RMA_CASE(long, -4000000000000000000L);
  RMA_CASE(long long, 4000000000000000000LL);
  RMA_CASE(unsigned char, 200);
  RMA_CASE(unsigned short, 60000);
  RMA_CASE(unsigned int, 4000000000u);
  RMA_CASE(unsigned long, 18000000000000000000ul);
  RMA_CASE(unsigned long long, 18000000000000000000ull);
  /* typedef'd table types select the routine of their base type */
  RMA_CASE(int32_t, -7);
  RMA_CASE(uint64_t, (1ull << 63));
  RMA_CASE(size_t, 12345);
  RMA_CASE(ptrdiff_t, -12345);
  RMA_CASE(int8_t, -5);
  RMA_CASE(uint16_t, 65000);
}

static void test_amo(void) {
  static long l;
  static unsigned long long ull;
  static double d;
  static int i32;
  static int64_t i64;
  static uint32_t u32;
  shmem_barrier_all();
  l = 0;
  ull = 0;
  d = 0;
  i32 = 0;
  i64 = 0;
  u32 = 0xffffffffu;
  shmem_barrier_all();
  _Static_assert(IS(shmem_atomic_fetch_add(&l, 1L, 0), long), "fetch_add(long *)");
  _Static_assert(IS(shmem_atomic_fetch(&d, 0), double), "fetch(double *)");
  _Static_assert(IS(shmem_atomic_fetch_and(&u32, 1u, 0), uint32_t), "fetch_and(uint32_t *)");
  _Static_assert(IS(shmem_atomic_fetch_xor(&i64, 1, 0), int64_t), "fetch_xor(int64_t *)");
  shmem_atomic_add(&l, 3L, 0);
  shmem_atomic_inc(&ull, 0);
  (void)shmem_atomic_fetch_add(&ull, 1ull << 40, 0);
  shmem_atomic_set(&d, 2.5, right);
  shmem_atomic_fetch_or(&i64, (int64_t)1 << (shtest_me % 63), 0);
  shmem_atomic_and(&u32, ~(1u << (shtest_me % 32)), 0);
  (void)shmem_atomic_compare_swap(&i32, 0, 1, 0);
  int fetched = -1;
  shmem_atomic_fetch_inc_nbi(&fetched, &i32, 0);
  shmem_quiet();
  CHECK(fetched >= 1, "shmem_atomic_fetch_inc_nbi(int) fetched %d", fetched);
  shmem_barrier_all();
  const double *cd = &d;
  CHECK(shmem_atomic_fetch(cd, shtest_me) == 2.5, "shmem_atomic_fetch(const double *)");
  if (shtest_me == 0) {
    long n = shtest_npes;
    CHECK(shmem_atomic_fetch(&l, 0) == 3 * n, "atomic_add(long) sum %ld", l);
    CHECK(ull == (unsigned long long)n * ((1ull << 40) + 1), "atomic_inc/fetch_add(ull) %llu", ull);
    CHECK(i32 == n + 1, "compare_swap + fetch_inc_nbi(int) %d", i32);
    int64_t bits = 0;
    uint32_t mask = 0xffffffffu;
    for (int pe = 0; pe < shtest_npes; pe++) {
      bits |= (int64_t)1 << (pe % 63);
      mask &= ~(1u << (pe % 32));
    }
    CHECK(i64 == bits, "atomic_fetch_or(int64_t)");
    CHECK(u32 == mask, "atomic_and(uint32_t)");
  }
  double old = shmem_atomic_swap(&d, 4.0, shtest_me);
  CHECK(old == 2.5 && d == 4.0, "shmem_atomic_swap(double)");
  shmem_barrier_all();
  /* deprecated generic names */
  static long dl;
  static float df;
  dl = 0;
  df = 0;
  shmem_barrier_all();
  shmem_add(&dl, 2L, 0);
  shmem_inc(&dl, 0);
  (void)shmem_fadd(&dl, 1L, 0);
  (void)shmem_finc(&dl, 0);
  shmem_set(&df, 1.5f, shtest_me);
  _Static_assert(IS(shmem_swap(&df, 1.0f, 0), float), "shmem_swap(float *)");
  _Static_assert(IS(shmem_cswap(&dl, 0L, 0L, 0), long), "shmem_cswap(long *)");
  CHECK(shmem_fetch(&df, shtest_me) == 1.5f, "shmem_fetch/set(float)");
  shmem_barrier_all();
  if (shtest_me == 0) CHECK(dl == 5L * shtest_npes, "deprecated add/inc/fadd/finc(long) %ld", dl);
  shmem_barrier_all();
}

static void test_signal_and_p2p(void) {
  static int data[8];
  static uint64_t sig;
  static short sflag;
  static long lflag;
  static unsigned int ivars[4];
  int src[8];
  for (int i = 0; i < 8; i++) src[i] = shtest_me * 100 + i;
  shmem_barrier_all();
  sig = 0;
  sflag = 0;
  lflag = 0;
  for (int i = 0; i < 4; i++) ivars[i] = 0;
  shmem_barrier_all();
  shmem_put_signal(data, src, 8, &sig, 1, SHMEM_SIGNAL_ADD, right);
  shmem_put_signal_nbi(SHMEM_CTX_DEFAULT, data, src, 8, &sig, 1, SHMEM_SIGNAL_ADD, right);
  shmem_quiet();
  CHECK_EQ_U("put_signal generic (plain + ctx)", 2, shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 2));
  for (int i = 0; i < 8; i++) CHECK(data[i] == left * 100 + i, "put_signal(int) data %d", i);
  shmem_barrier_all();
  shmem_signal_set(&sig, 10, right);                     /* the C routine */
  shmem_signal_add(SHMEM_CTX_DEFAULT, &sig, 5, right);   /* the ctx overload */
  shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 15);
  shmem_barrier_all();
  shmem_signal_set(SHMEM_CTX_DEFAULT, &sig, 1, right);
  shmem_signal_add(&sig, 1, right);
  CHECK_EQ_U("signal_set(ctx) + signal_add", 2, shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 2));
  shmem_barrier_all();

  /* wait_until/test generics incl. the deprecated short form and the deprecated C routine */
  shmem_p(&sflag, (short)7, right);
  shmem_long_atomic_set(&lflag, 9, right);
  shmem_wait_until(&sflag, SHMEM_CMP_EQ, (short)7);
  shmem_wait_until(&lflag, SHMEM_CMP_EQ, 9L);     /* deprecated C name, generic dispatch */
  (shmem_wait_until)(&lflag, SHMEM_CMP_GE, 9L);   /* the deprecated C routine itself */
  CHECK(shmem_test(&lflag, SHMEM_CMP_EQ, 9L) == 1, "shmem_test(long *)");
  CHECK(shmem_test(&sflag, SHMEM_CMP_NE, (short)7) == 0, "shmem_test(short *)");
  for (int i = 0; i < 4; i++) shmem_atomic_set(&ivars[i], (unsigned)(i + 1), right);
  size_t idx[4];
  unsigned int want[4] = {1, 2, 3, 4};
  shmem_wait_until_all(ivars, 4, NULL, SHMEM_CMP_GT, 0u);
  shmem_wait_until_all_vector(ivars, 4, NULL, SHMEM_CMP_EQ, want);
  CHECK(shmem_test_all(ivars, 4, NULL, SHMEM_CMP_GE, 1u) == 1, "test_all(unsigned *)");
  CHECK(shmem_test_all_vector(ivars, 4, NULL, SHMEM_CMP_EQ, want) == 1, "test_all_vector");
  CHECK(shmem_wait_until_any(ivars, 4, NULL, SHMEM_CMP_EQ, 3u) == 2, "wait_until_any");
  CHECK(shmem_wait_until_any_vector(ivars, 4, NULL, SHMEM_CMP_EQ, want) < 4, "wait_until_any_vector");
  CHECK(shmem_test_any(ivars, 4, NULL, SHMEM_CMP_EQ, 4u) == 3, "test_any");
  CHECK(shmem_test_any_vector(ivars, 4, NULL, SHMEM_CMP_NE, want) == SIZE_MAX, "test_any_vector");
  CHECK(shmem_wait_until_some(ivars, 4, idx, NULL, SHMEM_CMP_LE, 2u) == 2 && idx[1] == 1, "wait_until_some");
  CHECK(shmem_wait_until_some_vector(ivars, 4, idx, NULL, SHMEM_CMP_EQ, want) == 4, "wait_until_some_vector");
  CHECK(shmem_test_some(ivars, 4, idx, NULL, SHMEM_CMP_GT, 3u) == 1 && idx[0] == 3, "test_some");
  CHECK(shmem_test_some_vector(ivars, 4, idx, NULL, SHMEM_CMP_LT, want) == 0, "test_some_vector");
  shmem_barrier_all();
}

/* ctx overloads: a shmem_ctx_t first argument selects the shmem_ctx_ routine of the next
 * argument's type (on a created context and on the default one) */
static void test_ctx_overloads(void) {
  shmem_ctx_t ctx;
  CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) == 0, "shmem_ctx_create");
  static double d[6], dsrc[6];
  static unsigned long long u;
  static int32_t i32;
  for (int i = 0; i < 6; i++) dsrc[i] = shtest_me + i / 8.0;
  shmem_barrier_all();
  u = 0;
  i32 = 0;
  for (int i = 0; i < 6; i++) d[i] = -1;
  shmem_barrier_all();
  shmem_put(ctx, d, dsrc, 2, right);
  shmem_p(SHMEM_CTX_DEFAULT, &d[2], 0.25 + shtest_me, right);
  shmem_ibput(ctx, &d[3], &dsrc[3], 2, 2, 1, 1, right); /* one block of 1: d[3] = dsrc[3] */
  shmem_put_nbi(ctx, &d[4], &dsrc[4], 2, right);
  _Static_assert(IS(shmem_atomic_fetch_add(ctx, &u, 1ull, 0), unsigned long long), "ctx fetch_add");
  _Static_assert(IS(shmem_g(ctx, &d[0], 0), double), "ctx g(double *)");
  (void)shmem_atomic_fetch_add(ctx, &u, 1ull << 33, 0);
  shmem_atomic_inc(SHMEM_CTX_DEFAULT, &u, 0);
  shmem_atomic_xor(ctx, &i32, (int32_t)1 << (shtest_me % 31), 0);
  shmem_ctx_quiet(ctx);
  shmem_barrier_all();
  for (int i = 0; i < 6; i++) {
    double want = i == 2 ? 0.25 + left : left + i / 8.0;
    CHECK(d[i] == want, "ctx put/p/ibput/put_nbi(double) element %d: %g, want %g", i, d[i], want);
  }
  double g1 = shmem_g(ctx, &d[1], right), got[2];
  CHECK(g1 == shtest_me + 1 / 8.0, "shmem_g(ctx, double *)");
  shmem_get(SHMEM_CTX_DEFAULT, got, d, 2, right);
  shmem_ibget(ctx, &got[1], &d[3], 1, 1, 1, 1, right);
  CHECK(got[0] == shtest_me && got[1] == shtest_me + 3 / 8.0, "ctx get/ibget(double)");
  const double *cd = &d[5];
  CHECK(shmem_atomic_fetch(ctx, cd, right) == shtest_me + 5 / 8.0, "shmem_atomic_fetch(ctx, const double *)");
  if (shtest_me == 0) {
    int32_t bits = 0;
    for (int pe = 0; pe < shtest_npes; pe++) bits ^= (int32_t)1 << (pe % 31);
    CHECK(u == (unsigned long long)shtest_npes * ((1ull << 33) + 1), "ctx atomic fetch_add/inc(ull) %llu", u);
    CHECK(i32 == bits, "ctx atomic_xor(int32_t)");
  }
  shmem_barrier_all();
  shmem_ctx_destroy(ctx);
}

/* collectives by generic name (dest type selects the routine), and both shmem_sync forms */
static void test_collectives(void) {
  int n = shtest_npes;
  static long pSync[SHMEM_SYNC_SIZE];
  for (int i = 0; i < SHMEM_SYNC_SIZE; i++) pSync[i] = SHMEM_SYNC_VALUE;
  shmem_barrier_all();
  shmem_sync(0, 0, n, pSync);                   /* deprecated active-set C routine */
  CHECK(shmem_sync(SHMEM_TEAM_WORLD) == 0, "shmem_sync(team)");
  static double dsrc[8], ddst[8 * 8];
  static short ssrc[8], sdst[8 * 8];
  static unsigned char usrc[4], udst[4];
  static long lsrc[4], ldst[4];
  static double _Complex csrc[2], cdst[2];
  for (int i = 0; i < 8; i++) {
    dsrc[i] = shtest_me * 10.0 + i;
    ssrc[i] = (short)(shtest_me * 8 + i);
  }
  shmem_barrier_all();
  CHECK(shmem_broadcast(SHMEM_TEAM_WORLD, ddst, dsrc, 8, n - 1) == 0, "shmem_broadcast(double)");
  for (int i = 0; i < 8; i++) CHECK(ddst[i] == (n - 1) * 10.0 + i, "broadcast(double) element %d", i);
  CHECK(shmem_fcollect(SHMEM_TEAM_WORLD, sdst, ssrc, 8) == 0, "shmem_fcollect(short)");
  for (int i = 0; i < 8 * n; i++) CHECK(sdst[i] == (short)i, "fcollect(short) element %d", i);
  CHECK(shmem_collect(SHMEM_TEAM_WORLD, ddst, dsrc, 1) == 0, "shmem_collect(double)");
  for (int pe = 0; pe < n; pe++) CHECK(ddst[pe] == pe * 10.0, "collect(double) element %d", pe);
  CHECK(shmem_alltoall(SHMEM_TEAM_WORLD, sdst, ssrc, 1) == 0, "shmem_alltoall(short)");
  for (int pe = 0; pe < n; pe++)
    CHECK(sdst[pe] == (short)(pe * 8 + shtest_me), "alltoall(short) from PE %d", pe);
  CHECK(shmem_alltoalls(SHMEM_TEAM_WORLD, ddst, dsrc, 1, 1, 1) == 0, "shmem_alltoalls(double)");
  for (int pe = 0; pe < n; pe++)
    CHECK(ddst[pe] == pe * 10.0 + shtest_me, "alltoalls(double) from PE %d", pe);
  for (int i = 0; i < 4; i++) {
    usrc[i] = (unsigned char)(1u << ((shtest_me + i) % 8));
    lsrc[i] = shtest_me + i;
  }
  csrc[0] = shtest_me + 1.0;
  csrc[1] = (shtest_me + 1.0) * 1.0 * _Complex_I;
  shmem_barrier_all();
  unsigned char uor[4] = {0};
  for (int pe = 0; pe < n; pe++)
    for (int i = 0; i < 4; i++) uor[i] |= (unsigned char)(1u << ((pe + i) % 8));
  CHECK(shmem_or_reduce(SHMEM_TEAM_WORLD, udst, usrc, 4) == 0, "shmem_or_reduce(uchar)");
  for (int i = 0; i < 4; i++) CHECK(udst[i] == uor[i], "or_reduce(uchar) element %d", i);
  shmem_and_reduce(SHMEM_TEAM_WORLD, udst, usrc, 4);
  shmem_xor_reduce(SHMEM_TEAM_WORLD, udst, usrc, 4);
  CHECK(shmem_max_reduce(SHMEM_TEAM_WORLD, ldst, lsrc, 4) == 0, "shmem_max_reduce(long)");
  for (int i = 0; i < 4; i++) CHECK(ldst[i] == n - 1 + i, "max_reduce(long) element %d", i);
  shmem_min_reduce(SHMEM_TEAM_WORLD, ldst, lsrc, 4);
  for (int i = 0; i < 4; i++) CHECK(ldst[i] == i, "min_reduce(long) element %d", i);
  shmem_sum_reduce(SHMEM_TEAM_WORLD, ldst, lsrc, 4);
  for (int i = 0; i < 4; i++) CHECK(ldst[i] == (long)n * (n - 1) / 2 + (long)n * i, "sum_reduce(long) %d", i);
  shmem_prod_reduce(SHMEM_TEAM_WORLD, cdst, csrc, 1);
  double fact = 1;
  for (int pe = 1; pe <= n; pe++) fact *= pe;
  CHECK(creal(cdst[0]) == fact && cimag(cdst[0]) == 0, "prod_reduce(double _Complex)");
  shmem_sum_reduce(SHMEM_TEAM_WORLD, cdst, csrc, 2);
  CHECK(cimag(cdst[1]) == n * (n + 1) / 2.0, "sum_reduce(double _Complex)");
  CHECK(shmem_sum_inscan(SHMEM_TEAM_WORLD, ldst, lsrc, 4) == 0, "shmem_sum_inscan(long)");
  for (int i = 0; i < 4; i++)
    CHECK(ldst[i] == (long)shtest_me * (shtest_me + 1) / 2 + (long)(shtest_me + 1) * i, "sum_inscan(long) %d", i);
  CHECK(shmem_sum_exscan(SHMEM_TEAM_WORLD, ldst, lsrc, 4) == 0, "shmem_sum_exscan(long)");
  for (int i = 1; i < 4 && shtest_me > 0; i++)
    CHECK(ldst[i] == (long)(shtest_me - 1) * shtest_me / 2 + (long)shtest_me * i, "sum_exscan(long) %d", i);
  shmem_barrier_all();
}

int main(void) {
  shtest_init();
  right = (shtest_me + 1) % shtest_npes;
  left = (shtest_me + shtest_npes - 1) % shtest_npes;
  test_rma();
  test_amo();
  test_signal_and_p2p();
  test_collectives();
  test_ctx_overloads();
  shtest_done("generic_c11");
  return 0;
}
