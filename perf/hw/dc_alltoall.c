/* Every PE targets every other PE (run with HOSHMEM_PES_PER_NODE=1 HOSHMEM_ATOMICS=hw and
 * HOSHMEM_TRANSPORT=dc or rc): what a pool of DC initiators does when the target changes at every
 * operation, and what the first all-to-all costs.
 *   dc_alltoall [SECONDS [BATCH [REPS]]]     rates (defaults 0.2 s, 64, 3)
 *   dc_alltoall --touch                      first and second all-to-all touch, network state
 * Rates: each PE issues, to every other PE in turn (operation i of PE r goes to PE
 * (r + 1 + i mod (N-1)) mod N, so the target changes at every operation), 8-byte
 * shmem_putmem_nbi (phase put_nbi) and then shmem_long_atomic_add (phase add), shmem_quiet after
 * every BATCH operations, for SECONDS of shmemx_wtime after a barrier (the clock is read at each
 * quiet), then quiet. A PE's rate is its operations divided by its own time from the barrier to
 * the end of its final quiet; the aggregate is the sum over all PEs (PE 0 collects them after a
 * barrier). One untimed loop (which also connects RC's queue pairs), then REPS timed ones; the
 * best aggregate is printed:
 *   rate put_nbi N Mops      aggregate (sum of per-PE) 8-byte puts per us
 *   rate add N Mops          aggregate non-fetching adds per us
 *   spread put_nbi|add N MIN MAX   the slowest and fastest PE's rate in that best loop (Mops/s)
 * Afterwards every target checks what it got: each source's last put value and each source's
 * number of adds; a mismatch prints "# WRONG ..." (the numbers are then meaningless).
 * --touch: after two barriers, every PE does one 8-byte shmem_putmem to every other PE (in the
 * order r+1, r+2, ...), then shmem_quiet; its time is from leaving the barrier to the end of the
 * quiet. Done twice (the first is where RC connects its queue pairs), a barrier after each:
 *   touch first|second N MAX_MS MEAN_MS    the slowest PE's time and the mean over PEs (ms)
 * Before them, how long each PE's shmem_init took (monotonic clock around the call):
 *   init N MAX_MS MEAN_MS                   the slowest PE's time and the mean over PEs (ms)
 * then PE 0 and PE N-1 call shmemx_info_print() and print its network state line as
 *   state PE QPS QUEUE_KIB LANE_KIB PEER_BYTES
 * (the library's line: "N queue pairs, Q KiB in their queues, L KiB in lanes (...), B bytes per
 * peer (...)"). */
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int me, npes;

/* PE 0: sum, min and max of one double per PE (collected on PE 0 after a barrier). */
static void gather(double *sym, double v, double *sum, double *min, double *max) {
  shmem_double_p(&sym[me], v, 0);
  shmem_barrier_all();
  if (me == 0) {
    *sum = 0;
    *min = 1e300;
    *max = -1e300;
    for (int p = 0; p < npes; p++) {
      *sum += sym[p];
      if (sym[p] < *min) *min = sym[p];
      if (sym[p] > *max) *max = sym[p];
    }
  }
  shmem_barrier_all();
}

