// lib/transport/rc: RC queue pairs connected on first use (rc_transport.h).
#include "lib/transport/rc/rc_transport.h"

#include <infiniband/mlx5dv.h>
#include <sched.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace hoshmem::rc {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kCmQkey = 0x484f5348;  // "HOSH"
constexpr uint32_t kCmMagic = 0x68726331;
constexpr unsigned kCmSlots = 64;            // receive buffers of the connection manager
constexpr unsigned kGrh = 40;                // every UD receive starts with room for a GRH
constexpr unsigned kCmSlotBytes = 128;       // GRH + message, rounded
constexpr uint32_t kSendQueueDepth = 256;    // WQEs per RC QP
constexpr auto kConnectTimeout = std::chrono::seconds(10);
constexpr auto kRequestResend = std::chrono::milliseconds(50);

enum CmType : uint8_t { kRequest = 1, kReply = 2, kStop = 3 };

// A connection manager datagram (host order: both ends run this code on the same architecture
// family; the fields are still fixed-width and packed).
struct __attribute__((packed)) CmMessage {
  uint32_t magic;
  uint8_t type;
  uint8_t reserved[3];
  int32_t pe;    // the sender
  uint32_t qpn;  // the sender's RC QP for the receiver
  uint16_t lid;
  uint8_t gid[16];
};
static_assert(kGrh + sizeof(CmMessage) <= kCmSlotBytes, "slot too small");

const char *syndrome_name(uint8_t s) {
  switch (s) {
    case MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR: return "local length error";
    case MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR: return "local QP operation error";
    case MLX5_CQE_SYNDROME_LOCAL_PROT_ERR: return "local protection error (buffer not registered)";
    case MLX5_CQE_SYNDROME_WR_FLUSH_ERR: return "flushed after an earlier error";
    case MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR: return "remote invalid request";
    case MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR: return "remote access error (address or key)";
    case MLX5_CQE_SYNDROME_REMOTE_OP_ERR: return "remote operation error";
    case MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR: return "no answer (transport retries exceeded)";
    case MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR: return "receiver not ready, retries exceeded";
    default: return "error completion";
  }
}

}  // namespace

struct Transport::Endpoint {
  int pe = -1;
  ibv_qp *qp = nullptr;
  ib::SendQueue sq;
  bool connected = false;          // our QP is in RTS, aimed at the peer's (cm_mutex_)
  bool answered = false;           // the peer replied: its QP is ready too (cm_mutex_)
  std::atomic<bool> ready{false};  // both: operations may go
  bool fence_next = false;         // the next WQE carries the fence flag (ops_mutex_)
  struct Posted {
    uint16_t index;
    uint16_t bbs;
  };
  std::deque<Posted> in_flight;  // posted, not completed, in order (ops_mutex_)
  uint64_t posted = 0, done = 0;  // WQEs (ops_mutex_)
};

Transport::Transport() = default;
Transport::~Transport() { shutdown(); }

