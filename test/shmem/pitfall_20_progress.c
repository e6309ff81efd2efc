/* Pitfall 20: one-sided operations aimed at a PE that is computing and makes no OpenSHMEM calls
 * still complete. PE 0 computes (a plain loop that reads only its own memory) until a word that
 * its peers write remotely says they are done, with no library call in the loop; every other PE
 * meanwhile does puts, gets, fetching AMOs, put_signal and a quiet targeting PE 0, and checks the
 * results. Without asynchronous progress for PE 0 those calls would hang (the timeout fails the
 * test). The loop gives up after 60 s with a clear message. With 1 PE PE 0 is its own peer, so
 * it runs the peer part first (a self-targeted operation must complete without progress calls
 * too). */
#include <sched.h>
#include <time.h>

#include "shtest.h"

static long cells[128]; /* [0, 64): 8 per peer; [64, 72): put_signal; 100: compare_swap */
static long counter;
static uint64_t sig;
static volatile long done_count; /* written by peers with AMOs; read here with plain loads */

static void peer_work(int target) {
  const int me = shtest_me;
  long v[8];
  for (int i = 0; i < 8; i++) v[i] = me * 100 + i;
  shmem_long_put(&cells[(me % 8) * 8], v, 8, target);
  long back[8];
  shmem_long_get(back, &cells[(me % 8) * 8], 8, target);
  for (int i = 0; i < 8; i++)
    CHECK(back[i] == me * 100 + i, "get from a computing PE %d: element %d is %ld", target, i, back[i]);
  long before = shmem_long_atomic_fetch_add(&counter, 1, target);
  CHECK(before >= 0 && before < shtest_npes, "fetch_add on a computing PE returned %ld", before);
  long old = shmem_long_atomic_compare_swap(&cells[100], 0, 0, target);
  CHECK(old == 0, "compare_swap on a computing PE returned %ld", old);
  shmem_long_put_signal(&cells[64 + me % 8], v, 1, &sig, 1, SHMEM_SIGNAL_ADD, target);
  shmem_quiet();
  shmem_long_atomic_inc((long *)&done_count, target);
}

int main(void) {
  shtest_init();
  const int me = shtest_me, n = shtest_npes;
  shmem_barrier_all();
  if (n == 1) peer_work(0);
  if (me == 0) {
    /* compute: no library call until every peer has finished its operations on this PE */
    const long want = n == 1 ? 1 : n - 1;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    unsigned long spins = 0;
    while (__atomic_load_n(&done_count, __ATOMIC_ACQUIRE) < want) {
      if (++spins % 1024 == 0) {
        sched_yield(); /* not a library call: the peers need the CPU on a loaded machine */
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 60) SHT_FAIL("peers did not finish their operations on a computing PE in 60 s");
      }
    }
    CHECK_EQ_U("fetch_adds that reached the computing PE", want, counter);
    CHECK_EQ_U("put_signal ADDs that reached the computing PE", want, sig);
  } else {
    peer_work(0);
  }
  shtest_done("pitfall_20_progress");
  return 0;
}
