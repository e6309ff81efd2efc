/* What the thread level costs: the same calls at the level in PERF_THREAD_LEVEL (0 SINGLE .. 3
 * MULTIPLE). Rows: the small operations through the library (compiled with -DHOSHMEM_NO_INLINE
 * by thread_level.sh, so every call enters the library), and the calls that take a lock at
 * MULTIPLE only (context create + destroy). Prints "name ns_per_op" lines; asserts nothing.
 * Usage: oshrun -np 2 thread_level */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static long target[64];

#define BEST_OF(NAME, ITERS, BODY)                                                   \
  do {                                                                               \
    double best = 1e30;                                                              \
    for (int rep = 0; rep < 7; rep++) {                                              \
      shmem_barrier_all();                                                           \
      double t0 = now_ns();                                                          \
      for (long i = 0; i < (ITERS); i++) { BODY; }                                   \
      double t = (now_ns() - t0) / (ITERS);                                          \
      if (t < best) best = t;                                                        \
    }                                                                                \
    if (me == 0) printf("%-26s %8.1f\n", NAME, best);                                \
  } while (0)

int main(void) {
  const char *level = getenv("PERF_THREAD_LEVEL");
  int provided = -1;
  shmem_init_thread(level ? atoi(level) : SHMEM_THREAD_SINGLE, &provided);
  const int me = shmem_my_pe(), peer = (me + 1) % shmem_n_pes();
  if (me == 0) printf("# thread level provided: %d\n", provided);
  long src = 1, got;
  BEST_OF("long_p", 200000, shmem_long_p(&target[0], i, peer));
  BEST_OF("long_g", 200000, got = shmem_long_g(&target[1], peer); (void)got);
  BEST_OF("putmem_8", 200000, shmem_putmem(&target[2], &src, 8, peer));
  BEST_OF("atomic_add", 200000, shmem_long_atomic_add(&target[3], 1, peer));
  BEST_OF("atomic_fetch_add", 200000, got = shmem_long_atomic_fetch_add(&target[4], 1, peer));
  BEST_OF("quiet", 200000, shmem_quiet());
  shmem_ctx_t ctx;
  BEST_OF("ctx_create_destroy", 20000,
          shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx); shmem_ctx_destroy(ctx));
  shmem_finalize();
  return 0;
}
