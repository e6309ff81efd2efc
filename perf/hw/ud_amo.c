/* AMOs over UD to a PE of another node (run on 2 PEs with HOSHMEM_PES_PER_NODE=1
 * HOSHMEM_ATOMICS=sw: every AMO from PE 0 to PE 1 is a UD message that PE 1's CPU executes), with
 * the target PE doing something chosen, for perf/hw/ud.sh. PE 0 drives, PE 1 is the target.
 * The amo mode also runs on 2N PEs (4 with HOSHMEM_PES_PER_NODE=2: two nodes of two): PE d < N
 * drives PE d + N, all drivers at once; every result line ends with the driver's PE number.
 *   ud_amo info                          shmem_init and shmem_finalize (for SHMEM_INFO=1)
 *   ud_amo amo STATE [ITERATIONS [BATCH]]   AMO latencies and rates; STATE is what PE 1 does:
 *       lib      waits in shmem_long_wait_until(&done, SHMEM_CMP_NE, 0) (polls inside the library)
 *       sleep    nanosleep(10 ms) in a loop, a plain load of `done` between sleeps (outside the
 *                library: only its progress thread can answer)
 *       compute  a busy arithmetic loop, a plain load of `done` every 4096 steps (no library call)
 *     PE 0 sets `done` with shmem_long_p + shmem_quiet (a put, over RC) when it is finished.
 *       lat fetch_add STATE ns       shmem_long_atomic_fetch_add, one at a time
 *       lat add STATE ns             shmem_long_atomic_add + shmem_quiet
 *       lat compare_swap STATE ns    shmem_long_atomic_compare_swap, one at a time
 *       rate fetch_add STATE Mops    BATCH shmem_long_atomic_fetch_add_nbi back to back, quiet
 *       rate add STATE Mops          BATCH shmem_long_atomic_add back to back, quiet
 *       rate compare_swap STATE Mops BATCH shmem_long_atomic_compare_swap_nbi, quiet
 *       thread STATE PE WAKEUPS CPU_MS WALL_MS FOUND_BY   what PE's progress thread did from the
 *                start of the measurements to `done` (WAKEUPS: its voluntary context switches,
 *                i.e. sleeps that ended; CPU_MS: its schedstat run time; "- -": no thread)
 *   ud_amo stall STATE MS                 PE 1 spends MS milliseconds in STATE (sleep or compute,
 *       bounded: it does not wait for `done`) and then enters shmem_barrier_all; PE 0 issues one
 *       fetch-add 100 ms into it. Times are CLOCK_MONOTONIC (one clock: both PEs are on this
 *       machine), in ns:  stall STATE ISSUED COMPLETED  (PE 0),  stall_target STATE BEGIN END
 *       (PE 1: its STATE, then the library). With HOSHMEM_UD_PROGRESS_THREAD=0 an AMO cannot
 *       complete before the target enters the library: COMPLETED is after END.
 *   ud_amo idle SECONDS [ITERATIONS]     both PEs sleep SECONDS outside the library, twice: right
 *       after init ("init"), and after PE 0 made ITERATIONS fetch-adds and ITERATIONS adds to
 *       PE 1, asleep outside the library meanwhile ("after"). Each PE reads its progress thread's
 *       counters before and after the sleep:
 *       idle PHASE PE WALL_MS TICK_MS SCHED_MS WAKEUPS PROC_MS FOUND_BY
 *       (TICK_MS: utime+stime of /proc/self/task/TID/stat, clock-tick resolution; SCHED_MS: the
 *       first field of its schedstat, ns resolution; WAKEUPS: voluntary context switches;
 *       PROC_MS: utime+stime of the whole process, the RDMA model's threads included)
 *   ud_amo rma [ITERATIONS [BATCH]]      puts and gets, 8 B to 64 KiB, PE 1 in shmem_barrier_all:
 *       lat put SIZE ns      shmem_putmem + shmem_quiet, one at a time
 *       lat get SIZE ns      shmem_getmem, one at a time
 *       bw put SIZE MB/s     BATCH shmem_putmem_nbi back to back, quiet (10^6 B/s)
 *       bw get SIZE MB/s     BATCH shmem_getmem_nbi back to back, quiet
 * Every result is the best of 5 timed loops after one untimed loop. A loop has ITERATIONS
 * iterations (default 1000; for sizes above 8 KiB ITERATIONS * 8 KiB / SIZE, at least 10) but
 * is cut to what fits in ~200 ms at the speed of the untimed loop (at least 20 iterations): a
 * target that answers slowly must not make the run last minutes. Values are checked where
 * predictable (the AMO counters, put data read back); a mismatch prints "# WRONG ...". */
