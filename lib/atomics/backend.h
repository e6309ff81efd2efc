// lib/atomics: the atomic backend interface.
//
// A backend executes AMOs on words of other PEs. The intra-node all-SW path does not go through
// this interface on its fast path (it inlines cpu_atomics.h); the interface is for the paths that
// need a transport: UD active messages to the target's progress thread (all-SW, inter-node), RC or
// DC HCA atomics (all-HW, inter-node and loopback). The API layer never knows which one runs.
#pragma once

#include <cstdint>

#include "lib/atomics/amo_op.h"

namespace hoshmem::atomics {

struct AmoRequest {
  AmoOp op;
  uint8_t size;          // 4 or 8
  int pe;                // target PE (world rank)
  const void *target;    // symmetric address of the word
  uint64_t operand;      // bits of the value (set/swap/add/and/or/xor)
  uint64_t compare;      // bits of the condition (compare-swap)
  void *fetch_out;       // where the old value goes (size bytes); null for non-fetching ops
  int lane = 0;          // the context's transport lane (0: the default context's)
};

class AtomicBackend {
 public:
  virtual ~AtomicBackend() = default;
  virtual const char *name() const = 0;
  // Blocking for fetching requests unless `nbi`; a non-blocking request completes at quiet().
  virtual void execute(const AmoRequest &request, bool nbi) = 0;
  // Completes every request issued so far (on `lane`).
  virtual void quiet(int lane = 0) = 0;
};

}  // namespace hoshmem::atomics
