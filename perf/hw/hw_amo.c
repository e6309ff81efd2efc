/* AMO latency in all-HW mode (run with HOSHMEM_ATOMICS=hw): PE 0 times each AMO type on a word of
 * PE 1 and of itself (loopback), blocking calls, best of 5 runs. Prints "name ns" lines. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long w64;
static unsigned long long u64;
static int w32;

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

#define TIME(NAME, PE, BODY)                                                  \
  do {                                                                        \
    double best = 1e30;                                                       \
    for (int rep = 0; rep < 5; rep++) {                                       \
      double t0 = now_ns();                                                   \
      for (int i = 0; i < iters; i++) { BODY; }                               \
      shmem_quiet();                                                          \
      double t = (now_ns() - t0) / iters;                                     \
      if (t < best) best = t;                                                 \
    }                                                                         \
    printf("%s%s %.0f\n", NAME, (PE) == 0 ? "_self" : "", best);              \
  } while (0)

int main(int argc, char **argv) {
  shmem_init();
  const int iters = argc > 1 ? atoi(argv[1]) : 2000;
  if (shmem_my_pe() == 0) {
    for (int pe = shmem_n_pes() - 1; pe >= 0; pe--) {
      volatile long long sink = 0;
      TIME("fetch_add64", pe, sink += shmem_longlong_atomic_fetch_add(&w64, 1, pe));
      TIME("add64", pe, shmem_longlong_atomic_add(&w64, 1, pe));
      TIME("cswap64", pe, sink += shmem_longlong_atomic_compare_swap(&w64, 0, 1, pe));
      TIME("swap64", pe, sink += shmem_longlong_atomic_swap(&w64, i, pe));
      TIME("fetch_add32", pe, sink += shmem_int_atomic_fetch_add(&w32, 1, pe));
      TIME("cswap32", pe, sink += shmem_int_atomic_compare_swap(&w32, 0, 1, pe));
      TIME("fetch_xor64", pe, sink += shmem_ulonglong_atomic_fetch_xor(&u64, 5, pe));
      TIME("fetch64", pe, sink += shmem_longlong_atomic_fetch(&w64, pe));
      (void)sink;
    }
  }
  shmem_barrier_all();
  shmem_finalize();
  return 0;
}
