// lib/base: a lock for short critical sections on the data path.
//
// Uncontended it is one exchange and one store (a pthread mutex is a call and about 50
// instructions for the pair), which matters on a path measured in instructions. Contended, the
// waiter spins on a plain load and yields the CPU after a while: with more threads than cores a
// holder that was preempted gets to run.
#pragma once

#include <sched.h>

#include <atomic>

#include "lib/base/cpu_relax.h"

namespace hoshmem {

class SpinLock {
 public:
  void lock() {
    while (held_.exchange(true, std::memory_order_acquire)) [[unlikely]]
      wait_until_free();
  }
  [[gnu::always_inline]] bool try_lock() { return !held_.exchange(true, std::memory_order_acquire); }
  [[gnu::always_inline]] void unlock() { held_.store(false, std::memory_order_release); }

 private:
  void wait_until_free() {
    for (unsigned spins = 0; held_.load(std::memory_order_relaxed); ++spins) {
      if (spins < 64)
        cpu_relax();
      else
        sched_yield();
    }
  }
  std::atomic<bool> held_{false};
};

}  // namespace hoshmem
