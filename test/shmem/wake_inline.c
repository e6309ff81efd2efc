/* Stores that the header's inline fast path makes (p, put, putmem, put_nbi, atomic_set, to the
 * heap and to a global) and AMOs must wake a PE asleep in wait_until. The sleep timeout is 60 s
 * and the launch's 30 s: a store that does not wake the sleeper fails the test instead of only
 * delaying it. PE 0 gives the others 100 ms to fall asleep before each store, then waits for
 * their acknowledgements: nothing else (a barrier would) may wake them meanwhile.
 * WAKE_INLINE_MOVE_HEAP=1: the sleepers put their heap elsewhere (HOSHMEM_HEAP_BASE), so they do
 * not apply the fast path themselves while PE 0 still does: their sleep must still turn PE 0's
 * inline stores to them over to the library. */
#include "shtest.h"

#define ROUNDS 7

static int global_flag;

int main(void) {
  const char *move = getenv("WAKE_INLINE_MOVE_HEAP"), *rank = getenv("PMIX_RANK");
  if (move && strcmp(move, "1") == 0 && rank && strcmp(rank, "0") != 0)
    setenv("HOSHMEM_HEAP_BASE", "0x600000000000", 1);
  shtest_init();
  int *heap_flag = shmem_calloc(1, sizeof(int));
  int *acks = shmem_calloc(1, sizeof(int));
  char *bytes = malloc(sizeof(int));
  shmem_barrier_all();
  for (int r = 1; r <= ROUNDS; r++) {
    const int op = r - 1;
    int *flag = op == 4 ? &global_flag : heap_flag;
    const int want = op == 4 ? 1 : r;  /* the global flag is written once */
    if (shtest_me == 0) {
      usleep(100 * 1000);
      for (int pe = 1; pe < shtest_npes; pe++) {
        switch (op) {
          case 0: shmem_int_p(flag, r, pe); break;
          case 1: shmem_int_put(flag, &r, 1, pe); break;
          case 2: {
            volatile size_t n = sizeof(int); /* a size the compiler does not know */
            memcpy(bytes, &r, sizeof(int));
            shmem_putmem(flag, bytes, n, pe);
            break;
          }
          case 3: shmem_int_atomic_set(flag, r, pe); break;
          case 4: shmem_int_p(flag, 1, pe); break;
          case 5: shmem_int_atomic_inc(flag, pe); break; /* the flag holds r - 1 */
          default: shmem_int_put_nbi(flag, &r, 1, pe); shmem_quiet(); break;
        }
      }
      shmem_int_wait_until(acks, SHMEM_CMP_EQ, r * (shtest_npes - 1));
    } else {
      if (op == 5) shmem_int_wait_until(flag, SHMEM_CMP_EQ, r - 1);
      shmem_int_wait_until(flag, SHMEM_CMP_EQ, want);
      shmem_int_atomic_inc(acks, 0);
    }
    shmem_barrier_all();
    if (op == 4) *heap_flag = r;  /* the heap flag keeps counting rounds */
    shmem_barrier_all();
  }
  if (shtest_me == 1) printf("wake_inline: OK on %d PEs\n", shtest_npes);
  free(bytes);
  shmem_free(acks);
  shmem_free(heap_flag);
  shmem_finalize();
  return 0;
}
