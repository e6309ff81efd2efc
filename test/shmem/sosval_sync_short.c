/* short and unsigned short in the wait_until/test _all/_any/_some/_vector families, typed and
 * through the C11 generic names (SOS offers these beyond the spec table and its
 * c11_shmem_{test,wait_until}_all_any_some tests use them). Every PE writes its slot on every PE:
 * slot j ends up holding j + 1. */
#include "shtest.h"

#define MAXPE 64

static short s[MAXPE];
static unsigned short us[MAXPE];

static void check_slots(const char *what) {
  for (int j = 0; j < shtest_npes; ++j) {
    CHECK(s[j] == (short)(j + 1), "%s: short slot %d expected %d got %d", what, j, j + 1, s[j]);
    CHECK(us[j] == (unsigned short)(j + 1), "%s: ushort slot %d expected %d got %u", what, j,
          j + 1, us[j]);
  }
}

static void reset(void) {
  memset(s, 0, sizeof s);
  memset(us, 0, sizeof us);
  shmem_barrier_all();
}

static void fill_everyone(void) {
  for (int pe = 0; pe < shtest_npes; ++pe) {
    shmem_short_p(&s[shtest_me], (short)(shtest_me + 1), pe);
    shmem_ushort_p(&us[shtest_me], (unsigned short)(shtest_me + 1), pe);
  }
}

int main(void) {
  shtest_init();
  if (shtest_npes > MAXPE) SHT_FAIL("at most %d PEs", MAXPE);
  const size_t n = (size_t)shtest_npes;
  short szero[MAXPE] = {0};
  unsigned short uzero[MAXPE] = {0};

  /* typed _all */
  reset();
  fill_everyone();
  shmem_short_wait_until_all(s, n, NULL, SHMEM_CMP_NE, 0);
  shmem_ushort_wait_until_all_vector(us, n, NULL, SHMEM_CMP_GT, uzero);
  check_slots("wait_until_all");
  CHECK(shmem_short_test_all(s, n, NULL, SHMEM_CMP_GT, 0) == 1, "short test_all after fill");
  CHECK(shmem_ushort_test_all_vector(us, n, NULL, SHMEM_CMP_NE, uzero) == 1,
        "ushort test_all_vector after fill");

  /* _any and _some return each satisfied index; the status mask excludes the others */
  reset();
  fill_everyone();
  int seen[MAXPE] = {0};
  for (size_t k = 0; k < n; ++k) {
    size_t i = shmem_short_wait_until_any(s, n, seen, SHMEM_CMP_NE, 0);
    CHECK(i < n && !seen[i], "short wait_until_any returned %zu", i);
    seen[i] = 1;
  }
  CHECK(shmem_short_wait_until_any(s, n, seen, SHMEM_CMP_NE, 0) == SIZE_MAX,
        "short wait_until_any over an empty set must return SIZE_MAX");
  size_t idx[MAXPE];
  size_t c = shmem_ushort_wait_until_some_vector(us, n, idx, NULL, SHMEM_CMP_NE, uzero);
  CHECK(c >= 1 && c <= n, "ushort wait_until_some_vector returned %zu of %zu", c, n);
  for (size_t k = 0; k < c; ++k) CHECK(us[idx[k]] != 0, "index %zu not satisfied", idx[k]);
  shmem_barrier_all(); /* every slot written everywhere */
  CHECK(shmem_ushort_test_some(us, n, idx, NULL, SHMEM_CMP_NE, 0) == n,
        "ushort test_some must find all %zu slots", n);
  for (size_t k = 0; k < n; ++k) CHECK_EQ_U("ushort test_some index", k, idx[k]);
  CHECK(shmem_short_test_any_vector(s, n, NULL, SHMEM_CMP_EQ, szero) == SIZE_MAX,
        "short test_any_vector with no satisfied slot must return SIZE_MAX");
  check_slots("any/some");

  /* C11 generic names select the short/ushort routines */
  reset();
  fill_everyone();
  shmem_wait_until_all(s, n, NULL, SHMEM_CMP_NE, 0);
  shmem_wait_until_some(us, n, idx, NULL, SHMEM_CMP_NE, 0);
  while (!shmem_test_all(us, n, NULL, SHMEM_CMP_NE, 0)) {
  }
  CHECK(shmem_test_any(s, n, NULL, SHMEM_CMP_EQ, 0) == SIZE_MAX, "generic test_any(short)");
  CHECK(shmem_test_some(s, n, idx, NULL, SHMEM_CMP_GE, 1) == n, "generic test_some(short)");
  CHECK(shmem_wait_until_any_vector(us, n, NULL, SHMEM_CMP_GE, uzero) < n,
        "generic wait_until_any_vector(ushort)");
  check_slots("generic");

  shtest_done("sosval_sync_short");
  return 0;
}
