/* Collective operations of the benchmark backend on OpenSHMEM (include after backend_shmem.h).
 *
 * Two forms of every collective, both over all PEs:
 *   bk_as_*    the active-set forms with pSync/pWrk (OpenSHMEM 1.4, deprecated in 1.5), which
 *              every library here has; `set` (0 or 1) picks one of two pSync/pWrk pairs, so
 *              back-to-back calls may alternate them (see suites/coll.h for why that is legal).
 *   bk_team_*  the OpenSHMEM 1.5 team forms on SHMEM_TEAM_WORLD.
 * A library may lack some of them (OSHMEM 4.1 has no teams; hoshmem gains them one family at a
 * time), so each family is compiled only when its BK_AS_<family> / BK_TEAM_<family> macro is 1.
 * perf/compare.sh sets them all from compile probes (perf/src/coll_probe.c); by default the
 * active-set families are on and the team families are on for a 1.5 (or later) header.
 * Families: BARRIER (shmem_barrier), SYNC (shmem_sync / shmem_team_sync), BCAST, REDUCE (long sum,
 * double sum, xor), ALLTOALL, FCOLLECT, COLLECT. All data moves as 8-byte elements. */
#ifndef PERF_BACKEND_SHMEM_COLL_H
#define PERF_BACKEND_SHMEM_COLL_H

#include "backend_shmem.h"

#if defined(SHMEM_MAJOR_VERSION) && defined(SHMEM_MINOR_VERSION) && \
    (SHMEM_MAJOR_VERSION > 1 || (SHMEM_MAJOR_VERSION == 1 && SHMEM_MINOR_VERSION >= 5))
#define BK_TEAM_DEFAULT 1
#else
#define BK_TEAM_DEFAULT 0
#endif
#ifndef BK_AS_BARRIER
#define BK_AS_BARRIER 1
#endif
#ifndef BK_AS_SYNC
#define BK_AS_SYNC 1
#endif
#ifndef BK_AS_BCAST
#define BK_AS_BCAST 1
#endif
#ifndef BK_AS_REDUCE
#define BK_AS_REDUCE 1
#endif
#ifndef BK_AS_ALLTOALL
#define BK_AS_ALLTOALL 1
#endif
#ifndef BK_AS_FCOLLECT
#define BK_AS_FCOLLECT 1
#endif
#ifndef BK_AS_COLLECT
#define BK_AS_COLLECT 1
#endif
#ifndef BK_TEAM_SYNC
#define BK_TEAM_SYNC BK_TEAM_DEFAULT
#endif
#ifndef BK_TEAM_BCAST
#define BK_TEAM_BCAST BK_TEAM_DEFAULT
#endif
#ifndef BK_TEAM_REDUCE
#define BK_TEAM_REDUCE BK_TEAM_DEFAULT
#endif
#ifndef BK_TEAM_ALLTOALL
#define BK_TEAM_ALLTOALL BK_TEAM_DEFAULT
#endif
#ifndef BK_TEAM_FCOLLECT
#define BK_TEAM_FCOLLECT BK_TEAM_DEFAULT
#endif
#ifndef BK_TEAM_COLLECT
#define BK_TEAM_COLLECT BK_TEAM_DEFAULT
#endif

#define BK_PSYNC_LONGS 64 /* at least every SHMEM_*_SYNC_SIZE of the libraries used here */

static long *bk_psync[2]; /* symmetric */
static void *bk_pwrk[2];  /* symmetric, enough for an 8-byte reduction of the largest size */

/* max_elems: the largest reduction (8-byte elements) that will be run. Collective call. */
static void bk_coll_init(size_t max_elems) {
  size_t wrk = (max_elems / 2 + 1 + SHMEM_REDUCE_MIN_WRKDATA_SIZE) * 8;
  for (int s = 0; s < 2; s++) {
    bk_psync[s] = (long *)shmem_malloc(BK_PSYNC_LONGS * sizeof(long));
    bk_pwrk[s] = shmem_malloc(wrk);
    for (int i = 0; i < BK_PSYNC_LONGS; i++) bk_psync[s][i] = SHMEM_SYNC_VALUE;
  }
  shmem_barrier_all(); /* every pSync is initialised before anyone uses it */
}

static inline void bk_barrier_all(void) { shmem_barrier_all(); }

