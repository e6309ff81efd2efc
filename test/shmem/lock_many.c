/* Many locks at once, homed on different PEs (HOSHMEM_LOCK_HOME=hash), taken in patterns that
 * make a hybrid lock (HOSHMEM_LOCK=hybrid) migrate between CPU and network mode: every PE in
 * turn, bursts of one PE (so a policy with hysteresis reaches its count), a PE of another node
 * between two of the home's node; shmem_test_lock spins mixed with shmem_set_lock; and a lock
 * freed and allocated again, zeroed, after use (its library state must follow the zero); a
 * thousand locks taken once each.
 * Each lock guards a counter on its own PE, incremented non-atomically (get + put) under it; an
 * "inside" AMO counter per lock must never exceed 1; totals are exact at the end. */
#include "shtest.h"

#define NLOCKS 6

static long glock[2]; /* two locks in .bss */
static long inside[NLOCKS];
static long counter[NLOCKS];

static long *lock_of(long *heap, int j) { return j < 4 ? &heap[j * 8] : &glock[j - 4]; }

static void critical(long *lk, int j, int use_test) {
  int n = shtest_npes, owner = j % n;
  if (use_test) {
    while (shmem_test_lock(lk) != 0) SHT_REF_PROGRESS();
  } else {
    shmem_set_lock(lk);
  }
  long in = shmem_long_atomic_fetch_inc(&inside[j], owner);
  CHECK(in == 0, "lock %d: %ld other PE(s) inside the critical section with PE %d", j, in, shtest_me);
  long v = shmem_long_g(&counter[j], owner);
  shmem_long_p(&counter[j], v + 1, owner);
  shmem_long_atomic_add(&inside[j], -1, owner);
  shmem_clear_lock(lk);
}

static void check_totals(const char *phase, long expected[NLOCKS]) {
  shmem_barrier_all();
  for (int j = 0; j < NLOCKS; j++) {
    if (j % shtest_npes != shtest_me) continue;
    CHECK(counter[j] == expected[j], "%s: lock %d's counter is %ld, expected %ld", phase, j,
          counter[j], expected[j]);
    counter[j] = 0;
  }
  shmem_barrier_all();
}

int main(void) {
  shtest_init();
  int me = shtest_me, n = shtest_npes;
  long *heap = shmem_calloc(4 * 8, sizeof(long)); /* one lock per 64-byte line */
  CHECK(heap != NULL, "shmem_calloc failed");
  long expected[NLOCKS];
  long iters = shtest_scaled(200);

  /* 1: everyone, every lock, round robin; a fifth of the acquisitions by test_lock */
  for (int j = 0; j < NLOCKS; j++) expected[j] = 0;
  shmem_barrier_all();
  for (long i = 0; i < iters; i++) {
    int j = (int)((me * 7 + i * 3) % NLOCKS);
    critical(lock_of(heap, j), j, i % 5 == 4);
  }
  for (long i = 0; i < iters; i++)
    for (int p = 0; p < n; p++) expected[(p * 7 + i * 3) % NLOCKS]++;
  check_totals("every PE, every lock", expected);

  /* 2: bursts: PE p takes lock 0 burst times in a row while the others wait, then the next PE
   * (a hysteresis count is reached on each side; the lock changes hands between nodes) */
  const long burst = 12;
  for (int p = 0; p < n; p++) {
    if (me == p)
      for (long i = 0; i < burst; i++) critical(lock_of(heap, 0), 0, 0);
    shmem_barrier_all();
  }
  for (int j = 0; j < NLOCKS; j++) expected[j] = j == 0 ? burst * n : 0;
  check_totals("bursts of one PE", expected);

  /* 3: pairs of PEs alternate on one lock (one migration per acquisition with an eager policy
   * when they are on different nodes), the others on another lock at the same time */
  for (int j = 0; j < NLOCKS; j++) expected[j] = 0;
  for (long i = 0; i < iters / 2; i++) {
    critical(lock_of(heap, me < 2 ? 1 : 5), me < 2 ? 1 : 5, 0);
    if ((i & 7) == 0) shtest_sleep_ms(0);
  }
  expected[1] = (iters / 2) * (n < 2 ? n : 2);
  expected[5] = (iters / 2) * (n > 2 ? n - 2 : 0);
  check_totals("pairs", expected);

  /* 4: a lock freed after use and allocated again: zeroed, it is a new free lock */
  for (int round = 0; round < 3; round++) {
    long *fresh = shmem_malloc(sizeof(long));
    CHECK(fresh != NULL, "shmem_malloc failed");
    *fresh = 0;
    shmem_barrier_all();
    for (long i = 0; i < 20; i++) critical(fresh, 2, i % 3 == 2);
    shmem_barrier_all();
    shmem_free(fresh);
  }
  for (int j = 0; j < NLOCKS; j++) expected[j] = j == 2 ? 60L * n : 0;
  check_totals("a lock freed and allocated again", expected);

  /* 5: a thousand locks, each taken once by every PE (a hybrid lock's table holds them all) */
  const int many = 1000;
  long *table = shmem_calloc((size_t)many, sizeof(long));
  CHECK(table != NULL, "shmem_calloc failed");
  shmem_barrier_all();
  for (int k = 0; k < many; k++) {
    long *lk = &table[(k + me * 37) % many];
    shmem_set_lock(lk);
    shmem_clear_lock(lk);
  }
  shmem_barrier_all();
  shmem_free(table);

  shmem_free(heap);
  shtest_done("lock_many");
  return 0;
}
