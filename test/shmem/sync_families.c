/* Point-to-point synchronization families (OpenSHMEM 1.5/1.6), every stdamotype:
 * wait_until_all/any/some, test_all/any/some and the _vector forms (1.6: const cmp_values).
 * - empty sets (nelems == 0, and every element excluded by status): wait_until_all returns,
 *   wait_until_any/test_any return SIZE_MAX, wait_until_some/test_some return 0,
 *   test_all/test_all_vector return 1 (1.6 erratum);
 * - status: a nonzero entry excludes its element (an excluded element that satisfies is never
 *   returned, one that never satisfies does not block), NULL includes all;
 * - remote updates from the left neighbour (AMOs and puts) release the waits with the right
 *   indices; test_* against a serial reference of the array;
 * - _any fairness: repeated calls on a fully satisfied set return every included index. */
#include "shtest.h"
#include "types.h"

#define N 7
#define EXCL 2 /* the element excluded by the status mask */

static long long storage[N]; /* ivars of every type live here (8-byte aligned, symmetric) */
static int status_excl[N] = {0, 0, 1, 0, 0, 0, 0};
static int status_none[N] = {1, 1, 1, 1, 1, 1, 1};

static int right_pe(void) { return (shtest_me + 1) % shtest_npes; }

#define DEF_FAMILY_TEST(T, NAME, ISF)                                                               \
  static void reset_##NAME(T v) {                                                                   \
    shmem_barrier_all();                                                                            \
    for (int i = 0; i < N; i++) ((T *)storage)[i] = v;                                              \
    shmem_barrier_all();                                                                            \
  }                                                                                                 \
  /* serial reference: indices of included elements equal to v */                                  \
  static size_t ref_##NAME(const T *iv, const int *status, T v, size_t *out) {                      \
    size_t c = 0;                                                                                   \
    for (size_t i = 0; i < N; i++)                                                                  \
      if ((!status || !status[i]) && iv[i] == v) out[c++] = i;                                      \
    return c;                                                                                       \
  }                                                                                                 \
  static void test_##NAME(void) {                                                                   \
    T *iv = (T *)storage;                                                                           \
    const char *tn = #NAME;                                                                         \
    size_t idx[N], ref[N], c;                                                                       \
    T cmpv[N];                                                                                      \
    for (int i = 0; i < N; i++) cmpv[i] = (T)(10 + i);                                              \
    /* --- empty sets: nelems 0 (ivars may be NULL) and all excluded --- */                         \
    reset_##NAME((T)0);                                                                             \
    shmem_##NAME##_wait_until_all(NULL, 0, NULL, SHMEM_CMP_EQ, (T)1);                               \
    shmem_##NAME##_wait_until_all_vector(NULL, 0, NULL, SHMEM_CMP_EQ, NULL);                        \
    CHECK(shmem_##NAME##_wait_until_any(NULL, 0, NULL, SHMEM_CMP_EQ, (T)1) == SIZE_MAX,             \
          "%s_wait_until_any(nelems 0) != SIZE_MAX", tn);                                           \
    CHECK(shmem_##NAME##_wait_until_any_vector(NULL, 0, NULL, SHMEM_CMP_EQ, NULL) == SIZE_MAX,      \
          "%s_wait_until_any_vector(nelems 0) != SIZE_MAX", tn);                                    \
    CHECK_EQ_U("wait_until_some(nelems 0)",  0,                                                     \
               shmem_##NAME##_wait_until_some(NULL, 0, idx, NULL, SHMEM_CMP_EQ, (T)1));             \
    CHECK_EQ_U("wait_until_some_vector(nelems 0)", 0,                                               \
               shmem_##NAME##_wait_until_some_vector(NULL, 0, idx, NULL, SHMEM_CMP_EQ, NULL));      \
    CHECK_EQ_U("test_all(nelems 0)", 1, shmem_##NAME##_test_all(NULL, 0, NULL, SHMEM_CMP_EQ, (T)1)); \
    CHECK_EQ_U("test_all_vector(nelems 0)", 1,                                                      \
               shmem_##NAME##_test_all_vector(NULL, 0, NULL, SHMEM_CMP_EQ, NULL));                  \
    CHECK(shmem_##NAME##_test_any(NULL, 0, NULL, SHMEM_CMP_EQ, (T)1) == SIZE_MAX,                   \
          "%s_test_any(nelems 0) != SIZE_MAX", tn);                                                 \
    CHECK(shmem_##NAME##_test_any_vector(NULL, 0, NULL, SHMEM_CMP_EQ, NULL) == SIZE_MAX,            \
          "%s_test_any_vector(nelems 0) != SIZE_MAX", tn);                                          \
    CHECK_EQ_U("test_some(nelems 0)", 0, shmem_##NAME##_test_some(NULL, 0, idx, NULL, SHMEM_CMP_EQ, (T)1)); \
    CHECK_EQ_U("test_some_vector(nelems 0)", 0,                                                     \
               shmem_##NAME##_test_some_vector(NULL, 0, idx, NULL, SHMEM_CMP_EQ, NULL));            \
    /* all excluded: nothing satisfies (values 0, compare with 1), yet nothing blocks */            \
    shmem_##NAME##_wait_until_all(iv, N, status_none, SHMEM_CMP_EQ, (T)1);                          \
    shmem_##NAME##_wait_until_all_vector(iv, N, status_none, SHMEM_CMP_EQ, cmpv);                   \
    CHECK(shmem_##NAME##_wait_until_any(iv, N, status_none, SHMEM_CMP_EQ, (T)1) == SIZE_MAX,        \
          "%s_wait_until_any(all excluded) != SIZE_MAX", tn);                                       \
    CHECK(shmem_##NAME##_wait_until_any_vector(iv, N, status_none, SHMEM_CMP_EQ, cmpv) == SIZE_MAX, \
          "%s_wait_until_any_vector(all excluded) != SIZE_MAX", tn);                                \
    CHECK_EQ_U("wait_until_some(all excluded)", 0,                                                  \
               shmem_##NAME##_wait_until_some(iv, N, idx, status_none, SHMEM_CMP_EQ, (T)1));        \
    CHECK_EQ_U("wait_until_some_vector(all excluded)", 0,                                           \
               shmem_##NAME##_wait_until_some_vector(iv, N, idx, status_none, SHMEM_CMP_EQ, cmpv)); \
    CHECK_EQ_U("test_all(all excluded)", 1,                                                         \
               shmem_##NAME##_test_all(iv, N, status_none, SHMEM_CMP_EQ, (T)1));                    \
    CHECK_EQ_U("test_all_vector(all excluded)", 1,                                                  \
               shmem_##NAME##_test_all_vector(iv, N, status_none, SHMEM_CMP_EQ, cmpv));             \
    CHECK(shmem_##NAME##_test_any(iv, N, status_none, SHMEM_CMP_EQ, (T)0) == SIZE_MAX,              \
          "%s_test_any(all excluded, all satisfied) != SIZE_MAX", tn);                              \
    CHECK_EQ_U("test_some(all excluded, all satisfied)", 0,                                         \
               shmem_##NAME##_test_some(iv, N, idx, status_none, SHMEM_CMP_EQ, (T)0));              \
    /* --- local values against the serial reference, every operator --- */                        \
    for (int i = 0; i < N; i++) iv[i] = (T)i;                                                       \
    CHECK_EQ_U("test_all(GE 0, NULL status)", 1, shmem_##NAME##_test_all(iv, N, NULL, SHMEM_CMP_GE, (T)0)); \
    CHECK_EQ_U("test_all(LT 6, NULL status)", 0, shmem_##NAME##_test_all(iv, N, NULL, SHMEM_CMP_LT, (T)6)); \
    {                                                                                               \
      int only3[N] = {1, 1, 1, 0, 1, 1, 1};                                                         \
      CHECK_EQ_U("test_all(EQ 3, only index 3 included)", 1,                                       \
                 shmem_##NAME##_test_all(iv, N, only3, SHMEM_CMP_EQ, (T)3));                        \
      CHECK_EQ_U("test_any(NE 3, only index 3 included) is SIZE_MAX", 1,                            \
                 shmem_##NAME##_test_any(iv, N, only3, SHMEM_CMP_NE, (T)3) == SIZE_MAX);            \
    }                                                                                               \
    c = shmem_##NAME##_test_some(iv, N, idx, status_excl, SHMEM_CMP_LE, (T)3);                      \
    CHECK(c == 3 && idx[0] == 0 && idx[1] == 1 && idx[2] == 3,                                      \
          "%s_test_some(LE 3, index 2 excluded): expected {0,1,3} got %zu entries", tn, c);         \
    c = shmem_##NAME##_test_some(iv, N, idx, NULL, SHMEM_CMP_GT, (T)4);                             \
    CHECK(c == 2 && idx[0] == 5 && idx[1] == 6, "%s_test_some(GT 4): expected {5,6} got %zu", tn, c); \
    c = shmem_##NAME##_wait_until_some(iv, N, idx, NULL, SHMEM_CMP_NE, (T)4);                       \
    CHECK_EQ_U("wait_until_some(NE 4) count", N - 1, c);                                            \
    {                                                                                               \
      size_t i2 = shmem_##NAME##_test_any(iv, N, status_excl, SHMEM_CMP_EQ, (T)EXCL);               \
      CHECK(i2 == SIZE_MAX, "%s_test_any returned excluded index %zu", tn, i2);                     \
      i2 = shmem_##NAME##_test_any(iv, N, status_excl, SHMEM_CMP_EQ, (T)4);                         \
      CHECK_EQ_U("test_any(EQ 4)", 4, i2);                                                          \
    }                                                                                               \
    /* vector: element i satisfies iff iv[i] == cmpv[i] */                                          \
    for (int i = 0; i < N; i++) iv[i] = (i % 2) ? cmpv[i] : (T)0;                                   \
    CHECK_EQ_U("test_all_vector(mixed)", 0, shmem_##NAME##_test_all_vector(iv, N, NULL, SHMEM_CMP_EQ, cmpv)); \
    c = shmem_##NAME##_test_some_vector(iv, N, idx, NULL, SHMEM_CMP_EQ, cmpv);                      \
    CHECK(c == 3 && idx[0] == 1 && idx[1] == 3 && idx[2] == 5,                                      \
          "%s_test_some_vector: expected {1,3,5} got %zu entries", tn, c);                          \
    c = shmem_##NAME##_test_some_vector(iv, N, idx, NULL, SHMEM_CMP_LT, cmpv);                      \
    CHECK(c == 4 && idx[0] == 0 && idx[3] == 6, "%s_test_some_vector(LT): expected {0,2,4,6} got %zu", tn, c); \
    CHECK_EQ_U("test_all_vector(LE, all satisfy)", 1,                                  \
               shmem_##NAME##_test_all_vector(iv, N, NULL, SHMEM_CMP_LE, cmpv));                    \
    /* --- fairness: everything satisfied, repeated _any calls must visit every included index --- */ \
    {                                                                                               \
      int seen[N] = {0}, seen_w[N] = {0};                                                           \
      for (int r = 0; r < 2 * N; r++) {                                                             \
        size_t i1 = shmem_##NAME##_test_any(iv, N, status_excl, SHMEM_CMP_GE, (T)0);                \
        CHECK(i1 < N && i1 != EXCL, "%s_test_any (fairness) returned %zu", tn, i1);                 \
        seen[i1]++;                                                                                 \
      }                                                                                             \
      for (int r = 0; r < 2 * N; r++) {                                                             \
        size_t i2 = shmem_##NAME##_wait_until_any_vector(iv, N, NULL, SHMEM_CMP_LE, cmpv);          \
        CHECK(i2 < N, "%s_wait_until_any_vector (fairness) returned %zu", tn, i2);                  \
        seen_w[i2]++;                                                                               \
      }                                                                                             \
      for (int i = 0; i < N; i++) {                                                                 \
        CHECK(i == EXCL || seen[i], "%s_test_any: index %d never returned in %d calls", tn, i, 2 * N); \
        CHECK(seen_w[i], "%s_wait_until_any_vector: index %d never returned in %d calls", tn, i, 2 * N); \
      }                                                                                             \
    }                                                                                               \
    /* --- remote: the left neighbour's updates release our waits (write, then wait) --- */        \
    int r = right_pe();                                                                             \
    reset_##NAME((T)0);                                                                             \
    /* any: the excluded element is set first and must not be returned */                          \
    shmem_##NAME##_atomic_set(&iv[EXCL], (T)1, r);                                                  \
    shmem_fence();                                                                                  \
    shmem_##NAME##_atomic_set(&iv[5], (T)1, r);                                                     \
    {                                                                                               \
      size_t got = shmem_##NAME##_wait_until_any(iv, N, status_excl, SHMEM_CMP_EQ, (T)1);           \
      CHECK_EQ_U("wait_until_any (index 2 excluded) after remote sets of 2 then 5", 5, got);        \
    }                                                                                               \
    reset_##NAME((T)0);                                                                             \
    /* some: two elements set by put; the result is a nonempty subset of them, ascending */        \
    {                                                                                               \
      T two = (T)2;                                                                                 \
      shmem_##NAME##_put(&iv[1], &two, 1, r);                                                       \
      shmem_##NAME##_atomic_add(&iv[6], (T)2, r);                                                   \
      c = shmem_##NAME##_wait_until_some(iv, N, idx, status_excl, SHMEM_CMP_EQ, (T)2);              \
      CHECK(c >= 1 && c <= 2, "%s_wait_until_some returned count %zu", tn, c);                      \
      for (size_t k = 0; k < c; k++)                                                                \
        CHECK((idx[k] == 1 || idx[k] == 6) && (k == 0 || idx[k] > idx[k - 1]),                     \
              "%s_wait_until_some: entry %zu = %zu is not an ascending set index", tn, k, idx[k]);  \
      shmem_barrier_all();                                                                          \
      c = shmem_##NAME##_test_some(iv, N, idx, NULL, SHMEM_CMP_EQ, (T)2);                           \
      size_t rc = ref_##NAME(iv, NULL, (T)2, ref);                                                  \
      CHECK(c == rc && rc == 2 && idx[0] == ref[0] && idx[1] == ref[1],                             \
            "%s_test_some after barrier: %zu entries, reference %zu", tn, c, rc);                   \
    }                                                                                               \
    reset_##NAME((T)0);                                                                             \
    /* all: every included element set, one AMO at a time; the excluded one never is */            \
    for (int i = N - 1; i >= 0; i--)                                                                \
      if (i != EXCL) shmem_##NAME##_atomic_set(&iv[i], (T)3, r);                                    \
    shmem_##NAME##_wait_until_all(iv, N, status_excl, SHMEM_CMP_EQ, (T)3);                          \
    for (int i = 0; i < N; i++)                                                                     \
      CHECK(i == EXCL ? iv[i] == 0 : iv[i] == 3, "%s_wait_until_all returned with iv[%d] = %lld", tn, \
            i, (long long)iv[i]);                                                                   \
    reset_##NAME((T)0);                                                                             \
    /* vector forms: each element has its own target */                                             \
    for (int i = 0; i < N; i++)                                                                     \
      if (i != EXCL) shmem_##NAME##_atomic_add(&iv[i], cmpv[i], r);                                 \
    shmem_##NAME##_wait_until_all_vector(iv, N, status_excl, SHMEM_CMP_EQ, cmpv);                   \
    CHECK_EQ_U("test_all_vector after wait_until_all_vector", 1,                                    \
               shmem_##NAME##_test_all_vector(iv, N, status_excl, SHMEM_CMP_EQ, cmpv));             \
    CHECK_EQ_U("test_all_vector with the never-set element included", 0,                           \
               shmem_##NAME##_test_all_vector(iv, N, NULL, SHMEM_CMP_EQ, cmpv));                    \
    {                                                                                               \
      size_t got = shmem_##NAME##_wait_until_any_vector(iv, N, status_excl, SHMEM_CMP_EQ, cmpv);    \
      CHECK(got < N && got != EXCL, "%s_wait_until_any_vector returned %zu", tn, got);              \
      c = shmem_##NAME##_wait_until_some_vector(iv, N, idx, status_excl, SHMEM_CMP_EQ, cmpv);       \
      CHECK_EQ_U("wait_until_some_vector count", N - 1, c);                                         \
      c = shmem_##NAME##_test_any_vector(iv, N, status_excl, SHMEM_CMP_NE, cmpv);                   \
      CHECK(c == SIZE_MAX, "%s_test_any_vector(NE) returned %zu", tn, c);                           \
    }                                                                                               \
    shmem_barrier_all();                                                                            \
  }
SHT_AMO_STD_TYPES(DEF_FAMILY_TEST)

/* A wait that must really wait: PE 0 sleeps before releasing its right neighbour. */
static void test_blocking_release(void) {
  long *iv = (long *)storage;
  for (int i = 0; i < N; i++) iv[i] = 0;
  shmem_barrier_all();
  int r = right_pe();
  if (shtest_me == 0) shtest_sleep_ms(50);
  for (int i = 0; i < N; i++) shmem_long_atomic_inc(&iv[i], r);
  size_t idx[N];
  size_t c = shmem_long_wait_until_some(iv, N, idx, NULL, SHMEM_CMP_EQ, 1);
  CHECK(c >= 1, "wait_until_some after a delayed release returned %zu", c);
  shmem_long_wait_until_all(iv, N, NULL, SHMEM_CMP_EQ, 1);
  for (int i = 0; i < N; i++) CHECK(iv[i] == 1, "iv[%d] = %ld after wait_until_all", i, iv[i]);
  shmem_barrier_all();
}

int main(void) {
  shtest_init();
#define RUN(T, NAME, ISF) test_##NAME();
  SHT_AMO_STD_TYPES(RUN)
  test_blocking_release();
  shtest_done("sync_families");
  return 0;
}
