/* AMOs under contention.
 * 1. All PEs hammer one word on PE 0 with fetch_add / fetch_inc / add / compare_swap loops: the
 *    final value is exact and the fetched values of all PEs together are a permutation of
 *    0 .. total-1 (each PE's own sequence strictly increasing).
 * 2. 32-bit AMOs on the two halves of one 8-byte word, concurrently from all PEs: neither half may
 *    corrupt the other (a carry out of the low half, or a read-modify-write of the whole word,
 *    would show). */
#include "shtest.h"
#include "types.h"

static long counter_long;
static int counter_int;
static unsigned long long counter_ull;
static long long cas_counter;
static union {
  uint64_t whole;
  uint32_t half[2];
} split __attribute__((aligned(8)));

static void check_permutation(const char *what, long *log, long iters, long total) {
  /* every PE put its fetched values into PE 0's log; PE 0 checks them */
  int me = shtest_me, n = shtest_npes;
  for (int pe = 0; pe < n; pe++)
    for (long i = 1; i < iters; i++)
      if (me == 0)
        CHECK(log[pe * iters + i] > log[pe * iters + i - 1],
              "%s: PE %d's fetched values not increasing at %ld: %ld then %ld", what, pe, i,
              log[pe * iters + i - 1], log[pe * iters + i]);
  if (me != 0) return;
  unsigned char *seen = calloc((size_t)total, 1);
  CHECK(seen != NULL, "calloc failed");
  for (long i = 0; i < total; i++) {
    long v = log[i];
    CHECK(v >= 0 && v < total, "%s: fetched value %ld (by PE %ld) outside [0, %ld)", what, v, i / iters, total);
    CHECK(!seen[v], "%s: value %ld fetched twice (second time by PE %ld)", what, v, i / iters);
    seen[v] = 1;
  }
  free(seen);
}

int main(void) {
  shtest_init();
  int me = shtest_me, n = shtest_npes;
  long iters = shtest_scaled(10000);
  long total = iters * n;
  long *log = shmem_malloc(sizeof(long) * (size_t)total);
  long *mine = malloc(sizeof(long) * (size_t)iters);
  CHECK(log && mine, "allocation of %ld longs failed", total);
  if (me == 0) { counter_long = 0; counter_int = 0; counter_ull = 0; cas_counter = 0; split.whole = 0; }
  shmem_barrier_all();

  /* 1a. long fetch_add */
  for (long i = 0; i < iters; i++) mine[i] = shmem_long_atomic_fetch_add(&counter_long, 1, 0);
  shmem_long_put(log + me * iters, mine, (size_t)iters, 0);
  shmem_barrier_all();
  if (me == 0) CHECK_EQ_U("final shmem_long_atomic_fetch_add counter", total, counter_long);
  check_permutation("shmem_long_atomic_fetch_add", log, iters, total);
  shmem_barrier_all();

  /* 1b. int fetch_inc */
  for (long i = 0; i < iters; i++) mine[i] = shmem_int_atomic_fetch_inc(&counter_int, 0);
  shmem_long_put(log + me * iters, mine, (size_t)iters, 0);
  shmem_barrier_all();
  if (me == 0) CHECK_EQ_U("final shmem_int_atomic_fetch_inc counter", total, counter_int);
  check_permutation("shmem_int_atomic_fetch_inc", log, iters, total);
  shmem_barrier_all();

  /* 1c. non-fetching add and inc; the barrier completes them */
  for (long i = 0; i < iters; i++) {
    if (i & 1)
      shmem_ulonglong_atomic_add(&counter_ull, 3, 0);
    else
      shmem_ulonglong_atomic_inc(&counter_ull, 0);
  }
  shmem_barrier_all(); /* must complete the non-fetching AMOs */
  if (me == 0) CHECK_EQ_U("final shmem_ulonglong_atomic_add/inc counter", (unsigned long long)n * (iters / 2 * 3 + (iters + 1) / 2), counter_ull);
  shmem_barrier_all();

  /* 1d. increments through compare_swap retry loops */
  long cas_iters = iters / 4 > 0 ? iters / 4 : 1;
  long fails = 0;
  for (long i = 0; i < cas_iters; i++) {
    long long old = shmem_longlong_atomic_fetch(&cas_counter, 0);
    for (;;) {
      long long got = shmem_longlong_atomic_compare_swap(&cas_counter, old, old + 1, 0);
      if (got == old) break;
      CHECK(got > old, "shmem_longlong_atomic_compare_swap: counter went backwards from %lld to %lld", old, got);
      old = got;
      fails++;
    }
  }
  shmem_barrier_all();
  if (me == 0) CHECK_EQ_U("final compare_swap loop counter", (unsigned long long)n * cas_iters, cas_counter);
  shmem_barrier_all();

  /* 2. the two 32-bit halves of one 8-byte word, all PEs at once. The low half adds 0x80000001
   * (it wraps every other add: a carry into the high half would show); the high half adds 3. */
  for (long i = 0; i < iters; i++) {
    if ((i + me) & 1) {
      uint32_t old = shmem_uint32_atomic_fetch_add(&split.half[0], 0x80000001u, 0);
      (void)old;
      shmem_uint32_atomic_add(&split.half[1], 3u, 0);
    } else {
      shmem_uint32_atomic_add(&split.half[1], 3u, 0);
      shmem_uint32_atomic_fetch_add(&split.half[0], 0x80000001u, 0);
    }
  }
  shmem_barrier_all();
  if (me == 0) {
    uint32_t lo = (uint32_t)((uint64_t)total * 0x80000001u);
    uint32_t hi = (uint32_t)((uint64_t)total * 3u);
    CHECK_EQ_U("low 32-bit half after concurrent uint32 fetch_add", lo, split.half[0]);
    CHECK_EQ_U("high 32-bit half after concurrent uint32 add", hi, split.half[1]);
    split.whole = 0;
  }
  shmem_barrier_all();
  /* bitwise on the halves: each PE sets its own bits in both halves with or/xor, then clears a
   * different bit with and; compare_swap on one half while the other half changes */
  {
    uint32_t bit = 1u << (me % 32);
    shmem_uint32_atomic_or(&split.half[0], bit, 0);
    shmem_uint32_atomic_fetch_xor(&split.half[1], bit << 0, 0);
    for (long i = 0; i < iters / 8 + 1; i++) {
      /* toggling twice leaves the half unchanged; interleaves with the other PEs' updates */
      shmem_uint32_atomic_xor(&split.half[1], 0x10000u << (me % 16), 0);
      shmem_uint32_atomic_fetch_xor(&split.half[1], 0x10000u << (me % 16), 0);
      shmem_uint32_atomic_fetch_or(&split.half[0], bit, 0);
    }
  }
  shmem_barrier_all();
  if (me == 0) {
    uint32_t want = 0;
    for (int pe = 0; pe < n; pe++) want |= 1u << (pe % 32);
    uint32_t want_hi = 0;
    for (int pe = 0; pe < n; pe++) want_hi ^= 1u << (pe % 32);
    CHECK_EQ_U("low half after concurrent uint32 or", want, split.half[0]);
    CHECK_EQ_U("high half after concurrent uint32 xor", want_hi, split.half[1]);
  }
  shmem_barrier_all();
  free(mine);
  shmem_free(log);
  if (me == 0) printf("compare_swap retries on PE 0: %ld\n", fails);
  shtest_done("amo_contention");
  return 0;
}
