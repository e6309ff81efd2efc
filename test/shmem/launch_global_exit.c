/* shmem_global_exit with a status that is 0 modulo 256 (GLOBAL_EXIT_STATUS, default 256) by the
 * last PE while the others wait in barrier_all. As an exit status it would read 0, a success:
 * the job must end with 255 instead, under oshrun, under mpirun and as a singleton. */
#include "shtest.h"

int main(void) {
  shtest_init();
  shtest_record_pid();
  const char *env = getenv("GLOBAL_EXIT_STATUS");
  const int status = env ? atoi(env) : 256;
  shmem_barrier_all(); /* every PID is recorded before anyone exits */
  if (shtest_me == shtest_npes - 1) {
    fprintf(stderr, "PE %d: calling shmem_global_exit(%d)\n", shtest_me, status);
    shmem_global_exit(status);
  }
  shmem_barrier_all(); /* never completes */
  fprintf(stderr, "FAIL PE %d: returned from barrier_all although PE %d called shmem_global_exit\n", shtest_me,
          shtest_npes - 1);
  return 3;
}
