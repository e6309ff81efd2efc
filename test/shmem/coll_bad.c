/* Bad collective arguments: one clear line naming the routine, a non-zero exit, no hang.
 * COLL_BAD selects the case: team (SHMEM_TEAM_INVALID), root (PE_root out of range), nelems (past
 * the end of the symmetric object, SHMEM_DEBUG), psync (pSync not SHMEM_SYNC_VALUE, SHMEM_DEBUG),
 * aset (an active set beyond the last PE), stride (alltoalls with stride 0), and under SHMEM_DEBUG
 * arguments that differ across the team: mismatch_bcast (PE_root), mismatch_reduce (nreduce, one
 * PE passes 0), mismatch_fcollect (nelems); destroyed (a destroyed team handle, SHMEM_DEBUG). */
#include "coll_common.h"

static long psync[SHMEM_SYNC_SIZE];

int main(void) {
  shtest_init();
  const char *which = getenv("COLL_BAD");
  CHECK(which, "COLL_BAD not set");
  for (int i = 0; i < SHMEM_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;
  long *buf = shmem_malloc(64 * sizeof(long));
  long *out = shmem_malloc(64 * sizeof(long) * (shtest_npes + 1));
  CHECK(buf && out, "shmem_malloc failed");
  shmem_barrier_all();
  if (!strcmp(which, "team")) {
    shmem_long_sum_reduce(SHMEM_TEAM_INVALID, out, buf, 4);
  } else if (!strcmp(which, "root")) {
    shmem_long_broadcast(SHMEM_TEAM_WORLD, out, buf, 4, shtest_npes);
  } else if (!strcmp(which, "nelems")) {
    shmem_long_max_reduce(SHMEM_TEAM_WORLD, out, buf, (size_t)1 << 40);
  } else if (!strcmp(which, "psync")) {
    psync[3] = 5;
    shmem_barrier(0, 0, shtest_npes, psync);
  } else if (!strcmp(which, "aset")) {
    /* every PE names an active set that starts at itself and does not fit the job (a PE outside
     * a set that fits returns at once: compat_aset_outside) */
    shmem_sync(shtest_me, 0, shtest_npes + 1, psync);
  } else if (!strcmp(which, "stride")) {
    shmem_long_alltoalls(SHMEM_TEAM_WORLD, out, buf, 0, 1, 1);
  } else if (!strcmp(which, "destroyed")) {
    shmem_team_t team;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, shtest_npes, NULL, 0, &team) == 0,
          "split failed");
    shmem_team_destroy(team);
    shmem_long_or_to_all(out, buf, 4, 0, 0, shtest_npes, out + 8, psync); /* still fine */
    shmem_long_fcollect(team, out, buf, 4);
  } else if (!strcmp(which, "mismatch_bcast")) {
    shmem_long_broadcast(SHMEM_TEAM_WORLD, out, buf, 4, shtest_me == 1 ? 0 : 1);
  } else if (!strcmp(which, "mismatch_reduce")) {
    shmem_long_sum_reduce(SHMEM_TEAM_WORLD, out, buf, shtest_me == shtest_npes - 1 ? 0 : 8);
  } else if (!strcmp(which, "mismatch_fcollect")) {
    shmem_long_fcollect(SHMEM_TEAM_WORLD, out, buf, shtest_me == 0 ? 3 : 4);
  }
  if (shtest_npes == 1 && !strncmp(which, "mismatch", 8)) {
    /* one PE cannot disagree with itself: the call must simply work */
    shtest_done("coll_bad (single PE)");
    return 0;
  }
  SHT_FAIL("the bad call %s returned", which);
  return 0;
}
