/* A PE that leaves main (or calls exit(0)) after shmem_init without shmem_finalize is finalized
 * implicitly, and the job ends with status 0, every PE gone, nothing left behind. EXIT_HOW picks
 * the path (the BUILD file runs each one, on one node and across nodes in every configuration):
 *   return  return from main right after shmem_init, nothing else done (the commonest case: an
 *           example that only initializes, a test that stops on a usage error)
 *   exit    exit(0) from a function called by main
 *   heap    allocate, put and AMO (blocking and not), then return with the heap still allocated
 *   nbi     puts and non-fetching AMOs to every PE still outstanding when main returns
 *   thread  exit(0) from a second thread while the main thread waits for it (not in the library)
 * Each PE prints one line before it leaves, so the test also sees that every PE got there. */
#include <pthread.h>

#include "shtest.h"

static long counter;
static long slots[64];

static void leave(void) {
  printf("PE %d of %d leaves without shmem_finalize\n", shtest_me, shtest_npes);
  fflush(stdout);
  exit(0);
}

static void *leave_from_thread(void *arg) {
  (void)arg;
  leave();
  return NULL;
}

int main(void) {
  const char *how = getenv("EXIT_HOW");
  if (!how) how = "return";
  shtest_init();
  shtest_record_pid();
  if (!strcmp(how, "exit")) leave();
  if (!strcmp(how, "heap") || !strcmp(how, "nbi")) {
    long *block = shmem_malloc(1024 * sizeof(long));
    CHECK(block != NULL, "shmem_malloc(8 KiB) returned NULL");
    const int right = (shtest_me + 1) % shtest_npes;
    static long source[1024];
    for (int i = 0; i < 1024; ++i) source[i] = shtest_me * 10000 + i;
    if (!strcmp(how, "heap")) {
      shmem_long_put(block, source, 1024, right);
      shmem_long_atomic_inc(&counter, 0);
      long before = shmem_long_atomic_fetch_add(&counter, 1, right);
      CHECK(before >= 0, "fetch_add returned %ld", before);
      shmem_barrier_all();
    } else {
      for (int pe = 0; pe < shtest_npes && pe < 64; ++pe) {
        shmem_long_put_nbi(block, source, 1024, pe);
        shmem_long_p(&slots[shtest_me % 64], shtest_me, pe);
        shmem_long_atomic_add(&counter, 1, pe);
      }
    }
  }
  if (!strcmp(how, "thread")) {
    pthread_t t;
    CHECK(pthread_create(&t, NULL, leave_from_thread, NULL) == 0, "pthread_create failed");
    pthread_join(t, NULL);
  }
  printf("PE %d of %d leaves without shmem_finalize\n", shtest_me, shtest_npes);
  fflush(stdout);
  return 0;
}
