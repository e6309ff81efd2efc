/* Atomics from every PE, the work hoshmem is built for: each PE takes tickets from one shared
 * counter on PE 0 (fetch-and-increment) and adds its samples into a histogram spread over all
 * PEs (one add per sample, to the PE that holds the bin). At the end PE 0 checks that every
 * ticket was handed out once and every PE checks the bins it holds, then PE 0 prints one line:
 * PEs, AMOs per second (all PEs together), and both checks.
 *
 *   histogram [samples-per-PE] [busy]
 *
 * busy: PE 0 computes instead of calling the library while the others update it (its memory is
 * still updated: by the HCA, or by hoshmem's progress thread in all-SW mode across nodes). */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BINS_PER_PE 64

static long counter;                 /* on PE 0: the next ticket */
static long bins[BINS_PER_PE];       /* this PE's part of the histogram */

/* Sample i of PE `pe`: a bin of the whole histogram, the same on every PE that asks. */
static long bin_of(long pe, long i, long nbins) {
  uint64_t x = (uint64_t)pe * 0x9e3779b97f4a7c15ull + (uint64_t)i * 0xbf58476d1ce4e5b9ull;
  x ^= x >> 31;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 29;
  return (long)(x % (uint64_t)nbins);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
  long samples = argc > 1 ? atol(argv[1]) : 20000;
  int busy = argc > 2 && strcmp(argv[2], "busy") == 0;
  shmem_init();
  int me = shmem_my_pe(), npes = shmem_n_pes();
  long nbins = (long)npes * BINS_PER_PE;
  static double elapsed, slowest;
  shmem_barrier_all();

  double start = now();
  if (busy && me == 0) {
    /* Compute for about as long as the others need, without entering the library. */
    volatile double x = 1;
    while (now() - start < 0.5) x = x * 1.0000001 + 1e-9;
  } else {
    for (long i = 0; i < samples; ++i) {
      if (i % 8 == 0) shmem_long_atomic_fetch_inc(&counter, 0); /* a ticket every 8 samples */
      long bin = bin_of(me, i, nbins);
      shmem_long_atomic_add(&bins[bin % BINS_PER_PE], 1, (int)(bin / BINS_PER_PE));
    }
  }
  shmem_quiet();
  shmem_barrier_all();  /* the time from the common start until every PE is done */
  elapsed = now() - start;
  shmem_double_max_reduce(SHMEM_TEAM_WORLD, &slowest, &elapsed, 1);

  /* Every PE checks its own bins against what all PEs' samples must have put there. */
  static long wrong;
  long expected[BINS_PER_PE] = {0};
  for (long pe = busy ? 1 : 0; pe < npes; ++pe)
    for (long i = 0; i < samples; ++i) {
      long bin = bin_of(pe, i, nbins);
      if (bin / BINS_PER_PE == me) ++expected[bin % BINS_PER_PE];
    }
  static long mine_wrong;
  for (int b = 0; b < BINS_PER_PE; ++b) mine_wrong += bins[b] != expected[b];
  shmem_long_sum_reduce(SHMEM_TEAM_WORLD, &wrong, &mine_wrong, 1);

  int status = 0;
  if (me == 0) {
    long updaters = busy ? npes - 1 : npes;
    long tickets = updaters * ((samples + 7) / 8);
    long amos = updaters * samples + tickets;
    int counter_ok = counter == tickets, histogram_ok = wrong == 0;
    double rate = (double)amos / slowest;
    printf("%d PEs  %6.1f %s AMOs/s  counter %s  histogram %s\n", npes,
           rate >= 1e6 ? rate / 1e6 : rate / 1e3, rate >= 1e6 ? "M" : "k",
           counter_ok ? "exact" : "WRONG", histogram_ok ? "exact" : "WRONG");
    status = !(counter_ok && histogram_ok);
  }
  shmem_finalize();
  return status;
}
