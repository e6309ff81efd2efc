// softhca direct sends: a SEND or SEND_WITH_IMM that the requester's thread executes into the
// responder's receive queue and CQ (SOFTHCA_DIRECT=1) must leave the receiver exactly what the
// responder's own model leaves (SOFTHCA_DIRECT=0): the same receive CQEs, field by field as a driver
// reads them, and the same bytes in the receive buffers.
//
// Each scenario runs a sender child once with each setting. The sender starts its receiver child,
// which reads its CQ buffer by owner bit (a receiver calling ibv_poll_cq gets the message path
// whatever the setting) and writes a transcript of what it got; the sender relays it, followed by
// the "sends N" count of its SOFTHCA_STATS line. The two transcripts must be identical, and only
// the SOFTHCA_DIRECT=1 sender may have executed sends itself.
#include <signal.h>
#include <sys/mman.h>

#include <cstdarg>

#include "test/softhca/tests/common.h"

namespace {

constexpr uint8_t kFill = 0xee;  // receive buffers before anything lands
// Each receive has a slot of its own: two SGEs with a gap between them (so a message spans both
// and the gap must stay untouched), or for UD one SGE holding the 40-byte GRH area and payload.
constexpr uint32_t kSlot = 4160, kSge0 = 24, kSge1Off = 64, kSge1 = 4072, kUdLen = 40 + 4096;
constexpr int kMaxRecvs = 64;
constexpr unsigned kChildSeconds = 20;  // a child that hangs is ended by its alarm
constexpr uint64_t kDcKey = 0x5eed;
constexpr uint32_t kQkey = 0x11111111;  // make_ud's

// ---- scenarios --------------------------------------------------------------------------------

enum class Kind { kRc, kSrq, kUd, kDc, kArmed };

// The sender gets the scenario in its environment and its receiver inherits it.
struct Scenario {
  Kind kind = Kind::kRc;
  int cqe_size = 64;
};

Scenario scenario_from_env() {
  Scenario s;
  const char* k = getenv("DS_SCENARIO");
  const std::string name = k ? k : "";
  s.kind = name == "srq"     ? Kind::kSrq
           : name == "ud"    ? Kind::kUd
           : name == "dc"    ? Kind::kDc
           : name == "armed" ? Kind::kArmed
                             : Kind::kRc;
  const char* c = getenv("DS_CQE_SIZE");
  s.cqe_size = c ? atoi(c) : 64;
  return s;
}

bool own_rq(Kind k) { return k == Kind::kRc || k == Kind::kArmed; }

struct Msg {
  uint32_t len;
  bool imm, solicited, inl, grh;  // inl: posted with IBV_SEND_INLINE; grh: UD with a global AH
};

// The messages of a scenario, in sending order (one receive each). Sizes straddle the
// scatter-to-CQE limits (32 bytes in a 64-byte CQE, 64 in a 128-byte one) and the first SGE.
std::vector<Msg> messages(Kind k) {
  if (k == Kind::kArmed) return {{8, false, false, false, false}};
  std::vector<Msg> v;
  for (bool grh : {false, true}) {
    if (grh && k != Kind::kUd) break;
    for (bool imm : {false, true})
      for (uint32_t n : {1u, 8u, 32u, 33u, 64u, 65u, 200u, 4000u})
        v.push_back({n, imm, false, imm && n <= 64, grh});
  }
  v.push_back({8, true, true, false, k == Kind::kUd});
  return v;
}

uint8_t payload_byte(size_t msg, uint32_t i) { return uint8_t(msg * 37 + i * 11 + 1); }
uint32_t imm_of(size_t msg) { return htonl(0xd5000000u | uint32_t(msg)); }

// ---- text helpers -----------------------------------------------------------------------------

std::string hex(const uint8_t* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += digits[p[i] >> 4];
    s += digits[p[i] & 15];
  }
  return s;
}

bool unhex(const char* s, uint8_t* out, size_t n) {
  if (strlen(s) != 2 * n) return false;
  for (size_t i = 0; i < n; ++i)
    if (sscanf(s + 2 * i, "%2hhx", &out[i]) != 1) return false;
  return true;
}

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

// Numbers that differ from run to run (QPNs, LIDs, SRQ numbers) by the name of what they are.
std::string as(uint32_t v, uint32_t expected, const char* name) {
  return v == expected ? name : std::to_string(v);
}

