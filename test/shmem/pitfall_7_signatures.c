/* Pitfall 7, last bullet (and 13, bitwise reduction types): in 1.6 the _vector forms of the point-to-point families take
 * `const TYPE *cmp_values` (and every family a `const int *status`). Checked at compile time for
 * every p2p type: a prototype with a non-const pointer fails the build. At run time the forms are
 * called with const arrays (a read-only object) to show the library does not write them. */
#include "shtest.h"
#include "types.h"

#define SAME(f, type) __builtin_types_compatible_p(__typeof__(&f), type)

#define CHECK_SIGS(T, N, ISF)                                                                            \
  _Static_assert(SAME(shmem_##N##_wait_until_all_vector, void (*)(T *, size_t, const int *, int, const T *)), \
                 "shmem_" #N "_wait_until_all_vector: cmp_values must be const " #T " *");                \
  _Static_assert(SAME(shmem_##N##_wait_until_any_vector,                                                \
                      size_t (*)(T *, size_t, const int *, int, const T *)), "wait_until_any_vector " #N); \
  _Static_assert(SAME(shmem_##N##_wait_until_some_vector,                                               \
                      size_t (*)(T *, size_t, size_t *, const int *, int, const T *)),                   \
                 "wait_until_some_vector " #N);                                                          \
  _Static_assert(SAME(shmem_##N##_test_all_vector, int (*)(T *, size_t, const int *, int, const T *)),     \
                 "test_all_vector " #N);                                                                  \
  _Static_assert(SAME(shmem_##N##_test_any_vector, size_t (*)(T *, size_t, const int *, int, const T *)),  \
                 "test_any_vector " #N);                                                                  \
  _Static_assert(SAME(shmem_##N##_test_some_vector,                                                     \
                      size_t (*)(T *, size_t, size_t *, const int *, int, const T *)),                   \
                 "test_some_vector " #N);                                                                 \
  _Static_assert(SAME(shmem_##N##_wait_until_all, void (*)(T *, size_t, const int *, int, T)),            \
                 "wait_until_all " #N);                                                                   \
  _Static_assert(SAME(shmem_##N##_test_some, size_t (*)(T *, size_t, size_t *, const int *, int, T)),     \
                 "test_some " #N);
SHT_P2P_TYPES(CHECK_SIGS)

/* Pitfall 13: bitwise team reductions exclude char, schar, short, int, long, longlong and ptrdiff.
 * Each excluded name is defined here as a static function: had shmem.h declared it, this would be
 * a conflicting declaration and the build would fail. */
#define EXCLUDED(N)                                                \
  static int shmem_##N##_and_reduce(void) { return 1; }            \
  static int shmem_##N##_or_reduce(void) { return 2; }             \
  static int shmem_##N##_xor_reduce(void) { return 4; }
EXCLUDED(char) EXCLUDED(schar) EXCLUDED(short) EXCLUDED(int) EXCLUDED(long) EXCLUDED(longlong) EXCLUDED(ptrdiff)
#define CALL_EXCLUDED(N) (shmem_##N##_and_reduce() + shmem_##N##_or_reduce() + shmem_##N##_xor_reduce())

static long ivars[4] = {1, 2, 3, 4};
static const long cmp_ro[4] = {1, 2, 3, 4}; /* in .rodata: a write through it would crash */
static const int status_ro[4] = {0, 0, 1, 0};

int main(void) {
  shtest_init();
  size_t idx[4];
  shmem_long_wait_until_all_vector(ivars, 4, status_ro, SHMEM_CMP_EQ, cmp_ro);
  CHECK_EQ_U("test_all_vector with const arrays", 1, shmem_long_test_all_vector(ivars, 4, status_ro, SHMEM_CMP_EQ, cmp_ro));
  CHECK_EQ_U("test_some_vector with const arrays", 3,
             shmem_long_test_some_vector(ivars, 4, idx, status_ro, SHMEM_CMP_EQ, cmp_ro));
  size_t a = shmem_long_wait_until_any_vector(ivars, 4, status_ro, SHMEM_CMP_EQ, cmp_ro);
  CHECK(a < 4 && a != 2, "wait_until_any_vector returned %zu", a);
  CHECK(cmp_ro[0] == 1 && cmp_ro[3] == 4 && status_ro[2] == 1, "const arrays changed");
  CHECK_EQ_U("the test's own stand-ins for the excluded reductions", 7 * 7,
             CALL_EXCLUDED(char) + CALL_EXCLUDED(schar) + CALL_EXCLUDED(short) + CALL_EXCLUDED(int) +
                 CALL_EXCLUDED(long) + CALL_EXCLUDED(longlong) + CALL_EXCLUDED(ptrdiff));
  shtest_done("pitfall_7_signatures");
  return 0;
}
