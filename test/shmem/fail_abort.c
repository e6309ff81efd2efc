/* The last PE dies (abort) while the others wait in barrier_all: the launcher must exit non-zero
 * within the test's short timeout, and no PE may survive. */
#include <signal.h>

#include "shtest.h"

int main(void) {
  shtest_init();
  shtest_record_pid();
  shmem_barrier_all();
  if (shtest_me == shtest_npes - 1) {
    shtest_sleep_ms(200);
    abort();
  }
  shmem_barrier_all(); /* never completes */
  fprintf(stderr, "FAIL PE %d: returned from barrier_all although PE %d died\n", shtest_me, shtest_npes - 1);
  return 0;
}
