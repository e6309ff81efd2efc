/* Pitfall 13 (readiness, 1.6): only the *local* source must be ready when a PE calls a
 * collective, and on return its buffers are its own again. Each round one PE (rotating) writes
 * its source late (after a sleep) while the others call at once; their sources still hold the
 * previous round's values, so an implementation that reads a peer's source before that peer has
 * entered the call gets stale data. Right after returning, every PE overwrites its source (and
 * the active-set pWrk) with junk, so one that still reads a peer's source after the peer returned
 * gets junk. Team forms (broadcast, fcollect, collect, alltoall, sum_reduce in and out of place,
 * sum_inscan) and active-set forms (broadcast64, fcollect64, sum_to_all), small and larger than a
 * team scratch slot (256 KiB), every result against a serial reference.
 * Also pitfall 13 broadcast: the team form updates dest on the root too, the active-set form
 * leaves the root's dest alone. */
#include "coll_common.h"

#define BIGN (48 * 1024) /* 384 KiB of longs: above one scratch slot */

static long *src, *dst, *wrk;
/* one pSync per active-set routine: each is reused only after a later collective has shown
 * that every PE left its previous call */
static long psync_b[SHMEM_SYNC_SIZE], psync_f[SHMEM_SYNC_SIZE], psync_r[SHMEM_SYNC_SIZE];

static long val(int pe, size_t i, long r) { return (long)(shtest_val((uint64_t)pe, i, (uint64_t)r) >> 8); }

static void prepare(long r, size_t cnt) {
  const int slow = (int)(r % shtest_npes);
  if (shtest_me == slow) shtest_sleep_ms(3);
  for (size_t i = 0; i < cnt; i++) src[i] = val(shtest_me, i, r);
}

static void scribble(size_t cnt) {
  for (size_t i = 0; i < cnt; i++) src[i] = -7;
  for (size_t i = 0; i < cnt; i++) wrk[i] = -9;
}

#define EXPECT(cond, ...) CHECK(cond, __VA_ARGS__)

