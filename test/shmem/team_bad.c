/* Bad team/context arguments under SHMEM_DEBUG=1: PE 0 makes the mistake chosen by
 * TEAM_BAD_CASE; the job must end at once with one clear line and a non-zero status. */
#include "shtest.h"

static long x[4];

int main(void) {
  shtest_init();
  const char *c = getenv("TEAM_BAD_CASE");
  if (!c) SHT_FAIL("TEAM_BAD_CASE not set");
  shmem_team_t even;
  /* collective setup on every PE */
  CHECK_EQ_U("split", 0, shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (shtest_npes + 1) / 2, NULL, 0, &even));
  shmem_barrier_all();
  if (shtest_me == 0) {
    if (!strcmp(c, "destroy_world")) {
      shmem_team_destroy(SHMEM_TEAM_WORLD);
    } else if (!strcmp(c, "ctx_invalid")) {
      shmem_ctx_long_p(SHMEM_CTX_INVALID, x, 1, 0);
    } else if (!strcmp(c, "ctx_team_pe")) {
      shmem_ctx_t ctx;
      CHECK_EQ_U("ctx", 0, shmem_team_create_ctx(even, 0, &ctx));
      long v = 1;
      shmem_ctx_long_put(ctx, x, &v, 1, shmem_team_n_pes(even));
    } else if (!strcmp(c, "ctx_destroyed")) {
      shmem_ctx_t ctx;
      CHECK_EQ_U("ctx", 0, shmem_ctx_create(0, &ctx));
      shmem_ctx_destroy(ctx);
      shmem_ctx_long_atomic_inc(ctx, x, 0);
    } else if (!strcmp(c, "team_foreign")) {
      /* a pointer that is no team handle */
      (void)shmem_team_my_pe((shmem_team_t)x);
    }
  }
  shmem_barrier_all();
  fprintf(stderr, "FAIL PE %d: case %s was accepted under SHMEM_DEBUG=1\n", shtest_me, c);
  shmem_finalize();
  return 1;
}
