/* 1.6 ibput/ibget (interleaved blocks), typed and sized, with and without a context, including
 * a team context (team-relative PE); bsize 1 equals iput; zero blocks or zero bsize do nothing. */
#include "shtest.h"

#define NB 5
#define BS 3
#define DST 7 /* target stride (elements) >= BS */
#define SST 4 /* source stride */

static long tl[NB * DST + 8];
static int16_t t16[NB * DST + 8];
static long src_sym[NB * SST];

static long val(int pe, int i) { return (long)shtest_val((uint64_t)pe, (uint64_t)i, 11); }

int main(void) {
  shtest_init();
  const int n = shtest_npes, me = shtest_me, next = (me + 1) % n, prev = (me + n - 1) % n;
  long src[NB * SST];
  int16_t s16[NB * SST];
  for (int i = 0; i < NB * SST; i++) {
    src[i] = val(me, i);
    s16[i] = (int16_t)val(me, i);
    src_sym[i] = val(me, i + 1000);
  }
  for (int form = 0; form < 4; form++) {
    memset(tl, 0, sizeof tl);
    memset(t16, 0, sizeof t16);
    shmem_barrier_all();
    switch (form) {
      case 0:
        shmem_long_ibput(tl, src, DST, SST, BS, NB, next);
        shmem_ibput16(t16, s16, DST, SST, BS, NB, next);
        break;
      case 1:
        shmem_ctx_long_ibput(SHMEM_CTX_DEFAULT, tl, src, DST, SST, BS, NB, next);
        shmem_ctx_ibput16(SHMEM_CTX_DEFAULT, t16, s16, DST, SST, BS, NB, next);
        break;
      case 2: { /* through a reversed team: team PE n-1-next is world PE next */
        shmem_team_t rev;
        shmem_ctx_t ctx;
        CHECK_EQ_U("split", 0, shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, -1, n, NULL, 0, &rev));
        CHECK_EQ_U("team ctx", 0, shmem_team_create_ctx(rev, 0, &ctx));
        shmem_ctx_long_ibput(ctx, tl, src, DST, SST, BS, NB, n - 1 - next);
        shmem_ctx_ibput16(ctx, t16, s16, DST, SST, BS, NB, n - 1 - next);
        shmem_ctx_destroy(ctx);
        shmem_team_destroy(rev);
        break;
      }
      case 3: /* nothing moves */
        shmem_long_ibput(tl, src, DST, SST, 0, NB, next);
        shmem_long_ibput(tl, src, DST, SST, BS, 0, next);
        shmem_ibput16(t16, s16, DST, SST, BS, 0, next);
        break;
    }
    shmem_barrier_all();
    for (int i = 0; i < NB * DST + 8; i++) {
      int b = i / DST, k = i % DST;
      int hit = form != 3 && b < NB && k < BS;
      long want = hit ? val(prev, b * SST + k) : 0;
      CHECK_EQ_U("ibput long", want, tl[i]);
      CHECK_EQ_U("ibput16", (uint16_t)(int16_t)want, (uint16_t)t16[i]);
    }
  }
  /* ibget: blocks of the next PE's src_sym into a local buffer with stride DST */
  long got[NB * DST];
  int64_t got64[NB * DST];
  memset(got, 0, sizeof got);
  memset(got64, 0, sizeof got64);
  shmem_long_ibget(got, src_sym, DST, SST, BS, NB, next);
  shmem_ctx_ibget64(SHMEM_CTX_DEFAULT, got64, src_sym, DST, SST, BS, NB, next);
  for (int i = 0; i < NB * DST; i++) {
    int b = i / DST, k = i % DST;
    long want = k < BS ? val(next, b * SST + k + 1000) : 0;
    CHECK_EQ_U("ibget long", want, got[i]);
    CHECK_EQ_U("ctx ibget64", want, got64[i]);
  }
  /* bsize 1 is iput */
  memset(tl, 0, sizeof tl);
  shmem_barrier_all();
  shmem_long_ibput(tl, src, 2, 3, 1, NB, next);
  shmem_barrier_all();
  for (int i = 0; i < 2 * NB; i++)
    CHECK_EQ_U("ibput bsize 1", i % 2 ? 0 : val(prev, (i / 2) * 3), tl[i]);
  shtest_done("ctx_ibput");
  return 0;
}
