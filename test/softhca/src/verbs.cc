// softhca libibverbs.so.1: the verbs API over the model. Send and receive work is written into
// mlx5-format queues (the same buffers mlx5dv_init_obj hands out) and the model executes it.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "doorbell.h"
#include "exec_knobs.h"
#include "hca.h"
#include "wakeup.h"

using namespace softhca;

namespace {

std::vector<Device*>& devices() {
  static std::vector<Device*> d = [] {
    std::vector<Device*> v;
    for (int i = 0; i < config().num_devices; ++i) {
      auto* d = new Device{};
      d->index = i;
      d->dev.node_type = IBV_NODE_CA;
      d->dev.transport_type = IBV_TRANSPORT_IB;
      snprintf(d->dev.name, sizeof d->dev.name, "mlx5_%d", i);
      snprintf(d->dev.dev_name, sizeof d->dev.dev_name, "uverbs%d", i);
      snprintf(d->dev.dev_path, sizeof d->dev.dev_path, "/sys/class/infiniband_verbs/uverbs%d", i);
      snprintf(d->dev.ibdev_path, sizeof d->dev.ibdev_path, "/sys/class/infiniband/mlx5_%d", i);
      v.push_back(d);
    }
    return v;
  }();
  return d;
}

Context* ctx_of(ibv_context* c) {
  return reinterpret_cast<Context*>(reinterpret_cast<uint8_t*>(c) - offsetof(verbs_context, context));
}
Qp* qp_of(ibv_qp* q) { return reinterpret_cast<Qp*>(q); }
Qp* qp_of(ibv_qp_ex* q) { return reinterpret_cast<Qp*>(q); }
Qp* qp_of(mlx5dv_qp_ex* q) {
  return reinterpret_cast<Qp*>(reinterpret_cast<uint8_t*>(q) - offsetof(Qp, dvx));
}
Cq* cq_of(ibv_cq* c) { return reinterpret_cast<Cq*>(c); }
Cq* cq_of(ibv_cq_ex* c) { return reinterpret_cast<Cq*>(c); }

uint32_t pow2(uint32_t v) {
  uint32_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

void* alloc_pages(size_t n) {
  void* p = mmap(nullptr, (n + 4095) & ~size_t(4095), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}
void free_pages(void* p, size_t n) {
  if (p) munmap(p, (n + 4095) & ~size_t(4095));
}

ibv_wc_status status_of(uint8_t syn) {
  switch (syn) {
    case MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR: return IBV_WC_LOC_LEN_ERR;
    case MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR: return IBV_WC_LOC_QP_OP_ERR;
    case MLX5_CQE_SYNDROME_LOCAL_PROT_ERR: return IBV_WC_LOC_PROT_ERR;
    case MLX5_CQE_SYNDROME_WR_FLUSH_ERR: return IBV_WC_WR_FLUSH_ERR;
    case MLX5_CQE_SYNDROME_MW_BIND_ERR: return IBV_WC_MW_BIND_ERR;
    case MLX5_CQE_SYNDROME_BAD_RESP_ERR: return IBV_WC_BAD_RESP_ERR;
    case MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR: return IBV_WC_LOC_ACCESS_ERR;
    case MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR: return IBV_WC_REM_INV_REQ_ERR;
    case MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR: return IBV_WC_REM_ACCESS_ERR;
    case MLX5_CQE_SYNDROME_REMOTE_OP_ERR: return IBV_WC_REM_OP_ERR;
    case MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR: return IBV_WC_RETRY_EXC_ERR;
    case MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR: return IBV_WC_RNR_RETRY_EXC_ERR;
    case MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR: return IBV_WC_REM_ABORT_ERR;
    default: return IBV_WC_GENERAL_ERR;
  }
}

// ---- driver side of the CQ: parse one CQE the way libmlx5 does -----------------------------
int poll_one(Cq* cq, ibv_wc* wc) {
  mlx5_cqe64* cqe = cq->cqe(cq->ci);
  uint8_t op_own = __atomic_load_n(&cqe->op_own, __ATOMIC_ACQUIRE);
  if ((op_own >> 4) == MLX5_CQE_INVALID || (op_own & 1) != ((cq->ci / cq->cnt) & 1)) return 0;
  uint8_t op = op_own >> 4;
  memset(wc, 0, sizeof *wc);
  bool err = op == MLX5_CQE_REQ_ERR || op == MLX5_CQE_RESP_ERR;
  uint32_t qpn = be32(err ? reinterpret_cast<mlx5_err_cqe*>(cqe)->s_wqe_opcode_qpn : cqe->sop_drop_qpn) &
                 0xffffff;
  uint16_t idx = be16(err ? reinterpret_cast<mlx5_err_cqe*>(cqe)->wqe_counter : cqe->wqe_counter);
  Hca& h = Hca::get();
  Qp* qp;
  {
    std::shared_lock<std::shared_mutex> g(h.tables);
    auto it = h.qps.find(qpn);
    qp = it == h.qps.end() ? nullptr : it->second;
  }
  cq->ci++;
  __atomic_store_n(&cq->dbrec[0], be32(cq->ci & 0xffffff), __ATOMIC_RELEASE);
  if (!qp) return -1;  // QP destroyed with completions still queued: skip
  std::lock_guard<std::recursive_mutex> g(qp->mu);
  wc->qp_num = qpn;
  if (op == MLX5_CQE_REQ || op == MLX5_CQE_REQ_ERR) {
    uint32_t slot = idx & (qp->sq_bbs - 1);
    wc->wr_id = qp->sq_wrid[slot];
    wc->opcode = ibv_wc_opcode(qp->sq_wc_opcode[slot]);
    wc->byte_len = be32(cqe->byte_cnt);
    wc->status = err ? status_of(reinterpret_cast<mlx5_err_cqe*>(cqe)->syndrome) : IBV_WC_SUCCESS;
    if (err) wc->vendor_err = reinterpret_cast<mlx5_err_cqe*>(cqe)->vendor_err_synd;
    const uint8_t* in_cqe = cqe_scatter_data(cqe, op_own);  // read/atomic result in the CQE
    if (!err && in_cqe && !copy_cqe_to_send_wqe(qp, idx, in_cqe, wc->byte_len))
      wc->status = IBV_WC_LOC_LEN_ERR;
    // The CQE's WQE counter has 16 bits: extend it against the driver's 32-bit consumer index.
    qp->sq_ci += uint16_t(idx - qp->sq_ci) + qp->sq_wqe_bbs[slot];
    return 1;
  }
  if (qp->srq) {
    std::lock_guard<std::mutex> s(qp->srq->mu);
    wc->wr_id = qp->srq->wrid[idx & (qp->srq->cnt - 1)];
    qp->srq->polled++;
  } else {
    wc->wr_id = qp->rq_wrid[qp->rq_ci & (qp->rq_cnt - 1)];
    qp->rq_ci++;
  }
  if (err) {
    wc->status = status_of(reinterpret_cast<mlx5_err_cqe*>(cqe)->syndrome);
    wc->vendor_err = reinterpret_cast<mlx5_err_cqe*>(cqe)->vendor_err_synd;
    wc->opcode = IBV_WC_RECV;
    return 1;
  }
  wc->status = IBV_WC_SUCCESS;
  wc->byte_len = be32(cqe->byte_cnt);
  const uint8_t* in_cqe = cqe_scatter_data(cqe, op_own);  // a small receive's data in the CQE
  if (in_cqe && !qp->srq && !copy_cqe_to_recv_wqe(qp, idx, in_cqe, wc->byte_len))
    wc->status = IBV_WC_LOC_LEN_ERR;
  wc->src_qp = be32(cqe->flags_rqpn) & 0xffffff;
  wc->slid = be16(cqe->slid);
  wc->pkey_index = 0;
  if ((be32(cqe->flags_rqpn) >> 28) & 3) wc->wc_flags |= IBV_WC_GRH;
  switch (op) {
    case MLX5_CQE_RESP_WR_IMM:
      wc->opcode = IBV_WC_RECV_RDMA_WITH_IMM;
      wc->wc_flags |= IBV_WC_WITH_IMM;
      wc->imm_data = cqe->imm_inval_pkey;
      break;
    case MLX5_CQE_RESP_SEND_IMM:
      wc->opcode = IBV_WC_RECV;
      wc->wc_flags |= IBV_WC_WITH_IMM;
      wc->imm_data = cqe->imm_inval_pkey;
      break;
    default:
      wc->opcode = IBV_WC_RECV;
  }
  return 1;
}

int sh_poll_cq(ibv_cq* ibcq, int n, ibv_wc* wc) {
  Cq* cq = cq_of(ibcq);
  std::lock_guard<std::mutex> g(cq->cons);
  int got = 0;
  bool helped = false;
  while (got < n) {
    int r = poll_one(cq, &wc[got]);
    if (r == 0) {
      if (got || helped) break;
      Hca::get().progress();  // nothing yet: execute pending fabric work ourselves, look again
      helped = true;
      continue;
    }
    if (r > 0) got++;
  }
  return got;
}

int sh_req_notify_cq(ibv_cq* ibcq, int solicited_only) {
  Hca::get().arm_cq(cq_of(ibcq), solicited_only != 0);
  return 0;
}

// ---- send WQE construction (the driver half of libmlx5) --------------------------------------
uint32_t units_max(Qp* qp) {
  uint32_t inl = (4 + qp->max_inline + 15) / 16;
  return 1 + 3 + 1 + 2 + std::max(qp->max_send_sge, inl);
}

uint8_t* wqe_at(Qp* qp, uint32_t start, uint32_t byte_off) {
  uint32_t bb = (start + byte_off / 64) & (qp->sq_bbs - 1);
  return qp->sq_buf + bb * 64 + byte_off % 64;
}

void wqe_write(Qp* qp, uint32_t start, uint32_t off, const void* src, uint32_t len) {
  auto* s = static_cast<const uint8_t*>(src);
  while (len) {
    uint32_t n = std::min(len, 64 - off % 64);
    memcpy(wqe_at(qp, start, off), s, n);
    s += n, off += n, len -= n;
  }
}

// Starts a WQE at sq_pi. Returns false (and records ENOMEM) when the SQ has no room.
bool begin_wqe(Qp* qp, uint8_t opcode, uint8_t opmod, unsigned flags, uint32_t imm_be) {
  uint32_t need = (units_max(qp) * 16 + 63) / 64;
  if (qp->sq_pi + need - qp->sq_ci > qp->sq_bbs) {
    qp->wr_err = ENOMEM;
    return false;
  }
  for (uint32_t i = 0; i < need; ++i) memset(wqe_at(qp, qp->sq_pi, i * 64), 0, 64);
  mlx5_wqe_ctrl_seg c{};
  c.opmod_idx_opcode = be32(uint32_t(opmod) << 24 | (qp->sq_pi & 0xffff) << 8 | opcode);
  c.fm_ce_se = ((flags & IBV_SEND_SIGNALED) || qp->sig_all ? MLX5_WQE_CTRL_CQ_UPDATE : 0) |
               (flags & IBV_SEND_SOLICITED ? MLX5_WQE_CTRL_SOLICITED : 0) |
               (flags & IBV_SEND_FENCE ? MLX5_WQE_CTRL_FENCE : 0);
  c.imm = imm_be;
  wqe_write(qp, qp->sq_pi, 0, &c, sizeof c);
  qp->cur_units = 1;
  qp->cur_has_av = false;
  if (qp->kind == Kind::kUd || qp->kind == Kind::kDci) {
    qp->cur_av_unit = qp->cur_units;  // filled by set_ud_addr / set_dc_addr
    qp->cur_units += 3;
    qp->cur_has_av = true;
  }
  qp->cur_addr_set = !qp->cur_has_av;
  qp->cur_data_set = false;
  return true;
}

void put_unit(Qp* qp, const void* seg, uint32_t units) {
  wqe_write(qp, qp->sq_pi, qp->cur_units * 16, seg, units * 16);
  qp->cur_units += units;
}

void put_sge(Qp* qp, uint32_t lkey, uint64_t addr, uint32_t len) {
  mlx5_wqe_data_seg d{be32(len), be32(lkey), be64(addr)};
  put_unit(qp, &d, 1);
}

void put_inline(Qp* qp, const ibv_data_buf* bufs, size_t n) {
  uint32_t total = 0;
  for (size_t i = 0; i < n; ++i) total += uint32_t(bufs[i].length);
  if (total > qp->max_inline) {  // rdma-core's mlx5 fails such a post with ENOMEM
    qp->wr_err = ENOMEM;
    return;
  }
  uint32_t off = qp->cur_units * 16;
  uint32_t hdr = be32(total | MLX5_INLINE_SEG);
  wqe_write(qp, qp->sq_pi, off, &hdr, 4);
  uint32_t p = off + 4;
  for (size_t i = 0; i < n; ++i) {
    wqe_write(qp, qp->sq_pi, p, bufs[i].addr, uint32_t(bufs[i].length));
    p += uint32_t(bufs[i].length);
  }
  qp->cur_units += (4 + total + 15) / 16;
}

void finish_wqe(Qp* qp, uint64_t wr_id, uint8_t wc_opcode) {
  uint32_t start = qp->sq_pi;
  auto* c = reinterpret_cast<mlx5_wqe_ctrl_seg*>(wqe_at(qp, start, 0));
  c->qpn_ds = be32(qp->qpx.qp_base.qp_num << 8 | qp->cur_units);
  uint32_t bbs = (qp->cur_units * 16 + 63) / 64;
  uint32_t slot = start & (qp->sq_bbs - 1);
  qp->sq_wrid[slot] = wr_id;
  qp->sq_wqe_bbs[slot] = uint8_t(bbs);
  qp->sq_wc_opcode[slot] = wc_opcode;
  qp->sq_pi += bbs;
}

void wr_end(Qp* qp);

void set_av(Qp* qp, Ah* ah, uint32_t remote, uint64_t key, bool dc) {
  if (!qp->cur_has_av) {
    qp->wr_err = EINVAL;
    return;
  }
  mlx5_wqe_av av = ah->av;
  av.dqp_dct = be32(remote | MLX5_EXTENDED_UD_AV);
  if (dc) av.key.dc_key = be64(key);
  else av.key.qkey.qkey = be32(uint32_t(key));
  wqe_write(qp, qp->sq_pi, qp->cur_av_unit * 16, &av, sizeof av);
  qp->cur_addr_set = true;
  if (qp->cur_data_set) wr_end(qp);  // wr_* API: the data setter came first
}

void ring(Qp* qp) {
  __atomic_store_n(&qp->dbrec[1], be32(qp->sq_pi & 0xffff), __ATOMIC_RELEASE);
  Hca::get().ring_sq(qp);
}

int sh_post_send(ibv_qp* ibqp, ibv_send_wr* wr, ibv_send_wr** bad) {
  doorbell_sync();  // raw doorbells stored before this post take effect before it
  Qp* qp = qp_of(ibqp);
  Hca& h = Hca::get();
  std::shared_lock<std::shared_mutex> g(h.tables);
  std::lock_guard<std::recursive_mutex> q(qp->mu);
  if (qp->attr.qp_state == IBV_QPS_RESET || qp->attr.qp_state == IBV_QPS_INIT ||
      qp->attr.qp_state == IBV_QPS_RTR || !qp->sq_buf) {
    *bad = wr;
    return EINVAL;
  }
  int rc = 0;
  for (; wr; wr = wr->next) {
    uint8_t op, wcop;
    switch (wr->opcode) {
      case IBV_WR_RDMA_WRITE: op = MLX5_OPCODE_RDMA_WRITE, wcop = IBV_WC_RDMA_WRITE; break;
      case IBV_WR_RDMA_WRITE_WITH_IMM: op = MLX5_OPCODE_RDMA_WRITE_IMM, wcop = IBV_WC_RDMA_WRITE; break;
      case IBV_WR_SEND: op = MLX5_OPCODE_SEND, wcop = IBV_WC_SEND; break;
      case IBV_WR_SEND_WITH_IMM: op = MLX5_OPCODE_SEND_IMM, wcop = IBV_WC_SEND; break;
      case IBV_WR_RDMA_READ: op = MLX5_OPCODE_RDMA_READ, wcop = IBV_WC_RDMA_READ; break;
      case IBV_WR_ATOMIC_CMP_AND_SWP: op = MLX5_OPCODE_ATOMIC_CS, wcop = IBV_WC_COMP_SWAP; break;
      case IBV_WR_ATOMIC_FETCH_AND_ADD: op = MLX5_OPCODE_ATOMIC_FA, wcop = IBV_WC_FETCH_ADD; break;
      default: rc = EINVAL; break;
    }
    if (rc) break;
    bool ud = qp->kind == Kind::kUd;
    if ((ud && op != MLX5_OPCODE_SEND && op != MLX5_OPCODE_SEND_IMM) || qp->kind == Kind::kDci ||
        wr->num_sge > int(qp->max_send_sge) || wr->num_sge < 0) {
      rc = EINVAL;
      break;
    }
    qp->wr_err = 0;
    if (!begin_wqe(qp, op, 0, wr->send_flags, (op == MLX5_OPCODE_SEND_IMM || op == MLX5_OPCODE_RDMA_WRITE_IMM) ? wr->imm_data : 0)) {
      rc = ENOMEM;
      break;
    }
    if (ud) {
      if (!wr->wr.ud.ah) {
        rc = EINVAL;
        break;
      }
      set_av(qp, reinterpret_cast<Ah*>(wr->wr.ud.ah), wr->wr.ud.remote_qpn, wr->wr.ud.remote_qkey,
             false);
    }
    if (op == MLX5_OPCODE_ATOMIC_CS || op == MLX5_OPCODE_ATOMIC_FA) {
      mlx5_wqe_raddr_seg r{be64(wr->wr.atomic.remote_addr), be32(wr->wr.atomic.rkey), 0};
      put_unit(qp, &r, 1);
      mlx5_wqe_atomic_seg a{be64(op == MLX5_OPCODE_ATOMIC_CS ? wr->wr.atomic.swap
                                                            : wr->wr.atomic.compare_add),
                            be64(wr->wr.atomic.compare_add)};
      put_unit(qp, &a, 1);
    } else if (op != MLX5_OPCODE_SEND && op != MLX5_OPCODE_SEND_IMM) {
      mlx5_wqe_raddr_seg r{be64(wr->wr.rdma.remote_addr), be32(wr->wr.rdma.rkey), 0};
      put_unit(qp, &r, 1);
    }
    if ((wr->send_flags & IBV_SEND_INLINE) && op != MLX5_OPCODE_RDMA_READ &&
        op != MLX5_OPCODE_ATOMIC_CS && op != MLX5_OPCODE_ATOMIC_FA) {
      std::vector<ibv_data_buf> bufs;
      for (int i = 0; i < wr->num_sge; ++i)
        bufs.push_back({reinterpret_cast<void*>(uintptr_t(wr->sg_list[i].addr)), wr->sg_list[i].length});
      put_inline(qp, bufs.data(), bufs.size());
    } else {
      for (int i = 0; i < wr->num_sge; ++i)
        if (wr->sg_list[i].length)
          put_sge(qp, wr->sg_list[i].lkey, wr->sg_list[i].addr, wr->sg_list[i].length);
    }
    if (qp->wr_err) {
      rc = qp->wr_err;
      break;
    }
    finish_wqe(qp, wr->wr_id, wcop);
  }
  if (rc) *bad = wr;
  ring(qp);
  return rc;
}

void put_recv(uint8_t* w, uint32_t max_sge, const ibv_recv_wr* wr) {
  uint32_t i = 0;
  for (int s = 0; s < wr->num_sge; ++s) {
    if (!wr->sg_list[s].length) continue;
    mlx5_wqe_data_seg d{be32(wr->sg_list[s].length), be32(wr->sg_list[s].lkey), be64(wr->sg_list[s].addr)};
    memcpy(w + 16 * i++, &d, 16);
  }
  if (i < max_sge) {
    mlx5_wqe_data_seg d{0, be32(MLX5_INVALID_LKEY), 0};
    memcpy(w + 16 * i, &d, 16);
  }
}

int sh_post_recv(ibv_qp* ibqp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Qp* qp = qp_of(ibqp);
  Hca& h = Hca::get();
  std::shared_lock<std::shared_mutex> g(h.tables);
  std::lock_guard<std::recursive_mutex> q(qp->mu);
  if (qp->srq || !qp->rq_buf || qp->attr.qp_state == IBV_QPS_RESET) {
    *bad = wr;
    return EINVAL;
  }
  int rc = 0;
  for (; wr; wr = wr->next) {
    if (wr->num_sge > int(qp->max_recv_sge) || wr->num_sge < 0) { rc = EINVAL; break; }
    if (qp->rq_pi - qp->rq_ci >= qp->rq_cnt) { rc = ENOMEM; break; }
    uint32_t slot = qp->rq_pi & (qp->rq_cnt - 1);
    put_recv(qp->rq_buf + size_t(slot) * qp->rq_stride, qp->rq_stride / 16, wr);
    qp->rq_wrid[slot] = wr->wr_id;
    qp->rq_pi++;
  }
  if (rc) *bad = wr;
  __atomic_store_n(&qp->dbrec[0], be32(qp->rq_pi & 0xffff), __ATOMIC_RELEASE);
  if (qp->attr.qp_state == IBV_QPS_ERR) h.flush_qp(qp);
  return rc;
}

int sh_post_srq_recv(ibv_srq* ibsrq, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Srq* s = reinterpret_cast<Srq*>(ibsrq);
  std::lock_guard<std::mutex> g(s->mu);
  int rc = 0;
  for (; wr; wr = wr->next) {
    if (wr->num_sge > int(s->max_sge) || wr->num_sge < 0) { rc = EINVAL; break; }
    if (s->pi - s->polled >= s->cnt) { rc = ENOMEM; break; }
    uint32_t slot = s->pi & (s->cnt - 1);
    uint8_t* w = s->buf + size_t(slot) * s->stride;
    memset(w, 0, 16);
    put_recv(w + 16, s->max_sge, wr);
    s->wrid[slot] = wr->wr_id;
    s->pi++;
  }
  if (rc) *bad = wr;
  // The SRQ doorbell record holds a 16-bit counter, as rdma-core's mlx5 writes it.
  __atomic_store_n(s->dbrec, be32(s->pi & 0xffff),
                   __ATOMIC_RELEASE);
  return rc;
}

// ---- ibv_qp_ex wr_* API --------------------------------------------------------------------
void wr_begin(ibv_qp_ex* x, uint8_t op, uint8_t wcop, uint32_t imm = 0) {
  Qp* qp = qp_of(x);
  (void)wcop;
  if (qp->wr_err) return;
  if (begin_wqe(qp, op, 0, x->wr_flags, imm)) qp->sq_wc_opcode[qp->sq_pi & (qp->sq_bbs - 1)] = wcop;
}
void put_raddr(ibv_qp_ex* x, uint32_t rkey, uint64_t addr) {
  mlx5_wqe_raddr_seg r{be64(addr), be32(rkey), 0};
  put_unit(qp_of(x), &r, 1);
}
// Opcodes with no data segments are complete as soon as they are described.
void wr_send(ibv_qp_ex* x) { wr_begin(x, MLX5_OPCODE_SEND, IBV_WC_SEND); }
void wr_send_imm(ibv_qp_ex* x, __be32 imm) { wr_begin(x, MLX5_OPCODE_SEND_IMM, IBV_WC_SEND, imm); }
void wr_rdma_write(ibv_qp_ex* x, uint32_t rkey, uint64_t a) {
  wr_begin(x, MLX5_OPCODE_RDMA_WRITE, IBV_WC_RDMA_WRITE);
  if (!qp_of(x)->wr_err) put_raddr(x, rkey, a);
}
void wr_rdma_write_imm(ibv_qp_ex* x, uint32_t rkey, uint64_t a, __be32 imm) {
  wr_begin(x, MLX5_OPCODE_RDMA_WRITE_IMM, IBV_WC_RDMA_WRITE, imm);
  if (!qp_of(x)->wr_err) put_raddr(x, rkey, a);
}
void wr_rdma_read(ibv_qp_ex* x, uint32_t rkey, uint64_t a) {
  wr_begin(x, MLX5_OPCODE_RDMA_READ, IBV_WC_RDMA_READ);
  if (!qp_of(x)->wr_err) put_raddr(x, rkey, a);
}
void wr_cas(ibv_qp_ex* x, uint32_t rkey, uint64_t a, uint64_t cmp, uint64_t swap) {
  wr_begin(x, MLX5_OPCODE_ATOMIC_CS, IBV_WC_COMP_SWAP);
  if (qp_of(x)->wr_err) return;
  put_raddr(x, rkey, a);
  mlx5_wqe_atomic_seg s{be64(swap), be64(cmp)};
  put_unit(qp_of(x), &s, 1);
}
void wr_faa(ibv_qp_ex* x, uint32_t rkey, uint64_t a, uint64_t add) {
  wr_begin(x, MLX5_OPCODE_ATOMIC_FA, IBV_WC_FETCH_ADD);
  if (qp_of(x)->wr_err) return;
  put_raddr(x, rkey, a);
  mlx5_wqe_atomic_seg s{be64(add), 0};
  put_unit(qp_of(x), &s, 1);
}
void wr_set_ud_addr(ibv_qp_ex* x, ibv_ah* ah, uint32_t qpn, uint32_t qkey) {
  set_av(qp_of(x), reinterpret_cast<Ah*>(ah), qpn, qkey, false);
}
void wr_end(Qp* qp) {
  if (qp->wr_err) return;
  // rdma-core takes the address and data setters of a UD/DC WQE in either order: the WQE is
  // complete once both have run (the address vector's place is reserved in begin_wqe).
  qp->cur_data_set = true;
  if (!qp->cur_addr_set) return;
  auto* c = reinterpret_cast<mlx5_wqe_ctrl_seg*>(wqe_at(qp, qp->sq_pi, 0));
  uint8_t op = be32(c->opmod_idx_opcode) & 0xff;
  uint8_t wcop = qp->sq_wc_opcode[qp->sq_pi & (qp->sq_bbs - 1)];
  (void)op;
  finish_wqe(qp, qp->qpx.wr_id, wcop);
}
void wr_set_sge(ibv_qp_ex* x, uint32_t lkey, uint64_t addr, uint32_t len) {
  Qp* qp = qp_of(x);
  if (qp->wr_err) return;
  if (len) put_sge(qp, lkey, addr, len);
  wr_end(qp);
}
void wr_set_sge_list(ibv_qp_ex* x, size_t n, const ibv_sge* l) {
  Qp* qp = qp_of(x);
  if (qp->wr_err) return;
  if (n > qp->max_send_sge) {
    qp->wr_err = EINVAL;
    return;
  }
  for (size_t i = 0; i < n; ++i)
    if (l[i].length) put_sge(qp, l[i].lkey, l[i].addr, l[i].length);
  wr_end(qp);
}
void wr_set_inline(ibv_qp_ex* x, void* addr, size_t len) {
  Qp* qp = qp_of(x);
  if (qp->wr_err) return;
  ibv_data_buf b{addr, len};
  put_inline(qp, &b, 1);
  wr_end(qp);
}
void wr_set_inline_list(ibv_qp_ex* x, size_t n, const ibv_data_buf* b) {
  Qp* qp = qp_of(x);
  if (qp->wr_err) return;
  put_inline(qp, b, n);
  wr_end(qp);
}
void wr_start(ibv_qp_ex* x) {
  doorbell_sync();
  Qp* qp = qp_of(x);
  Hca::get().tables.lock_shared();
  qp->mu.lock();
  qp->wr_start_pi = qp->sq_pi;
  qp->wr_err = 0;
}
int wr_complete(ibv_qp_ex* x) {
  Qp* qp = qp_of(x);
  int rc = qp->wr_err;
  if (rc) qp->sq_pi = qp->wr_start_pi;
  else ring(qp);
  qp->mu.unlock();
  Hca::get().tables.unlock_shared();
  return rc;
}
void wr_abort(ibv_qp_ex* x) {
  Qp* qp = qp_of(x);
  qp->sq_pi = qp->wr_start_pi;
  qp->mu.unlock();
  Hca::get().tables.unlock_shared();
}
void wr_unsupported_bind(ibv_qp_ex* x, ibv_mw*, uint32_t, const ibv_mw_bind_info*) { qp_of(x)->wr_err = EOPNOTSUPP; }
void wr_unsupported_inv(ibv_qp_ex* x, uint32_t) { qp_of(x)->wr_err = EOPNOTSUPP; }
void wr_unsupported_tso(ibv_qp_ex* x, void*, uint16_t, uint16_t) { qp_of(x)->wr_err = EOPNOTSUPP; }
void wr_unsupported_xrc(ibv_qp_ex* x, uint32_t) { qp_of(x)->wr_err = EOPNOTSUPP; }
void wr_unsupported_aw(ibv_qp_ex* x, uint32_t, uint64_t, const void*) { qp_of(x)->wr_err = EOPNOTSUPP; }

// mlx5dv_qp_ex extras
void dv_set_dc_addr(mlx5dv_qp_ex* m, ibv_ah* ah, uint32_t dctn, uint64_t key) {
  Qp* qp = qp_of(m);
  if (qp->kind != Kind::kDci) {
    qp->wr_err = EINVAL;
    return;
  }
  set_av(qp, reinterpret_cast<Ah*>(ah), dctn, key, true);
}
// DCI streams are not modelled: every stream of a DCI keeps the DCI's one order (perftest's DC
// tests address DCTs through this entry point).
void dv_set_dc_addr_stream(mlx5dv_qp_ex* m, ibv_ah* ah, uint32_t dctn, uint64_t key, uint16_t) {
  dv_set_dc_addr(m, ah, dctn, key);
}

}  // namespace

extern "C" void softhca_wr_raw_wqe(mlx5dv_qp_ex* m, const void* wqe) {
  Qp* qp = qp_of(m);
  if (qp->wr_err) return;
  if (!(qp->send_ops_flags & MLX5DV_QP_EX_WITH_RAW_WQE)) {
    qp->wr_err = EOPNOTSUPP;
    return;
  }
  mlx5_wqe_ctrl_seg c;
  memcpy(&c, wqe, sizeof c);
  uint32_t ds = be32(c.qpn_ds) & 0x3f;
  uint32_t bbs = (ds * 16 + 63) / 64;
  if (ds == 0 || qp->sq_pi + bbs - qp->sq_ci > qp->sq_bbs) {
    qp->wr_err = ds ? ENOMEM : EINVAL;
    return;
  }
  wqe_write(qp, qp->sq_pi, 0, wqe, ds * 16);
  // The driver owns the WQE index and QP number fields; the rest is the caller's encoding.
  auto* cc = reinterpret_cast<mlx5_wqe_ctrl_seg*>(wqe_at(qp, qp->sq_pi, 0));
  uint32_t w0 = be32(cc->opmod_idx_opcode);
  cc->opmod_idx_opcode = be32((w0 & 0xff0000ffu) | (qp->sq_pi & 0xffff) << 8);
  cc->qpn_ds = be32(qp->qpx.qp_base.qp_num << 8 | ds);
  if ((qp->qpx.wr_flags & IBV_SEND_SIGNALED) || qp->sig_all) cc->fm_ce_se |= MLX5_WQE_CTRL_CQ_UPDATE;
  uint32_t slot = qp->sq_pi & (qp->sq_bbs - 1);
  qp->sq_wrid[slot] = qp->qpx.wr_id;
  qp->sq_wqe_bbs[slot] = uint8_t(bbs);
  qp->sq_wc_opcode[slot] = MLX5DV_WC_RAW_WQE;
  qp->sq_pi += bbs;
}

// ---- CQ ex polling --------------------------------------------------------------------------
namespace {
int cqx_next(ibv_cq_ex* x) {
  Cq* cq = cq_of(x);
  for (;;) {
    int r = poll_one(cq, &cq->cur);
    if (r == 0) {
      Hca::get().progress();
      r = poll_one(cq, &cq->cur);
      if (r == 0) return ENOENT;
    }
    if (r > 0) break;
  }
  x->status = cq->cur.status;
  x->wr_id = cq->cur.wr_id;
  return 0;
}
int cqx_start(ibv_cq_ex* x, ibv_poll_cq_attr*) {
  cq_of(x)->cons.lock();
  int r = cqx_next(x);
  if (r) cq_of(x)->cons.unlock();
  return r;
}
void cqx_end(ibv_cq_ex* x) { cq_of(x)->cons.unlock(); }
ibv_wc_opcode cqx_opcode(ibv_cq_ex* x) { return cq_of(x)->cur.opcode; }
uint32_t cqx_vendor_err(ibv_cq_ex* x) { return cq_of(x)->cur.vendor_err; }
uint32_t cqx_byte_len(ibv_cq_ex* x) { return cq_of(x)->cur.byte_len; }
__be32 cqx_imm(ibv_cq_ex* x) { return cq_of(x)->cur.imm_data; }
uint32_t cqx_qp_num(ibv_cq_ex* x) { return cq_of(x)->cur.qp_num; }
uint32_t cqx_src_qp(ibv_cq_ex* x) { return cq_of(x)->cur.src_qp; }
unsigned cqx_wc_flags(ibv_cq_ex* x) { return cq_of(x)->cur.wc_flags; }
uint32_t cqx_slid(ibv_cq_ex* x) { return cq_of(x)->cur.slid; }
uint8_t cqx_sl(ibv_cq_ex* x) { return cq_of(x)->cur.sl; }
uint8_t cqx_dlid_path_bits(ibv_cq_ex* x) { return cq_of(x)->cur.dlid_path_bits; }
}  // namespace

// ---- device, context, PD, MR ----------------------------------------------------------------
namespace {

int sh_query_port(ibv_context* c, uint8_t port, ibv_port_attr* a, size_t sz) {
  Context* ctx = ctx_of(c);
  if (port < 1 || port > config().num_ports) return EINVAL;
  ibv_port_attr p{};
  p.state = IBV_PORT_ACTIVE;
  p.max_mtu = config().port_mtu;
  p.active_mtu = config().port_mtu;
  p.gid_tbl_len = gid_table_len();
  p.port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_DEVICE_MGMT_SUP | IBV_PORT_VENDOR_CLASS_SUP;
  p.max_msg_sz = 1u << config().log_max_msg;  // as QUERY_HCA_CAP log_max_msg says
  p.bad_pkey_cntr = 0;
  p.qkey_viol_cntr = 0;
  p.pkey_tbl_len = 1;
  // RoCE: no subnet manager, no LIDs (the model's routing LID stays inside the model).
  p.lid = roce() ? 0 : port_lid(ctx->dev->index, port);
  p.sm_lid = roce() ? 0 : 1;
  p.lmc = 0;
  p.max_vl_num = 4;
  p.sm_sl = 0;
  p.subnet_timeout = 18;
  p.init_type_reply = 0;
  p.active_width = 2;   // 4X
  p.active_speed = 64;  // HDR
  p.phys_state = 5;     // LinkUp
  p.link_layer = roce() ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
  p.flags = config().link == Link::kIbGrh ? IBV_QPF_GRH_REQUIRED : 0;
  p.port_cap_flags2 = 0;
  memcpy(a, &p, std::min(sz, sizeof p));
  return 0;
}

void fill_dev_attr(Context* ctx, ibv_device_attr* a) {
  memset(a, 0, sizeof *a);
  snprintf(a->fw_ver, sizeof a->fw_ver, "20.31.1014");
  a->node_guid = be64(node_guid(ctx->dev->index));
  a->sys_image_guid = a->node_guid;
  a->max_mr_size = ~0ull;
  a->page_size_cap = 0xfffffffffffff000ull;
  a->vendor_id = 0x02c9;       // Mellanox
  a->vendor_part_id = 4123;    // ConnectX-6
  a->hw_ver = 0;
  a->max_qp = int(kQpnSlots - 0x100);
  a->max_qp_wr = 32768;
  a->device_cap_flags = IBV_DEVICE_BAD_PKEY_CNTR | IBV_DEVICE_BAD_QKEY_CNTR | IBV_DEVICE_CHANGE_PHY_PORT |
                        IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_SYS_IMAGE_GUID |
                        IBV_DEVICE_RC_RNR_NAK_GEN;
  a->max_sge = 30;
  a->max_sge_rd = 30;
  a->max_cq = 1 << 16;
  a->max_cqe = (1 << 22) - 1;
  a->max_mr = 1 << 20;
  a->max_pd = 1 << 20;
  a->max_qp_rd_atom = int(config().max_rd_atomic);
  a->max_ee_rd_atom = 0;
  a->max_res_rd_atom = a->max_qp * a->max_qp_rd_atom;
  a->max_qp_init_rd_atom = int(config().max_rd_atomic);
  a->atomic_cap = IBV_ATOMIC_HCA;
  a->max_srq = 1 << 16;
  a->max_srq_wr = 32767;
  a->max_srq_sge = 31;
  a->max_ah = 0x7fffffff;  // as mlx5_ib reports: address handles are limited by memory only
  a->max_pkeys = 1;
  a->local_ca_ack_delay = 16;
  a->phys_port_cnt = uint8_t(config().num_ports);
}

int sh_query_device_ex(ibv_context* c, const ibv_query_device_ex_input*, ibv_device_attr_ex* a,
                       size_t sz) {
  ibv_device_attr_ex x{};
  fill_dev_attr(ctx_of(c), &x.orig_attr);
  x.comp_mask = 0;
  x.device_cap_flags_ex = x.orig_attr.device_cap_flags;
  x.completion_timestamp_mask = 0;
  x.hca_core_clock = 0;
  // What the HCA executes as PCIe AtomicOps (SOFTHCA_PCIE_ATOMICS=1): 8-byte fetch-add and
  // compare-swap; as rdma-core's mlx5 provider does, a device with both reports IBV_ATOMIC_GLOB.
  const uint16_t pci8 = config().pcie_atomics ? IBV_PCI_ATOMIC_OPERATION_8_BYTE_SIZE_SUP : 0;
  x.pci_atomic_caps = {pci8, 0, pci8};  // fetch_add, swap (no HCA opcode maps to it), compare_swap
  if (pci8) x.orig_attr.atomic_cap = IBV_ATOMIC_GLOB;
  x.max_dm_size = 0;
  memcpy(a, &x, std::min(sz, sizeof x));
  return 0;
}

Cq* make_cq(ibv_context* c, ibv_cq_init_attr_ex* attr, const mlx5dv_cq_init_attr* dv = nullptr);
ibv_qp* make_qp(ibv_context* c, ibv_qp_init_attr_ex* attr, Kind kind, const mlx5dv_qp_init_attr* dv);
ibv_srq* make_srq(ibv_context* c, ibv_srq_init_attr_ex* attr);

ibv_cq_ex* sh_create_cq_ex(ibv_context* c, ibv_cq_init_attr_ex* attr) {
  Cq* cq = make_cq(c, attr);
  return cq ? &cq->cqx : nullptr;
}

ibv_qp* sh_create_qp_ex(ibv_context* c, ibv_qp_init_attr_ex* attr) {
  Kind k;
  if (attr->qp_type == IBV_QPT_RC) k = Kind::kRc;
  else if (attr->qp_type == IBV_QPT_UD) k = Kind::kUd;
  else {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  return make_qp(c, attr, k, nullptr);
}

ibv_srq* sh_create_srq_ex(ibv_context* c, ibv_srq_init_attr_ex* a) { return make_srq(c, a); }
int sh_get_srq_num(ibv_srq* srq, uint32_t* num) {  // as mlx5: any SRQ's number (perftest DC uses it)
  *num = reinterpret_cast<Srq*>(srq)->srqn;
  return 0;
}

}  // namespace

extern "C" {

__asm__(".symver softhca_v11_ibv_get_device_list, ibv_get_device_list@@IBVERBS_1.1");
ibv_device** softhca_v11_ibv_get_device_list(int* num) {
  auto& d = devices();
  auto** list = static_cast<ibv_device**>(calloc(d.size() + 1, sizeof(ibv_device*)));
  if (!list) {
    errno = ENOMEM;
    return nullptr;
  }
  for (size_t i = 0; i < d.size(); ++i) list[i] = &d[i]->dev;
  if (num) *num = int(d.size());
  return list;
}

__asm__(".symver softhca_v11_ibv_free_device_list, ibv_free_device_list@@IBVERBS_1.1");
void softhca_v11_ibv_free_device_list(ibv_device** list) { free(list); }

__asm__(".symver softhca_v11_ibv_get_device_name, ibv_get_device_name@@IBVERBS_1.1");
const char* softhca_v11_ibv_get_device_name(ibv_device* dev) { return dev->name; }

__asm__(".symver softhca_v11_ibv_get_device_guid, ibv_get_device_guid@@IBVERBS_1.1");
__be64 softhca_v11_ibv_get_device_guid(ibv_device* dev) {
  return be64(node_guid(reinterpret_cast<Device*>(dev)->index));
}

int ibv_get_device_index(ibv_device* dev) { return reinterpret_cast<Device*>(dev)->index; }

__asm__(".symver softhca_v11_ibv_open_device, ibv_open_device@@IBVERBS_1.1");
ibv_context* softhca_v11_ibv_open_device(ibv_device* dev) {
  if (!Hca::get().acquire()) {
    errno = ENODEV;
    return nullptr;
  }
  auto* ctx = new Context{};
  ctx->dev = reinterpret_cast<Device*>(dev);
  verbs_context& v = ctx->vctx;
  v.sz = sizeof(verbs_context);
  v.query_port = sh_query_port;
  v.query_device_ex = sh_query_device_ex;
  v.create_cq_ex = sh_create_cq_ex;
  v.create_qp_ex = sh_create_qp_ex;
  v.create_srq_ex = sh_create_srq_ex;
  v.get_srq_num = sh_get_srq_num;
  ibv_context& c = v.context;
  c.device = dev;
  c.ops.poll_cq = sh_poll_cq;
  c.ops.req_notify_cq = sh_req_notify_cq;
  c.ops.post_send = sh_post_send;
  c.ops.post_recv = sh_post_recv;
  c.ops.post_srq_recv = sh_post_srq_recv;
  c.num_comp_vectors = 1;
  pthread_mutex_init(&c.mutex, nullptr);
  c.abi_compat = __VERBS_ABI_IS_EXTENDED;
  if (pipe2(ctx->async_pipe, O_CLOEXEC) != 0) {
    delete ctx;
    Hca::get().release();
    return nullptr;
  }
  c.async_fd = ctx->async_pipe[0];
  c.cmd_fd = -1;
  return &c;
}

__asm__(".symver softhca_v11_ibv_close_device, ibv_close_device@@IBVERBS_1.1");
int softhca_v11_ibv_close_device(ibv_context* c) {
  Context* ctx = ctx_of(c);
  close(ctx->async_pipe[0]);
  close(ctx->async_pipe[1]);
  delete ctx;
  Hca::get().release();
  return 0;
}

__asm__(".symver softhca_v11_ibv_query_device, ibv_query_device@@IBVERBS_1.1");
int softhca_v11_ibv_query_device(ibv_context* c, ibv_device_attr* a) {
  fill_dev_attr(ctx_of(c), a);
  return 0;
}

#undef ibv_query_port
__asm__(".symver softhca_v11_ibv_query_port, ibv_query_port@@IBVERBS_1.1");
int softhca_v11_ibv_query_port(ibv_context* c, uint8_t port, struct _compat_ibv_port_attr* a) {
  return sh_query_port(c, port, reinterpret_cast<ibv_port_attr*>(a), sizeof(ibv_port_attr));
}

__asm__(".symver softhca_v11_ibv_query_gid, ibv_query_gid@@IBVERBS_1.1");
int softhca_v11_ibv_query_gid(ibv_context* c, uint8_t port, int index, ibv_gid* gid) {
  if (port < 1 || port > config().num_ports) return -1;
  return port_gid_at(ctx_of(c)->dev->index, port, index, gid->raw) ? 0 : -1;
}

// rdma-core's (private) ibv_query_gid_type: its sysfs types, IBV_GID_TYPE_SYSFS_IB_ROCE_V1 (0,
// also InfiniBand) and IBV_GID_TYPE_SYSFS_ROCE_V2 (1).
int ibv_query_gid_type(ibv_context* c, uint8_t port, unsigned index, int* type) {
  int t;
  uint8_t gid[16];
  if (port < 1 || port > config().num_ports || !c ||
      !port_gid_at(ctx_of(c)->dev->index, port, int(index), gid, &t))
    return -1;
  *type = t == IBV_GID_TYPE_ROCE_V2 ? 1 : 0;
  return 0;
}

int _ibv_query_gid_ex(ibv_context* c, uint32_t port, uint32_t index, ibv_gid_entry* e,
                      uint32_t flags, size_t sz) {
  if (flags) return EINVAL;
  if (sz < sizeof *e) return EINVAL;
  int type;
  if (port < 1 || port > uint32_t(config().num_ports) ||
      !port_gid_at(ctx_of(c)->dev->index, int(port), int(index), e->gid.raw, &type))
    return ENODATA;
  e->gid_index = index;
  e->port_num = port;
  e->gid_type = uint32_t(type);
  e->ndev_ifindex = roce() ? 2 : 0;  // RoCE GIDs belong to a netdev (the model's: ifindex 2)
  return 0;
}

ssize_t _ibv_query_gid_table(ibv_context* c, ibv_gid_entry* e, size_t max, uint32_t flags,
                             size_t sz) {
  if (flags || sz < sizeof *e) return -EINVAL;
  size_t n = 0;
  for (int p = 1; p <= config().num_ports; ++p)
    for (int i = 0; i < gid_table_len(); ++i) {
      if (n == max) return -EINVAL;  // as rdma-core: the table does not fit
      if (_ibv_query_gid_ex(c, p, uint32_t(i), &e[n], 0, sz) == 0) n++;
    }
  return ssize_t(n);
}

__asm__(".symver softhca_v11_ibv_query_pkey, ibv_query_pkey@@IBVERBS_1.1");
int softhca_v11_ibv_query_pkey(ibv_context*, uint8_t port, int index, __be16* pkey) {
  if (port < 1 || port > config().num_ports || index != 0) return -1;
  *pkey = be16(0xffff);
  return 0;
}

int ibv_get_pkey_index(ibv_context*, uint8_t port, __be16 pkey) {
  if (port < 1 || port > config().num_ports) return -EINVAL;
  return (be16(pkey) & 0x7fff) == 0x7fff ? 0 : -ENOENT;
}

__asm__(".symver softhca_v11_ibv_alloc_pd, ibv_alloc_pd@@IBVERBS_1.1");
ibv_pd* softhca_v11_ibv_alloc_pd(ibv_context* c) {
  auto* pd = new Pd{};
  pd->pd.context = c;
  Hca& h = Hca::get();
  pd->pdn = h.next_obj++;
  pd->pd.handle = pd->pdn;
  std::unique_lock<std::shared_mutex> g(h.tables);
  h.pds[pd->pdn] = pd;
  return &pd->pd;
}

__asm__(".symver softhca_v11_ibv_dealloc_pd, ibv_dealloc_pd@@IBVERBS_1.1");
int softhca_v11_ibv_dealloc_pd(ibv_pd* pd) {
  Hca& h = Hca::get();
  {
    std::shared_lock<std::shared_mutex> g(h.tables);
    for (auto& [k, mr] : h.mrs)
      if (mr->mr.pd == pd) return EBUSY;
    for (auto& [k, qp] : h.qps)
      if (qp->qpx.qp_base.pd == pd) return EBUSY;
  }
  {
    std::unique_lock<std::shared_mutex> g(h.tables);
    h.pds.erase(reinterpret_cast<Pd*>(pd)->pdn);
  }
  delete reinterpret_cast<Pd*>(pd);
  return 0;
}

ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t len, uint64_t iova, unsigned access) {
  if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
      !(access & IBV_ACCESS_LOCAL_WRITE)) {
    errno = EINVAL;  // as the kernel demands
    return nullptr;
  }
  if (iova != uint64_t(uintptr_t(addr))) {
    errno = EOPNOTSUPP;  // the model addresses memory by virtual address
    return nullptr;
  }
  if (int e = pin_for_registration(addr, len, access)) {
    errno = e;
    return nullptr;
  }
  Hca& h = Hca::get();
  auto* mr = new Mr{};
  uint32_t key = next_mr_key();
  mr->mr.context = pd->context;
  mr->mr.pd = pd;
  mr->mr.addr = addr;
  mr->mr.length = len;
  mr->mr.handle = key;
  mr->mr.lkey = key;
  mr->mr.rkey = key;
  mr->access = int(access) | IBV_ACCESS_LOCAL_WRITE * 0;
  {
    std::unique_lock<std::shared_mutex> g(h.tables);
    h.mrs[key] = mr;
  }
  h.publish_mr(mr, true);
  return &mr->mr;
}

#undef ibv_reg_mr_iova
#undef ibv_reg_mr
ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t len, uint64_t iova, int access) {
  return ibv_reg_mr_iova2(pd, addr, len, iova, unsigned(access));
}

__asm__(".symver softhca_v11_ibv_reg_mr, ibv_reg_mr@@IBVERBS_1.1");
ibv_mr* softhca_v11_ibv_reg_mr(ibv_pd* pd, void* addr, size_t len, int access) {
  return ibv_reg_mr_iova2(pd, addr, len, uint64_t(uintptr_t(addr)), unsigned(access));
}

__asm__(".symver softhca_v11_ibv_dereg_mr, ibv_dereg_mr@@IBVERBS_1.1");
int softhca_v11_ibv_dereg_mr(ibv_mr* mr) {
  Hca& h = Hca::get();
  h.publish_mr(reinterpret_cast<Mr*>(mr), false);  // waits for direct accesses in progress
  {
    std::unique_lock<std::shared_mutex> g(h.tables);
    h.mrs.erase(mr->lkey);
  }
  unpin_registration(mr->addr, mr->length);
  delete reinterpret_cast<Mr*>(mr);
  return 0;
}

int ibv_rereg_mr(ibv_mr*, int, ibv_pd*, void*, size_t, int) { return IBV_REREG_MR_ERR_INPUT; }

ibv_mr* ibv_reg_dmabuf_mr(ibv_pd*, uint64_t, size_t, uint64_t, int, int) {
  errno = EOPNOTSUPP;
  return nullptr;
}

// ---- completion channels and CQs -------------------------------------------------------------
ibv_comp_channel* ibv_create_comp_channel(ibv_context* c) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return nullptr;
  auto* ch = new Chan{};
  ch->ch.context = c;
  ch->ch.fd = fds[0];
  ch->wfd = fds[1];
  fcntl(ch->wfd, F_SETFL, O_NONBLOCK);  // the model never blocks on a full channel
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fds[0]);
  ch->drain_fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // -1: stale bytes are skipped
  return &ch->ch;
}

