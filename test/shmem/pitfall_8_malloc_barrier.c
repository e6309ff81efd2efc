/* Pitfall 8: the barriers implied by the memory-management routines.
 * 1. size 0 (malloc, calloc with a zero count or size, align, malloc_with_hints, realloc(NULL, 0))
 *    and free(NULL) do nothing: no barrier. Every PE makes a different number of such calls, then
 *    a put/barrier/check exchange follows: had any of them synchronized, the PEs' barriers would
 *    pair up wrongly and a PE would check before its neighbour's put (or the job would hang at
 *    the next collective call and the timeout fails it).
 * 2. calloc and realloc end with a barrier: PE 0 enters late, the others write into PE 0's new
 *    block as soon as their call returns. Without the exit barrier PE 0 would zero (calloc) or
 *    copy the old contents over (realloc) after those writes landed and lose them.
 * 3. malloc's exit barrier: a peer may put into the new block as soon as malloc returns.
 * Cannot observe: that the implied barrier quiets only the default context (no context has
 * anything pending here); pitfall_1_implied_quiet checks that free/malloc do quiet it. */
#include "shtest.h"

static long slot;

int main(void) {
  shtest_init();
  const int me = shtest_me, n = shtest_npes, right = (me + 1) % n, left = (me + n - 1) % n;

  /* 1. no barrier for size 0 */
  for (int round = 0; round < 6; round++) {
    const int calls = (me + round) % 4; /* differs between neighbours (n > 1) */
    for (int k = 0; k < calls; k++) {
      CHECK(shmem_malloc(0) == NULL, "shmem_malloc(0) returned non-NULL");
      CHECK(shmem_calloc(0, 8) == NULL, "shmem_calloc(0, 8) returned non-NULL");
      CHECK(shmem_calloc(8, 0) == NULL, "shmem_calloc(8, 0) returned non-NULL");
      CHECK(shmem_align(64, 0) == NULL, "shmem_align(64, 0) returned non-NULL");
      CHECK(shmem_malloc_with_hints(0, SHMEM_MALLOC_ATOMICS_REMOTE) == NULL, "malloc_with_hints(0) non-NULL");
      CHECK(shmem_realloc(NULL, 0) == NULL, "shmem_realloc(NULL, 0) returned non-NULL");
      shmem_free(NULL);
    }
    if (me == 0) shtest_sleep_ms(5);
    shmem_long_p(&slot, round * 1000L + me, right);
    shmem_barrier_all();
    CHECK(slot == round * 1000L + left,
          "round %d: after %d size-0 calls here, the neighbour's put before the barrier is missing (%ld): "
          "a size-0 allocation call synchronized", round, calls, slot);
    shmem_barrier_all();
  }

  /* 2./3. exit barriers: PE 0 arrives late, everyone else writes into its block at once */
  for (int round = 0; round < 3; round++) {
    const size_t len = 4096 + 64 * (size_t)round;
    long *old = shmem_malloc(len * sizeof(long));
    CHECK(old != NULL, "shmem_malloc failed");
    for (size_t i = 0; i < len; i++) old[i] = -1;
    for (int kind = 0; kind < 3; kind++) {
      static const char *names[3] = {"shmem_calloc", "shmem_realloc", "shmem_malloc"};
      if (me == 0) shtest_sleep_ms(30);
      long *p;
      if (kind == 0) p = shmem_calloc(len, sizeof(long));
      else if (kind == 1) p = old = shmem_realloc(old, 4 * len * sizeof(long)); /* grows: moves and copies */
      else p = shmem_malloc(len * sizeof(long));
      CHECK(p != NULL, "%s failed", names[kind]);
      /* my write lands in PE 0's block (index me, inside the part realloc copies) */
      if (me != 0) shmem_long_p(&p[me], 1000L * kind + me, 0);
      shmem_barrier_all();
      if (me == 0)
        for (int pe = 1; pe < n; pe++)
          CHECK(p[pe] == 1000L * kind + pe,
                "%s round %d: PE %d's put right after the call returned was lost (PE 0 has %ld): "
                "no barrier on exit", names[kind], round, pe, p[pe]);
      if (me == 0 && kind == 0) CHECK(p[0] == 0 && p[len - 1] == 0, "shmem_calloc memory not zero");
      shmem_barrier_all();
      if (kind != 1) shmem_free(p);
    }
    shmem_free(old);
  }
  shtest_done("pitfall_8_malloc_barrier");
  return 0;
}
