/* Pitfall 9: a new team is usable immediately, with no synchronization after the split, and
 * pitfall 11: PE numbers on a team context are relative to the team. Each cycle splits WORLD (or
 * a split of it) with a different triplet (positive, negative and zero strides) while the PEs
 * arrive skewed, and at once, with no barrier: queries the team, runs a reduction and a broadcast
 * on it, puts through a context of the new team to the next team PE, and syncs. Non-members must
 * get SHMEM_TEAM_INVALID with a return of 0. Results are checked against the triplet. */
#include "shtest.h"

static long red_src[4], red_dst[4], bc_src[4], bc_dst[4], ring[2];

int main(void) {
  shtest_init();
  const int me = shtest_me, n = shtest_npes;
  const long cycles = shtest_scaled(150);
  for (long c = 0; c < cycles; c++) {
    /* triplet: start, stride, size over WORLD, always valid */
    int stride = (int)(c % 5) - 2; /* -2..2 */
    int size, start;
    if (stride == 0) {
      size = 1;
      start = (int)(c % n);
    } else {
      int as = stride < 0 ? -stride : stride;
      int maxsize = (n - 1) / as + 1;
      size = 1 + (int)(c % maxsize);
      start = stride > 0 ? (int)((c / 5) % (n - (size - 1) * as)) : n - 1 - (int)((c / 5) % (n - (size - 1) * as));
    }
    int my_rank = -1;
    for (int i = 0; i < size; i++)
      if (start + i * stride == me) my_rank = i;
    if ((c + me) % 7 == 0) shtest_sleep_ms(2); /* skew the arrivals */
    shmem_team_t t = (shmem_team_t)&ring[0];
    int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, start, stride, size, NULL, 0, &t);
    CHECK(rc == 0, "cycle %ld: split(%d, %d, %d) returned %d on PE %d", c, start, stride, size, rc, me);
    if (my_rank < 0) {
      CHECK(t == SHMEM_TEAM_INVALID, "cycle %ld: non-member PE %d did not get SHMEM_TEAM_INVALID", c, me);
      continue;
    }
    /* no synchronization from here on until the team's own collectives */
    CHECK(t != SHMEM_TEAM_INVALID, "cycle %ld: member got SHMEM_TEAM_INVALID", c);
    CHECK_EQ_U("team_my_pe right after the split", my_rank, shmem_team_my_pe(t));
    CHECK_EQ_U("team_n_pes right after the split", size, shmem_team_n_pes(t));
    for (int k = 0; k < 4; k++) red_src[k] = (long)(my_rank + 1) * (k + 1) + c;
    CHECK_EQ_U("sum_reduce rc", 0, shmem_long_sum_reduce(t, red_dst, red_src, 4));
    for (int k = 0; k < 4; k++)
      CHECK_EQ_U("sum_reduce on the new team", (long)(k + 1) * size * (size + 1) / 2 + (long)size * c, red_dst[k]);
    const int root = (int)(c % size);
    for (int k = 0; k < 4; k++) bc_src[k] = (long)shtest_val((uint64_t)my_rank, (uint64_t)k, (uint64_t)c);
    CHECK_EQ_U("broadcast rc", 0, shmem_long_broadcast(t, bc_dst, bc_src, 4, root));
    for (int k = 0; k < 4; k++)
      CHECK_EQ_U("broadcast on the new team", (long)shtest_val((uint64_t)root, (uint64_t)k, (uint64_t)c), bc_dst[k]);
    shmem_ctx_t ctx;
    CHECK_EQ_U("team_create_ctx", 0, shmem_team_create_ctx(t, 0, &ctx));
    const int next = (my_rank + 1) % size, prev = (my_rank + size - 1) % size;
    shmem_ctx_long_p(ctx, &ring[c % 2], c * 100 + my_rank, next); /* next is a team PE number */
    shmem_ctx_quiet(ctx);
    CHECK_EQ_U("team_sync rc", 0, shmem_team_sync(t));
    CHECK(ring[c % 2] == c * 100 + prev, "cycle %ld: team ctx put from team PE %d (world %d): got %ld", c, prev,
          start + prev * stride, ring[c % 2]);
    shmem_ctx_destroy(ctx);
    shmem_team_destroy(t);
  }
  shtest_done("pitfall_9_team_immediate");
  return 0;
}