int ibv_destroy_comp_channel(ibv_comp_channel* ch) {
  pthread_mutex_lock(&ch->context->mutex);
  int refs = ch->refcnt;
  pthread_mutex_unlock(&ch->context->mutex);
  if (refs) return EBUSY;
  auto* c = reinterpret_cast<Chan*>(ch);
  // Its CQs took their delayed events with them; this only makes sure none reaches a freed channel.
  if (exec_knobs().event_delay_ns) drop_delayed_events(c);
  close(ch->fd);
  close(c->wfd);
  if (c->drain_fd >= 0) close(c->drain_fd);
  delete c;
  return 0;
}

}  // extern "C"

namespace {

// As rdma-core's mlx5 create_cq: comp_mask FLAGS and PD only, flags SINGLE_THREADED and
// IGNORE_OVERRUN only (else EINVAL); the CQE size from mlx5dv_create_cq's cqe_size, else from
// MLX5_CQE_SIZE, else 64; only 64 and 128 are valid (else EINVAL).
Cq* make_cq(ibv_context* c, ibv_cq_init_attr_ex* attr, const mlx5dv_cq_init_attr* dv) {
  if (attr->cqe < 1 || attr->cqe > (1u << 22) - 1 ||
      (attr->comp_mask & ~uint32_t(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD)) ||
      ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
       (attr->flags & ~uint32_t(IBV_CREATE_CQ_ATTR_SINGLE_THREADED | IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)))) {
    errno = EINVAL;
    return nullptr;
  }
  int cqe_sz = 64;
  if (dv && (dv->comp_mask & MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE)) cqe_sz = dv->cqe_size;
  else if (const char* e = getenv("MLX5_CQE_SIZE")) cqe_sz = atoi(e);
  if (cqe_sz != 64 && cqe_sz != 128) {
    errno = EINVAL;
    return nullptr;
  }
  auto* cq = new Cq{};
  cq->ctx = ctx_of(c);
  cq->cnt = pow2(attr->cqe + 1);
  cq->cqe_sz = cqe_sz;
  cq->ignore_overrun = (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
                       (attr->flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN);
  cq->buf = static_cast<uint8_t*>(alloc_pages(size_t(cq->cnt) * cqe_sz + 64));
  if (!cq->buf) {
    delete cq;
    errno = ENOMEM;
    return nullptr;
  }
  cq->dbrec = reinterpret_cast<uint32_t*>(cq->buf + size_t(cq->cnt) * cqe_sz);
  for (uint32_t i = 0; i < cq->cnt; ++i) cq->cqe(i)->op_own = MLX5_CQE_INVALID << 4 | 1;
  cq->cqn = Hca::get().next_obj++;
  ibv_cq_ex& x = cq->cqx;
  x.context = c;
  x.cq_context = attr->cq_context;
  x.cqe = int(cq->cnt - 1);
  x.handle = cq->cqn;
  if (attr->channel) {
    x.channel = attr->channel;
    cq->chan = reinterpret_cast<Chan*>(attr->channel);
    pthread_mutex_lock(&c->mutex);
    attr->channel->refcnt++;
    pthread_mutex_unlock(&c->mutex);
  }
  pthread_mutex_init(&x.mutex, nullptr);
  pthread_cond_init(&x.cond, nullptr);
  {
    Hca& h = Hca::get();
    std::unique_lock<std::shared_mutex> g(h.tables);
    h.cqs[cq->cqn] = cq;
  }
  Hca::get().publish_cq(cq, true);
  x.start_poll = cqx_start;
  x.next_poll = cqx_next;
  x.end_poll = cqx_end;
  x.read_opcode = cqx_opcode;
  x.read_vendor_err = cqx_vendor_err;
  x.read_byte_len = cqx_byte_len;
  x.read_imm_data = cqx_imm;
  x.read_qp_num = cqx_qp_num;
  x.read_src_qp = cqx_src_qp;
  x.read_wc_flags = cqx_wc_flags;
  x.read_slid = cqx_slid;
  x.read_sl = cqx_sl;
  x.read_dlid_path_bits = cqx_dlid_path_bits;
  return cq;
}

}  // namespace

