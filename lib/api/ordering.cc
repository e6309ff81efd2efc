// Memory ordering and the world barrier. Intra-node every put and AMO is complete when its call
// returns (stores into coherent shared memory), so quiet is a full memory fence and fence an
// ordering fence; operations through an inter-node backend are completed by that backend.
#include <atomic>
#include <vector>

#include "lib/api/api.h"
#include "lib/core/team.h"

using namespace hoshmem;

namespace {
// Quiet of one context: its transport lane (0: the default context's).
inline void quiet_lane(int lane = 0) {
  if (rt.remote_atomics) rt.remote_atomics->quiet(lane);
  hoshmem_fast_full_fence();  // the inline quiet's fence (include/shmem/shmem_inline.h)
}

inline void fence_lane(int lane = 0) {
  std::atomic_thread_fence(std::memory_order_release);
  if (rt.spans_nodes) rt.remote_atomics->fence(lane, -1);
}

void pe_quiet(shmem_ctx_t ctx, const int *target_pes, size_t npes, const char *routine) {
  if (!ctx || npes == 0) return;
  if (!target_pes) fatal(routine, "target_pes is NULL with npes = %zu", npes);
  if (!rt.spans_nodes) {
    if (rt.debug)
      for (size_t i = 0; i < npes; ++i) ctx_world_pe(ctx, target_pes[i], routine);
    return quiet_lane(ctx->lane);
  }
  // Only the operations to those PEs (world numbering); this node's are complete already, but
  // its HCA atomics in all-HW mode go through the same transport and are waited for with them.
  std::vector<int> world(npes);
  for (size_t i = 0; i < npes; ++i) world[i] = ctx_world_pe(ctx, target_pes[i], routine);
  rt.remote_atomics->pe_quiet(ctx->lane, world.data(), npes);
  hoshmem_fast_full_fence();
}
}  // namespace

extern "C" {

void pshmem_fence(void) { fence_lane(); }

void pshmem_quiet(void) { quiet_lane(); }

// On SHMEM_CTX_INVALID fence, quiet and pe_quiet do nothing. A context has no operations of its
// own in flight intra-node; across nodes its operations travel on its own lane.
void pshmem_ctx_fence(shmem_ctx_t ctx) {
  if (ctx) fence_lane(ctx->lane);
}

void pshmem_ctx_quiet(shmem_ctx_t ctx) {
  if (ctx) quiet_lane(ctx->lane);
}

// 1.6: quiet restricted to the target PEs (numbered in the context's team). It may cost a full
// quiet, which is what it does once the PEs are checked; npes == 0 returns at once.
void pshmem_ctx_pe_quiet(shmem_ctx_t ctx, const int *target_pes, size_t npes) {
  pe_quiet(ctx, target_pes, npes, HOSHMEM_ROUTINE);
}

void pshmem_pe_quiet(const int *target_pes, size_t npes) {
  pe_quiet(SHMEM_CTX_DEFAULT, target_pes, npes, HOSHMEM_ROUTINE);
}

void pshmem_barrier_all(void) {
  if (!rt.initialized) fatal(HOSHMEM_ROUTINE, "called before shmem_init");
  quiet_lane();
  rt.barrier.run(rt.debug ? HOSHMEM_ROUTINE : nullptr);
}

// Synchronizes without completing outstanding remote updates (it orders local stores only).
void pshmem_sync_all(void) {
  if (!rt.initialized) fatal(HOSHMEM_ROUTINE, "called before shmem_init");
  rt.barrier.run(rt.debug ? HOSHMEM_ROUTINE : nullptr);
}

// The cache routines of OpenSHMEM 1.0-1.4 managed caches that were not coherent with remote
// updates. Every machine hoshmem runs on keeps caches coherent with other cores and with the HCA's
// DMA, so they have nothing to do; they exist so that older programs build and run.
void pshmem_clear_cache_inv(void) {}
void pshmem_set_cache_inv(void) {}
void pshmem_clear_cache_line_inv(void *) {}
void pshmem_set_cache_line_inv(void *) {}
void pshmem_udcflush(void) {}
void pshmem_udcflush_line(void *) {}

}  // extern "C"

HOSHMEM_ALIAS(shmem_clear_cache_inv);
HOSHMEM_ALIAS(shmem_set_cache_inv);
HOSHMEM_ALIAS(shmem_clear_cache_line_inv);
HOSHMEM_ALIAS(shmem_set_cache_line_inv);
HOSHMEM_ALIAS(shmem_udcflush);
HOSHMEM_ALIAS(shmem_udcflush_line);
HOSHMEM_ALIAS(shmem_fence);
HOSHMEM_ALIAS(shmem_quiet);
HOSHMEM_ALIAS(shmem_ctx_fence);
HOSHMEM_ALIAS(shmem_ctx_quiet);
HOSHMEM_ALIAS(shmem_ctx_pe_quiet);
HOSHMEM_ALIAS(shmem_pe_quiet);
HOSHMEM_ALIAS(shmem_barrier_all);
HOSHMEM_ALIAS(shmem_sync_all);