// The 64-byte rows of p[0, n) that differ from kFill (those not listed are untouched).
void dump_rows(std::string& out, const std::string& label, const uint8_t* p, uint32_t n) {
  for (uint32_t off = 0; off < n; off += 64) {
    const uint32_t len = std::min(64u, n - off);
    bool fill = true;
    for (uint32_t i = 0; i < len; ++i) fill = fill && p[off + i] == kFill;
    if (!fill) out += fmt("%s+%04u: ", label.c_str(), off) + hex(p + off, len) + "\n";
  }
}

// ---- the verbs objects ------------------------------------------------------------------------

ibv_cq* make_cq(Dev& d, int cqe_size, ibv_comp_channel* ch) {
  ibv_cq_init_attr_ex a{};
  a.cqe = 128;
  a.channel = ch;
  mlx5dv_cq_init_attr dv{};
  dv.comp_mask = MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE;
  dv.cqe_size = uint16_t(cqe_size);
  ibv_cq_ex* cq = mlx5dv_create_cq(d.ctx, &a, &dv);
  return cq ? ibv_cq_ex_to_cq(cq) : nullptr;
}

ibv_srq* make_srq(Dev& d) {
  ibv_srq_init_attr a{};
  a.attr.max_wr = kMaxRecvs;
  a.attr.max_sge = 2;
  return ibv_create_srq(d.pd, &a);
}

// An RC QP in INIT whose receives come from `srq`.
ibv_qp* make_rc_on_srq(Dev& d, ibv_cq* cq, ibv_srq* srq) {
  ibv_qp_init_attr a{};
  a.qp_type = IBV_QPT_RC;
  a.send_cq = a.recv_cq = cq;
  a.srq = srq;
  a.cap.max_send_wr = 4;
  a.cap.max_send_sge = 1;
  ibv_qp* qp = ibv_create_qp(d.pd, &a);
  if (!qp) return nullptr;
  ibv_qp_attr m{};
  m.qp_state = IBV_QPS_INIT;
  m.port_num = 1;
  if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    return nullptr;
  return qp;
}

// ---- the receiver -----------------------------------------------------------------------------

// A CQ read by owner bit, as a backend does it: no verbs call, so the receiver never counts as
// polling. Entry n is at buf + n * cqe_size, its 64-byte CQE in the entry's last 64 bytes.
struct RawCq {
  mlx5dv_cq dv{};
  uint32_t ci = 0;
  bool init(ibv_cq* cq) {
    mlx5dv_obj o{};
    o.cq.in = cq;
    o.cq.out = &dv;
    return mlx5dv_init_obj(&o, MLX5DV_OBJ_CQ) == 0;
  }
  uint8_t* entry(uint32_t n) const {
    return static_cast<uint8_t*>(dv.buf) + size_t(n & (dv.cqe_cnt - 1)) * dv.cqe_size;
  }
  bool ready() const {  // the next entry is the device's
    auto* c = reinterpret_cast<mlx5_cqe64*>(entry(ci) + dv.cqe_size - 64);
    uint8_t own = __atomic_load_n(&c->op_own, __ATOMIC_ACQUIRE);
    return (own >> 4) != MLX5_CQE_INVALID && (own & 1) == ((ci / dv.cqe_cnt) & 1);
  }
  // The next entry, copied whole, then handed back; false if none comes within `seconds`.
  bool next(std::vector<uint8_t>* out, int seconds) {
    timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (uint64_t spins = 1; !ready(); ++spins) {
      if (spins % 1024) continue;
      clock_gettime(CLOCK_MONOTONIC, &t);
      if (t.tv_sec - t0.tv_sec > seconds) return false;
      if (spins > 100000) usleep(10);
    }
    out->assign(entry(ci), entry(ci) + dv.cqe_size);
    ci++;
    __atomic_store_n(&dv.dbrec[0], bswap32(ci & 0xffffff), __ATOMIC_RELEASE);
    return true;
  }
};

// Who is who in a receive CQE: the receiver's QP (or DCT), its SRQ, the sender's QP and LID.
struct Names {
  uint32_t self_qpn, srqn, peer_qpn;
  uint16_t peer_lid;
};

