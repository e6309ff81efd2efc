/* The sample program README's first command runs: every PE adds to a counter on PE 0 with an
 * atomic, writes its rank into a global array on PE 0 with a put, and PE 0 checks both. */
#include <shmem.h>
#include <stdio.h>

#define MAX_PES 1024

static long counter;      /* a global: remotely accessible like the heap */
static int ranks[MAX_PES];

int main(void) {
  shmem_init();
  int me = shmem_my_pe(), npes = shmem_n_pes();
  int *greeting = shmem_malloc(sizeof(int));
  *greeting = 100 + me;

  shmem_long_atomic_add(&counter, me + 1, 0);
  if (me < MAX_PES) shmem_int_p(&ranks[me], me, 0);
  shmem_barrier_all();

  int from_right = shmem_int_g(greeting, (me + 1) % npes);
  printf("hello from PE %d of %d (PE %d says %d)\n", me, npes, (me + 1) % npes, from_right);
  shmem_barrier_all();

  int status = 0;
  if (me == 0) {
    long expected = (long)npes * (npes + 1) / 2;
    for (int i = 0; i < npes && i < MAX_PES; ++i)
      if (ranks[i] != i) status = 1;
    printf("counter on PE 0 = %ld (expected %ld): %s\n", counter, expected,
           counter == expected && !status ? "ok" : "WRONG");
    if (counter != expected) status = 1;
  }
  shmem_free(greeting);
  shmem_finalize();
  return status;
}
