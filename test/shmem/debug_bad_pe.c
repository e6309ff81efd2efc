/* With SHMEM_DEBUG=1, a put to PE n_pes (out of range) must be reported (routine name and PE)
 * and end the job with a non-zero status. */
#include "shtest.h"

static int target[4];

int main(void) {
  shtest_init();
  shmem_barrier_all();
  int src[4] = {1, 2, 3, 4};
  if (shtest_me == 0) shmem_int_put(target, src, 4, shtest_npes);
  shmem_barrier_all();
  fprintf(stderr, "FAIL PE %d: shmem_int_put to PE %d (= n_pes) was accepted under SHMEM_DEBUG=1\n", shtest_me,
          shtest_npes);
  shmem_finalize();
  return 0;
}