#include <dirent.h>
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_BATCH 1024
#define MAX_SIZE (64 * 1024)
#define LOOP_BUDGET_NS 200e6

static long done;     /* PE 0 tells the target to stop */
static long counter;  /* fetch_add and add */
static long cswap;    /* compare_swap */
static long fetched[MAX_BATCH];
static volatile unsigned long sink;

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void sleep_ns(long ns) {
  struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* ---- the progress thread ------------------------------------------------------------------ */

/* Found by its name ("hoshmem-progress"), or, when no thread has it (the kernel keeps 15
 * characters of a thread name and pthread_setname_np refuses a longer one, so a 16-character
 * name is never set), as the thread blocked in ppoll on 2 descriptors: its completion channel and
 * its eventfd (/proc/self/task/TID/syscall: 271 = ppoll, then the arguments). Looked up once,
 * retried for 100 ms in case the thread is busy; -1: no thread. */
static int cached_tid = 0;
static const char *found_by = "-";

static int find_progress_tid(void) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return -1;
  int by_name = -1, by_poll = -1;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.' || strlen(e->d_name) > 20) continue;
    char path[64], line[256] = "";
    snprintf(path, sizeof path, "/proc/self/task/%.20s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (f && fgets(line, sizeof line, f) && strncmp(line, "hoshmem-prog", 12) == 0)
      by_name = atoi(e->d_name);
    if (f) fclose(f);
    snprintf(path, sizeof path, "/proc/self/task/%.20s/syscall", e->d_name);
    f = fopen(path, "r");
    long nr = -1;
    unsigned long fds = 0, nfds = 0;
    if (f && fgets(line, sizeof line, f) && sscanf(line, "%ld %lx %lx", &nr, &fds, &nfds) == 3 &&
        nr == 271 && nfds == 2)
      by_poll = atoi(e->d_name);
    if (f) fclose(f);
  }
  closedir(d);
  if (by_name > 0) found_by = "name";
  else if (by_poll > 0) found_by = "ppoll";
  return by_name > 0 ? by_name : by_poll;
}

static int progress_tid(void) {
  const char *env = getenv("HOSHMEM_UD_PROGRESS_THREAD");
  if (env && strcmp(env, "0") == 0) cached_tid = -1; /* none to look for */
  for (int i = 0; cached_tid == 0 && i < 100; i++) {
    const int tid = find_progress_tid();
    if (tid > 0) cached_tid = tid;
    else sleep_ns(1000 * 1000);
  }
  if (cached_tid == 0) cached_tid = -1;
  return cached_tid;
}

/* utime + stime (fields 14 and 15) of a /proc stat file, in ms */
static double stat_ms(const char *path) {
  char line[1024];
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  const size_t n = fread(line, 1, sizeof line - 1, f);
  fclose(f);
  line[n] = 0;
  const char *p = strrchr(line, ')'); /* the name may hold spaces */
  if (!p) return -1;
  unsigned long long utime = 0, stime = 0;
  /* after ") ": state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime */
  if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2)
    return -1;
  return (double)(utime + stime) * 1e3 / (double)sysconf(_SC_CLK_TCK);
}

struct counters {
  int found;
  double tick_ms;   /* the thread's utime + stime */
  double sched_ms;  /* the thread's time on a CPU (schedstat) */
  long wakeups;     /* the thread's voluntary context switches: sleeps that ended */
  double proc_ms;   /* the whole process: utime + stime */
};