static void print_state(void) {
  char path[] = "/tmp/dc_alltoall.XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return;
  fflush(stdout);
  int saved = dup(1);
  dup2(fd, 1);
  shmemx_info_print();
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  FILE *f = fopen(path, "r");
  unlink(path);
  close(fd);
  if (!f) return;
  char line[1024];
  while (fgets(line, sizeof line, f)) {
    const char *s = strstr(line, "network state: ");
    unsigned long q, qk, lk, b;
    if (s && sscanf(s, "network state: %lu queue pairs, %lu KiB in their queues, %lu KiB in lanes "
                       "(CQs, bounce buffers), %lu bytes per peer", &q, &qk, &lk, &b) == 4)
      printf("state %d %lu %lu %lu %lu\n", me, q, qk, lk, b);
    else if (s)
      printf("# state %d unparsed: %s", me, s);
  }
  fclose(f);
  fflush(stdout);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int touch(double init_s) {
  long *slot = shmem_calloc((size_t)npes, sizeof(long));
  double *times = shmem_calloc((size_t)npes, sizeof(double));
  double sum, min, max;
  gather(times, init_s, &sum, &min, &max);
  if (me == 0) printf("init %d %.3f %.3f\n", npes, max * 1e3, sum / npes * 1e3);
  shmem_barrier_all();
  shmem_barrier_all();
  static const char *const names[] = {"first", "second"};
  for (int round = 0; round < 2; round++) {
    const long value = round * npes + me + 1;
    shmem_barrier_all();
    const double t0 = shmemx_wtime();
    for (int k = 1; k < npes; k++) shmem_putmem(&slot[me], &value, sizeof value, (me + k) % npes);
    shmem_quiet();
    const double t = shmemx_wtime() - t0;
    gather(times, t, &sum, &min, &max); /* its barriers complete the round */
    for (int p = 0; p < npes; p++)
      if (p != me && slot[p] != round * npes + p + 1)
        printf("# WRONG touch %s: PE %d got %ld from PE %d, expected %ld\n", names[round], me,
               slot[p], p, (long)(round * npes + p + 1));
    if (me == 0) {
      printf("touch %s %d %.3f %.3f\n", names[round], npes, max * 1e3, sum / npes * 1e3);
      fflush(stdout);
    }
  }
  if (me == 0) print_state();
  shmem_barrier_all();
  if (me == npes - 1 && me != 0) print_state();
  shmem_barrier_all();
  shmem_free(times);
  shmem_free(slot);
  return 0;
}

int main(int argc, char **argv) {
  const double t0 = now_s();
  shmem_init();
  const double init_s = now_s() - t0;
  me = shmem_my_pe();
  npes = shmem_n_pes();
  if (argc > 1 && strcmp(argv[1], "--touch") == 0) {
    touch(init_s);
    shmem_finalize();
    return 0;
  }
  const double seconds = argc > 1 ? atof(argv[1]) : 0.2;
  const int batch = argc > 2 && atoi(argv[2]) > 0 ? atoi(argv[2]) : 64;
  const int reps = argc > 3 && atoi(argv[3]) > 0 ? atoi(argv[3]) : 3;
  if (npes < 2) {
    if (me == 0) printf("# dc_alltoall needs at least 2 PEs\n");
    shmem_finalize();
    return 1;
  }
  const size_t n = (size_t)npes;
  long *put_slot = shmem_calloc(n, sizeof(long));   /* [s]: source s's last put */
  long *add_count = shmem_calloc(n, sizeof(long));  /* [s]: source s's adds */
  long *expect = shmem_calloc(2 * n, sizeof(long)); /* [s], [n + s]: what s says it sent */
  double *rates = shmem_calloc(n, sizeof(double));
  long *last_put = calloc(n, sizeof(long)), *adds = calloc(n, sizeof(long));
  long value = 0;
  const int others = npes - 1;
  shmem_barrier_all();
  for (int phase = 0; phase < 2; phase++) {
    const char *name = phase == 0 ? "put_nbi" : "add";
    double best = -1, best_min = 0, best_max = 0;
    for (int rep = 0; rep <= reps; rep++) {
      shmem_barrier_all();
      const double t0 = shmemx_wtime(), until = t0 + (rep == 0 ? seconds / 2 : seconds);
      long ops = 0;
      int next = 0; /* i mod (N-1) */
      for (;;) {
        for (int b = 0; b < batch; b++) {
          const int pe = (me + 1 + next) % npes;
          if (++next == others) next = 0;
          if (phase == 0) {
            ++value;
            shmem_putmem_nbi(&put_slot[me], &value, sizeof value, pe);
            last_put[pe] = value;
          } else {
            shmem_long_atomic_add(&add_count[me], 1, pe);
            adds[pe]++;
          }
        }
        ops += batch;
        shmem_quiet();
        if (shmemx_wtime() >= until) break;
      }
      const double t = shmemx_wtime() - t0;
      double sum, min, max;
      gather(rates, ops / t / 1e6, &sum, &min, &max);
      if (rep > 0 && me == 0 && sum > best) {
        best = sum;
        best_min = min;
        best_max = max;
      }
    }
    if (me == 0) {
      printf("rate %s %d %.3f\n", name, npes, best);
      printf("spread %s %d %.3f %.3f\n", name, npes, best_min, best_max);
      fflush(stdout);
    }
  }
  /* Check: every source tells each target what it should hold. */
  shmem_barrier_all();
  for (int p = 0; p < npes; p++) {
    if (p == me) continue;
    shmem_long_p(&expect[me], last_put[p], p);
    shmem_long_p(&expect[n + (size_t)me], adds[p], p);
  }
  shmem_barrier_all();
  for (int s = 0; s < npes; s++) {
    if (s == me) continue;
    if (put_slot[s] != expect[s])
      printf("# WRONG put_nbi: PE %d holds %ld from PE %d, its last put was %ld\n", me,
             put_slot[s], s, expect[s]);
    if (add_count[s] != expect[n + (size_t)s])
      printf("# WRONG add: PE %d counted %ld adds from PE %d, which issued %ld\n", me,
             add_count[s], s, expect[n + (size_t)s]);
  }
  fflush(stdout);
  shmem_barrier_all();
  free(adds);
  free(last_put);
  shmem_free(rates);
  shmem_free(expect);
  shmem_free(add_count);
  shmem_free(put_slot);
  shmem_finalize();
  return 0;
}
