// lib/transport/ib: send and completion queues driven directly (queue.h).
#include "lib/transport/ib/queue.h"

#include <endian.h>

namespace hoshmem::ib {
namespace {
constexpr unsigned kCqConsumerIndexRecord = 0;  // dbrec[0] of a CQ: its consumer index
}  // namespace

bool SendQueue::init(ibv_qp *qp) {
  mlx5dv_qp dv{};
  mlx5dv_obj obj{};
  obj.qp.in = qp;
  obj.qp.out = &dv;
  if (mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP) != 0) return false;
  if (dv.sq.stride != MLX5_SEND_WQE_BB || dv.sq.wqe_cnt == 0 ||
      (dv.sq.wqe_cnt & (dv.sq.wqe_cnt - 1)) != 0)
    return false;
  ring_.buf = static_cast<uint8_t *>(dv.sq.buf);
  ring_.bb_count = dv.sq.wqe_cnt;
  bytes_mask_ = size_t{dv.sq.wqe_cnt} * MLX5_SEND_WQE_BB - 1;
  ring_.qpn = qp->qp_num;
  ring_.pi = 0;
  done_ = 0;
  dbrec_ = dv.dbrec;
  bf_next_ = reinterpret_cast<uintptr_t>(dv.bf.reg);
  bf_toggle_ = bf_next_ ^ (bf_next_ + dv.bf.size);
  return true;
}

bool CompletionQueue::init(ibv_cq *cq) {
  mlx5dv_cq dv{};
  mlx5dv_obj obj{};
  obj.cq.in = cq;
  obj.cq.out = &dv;
  if (mlx5dv_init_obj(&obj, MLX5DV_OBJ_CQ) != 0) return false;
  if (dv.cqe_cnt == 0 || (dv.cqe_cnt & (dv.cqe_cnt - 1)) != 0 ||
      (dv.cqe_size != 64 && dv.cqe_size != 128))
    return false;
  buf_ = static_cast<uint8_t *>(dv.buf);
  cqe_count_ = dv.cqe_cnt;
  cqe_size_ = dv.cqe_size;
  dbrec_ = dv.dbrec;
  ci_ = 0;
  return true;
}

bool CompletionQueue::poll(Completion *out) {
  // A 128-byte CQE keeps its 64-byte mlx5_cqe64 in its second half.
  auto *cqe = reinterpret_cast<volatile mlx5_cqe64 *>(
      buf_ + size_t{ci_ & (cqe_count_ - 1)} * cqe_size_ + (cqe_size_ - sizeof(mlx5_cqe64)));
  const uint8_t op_own = cqe->op_own;
  const uint8_t opcode = op_own >> 4;
  // Owned by software when the owner bit equals the wrap parity of the consumer index.
  if (opcode == MLX5_CQE_INVALID || (op_own & MLX5_CQE_OWNER_MASK) != ((ci_ / cqe_count_) & 1))
    return false;
  cqe_owner_before_body();  // the rest of the CQE after op_own (barriers.h)
  out->opcode = opcode;
  out->wqe_counter = be16toh(cqe->wqe_counter);
  out->qpn = be32toh(cqe->sop_drop_qpn) & 0xffffff;
  out->byte_count = be32toh(cqe->byte_cnt);
  out->syndrome = out->vendor_syndrome = 0;
  if (opcode == MLX5_CQE_REQ_ERR || opcode == MLX5_CQE_RESP_ERR) {
    auto *err = reinterpret_cast<volatile mlx5_err_cqe *>(cqe);
    out->syndrome = err->syndrome;
    out->vendor_syndrome = err->vendor_err_synd;
    out->qpn = be32toh(err->s_wqe_opcode_qpn) & 0xffffff;
  }
  ++ci_;
  // No barrier before the consumer index (barriers.h).
  dbrec_[kCqConsumerIndexRecord] = htobe32(ci_ & 0xffffff);
  return true;
}

}  // namespace hoshmem::ib
