/* Measurement harness shared by every benchmark suite.
 *
 * Backend-agnostic: the includer first includes a backend header (backend_shmem.h or
 * ../limit/backend_limit.h) that provides bk_me(), bk_npes(), bk_barrier(), bk_quiet(),
 * bk_long_p() and friends. Suites in perf/suites/ are written only against that interface, so
 * the OpenSHMEM programs and the "limit" program run the very same loops.
 *
 * Output: one line per result, "name size value unit", printed by PE 0 only.
 * A failed verification prints "ERROR name size message" and makes the program exit non-zero.
 */
#ifndef PERF_BENCH_H
#define PERF_BENCH_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- options ----------------------------------------------------------------------------- */

static int bench_quick;      /* -q or PERF_QUICK=1: short runs for a smoke test */
static int bench_errors;     /* verification failures seen by this PE */
static double bench_target;  /* seconds one timed repetition should last */
static int bench_reps;       /* timed repetitions; the median is reported */

static __attribute__((unused)) void bench_options(int argc, char **argv) {
  const char *env = getenv("PERF_QUICK");
  bench_quick = env && *env && strcmp(env, "0") != 0;
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quick") == 0) bench_quick = 1;
  /* short runs, many of them: on a busy machine a preempted run spoils one sample, not the median */
  bench_target = bench_quick ? 0.0015 : 0.005;
  bench_reps = bench_quick ? 5 : 11;
}

/* ---- clock and statistics ---------------------------------------------------------------- */

static inline double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static __attribute__((unused)) int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static __attribute__((unused)) double bench_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
  return (n & 1) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ---- reporting --------------------------------------------------------------------------- */

enum bench_unit { UNIT_US, UNIT_MBPS, UNIT_MOPS, UNIT_GUPS };

static __attribute__((unused)) const char *bench_unit_name(enum bench_unit u) {
  switch (u) {
    case UNIT_US: return "us";
    case UNIT_MBPS: return "MB/s";
    case UNIT_MOPS: return "Mops/s";
    default: return "GUP/s";
  }
}

static __attribute__((unused)) void bench_print(const char *name, long size, double value, enum bench_unit unit) {
  printf("%s %ld %.4g %s\n", name, size, value, bench_unit_name(unit));
  fflush(stdout);
}

/* A result this library/API version cannot produce (e.g. 1.5 routines on a 1.4 library). */
static __attribute__((unused)) void bench_print_na(const char *name, long size, enum bench_unit unit) {
  printf("%s %ld n/a %s\n", name, size, bench_unit_name(unit));
  fflush(stdout);
}