static struct counters read_counters(void) {
  struct counters c = {0, -1, -1, -1, -1};
  c.proc_ms = stat_ms("/proc/self/stat");
  const int tid = progress_tid();
  if (tid < 0) return c;
  c.found = 1;
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
  c.tick_ms = stat_ms(path);
  snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
  FILE *f = fopen(path, "r");
  unsigned long long ns;
  if (f && fscanf(f, "%llu", &ns) == 1) c.sched_ms = ns / 1e6;
  if (f) fclose(f);
  snprintf(path, sizeof path, "/proc/self/task/%d/status", tid);
  f = fopen(path, "r");
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "voluntary_ctxt_switches: %ld", &c.wakeups) == 1) break;
  if (f) fclose(f);
  return c;
}

/* ---- what the target does ----------------------------------------------------------------- */

static volatile long *done_flag(void) { return (volatile long *)&done; }

/* Until `done` (bound_ms < 0), or for bound_ms milliseconds whatever `done` says. */
static void target_state(const char *state, long bound_ms) {
  const double end = bound_ms < 0 ? 0 : now_ns() + bound_ms * 1e6;
  if (strcmp(state, "lib") == 0) {
    shmem_long_wait_until(&done, SHMEM_CMP_NE, 0);
  } else if (strcmp(state, "sleep") == 0) {
    while (bound_ms < 0 ? !*done_flag() : now_ns() < end) sleep_ns(10 * 1000 * 1000);
  } else { /* compute */
    unsigned long x = 88172645463325252UL;
    for (;;) {
      for (int k = 0; k < 4096; k++) x = x * 6364136223846793005UL + 1442695040888963407UL;
      if (bound_ms < 0 ? *done_flag() != 0 : now_ns() >= end) break;
    }
    sink = x;
  }
}

/* ---- timing ------------------------------------------------------------------------------- */

/* Best of 5 loops of up to N iterations after one untimed loop, ns per iteration; the timed
 * loops are cut to LOOP_BUDGET_NS at the untimed loop's speed (at least 20 iterations). */
#define BEST(OUT, N, BODY)                                   \
  do {                                                       \
    double best_ = 1e30;                                     \
    int n_ = (N);                                            \
    for (int rep_ = 0; rep_ < 6; rep_++) {                   \
      double t0_ = now_ns();                                 \
      for (int i = 0; i < n_; i++) { BODY; }                 \
      shmem_quiet();                                         \
      double t_ = (now_ns() - t0_) / n_;                     \
      if (rep_ == 0 && t_ * n_ > LOOP_BUDGET_NS) {           \
        n_ = (int)(LOOP_BUDGET_NS / t_);                     \
        if (n_ < 20) n_ = 20;                                \
      }                                                      \
      if (rep_ > 0 && t_ < best_) best_ = t_;                \
    }                                                        \
    (OUT) = best_;                                           \
  } while (0)

static void print(const char *kind, const char *name, const char *what, double v) {
  printf("%s %s %s %.*f %d\n", kind, name, what, strcmp(kind, "lat") == 0 ? 0 : 3, v,
         shmem_my_pe());
  fflush(stdout);
}

static void check(const char *what, long got, long expect) {
  if (got != expect) printf("# WRONG %s: %ld, expected %ld\n", what, got, expect);
}