bool Transport::init(ib::Device *device, int me, int npes, ErrorHandler on_error,
                     std::string *why) {
  dev_ = device;
  me_ = me;
  npes_ = npes;
  on_error_ = on_error;
  if (!dev_->mlx5()) {
    *why = std::string(dev_->name()) + " is not an mlx5 device: the RC transport posts mlx5 WQEs";
    return false;
  }
  ibv_context *ctx = dev_->context();
  peers_.assign(static_cast<size_t>(npes), PeerAddress{});
  endpoints_.resize(static_cast<size_t>(npes));
  ahs_.assign(static_cast<size_t>(npes), nullptr);

  send_cq_ = ibv_create_cq(ctx, 4096, nullptr, nullptr, 0);
  if (!send_cq_) {
    *why = std::string("cannot create the RC completion queue: ") + strerror(errno);
    return false;
  }
  if (!send_cq_ring_.init(send_cq_)) {
    *why = "the RC completion queue's ring is not one this code reads (mlx5dv_init_obj)";
    return false;
  }
  scratch_ = static_cast<uint64_t *>(aligned_alloc(4096, 4096));
  scratch_mr_ = scratch_ ? ibv_reg_mr(dev_->pd(), scratch_, 4096, IBV_ACCESS_LOCAL_WRITE) : nullptr;
  if (!scratch_mr_) {
    *why = "cannot register the atomic reply buffer";
    return false;
  }

  // The connection manager: a UD QP whose CQ wakes the connection thread through a channel.
  cm_channel_ = ibv_create_comp_channel(ctx);
  cm_cq_ = cm_channel_ ? ibv_create_cq(ctx, 2 * kCmSlots, nullptr, cm_channel_, 0) : nullptr;
  ibv_qp_init_attr init{};
  init.qp_type = IBV_QPT_UD;
  init.send_cq = init.recv_cq = cm_cq_;
  init.cap.max_send_wr = kCmSlots;
  init.cap.max_recv_wr = kCmSlots;
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  init.cap.max_inline_data = sizeof(CmMessage);
  cm_qp_ = cm_cq_ ? ibv_create_qp(dev_->pd(), &init) : nullptr;
  if (!cm_qp_) {
    *why = "cannot create the connection manager's UD QP";
    return false;
  }
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.port_num = dev_->port();
  attr.qkey = kCmQkey;
  bool ok = ibv_modify_qp(cm_qp_, &attr,
                          IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) == 0;
  attr.qp_state = IBV_QPS_RTR;
  ok = ok && ibv_modify_qp(cm_qp_, &attr, IBV_QP_STATE) == 0;
  attr.qp_state = IBV_QPS_RTS;
  attr.sq_psn = 0;
  ok = ok && ibv_modify_qp(cm_qp_, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0;
  cm_buf_ = static_cast<uint8_t *>(aligned_alloc(4096, kCmSlots * kCmSlotBytes));
  cm_mr_ = ok && cm_buf_ ? ibv_reg_mr(dev_->pd(), cm_buf_, kCmSlots * kCmSlotBytes,
                                      IBV_ACCESS_LOCAL_WRITE)
                         : nullptr;
  if (!cm_mr_) {
    *why = "cannot set up the connection manager's UD QP";
    return false;
  }
  for (unsigned slot = 0; slot < kCmSlots; ++slot) post_cm_receive(slot);
  peers_[static_cast<size_t>(me_)] = address();  // the stop message goes to ourselves
  if (ibv_req_notify_cq(cm_cq_, 0) != 0) {
    *why = "cannot arm the connection manager's CQ";
    return false;
  }
  cm_thread_ = std::thread([this] { cm_loop(); });
  return true;
}

PeerAddress Transport::address() const {
  PeerAddress a{};
  a.lid = dev_->port_attr().lid;
  a.gid = dev_->gid();
  a.cm_qpn = cm_qp_ ? cm_qp_->qp_num : 0;
  return a;
}

void Transport::set_peer(int pe, const PeerAddress &address) {
  std::lock_guard<std::mutex> lock(cm_mutex_);
  peers_[static_cast<size_t>(pe)] = address;
}

void Transport::shutdown() {
  if (cm_thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(cm_mutex_);
      stopping_ = true;
      send_cm(me_, kStop, 0);
    }
    cm_thread_.join();
  }
  for (auto &ep : endpoints_)
    if (ep && ep->qp) ibv_destroy_qp(ep->qp);
  endpoints_.clear();
  by_qpn_.clear();
  for (ibv_ah *ah : ahs_)
    if (ah) ibv_destroy_ah(ah);
  ahs_.clear();
  if (cm_qp_) ibv_destroy_qp(cm_qp_);
  if (cm_mr_) ibv_dereg_mr(cm_mr_);
  if (cm_cq_) ibv_destroy_cq(cm_cq_);
  if (cm_channel_) ibv_destroy_comp_channel(cm_channel_);
  if (scratch_mr_) ibv_dereg_mr(scratch_mr_);
  if (send_cq_) ibv_destroy_cq(send_cq_);
  free(cm_buf_);
  free(scratch_);
  cm_qp_ = nullptr, cm_mr_ = nullptr, cm_cq_ = nullptr, cm_channel_ = nullptr;
  scratch_mr_ = nullptr, send_cq_ = nullptr, cm_buf_ = nullptr, scratch_ = nullptr;
}

