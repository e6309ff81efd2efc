#include "hca.h"

#include "chaos.h"
#include "doorbell.h"
#include "exec_knobs.h"
#include "mkey.h"
#include "recv.h"
#include "wakeup.h"
#include "wqe_log.h"

#include <signal.h>
#include <pthread.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <tuple>
#include <cstdlib>
#include <cstring>
#include <future>

namespace softhca {

namespace {

double env_rate(const char* name) {
  const char* e = getenv(name);
  if (!e || !*e) return 0;
  char* end;
  double v = strtod(e, &end);
  if (*end || v < 0 || v > 1) {
    fprintf(stderr, "softhca: %s=%s rejected: accepted range is 0..1\n", name, e);
    exit(1);
  }
  return v;
}

Config load_config() {
  Config c;
  c.num_devices = int(env_knob("SOFTHCA_NUM_DEVICES", 1, 0, 8));
  c.num_ports = int(env_knob("SOFTHCA_NUM_PORTS", 1, 1, 2));
  // SOFTHCA_PORT_MTU=bytes (256..4096): the ports' MTU; with SOFTHCA_PORT_MTU_RANK=R only the
  // launcher's rank R gets it (a host with a smaller link MTU in the job).
  if (long mtu = env_knob("SOFTHCA_PORT_MTU", 4096, 256, 4096); mtu != 4096) {
    if (mtu & (mtu - 1)) {
      fprintf(stderr, "softhca: SOFTHCA_PORT_MTU=%ld rejected: accepted values are 256, 512, 1024, 2048, 4096\n", mtu);
      exit(1);
    }
    c.port_mtu = ibv_mtu(__builtin_ctzl(uint64_t(mtu)) - 7);  // 256 -> IBV_MTU_256 (1)
    if (long only = env_knob("SOFTHCA_PORT_MTU_RANK", -1, -1, 1 << 30); only >= 0) {
      const char* r = getenv("PMIX_RANK") ? getenv("PMIX_RANK") : getenv("PMI_RANK");
      if (!r || atol(r) != only) c.port_mtu = IBV_MTU_4096;
    }
  }
  // SOFTHCA_MAX_RD_ATOMIC: the device's initiator depth and responder resources (a power of
  // two, as QUERY_HCA_CAP's log_max_ra_* say it).
  c.max_rd_atomic = uint32_t(env_knob("SOFTHCA_MAX_RD_ATOMIC", 16, 1, 16));
  if (c.max_rd_atomic & (c.max_rd_atomic - 1)) {
    fprintf(stderr, "softhca: SOFTHCA_MAX_RD_ATOMIC=%u rejected: accepted values are 1, 2, 4, 8, 16\n", c.max_rd_atomic);
    exit(1);
  }
  if (const char* l = getenv("SOFTHCA_LINK"); l && *l) {
    if (!strcmp(l, "ib")) c.link = Link::kIb;
    else if (!strcmp(l, "ib-grh")) c.link = Link::kIbGrh;
    else if (!strcmp(l, "roce")) c.link = Link::kRoce;
    else {
      fprintf(stderr, "softhca: SOFTHCA_LINK=%s rejected: accepted values are ib, ib-grh, roce\n", l);
      exit(1);
    }
  }
  c.atomic_window_us = uint32_t(env_knob("SOFTHCA_ATOMIC_WINDOW_US", 0, 0, 1000000));
  c.masked_atomics = env_knob("SOFTHCA_MASKED_ATOMICS", 1, 0, 1) != 0;
  // SOFTHCA_MASKED_ATOMICS_RANK=R: that setting holds only for the process its launcher made rank
  // R (PMIX_RANK or PMI_RANK): one node of a job with a different device.
  if (long only = env_knob("SOFTHCA_MASKED_ATOMICS_RANK", -1, -1, 1 << 30); only >= 0) {
    const char* r = getenv("PMIX_RANK") ? getenv("PMIX_RANK") : getenv("PMI_RANK");
    if (!r || atol(r) != only) c.masked_atomics = true;
  }
  // SOFTHCA_EXT_ATOMIC_MAX: the widest masked atomic operand, advertised in QUERY_HCA_CAP's
  // atomic_size_qp/_dc and executed (see execute_wqe); 8 is a ConnectX-6 as rdma-core 44 sees it.
  c.ext_atomic_max = uint32_t(env_knob("SOFTHCA_EXT_ATOMIC_MAX", 8, 8, 256));
  if (c.ext_atomic_max & (c.ext_atomic_max - 1)) {
    fprintf(stderr, "softhca: SOFTHCA_EXT_ATOMIC_MAX=%u rejected: accepted values are 8, 16, 32, 64, 128, 256\n", c.ext_atomic_max);
    exit(1);
  }
  c.pcie_atomics = env_knob("SOFTHCA_PCIE_ATOMICS", 0, 0, 1) != 0;
  c.lose_atomic = uint32_t(env_knob("SOFTHCA_LOSE_ATOMIC", 0, 0, 1u << 30));
  // SOFTHCA_LOSE_ATOMIC_RANK=R: only in the process its launcher made rank R.
  if (long only = env_knob("SOFTHCA_LOSE_ATOMIC_RANK", -1, -1, 1 << 30); only >= 0) {
    const char* r = getenv("PMIX_RANK") ? getenv("PMIX_RANK") : getenv("PMI_RANK");
    if (!r || atol(r) != only) c.lose_atomic = 0;
  }
  c.log_max_msg = uint32_t(env_knob("SOFTHCA_LOG_MAX_MSG", 30, 20, 30));
  c.compact_av = env_knob("SOFTHCA_COMPACT_AV", 1, 0, 1) != 0;
  c.devx = env_knob("SOFTHCA_DEVX", 1, 0, 1) != 0;
  const char* e = getenv("SOFTHCA_ATOMIC_ENDIAN");
  if (e && *e) {
    if (!strcmp(e, "host")) c.atomic_host_endian = true;
    else if (!strcmp(e, "big")) c.atomic_host_endian = false;
    else {
      fprintf(stderr, "softhca: SOFTHCA_ATOMIC_ENDIAN=%s rejected: accepted values are host, big\n", e);
      exit(1);
    }
  }
  c.ud_loss = env_rate("SOFTHCA_UD_LOSS");
  c.ud_dup = env_rate("SOFTHCA_UD_DUP");
  c.ud_reorder = env_rate("SOFTHCA_UD_REORDER");
  c.seed = uint64_t(env_knob("SOFTHCA_SEED", 1, 0, 0x7fffffffffffffffL));
  c.max_retry_ms = uint32_t(env_knob("SOFTHCA_MAX_RETRY_MS", 2000, 1, 3600000));
  c.spin_us = uint32_t(env_knob("SOFTHCA_SPIN_US", 0, 0, 100000));
  c.stats = env_knob("SOFTHCA_STATS", 0, 0, 1) != 0;
  c.direct = env_knob("SOFTHCA_DIRECT", 1, 0, 1) != 0;
  return c;
}

// Wire formats between model threads (this machine only; host byte order).
struct ReqMsg {
  uint32_t src_node, src_gen, src_qpn, dst_qpn, psn;
  uint8_t opcode, opmod, se, more;  // more: a send's piece with more to follow (see execute_wqe)
  uint32_t imm;  // as in the WQE (big-endian)
  uint64_t raddr;
  uint32_t rkey, length;
  uint64_t dc_key;
  uint16_t slid, dlid;
  uint32_t total;  // the whole message's length when it travels in chunks (0: `length`)
  uint8_t atomic[32];  // the WQE's atomic segment(s), big-endian
};

struct RespMsg {
  uint32_t dst_qpn, psn;
  uint8_t syndrome, rnr_timer, pad[2];
  uint32_t length;
};

struct UdMsg {
  uint32_t src_qpn, dst_qpn, qkey;
  uint16_t slid, dlid;
  uint8_t grh, se, has_imm, pad;
  uint32_t imm, length;
  uint8_t sgid[16], dgid[16];
};

constexpr uint8_t kSynOk = 0;
constexpr uint8_t kSynRnr = 0xff;  // internal: RNR NAK

// IB min_rnr_timer encoding, in microseconds.
const uint32_t kRnrUs[32] = {655360, 10,    20,    30,    40,    60,    80,     120,
                             160,    240,   320,   480,   640,   960,   1280,   1920,
                             2560,   3840,  5120,  7680,  10240, 15360, 20480,  30720,
                             40960,  61440, 81920, 122880, 163840, 245760, 327680, 491520};

uint8_t* unit_ptr(Qp* qp, uint32_t start, uint32_t byte_off) {
  uint32_t bb = (start + byte_off / 64) & (qp->sq_bbs - 1);
  return qp->sq_buf + bb * 64 + byte_off % 64;
}

void wqe_read(Qp* qp, uint32_t start, uint32_t off, void* dst, uint32_t len) {
  auto* d = static_cast<uint8_t*>(dst);
  while (len) {
    uint32_t n = std::min(len, 64 - off % 64);
    memcpy(d, unit_ptr(qp, start, off), n);
    d += n, off += n, len -= n;
  }
}

bool in_range(const Mr* mr, uint64_t addr, uint64_t len) {
  uint64_t base = uint64_t(reinterpret_cast<uintptr_t>(mr->mr.addr));
  return addr >= base && addr + len <= base + mr->mr.length && addr + len >= addr;
}

// Largest message: what QUERY_HCA_CAP's log_max_msg and ibv_query_port's max_msg_sz report.
uint64_t max_msg_bytes() { return uint64_t(1) << config().log_max_msg; }

void place_read_chunk(const Pending& p, uint64_t off, const uint8_t* data, uint32_t len);

// The standard 8-byte atomics {swap or add, compare} (segment big-endian); masked ones: hca_atomic.
uint64_t atomic_apply(uint8_t opcode, uint64_t orig, const uint8_t* seg) {
  uint64_t a, b;
  memcpy(&a, seg, 8);
  memcpy(&b, seg + 8, 8);
  a = be64(a), b = be64(b);
  return opcode == MLX5_OPCODE_ATOMIC_CS ? (orig == b ? a : orig) : orig + a;
}

// Masked atomics of any operand size on the operand as the HCA sees it: one big-endian integer
// of `size` bytes (the WQE's and the reply's byte order). The target memory holds it as host-order
// words of min(size, 8) bytes, the word at the lowest address most significant: rdma-core-era
// mlx5 drivers (MLNX_OFED libmlx5's ext_cmp_swp/ext_fetch_add, the kernel's handle_atomic)
// byte-swap each 8-byte word of the operands and of the reply and keep the words in memory order.
void mem_to_wire(const uint8_t* mem, uint8_t* wire, uint32_t size) {
  if (size == 4) {
    uint32_t v;
    memcpy(&v, mem, 4);
    v = be32(v);
    memcpy(wire, &v, 4);
    return;
  }
  for (uint32_t i = 0; i < size; i += 8) {
    uint64_t v;
    memcpy(&v, mem + i, 8);
    v = be64(v);
    memcpy(wire + i, &v, 8);
  }
}

// Operands (big-endian, `size` bytes each): masked CS {swap, compare, swap_mask, compare_mask},
// masked FA {add, field_boundary}. `wire` holds the original value and receives the new one.
void masked_apply(uint8_t opcode, uint32_t size, const uint8_t* ops, uint8_t* wire) {
  if (opcode == MLX5_OPCODE_ATOMIC_MASKED_CS) {
    const uint8_t *swap = ops, *cmp = ops + size, *swap_mask = ops + 2 * size,
                  *cmp_mask = ops + 3 * size;
    for (uint32_t i = 0; i < size; ++i)
      if ((wire[i] ^ cmp[i]) & cmp_mask[i]) return;  // no match: memory unchanged
    for (uint32_t i = 0; i < size; ++i)
      wire[i] = uint8_t((wire[i] & ~swap_mask[i]) | (swap[i] & swap_mask[i]));
    return;
  }
  const uint8_t *add = ops, *boundary = ops + size;
  unsigned carry = 0;
  for (uint32_t bit = 0; bit < size * 8; ++bit) {  // least significant bit: last byte, bit 0
    const uint32_t byte = size - 1 - bit / 8;
    const unsigned sh = bit % 8;
    unsigned x = (wire[byte] >> sh) & 1, y = (add[byte] >> sh) & 1;
    wire[byte] = uint8_t((wire[byte] & ~(1u << sh)) | ((x ^ y ^ carry) << sh));
    carry = (x & y) | (carry & (x ^ y));
    if ((boundary[byte] >> sh) & 1) carry = 0;  // a field ends here: its carry is dropped
  }
}

// Bytes of operands a masked atomic's WQE carries after the remote-address segment (16-byte
// units): 4-byte FA pads {add, boundary} to a unit.
uint32_t masked_operand_bytes(uint8_t opcode, uint32_t size) {
  uint32_t n = opcode == MLX5_OPCODE_ATOMIC_MASKED_CS ? 4 * size : 2 * size;
  return (n + 15) & ~15u;
}

// One HCA atomic on the target's memory image `mem` (size bytes, host order): `orig` receives
// what was there (host order), `mem` the new value. Standard CS/FA take their operands as the
// 16-byte atomic segment, masked ones as above.
void hca_atomic(uint8_t opcode, uint32_t size, const uint8_t* ops, uint8_t* mem, uint8_t* orig) {
  memcpy(orig, mem, size);
  if (opcode == MLX5_OPCODE_ATOMIC_CS || opcode == MLX5_OPCODE_ATOMIC_FA) {
    uint64_t v;
    memcpy(&v, mem, 8);
    v = atomic_apply(opcode, v, ops);
    memcpy(mem, &v, 8);
    return;
  }
  uint8_t wire[256];
  mem_to_wire(mem, wire, size);
  masked_apply(opcode, size, ops, wire);
  mem_to_wire(wire, mem, size);  // the swap is its own inverse
}

// SOFTHCA_PCIE_ATOMICS: an 8-byte CS/FA executed as the PCIe AtomicOp a ConnectX issues, i.e. one
// CPU atomic instruction on the target word (coherent with every CPU atomic on it). `word` must be
// this process's memory.
uint64_t coherent_atomic(uint8_t opcode, uint64_t* word, const uint8_t* seg) {
  uint64_t a, b;
  memcpy(&a, seg, 8);
  memcpy(&b, seg + 8, 8);
  a = be64(a), b = be64(b);
  if (opcode == MLX5_OPCODE_ATOMIC_FA) return __atomic_fetch_add(word, a, __ATOMIC_SEQ_CST);
  uint64_t expected = b;  // compare in the second 8 bytes, swap in the first
  __atomic_compare_exchange_n(word, &expected, a, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return expected;  // the old value either way
}

bool coherent(uint8_t opcode) {
  return config().pcie_atomics &&
         (opcode == MLX5_OPCODE_ATOMIC_CS || opcode == MLX5_OPCODE_ATOMIC_FA);
}

}  // namespace

const Config& config() {
  static Config c = load_config();
  return c;
}

Hca& Hca::get() {
  static Hca* h = new Hca;  // never destroyed: the model thread may outlive static destructors
  return *h;
}

bool Hca::acquire() {
  std::lock_guard<std::mutex> g(mu_);
  if (refs_++ > 0) return true;
  stop_ = false;
  // A program that exits without closing its devices still leaves the fabric (the last one out
  // removes it); the mapping stays, other threads may still be inside the library.
  static bool at_exit = (atexit([] { Hca::get().leave_at_exit(); }), true);
  (void)at_exit;
  std::promise<bool> ready;
  auto f = ready.get_future();
  thread_ = std::thread([this, &ready] { run(&ready); });
  if (!f.get()) {
    thread_.join();
    refs_ = 0;
    return false;
  }
  return true;
}

void Hca::release() {
  std::lock_guard<std::mutex> g(mu_);
  if (--refs_ > 0) return;
  stop_ = true;
  fab_.wake(fab_.node());
  thread_.join();
  if (config().stats)
    fprintf(stderr,
            "softhca: ud sent %lu dropped %lu duplicated %lu reordered %lu; direct %lu sends %lu; "
            "devx qps %lu dcts %lu; sent by traffic class and service level:%s\n",
            (unsigned long)ud_sent.load(), (unsigned long)ud_dropped.load(),
            (unsigned long)ud_duplicated.load(), (unsigned long)ud_reordered.load(),
            (unsigned long)direct_ops.load(), (unsigned long)direct_sends.load(),
            (unsigned long)devx_qps.load(),
            (unsigned long)devx_dcts.load(), wire_stats().c_str());
}

void Hca::leave_at_exit() {
  std::lock_guard<std::mutex> g(mu_);
  if (refs_ <= 0) return;
  refs_ = 0;
  keep_mapping_ = true;
  stop_ = true;
  fab_.wake(fab_.node());
  thread_.join();
}

Mr* Hca::find_mr(uint32_t key) {
  auto it = mrs.find(key);
  return it == mrs.end() ? nullptr : it->second;
}

void Hca::publish_mr(Mr* mr, bool on) {
  uint32_t node = fab_.node();
  fab_.lock_direct(node);
  MrSlot& s = fab_.mr_slot(node, mr->mr.lkey);
  if (on && (s.key == 0 || s.key == mr->mr.lkey)) {  // a taken slot: that MR uses messages only
    s.key = mr->mr.lkey;
    s.access = uint32_t(mr->access);
    s.pdn = reinterpret_cast<Pd*>(mr->mr.pd)->pdn;
    s.addr = uint64_t(uintptr_t(mr->mr.addr));
    s.len = mr->mr.length;
  } else if (!on && s.key == mr->mr.lkey) {
    s = MrSlot{};
  }
  fab_.unlock_direct(node);
}

void Hca::publish_qp(Qp* qp) {
  uint32_t node = fab_.node();
  QpnEntry& e = fab_.qpn_entry(qp->qpx.qp_base.qp_num);
  auto st = qp->attr.qp_state;
  fab_.lock_direct(node);
  e.accepting = (qp->kind == Kind::kRc && (st == IBV_QPS_RTR || st == IBV_QPS_RTS)) ||
                (qp->kind == Kind::kDct && st == IBV_QPS_RTR);
  e.port_lid = port_lid(qp->ctx->dev->index, qp->attr.port_num ? qp->attr.port_num : 1);
  e.lid = e.port_lid;  // routing follows the port the QP was bound to (port 1 at creation)
  e.access = uint32_t(qp->attr.qp_access_flags);
  e.peer_qpn = qp->attr.dest_qp_num;
  e.pdn = qp->pd->pdn;
  e.dc_key = qp->dc_key;
  if (qp->kind == Kind::kUd)
    e.accepting = st == IBV_QPS_RTR || st == IBV_QPS_RTS || st == IBV_QPS_SQE;
  e.rq_buf = uint64_t(uintptr_t(qp->rq_buf));
  e.rq_dbrec = uint64_t(uintptr_t(qp->dbrec));
  e.rq_cnt = qp->rq_buf ? qp->rq_cnt : 0;
  e.rq_stride = qp->rq_stride;
  e.rcqn = qp->rcq ? qp->rcq->cqn : 0;
  e.srqn = qp->srq ? qp->srq->srqn : 0;
  e.qkey = qp->attr.qkey;
  e.scatter_resp = qp->scatter_resp;
  e.path_mtu = uint8_t(qp->attr.path_mtu);
  port_gid(qp->ctx->dev->index, qp->attr.port_num ? qp->attr.port_num : 1, e.gid);
  fab_.unlock_direct(node);
}

void Hca::publish_cq(Cq* cq, bool on) {
  uint32_t node = fab_.node();
  fab_.lock_direct(node);
  CqSlot& s = fab_.cq_slot(node, cq->cqn);
  if (on && s.cqn == 0) {  // a taken slot: this CQ receives sends through messages only
    cq->own.cqn = cq->cqn;
    cq->own.cnt = cq->cnt;
    cq->own.cqe_sz = cq->cqe_sz;
    cq->own.ignore_overrun = cq->ignore_overrun;
    cq->own.buf = uint64_t(uintptr_t(cq->buf));
    cq->own.dbrec = uint64_t(uintptr_t(cq->dbrec));
    s = cq->own;
    cq->st = &s;
  } else if (!on && cq->st == &s) {
    cq->own = s;
    cq->st = &cq->own;
    s = CqSlot{};
  }
  fab_.unlock_direct(node);
}

void Hca::publish_srq(Srq* srq, bool on) {
  uint32_t node = fab_.node();
  fab_.lock_direct(node);
  SrqSlot& s = fab_.srq_slot(node, srq->srqn);
  if (on && s.srqn == 0) {
    srq->own.srqn = srq->srqn;
    srq->own.cnt = srq->cnt;
    srq->own.stride = srq->stride;
    srq->own.max_sge = srq->max_sge;
    srq->own.buf = uint64_t(uintptr_t(srq->buf));
    srq->own.dbrec = uint64_t(uintptr_t(srq->dbrec));
    s = srq->own;
    srq->st = &s;
  } else if (!on && srq->st == &s) {
    srq->own = s;
    srq->st = &srq->own;
    s = SrqSlot{};
  }
  fab_.unlock_direct(node);
}

RecvQueue Hca::recv_queue(Qp* qp) {
  if (qp->srq) return rq_of(*qp->srq->st);
  // The ring from the QP itself (the fabric has it only from the first transition on), the
  // consumer counter from the fabric, where requesters executing sends advance it too.
  RecvQueue q;
  q.buf = uint64_t(uintptr_t(qp->rq_buf));
  q.dbrec = uint64_t(uintptr_t(qp->dbrec));
  q.cnt = qp->rq_buf ? qp->rq_cnt : 0;
  q.stride = qp->rq_stride;
  q.nsegs = qp->rq_stride / 16;
  q.hw_ci = &fab_.qpn_entry(qp->qpx.qp_base.qp_num).rq_hw_ci;
  return q;
}

bool Hca::take_recv(Qp* qp, RecvWqe* out) {
  RecvQueue q = recv_queue(qp);
  if (!peek_recv(fab_, fab_.node(), q, out)) return false;
  ++*q.hw_ci;
  return true;
}

uint8_t Hca::scatter(Qp* qp, const RecvWqe& w, const uint8_t* data, uint32_t len, uint32_t skip) {
  auto mr_ok = [&](uint32_t lkey, uint64_t addr, uint32_t cap) {
    Mr* mr = find_mr(lkey);
    return mr && mr->mr.pd == qp->qpx.qp_base.pd && in_range(mr, addr, cap) &&
           (mr->access & IBV_ACCESS_LOCAL_WRITE);
  };
  std::vector<ScatterPiece> pieces;
  uint8_t syn = plan_scatter(w, len, skip, mr_ok, &pieces);
  if (data)  // the pieces that fit are written even when the data does not fit them all
    for (const ScatterPiece& x : pieces) memcpy(reinterpret_cast<void*>(uintptr_t(x.addr)), data + x.src_off, x.n);
  return syn;
}

void Hca::post_msg(uint32_t node, uint32_t gen, MsgType t, const void* a, size_t alen,
                   const void* b, size_t blen) {
  {
    std::lock_guard<std::mutex> g(egress_mu_);
    if (egress_.empty()) {
      int r = fab_.send(node, gen, t, a, alen, b, blen, false, nullptr);
      if (r != 0) return;  // sent, or the target is gone (lost on the wire)
    }
    Egress e{node, gen, t, {}};
    e.bytes.resize(alen + blen);
    if (alen) memcpy(e.bytes.data(), a, alen);
    if (blen) memcpy(e.bytes.data() + alen, b, blen);
    egress_.push_back(std::move(e));
  }
  fab_.wake(fab_.node());
}

void Hca::drain_inbox_to_backlog() {
  Ring& r = fab_.inbox();
  for (;;) {
    uint64_t h = r.head.load(std::memory_order_relaxed);
    if (h == r.tail.load(std::memory_order_acquire)) return;
    const uint8_t* rec = &r.data[h % kRingBytes];
    MsgHdr hdr;
    memcpy(&hdr, rec, sizeof hdr);
    if (hdr.type != kWrap) backlog_.emplace_back(rec, rec + hdr.len);
    r.head.store(h + hdr.len, std::memory_order_release);
  }
}

void Hca::flush_egress() {  // model thread only: the one consumer of egress_
  for (;;) {
    Egress* e;
    {
      std::lock_guard<std::mutex> g(egress_mu_);
      if (egress_.empty()) return;
      e = &egress_.front();  // stays queued while we block, so post_msg appends behind it
    }
    // Keeps FIFO order: producers append behind us while we block here.
    fab_.send(e->node, e->gen, e->type, e->bytes.data(), e->bytes.size(), nullptr, 0, true, [this] {
      std::lock_guard<std::mutex> g(consumer_mu_);
      drain_inbox_to_backlog();
    });
    std::lock_guard<std::mutex> g(egress_mu_);
    egress_.pop_front();
  }
}

void Hca::run(std::promise<bool>* ready) {
  if (!fab_.attach()) {
    ready->set_value(false);
    return;
  }
  ready->set_value(true);
  pthread_setname_np(pthread_self(), "softhca-msg");
  prefer_prompt_wakeup();  // deliver while the program spins on CQ buffers
  Ring& r = fab_.inbox();
  uint64_t last_timer = 0, last_busy = now_ns();
  while (!stop_.load()) {
    flush_egress();
    bool busy;
    {
      std::lock_guard<std::mutex> g(consumer_mu_);
      busy = consume(64);
    }
    uint64_t now = now_ns();
    if (now - last_timer > 2000000) {
      last_timer = now;
      timers();
    }
    if (busy) {
      last_busy = now;
      continue;
    }
    {
      std::lock_guard<std::mutex> g(egress_mu_);
      if (!egress_.empty()) continue;
    }
    // Threads that poll CQs execute this inbox themselves (progress()): then producers do not
    // wake us (a woken thread would take a core from them), and we look again shortly in case
    // they stopped polling without saying so.
    if (now - r.last_poll_ns.load(std::memory_order_relaxed) < kPollerWindowNs) {
      uint32_t db = r.doorbell.load();
      r.sleeping.store(1);
      if (r.head.load() == r.tail.load() && !stop_.load())
        futex_wait_ns(&r.doorbell, db, kPollerWindowNs);
      r.sleeping.store(0);
      continue;
    }
    if (now - last_busy < uint64_t(config().spin_us) * 1000) {
      model_pause();
      continue;
    }
    // Sleep until a publisher rings our doorbell. Outstanding requests need the retry clock: the
    // sleep is then timed, otherwise posters wake us (idle_forever_ is set before the scan, so a
    // post the scan misses sees it set).
    uint32_t db = r.doorbell.load();
    idle_forever_.store(true);
    bool pending = false;
    {
      std::shared_lock<std::shared_mutex> g(tables);
      for (auto& [qpn, qp] : qps) {
        std::lock_guard<std::recursive_mutex> q(qp->mu);
        if (!qp->out.empty()) pending = true;
      }
    }
    {
      std::lock_guard<std::mutex> g(held_mu_);
      if (!held_.empty()) pending = true;
    }
    if (pending) idle_forever_.store(false);
    r.sleeping.store(2);  // producers wake us
    if (r.head.load() == r.tail.load() && !stop_.load()) futex_wait(&r.doorbell, db, pending ? 2 : -1);
    r.sleeping.store(0);
    idle_forever_.store(false);
  }
  flush_egress();
  fab_.detach(!keep_mapping_);
}

bool Hca::consume(int max) {
  Ring& r = fab_.inbox();
  bool busy = false;
  while (!backlog_.empty() && max-- > 0) {
    std::vector<uint8_t> m = std::move(backlog_.front());
    backlog_.pop_front();
    MsgHdr hdr;
    memcpy(&hdr, m.data(), sizeof hdr);
    handle(m.data() + sizeof hdr, hdr.type, hdr.len - sizeof hdr);
    busy = true;
  }
  while (max-- > 0) {
    uint64_t h = r.head.load(std::memory_order_relaxed);
    if (h == r.tail.load(std::memory_order_acquire)) break;
    const uint8_t* rec = &r.data[h % kRingBytes];
    MsgHdr hdr;
    memcpy(&hdr, rec, sizeof hdr);
    if (hdr.type != kWrap) handle(rec + sizeof hdr, hdr.type, hdr.len - sizeof hdr);
    r.head.store(h + hdr.len, std::memory_order_release);
    busy = true;
  }
  return busy;
}

void Hca::stop_polling() {
  if (!refs_) return;
  Ring& r = fab_.inbox();
  r.last_poll_ns.store(0, std::memory_order_relaxed);
  if (r.sleeping.load() == 1) fab_.wake(fab_.node());  // it must not wait for its next look
}

void Hca::progress() {
  if (!refs_) return;
  fab_.inbox().last_poll_ns.store(now_ns(), std::memory_order_relaxed);
  std::unique_lock<std::mutex> g(consumer_mu_, std::try_to_lock);
  if (g.owns_lock()) consume(16);
}

void Hca::handle(const uint8_t* body, uint32_t type, uint32_t len) {
  std::shared_lock<std::shared_mutex> g(tables);
  switch (type) {
    case kReq: on_req(body, len); break;
    case kResp: on_resp(body, len); break;
    case kUd: on_ud(body, len); break;
    case kNotify: {
      uint32_t cqn;
      if (len < sizeof cqn) break;
      memcpy(&cqn, body, sizeof cqn);
      auto it = cqs.find(cqn);
      if (it != cqs.end() && it->second->chan) it->second->chan->notify(it->second);
      break;
    }
    default: break;
  }
}

bool Hca::cq_push(Cq* cq, const mlx5_cqe64& cqe, bool solicited, const void* data, uint32_t len) {
  fab_.lock_direct(fab_.node());
  bool ok = cq_push_locked(cq, cqe, solicited, data, len);
  fab_.unlock_direct(fab_.node());
  return ok;
}

// False: the CQ is in error (overrun now or earlier) and took nothing.
bool Hca::cq_push_locked(Cq* cq, const mlx5_cqe64& cqe, bool solicited, const void* data,
                         uint32_t len) {
  CqSlot& s = *cq->st;
  // An IGNORE_OVERRUN CQ (the kernel's "oi" bit) is written without looking at the consumer
  // index: its consumer owns the risk of entries it has not read being overwritten. Any other CQ
  // that is full when a completion arrives is overrun, and a ConnectX then puts it in error
  // (IBTA C11-37): IBV_EVENT_CQ_ERR on the context's async fd, no completion is written to it
  // any more (the entries already there stay readable here; hardware does not promise even
  // that), and each QP that tries to complete work into it goes to error (the callers).
  if (s.overrun || !cq_room(s, __atomic_load_n(&cq->dbrec[0], __ATOMIC_ACQUIRE))) {
    if (!s.overrun) {
      fprintf(stderr, "softhca: CQ 0x%x overrun (%u entries): CQ in error\n", cq->cqn, cq->cnt);
      s.overrun = 1;
      raise_cq_event(cq, IBV_EVENT_CQ_ERR);
    }
    return false;
  }
  write_cqe(fab_, fab_.node(), s, cqe, data, len);
  if (s.armed && (!s.armed_sol || solicited)) {
    s.armed = 0;
    if (cq->chan) cq->chan->notify(cq);
  }
  return true;
}

void Chan::notify(Cq* cq) {
  // The interrupt and the wake-up of the sleeping thread take time (SOFTHCA_EVENT_DELAY_US): the
  // event is raised later by the event-delay thread, and the caller (which may be executing a
  // WQE, or the doorbell thread) goes on at once.
  if (exec_knobs().event_delay_ns) return delay_event(this, cq);
  signal(cq);
}

void Chan::signal(Cq* cq) {
  std::lock_guard<std::mutex> g(mu);
  events.push_back(cq);
  char b = 1;
  if (write(wfd, &b, 1) != 1) fprintf(stderr, "softhca: completion channel full: event lost\n");
}

void Hca::arm_cq(Cq* cq, bool solicited_only) {
  fab_.lock_direct(fab_.node());
  CqSlot& s = *cq->st;
  uint32_t ci = be32(__atomic_load_n(&cq->dbrec[0], __ATOMIC_ACQUIRE)) & 0xffffff;
  if (((s.pi - ci) & 0xffffff) != 0) {  // unconsumed entries: the event fires at once
    if (cq->chan) cq->chan->notify(cq);
    s.armed = 0;
  } else {
    s.armed = 1;
    s.armed_sol = solicited_only;
  }
  fab_.unlock_direct(fab_.node());
}

namespace {

mlx5_cqe64 req_cqe(Qp* qp, uint32_t idx, uint8_t opcode, uint32_t byte_len) {
  mlx5_cqe64 c{};
  c.sop_drop_qpn = be32(uint32_t(opcode) << 24 | qp->qpx.qp_base.qp_num);
  c.wqe_counter = be16(uint16_t(idx));
  c.byte_cnt = be32(byte_len);
  c.srqn_uidx = be32(qp->user_index);  // CQE version 1: the QPC's user_index (DevX QPs)
  c.op_own = MLX5_CQE_REQ << 4;
  return c;
}

mlx5_cqe64 err_cqe(uint32_t qpn, uint32_t idx, uint8_t opcode, uint8_t syndrome, bool req,
                   uint32_t srqn) {
  mlx5_cqe64 c{};
  auto* e = reinterpret_cast<mlx5_err_cqe*>(&c);
  e->syndrome = syndrome;
  e->vendor_err_synd = syndrome == MLX5_CQE_SYNDROME_WR_FLUSH_ERR ? 0xf9 : 0x80 | syndrome;
  e->s_wqe_opcode_qpn = be32(uint32_t(opcode) << 24 | qpn);
  e->wqe_counter = be16(uint16_t(idx));
  e->srqn = be32(srqn);
  c.op_own = (req ? MLX5_CQE_REQ_ERR : MLX5_CQE_RESP_ERR) << 4;
  return c;
}

}  // namespace

void Hca::retire(Qp* qp) {
  while (!qp->out.empty() && qp->out.front().syndrome >= 0) {
    if (uint64_t at = qp->out.front().complete_at; at && at > now_ns())
      return chaos_retire_at(qp, at);  // a delayed completion (knob)
    Pending p = std::move(qp->out.front());
    qp->out.pop_front();
    if (p.syndrome == kSynOk) {
      if (!p.signaled) continue;
      mlx5_cqe64 c = req_cqe(qp, p.idx, p.opcode, p.byte_len);
      if (!cq_push(qp->scq, c, false, p.in_cqe ? p.cqe_data : nullptr, p.byte_len))
        return cq_lost(qp);
      continue;
    }
    const bool written = cq_push(
        qp->scq,
        err_cqe(qp->qpx.qp_base.qp_num, p.idx, p.opcode, uint8_t(p.syndrome), true, qp->user_index),
        true);
    if (!written) return cq_lost(qp);
    // A send error stops a UD QP's send queue only (SQE: its receive side keeps working, as the
    // IB spec requires); a connected QP enters ERR.
    auto to = qp->kind == Kind::kUd ? IBV_QPS_SQE : IBV_QPS_ERR;
    qp->attr.qp_state = to;
    qp->qpx.qp_base.state = to;
    publish_qp(qp);
    flush_qp(qp);
    return;
  }
}

// QP lock held. A completion of `qp` could not be written: its CQ is in error (overrun). The QP
// goes to error with IBV_EVENT_QP_FATAL (IBTA C9-218: a requester class F error; the program
// gets no CQE for it), and its remaining work is flushed into nothing.
void Hca::cq_lost(Qp* qp) {
  if (qp->attr.qp_state == IBV_QPS_ERR) return;
  qp->attr.qp_state = IBV_QPS_ERR;
  qp->qpx.qp_base.state = IBV_QPS_ERR;
  publish_qp(qp);
  flush_qp(qp);
  raise_qp_event(qp, IBV_EVENT_QP_FATAL);
}

void Hca::flush_qp(Qp* qp) {
  uint32_t qpn = qp->qpx.qp_base.qp_num;
  for (Pending& p : qp->out)
    cq_push(qp->scq, err_cqe(qpn, p.idx, p.opcode, MLX5_CQE_SYNDROME_WR_FLUSH_ERR, true, qp->user_index),
            true);
  qp->out.clear();
  if (qp->sq_buf) ring_sq(qp);  // flushes WQEs posted but not yet executed
  if (qp->rq_buf && !qp->srq && qp->attr.qp_state == IBV_QPS_ERR) {
    fab_.lock_direct(fab_.node());
    uint32_t& hw_ci = fab_.qpn_entry(qpn).rq_hw_ci;
    uint32_t posted = be32(__atomic_load_n(&qp->dbrec[0], __ATOMIC_ACQUIRE)) & 0xffff;
    while ((hw_ci & 0xffff) != posted) {
      cq_push_locked(qp->rcq, err_cqe(qpn, hw_ci, 0, MLX5_CQE_SYNDROME_WR_FLUSH_ERR, false, 0), true);
      hw_ci++;
    }
    fab_.unlock_direct(fab_.node());
  }
}

namespace {

bool is_rd_atomic(uint8_t op) {
  return op == MLX5_OPCODE_RDMA_READ || op == MLX5_OPCODE_ATOMIC_CS || op == MLX5_OPCODE_ATOMIC_FA ||
         op == MLX5_OPCODE_ATOMIC_MASKED_CS || op == MLX5_OPCODE_ATOMIC_MASKED_FA;
}

// Initiator depth: an RC (or DC initiator) QP has at most max_rd_atomic RDMA reads and atomics
// outstanding at once (0 behaves as 1; never more than the device's max_qp_rd_atom). A further
// read/atomic does not fail: it waits until a response retires an earlier one.
bool rd_atomic_window_full(Qp* qp, uint8_t opcode) {
  if (qp->kind != Kind::kRc && qp->kind != Kind::kDci) return false;
  if (qp->attr.qp_state != IBV_QPS_RTS && qp->attr.qp_state != IBV_QPS_SQD) return false;
  if (!is_rd_atomic(opcode)) return false;
  uint32_t limit = std::clamp<uint32_t>(qp->attr.max_rd_atomic, 1, config().max_rd_atomic);
  uint32_t in_flight = 0;
  for (const Pending& p : qp->out)
    if (p.syndrome < 0 && is_rd_atomic(p.opcode)) in_flight++;
  return in_flight >= limit;
}

}  // namespace

void Hca::ring_sq(Qp* qp, bool deferred) {
  if (!qp->sq_buf) return;
  auto state = qp->attr.qp_state;
  if (state != IBV_QPS_RTS && state != IBV_QPS_ERR && state != IBV_QPS_SQD && state != IBV_QPS_SQE)
    return;
  if (!deferred && chaos_defer_ring(qp)) return;
  uint32_t target = be32(__atomic_load_n(&qp->dbrec[1], __ATOMIC_ACQUIRE)) & 0xffff;
  size_t before = qp->out.size();
  if (exec_knobs().reorder && (state == IBV_QPS_RTS || state == IBV_QPS_SQD))
    execute_reordered(qp, target);
  qp->rd_atomic_stalled = false;
  while ((qp->hw_ci & 0xffff) != target) {
    mlx5_wqe_ctrl_seg ctrl;
    wqe_read(qp, qp->hw_ci, 0, &ctrl, sizeof ctrl);
    uint32_t ds = be32(ctrl.qpn_ds) & 0x3f;
    uint32_t bbs = (ds * 16 + 63) / 64;
    if (bbs == 0 || bbs > qp->sq_bbs) bbs = 1;
    if (rd_atomic_window_full(qp, uint8_t(be32(ctrl.opmod_idx_opcode) & 0xff))) {
      qp->rd_atomic_stalled = true;  // this WQE and all behind it wait (in order); on_resp resumes
      break;
    }
    if (qp->attr.qp_state == IBV_QPS_ERR || qp->attr.qp_state == IBV_QPS_SQE) {
      uint8_t op = be32(ctrl.opmod_idx_opcode) & 0xff;
      cq_push(qp->scq,
              err_cqe(qp->qpx.qp_base.qp_num, qp->hw_ci, op, MLX5_CQE_SYNDROME_WR_FLUSH_ERR, true,
                      qp->user_index),
              true);
    } else {
      execute_wqe(qp, qp->hw_ci, bbs);
    }
    qp->hw_ci += bbs;
  }
  if (uint64_t at = chaos_complete_at())
    for (size_t i = before; i < qp->out.size(); ++i) qp->out[i].complete_at = at;
  retire(qp);
}

// Parses one send WQE the way the HCA does and hands it to the fabric.
void Hca::execute_wqe(Qp* qp, uint32_t start, uint32_t bbs) {
  (void)bbs;
  const Config& cfg = config();
  mlx5_wqe_ctrl_seg ctrl;
  wqe_read(qp, start, 0, &ctrl, sizeof ctrl);
  uint32_t w0 = be32(ctrl.opmod_idx_opcode);
  uint8_t opcode = w0 & 0xff, opmod = w0 >> 24;
  uint32_t ds = be32(ctrl.qpn_ds) & 0x3f;
  if (wqe_log_on()) {  // SOFTHCA_WQE_LOG: the WQE as written (ds * 16 bytes, at least the ctrl)
    uint8_t raw[64 * 16];
    uint32_t n = std::min(std::max(ds, 1u) * 16, qp->sq_bbs * 64);
    wqe_read(qp, start, 0, raw, n);
    wqe_log(qp, start, raw, n);
  }
  Pending p;
  p.idx = start & 0xffff;
  p.psn = 0;
  p.signaled = (ctrl.fm_ce_se & MLX5_WQE_CTRL_CQ_UPDATE) != 0;
  p.opcode = opcode;
  p.opmod = opmod;
  auto fail = [&](uint8_t syn) {
    p.syndrome = syn;
    qp->out.push_back(std::move(p));
  };
  const bool ud = qp->kind == Kind::kUd, dci = qp->kind == Kind::kDci;
  bool is_atomic = opcode == MLX5_OPCODE_ATOMIC_CS || opcode == MLX5_OPCODE_ATOMIC_FA ||
                   opcode == MLX5_OPCODE_ATOMIC_MASKED_CS || opcode == MLX5_OPCODE_ATOMIC_MASKED_FA;
  bool has_raddr = is_atomic || opcode == MLX5_OPCODE_RDMA_WRITE ||
                   opcode == MLX5_OPCODE_RDMA_WRITE_IMM || opcode == MLX5_OPCODE_RDMA_READ;
  bool supported = opcode == MLX5_OPCODE_NOP || opcode == MLX5_OPCODE_SEND ||
                   opcode == MLX5_OPCODE_SEND_IMM || has_raddr;
  if (ud && (has_raddr)) supported = false;
  uint32_t atomic_size = 0, atomic_units = 0;
  if (opcode == MLX5_OPCODE_ATOMIC_CS || opcode == MLX5_OPCODE_ATOMIC_FA) {
    if (opmod != 0) supported = false;
    atomic_size = 8;
    atomic_units = 1;
  } else if (opcode == MLX5_OPCODE_ATOMIC_MASKED_CS || opcode == MLX5_OPCODE_ATOMIC_MASKED_FA) {
    // Extended atomic opmod: 0x08 | (log2(size) - 2), size 4..256, up to what the device
    // advertises in atomic_size_qp/_dc (SOFTHCA_EXT_ATOMIC_MAX).
    if (opmod >= 0x8 && opmod <= 0xe) atomic_size = 4u << (opmod & 7);
    if (!atomic_size || atomic_size > config().ext_atomic_max) supported = false;
    if (!config().masked_atomics) supported = false;  // a device without extended atomics
    if (supported) atomic_units = masked_operand_bytes(opcode, atomic_size) / 16;
  } else if (opmod != 0) {
    supported = false;
  }
  if (!supported || ds == 0) return fail(MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
  if (opcode == MLX5_OPCODE_NOP) {
    p.syndrome = kSynOk;
    qp->out.push_back(std::move(p));
    return;
  }
  uint32_t off = 16;
  mlx5_wqe_av av{};
  WireAddress wire;  // where the packet goes, with what GRH, traffic class and service level
  if (ud || dci) {
    if (ds * 16 < off + 16) return fail(MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
    wqe_read(qp, start, off, &av, 16);
    const bool extended = be32(av.dqp_dct) & MLX5_EXTENDED_UD_AV;
    if (extended) {
      wqe_read(qp, start, off, &av, sizeof av);
      off += sizeof av;
    } else if (!config().compact_av) {
      // A device without compact_address_vector reads 48 bytes whatever the flag says: the WQE's
      // segments after a 16-byte vector are misread; report it as the malformed WQE it is.
      return fail(MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
    } else {
      off += 16;
    }
    wire = wire_address(av, extended);
    // A port that requires a GRH (and every RoCE port) sends no packet without one.
    if (wire.syndrome) return fail(wire.syndrome);
  } else {
    wire = wire_address(qp->attr.ah_attr);
  }
  uint64_t raddr = 0;
  uint32_t rkey = 0;
  uint8_t atomic[32] = {};
  std::vector<uint8_t> wide_ops;  // operands of a masked atomic wider than 8 bytes
  if (has_raddr) {
    mlx5_wqe_raddr_seg rs;
    wqe_read(qp, start, off, &rs, sizeof rs);
    raddr = be64(rs.raddr);
    rkey = be32(rs.rkey);
    off += 16;
    // The operands may run over several basic blocks and wrap around the ring (wqe_read).
    if (off + atomic_units * 16 > ds * 16) return fail(MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
    if (atomic_size > 8) {
      wide_ops.resize(atomic_units * 16);
      wqe_read(qp, start, off, wide_ops.data(), atomic_units * 16);
    } else if (atomic_units) {
      wqe_read(qp, start, off, atomic, atomic_units * 16);
    }
    off += atomic_units * 16;
  }
  if (off > ds * 16) return fail(MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
  // Gather list: data pointer segments and inline segments.
  bool gather = opcode == MLX5_OPCODE_SEND || opcode == MLX5_OPCODE_SEND_IMM ||
                opcode == MLX5_OPCODE_RDMA_WRITE || opcode == MLX5_OPCODE_RDMA_WRITE_IMM;
  std::vector<uint8_t> payload;
  std::vector<ibv_sge> scatter;
  uint64_t total = 0;
  while (off < ds * 16) {
    uint32_t bc;
    wqe_read(qp, start, off, &bc, 4);
    bc = be32(bc);
    if (bc & MLX5_INLINE_SEG) {
      uint32_t n = bc & 0x3ff;
      // Bounded by the WQE, as on hardware: max_inline_data is a creation hint for the ring's
      // size, and UCX writes inline whatever its WQEs hold.
      if (!gather || off + 4 + n > ds * 16) return fail(MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
      size_t o = payload.size();
      payload.resize(o + n);
      wqe_read(qp, start, off + 4, payload.data() + o, n);
      total += n;
      off += (4 + n + 15) & ~15u;
      continue;
    }
    mlx5_wqe_data_seg d;
    wqe_read(qp, start, off, &d, sizeof d);
    off += 16;
    uint32_t len = be32(d.byte_count);
    uint32_t lkey = be32(d.lkey);
    uint64_t addr = be64(d.addr);
    if (lkey == MLX5_INVALID_LKEY) break;
    if (len == 0) len = 0x80000000u;  // hardware meaning of a zero byte count
    Mr* mr = find_mr(lkey);
    bool need_write = !gather;
    if (!mr || mr->mr.pd != qp->qpx.qp_base.pd || !in_range(mr, addr, len) ||
        (need_write && !(mr->access & IBV_ACCESS_LOCAL_WRITE)))
      return fail(MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
    total += len;
    if (total > max_msg_bytes()) return fail(MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
    if (gather) {
      size_t o = payload.size();
      payload.resize(o + len);
      memcpy(payload.data() + o, reinterpret_cast<void*>(uintptr_t(addr)), len);
    } else {
      scatter.push_back(ibv_sge{addr, len, lkey});
    }
  }
  if (total > max_msg_bytes()) return fail(MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
  if (is_atomic && total != atomic_size) return fail(MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
  if (atomic_size > 8) payload = std::move(wide_ops);  // they travel as the request's payload
  Fabric& f = fab_;
  uint8_t port = qp->attr.port_num ? qp->attr.port_num : 1;
  uint16_t slid = port_lid(qp->ctx->dev->index, port);

  if (ud) {
    if (total > 4096) return fail(MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);  // port MTU
    UdMsg m{};
    m.src_qpn = qp->qpx.qp_base.qp_num;
    m.dst_qpn = be32(av.dqp_dct) & 0xffffff;
    m.qkey = be32(av.key.qkey.qkey);
    if (m.qkey & 0x80000000u) m.qkey = qp->attr.qkey;  // "controlled" Q_Key: use the QP's own
    m.slid = slid;
    m.dlid = wire.lid;
    m.grh = wire.grh;
    memcpy(m.dgid, av.rgid, 16);
    if (!port_gid_at(qp->ctx->dev->index, port, int(be32(av.grh_gid_fl) >> 20 & 0xff), m.sgid))
      port_gid(qp->ctx->dev->index, port, m.sgid);
    count_wire(wire);
    m.se = (ctrl.fm_ce_se & MLX5_WQE_CTRL_SOLICITED) != 0;
    m.has_imm = opcode == MLX5_OPCODE_SEND_IMM;
    m.imm = ctrl.imm;
    m.length = uint32_t(total);
    p.syndrome = kSynOk;  // UD completes locally once on the wire
    p.byte_len = 0;
    qp->out.push_back(std::move(p));
    QpnEntry e;
    ud_sent++;
    if (!f.lookup_qpn(m.dst_qpn, &e) || !reaches(wire, e) || e.type != IBV_QPT_UD) return;
    if (cfg.ud_loss == 0 && cfg.ud_dup == 0 && cfg.ud_reorder == 0) {  // no datagram faults asked
      DirectSend d{e.node, e.gen, m.dst_qpn, IBV_QPT_UD, m.dlid, slid, 0, m.qkey, m.grh != 0,
                   m.sgid, m.dgid, opcode, m.se != 0, m.imm};
      if (try_direct_send(qp, d, payload)) return;
    }
    std::uniform_real_distribution<double> u(0, 1);
    if (cfg.ud_loss > 0 && u(qp->rng) < cfg.ud_loss) {
      ud_dropped++;
      return;
    }
    int copies = (cfg.ud_dup > 0 && u(qp->rng) < cfg.ud_dup) ? 2 : 1;
    if (copies == 2) ud_duplicated++;
    bool hold = cfg.ud_reorder > 0 && u(qp->rng) < cfg.ud_reorder;
    std::vector<Held> release;
    {
      std::lock_guard<std::mutex> g2(held_mu_);
      if (hold) {
        ud_reordered++;
        Held h{e.node, e.gen, {}, now_ns() + 1000000};
        h.bytes.resize(sizeof m + payload.size());
        memcpy(h.bytes.data(), &m, sizeof m);
        if (!payload.empty()) memcpy(h.bytes.data() + sizeof m, payload.data(), payload.size());
        held_.push_back(std::move(h));
        fab_.wake(fab_.node());  // the model thread releases it later
        if (copies == 1) return;
        copies = 1;
      } else {
        release.assign(std::make_move_iterator(held_.begin()), std::make_move_iterator(held_.end()));
        held_.clear();
      }
    }
    for (int i = 0; i < copies; ++i)
      post_msg(e.node, e.gen, kUd, &m, sizeof m, payload.data(), payload.size());
    for (Held& h : release)  // datagrams held back now arrive after a later one
      post_msg(h.node, h.gen, kUd, h.bytes.data(), h.bytes.size(), nullptr, 0);
    if (qp->ud_inbox_tail.size() < kMaxNodes) qp->ud_inbox_tail.resize(kMaxNodes);
    qp->ud_inbox_tail[e.node] = {e.gen, fab_.shm()->rings[e.node].tail.load()};
    return;
  }

  ReqMsg m{};
  m.src_node = f.node();
  m.src_gen = f.gen();
  m.src_qpn = qp->qpx.qp_base.qp_num;
  m.opcode = opcode;
  m.opmod = opmod;
  m.se = (ctrl.fm_ce_se & MLX5_WQE_CTRL_SOLICITED) != 0;
  m.imm = ctrl.imm;
  m.raddr = raddr;
  m.rkey = rkey;
  m.length = opcode == MLX5_OPCODE_RDMA_READ ? uint32_t(total) : uint32_t(payload.size());
  memcpy(m.atomic, atomic, sizeof atomic);
  m.slid = slid;
  m.dlid = wire.lid;
  if (dci) {
    m.dst_qpn = be32(av.dqp_dct) & 0xffffff;
    m.dc_key = be64(av.key.dc_key);
  } else {
    m.dst_qpn = qp->attr.dest_qp_num;
  }
  count_wire(wire);
  p.local = std::move(scatter);
  p.result_size = is_atomic ? atomic_size : 0;
  p.byte_len = opcode == MLX5_OPCODE_RDMA_READ || is_atomic ? uint32_t(total) : 0;
  p.in_cqe = qp->scatter_req && p.signaled &&
             (is_atomic || opcode == MLX5_OPCODE_RDMA_READ) && total <= cqe_scatter_max(qp->scq);
  QpnEntry e;
  bool routable = f.lookup_qpn(m.dst_qpn, &e) && reaches(wire, e) &&
                  (dci ? e.type == 0xdc : e.type == IBV_QPT_RC);
  // A read's response comes in packets of the responder's path MTU: a port with a smaller MTU
  // drops every one of them, and the requester runs into its retry limit.
  if (routable && opcode == MLX5_OPCODE_RDMA_READ && e.path_mtu > config().port_mtu &&
      total > (128u << config().port_mtu))
    return fail(MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
  const bool is_send = opcode == MLX5_OPCODE_SEND || opcode == MLX5_OPCODE_SEND_IMM;
  if (routable && is_send) {
    DirectSend d{e.node, e.gen, m.dst_qpn, uint8_t(dci ? 0xdc : IBV_QPT_RC), m.dlid, slid,
                 m.dc_key, 0, false, nullptr, nullptr, opcode, m.se != 0, m.imm};
    if (try_direct_send(qp, d, payload)) {
      p.syndrome = kSynOk;  // received and acknowledged already; takes no PSN
      qp->out.push_back(std::move(p));
      return;
    }
  }
  if (routable && try_direct(qp, p, e.node, e.gen, m.dst_qpn, m.dlid, m.dc_key, raddr, rkey, atomic,
                             payload, uint32_t(total))) {
    // SOFTHCA_LOSE_ATOMIC: as Linux 6.1's soft-RoCE did to an atomic it retransmitted, the
    // responder executed it and the requester never completes it, nor anything behind it, and
    // reports no error (the QP stays in RTS).
    static std::atomic<uint32_t> direct_atomics{0};
    if (p.result_size && config().lose_atomic &&
        direct_atomics.fetch_add(1, std::memory_order_relaxed) + 1 == config().lose_atomic)
      p.lost = true;
    else
      p.syndrome = kSynOk;  // executed and acknowledged already; takes no PSN
    qp->out.push_back(std::move(p));
    return;
  }
  // A message longer than one fabric record travels as requests of kMaxMsgPayload bytes, each
  // taking a PSN (as IB packetizes a message); the WQE completes with the last one, which carries
  // the immediate and the total length. RDMA write/read pieces go to consecutive addresses; a
  // send's pieces carry their offset in `raddr` and `more`, and the responder gathers them until
  // the last one takes the receive.
  const uint64_t whole = opcode == MLX5_OPCODE_RDMA_READ ? total : payload.size();
  for (uint64_t off = 0; whole > kMaxMsgPayload && off + kMaxMsgPayload < whole;
       off += kMaxMsgPayload) {
    ReqMsg c = m;
    c.opcode = opcode == MLX5_OPCODE_RDMA_READ ? MLX5_OPCODE_RDMA_READ
               : is_send                       ? MLX5_OPCODE_SEND
                                               : MLX5_OPCODE_RDMA_WRITE;
    c.se = 0;
    c.more = is_send;
    c.total = uint32_t(whole);
    c.raddr = is_send ? off : raddr + off;
    c.length = kMaxMsgPayload;
    c.psn = qp->next_psn;
    qp->next_psn = (qp->next_psn + 1) & 0xffffff;
    p.chunks++;
    const uint8_t* part = opcode == MLX5_OPCODE_RDMA_READ ? nullptr : payload.data() + off;
    std::vector<uint8_t> rec(sizeof c + (part ? kMaxMsgPayload : 0));
    memcpy(rec.data(), &c, sizeof c);
    if (part) memcpy(rec.data() + sizeof c, part, kMaxMsgPayload);
    if (routable) post_msg(e.node, e.gen, kReq, rec.data(), rec.size(), nullptr, 0);
    p.pieces.push_back(std::move(rec));  // an RNR NAK before them replays them
    m.raddr = is_send ? off + kMaxMsgPayload : raddr + off + kMaxMsgPayload;
  }
  if (p.chunks > 1) {
    const uint64_t off = uint64_t(p.chunks - 1) * kMaxMsgPayload;
    m.length = uint32_t(whole - off);
    m.total = uint32_t(whole);
    if (opcode != MLX5_OPCODE_RDMA_READ) payload.erase(payload.begin(), payload.begin() + long(off));
  }
  m.psn = qp->next_psn;
  qp->next_psn = (qp->next_psn + 1) & 0xffffff;
  p.psn = m.psn;
  p.sent_ns = now_ns();
  p.dst_node = routable ? e.node : kMaxNodes;  // unroutable: lost, the retry timer reports it
  p.dst_gen = routable ? e.gen : 0;
  p.msg.resize(sizeof m + payload.size());
  memcpy(p.msg.data(), &m, sizeof m);
  if (!payload.empty()) memcpy(p.msg.data() + sizeof m, payload.data(), payload.size());
  if (routable) post_msg(e.node, e.gen, kReq, p.msg.data(), p.msg.size(), nullptr, 0);
  if (routable) p.inbox_pos = fab_.shm()->rings[e.node].tail.load();
  qp->out.push_back(std::move(p));
  if (idle_forever_.load()) fab_.wake(fab_.node());  // it must start the retry clock
}

// Executes a request into the responder's memory from the requester's thread, with the
// responder's published QP and MR state, when that gives exactly what the responder would do:
// RDMA write/read and atomics (no receive WQE, no responder CQE), nothing of this QP still in
// flight (keeps RC order), and every check passing. Anything else takes the message path, whose
// responder produces the errors, drops and retries.
bool Hca::try_direct(Qp* qp, Pending& p, uint32_t node, uint32_t gen, uint32_t dst_qpn,
                     uint16_t dlid, uint64_t dc_key, uint64_t raddr, uint32_t rkey,
                     const uint8_t* atomic, const std::vector<uint8_t>& payload, uint32_t total) {
  if (!config().direct) return false;
  const uint8_t op = p.opcode;
  const bool is_atomic = p.result_size != 0;
  uint32_t need, size;
  if (op == MLX5_OPCODE_RDMA_WRITE) need = IBV_ACCESS_REMOTE_WRITE, size = uint32_t(payload.size());
  else if (op == MLX5_OPCODE_RDMA_READ) need = IBV_ACCESS_REMOTE_READ, size = total;
  else if (is_atomic) need = IBV_ACCESS_REMOTE_ATOMIC, size = p.result_size;
  else return false;
  if (is_atomic && (raddr & (size - 1))) return false;
  // A coherent atomic is one CPU atomic instruction, which cannot reach another process's memory
  // through process_vm_*: its owner's model executes it.
  if (is_atomic && coherent(op) && node != fab_.node()) return false;
  for (const Pending& x : qp->out)
    if (x.syndrome < 0) return false;
  if (!fab_.direct_usable(node, gen) || fab_.owner_waiting(node)) return false;
  fab_.lock_direct(node);
  const QpnEntry& e = fab_.qpn_entry(dst_qpn);
  const MrSlot& mr = fab_.mr_slot(node, rkey);
  // An indirect mkey published as an alias of one MR (mr.pad: that MR's key, see mkey.h): the
  // access lands in that MR at the same offset from its start, while the MR is still published.
  uint64_t target = raddr;
  bool alias_ok = true;
  if (size != 0 && mr.key == rkey && mr.pad) {
    const MrSlot& t = fab_.mr_slot(node, mr.pad);
    alias_ok = t.key == mr.pad && t.pad == 0 && t.len == mr.len && t.pdn == mr.pdn &&
               (t.access & need);
    target = t.addr + (raddr - mr.addr);
  }
  bool ok = alias_ok && e.used.load(std::memory_order_acquire) && e.node == node && e.gen == gen &&
            e.accepting && e.port_lid == dlid && (e.access & need) &&
            (e.type == 0xdc ? e.dc_key == dc_key : e.peer_qpn == qp->qpx.qp_base.qp_num) &&
            (size == 0 || (mr.key == rkey && mr.pdn == e.pdn && (mr.access & need) &&
                           raddr >= mr.addr && raddr + size <= mr.addr + mr.len &&
                           raddr + size > raddr)) &&
            fab_.node_alive(node, gen);
  if (ok) {
    if (op == MLX5_OPCODE_RDMA_WRITE) {
      ok = fab_.direct_write(node, target, payload.data(), size);
    } else if (op == MLX5_OPCODE_RDMA_READ) {
      std::vector<uint8_t> data(size);
      ok = fab_.direct_read(node, target, data.data(), size);
      if (ok) deliver(p, data.data(), size);
    } else if (coherent(op)) {  // this process's memory (checked above)
      uint64_t orig = coherent_atomic(op, reinterpret_cast<uint64_t*>(uintptr_t(target)), atomic);
      if (config().atomic_window_us) usleep(config().atomic_window_us);
      deliver(p, reinterpret_cast<const uint8_t*>(&orig), size);
    } else {
      // Deliberately a plain read-modify-write (see on_req). Wide operands came as the payload.
      const uint8_t* ops = size > 8 ? payload.data() : atomic;
      uint8_t mem[256], orig[256];
      ok = fab_.direct_read(node, target, mem, size);
      if (ok) {
        hca_atomic(op, size, ops, mem, orig);
        if (config().atomic_window_us) usleep(config().atomic_window_us);
        ok = fab_.direct_write(node, target, mem, size);
        if (ok) deliver(p, orig, size);
      }
    }
  }
  fab_.unlock_direct(node);
  if (ok) direct_ops++;
  return ok;
}

void Hca::send_resp(uint32_t node, uint32_t gen, uint32_t qpn, uint32_t psn, uint8_t synd,
                    uint8_t rnr_timer, const void* data, uint32_t len) {
  RespMsg r{qpn, psn, synd, rnr_timer, {0, 0}, len};
  post_msg(node, gen, kResp, &r, sizeof r, data, len);
}

namespace {

// Sends in pieces (see execute_wqe): what arrived of each sender's current message, per
// responder QP (the model thread's, under the tables lock like the rest of on_req).
std::map<std::tuple<const Qp*, uint32_t, uint32_t>, std::vector<uint8_t>> g_partial_sends;
std::mutex g_partial_mu;
std::vector<uint8_t>& partial_send(const Qp* qp, uint32_t node, uint32_t qpn) {
  std::lock_guard<std::mutex> g(g_partial_mu);
  return g_partial_sends[{qp, node, qpn}];
}
void drop_partial_send(const Qp* qp, uint32_t node, uint32_t qpn) {
  std::lock_guard<std::mutex> g(g_partial_mu);
  g_partial_sends.erase({qp, node, qpn});
}

}  // namespace

void forget_partial_sends(const Qp* qp) {
  std::lock_guard<std::mutex> g(g_partial_mu);
  for (auto it = g_partial_sends.begin(); it != g_partial_sends.end();)
    it = std::get<0>(it->first) == qp ? g_partial_sends.erase(it) : std::next(it);
}

void Hca::on_req(const uint8_t* body, uint32_t len) {
  ReqMsg m;
  if (len < sizeof m) return;
  memcpy(&m, body, sizeof m);
  const uint8_t* data = body + sizeof m;
  auto it = qps.find(m.dst_qpn);
  if (it == qps.end()) return;  // no such QP: dropped, the requester's retry timer fires
  Qp* qp = it->second;
  std::lock_guard<std::recursive_mutex> g(qp->mu);
  uint8_t port = qp->attr.port_num ? qp->attr.port_num : 1;
  if (port_lid(qp->ctx->dev->index, port) != m.dlid) return;
  uint32_t* epsn;
  if (qp->kind == Kind::kRc) {
    if (qp->attr.qp_state != IBV_QPS_RTR && qp->attr.qp_state != IBV_QPS_RTS) return;
    if (m.src_qpn != qp->attr.dest_qp_num) return;
    epsn = &qp->rc_epsn;
  } else if (qp->kind == Kind::kDct) {
    if (qp->attr.qp_state != IBV_QPS_RTR) return;
    if (m.dc_key != qp->dc_key) return;  // DC key violation: silently dropped
    epsn = &qp->dc_epsn.try_emplace(uint64_t(m.src_node) << 32 | m.src_qpn, m.psn).first->second;
  } else {
    return;
  }
  // RC: strictly in sequence. DC: a DCI reconnects per target, so its PSNs may jump forward,
  // except behind an RNR NAK (kMustEqual), where only the NAKed request may come next.
  constexpr uint32_t kMustEqual = 0x80000000u;
  if (qp->kind == Kind::kRc || (*epsn & kMustEqual)) {
    if (m.psn != (*epsn & 0xffffff)) return;  // out of sequence: the requester replays
  } else if (int32_t((m.psn - *epsn) << 8) < 0) {
    return;  // older than expected: duplicate
  }
  auto reply = [&](uint8_t syn, const void* d, uint32_t n) {
    send_resp(m.src_node, m.src_gen, m.src_qpn, m.psn, syn, 0, d, n);
    *epsn = (m.psn + 1) & 0xffffff;
  };
  auto fail = [&](uint8_t syn) {  // NAK, and the responder QP enters ERR with an async event
    reply(syn, nullptr, 0);
    responder_error(*this, qp, syn == MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR ? IBV_EVENT_QP_ACCESS_ERR
                                                                          : IBV_EVENT_QP_REQ_ERR);
  };
  auto rnr = [&] {
    if (qp->kind == Kind::kDct) *epsn = m.psn | kMustEqual;
    send_resp(m.src_node, m.src_gen, m.src_qpn, m.psn, kSynRnr, qp->attr.min_rnr_timer, nullptr, 0);
  };
  const int acc = qp->attr.qp_access_flags;
  std::vector<MemSpan> spans;  // where the access lands: an MR, or through an indirect mkey
  auto check_mr = [&](uint64_t addr, uint32_t n, int need) -> bool {
    return resolve_remote(*this, m.rkey, qp->qpx.qp_base.pd, addr, n, need, &spans);
  };
  switch (m.opcode) {
    case MLX5_OPCODE_SEND:
    case MLX5_OPCODE_SEND_IMM: {
      // A send in pieces (m.total): the pieces before the last are gathered here, in order.
      uint32_t len = m.length;
      if (m.total) {
        std::vector<uint8_t>& part = partial_send(qp, m.src_node, m.src_qpn);
        if (m.raddr == 0) part.clear();
        if (m.raddr != part.size() || m.raddr + m.length > m.total) {  // a piece went missing
          part.clear();
          return fail(MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
        }
        if (m.more) {
          part.insert(part.end(), data, data + m.length);
          return reply(kSynOk, nullptr, 0);
        }
        if (part.size() + m.length != m.total) return fail(MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
        part.insert(part.end(), data, data + m.length);  // an RNR NAK replays this last piece
        data = part.data();
        len = m.total;
      }
      // Taking the receive and writing its CQE is one step under this node's direct lock, as
      // requesters executing sends directly do it: CQEs stay in receive-queue order.
      const uint32_t qpn = qp->qpx.qp_base.qp_num, srqn = qp->srq ? qp->srq->srqn : 0;
      RecvWqe w;
      uint8_t syn = 0;
      bool lost = false;
      fab_.lock_direct(fab_.node());
      const bool got = take_recv(qp, &w);
      if (got) {
        // Scatter-to-CQE: the data travels in the CQE, the driver copies it out.
        const bool in_cqe = qp->scatter_resp && len <= cqe_scatter_max(qp->rcq);
        syn = in_cqe ? recv_room(w, len) : scatter(qp, w, data, len, 0);
        uint8_t op = m.opcode == MLX5_OPCODE_SEND ? MLX5_CQE_RESP_SEND : MLX5_CQE_RESP_SEND_IMM;
        if (syn)
          lost = !cq_push_locked(qp->rcq, err_cqe(qpn, w.idx, 0, syn, false, srqn), true);
        else
          lost = !cq_push_locked(qp->rcq, resp_cqe(qpn, srqn, op, w.idx, len, m.imm, m.src_qpn, m.slid, false, m.se),
                                 m.se, in_cqe ? data : nullptr, len);
      }
      fab_.unlock_direct(fab_.node());
      // Its receive CQ is in error: the QP goes to error too and answers nothing more.
      if (lost) return responder_error(*this, qp, IBV_EVENT_QP_FATAL);
      if (!got) {
        if (m.total) partial_send(qp, m.src_node, m.src_qpn).resize(m.total - m.length);
        return rnr();
      }
      if (m.total) drop_partial_send(qp, m.src_node, m.src_qpn);  // `data` is not used below
      return reply(syn ? uint8_t(MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR) : kSynOk, nullptr, 0);
    }
    case MLX5_OPCODE_RDMA_WRITE:
    case MLX5_OPCODE_RDMA_WRITE_IMM: {
      if (!(acc & IBV_ACCESS_REMOTE_WRITE))
        return fail(MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
      if (m.length && !check_mr(m.raddr, m.length, IBV_ACCESS_REMOTE_WRITE))
        return fail(MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
      const bool imm = m.opcode == MLX5_OPCODE_RDMA_WRITE_IMM;
      RecvWqe w;
      if (imm) fab_.lock_direct(fab_.node());  // the receive and its CQE: one step (see above)
      if (imm && !take_recv(qp, &w)) {
        fab_.unlock_direct(fab_.node());
        return rnr();
      }
      for (size_t i = 0, done = 0; i < spans.size(); done += spans[i++].n)
        memcpy(spans[i].p, data + done, spans[i].n);
      if (imm) {
        cq_push_locked(qp->rcq,
                       resp_cqe(qp->qpx.qp_base.qp_num, qp->srq ? qp->srq->srqn : 0,
                                MLX5_CQE_RESP_WR_IMM, w.idx, m.total ? m.total : m.length, m.imm,
                                m.src_qpn, m.slid, false, m.se),
                       m.se);
        fab_.unlock_direct(fab_.node());
      }
      return reply(kSynOk, nullptr, 0);
    }
    case MLX5_OPCODE_RDMA_READ: {
      if (!(acc & IBV_ACCESS_REMOTE_READ))
        return fail(MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
      if (m.length && !check_mr(m.raddr, m.length, IBV_ACCESS_REMOTE_READ))
        return fail(MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
      if (spans.size() <= 1) return reply(kSynOk, spans.empty() ? nullptr : spans[0].p, m.length);
      std::vector<uint8_t> gathered;
      for (const MemSpan& sp : spans) gathered.insert(gathered.end(), sp.p, sp.p + sp.n);
      return reply(kSynOk, gathered.data(), m.length);
    }
    case MLX5_OPCODE_ATOMIC_CS:
    case MLX5_OPCODE_ATOMIC_FA:
    case MLX5_OPCODE_ATOMIC_MASKED_CS:
    case MLX5_OPCODE_ATOMIC_MASKED_FA: {
      uint32_t size = 8;
      if (m.opcode >= MLX5_OPCODE_ATOMIC_MASKED_CS) {
        // A responder without extended atomics (of this size) does not know the request.
        size = m.opmod >= 0x8 && m.opmod <= 0xe ? 4u << (m.opmod & 7) : 0;
        if (!config().masked_atomics || !size || size > config().ext_atomic_max ||
            (size > 8 && m.length != masked_operand_bytes(m.opcode, size)))
          return fail(MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
      }
      if (!(acc & IBV_ACCESS_REMOTE_ATOMIC) || (m.raddr & (size - 1)))
        return fail(MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
      if (!check_mr(m.raddr, size, IBV_ACCESS_REMOTE_ATOMIC) || spans.size() != 1)
        return fail(MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
      // Deliberately a plain read-modify-write: atomic only against other HCA atomics (they all
      // hold this node's direct lock), never against CPU atomics on the same word.
      // SOFTHCA_PCIE_ATOMICS: 8-byte CS/FA are one CPU atomic instruction instead.
      uint8_t* target = spans[0].p;
      uint8_t mem[256], orig[256];
      fab_.lock_direct(fab_.node());
      if (coherent(m.opcode)) {
        uint64_t o = coherent_atomic(m.opcode, reinterpret_cast<uint64_t*>(target), m.atomic);
        memcpy(orig, &o, 8);
        if (config().atomic_window_us) usleep(config().atomic_window_us);
      } else {
        // volatile copies: the compiler may not merge this read and write into anything tighter.
        for (uint32_t i = 0; i < size; ++i) mem[i] = reinterpret_cast<volatile uint8_t*>(target)[i];
        hca_atomic(m.opcode, size, size > 8 ? data : m.atomic, mem, orig);
        if (config().atomic_window_us) usleep(config().atomic_window_us);
        for (uint32_t i = 0; i < size; ++i) reinterpret_cast<volatile uint8_t*>(target)[i] = mem[i];
      }
      fab_.unlock_direct(fab_.node());
      return reply(kSynOk, orig, size);
    }
    default:
      return fail(MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
  }
}

void Hca::on_resp(const uint8_t* body, uint32_t len) {
  RespMsg r;
  if (len < sizeof r) return;
  memcpy(&r, body, sizeof r);
  const uint8_t* data = body + sizeof r;
  auto it = qps.find(r.dst_qpn);
  if (it == qps.end()) return;
  Qp* qp = it->second;
  std::lock_guard<std::recursive_mutex> g(qp->mu);
  Pending* p = nullptr;
  for (auto& x : qp->out)  // a chunked message's PSNs end at x.psn
    if (x.syndrome < 0 && !x.lost && ((x.psn - r.psn) & 0xffffff) < x.chunks) {
      p = &x;
      break;
    }
  if (!p) return;
  if (p->chunks > 1 && r.syndrome == kSynOk) {  // read data lands at its chunk's offset
    uint64_t off = uint64_t(p->chunks - 1 - ((p->psn - r.psn) & 0xffffff)) * kMaxMsgPayload;
    if (p->opcode == MLX5_OPCODE_RDMA_READ) place_read_chunk(*p, off, data, r.length);
    if (r.psn != p->psn) return;  // an earlier chunk: the WQE completes with the last
    p->syndrome = kSynOk;
    retire(qp);
    if (qp->rd_atomic_stalled) ring_sq(qp);
    return;
  }
  if (r.syndrome == kSynRnr) {
    if (qp->attr.rnr_retry != 7 && ++p->rnr_count > qp->attr.rnr_retry) {
      p->syndrome = MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR;
    } else {
      qp->rnr_resend_at = now_ns() + uint64_t(kRnrUs[r.rnr_timer & 31]) * 1000;
      return;
    }
  } else if (r.syndrome != kSynOk) {
    p->syndrome = r.syndrome;
  } else {
    deliver(*p, data, r.length);
    p->syndrome = kSynOk;
  }
  retire(qp);
  // A response freed initiator depth: the send queue continues where it waited.
  if (qp->rd_atomic_stalled) ring_sq(qp);
}

namespace {
// Requester: one chunk of a chunked RDMA read lands at byte `off` of the WQE's local buffers.
void place_read_chunk(const Pending& p, uint64_t off, const uint8_t* data, uint32_t len) {
  uint64_t pos = 0;
  for (const auto& s : p.local) {
    uint64_t end = pos + s.length;
    if (len && off < end) {
      uint32_t n = uint32_t(std::min<uint64_t>(end - off, len));
      place_local(s.addr + (off - pos), data, n);
      data += n, off += n, len -= n;
    }
    pos = end;
  }
}
}  // namespace

// Requester: read data or an atomic's original value lands in the WQE's local buffers.
void Hca::deliver(Pending& p, const uint8_t* data, uint32_t len) {
  if (p.in_cqe) {  // scatter-to-CQE: as it came off the wire (atomic results big-endian)
    if (p.result_size > 8) {
      mem_to_wire(data, p.cqe_data, p.result_size);
    } else if (p.result_size == 8) {
      uint64_t v;
      memcpy(&v, data, 8);
      v = be64(v);
      memcpy(p.cqe_data, &v, 8);
    } else if (p.result_size == 4) {
      uint32_t v;
      memcpy(&v, data, 4);
      v = be32(v);
      memcpy(p.cqe_data, &v, 4);
    } else {
      memcpy(p.cqe_data, data, std::min<uint32_t>(len, sizeof p.cqe_data));
    }
    return;
  }
  if (p.opcode == MLX5_OPCODE_RDMA_READ) {
    uint32_t done = 0;
    for (auto& s : p.local) {
      uint32_t n = std::min(s.length, len - done);
      place_local(s.addr, data + done, n);
      done += n;
    }
  } else if (p.result_size) {
    uint8_t res[256];
    if (p.result_size > 8) {
      mem_to_wire(data, res, p.result_size);  // wide replies: big-endian, as on the wire
    } else if (p.result_size == 8) {
      uint64_t v;
      memcpy(&v, data, 8);
      if (!config().atomic_host_endian) v = be64(v);
      memcpy(res, &v, 8);
    } else {
      // 4-byte (extended) replies are big-endian in either mode: the endianness mode covers
      // 8-byte replies only (UCX keeps 4 in ext_atomic_arg_sizes_be whatever the mode says).
      uint32_t v;
      memcpy(&v, data, 4);
      v = be32(v);
      memcpy(res, &v, 4);
    }
    uint32_t done = 0;
    for (auto& s : p.local) {
      uint32_t n = std::min(s.length, p.result_size - done);
      place_local(s.addr, res + done, n);
      done += n;
    }
  }
}

void Hca::on_ud(const uint8_t* body, uint32_t len) {
  UdMsg m;
  if (len < sizeof m) return;
  memcpy(&m, body, sizeof m);
  auto it = qps.find(m.dst_qpn);
  if (it == qps.end()) return;
  Qp* qp = it->second;
  std::lock_guard<std::recursive_mutex> g(qp->mu);
  if (qp->kind != Kind::kUd) return;
  auto st = qp->attr.qp_state;
  if (st != IBV_QPS_RTR && st != IBV_QPS_RTS && st != IBV_QPS_SQE) return;
  if (m.qkey != qp->attr.qkey) return;  // Q_Key violation: silently dropped
  if (m.grh) {  // a GRH addressed to another GID is not for this port
    const int port = qp->attr.port_num ? qp->attr.port_num : 1;
    if (!port_owns_gid(qp->ctx->dev->index, port, m.dgid)) return;
  }
  const uint32_t qpn = qp->qpx.qp_base.qp_num, srqn = qp->srq ? qp->srq->srqn : 0;
  RecvWqe w;
  fab_.lock_direct(fab_.node());  // the receive and its CQE: one step (see on_req)
  if (!take_recv(qp, &w)) {  // UD has no RNR: no receive posted, the datagram is lost
    fab_.unlock_direct(fab_.node());
    return;
  }
  if (m.grh) {  // 40-byte GRH in front of the payload, as the HCA scatters it
    uint8_t grh[40];
    make_grh(grh, m.length, m.sgid, m.dgid);
    scatter(qp, w, grh, 40, 0);
  }
  uint8_t syn = scatter(qp, w, body + sizeof m, m.length, 40);
  if (syn)
    cq_push_locked(qp->rcq, err_cqe(qpn, w.idx, 0, syn, false, srqn), true);
  else
    cq_push_locked(qp->rcq,
                   resp_cqe(qpn, srqn, m.has_imm ? MLX5_CQE_RESP_SEND_IMM : MLX5_CQE_RESP_SEND, w.idx,
                            m.length + 40, m.imm, m.src_qpn, m.slid, m.grh, m.se),
                   m.se);
  fab_.unlock_direct(fab_.node());
}

void Hca::timers() {
  uint64_t now = now_ns();
  std::vector<Held> release;
  {
    std::lock_guard<std::mutex> g(held_mu_);
    while (!held_.empty() && held_.front().release_ns <= now) {
      release.push_back(std::move(held_.front()));
      held_.pop_front();
    }
  }
  for (Held& h : release) post_msg(h.node, h.gen, kUd, h.bytes.data(), h.bytes.size(), nullptr, 0);
  std::shared_lock<std::shared_mutex> g(tables);
  for (auto& [qpn, qp] : qps) {
    std::lock_guard<std::recursive_mutex> q(qp->mu);
    if (qp->out.empty()) continue;
    now = now_ns();  // after taking the QP: a post may have stamped a request just now
    if (qp->rnr_resend_at) {
      if (now < qp->rnr_resend_at) continue;
      qp->rnr_resend_at = 0;
      for (Pending& p : qp->out)  // replay from the NAKed request on, in order
        if (p.syndrome < 0 && !p.lost && p.dst_node < kMaxNodes) {
          p.sent_ns = now;
          for (const auto& x : p.pieces)  // a long message's earlier pieces (duplicates: dropped)
            post_msg(p.dst_node, p.dst_gen, kReq, x.data(), x.size(), nullptr, 0);
          post_msg(p.dst_node, p.dst_gen, kReq, p.msg.data(), p.msg.size(), nullptr, 0);
          p.inbox_pos = fab_.shm()->rings[p.dst_node].tail.load();
        }
      continue;
    }
    Pending* head = nullptr;
    for (Pending& p : qp->out)
      if (p.syndrome < 0) {
        head = &p;
        break;
      }
    if (!head || head->lost) continue;
    uint64_t t = qp->attr.timeout ? (4096ull << std::min<int>(qp->attr.timeout, 31)) : ~0ull / 64;
    uint64_t limit = std::min<uint64_t>(t * (qp->attr.retry_cnt + 1),
                                        uint64_t(config().max_retry_ms) * 1000000);
    bool gone = head->dst_node >= kMaxNodes || !fab_.node_alive(head->dst_node, head->dst_gen);
    // A request still queued at a live responder is not lost: a real responder's HCA would have
    // acknowledged it whatever its CPUs do, so the transport timer starts when it is taken.
    if (!gone && head->inbox_pos &&
        fab_.shm()->rings[head->dst_node].head.load(std::memory_order_acquire) < head->inbox_pos) {
      head->sent_ns = now;
      continue;
    }
    // Nor is one still in our egress queue (the responder's inbox was full, as behind the pieces
    // of a long message): it will be at most where the inbox ends now.
    bool queued = false;
    if (!gone) {
      std::lock_guard<std::mutex> e(egress_mu_);
      for (const Egress& x : egress_) queued |= x.node == head->dst_node && x.type == kReq;
    }
    if (queued) {
      head->sent_ns = now;
      head->inbox_pos = fab_.shm()->rings[head->dst_node].tail.load();
      continue;
    }
    if ((gone && now - head->sent_ns > std::min<uint64_t>(limit, 1000000)) ||
        now - head->sent_ns > limit) {
      if (getenv("SOFTHCA_TRACE"))
        fprintf(stderr, "softhca: qp 0x%x psn %u retry exceeded (%s, node %u gen %u, %lu us)\n", qpn,
                head->psn, gone ? "peer gone" : "no response", head->dst_node, head->dst_gen,
                (unsigned long)((now - head->sent_ns) / 1000));
      head->syndrome = MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR;
      retire(qp);
    }
  }
}

// ---- BlueFlame doorbell trap -------------------------------------------------------------
// Programs that drive the SQ themselves finish a post by storing to the BlueFlame register.
// The page is mapped read-only: the store faults, we let exactly that one instruction through
// (single-step), then execute the WQEs the doorbell record announces.

namespace {
constexpr int kMaxTraps = 4096;
std::atomic<Qp*> g_trap_qp[kMaxTraps];
std::atomic<uint8_t*> g_trap_page[kMaxTraps];
thread_local Qp* t_stepping = nullptr;
thread_local uint8_t* t_stepping_uar = nullptr;
// CQ arm doorbell pages, one per CQ: threads arming different CQs never share a trapped page.
std::atomic<uint8_t*> g_cq_page[kMaxTraps];
struct sigaction g_old_segv, g_old_trap;

void chain(const struct sigaction& old, int sig, siginfo_t* si, void* uc) {
  if (old.sa_flags & SA_SIGINFO) {
    if (old.sa_sigaction) return old.sa_sigaction(sig, si, uc);
  } else if (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN) {
    return old.sa_handler(sig);
  }
  signal(sig, SIG_DFL);  // re-executing the instruction now takes the default action
}

void on_segv(int sig, siginfo_t* si, void* ucv) {
  auto* page = reinterpret_cast<uint8_t*>(uintptr_t(si->si_addr) & ~uintptr_t(4095));
  for (int i = 0; page && i < kMaxTraps; ++i) {
    if (g_cq_page[i].load(std::memory_order_acquire) == page) {
      mprotect(page, 4096, PROT_READ | PROT_WRITE);
      t_stepping_uar = page;
      static_cast<ucontext_t*>(ucv)->uc_mcontext.gregs[REG_EFL] |= 0x100;
      return;
    }
  }
  for (int i = 0; i < kMaxTraps; ++i) {
    if (g_trap_page[i].load(std::memory_order_acquire) == page) {
      Qp* qp = g_trap_qp[i].load(std::memory_order_acquire);
      mprotect(page, 4096, PROT_READ | PROT_WRITE);
      t_stepping = qp;
      static_cast<ucontext_t*>(ucv)->uc_mcontext.gregs[REG_EFL] |= 0x100;  // trap flag
      return;
    }
  }
  chain(g_old_segv, sig, si, ucv);
}

// A CQ arm doorbell as libmlx5 writes it: {sn << 28 | command | ci, cqn}, big-endian, at 0x20.
void cq_uar_doorbell(uint8_t* page) {
  uint32_t db[2];
  memcpy(db, page + MLX5_CQ_DOORBELL, sizeof db);
  mprotect(page, 4096, PROT_READ);
  ring_cq_arm(db);
}

void on_trap(int sig, siginfo_t* si, void* ucv) {
  if (uint8_t* page = t_stepping_uar) {
    t_stepping_uar = nullptr;
    static_cast<ucontext_t*>(ucv)->uc_mcontext.gregs[REG_EFL] &= ~0x100;
    return cq_uar_doorbell(page);
  }
  Qp* qp = t_stepping;
  if (!qp) return chain(g_old_trap, sig, si, ucv);
  t_stepping = nullptr;
  static_cast<ucontext_t*>(ucv)->uc_mcontext.gregs[REG_EFL] &= ~0x100;
  mprotect(qp->bf, 4096, PROT_READ);
  // The doorbell: the model executes what the doorbell record says was posted.
  Hca& h = Hca::get();
  std::shared_lock<std::shared_mutex> g(h.tables);
  std::lock_guard<std::recursive_mutex> q(qp->mu);
  h.ring_sq(qp);
}

void install_handlers() {
  struct sigaction sa {};
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  struct sigaction cur;
  sigaction(SIGSEGV, nullptr, &cur);
  if (cur.sa_sigaction != on_segv) sigaction(SIGSEGV, &sa, &g_old_segv);
  sa.sa_sigaction = on_trap;
  sigaction(SIGTRAP, nullptr, &cur);
  if (cur.sa_sigaction != on_trap) sigaction(SIGTRAP, &sa, &g_old_trap);
}
}  // namespace

void trap_bf_page(Qp* qp) {
  if (!doorbell_trap_mode()) return watch_bf_page(qp);
  install_handlers();  // again each time: a runtime may have replaced them since
  for (int i = 0; i < kMaxTraps; ++i) {
    if (g_trap_page[i].load() == qp->bf) return;
  }
  for (int i = 0; i < kMaxTraps; ++i) {
    uint8_t* expected = nullptr;
    if (g_trap_page[i].load() == nullptr) {
      g_trap_qp[i].store(qp);
      if (g_trap_page[i].compare_exchange_strong(expected, qp->bf)) {
        mprotect(qp->bf, 4096, PROT_READ);
        return;
      }
    }
  }
  fprintf(stderr, "softhca: too many QPs with raw doorbells (%d)\n", kMaxTraps);
}

uint8_t* cq_uar_page(Cq* cq) {
  std::lock_guard<std::mutex> g(cq->cons);
  if (cq->uar) return cq->uar;
  if (!doorbell_trap_mode()) return cq->uar = watch_cq_page(cq);
  install_handlers();
  void* m = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  for (int i = 0; i < kMaxTraps; ++i) {
    uint8_t* expected = nullptr;
    if (g_cq_page[i].compare_exchange_strong(expected, static_cast<uint8_t*>(m)))
      return cq->uar = static_cast<uint8_t*>(m);
  }
  munmap(m, 4096);
  return nullptr;
}

void release_cq_uar(Cq* cq) {
  if (!cq->uar) return;
  if (!doorbell_trap_mode()) return unwatch_cq_page(cq);
  for (int i = 0; i < kMaxTraps; ++i) {
    uint8_t* expected = cq->uar;
    if (g_cq_page[i].compare_exchange_strong(expected, nullptr)) break;
  }
  munmap(cq->uar, 4096);
  cq->uar = nullptr;
}

void untrap_bf_page(Qp* qp) {
  if (!doorbell_trap_mode()) return unwatch_bf_page(qp);
  for (int i = 0; i < kMaxTraps; ++i)
    if (g_trap_page[i].load() == qp->bf) {
      mprotect(qp->bf, 4096, PROT_READ | PROT_WRITE);
      g_trap_page[i].store(nullptr);
    }
}

}  // namespace softhca
