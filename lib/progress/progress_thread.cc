// lib/progress: the progress thread (progress_thread.h).
#include "lib/progress/progress_thread.h"

#include <pthread.h>

namespace hoshmem::progress {

void Thread::start(Source *source) {
  source_ = source;
  stopping_.store(false);
  thread_ = std::thread([this] { loop(); });
  pthread_setname_np(thread_.native_handle(), "hoshmem-progress");
}

void Thread::stop() {
  if (!thread_.joinable()) return;
  stopping_.store(true);
  source_->interrupt();
  thread_.join();
}

Thread::Polling::~Polling() {
  if (t_.polling_.fetch_sub(1, std::memory_order_acq_rel) == 1 && t_.running()) {
    // Hand arrivals back to the thread: arm, then serve what came before the arm.
    t_.source_->arm();
    t_.source_->serve();
  }
}

void Thread::loop() {
  while (!stopping_.load(std::memory_order_acquire)) {
    long timeout = kPollingCheckNs;
    if (polling_.load(std::memory_order_acquire) == 0) {
      bool any = false;
      while (source_->serve()) any = true;
      source_->arm();
      while (source_->serve()) any = true;
      if (any) productive_.fetch_add(1, std::memory_order_relaxed);
      timeout = source_->next_deadline_ns();
    }
    source_->sleep(timeout);
    wakeups_.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace hoshmem::progress