int Transport::connected_peers() const {
  int n = 0;
  for (const auto &ep : endpoints_) n += ep && ep->ready ? 1 : 0;
  return n;
}

// --- connection manager --------------------------------------------------------------------

void Transport::post_cm_receive(unsigned slot) {
  ibv_sge sge{reinterpret_cast<uint64_t>(cm_buf_ + slot * kCmSlotBytes), kCmSlotBytes,
              cm_mr_->lkey};
  ibv_recv_wr wr{}, *bad = nullptr;
  wr.wr_id = slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_post_recv(cm_qp_, &wr, &bad);
}

ibv_ah *Transport::ah_for(int pe) {
  ibv_ah *&ah = ahs_[static_cast<size_t>(pe)];
  if (ah) return ah;
  const PeerAddress &peer = peers_[static_cast<size_t>(pe)];
  ibv_ah_attr attr{};
  attr.dlid = peer.lid;
  attr.port_num = dev_->port();
  if (dev_->roce()) {
    attr.is_global = 1;
    attr.grh.dgid = peer.gid;
    attr.grh.sgid_index = static_cast<uint8_t>(dev_->gid_index());
    attr.grh.hop_limit = 64;
  }
  ah = ibv_create_ah(dev_->pd(), &attr);
  return ah;
}

// Called with cm_mutex_ held.
void Transport::send_cm(int pe, uint8_t type, uint32_t qpn) {
  ibv_ah *ah = ah_for(pe);
  if (!ah) return;  // resent by the requester's timer; a reply by the next request
  CmMessage m{};
  m.magic = kCmMagic;
  m.type = type;
  m.pe = me_;
  m.qpn = qpn;
  m.lid = dev_->port_attr().lid;
  memcpy(m.gid, dev_->gid().raw, 16);
  ibv_sge sge{reinterpret_cast<uint64_t>(&m), sizeof m, 0};
  ibv_send_wr wr{}, *bad = nullptr;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.wr.ud.ah = ah;
  wr.wr.ud.remote_qpn = peers_[static_cast<size_t>(pe)].cm_qpn;
  wr.wr.ud.remote_qkey = kCmQkey;
  ibv_post_send(cm_qp_, &wr, &bad);
}

// Handles every datagram that has arrived (re-posting its buffer); true if there was any.
bool Transport::drain_cm() {
  ibv_wc wc[16];
  bool any = false;
  for (int n; (n = ibv_poll_cq(cm_cq_, 16, wc)) > 0;) {
    any = true;
    for (int i = 0; i < n; ++i) {
      if (wc[i].opcode != IBV_WC_RECV) continue;  // our own sends
      const auto slot = static_cast<unsigned>(wc[i].wr_id);
      if (wc[i].status == IBV_WC_SUCCESS) handle_cm(cm_buf_ + slot * kCmSlotBytes + kGrh);
      post_cm_receive(slot);
    }
  }
  return any;
}

void Transport::cm_loop() {
  for (;;) {
    drain_cm();
    {
      std::lock_guard<std::mutex> lock(cm_mutex_);
      if (stopping_) return;
    }
    // Asleep until a datagram arrives: arm, look once more, then wait for the event.
    ibv_req_notify_cq(cm_cq_, 0);
    if (drain_cm()) continue;
    ibv_cq *cq = nullptr;
    void *unused = nullptr;
    if (ibv_get_cq_event(cm_channel_, &cq, &unused) == 0) ibv_ack_cq_events(cq, 1);
  }
}

