// lib/progress: the progress thread (progress_thread.h).
#include "lib/progress/progress_thread.h"

#include <pthread.h>
#include <time.h>

namespace hoshmem::progress {

namespace {
thread_local bool t_progress_thread = false;
}  // namespace

bool Thread::on_progress_thread() { return t_progress_thread; }

void Thread::start(Source *source) {
  source_ = source;
  stopping_.store(false);
  thread_ = std::thread([this] {
    t_progress_thread = true;
    loop();
  });
  pthread_setname_np(thread_.native_handle(), "shmem-progress");  // 15 characters at most
}

void Thread::stop() {
  if (!thread_.joinable()) return;
  stopping_.store(true);
  source_->interrupt();
  thread_.join();
}

namespace {
uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}
}  // namespace

Thread::Polling::~Polling() {
  if (t_.polling_.fetch_sub(1, std::memory_order_acq_rel) == 1 && t_.running()) {
    // Hand the work back to the thread. Arrivals: if none woke it during the scope, the channel
    // is still armed; if one did, the thread looks every kPollingCheckNs and re-arms at its next
    // look (arming here would cost it a wake-up at every arrival while this thread goes in and
    // out of calls). Timers (a request to resend): wake it if they are due before it would.
    t_.source_->serve();
    if (const long due = t_.source_->next_deadline_ns(); due >= 0) t_.due_in(due);
  }
}

void Thread::due_in(long in_ns) {
  if (!running()) return;
  if (sleeping_until_.load(std::memory_order_seq_cst) > monotonic_ns() + static_cast<uint64_t>(in_ns))
    source_->interrupt();
}

void Thread::loop() {
  while (!stopping_.load(std::memory_order_acquire)) {
    long timeout = kPollingCheckNs;
    sleeping_until_.store(UINT64_MAX, std::memory_order_seq_cst);
    if (polling_.load(std::memory_order_acquire) == 0) {
      bool any = false, busy = false;
      while (source_->serve_if_free(busy)) any = true;
      source_->arm();
      while (source_->serve_if_free(busy)) any = true;
      if (any) productive_.fetch_add(1, std::memory_order_relaxed);
      timeout = source_->next_deadline_ns();
      // A look skipped because another thread was serving: what arrived after that one's look
      // and before our arm wakes nobody, so look again soon.
      if (busy && (timeout < 0 || timeout > kPollingCheckNs)) timeout = kPollingCheckNs;
    }
    sleeping_until_.store(timeout < 0 ? UINT64_MAX : monotonic_ns() + static_cast<uint64_t>(timeout),
                          std::memory_order_seq_cst);
    source_->sleep(timeout);
    wakeups_.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace hoshmem::progress
