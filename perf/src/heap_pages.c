// One PE's start-up costs of its symmetric heap (perf/heap_pages.sh runs it): the time of
// shmem_init (which, in all-HW mode, registers the heap with the HCA), of the first write to
// every 4 KiB of the heap (the page faults a kernel registration's pinning takes in one go on a
// real HCA; the model's registration does not fault pages in), and of shmem_finalize (unmapping
// returns the pages). Prints one line: init_ms touch_ms finalize_ms.
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
  size_t bytes = argc > 1 ? strtoull(argv[1], NULL, 0) : 0;
  double t0 = now_ms();
  shmem_init();
  double t1 = now_ms();
  volatile char *p = shmem_malloc(bytes);
  if (!p) {
    fprintf(stderr, "heap_pages: shmem_malloc(%zu) failed\n", bytes);
    shmem_global_exit(1);
  }
  for (size_t i = 0; i < bytes; i += 4096) p[i] = 1;
  double t2 = now_ms();
  shmem_free((void *)p);
  shmem_finalize();
  double t3 = now_ms();
  printf("%.1f %.1f %.1f\n", t1 - t0, t2 - t1, t3 - t2);
  return 0;
}
