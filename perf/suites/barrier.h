/* barrier suite: shmem_barrier_all latency with every PE taking part (size = number of PEs).
 *   barrier_all_lat N   us per barrier
 * Verification after every run: each PE puts a fresh value to its right neighbour, and after one
 * more barrier (which must complete the puts) every PE must find its left neighbour's value. */
#ifndef PERF_SUITE_BARRIER_H
#define PERF_SUITE_BARRIER_H

#include "../common/bench.h"

static struct {
  long *slot; /* symmetric */
  long round;
} bar;

static void bar_run(struct bench_case *c, long n) {
  (void)c;
  for (long i = 0; i < n; i++) bk_barrier();
}

static int bar_check(struct bench_case *c, long n) {
  (void)n;
  int me = bk_me(), np = bk_npes();
  long want = ++bar.round * 1000 + (me + np - 1) % np;
  bk_long_p(bar.slot, bar.round * 1000 + me, (me + 1) % np);
  bk_barrier();
  long got = *(volatile long *)bar.slot;
  bk_barrier(); /* nobody writes the next round before everyone has read */
  if (got != want) {
    bench_error(c->name, c->size, "after barrier found %ld, expected %ld", got, want);
    return 0;
  }
  return 1;
}

static void suite_barrier(void) {
  bench_collective_init();
  bar.slot = (long *)bk_malloc(64);
  *bar.slot = -1;
  bk_barrier();
  struct bench_case c = {"barrier_all_lat", bk_npes(), UNIT_US, 1.0, NULL, bar_run, bar_check, NULL, 0};
  bench_measure_all(&c);
  bk_barrier();
}

#endif
