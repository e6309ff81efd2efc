/* shmem_fence between an AMO and a put to the same PE: each round a PE adds 1 to its right
 * neighbour's counter (non-fetching AMO), fences, then stores the round number into the
 * neighbour's flag with shmem_p; the neighbour waits for the flag and must see the counter at the
 * round number. In all-HW mode the AMO is the HCA's while a put on this node is a plain store,
 * so the fence must not let the store overtake an AMO still in flight (nor, across nodes, an
 * RDMA write pass an atomic of the same queue pair). */
#include "shtest.h"

static long counter, flag;

int main(void) {
  shtest_init();
  const int n = shtest_npes, me = shtest_me, right = (me + 1) % n;
  const long rounds = shtest_scaled(2000);
  shmem_barrier_all();
  for (long r = 1; r <= rounds; r++) {
    shmem_long_atomic_add(&counter, 1, right);
    shmem_fence();
    shmem_long_p(&flag, r, right);
    shmem_long_wait_until(&flag, SHMEM_CMP_GE, r);
    long seen = shmem_long_atomic_fetch(&counter, me);
    CHECK(seen >= r, "round %ld: flag arrived before the AMO fenced ahead of it (counter %ld)", r,
          seen);
    if (seen < r) break;
  }
  shtest_done("fence_amo_put");
  return 0;
}
