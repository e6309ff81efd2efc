/* What Open MPI's MPI_Init does under a launcher it does not know (oshrun): it makes itself a
 * singleton and overwrites PMIX_NAMESPACE. shmem_init must then stop the job with one line, not
 * run every PE as a job of its own. */
#include "shtest.h"

int main(void) {
  setenv("PMIX_NAMESPACE", "singleton.1234", 1);
  shmem_init();
  fprintf(stderr, "FAIL: shmem_init ran after PMIX_NAMESPACE changed (PE %d of %d)\n", shmem_my_pe(),
          shmem_n_pes());
  return 0;
}