int main(void) {
  shtest_init();
  const int me = shtest_me, n = shtest_npes;
  src = shmem_malloc(BIGN * sizeof(long) * (n + 1));
  dst = shmem_malloc(BIGN * sizeof(long) * (n + 1));
  wrk = shmem_malloc(BIGN * sizeof(long) * (n + 1));
  CHECK(src && dst && wrk, "shmem_malloc failed");
  for (int i = 0; i < SHMEM_SYNC_SIZE; i++) psync_b[i] = psync_f[i] = psync_r[i] = SHMEM_SYNC_VALUE;
  shmem_barrier_all();
  long r = 0;
  const long rounds = shtest_scaled(16);
  for (int big = 0; big < 2; big++) {
    const size_t cnt = big ? BIGN / (size_t)n : 8; /* per PE for fcollect/alltoall */
    const size_t bc = big ? BIGN : 8;              /* broadcast / reduce length */
    for (long k = 0; k < rounds; k++) {
      /* team broadcast: dest updated on every PE, the root included */
      ++r;
      int root = (int)(r % n);
      prepare(r, bc);
      CHECK_EQ_U("broadcast rc", 0, shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, bc, root));
      scribble(bc);
      for (size_t i = 0; i < bc; i++)
        EXPECT(dst[i] == val(root, i, r), "broadcast round %ld (%zu elems, root %d): element %zu: expected %ld got %ld",
               r, bc, root, i, val(root, i, r), dst[i]);
      /* fcollect */
      ++r;
      prepare(r, cnt);
      CHECK_EQ_U("fcollect rc", 0, shmem_long_fcollect(SHMEM_TEAM_WORLD, dst, src, cnt));
      scribble(cnt);
      for (int p = 0; p < n; p++)
        for (size_t i = 0; i < cnt; i++)
          EXPECT(dst[p * cnt + i] == val(p, i, r), "fcollect round %ld: block %d element %zu: got %ld", r, p, i,
                 dst[p * cnt + i]);
      /* collect: PE p contributes cnt - p % 2 elements */
      ++r;
      prepare(r, cnt);
      CHECK_EQ_U("collect rc", 0, shmem_long_collect(SHMEM_TEAM_WORLD, dst, src, cnt - me % 2));
      scribble(cnt);
      {
        size_t off = 0;
        for (int p = 0; p < n; p++)
          for (size_t i = 0; i < cnt - p % 2; i++, off++)
            EXPECT(dst[off] == val(p, i, r), "collect round %ld: PE %d element %zu: got %ld", r, p, i, dst[off]);
      }
      /* alltoall: block p of my source goes to PE p */
      ++r;
      {
        const int slow = (int)(r % n);
        if (me == slow) shtest_sleep_ms(3);
        for (int p = 0; p < n; p++)
          for (size_t i = 0; i < cnt; i++) src[p * cnt + i] = val(me, p * cnt + i, r);
      }
      CHECK_EQ_U("alltoall rc", 0, shmem_long_alltoall(SHMEM_TEAM_WORLD, dst, src, cnt));
      scribble(cnt * n);
      for (int p = 0; p < n; p++)
        for (size_t i = 0; i < cnt; i++)
          EXPECT(dst[p * cnt + i] == val(p, me * cnt + i, r), "alltoall round %ld: from PE %d element %zu: got %ld", r,
                 p, i, dst[p * cnt + i]);
      /* sum_reduce, out of place and in place */
      for (int inplace = 0; inplace < 2; inplace++) {
        ++r;
        prepare(r, bc);
        long *out = inplace ? src : dst;
        CHECK_EQ_U("sum_reduce rc", 0, shmem_long_sum_reduce(SHMEM_TEAM_WORLD, out, src, bc));
        if (!inplace) scribble(bc);
        for (size_t i = 0; i < bc; i++) {
          long want = 0;
          for (int p = 0; p < n; p++) want += val(p, i, r);
          EXPECT(out[i] == want, "sum_reduce%s round %ld: element %zu: expected %ld got %ld",
                 inplace ? " (in place)" : "", r, i, want, out[i]);
        }
        if (inplace) scribble(bc);
      }
      /* sum_inscan */
      ++r;
      prepare(r, bc);
      CHECK_EQ_U("sum_inscan rc", 0, shmem_long_sum_inscan(SHMEM_TEAM_WORLD, dst, src, bc));
      scribble(bc);
      for (size_t i = 0; i < bc; i++) {
        long want = 0;
        for (int p = 0; p <= me; p++) want += val(p, i, r);
        EXPECT(dst[i] == want, "sum_inscan round %ld: element %zu: expected %ld got %ld", r, i, want, dst[i]);
      }
      /* active-set broadcast64: the root's dest is not written */
      ++r;
      root = (int)(r % n);
      prepare(r, bc);
      for (size_t i = 0; i < bc; i++) dst[i] = -3;
      shmem_broadcast64(dst, src, bc, root, 0, 0, n, psync_b);
      scribble(bc);
      for (size_t i = 0; i < bc; i++)
        EXPECT(dst[i] == (me == root ? -3 : val(root, i, r)),
               "broadcast64 round %ld (root %d%s): element %zu: got %ld", r, root, me == root ? ", the root's dest" : "",
               i, dst[i]);
      /* active-set fcollect64 and sum_to_all (pWrk scribbled after return too) */
      ++r;
      prepare(r, cnt);
      shmem_fcollect64(dst, src, cnt, 0, 0, n, psync_f);
      scribble(cnt);
      for (int p = 0; p < n; p++)
        for (size_t i = 0; i < cnt; i++)
          EXPECT(dst[p * cnt + i] == val(p, i, r), "fcollect64 round %ld: block %d element %zu: got %ld", r, p, i,
                 dst[p * cnt + i]);
      ++r;
      const int nred = big ? 4096 : 8;
      prepare(r, (size_t)nred);
      shmem_long_sum_to_all(dst, src, nred, 0, 0, n, wrk, psync_r);
      scribble((size_t)nred);
      for (int i = 0; i < nred; i++) {
        long want = 0;
        for (int p = 0; p < n; p++) want += val(p, (size_t)i, r);
        EXPECT(dst[i] == want, "long_sum_to_all round %ld: element %d: expected %ld got %ld", r, i, want, dst[i]);
      }
      for (int i = 0; i < SHMEM_SYNC_SIZE; i++) CHECK(psync_b[i] == SHMEM_SYNC_VALUE && psync_f[i] == SHMEM_SYNC_VALUE && psync_r[i] == SHMEM_SYNC_VALUE,
                                                 "pSync[%d] not restored", i);
    }
  }
  shmem_free(wrk);
  shmem_free(dst);
  shmem_free(src);
  shtest_done("pitfall_13_readiness");
  return 0;
}
