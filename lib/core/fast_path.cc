// lib/core: the state read by the inline fast path that <shmem.h> compiles into programs
// (include/shmem/shmem_inline.h), and the helpers it needs when the compiler does not inline them.
// The state says "apply" (npes > 0) only while every PE is on this node, atomics are all-SW and
// SHMEM_DEBUG is off: then the inline path does exactly what the library routine would do.
#define HOSHMEM_EMIT_FAST_HELPERS
#include <shmem.h>

#include <memory>

#include "lib/core/runtime.h"

extern "C" {
struct hoshmem_fast_state hoshmem_fast = {};
void hoshmem_fast_wake(int pe) { hoshmem::notify(pe); }
}

namespace hoshmem {
namespace {
std::unique_ptr<hoshmem_fast_peer[]> peers;
}

void publish_fast_path() {
  if (rt.debug || rt.mode != atomics::AtomicityMode::AllSoftware) return;
  const SegmentMap &heap = rt.space.heap, &data = rt.space.data;
  auto table = std::make_unique<hoshmem_fast_peer[]>(rt.npes);
  for (int pe = 0; pe < rt.npes; ++pe) {
    if (!rt.control[pe]) return;  // a PE on another node: the library decides every call
    table[pe] = {heap.mapped[pe], data.mapped ? data.mapped[pe] : nullptr,
                 reinterpret_cast<const uint32_t *>(&rt.control[pe]->sleeping)};
  }
  peers = std::move(table);
  hoshmem_fast.heap_lo = reinterpret_cast<const char *>(heap.base);
  hoshmem_fast.heap_hi = hoshmem_fast.heap_lo + heap.size;
  hoshmem_fast.data_lo = reinterpret_cast<const char *>(data.base);
  hoshmem_fast.data_hi = hoshmem_fast.data_lo + data.size;
  hoshmem_fast.peers = peers.get();
  hoshmem_fast.npes = rt.npes;  // last: turns the path on
}

void retract_fast_path() {
  hoshmem_fast = {};
  peers.reset();
}

}  // namespace hoshmem
