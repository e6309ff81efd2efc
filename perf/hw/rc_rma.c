/* RMA and AMOs to a PE of another node over RC (run with HOSHMEM_PES_PER_NODE=1
 * HOSHMEM_ATOMICS=hw HOSHMEM_TRANSPORT=rc on 2 PEs): PE 0 drives, the last PE waits in a barrier.
 *   rc_rma [ITERATIONS [BATCH]]
 * Every result is the best of 5 timed loops, after one untimed loop (which also connects the QP):
 *   lat put SIZE ns      shmem_putmem(SIZE) + shmem_quiet, one at a time (not a ping-pong)
 *   lat get SIZE ns      shmem_getmem(SIZE), one at a time
 *   rate put_nbi 8 Mops  shmem_putmem_nbi(8 B), shmem_quiet after every BATCH
 *   lat amo_OP SIZE ns   each AMO blocking; the non-fetching ones followed by shmem_quiet
 *   rate amo_OP SIZE Mops   BATCH back to back then shmem_quiet (fetching ops: their _nbi form)
 * Buffers are symmetric (registered: zero copy where the library does it). Loops on sizes above
 * 8 KiB run fewer iterations (ITERATIONS * 8 KiB / SIZE, at least 10). After each put loop the
 * data is read back and compared, after each AMO loop the target checked where the value is
 * predictable: a mismatch prints "# WRONG ..." (the numbers are then meaningless). */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define BEST_DONE shmem_quiet()
#include "best.h"

#define MAX_SIZE (1 << 20)
#define MAX_BATCH 1024

static long long_target;
static int int_target;
static uint64_t u64_target;
static uint32_t u32_target;
static long long_fetched[MAX_BATCH];
static int int_fetched[MAX_BATCH];
static uint64_t u64_fetched[MAX_BATCH];
static uint32_t u32_fetched[MAX_BATCH];

static void lat(const char *name, int size, double ns) {
  printf("lat %s %d %.0f\n", name, size, ns);
  fflush(stdout);
}
static void rate(const char *name, int size, double ns_per_op) {
  printf("rate %s %d %.3f\n", name, size, 1e3 / ns_per_op);
  fflush(stdout);
}

