/* The user-space instructions of one non-fetching 64-bit add to a PE of another node, for
 * perf/hw/rc.sh (which runs PE 0 under callgrind): PE 0 makes COUNT calls of count_add (one
 * shmem_long_atomic_add each to a global, as an application would write it: the inline shim of
 * shmem.h included), COUNT calls of count_add_heap (the same to a word of the symmetric heap)
 * and COUNT calls of count_empty (the same call with nothing in it: the cost of the wrapper, to
 * subtract), after untimed warm-up adds that connect the queue pair.
 *   rc_add_count [COUNT] */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>

static long target;

__attribute__((noinline)) void count_add(long *t, long v, int pe) { shmem_long_atomic_add(t, v, pe); }
__attribute__((noinline)) void count_add_heap(long *t, long v, int pe) {
  shmem_long_atomic_add(t, v, pe);
}
__attribute__((noinline)) void count_empty(long *t, long v, int pe) {
  __asm__ volatile("" : : "r"(t), "r"(v), "r"(pe) : "memory");
}

int main(int argc, char **argv) {
  shmem_init();
  const int count = argc > 1 ? atoi(argv[1]) : 1000;
  const int peer = shmem_n_pes() - 1;
  long *heap_word = shmem_calloc(1, sizeof(long));
  if (shmem_my_pe() == 0 && peer > 0) {
    for (int i = 0; i < 100; i++) shmem_long_atomic_add(&target, 1, peer);
    shmem_quiet();
    /* A quiet (not counted) after every 8 adds: the queue pair then always has room for the next
     * (16 atomics in flight per QP, a completion asked every 8), so no counted call waits or
     * retires completions: what is counted is the path from the API call to the doorbell. */
    for (int i = 0; i < count; i++) {
      count_add(&target, 1, peer);
      if (i % 8 == 7) shmem_quiet();
    }
    for (int i = 0; i < count; i++) {
      count_add_heap(heap_word, 1, peer);
      if (i % 8 == 7) shmem_quiet();
    }
    for (int i = 0; i < count; i++) count_empty(&target, 1, peer);
    shmem_quiet();
    long got = shmem_long_atomic_fetch(&target, peer);
    long got_heap = shmem_long_atomic_fetch(heap_word, peer);
    printf("adds %d target %ld (expected %d), heap word %ld (expected %d)\n", count, got,
           count + 100, got_heap, count);
  }
  shmem_barrier_all();
  shmem_free(heap_word);
  shmem_finalize();
  return 0;
}
