#include "lib/coll/barrier.h"

#include <time.h>

#include "lib/base/error.h"
#include "lib/coll/collectives.h"
#include "lib/transport/net/peer.h"

namespace hoshmem {
namespace {
uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}
}  // namespace

void WorldBarrier::setup(int me, std::vector<shm::ControlBlock *> controls,
                         const WaitPolicy *policy) {
  me_ = me;
  controls_ = std::move(controls);
  policy_ = policy;
  epoch_ = 0;  // every shmem_init creates fresh (zeroed) control blocks
  entered_seen_.clear();
  entered_read_at_.clear();
  const int n = static_cast<int>(controls_.size());
  bool one_node = true;
  for (shm::ControlBlock *cb : controls_) one_node &= cb != nullptr;
  gather_ = one_node && n > 2 && n <= coll::kWorldArrivalPes;
}

// A PE that has not entered barrier `epoch` but left us an active-set message (see run()).
// Its entry count is read after the message: a PE that sent after entering is seen as entered.
// An off-node PE's count is an RDMA read, made at most once a millisecond (coll::barriers_entered).
int WorldBarrier::stray_active_set_sender(uint64_t epoch) {
  if (entered_seen_.size() != controls_.size()) {
    entered_seen_.assign(controls_.size(), 0);
    entered_read_at_.assign(controls_.size(), 0);
  }
  for (int pe = 0; pe < static_cast<int>(controls_.size()); ++pe)
    if (pe != me_ && coll::pending_active_set_messages(controls_[me_], pe) != 0 &&
        coll::barriers_entered(pe, &entered_seen_[pe], &entered_read_at_[pe]) < epoch)
      return pe;
  return -1;
}

namespace {
// PE `pe`'s arrival word in slot 0 of the PE it is named in.
std::atomic<uint64_t> &arrival(shm::ControlBlock *cb, int pe) {
  return reinterpret_cast<std::atomic<uint64_t> *>(shm::team_slot(cb, 0) +
                                                   coll::kWorldArrivalOffset)[pe];
}
}  // namespace

void WorldBarrier::gather(uint64_t epoch, const auto &wait) {
  const int n = static_cast<int>(controls_.size());
  shm::ControlBlock *mine = controls_[me_];
  if (me_ != 0) {
    peer::store(0, &arrival(mine, me_), epoch);  // names my word in PE 0's slot
    peer::ring(0);
    auto &released = mine->barrier_round[1].value;
    wait([&] { return released.load(std::memory_order_acquire) >= epoch; });
    return;
  }
  int missing = 1;  // PEs below it have arrived
  wait([&] {
    for (; missing < n; ++missing)
      if (arrival(mine, missing).load(std::memory_order_acquire) < epoch) return false;
    return true;
  });
  for (int pe = 1; pe < n; ++pe) {
    peer::store(pe, &mine->barrier_round[1].value, epoch);
    peer::ring(pe);
  }
}

void WorldBarrier::disseminate(uint64_t epoch, const auto &wait) {
  const int n = static_cast<int>(controls_.size());
  shm::ControlBlock *mine = controls_[me_];
  int round = 0;
  for (int distance = 1; distance < n; distance <<= 1, ++round) {
    const int partner = (me_ + distance) % n;
    auto &flag = mine->barrier_round[round].value;  // names the partner's too
    peer::store(partner, &flag, epoch);
    peer::ring(partner);
    wait([&] { return flag.load(std::memory_order_acquire) >= epoch; });
  }
}

void WorldBarrier::run(const char *check) {
  const int n = static_cast<int>(controls_.size());
  if (n == 1) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return;
  }
  const uint64_t epoch = ++epoch_;
  shm::ControlBlock *mine = controls_[me_];
  // SHMEM_DEBUG's checks read this count on other nodes as proof that this PE's earlier messages
  // have landed (collectives.cc, wait_for): complete them first.
  if (check && peer::routes.network) peer::routes.network->flush();
  mine->barriers_entered.value.store(epoch, std::memory_order_relaxed);
  auto wait = [&](auto &&ready) {
    if (!check) return wait_until_ready(*policy_, mine, shm::kSleepForSync, ready);
    // A stray sender is reported once it has looked stray for kStrayNs without a break: a peer
    // of another node whose last message of a collective we both finished lands late (over UD
    // it is executed when the receiver serves it) looks stray for a moment; a peer really in
    // another collective looks stray for good.
    constexpr uint64_t kStrayNs = 100'000'000;
    int stray = -1;
    uint64_t stray_since = 0;
    wait_until_ready(*policy_, mine, shm::kSleepForSync, [&] {
      if (ready()) return true;
      const int pe = stray_active_set_sender(epoch);
      if (pe < 0 || pe != stray) {
        stray = pe;
        stray_since = monotonic_ns();
      } else if (monotonic_ns() - stray_since >= kStrayNs) [[unlikely]] {
        fatal(check,
              "PE %d is still in an active-set collective that this PE did not call with the "
              "same (PE_start, logPE_stride, PE_size)",
              pe);
      }
      return false;
    });
  };
  if (gather_) gather(epoch, wait);
  else disseminate(epoch, wait);
}

}  // namespace hoshmem
