/* shmem_clear_lock on a lock this PE does not hold: a clear one-line error and the job stops (it
 * must not wait for a hand-over that never comes). */
#include "shtest.h"

static long lock;

int main(void) {
  shtest_init();
  shmem_barrier_all();
  if (shtest_me == 0) shmem_clear_lock(&lock);
  shmem_barrier_all();
  shtest_done("lock_not_held");
  return 0;
}