namespace {

ibv_srq* make_srq(ibv_context* c, ibv_srq_init_attr_ex* a) {
  if (!(a->comp_mask & IBV_SRQ_INIT_ATTR_PD) || a->attr.max_wr < 1 || a->attr.max_wr > 32767 ||
      a->attr.max_sge < 1 || a->attr.max_sge > 31 ||
      ((a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && a->srq_type != IBV_SRQT_BASIC)) {
    errno = EINVAL;
    return nullptr;
  }
  auto* s = new Srq{};
  s->ctx = ctx_of(c);
  s->cnt = pow2(a->attr.max_wr + 1);
  s->max_sge = a->attr.max_sge;
  s->stride = pow2(16 + 16 * s->max_sge);
  s->buf = static_cast<uint8_t*>(alloc_pages(size_t(s->cnt) * s->stride + 64));
  s->dbrec = reinterpret_cast<uint32_t*>(s->buf + size_t(s->cnt) * s->stride);
  s->wrid.resize(s->cnt);
  s->srqn = Hca::get().next_obj++;
  s->srq.context = c;
  s->srq.srq_context = a->srq_context;
  s->srq.pd = a->pd;
  s->srq.handle = s->srqn;
  s->limit = a->attr.srq_limit;
  pthread_mutex_init(&s->srq.mutex, nullptr);
  pthread_cond_init(&s->srq.cond, nullptr);
  a->attr.max_wr = s->cnt - 1;
  Hca& h = Hca::get();
  h.publish_srq(s, true);
  std::unique_lock<std::shared_mutex> g(h.tables);
  h.srqs[s->srqn] = s;
  return &s->srq;
}

// Required and optional attribute masks per transition (IB spec, C11 QP state table).
struct Transition {
  int req, opt;
};

bool transition(Kind k, ibv_qp_state from, ibv_qp_state to, Transition* t) {
  const int S = IBV_QP_STATE;
  auto set = [&](int r, int o) {
    t->req = S | r;
    t->opt = o;
    return true;
  };
  if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) return set(0, 0);
  switch (k) {
    case Kind::kRc:
      if (from == IBV_QPS_RESET && to == IBV_QPS_INIT)
        return set(IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0);
      if (from == IBV_QPS_INIT && to == IBV_QPS_INIT)
        return set(0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
      if (from == IBV_QPS_INIT && to == IBV_QPS_RTR)
        return set(IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
                   IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX);
      if (from == IBV_QPS_RTR && to == IBV_QPS_RTS)
        return set(IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                       IBV_QP_MAX_QP_RD_ATOMIC,
                   IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER | IBV_QP_ALT_PATH |
                       IBV_QP_PATH_MIG_STATE);
      if (from == IBV_QPS_RTS && to == IBV_QPS_RTS)
        return set(0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER |
                          IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE | IBV_QP_TIMEOUT);
      return false;
    case Kind::kUd:
      if (from == IBV_QPS_RESET && to == IBV_QPS_INIT)
        return set(IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, 0);
      if (from == IBV_QPS_INIT && to == IBV_QPS_INIT)
        return set(0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
      if (from == IBV_QPS_INIT && to == IBV_QPS_RTR) return set(0, IBV_QP_PKEY_INDEX | IBV_QP_QKEY);
      if (from == IBV_QPS_RTR && to == IBV_QPS_RTS)
        return set(IBV_QP_SQ_PSN, IBV_QP_CUR_STATE | IBV_QP_QKEY);
      if (from == IBV_QPS_RTS && to == IBV_QPS_RTS) return set(0, IBV_QP_CUR_STATE | IBV_QP_QKEY);
      if (from == IBV_QPS_SQE && to == IBV_QPS_RTS) return set(0, IBV_QP_CUR_STATE | IBV_QP_QKEY);
      return false;
    case Kind::kDci:
      if (from == IBV_QPS_RESET && to == IBV_QPS_INIT)
        return set(IBV_QP_PKEY_INDEX | IBV_QP_PORT, IBV_QP_ACCESS_FLAGS);
      if (from == IBV_QPS_INIT && to == IBV_QPS_RTR) return set(IBV_QP_PATH_MTU, IBV_QP_AV);
      if (from == IBV_QPS_RTR && to == IBV_QPS_RTS)
        return set(IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                       IBV_QP_MAX_QP_RD_ATOMIC,
                   IBV_QP_CUR_STATE);
      if (from == IBV_QPS_RTS && to == IBV_QPS_RTS) return set(0, IBV_QP_CUR_STATE | IBV_QP_TIMEOUT);
      return false;
    case Kind::kDct:
      if (from == IBV_QPS_RESET && to == IBV_QPS_INIT)
        return set(IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0);
      if (from == IBV_QPS_INIT && to == IBV_QPS_RTR)
        return set(IBV_QP_PATH_MTU | IBV_QP_MIN_RNR_TIMER, IBV_QP_AV);
      return false;
  }
  return false;
}

void init_qp_ops(Qp* qp) {
  ibv_qp_ex& x = qp->qpx;
  x.wr_atomic_cmp_swp = wr_cas;
  x.wr_atomic_fetch_add = wr_faa;
  x.wr_bind_mw = wr_unsupported_bind;
  x.wr_local_inv = wr_unsupported_inv;
  x.wr_rdma_read = wr_rdma_read;
  x.wr_rdma_write = wr_rdma_write;
  x.wr_rdma_write_imm = wr_rdma_write_imm;
  x.wr_send = wr_send;
  x.wr_send_imm = wr_send_imm;
  x.wr_send_inv = wr_unsupported_inv;
  x.wr_send_tso = wr_unsupported_tso;
  x.wr_set_ud_addr = wr_set_ud_addr;
  x.wr_set_xrc_srqn = wr_unsupported_xrc;
  x.wr_set_inline_data = wr_set_inline;
  x.wr_set_inline_data_list = wr_set_inline_list;
  x.wr_set_sge = wr_set_sge;
  x.wr_set_sge_list = wr_set_sge_list;
  x.wr_start = wr_start;
  x.wr_complete = wr_complete;
  x.wr_abort = wr_abort;
  x.wr_atomic_write = wr_unsupported_aw;
  qp->dvx.wr_set_dc_addr = dv_set_dc_addr;
  qp->dvx.wr_set_dc_addr_stream = dv_set_dc_addr_stream;
  qp->dvx.wr_raw_wqe = softhca_wr_raw_wqe;
}

ibv_qp* make_qp(ibv_context* c, ibv_qp_init_attr_ex* a, Kind kind, const mlx5dv_qp_init_attr* dv) {
  if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD) || !a->pd) {
    errno = EINVAL;
    return nullptr;
  }
  bool has_sq = kind != Kind::kDct;
  bool has_rq = (kind == Kind::kRc || kind == Kind::kUd) && !a->srq;
  ibv_qp_cap& cap = a->cap;
  if ((has_sq && (!a->send_cq || cap.max_send_wr < 1 || cap.max_send_wr > 32768 ||
                  cap.max_send_sge > 30 || cap.max_inline_data > 512)) ||
      (has_rq && (!a->recv_cq || cap.max_recv_wr > 32768 || cap.max_recv_sge > 30)) ||
      (kind == Kind::kDct && (!a->srq || !a->recv_cq))) {
    errno = EINVAL;
    return nullptr;
  }
  uint64_t ops = (a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) ? a->send_ops_flags : 0;
  uint64_t known = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |
                   IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |
                   IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
  if (ops & ~known) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  auto* qp = new Qp{};
  qp->ctx = ctx_of(c);
  qp->kind = kind;
  qp->pd = reinterpret_cast<Pd*>(a->pd);
  qp->scq = a->send_cq ? cq_of(a->send_cq) : nullptr;
  qp->rcq = a->recv_cq ? cq_of(a->recv_cq) : nullptr;
  qp->srq = a->srq ? reinterpret_cast<Srq*>(a->srq) : nullptr;
  qp->sig_all = a->sq_sig_all != 0;
  qp->send_ops_flags = dv && (dv->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS) ? dv->send_ops_flags : 0;
  if (dv && (dv->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS))
    qp->dv_create_flags = dv->create_flags;
  qp->max_inline = cap.max_inline_data;
  qp->max_send_sge = std::max<uint32_t>(cap.max_send_sge, 1);
  qp->max_recv_sge = std::max<uint32_t>(cap.max_recv_sge, 1);
  qp->dbrec = static_cast<uint32_t*>(alloc_pages(64));
  qp->bf = static_cast<uint8_t*>(alloc_pages(4096));
  if (has_sq) {
    uint32_t per = (units_max(qp) * 16 + 63) / 64;
    qp->sq_bbs = pow2(cap.max_send_wr * per);
    qp->sq_buf = static_cast<uint8_t*>(alloc_pages(size_t(qp->sq_bbs) * 64));
    qp->sq_wrid.resize(qp->sq_bbs);
    qp->sq_wqe_bbs.resize(qp->sq_bbs);
    qp->sq_wc_opcode.resize(qp->sq_bbs);
    cap.max_send_wr = qp->sq_bbs / per;
    cap.max_send_sge = qp->max_send_sge;
  }
  if (has_rq) {
    qp->rq_cnt = pow2(std::max<uint32_t>(cap.max_recv_wr, 1));
    qp->rq_stride = pow2(16 * qp->max_recv_sge);
    qp->rq_buf = static_cast<uint8_t*>(alloc_pages(size_t(qp->rq_cnt) * qp->rq_stride));
    qp->rq_wrid.resize(qp->rq_cnt);
    cap.max_recv_wr = qp->rq_cnt;
    cap.max_recv_sge = qp->rq_stride / 16;
  }
  Hca& h = Hca::get();
  uint16_t lid = port_lid(qp->ctx->dev->index, 1);
  uint32_t qpn = h.fab().alloc_qpn(lid, kind == Kind::kDct ? 0xdc : uint8_t(a->qp_type));
  if (!qpn) {
    errno = ENOMEM;
    return nullptr;
  }
  qp->rng.seed(config().seed ^ (uint64_t(qpn) * 0x9e3779b97f4a7c15ull));
  ibv_qp& b = qp->qpx.qp_base;
  b.context = c;
  b.qp_context = a->qp_context;
  b.pd = a->pd;
  b.send_cq = a->send_cq;
  b.recv_cq = a->recv_cq;
  b.srq = a->srq;
  b.handle = qpn;
  b.qp_num = qpn;
  b.state = IBV_QPS_RESET;
  b.qp_type = kind == Kind::kUd ? IBV_QPT_UD : kind == Kind::kRc ? IBV_QPT_RC : IBV_QPT_DRIVER;
  pthread_mutex_init(&b.mutex, nullptr);
  pthread_cond_init(&b.cond, nullptr);
  qp->qpx.comp_mask = 0;
  qp->attr.qp_state = IBV_QPS_RESET;
  qp->attr.cap = cap;
  if (dv && kind == Kind::kDct) qp->dc_key = dv->dc_init_attr.dct_access_key;
  decide_cqe_scatter(qp);
  init_qp_ops(qp);
  std::unique_lock<std::shared_mutex> g(h.tables);
  h.qps[qpn] = qp;
  return &b;
}

}  // namespace

