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
  if (n > 2) {
    // Gather + release through PE 0: every PE waits once (one wake-up instead of one per
    // dissemination round), which is what counts when PEs share cores. PE 0's barrier_round[0]
    // counts all arrivals ever (n - 1 per barrier); barrier_round[1] of the others is the epoch
    // released.
    shm::ControlBlock *root = controls_[0];
    auto &arrived = root->barrier_round[0].value;
    if (me_ != 0) {
      arrived.fetch_add(1, std::memory_order_seq_cst);
      shm::ring_doorbell(root);
      auto &released = mine->barrier_round[1].value;
      wait_until_ready(*policy_, mine,
                       [&] { return released.load(std::memory_order_acquire) >= epoch; });
      return;
    }
    const uint64_t all = epoch * static_cast<uint64_t>(n - 1);
    wait_until_ready(*policy_, mine,
                     [&] { return arrived.load(std::memory_order_acquire) >= all; });
    for (int pe = 1; pe < n; ++pe) {
      controls_[pe]->barrier_round[1].value.store(epoch, std::memory_order_seq_cst);
      shm::ring_doorbell(controls_[pe]);
    }
    return;
  }
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
