/* Teams: WORLD/SHARED queries, split_strided (on world and on split teams: the stride counts
 * parent ranks), negative stride, stride 0, invalid triplets, split_2d with xrange not dividing N
 * and xrange > N, translate_pe, get_config, team_ptr, non-member behaviour. Every result is
 * compared with a serial reference computed from the triplet. */
#include "shtest.h"

static int world_of(shmem_team_t team, int rank) {
  return shmem_team_translate_pe(team, rank, SHMEM_TEAM_WORLD);
}

/* The reference: world PEs of a strided team over a parent given as a world-PE array. */
static int ref_members(const int *parent, int start, int stride, int size, int *out) {
  for (int i = 0; i < size; i++) out[i] = parent[start + i * stride];
  return size;
}

/* Checks `team` against the expected world PEs (or INVALID when this PE is not listed). */
static void check_team(const char *what, shmem_team_t team, const int *members, int size) {
  int my = -1;
  for (int i = 0; i < size; i++)
    if (members[i] == shtest_me) my = i;
  if (my < 0) {
    CHECK(team == SHMEM_TEAM_INVALID, "%s: non-member got a team handle", what);
    CHECK_EQ_U(what, (unsigned)-1, (unsigned)shmem_team_my_pe(team));
    CHECK_EQ_U(what, (unsigned)-1, (unsigned)shmem_team_n_pes(team));
    return;
  }
  CHECK(team != SHMEM_TEAM_INVALID, "%s: member %d got SHMEM_TEAM_INVALID", what, my);
  CHECK_EQ_U("team_my_pe", my, shmem_team_my_pe(team));
  CHECK_EQ_U("team_n_pes", size, shmem_team_n_pes(team));
  for (int i = 0; i < size; i++) {
    CHECK_EQ_U("translate team->world", members[i], world_of(team, i));
    CHECK_EQ_U("translate world->team", i, shmem_team_translate_pe(SHMEM_TEAM_WORLD, members[i], team));
  }
  CHECK_EQ_U("translate out of range", (unsigned)-1, (unsigned)shmem_team_translate_pe(team, size, SHMEM_TEAM_WORLD));
  CHECK_EQ_U("translate negative", (unsigned)-1, (unsigned)shmem_team_translate_pe(team, -1, SHMEM_TEAM_WORLD));
  /* a world PE outside the team translates to -1 */
  for (int pe = 0; pe < shtest_npes; pe++) {
    int in = 0;
    for (int i = 0; i < size; i++) in |= members[i] == pe;
    if (!in) CHECK_EQ_U("translate non-member", (unsigned)-1, (unsigned)shmem_team_translate_pe(SHMEM_TEAM_WORLD, pe, team));
  }
}

static long sym[64];

