/* A heap that cannot be pinned: 4 PEs on this machine, each with 2/5 of its memory as symmetric
 * heap (together 1.6 times MemTotal). Registering it with the HCA pins every page, so shmem_init
 * must stop with one line naming SHMEM_SYMMETRIC_SIZE instead of letting the kernel OOM-kill a
 * PE. Run with HOSHMEM_PES_PER_NODE=1: the library's "nodes" are not the machine whose memory the
 * PEs share. The size comes from MemTotal (the same on every PE: the heaps must be equal). */
#include <stdio.h>
#include <stdlib.h>

#include "shtest.h"

int main(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  unsigned long long total_kib = 0;
  char line[128];
  while (f && fgets(line, sizeof line, f) && sscanf(line, "MemTotal: %llu kB", &total_kib) != 1) {
  }
  if (f) fclose(f);
  if (total_kib == 0) {
    fprintf(stderr, "init_unpinnable_heap: no MemTotal in /proc/meminfo\n");
    return 2;
  }
  char size[32];
  snprintf(size, sizeof size, "%lluM", total_kib * 2 / 5 / 1024);
  setenv("SHMEM_SYMMETRIC_SIZE", size, 1);
  shtest_init();
  /* Not reached when the check works: the test expects a non-zero status. */
  shtest_done("init_unpinnable_heap (shmem_init accepted the heap)");
  return 0;
}
