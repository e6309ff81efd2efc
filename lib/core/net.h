// lib/core: RMA with a PE of another node, over the transport that carries it: RC
// (lib/core/rdma.h), or UD messages with HOSHMEM_TRANSPORT=ud in all-SW mode (messages.h).
// `sym` is this PE's address of the symmetric object; `lane` the context's (RC only).
#pragma once

#include <cstddef>

#include "lib/core/messages.h"
#include "lib/core/rdma.h"
#include "lib/core/runtime.h"

namespace hoshmem {

inline void net_put(int lane, int pe, void *sym, const void *source, size_t bytes, bool nbi) {
  if (rt.rma_over_ud) return messages_put(pe, sym, source, bytes);
  rdma_put(lane, pe, sym, source, bytes, nbi);
}

inline void net_get(int lane, int pe, void *dest, const void *sym, size_t bytes, bool nbi) {
  if (rt.rma_over_ud) return messages_get(pe, dest, sym, bytes, nbi);
  rdma_get(lane, pe, dest, sym, bytes, nbi);
}

}  // namespace hoshmem
