// lib/transport/ib: mlx5 send WQEs written straight into a send queue, shared by the RC and DC
// transports. Every segment is rdma-core's own struct from <infiniband/mlx5dv.h> (the masked
// atomic segments, which mlx5dv.h lacks, are declared here with their documented layout), every
// field big-endian, every opcode and flag rdma-core's constant.
//
// A WQE is a run of 64-byte basic blocks (BBs) starting at the producer index; its 16-byte
// segments wrap from the end of the ring to its start, so a segment is addressed through the
// ring, never by pointer arithmetic across the end. The writers fill the WQE and return its size
// in BBs; posting (doorbell record, then BlueFlame/UAR) is the queue's business (sq.h).
#pragma once

#include <endian.h>
#include <infiniband/mlx5dv.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "lib/atomics/hca_encoding.h"

namespace hoshmem::ib {

// Masked atomic segments (mlx5 extended atomics), big-endian, after the remote-address segment.
struct MaskedCompareSwap32Seg {  // 16 bytes
  uint32_t swap, compare, swap_mask, compare_mask;
};
struct MaskedFetchAdd32Seg {  // 16 bytes
  uint32_t add, field_boundary, reserved[2];
};
struct MaskedCompareSwap64Half {  // two of these: {swap, compare} then {swap_mask, compare_mask}
  uint64_t first, second;
};
struct MaskedFetchAdd64Seg {  // 16 bytes
  uint64_t add, field_boundary;
};

// The send queue as mlx5dv_init_obj describes it.
struct SqRing {
  uint8_t *buf = nullptr;  // first BB
  uint32_t bb_count = 0;   // a power of two
  uint32_t qpn = 0;        // goes into every control segment
  uint16_t pi = 0;         // producer index in BBs, wrapping at 2^16 like the hardware's counter

