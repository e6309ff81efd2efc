// softhca DevX objects: the mlx5 PRM commands that create, move and query QPs, DCIs and DCTs
// through mlx5dv_devx_obj_create/_modify/_query/_destroy (and mlx5dv_devx_qp_modify/_query on
// verbs-created QPs), with the PRM's input layouts (prm.h), statuses and the kernel's DevX rules.
//
//  * CREATE_QP (st RC or DCI): PD, send/receive CQ, SRQ (rq_type 1) or a regular receive queue
//    (rq_type 0, log_rq_size/log_rq_stride) at the start of the WQ umem with the send queue
//    (log_sq_size basic blocks) after it, the doorbell record at dbr_addr in the dbr umem, the
//    UAR page (uar_page = a page_id from mlx5dv_devx_alloc_uar) whose register rings the QP,
//    cs_req/cs_res (scatter-to-CQE). The QP then runs on the model's engine like a verbs QP: the
//    same WQEs, CQEs and doorbell record. The kernel's DevX marks the umem ids valid itself, so
//    wq_umem_valid/dbr_umem_valid are not required.
//  * RST2INIT/INIT2RTR/RTR2RTS/RTS2RTS/INIT2INIT/2ERR/2RST: the QPC fields of each transition
//    (port, pkey index, access bits; MTU, remote QPN, address path, receive PSN, responder depth,
//    RNR timer; send PSN, ACK timeout, retry and RNR retry counts, initiator depth); the access
//    bits after RST2INIT only where opt_param_mask names them. A transition from the wrong state:
//    status BAD_RES_STATE; an invalid field: BAD_PARAM.
//  * QUERY_QP: the QPC as the QP stands (state, addresses, PSNs, sizes, CQs, SRQ, DC key).
//  * CREATE_DCT (DCTC: PD, CQ, SRQ, DC key, port, MTU, RNR timer, access bits): active at once.
//    DRAIN_DCT: drained at once (the model keeps no DC connection state); requests to a drained
//    DCT find no responder. QUERY_DCT, DESTROY_DCT.
//  * CREATE_MKEY in KSM mode (what UCX makes its atomic keys with): PD, access bits, start_addr,
//    len, log_entity_size, translations_octword_size entries of (mkey, address) naming MRs of
//    this process. The key is mkey_index << 8 | mkey_7_0. Responders translate accesses through it
//    (registration.cc, resolve_remote). Other access modes (PA, MTT, KLM), UMR-owned (free) and
//    64-bit-length mkeys are not modelled: BAD_OP. DESTROY_MKEY through the object's destroy.
//  * Event subscription: LAST_WQE_REACHED (0x13) on a QP attached to an SRQ when it enters ERR.
// Failures give the PRM status and a syndrome in the output and EREMOTEIO, as the kernel returns
// a firmware error to DevX; malformed calls (short buffers, object of another kind) EINVAL.
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "doorbell.h"
#include "hca.h"
#include "mkey.h"
#include "prm.h"

using namespace softhca;

extern "C" {
int softhca_v11_ibv_modify_qp(ibv_qp* ibqp, ibv_qp_attr* a, int mask);
int softhca_v11_ibv_destroy_qp(ibv_qp* ibqp);
int softhca_v11_ibv_destroy_srq(ibv_srq* srq);
}