// The fields of a receive CQE that rdma-core's mlx5 poll code reads, and the scatter-to-CQE data.
std::string describe_cqe(uint32_t n, const std::vector<uint8_t>& e, const Names& w) {
  const auto& c = *reinterpret_cast<const mlx5_cqe64*>(e.data() + e.size() - 64);
  const uint8_t own = c.op_own;
  const char* scatter = (own & MLX5_INLINE_SCATTER_32)   ? "32"
                        : (own & MLX5_INLINE_SCATTER_64) ? "64"
                                                         : "none";
  std::string s = fmt("cqe %u: op_own=0x%02x opcode=%u se=%u scatter=%s byte_cnt=%u wqe_counter=%u",
                      n, own, own >> 4, (own >> 1) & 1, scatter, ntohl(c.byte_cnt),
                      ntohs(c.wqe_counter));
  s += " qpn=" + as(ntohl(c.sop_drop_qpn) & 0xffffff, w.self_qpn, "self");
  s += " srqn=" + as(ntohl(c.srqn_uidx) & 0xffffff, w.srqn, "srq");
  s += fmt(" imm=0x%08x", ntohl(c.imm_inval_pkey));
  if (own & MLX5_INLINE_SCATTER_32) {  // the data replaced the CQE's first half (rqpn and slid)
    s += "\n  cqe data: " + hex(reinterpret_cast<const uint8_t*>(&c), 32);
  } else {
    const uint32_t f = ntohl(c.flags_rqpn);
    s += fmt(" flags=0x%02x grh=%u", f >> 24, (f >> 28) & 3);
    s += " rqpn=" + as(f & 0xffffff, w.peer_qpn, "peer");
    s += " slid=" + as(ntohs(c.slid), w.peer_lid, "peer");
    if (own & MLX5_INLINE_SCATTER_64) s += "\n  cqe data: " + hex(e.data(), 64);  // the first half
  }
  return s + "\n";
}