static __attribute__((unused)) void bench_error(const char *name, long size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static __attribute__((unused)) void bench_error(const char *name, long size, const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  printf("ERROR %s %ld pe%d: %s\n", name, size, bk_me(), msg);
  fflush(stdout);
  bench_errors++;
}

/* ---- measurement ------------------------------------------------------------------------- */

/* One benchmark: run() does `iters` iterations of `ops_per_iter` operations each and returns only
 * when they are complete (quiet included). reset() (optional) runs untimed before every run;
 * check() (optional) runs untimed after every run and returns 0 if the result is right. */
struct bench_case {
  const char *name;
  long size;              /* bytes per operation, or PE count for collectives */
  enum bench_unit unit;
  double ops_per_iter;
  void (*reset)(struct bench_case *c);
  void (*run)(struct bench_case *c, long iters);
  int (*check)(struct bench_case *c, long iters); /* prints its own ERROR line */
  void *arg;                                      /* suite-private */
  long iarg;
};

static __attribute__((unused)) double bench_time_run(struct bench_case *c, long iters, int *ok) {
  if (c->reset) c->reset(c);
  double t0 = bench_now();
  c->run(c, iters);
  double t = bench_now() - t0;
  if (c->check && *ok && !c->check(c, iters)) *ok = 0;
  return t;
}

static __attribute__((unused)) double bench_value(const struct bench_case *c, long iters, double seconds) {
  double ops = (double)iters * c->ops_per_iter;
  switch (c->unit) {
    case UNIT_US: return seconds / ops * 1e6;
    case UNIT_MBPS: return ops * (double)c->size / seconds / 1e6;
    case UNIT_MOPS: return ops / seconds / 1e6;
    default: return ops / seconds / 1e9;
  }
}

/* Calibrates the iteration count so one run lasts about bench_target seconds (the doubling also
 * serves as warm-up), does one more untimed warm-up run, then reports the median of bench_reps
 * timed runs. Called by the one PE that drives the benchmark. */
static __attribute__((unused)) void bench_measure(struct bench_case *c) {
  int ok = 1;
  long iters = 1;
  double t;
  for (;;) {
    t = bench_time_run(c, iters, &ok);
    if (t >= bench_target / 8 || iters >= (1L << 40)) break;
    iters *= (t < bench_target / 64) ? 8 : 2;
  }
  double scaled = (double)iters * bench_target / (t > 0 ? t : 1e-9);
  iters = scaled < 1 ? 1 : (long)scaled;
  bench_time_run(c, iters, &ok);
  double v[32];
  int reps = bench_reps < 32 ? bench_reps : 32;
  for (int r = 0; r < reps; r++) v[r] = bench_value(c, iters, bench_time_run(c, iters, &ok));
  if (ok)
    bench_print(c->name, c->size, bench_median(v, reps), c->unit);
  else
    bench_error(c->name, c->size, "wrong result; value not reported");
}

/* ---- collective helpers ------------------------------------------------------------------ */

static long *bench_bcast_slot; /* symmetric, allocated by bench_collective_init() */

static __attribute__((unused)) void bench_collective_init(void) {
  bench_bcast_slot = (long *)bk_malloc(64);
  *bench_bcast_slot = 0;
  bk_barrier();
}

/* PE 0's value v is returned on every PE. */
static __attribute__((unused)) long bench_bcast_long(long v) {
  if (bk_me() == 0) {
    for (int pe = 1; pe < bk_npes(); pe++) bk_long_p(bench_bcast_slot, v, pe);
    bk_quiet();
    *bench_bcast_slot = v;
  }
  bk_barrier();
  long r = *(volatile long *)bench_bcast_slot;
  bk_barrier(); /* nobody overwrites the slot before everyone has read it */
  return r;
}

/* Like bench_measure() for operations every PE takes part in (barrier, GUPS). All PEs call it;
 * PE 0 times from a barrier to the barrier after run() and decides the iteration count. */
static __attribute__((unused)) double bench_time_run_all(struct bench_case *c, long iters, int *ok) {
  if (c->reset) c->reset(c);
  bk_barrier();
  double t0 = bench_now();
  c->run(c, iters);
  bk_barrier();
  double t = bench_now() - t0;
  if (c->check && !c->check(c, iters)) *ok = 0;
  return t;
}

static __attribute__((unused)) void bench_measure_all(struct bench_case *c) {
  int ok = 1;
  long iters = 1;
  for (;;) {
    double t = bench_time_run_all(c, iters, &ok);
    long next = 0; /* 0: calibrated */
    if (bk_me() == 0 && t < bench_target / 8 && iters < (1L << 40))
      next = iters * ((t < bench_target / 64) ? 8 : 2);
    else if (bk_me() == 0) {
      double scaled = (double)iters * bench_target / (t > 0 ? t : 1e-9);
      next = -(scaled < 1 ? 1 : (long)scaled);
    }
    next = bench_bcast_long(next);
    if (next < 0) { iters = -next; break; }
    iters = next;
  }
  bench_time_run_all(c, iters, &ok);
  double v[32];
  int reps = bench_reps < 32 ? bench_reps : 32;
  for (int r = 0; r < reps; r++) v[r] = bench_value(c, iters, bench_time_run_all(c, iters, &ok));
  /* each PE reports its own wrong results; PE 0 alone reports the value */
  if (!ok) bench_error(c->name, c->size, "wrong result on this PE");
  if (bk_me() == 0 && ok) bench_print(c->name, c->size, bench_median(v, reps), c->unit);
}

/* Exit status: non-zero if this PE saw a wrong result. */
static __attribute__((unused)) int bench_exit_code(void) { return bench_errors ? 1 : 0; }

#endif
