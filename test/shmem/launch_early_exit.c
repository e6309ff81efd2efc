/* PE 1 exits with status 0 before shmem_init while the others are in shmem_init, waiting for it
 * in the launcher's fence. The job must fail at once (not hang), naming PE 1. The rank comes from
 * the launcher's environment (PMIX_RANK), as the library is not initialized yet. */
#include "shtest.h"

int main(void) {
  const char *rank = getenv("PMIX_RANK");
  shtest_me = rank ? atoi(rank) : -1;
  shtest_record_pid();
  if (shtest_me == 1) exit(0);
  shtest_init();
  fprintf(stderr, "FAIL PE %d: shmem_init returned although PE 1 exited before it\n", shtest_me);
  shmem_finalize();
  return 3;
}
