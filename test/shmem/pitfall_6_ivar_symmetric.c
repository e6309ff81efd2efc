/* Rule 6: wait_until/test need a symmetric ivar. A stack variable (PITFALL_IVAR=stack) or a
 * shmem_ptr alias of a symmetric object (PITFALL_IVAR=alias) must be reported with one line naming
 * the routine, not waited on (the wait would never see a remote update). */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long flag;

int main(void) {
  shmem_init();
  const char *which = getenv("PITFALL_IVAR");
  long on_stack = 0;
  long *ivar = &on_stack;
  if (which && strcmp(which, "alias") == 0) {
    /* the local address of the right neighbour's copy: valid for loads and stores, not symmetric */
    int peer = (shmem_my_pe() + 1) % shmem_n_pes();
    ivar = shmem_ptr(&flag, peer);
    if (peer == shmem_my_pe()) ivar = &on_stack; /* 1 PE: the alias is the object itself */
  }
  shmem_long_wait_until(ivar, SHMEM_CMP_NE, 0); /* must not return, nor wait */
  printf("FAIL: shmem_long_wait_until accepted a non-symmetric ivar\n");
  shmem_finalize();
  return 1;
}