  // The 16-byte segment `index` of the WQE that starts at the producer index.
  void *segment(unsigned index) const {
    const size_t ring_bytes = size_t{bb_count} * MLX5_SEND_WQE_BB;
    return buf + ((size_t{pi} * MLX5_SEND_WQE_BB + index * 16u) & (ring_bytes - 1));
  }
};

// Completion and ordering flags of a WQE (the control segment's fm_ce_se byte).
struct WqeFlags {
  bool signaled = false;  // a CQE when it completes (MLX5_WQE_CTRL_CQ_UPDATE)
  bool fence = false;     // wait for earlier reads/atomics of this QP first (MLX5_WQE_CTRL_FENCE)
};

// A local buffer: address and lkey of its registration.
struct LocalBuf {
  uint64_t addr;
  uint32_t lkey;
};

// A remote word or range: virtual address at the target and the rkey of its segment there.
struct RemoteAddr {
  uint64_t addr;
  uint32_t rkey;
};

// Where a DC WQE goes: the address vector (mlx5_wqe_av, the datagram segment) that follows its
// control segment, naming the target's DCT, its port and the DC access key. `segments` is 1 for
// the compact form (its first 16 bytes: no GRH, InfiniBand LID routing; MLX5_EXTENDED_UD_AV
// clear in dqp_dct) or 3 for the whole 48 bytes (GRH: RoCE). An RC WQE has none.
struct AddressVector {
  const mlx5_wqe_av *av = nullptr;
  unsigned segments = 0;
};

// Each writer fills the WQE at ring.pi and returns its size in BBs (the caller advances pi and
// rings the doorbell); `to` is a DC WQE's address vector (none: an RC WQE).

// RDMA write of `length` bytes from a registered buffer.
unsigned write_rdma_write(const SqRing &ring, const LocalBuf &local, uint32_t length,
                          const RemoteAddr &remote, WqeFlags flags,
    const AddressVector &to = {});
// RDMA write whose data travels in the WQE (length up to the QP's max_inline_data).
unsigned write_rdma_write_inline(const SqRing &ring, const void *data, uint32_t length,
                                 const RemoteAddr &remote, WqeFlags flags,
    const AddressVector &to = {});
// The same, as an RDMA write with immediate: it also consumes a receive at the target, whose
// completion carries `imm` (what wakes a target that sleeps on its receive CQ).
unsigned write_rdma_write_inline_imm(const SqRing &ring, const void *data, uint32_t length,
                                     const RemoteAddr &remote, uint32_t imm, WqeFlags flags,
                                     const AddressVector &to = {});
// A NOP: no data and no packet; its completion comes in order after every earlier WQE of the
// queue. Signaled with the fence (as UCX's flush posts it), it is how a queue whose last WQE went
// unsignaled is asked for a completion that retires everything before it.
unsigned write_nop(const SqRing &ring, WqeFlags flags, const AddressVector &to = {});
// RDMA read of `length` bytes into a registered buffer.
unsigned write_rdma_read(const SqRing &ring, const LocalBuf &local, uint32_t length,
                         const RemoteAddr &remote, WqeFlags flags,
    const AddressVector &to = {});
// An atomic as encoded by atomics::encode_for_hca; the old value lands in `result` (size bytes).
unsigned write_atomic(const SqRing &ring, const atomics::HcaAtomic &atomic, const LocalBuf &result,
                      const RemoteAddr &remote, WqeFlags flags,
    const AddressVector &to = {});

// A masked atomic of 16-256 bytes (mlx5 extended atomics): opcode modifier 0x08 | (log2(size) -
// 2), the operand bytes (atomics::hca_wide_operands: `operand_bytes`, a multiple of 16) inline
// after the remote-address segment, one 16-byte segment at a time so that they span BBs and wrap
// from the ring's end to its start, then one data segment for the `size`-byte result (big-endian
// words, atomics::hca_wide_result). At most wide_atomic_bbs(...) BBs.
unsigned write_atomic_wide(const SqRing &ring, atomics::HcaOpcode opcode, unsigned size,
                           const uint8_t *operands, uint32_t operand_bytes, const LocalBuf &result,
                           const RemoteAddr &remote, WqeFlags flags, const AddressVector &to = {});
// The BBs write_atomic_wide fills: control, address vector, remote address, operands, data.
constexpr unsigned wide_atomic_bbs(uint32_t operand_bytes, unsigned av_segments = 0) {
  return ((3 + av_segments) * 16 + operand_bytes + MLX5_SEND_WQE_BB - 1) / MLX5_SEND_WQE_BB;
}

// A standard 8-byte fetch-add whose old value lands in one fixed buffer, prepared once per queue
// by write_atomic: writing one copies its 64 bytes (one BB: control, remote-address, atomic and
// data segments; a BB never wraps) and fills in what changes, the producer index, flags, remote
// word and addend. The path of non-fetching adds, where every instruction counts.
class FetchAddTemplate {
 public:
  void init(uint32_t qpn, const LocalBuf &result) {
    const SqRing ring{bytes_, 1, qpn, 0};
    write_atomic(ring, atomics::encode_for_hca(atomics::AmoOp::FetchAdd, 8, 0, 0), result, {0, 0},
                 {});
  }
  // Writes the WQE at `wqe`, the BB at producer index `pi`, unsignaled and unfenced; returns
  // its first 8 bytes (what the doorbell carries). Only the producer index, the remote address
  // and key, and the addend differ from the template.
  [[gnu::always_inline]] uint64_t write(void *wqe, uint16_t pi, uint64_t add,
                                        const RemoteAddr &remote) const {
    auto *bb = static_cast<uint8_t *>(wqe);
    uint64_t first8;  // opmod_idx_opcode (the template's: index 0), then qpn_ds
    memcpy(&first8, bytes_, sizeof first8);
    first8 |= htobe32(uint32_t{pi} << 8);  // the WQE index, in opmod_idx_opcode's bits 8-23
    memcpy(bb, bytes_, sizeof bytes_);
    memcpy(bb, &first8, sizeof first8);
    auto *raddr = reinterpret_cast<mlx5_wqe_raddr_seg *>(bb + sizeof(mlx5_wqe_ctrl_seg));
    auto *atomic = reinterpret_cast<mlx5_wqe_atomic_seg *>(raddr + 1);
    raddr->raddr = htobe64(remote.addr);
    raddr->rkey = htobe32(remote.rkey);
    atomic->swap_add = htobe64(add);
    return first8;
  }
  // Asks a completion for the WQE write() made (the control segment's fm_ce_se).
  static void set_signaled(void *wqe) {
    static_cast<mlx5_wqe_ctrl_seg *>(wqe)->fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE;
  }

 private:
  alignas(64) uint8_t bytes_[MLX5_SEND_WQE_BB] = {};
};

// The largest inline RDMA write one WQE of at most `max_bbs` BBs can carry (after the control,
// address vector, remote-address and inline header segments).
constexpr uint32_t max_inline_write(unsigned max_bbs, unsigned av_bytes = 0) {
  return max_bbs * MLX5_SEND_WQE_BB - sizeof(mlx5_wqe_ctrl_seg) - av_bytes -
         sizeof(mlx5_wqe_raddr_seg) - sizeof(mlx5_wqe_inl_data_seg);
}

// The inline RDMA write of one BB over RC (no address vector): up to kMaxBytes of data, in 3
// segments up to kThreeSegmentBytes and 4 above. The control segments come from
// write_rdma_write_inline (init), so the encoding stays there; write() only fills in the index,
// the size, the flags, the remote address and the data.
class WriteInlineTemplate {
 public:
  static constexpr uint32_t kMaxBytes = max_inline_write(1);
  static constexpr uint32_t kThreeSegmentBytes = 16 - sizeof(mlx5_wqe_inl_data_seg);

