/* The inline fast path must compile warning-free in user builds that use -Wall -Wextra -Werror,
 * optimized or not (BUILD builds this at -O0 and -O2), and give the right values: p, put, AMOs,
 * g, and every putmem size from 0 to 300 bytes at an odd address. */
#include <shmem.h>
#include <stdio.h>

static long word, block[16];
static unsigned char landing[320];

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n;
  long src[16];
  for (int i = 0; i < 16; i++) src[i] = 100 * me + i;
  shmem_long_p(&word, me, right);
  shmem_long_put(block, src, 16, right);  /* 128 bytes: memcpy head, in-order tail */
  shmem_putmem(block, src, 8, right);     /* 8 bytes: one store */
  shmem_barrier_all();
  int bad = word != (me + n - 1) % n;
  for (int i = 0; i < 16; i++) bad |= block[i] != 100 * ((me + n - 1) % n) + i;
  shmem_barrier_all(); /* everyone has read its word before the next update */
  long old = shmem_long_atomic_fetch_add(&word, 10, right);
  shmem_barrier_all();
  bad |= old != me || word != (me + n - 1) % n + 10 || shmem_long_g(&word, right) != me + 10;
  if (bad) {
    fprintf(stderr, "FAIL PE %d: inline_werror values: word %ld old %ld block[0] %ld block[15] %ld\n", me, word, old, block[0], block[15]);
    shmem_global_exit(1);
  }
  shmem_barrier_all();
  /* every put size up to 300 bytes (each copy strategy of the inline put), exact bytes */
  unsigned char pattern[320];
  for (int sz = 0; sz <= 300; sz++) {
    for (int i = 0; i < 320; i++) pattern[i] = (unsigned char)(me * 7 + sz + i);
    for (int i = 0; i < 320; i++) landing[i] = 0xEE;
    shmem_barrier_all();
    shmem_putmem(landing + 1, pattern, (size_t)sz, right); /* odd offset: unaligned stores */
    shmem_barrier_all();
    const int left = (me + n - 1) % n;
    for (int i = 0; i < 320; i++) {
      const unsigned char want = i >= 1 && i <= sz ? (unsigned char)(left * 7 + sz + i - 1) : 0xEE;
      if (landing[i] != want) {
        fprintf(stderr, "FAIL PE %d: putmem of %d bytes: byte %d is %d, expected %d\n", me, sz, i,
                landing[i], want);
        shmem_global_exit(1);
      }
    }
  }
  shmem_barrier_all();
  if (me == 0) printf("inline_werror: OK on %d PEs\n", n);
  shmem_finalize();
  return 0;
}