#if BK_AS_BARRIER
static inline void bk_as_barrier(int set) { shmem_barrier(0, 0, shmem_n_pes(), bk_psync[set]); }
#endif
#if BK_AS_SYNC
static inline void bk_as_sync(int set) { shmem_sync(0, 0, shmem_n_pes(), bk_psync[set]); }
#endif
#if BK_AS_BCAST
/* The 1.4 active-set broadcast leaves the root's dest untouched. */
static inline void bk_as_bcast(void *d, const void *s, size_t n, int root, int set) {
  shmem_broadcast64(d, s, n, root, 0, 0, shmem_n_pes(), bk_psync[set]);
}
#endif
#if BK_AS_REDUCE
static inline void bk_as_sum_long(long *d, const long *s, size_t n, int set) {
  shmem_long_sum_to_all(d, s, (int)n, 0, 0, shmem_n_pes(), (long *)bk_pwrk[set], bk_psync[set]);
}
static inline void bk_as_sum_double(double *d, const double *s, size_t n, int set) {
  shmem_double_sum_to_all(d, s, (int)n, 0, 0, shmem_n_pes(), (double *)bk_pwrk[set], bk_psync[set]);
}
/* 1.4 has bitwise *_to_all on signed types only; the bits are the same. */
static inline void bk_as_xor_ulong(unsigned long *d, const unsigned long *s, size_t n, int set) {
  shmem_long_xor_to_all((long *)d, (const long *)s, (int)n, 0, 0, shmem_n_pes(), (long *)bk_pwrk[set],
                        bk_psync[set]);
}
#endif
#if BK_AS_ALLTOALL
static inline void bk_as_alltoall(void *d, const void *s, size_t n, int set) {
  shmem_alltoall64(d, s, n, 0, 0, shmem_n_pes(), bk_psync[set]);
}
#endif
#if BK_AS_FCOLLECT
static inline void bk_as_fcollect(void *d, const void *s, size_t n, int set) {
  shmem_fcollect64(d, s, n, 0, 0, shmem_n_pes(), bk_psync[set]);
}
#endif
#if BK_AS_COLLECT
static inline void bk_as_collect(void *d, const void *s, size_t n, int set) {
  shmem_collect64(d, s, n, 0, 0, shmem_n_pes(), bk_psync[set]);
}
#endif

/* Team forms: no pSync, so `set` only selects the buffers (done by the suite). */
#if BK_TEAM_SYNC
static inline void bk_team_sync(int set) { (void)set; shmem_team_sync(SHMEM_TEAM_WORLD); }
#endif
#if BK_TEAM_BCAST
/* The team broadcast writes the root's dest too. */
static inline void bk_team_bcast(void *d, const void *s, size_t n, int root, int set) {
  (void)set;
  shmem_broadcastmem(SHMEM_TEAM_WORLD, d, s, n * 8, root);
}
#endif
#if BK_TEAM_REDUCE
static inline void bk_team_sum_long(long *d, const long *s, size_t n, int set) {
  (void)set;
  shmem_long_sum_reduce(SHMEM_TEAM_WORLD, d, s, n);
}
static inline void bk_team_sum_double(double *d, const double *s, size_t n, int set) {
  (void)set;
  shmem_double_sum_reduce(SHMEM_TEAM_WORLD, d, s, n);
}
static inline void bk_team_xor_ulong(unsigned long *d, const unsigned long *s, size_t n, int set) {
  (void)set;
  shmem_ulong_xor_reduce(SHMEM_TEAM_WORLD, d, s, n);
}
#endif
#if BK_TEAM_ALLTOALL
static inline void bk_team_alltoall(void *d, const void *s, size_t n, int set) {
  (void)set;
  shmem_alltoallmem(SHMEM_TEAM_WORLD, d, s, n * 8);
}
#endif
#if BK_TEAM_FCOLLECT
static inline void bk_team_fcollect(void *d, const void *s, size_t n, int set) {
  (void)set;
  shmem_fcollectmem(SHMEM_TEAM_WORLD, d, s, n * 8);
}
#endif
#if BK_TEAM_COLLECT
static inline void bk_team_collect(void *d, const void *s, size_t n, int set) {
  (void)set;
  shmem_collectmem(SHMEM_TEAM_WORLD, d, s, n * 8);
}
#endif

#endif
