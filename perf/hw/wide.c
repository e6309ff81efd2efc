/* Masked atomics for programs from PE 0 into PE 1 (perf/hw/wide.sh runs it with each PE on its
 * own node), blocking calls, each value the best of 3 timed loops after an untimed one (a loop
 * cut to ~100 ms at the untimed loop's speed, at least 3 calls):
 *   packed K   K 16-bit counters of one word of 2K bytes updated by one
 *              shmemx_atomic_fetch_add_fields (16-bit fields), against K
 *              shmem_uint64_atomic_fetch_add on K separate words (K = 4 .. 128)
 *   cas16      a 16-byte shmemx_atomic_compare_swap_masked (pointer plus tag, both compared and
 *              swapped), against the same update under an OpenSHMEM lock (shmem_set_lock, get 16
 *              bytes, compare, put, quiet, shmem_clear_lock)
 * Prints "packed K BYTES FIELDS_US SEPARATE_US" and "cas16 16 MASKED_US LOCK_US" lines.
 *   wide [MAX_ITERS] */
#include <shmem.h>
#include <shmemx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long lk;
static uint8_t *packed, *pair;  /* symmetric, aligned */
static uint64_t *separate;
static int k_now;

static void fields(void) {
  uint8_t inc[256], bnd[256], old[256];
  for (int i = 0; i < 2 * k_now; i += 2) inc[i] = 1, inc[i + 1] = 0, bnd[i] = 0, bnd[i + 1] = 0x80;
  shmemx_atomic_fetch_add_fields(packed, inc, bnd, old, (size_t)(2 * k_now), 1);
}
static void separate_adds(void) {
  for (int i = 0; i < k_now; i++) (void)shmem_uint64_atomic_fetch_add(&separate[i], 1, 1);
}
static uint64_t tag;
static void cas_masked(void) {
  uint64_t cmp[2], ones[2] = {~0ull, ~0ull}, swp[2], old[2];
  cmp[0] = 0x1000, cmp[1] = tag;
  swp[0] = 0x1000, swp[1] = tag + 1;
  shmemx_atomic_compare_swap_masked(pair, cmp, ones, swp, ones, old, 16, 1);
  tag = old[1] == tag ? tag + 1 : old[1];
}
static void cas_locked(void) {
  uint64_t cur[2];
  shmem_set_lock(&lk);
  shmem_getmem(cur, pair, 16, 1);
  if (cur[0] == 0x1000 && cur[1] == tag) {
    cur[1] = tag + 1;
    shmem_putmem(pair, cur, 16, 1);
    shmem_quiet();
  }
  tag = cur[1];
  shmem_clear_lock(&lk);
}

/* Seconds per call: best of 3 loops. */
static double measure(void (*f)(void), long max_iters) {
  double t0 = shmemx_wtime();
  f();
  const double once = shmemx_wtime() - t0;
  long iters = once > 0 ? (long)(0.1 / once) : max_iters;
  if (iters > max_iters) iters = max_iters;
  if (iters < 3) iters = 3;
  double best = 1e30;
  for (int rep = 0; rep < 3; rep++) {
    t0 = shmemx_wtime();
    for (long i = 0; i < iters; i++) f();
    const double t = (shmemx_wtime() - t0) / (double)iters;
    if (t < best) best = t;
  }
  return best;
}

int main(int argc, char **argv) {
  shmem_init();
  const long max_iters = argc > 1 ? atol(argv[1]) : 2000;
  packed = shmem_align(256, 256);
  pair = shmem_align(16, 16);
  separate = shmem_calloc(128, sizeof(uint64_t));
  memset(packed, 0, 256);
  memset(pair, 0, 16);
  ((uint64_t *)pair)[0] = 0x1000;
  shmem_barrier_all();
  if (shmem_my_pe() == 0 && shmem_n_pes() > 1) {
    for (k_now = 4; k_now <= 128; k_now *= 2) {
      const double a = measure(fields, max_iters), b = measure(separate_adds, max_iters);
      printf("packed %d %d %.2f %.2f\n", k_now, 2 * k_now, a * 1e6, b * 1e6);
    }
    tag = 0;
    const double a = measure(cas_masked, max_iters);
    shmem_getmem(&tag, pair + 8, 8, 1);
    const double b = measure(cas_locked, max_iters);
    printf("cas16 16 %.2f %.2f\n", a * 1e6, b * 1e6);
    fflush(stdout);
  }
  shmem_barrier_all();
  shmem_finalize();
  return 0;
}