/* PE 0: the AMO loops. */
static void amo_driver(const char *state, int iters, int batch, int peer) {
  double t;
  long expect = shmem_long_atomic_fetch(&counter, peer), got;
  BEST(t, iters, sink += shmem_long_atomic_fetch_add(&counter, 1, peer); expect++);
  print("lat", "fetch_add", state, t);
  check("fetch_add counter", shmem_long_atomic_fetch(&counter, peer), expect);
  BEST(t, iters, shmem_long_atomic_add(&counter, 1, peer); shmem_quiet(); expect++);
  print("lat", "add", state, t);
  check("add counter", shmem_long_atomic_fetch(&counter, peer), expect);
  /* each compare-swap succeeds: it expects the value the previous one stored */
  long cs_value = shmem_long_atomic_fetch(&cswap, peer), cs_failed = 0;
  BEST(t, iters, got = shmem_long_atomic_compare_swap(&cswap, cs_value, cs_value + 1, peer);
       cs_failed += got != cs_value; cs_value = got == cs_value ? cs_value + 1 : got);
  print("lat", "compare_swap", state, t);
  check("compare_swap value", shmem_long_atomic_fetch(&cswap, peer), cs_value);
  check("compare_swap failures", cs_failed, 0);

  const int nb = (iters / batch > 0 ? iters / batch : 1) * batch;
  BEST(t, nb, shmem_long_atomic_fetch_add_nbi(&fetched[i % batch], &counter, 1, peer); expect++;
       if (i % batch == batch - 1) shmem_quiet());
  print("rate", "fetch_add", state, 1e3 / t);
  check("fetch_add_nbi counter", shmem_long_atomic_fetch(&counter, peer), expect);
  BEST(t, nb, shmem_long_atomic_add(&counter, 1, peer); expect++;
       if (i % batch == batch - 1) shmem_quiet());
  print("rate", "add", state, 1e3 / t);
  check("add counter (batched)", shmem_long_atomic_fetch(&counter, peer), expect);
  BEST(t, nb, shmem_long_atomic_compare_swap_nbi(&fetched[i % batch], &cswap, 0, 1, peer);
       if (i % batch == batch - 1) shmem_quiet());
  print("rate", "compare_swap", state, 1e3 / t);
}

