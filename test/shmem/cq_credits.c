/* Many peers on one lane, a stream of non-blocking operations to each between polls, then
 * quiet (issue 29, part 2.2). Every PE puts CQ_CREDITS_PUTS (default 2048) 8-byte values to
 * every other PE, round by round across the peers so that every queue pair of the lane fills at
 * once, then adds 1 to a counter on every other PE as many times (the inline AMO path), then
 * quiets. Run across nodes in all-HW mode: the signaled WQEs in flight on the lane can then
 * outnumber its completion queue's entries (with HOSHMEM_RC_CQ_SIZE small, with few peers),
 * which on a ConnectX (and on the model) puts the CQ in error and loses the completions quiet
 * waits for. Each PE checks the last value of every slot and the counter. */
#include "shtest.h"

#define SLOTS 64 /* slots per source PE: put i goes to slot i % SLOTS */

int main(void) {
  shtest_init();
  const long n = getenv("CQ_CREDITS_PUTS") ? atol(getenv("CQ_CREDITS_PUTS")) : 2048;
  long *src = shmem_malloc((size_t)n * sizeof(long));
  long *dst = shmem_calloc((size_t)shtest_npes * SLOTS, sizeof(long));
  long *counter = shmem_calloc(1, sizeof(long));
  CHECK(src && dst && counter, "shmem_malloc/calloc failed");
  for (long i = 0; i < n; i++) src[i] = (long)shtest_val((uint64_t)shtest_me, (uint64_t)i, 1);
  shmem_barrier_all();

  for (long i = 0; i < n; i++)
    for (int d = 1; d < shtest_npes; d++)
      shmem_long_put_nbi(&dst[shtest_me * SLOTS + i % SLOTS], &src[i], 1,
                         (shtest_me + d) % shtest_npes);
  shmem_quiet();
  for (long i = 0; i < n; i++)
    for (int d = 1; d < shtest_npes; d++)
      shmem_long_atomic_add(counter, 1, (shtest_me + d) % shtest_npes);
  shmem_quiet();
  shmem_barrier_all();

  for (int s = 0; s < shtest_npes; s++) {
    if (s == shtest_me) continue;
    for (long k = 0; k < SLOTS && k < n; k++) {
      const long last = k + SLOTS * ((n - 1 - k) / SLOTS);
      if (dst[s * SLOTS + k] != (long)shtest_val((uint64_t)s, (uint64_t)last, 1))
        CHECK_EQ_U("last put to a slot", shtest_val((uint64_t)s, (uint64_t)last, 1),
                   dst[s * SLOTS + k]);
    }
  }
  CHECK_EQ_U("adds from every other PE", (uint64_t)(shtest_npes - 1) * (uint64_t)n, *counter);
  shtest_done("cq_credits");
  return 0;
}