// Sets up the scenario's receive side, reports "qpn lid gid", learns the sender's, and after
// "ready" reads every message's CQE raw; then prints the CQEs and what landed in the buffers.
int peer_receiver() {
  alarm(kChildSeconds);
  const Scenario sc = scenario_from_env();
  const std::vector<Msg> msgs = messages(sc.kind);
  Dev d;
  if (!d.ctx) return 2;
  ibv_comp_channel* ch = sc.kind == Kind::kArmed ? ibv_create_comp_channel(d.ctx) : nullptr;
  ibv_cq* cq = make_cq(d, sc.cqe_size, ch);
  alignas(64) static uint8_t rbuf[kMaxRecvs][kSlot];
  memset(rbuf, kFill, sizeof rbuf);
  ibv_mr* mr = ibv_reg_mr(d.pd, rbuf, sizeof rbuf, IBV_ACCESS_LOCAL_WRITE);
  ibv_srq* srq = sc.kind == Kind::kSrq || sc.kind == Kind::kDc ? make_srq(d) : nullptr;
  ibv_qp* qp = nullptr;
  if (cq) {
    if (own_rq(sc.kind)) qp = make_rc(d, cq);
    else if (sc.kind == Kind::kSrq && srq) qp = make_rc_on_srq(d, cq, srq);
    else if (sc.kind == Kind::kUd) qp = make_ud(d, cq, kMaxRecvs);
    else if (sc.kind == Kind::kDc && srq) qp = make_dct(d, cq, srq, kDcKey, IBV_ACCESS_REMOTE_WRITE);
  }
  RawCq rcq;
  if (!qp || !mr || (sc.kind == Kind::kArmed && !ch) || !rcq.init(cq)) return 3;
  uint32_t srqn = 0;
  if (srq) {
    mlx5dv_srq ds{};
    ds.comp_mask = MLX5DV_SRQ_MASK_SRQN;  // the number is filled in only when asked for
    mlx5dv_obj o{};
    o.srq.in = srq;
    o.srq.out = &ds;
    if (mlx5dv_init_obj(&o, MLX5DV_OBJ_SRQ)) return 4;
    srqn = ds.srqn;
  }
  // Every receive is posted up front: posting is not polling, and nothing is reaped meanwhile.
  for (size_t k = 0; k < msgs.size(); ++k) {
    uint8_t* slot = rbuf[k];
    ibv_sge s[2] = {{uint64_t(uintptr_t(slot)), kSge0, mr->lkey},
                    {uint64_t(uintptr_t(slot + kSge1Off)), kSge1, mr->lkey}};
    if (sc.kind == Kind::kUd) s[0].length = kUdLen;
    ibv_recv_wr w{}, *bad;
    w.wr_id = k;
    w.sg_list = s;
    w.num_sge = sc.kind == Kind::kUd ? 1 : 2;
    if (srq ? ibv_post_srq_recv(srq, &w, &bad) : ibv_post_recv(qp, &w, &bad)) return 5;
  }
  ibv_gid gid;
  if (ibv_query_gid(d.ctx, 1, 0, &gid)) return 6;
  printf("%u %u %s\n", qp->qp_num, lid_of(d), hex(gid.raw, 16).c_str());
  fflush(stdout);
  unsigned peer_qpn, peer_lid;
  char peer_gid_hex[40];
  uint8_t peer_gid[16];
  if (scanf("%u %u %39s", &peer_qpn, &peer_lid, peer_gid_hex) != 3 ||
      !unhex(peer_gid_hex, peer_gid, 16))
    return 7;
  if ((own_rq(sc.kind) || sc.kind == Kind::kSrq) && connect_rc(qp, peer_qpn, uint16_t(peer_lid)))
    return 8;
  if (ch && ibv_req_notify_cq(cq, 0)) return 9;
  printf("ready\n");
  fflush(stdout);

  std::string out;
  if (ch) {
    // The event comes after the CQE is written: once the channel is readable, the CQE is there.
    pollfd p{ch->fd, POLLIN, 0};
    ibv_cq* ev = nullptr;
    void* ctx = nullptr;
    const bool readable = poll(&p, 1, 10000) == 1;
    const bool cqe_there = rcq.ready();
    const bool got = readable && ibv_get_cq_event(ch, &ev, &ctx) == 0 && ev == cq;
    if (got) ibv_ack_cq_events(cq, 1);
    out += fmt("event: %s; cqe there at the event: %s\n", got ? "cq" : "none",
               cqe_there ? "yes" : "no");
  }
  // Without an SRQ srqn_uidx must be 0: no name to give it.
  const Names names{qp->qp_num, srq ? srqn : ~0u, peer_qpn, uint16_t(peer_lid)};
  std::vector<uint8_t> e;
  for (uint32_t n = 0; n < msgs.size(); ++n) {
    if (!rcq.next(&e, 10)) {
      out += fmt("cqe %u: none\n", n);
      break;
    }
    out += describe_cqe(n, e, names);
  }
  usleep(20000);  // nothing else may come
  out += rcq.ready() ? "an extra cqe\n" : "no more cqes\n";
  for (size_t k = 0; k < msgs.size(); ++k) {
    const std::string label = fmt("recv %zu", k);
    if (sc.kind == Kind::kUd) {  // the GRH area always, naming the GIDs it carries
      out += fmt("%s grh (sgid %s, dgid %s): ", label.c_str(),
                 memcmp(rbuf[k] + 8, peer_gid, 16) ? "-" : "peer",
                 memcmp(rbuf[k] + 24, gid.raw, 16) ? "-" : "self") +
             hex(rbuf[k], 40) + "\n";
      dump_rows(out, label + " data", rbuf[k] + 40, kUdLen - 40);
    } else {
      dump_rows(out, label + " sge0", rbuf[k], kSge1Off);  // with the gap after it
      dump_rows(out, label + " sge1", rbuf[k] + kSge1Off, kSge1);
    }
  }
  fputs(out.c_str(), stdout);
  fflush(stdout);
  ibv_destroy_qp(qp);
  if (srq) ibv_destroy_srq(srq);
  ibv_dereg_mr(mr);
  ibv_destroy_cq(cq);
  if (ch) ibv_destroy_comp_channel(ch);
  return 0;
}

// ---- the sender -------------------------------------------------------------------------------

// ibv_poll_cq until one completion arrives; false after `seconds` without one.
bool wait_wc_for(ibv_cq* cq, ibv_wc* wc, int seconds) {
  timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (uint64_t i = 0;; ++i) {
    int n = ibv_poll_cq(cq, 1, wc);
    if (n) return n > 0;
    if (i % 1024) continue;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (t.tv_sec - t0.tv_sec > seconds) return false;
    if (i > 10000) usleep(10);
  }
}

