/* Collectives of the "limit" backend (include after backend_limit.h): what plain shared memory
 * allows, with no library. Every collective is correct on its own for any caller: a barrier
 * (every PE's source is ready and its dest free), the copies or arithmetic, and a barrier (no PE
 * returns, and so overwrites its source or reads its dest, while another is still reading it).
 * The data is pulled straight from the other PEs' buffers with memcpy; each PE starts with its
 * right neighbour so that the PEs do not all read the same PE at once. Large reductions are split:
 * each PE reduces one slice of every source into its own dest, then copies the others' slices.
 * Only the active-set names exist here (compare.sh shows the same limit next to the team rows);
 * `set` is ignored: the barriers already make back-to-back calls safe. */
#ifndef PERF_BACKEND_LIMIT_COLL_H
#define PERF_BACKEND_LIMIT_COLL_H

#include "backend_limit.h"

#define BK_AS_BARRIER 1
#define BK_AS_SYNC 1
#define BK_AS_BCAST 1
#define BK_AS_REDUCE 1
#define BK_AS_ALLTOALL 1
#define BK_AS_FCOLLECT 1
#define BK_AS_COLLECT 1
#define BK_TEAM_SYNC 0
#define BK_TEAM_BCAST 0
#define BK_TEAM_REDUCE 0
#define BK_TEAM_ALLTOALL 0
#define BK_TEAM_FCOLLECT 0
#define BK_TEAM_COLLECT 0

#define BK_LIMIT_SPLIT_BYTES 4096 /* reductions at least this large per PE use slices */

static long *bk_collect_count; /* symmetric: element count each PE contributes to collect */

static void bk_coll_init(size_t max_elems) {
  (void)max_elems;
  bk_collect_count = (long *)bk_malloc(64);
  bk_barrier();
}

static inline void bk_barrier_all(void) { bk_barrier(); }
static inline void bk_as_barrier(int set) { (void)set; bk_barrier(); }
static inline void bk_as_sync(int set) { (void)set; bk_barrier(); }

static void bk_as_bcast(void *d, const void *s, size_t n, int root, int set) {
  (void)set;
  bk_barrier();
  if (bk_me_ != root) memcpy(d, bk_remote(s, root), n * 8);
  bk_barrier();
}

/* d[i] = OP over PEs of s[i], for i in [lo, hi), reading each PE's source in place. */
#define BK_LIMIT_REDUCE_RANGE(T, OP, d, s, lo, hi)                                            \
  do {                                                                                        \
    const T *first = (const T *)bk_remote(s, 0);                                              \
    for (size_t i = (lo); i < (hi); i++) (d)[i] = first[i];                                   \
    for (int pe = 1; pe < bk_npes_; pe++) {                                                   \
      const T *src = (const T *)bk_remote(s, pe);                                             \
      for (size_t i = (lo); i < (hi); i++) (d)[i] = (d)[i] OP src[i];                          \
    }                                                                                         \
  } while (0)

#define BK_LIMIT_REDUCTION(NAME, T, OP)                                                      \
  static void NAME(T *d, const T *s, size_t n, int set) {                                     \
    (void)set;                                                                                \
    int np = bk_npes_, me = bk_me_;                                                           \
    bk_barrier();                                                                             \
    if (n * sizeof(T) < BK_LIMIT_SPLIT_BYTES || np == 1) {                                    \
      BK_LIMIT_REDUCE_RANGE(T, OP, d, s, 0, n);                                               \
    } else {                                                                                  \
      size_t per = (n + (size_t)np - 1) / (size_t)np;                                         \
      size_t lo = per * (size_t)me < n ? per * (size_t)me : n;                                \
      size_t hi = lo + per < n ? lo + per : n;                                                \
      BK_LIMIT_REDUCE_RANGE(T, OP, d, s, lo, hi);                                             \
      bk_barrier();                                                                           \
      for (int k = 1; k < np; k++) {                                                          \
        int pe = (me + k) % np;                                                               \
        size_t plo = per * (size_t)pe < n ? per * (size_t)pe : n;                             \
        size_t phi = plo + per < n ? plo + per : n;                                           \
        if (phi > plo) memcpy(d + plo, (const T *)bk_remote(d, pe) + plo, (phi - plo) * sizeof(T)); \
      }                                                                                       \
    }                                                                                         \
    bk_barrier();                                                                             \
  }
BK_LIMIT_REDUCTION(bk_as_sum_long, long, +)
BK_LIMIT_REDUCTION(bk_as_sum_double, double, +)
BK_LIMIT_REDUCTION(bk_as_xor_ulong, unsigned long, ^)

static void bk_as_alltoall(void *d, const void *s, size_t n, int set) {
  (void)set;
  int np = bk_npes_, me = bk_me_;
  size_t blk = n * 8;
  bk_barrier();
  for (int k = 0; k < np; k++) {
    int pe = (me + k) % np;
    memcpy((char *)d + (size_t)pe * blk, (const char *)bk_remote(s, pe) + (size_t)me * blk, blk);
  }
  bk_barrier();
}

static void bk_as_fcollect(void *d, const void *s, size_t n, int set) {
  (void)set;
  int np = bk_npes_, me = bk_me_;
  size_t blk = n * 8;
  bk_barrier();
  for (int k = 0; k < np; k++) {
    int pe = (me + k) % np;
    memcpy((char *)d + (size_t)pe * blk, bk_remote(s, pe), blk);
  }
  bk_barrier();
}

/* Like fcollect, but each PE's count is published first and the offsets are a prefix sum. */
static void bk_as_collect(void *d, const void *s, size_t n, int set) {
  (void)set;
  int np = bk_npes_, me = bk_me_;
  *bk_collect_count = (long)n;
  bk_barrier();
  size_t off[64], total = 0;
  for (int pe = 0; pe < np; pe++) {
    off[pe] = total;
    total += (size_t)*(volatile long *)bk_remote(bk_collect_count, pe);
  }
  for (int k = 0; k < np; k++) {
    int pe = (me + k) % np;
    size_t cnt = (pe + 1 < np ? off[pe + 1] : total) - off[pe];
    memcpy((char *)d + off[pe] * 8, bk_remote(s, pe), cnt * 8);
  }
  bk_barrier();
}

#endif