int main(int argc, char **argv) {
  shmem_init();
  const int iters = argc > 1 ? atoi(argv[1]) : 1000;
  int batch = argc > 2 ? atoi(argv[2]) : 64;
  if (batch > MAX_BATCH) batch = MAX_BATCH;
  const int me = shmem_my_pe(), peer = shmem_n_pes() - 1;
  char *remote = shmem_malloc(MAX_SIZE);
  char *local = shmem_malloc(MAX_SIZE);
  char *check = malloc(MAX_SIZE);
  memset(remote, 0, MAX_SIZE);
  shmem_barrier_all();
  if (me == 0 && peer > 0) {
    double t;
    for (int size = 8; size <= MAX_SIZE; size = size * 4 > MAX_SIZE && size < MAX_SIZE ? MAX_SIZE : size * 4) {
      long scaled = (long)iters * 8192 / size;
      const int n = size <= 8192 ? iters : (scaled < 10 ? 10 : (int)scaled);
      for (int k = 0; k < size; k++) local[k] = (char)(k * 7 + size);
      BEST(t, n, shmem_putmem(remote, local, size, peer); shmem_quiet());
      lat("put", size, t);
      shmem_getmem(check, remote, size, peer);
      if (memcmp(check, local, size)) printf("# WRONG put %d: data read back differs\n", size);
      BEST(t, n, shmem_getmem(check, remote, size, peer));
      lat("get", size, t);
      if (memcmp(check, local, size)) printf("# WRONG get %d: data differs\n", size);
    }
    const int nb = (iters / batch > 0 ? iters / batch : 1) * batch;
    BEST(t, nb, shmem_putmem_nbi(remote + 8 * (i % batch), local, 8, peer);
         if (i % batch == batch - 1) shmem_quiet());
    rate("put_nbi", 8, t);

    volatile long long sink = 0;
    /* AMO latencies: blocking calls, the non-fetching ones made complete by quiet */
#define LAT(NAME, SIZE, BODY) \
  BEST(t, iters, BODY);       \
  lat(NAME, SIZE, t)
    /* AMO rates: a batch back to back, then quiet */
#define RATE(NAME, SIZE, BODY) \
  BEST(t, nb, BODY; if (i % batch == batch - 1) shmem_quiet()); \
  rate(NAME, SIZE, t)
#define CHECK(NAME, SIZE, TARGET, EXPECT)                                               \
  do {                                                                                  \
    long long v_ = (long long)(TARGET);                                                 \
    if (v_ != (long long)(EXPECT))                                                      \
      printf("# WRONG amo_%s %d: target %lld, expected %lld\n", NAME, SIZE, v_,          \
             (long long)(EXPECT));                                                      \
  } while (0)
#define STD_AMOS(T, N, SIZE, TGT, FETCHED)                                                      \
  do {                                                                                          \
    LAT("amo_fetch", SIZE, sink += shmem_##N##_atomic_fetch(&TGT, peer));                       \
    RATE("amo_fetch", SIZE, shmem_##N##_atomic_fetch_nbi(&FETCHED[i % batch], &TGT, peer));     \
    LAT("amo_set", SIZE, shmem_##N##_atomic_set(&TGT, (T)i, peer); shmem_quiet());              \
    CHECK("set", SIZE, shmem_##N##_atomic_fetch(&TGT, peer), iters - 1);                        \
    RATE("amo_set", SIZE, shmem_##N##_atomic_set(&TGT, (T)i, peer));                            \
    LAT("amo_swap", SIZE, sink += shmem_##N##_atomic_swap(&TGT, (T)i, peer));                   \
    RATE("amo_swap", SIZE, shmem_##N##_atomic_swap_nbi(&FETCHED[i % batch], &TGT, (T)i, peer)); \
    LAT("amo_compare_swap", SIZE, sink += shmem_##N##_atomic_compare_swap(&TGT, (T)i, (T)(i + 1), peer)); \
    RATE("amo_compare_swap", SIZE,                                                              \
         shmem_##N##_atomic_compare_swap_nbi(&FETCHED[i % batch], &TGT, (T)i, (T)(i + 1), peer)); \
    shmem_##N##_atomic_set(&TGT, 0, peer);                                                      \
    shmem_quiet();                                                                              \
    LAT("amo_fetch_add", SIZE, sink += shmem_##N##_atomic_fetch_add(&TGT, 1, peer));            \
    CHECK("fetch_add", SIZE, shmem_##N##_atomic_fetch(&TGT, peer), 6 * iters);                  \
    RATE("amo_fetch_add", SIZE, shmem_##N##_atomic_fetch_add_nbi(&FETCHED[i % batch], &TGT, 1, peer)); \
    LAT("amo_add", SIZE, shmem_##N##_atomic_add(&TGT, 1, peer); shmem_quiet());                 \
    RATE("amo_add", SIZE, shmem_##N##_atomic_add(&TGT, 1, peer));                               \
    LAT("amo_fetch_inc", SIZE, sink += shmem_##N##_atomic_fetch_inc(&TGT, peer));               \
    RATE("amo_fetch_inc", SIZE, shmem_##N##_atomic_fetch_inc_nbi(&FETCHED[i % batch], &TGT, peer)); \
    LAT("amo_inc", SIZE, shmem_##N##_atomic_inc(&TGT, peer); shmem_quiet());                    \
    RATE("amo_inc", SIZE, shmem_##N##_atomic_inc(&TGT, peer));                                  \
    CHECK("inc", SIZE, shmem_##N##_atomic_fetch(&TGT, peer), 24 * iters + 24 * nb);          \
  } while (0)
#define BIT_AMOS(T, N, SIZE, TGT, FETCHED)                                                      \
  do {                                                                                          \
    LAT("amo_fetch_and", SIZE, sink += shmem_##N##_atomic_fetch_and(&TGT, (T)~(T)(i & 7), peer)); \
    RATE("amo_fetch_and", SIZE, shmem_##N##_atomic_fetch_and_nbi(&FETCHED[i % batch], &TGT, (T)~(T)(i & 7), peer)); \
    LAT("amo_fetch_or", SIZE, sink += shmem_##N##_atomic_fetch_or(&TGT, (T)(i & 7), peer));     \
    RATE("amo_fetch_or", SIZE, shmem_##N##_atomic_fetch_or_nbi(&FETCHED[i % batch], &TGT, (T)(i & 7), peer)); \
    LAT("amo_fetch_xor", SIZE, sink += shmem_##N##_atomic_fetch_xor(&TGT, (T)(i & 7), peer));   \
    RATE("amo_fetch_xor", SIZE, shmem_##N##_atomic_fetch_xor_nbi(&FETCHED[i % batch], &TGT, (T)(i & 7), peer)); \
    LAT("amo_and", SIZE, shmem_##N##_atomic_and(&TGT, (T)~(T)(i & 7), peer); shmem_quiet());    \
    RATE("amo_and", SIZE, shmem_##N##_atomic_and(&TGT, (T)~(T)(i & 7), peer));                 \
    LAT("amo_or", SIZE, shmem_##N##_atomic_or(&TGT, (T)(i & 7), peer); shmem_quiet());          \
    RATE("amo_or", SIZE, shmem_##N##_atomic_or(&TGT, (T)(i & 7), peer));                        \
    LAT("amo_xor", SIZE, shmem_##N##_atomic_xor(&TGT, (T)(i & 7), peer); shmem_quiet());        \
    RATE("amo_xor", SIZE, shmem_##N##_atomic_xor(&TGT, (T)(i & 7), peer));                      \
  } while (0)
    STD_AMOS(long, long, 8, long_target, long_fetched);
    STD_AMOS(int, int, 4, int_target, int_fetched);
    BIT_AMOS(uint64_t, uint64, 8, u64_target, u64_fetched);
    BIT_AMOS(uint32_t, uint32, 4, u32_target, u32_fetched);
    (void)sink;
  }
  shmem_barrier_all();
  shmem_free(local);
  shmem_free(remote);
  free(check);
  shmem_finalize();
  return 0;
}
