/* shmem_init_thread provides the level requested (THREAD_LEVEL: 0-3, SINGLE to MULTIPLE), and
 * shmem_query_thread reports it; shmem_init provides SINGLE; a counted second init keeps the first
 * level. The library is used at that level from the main thread only (its allowed use at every
 * level): allocation, contexts and teams, which take locks only at MULTIPLE. */
#include "shtest.h"

int main(void) {
  const char *env = getenv("THREAD_LEVEL");
  const int requested = env ? atoi(env) : -1;
  int provided = -1, queried = -1;
  if (requested < 0) {
    shmem_init();
  } else {
    CHECK(shmem_init_thread(requested, &provided) == 0, "shmem_init_thread(%d) failed", requested);
  }
  shtest_after_init();
  const int expected = requested < 0 ? SHMEM_THREAD_SINGLE : requested;
  if (requested >= 0) CHECK(provided == expected, "requested %d, provided %d", requested, provided);
  shmem_query_thread(&queried);
  CHECK(queried == expected, "shmem_query_thread says %d, expected %d", queried, expected);
  /* counted init (1.6): another init does not change the level */
  int again = -1;
  CHECK(shmem_init_thread(SHMEM_THREAD_MULTIPLE, &again) == 0, "second shmem_init_thread");
  CHECK(again == expected, "a second init changed the level to %d (expected %d)", again, expected);
  shmem_finalize();

  /* the paths that take locks at MULTIPLE work the same at this level */
  long *buf = shmem_malloc(16 * sizeof(long));
  CHECK(buf != NULL, "shmem_malloc");
  shmem_ctx_t ctx;
  CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) == 0, "shmem_ctx_create");
  shmem_ctx_long_p(ctx, &buf[0], shtest_me, (shtest_me + 1) % shtest_npes);
  shmem_ctx_quiet(ctx);
  shmem_ctx_destroy(ctx);
  shmem_team_t team;
  CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, shtest_npes, NULL, 0, &team) == 0,
        "shmem_team_split_strided");
  shmem_team_sync(team);
  shmem_team_destroy(team);
  shmem_barrier_all();
  CHECK_EQ_U("value put through a private context", (shtest_me + shtest_npes - 1) % shtest_npes,
             buf[0]);
  buf = shmem_realloc(buf, 1024 * sizeof(long));
  CHECK(buf != NULL, "shmem_realloc");
  shmem_free(buf);
  if (shtest_me == 0) printf("thread level %d provided and used\n", expected);
  shtest_done("thread_levels");
  return 0;
}
