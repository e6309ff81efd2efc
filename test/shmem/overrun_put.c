/* A put or get whose range runs past the end of the target's symmetric heap, without
 * SHMEM_DEBUG: the job ends at once with one line naming the PE, the routine and the overrun,
 * and nothing is written outside the heap (the check comes before the copy, on the inline path
 * and in the library, on this node and to other nodes). PE 1 does it, to PE OVERRUN_TARGET
 * (default 0), with OVERRUN_OP = putmem (default), put_nbi, getmem or iput; the others wait in a
 * barrier they never leave. */
#include "shtest.h"

/* The end of the mapping that holds `p` (the heap's file ends with the heap). */
static char *mapping_end(const void *p) {
  FILE *maps = fopen("/proc/self/maps", "r");
  unsigned long lo, hi;
  char line[512];
  char *end = NULL;
  while (maps && fgets(line, sizeof line, maps))
    if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && (uintptr_t)p >= lo && (uintptr_t)p < hi)
      end = (char *)hi;
  if (maps) fclose(maps);
  return end;
}

int main(void) {
  shtest_init();
  shtest_record_pid();
  const char *op = getenv("OVERRUN_OP") ? getenv("OVERRUN_OP") : "putmem";
  const int target = getenv("OVERRUN_TARGET") ? atoi(getenv("OVERRUN_TARGET")) : 0;
  char *first = shmem_malloc(64);
  CHECK(first != NULL, "shmem_malloc(64) returned NULL");
  char *end = mapping_end(first);
  CHECK(end != NULL, "no mapping holds the heap block %p", (void *)first);
  static char buffer[128];
  if (shtest_me == 1) {
    fprintf(stderr, "PE 1: %s of 128 bytes at %p (64 before the heap's end) on PE %d\n", op,
            (void *)(end - 64), target);
    if (!strcmp(op, "putmem"))
      shmem_putmem(end - 64, buffer, 128, target);
    else if (!strcmp(op, "put_nbi"))
      shmem_putmem_nbi(end - 64, buffer, 128, target);
    else if (!strcmp(op, "getmem"))
      shmem_getmem(buffer, end - 64, 128, target);
    else if (!strcmp(op, "iput"))
      shmem_long_iput((long *)(end - 64), (long *)buffer, 2, 1, 16, target);
    shmem_quiet();
    fprintf(stderr, "PE 1: the %s returned\n", op);
  }
  shmem_barrier_all();
  shtest_done("overrun_put");
  return 0;
}
