// Memory ordering and the world barrier. Intra-node every put and AMO is complete when its call
// returns (stores into coherent shared memory), so quiet is a full memory fence and fence an
// ordering fence; operations through a backend (later issues) are completed by the backend.
#include <atomic>

#include "lib/api/api.h"

using namespace hoshmem;

namespace {
inline void quiet_all() {
  if (rt.remote_atomics) rt.remote_atomics->quiet();
  std::atomic_thread_fence(std::memory_order_seq_cst);
}
}  // namespace

extern "C" {

void pshmem_fence(void) { std::atomic_thread_fence(std::memory_order_release); }

void pshmem_quiet(void) { quiet_all(); }

void pshmem_barrier_all(void) {
  if (!rt.initialized) fatal(HOSHMEM_ROUTINE, "called before shmem_init");
  quiet_all();
  rt.barrier.run();
}

// Synchronizes without completing outstanding remote updates (it orders local stores only).
void pshmem_sync_all(void) {
  if (!rt.initialized) fatal(HOSHMEM_ROUTINE, "called before shmem_init");
  rt.barrier.run();
}

}  // extern "C"

HOSHMEM_ALIAS(shmem_fence);
HOSHMEM_ALIAS(shmem_quiet);
HOSHMEM_ALIAS(shmem_barrier_all);
HOSHMEM_ALIAS(shmem_sync_all);
