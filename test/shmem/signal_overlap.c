/* Under SHMEM_DEBUG=1, put-with-signal whose dest overlaps sig_addr is reported on one line and
 * the job exits non-zero (the spec forbids the overlap; hoshmem checks it in debug mode). */
#include "shtest.h"

static uint64_t block[4]; /* dest = block[0..2], sig_addr = &block[2]: overlaps */

int main(void) {
  shtest_init();
  uint64_t src[3] = {1, 2, 3};
  shmem_barrier_all();
  if (shtest_me == 0) {
    shmem_uint64_put_signal(block, src, 3, &block[2], 1, SHMEM_SIGNAL_SET, shtest_npes - 1);
    SHT_FAIL("overlapping put_signal was not reported");
  }
  shmem_barrier_all();
  shtest_done("signal_overlap");
  return 0;
}
