// lib/core: the state read by the inline fast path that <shmem.h> compiles into programs
// (include/shmem/shmem_inline.h), and the helpers it needs when the compiler does not inline them.
// The state says "apply" (npes > 0) only while every PE is on this node, atomics are all-SW and
// SHMEM_DEBUG is off: then the inline path does exactly what the library routine would do.
#define HOSHMEM_EMIT_FAST_HELPERS
#include <shmem.h>

#include "lib/core/runtime.h"

static_assert(HOSHMEM_FAST_SLEEP_FOR_DATA == hoshmem::shm::kSleepForData);
static_assert(hoshmem::shm::kSleepForData < 256);  // in the flags word's lowest byte

extern "C" {
struct hoshmem_fast_state hoshmem_fast_v2 = {};
void hoshmem_fast_wake(int pe) { hoshmem::notify(pe); }
}

namespace hoshmem {

void publish_fast_path() {
  if (rt.debug || rt.mode != atomics::AtomicityMode::AllSoftware) return;
  if (rt.npes > HOSHMEM_FAST_MAX_PES) return;
  hoshmem_fast_state &f = hoshmem_fast_v2;
  for (int pe = 0; pe < rt.npes; ++pe)
    if (!rt.control[pe]) return;  // a PE on another node: the library decides every call
  const SegmentMap &heap = rt.space.heap, &data = rt.space.data;
  for (int pe = 0; pe < rt.npes; ++pe) {
    f.heap[pe] = heap.mapped[pe];
    f.data[pe] = data.mapped ? data.mapped[pe] : nullptr;
    // the byte of the 32-bit flags word that holds bit 0
    f.sleeping[pe] = reinterpret_cast<const volatile unsigned char *>(&rt.control[pe]->sleeping) +
                     (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? 0 : sizeof(uint32_t) - 1);
  }
  f.heap_lo = reinterpret_cast<const char *>(heap.base);
  f.heap_size = heap.size;
  f.data_lo = reinterpret_cast<const char *>(data.base);
  f.data_size = data.size;
  __atomic_store_n(&f.npes, rt.npes, __ATOMIC_RELEASE);  // last: turns the path on
}

void retract_fast_path() { hoshmem_fast_v2 = {}; }

}  // namespace hoshmem