// DevX CREATE_QP/CREATE_DCT (devx_obj.cc): a QP like make_qp's whose send/receive rings and
// doorbell record are the program's (umem) and whose BlueFlame page is its UAR page.
Qp* softhca::devx_make_qp(ibv_context* c, ibv_qp_init_attr_ex* a, Kind kind, uint64_t dc_key,
                 const DevxQueues& q) {
  mlx5dv_qp_init_attr dv{};
  if (kind == Kind::kDct) dv.dc_init_attr.dct_access_key = dc_key;
  ibv_qp* b = make_qp(c, a, kind, &dv);
  if (!b) return nullptr;
  Qp* qp = qp_of(b);
  if (!q.dbrec) return qp;  // a DCT: no queues of its own, the model's pages stay
  free_pages(qp->sq_buf, size_t(qp->sq_bbs) * 64);
  free_pages(qp->rq_buf, size_t(qp->rq_cnt) * qp->rq_stride);
  free_pages(qp->dbrec, 64);
  free_pages(qp->bf, 4096);
  qp->dbrec = q.dbrec;
  qp->bf = q.uar;
  qp->sq_buf = q.sq;
  qp->sq_bbs = q.sq ? q.sq_bbs : 0;
  qp->sq_wrid.assign(qp->sq_bbs, 0);
  qp->sq_wqe_bbs.assign(qp->sq_bbs, 0);
  qp->sq_wc_opcode.assign(qp->sq_bbs, 0);
  qp->rq_buf = q.rq;
  qp->rq_cnt = q.rq ? q.rq_cnt : 0;
  qp->rq_stride = q.rq ? q.rq_stride : 0;
  qp->rq_wrid.assign(qp->rq_cnt, 0);
  qp->max_recv_sge = q.rq ? q.rq_stride / 16 : qp->max_recv_sge;
  qp->scatter_req = qp->kind == Kind::kRc && q.cs_req;
  qp->scatter_resp = qp->kind == Kind::kRc && q.cs_res && q.rq;
  std::lock_guard<std::recursive_mutex> g(qp->mu);
  qp->devx = true;
  return qp;
}

