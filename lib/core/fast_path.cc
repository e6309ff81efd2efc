// lib/core: the state read by the inline fast path that <shmem.h> compiles into programs
// (include/shmem/shmem_inline.h), and the helpers it needs when the compiler does not inline them.
// The state says "apply" (npes > 0) only while every PE is on this node, atomics are all-SW and
// SHMEM_DEBUG is off: then the inline path does exactly what the library routine would do.
#define HOSHMEM_EMIT_FAST_HELPERS
#include <shmem.h>

#include "lib/core/runtime.h"

extern "C" {
struct hoshmem_fast_state hoshmem_fast = {};
void hoshmem_fast_wake(int pe) { hoshmem::notify(pe); }
}

namespace hoshmem {

void publish_fast_path() {
  if (rt.debug || rt.mode != atomics::AtomicityMode::AllSoftware) return;
  const SegmentMap &heap = rt.space.heap, &data = rt.space.data;
  // Each PE's file maps its control block just before its heap (lib/heap/symmetric_memory.cc),
  // so one offset finds every PE's doorbell flag from its heap mapping.
  const auto flag = [](int pe) { return reinterpret_cast<const char *>(&rt.control[pe]->sleeping); };
  if (!rt.control[0]) return;
  const ptrdiff_t offset = flag(0) - heap.mapped[0];
  for (int pe = 0; pe < rt.npes; ++pe)
    if (!rt.control[pe] || flag(pe) - heap.mapped[pe] != offset)
      return;  // a PE on another node: the library decides every call
  hoshmem_fast.heap = {heap.base, heap.size, heap.mapped};
  hoshmem_fast.data = {data.base, data.size, data.mapped};
  hoshmem_fast.sleeping_offset = offset;
  hoshmem_fast.npes = rt.npes;  // last: turns the path on
}

void retract_fast_path() { hoshmem_fast = {}; }

}  // namespace hoshmem
