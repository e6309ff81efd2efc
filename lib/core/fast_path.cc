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
struct hoshmem_fast_state hoshmem_fast_v3 = {};
void hoshmem_fast_wake(int pe) { hoshmem::notify(pe); }
}

namespace hoshmem {

void publish_fast_path() {
  if (rt.debug || rt.mode != atomics::AtomicityMode::AllSoftware) return;
  if (rt.npes > HOSHMEM_FAST_MAX_PES) return;
  hoshmem_fast_state &f = hoshmem_fast_v3;
  for (int pe = 0; pe < rt.npes; ++pe)
    if (!rt.control[pe]) return;  // a PE on another node: the library decides every call
  const SegmentMap &heap = rt.space.heap, &data = rt.space.data;
  // the bounds first: a peer's heap_hi turns the heap path on for that PE
  f.heap_lo = heap.base;
  f.data_lo = data.mapped ? data.base : 0;  // an empty range when .data/.bss is not shared
  f.data_hi = data.mapped ? data.base + data.size : 0;
  for (int pe = 0; pe < rt.npes; ++pe) {
    f.heap_shift[pe] = reinterpret_cast<uintptr_t>(heap.mapped[pe]) - heap.base;
    f.data_shift[pe] = data.mapped ? reinterpret_cast<uintptr_t>(data.mapped[pe]) - data.base : 0;
    // the byte of the 32-bit flags word that holds bit 0
    f.sleeping[pe] = reinterpret_cast<const volatile unsigned char *>(&rt.control[pe]->sleeping) +
                     (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? 0 : sizeof(uint32_t) - 1);
    __atomic_store_n(&f.heap_hi[pe], heap.base + heap.size, __ATOMIC_RELEASE);
  }
  __atomic_store_n(&f.npes, rt.npes, __ATOMIC_RELEASE);  // last: turns the path on
}

void retract_fast_path() { hoshmem_fast_v3 = {}; }

}  // namespace hoshmem