extern "C" {

__asm__(".symver softhca_v11_ibv_create_cq, ibv_create_cq@@IBVERBS_1.1");
ibv_cq* softhca_v11_ibv_create_cq(ibv_context* c, int cqe, void* cq_context, ibv_comp_channel* ch, int vec) {
  if (vec < 0 || vec >= c->num_comp_vectors || cqe < 1) {
    errno = EINVAL;
    return nullptr;
  }
  ibv_cq_init_attr_ex a{};
  a.cqe = uint32_t(cqe);
  a.cq_context = cq_context;
  a.channel = ch;
  Cq* cq = make_cq(c, &a);
  if (!cq) return nullptr;
  return ibv_cq_ex_to_cq(&cq->cqx);
}

__asm__(".symver softhca_v11_ibv_resize_cq, ibv_resize_cq@@IBVERBS_1.1");
int softhca_v11_ibv_resize_cq(ibv_cq*, int) { return EOPNOTSUPP; }

__asm__(".symver softhca_v11_ibv_destroy_cq, ibv_destroy_cq@@IBVERBS_1.1");
int softhca_v11_ibv_destroy_cq(ibv_cq* ibcq) {
  Cq* cq = cq_of(ibcq);
  ibv_context* c = ibcq->context;
  Hca& h = Hca::get();
  {
    std::shared_lock<std::shared_mutex> g(h.tables);
    for (auto& [k, qp] : h.qps)
      if (qp->scq == cq || qp->rcq == cq) return EBUSY;  // the kernel's use count
  }
  {
    std::unique_lock<std::shared_mutex> g(h.tables);
    h.cqs.erase(cq->cqn);
  }
  if (Chan* ch = cq->chan) {
    // Events not yet read are discarded (the kernel drops them with the CQ), those still delayed
    // (SOFTHCA_EVENT_DELAY_US) first, so that none of them reaches the channel afterwards ...
    if (exec_knobs().event_delay_ns) drop_delayed_events(cq);
    int dropped = 0;
    {
      std::lock_guard<std::mutex> g(ch->mu);
      for (auto it = ch->events.begin(); it != ch->events.end();)
        if (*it == cq) it = ch->events.erase(it), dropped++;
        else ++it;
    }
    char b;
    while (dropped > 0 && ch->drain_fd >= 0 && read(ch->drain_fd, &b, 1) == 1) dropped--;
    // ... and, as rdma-core does, destroy waits until every event handed out has been acked.
    pthread_mutex_lock(&cq->cqx.mutex);
    while (cq->cqx.comp_events_completed != cq->events_reported)
      pthread_cond_wait(&cq->cqx.cond, &cq->cqx.mutex);
    pthread_mutex_unlock(&cq->cqx.mutex);
    pthread_mutex_lock(&c->mutex);
    ch->ch.refcnt--;
    pthread_mutex_unlock(&c->mutex);
  }
  h.publish_cq(cq, false);  // waits for sends being executed into it
  release_cq_uar(cq);
  free_pages(cq->buf, size_t(cq->cnt) * cq->cqe_sz + 64);
  delete cq;
  return 0;
}

__asm__(".symver softhca_v11_ibv_get_cq_event, ibv_get_cq_event@@IBVERBS_1.1");
int softhca_v11_ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** out, void** cq_context) {
  auto* ch = reinterpret_cast<Chan*>(channel);
  Hca::get().stop_polling();
  for (;;) {
    char b;
    if (read(ch->ch.fd, &b, 1) != 1) return -1;  // errno from read (EAGAIN when non-blocking)
    Cq* cq;
    {
      std::lock_guard<std::mutex> g(ch->mu);
      if (ch->events.empty()) continue;  // the byte of an event discarded with its CQ
      cq = ch->events.front();
      ch->events.pop_front();
    }
    pthread_mutex_lock(&cq->cqx.mutex);
    cq->events_reported++;
    pthread_mutex_unlock(&cq->cqx.mutex);
    *out = ibv_cq_ex_to_cq(&cq->cqx);
    *cq_context = cq->cqx.cq_context;
    return 0;
  }
}