static void tell_done(int peer) {
  shmem_long_p(&done, 1, peer);
  shmem_quiet();
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "info";
  shmem_init();
  const int me = shmem_my_pe(), npes = shmem_n_pes(), half = npes / 2;
  /* PE d < half drives PE d + half; the modes other than amo have one driver and one target */
  const int peer = me < half ? me + half : npes - 1;
  if (npes < 2 || npes % 2 || (npes > 2 && strcmp(mode, "amo") != 0)) {
    if (me == 0) fprintf(stderr, "ud_amo: %s needs 2 PEs%s\n", mode,
                         strcmp(mode, "amo") == 0 ? " (or an even number)" : "");
    shmem_finalize();
    return 1;
  }
  char *remote = shmem_malloc(MAX_SIZE);
  char *local = shmem_malloc(MAX_SIZE);
  /* Connect the RC QP (puts) and use the UD path once before anyone leaves the library. */
  if (me < half) {
    shmem_long_p(&done, 0, peer);
    shmem_long_atomic_add(&counter, 0, peer);
    shmem_quiet();
  }
  shmem_barrier_all();
  progress_tid(); /* find it now, while it sleeps */

  if (strcmp(mode, "amo") == 0) {
    const char *state = argc > 2 ? argv[2] : "lib";
    const int iters = argc > 3 ? atoi(argv[3]) : 1000;
    int batch = argc > 4 ? atoi(argv[4]) : 64;
    if (batch > MAX_BATCH) batch = MAX_BATCH;
    const struct counters a = read_counters();
    const double t0 = now_ns();
    if (me < half) {
      amo_driver(state, iters, batch, peer);
      tell_done(peer);
    } else {
      target_state(state, -1);
    }
    const double wall = (now_ns() - t0) / 1e6;
    const struct counters b = read_counters();
    if (!a.found)
      printf("thread %s %d - - %.0f -\n", state, me, wall);
    else
      printf("thread %s %d %ld %.1f %.0f %s\n", state, me, b.wakeups - a.wakeups,
             b.sched_ms >= 0 ? b.sched_ms - a.sched_ms : b.tick_ms - a.tick_ms, wall, found_by);
    fflush(stdout);
  } else if (strcmp(mode, "stall") == 0) {
    const char *state = argc > 2 ? argv[2] : "compute";
    const long ms = argc > 3 ? atol(argv[3]) : 1000;
    if (me == 0) {
      sleep_ns(100 * 1000 * 1000);
      const double t0 = now_ns();
      sink += shmem_long_atomic_fetch_add(&counter, 1, peer);
      printf("stall %s %.0f %.0f\n", state, t0, now_ns());
      fflush(stdout);
    } else if (me == peer) {
      const double t0 = now_ns();
      target_state(state, ms);
      printf("stall_target %s %.0f %.0f\n", state, t0, now_ns());
      fflush(stdout);
    }
  } else if (strcmp(mode, "idle") == 0) {
    const double seconds = argc > 2 ? atof(argv[2]) : 3;
    const int iters = argc > 3 ? atoi(argv[3]) : 1000;
    for (int phase = 0; phase < 2; phase++) {
      if (phase == 1) { /* traffic, then quiet again */
        if (me == 0) {
          for (int i = 0; i < iters; i++) sink += shmem_long_atomic_fetch_add(&counter, 1, peer);
          for (int i = 0; i < iters; i++) shmem_long_atomic_add(&counter, 1, peer);
          shmem_quiet();
          tell_done(peer);
        } else if (me == peer) {
          target_state("sleep", -1);
        }
        shmem_barrier_all();
      }
      const struct counters a = read_counters();
      const double t0 = now_ns();
      sleep_ns((long)(seconds * 1e9));
      const struct counters b = read_counters();
      const double wall = (now_ns() - t0) / 1e6;
      if (!a.found)
        printf("idle %s %d %.0f - - - %.1f -\n", phase ? "after" : "init", me, wall,
               b.proc_ms - a.proc_ms);
      else
        printf("idle %s %d %.0f %.1f %.3f %ld %.1f %s\n", phase ? "after" : "init", me, wall,
               b.tick_ms - a.tick_ms, b.sched_ms - a.sched_ms, b.wakeups - a.wakeups,
               b.proc_ms - a.proc_ms, found_by);
      fflush(stdout);
      shmem_barrier_all();
    }
  } else if (strcmp(mode, "rma") == 0) {
    const int iters = argc > 2 ? atoi(argv[2]) : 1000;
    int batch = argc > 3 ? atoi(argv[3]) : 16;
    if (batch > MAX_BATCH) batch = MAX_BATCH;
    char *check_buf = malloc(MAX_SIZE);
    if (me == 0) {
      double t;
      char name[32];
      for (int size = 8; size <= MAX_SIZE;
           size = size * 8 > MAX_SIZE && size < MAX_SIZE ? MAX_SIZE : size * 8) {
        const long scaled = (long)iters * 8192 / size;
        const int n = size <= 8192 ? iters : (scaled < 10 ? 10 : (int)scaled);
        const int nb = (n / batch > 0 ? n / batch : 1) * batch;
        snprintf(name, sizeof name, "%d", size);
        for (int k = 0; k < size; k++) local[k] = (char)(k * 7 + size);
        BEST(t, n, shmem_putmem(remote, local, size, peer); shmem_quiet());
        print("lat", "put", name, t);
        shmem_getmem(check_buf, remote, size, peer);
        if (memcmp(check_buf, local, size)) printf("# WRONG put %d: data read back differs\n", size);
        BEST(t, n, shmem_getmem(check_buf, remote, size, peer));
        print("lat", "get", name, t);
        if (memcmp(check_buf, local, size)) printf("# WRONG get %d: data differs\n", size);
        BEST(t, nb, shmem_putmem_nbi(remote, local, size, peer);
             if (i % batch == batch - 1) shmem_quiet());
        print("bw", "put", name, size * 1e3 / t);
        BEST(t, nb, shmem_getmem_nbi(check_buf, remote, size, peer);
             if (i % batch == batch - 1) shmem_quiet());
        print("bw", "get", name, size * 1e3 / t);
      }
    }
    free(check_buf);
  }
  shmem_barrier_all();
  shmem_free(local);
  shmem_free(remote);
  shmem_finalize();
  return 0;
}
