/* Shared by the collective tests (test/shmem/coll_*.c): the reduction type tables and the teams
 * every collective runs on. */
#ifndef HOSHMEM_TEST_SHMEM_COLL_COMMON_H
#define HOSHMEM_TEST_SHMEM_COLL_COMMON_H

#include "shtest.h"
#include "types.h"

/* teamreducetypes: AND/OR/XOR (14) */
#define SHT_REDUCE_BIT_TYPES(X)                                                                 \
  X(unsigned char, uchar, 0) X(unsigned short, ushort, 0) X(unsigned int, uint, 0)              \
  X(unsigned long, ulong, 0) X(unsigned long long, ulonglong, 0) X(int8_t, int8, 0)             \
  X(int16_t, int16, 0) X(int32_t, int32, 0) X(int64_t, int64, 0) X(uint8_t, uint8, 0)           \
  X(uint16_t, uint16, 0) X(uint32_t, uint32, 0) X(uint64_t, uint64, 0) X(size_t, size, 0)
/* teamreducetypes: MAX/MIN (24); SUM/PROD and the scans add complexd/complexf */
#define SHT_REDUCE_MINMAX_TYPES(X)                                                              \
  X(char, char, 0) X(signed char, schar, 0) X(short, short, 0) X(int, int, 0) X(long, long, 0)  \
  X(long long, longlong, 0) X(ptrdiff_t, ptrdiff, 0) X(unsigned char, uchar, 0)                 \
  X(unsigned short, ushort, 0) X(unsigned int, uint, 0) X(unsigned long, ulong, 0)              \
  X(unsigned long long, ulonglong, 0) X(int8_t, int8, 0) X(int16_t, int16, 0)                   \
  X(int32_t, int32, 0) X(int64_t, int64, 0) X(uint8_t, uint8, 0) X(uint16_t, uint16, 0)         \
  X(uint32_t, uint32, 0) X(uint64_t, uint64, 0) X(size_t, size, 0) X(float, float, 1)           \
  X(double, double, 1) X(long double, longdouble, 1)
/* asetreducetypes: AND/OR/XOR (4), MAX/MIN (7); SUM/PROD add complexd/complexf */
#define SHT_ASET_BIT_TYPES(X) X(short, short, 0) X(int, int, 0) X(long, long, 0) X(long long, longlong, 0)
#define SHT_ASET_MINMAX_TYPES(X) \
  SHT_ASET_BIT_TYPES(X) X(float, float, 1) X(double, double, 1) X(long double, longdouble, 1)

/* A team as the tests see it: the handle, my index, the size, a name for messages, and the
 * world PE of each member (for checks that look at world numbering). */
struct sht_team {
  shmem_team_t team;
  int me, n;
  const char *name;
  int right_world; /* world PE of member (me + 1) % n */
};

static inline struct sht_team sht_world(void) {
  struct sht_team t = {SHMEM_TEAM_WORLD, shtest_me, shtest_npes, "SHMEM_TEAM_WORLD",
                       (shtest_me + 1) % shtest_npes};
  return t;
}

/* Runs fn(&team) on SHMEM_TEAM_SHARED, on split teams of WORLD, and on a split of each. */
#define SHT_FOR_SPLIT_TEAMS(fn) sht_for_split_teams(fn)
static inline void sht_for_split_teams(void (*fn)(const struct sht_team *)) {
  /* (start, stride, size) triplets over WORLD: everyone but PE 0; every second PE; the last
   * PEs in reverse order (1.6 negative stride); and a split of a split. */
  const int n = shtest_npes;
  /* SHMEM_TEAM_SHARED: every PE on this node (its own scratch slot, not WORLD's) */
  struct sht_team shared = {SHMEM_TEAM_SHARED, shmem_team_my_pe(SHMEM_TEAM_SHARED),
                            shmem_team_n_pes(SHMEM_TEAM_SHARED), "SHMEM_TEAM_SHARED", 0};
  shared.right_world =
      shmem_team_translate_pe(SHMEM_TEAM_SHARED, (shared.me + 1) % shared.n, SHMEM_TEAM_WORLD);
  fn(&shared);
  struct { int start, stride, size; const char *name; } splits[] = {
      {n > 1 ? 1 : 0, 1, n > 1 ? n - 1 : 1, "split(1,1,n-1)"},
      {0, 2, (n + 1) / 2, "split(0,2,ceil(n/2))"},
      {n - 1, -1, n, "split(n-1,-1,n)"},
  };
  for (size_t k = 0; k < sizeof splits / sizeof splits[0]; k++) {
    shmem_team_t team;
    int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, splits[k].start, splits[k].stride,
                                      splits[k].size, NULL, 0, &team);
    CHECK(rc == 0, "team_split_strided %s returned %d", splits[k].name, rc);
    if (team != SHMEM_TEAM_INVALID) {
      struct sht_team t = {team, shmem_team_my_pe(team), shmem_team_n_pes(team), splits[k].name, 0};
      t.right_world = shmem_team_translate_pe(team, (t.me + 1) % t.n, SHMEM_TEAM_WORLD);
      fn(&t);
      /* a split of this split: its members with an even index */
      shmem_team_t sub;
      rc = shmem_team_split_strided(team, 0, 2, (t.n + 1) / 2, NULL, 0, &sub);
      CHECK(rc == 0, "split of %s returned %d", splits[k].name, rc);
      if (sub != SHMEM_TEAM_INVALID) {
        struct sht_team s = {sub, shmem_team_my_pe(sub), shmem_team_n_pes(sub), "split of split", 0};
        s.right_world = shmem_team_translate_pe(sub, (s.me + 1) % s.n, SHMEM_TEAM_WORLD);
        fn(&s);
        shmem_team_destroy(sub);
      }
      shmem_team_destroy(team);
    }
    shmem_barrier_all();
  }
}

#endif
