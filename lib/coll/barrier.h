// lib/coll: collective operations. For now the world barrier over the PEs of the node; teams and
// the other collectives build on the same control blocks.
#pragma once

#include <cstdint>
#include <vector>

#include "lib/progress/wait.h"
#include "lib/transport/shm/control_block.h"

namespace hoshmem {

// Dissemination barrier: ceil(log2 n) rounds; in round k each PE stores the barrier's epoch into
// the round-k flag of PE (me + 2^k) mod n and waits for its own round-k flag to reach the epoch.
// Flags only grow, so a fast PE entering the next barrier early cannot confuse a slow one.
// Above 2 PEs: gather to PE 0 and release instead (fewer wake-ups on shared cores).
class ShmBarrier {
 public:
  void setup(int me, std::vector<shm::ControlBlock *> controls, const WaitPolicy *policy);
  // `check` (SHMEM_DEBUG: the routine's name) also watches, while waiting, for a PE that sent
  // us an active-set message before entering this barrier: it called an active-set collective
  // with us that we did not call with it, and it will never arrive here. That is fatal.
  void run(const char *check = nullptr);

 private:
  int stray_active_set_sender(uint64_t epoch) const;
  int me_ = 0;
  std::vector<shm::ControlBlock *> controls_;  // indexed by PE
  const WaitPolicy *policy_ = nullptr;
  uint64_t epoch_ = 0;
};

}  // namespace hoshmem
