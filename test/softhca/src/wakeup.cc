#include "wakeup.h"

#include <sched.h>
#include <sys/prctl.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace softhca {

namespace {
struct SchedAttr {  // struct sched_attr of sched_setattr(2)
  uint32_t size, policy;
  uint64_t flags;
  int32_t nice;
  uint32_t priority;
  uint64_t runtime, deadline, period;
};
}  // namespace

void prefer_prompt_wakeup() {
  // With SCHED_OTHER, sched_runtime is the requested slice: a thread with a shorter slice than the
  // running one has an earlier deadline when it wakes and preempts it (instead of waiting up to
  // the spinner's whole slice, about a millisecond per message). The model thread sleeps most of
  // the time, so it takes no more CPU than before. Older kernels reject or ignore it.
  SchedAttr a{};
  a.size = sizeof a;
  a.policy = SCHED_OTHER;
  a.runtime = 100000;  // 0.1 ms, the shortest slice the kernel accepts
  syscall(SYS_sched_setattr, 0, &a, 0);
  // Short pauses (model_pause) must end when asked, not 50 us later (the default timer slack).
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  // A real HCA does not run on the cores of the processes that use it: the model's threads may
  // run on any online CPU, whatever the process was bound to (a launcher that pins each process
  // to one core would otherwise make its model share that core with a thread spinning on a CQ).
  cpu_set_t all;
  CPU_ZERO(&all);
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  for (long c = 0; c < cpus && c < CPU_SETSIZE; ++c) CPU_SET(static_cast<int>(c), &all);
  sched_setaffinity(0, sizeof all, &all);  // may fail inside a restricted cpuset: then as bound
}

void model_pause() {
  // A sleep, not sched_yield(): a yielding thread goes behind the program's spinning thread for
  // the rest of that thread's slice (a whole scheduler tick, 4 ms at HZ=250), while a thread whose
  // short sleep ends is woken and, with its short slice, preempts the spinner at once.
  timespec ts{0, 5000};
  nanosleep(&ts, nullptr);
}

}  // namespace softhca
