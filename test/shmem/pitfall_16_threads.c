/* Pitfall 16: under SHMEM_THREAD_MULTIPLE a blocking call blocks only the calling thread.
 * 1. A helper thread blocks in wait_until / signal_wait_until / wait_until_all on this PE's own
 *    memory; meanwhile the main thread makes RMA, AMO, context and quiet calls (which must not wait
 *    for the helper), and only then releases the helper itself. A library that holds a process
 *    lock across the wait deadlocks here; the timeout fails it.
 * 2. Collectives on two different teams from two threads at once (allowed: the rule forbids only
 *    the same team): the helper runs team_sync on a copy of WORLD while the main thread runs
 *    barrier_all and a reduction on WORLD; neither may wait for the other.
 * Thread-level constants and provided (rule 16, bullets 1-2) are checked in misc. */
#include <pthread.h>

#include "shtest.h"

static long flag;
static uint64_t sig;
static long many[4];
static long scratch[16];
static long red_src[4], red_dst[4];
static shmem_team_t copy;
static long rounds;

static void *waiter(void *arg) {
  (void)arg;
  shmem_long_wait_until(&flag, SHMEM_CMP_EQ, 1);
  uint64_t s = shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 5);
  CHECK_EQ_U("signal_wait_until in the helper thread", 5, s);
  shmem_long_wait_until_all(many, 4, NULL, SHMEM_CMP_EQ, 2);
  return NULL;
}

static void *team_syncer(void *arg) {
  (void)arg;
  for (long i = 0; i < rounds; i++) CHECK_EQ_U("team_sync on the copy", 0, shmem_team_sync(copy));
  return NULL;
}

int main(void) {
  int provided;
  CHECK(shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) == 0, "init_thread");
  shtest_after_init();
  const int me = shtest_me, n = shtest_npes, right = (me + 1) % n;
  CHECK(provided == SHMEM_THREAD_MULTIPLE, "provided %d", provided);
  shmem_barrier_all();

  /* 1. one thread waits, the other keeps working and then releases it */
  pthread_t t;
  CHECK(pthread_create(&t, NULL, waiter, NULL) == 0, "pthread_create");
  shtest_sleep_ms(5); /* let the helper block first */
  for (int k = 0; k < 100; k++) {
    long v = k;
    shmem_long_put(&scratch[k % 16], &v, 1, right);
    (void)shmem_long_g(&scratch[0], right);
    (void)shmem_long_atomic_fetch_add(&scratch[15], 0, right);
    shmem_quiet();
  }
  shmem_ctx_t ctx;
  CHECK_EQ_U("ctx_create while another thread waits", 0, shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx));
  shmem_ctx_long_atomic_set(ctx, &flag, 1, me); /* release the first wait */
  shmem_ctx_quiet(ctx);
  shmem_ctx_destroy(ctx);
  shmem_signal_add(&sig, 2, me);
  shmem_signal_add(&sig, 3, me);
  for (int i = 0; i < 4; i++) shmem_long_atomic_set(&many[i], 2, me);
  pthread_join(t, NULL);
  shmem_barrier_all();

  /* 2. collectives on two teams from two threads */
  CHECK_EQ_U("split copy of WORLD", 0, shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &copy));
  rounds = shtest_scaled(300);
  CHECK(pthread_create(&t, NULL, team_syncer, NULL) == 0, "pthread_create");
  for (long i = 0; i < rounds; i++) {
    if (i % 2) {
      shmem_barrier_all();
    } else {
      for (int k = 0; k < 4; k++) red_src[k] = me + k + i;
      CHECK_EQ_U("sum_reduce rc", 0, shmem_long_sum_reduce(SHMEM_TEAM_WORLD, red_dst, red_src, 4));
      for (int k = 0; k < 4; k++)
        CHECK_EQ_U("sum_reduce on WORLD while another thread syncs another team",
                   (long)n * (n - 1) / 2 + (long)n * (k + i), red_dst[k]);
    }
  }
  pthread_join(t, NULL);
  shmem_team_destroy(copy);
  shtest_done("pitfall_16_threads");
  return 0;
}
