// lib/coll: the world barrier (shmem_barrier_all, shmem_sync_all, init and finalize), on the
// control blocks' flags, so it needs no team.
#pragma once

#include <cstdint>
#include <vector>

#include "lib/progress/wait.h"
#include "lib/transport/shm/control_block.h"

namespace hoshmem {

// Every flag has one writer and is polled only by its owner (lib/transport/net/peer.h), so the
// same code runs whether a PE is on this node or another.
//
// Dissemination: ceil(log2 n) rounds; in round k each PE stores the barrier's epoch into the
// round-k flag of PE (me + 2^k) mod n (that PE's only writer of it) and waits for its own round-k
// flag to reach the epoch. Flags only grow, so a fast PE entering the next barrier early cannot
// confuse a slow one. Used with 2 PEs and whenever the job spans nodes.
// Above 2 PEs all on this node: gather to PE 0 and release instead (each PE waits once: fewer
// wake-ups on shared cores). Each PE stores the epoch into its own arrival word in PE 0's slot 0
// (coll::kWorldArrivalOffset), PE 0 waits for all of them, then stores the epoch into every PE's
// barrier_round[1].
class WorldBarrier {
 public:
  // `controls`: per PE, its control block as mapped here, null when it is on another node.
  void setup(int me, std::vector<shm::ControlBlock *> controls, const WaitPolicy *policy);
  // `check` (SHMEM_DEBUG: the routine's name) also watches, while waiting, for a PE that sent
  // us an active-set message before entering this barrier: it called an active-set collective
  // with us that we did not call with it, and it will never arrive here. That is fatal.
  void run(const char *check = nullptr);

 private:
  int stray_active_set_sender(uint64_t epoch);
  void gather(uint64_t epoch, const auto &wait);
  void disseminate(uint64_t epoch, const auto &wait);
  int me_ = 0;
  std::vector<shm::ControlBlock *> controls_;  // indexed by PE
  const WaitPolicy *policy_ = nullptr;
  bool gather_ = false;  // the gather shape (above); else dissemination
  uint64_t epoch_ = 0;
  std::vector<uint64_t> entered_seen_;    // SHMEM_DEBUG: peers' barrier counts last read
  std::vector<int64_t> entered_read_at_;  // and when (off-node peers: RDMA reads)
};

}  // namespace hoshmem
