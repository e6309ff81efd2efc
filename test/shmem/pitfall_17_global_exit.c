/* Pitfall 17, last bullet: shmem_global_exit flushes I/O, and when several PEs call it at once the
 * job's status is one of theirs. GLOBAL_EXIT=one: the last PE writes a line to stdout, which is a
 * file here and so fully buffered, and calls global_exit(5) without flushing while the others wait
 * in a barrier; the line must reach the output. GLOBAL_EXIT=all: every PE buffers a line and
 * calls global_exit(5) at the same time; the status must be 5 and no PE may survive. */
#include "shtest.h"

int main(void) {
  shtest_init();
  shtest_record_pid();
  const char *mode = getenv("GLOBAL_EXIT");
  CHECK(mode != NULL, "GLOBAL_EXIT not set");
  shmem_barrier_all();
  const int all = !strcmp(mode, "all");
  if (all || shtest_me == shtest_npes - 1) {
    printf("PE %d: buffered line before shmem_global_exit\n", shtest_me); /* no fflush */
    shmem_global_exit(5);
  }
  shmem_barrier_all(); /* never completes */
  fprintf(stderr, "FAIL PE %d: returned from barrier_all after shmem_global_exit\n", shtest_me);
  return 3;
}
