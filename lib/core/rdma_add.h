// lib/core: the inline path of the commonest AMO, a 64-bit add whose old value nobody wants
// (shmem_*_atomic_add and _inc on 8-byte types), to a PE of another node in the all-HW mode.
// The API routine tries it before the atomic backend: no virtual call, no frame of its own, the
// translation to the peer's address folded in (the heap is at the same address on every PE,
// so only the rkey differs; the globals are where the peer's executable has them). Whatever it does not cover (globals, a queue pair not yet used for
// an add, no room, a fence due, this node) returns false, and the routine takes the general
// path. Its instructions are counted by perf/hw/rc.sh.
#pragma once

#include <cstdint>

#include "lib/core/runtime.h"
#include "lib/transport/rc/rc_transport.h"

namespace hoshmem {

// What a PE keeps of another's memory keys: 16 bytes per peer. The file (control area and
// heap) is at the same address on every PE when the heap is (the default), and then its base is
// kept once (rdma.cc).
struct PeerSegments {
  uint64_t data_base;
  uint32_t file_rkey, data_rkey;
};

// Set up by rdma_start in the all-HW mode (not under SHMEM_DEBUG: it checks nothing), when the
// heap is at the same address on every PE; sizes 0: no inline path.
struct RdmaAddPath {
  rc::Transport::LaneTable lanes = nullptr;
  uintptr_t file_base = 0;  // this PE's control area and heap
  size_t file_size = 0;
  uintptr_t data_base = 0;  // this PE's globals
  size_t data_size = 0;
  const PeerSegments *segments = nullptr;  // by PE
};
extern RdmaAddPath rdma_add_path;

[[gnu::always_inline]] inline bool rdma_add_inline(int lane, int pe, const void *dest,
                                                   uint64_t addend) {
  const RdmaAddPath &p = rdma_add_path;
  const uintptr_t a = reinterpret_cast<uintptr_t>(dest);
  const PeerSegments &s = p.segments[pe];
  if (a - p.file_base < p.file_size)  // the heap
    return rc::Transport::try_add_inline(p.lanes, lane, pe, addend, {a, s.file_rkey});
  if (const uintptr_t off = a - p.data_base; off < p.data_size)  // the globals
    return rc::Transport::try_add_inline(p.lanes, lane, pe, addend,
                                         {s.data_base + off, s.data_rkey});
  return false;  // no inline path (sizes 0), or not symmetric (the general path says so)
}

}  // namespace hoshmem
