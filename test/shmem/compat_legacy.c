/* What programs written for SGI/Cray SHMEM and OpenSHMEM 1.0-1.4 use and still build against:
 * the <mpp/shmem.h> and <mpp/shmemx.h> header names, and the deprecated cache routines (no-ops
 * on a cache-coherent machine: data put before and after them arrives unchanged). */
#include <mpp/shmem.h>
#include <mpp/shmemx.h>

#include "shtest.h"

static long target[16];

int main(void) {
  shtest_init();
  const int next = (shtest_me + 1) % shtest_npes;
  shmem_set_cache_inv();
  shmem_set_cache_line_inv(target);
  shmem_long_p(&target[0], 100 + shtest_me, next);
  shmem_udcflush();
  shmem_udcflush_line(target);
  shmem_barrier_all();
  shmem_clear_cache_inv();
  shmem_clear_cache_line_inv(target);
  const int prev = (shtest_me + shtest_npes - 1) % shtest_npes;
  CHECK_EQ_U("value put around the cache routines", 100 + prev, target[0]);
  CHECK(shmemx_wtime() > 0, "shmemx_wtime from <mpp/shmemx.h>");
  /* the profiling twins exist too */
  pshmem_udcflush();
  pshmem_clear_cache_inv();
  shtest_done("compat_legacy");
  return 0;
}
