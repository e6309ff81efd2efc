/* Contexts: ctx_create / team_create_ctx / get_team / destroy, options, SHMEM_CTX_INVALID, the
 * num_contexts limit, and RMA/AMO on team contexts with team-relative PE numbers (a reversed world
 * team and the even-PE team), checked against a serial reference. Also ctx_destroy's implicit
 * quiet, fence/quiet/pe_quiet on SHMEM_CTX_INVALID, pe_quiet and sessions. */
#include "shtest.h"

static long ring[64];      /* ring[r] = value put by team rank r */
static int ring_p[64];     /* same with p */
static uint32_t ring32[64];
static char ringmem[64 * 8];
static long counter;       /* AMO target on team PE 0 */
static unsigned long bits;
static long strided[4 * 64];
static long blocks[64 * 6];
static long after_destroy[8];

/* Puts and AMOs over `ctx`, whose team is `team`; every member must call. */
static void exercise(shmem_ctx_t ctx, shmem_team_t team, long salt) {
  int r = shmem_team_my_pe(team), tn = shmem_team_n_pes(team);
  if (r < 0) return;
  int next = (r + 1) % tn;
  long v = (long)shtest_val((uint64_t)r, 1, (uint64_t)salt);
  shmem_ctx_long_put(ctx, &ring[r], &v, 1, next);
  shmem_ctx_int_p(ctx, &ring_p[r], (int)v, next);
  uint32_t v32 = (uint32_t)v;
  shmem_ctx_put32(ctx, &ring32[r], &v32, 1, next);
  shmem_ctx_putmem_nbi(ctx, &ringmem[r * 8], &v, 8, next);
  long sv[4] = {v, v + 1, v + 2, v + 3};
  shmem_ctx_long_iput(ctx, &strided[r], sv, 64, 1, 4, next); /* strided[r + 64 k] = v + k */
  shmem_ctx_long_atomic_add(ctx, &counter, r + 1, 0);
  (void)shmem_ctx_long_atomic_fetch_inc(ctx, &counter, 0);
  shmem_ctx_ulong_atomic_or(ctx, &bits, 1UL << r, 0);
  long fetched = -1;
  shmem_ctx_long_atomic_fetch_add_nbi(ctx, &fetched, &counter, 0, 0);
  shmem_ctx_quiet(ctx);
  CHECK(fetched >= 0, "fetch_add_nbi result not delivered after ctx_quiet");
  shmem_barrier_all();

  /* reference: what the previous rank put here, and what team PE 0 collected */
  int prev = (r + tn - 1) % tn;
  long pv = (long)shtest_val((uint64_t)prev, 1, (uint64_t)salt);
  CHECK_EQ_U("ctx put from previous rank", pv, ring[prev]);
  CHECK_EQ_U("ctx p", (uint32_t)(int)pv, (uint32_t)ring_p[prev]);
  CHECK_EQ_U("ctx put32", (uint32_t)pv, ring32[prev]);
  long m;
  memcpy(&m, &ringmem[prev * 8], 8);
  CHECK_EQ_U("ctx putmem_nbi", pv, m);
  for (int k = 0; k < 4; k++) CHECK_EQ_U("ctx iput", pv + k, strided[prev + 64 * k]);
  if (r == 0) {
    long want = 0;
    for (int i = 0; i < tn; i++) want += i + 2;
    CHECK_EQ_U("ctx AMOs on team PE 0", want, counter);
    CHECK_EQ_U("ctx atomic_or", (tn >= 64 ? ~0UL : (1UL << tn) - 1), bits);
  }
  /* gets through the context: read the next rank's ring and team PE 0's counter */
  long got = 0;
  shmem_ctx_long_get(ctx, &got, &ring[r], 1, next);
  CHECK_EQ_U("ctx get", v, got);
  CHECK_EQ_U("ctx g", (uint32_t)(int)v, (uint32_t)shmem_ctx_int_g(ctx, &ring_p[r], next));
  long want = 0;
  for (int i = 0; i < tn; i++) want += i + 2;
  CHECK_EQ_U("ctx atomic_fetch", want, shmem_ctx_long_atomic_fetch(ctx, &counter, 0));
  long sg[4];
  shmem_ctx_long_iget(ctx, sg, &strided[r], 1, 64, 4, next);
  for (int k = 0; k < 4; k++) CHECK_EQ_U("ctx iget", v + k, sg[k]);
  shmem_barrier_all();
  /* reset for the next round */
  memset(ring, 0, sizeof ring);
  memset(ring_p, 0, sizeof ring_p);
  memset(ring32, 0, sizeof ring32);
  memset(ringmem, 0, sizeof ringmem);
  memset(strided, 0, sizeof strided);
  counter = 0;
  bits = 0;
  shmem_barrier_all();
}

