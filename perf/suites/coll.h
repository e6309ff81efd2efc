/* Collectives suite: every PE takes part; one result per collective, form and size.
 *   <op>.<form>.np<N> <bytes>   us per collective (N = number of PEs)
 * op: barrier_all, barrier, sync (size 0), bcast, sum_long, sum_double, xor_ulong, alltoall,
 * fcollect, collect (size = bytes each PE contributes: the source for bcast/reductions/(f)collect,
 * one block per destination PE for alltoall, so an alltoall moves N blocks per PE).
 * form: "as" = the active-set routines with pSync/pWrk (shmem_barrier, shmem_sync,
 * shmem_broadcast64, shmem_long/double_sum_to_all, shmem_long_xor_to_all, shmem_alltoall64,
 * shmem_fcollect64, shmem_collect64), "team" = the 1.5 forms on SHMEM_TEAM_WORLD (shmem_team_sync,
 * shmem_broadcastmem, shmem_long/double_sum_reduce, shmem_ulong_xor_reduce, shmem_alltoallmem,
 * shmem_fcollectmem, shmem_collectmem). A form the library lacks prints "n/a".
 *
 * Back to back: consecutive calls alternate between two sets of buffers (source, dest, and for
 * the active-set forms pSync and pWrk). That makes a pSync's reuse legal without an extra barrier
 * for every collective whose completion on one PE needs every PE to have entered it (all but
 * broadcast): a PE entering call i+2 has completed call i+1, so every PE has entered i+1, so every
 * PE has completed call i, the last user of that set. A broadcast root needs nothing from the
 * others, so each broadcast iteration is broadcast + shmem_barrier_all (in every form and column).
 *
 * Verification after every timed run (untimed): the sources carry values unique to the run, the
 * position and the PE; every PE checks every element of the dest of each set used in the run
 * against a closed form (or, for xor, a local replay). Barriers: each PE puts a fresh value to its
 * right neighbour, quiets, calls the measured barrier and must then find its left neighbour's value.
 * A wrong element prints one ERROR line per case and PE and makes the program exit non-zero. */
#ifndef PERF_SUITE_COLL_H
#define PERF_SUITE_COLL_H

#include "../common/bench.h"

enum coll_kind { K_BARRIER_ALL, K_BARRIER, K_SYNC, K_BCAST, K_SUM_LONG, K_SUM_DOUBLE, K_XOR,
                 K_ALLTOALL, K_FCOLLECT, K_COLLECT };
enum coll_form { F_AS, F_TEAM };

struct coll_op {
  const char *name;
  enum coll_kind kind;
  enum coll_form form;
  int avail; /* the library provides this family in this form */
};

static const struct coll_op coll_ops[] = {
    {"barrier_all", K_BARRIER_ALL, F_AS, 1},
    {"barrier.as", K_BARRIER, F_AS, BK_AS_BARRIER},
    {"sync.as", K_SYNC, F_AS, BK_AS_SYNC},
    {"sync.team", K_SYNC, F_TEAM, BK_TEAM_SYNC},
    {"bcast.as", K_BCAST, F_AS, BK_AS_BCAST},
    {"bcast.team", K_BCAST, F_TEAM, BK_TEAM_BCAST},
    {"sum_long.as", K_SUM_LONG, F_AS, BK_AS_REDUCE},
    {"sum_long.team", K_SUM_LONG, F_TEAM, BK_TEAM_REDUCE},
    {"sum_double.as", K_SUM_DOUBLE, F_AS, BK_AS_REDUCE},
    {"sum_double.team", K_SUM_DOUBLE, F_TEAM, BK_TEAM_REDUCE},
    {"xor_ulong.as", K_XOR, F_AS, BK_AS_REDUCE},
    {"xor_ulong.team", K_XOR, F_TEAM, BK_TEAM_REDUCE},
    {"alltoall.as", K_ALLTOALL, F_AS, BK_AS_ALLTOALL},
    {"alltoall.team", K_ALLTOALL, F_TEAM, BK_TEAM_ALLTOALL},
    {"fcollect.as", K_FCOLLECT, F_AS, BK_AS_FCOLLECT},
    {"fcollect.team", K_FCOLLECT, F_TEAM, BK_TEAM_FCOLLECT},
    {"collect.as", K_COLLECT, F_AS, BK_AS_COLLECT},
    {"collect.team", K_COLLECT, F_TEAM, BK_TEAM_COLLECT},
};

static const long coll_sizes[] = {8, 64, 1024, 8192, 65536, 262144, 1048576}; /* bytes per PE */
#define COLL_MAX_BYTES 1048576L
#define COLL_ROOT 0

static struct {
  void *src[2], *dst[2]; /* symmetric, npes * COLL_MAX_BYTES each */
  long *slot;            /* symmetric, barrier verification */
  long round;            /* identical on every PE: reset() runs the same number of times */
  int reported;          /* this case already printed its ERROR line */
  char name[64];
} coll;

/* The value PE p contributes at element e in round r; alltoall adds the destination PE j.
 * At most 2^17 elements and 64 PEs; small enough that sums of doubles stay exact. */