// The sender's side of one scenario: its QP (or DCI) and what it sends through.
struct Tx {
  Kind kind;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  ibv_mr* mr = nullptr;
  ibv_ah *ah = nullptr, *ah_grh = nullptr;  // UD and DC
  uint32_t rqpn = 0;
  alignas(64) uint8_t buf[4096];

  // Posts message k and waits for its completion; false (saying why on stdout) if it fails.
  bool send(size_t k, const Msg& m) {
    for (uint32_t i = 0; i < m.len; ++i) buf[i] = payload_byte(k, i);
    unsigned flags = IBV_SEND_SIGNALED | (m.solicited ? IBV_SEND_SOLICITED : 0) |
                     (m.inl ? IBV_SEND_INLINE : 0);
    int r;
    if (kind == Kind::kDc) {
      ibv_qp_ex* x = ibv_qp_to_qp_ex(qp);
      ibv_wr_start(x);
      x->wr_id = k;
      x->wr_flags = flags & ~unsigned(IBV_SEND_INLINE);
      if (m.imm) ibv_wr_send_imm(x, imm_of(k));
      else ibv_wr_send(x);
      mlx5dv_wr_set_dc_addr(mlx5dv_qp_ex_from_ibv_qp_ex(x), ah, rqpn, kDcKey);
      if (m.inl) ibv_wr_set_inline_data(x, buf, m.len);
      else ibv_wr_set_sge(x, mr->lkey, uint64_t(uintptr_t(buf)), m.len);
      r = ibv_wr_complete(x);
    } else {
      ibv_sge s{uint64_t(uintptr_t(buf)), m.len, mr->lkey};
      ibv_send_wr w{}, *bad;
      w.wr_id = k;
      w.sg_list = &s;
      w.num_sge = 1;
      w.opcode = m.imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
      w.imm_data = imm_of(k);
      w.send_flags = flags;
      if (kind == Kind::kUd) {
        w.wr.ud.ah = m.grh ? ah_grh : ah;
        w.wr.ud.remote_qpn = rqpn;
        w.wr.ud.remote_qkey = kQkey;
      }
      r = ibv_post_send(qp, &w, &bad);
    }
    ibv_wc wc{};
    if (r || !wait_wc_for(cq, &wc, 10) || wc.status != IBV_WC_SUCCESS) {
      printf("send %zu (%u bytes): post %d, %s\n", k, m.len, r, ibv_wc_status_str(wc.status));
      return false;
    }
    return true;
  }
};

// Reads a stream to its end (its writer is bounded by its own alarm).
std::string read_to_end(FILE* f) {
  std::string s;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
  return s;
}

