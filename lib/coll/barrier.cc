#include "lib/coll/barrier.h"

namespace hoshmem {

void ShmBarrier::setup(int me, std::vector<shm::ControlBlock *> controls,
                       const WaitPolicy *policy) {
  me_ = me;
  controls_ = std::move(controls);
  policy_ = policy;
  epoch_ = 0;  // every shmem_init creates fresh (zeroed) control blocks
}

void ShmBarrier::run() {
  const int n = static_cast<int>(controls_.size());
  if (n == 1) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return;
  }
  const uint64_t epoch = ++epoch_;
  shm::ControlBlock *mine = controls_[me_];
  int round = 0;
  for (int distance = 1; distance < n; distance <<= 1, ++round) {
    shm::ControlBlock *partner = controls_[(me_ + distance) % n];
    partner->barrier_round[round].value.store(epoch, std::memory_order_seq_cst);
    shm::ring_doorbell(partner);
    auto &flag = mine->barrier_round[round].value;
    wait_until_ready(*policy_, mine,
                     [&] { return flag.load(std::memory_order_acquire) >= epoch; });
  }
}

}  // namespace hoshmem
