/* Active messages to another node's CPU, UD against the receive ring (perf/hw/ring.sh runs it
 * with every PE on its own node, all-SW mode, HOSHMEM_AM=ud or ring).
 *   ring lat [MAX_ITERS]   2 PEs: PE 0 measures a fetching AMO (long fetch_add: one request, an
 *                          8-byte reply) and owner-computed accumulates of longs of 8 B to 4 KiB
 *                          (the elements in messages, one reply each), each blocking + quiet,
 *                          into PE 1, which waits inside the library. "lat BYTES US" lines
 *                          (BYTES 0: the fetch_add).
 *   ring fan [MAX_ITERS]   n PEs: PEs 1..n-1 all send fetching AMOs to PE 0 at once (PE 0 waits
 *                          inside the library); "fan SENDERS US_PER_AMO" from PE 1 (the slowest
 *                          sender's time per AMO, max over senders).
 *   ring spread            every PE sends one AMO to every other PE (each message transport then
 *                          holds whatever per-peer state it keeps), for the memory SHMEM_INFO
 *                          prints at finalize.
 * Times: best of 3 loops after an untimed one, a loop cut to ~100 ms at the untimed loop's
 * speed. */
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long flag, counter, dest[512], src[512];
static double took;

typedef void (*op_fn)(size_t bytes, int pe);
static void fadd(size_t bytes, int pe) {
  (void)bytes;
  (void)shmem_long_atomic_fetch_add(&counter, 1, pe);
}
static void acc(size_t bytes, int pe) {
  shmemx_long_sum_accumulate(dest, src, bytes / sizeof(long), pe);
  shmem_quiet();
}

static double measure(op_fn f, size_t bytes, int pe, long max_iters) {
  double t0 = shmemx_wtime();
  f(bytes, pe);
  const double once = shmemx_wtime() - t0;
  long iters = once > 0 ? (long)(0.1 / once) : max_iters;
  if (iters > max_iters) iters = max_iters;
  if (iters < 3) iters = 3;
  double best = 1e30;
  for (int rep = 0; rep < 3; rep++) {
    t0 = shmemx_wtime();
    for (long i = 0; i < iters; i++) f(bytes, pe);
    const double per = (shmemx_wtime() - t0) / (double)iters;
    if (per < best) best = per;
  }
  return best;
}

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "lat";
  const long max_iters = argc > 2 ? atol(argv[2]) : 2000;
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  for (int i = 0; i < 512; i++) src[i] = i;
  shmem_barrier_all();
  if (strcmp(what, "lat") == 0) {
    if (me == 0) {
      printf("lat 0 %.2f\n", 1e6 * measure(fadd, 0, 1, max_iters));
      static const size_t sizes[] = {8, 64, 512, 2048, 4096};
      for (int i = 0; i < 5; i++)
        printf("lat %zu %.2f\n", sizes[i], 1e6 * measure(acc, sizes[i], 1, max_iters));
      shmem_long_p(&flag, 1, 1);
      shmem_quiet();
    } else if (me == 1) {
      shmem_long_wait_until(&flag, SHMEM_CMP_NE, 0);
    }
  } else if (strcmp(what, "fan") == 0) {
    if (me == 0) {
      shmem_long_wait_until(&flag, SHMEM_CMP_EQ, n - 1);
    } else {
      took = measure(fadd, 0, 0, max_iters);
      shmem_long_atomic_inc(&flag, 0);
    }
    static double all[1024];
    if (me < 1024) shmem_double_put(&all[me], &took, 1, 0);
    shmem_barrier_all();
    if (me == 0) {
      double worst = 0;
      for (int p = 1; p < n && p < 1024; p++)
        if (all[p] > worst) worst = all[p];
      printf("fan %d %.2f\n", n - 1, 1e6 * worst);
    }
  } else {
    for (int p = 0; p < n; p++)
      if (p != me) (void)shmem_long_atomic_fetch_add(&counter, 1, p);
  }
  shmem_barrier_all();
  shmem_finalize();
  return 0;
}