__asm__(".symver softhca_v11_ibv_ack_cq_events, ibv_ack_cq_events@@IBVERBS_1.1");
void softhca_v11_ibv_ack_cq_events(ibv_cq* cq, unsigned n) {
  pthread_mutex_lock(&cq->mutex);
  cq->comp_events_completed += n;
  pthread_cond_signal(&cq->cond);
  pthread_mutex_unlock(&cq->mutex);
}

__asm__(".symver softhca_v11_ibv_create_srq, ibv_create_srq@@IBVERBS_1.1");
ibv_srq* softhca_v11_ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* a) {
  ibv_srq_init_attr_ex x{};
  x.srq_context = a->srq_context;
  x.attr = a->attr;
  x.comp_mask = IBV_SRQ_INIT_ATTR_PD;
  x.pd = pd;
  ibv_srq* s = make_srq(pd->context, &x);
  if (s) a->attr = x.attr;
  return s;
}

__asm__(".symver softhca_v11_ibv_modify_srq, ibv_modify_srq@@IBVERBS_1.1");
int softhca_v11_ibv_modify_srq(ibv_srq* srq, ibv_srq_attr* a, int mask) {
  Srq* s = reinterpret_cast<Srq*>(srq);
  if (mask & IBV_SRQ_MAX_WR) return EINVAL;  // resizing is not modelled
  if (mask & IBV_SRQ_LIMIT) s->limit = a->srq_limit;
  return 0;
}

__asm__(".symver softhca_v11_ibv_query_srq, ibv_query_srq@@IBVERBS_1.1");
int softhca_v11_ibv_query_srq(ibv_srq* srq, ibv_srq_attr* a) {
  Srq* s = reinterpret_cast<Srq*>(srq);
  a->max_wr = s->cnt - 1;
  a->max_sge = s->max_sge;
  a->srq_limit = s->limit;
  return 0;
}

__asm__(".symver softhca_v11_ibv_destroy_srq, ibv_destroy_srq@@IBVERBS_1.1");
int softhca_v11_ibv_destroy_srq(ibv_srq* srq) {
  Srq* s = reinterpret_cast<Srq*>(srq);
  Hca& h = Hca::get();
  {
    std::shared_lock<std::shared_mutex> g(h.tables);
    for (auto& [k, qp] : h.qps)
      if (qp->srq == s) return EBUSY;
  }
  {
    std::unique_lock<std::shared_mutex> g(h.tables);
    h.srqs.erase(s->srqn);
  }
  h.publish_srq(s, false);  // waits for sends being executed into it
  if (!s->devx) free_pages(s->buf, size_t(s->cnt) * s->stride + 64);
  delete s;
  return 0;
}

