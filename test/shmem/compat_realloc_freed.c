/* shmem_realloc of a pointer that was already freed (or never allocated): a one-line warning on
 * stderr, NULL returned, and the heap intact: blocks allocated before and after keep working, and
 * the program goes on to its next checks. */
#include "shtest.h"

int main(void) {
  shtest_init();
  long *keep = shmem_malloc(32 * sizeof(long));
  long *gone = shmem_malloc(64 * sizeof(long));
  CHECK(keep && gone, "shmem_malloc failed");
  for (int i = 0; i < 32; i++) keep[i] = shtest_me * 100 + i;
  shmem_free(gone);
  CHECK(shmem_realloc(gone, 128 * sizeof(long)) == NULL, "realloc of a freed block is not NULL");
  CHECK(shmem_realloc(gone, 0) == NULL, "realloc to 0 bytes of a freed block is not NULL");
  static long not_heap[4];
  CHECK(shmem_realloc(not_heap, 64) == NULL, "realloc of a global is not NULL");
  /* the heap is intact: the old block kept its contents, new blocks work everywhere */
  for (int i = 0; i < 32; i++) CHECK_EQ_U("kept block", shtest_me * 100 + i, keep[i]);
  long *fresh = shmem_malloc(64 * sizeof(long));
  CHECK(fresh != NULL, "shmem_malloc after the bad realloc failed");
  shmem_long_p(&fresh[5], 7 + shtest_me, (shtest_me + 1) % shtest_npes);
  shmem_barrier_all();
  CHECK_EQ_U("put into a block allocated afterwards", 7 + (shtest_me + shtest_npes - 1) % shtest_npes,
             fresh[5]);
  long *grown = shmem_realloc(keep, 4096 * sizeof(long));
  CHECK(grown != NULL, "a valid realloc after the bad one failed");
  for (int i = 0; i < 32; i++) CHECK_EQ_U("grown block", shtest_me * 100 + i, grown[i]);
  shmem_free(grown);
  shmem_free(fresh);
  shtest_done("compat_realloc_freed");
  return 0;
}
