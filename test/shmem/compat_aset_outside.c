/* Active-set collectives called on every PE, with an active set that leaves some PEs out (the even
 * PEs here), as older programs do: a PE outside the set returns at once without touching its
 * buffers or pSync (as other implementations do), and the members get the right result. Every
 * active-set routine: sync, barrier, broadcast/collect/fcollect/alltoall/alltoalls 32 and 64, and
 * every TYPENAME_OP_to_all. Under SHMEM_DEBUG a PE outside the set also gets a warning line. */
#include <complex.h>

#include "shtest.h"

#define N 4
#define MAXPES 64
#define SENTINEL 0x5a

static long psync[SHMEM_SYNC_SIZE];
static unsigned char src[8 * N * MAXPES], dst[8 * N * MAXPES];
static unsigned char wrk[64 * SHMEM_REDUCE_MIN_WRKDATA_SIZE + 8 * N * 16];

static int set_size, my_index; /* my_index: -1 outside the set */

static void reset(void) {
  memset(dst, SENTINEL, sizeof dst);
  shmem_barrier_all(); /* nobody still reads the previous round */
}

/* Outside the set nothing may change: dest keeps the sentinel, pSync its value. */
static void check_untouched(const char *routine) {
  if (my_index >= 0) return;
  for (size_t i = 0; i < sizeof dst; i++)
    CHECK(dst[i] == SENTINEL, "%s on a PE outside the active set wrote dest byte %zu", routine, i);
  for (int i = 0; i < SHMEM_SYNC_SIZE; i++)
    CHECK(psync[i] == SHMEM_SYNC_VALUE, "%s outside the set changed pSync[%d]", routine, i);
}

#define TO_ALL_CASE(OP, T, NAME, VALUE, EXPECT)                                                   \
  do {                                                                                            \
    T *s = (T *)src, *d = (T *)dst;                                                               \
    reset();                                                                                      \
    for (int i = 0; i < N; i++) s[i] = (T)(VALUE);                                                \
    shmem_##NAME##_##OP##_to_all(d, s, N, 0, 1, set_size, (T *)wrk, psync);                       \
    check_untouched("shmem_" #NAME "_" #OP "_to_all");                                            \
    if (my_index >= 0)                                                                            \
      for (int i = 0; i < N; i++)                                                                 \
        CHECK(d[i] == (T)(EXPECT), "shmem_%s_%s_to_all: element %d wrong on member %d", #NAME,    \
              #OP, i, my_index);                                                                  \
  } while (0)

/* and/or/xor of 1 from every member; max/min of the member's index; sum/prod of 1 and 2-or-1 */
#define BIT_CASES(P, T, NAME)                                                                     \
  TO_ALL_CASE(and, T, NAME, 1, 1);                                                                \
  TO_ALL_CASE(or, T, NAME, 1, 1);                                                                 \
  TO_ALL_CASE(xor, T, NAME, 1, set_size & 1);
#define MINMAX_CASES(P, T, NAME)                                                                  \
  TO_ALL_CASE(max, T, NAME, my_index, set_size - 1);                                              \
  TO_ALL_CASE(min, T, NAME, my_index, 0);
#define ARITH_CASES(P, T, NAME)                                                                   \
  TO_ALL_CASE(sum, T, NAME, 1, set_size);                                                         \
  TO_ALL_CASE(prod, T, NAME, my_index == 0 ? 2 : 1, 2);

#define SIZED_CASES(B, T)                                                                         \
  do {                                                                                            \
    T *s = (T *)src, *d = (T *)dst;                                                               \
    for (int i = 0; i < N * MAXPES; i++) s[i] = (T)(my_index * 1000 + i);                         \
    reset();                                                                                      \
    shmem_broadcast##B(d, s, N, 0, 0, 1, set_size, psync);                                        \
    check_untouched("shmem_broadcast" #B);                                                        \
    if (my_index > 0)                                                                             \
      for (int i = 0; i < N; i++) CHECK_EQ_U("shmem_broadcast" #B, i, d[i]);                      \
    reset();                                                                                      \
    shmem_collect##B(d, s, N, 0, 1, set_size, psync);                                             \
    check_untouched("shmem_collect" #B);                                                          \
    if (my_index >= 0)                                                                            \
      for (int i = 0; i < N * set_size; i++)                                                      \
        CHECK_EQ_U("shmem_collect" #B, (i / N) * 1000 + i % N, d[i]);                             \
    reset();                                                                                      \
    shmem_fcollect##B(d, s, N, 0, 1, set_size, psync);                                            \
    check_untouched("shmem_fcollect" #B);                                                         \
    if (my_index >= 0)                                                                            \
      for (int i = 0; i < N * set_size; i++)                                                      \
        CHECK_EQ_U("shmem_fcollect" #B, (i / N) * 1000 + i % N, d[i]);                            \
    reset();                                                                                      \
    shmem_alltoall##B(d, s, N, 0, 1, set_size, psync);                                            \
    check_untouched("shmem_alltoall" #B);                                                         \
    if (my_index >= 0)                                                                            \
      for (int p = 0; p < set_size; p++)                                                          \
        for (int i = 0; i < N; i++)                                                               \
          CHECK_EQ_U("shmem_alltoall" #B, p * 1000 + my_index * N + i, d[p * N + i]);             \
    reset();                                                                                      \
    shmem_alltoalls##B(d, s, 1, 1, N, 0, 1, set_size, psync);                                     \
    check_untouched("shmem_alltoalls" #B);                                                        \
    if (my_index >= 0)                                                                            \
      for (int p = 0; p < set_size; p++)                                                          \
        for (int i = 0; i < N; i++)                                                               \
          CHECK_EQ_U("shmem_alltoalls" #B, p * 1000 + my_index * N + i, d[p * N + i]);            \
  } while (0)

int main(void) {
  shtest_init();
  CHECK(shtest_npes <= MAXPES, "at most %d PEs", MAXPES);
  for (int i = 0; i < SHMEM_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;
  set_size = (shtest_npes + 1) / 2; /* PEs 0, 2, 4, ... */
  my_index = shtest_me % 2 == 0 ? shtest_me / 2 : -1;
  shmem_barrier_all();

  reset();
  shmem_barrier(0, 1, set_size, psync);
  check_untouched("shmem_barrier");
  shmem_sync(0, 1, set_size, psync);
  check_untouched("shmem_sync");
  SIZED_CASES(32, uint32_t);
  SIZED_CASES(64, uint64_t);
  HOSHMEM_ASET_REDUCE_BIT_TYPES(BIT_CASES, )
  HOSHMEM_ASET_REDUCE_MINMAX_TYPES(MINMAX_CASES, )
  HOSHMEM_ASET_REDUCE_ARITH_TYPES(ARITH_CASES, )
  shtest_done("compat_aset_outside");
  return 0;
}
