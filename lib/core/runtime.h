// lib/core: the state of the library in this process, and the checks every call makes.
//
// One Runtime object; its first cache lines hold what the data path reads on every call (my PE,
// the number of PEs, the translation tables), the rest is touched only by setup and collectives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include <shmem.h>

#include "lib/atomics/backend.h"
#include "lib/atomics/mode.h"
#include "lib/base/error.h"
#include "lib/bootstrap/bootstrap.h"
#include "lib/coll/barrier.h"
#include "lib/core/config.h"
#include "lib/heap/symmetric_memory.h"
#include "lib/progress/wait.h"

namespace hoshmem {
struct Runtime {
  // --- hot: read by every RMA/AMO ---
  int me = -1;
  int npes = 0;
  bool debug = false;
  // true when AMOs on a PE may use CPU atomics on its mapped memory (same node, in all-SW mode or
  // in all-HW mode with coherent HCA atomics)
  const bool *cpu_atomics_ok = nullptr;
  SymmetricSpace space;
  shm::ControlBlock *const *control = nullptr;  // per PE, null when off-node
  // --- cold ---
  bool initialized = false;
  bool spans_nodes = false;  // some PEs are on other nodes (reached over the network)
  bool rma_over_ud = false;  // and puts and gets to them go as UD messages (lib/core/net.h)
  bool messages_in_hw = false;  // all-HW mode with UD messages to other nodes' CPUs (HOSHMEM_AM)
  std::string messages_why_not;  // ... and why not, when not
  int init_count = 0;
  int thread_level = 0;  // SHMEM_THREAD_*, as provided at the first init
  Config config{};
  atomics::AtomicityMode mode = atomics::AtomicityMode::AllSoftware;
  std::string mode_reason;  // for SHMEM_INFO: why this mode
  // All-HW mode whose HCA atomics are all coherent with CPU atomics (HOSHMEM_COHERENT): CPU
  // atomics on this node's words, only 8-byte fetch-add and compare-swap on the HCA.
  bool coherent = false;
  std::string coherent_reason;  // for SHMEM_INFO: why (or why not, in all-HW mode)
  atomics::AtomicBackend *remote_atomics = nullptr;  // inter-node / loopback backend, if any
  WaitPolicy wait;
  std::unique_ptr<Bootstrap> boot;
  SymmetricMemory memory;
  WorldBarrier barrier;
  std::recursive_mutex setup_mutex;  // init/finalize/malloc family: collective, one thread at a time
  std::unique_ptr<bool[]> cpu_atomics_table;
  // What `control` points into. Owned here, by the global itself, and not by a function-local
  // static: such a static is destroyed at exit before the implicit finalize runs (see
  // runtime.cc, finish_at_exit), and the finalize's barrier needs it.
  std::vector<shm::ControlBlock *> controls;
  bool exit_hook_set = false;  // finish_at_exit is registered
};

extern Runtime rt;

// A lock that only concurrent threads need: taken at SHMEM_THREAD_MULTIPLE, skipped below it
// (SINGLE, FUNNELED, SERIALIZED: at most one thread is in the library at a time).
template <class Mutex>
class ThreadLock {
 public:
  explicit ThreadLock(Mutex &m) : m_(rt.thread_level == SHMEM_THREAD_MULTIPLE ? &m : nullptr) {
    if (m_) m_->lock();
  }
  ~ThreadLock() {
    if (m_) m_->unlock();
  }
  ThreadLock(const ThreadLock &) = delete;
  ThreadLock &operator=(const ThreadLock &) = delete;

 private:
  Mutex *m_;
};

// Setup and teardown (lib/core/runtime.cc).
void runtime_init(int requested_thread_level, int *provided, const char *routine);
void runtime_finalize();
void runtime_print_info(FILE *out);
// The header's inline fast path (lib/core/fast_path.cc): on after init when it applies, off
// before the last finalize tears the mappings down.
void publish_fast_path();
void retract_fast_path();
void *fast_path_state();  // HeapConfig::shared_state: the inline fast path's state
size_t fast_path_state_bytes();
void fast_path_data_sleep(bool begin);  // WaitPolicy::data_sleep
const char *fast_path_status();  // nullptr when the fast path applies, else why not
const char *runtime_build_string();

// --- checks on the data path ---

[[noreturn]] void report_bad_pe(int pe, const char *routine);
[[noreturn]] void report_not_symmetric(const void *addr, int pe, const char *routine);
[[noreturn]] void report_out_of_bounds(const void *addr, size_t len, size_t room,
                                       const char *routine, int pe = -1);
[[noreturn]] void report_misaligned(const void *addr, size_t alignment, const char *routine);
[[noreturn]] void report_null(const char *what, const char *routine);
// remote_address's checks for a PE of another node (nothing is mapped to translate to).
void check_off_node(const void *sym, size_t len, int pe, const char *routine);

// Where PE `pe`'s copy of the symmetric range [sym, sym + len) is mapped here, or nullptr when
// `pe` is on another node (reached over the network: rdma.h). Always checks the PE, that `sym`
// is symmetric (a wrong one would index the tables out of bounds) and that the whole range is
// inside the segment (past its end lies another mapping, or nothing).
inline char *remote_address(const void *sym, size_t len, int pe, const char *routine) {
  if (static_cast<unsigned>(pe) >= static_cast<unsigned>(rt.npes)) [[unlikely]]
    report_bad_pe(pe, routine);
  if (!rt.control[pe]) [[unlikely]] {
    check_off_node(sym, len, pe, routine);
    return nullptr;
  }
  size_t room;
  char *p = rt.space.translate(sym, pe, &room);
  if (!p) [[unlikely]]
    report_not_symmetric(sym, pe, routine);
  if (len > room) [[unlikely]]
    report_out_of_bounds(sym, len, room, routine, pe);
  return p;
}

// Same for the word an AMO targets; with SHMEM_DEBUG also checks its alignment.
inline char *amo_address(const void *sym, size_t size, int pe, const char *routine) {
  char *p = remote_address(sym, size, pe, routine);
  if (rt.debug && (reinterpret_cast<uintptr_t>(sym) & (size - 1))) [[unlikely]]
    report_misaligned(sym, size, routine);
  return p;
}

// A local buffer argument; with SHMEM_DEBUG, NULL with a nonzero length is reported.
inline void check_local(const void *buf, size_t len, const char *what, const char *routine) {
  if (rt.debug && len && !buf) [[unlikely]]
    report_null(what, routine);
}

// After a put, AMO or signal to PE `pe`: wakes it if it sleeps waiting for its memory to change.
inline void notify(int pe) {
  if (shm::ControlBlock *cb = rt.control[pe]) shm::ring_doorbell_for_data(cb);
}

// After a library message to PE `pe` (lock hand-over, team setup): wakes it whatever it waits for.
inline void notify_sync(int pe) {
  if (shm::ControlBlock *cb = rt.control[pe]) shm::ring_doorbell(cb);
}

}  // namespace hoshmem
