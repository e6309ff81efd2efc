// lib/atomics: the atomic backend interface.
//
// A backend executes AMOs on words of other PEs. The intra-node all-SW path does not go through
// this interface on its fast path (it inlines cpu_atomics.h); the interface is for the paths that
// need a transport: UD active messages to the target's progress thread (all-SW, inter-node), RC or
// DC HCA atomics (all-HW, inter-node and loopback). The API layer never knows which one runs.
#pragma once

#include <cstddef>
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
  const char *routine = nullptr;  // the API routine, for errors (null: a library message)
  uint64_t mask = 0;     // MaskedFetchAdd: field boundary; MaskedCompareSwap: swap mask
  uint64_t mask2 = 0;    // MaskedCompareSwap: compare mask
};

// A masked atomic of 16-256 bytes (lib/atomics/wide.h: program semantics). Operands are memory
// images of `size` bytes: MaskedCompareSwap a = swap, b = compare, c = swap_mask,
// d = compare_mask; MaskedFetchAdd a = add, b = boundary.
struct WideRequest {
  AmoOp op;
  unsigned size;
  int pe;
  const void *target;
  const void *a, *b, *c, *d;
  void *fetch_out;  // size bytes, or null
  int lane;
  const char *routine;
};

class AtomicBackend {
 public:
  virtual ~AtomicBackend() = default;
  virtual const char *name() const = 0;
  // Blocking for fetching requests unless `nbi`; a non-blocking request completes at quiet().
  virtual void execute(const AmoRequest &request, bool nbi) = 0;
  // A 64-bit add whose old value nobody wants (the add and inc of 8-byte types), complete at
  // quiet: the commonest AMO, which a backend may give its own short path.
  virtual void add_nbi(int lane, int pe, const void *target, uint64_t value, const char *routine) {
    execute(AmoRequest{AmoOp::FetchAdd, 8, pe, target, value, 0, nullptr, lane, routine}, true);
  }
  // Executes a wide masked atomic natively, blocking, and returns true; false when this backend
  // cannot for this size (the caller then uses the lock fallback). The answer depends on the
  // size only and is the same on every PE, so one size never mixes the two.
  virtual bool execute_wide(const WideRequest &) { return false; }
  // Whether execute_wide takes this size (16-256), and how it runs them (SHMEM_INFO).
  virtual bool wide_native(unsigned /*size*/) const { return false; }
  virtual const char *wide_path() const { return ""; }
  // Completes every request issued so far (on `lane`), and the lane's RMA to other nodes.
  virtual void quiet(int lane = 0) = 0;
  // Later AMOs and RMA of `lane` to PE `pe` (every PE: -1) are ordered after earlier ones.
  virtual void fence(int lane, int pe) = 0;
  // Every operation of `lane` to those PEs (world numbers) is complete.
  virtual void pe_quiet(int lane, const int *pes, size_t npes) = 0;
};

}  // namespace hoshmem::atomics