static inline long coll_v(long r, int p, size_t e) { return ((r * 64 + p) << 18) + (long)e; }
static inline long coll_a(long r, int p, int j, size_t e) {
  return (((r * 64 + p) * 64 + j) << 18) + (long)e;
}
static inline unsigned long coll_x(long r, int p, size_t e) {
  return (unsigned long)coll_v(r, p, e) * 0x9E3779B97F4A7C15ul;
}

/* One collective of kind/form on buffer set s with n 8-byte elements per PE. */
static void coll_call(const struct coll_op *op, size_t n, int s) {
  void *d = coll.dst[s], *src = coll.src[s];
  int team = op->form == F_TEAM;
  (void)d; (void)src; (void)team;
  switch (op->kind) {
    case K_BARRIER_ALL: bk_barrier_all(); break;
    case K_BARRIER:
#if BK_AS_BARRIER
      bk_as_barrier(s);
#endif
      break;
    case K_SYNC:
      if (!team) {
#if BK_AS_SYNC
        bk_as_sync(s);
#endif
      } else {
#if BK_TEAM_SYNC
        bk_team_sync(s);
#endif
      }
      break;
    case K_BCAST:
      if (!team) {
#if BK_AS_BCAST
        bk_as_bcast(d, src, n, COLL_ROOT, s);
#endif
      } else {
#if BK_TEAM_BCAST
        bk_team_bcast(d, src, n, COLL_ROOT, s);
#endif
      }
      bk_barrier_all(); /* before the root may broadcast again (see the header comment) */
      break;
    case K_SUM_LONG:
    case K_SUM_DOUBLE:
    case K_XOR:
      if (!team) {
#if BK_AS_REDUCE
        if (op->kind == K_SUM_LONG) bk_as_sum_long((long *)d, (const long *)src, n, s);
        if (op->kind == K_SUM_DOUBLE) bk_as_sum_double((double *)d, (const double *)src, n, s);
        if (op->kind == K_XOR) bk_as_xor_ulong((unsigned long *)d, (const unsigned long *)src, n, s);
#endif
      } else {
#if BK_TEAM_REDUCE
        if (op->kind == K_SUM_LONG) bk_team_sum_long((long *)d, (const long *)src, n, s);
        if (op->kind == K_SUM_DOUBLE) bk_team_sum_double((double *)d, (const double *)src, n, s);
        if (op->kind == K_XOR) bk_team_xor_ulong((unsigned long *)d, (const unsigned long *)src, n, s);
#endif
      }
      break;
    case K_ALLTOALL:
      if (!team) {
#if BK_AS_ALLTOALL
        bk_as_alltoall(d, src, n, s);
#endif
      } else {
#if BK_TEAM_ALLTOALL
        bk_team_alltoall(d, src, n, s);
#endif
      }
      break;
    case K_FCOLLECT:
      if (!team) {
#if BK_AS_FCOLLECT
        bk_as_fcollect(d, src, n, s);
#endif
      } else {
#if BK_TEAM_FCOLLECT
        bk_team_fcollect(d, src, n, s);
#endif
      }
      break;
    case K_COLLECT:
      if (!team) {
#if BK_AS_COLLECT
        bk_as_collect(d, src, n, s);
#endif
      } else {
#if BK_TEAM_COLLECT
        bk_team_collect(d, src, n, s);
#endif
      }
      break;
  }
}

static void coll_run(struct bench_case *c, long iters) {
  const struct coll_op *op = (const struct coll_op *)c->arg;
  for (long i = 0; i < iters; i++) coll_call(op, (size_t)c->iarg, (int)(i & 1));
}

/* New values in both sets' sources for this run. */
static void coll_reset(struct bench_case *c) {
  const struct coll_op *op = (const struct coll_op *)c->arg;
  size_t n = (size_t)c->iarg;
  int me = bk_me(), np = bk_npes();
  long r = ++coll.round;
  for (int s = 0; s < 2; s++) {
    long *l = (long *)coll.src[s];
    switch (op->kind) {
      case K_SUM_DOUBLE:
        for (size_t e = 0; e < n; e++) ((double *)l)[e] = (double)coll_v(r, me, e);
        break;
      case K_XOR:
        for (size_t e = 0; e < n; e++) ((unsigned long *)l)[e] = coll_x(r, me, e);
        break;
      case K_ALLTOALL:
        for (int j = 0; j < np; j++)
          for (size_t e = 0; e < n; e++) l[(size_t)j * n + e] = coll_a(r, me, j, e);
        break;
      case K_BCAST: case K_SUM_LONG: case K_FCOLLECT: case K_COLLECT:
        for (size_t e = 0; e < n; e++) l[e] = coll_v(r, me, e);
        break;
      default: break;
    }
  }
}

static int coll_mismatch(struct bench_case *c, int s, size_t at, long got, long want) {
  if (!coll.reported)
    bench_error(c->name, c->size, "set %d dest[%zu] = %ld, expected %ld", s, at, got, want);
  coll.reported = 1;
  return 0;
}

