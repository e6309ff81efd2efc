/* One-sided accumulate from PE 0 into PE 1 (perf/hw/acc.sh runs it with each PE on its own node):
 * for doubles and longs of 8 B, 64 B, 512 B, 4, 16, 64, 256 KiB and 1 MiB (up to ACC_MAX_BYTES), the latency of a blocking
 * shmemx_TYPENAME_sum_accumulate followed by shmem_quiet, and the bandwidth of ACC_BATCH
 * accumulate_nbi calls then one quiet. Meanwhile PE 1:
 *   polling    waits in shmem_long_wait_until (inside the library: it serves messages itself)
 *   asleep     nanosleep(10 ms) in a loop, a plain load of the flag between sleeps
 *   computing  an arithmetic loop with no library call, a plain load of the flag every 4096 steps
 * Each value is the best of 3 timed loops after an untimed one, a loop cut to ~100 ms at the
 * untimed loop's speed (at least 3 calls). Prints "TYPE BYTES LAT_US BW_MBPS" lines (MB = 10^6 B).
 *   acc TARGET [MAX_ITERS]        (env ACC_MAX_BYTES, default 1 MiB; ACC_BATCH, default 8) */
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long flag;

static double now(void) { return shmemx_wtime(); }

static void target(const char *how) {
  if (strcmp(how, "polling") == 0) {
    shmem_long_wait_until(&flag, SHMEM_CMP_NE, 0);
  } else if (strcmp(how, "asleep") == 0) {
    const struct timespec ts = {0, 10 * 1000 * 1000};
    while (!__atomic_load_n(&flag, __ATOMIC_ACQUIRE)) nanosleep(&ts, NULL);
  } else {
    volatile double x = 1.0;
    for (unsigned long i = 0;; i++) {
      x = x * 1.0000001 + 1e-9;
      if ((i & 4095) == 0 && __atomic_load_n(&flag, __ATOMIC_ACQUIRE)) break;
    }
  }
}

typedef void (*acc_fn)(void *dest, const void *source, size_t nelems, int pe);
static void acc_double(void *d, const void *s, size_t n, int pe) {
  shmemx_double_sum_accumulate(d, s, n, pe);
}
static void acc_double_nbi(void *d, const void *s, size_t n, int pe) {
  shmemx_double_sum_accumulate_nbi(d, s, n, pe);
}
static void acc_long(void *d, const void *s, size_t n, int pe) {
  shmemx_long_sum_accumulate(d, s, n, pe);
}
static void acc_long_nbi(void *d, const void *s, size_t n, int pe) {
  shmemx_long_sum_accumulate_nbi(d, s, n, pe);
}

/* Seconds per iteration of `batch` calls then a quiet: best of 3 loops. */
static double measure(acc_fn f, void *dest, const void *src, size_t n, int batch, long max_iters) {
  double t0 = now();
  for (int b = 0; b < batch; b++) f(dest, src, n, 1);
  shmem_quiet();
  const double once = now() - t0;
  long iters = once > 0 ? (long)(0.1 / once) : max_iters;
  if (iters > max_iters) iters = max_iters;
  if (iters < 3) iters = 3;
  double best = 1e30;
  for (int rep = 0; rep < 3; rep++) {
    t0 = now();
    for (long i = 0; i < iters; i++) {
      for (int b = 0; b < batch; b++) f(dest, src, n, 1);
      shmem_quiet();
    }
    const double per = (now() - t0) / (double)iters;
    if (per < best) best = per;
  }
  return best;
}

int main(int argc, char **argv) {
  const char *how = argc > 1 ? argv[1] : "polling";
  const long max_iters = argc > 2 ? atol(argv[2]) : 2000;
  const size_t max_bytes = getenv("ACC_MAX_BYTES") ? strtoul(getenv("ACC_MAX_BYTES"), 0, 0) : 1 << 20;
  const int batch = getenv("ACC_BATCH") ? atoi(getenv("ACC_BATCH")) : 8;
  shmem_init();
  if (shmem_n_pes() != 2) {
    if (shmem_my_pe() == 0) fprintf(stderr, "acc: needs 2 PEs\n");
    shmem_global_exit(2);
  }
  void *dest = shmem_malloc(max_bytes);
  char *src = malloc(max_bytes);
  if (!dest || !src) shmem_global_exit(3);
  memset(dest, 0, max_bytes);
  for (size_t i = 0; i < max_bytes / 8; i++) ((double *)src)[i] = 1.0;
  shmem_barrier_all();
  if (shmem_my_pe() == 1) {
    target(how);
  } else {
    struct { const char *name; acc_fn blocking, nbi; } types[] = {
        {"double", acc_double, acc_double_nbi}, {"long", acc_long, acc_long_nbi}};
    for (int t = 0; t < 2; t++) {
      if (t == 1) memset(src, 0, max_bytes);  /* longs of 0: sums stay in range */
      static const size_t sizes[] = {8, 64, 512, 4096, 16384, 65536, 262144, 1048576};
      for (size_t k = 0; k < sizeof sizes / sizeof *sizes && sizes[k] <= max_bytes; k++) {
        const size_t bytes = sizes[k], n = bytes / 8;
        const double lat = measure(types[t].blocking, dest, src, n, 1, max_iters);
        const double bw = measure(types[t].nbi, dest, src, n, batch, max_iters);
        printf("%s %zu %.2f %.2f\n", types[t].name, bytes, lat * 1e6,
               (double)bytes * batch / bw / 1e6);
        fflush(stdout);
      }
    }
    shmem_long_p(&flag, 1, 1);
    shmem_quiet();
  }
  shmem_barrier_all();
  shmem_finalize();
  return 0;
}
