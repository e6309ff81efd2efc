/* putmem/getmem (and their _nbi forms) from 0 bytes to 64 MiB, odd sizes, unaligned source and
 * destination offsets. Guard bytes around each destination range must stay untouched.
 * Needs SHMEM_SYMMETRIC_SIZE >= 64 MiB + a little (the BUILD file sets it). */
#include "shtest.h"

#define MAXSZ ((size_t)64 << 20)
#define PAD 64 /* room for offsets and guard bytes on both sides */
#define GUARD 16

static unsigned char *sym; /* symmetric, MAXSZ + 2*PAD */
static unsigned char *priv; /* private, MAXSZ + 2*PAD */

static uint64_t seed_of(int pe, int iter) { return shtest_mix(((uint64_t)pe << 40) ^ (uint64_t)iter ^ 0x5151); }

static void guards_set(unsigned char *base, size_t off, size_t size) {
  memset(base + off - GUARD, 0xA5, GUARD);
  memset(base + off + size, 0x5A, GUARD);
}

static void guards_check(const char *what, const unsigned char *base, size_t off, size_t size) {
  for (size_t i = 0; i < GUARD; i++) {
    CHECK(base[off - GUARD + i] == 0xA5, "%s size %zu: guard byte %zu before destination changed to 0x%02x",
          what, size, GUARD - i, base[off - GUARD + i]);
    CHECK(base[off + size + i] == 0x5A, "%s size %zu: guard byte %zu after destination changed to 0x%02x",
          what, size, i, base[off + size + i]);
  }
}

static void data_check(const char *what, const unsigned char *p, size_t size, uint64_t seed, int srcpe,
                       size_t soff, size_t doff) {
  size_t bad = shtest_verify(p, size, seed);
  CHECK(bad == size, "%s size %zu (src offset %zu, dst offset %zu, from PE %d): first wrong byte at %zu",
        what, size, soff, doff, srcpe, bad);
}

static void one(size_t size, size_t soff, size_t doff, int nbi, int iter) {
  int me = shtest_me, n = shtest_npes, right = (me + 1) % n, left = (me + n - 1) % n;
  const char *pn = nbi ? "shmem_putmem_nbi+quiet" : "shmem_putmem";
  const char *gn = nbi ? "shmem_getmem_nbi+quiet" : "shmem_getmem";
  /* put: my private bytes to right's symmetric buffer */
  shtest_fill(priv + PAD + soff, size, seed_of(me, iter));
  guards_set(sym, PAD + doff, size);
  shmem_barrier_all();
  if (nbi) {
    shmem_putmem_nbi(sym + PAD + doff, priv + PAD + soff, size, right);
    shmem_quiet();
  } else {
    shmem_putmem(sym + PAD + doff, priv + PAD + soff, size, right);
  }
  shmem_barrier_all();
  data_check(pn, sym + PAD + doff, size, seed_of(left, iter), left, soff, doff);
  guards_check(pn, sym, PAD + doff, size);
  /* get: right's symmetric bytes into my private buffer */
  shtest_fill(sym + PAD + soff, size, seed_of(me, iter + 7777));
  guards_set(priv, PAD + doff, size);
  shmem_barrier_all();
  if (nbi) {
    shmem_getmem_nbi(priv + PAD + doff, sym + PAD + soff, size, right);
    shmem_quiet();
  } else {
    shmem_getmem(priv + PAD + doff, sym + PAD + soff, size, right);
  }
  data_check(gn, priv + PAD + doff, size, seed_of(right, iter + 7777), right, soff, doff);
  guards_check(gn, priv, PAD + doff, size);
  shmem_barrier_all();
}

int main(void) {
  shtest_init();
  sym = shmem_malloc(MAXSZ + 2 * PAD);
  CHECK(sym != NULL, "shmem_malloc(64 MiB + %d) returned NULL (is SHMEM_SYMMETRIC_SIZE large enough?)",
        2 * PAD);
  priv = malloc(MAXSZ + 2 * PAD);
  CHECK(priv != NULL, "malloc failed");

  static const size_t sizes[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65,
                                 127, 128, 129, 255, 256, 257, 1000, 1023, 1024, 1025, 4095, 4096,
                                 4097, 8191, 8193, 65535, 65536, 65537, 262147, (1 << 20) + 13,
                                 (4 << 20) - 1, (16 << 20) + 5};
  static const size_t offs[][2] = {{0, 0}, {1, 0}, {0, 1}, {3, 5}, {7, 7}, {8, 9}, {13, 2}};
  const int noffs = sizeof offs / sizeof offs[0];
  int iter = 0;
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    size_t size = sizes[s];
    int span = size > (64 << 10) ? 2 : noffs; /* large sizes: aligned + one unaligned pair */
    for (int o = 0; o < span; o++) {
      int k = (o == 1 && span == 2) ? 3 : o;
      one(size, offs[k][0], offs[k][1], 0, ++iter);
      one(size, offs[k][1], offs[k][0], 1, ++iter);
    }
  }
  /* the largest transfer: 64 MiB, aligned, then both ends unaligned (63 bytes less) */
  one(MAXSZ, 0, 0, 0, ++iter);
  one(MAXSZ - 63, 5, 11, 1, ++iter);
  one(MAXSZ - 63, 17, 3, 0, ++iter);
  free(priv);
  shmem_free(sym);
  shtest_done("rma_large");
  return 0;
}
