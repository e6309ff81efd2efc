// lib/progress: the progress thread of a transport whose messages need the target's CPU (UD
// active messages: an AMO executed by a CPU atomic on the target).
//
// The thread sleeps on the transport's completion channel (Source::sleep) and wakes when a
// message arrives or a timer of the transport is due (a retransmission, a delayed ack); it serves
// everything pending, asks to be woken by the next arrival (arm), looks once more (what arrived
// before the arm wakes nobody) and sleeps again: no CPU while nothing arrives.
//
// While the application thread polls the transport itself (a quiet, a fetching AMO: a Polling
// scope), the thread leaves the work to it: it does not re-arm, so arrivals do not wake it, and
// it only looks every kPollingCheckNs whether the scope has ended, and then re-arms. The scope's
// end serves once and wakes the thread only for a timer due before its next look. The
// application's path takes no lock of the thread's: a scope is one atomic increment and
// decrement.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

namespace hoshmem::progress {

// What the thread drives. Every method may be called from any thread.
class Source {
 public:
  virtual ~Source() = default;
  // Serves what arrived and what is due; true if it did anything.
  virtual bool serve() = 0;
  // The same, unless another thread is serving right now (it holds the source): then false, and
  // `busy` is set. The thread uses this one: waiting for the holder (an application thread in
  // the library, which serves) took the thread's CPU from it.
  virtual bool serve_if_free(bool &/*busy*/) { return serve(); }
  // The next arrival ends sleep() (arrivals before this call do not: serve() once more).
  virtual void arm() = 0;
  // Sleeps until an armed arrival, `timeout_ns` (-1: no limit) or interrupt().
  virtual void sleep(long timeout_ns) = 0;
  virtual void interrupt() = 0;
  // Nanoseconds until serve() has timed work to do, -1 if none.
  virtual long next_deadline_ns() = 0;
};

class Thread {
 public:
  static constexpr long kPollingCheckNs = 1'000'000;

  Thread() = default;
  Thread(const Thread &) = delete;
  Thread &operator=(const Thread &) = delete;
  ~Thread() { stop(); }

  void start(Source *source);
  void stop();  // joins the thread; the source must still exist
  bool running() const { return thread_.joinable(); }

  // The calling thread polls the source itself for the lifetime of this object.
  class Polling {
   public:
    explicit Polling(Thread &t) : t_(t) { t_.polling_.fetch_add(1, std::memory_order_acq_rel); }
    ~Polling();
    Polling(const Polling &) = delete;
    Polling &operator=(const Polling &) = delete;

   private:
    Thread &t_;
  };

  // The source has new timed work due in `in_ns` (a request just sent, which may need sending
  // again; an ack owed): wakes the thread if it would sleep past that. Cheap when it would not
  // (one load), which is the common case: the thread then already sleeps until an earlier time.
  void due_in(long in_ns);

  // For measurements: times the thread woke up, and of those, times it found work.
  uint64_t wakeups() const { return wakeups_.load(std::memory_order_relaxed); }
  uint64_t productive() const { return productive_.load(std::memory_order_relaxed); }
  // True on a progress thread (any Thread's): for counting who serves.
  static bool on_progress_thread();

 private:
  void loop();

  Source *source_ = nullptr;
  std::thread thread_;
  std::atomic<int> polling_{0};
  // When the thread's current sleep ends (monotonic ns; UINT64_MAX: not before an arrival). Set to
  // UINT64_MAX before it looks at the source's deadline, so that work added meanwhile wakes it.
  std::atomic<uint64_t> sleeping_until_{UINT64_MAX};
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> wakeups_{0}, productive_{0};
};

}  // namespace hoshmem::progress