__asm__(".symver softhca_v11_ibv_create_qp, ibv_create_qp@@IBVERBS_1.1");
ibv_qp* softhca_v11_ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* a) {
  ibv_qp_init_attr_ex x{};
  memcpy(&x, a, sizeof *a);
  x.comp_mask = IBV_QP_INIT_ATTR_PD;
  x.pd = pd;
  Kind k;
  if (a->qp_type == IBV_QPT_RC) k = Kind::kRc;
  else if (a->qp_type == IBV_QPT_UD) k = Kind::kUd;
  else {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  ibv_qp* q = make_qp(pd->context, &x, k, nullptr);
  if (q) a->cap = x.cap;
  return q;
}

ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* qp) { return &qp_of(qp)->qpx; }

__asm__(".symver softhca_v11_ibv_query_qp, ibv_query_qp@@IBVERBS_1.1");
int softhca_v11_ibv_query_qp(ibv_qp* ibqp, ibv_qp_attr* attr, int, ibv_qp_init_attr* init) {
  Qp* qp = qp_of(ibqp);
  std::lock_guard<std::recursive_mutex> g(qp->mu);
  *attr = qp->attr;
  attr->cur_qp_state = qp->attr.qp_state;
  memset(init, 0, sizeof *init);
  init->qp_context = ibqp->qp_context;
  init->send_cq = ibqp->send_cq;
  init->recv_cq = ibqp->recv_cq;
  init->srq = ibqp->srq;
  init->cap = qp->attr.cap;
  init->qp_type = ibqp->qp_type;
  init->sq_sig_all = qp->sig_all;
  return 0;
}

__asm__(".symver softhca_v11_ibv_modify_qp, ibv_modify_qp@@IBVERBS_1.1");
// A QP's address (IBV_QP_AV) as the kernel checks it: a RoCE port or one that requires a GRH
// refuses an address without one, and the source GID index must exist on the port.
bool address_acceptable(const Qp* qp, const ibv_ah_attr& ah) {
  if (!ah.is_global) return !grh_required();
  uint8_t sgid[16];
  const int port = ah.port_num ? ah.port_num : qp->attr.port_num ? qp->attr.port_num : 1;
  return port_gid_at(qp->ctx->dev->index, port, ah.grh.sgid_index, sgid);
}

int softhca_v11_ibv_modify_qp(ibv_qp* ibqp, ibv_qp_attr* a, int mask) {
  Qp* qp = qp_of(ibqp);
  Hca& h = Hca::get();
  std::shared_lock<std::shared_mutex> g(h.tables);
  std::lock_guard<std::recursive_mutex> q(qp->mu);
  ibv_qp_state from = qp->attr.qp_state;
  if ((mask & IBV_QP_CUR_STATE) && a->cur_qp_state != from) return EINVAL;
  ibv_qp_state to = (mask & IBV_QP_STATE) ? a->qp_state : from;
  Transition t;
  if (!transition(qp->kind, from, to, &t)) return EINVAL;
  if ((mask & t.req) != t.req || (mask & ~(t.req | t.opt))) return EINVAL;
  if ((mask & IBV_QP_PORT) && (a->port_num < 1 || a->port_num > config().num_ports)) return EINVAL;
  if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index != 0) return EINVAL;
  if ((mask & IBV_QP_PATH_MTU) && (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096)) return EINVAL;
  if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7) return EINVAL;
  if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7) return EINVAL;
  if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31) return EINVAL;
  if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31) return EINVAL;
  // The kernel refuses more than the device has (max_qp_init_rd_atom, max_qp_rd_atom).
  if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > config().max_rd_atomic) return EINVAL;
  if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > config().max_rd_atomic) return EINVAL;
  if ((mask & IBV_QP_AV) && a->ah_attr.port_num && a->ah_attr.port_num > config().num_ports) return EINVAL;
  if ((mask & IBV_QP_AV) && !address_acceptable(qp, a->ah_attr)) return EINVAL;
  ibv_qp_attr& s = qp->attr;
  if (mask & IBV_QP_PORT) s.port_num = a->port_num;
  if (mask & IBV_QP_PKEY_INDEX) s.pkey_index = a->pkey_index;
  if (mask & IBV_QP_ACCESS_FLAGS) s.qp_access_flags = a->qp_access_flags;
  if (mask & IBV_QP_QKEY) s.qkey = a->qkey;
  if (mask & IBV_QP_AV) s.ah_attr = a->ah_attr;
  if (mask & IBV_QP_PATH_MTU) s.path_mtu = a->path_mtu;
  if (mask & IBV_QP_DEST_QPN) s.dest_qp_num = a->dest_qp_num & 0xffffff;
  if (mask & IBV_QP_RQ_PSN) s.rq_psn = a->rq_psn & 0xffffff, qp->rc_epsn = s.rq_psn;
  if (mask & IBV_QP_SQ_PSN) s.sq_psn = a->sq_psn & 0xffffff, qp->next_psn = s.sq_psn;
  if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) s.max_dest_rd_atomic = a->max_dest_rd_atomic;
  if (mask & IBV_QP_MAX_QP_RD_ATOMIC) s.max_rd_atomic = a->max_rd_atomic;
  if (mask & IBV_QP_MIN_RNR_TIMER) s.min_rnr_timer = a->min_rnr_timer;
  if (mask & IBV_QP_TIMEOUT) s.timeout = a->timeout;
  if (mask & IBV_QP_RETRY_CNT) s.retry_cnt = a->retry_cnt;
  if (mask & IBV_QP_RNR_RETRY) s.rnr_retry = a->rnr_retry;
  s.qp_state = to;
  ibqp->state = to;
  if (to == IBV_QPS_RESET) {
    qp->out.clear();
    qp->sq_pi = qp->sq_ci = qp->hw_ci = 0;
    qp->rq_pi = qp->rq_ci = 0;
    forget_partial_sends(qp);
    h.fab().lock_direct(h.fab().node());
    h.fab().qpn_entry(ibqp->qp_num).rq_hw_ci = 0;
    h.fab().unlock_direct(h.fab().node());
    qp->dbrec[0] = qp->dbrec[1] = 0;
    qp->dc_epsn.clear();
    qp->rnr_resend_at = 0;
  } else if (to == IBV_QPS_ERR) {
    h.flush_qp(qp);
  } else if (to == IBV_QPS_RTS) {
    h.ring_sq(qp);  // WQEs posted before RTS start now
  }
  h.publish_qp(qp);
  return 0;
}

__asm__(".symver softhca_v11_ibv_destroy_qp, ibv_destroy_qp@@IBVERBS_1.1");
int softhca_v11_ibv_destroy_qp(ibv_qp* ibqp) {
  Qp* qp = qp_of(ibqp);
  Hca& h = Hca::get();
  {
    std::lock_guard<std::recursive_mutex> q(qp->mu);
    qp->attr.qp_state = IBV_QPS_RESET;
    h.publish_qp(qp);  // no direct access reaches it from now on
  }
  {
    std::unique_lock<std::shared_mutex> g(h.tables);
    h.qps.erase(ibqp->qp_num);
  }
  forget_partial_sends(qp);  // the model no longer finds it: nothing adds to them now
  h.fab().free_qpn(ibqp->qp_num);
  if (!qp->devx) {  // a DevX QP's queues, doorbell record and UAR page are the program's
    untrap_bf_page(qp);
    free_pages(qp->sq_buf, size_t(qp->sq_bbs) * 64);
    free_pages(qp->rq_buf, size_t(qp->rq_cnt) * qp->rq_stride);
    free_pages(qp->dbrec, 64);
    free_pages(qp->bf, 4096);
  }
  delete qp;
  return 0;
}

__asm__(".symver softhca_v11_ibv_create_ah, ibv_create_ah@@IBVERBS_1.1");
// As rdma-core's mlx5 provider: a RoCE port or one that requires a GRH refuses an address
// without one (EINVAL); the source GID index must exist; the vector is built as the provider
// builds it (RoCE: GRH bit reserved and clear, rlid the UDP source port, priority in bits 1-3 of
// stat_rate_sl, the MAC the kernel resolves from the destination GID).
ibv_ah* softhca_v11_ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  uint8_t sgid[16];
  if (attr->port_num < 1 || attr->port_num > config().num_ports ||
      (!attr->is_global && (grh_required() || !attr->dlid)) ||
      (attr->is_global &&
       !port_gid_at(ctx_of(pd->context)->dev->index, attr->port_num, attr->grh.sgid_index, sgid))) {
    errno = EINVAL;
    return nullptr;
  }
  auto* ah = new Ah{};
  ah->ah.context = pd->context;
  ah->ah.pd = pd;
  ah->ah.handle = Hca::get().next_obj++;
  ah->attr = *attr;
  if (roce()) {
    ah->av.rlid = be16(uint16_t(0xc000 | (Hca::get().next_obj.load() & 0x3fff)));
    ah->av.stat_rate_sl = uint8_t((attr->sl & 7) << 1);
    port_mac(lid_of_gid(attr->grh.dgid.raw), ah->av.rmac);
  } else {
    ah->av.rlid = be16(attr->dlid);
    ah->av.stat_rate_sl = attr->sl & 0xf;
    ah->av.fl_mlid = attr->src_path_bits & 0x7f;
  }
  if (attr->is_global) {
    ah->av.grh_gid_fl = be32((roce() ? 0 : 1u << 30) | uint32_t(attr->grh.sgid_index) << 20 |
                             (attr->grh.flow_label & 0xfffff));
    ah->av.hop_limit = attr->grh.hop_limit;
    ah->av.tclass = attr->grh.traffic_class;
    memcpy(ah->av.rgid, attr->grh.dgid.raw, 16);
  }
  return &ah->ah;
}

__asm__(".symver softhca_v11_ibv_destroy_ah, ibv_destroy_ah@@IBVERBS_1.1");
int softhca_v11_ibv_destroy_ah(ibv_ah* ah) {
  delete reinterpret_cast<Ah*>(ah);
  return 0;
}

int ibv_init_ah_from_wc(ibv_context*, uint8_t port, ibv_wc* wc, ibv_grh* grh, ibv_ah_attr* ah) {
  memset(ah, 0, sizeof *ah);
  ah->dlid = wc->slid;
  ah->sl = wc->sl;
  ah->src_path_bits = wc->dlid_path_bits;
  ah->port_num = port;
  if (wc->wc_flags & IBV_WC_GRH) {
    ah->is_global = 1;
    memcpy(ah->grh.dgid.raw, grh->sgid.raw, 16);
    ah->grh.hop_limit = 0xff;
    ah->grh.traffic_class = 0;
  }
  return 0;
}

ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port) {
  ibv_ah_attr a;
  if (ibv_init_ah_from_wc(pd->context, port, wc, grh, &a)) return nullptr;
  return ibv_create_ah(pd, &a);
}

__asm__(".symver softhca_v11_ibv_attach_mcast, ibv_attach_mcast@@IBVERBS_1.1");
int softhca_v11_ibv_attach_mcast(ibv_qp*, const ibv_gid*, uint16_t) { return EOPNOTSUPP; }
__asm__(".symver softhca_v11_ibv_detach_mcast, ibv_detach_mcast@@IBVERBS_1.1");
int softhca_v11_ibv_detach_mcast(ibv_qp*, const ibv_gid*, uint16_t) { return EOPNOTSUPP; }

__asm__(".symver softhca_v11_ibv_get_async_event, ibv_get_async_event@@IBVERBS_1.1");
int softhca_v11_ibv_get_async_event(ibv_context* c, ibv_async_event* ev) {
  ssize_t n = read(c->async_fd, ev, sizeof *ev);
  return n == sizeof *ev ? 0 : -1;
}
__asm__(".symver softhca_v11_ibv_ack_async_event, ibv_ack_async_event@@IBVERBS_1.1");
void softhca_v11_ibv_ack_async_event(ibv_async_event*) {}

int ibv_fork_init(void) { return 0; }
enum ibv_fork_status ibv_is_fork_initialized(void) { return IBV_FORK_UNNEEDED; }
int ibv_dontfork_range(void*, size_t) { return 0; }
int ibv_dofork_range(void*, size_t) { return 0; }

const char* ibv_wc_status_str(ibv_wc_status s) {
  static const char* const names[] = {
      "success", "local length error", "local QP operation error", "local EE context operation error",
      "local protection error", "Work Request Flushed Error", "memory management operation error",
      "bad response error", "local access error", "remote invalid request error",
      "remote access error", "remote operation error", "transport retry counter exceeded",
      "RNR retry counter exceeded", "local RDD violation error", "remote invalid RD request",
      "aborted error", "invalid EE context number", "invalid EE context state",
      "fatal error", "response timeout error", "general error", "TM error", "TM rendezvous error"};
  if (unsigned(s) < sizeof names / sizeof *names) return names[s];
  return "unknown";
}