int main(void) {
  shtest_init();
  const int n = shtest_npes, me = shtest_me;
  int world[64], ref[64], ref2[64];
  for (int i = 0; i < n; i++) world[i] = i;

  /* predefined teams and SHMEM_TEAM_INVALID */
  CHECK_EQ_U("world my_pe", me, shmem_team_my_pe(SHMEM_TEAM_WORLD));
  CHECK_EQ_U("world n_pes", n, shmem_team_n_pes(SHMEM_TEAM_WORLD));
  CHECK_EQ_U("invalid my_pe", (unsigned)-1, (unsigned)shmem_team_my_pe(SHMEM_TEAM_INVALID));
  CHECK_EQ_U("invalid n_pes", (unsigned)-1, (unsigned)shmem_team_n_pes(SHMEM_TEAM_INVALID));
  CHECK_EQ_U("translate from invalid", (unsigned)-1, (unsigned)shmem_team_translate_pe(SHMEM_TEAM_INVALID, 0, SHMEM_TEAM_WORLD));
  CHECK_EQ_U("translate to invalid", (unsigned)-1, (unsigned)shmem_team_translate_pe(SHMEM_TEAM_WORLD, 0, SHMEM_TEAM_INVALID));
  /* SHARED is exactly the PEs shmem_ptr reaches */
  int shared_n = 0;
  for (int pe = 0; pe < n; pe++) {
    int reach = shmem_ptr(sym, pe) != NULL;
    int t = shmem_team_translate_pe(SHMEM_TEAM_WORLD, pe, SHMEM_TEAM_SHARED);
    CHECK(reach == (t >= 0), "SHARED membership of PE %d (%d) differs from shmem_ptr (%d)", pe, t, reach);
    if (reach) {
      CHECK_EQ_U("SHARED rank order", shared_n, t);
      CHECK(shmem_team_ptr(SHMEM_TEAM_SHARED, sym, t) == shmem_ptr(sym, pe), "team_ptr(SHARED, %d)", t);
      shared_n++;
    }
  }
  CHECK_EQ_U("SHARED size", shared_n, shmem_team_n_pes(SHMEM_TEAM_SHARED));
  /* 1.6 team_ptr */
  for (int pe = 0; pe < n; pe++)
    CHECK(shmem_team_ptr(SHMEM_TEAM_WORLD, &sym[3], pe) == shmem_ptr(&sym[3], pe), "team_ptr(WORLD, %d)", pe);
  CHECK(shmem_team_ptr(SHMEM_TEAM_INVALID, sym, 0) == NULL, "team_ptr(INVALID) must be NULL");
  CHECK(shmem_team_ptr(SHMEM_TEAM_WORLD, sym, me) == (void *)sym, "team_ptr to myself");

  /* get_config (1.6): a zero mask does nothing, NULL allowed */
  CHECK_EQ_U("get_config mask 0", 0, shmem_team_get_config(SHMEM_TEAM_WORLD, 0, NULL));
  shmem_team_config_t cfg = {.num_contexts = 12345};
  CHECK_EQ_U("get_config world", 0, shmem_team_get_config(SHMEM_TEAM_WORLD, SHMEM_TEAM_NUM_CONTEXTS, &cfg));
  CHECK_EQ_U("world num_contexts", 0, cfg.num_contexts);
  CHECK(shmem_team_get_config(SHMEM_TEAM_INVALID, SHMEM_TEAM_NUM_CONTEXTS, &cfg) != 0, "get_config(INVALID) must fail");

  /* even PEs, with a config */
  shmem_team_t even;
  shmem_team_config_t want = {.num_contexts = 3};
  int evens = (n + 1) / 2;
  CHECK_EQ_U("split even", 0, shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, evens, &want, SHMEM_TEAM_NUM_CONTEXTS, &even));
  ref_members(world, 0, 2, evens, ref);
  check_team("even", even, ref, evens);
  if (even != SHMEM_TEAM_INVALID) {
    cfg.num_contexts = -7;
    CHECK_EQ_U("get_config even", 0, shmem_team_get_config(even, SHMEM_TEAM_NUM_CONTEXTS, &cfg));
    CHECK_EQ_U("even num_contexts", 3, cfg.num_contexts);
    /* team_ptr on a split team numbers PEs in that team */
    for (int i = 0; i < evens; i++)
      CHECK(shmem_team_ptr(even, sym, i) == shmem_ptr(sym, 2 * i), "team_ptr(even, %d)", i);
    CHECK(shmem_team_ptr(even, sym, evens) == NULL, "team_ptr past the team");

    /* split of a split: start 1, stride 2 counts *parent* ranks (world 2, 6, ...) */
    if (evens >= 2) {
      shmem_team_t sub;
      int subn = evens / 2;
      CHECK_EQ_U("split of even", 0, shmem_team_split_strided(even, 1, 2, subn, NULL, 0, &sub));
      ref_members(ref, 1, 2, subn, ref2);
      check_team("even/odd-ranks", sub, ref2, subn);
      /* and negative stride on a split team: reverse of the even team */
      shmem_team_t rev;
      CHECK_EQ_U("reverse of even", 0, shmem_team_split_strided(even, evens - 1, -1, evens, NULL, 0, &rev));
      int r3[64];
      ref_members(ref, evens - 1, -1, evens, r3);
      check_team("even reversed", rev, r3, evens);
      shmem_team_destroy(rev);
      shmem_team_destroy(sub);
    }
  }
  /* every world PE takes part in the next world split, members of `even` or not */

  /* negative stride on world: reverse order */
  shmem_team_t rev;
  CHECK_EQ_U("split reverse", 0, shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, -1, n, NULL, 0, &rev));
  ref_members(world, n - 1, -1, n, ref);
  check_team("world reversed", rev, ref, n);
  CHECK_EQ_U("reverse my_pe", n - 1 - me, shmem_team_my_pe(rev));
  for (int i = 0; i < n; i++)
    CHECK(shmem_team_ptr(rev, sym, i) == shmem_ptr(sym, n - 1 - i), "team_ptr(rev, %d)", i);
  /* negative stride 2 from the top: n-1, n-3, ... */
  shmem_team_t rev2;
  int r2n = (n + 1) / 2;
  CHECK_EQ_U("split reverse by 2", 0, shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, -2, r2n, NULL, 0, &rev2));
  ref_members(world, n - 1, -2, r2n, ref);
  check_team("world reversed by 2", rev2, ref, r2n);

  /* stride 0 with size 1: the one PE `start` */
  shmem_team_t single;
  CHECK_EQ_U("split stride 0", 0, shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, 0, 1, NULL, 0, &single));
  ref[0] = n - 1;
  check_team("stride 0", single, ref, 1);

  /* invalid triplets: nonzero on every PE, new team INVALID */
  struct { int start, stride, size; } bad[] = {
      {0, 1, 0}, {0, 1, -1}, {-1, 1, 1}, {n, 1, 1}, {0, 1, n + 1}, {0, 0, 2}, {n - 1, 1, 2},
      {0, -1, 2}, {1, 2, n}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    shmem_team_t t = (shmem_team_t)&sym[0]; /* must be overwritten */
    int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, bad[i].start, bad[i].stride, bad[i].size, NULL, 0, &t);
    CHECK(rc != 0, "triplet (%d,%d,%d) on %d PEs must fail", bad[i].start, bad[i].stride, bad[i].size, n);
    CHECK(t == SHMEM_TEAM_INVALID, "failed split must give SHMEM_TEAM_INVALID");
  }
  /* the parent SHMEM_TEAM_INVALID: nonzero (1.6 erratum), for both splits */
  shmem_team_t t1 = (shmem_team_t)&sym[0], t2 = (shmem_team_t)&sym[0];
  CHECK(shmem_team_split_strided(SHMEM_TEAM_INVALID, 0, 1, 1, NULL, 0, &t1) != 0, "split of INVALID");
  CHECK(t1 == SHMEM_TEAM_INVALID, "split of INVALID gives INVALID");
  CHECK(shmem_team_split_2d(SHMEM_TEAM_INVALID, 1, NULL, 0, &t1, NULL, 0, &t2) != 0, "split_2d of INVALID");
  CHECK(t1 == SHMEM_TEAM_INVALID && t2 == SHMEM_TEAM_INVALID, "split_2d of INVALID gives INVALID");
  t1 = (shmem_team_t)&sym[0];
  CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 0, NULL, 0, &t1, NULL, 0, &t2) != 0, "split_2d xrange 0");
  CHECK(t1 == SHMEM_TEAM_INVALID && t2 == SHMEM_TEAM_INVALID, "split_2d xrange 0 gives INVALID");
  shmem_team_destroy(SHMEM_TEAM_INVALID); /* no-op */

  /* split_2d over world and over the reversed team, xrange 1..n+2 (3 does not divide 2, 4, 8) */
  shmem_team_t parents[2] = {SHMEM_TEAM_WORLD, rev};
  for (int p = 0; p < 2; p++) {
    int pw[64]; /* parent rank -> world PE */
    for (int i = 0; i < n; i++) pw[i] = world_of(parents[p], i);
    int pme = shmem_team_my_pe(parents[p]);
    for (int xr = 1; xr <= n + 2; xr++) {
      shmem_team_t xt, yt;
      CHECK_EQ_U("split_2d", 0, shmem_team_split_2d(parents[p], xr, NULL, 0, &xt, NULL, 0, &yt));
      int x_range = xr > n ? n : xr;
      int x = pme % x_range, y = pme / x_range;
      int row[64], col[64], rn = 0, cn = 0;
      for (int i = y * x_range; i < n && i < (y + 1) * x_range; i++) row[rn++] = pw[i];
      for (int i = x; i < n; i += x_range) col[cn++] = pw[i];
      check_team("x-team", xt, row, rn);
      check_team("y-team", yt, col, cn);
      CHECK_EQ_U("x-team my_pe == x", x, shmem_team_my_pe(xt));
      CHECK_EQ_U("y-team my_pe == y", y, shmem_team_my_pe(yt));
      CHECK_EQ_U("y-team size", (n - x + x_range - 1) / x_range, shmem_team_n_pes(yt));
      /* a split of a 2-D team works too (its exchange runs over the new team's own slot) */
      shmem_team_t xt_rev;
      int xn = shmem_team_n_pes(xt);
      CHECK_EQ_U("split of x-team", 0, shmem_team_split_strided(xt, xn - 1, -1, xn, NULL, 0, &xt_rev));
      for (int i = 0; i < xn; i++) ref[i] = row[xn - 1 - i];
      check_team("x-team reversed", xt_rev, ref, xn);
      shmem_team_destroy(xt_rev);
      shmem_team_destroy(xt);
      shmem_team_destroy(yt);
    }
  }

  shmem_team_destroy(single);
  shmem_team_destroy(rev2);
  shmem_team_destroy(rev);
  shmem_team_destroy(even);
  shtest_done("team_split");
  return 0;
}
