/* shmem_team_sync (WORLD and split teams), shmem_sync_all and shmem_barrier_all: each round every
 * member stores into its right neighbour and synchronizes; the neighbour must then see the store.
 * Thousands of rounds back to back check that fast PEs entering the next sync early never
 * release a slow one (the flags of one sync must not satisfy another). */
#include "coll_common.h"

static long slots[2][1024];

static void rounds(const struct sht_team *t, int count, int salt) {
  const int right_world = t->right_world;
  const int left = (t->me + t->n - 1) % t->n;
  for (int r = 0; r < count; r++) {
    long *slot = &slots[r % 2][r % 1024];
    const long value = ((long)salt << 32) + ((long)r << 8) + t->me;
    shmem_long_p(slot, value, right_world);
    int rc = shmem_team_sync(t->team);
    CHECK(rc == 0, "team_sync returned %d", rc);
    const long want = ((long)salt << 32) + ((long)r << 8) + left;
    CHECK(*slot == want, "team_sync on %s (%d PEs), round %d: expected %lx got %lx", t->name, t->n,
          r, want, *slot);
    /* the next write into this slot comes two rounds later, after another sync */
  }
  int rc = shmem_team_sync(t->team);
  CHECK(rc == 0, "team_sync returned %d", rc);
}

static void run_all(const struct sht_team *t) { rounds(t, (int)shtest_scaled(3000), 7); }

int main(void) {
  shtest_init();
  struct sht_team world = sht_world();
  run_all(&world);
  SHT_FOR_SPLIT_TEAMS(run_all);
  /* world-implicit forms */
  const int right = (shtest_me + 1) % shtest_npes, left = (shtest_me + shtest_npes - 1) % shtest_npes;
  const int n = (int)shtest_scaled(2000);
  for (int r = 0; r < n; r++) {
    long *slot = &slots[r % 2][r % 1024];
    shmem_long_p(slot, r * 100L + shtest_me, right);
    if (r % 2) shmem_sync_all();
    else shmem_barrier_all();
    CHECK(*slot == r * 100L + left, "%s round %d: expected %ld got %ld",
          r % 2 ? "sync_all" : "barrier_all", r, r * 100L + left, *slot);
  }
  shtest_done("coll_sync");
  return 0;
}
