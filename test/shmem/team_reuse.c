/* Team scratch slots: all 61 free slots can be held at once, one more split fails on every PE
 * (and gives SHMEM_TEAM_INVALID), and destroying frees them for reuse; hundreds of create/destroy
 * cycles with nested splits neither leak slots nor see stale flags (a stale flag would let a
 * split's exchange read old bitmaps: slots would look taken and run out, or members would
 * disagree on a slot and the next exchange over the team would hang or misnumber it). */
#include "shtest.h"

#define FREE_SLOTS 61 /* 64 slots: WORLD, SHARED and the active-set slot take three */

static void check_reverse(shmem_team_t parent) {
  int pn = shmem_team_n_pes(parent);
  shmem_team_t rev;
  CHECK_EQ_U("reverse split", 0, shmem_team_split_strided(parent, pn - 1, -1, pn, NULL, 0, &rev));
  CHECK_EQ_U("reverse my_pe", pn - 1 - shmem_team_my_pe(parent), shmem_team_my_pe(rev));
  for (int i = 0; i < pn; i++)
    CHECK_EQ_U("reverse translate", shmem_team_translate_pe(parent, pn - 1 - i, SHMEM_TEAM_WORLD),
               shmem_team_translate_pe(rev, i, SHMEM_TEAM_WORLD));
  shmem_team_destroy(rev);
}

int main(void) {
  shtest_init();
  const int n = shtest_npes, me = shtest_me;
  shmem_team_t held[FREE_SLOTS];

  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < FREE_SLOTS; i++) {
      /* alternate whole-world and reversed teams so the members' views differ */
      int rc = i % 2 ? shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, -1, n, NULL, 0, &held[i])
                     : shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &held[i]);
      CHECK(rc == 0, "round %d: split %d of %d failed", round, i, FREE_SLOTS);
      CHECK_EQ_U("held my_pe", i % 2 ? n - 1 - me : me, shmem_team_my_pe(held[i]));
    }
    shmem_team_t extra = (shmem_team_t)&held[0];
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &extra) != 0,
          "a split with every slot taken must fail");
    CHECK(extra == SHMEM_TEAM_INVALID, "the failed split must give SHMEM_TEAM_INVALID");
    /* a split of a held team has no slot left either: it fails on every member */
    CHECK(shmem_team_split_strided(held[5], 0, 1, 1, NULL, 0, &extra) != 0,
          "a child split with no slot left must fail");
    /* free every other team, then the rest, in a different order each round */
    for (int i = round % 2; i < FREE_SLOTS; i += 2) shmem_team_destroy(held[i]);
    for (int i = 1 - round % 2; i < FREE_SLOTS; i += 2) shmem_team_destroy(held[i]);
  }

  /* create/destroy cycles. Each cycle first gives every PE a different number of singleton teams
   * (so the used-slot bitmaps differ from PE to PE and from cycle to cycle), then builds a chain of
   * nested splits (halving, parent-relative), each used as a parent for one more split, then
   * destroys everything. A slot reused without being reset would still hold the previous team's
   * flags with later epochs: exchanges would read last cycle's bitmaps, members would pick
   * different slots and the next exchange over their team would hang (the timeout fails it). */
  long cycles = shtest_scaled(200);
  for (long c = 0; c < cycles; c++) {
    shmem_team_t fill[64];
    int nfill = 0;
    for (int q = 0; q < n; q++)
      for (int k = 0; k < (q + c) % 4; k++) {
        shmem_team_t t;
        CHECK_EQ_U("singleton split", 0, shmem_team_split_strided(SHMEM_TEAM_WORLD, q, 0, 1, NULL, 0, &t));
        CHECK(q == me ? t != SHMEM_TEAM_INVALID : t == SHMEM_TEAM_INVALID, "singleton of PE %d", q);
        if (t != SHMEM_TEAM_INVALID) fill[nfill++] = t;
      }
    shmem_team_t chain[8];
    int depth = 0;
    shmem_team_t cur = SHMEM_TEAM_WORLD;
    while (cur != SHMEM_TEAM_INVALID && depth < 8) {
      int cn = shmem_team_n_pes(cur);
      shmem_team_t next;
      int keep = cn > 1 ? (cn + 1) / 2 : 1;
      int start = (int)(c % 2) * (cn - 1); /* even cycles keep the front, odd ones the back */
      int stride = c % 2 ? -1 : 1;
      CHECK_EQ_U("chain split", 0, shmem_team_split_strided(cur, start, stride, keep, NULL, 0, &next));
      if (next == SHMEM_TEAM_INVALID) break;
      check_reverse(next);
      check_reverse(next);
      chain[depth++] = next;
      if (keep == 1) break;
      cur = next;
    }
    for (int d = depth - 1; d >= 0; d--) shmem_team_destroy(chain[d]);
    for (int i = 0; i < nfill; i++) shmem_team_destroy(fill[i]);
  }
  shtest_done("team_reuse");
  return 0;
}
