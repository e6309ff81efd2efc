/* Distributed locks: set_lock/clear_lock give mutual exclusion (a counter on PE 0 incremented
 * non-atomically with get + put under the lock by all PEs, plus an "inside" AMO counter that must
 * never exceed 1); test_lock returns 0 when it acquires and 1 when the lock is held; a lock in the
 * heap and one in .bss. */
#include "shtest.h"

static long lock_bss; /* symmetric long, zero: a free lock */
static long counter;
static long inside;
static long trace_owner;

static void mutual_exclusion(long *lock, const char *where) {
  int me = shtest_me, n = shtest_npes;
  long iters = shtest_scaled(300);
  if (me == 0) counter = 0;
  shmem_barrier_all();
  for (long i = 0; i < iters; i++) {
    shmem_set_lock(lock);
    long in = shmem_long_atomic_fetch_inc(&inside, 0);
    CHECK(in == 0, "shmem_set_lock (%s): %ld other PE(s) inside the critical section with me", where, in);
    long v = shmem_long_g(&counter, 0); /* non-atomic read-modify-write: only safe under the lock */
    if ((i & 15) == 0) shtest_sleep_ms(0);
    shmem_long_p(&counter, v + 1, 0);
    shmem_long_atomic_add(&inside, -1, 0);
    shmem_clear_lock(lock); /* completes the put and the add before releasing */
  }
  shmem_barrier_all();
  if (me == 0) CHECK_EQ_U("counter incremented under shmem_set_lock", iters * n, counter);
  shmem_barrier_all();
}

static void test_lock_values(long *lock, const char *where) {
  int me = shtest_me, n = shtest_npes;
  /* PE 0 holds the lock: everybody else's test_lock must return 1 (already set) */
  if (me == 0) shmem_set_lock(lock);
  shmem_barrier_all();
  if (me != 0) CHECK(shmem_test_lock(lock) == 1, "shmem_test_lock (%s) while PE 0 holds the lock returned 0", where);
  shmem_barrier_all();
  if (me == 0) shmem_clear_lock(lock);
  shmem_barrier_all();
  /* one PE at a time tries: it must get the lock (0), everyone else then sees it held (1) */
  for (int owner = 0; owner < n; owner++) {
    if (me == owner) {
      CHECK(shmem_test_lock(lock) == 0, "shmem_test_lock (%s) on a free lock returned nonzero (PE %d's turn)", where,
            owner);
      shmem_long_p(&trace_owner, owner, 0);
      shmem_quiet();
    }
    shmem_barrier_all();
    if (me != owner)
      CHECK(shmem_test_lock(lock) == 1, "shmem_test_lock (%s) while PE %d holds it returned 0", where, owner);
    shmem_barrier_all();
    if (me == owner) shmem_clear_lock(lock);
    shmem_barrier_all();
  }
  /* all PEs race with test_lock: exactly one wins */
  static long winners;
  winners = 0;
  shmem_barrier_all();
  int won = shmem_test_lock(lock) == 0;
  if (won) shmem_long_atomic_inc(&winners, 0);
  shmem_barrier_all();
  if (me == 0) CHECK_EQ_U("PEs that acquired the lock with concurrent shmem_test_lock", 1, winners);
  shmem_barrier_all();
  if (won) shmem_clear_lock(lock);
  shmem_barrier_all();
  /* spin with test_lock until acquired: also mutual exclusion */
  long iters = shtest_scaled(50);
  if (me == 0) counter = 0;
  shmem_barrier_all();
  for (long i = 0; i < iters; i++) {
    while (shmem_test_lock(lock) != 0) {
      SHT_REF_PROGRESS();
    }
    long v = shmem_long_g(&counter, 0);
    shmem_long_p(&counter, v + 1, 0);
    shmem_clear_lock(lock);
  }
  shmem_barrier_all();
  if (me == 0) CHECK_EQ_U("counter incremented under shmem_test_lock", iters * n, counter);
  shmem_barrier_all();
}

int main(void) {
  shtest_init();
  long *lock_heap = shmem_calloc(1, sizeof(long));
  CHECK(lock_heap != NULL, "shmem_calloc failed");
  mutual_exclusion(lock_heap, "lock on the heap");
  mutual_exclusion(&lock_bss, "lock in .bss");
  test_lock_values(lock_heap, "lock on the heap");
  test_lock_values(&lock_bss, "lock in .bss");
  shmem_free(lock_heap);
  shtest_done("lock");
  return 0;
}
