#include "wakeup.h"

#include <sched.h>
#include <sys/prctl.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>

#include "exec_knobs.h"
#include "model.h"

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

namespace {

struct DelayedEvent {
  Chan* ch;
  Cq* cq;
  uint64_t due_ns;
};

// Never destroyed: the event-delay thread outlives static destructors (a process may exit with
// events still delayed; they are simply never raised).
struct Delayed {
  std::mutex mu;  // held while an event is raised, so that drop_delayed_events can wait for it
  std::condition_variable cv;
  // One delay for all: due times grow in the order events are queued, so this is sorted.
  std::deque<DelayedEvent> q;
  std::once_flag started;
};
Delayed& delayed() {
  static Delayed* d = new Delayed;
  return *d;
}

void event_delay_thread() {
  // Wake at the due time itself (timer slack 1 us) and preempt a thread spinning on a core.
  prefer_prompt_wakeup();
  Delayed& d = delayed();
  std::unique_lock<std::mutex> g(d.mu);
  for (;;) {
    if (d.q.empty()) {
      d.cv.wait(g);
      continue;
    }
    uint64_t now = now_ns();
    if (d.q.front().due_ns > now) {
      d.cv.wait_for(g, std::chrono::nanoseconds(d.q.front().due_ns - now));
      continue;  // spurious or early wake-ups look again
    }
    // Raised under the lock: once drop_delayed_events has the lock, nothing of its CQ or channel
    // is being raised. Chan::signal takes only the channel's lock and writes a non-blocking pipe.
    DelayedEvent e = d.q.front();
    d.q.pop_front();
    e.ch->signal(e.cq);
  }
}

}  // namespace

void delay_event(Chan* ch, Cq* cq) {
  Delayed& d = delayed();
  std::call_once(d.started, [] { std::thread(event_delay_thread).detach(); });
  std::lock_guard<std::mutex> g(d.mu);
  // Taken under the lock, so that due times follow the queue's order.
  d.q.push_back({ch, cq, now_ns() + exec_knobs().event_delay_ns});
  if (d.q.size() == 1) d.cv.notify_one();  // else the thread already waits for an earlier one
}

void drop_delayed_events(const Cq* cq) {
  Delayed& d = delayed();
  std::lock_guard<std::mutex> g(d.mu);
  for (auto it = d.q.begin(); it != d.q.end();) it = it->cq == cq ? d.q.erase(it) : it + 1;
}

void drop_delayed_events(const Chan* ch) {
  Delayed& d = delayed();
  std::lock_guard<std::mutex> g(d.mu);
  for (auto it = d.q.begin(); it != d.q.end();) it = it->ch == ch ? d.q.erase(it) : it + 1;
}

}  // namespace softhca