namespace {

struct Umem {
  uint8_t* addr;
  size_t size;
  int refs = 0;
};

struct Sub {
  int wfd;
  bool omit;
  uint64_t cookie;
  std::vector<uint16_t> events;
};

enum class ObjType { kQp, kDct, kRmp, kMkey };

struct Obj {
  ObjType type = ObjType::kQp;
  ibv_context* ctx = nullptr;
  Qp* qp = nullptr;
  Srq* srq = nullptr;  // kRmp
  uint32_t num = 0;  // QPN, DCT/RMP number, or the mkey (index << 8 | mkey_7_0)
  uint8_t ctxbuf[DEVX_ST_SZ_BYTES(sh_rmpc)] = {};  // the QPC / DCTC / RMPC it was created with
  uint32_t wq_umem = 0, dbr_umem = 0;
  bool drained = false;
  std::vector<Sub> subs;
};

std::mutex g_mu;  // the tables below
std::map<uint32_t, Umem>& umems() { static auto* m = new std::map<uint32_t, Umem>; return *m; }
std::map<uint32_t, uint8_t*>& uars() { static auto* m = new std::map<uint32_t, uint8_t*>; return *m; }
std::map<uint32_t, Obj*>& objs() { static auto* m = new std::map<uint32_t, Obj*>; return *m; }  // QPs/DCTs by number
uint32_t g_next_umem = 0x1000;

Context* ctx_of(ibv_context* c) {
  return reinterpret_cast<Context*>(reinterpret_cast<uint8_t*>(c) - offsetof(verbs_context, context));
}

int fail(void* out, size_t outlen, uint8_t status, uint32_t syndrome) {
  if (getenv("SOFTHCA_TRACE"))
    fprintf(stderr, "softhca: devx command failed: status 0x%x syndrome 0x%x\n", status, syndrome);
  if (outlen >= 8) {
    DEVX_SET(sh_qp_out, out, status, status);
    DEVX_SET(sh_qp_out, out, syndrome, syndrome);
  }
  return EREMOTEIO;
}

// Syndromes: this model's own numbers, one per check, so that a test can tell them apart.
enum : uint32_t {
  kSynBadSt = 0x5d0001,
  kSynBadPd = 0x5d0002,
  kSynBadCq = 0x5d0003,
  kSynBadSrq = 0x5d0004,
  kSynBadUmem = 0x5d0005,
  kSynUmemSize = 0x5d0006,
  kSynBadUar = 0x5d0007,
  kSynBadSize = 0x5d0008,
  kSynBadRqType = 0x5d0009,
  kSynState = 0x5d000a,
  kSynBadField = 0x5d000b,
  kSynBadOp = 0x5d000c,
  kSynNoQpn = 0x5d000d,
  kSynMkeyMode = 0x5d000e,    // access mode (or UMR/length64 use) not modelled
  kSynMkeyEntries = 0x5d000f, // no translation entries, or more than the command holds
  kSynMkeyEntity = 0x5d0010,  // log_entity_size below 12 (the model's smallest KSM entity)
  kSynMkeyRange = 0x5d0011,   // start_addr + len wraps, or len 0
};

uint8_t ilog2(uint32_t v) {
  uint8_t l = 0;
  while ((1u << (l + 1)) <= v) ++l;
  return l;
}

uint8_t prm_state(ibv_qp_state s) {
  switch (s) {
    case IBV_QPS_RESET: return SH_QP_STATE_RST;
    case IBV_QPS_INIT: return SH_QP_STATE_INIT;
    case IBV_QPS_RTR: return SH_QP_STATE_RTR;
    case IBV_QPS_RTS: return SH_QP_STATE_RTS;
    case IBV_QPS_SQE: return SH_QP_STATE_SQER;
    default: return SH_QP_STATE_ERR;
  }
}

Cq* find_cq(uint32_t n) {
  auto& m = Hca::get().cqs;
  auto it = m.find(n);
  return it == m.end() ? nullptr : it->second;
}

// Raises `event` (EQE event type) for `qpn` on the channels subscribed to it (g_mu held).
void raise_devx_event(Obj* o, uint16_t event) {
  for (auto& s : o->subs) {
    bool want = false;
    for (uint16_t e : s.events) want |= e == event;
    if (!want) continue;
    uint8_t rec[8 + 64] = {};
    memcpy(rec, &s.cookie, 8);
    size_t len = 8;
    if (!s.omit) {  // the EQE: event type, then the QP/SRQ event data (type 0 = QP, number)
      rec[8 + 1] = uint8_t(event);
      uint32_t n = be32(o->num & 0xffffff);
      memcpy(rec + 8 + 56, &n, 4);
      len += 64;
    }
    send(s.wfd, rec, len, MSG_DONTWAIT | MSG_NOSIGNAL);
  }
}

Obj* create_qp(ibv_context* c, const void* in, size_t inlen, void* out, size_t outlen, int* err) {
  if (inlen < DEVX_ST_SZ_BYTES(sh_qp_in)) {
    *err = EINVAL;
    return nullptr;
  }
  const void* qpc = DEVX_ADDR_OF(sh_qp_in, in, qpc);
  auto bad = [&](uint8_t st, uint32_t syn) {
    *err = fail(out, outlen, st, syn);
    return nullptr;
  };
  uint32_t st = DEVX_GET(sh_qpc, qpc, st);
  if (st != SH_QPC_ST_RC && st != SH_QPC_ST_DCI) return bad(SH_STAT_BAD_PARAM, kSynBadSt);
  Kind kind = st == SH_QPC_ST_RC ? Kind::kRc : Kind::kDci;
  if (DEVX_GET(sh_qpc, qpc, no_sq)) return bad(SH_STAT_BAD_PARAM, kSynBadField);
  Hca& h = Hca::get();
  ibv_qp_init_attr_ex a{};
  DevxQueues q;
  uint32_t wq_id = DEVX_GET(sh_qp_in, in, wq_umem_id);
  uint32_t dbr_id = DEVX_GET(sh_qpc, qpc, dbr_umem_id);
  {
    std::shared_lock<std::shared_mutex> g(h.tables);
    auto pd = h.pds.find(DEVX_GET(sh_qpc, qpc, pd));
    if (pd == h.pds.end() || pd->second->pd.context != c) return bad(SH_STAT_BAD_PARAM, kSynBadPd);
    Cq* scq = find_cq(DEVX_GET(sh_qpc, qpc, cqn_snd));
    Cq* rcq = find_cq(DEVX_GET(sh_qpc, qpc, cqn_rcv));
    if (!scq || (kind == Kind::kRc && !rcq)) return bad(SH_STAT_BAD_PARAM, kSynBadCq);
    a.comp_mask = IBV_QP_INIT_ATTR_PD;
    a.pd = &pd->second->pd;
    a.send_cq = ibv_cq_ex_to_cq(&scq->cqx);
    a.recv_cq = rcq ? ibv_cq_ex_to_cq(&rcq->cqx) : nullptr;
    a.qp_type = kind == Kind::kRc ? IBV_QPT_RC : IBV_QPT_DRIVER;
    uint32_t rq_type = DEVX_GET(sh_qpc, qpc, rq_type);
    if (kind == Kind::kRc) {
      if (rq_type == SH_RQ_SRQ) {
        auto s = h.srqs.find(DEVX_GET(sh_qpc, qpc, srqn_rmpn_xrqn));
        if (s == h.srqs.end()) return bad(SH_STAT_BAD_PARAM, kSynBadSrq);
        a.srq = &s->second->srq;
      } else if (rq_type != SH_RQ_REGULAR && rq_type != SH_RQ_ZERO) {
        return bad(SH_STAT_BAD_PARAM, kSynBadRqType);
      }
    }
    uint32_t log_sq = DEVX_GET(sh_qpc, qpc, log_sq_size);
    uint32_t log_rq = DEVX_GET(sh_qpc, qpc, log_rq_size);
    uint32_t rq_stride = 16u << DEVX_GET(sh_qpc, qpc, log_rq_stride);
    if (log_sq > 15 || log_rq > 15) return bad(SH_STAT_BAD_PARAM, kSynBadSize);
    bool regular_rq = kind == Kind::kRc && rq_type == SH_RQ_REGULAR;
    size_t rq_bytes = regular_rq ? (size_t(1) << log_rq) * rq_stride : 0;
    size_t sq_bytes = (size_t(1) << log_sq) * 64;
    std::lock_guard<std::mutex> m(g_mu);
    auto wq = umems().find(wq_id);
    auto dbr = umems().find(dbr_id);
    if (wq == umems().end() || dbr == umems().end()) return bad(SH_STAT_BAD_PARAM, kSynBadUmem);
    uint64_t wq_off = DEVX_GET64(sh_qp_in, in, wq_umem_offset);
    uint64_t dbr_off = DEVX_GET64(sh_qpc, qpc, dbr_addr);
    if (wq_off + rq_bytes + sq_bytes > wq->second.size || dbr_off + 8 > dbr->second.size ||
        (dbr_off & 3))
      return bad(SH_STAT_BAD_PARAM, kSynUmemSize);
    auto uar = uars().find(DEVX_GET(sh_qpc, qpc, uar_page));
    if (uar == uars().end()) return bad(SH_STAT_BAD_PARAM, kSynBadUar);
    q.rq = regular_rq ? wq->second.addr + wq_off : nullptr;
    q.rq_cnt = 1u << log_rq;
    q.rq_stride = rq_stride;
    q.sq = wq->second.addr + wq_off + rq_bytes;
    q.sq_bbs = 1u << log_sq;
    q.dbrec = reinterpret_cast<uint32_t*>(dbr->second.addr + dbr_off);
    q.uar = uar->second;
    q.cs_req = DEVX_GET(sh_qpc, qpc, cs_req) != 0;
    q.cs_res = DEVX_GET(sh_qpc, qpc, cs_res) != 0;
    wq->second.refs++;
    dbr->second.refs++;
    a.cap.max_send_wr = std::min<uint32_t>(q.sq_bbs, 32768);
    a.cap.max_send_sge = 1;
    a.cap.max_recv_wr = regular_rq ? q.rq_cnt : 0;
    a.cap.max_recv_sge = regular_rq ? rq_stride / 16 : 0;
  }
  Qp* qp = devx_make_qp(c, &a, kind, 0, q);
  if (!qp) {
    std::lock_guard<std::mutex> m(g_mu);
    umems()[wq_id].refs--;
    umems()[dbr_id].refs--;
    *err = fail(out, outlen, 0xf /* no resources */, kSynNoQpn);
    return nullptr;
  }
  qp->user_index = DEVX_GET(sh_qpc, qpc, user_index);
  watch_uar_page(q.uar);
  auto* o = new Obj;
  o->type = ObjType::kQp;
  o->ctx = c;
  o->qp = qp;
  o->num = qp->qpx.qp_base.qp_num;
  memcpy(o->ctxbuf, qpc, DEVX_ST_SZ_BYTES(sh_qpc));
  o->wq_umem = wq_id;
  o->dbr_umem = dbr_id;
  {
    std::lock_guard<std::mutex> m(g_mu);
    objs()[o->num] = o;
  }
  h.devx_qps++;
  memset(out, 0, outlen);
  DEVX_SET(sh_qp_out, out, qpn, o->num);
  return o;
}

Obj* create_dct(ibv_context* c, const void* in, size_t inlen, void* out, size_t outlen, int* err) {
  if (inlen < DEVX_ST_SZ_BYTES(sh_dct_in)) {
    *err = EINVAL;
    return nullptr;
  }
  const void* d = DEVX_ADDR_OF(sh_dct_in, in, dctc);
  auto bad = [&](uint8_t st, uint32_t syn) {
    *err = fail(out, outlen, st, syn);
    return nullptr;
  };
  Hca& h = Hca::get();
  ibv_qp_init_attr_ex a{};
  {
    std::shared_lock<std::shared_mutex> g(h.tables);
    auto pd = h.pds.find(DEVX_GET(sh_dctc, d, pd));
    if (pd == h.pds.end() || pd->second->pd.context != c) return bad(SH_STAT_BAD_PARAM, kSynBadPd);
    Cq* cq = find_cq(DEVX_GET(sh_dctc, d, cqn));
    if (!cq) return bad(SH_STAT_BAD_PARAM, kSynBadCq);
    auto s = h.srqs.find(DEVX_GET(sh_dctc, d, srqn_xrqn));
    if (s == h.srqs.end()) return bad(SH_STAT_BAD_PARAM, kSynBadSrq);
    a.comp_mask = IBV_QP_INIT_ATTR_PD;
    a.pd = &pd->second->pd;
    a.recv_cq = ibv_cq_ex_to_cq(&cq->cqx);
    a.srq = &s->second->srq;
    a.qp_type = IBV_QPT_DRIVER;
  }
  uint32_t port = DEVX_GET(sh_dctc, d, port), mtu = DEVX_GET(sh_dctc, d, mtu);
  if (port < 1 || port > uint32_t(config().num_ports) || mtu < 1 || mtu > 5 ||
      DEVX_GET(sh_dctc, d, pkey_index) != 0)
    return bad(SH_STAT_BAD_PARAM, kSynBadField);
  Qp* qp = devx_make_qp(c, &a, Kind::kDct, DEVX_GET64(sh_dctc, d, dc_access_key), DevxQueues{});
  if (!qp) return bad(0xf, kSynNoQpn);
  ibv_qp_attr at{};
  at.qp_state = IBV_QPS_INIT;
  at.port_num = uint8_t(port);
  at.qp_access_flags = (DEVX_GET(sh_dctc, d, rre) ? IBV_ACCESS_REMOTE_READ : 0) |
                       (DEVX_GET(sh_dctc, d, rwe) ? IBV_ACCESS_REMOTE_WRITE : 0) |
                       (DEVX_GET(sh_dctc, d, rae) ? IBV_ACCESS_REMOTE_ATOMIC : 0);
  int e = softhca_v11_ibv_modify_qp(&qp->qpx.qp_base, &at,
                                    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  at.qp_state = IBV_QPS_RTR;
  at.path_mtu = ibv_mtu(mtu);
  at.min_rnr_timer = uint8_t(DEVX_GET(sh_dctc, d, min_rnr_nak));
  if (!e) e = softhca_v11_ibv_modify_qp(&qp->qpx.qp_base, &at,
                                        IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_MIN_RNR_TIMER);
  if (e) {
    softhca_v11_ibv_destroy_qp(&qp->qpx.qp_base);
    return bad(SH_STAT_BAD_PARAM, kSynBadField);
  }
  auto* o = new Obj;
  o->type = ObjType::kDct;
  o->ctx = c;
  o->qp = qp;
  o->num = qp->qpx.qp_base.qp_num;
  memcpy(o->ctxbuf, d, DEVX_ST_SZ_BYTES(sh_dctc));
  {
    std::lock_guard<std::mutex> m(g_mu);
    objs()[o->num] = o;
  }
  h.devx_dcts++;
  memset(out, 0, outlen);
  DEVX_SET(sh_dct_out, out, dctn, o->num);
  return o;
}

// CREATE_RMP: a shared receive queue whose cyclic ring (log_wq_sz WQEs of 1 << log_wq_stride
// bytes, each a 16-byte next segment then data segments, as an SRQ's) and doorbell record are in
// the program's umems; QPs and DCTs name it by its RMP number like an SRQ number.
Obj* create_rmp(ibv_context* c, const void* in, size_t inlen, void* out, size_t outlen, int* err) {
  if (inlen < (0x100 + 0x180 + 0x1c0) / 8) {
    *err = EINVAL;
    return nullptr;
  }
  auto bad = [&](uint8_t st, uint32_t syn) {
    *err = fail(out, outlen, st, syn);
    return nullptr;
  };
  const void* rmpc = DEVX_ADDR_OF(sh_rmp_in, in, ctx);
  const void* wq = DEVX_ADDR_OF(sh_rmpc, rmpc, wq);
  if (DEVX_GET(sh_rmpc, rmpc, state) != SH_RMPC_STATE_RDY) return bad(SH_STAT_BAD_PARAM, kSynBadField);
  uint32_t type = DEVX_GET(sh_wq, wq, wq_type);
  if (type != SH_WQ_CYCLIC && type != SH_WQ_LINKED_LIST) return bad(SH_STAT_BAD_PARAM, kSynBadRqType);
  uint32_t log_sz = DEVX_GET(sh_wq, wq, log_wq_sz), log_stride = DEVX_GET(sh_wq, wq, log_wq_stride);
  if (log_sz > 15 || log_stride < 5 || log_stride > 9) return bad(SH_STAT_BAD_PARAM, kSynBadSize);
  Hca& h = Hca::get();
  Pd* pd = nullptr;
  {
    std::shared_lock<std::shared_mutex> g(h.tables);
    auto it = h.pds.find(DEVX_GET(sh_wq, wq, pd));
    if (it == h.pds.end() || it->second->pd.context != c) return bad(SH_STAT_BAD_PARAM, kSynBadPd);
    pd = it->second;
  }
  auto* s = new Srq{};
  uint32_t wq_id = DEVX_GET(sh_wq, wq, wq_umem_id), dbr_id = DEVX_GET(sh_wq, wq, dbr_umem_id);
  {
    std::lock_guard<std::mutex> m(g_mu);
    auto w = umems().find(wq_id);
    auto d = umems().find(dbr_id);
    if (w == umems().end() || d == umems().end()) {
      delete s;
      return bad(SH_STAT_BAD_PARAM, kSynBadUmem);
    }
    uint64_t off = DEVX_GET64(sh_wq, wq, wq_umem_offset), doff = DEVX_GET64(sh_wq, wq, dbr_addr);
    size_t bytes = (size_t(1) << log_sz) << log_stride;
    if (off + bytes > w->second.size || doff + 4 > d->second.size || (doff & 3)) {
      delete s;
      return bad(SH_STAT_BAD_PARAM, kSynUmemSize);
    }
    s->buf = w->second.addr + off;
    s->dbrec = reinterpret_cast<uint32_t*>(d->second.addr + doff);
    w->second.refs++;
    d->second.refs++;
  }
  s->devx = true;
  s->ctx = ctx_of(c);
  s->cnt = 1u << log_sz;
  s->stride = 1u << log_stride;
  s->max_sge = (s->stride - 16) / 16;
  s->wrid.resize(s->cnt);
  s->srqn = h.next_obj++;
  s->srq.context = c;
  s->srq.pd = &pd->pd;
  s->srq.handle = s->srqn;
  pthread_mutex_init(&s->srq.mutex, nullptr);
  pthread_cond_init(&s->srq.cond, nullptr);
  h.publish_srq(s, true);
  {
    std::unique_lock<std::shared_mutex> g(h.tables);
    h.srqs[s->srqn] = s;
  }
  auto* o = new Obj;
  o->type = ObjType::kRmp;
  o->ctx = c;
  o->srq = s;
  o->num = s->srqn;
  memcpy(o->ctxbuf, rmpc, std::min(sizeof o->ctxbuf, inlen - DEVX_BYTE_OFF(sh_rmp_in, ctx)));
  o->wq_umem = wq_id;
  o->dbr_umem = dbr_id;
  memset(out, 0, outlen);
  DEVX_SET(sh_rmp_out, out, rmpn, o->num);
  return o;
}

// CREATE_MKEY, KSM mode: the indirect mkey's translation as the command gives it. Entries are not
// checked here (as on ConnectX, an entry's key and range are checked when an access uses it).
Obj* create_mkey(ibv_context* c, const void* in, size_t inlen, void* out, size_t outlen, int* err) {
  if (inlen < DEVX_ST_SZ_BYTES(sh_create_mkey_in)) {  // the kernel's own check
    *err = EINVAL;
    return nullptr;
  }
  auto bad = [&](uint8_t st, uint32_t syn) {
    *err = fail(out, outlen, st, syn);
    return nullptr;
  };
  const void* mkc = DEVX_ADDR_OF(sh_create_mkey_in, in, memory_key_mkey_entry);
  uint32_t mode = DEVX_GET(sh_mkc, mkc, access_mode_4_2) << 2 | DEVX_GET(sh_mkc, mkc, access_mode_1_0);
  if (mode != SH_MKC_ACCESS_MODE_KSM || DEVX_GET(sh_mkc, mkc, free) ||
      DEVX_GET(sh_mkc, mkc, umr_en) || DEVX_GET(sh_mkc, mkc, length64))
    return bad(SH_STAT_BAD_OP, kSynMkeyMode);
  IndirectMkey k;
  k.start = DEVX_GET64(sh_mkc, mkc, start_addr);
  k.len = DEVX_GET64(sh_mkc, mkc, len);
  if (k.len == 0 || k.start + k.len < k.start) return bad(SH_STAT_BAD_PARAM, kSynMkeyRange);
  k.log_entity_size = DEVX_GET(sh_mkc, mkc, log_entity_size);
  if (k.log_entity_size < 12) return bad(SH_STAT_BAD_PARAM, kSynMkeyEntity);
  uint32_t n = DEVX_GET(sh_mkc, mkc, translations_octword_size);
  uint32_t actual = DEVX_GET(sh_create_mkey_in, in, translations_octword_actual_size);
  const size_t fixed = DEVX_ST_SZ_BYTES(sh_create_mkey_in), entry = DEVX_ST_SZ_BYTES(sh_klm);
  if (n == 0 || actual == 0 || actual > n) return bad(SH_STAT_BAD_PARAM, kSynMkeyEntries);
  if (inlen < fixed + size_t(actual) * entry) return bad(SH_STAT_BAD_INP_LEN, kSynMkeyEntries);
  const auto* list = static_cast<const uint8_t*>(in) + fixed;
  for (uint32_t i = 0; i < actual; ++i)
    k.entries.emplace_back(DEVX_GET(sh_klm, list + i * entry, mkey),
                           DEVX_GET64(sh_klm, list + i * entry, address));
  k.access = (DEVX_GET(sh_mkc, mkc, lw) ? IBV_ACCESS_LOCAL_WRITE : 0) |
             (DEVX_GET(sh_mkc, mkc, rr) ? IBV_ACCESS_REMOTE_READ : 0) |
             (DEVX_GET(sh_mkc, mkc, rw) ? IBV_ACCESS_REMOTE_WRITE : 0) |
             (DEVX_GET(sh_mkc, mkc, a) ? IBV_ACCESS_REMOTE_ATOMIC : 0);
  Hca& h = Hca::get();
  {
    std::unique_lock<std::shared_mutex> g(h.tables);
    auto pd = h.pds.find(DEVX_GET(sh_mkc, mkc, pd));
    if (pd == h.pds.end() || pd->second->pd.context != c) return bad(SH_STAT_BAD_PARAM, kSynBadPd);
    k.pd = &pd->second->pd;
    // An mkey index of its own (never an MR's), with the variant byte the command chose.
    k.key = (next_mr_key() & ~0xffu) | DEVX_GET(sh_mkc, mkc, mkey_7_0);
    add_indirect_mkey(k);
  }
  auto* o = new Obj;
  o->type = ObjType::kMkey;
  o->ctx = c;
  o->num = k.key;
  memset(out, 0, outlen);
  DEVX_SET(sh_create_mkey_out, out, mkey_index, k.key >> 8);
  return o;
}

int access_of(const void* qpc, int cur, uint32_t opt, bool all) {
  int acc = cur;
  auto apply = [&](bool take, bool on, int flag) {
    if (!take) return;
    acc = on ? (acc | flag) : (acc & ~flag);
  };
  apply(all || (opt & SH_OPT_RRE), DEVX_GET(sh_qpc, qpc, rre), IBV_ACCESS_REMOTE_READ);
  apply(all || (opt & SH_OPT_RWE), DEVX_GET(sh_qpc, qpc, rwe), IBV_ACCESS_REMOTE_WRITE);
  apply(all || (opt & SH_OPT_RAE), DEVX_GET(sh_qpc, qpc, rae), IBV_ACCESS_REMOTE_ATOMIC);
  return acc;
}

// A QP state transition or QUERY_QP on `qp` (a DevX QP or a verbs-created one).
int qp_command(Qp* qp, Obj* o, const void* in, size_t inlen, void* out, size_t outlen) {
  if (inlen < 16 || outlen < 16) return EINVAL;
  uint32_t opcode = DEVX_GET(sh_qp_in, in, opcode);
  if (getenv("SOFTHCA_TRACE"))
    fprintf(stderr, "softhca: devx qp command 0x%x qpn 0x%x (object qpn 0x%x)\n", opcode,
            DEVX_GET(sh_qp_in, in, qpn), qp->qpx.qp_base.qp_num);
  if (DEVX_GET(sh_qp_in, in, qpn) != qp->qpx.qp_base.qp_num) return EINVAL;  // another object
  memset(out, 0, outlen);
  ibv_qp* b = &qp->qpx.qp_base;
  if (opcode == SH_CMD_QUERY_QP) {
    if (outlen < DEVX_ST_SZ_BYTES(sh_qp_out)) return EINVAL;
    void* c = DEVX_ADDR_OF(sh_qp_out, out, qpc);
    if (o) memcpy(c, o->ctxbuf, DEVX_ST_SZ_BYTES(sh_qpc));
    std::lock_guard<std::recursive_mutex> g(qp->mu);
    const ibv_qp_attr& s = qp->attr;
    DEVX_SET(sh_qpc, c, state, prm_state(s.qp_state));
    DEVX_SET(sh_qpc, c, st, qp->kind == Kind::kRc ? SH_QPC_ST_RC : qp->kind == Kind::kUd ? SH_QPC_ST_UD : SH_QPC_ST_DCI);
    DEVX_SET(sh_qpc, c, pd, qp->pd->pdn);
    DEVX_SET(sh_qpc, c, mtu, s.path_mtu);
    DEVX_SET(sh_qpc, c, log_sq_size, qp->sq_bbs ? ilog2(qp->sq_bbs) : 0);
    if (qp->rq_cnt) DEVX_SET(sh_qpc, c, log_rq_size, ilog2(qp->rq_cnt));
    DEVX_SET(sh_qpc, c, remote_qpn, s.dest_qp_num);
    void* p = DEVX_ADDR_OF(sh_qpc, c, primary_address_path);
    DEVX_SET(sh_ads, p, pkey_index, s.pkey_index);
    DEVX_SET(sh_ads, p, grh, s.ah_attr.is_global);
    DEVX_SET(sh_ads, p, mlid, s.ah_attr.src_path_bits);
    DEVX_SET(sh_ads, p, rlid, s.ah_attr.dlid);
    DEVX_SET(sh_ads, p, ack_timeout, s.timeout);
    DEVX_SET(sh_ads, p, hop_limit, s.ah_attr.grh.hop_limit);
    DEVX_SET(sh_ads, p, tclass, s.ah_attr.grh.traffic_class);
    memcpy(DEVX_ADDR_OF(sh_ads, p, rgid_rip), s.ah_attr.grh.dgid.raw, 16);
    DEVX_SET(sh_ads, p, sl, s.ah_attr.sl);
    DEVX_SET(sh_ads, p, vhca_port_num, s.ah_attr.port_num ? s.ah_attr.port_num : s.port_num);
    DEVX_SET(sh_qpc, c, log_sra_max, ilog2(std::max<uint32_t>(s.max_rd_atomic, 1)));
    DEVX_SET(sh_qpc, c, retry_count, s.retry_cnt);
    DEVX_SET(sh_qpc, c, rnr_retry, s.rnr_retry);
    DEVX_SET(sh_qpc, c, next_send_psn, qp->next_psn & 0xffffff);
    DEVX_SET(sh_qpc, c, cqn_snd, qp->scq ? qp->scq->cqn : 0);
    DEVX_SET(sh_qpc, c, log_rra_max, ilog2(std::max<uint32_t>(s.max_dest_rd_atomic, 1)));
    DEVX_SET(sh_qpc, c, rre, !!(s.qp_access_flags & IBV_ACCESS_REMOTE_READ));
    DEVX_SET(sh_qpc, c, rwe, !!(s.qp_access_flags & IBV_ACCESS_REMOTE_WRITE));
    DEVX_SET(sh_qpc, c, rae, !!(s.qp_access_flags & IBV_ACCESS_REMOTE_ATOMIC));
    DEVX_SET(sh_qpc, c, min_rnr_nak, s.min_rnr_timer);
    DEVX_SET(sh_qpc, c, next_rcv_psn, qp->rc_epsn & 0xffffff);
    DEVX_SET(sh_qpc, c, cqn_rcv, qp->rcq ? qp->rcq->cqn : 0);
    DEVX_SET(sh_qpc, c, rq_type, qp->srq ? SH_RQ_SRQ : qp->rq_buf ? SH_RQ_REGULAR : SH_RQ_ZERO);
    DEVX_SET(sh_qpc, c, srqn_rmpn_xrqn, qp->srq ? qp->srq->srqn : 0);
    if (qp->kind == Kind::kUd) DEVX_SET(sh_qpc, c, q_key, s.qkey);
    return 0;
  }
  if (inlen < DEVX_ST_SZ_BYTES(sh_qp_in) && opcode != SH_CMD_2ERR_QP && opcode != SH_CMD_2RST_QP)
    return EINVAL;
  const void* c = inlen >= DEVX_ST_SZ_BYTES(sh_qp_in) ? DEVX_ADDR_OF(sh_qp_in, in, qpc) : nullptr;
  uint32_t opt = inlen >= 0x14 ? DEVX_GET(sh_qp_in, in, opt_param_mask) : 0;
  ibv_qp_state from;
  {
    std::lock_guard<std::recursive_mutex> g(qp->mu);
    from = qp->attr.qp_state;
  }
  ibv_qp_attr at{};
  int mask = IBV_QP_STATE;
  ibv_qp_state need;
  bool rc = qp->kind == Kind::kRc;
  bool dci = qp->kind == Kind::kDci;
  if (!rc && !dci && opcode != SH_CMD_2ERR_QP && opcode != SH_CMD_2RST_QP)
    return fail(out, outlen, SH_STAT_BAD_OP, kSynBadOp);  // UD/DCT: verbs only in this model
  const void* p = c ? DEVX_ADDR_OF(sh_qpc, c, primary_address_path) : nullptr;
  switch (opcode) {
    case SH_CMD_RST2INIT_QP:
      need = IBV_QPS_RESET;
      at.qp_state = IBV_QPS_INIT;
      at.port_num = uint8_t(DEVX_GET(sh_ads, p, vhca_port_num));
      at.pkey_index = uint16_t(DEVX_GET(sh_ads, p, pkey_index));
      mask |= IBV_QP_PORT | IBV_QP_PKEY_INDEX;
      if (rc) {
        at.qp_access_flags = access_of(c, 0, 0, true);
        mask |= IBV_QP_ACCESS_FLAGS;
      }
      break;
    case SH_CMD_INIT2INIT_QP:
      need = IBV_QPS_INIT;
      at.qp_state = IBV_QPS_INIT;
      if (rc && (opt & (SH_OPT_RRE | SH_OPT_RWE | SH_OPT_RAE))) {
        at.qp_access_flags = access_of(c, qp->attr.qp_access_flags, opt, false);
        mask |= IBV_QP_ACCESS_FLAGS;
      }
      break;
    case SH_CMD_INIT2RTR_QP:
      need = IBV_QPS_INIT;
      at.qp_state = IBV_QPS_RTR;
      at.path_mtu = ibv_mtu(DEVX_GET(sh_qpc, c, mtu));
      mask |= IBV_QP_PATH_MTU;
      if (rc) {
        at.dest_qp_num = DEVX_GET(sh_qpc, c, remote_qpn);
        at.ah_attr.dlid = uint16_t(DEVX_GET(sh_ads, p, rlid));
        at.ah_attr.sl = uint8_t(DEVX_GET(sh_ads, p, sl));
        at.ah_attr.src_path_bits = uint8_t(DEVX_GET(sh_ads, p, mlid));
        at.ah_attr.port_num = uint8_t(DEVX_GET(sh_ads, p, vhca_port_num));
        at.ah_attr.is_global = uint8_t(DEVX_GET(sh_ads, p, grh));
        if (at.ah_attr.is_global) {
          memcpy(at.ah_attr.grh.dgid.raw, DEVX_ADDR_OF(sh_ads, p, rgid_rip), 16);
          at.ah_attr.grh.hop_limit = uint8_t(DEVX_GET(sh_ads, p, hop_limit));
          at.ah_attr.grh.traffic_class = uint8_t(DEVX_GET(sh_ads, p, tclass));
        }
        at.rq_psn = DEVX_GET(sh_qpc, c, next_rcv_psn);
        at.max_dest_rd_atomic = uint8_t(1u << DEVX_GET(sh_qpc, c, log_rra_max));
        at.min_rnr_timer = uint8_t(DEVX_GET(sh_qpc, c, min_rnr_nak));
        mask |= IBV_QP_AV | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                IBV_QP_MIN_RNR_TIMER;
        if (opt & (SH_OPT_RRE | SH_OPT_RWE | SH_OPT_RAE)) {
          at.qp_access_flags = access_of(c, qp->attr.qp_access_flags, opt, false);
          mask |= IBV_QP_ACCESS_FLAGS;
        }
      }
      break;
    case SH_CMD_RTR2RTS_QP:
      need = IBV_QPS_RTR;
      at.qp_state = IBV_QPS_RTS;
      at.sq_psn = DEVX_GET(sh_qpc, c, next_send_psn);
      at.timeout = uint8_t(DEVX_GET(sh_ads, p, ack_timeout));
      at.retry_cnt = uint8_t(DEVX_GET(sh_qpc, c, retry_count));
      at.rnr_retry = uint8_t(DEVX_GET(sh_qpc, c, rnr_retry));
      at.max_rd_atomic = uint8_t(1u << DEVX_GET(sh_qpc, c, log_sra_max));
      mask |= IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
              IBV_QP_MAX_QP_RD_ATOMIC;
      break;
    case SH_CMD_RTS2RTS_QP:
      need = IBV_QPS_RTS;
      at.qp_state = IBV_QPS_RTS;
      if (rc && (opt & (SH_OPT_RRE | SH_OPT_RWE | SH_OPT_RAE))) {
        at.qp_access_flags = access_of(c, qp->attr.qp_access_flags, opt, false);
        mask |= IBV_QP_ACCESS_FLAGS;
      }
      if (rc && (opt & SH_OPT_RNR_TIMEOUT)) {
        at.min_rnr_timer = uint8_t(DEVX_GET(sh_qpc, c, min_rnr_nak));
        mask |= IBV_QP_MIN_RNR_TIMER;
      }
      break;
    case SH_CMD_2ERR_QP:
      need = from;
      at.qp_state = IBV_QPS_ERR;
      break;
    case SH_CMD_2RST_QP:
      need = from;
      at.qp_state = IBV_QPS_RESET;
      break;
    default:
      return fail(out, outlen, SH_STAT_BAD_OP, kSynBadOp);
  }
  if (from != need) return fail(out, outlen, SH_STAT_BAD_RES_STATE, kSynState);
  if (softhca_v11_ibv_modify_qp(b, &at, mask)) return fail(out, outlen, SH_STAT_BAD_PARAM, kSynBadField);
  if (getenv("SOFTHCA_TRACE"))
    fprintf(stderr, "softhca: devx qp 0x%x now state %d dest 0x%x dlid %u port %u access 0x%x mask 0x%x\n",
            qp->qpx.qp_base.qp_num, qp->attr.qp_state, qp->attr.dest_qp_num, qp->attr.ah_attr.dlid,
            qp->attr.port_num, qp->attr.qp_access_flags, mask);
  if (opcode == SH_CMD_2ERR_QP && o && qp->srq) {
    std::lock_guard<std::mutex> m(g_mu);
    raise_devx_event(o, SH_EVENT_LAST_WQE_REACHED);
  }
  return 0;
}

int dct_command(Obj* o, const void* in, size_t inlen, void* out, size_t outlen, bool query) {
  if (inlen < 16 || outlen < 16) return EINVAL;
  uint32_t opcode = DEVX_GET(sh_dct_in, in, opcode);
  if (DEVX_GET(sh_dct_in, in, dctn) != o->num) return EINVAL;
  memset(out, 0, outlen);
  if (query) {
    if (opcode != SH_CMD_QUERY_DCT) return fail(out, outlen, SH_STAT_BAD_OP, kSynBadOp);
    if (outlen < DEVX_ST_SZ_BYTES(sh_dct_out)) return EINVAL;
    void* d = DEVX_ADDR_OF(sh_dct_out, out, dctc);
    memcpy(d, o->ctxbuf, DEVX_ST_SZ_BYTES(sh_dctc));
    DEVX_SET(sh_dctc, d, state, o->drained ? SH_DCTC_STATE_DRAINED : SH_DCTC_STATE_ACTIVE);
    return 0;
  }
  if (opcode != SH_CMD_DRAIN_DCT) return fail(out, outlen, SH_STAT_BAD_OP, kSynBadOp);
  if (o->drained) return fail(out, outlen, SH_STAT_BAD_RES_STATE, kSynState);
  ibv_qp_attr at{};
  at.qp_state = IBV_QPS_ERR;  // accepts nothing more
  softhca_v11_ibv_modify_qp(&o->qp->qpx.qp_base, &at, IBV_QP_STATE);
  o->drained = true;
  return 0;
}

}  // namespace

extern "C" {

int softhca_umem_add(void* addr, size_t size, uint32_t* id) {
  std::lock_guard<std::mutex> m(g_mu);
  *id = g_next_umem++;
  umems()[*id] = Umem{static_cast<uint8_t*>(addr), size};
  return 0;
}

int softhca_umem_remove(uint32_t id) {
  std::lock_guard<std::mutex> m(g_mu);
  auto it = umems().find(id);
  if (it == umems().end()) return EINVAL;
  if (it->second.refs) return EBUSY;  // an object still uses it, as the kernel refuses
  umems().erase(it);
  return 0;
}

void softhca_uar_add(uint32_t page_id, void* page) {
  std::lock_guard<std::mutex> m(g_mu);
  uars()[page_id] = static_cast<uint8_t*>(page);
}

void softhca_uar_remove(uint32_t page_id) {
  uint8_t* page = nullptr;
  {
    std::lock_guard<std::mutex> m(g_mu);
    auto it = uars().find(page_id);
    if (it == uars().end()) return;
    page = it->second;
    uars().erase(it);
  }
  unwatch_uar_page(page);
}

void* softhca_devx_obj_create(ibv_context* c, const void* in, size_t inlen, void* out,
                              size_t outlen, int* err) {
  *err = EINVAL;
  if (!c || !ctx_of(c)->devx || inlen < 16 || outlen < 16) return nullptr;
  memset(out, 0, outlen);
  uint32_t opcode = DEVX_GET(sh_qp_in, in, opcode);
  if (opcode == SH_CMD_CREATE_QP) return create_qp(c, in, inlen, out, outlen, err);
  if (opcode == SH_CMD_CREATE_DCT) return create_dct(c, in, inlen, out, outlen, err);
  if (opcode == SH_CMD_CREATE_RMP) return create_rmp(c, in, inlen, out, outlen, err);
  if (opcode == SH_CMD_CREATE_MKEY) return create_mkey(c, in, inlen, out, outlen, err);
  *err = fail(out, outlen, SH_STAT_BAD_OP, kSynBadOp);  // other objects are not modelled
  return nullptr;
}

int softhca_devx_obj_destroy(void* handle) {
  auto* o = static_cast<Obj*>(handle);
  if (o->type == ObjType::kMkey) {  // DESTROY_MKEY; requests already executing hold the tables
    Hca& h = Hca::get();
    std::unique_lock<std::shared_mutex> g(h.tables);
    remove_indirect_mkey(o->num);
    delete o;
    return 0;
  }
  if (o->type == ObjType::kRmp) {
    if (int e = softhca_v11_ibv_destroy_srq(&o->srq->srq)) return e;  // EBUSY while QPs use it
    std::lock_guard<std::mutex> m(g_mu);
    umems()[o->wq_umem].refs--;
    umems()[o->dbr_umem].refs--;
    delete o;
    return 0;
  }
  {
    std::lock_guard<std::mutex> m(g_mu);
    objs().erase(o->num);
  }
  int e = softhca_v11_ibv_destroy_qp(&o->qp->qpx.qp_base);
  if (e) return e;
  if (o->type == ObjType::kQp) {
    std::lock_guard<std::mutex> m(g_mu);
    umems()[o->wq_umem].refs--;
    umems()[o->dbr_umem].refs--;
  }
  delete o;
  return 0;
}

int softhca_devx_obj_cmd(void* handle, const void* in, size_t inlen, void* out, size_t outlen,
                         int query) {
  auto* o = static_cast<Obj*>(handle);
  if (o->type == ObjType::kMkey) {  // QUERY_MKEY and UMR-style modifications: not modelled
    if (inlen < 16 || outlen < 16) return EINVAL;
    memset(out, 0, outlen);
    return fail(out, outlen, SH_STAT_BAD_OP, kSynBadOp);
  }
  if (o->type == ObjType::kDct) return dct_command(o, in, inlen, out, outlen, query);
  if (o->type == ObjType::kRmp) {
    if (inlen < 16 || outlen < 16) return EINVAL;
    memset(out, 0, outlen);
    if (!query || DEVX_GET(sh_rmp_in, in, opcode) != SH_CMD_QUERY_RMP)
      return fail(out, outlen, SH_STAT_BAD_OP, kSynBadOp);  // MODIFY_RMP (limit) not modelled
    if (DEVX_GET(sh_rmp_in, in, rmpn) != o->num) return EINVAL;
    if (outlen < DEVX_ST_SZ_BYTES(sh_rmp_out)) return EINVAL;
    memcpy(DEVX_ADDR_OF(sh_rmp_out, out, ctx), o->ctxbuf, sizeof o->ctxbuf);
    void* wq = DEVX_ADDR_OF(sh_rmpc, DEVX_ADDR_OF(sh_rmp_out, out, ctx), wq);
    Fabric& f = Hca::get().fab();
    f.lock_direct(f.node());  // guards the device's counter (SrqSlot)
    DEVX_SET(sh_wq, wq, hw_counter, o->srq->st->hw_ci);
    f.unlock_direct(f.node());
    DEVX_SET(sh_wq, wq, sw_counter, be32(o->srq->dbrec[0]) & 0xffff);
    return 0;
  }
  if (inlen >= 4 && query != (DEVX_GET(sh_qp_in, in, opcode) == SH_CMD_QUERY_QP)) return EINVAL;
  return qp_command(o->qp, o, in, inlen, out, outlen);
}

// mlx5dv_devx_qp_modify/_query on a QP created through verbs.
int softhca_devx_qp_cmd(ibv_qp* qp, const void* in, size_t inlen, void* out, size_t outlen,
                        int query) {
  if (!ctx_of(qp->context)->devx) return EINVAL;
  if (inlen >= 4 && query != (DEVX_GET(sh_qp_in, in, opcode) == SH_CMD_QUERY_QP)) return EINVAL;
  Obj* o = nullptr;
  {
    std::lock_guard<std::mutex> m(g_mu);
    auto it = objs().find(qp->qp_num);
    if (it != objs().end()) o = it->second;
  }
  return qp_command(reinterpret_cast<Qp*>(qp), o, in, inlen, out, outlen);
}

int softhca_devx_subscribe(void* handle, int wfd, int omit, uint64_t cookie, const uint16_t* ev,
                           size_t n) {
  auto* o = static_cast<Obj*>(handle);
  if (!o || o->type == ObjType::kMkey) return EINVAL;  // unaffiliated events: none are modelled
  for (size_t i = 0; i < n; ++i)
    if (ev[i] != SH_EVENT_LAST_WQE_REACHED) return EINVAL;
  std::lock_guard<std::mutex> m(g_mu);
  o->subs.push_back(Sub{wfd, omit != 0, cookie, std::vector<uint16_t>(ev, ev + n)});
  return 0;
}

void softhca_devx_unsubscribe_fd(int wfd) {
  std::lock_guard<std::mutex> m(g_mu);
  for (auto& [n, o] : objs())
    for (size_t i = 0; i < o->subs.size();)
      if (o->subs[i].wfd == wfd) o->subs.erase(o->subs.begin() + long(i));
      else ++i;
}

}  // extern "C"
