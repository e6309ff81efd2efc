// softhca scatter-to-CQE: where ConnectX puts small data into the completion entry instead of
// memory, and the driver half that copies it out (as rdma-core's mlx5 poll code does), so that
// programs polling CQEs themselves meet the MLX5_INLINE_SCATTER_32 entries a real HCA writes.
//
// The rules follow rdma-core's mlx5 provider and the kernel: with 64-byte CQEs up to 32 bytes
// replace the CQE's first half (MLX5_INLINE_SCATTER_32); with 128-byte CQEs (the kernel's
// DATA64 cs_req/cs_res) up to 64 bytes fill the entry's first half, before the CQE
// (MLX5_INLINE_SCATTER_64). Scatter is requested unless MLX5_SCATTER_TO_CQE=0 or
// MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE; only RC QPs use it (UD never; DCTs only with 128-byte
// CQEs; DCIs only with a capability the model does not report; rdma-core drops it for DC QPs
// created with send-ops flags anyway). Responder: a SEND of at most 32/64 bytes into an RC QP with a
// receive queue of its own (not an SRQ). Requester: an RDMA read of at most 32/64 bytes or an
// atomic, signaled, on an RC QP created with sq_sig_all or MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE.
// Data in the CQE is as it came off the wire: atomic results are big-endian whatever the
// endianness mode (UCX reads them so).
#include <cstdlib>
#include <cstring>

#include "hca.h"

namespace softhca {

void decide_cqe_scatter(Qp* qp) {
  qp->scatter_req = qp->scatter_resp = false;
  if (qp->kind != Kind::kRc) return;
  const char* env = getenv("MLX5_SCATTER_TO_CQE");
  bool allow = qp->dv_create_flags & MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE;
  bool on = allow || !(env && !strcmp(env, "0"));
  if (qp->dv_create_flags & MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE) on = false;
  if (!on) return;
  qp->scatter_resp = qp->rq_buf != nullptr;
  qp->scatter_req = qp->sig_all || allow;
}

void put_cqe_data(uint32_t cqe_sz, uint8_t* entry, mlx5_cqe64* c, const void* data, uint32_t len) {
  if (cqe_sz == 128) {
    // 128-byte entry: up to 64 bytes in its first half, the CQE in the second stays whole.
    memset(entry, 0, 64);
    memcpy(entry, data, std::min<uint32_t>(len, 64));
    c->op_own |= MLX5_INLINE_SCATTER_64;
    return;
  }
  memset(c, 0, 32);  // the data replaces the first half (slid, flags_rqpn are not valid then)
  memcpy(c, data, std::min<uint32_t>(len, 32));
  c->op_own |= MLX5_INLINE_SCATTER_32;
}

const uint8_t* cqe_scatter_data(const mlx5_cqe64* c, uint8_t op_own) {
  if (op_own & MLX5_INLINE_SCATTER_32) return reinterpret_cast<const uint8_t*>(c);
  if (op_own & MLX5_INLINE_SCATTER_64) return reinterpret_cast<const uint8_t*>(c) - 64;
  return nullptr;
}

namespace {
// Copies into a list of data segments; false if they cannot hold len bytes.
bool copy_to_segs(const uint8_t* segs, uint32_t nsegs, const uint8_t* data, uint32_t len) {
  uint32_t done = 0;
  for (uint32_t i = 0; i < nsegs && done < len; ++i) {
    mlx5_wqe_data_seg d;
    memcpy(&d, segs + 16 * i, 16);
    if (be32(d.lkey) == MLX5_INVALID_LKEY) break;
    uint32_t n = std::min(be32(d.byte_count), len - done);
    memcpy(reinterpret_cast<void*>(uintptr_t(be64(d.addr))), data + done, n);
    done += n;
  }
  return done == len;
}
}  // namespace

bool copy_cqe_to_send_wqe(Qp* qp, uint16_t idx, const uint8_t* data, uint32_t len) {
  uint8_t w[64 * 8];
  uint32_t bbs = std::min<uint32_t>(qp->sq_wqe_bbs[idx & (qp->sq_bbs - 1)], 8);
  for (uint32_t i = 0; i < bbs; ++i)
    memcpy(w + 64 * i, qp->sq_buf + size_t((idx + i) & (qp->sq_bbs - 1)) * 64, 64);
  mlx5_wqe_ctrl_seg ctrl;
  memcpy(&ctrl, w, sizeof ctrl);
  uint32_t ds = std::min<uint32_t>(be32(ctrl.qpn_ds) & 0x3f, bbs * 4);
  uint8_t opcode = be32(ctrl.opmod_idx_opcode) & 0xff, opmod = be32(ctrl.opmod_idx_opcode) >> 24;
  uint32_t off = 2;  // control and remote-address segments
  if (opcode != MLX5_OPCODE_RDMA_READ)
    off += (opcode == MLX5_OPCODE_ATOMIC_MASKED_CS && opmod == 0x9) ? 2 : 1;
  if (off > ds) return false;
  return copy_to_segs(w + off * 16, ds - off, data, len);
}

bool copy_cqe_to_recv_wqe(Qp* qp, uint16_t idx, const uint8_t* data, uint32_t len) {
  const uint8_t* w = qp->rq_buf + size_t(idx & (qp->rq_cnt - 1)) * qp->rq_stride;
  return copy_to_segs(w, qp->rq_stride / 16, data, len);
}

}  // namespace softhca
