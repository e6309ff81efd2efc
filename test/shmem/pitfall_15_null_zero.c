/* Pitfall 15: a NULL pointer with a zero length is supported. Every data-moving routine is called
 * with NULL buffers and a zero count (RMA, nbi, strided, ibput, put_signal (the signal must still
 * be updated), ctx forms, p2p families, pe_quiet, team and active-set collectives) and must neither
 * fail nor move anything. BUILD runs it as is and under SHMEM_DEBUG=1, whose NULL-buffer checks
 * must only fire for a nonzero length. Pitfall 14: team_ptr(WORLD) is shmem_ptr and
 * team_ptr(INVALID) is NULL (also in team_split). */
#include "shtest.h"

static uint64_t sig;
static long guard[4] = {11, 22, 33, 44};
static long psync[SHMEM_SYNC_SIZE];
static long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
#define MIXED_BIG 1024 /* longs: above one push cell */
static long mixed_src[MIXED_BIG], mixed_all[MIXED_BIG * 8 + 1];

int main(void) {
  shtest_init();
  const int me = shtest_me, n = shtest_npes, right = (me + 1) % n;
  for (int i = 0; i < SHMEM_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;
  shmem_barrier_all();
  shmem_ctx_t ctx;
  CHECK_EQ_U("ctx_create", 0, shmem_ctx_create(0, &ctx));

  /* RMA */
  shmem_putmem(NULL, NULL, 0, right);
  shmem_getmem(NULL, NULL, 0, right);
  shmem_putmem_nbi(NULL, NULL, 0, right);
  shmem_getmem_nbi(NULL, NULL, 0, right);
  shmem_long_put(NULL, NULL, 0, right);
  shmem_long_get(NULL, NULL, 0, right);
  shmem_long_put_nbi(NULL, NULL, 0, right);
  shmem_long_get_nbi(NULL, NULL, 0, right);
  shmem_put64(NULL, NULL, 0, right);
  shmem_get32(NULL, NULL, 0, right);
  shmem_long_iput(NULL, NULL, 1, 1, 0, right);
  shmem_long_iget(NULL, NULL, 1, 1, 0, right);
  shmem_long_ibput(NULL, NULL, 1, 1, 1, 0, right);
  shmem_long_ibget(NULL, NULL, 1, 1, 1, 0, right);
  shmem_ctx_putmem(ctx, NULL, NULL, 0, right);
  shmem_ctx_long_get(ctx, NULL, NULL, 0, right);
  shmem_ctx_putmem_nbi(ctx, NULL, NULL, 0, right);
  shmem_ctx_long_get_nbi(ctx, NULL, NULL, 0, right);
  /* put_signal with no data still updates the signal */
  shmem_putmem_signal(NULL, NULL, 0, &sig, 1, SHMEM_SIGNAL_ADD, right);
  shmem_long_put_signal_nbi(NULL, NULL, 0, &sig, 1, SHMEM_SIGNAL_ADD, right);
  shmem_ctx_putmem_signal(ctx, NULL, NULL, 0, &sig, 1, SHMEM_SIGNAL_ADD, right);
  shmem_quiet();
  shmem_ctx_quiet(ctx);
  CHECK_EQ_U("signal after three zero-length put_signal ADD 1", 3, shmem_signal_wait_until(&sig, SHMEM_CMP_GE, 3));
  /* p2p families with nelems 0 (values in sync_families) and pe_quiet with npes 0 */
  shmem_long_wait_until_all(NULL, 0, NULL, SHMEM_CMP_EQ, 1);
  CHECK_EQ_U("test_all(NULL, 0)", 1, shmem_long_test_all(NULL, 0, NULL, SHMEM_CMP_EQ, 1));
  CHECK_EQ_U("test_some(NULL, 0)", 0, shmem_long_test_some(NULL, 0, NULL, NULL, SHMEM_CMP_EQ, 1));
  shmem_pe_quiet(NULL, 0);
  shmem_ctx_pe_quiet(ctx, NULL, 0);

  /* team collectives with nothing to move */
  CHECK_EQ_U("broadcast(NULL, 0)", 0, shmem_long_broadcast(SHMEM_TEAM_WORLD, NULL, NULL, 0, 0));
  CHECK_EQ_U("broadcastmem(NULL, 0)", 0, shmem_broadcastmem(SHMEM_TEAM_WORLD, NULL, NULL, 0, n - 1));
  CHECK_EQ_U("fcollect(NULL, 0)", 0, shmem_long_fcollect(SHMEM_TEAM_WORLD, NULL, NULL, 0));
  CHECK_EQ_U("alltoall(NULL, 0)", 0, shmem_long_alltoall(SHMEM_TEAM_WORLD, NULL, NULL, 0));
  CHECK_EQ_U("alltoalls(NULL, 0)", 0, shmem_long_alltoalls(SHMEM_TEAM_WORLD, NULL, NULL, 1, 1, 0));
  CHECK_EQ_U("sum_reduce(NULL, 0)", 0, shmem_long_sum_reduce(SHMEM_TEAM_WORLD, NULL, NULL, 0));
  CHECK_EQ_U("xor_reduce(NULL, 0)", 0, shmem_ulong_xor_reduce(SHMEM_TEAM_WORLD, NULL, NULL, 0));
  CHECK_EQ_U("sum_inscan(NULL, 0)", 0, shmem_long_sum_inscan(SHMEM_TEAM_WORLD, NULL, NULL, 0));
  CHECK_EQ_U("collect(NULL, 0) everywhere", 0, shmem_long_collect(SHMEM_TEAM_WORLD, NULL, NULL, 0));
  /* collect where the odd PEs pass NULL with nelems 0 and the others give data: a block that
   * fits a push cell and one that does not (read from its owner), team and active-set forms */
  for (int big = 0; big < 2; big++) {
    const size_t each = big ? MIXED_BIG : 1;
    for (size_t i = 0; i < each; i++) mixed_src[i] = 1000 * me + (long)i;
    for (size_t i = 0; i < MIXED_BIG * 8; i++) mixed_all[i] = -1;
    shmem_barrier_all();
    const int odd = me % 2;
    if (big)
      shmem_collect64(mixed_all, odd ? NULL : mixed_src, odd ? 0 : each, 0, 0, n, psync);
    else
      CHECK_EQ_U("collect with NULL on odd PEs", 0,
                 shmem_long_collect(SHMEM_TEAM_WORLD, mixed_all, odd ? NULL : mixed_src, odd ? 0 : each));
    size_t at = 0;
    for (int pe = 0; pe < n; pe += 2)
      for (size_t i = 0; i < each; i++, at++)
        if (mixed_all[at] != 1000 * pe + (long)i)
          SHT_FAIL("collect (%zu each, NULL on odd PEs): element %zu is %ld, expected %ld", each,
                   at, mixed_all[at], 1000L * pe + (long)i);
    CHECK_EQ_U("collect wrote past its end", -1, mixed_all[at]);
    shmem_barrier_all();
  }
  /* active-set forms */
  shmem_broadcast64(NULL, NULL, 0, 0, 0, 0, n, psync);
  shmem_barrier_all();
  shmem_fcollect32(NULL, NULL, 0, 0, 0, n, psync);
  shmem_barrier_all();
  shmem_long_sum_to_all(NULL, NULL, 0, 0, 0, n, pwrk, psync);
  shmem_barrier_all();
  shmem_alltoall64(NULL, NULL, 0, 0, 0, n, psync);
  shmem_barrier_all();
  for (int i = 0; i < 4; i++) CHECK_EQ_U("guard untouched", (i + 1) * 11, guard[i]);

  /* pitfall 14 (1.6): team_ptr(WORLD) is shmem_ptr; team_ptr(INVALID) is NULL */
  for (int pe = 0; pe < n; pe++)
    CHECK(shmem_team_ptr(SHMEM_TEAM_WORLD, guard, pe) == shmem_ptr(guard, pe), "team_ptr(WORLD, %d) != shmem_ptr", pe);
  CHECK(shmem_team_ptr(SHMEM_TEAM_INVALID, guard, 0) == NULL, "team_ptr(SHMEM_TEAM_INVALID) is not NULL");
  shmem_ctx_destroy(ctx);
  shtest_done("pitfall_15_null_zero");
  return 0;
}