  void init(uint32_t qpn) {
    alignas(64) uint8_t bb[MLX5_SEND_WQE_BB];
    const uint8_t zeros[kMaxBytes] = {};
    const SqRing ring{bb, 1, qpn, 0};
    for (unsigned signaled = 0; signaled < 2; ++signaled)
      for (unsigned four = 0; four < 2; ++four) {
        write_rdma_write_inline(ring, zeros, four ? kMaxBytes : kThreeSegmentBytes, {0, 0},
                                {signaled != 0, false});
        memcpy(&ctrl_[signaled][four], bb, sizeof(mlx5_wqe_ctrl_seg));
      }
  }
  // Writes the WQE at `wqe`, the BB at producer index `pi` (unfenced); returns its first 8
  // bytes (what the doorbell carries). 0 < length <= kMaxBytes.
  [[gnu::always_inline]] uint64_t write(void *wqe, uint16_t pi, const void *data, uint32_t length,
                                        const RemoteAddr &remote, bool signaled) const {
    auto *bb = static_cast<uint8_t *>(wqe);
    mlx5_wqe_ctrl_seg c = ctrl_[signaled][length > kThreeSegmentBytes];
    c.opmod_idx_opcode |= htobe32(uint32_t{pi} << 8);  // the template's index is 0
    memcpy(bb, &c, sizeof c);
    auto *raddr = reinterpret_cast<mlx5_wqe_raddr_seg *>(bb + sizeof c);
    raddr->raddr = htobe64(remote.addr);
    raddr->rkey = htobe32(remote.rkey);
    raddr->reserved = 0;
    auto *header = reinterpret_cast<mlx5_wqe_inl_data_seg *>(raddr + 1);
    header->byte_count = htobe32(length | MLX5_INLINE_SEG);
    memcpy(header + 1, data, length);
    uint64_t first8;
    memcpy(&first8, &c, sizeof first8);
    return first8;
  }

 private:
  mlx5_wqe_ctrl_seg ctrl_[2][2] = {};  // [signaled][four segments]
};

// The same over DC: the control segment and the peer's address vector (compact or whole) come
// from a template made when an initiator takes a peer (init); the WQE is one or two BBs, and
// its second may wrap to the ring's start.
class WriteInlineDcTemplate {
 public:
  static constexpr uint32_t kMaxBytes = WriteInlineTemplate::kMaxBytes;

  void init(uint32_t qpn, const AddressVector &to) {
    alignas(64) uint8_t bbs[2 * MLX5_SEND_WQE_BB];
    const uint8_t zeros[kMaxBytes] = {};
    const SqRing ring{bbs, 2, qpn, 0};
    prefix_segments_ = 1 + to.segments;
    // the header's segment in its BB, and the bytes after it there
    room_ = (4 - (prefix_segments_ + 1) % 4) * 16 - sizeof(mlx5_wqe_inl_data_seg);
    for (unsigned signaled = 0; signaled < 2; ++signaled)
      for (unsigned two = 0; two < 2; ++two) {
        memset(bbs, 0, sizeof bbs);
        write_rdma_write_inline(ring, zeros, two ? kMaxBytes : kOneSegmentBytes, {0, 0},
                                {signaled != 0, false}, to);
        memcpy(first_bb_[signaled][two], bbs, MLX5_SEND_WQE_BB);
      }
  }
  // Writes the WQE at the ring's producer index (unfenced) and returns its BBs.
  [[gnu::always_inline]] unsigned write(const SqRing &ring, const void *data, uint32_t length,
                                        const RemoteAddr &remote, bool signaled) const {
    // The control segment and vector, and whatever of the rest the first BB holds, which is
    // overwritten below.
    auto *bb = static_cast<uint8_t *>(ring.segment(0));
    memcpy(bb, first_bb_[signaled][length > kOneSegmentBytes], MLX5_SEND_WQE_BB);
    auto *ctrl = reinterpret_cast<mlx5_wqe_ctrl_seg *>(bb);
    ctrl->opmod_idx_opcode |= htobe32(uint32_t{ring.pi} << 8);  // the template's index is 0
    auto *raddr = static_cast<mlx5_wqe_raddr_seg *>(ring.segment(prefix_segments_));
    raddr->raddr = htobe64(remote.addr);
    raddr->rkey = htobe32(remote.rkey);
    raddr->reserved = 0;
    auto *header = static_cast<mlx5_wqe_inl_data_seg *>(ring.segment(prefix_segments_ + 1));
    header->byte_count = htobe32(length | MLX5_INLINE_SEG);
    // The data: after the header to the end of its BB, the rest at the next BB's start.
    if (length <= room_) [[likely]] {
      memcpy(header + 1, data, length);
    } else {
      memcpy(header + 1, data, room_);
      memcpy(ring.segment(4), static_cast<const uint8_t *>(data) + room_, length - room_);
    }
    const unsigned segments = prefix_segments_ + 2 + (length > kOneSegmentBytes);
    return (segments + 3) / 4;
  }

 private:
  static constexpr uint32_t kOneSegmentBytes = WriteInlineTemplate::kThreeSegmentBytes;
  alignas(64) uint8_t first_bb_[2][2][MLX5_SEND_WQE_BB] = {};  // [signaled][two data segments]
  unsigned prefix_segments_ = 1;
  uint32_t room_ = 0;
};

}  // namespace hoshmem::ib
