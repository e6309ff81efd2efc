#include "recv.h"

#include <algorithm>
#include <cstring>

#include "hca.h"

namespace softhca {

RecvQueue rq_of(QpnEntry& e) {
  RecvQueue q;
  q.buf = e.rq_buf;
  q.dbrec = e.rq_dbrec;
  q.cnt = e.rq_cnt;
  q.stride = e.rq_stride;
  q.seg_off = 0;
  q.nsegs = e.rq_stride / 16;
  q.hw_ci = &e.rq_hw_ci;
  return q;
}

RecvQueue rq_of(SrqSlot& s) {
  RecvQueue q;
  q.buf = s.buf;
  q.dbrec = s.dbrec;
  q.cnt = s.cnt;
  q.stride = s.stride;
  q.seg_off = 16;  // behind the next-WQE segment
  q.nsegs = s.max_sge;
  q.srq = true;
  q.hw_ci = &s.hw_ci;
  return q;
}

bool peek_recv(Fabric& f, uint32_t node, const RecvQueue& q, RecvWqe* out, const Fabric::Copy* also) {
  if (!q.buf || !q.cnt || q.nsegs == 0 || q.nsegs > 64) return false;
  // The doorbell record and the WQE at the consumer counter (read whether posted or not) at once.
  uint32_t posted;
  const uint32_t ci = *q.hw_ci, slot = ci & (q.cnt - 1);
  mlx5_wqe_data_seg segs[64];
  Fabric::Copy c[3] = {{q.dbrec, &posted, 4},
                       {q.buf + uint64_t(slot) * q.stride + q.seg_off, segs, q.nsegs * 16u}};
  if (also) c[2] = *also;
  if (!f.direct_readv(node, c, also ? 3 : 2)) return false;
  if ((ci & 0xffff) == (be32(posted) & 0xffff)) return false;
  out->idx = q.srq ? slot : (ci & 0xffff);
  out->segs.clear();
  for (uint32_t i = 0; i < q.nsegs && be32(segs[i].lkey) != MLX5_INVALID_LKEY; ++i)
    out->segs.push_back(segs[i]);
  return true;
}

uint8_t plan_scatter(const RecvWqe& w, uint32_t len, uint32_t skip, const LkeyCheck& mr_ok,
                     std::vector<ScatterPiece>* out) {
  uint32_t done = 0;
  for (const auto& d : w.segs) {
    uint32_t cap = be32(d.byte_count);
    uint64_t addr = be64(d.addr);
    if (!mr_ok(be32(d.lkey), addr, cap)) return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
    uint32_t s = std::min(skip, cap);
    skip -= s;
    uint32_t n = std::min(cap - s, len - done);
    if (n) out->push_back(ScatterPiece{addr + s, done, n});
    done += n;
    if (done == len && skip == 0) return 0;  // the buffers after it are not looked at
  }
  return done == len && skip == 0 ? 0 : MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
}

uint8_t recv_room(const RecvWqe& w, uint32_t len) {
  uint64_t room = 0;
  for (const auto& d : w.segs) room += be32(d.byte_count);
  return room >= len ? 0 : MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
}

void make_grh(uint8_t grh[40], uint32_t payload_len, const uint8_t sgid[16], const uint8_t dgid[16]) {
  memset(grh, 0, 40);
  grh[0] = 0x60;  // IPv6-style version 6
  uint16_t plen = be16(uint16_t(payload_len));
  memcpy(grh + 4, &plen, 2);
  grh[6] = 0x1b;  // next header: IBA transport
  grh[7] = 64;    // hop limit
  memcpy(grh + 8, sgid, 16);
  memcpy(grh + 24, dgid, 16);
}

mlx5_cqe64 resp_cqe(uint32_t qpn, uint32_t srqn, uint8_t op, uint32_t idx, uint32_t len,
                    uint32_t imm, uint32_t src_qp, uint16_t slid, bool grh, bool se) {
  mlx5_cqe64 c{};
  c.sop_drop_qpn = be32(qpn);
  c.wqe_counter = be16(uint16_t(idx));
  c.byte_cnt = be32(len);
  c.imm_inval_pkey = imm;
  c.flags_rqpn = be32((src_qp & 0xffffff) | (grh ? 1u << 28 : 0));
  c.slid = be16(slid);
  c.srqn_uidx = be32(srqn);
  c.op_own = uint8_t(op << 4 | (se ? 2 : 0));
  return c;
}

bool cq_room(const CqSlot& cq, uint32_t dbrec_ci) {
  if (cq.overrun) return false;  // in error: takes nothing more
  return cq.ignore_overrun || ((cq.pi - (be32(dbrec_ci) & 0xffffff)) & 0xffffff) < cq.cnt;
}

bool write_cqe(Fabric& f, uint32_t node, CqSlot& cq, const mlx5_cqe64& in, const void* data,
               uint32_t len, std::vector<Fabric::Copy> before) {
  // The whole entry is built here: with scatter-to-CQE data, a 128-byte entry's first half too.
  uint8_t entry[128];
  const uint32_t sz = cq.cqe_sz;
  auto* c = reinterpret_cast<mlx5_cqe64*>(entry + sz - 64);
  *c = in;
  uint32_t first = sz - 64;  // bytes of the entry written: the CQE alone unless data fills the rest
  if (data) {
    put_cqe_data(sz, entry, c, data, len);
    first = 0;
  }
  uint8_t owner = (cq.pi / cq.cnt) & 1;
  uint8_t op_own = uint8_t((c->op_own & 0xfe) | owner);
  const uint64_t at = cq.buf + uint64_t(cq.pi & (cq.cnt - 1)) * sz;
  // Everything but the ownership byte (the CQE's last), then that byte, each copy complete before
  // the next starts: a poller that sees the new owner sees the rest (x86 keeps stores in order).
  before.push_back(Fabric::Copy{at + first, entry + first, sz - 1 - first});
  if (node == f.node()) {
    f.direct_writev(node, before.data(), int(before.size()));
    __atomic_store_n(reinterpret_cast<uint8_t*>(uintptr_t(at + sz - 1)), op_own, __ATOMIC_RELEASE);
  } else {
    before.push_back(Fabric::Copy{at + sz - 1, &op_own, 1});
    if (!f.direct_writev(node, before.data(), int(before.size()))) return false;
  }
  cq.pi++;
  return true;
}

}  // namespace softhca

