/* shmem_align accepts every power-of-two alignment, also those below sizeof(void *) that the spec
 * leaves undefined but programs written for other implementations pass (SOS's shmemalign test
 * walks 2, 4, 8, ... 2^23). A non-power of two (63 in a public test) is rounded up to the next
 * power of two, as SOS does, and the block is usable; under SHMEM_DEBUG=1 it is reported. */
#include "shtest.h"

int main(void) {
  shtest_init();
  for (size_t a = 1; a <= ((size_t)1 << 23); a <<= 1) {
    long *p = shmem_align(a, 100 * sizeof(long));
    CHECK(p != NULL, "shmem_align(%zu, %zu) returned NULL", a, 100 * sizeof(long));
    CHECK((uintptr_t)p % a == 0, "shmem_align(%zu): %p is not aligned", a, (void *)p);
    for (int i = 0; i < 100; ++i) p[i] = shtest_me * 1000 + i;
    shmem_barrier_all();
    /* usable as a symmetric object */
    const int right = (shtest_me + 1) % shtest_npes;
    CHECK_EQ_U("element 99 read from the right neighbour", right * 1000 + 99,
               shmem_long_g(&p[99], right));
    shmem_barrier_all();
    shmem_free(p);
  }
  static const size_t odd[][2] = {{3, 4}, {24, 32}, {63, 64}, {1000, 1024}, {0, 8}};
  for (size_t i = 0; i < sizeof odd / sizeof odd[0]; ++i) {
    long *p = shmem_align(odd[i][0], 64 * sizeof(long));
    CHECK(p != NULL, "shmem_align(%zu, %zu) returned NULL", odd[i][0], 64 * sizeof(long));
    if (!p) continue;
    CHECK((uintptr_t)p % odd[i][1] == 0, "shmem_align(%zu): %p is not aligned to %zu", odd[i][0],
          (void *)p, odd[i][1]);
    const int right = (shtest_me + 1) % shtest_npes;
    shmem_long_p(&p[63], shtest_me * 7 + (long)i, right);
    shmem_barrier_all();
    const int left = (shtest_me + shtest_npes - 1) % shtest_npes;
    CHECK_EQ_U("element 63 put by the left neighbour", left * 7 + (long)i, p[63]);
    shmem_barrier_all();
    shmem_free(p);
  }
  /* an alignment no block can have: NULL on every PE */
  CHECK(shmem_align(((size_t)1 << 63) + 1, 64) == NULL, "shmem_align(2^63 + 1, 64) returned non-NULL");
  shtest_done("sosval_align");
  return 0;
}
