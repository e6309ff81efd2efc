/* Item 9 / pitfalls 10-13: bad team, context and collective arguments that the library can detect
 * give one clear line ("hoshmem: PE <me>: <routine>: <cause>"), a non-zero exit, and no hang.
 * PITFALL_BAD selects the case (BUILD sets SHMEM_DEBUG=1 where the check is a debug check):
 *   team_sync_invalid      every PE: shmem_team_sync(SHMEM_TEAM_INVALID)
 *   split_destroyed        every PE: split of a destroyed team
 *   ctx_destroyed_team     PE 0: team_create_ctx on a destroyed team
 *   ctx_after_team_destroy PE 0: a shareable context used after its team was destroyed (team
 *                          destroy destroys it)
 *   ctx_private_thread     PE 0: a PRIVATE context destroyed by another thread
 *   split_null             every PE: split_strided with new_team NULL
 *   psync_bcast            every PE: broadcast64 with pSync[0] != SHMEM_SYNC_VALUE
 *   reduce_overlap         every PE: sum_reduce whose dest overlaps source without being it
 *   to_all_negative        every PE: sum_to_all with nreduce -1
 *   mismatch_alltoall      alltoall nelems differs on PE 0
 *   mismatch_bcast_nelems  broadcast nelems differs on the last PE
 *   psync_stack            every PE: shmem_barrier with a pSync on the stack (not symmetric)
 *   mismatch_aset          fcollect64: PE 0 names all PEs, the others all but PE 0 */
#include <pthread.h>

#include "shtest.h"

static long psync[SHMEM_SYNC_SIZE];
static long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long buf[64], out[64 * 9];

static void *destroy_in_thread(void *arg) {
  shmem_ctx_destroy(*(shmem_ctx_t *)arg);
  return NULL;
}

int main(void) {
  int provided;
  shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
  shtest_after_init();
  const int me = shtest_me, n = shtest_npes;
  const char *c = getenv("PITFALL_BAD");
  if (!c) SHT_FAIL("PITFALL_BAD not set");
  for (int i = 0; i < SHMEM_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;
  shmem_barrier_all();
  int single_pe_ok = 0; /* a mismatch needs two PEs: with one the call simply works */
  if (!strcmp(c, "team_sync_invalid")) {
    shmem_team_sync(SHMEM_TEAM_INVALID);
  } else if (!strcmp(c, "split_destroyed")) {
    shmem_team_t t, u;
    CHECK_EQ_U("split", 0, shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &t));
    shmem_team_destroy(t);
    shmem_team_split_strided(t, 0, 1, 1, NULL, 0, &u);
  } else if (!strcmp(c, "ctx_destroyed_team")) {
    shmem_team_t t;
    CHECK_EQ_U("split", 0, shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &t));
    shmem_team_destroy(t);
    if (me == 0) {
      shmem_ctx_t ctx;
      shmem_team_create_ctx(t, 0, &ctx);
    }
  } else if (!strcmp(c, "ctx_after_team_destroy")) {
    shmem_team_t t;
    shmem_ctx_t ctx;
    CHECK_EQ_U("split", 0, shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &t));
    CHECK_EQ_U("team_create_ctx", 0, shmem_team_create_ctx(t, 0, &ctx));
    shmem_team_destroy(t);
    if (me == 0) shmem_ctx_long_p(ctx, buf, 1, 0);
  } else if (!strcmp(c, "ctx_private_thread")) {
    if (me == 0) {
      shmem_ctx_t ctx;
      CHECK_EQ_U("ctx_create", 0, shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx));
      pthread_t th;
      pthread_create(&th, NULL, destroy_in_thread, &ctx);
      pthread_join(th, NULL);
    }
  } else if (!strcmp(c, "split_null")) {
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, NULL);
  } else if (!strcmp(c, "psync_bcast")) {
    psync[0] = 1;
    shmem_broadcast64(out, buf, 4, 0, 0, 0, n, psync);
  } else if (!strcmp(c, "reduce_overlap")) {
    shmem_long_sum_reduce(SHMEM_TEAM_WORLD, buf + 1, buf, 8);
  } else if (!strcmp(c, "to_all_negative")) {
    shmem_long_sum_to_all(out, buf, -1, 0, 0, n, pwrk, psync);
  } else if (!strcmp(c, "mismatch_alltoall")) {
    single_pe_ok = 1;
    shmem_long_alltoall(SHMEM_TEAM_WORLD, out, buf, me == 0 ? 2 : 3);
  } else if (!strcmp(c, "mismatch_bcast_nelems")) {
    single_pe_ok = 1;
    shmem_long_broadcast(SHMEM_TEAM_WORLD, out, buf, me == n - 1 ? 5 : 4, 0);
  } else if (!strcmp(c, "psync_stack")) {
    long local_psync[SHMEM_SYNC_SIZE]; /* not symmetric */
    for (int i = 0; i < SHMEM_SYNC_SIZE; i++) local_psync[i] = SHMEM_SYNC_VALUE;
    shmem_barrier(0, 0, n, local_psync);
  } else if (!strcmp(c, "mismatch_aset")) {
    /* PE 0 names the whole world, the others the world without PE 0 */
    single_pe_ok = 1;
    if (me == 0) shmem_fcollect64(out, buf, 2, 0, 0, n, psync);
    else shmem_fcollect64(out, buf, 2, 1, 0, n - 1, psync);
  } else {
    SHT_FAIL("unknown PITFALL_BAD case %s", c);
  }
  if (n == 1 && single_pe_ok) {
    shtest_done("pitfall_bad (single PE)");
    return 0;
  }
  shmem_barrier_all();
  fprintf(stderr, "FAIL PE %d: case %s was accepted\n", me, c);
  shmem_finalize();
  return 1;
}