static int coll_check_barrier(struct bench_case *c) {
  const struct coll_op *op = (const struct coll_op *)c->arg;
  int me = bk_me(), np = bk_npes();
  long r = coll.round;
  bk_long_p(coll.slot, r * 1000 + me, (me + 1) % np);
  bk_quiet(); /* sync does not complete puts; barrier would, but keep one protocol */
  coll_call(op, 0, 0);
  long got = *(volatile long *)coll.slot, want = r * 1000 + (me + np - 1) % np;
  bk_barrier_all(); /* nobody writes the next value before everyone has read */
  if (got != want) {
    if (!coll.reported)
      bench_error(c->name, c->size, "after the barrier found %ld, expected %ld", got, want);
    coll.reported = 1;
    return 0;
  }
  return 1;
}

static int coll_check(struct bench_case *c, long iters) {
  const struct coll_op *op = (const struct coll_op *)c->arg;
  size_t n = (size_t)c->iarg;
  int me = bk_me(), np = bk_npes();
  long r = coll.round;
  if (op->kind == K_BARRIER_ALL || op->kind == K_BARRIER || op->kind == K_SYNC)
    return coll_check_barrier(c);
  for (int s = 0; s < (iters >= 2 ? 2 : 1); s++) {
    const long *l = (const long *)coll.dst[s];
    switch (op->kind) {
      case K_BCAST:
        /* the 1.4 active-set broadcast does not write the root's dest; the team form does */
        if (me == COLL_ROOT && op->form == F_AS) break;
        for (size_t e = 0; e < n; e++)
          if (l[e] != coll_v(r, COLL_ROOT, e)) return coll_mismatch(c, s, e, l[e], coll_v(r, COLL_ROOT, e));
        break;
      case K_SUM_LONG:
      case K_SUM_DOUBLE: {
        long base = (((long)np * r * 64 + (long)np * (np - 1) / 2) << 18);
        for (size_t e = 0; e < n; e++) {
          long want = base + (long)np * (long)e;
          long got = op->kind == K_SUM_LONG ? l[e] : (long)((const double *)l)[e];
          if (got != want || (op->kind == K_SUM_DOUBLE && ((const double *)l)[e] != (double)want))
            return coll_mismatch(c, s, e, got, want);
        }
        break;
      }
      case K_XOR:
        for (size_t e = 0; e < n; e++) {
          unsigned long want = 0;
          for (int p = 0; p < np; p++) want ^= coll_x(r, p, e);
          if ((unsigned long)l[e] != want) return coll_mismatch(c, s, e, l[e], (long)want);
        }
        break;
      case K_ALLTOALL:
        for (int j = 0; j < np; j++)
          for (size_t e = 0; e < n; e++)
            if (l[(size_t)j * n + e] != coll_a(r, j, me, e))
              return coll_mismatch(c, s, (size_t)j * n + e, l[(size_t)j * n + e], coll_a(r, j, me, e));
        break;
      case K_FCOLLECT:
      case K_COLLECT:
        for (int j = 0; j < np; j++)
          for (size_t e = 0; e < n; e++)
            if (l[(size_t)j * n + e] != coll_v(r, j, e))
              return coll_mismatch(c, s, (size_t)j * n + e, l[(size_t)j * n + e], coll_v(r, j, e));
        break;
      default: break;
    }
  }
  return 1;
}

static void coll_case(const struct coll_op *op, long bytes) {
  int np = bk_npes();
  snprintf(coll.name, sizeof coll.name, "%s.np%d", op->name, np);
  if (!op->avail) {
    if (bk_me() == 0) bench_print_na(coll.name, bytes, UNIT_US);
    return;
  }
  struct bench_case c = {coll.name, bytes, UNIT_US, 1.0, coll_reset, coll_run, coll_check,
                         (void *)op, bytes / 8};
  coll.reported = 0;
  bench_measure_all(&c);
  bk_barrier();
}

static void suite_coll(void) {
  int np = bk_npes();
  bench_collective_init();
  bk_coll_init((size_t)COLL_MAX_BYTES / 8);
  for (int s = 0; s < 2; s++) {
    coll.src[s] = bk_malloc((size_t)np * COLL_MAX_BYTES);
    coll.dst[s] = bk_malloc((size_t)np * COLL_MAX_BYTES);
    if (!coll.src[s] || !coll.dst[s]) {
      bench_error("coll", 0, "cannot allocate %ld MiB of symmetric memory", 4L * np * COLL_MAX_BYTES >> 20);
      return;
    }
  }
  coll.slot = (long *)bk_malloc(64);
  *coll.slot = -1;
  bk_barrier();
  for (size_t i = 0; i < sizeof coll_ops / sizeof coll_ops[0]; i++) {
    const struct coll_op *op = &coll_ops[i];
    if (op->kind == K_BARRIER_ALL || op->kind == K_BARRIER || op->kind == K_SYNC) {
      coll_case(op, 0);
      continue;
    }
    for (size_t k = 0; k < sizeof coll_sizes / sizeof coll_sizes[0]; k++) coll_case(op, coll_sizes[k]);
  }
  bk_barrier();
}

#endif
