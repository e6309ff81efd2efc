#include "lib/coll/barrier.h"

#include "lib/base/error.h"
#include "lib/coll/collectives.h"
#include "lib/transport/net/peer.h"

namespace hoshmem {

void ShmBarrier::setup(int me, std::vector<shm::ControlBlock *> controls,
                       const WaitPolicy *policy) {
  me_ = me;
  controls_ = std::move(controls);
  policy_ = policy;
  epoch_ = 0;  // every shmem_init creates fresh (zeroed) control blocks
}

// A PE that has not entered barrier `epoch` but left us an active-set message (see run()).
// Its entry count is read after the message: a PE that sent after entering is seen as entered.
int ShmBarrier::stray_active_set_sender(uint64_t epoch) const {
  for (int pe = 0; pe < static_cast<int>(controls_.size()); ++pe)
    if (pe != me_ && coll::pending_active_set_messages(controls_[me_], pe) != 0 &&
        controls_[pe]->barriers_entered.value.load(std::memory_order_acquire) < epoch)
      return pe;
  return -1;
}

void ShmBarrier::run(const char *check) {
  const int n = static_cast<int>(controls_.size());
  if (n == 1) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return;
  }
  const uint64_t epoch = ++epoch_;
  shm::ControlBlock *mine = controls_[me_];
  mine->barriers_entered.value.store(epoch, std::memory_order_relaxed);
  auto wait = [&](auto &&ready) {
    if (!check) return wait_until_ready(*policy_, mine, shm::kSleepForSync, ready);
    wait_until_ready(*policy_, mine, shm::kSleepForSync, [&] {
      if (ready()) return true;
      if (const int pe = stray_active_set_sender(epoch); pe >= 0) [[unlikely]]
        fatal(check,
              "PE %d is still in an active-set collective that this PE did not call with the "
              "same (PE_start, logPE_stride, PE_size)",
              pe);
      return false;
    });
  };
  if (n > 2 && !peer::routes.network) {
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
      wait([&] { return released.load(std::memory_order_acquire) >= epoch; });
      return;
    }
    const uint64_t all = epoch * static_cast<uint64_t>(n - 1);
    wait([&] { return arrived.load(std::memory_order_acquire) >= all; });
    for (int pe = 1; pe < n; ++pe) {
      controls_[pe]->barrier_round[1].value.store(epoch, std::memory_order_seq_cst);
      shm::ring_doorbell(controls_[pe]);
    }
    return;
  }
  int round = 0;
  shm::ControlBlock *own = reinterpret_cast<shm::ControlBlock *>(peer::routes.own_control);
  for (int distance = 1; distance < n; distance <<= 1, ++round) {
    const int partner = (me_ + distance) % n;
    peer::store(partner, &own->barrier_round[round].value, epoch);
    peer::ring(partner);
    auto &flag = mine->barrier_round[round].value;
    wait([&] { return flag.load(std::memory_order_acquire) >= epoch; });
  }
}

}  // namespace hoshmem