void Transport::handle_cm(const uint8_t *bytes) {
  CmMessage m;
  memcpy(&m, bytes, sizeof m);
  if (m.magic != kCmMagic || m.pe < 0 || m.pe >= npes_) return;
  std::lock_guard<std::mutex> lock(cm_mutex_);
  if (m.type == kStop) return;
  PeerAddress &peer = peers_[static_cast<size_t>(m.pe)];
  peer.lid = m.lid;
  memcpy(peer.gid.raw, m.gid, 16);
  Endpoint *ep = find_or_create_locked(m.pe);
  if (!ep) return;
  if (!ep->connected) ep->connected = connect_qp(ep, m.qpn, peer);
  if (m.type == kRequest && ep->connected) send_cm(m.pe, kReply, ep->qp->qp_num);
  if (m.type == kReply) ep->answered = ep->connected;
  cm_changed_.notify_all();
}

// Called with cm_mutex_ held.
Transport::Endpoint *Transport::find_or_create_locked(int pe) {
  std::unique_ptr<Endpoint> &slot = endpoints_[static_cast<size_t>(pe)];
  if (slot) return slot.get();
  ibv_qp_init_attr init{};
  init.qp_type = IBV_QPT_RC;
  init.send_cq = init.recv_cq = send_cq_;
  init.cap.max_send_wr = kSendQueueDepth;
  init.cap.max_recv_wr = 1;
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  init.cap.max_inline_data = 128;
  ibv_qp *qp = ibv_create_qp(dev_->pd(), &init);
  if (!qp) return nullptr;
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.port_num = dev_->port();
  attr.qp_access_flags =
      IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  auto ep = std::make_unique<Endpoint>();
  ep->pe = pe;
  ep->qp = qp;
  if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                   IBV_QP_ACCESS_FLAGS) != 0 ||
      !ep->sq.init(qp)) {
    ibv_destroy_qp(qp);
    return nullptr;
  }
  if (max_inline_ == 0 || init.cap.max_inline_data < max_inline_)
    max_inline_ = init.cap.max_inline_data;
  {
    std::lock_guard<std::mutex> ops(ops_mutex_);
    by_qpn_[qp->qp_num] = ep.get();
  }
  slot = std::move(ep);
  return slot.get();
}

bool Transport::connect_qp(Endpoint *ep, uint32_t remote_qpn, const PeerAddress &peer) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = dev_->port_attr().active_mtu;
  attr.dest_qp_num = remote_qpn;
  attr.rq_psn = 0;
  attr.max_dest_rd_atomic = 16;
  attr.min_rnr_timer = 12;
  attr.ah_attr.dlid = peer.lid;
  attr.ah_attr.port_num = dev_->port();
  if (dev_->roce()) {
    attr.ah_attr.is_global = 1;
    attr.ah_attr.grh.dgid = peer.gid;
    attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(dev_->gid_index());
    attr.ah_attr.grh.hop_limit = 64;
  }
  if (ibv_modify_qp(ep->qp, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                                       IBV_QP_MIN_RNR_TIMER) != 0)
    return false;
  attr.qp_state = IBV_QPS_RTS;
  attr.sq_psn = 0;
  attr.timeout = 14;
  attr.retry_cnt = 7;
  attr.rnr_retry = 7;
  attr.max_rd_atomic = 16;
  return ibv_modify_qp(ep->qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
                                          IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                          IBV_QP_MAX_QP_RD_ATOMIC) == 0;
}

Transport::Endpoint *Transport::endpoint(int pe) {
  Endpoint *ep = endpoints_[static_cast<size_t>(pe)].get();
  if (ep && ep->ready.load(std::memory_order_acquire)) return ep;
  std::unique_lock<std::mutex> lock(cm_mutex_);
  ep = find_or_create_locked(pe);
  if (!ep) {
    lock.unlock();
    on_error_(pe, "cannot create an RC queue pair");
    abort();  // the handler does not return
  }
  const auto deadline = Clock::now() + kConnectTimeout;
  auto next_request = Clock::now();
  while (!ep->answered) {
    const auto now = Clock::now();
    if (now >= deadline) {
      lock.unlock();
      on_error_(pe, "no answer to the connection request within 10 s (has it exited?)");
      abort();
    }
    if (now >= next_request) {
      send_cm(pe, kRequest, ep->qp->qp_num);
      next_request = now + kRequestResend;
    }
    cm_changed_.wait_for(lock, std::chrono::milliseconds(5));
  }
  ep->ready.store(true, std::memory_order_release);
  return ep;
}

