// lib/core: the inline paths of the commonest operations to a PE of another node, tried by the
// API routine before anything else: no virtual call, no frame of its own, the translation to the
// peer's address folded in (the heap is at the same address on every PE, so only the rkey
// differs; the globals are where the peer's executable has them). Whatever a path does not
// cover (a queue pair not yet used for the operation, no room, a fence due, not symmetric, this
// node) returns false, and the routine takes the general path, which also reports bad input.
// Their instructions are counted by perf/ucx/instructions.sh.
//   - rdma_add_inline: a 64-bit add whose old value nobody wants (shmem_*_atomic_add and _inc on
//     8-byte types), in the all-HW mode.
//   - rdma_atomic_inline: the other AMOs of 4 and 8 bytes in the all-HW mode, fetching
//     (blocking) or not, whose encoding the job's devices have.
//   - rdma_put_inline: p, put and put_nbi of 1 byte up to the queues' inline limit (220 bytes
//     where the device allows), in either mode.
//   - rdma_get_inline: g and blocking gets of 1 to 64 bytes, in either mode.
// Over RC or DC (an initiator the peer keeps), with mlx5 WQEs.
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

// Set up by rdma_start when the heap is at the same address on every PE, and not under
// SHMEM_DEBUG (the paths check nothing); sizes 0: no inline path.
struct RdmaInlinePath {
  rc::Transport::LaneTable lanes = nullptr;
  uintptr_t file_base = 0;  // this PE's range the path serves in the file (heap, control area)
  size_t file_size = 0;
  uintptr_t data_base = 0;  // this PE's globals
  size_t data_size = 0;
  const PeerSegments *segments = nullptr;  // by PE
  rc::Transport *transport = nullptr;
  const ib::AtomicCaps *caps = nullptr;  // the job's (masked sizes: every PE's device has them)
  bool dc = false;  // DC initiators: the add takes the general atomic's inline path
  uint32_t put_max = 0;  // the largest put whose data travels in its WQE (max_inline())
};
// Adds: the control area and heap (the library's own words too), all-HW mode, PEs of this node
// included (HCA loopback) unless coherent mode gives them CPU atomics.
extern RdmaInlinePath rdma_add_path;
// Puts: the heap and globals; the caller has checked that the PE is on another node.
extern RdmaInlinePath rdma_put_path;

// `op` on the word at `dest` of PE `pe` (valid); the old value in *old when `old` is not null.
[[gnu::always_inline]] inline bool rdma_atomic_inline(int lane, int pe, const void *dest,
                                                      atomics::AmoOp op, unsigned size,
                                                      uint64_t operand, uint64_t compare,
                                                      uint64_t *old) {
  const RdmaInlinePath &p = rdma_add_path;
  if (!p.caps) return false;
  const atomics::HcaAtomic a = atomics::encode_for_hca(op, size, operand, compare);
  const bool standard = a.opcode == atomics::HcaOpcode::FetchAdd ||
                        a.opcode == atomics::HcaOpcode::CompareSwap;
  if (standard ? !p.caps->standard
               : !p.caps->masked ||
                     !((p.dc ? p.caps->masked_sizes_dc : p.caps->masked_sizes_rc) & size))
    return false;  // compare-swap loops
  const uintptr_t addr = reinterpret_cast<uintptr_t>(dest);
  const PeerSegments &s = p.segments[pe];
  if (addr - p.file_base < p.file_size)
    return rc::Transport::try_atomic_inline(p.transport, lane, pe, a, {addr, s.file_rkey}, old);
  if (const uintptr_t off = addr - p.data_base; off < p.data_size)
    return rc::Transport::try_atomic_inline(p.transport, lane, pe, a,
                                            {s.data_base + off, s.data_rkey}, old);
  return false;
}

[[gnu::always_inline]] inline bool rdma_add_inline(int lane, int pe, const void *dest,
                                                   uint64_t addend) {
  const RdmaInlinePath &p = rdma_add_path;
  if (p.dc)
    return rdma_atomic_inline(lane, pe, dest, atomics::AmoOp::FetchAdd, 8, addend, 0, nullptr);
  const uintptr_t a = reinterpret_cast<uintptr_t>(dest);
  const PeerSegments &s = p.segments[pe];
  if (a - p.file_base < p.file_size)  // the heap
    return rc::Transport::try_add_inline(p.lanes, lane, pe, addend, {a, s.file_rkey});
  if (const uintptr_t off = a - p.data_base; off < p.data_size)  // the globals
    return rc::Transport::try_add_inline(p.lanes, lane, pe, addend,
                                         {s.data_base + off, s.data_rkey});
  return false;  // no inline path (sizes 0), or not symmetric (the general path says so)
}

// Where `bytes` at this PE's `sym` (heap or globals, wholly inside one) are on PE `pe`.
[[gnu::always_inline]] inline bool rma_target(const RdmaInlinePath &p, int pe, const void *sym,
                                              size_t bytes, ib::RemoteAddr *out) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(sym);
  const PeerSegments &s = p.segments[pe];
  if (const uintptr_t off = a - p.file_base; off < p.file_size && bytes <= p.file_size - off) {
    *out = {a, s.file_rkey};
    return true;
  }
  if (const uintptr_t off = a - p.data_base; off < p.data_size && bytes <= p.data_size - off) {
    *out = {s.data_base + off, s.data_rkey};
    return true;
  }
  return false;
}

// A put to a valid PE of another node (remote_address would return null). The whole range must
// lie in one segment.
[[gnu::always_inline]] inline bool rdma_put_inline(int lane, int pe, void *dest,
                                                   const void *source, size_t bytes) {
  const RdmaInlinePath &p = rdma_put_path;
  if (bytes > p.put_max || static_cast<unsigned>(pe) >= static_cast<unsigned>(rt.npes) ||
      rt.control[pe])
    return false;
  const auto n = static_cast<uint32_t>(bytes);
  ib::RemoteAddr to;
  if (!rma_target(p, pe, dest, bytes, &to)) return false;
  return p.dc ? rc::Transport::try_put_inline<true>(p.lanes, lane, pe, source, n, to)
              : rc::Transport::try_put_inline<false>(p.lanes, lane, pe, source, n, to);
}

// A blocking get from a valid PE of another node, as rdma_put_inline.
[[gnu::always_inline]] inline bool rdma_get_inline(int lane, int pe, void *dest,
                                                   const void *source, size_t bytes) {
  const RdmaInlinePath &p = rdma_put_path;
  if (bytes > rc::Transport::kInlineGetBytes ||
      static_cast<unsigned>(pe) >= static_cast<unsigned>(rt.npes) || rt.control[pe])
    return false;
  ib::RemoteAddr from;
  if (!rma_target(p, pe, source, bytes, &from)) return false;
  return rc::Transport::try_get_inline(p.transport, lane, pe, dest, static_cast<uint32_t>(bytes),
                                       from);
}

}  // namespace hoshmem
