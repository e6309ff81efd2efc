/* The timing the perf/hw programs share: a monotonic clock in ns, and "the best of 5 timed loops
 * after one untimed", in ns per iteration. BEST_DONE is what a loop does after its iterations and
 * before the clock is read (e.g. shmem_quiet() to complete non-blocking operations); define it
 * before including this header, or leave it empty. */
#ifndef PERF_HW_BEST_H
#define PERF_HW_BEST_H

#include <time.h>

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

#ifndef BEST_DONE
#define BEST_DONE
#endif

#define BEST(OUT, N, BODY)                    \
  do {                                        \
    double best_ = 1e30;                      \
    for (int rep_ = 0; rep_ < 6; rep_++) {    \
      double t0_ = now_ns();                  \
      for (int i = 0; i < (N); i++) { BODY; } \
      BEST_DONE;                              \
      double t_ = (now_ns() - t0_) / (N);     \
      if (rep_ > 0 && t_ < best_) best_ = t_; \
    }                                         \
    (OUT) = best_;                            \
  } while (0)

#endif
