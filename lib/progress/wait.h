// lib/progress: how a PE waits for something another PE will do (a flag in a barrier, a value in
// wait_until, a lock hand-over).
//
// Three phases: spin (cheapest wake-up latency, only worth it when every PE has a core of its
// own), then sched_yield (lets an oversubscribed peer run), then sleep on this PE's doorbell futex
// with a short timeout. Writers ring the doorbell after updating a PE's memory, so a sleeper
// normally wakes at once; the timeout bounds the delay when a plain store raced the sleeper's
// announcement. Nothing here spins forever on an oversubscribed node.
#pragma once

#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <optional>

#include "lib/base/cpu_relax.h"
#include "lib/progress/progress_thread.h"
#include "lib/transport/shm/control_block.h"

namespace hoshmem {

struct WaitPolicy {
  // ~10 us of cpu_relax on current x86 (a pause is tens of ns; aarch64's isb is shorter, so the
  // phase ends sooner there): long enough for a peer on another core to arrive, short enough not
  // to burn the slice of a peer that shares our core.
  uint32_t spin_iterations = 256;  // 0 when PEs outnumber cores
  uint32_t yield_iterations = 256;
  long sleep_timeout_ns = 500 * 1000;
  // A job that spans nodes: writes from another node arrive by RDMA and ring no doorbell, so a
  // sleeper must look again on its own. Its sleeps then start this short and double up to
  // sleep_timeout_ns (poll, then back off). 0: every sleep is sleep_timeout_ns.
  long first_sleep_ns = 0;
  // Called with true before a wait for data first announces its sleep and with false when that
  // wait ends: the writers that do not look at `sleeping` after each store must be turned off
  // first (lib/core/fast_path.cc). nullptr: none.
  void (*data_sleep)(bool begin) = nullptr;
  // A transport whose messages this PE's CPU executes (UD in all-SW mode across nodes): a wait
  // serves it while it spins and yields, its progress thread asleep meanwhile, and leaves it to
  // the thread while it sleeps. Without a thread (serve_thread null) sleeps stay short.
  progress::Source *serve = nullptr;
  progress::Thread *serve_thread = nullptr;
};

// Returns once ready() is true. `mine` is this PE's control block (its doorbell); `what` says who
// will ring it (shm::SleepFor): any put or AMO (kSleepForData), or only library messages
// (kSleepForSync).
template <class Ready>
void wait_until_ready(const WaitPolicy &policy, shm::ControlBlock *mine, shm::SleepFor what,
                      Ready &&ready) {
  // Ends the data sleep, if this wait began one, on every way out.
  struct DataSleep {
    void (*hook)(bool) = nullptr;
    ~DataSleep() {
      if (hook) hook(false);
    }
  } data_sleep;
  // After a wake-up that did not make us ready, start over with spinning and yielding before the
  // next sleep: a peer streaming writes at us then pays for a futex wake only once per round, not
  // once per write.
  long sleep_ns = policy.first_sleep_ns ? policy.first_sleep_ns : policy.sleep_timeout_ns;
  const long max_sleep_ns =
      policy.serve && !policy.serve_thread ? sleep_ns : policy.sleep_timeout_ns;
  for (;;) {
    {
      std::optional<progress::Thread::Polling> polling;
      if (policy.serve_thread) polling.emplace(*policy.serve_thread);
      for (uint32_t i = 0; i < policy.spin_iterations; ++i) {
        if (policy.serve) policy.serve->serve();
        if (ready()) return;
        cpu_relax();
      }
      for (uint32_t i = 0; i < policy.yield_iterations; ++i) {
        if (policy.serve) policy.serve->serve();
        if (ready()) return;
        sched_yield();
      }
    }
    // Announce, then re-check (seq_cst on both sides: a writer that stored before our check sees
    // the flag and rings). The flag is left for the next writer to lower; that costs at most one
    // needless wake-up.
    if ((what & shm::kSleepForData) && policy.data_sleep && !data_sleep.hook) {
      policy.data_sleep(true);
      data_sleep.hook = policy.data_sleep;
    }
    uint32_t seen = mine->doorbell.load(std::memory_order_acquire);
    mine->sleeping.fetch_or(what, std::memory_order_seq_cst);
    if (ready()) return;
    // Going to sleep: the progress thread, which does not re-arm while this wait polls, must be
    // woken by the next arrival, not at its next look (up to kPollingCheckNs later: a peer's
    // request would wait that long while this PE sleeps). Serve once more after arming: what
    // arrived before it wakes nobody.
    if (policy.serve_thread) {
      policy.serve->arm();
      policy.serve->serve();
      if (ready()) return;
    }
    futex_wait(&mine->doorbell, seen, sleep_ns);
    if (ready()) return;
    if (sleep_ns < max_sleep_ns) sleep_ns = std::min(2 * sleep_ns, max_sleep_ns);
  }
}

}  // namespace hoshmem
