/* shmem_global_exit(7) by the last PE while all others wait in barrier_all: the launcher must
 * exit with status 7 and no PE may survive (the runner checks both). */
#include "shtest.h"

int main(void) {
  shtest_init();
  shtest_record_pid();
  shmem_barrier_all(); /* every PID is recorded before anyone exits */
  if (shtest_me == shtest_npes - 1) {
    shtest_sleep_ms(200); /* let the others block in the barrier */
    fprintf(stderr, "PE %d: calling shmem_global_exit(7)\n", shtest_me);
    shmem_global_exit(7);
  }
  shmem_barrier_all(); /* never completes */
  fprintf(stderr, "FAIL PE %d: returned from barrier_all although PE %d called shmem_global_exit\n", shtest_me,
          shtest_npes - 1);
  return 3;
}