// Runs the scenario against a receiver child, prints the receiver's transcript (or what went
// wrong), then "sends N" from this process's SOFTHCA_STATS line.
int peer_sender() {
  alarm(kChildSeconds + 5);
  const Scenario sc = scenario_from_env();
  const std::vector<Msg> msgs = messages(sc.kind);
  Child rx("receiver", {"SOFTHCA_NODE=ds-receiver", "SOFTHCA_STATS=0"});
  unsigned rqpn, rlid;
  char rgid_hex[40];
  ibv_gid rgid;
  if (fscanf(rx.out, "%u %u %39s", &rqpn, &rlid, rgid_hex) != 3 || !unhex(rgid_hex, rgid.raw, 16))
    return 2;
  auto d = std::make_unique<Dev>();
  auto t = std::make_unique<Tx>();
  t->kind = sc.kind;
  t->rqpn = rqpn;
  t->cq = make_cq(*d, 64, nullptr);
  if (!d->ctx || !t->cq) return 3;
  t->mr = ibv_reg_mr(d->pd, t->buf, sizeof t->buf, IBV_ACCESS_LOCAL_WRITE);
  if (sc.kind == Kind::kUd) t->qp = make_ud(*d, t->cq, 64);
  else if (sc.kind == Kind::kDc)
    t->qp = make_dci(*d, t->cq, {64, 64, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM});
  else t->qp = make_rc(*d, t->cq);
  if (!t->qp || !t->mr) return 4;
  if (sc.kind != Kind::kUd && sc.kind != Kind::kDc &&
      connect_rc(t->qp, rqpn, uint16_t(rlid), 7, 14, 7))
    return 5;
  ibv_ah_attr aa{};
  aa.dlid = uint16_t(rlid);
  aa.port_num = 1;
  t->ah = ibv_create_ah(d->pd, &aa);
  aa.is_global = 1;  // a GRH to the receiver's GID
  aa.grh.dgid = rgid;
  aa.grh.sgid_index = 0;
  aa.grh.hop_limit = 64;
  t->ah_grh = ibv_create_ah(d->pd, &aa);
  if (!t->ah || !t->ah_grh) return 6;
  ibv_gid gid;
  if (ibv_query_gid(d->ctx, 1, 0, &gid)) return 7;
  fprintf(rx.in, "%u %u %s\n", t->qp->qp_num, lid_of(*d), hex(gid.raw, 16).c_str());
  fflush(rx.in);
  char word[16];
  if (fscanf(rx.out, "%15s", word) != 1 || strcmp(word, "ready")) return 8;
  for (size_t k = 0; k < msgs.size(); ++k)
    if (!t->send(k, msgs[k])) break;
  std::string transcript = read_to_end(rx.out);
  if (int st = rx.wait()) transcript += fmt("receiver exit %d\n", st);
  fputs(transcript.c_str(), stdout);

  // The statistics line comes when the device closes: catch it in a memfd, then pass it on.
  ibv_destroy_ah(t->ah);
  ibv_destroy_ah(t->ah_grh);
  ibv_destroy_qp(t->qp);
  ibv_dereg_mr(t->mr);
  ibv_destroy_cq(t->cq);
  fflush(stderr);
  const int saved = dup(2), mem = memfd_create("stats", 0);
  dup2(mem, 2);
  d.reset();
  fflush(stderr);
  dup2(saved, 2);
  std::string stats(4096, '\0');
  stats.resize(size_t(std::max<ssize_t>(0, pread(mem, stats.data(), stats.size(), 0))));
  fputs(stats.c_str(), stderr);
  const size_t at = stats.find(" sends ");
  printf("sends %ld\n", at == std::string::npos ? -1L : atol(stats.c_str() + at + 7));
  return 0;
}

// ---- the tests --------------------------------------------------------------------------------

struct Run {
  int status = -1;
  std::string text;  // the receiver's transcript
  long sends = -1;   // sends the sender executed directly
};

// Reads a child's stdout to its end, for at most `seconds`; then reaps it (killing it if late).
Run run_sender(const char* scenario, int cqe_size, bool direct) {
  Child c("sender", {std::string("SOFTHCA_DIRECT=") + (direct ? "1" : "0"), "SOFTHCA_STATS=1",
                     "SOFTHCA_NODE=ds-sender", std::string("DS_SCENARIO=") + scenario,
                     "DS_CQE_SIZE=" + std::to_string(cqe_size)});
  Run r;
  timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  const int fd = fileno(c.out);
  for (char buf[4096];;) {
    clock_gettime(CLOCK_MONOTONIC, &t);
    const long left_ms = 40000 - (t.tv_sec - t0.tv_sec) * 1000 - (t.tv_nsec - t0.tv_nsec) / 1000000;
    pollfd p{fd, POLLIN, 0};
    if (left_ms <= 0 || poll(&p, 1, int(left_ms)) != 1) {
      ADD_FAILURE() << "the sender did not finish in time";
      kill(c.pid, SIGKILL);
      break;
    }
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    r.text.append(buf, size_t(n));
  }
  r.status = c.wait();
  const size_t at = r.text.rfind("sends ");
  if (at != std::string::npos && (at == 0 || r.text[at - 1] == '\n')) {
    r.sends = atol(r.text.c_str() + at + 6);
    r.text.resize(at);
  }
  return r;
}

// The first lines where two transcripts differ, or "" if they are the same.
std::string difference(const std::string& a, const std::string& b) {
  size_t i = 0, line = 1;
  while (i < a.size() && i < b.size() && a[i] == b[i]) line += a[i++] == '\n';
  if (i == a.size() && i == b.size()) return "";
  const size_t start = i == 0 ? 0 : std::min(a.rfind('\n', i - 1), b.rfind('\n', i - 1)) + 1;
  auto upto = [&](const std::string& s) { return s.substr(start, s.find('\n', i) - start); };
  return "line " + std::to_string(line) + ":\n  direct:  " + upto(a) + "\n  message: " + upto(b);
}

