// lib/transport/ib: the mlx5 send WQE writers (wqe.h).
#include "lib/transport/ib/wqe.h"

#include <endian.h>

#include <cstring>

namespace hoshmem::ib {
namespace {

constexpr unsigned kSegBytes = 16;

static_assert(sizeof(mlx5_wqe_ctrl_seg) == 16 && sizeof(mlx5_wqe_raddr_seg) == 16 &&
              sizeof(mlx5_wqe_atomic_seg) == 16 && sizeof(mlx5_wqe_data_seg) == 16 &&
              sizeof(MaskedCompareSwap32Seg) == 16 && sizeof(MaskedFetchAdd32Seg) == 16 &&
              sizeof(MaskedCompareSwap64Half) == 16 && sizeof(MaskedFetchAdd64Seg) == 16 &&
              sizeof(mlx5_wqe_inl_data_seg) == 4,
              "mlx5 segments are 16 bytes (the inline header 4)");

unsigned bbs_of(unsigned segments) {
  return (segments * kSegBytes + MLX5_SEND_WQE_BB - 1) / MLX5_SEND_WQE_BB;
}

// The control segment: opcode, modifier and producer index; QP number and size in 16-byte units;
// completion and fence flags.
void set_ctrl(const SqRing &ring, uint8_t opcode, uint8_t opmod, unsigned segments,
              WqeFlags flags) {
  auto *ctrl = static_cast<mlx5_wqe_ctrl_seg *>(ring.segment(0));
  ctrl->opmod_idx_opcode = htobe32(uint32_t{opmod} << 24 | uint32_t{ring.pi} << 8 | opcode);
  ctrl->qpn_ds = htobe32(ring.qpn << 8 | segments);
  ctrl->signature = 0;
  ctrl->dci_stream_channel_id = 0;
  ctrl->fm_ce_se = static_cast<uint8_t>((flags.signaled ? MLX5_WQE_CTRL_CQ_UPDATE : 0) |
                                        (flags.fence ? MLX5_WQE_CTRL_FENCE : 0));
  ctrl->imm = 0;
}

void set_raddr(const SqRing &ring, unsigned index, const RemoteAddr &remote) {
  auto *raddr = static_cast<mlx5_wqe_raddr_seg *>(ring.segment(index));
  raddr->raddr = htobe64(remote.addr);
  raddr->rkey = htobe32(remote.rkey);
  raddr->reserved = 0;
}

void set_data(const SqRing &ring, unsigned index, const LocalBuf &local, uint32_t length) {
  auto *data = static_cast<mlx5_wqe_data_seg *>(ring.segment(index));
  data->byte_count = htobe32(length);
  data->lkey = htobe32(local.lkey);
  data->addr = htobe64(local.addr);
}

// The address vector of a DC WQE after the control segment, one 16-byte segment at a time (it may
// wrap to the ring's start); returns the index of the segment after it (1 for an RC WQE).
unsigned set_address(const SqRing &ring, const AddressVector &to) {
  const auto *from = reinterpret_cast<const uint8_t *>(to.av);
  for (unsigned i = 0; i < to.segments; ++i) memcpy(ring.segment(1 + i), from + i * kSegBytes, kSegBytes);
  return 1 + to.segments;
}

}  // namespace

unsigned write_rdma_write(const SqRing &ring, const LocalBuf &local, uint32_t length,
                          const RemoteAddr &remote, WqeFlags flags, const AddressVector &to) {
  const unsigned at = set_address(ring, to);
  set_raddr(ring, at, remote);
  unsigned segments = at + 1;
  if (length != 0) set_data(ring, segments++, local, length);  // no data segment for 0 bytes
  set_ctrl(ring, MLX5_OPCODE_RDMA_WRITE, 0, segments, flags);
  return bbs_of(segments);
}

unsigned write_rdma_write_inline(const SqRing &ring, const void *data, uint32_t length,
                                 const RemoteAddr &remote, WqeFlags flags,
                                 const AddressVector &to) {
  const unsigned at = set_address(ring, to);
  set_raddr(ring, at, remote);
  // The inline header (4 bytes) and the data, padded to whole 16-byte segments; the data may
  // run past the end of the ring and continue at its start.
  const unsigned first = at + 1;
  auto *header = static_cast<mlx5_wqe_inl_data_seg *>(ring.segment(first));
  header->byte_count = htobe32(length | MLX5_INLINE_SEG);
  const char *from = static_cast<const char *>(data);
  size_t done = 0, offset = sizeof *header;  // bytes of data copied, offset in segment 2 onwards
  while (done < length) {
    const auto seg = static_cast<unsigned>(offset / kSegBytes);
    char *dst = static_cast<char *>(ring.segment(first + seg)) + offset % kSegBytes;
    // contiguous up to the end of this BB (a BB never straddles the ring's end)
    const size_t room = MLX5_SEND_WQE_BB - static_cast<size_t>(dst - reinterpret_cast<char *>(ring.buf)) %
                                               MLX5_SEND_WQE_BB;
    const size_t n = length - done < room ? length - done : room;
    memcpy(dst, from + done, n);
    done += n;
    offset += n;
  }
  const auto segments =
      first + static_cast<unsigned>((sizeof *header + length + kSegBytes - 1) / kSegBytes);
  set_ctrl(ring, MLX5_OPCODE_RDMA_WRITE, 0, segments, flags);
  return bbs_of(segments);
}

unsigned write_rdma_write_inline_imm(const SqRing &ring, const void *data, uint32_t length,
                                     const RemoteAddr &remote, uint32_t imm, WqeFlags flags,
                                     const AddressVector &to) {
  const unsigned bbs = write_rdma_write_inline(ring, data, length, remote, flags, to);
  // The same WQE with the opcode that also consumes a receive at the target, and the immediate
  // its completion carries (network order, as ibv_send_wr's imm_data).
  auto *ctrl = static_cast<mlx5_wqe_ctrl_seg *>(ring.segment(0));
  ctrl->opmod_idx_opcode = htobe32((be32toh(ctrl->opmod_idx_opcode) & ~0xffu) |
                                   MLX5_OPCODE_RDMA_WRITE_IMM);
  ctrl->imm = htobe32(imm);
  return bbs;
}

unsigned write_nop(const SqRing &ring, WqeFlags flags, const AddressVector &to) {
  const unsigned segments = set_address(ring, to);  // a DC NOP names its target, as UCX's does
  set_ctrl(ring, MLX5_OPCODE_NOP, 0, segments, flags);
  return bbs_of(segments);
}

unsigned write_rdma_read(const SqRing &ring, const LocalBuf &local, uint32_t length,
                         const RemoteAddr &remote, WqeFlags flags, const AddressVector &to) {
  const unsigned at = set_address(ring, to);
  set_raddr(ring, at, remote);
  set_data(ring, at + 1, local, length);
  set_ctrl(ring, MLX5_OPCODE_RDMA_READ, 0, at + 2, flags);
  return bbs_of(at + 2);
}

unsigned write_atomic(const SqRing &ring, const atomics::HcaAtomic &a, const LocalBuf &result,
                      const RemoteAddr &remote, WqeFlags flags, const AddressVector &to) {
  using atomics::HcaOpcode;
  const unsigned at = set_address(ring, to);
  set_raddr(ring, at, remote);
  const unsigned op = at + 1;  // the atomic segment(s)
  unsigned segments = op + 1;  // ctrl, address, raddr, one atomic segment; then the result's data
  uint8_t opcode = 0;
  const bool four = a.size == 4;
  switch (a.opcode) {
    case HcaOpcode::CompareSwap:
    case HcaOpcode::FetchAdd: {
      opcode = a.opcode == HcaOpcode::CompareSwap ? MLX5_OPCODE_ATOMIC_CS : MLX5_OPCODE_ATOMIC_FA;
      auto *seg = static_cast<mlx5_wqe_atomic_seg *>(ring.segment(op));
      seg->swap_add = htobe64(a.swap_add);
      seg->compare = htobe64(a.opcode == HcaOpcode::CompareSwap ? a.compare : 0);
      break;
    }
    case HcaOpcode::MaskedCompareSwap:
      opcode = MLX5_OPCODE_ATOMIC_MASKED_CS;
      if (four) {
        auto *seg = static_cast<MaskedCompareSwap32Seg *>(ring.segment(op));
        seg->swap = htobe32(static_cast<uint32_t>(a.swap_add));
        seg->compare = htobe32(static_cast<uint32_t>(a.compare));
        seg->swap_mask = htobe32(static_cast<uint32_t>(a.swap_mask));
        seg->compare_mask = htobe32(static_cast<uint32_t>(a.compare_mask));
      } else {  // two halves, the second of which may wrap to the ring's start
        auto *values = static_cast<MaskedCompareSwap64Half *>(ring.segment(op));
        auto *masks = static_cast<MaskedCompareSwap64Half *>(ring.segment(op + 1));
        values->first = htobe64(a.swap_add);
        values->second = htobe64(a.compare);
        masks->first = htobe64(a.swap_mask);
        masks->second = htobe64(a.compare_mask);
        segments = op + 2;
      }
      break;
    case HcaOpcode::MaskedFetchAdd:
      opcode = MLX5_OPCODE_ATOMIC_MASKED_FA;
      if (four) {
        auto *seg = static_cast<MaskedFetchAdd32Seg *>(ring.segment(op));
        seg->add = htobe32(static_cast<uint32_t>(a.swap_add));
        seg->field_boundary = htobe32(static_cast<uint32_t>(a.field_boundary));
        seg->reserved[0] = seg->reserved[1] = 0;
      } else {
        auto *seg = static_cast<MaskedFetchAdd64Seg *>(ring.segment(op));
        seg->add = htobe64(a.swap_add);
        seg->field_boundary = htobe64(a.field_boundary);
      }
      break;
  }
  set_data(ring, segments++, result, a.size);
  set_ctrl(ring, opcode, atomics::hca_opcode_modifier(a), segments, flags);
  return bbs_of(segments);
}

unsigned write_atomic_wide(const SqRing &ring, atomics::HcaOpcode opcode, unsigned size,
                           const uint8_t *operands, uint32_t operand_bytes, const LocalBuf &result,
                           const RemoteAddr &remote, WqeFlags flags, const AddressVector &to) {
  const unsigned at = set_address(ring, to);
  set_raddr(ring, at, remote);
  unsigned segments = at + 1;
  for (uint32_t off = 0; off < operand_bytes; off += kSegBytes)  // a segment never wraps; a run may
    memcpy(ring.segment(segments++), operands + off, kSegBytes);
  set_data(ring, segments++, result, size);
  const uint8_t opmod = static_cast<uint8_t>(0x08 | (__builtin_ctz(size) - 2));
  set_ctrl(ring,
           opcode == atomics::HcaOpcode::MaskedCompareSwap ? MLX5_OPCODE_ATOMIC_MASKED_CS
                                                           : MLX5_OPCODE_ATOMIC_MASKED_FA,
           opmod, segments, flags);
  return bbs_of(segments);
}

}  // namespace hoshmem::ib
