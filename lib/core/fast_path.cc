// lib/core: the state read by the inline fast path that <shmem.h> compiles into programs
// (include/shmem/shmem_inline.h), and the helpers it needs when the compiler does not inline them.
// The state says "apply" (npes > 0) only while every PE is on this node, atomics are all-SW,
// SHMEM_DEBUG is off and the heap is at the address the header compiles in (fast_path_obstacle):
// then the inline path does exactly what the library routine would do.
//
// Inline stores (put, p, atomic_set) do not look at the target's sleep flag afterwards, as the
// library's do: that load cost a third of a store loop's time. Instead each PE's state lives in
// its control file (HeapConfig::shared_state), and a PE about to sleep for data zeroes its heap_len
// entry in every PE's state: their stores to it then take the library path, which rings. A store
// that resolved just before the zeroing is not seen by the sleeper's re-check, the same race a
// plain store still in the store buffer has with the flag, and the sleep's timeout bounds both.
#define HOSHMEM_EMIT_FAST_HELPERS
#include <shmem.h>

#include <atomic>
#include <mutex>

#include "lib/core/runtime.h"

static_assert(HOSHMEM_FAST_SLEEP_FOR_DATA == hoshmem::shm::kSleepForData);
static_assert(hoshmem::shm::kSleepForData < 256);  // in the flags word's lowest byte
static_assert(sizeof(hoshmem_fast_state) % 4096 == 0 &&
              sizeof(hoshmem_fast_state) <= hoshmem::shm::kSharedStateBytes);

extern "C" {
struct hoshmem_fast_state hoshmem_fast_v6 = {};
void hoshmem_fast_wake(int pe) { hoshmem::notify(pe); }
}

namespace hoshmem {
namespace {

// Every PE's state is mapped here (all on this node): a sleeper updates those that apply the
// path, whether or not this PE's own does (the heap's address, for one, can differ per PE).
std::atomic<bool> g_states_mapped{false};
const char *g_status = "not initialized";  // why the path is off, nullptr when on
std::mutex g_sleep_mutex;  // threads of this PE that sleep for data
int g_data_sleepers = 0;

hoshmem_fast_state &state_of(int pe) {
  return *static_cast<hoshmem_fast_state *>(shm::shared_state(rt.control[pe]));
}

// Why the fast path does not apply here, or nullptr when it does (after g_states_mapped is set).
const char *fast_path_obstacle() {
  if (rt.debug) return "SHMEM_DEBUG checks every call";
  if (rt.mode != atomics::AtomicityMode::AllSoftware && !rt.coherent)
    return "atomics are all-HW (and not coherent)";
  if (rt.npes > HOSHMEM_FAST_MAX_PES) return "more than 1024 PEs";
  if (!rt.memory.state_shared()) return "its table could not be shared";  // sleepers need it
  if (rt.space.heap.base != uintptr_t{HOSHMEM_FAST_HEAP_BASE})
    return "the heap is not at the header's HOSHMEM_FAST_HEAP_BASE: HOSHMEM_HEAP_BASE is set, "
           "or that range was taken";
  if (!g_states_mapped) return "a PE is on another node";  // the library decides every call
  return nullptr;
}

}  // namespace

void *fast_path_state() { return &hoshmem_fast_v6; }
size_t fast_path_state_bytes() { return sizeof hoshmem_fast_v6; }

void publish_fast_path() {
  bool all_here = true;
  for (int pe = 0; pe < rt.npes; ++pe) all_here = all_here && rt.control[pe] != nullptr;
  g_states_mapped = all_here;
  if (const char *obstacle = fast_path_obstacle()) {
    g_status = obstacle;
    return;
  }
  hoshmem_fast_state &f = hoshmem_fast_v6;
  const SegmentMap &heap = rt.space.heap, &data = rt.space.data;
  // the bounds first: a peer's heap_len turns the heap path on for that PE
  f.data_lo = data.mapped ? data.base : 0;  // an empty range when .data/.bss is not shared
  f.data_len = data.mapped ? data.size : 0;
  for (int pe = 0; pe < rt.npes; ++pe) {
    f.heap_shift[pe] = reinterpret_cast<uintptr_t>(heap.mapped[pe]) - heap.base;
    f.data_shift[pe] = data.mapped ? reinterpret_cast<uintptr_t>(data.mapped[pe]) - data.base : 0;
    // the byte of the 32-bit flags word that holds bit 0
    f.sleeping[pe] = reinterpret_cast<const volatile unsigned char *>(&rt.control[pe]->sleeping) +
                     (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? 0 : sizeof(uint32_t) - 1);
    __atomic_store_n(&f.heap_len[pe], heap.size, __ATOMIC_RELEASE);
  }
  __atomic_store_n(&f.npes, rt.npes, __ATOMIC_RELEASE);  // last: turns the path on
  g_status = nullptr;
}

const char *fast_path_status() { return g_status; }

void retract_fast_path() {
  hoshmem_fast_v6 = {};
  g_states_mapped = false;
  g_status = "finalized";
}

// WaitPolicy::data_sleep. Every PE has published (or not) before shmem_init returns, and a wait
// ends before its PE enters shmem_finalize.
void fast_path_data_sleep(bool begin) {
  if (!g_states_mapped) return;
  ThreadLock<std::mutex> guard(g_sleep_mutex);
  if (begin ? g_data_sleepers++ > 0 : --g_data_sleepers > 0) return;  // not the first / last
  const uintptr_t len = begin ? 0 : rt.space.heap.size;
  for (int pe = 0; pe < rt.npes; ++pe) {
    hoshmem_fast_state &peer = state_of(pe);
    if (__atomic_load_n(&peer.npes, __ATOMIC_ACQUIRE) != 0)  // it applies the path
      __atomic_store_n(&peer.heap_len[rt.me], len, __ATOMIC_RELAXED);
  }
  // the caller's seq_cst announcement orders the zeroing before its re-check of the condition
}

}  // namespace hoshmem