const char* ibv_node_type_str(ibv_node_type t) {
  switch (t) {
    case IBV_NODE_CA: return "InfiniBand channel adapter";
    case IBV_NODE_SWITCH: return "InfiniBand switch";
    case IBV_NODE_ROUTER: return "InfiniBand router";
    case IBV_NODE_RNIC: return "iWARP NIC";
    case IBV_NODE_USNIC: return "usNIC";
    case IBV_NODE_USNIC_UDP: return "usNIC UDP";
    case IBV_NODE_UNSPECIFIED: return "unspecified";
    default: return "unknown";
  }
}

const char* ibv_port_state_str(ibv_port_state s) {
  static const char* const names[] = {"PORT_NOP", "PORT_DOWN", "PORT_INIT", "PORT_ARMED",
                                      "PORT_ACTIVE", "PORT_ACTIVE_DEFER"};
  return unsigned(s) < 6 ? names[s] : "unknown";
}

const char* ibv_event_type_str(ibv_event_type e) {
  static const char* const names[] = {
      "CQ error", "local work queue catastrophic error", "invalid request local work queue error",
      "local access violation work queue error", "communication established", "send queue drained",
      "path migrated", "path migration request error", "local catastrophic error", "port active",
      "port error", "LID change", "P_Key change", "SM change", "SRQ catastrophic error",
      "SRQ limit reached", "last WQE reached", "client reregistration", "GID table change",
      "WQ fatal"};
  return unsigned(e) < sizeof names / sizeof *names ? names[e] : "unknown";
}

int ibv_rate_to_mult(ibv_rate r) {
  switch (r) {
    case IBV_RATE_2_5_GBPS: return 1;
    case IBV_RATE_5_GBPS: return 2;
    case IBV_RATE_10_GBPS: return 4;
    case IBV_RATE_20_GBPS: return 8;
    case IBV_RATE_30_GBPS: return 12;
    case IBV_RATE_40_GBPS: return 16;
    case IBV_RATE_60_GBPS: return 24;
    case IBV_RATE_80_GBPS: return 32;
    case IBV_RATE_120_GBPS: return 48;
    default: return -1;
  }
}

ibv_rate mult_to_ibv_rate(int m) {
  switch (m) {
    case 1: return IBV_RATE_2_5_GBPS;
    case 2: return IBV_RATE_5_GBPS;
    case 4: return IBV_RATE_10_GBPS;
    case 8: return IBV_RATE_20_GBPS;
    case 12: return IBV_RATE_30_GBPS;
    case 16: return IBV_RATE_40_GBPS;
    case 24: return IBV_RATE_60_GBPS;
    case 32: return IBV_RATE_80_GBPS;
    case 48: return IBV_RATE_120_GBPS;
    default: return IBV_RATE_MAX;
  }
}

int ibv_rate_to_mbps(ibv_rate r) {
  static const int t[] = {-1, 2500, 10000, 30000, 5000, 20000, 40000, 60000, 80000, 120000, 14062,
                          56250, 112500, 168750, 25781, 103125, 206250, 309375, 28125, 50000,
                          400000, 600000, 800000, 1200000};
  return unsigned(r) < sizeof t / sizeof *t ? t[r] : -1;
}

ibv_rate mbps_to_ibv_rate(int mbps) {
  for (int r = 1; r < 24; ++r)
    if (ibv_rate_to_mbps(ibv_rate(r)) == mbps) return ibv_rate(r);
  return IBV_RATE_MAX;
}

int ibv_resolve_eth_l2_from_gid(ibv_context*, ibv_ah_attr*, uint8_t*, uint16_t*) { return EOPNOTSUPP; }

int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, size);
  close(fd);
  if (n <= 0) return -1;
  if (size_t(n) < size && buf[n - 1] == '\n') buf[--n] = 0;
  else if (size_t(n) < size) buf[n] = 0;
  return int(n);
}

const char* ibv_get_sysfs_path(void) { return "/sys"; }

int ibv_query_ece(ibv_qp*, ibv_ece*) { return EOPNOTSUPP; }
int ibv_set_ece(ibv_qp*, ibv_ece*) { return EOPNOTSUPP; }
int ibv_query_qp_data_in_order(ibv_qp*, ibv_wr_opcode, uint32_t) {
  return 1;  // the model places a message's data in order, so polling the last byte is safe
}

ibv_context* ibv_import_device(int) { errno = EOPNOTSUPP; return nullptr; }
ibv_pd* ibv_import_pd(ibv_context*, uint32_t) { errno = EOPNOTSUPP; return nullptr; }
void ibv_unimport_pd(ibv_pd*) {}
ibv_mr* ibv_import_mr(ibv_pd*, uint32_t) { errno = EOPNOTSUPP; return nullptr; }
void ibv_unimport_mr(ibv_mr*) {}
ibv_dm* ibv_import_dm(ibv_context*, uint32_t) { errno = EOPNOTSUPP; return nullptr; }
void ibv_unimport_dm(ibv_dm*) {}

// Kernel-ABI conversion helpers: the model has no kernel ABI; they copy nothing.
void ibv_copy_ah_attr_from_kern(void*, void*) {}
void ibv_copy_qp_attr_from_kern(void*, void*) {}
void ibv_copy_path_rec_from_kern(void*, void*) {}
void ibv_copy_path_rec_to_kern(void*, void*) {}

}  // extern "C"

// ---- entry points for libmlx5.so.1 (exported under SOFTHCA_PRIVATE) ------------------------
extern "C" {

bool softhca_is_softhca_device(ibv_device* d) {
  for (Device* x : devices())
    if (&x->dev == d) return true;
  return false;
}

ibv_cq_ex* softhca_create_cq_dv(ibv_context* c, ibv_cq_init_attr_ex* a, mlx5dv_cq_init_attr* dv) {
  if (!softhca_is_softhca_device(c->device)) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  Cq* cq = make_cq(c, a, dv);
  return cq ? &cq->cqx : nullptr;
}

ibv_qp* softhca_create_qp_dv(ibv_context* c, ibv_qp_init_attr_ex* a, mlx5dv_qp_init_attr* dv) {
  Kind k;
  if (dv && (dv->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_DC)) {
    if (a->qp_type != IBV_QPT_DRIVER) {
      errno = EINVAL;
      return nullptr;
    }
    if (dv->dc_init_attr.dc_type == MLX5DV_DCTYPE_DCT) k = Kind::kDct;
    else if (dv->dc_init_attr.dc_type == MLX5DV_DCTYPE_DCI) k = Kind::kDci;
    else {
      errno = EINVAL;
      return nullptr;
    }
  } else if (a->qp_type == IBV_QPT_RC) {
    k = Kind::kRc;
  } else if (a->qp_type == IBV_QPT_UD) {
    k = Kind::kUd;
  } else {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  uint64_t dv_known = MLX5DV_QP_INIT_ATTR_MASK_DC | MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS |
                      MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS;
  if (int e = check_dv_create_flags(dv)) {
    errno = e;
    return nullptr;
  }
  if (dv && ((dv->comp_mask & ~dv_known) ||
             ((dv->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS) &&
              (dv->send_ops_flags & ~uint64_t(MLX5DV_QP_EX_WITH_RAW_WQE))))) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  return make_qp(c, a, k, dv);
}

mlx5dv_qp_ex* softhca_qp_ex_to_dv(ibv_qp_ex* x) { return &qp_of(x)->dvx; }

int softhca_init_obj(mlx5dv_obj* obj, uint64_t type) {
  if (type & ~uint64_t(MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ | MLX5DV_OBJ_AH | MLX5DV_OBJ_PD | MLX5DV_OBJ_SRQ))
    return EOPNOTSUPP;
  if (type & MLX5DV_OBJ_QP) {
    Qp* qp = qp_of(obj->qp.in);
    mlx5dv_qp* o = obj->qp.out;
    o->dbrec = reinterpret_cast<__be32*>(qp->dbrec);
    o->sq.buf = qp->sq_buf;
    o->sq.wqe_cnt = qp->sq_bbs;
    o->sq.stride = 64;
    o->rq.buf = qp->rq_buf;
    o->rq.wqe_cnt = qp->rq_cnt;
    o->rq.stride = qp->rq_stride;
    o->bf.reg = qp->bf;
    o->bf.size = 256;
    o->comp_mask &= MLX5DV_QP_MASK_RAW_QP_HANDLES;  // nothing else is reported
    if (o->comp_mask & MLX5DV_QP_MASK_RAW_QP_HANDLES) {
      o->sqn = qp->qpx.qp_base.qp_num;
      o->rqn = qp->qpx.qp_base.qp_num;
    }
    if (qp->sq_buf) trap_bf_page(qp);
  }
  if (type & MLX5DV_OBJ_CQ) {
    Cq* cq = cq_of(obj->cq.in);
    mlx5dv_cq* o = obj->cq.out;
    o->buf = cq->buf;
    o->dbrec = reinterpret_cast<__be32*>(cq->dbrec);
    o->cqe_cnt = cq->cnt;
    o->cqe_size = cq->cqe_sz;
    o->cq_uar = cq_uar_page(cq);  // arm doorbells are noticed like BlueFlame stores
    o->cqn = cq->cqn;
    o->comp_mask = 0;
    std::lock_guard<std::mutex> g(cq->cons);
    cq->dv_owned = true;
  }
  if (type & MLX5DV_OBJ_SRQ) {
    Srq* s = reinterpret_cast<Srq*>(obj->srq.in);
    mlx5dv_srq* o = obj->srq.out;
    o->buf = s->buf;
    o->dbrec = reinterpret_cast<__be32*>(s->dbrec);
    o->stride = s->stride;
    o->head = 0;
    o->tail = s->cnt - 1;
    if (o->comp_mask & MLX5DV_SRQ_MASK_SRQN) o->srqn = s->srqn;
  }
  if (type & MLX5DV_OBJ_AH) {
    obj->ah.out->av = &reinterpret_cast<Ah*>(obj->ah.in)->av;
    obj->ah.out->comp_mask = 0;
  }
  if (type & MLX5DV_OBJ_PD) {
    obj->pd.out->pdn = reinterpret_cast<Pd*>(obj->pd.in)->pdn;
    obj->pd.out->comp_mask = 0;
  }
  return 0;
}

int softhca_query_device_dv(ibv_context* c, mlx5dv_context* a) {
  if (!softhca_is_softhca_device(c->device)) return EOPNOTSUPP;
  uint64_t want = a->comp_mask;
  memset(reinterpret_cast<uint8_t*>(a) + offsetof(mlx5dv_context, flags), 0,
         sizeof *a - offsetof(mlx5dv_context, flags));
  a->version = 1;
  a->flags = MLX5DV_CONTEXT_FLAGS_CQE_V1;
  a->comp_mask = want & MLX5DV_CONTEXT_MASK_NUM_LAG_PORTS;
  a->num_lag_ports = 0;
  return 0;
}

void softhca_set_devx(ibv_context* c, bool on) { ctx_of(c)->devx = on; }

}  // extern "C"

extern "C" int softhca_num_ports(void) { return config().num_ports; }
extern "C" int softhca_atomic_host_endian(void) { return config().atomic_host_endian ? 1 : 0; }
extern "C" int softhca_masked_atomics(void) { return config().masked_atomics ? 1 : 0; }
extern "C" unsigned softhca_ext_atomic_max(void) { return config().ext_atomic_max; }
extern "C" int softhca_pcie_atomics(void) { return config().pcie_atomics ? 1 : 0; }
extern "C" int softhca_log_max_msg(void) { return int(config().log_max_msg); }
extern "C" int softhca_log_max_rd_atomic(void) { return __builtin_ctz(config().max_rd_atomic); }
extern "C" int softhca_compact_av(void) { return config().compact_av ? 1 : 0; }
extern "C" int softhca_devx_allowed(void) { return config().devx ? 1 : 0; }
// GID `index` of port `port` of device `dev` as ibv_query_gid gives it, and its type
// (IBV_GID_TYPE_*): what libsofthca_kernel.so presents as the port's sysfs gids/ and gid_attrs/
// files. `out` may be null for the type alone (no fabric join). 0, or -1 with errno EINVAL where
// there is no such entry.
extern "C" int softhca_port_gid(int dev, int port, int index, uint8_t* out, int* type) {
  if (dev < 0 || dev >= config().num_devices || port < 1 || port > config().num_ports ||
      !port_gid_at(dev, port, index, out, type)) {
    errno = EINVAL;
    return -1;
  }
  return 0;
}
