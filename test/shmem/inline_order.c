/* The orders small operations to another node keep, whichever path posts them (the inline paths of
 * lib/core/rdma_inline.h or the general one): a get or g sees this PE's earlier put or p to the
 * same address; an AMO sees an earlier put to its word and a g an earlier AMO; a put of any size up
 * to 256 bytes (past the queues' inline limit, 220 at most) carries its bytes, on the heap and in
 * the globals; runs of non-blocking puts and adds longer than a queue's room and signal counts come
 * back intact after quiet. Each PE works on its right neighbour's memory only (nobody else writes
 * there), without waiting for the neighbour between rounds. */
#include "shtest.h"

#define SLOT 256
#define RUN 100

static long word_g;
static unsigned char bytes_g[SLOT];
static long run_g[RUN];

static unsigned char pattern(long r, int me, size_t i) {
  return (unsigned char)(r * 31 + me * 7 + i * 13 + 1);
}

int main(void) {
  shtest_init();
  const int me = shtest_me, right = (me + 1) % shtest_npes;
  long *word = shmem_malloc(sizeof(long));
  int *word32 = shmem_malloc(sizeof(int));
  unsigned char *bytes = shmem_malloc(SLOT);
  long *run = shmem_malloc(RUN * sizeof(long));
  const long rounds = shtest_scaled(600);
  shmem_barrier_all();
  for (long r = 1; r <= rounds; r++) {
    const long v = r * 1000 + me;
    long *w = r % 2 ? word : &word_g;
    unsigned char *b = r % 2 ? bytes : bytes_g;
    long *x = r % 2 ? run : run_g;

    shmem_long_p(w, v, right);
    long got = shmem_long_g(w, right);
    CHECK(got == v, "round %ld: g after p: %ld, expected %ld", r, got, v);

    const size_t size = 1 + (size_t)r % SLOT;
    unsigned char src[SLOT], dst[SLOT];
    for (size_t i = 0; i < size; i++) src[i] = pattern(r, me, i);
    shmem_putmem(b, src, size, right);
    memset(dst, 0, sizeof dst);
    shmem_getmem(dst, b, size, right);
    for (size_t i = 0; i < size; i++)
      CHECK(dst[i] == src[i], "round %ld: get after a put of %zu bytes: byte %zu is %u, expected %u",
            r, size, i, dst[i], src[i]);

    shmem_long_p(w, v, right);
    long old = shmem_long_atomic_fetch_add(w, 3, right);
    CHECK(old == v, "round %ld: fetch_add after p saw %ld, expected %ld", r, old, v);
    shmem_long_atomic_add(w, 5, right);
    got = shmem_long_g(w, right);
    CHECK(got == v + 8, "round %ld: g after add: %ld, expected %ld", r, got, v + 8);
    old = shmem_long_atomic_compare_swap(w, v + 8, v + 9, right);
    CHECK(old == v + 8, "round %ld: compare_swap saw %ld, expected %ld", r, old, v + 8);
    old = shmem_long_atomic_swap(w, -v, right);
    CHECK(old == v + 9, "round %ld: swap saw %ld, expected %ld", r, old, v + 9);

    shmem_int_p(word32, (int)r, right);
    shmem_int_atomic_add(word32, 2, right);
    int old32 = shmem_int_atomic_fetch_add(word32, 1, right);
    CHECK(old32 == (int)r + 2, "round %ld: 32-bit fetch_add saw %d, expected %d", r, old32,
          (int)r + 2);
    old32 = shmem_int_atomic_compare_swap(word32, (int)r + 3, -(int)r, right);
    CHECK(old32 == (int)r + 3, "round %ld: 32-bit compare_swap saw %d, expected %d", r, old32,
          (int)r + 3);
    CHECK(shmem_int_g(word32, right) == -(int)r, "round %ld: 32-bit g after compare_swap", r);

    if (r % 10 == 0) {  // runs: more than a queue's room and signal counts between quiets
      for (int i = 0; i < RUN; i++) shmem_long_put_nbi(&x[i], &v, 1, right);
      for (int i = 0; i < RUN; i++) shmem_long_atomic_add(&x[i], i, right);
      shmem_quiet();
      for (int i = 0; i < RUN; i++) {
        got = shmem_long_g(&x[i], right);
        CHECK(got == v + i, "round %ld: run element %d is %ld, expected %ld", r, i, got, v + i);
      }
    }
  }
  shmem_barrier_all();
  shtest_done("inline_order");
  return 0;
}