// Runs a scenario with the send executed directly and by the receiver's model; both must give
// the receiver the same thing. `expect`: text the transcript must hold (the scenario's point).
std::string same_both_ways(const char* scenario, int cqe_size, std::vector<std::string> expect = {}) {
  SCOPED_TRACE(std::string(scenario) + ", " + std::to_string(cqe_size) + "-byte CQEs");
  const Run on = run_sender(scenario, cqe_size, true);
  const Run off = run_sender(scenario, cqe_size, false);
  EXPECT_EQ(on.status, 0) << on.text;
  EXPECT_EQ(off.status, 0) << off.text;
  if (on.status || off.status) return "";
  EXPECT_GT(on.sends, 0) << "SOFTHCA_DIRECT=1 executed no send directly";
  EXPECT_EQ(off.sends, 0) << "SOFTHCA_DIRECT=0 executed sends directly";
  const std::string diff = difference(on.text, off.text);
  EXPECT_TRUE(diff.empty()) << "the receiver got something else when the send was executed "
                               "directly, at "
                            << diff;
  EXPECT_EQ(on.text.find(": none"), std::string::npos) << on.text;
  EXPECT_NE(on.text.find("no more cqes"), std::string::npos) << on.text;
  for (const std::string& s : expect) EXPECT_NE(on.text.find(s), std::string::npos) << s;
  fprintf(stderr, "%s, %d-byte CQEs: %ld sends executed directly, transcript %zu bytes\n", scenario,
          cqe_size, on.sends, on.text.size());
  return on.text;
}

// RC with its own receive queue: SEND and SEND_WITH_IMM of 1 to 4000 bytes over two SGEs, one
// solicited; the small ones are scattered into the CQE (up to 32 bytes in a 64-byte CQE, 64 in
// a 128-byte one).
TEST(DirectSend, RcOwnReceiveQueue) {
  const std::string text = same_both_ways(
      "rc", 64, {"scatter=32 byte_cnt=32", "scatter=none byte_cnt=33", "se=1", "opcode=2 "});
  // A plain SEND carries no immediate, whatever the work request's imm_data field holds (the
  // sender sets it): rdma-core's mlx5 writes 0 into the WQE, so the receive CQE reports 0.
  for (size_t at = 0; (at = text.find("opcode=2 ", at)) != std::string::npos; ++at) {
    const std::string line = text.substr(at, text.find('\n', at) - at);
    EXPECT_NE(line.find(" imm=0x00000000"), std::string::npos) << line;
  }
  same_both_ways("rc", 128, {"scatter=64 byte_cnt=64", "scatter=none byte_cnt=65", "se=1"});
}

// RC with an SRQ: no scatter to the CQE; wqe_counter names the SRQ slot, srqn_uidx the SRQ.
TEST(DirectSend, RcSharedReceiveQueue) {
  same_both_ways("srq", 64, {"srqn=srq", "scatter=none byte_cnt=1 "});
  same_both_ways("srq", 128, {"srqn=srq"});
}

// UD with and without a GRH (global AH to the receiver's GID): the 40-byte GRH area too.
TEST(DirectSend, UdWithAndWithoutGrh) {
  same_both_ways("ud", 64, {"grh=0", "grh=1", "(sgid peer, dgid self)", "byte_cnt=4040"});
  same_both_ways("ud", 128, {"(sgid peer, dgid self)"});
}

// DC: a DCI sends to a DCT (SRQ, access key) through mlx5dv_wr_set_dc_addr.
TEST(DirectSend, DcToDct) {
  same_both_ways("dc", 64, {"srqn=srq", "rqpn=peer"});
  same_both_ways("dc", 128, {"srqn=srq"});
}

// A receive CQ armed through a completion channel: the event comes, after the CQE.
TEST(DirectSend, ArmedCqGetsItsEvent) {
  same_both_ways("armed", 64, {"event: cq; cqe there at the event: yes"});
  same_both_ways("armed", 128, {"event: cq; cqe there at the event: yes"});
}

int peer(const char* mode) {
  const std::string m = mode;
  if (m == "sender") return peer_sender();
  if (m == "receiver") return peer_receiver();
  return 100;
}

}  // namespace

int main(int argc, char** argv) { return softhca_test_main(argc, argv, "direct_send_test", peer); }
