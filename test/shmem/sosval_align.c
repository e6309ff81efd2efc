/* shmem_align accepts every power-of-two alignment, also those below sizeof(void *) that the spec
 * leaves undefined but programs written for other implementations pass (SOS's shmemalign test
 * walks 2, 4, 8, ... 2^23). A non-power of two gives NULL on every PE, with no barrier to skew. */
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
  CHECK(shmem_align(3, 64) == NULL, "shmem_align(3, 64) returned non-NULL");
  CHECK(shmem_align(24, 64) == NULL, "shmem_align(24, 64) returned non-NULL");
  shtest_done("sosval_align");
  return 0;
}