namespace softhca {

// What the responder's model would do for a send that succeeds, done from the requester's thread:
// take the receive WQE, write the data (and a UD datagram's GRH), write the CQE. Every case with
// another outcome (no receive posted: RNR or a lost datagram; a bad buffer; a full or armed CQ;
// state not published) is left to the message path, which produces it. Nothing is committed until
// every check has passed, so a refusal has no effect. A completion into an armed CQ raises its
// event through the owner's model (kNotify), as an HCA's interrupt reaches the CPU after the CQE.
bool Hca::try_direct_send(Qp* qp, const DirectSend& d, const std::vector<uint8_t>& payload) {
  if (!config().direct || payload.size() > kMaxMsgPayload) return false;
  const bool ud = d.type == IBV_QPT_UD;
  if (!ud) {
    for (const Pending& x : qp->out)
      if (x.syndrome < 0) return false;  // an earlier request is still on the message path
  } else if (d.node < qp->ud_inbox_tail.size()) {
    auto [gen, tail] = qp->ud_inbox_tail[d.node];
    if (gen == d.gen && fab_.shm()->rings[d.node].head.load(std::memory_order_acquire) < tail)
      return false;  // an earlier datagram still waits in the responder's inbox
  }
  if (!fab_.direct_usable(d.node, d.gen) || fab_.owner_waiting(d.node)) return false;
  // An owner polling with ibv_poll_cq executes its inbox itself, sooner than the copies below.
  if (now_ns() - fab_.shm()->rings[d.node].last_poll_ns.load(std::memory_order_relaxed) <
      kPollerWindowNs)
    return false;
  const uint32_t len = uint32_t(payload.size());
  bool ok = false;
  uint32_t notify_cqn = 0;
  fab_.lock_direct(d.node);
  do {
    QpnEntry& e = fab_.qpn_entry(d.dst_qpn);
    if (!e.used.load(std::memory_order_acquire) || e.node != d.node || e.gen != d.gen ||
        !e.accepting || e.type != d.type)
      break;
    if (ud) {
      if (e.qkey != d.qkey || (d.grh && !(roce() ? port_owns_gid(e.lid, d.dgid) : memcmp(e.gid, d.dgid, 16) == 0))) break;
    } else if (e.port_lid != d.dlid ||
               (d.type == 0xdc ? e.dc_key != d.dc_key : e.peer_qpn != qp->qpx.qp_base.qp_num)) {
      break;
    }
    CqSlot& cq = fab_.cq_slot(d.node, e.rcqn);
    if (e.rcqn == 0 || cq.cqn != e.rcqn) break;
    RecvQueue q;
    if (e.srqn) {
      SrqSlot& s = fab_.srq_slot(d.node, e.srqn);
      if (s.srqn != e.srqn) break;
      q = rq_of(s);
    } else {
      q = rq_of(e);
    }
    RecvWqe w;
    uint32_t cq_ci = 0;  // read with the receive WQE
    const Fabric::Copy ci_read{cq.dbrec, &cq_ci, 4};
    if (!peek_recv(fab_, d.node, q, &w, &ci_read)) break;
    auto mr_ok = [&](uint32_t lkey, uint64_t addr, uint32_t cap) {
      const MrSlot& m = fab_.mr_slot(d.node, lkey);
      return m.key == lkey && m.pad == 0 && m.pdn == e.pdn && (m.access & IBV_ACCESS_LOCAL_WRITE) &&
             addr >= m.addr && addr + cap <= m.addr + m.len && addr + cap >= addr;
    };
    const bool in_cqe = e.scatter_resp && len <= cq.cqe_sz / 2;
    std::vector<ScatterPiece> grh_pieces, pieces;
    uint8_t grh[40];
    if (ud && d.grh) {
      make_grh(grh, len, d.sgid, d.dgid);
      plan_scatter(w, 40, 0, mr_ok, &grh_pieces);
    }
    uint8_t syn = in_cqe ? recv_room(w, len) : plan_scatter(w, len, ud ? 40 : 0, mr_ok, &pieces);
    if (syn || !cq_room(cq, cq_ci) || !fab_.node_alive(d.node, d.gen)) break;
    std::vector<Fabric::Copy> data;  // written with the CQE, in one call
    for (const ScatterPiece& x : grh_pieces) data.push_back({x.addr, grh + x.src_off, x.n});
    for (const ScatterPiece& x : pieces)
      data.push_back({x.addr, const_cast<uint8_t*>(payload.data()) + x.src_off, x.n});
    uint8_t op = d.opcode == MLX5_OPCODE_SEND_IMM ? MLX5_CQE_RESP_SEND_IMM : MLX5_CQE_RESP_SEND;
    mlx5_cqe64 c = resp_cqe(d.dst_qpn, e.srqn, op, w.idx, ud ? len + 40 : len, d.imm,
                            qp->qpx.qp_base.qp_num, d.slid, ud && d.grh, d.se);
    if (!write_cqe(fab_, d.node, cq, c, in_cqe ? payload.data() : nullptr, len, std::move(data)))
      break;
    ++*q.hw_ci;
    if (cq.armed && (!cq.armed_sol || d.se)) {  // the event: see kNotify
      cq.armed = 0;
      notify_cqn = cq.cqn;
    }
    ok = true;
  } while (false);
  fab_.unlock_direct(d.node);
  if (notify_cqn) post_msg(d.node, d.gen, kNotify, &notify_cqn, sizeof notify_cqn, nullptr, 0);
  if (ok) direct_sends++;
  return ok;
}

}  // namespace softhca
