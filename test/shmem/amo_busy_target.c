/* A target that computes without calling the library still answers every AMO. PE 0 computes
 * (arithmetic and plain loads of its own memory, no OpenSHMEM call) until every other PE has
 * told it, with a put, that it is done; meanwhile each of them makes fetch-adds and adds on PE 0's
 * counters. Where AMOs progress only when the target enters the library (software AMOs without a
 * progress thread), the other PEs never finish and PE 0 gives up after a minute
 * (AMO_BUSY_GIVE_UP_S): a failure, not a hang. Then the sums must be exact and every fetched value distinct. */
#include <stdlib.h>
#include <time.h>

#include "shtest.h"

static long fetched_counter, added_counter;
static long done_flags[64];
static long seen[64 * 256];

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(void) {
  shtest_init();
  const int n = shtest_npes, me = shtest_me;
  const long per_pe = 256;
  if (n > 64) {
    shtest_done("amo_busy_target");
    return 0;
  }
  long *got = shmem_malloc(sizeof(long) * per_pe);
  shmem_barrier_all();
  if (me == 0) {
    /* computing: no library call until every other PE's flag arrived */
    volatile double x = 1.0;
    const char *limit = getenv("AMO_BUSY_GIVE_UP_S");
    const double give_up_s = limit ? atof(limit) : 60;
    const double give_up = now_s() + give_up_s;
    int done = 1;
    while (done < n && now_s() < give_up) {
      for (int i = 0; i < 100000; i++) x = x * 1.0000001 + 1e-9;
      done = 1;
      for (int pe = 1; pe < n; pe++) done += __atomic_load_n(&done_flags[pe], __ATOMIC_ACQUIRE) != 0;
    }
    CHECK(done == n, "only %d of %d PEs finished their AMOs while PE 0 computed for %g s", done - 1,
          n - 1, give_up_s);
  } else {
    for (long i = 0; i < per_pe; i++) {
      got[i] = shmem_long_atomic_fetch_add(&fetched_counter, 1, 0);
      shmem_long_atomic_add(&added_counter, 2, 0);
    }
    shmem_quiet();
    shmem_long_p(&done_flags[me], 1, 0);
    shmem_quiet();
  }
  shmem_barrier_all();
  /* every fetched value once: gather them on PE 0 */
  if (me != 0) shmem_putmem(&seen[me * per_pe], got, sizeof(long) * per_pe, 0);
  shmem_barrier_all();
  if (me == 0) {
    const long total = (n - 1) * per_pe;
    CHECK(fetched_counter == total, "fetch-add counter %ld, expected %ld", fetched_counter, total);
    CHECK(added_counter == 2 * total, "add counter %ld, expected %ld", added_counter, 2 * total);
    char *hit = calloc(total > 0 ? total : 1, 1);
    for (int pe = 1; pe < n; pe++)
      for (long i = 0; i < per_pe; i++) {
        const long v = seen[pe * per_pe + i];
        CHECK(v >= 0 && v < total && !hit[v], "PE %d fetched %ld twice or out of range", pe, v);
        if (v >= 0 && v < total) hit[v] = 1;
      }
    free(hit);
  }
  shmem_free(got);
  shtest_done("amo_busy_target");
  return 0;
}