// --- operations ------------------------------------------------------------------------------

bool Transport::progress() {
  ib::Completion c;
  bool any = false;
  while (send_cq_ring_.poll(&c)) {
    any = true;
    auto it = by_qpn_.find(c.qpn);
    if (it == by_qpn_.end()) continue;
    Endpoint *ep = it->second;
    if (ep->in_flight.empty()) continue;
    const Endpoint::Posted first = ep->in_flight.front();
    ep->in_flight.pop_front();
    ep->sq.completed(first.index, first.bbs);
    ++ep->done;
    if (c.opcode == MLX5_CQE_REQ_ERR || c.opcode == MLX5_CQE_RESP_ERR)
      on_error_(ep->pe, syndrome_name(c.syndrome));
  }
  return any;
}

void Transport::post(Endpoint *ep, unsigned bbs) {
  ep->in_flight.push_back({ep->sq.ring().pi, static_cast<uint16_t>(bbs)});
  ep->sq.post(bbs);
  ++ep->posted;
}

void Transport::wait_for(Endpoint *ep, uint64_t ticket) {
  for (unsigned spins = 0; ep->done < ticket; ++spins)
    if (!progress() && spins > 1000) sched_yield();
}

namespace {
// Room for the largest WQE (inline data included) before writing one.
constexpr uint32_t kMaxWqeBbs = 4;
}  // namespace

#define HOSHMEM_RC_BEGIN(pe)                                   \
  Endpoint *ep = endpoint(pe);                                 \
  std::lock_guard<std::mutex> ops(ops_mutex_);                 \
  while (ep->sq.free_bbs() < kMaxWqeBbs) progress();           \
  const ib::WqeFlags flags{true, ep->fence_next};              \
  ep->fence_next = false

void Transport::put(int pe, const ib::LocalBuf &source, uint32_t length,
                    const ib::RemoteAddr &dest) {
  HOSHMEM_RC_BEGIN(pe);
  post(ep, ib::write_rdma_write(ep->sq.ring(), source, length, dest, flags));
}

void Transport::put_inline(int pe, const void *source, uint32_t length,
                           const ib::RemoteAddr &dest) {
  HOSHMEM_RC_BEGIN(pe);
  post(ep, ib::write_rdma_write_inline(ep->sq.ring(), source, length, dest, flags));
}

void Transport::get(int pe, const ib::LocalBuf &dest, uint32_t length,
                    const ib::RemoteAddr &source) {
  HOSHMEM_RC_BEGIN(pe);
  post(ep, ib::write_rdma_read(ep->sq.ring(), dest, length, source, flags));
  wait_for(ep, ep->posted);
}

uint64_t Transport::atomic(int pe, const atomics::HcaAtomic &a, const ib::RemoteAddr &target) {
  HOSHMEM_RC_BEGIN(pe);
  const ib::LocalBuf reply{reinterpret_cast<uint64_t>(scratch_), scratch_mr_->lkey};
  post(ep, ib::write_atomic(ep->sq.ring(), a, reply, target, flags));
  wait_for(ep, ep->posted);
  return dev_->atomics().reply_value(scratch_, a.size);
}

#undef HOSHMEM_RC_BEGIN

void Transport::fence(int pe) {
  std::lock_guard<std::mutex> ops(ops_mutex_);
  if (Endpoint *ep = endpoints_[static_cast<size_t>(pe)].get()) ep->fence_next = true;
}

void Transport::quiet() {
  std::lock_guard<std::mutex> ops(ops_mutex_);
  for (auto &ep : endpoints_)
    if (ep) wait_for(ep.get(), ep->posted);
}

}  // namespace hoshmem::rc