int main(void) {
  shtest_init();
  const int n = shtest_npes, me = shtest_me;
  shmem_team_t t;

  /* get_team */
  CHECK_EQ_U("get_team(DEFAULT)", 0, shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &t));
  CHECK(t == SHMEM_TEAM_WORLD, "default context's team must be WORLD");
  t = SHMEM_TEAM_WORLD;
  CHECK(shmem_ctx_get_team(SHMEM_CTX_INVALID, &t) != 0, "get_team(INVALID) must fail");
  CHECK(t == SHMEM_TEAM_INVALID, "get_team(INVALID) must give SHMEM_TEAM_INVALID");

  /* ctx_create with every option combination: WORLD team, usable */
  long opts[] = {0, SHMEM_CTX_PRIVATE, SHMEM_CTX_SERIALIZED, SHMEM_CTX_NOSTORE,
                 SHMEM_CTX_PRIVATE | SHMEM_CTX_NOSTORE, SHMEM_CTX_SERIALIZED | SHMEM_CTX_NOSTORE};
  for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
    shmem_ctx_t c;
    CHECK_EQ_U("ctx_create", 0, shmem_ctx_create(opts[i], &c));
    CHECK(c != SHMEM_CTX_INVALID, "ctx_create gave SHMEM_CTX_INVALID");
    CHECK_EQ_U("get_team(created)", 0, shmem_ctx_get_team(c, &t));
    CHECK(t == SHMEM_TEAM_WORLD, "ctx_create context's team must be WORLD");
    exercise(c, SHMEM_TEAM_WORLD, (long)i);
    shmem_ctx_destroy(c);
  }
  shmem_ctx_t c = (shmem_ctx_t)&counter;
  CHECK(shmem_ctx_create(1L << 20, &c) != 0, "unknown option bits must fail");
  CHECK(c == SHMEM_CTX_INVALID, "failed ctx_create must give SHMEM_CTX_INVALID");
  c = (shmem_ctx_t)&counter;
  CHECK(shmem_team_create_ctx(SHMEM_TEAM_INVALID, 0, &c) != 0, "team_create_ctx(INVALID) must fail");
  CHECK(c == SHMEM_CTX_INVALID, "team_create_ctx(INVALID) must give SHMEM_CTX_INVALID");
  /* the default context through the ctx_ forms */
  exercise(SHMEM_CTX_DEFAULT, SHMEM_TEAM_WORLD, 100);

  /* on SHMEM_CTX_INVALID, fence/quiet/pe_quiet/session calls do nothing; destroy is a no-op */
  shmem_ctx_fence(SHMEM_CTX_INVALID);
  shmem_ctx_quiet(SHMEM_CTX_INVALID);
  int pes[2] = {0, n - 1};
  shmem_ctx_pe_quiet(SHMEM_CTX_INVALID, pes, 2);
  shmem_ctx_session_start(SHMEM_CTX_INVALID, SHMEM_CTX_SESSION_BATCH, NULL, 0);
  shmem_ctx_session_stop(SHMEM_CTX_INVALID);
  shmem_ctx_destroy(SHMEM_CTX_INVALID);
  /* pe_quiet: npes 0 ignores target_pes */
  shmem_pe_quiet(NULL, 0);
  shmem_pe_quiet(pes, 2);
  shmem_ctx_pe_quiet(SHMEM_CTX_DEFAULT, pes, 2);

  /* a reversed world team: context PE i is world PE n-1-i */
  shmem_team_t rev;
  CHECK_EQ_U("split reverse", 0, shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, -1, n, NULL, 0, &rev));
  shmem_ctx_t rc;
  CHECK_EQ_U("team_create_ctx(rev)", 0, shmem_team_create_ctx(rev, SHMEM_CTX_PRIVATE, &rc));
  CHECK_EQ_U("get_team(rev ctx)", 0, shmem_ctx_get_team(rc, &t));
  CHECK(t == rev, "team context's team");
  exercise(rc, rev, 200);
  /* explicitly: a p to team PE 0 lands on world PE n-1 */
  shmem_ctx_int_p(rc, &ring_p[me], me + 1000, 0);
  shmem_ctx_quiet(rc);
  shmem_barrier_all();
  if (me == n - 1)
    for (int i = 0; i < n; i++) CHECK_EQ_U("team PE 0 is world PE n-1", i + 1000, ring_p[i]);
  shmem_barrier_all();
  memset(ring_p, 0, sizeof ring_p);
  shmem_barrier_all();
  /* session hints change nothing */
  shmem_ctx_session_config_t sc = {.total_ops = 10};
  shmem_ctx_session_start(rc, SHMEM_CTX_SESSION_BATCH, &sc, SHMEM_CTX_SESSION_TOTAL_OPS);
  shmem_ctx_session_start(rc, 0, NULL, 0);
  exercise(rc, rev, 201);
  shmem_ctx_session_stop(rc);
  shmem_ctx_pe_quiet(rc, pes, 2);
  shmem_ctx_destroy(rc);

  /* the even team with a limit of 2 contexts: a third fails, freeing one makes room */
  shmem_team_config_t cfg = {.num_contexts = 2};
  shmem_team_t even;
  CHECK_EQ_U("split even", 0, shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, &cfg, SHMEM_TEAM_NUM_CONTEXTS, &even));
  if (even != SHMEM_TEAM_INVALID) {
    shmem_ctx_t e1, e2, e3;
    CHECK_EQ_U("even ctx 1", 0, shmem_team_create_ctx(even, 0, &e1));
    CHECK_EQ_U("even ctx 2", 0, shmem_team_create_ctx(even, SHMEM_CTX_SERIALIZED, &e2));
    CHECK(shmem_team_create_ctx(even, 0, &e3) != 0, "a third context over num_contexts = 2 must fail");
    CHECK(e3 == SHMEM_CTX_INVALID, "the failed context is SHMEM_CTX_INVALID");
    shmem_ctx_destroy(e1);
    CHECK_EQ_U("even ctx 3 after a destroy", 0, shmem_team_create_ctx(even, 0, &e3));
    /* ctx_destroy quiets: nbi puts then destroy, then only sync (sync does not quiet) */
    int tr = shmem_team_my_pe(even), tn = shmem_team_n_pes(even);
    long vals[8];
    for (int k = 0; k < 8; k++) vals[k] = (long)shtest_val((uint64_t)tr, (uint64_t)k, 7);
    shmem_ctx_long_put_nbi(e3, after_destroy, vals, 8, (tr + 1) % tn);
    shmem_ctx_destroy(e3);
    /* e2 is left alive: team_destroy below destroys it (a shareable context) */
    (void)e2;
  }
  shmem_sync_all();
  if (even != SHMEM_TEAM_INVALID) {
    int tr = shmem_team_my_pe(even), tn = shmem_team_n_pes(even);
    int prev = (tr + tn - 1) % tn;
    for (int k = 0; k < 8; k++)
      CHECK_EQ_U("put_nbi completed by ctx_destroy", shtest_val((uint64_t)prev, (uint64_t)k, 7), after_destroy[k]);
    exercise(SHMEM_CTX_DEFAULT, SHMEM_TEAM_WORLD, 300);
  } else {
    exercise(SHMEM_CTX_DEFAULT, SHMEM_TEAM_WORLD, 300);
  }
  shmem_team_destroy(even);
  shmem_team_destroy(rev);
  shtest_done("ctx_team");
  return 0;
}
