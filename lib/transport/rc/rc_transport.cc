// lib/transport/rc: RC queue pairs connected on first use, lanes, bounce buffers, registration
// cache (rc_transport.h).
#include "lib/transport/rc/rc_transport.h"

#include <fcntl.h>
#include <infiniband/mlx5dv.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <optional>

#include "lib/base/memory_events.h"
#include "lib/base/parse.h"

namespace hoshmem::rc {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kCmQkey = 0x484f5348;  // "HOSH"
constexpr uint32_t kCmMagic = 0x68726332;
constexpr unsigned kCmSlots = 64;            // receive buffers of the connection manager
constexpr unsigned kGrh = 40;                // every UD receive starts with room for a GRH
constexpr unsigned kCmSlotBytes = 128;       // GRH + message, rounded
constexpr int kMaxLanes = 64;
constexpr size_t kSlotBytes = 32 * 1024;     // bounce slot: one message of a bounced transfer
constexpr unsigned kSlots = 8;               // per lane: copy one while others are on the wire
constexpr unsigned kReplySlots = 511;        // 8-byte atomic replies per lane, + one discarded
constexpr size_t kCacheEntries = 16;
constexpr size_t kCacheBytes = 4u << 20;     // registered by the cache, unless all in use
constexpr size_t kPage = 4096;
// After the 8-byte reply slots, one page for the result of a wide masked atomic (up to 256
// bytes; atomic_wide waits for it under the lane's lock, so one per lane is enough).
constexpr size_t kRepliesBytes = 2 * kPage;
// How long a connection request waits for its answer: 10 s, and 20 ms more per PE of the job,
// since every PE may be asking the same peer's connection thread at once (all-to-all at start).
std::chrono::milliseconds connect_timeout(int npes) {
  return std::chrono::milliseconds(10'000 + 20 * static_cast<int64_t>(npes));
}
constexpr auto kRequestResend = std::chrono::milliseconds(50);

enum CmType : uint8_t { kRequest = 1, kReply = 2 };

// A connection manager datagram (host order: both ends run this code on the same architecture
// family; the fields are still fixed-width and packed).
struct __attribute__((packed)) CmMessage {
  uint32_t magic;
  uint8_t type;
  uint8_t reserved;
  uint16_t lane;     // the requester's lane
  int32_t pe;        // the sender
  uint32_t qpn;      // the sender's RC QP for the receiver
  uint32_t answers;  // a reply: the requester's QP it answers (a stale reply is ignored)
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

const char *status_name(ibv_wc_status s) {
  switch (s) {
    case IBV_WC_RETRY_EXC_ERR: return "no answer (transport retries exceeded)";
    case IBV_WC_WR_FLUSH_ERR: return "flushed after an earlier error";
    case IBV_WC_REM_ACCESS_ERR: return "remote access error (address or key)";
    case IBV_WC_LOC_PROT_ERR: return "local protection error (buffer not registered)";
    default: return ibv_wc_status_str(s);
  }
}

// The cause of an error completion as fail() reports it: its meaning, then the numbers a
// vendor's support asks for, in hex (the CQE's syndrome or the verbs status, the vendor error).
std::string error_cause(const char *meaning, const char *kind, unsigned code, unsigned vendor) {
  char numbers[64];
  snprintf(numbers, sizeof numbers, " (%s 0x%02x, vendor error 0x%02x)", kind, code, vendor);
  return meaning + std::string(numbers);
}

}  // namespace

struct Transport::Wqe {
  // kNop: raw WQEs only (verbs has no NOP: a zero-length write to `remote` takes its place).
  enum Kind : uint8_t {
    kWrite, kWriteInline, kRead, kAtomic, kWriteInlineImm, kAtomicWide, kNop
  } kind;
  const void *data;  // kWriteInline, kWriteInlineImm; kAtomicWide: the operand bytes
  ib::LocalBuf local;
  uint32_t length;
  ib::RemoteAddr remote;
  const atomics::HcaAtomic *atomic;  // kAtomic
  uint32_t imm = 0;                  // kWriteInlineImm
  // kAtomicWide: the opcode, `length` the operand size, `operand_bytes` inline after raddr
  atomics::HcaOpcode wide_op{};
  uint32_t operand_bytes = 0;
};

struct Transport::CacheEntry {
  uintptr_t start, end;  // whole pages
  ibv_mr *mr;
  unsigned refs;  // lookups not yet released (WQEs in flight)
  uint64_t last_use;
  bool dead;  // its pages were released (or forgotten): never hit; deregistered when unheld
};

Transport::Transport() = default;
Transport::~Transport() { shutdown(); }

bool Transport::init(ib::Device *device, int me, int npes, ErrorHandler on_error,
                     std::string *why, uint64_t dc_key, unsigned arrivals) {
  dev_ = device;
  rd_depth_ = std::clamp(device->max_rd_atomic(), 1u, kMaxInitiatorDepth);
  me_ = me;
  npes_ = npes;
  on_error_ = on_error;
  // These variables are validated with the library's others (lib/core/config.cc).
  const char *verbs = getenv("HOSHMEM_RC_VERBS");
  raw_ = dev_->mlx5() && !(verbs && parse_bool(verbs).value_or(false));
  if (!raw_) dev_->use_standard_atomics_only();
  if (const char *min = getenv("HOSHMEM_RC_CACHE_MIN")) {
    const std::optional<uint64_t> v = parse_size(min);
    if (!v) {
      *why = std::string("invalid HOSHMEM_RC_CACHE_MIN='") + min + "': expected a byte count";
      return false;
    }
    cache_min_ = *v ? static_cast<size_t>(*v) : SIZE_MAX;
    if (!*v) cache_off_ = "off (HOSHMEM_RC_CACHE_MIN=0)";
  }
  // Only with memory-release hooks: they are what keeps a registration from outliving its pages.
  if (cache_min_ != SIZE_MAX) {
    std::string reason;
    cache_hooked_ = memory_events::subscribe(&Transport::on_release, this, &reason);
    if (!cache_hooked_)
      cache_min_ = SIZE_MAX, cache_off_ = "off (released memory cannot be seen: " + reason + ")";
  }
  if (const char *t = getenv("HOSHMEM_RC_TIMEOUT")) {
    const std::optional<uint64_t> v = parse_uint(t);
    if (!v || *v < 1 || *v > 31) {
      *why = std::string("invalid HOSHMEM_RC_TIMEOUT='") + t + "': expected 1 to 31";
      return false;
    }
    ack_timeout_ = static_cast<uint8_t>(*v);
  }
  if (const char *t = getenv("HOSHMEM_RC_CQ_SIZE")) {
    const std::optional<uint64_t> v = parse_uint(t);
    if (!v || *v < 16 || *v > (1u << 22) - 1) {
      *why = std::string("invalid HOSHMEM_RC_CQ_SIZE='") + t + "': expected 16 to 4194303";
      return false;
    }
    cq_entries_ = static_cast<int>(*v);
  }
  max_msg_ = dev_->port_attr().max_msg_sz ? dev_->port_attr().max_msg_sz : (1u << 30);
  ibv_context *ctx = dev_->context();
  peers_.assign(static_cast<size_t>(npes), PeerAddress{});
  ahs_.reset(dev_, static_cast<size_t>(npes));
  lanes_.resize(kMaxLanes);

  if (arrivals && !open_arrivals(arrivals, why)) return false;
  passive_cq_ = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  if (!passive_cq_) {
    *why = std::string("cannot create a completion queue: ") + strerror(errno);
    return false;
  }
  // The inline limit the QPs get (the same for all: same attributes).
  if (ibv_qp *probe = create_qp(passive_cq_)) {
    ibv_qp_attr attr{};
    ibv_qp_init_attr init{};
    if (ibv_query_qp(probe, &attr, IBV_QP_CAP, &init) == 0)
      max_inline_ = std::min<uint32_t>(init.cap.max_inline_data, ib::max_inline_write(kMaxWqeBbs));
    ibv_destroy_qp(probe);
  }
  if (max_inline_ == 0) max_inline_ = 64;  // what create_qp asks at least
  auto lane0 = std::make_unique<Lane>();
  if (!make_lane(lane0.get(), why)) return false;
  lanes_[0] = std::move(lane0);

  // The connection manager: a UD QP whose CQ wakes the connection thread through a channel.
  cm_channel_ = ibv_create_comp_channel(ctx);
  cm_wake_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  cm_cq_ = cm_channel_ && cm_wake_ >= 0
               ? ibv_create_cq(ctx, 2 * kCmSlots, nullptr, cm_channel_, 0)
               : nullptr;
  cm_qp_ = cm_cq_ ? dev_->create_ud_qp(cm_cq_, cm_cq_, kCmSlots, kCmQkey, sizeof(CmMessage))
                  : nullptr;
  if (!cm_qp_) {
    *why = "cannot create the connection manager's UD QP";
    return false;
  }
  cm_buf_ = static_cast<uint8_t *>(aligned_alloc(4096, kCmSlots * kCmSlotBytes));
  cm_mr_ = cm_buf_ ? ibv_reg_mr(dev_->pd(), cm_buf_, kCmSlots * kCmSlotBytes,
                                      IBV_ACCESS_LOCAL_WRITE)
                         : nullptr;
  if (!cm_mr_) {
    *why = "cannot set up the connection manager's UD QP";
    return false;
  }
  for (unsigned slot = 0; slot < kCmSlots; ++slot) post_cm_receive(slot);
  peers_[static_cast<size_t>(me_)] = address();
  if (ibv_req_notify_cq(cm_cq_, 0) != 0) {
    *why = "cannot arm the connection manager's CQ";
    return false;
  }
  cm_thread_ = std::thread([this] { cm_loop(); });
  if (dc_key) open_dc_target(dc_key);
  return true;
}

void Transport::open_dc_target(uint64_t key) {
  if (!raw_) {
    dc_why_ = "DC needs mlx5 WQEs, and HOSHMEM_RC_VERBS=1 (or a device that is not mlx5) "
              "means plain verbs";
    return;
  }
  if (!dc::supported(*dev_, &dc_why_)) return;
  auto target = std::make_unique<dc::Target>();
  if (!target->open(*dev_, key, &dc_why_, arrivals_srq_, arrivals_cq_) ||
      !dc_addresses_.init(*dev_, key, static_cast<size_t>(npes_), &dc_why_))
    return;
  dct_ = std::move(target);
}

bool Transport::use_dc(unsigned dcis, std::string *why) {
  if (!dct_) {
    *why = dc_why_;
    return false;
  }
  dc_path_mtu_ = dev_->port_attr().active_mtu;
  for (int pe = 0; pe < npes_; ++pe) {
    const PeerAddress &peer = peers_[static_cast<size_t>(pe)];
    if (peer.dct == 0) {
      *why = "PE " + std::to_string(pe) + " has no DC target";
      return false;
    }
    if (peer.mtu) dc_path_mtu_ = std::min(dc_path_mtu_, static_cast<ibv_mtu>(peer.mtu));
  }
  if (!dct_->start(*dev_, dc_path_mtu_, why)) return false;
  stop_cm();  // nothing to connect
  dc_ = true;
  dci_count_ = dcis;
  max_inline_ = std::min(max_inline_, ib::max_inline_write(kMaxWqeBbs, dc_addresses_.bytes()));
  auto lane0 = std::make_unique<Lane>();
  if (!make_lane(lane0.get(), why)) {
    destroy_lane(lane0.get());
    return false;
  }
  destroy_lane(lanes_[0].get());
  lanes_[0] = std::move(lane0);
  // The connection manager's addresses and handles are no longer needed: the DC addresses are.
  peers_.clear();
  peers_.shrink_to_fit();
  ahs_.reset(dev_, 0);
  return true;
}

Transport::Footprint Transport::footprint() const {
  std::lock_guard<std::mutex> lock(cm_mutex_);
  Footprint f;
  f.queue_pairs = passive_.size() + (cm_qp_ ? 1 : 0) + (dct_ ? 1 : 0);
  size_t lanes = 0;
  for (const auto &l : lanes_) {
    if (!l) continue;
    ++lanes;
    f.queue_pairs += l->owned.size();
    for (const auto &ep : l->owned)
      f.queue_bytes += sizeof(Endpoint) + (ep->signaled_mask + 1) * sizeof(Endpoint::Signaled) +
                       (raw_ ? size_t{ep->sq.ring().bb_count} * MLX5_SEND_WQE_BB : 0);
    f.lane_bytes += size_t{l->cq ? static_cast<unsigned>(l->cq->cqe) + 1 : 0} * 64 +
                    kSlots * kSlotBytes + kRepliesBytes;
  }
  f.queue_bytes += passive_.size() * kSendQueueDepth * MLX5_SEND_WQE_BB;
  f.bytes_per_peer = lanes * sizeof(std::atomic<Endpoint *>) +
                     (peers_.empty() ? 0 : sizeof(PeerAddress)) +
                     (ahs_.slots() ? sizeof(ibv_ah *) : 0) + dc_addresses_.bytes_per_peer();
  return f;
}

bool Transport::make_lane(Lane *l, std::string *why) {
  l->cq = ibv_create_cq(dev_->context(), cq_entries_, nullptr, nullptr, 0);
  if (!l->cq || (raw_ && !l->ring.init(l->cq))) {
    *why = "cannot create a lane's completion queue (or read its ring)";
    return false;
  }
  l->cq_credits = static_cast<uint32_t>(l->cq->cqe);  // what the device gave (mlx5: 2^n - 1)
  l->eps = std::make_unique<std::atomic<Endpoint *>[]>(static_cast<size_t>(npes_));
  l->bounce = static_cast<uint8_t *>(aligned_alloc(kPage, kSlots * kSlotBytes));
  l->bounce_mr = l->bounce ? ibv_reg_mr(dev_->pd(), l->bounce, kSlots * kSlotBytes,
                                        IBV_ACCESS_LOCAL_WRITE)
                           : nullptr;
  l->replies = static_cast<uint64_t *>(aligned_alloc(kPage, kRepliesBytes));
  l->replies_mr = l->replies ? ibv_reg_mr(dev_->pd(), l->replies, kRepliesBytes,
                                          IBV_ACCESS_LOCAL_WRITE)
                             : nullptr;
  if (!l->bounce_mr || !l->replies_mr) {
    *why = std::string("cannot register a lane's bounce buffers: ") + strerror(errno);
    return false;
  }
  for (unsigned i = kSlots; i-- > 0;) l->free_slots.push_back(i);
  for (unsigned i = kReplySlots; i-- > 0;) l->free_replies.push_back(i);
  l->discard = {reinterpret_cast<uint64_t>(&l->replies[kReplySlots]), l->replies_mr->lkey};
  l->blocking = {reinterpret_cast<uint64_t>(l->replies) + kPage, l->replies_mr->lkey};
  for (unsigned i = 0; dc_ && i < dci_count_; ++i) {
    ibv_qp *qp = dc::create_initiator(*dev_, l->cq, kSendQueueDepth, max_inline_,
                                      rd_depth_, dc_path_mtu_, ack_timeout_);
    std::unique_ptr<Endpoint> ep = qp ? make_endpoint(l, qp) : nullptr;
    if (!ep) {
      if (qp) ibv_destroy_qp(qp);
      *why = std::string("cannot create a DC initiator: ") + strerror(errno);
      return false;
    }
    l->dcis.push_back(ep.get());
    l->by_qpn[qp->qp_num] = ep.get();
    l->owned.push_back(std::move(ep));
  }
  return true;
}

void Transport::destroy_lane(Lane *l) {
  for (auto &ep : l->owned)
    if (ep->qp) ibv_destroy_qp(ep->qp);
  l->owned.clear();
  l->dcis.clear();
  l->by_qpn.clear();
  if (l->cq) ibv_destroy_cq(l->cq);
  if (l->bounce_mr) ibv_dereg_mr(l->bounce_mr);
  if (l->replies_mr) ibv_dereg_mr(l->replies_mr);
  free(l->bounce);
  free(l->replies);
  l->cq = nullptr, l->bounce_mr = l->replies_mr = nullptr, l->bounce = nullptr;
  l->replies = nullptr;
}

int Transport::open_lane(bool exclusive) {
  auto l = std::make_unique<Lane>();
  l->exclusive = exclusive;
  std::string why;
  if (!make_lane(l.get(), &why)) {
    destroy_lane(l.get());
    return -1;
  }
  std::lock_guard<std::mutex> lock(cm_mutex_);
  for (int id = 1; id < kMaxLanes; ++id) {
    if (lanes_[static_cast<size_t>(id)]) continue;
    l->id = id;
    lanes_[static_cast<size_t>(id)] = std::move(l);
    return id;
  }
  destroy_lane(l.get());
  return -1;
}

void Transport::close_lane(int lane) {
  if (lane <= 0 || lane >= kMaxLanes) return;
  quiet(lane);
  std::unique_ptr<Lane> l;
  {
    std::lock_guard<std::mutex> lock(cm_mutex_);
    l = std::move(lanes_[static_cast<size_t>(lane)]);
  }
  if (l) destroy_lane(l.get());
}

Transport::Lane *Transport::lane_of(int lane) { return lanes_[static_cast<size_t>(lane)].get(); }

unsigned Transport::responder_depth() const {
  return std::clamp(dev_->max_dest_rd_atomic(), 1u, kMaxInitiatorDepth);
}

PeerAddress Transport::address() const {
  PeerAddress a{};
  a.lid = dev_->port_attr().lid;
  a.gid = dev_->gid();
  a.cm_qpn = cm_qp_ ? cm_qp_->qp_num : 0;
  a.dct = dct_ ? dct_->number() : 0;
  a.mtu = static_cast<uint8_t>(dev_->port_attr().active_mtu);
  a.rd_atomic = static_cast<uint8_t>(responder_depth());
  return a;
}

void Transport::set_peer(int pe, const PeerAddress &address) {
  std::lock_guard<std::mutex> lock(cm_mutex_);
  peers_[static_cast<size_t>(pe)] = address;
  // One depth for every QP and initiator: the least any peer's queue pairs take as responder.
  if (address.rd_atomic) rd_depth_ = std::min<unsigned>(rd_depth_, address.rd_atomic);
  if (dct_ && address.dct) dc_addresses_.set(pe, address.dct, address.lid, address.gid);
}

void Transport::stop_cm() {
  if (cm_thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(cm_mutex_);
      stopping_ = true;
    }
    const uint64_t one = 1;
    if (write(cm_wake_, &one, sizeof one) != sizeof one) abort();  // cannot fail: never full
    cm_thread_.join();
  }
  if (cm_wake_ >= 0) close(cm_wake_);
  cm_wake_ = -1;
  if (cm_qp_) ibv_destroy_qp(cm_qp_);
  if (cm_mr_) ibv_dereg_mr(cm_mr_);
  if (cm_cq_) ibv_destroy_cq(cm_cq_);
  if (cm_channel_) ibv_destroy_comp_channel(cm_channel_);
  free(cm_buf_);
  cm_qp_ = nullptr, cm_mr_ = nullptr, cm_cq_ = nullptr, cm_channel_ = nullptr, cm_buf_ = nullptr;
}

void Transport::shutdown() {
  stop_cm();
  for (auto &l : lanes_)
    if (l) destroy_lane(l.get());
  lanes_.clear();
  for (auto &[key, p] : passive_) ibv_destroy_qp(p.qp);
  passive_.clear();
  if (cache_hooked_) memory_events::unsubscribe(&Transport::on_release, this);
  cache_hooked_ = false;
  for (CacheEntry *e : cache_) {
    ibv_dereg_mr(e->mr);
    delete e;
  }
  cache_.clear();
  cache_bytes_ = 0;
  cache_live_ = 0;
  ahs_.reset(dev_, 0);
  dc_addresses_.clear();
  dct_.reset();
  if (passive_cq_) ibv_destroy_cq(passive_cq_);
  passive_cq_ = nullptr;
  close_arrivals();  // after every QP and the DC target that received into it
}

int Transport::connected_peers() const {
  if (lanes_.empty() || !lanes_[0]) return 0;
  int n = 0;
  for (int pe = 0; pe < npes_; ++pe) {
    Endpoint *ep = lanes_[0]->eps[static_cast<size_t>(pe)].load(std::memory_order_acquire);
    n += ep && ep->ready ? 1 : 0;
  }
  return n;
}

Transport::Stats Transport::stats() const {
  Stats s;
  std::lock_guard<std::mutex> lock(cm_mutex_);  // lanes opened and closed meanwhile
  for (const auto &l : lanes_)
    if (l) s.cqes += l->cqes.load(), s.wqes += l->wqes.load();
  s.cache_hits = cache_hits_.load();
  s.cache_misses = cache_misses_.load();
  return s;
}

void Transport::add_registered(const void *base, size_t length, uint32_t lkey) {
  static std::mutex adding;
  std::lock_guard<std::mutex> lock(adding);
  const unsigned n = nregistered_.load(std::memory_order_relaxed);
  if (n == kMaxRegistered) return;  // then it goes through bounce buffers: slower, still right
  registered_[n] = {reinterpret_cast<uintptr_t>(base), length, lkey};
  nregistered_.store(n + 1, std::memory_order_release);
}

uint32_t Transport::lkey_of(const void *p, size_t length) const {
  const auto a = reinterpret_cast<uintptr_t>(p);
  const unsigned n = nregistered_.load(std::memory_order_acquire);
  for (unsigned i = 0; i < n; ++i)
    if (a >= registered_[i].base && a - registered_[i].base <= registered_[i].length &&
        length <= registered_[i].length - (a - registered_[i].base))
      return registered_[i].lkey;
  return 0;
}

// --- registration cache --------------------------------------------------------------------

namespace {
// The transport whose cache_mutex_ this thread holds: a release reported on this thread then
// (from inside ibv_reg_mr or ibv_dereg_mr) defers instead of locking again.
[[gnu::tls_model("initial-exec")]] thread_local const void *t_cache_holder = nullptr;

class CacheLock {
 public:
  CacheLock(std::mutex &m, const void *owner) : m_(m) {
    m_.lock();
    t_cache_holder = owner;
  }
  ~CacheLock() {
    t_cache_holder = nullptr;
    m_.unlock();
  }
  CacheLock(const CacheLock &) = delete;
  CacheLock &operator=(const CacheLock &) = delete;

 private:
  std::mutex &m_;
};
}  // namespace

std::string Transport::cache_description() const {
  if (cache_min_ == SIZE_MAX) return cache_off_;
  if (!memory_events::intact())
    return "off (another library replaced hoshmem's memory-release hooks in libc)";
  char size[32];
  return std::string("unregistered buffers from ") + format_size(cache_min_, size, sizeof size) +
         " up (released memory: " + memory_events::method() + ")";
}

void Transport::on_release(void *self, const void *base, size_t length) {
  auto *t = static_cast<Transport *>(self);
  if (t->cache_live_.load(std::memory_order_acquire) == 0) return;
  const auto start = reinterpret_cast<uintptr_t>(base);
  const uintptr_t end = length > UINTPTR_MAX - start ? UINTPTR_MAX : start + length;
  if (t_cache_holder != t && t->cache_mutex_.try_lock()) {
    t_cache_holder = t;
    t->invalidate_locked(start, end);
    t_cache_holder = nullptr;
    t->cache_mutex_.unlock();
    return;
  }
  t->defer_release(start, end);
}

void Transport::defer_release(uintptr_t start, uintptr_t end) {
  // Bounded: the holder of this spin lock may be the code this thread interrupted.
  for (unsigned spins = 0; deferred_lock_.test_and_set(std::memory_order_acquire); ++spins) {
    if (spins == 1000) {
      deferred_all_.store(true);
      deferred_any_.store(true, std::memory_order_release);
      return;
    }
    sched_yield();
  }
  if (ndeferred_ < kDeferred)
    deferred_[ndeferred_++] = {start, end};
  else
    deferred_all_.store(true);
  deferred_any_.store(true, std::memory_order_release);
  deferred_lock_.clear(std::memory_order_release);
}

void Transport::take_deferred_locked() {
  if (!deferred_any_.load(std::memory_order_acquire)) return;
  Range taken[kDeferred];
  while (deferred_lock_.test_and_set(std::memory_order_acquire)) sched_yield();
  deferred_any_.store(false, std::memory_order_relaxed);  // before reading: later ones stay
  const bool all = deferred_all_.exchange(false);
  const unsigned n = ndeferred_;
  std::copy(deferred_, deferred_ + n, taken);
  ndeferred_ = 0;
  deferred_lock_.clear(std::memory_order_release);
  if (all) return invalidate_locked(0, UINTPTR_MAX);
  for (unsigned i = 0; i < n; ++i) invalidate_locked(taken[i].start, taken[i].end);
}

void Transport::invalidate_locked(uintptr_t start, uintptr_t end) {
  for (CacheEntry *e : cache_) {
    if (e->dead || e->end <= start || end <= e->start) continue;
    e->dead = true;
    cache_bytes_ -= e->end - e->start;
    cache_live_.fetch_sub(1, std::memory_order_relaxed);
  }
}

void Transport::reap_locked() {
  for (auto it = cache_.begin(); it != cache_.end();) {
    CacheEntry *e = *it;
    if (!e->dead || e->refs) {
      ++it;
      continue;
    }
    ibv_dereg_mr(e->mr);
    delete e;
    it = cache_.erase(it);
  }
}

Transport::CacheEntry *Transport::cache_lookup(Lane *, const void *p, size_t length) {
  const uintptr_t start = reinterpret_cast<uintptr_t>(p) & ~(kPage - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + length + kPage - 1) & ~(kPage - 1);
  CacheLock lock(cache_mutex_, this);
  take_deferred_locked();
  if (!hooks_lost_ && !memory_events::intact()) {  // releases may go unseen from now on
    hooks_lost_ = true;
    invalidate_locked(0, UINTPTR_MAX);
  }
  reap_locked();
  if (hooks_lost_) return nullptr;  // bounce buffers
  static uint64_t clock = 0;
  for (CacheEntry *e : cache_) {
    if (!e->dead && e->start <= start && end <= e->end) {
      ++e->refs;
      e->last_use = ++clock;
      cache_hits_.fetch_add(1, std::memory_order_relaxed);
      return e;
    }
  }
  cache_misses_.fetch_add(1, std::memory_order_relaxed);
  // Make room: least recently used live entries no WQE holds (the dead ones are reaped).
  while (cache_.size() >= kCacheEntries || cache_bytes_ + (end - start) > kCacheBytes) {
    auto victim = cache_.end();
    for (auto it = cache_.begin(); it != cache_.end(); ++it)
      if ((*it)->refs == 0 && (victim == cache_.end() || (*it)->last_use < (*victim)->last_use))
        victim = it;
    if (victim == cache_.end()) break;  // all in use: over the limit for a while
    cache_bytes_ -= (*victim)->end - (*victim)->start;
    cache_live_.fetch_sub(1, std::memory_order_relaxed);
    ibv_dereg_mr((*victim)->mr);
    delete *victim;
    cache_.erase(victim);
  }
  ibv_mr *mr = ibv_reg_mr(dev_->pd(), reinterpret_cast<void *>(start), end - start,
                          IBV_ACCESS_LOCAL_WRITE);
  if (!mr) return nullptr;  // read-only or not lockable: bounce buffers instead
  auto *e = new CacheEntry{start, end, mr, 1, ++clock, false};
  cache_.push_back(e);
  cache_bytes_ += end - start;
  cache_live_.fetch_add(1, std::memory_order_release);
  // A release of these pages while ibv_reg_mr ran (this thread: deferred) kills the entry now.
  take_deferred_locked();
  if (e->dead) {
    e->refs = 0;
    reap_locked();
    return nullptr;
  }
  return e;
}

void Transport::cache_release(CacheEntry *e) {
  CacheLock lock(cache_mutex_, this);
  if (--e->refs == 0 && e->dead) reap_locked();
}

void Transport::forget(const void *base, size_t length) {
  const auto a = reinterpret_cast<uintptr_t>(base);
  CacheLock lock(cache_mutex_, this);
  invalidate_locked(a, length > UINTPTR_MAX - a ? UINTPTR_MAX : a + length);
  reap_locked();
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
  const PeerAddress &peer = peers_[static_cast<size_t>(pe)];
  return ahs_.get(pe, peer.lid, peer.gid);
}

void Transport::send_cm(int pe, uint8_t type, uint16_t lane, uint32_t qpn, uint32_t answers) {
  ibv_ah *ah = ah_for(pe);
  if (!ah) return;  // resent by the requester's timer; a reply by the next request
  CmMessage m{};
  m.magic = kCmMagic;
  m.type = type;
  m.lane = lane;
  m.pe = me_;
  m.qpn = qpn;
  m.answers = answers;
  m.lid = dev_->port_attr().lid;
  memcpy(m.gid, dev_->gid().raw, 16);
  ibv_sge sge{reinterpret_cast<uint64_t>(&m), sizeof m, 0};
  ibv_send_wr wr{}, *bad = nullptr;
  wr.opcode = IBV_WR_SEND;
  // One completion per 16 sends retires them all: the send completions the CQ can hold next to a
  // completion per posted receive stay bounded however long the connection thread, which alone
  // reads the CQ, waits for a CPU (a completion per send overran the CQ of 2 x kCmSlots under
  // load, with 8 PEs resending requests every 50 ms). A full send queue drops a datagram: its
  // request is resent by the requester's timer, a reply by the next request.
  const bool signal = cm_sends_.fetch_add(1, std::memory_order_relaxed) % 16 == 15;
  wr.send_flags = IBV_SEND_INLINE | (signal ? IBV_SEND_SIGNALED : 0);
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
    // Asleep until a datagram arrives or stop_cm wakes it: arm, look once more, then wait.
    ibv_req_notify_cq(cm_cq_, 0);
    if (drain_cm()) continue;
    pollfd fds[2] = {{cm_channel_->fd, POLLIN, 0}, {cm_wake_, POLLIN, 0}};
    if (poll(fds, 2, -1) <= 0 || !(fds[0].revents & POLLIN)) continue;
    ibv_cq *cq = nullptr;
    void *unused = nullptr;
    if (ibv_get_cq_event(cm_channel_, &cq, &unused) == 0) ibv_ack_cq_events(cq, 1);
  }
}

void Transport::handle_cm(const uint8_t *bytes) {
  CmMessage m;
  memcpy(&m, bytes, sizeof m);
  if (m.magic != kCmMagic || m.pe < 0 || m.pe >= npes_ || m.lane >= kMaxLanes) return;
  std::lock_guard<std::mutex> lock(cm_mutex_);
  if (stopping_ || !lanes_[0]) return;
  PeerAddress &peer = peers_[static_cast<size_t>(m.pe)];
  peer.lid = m.lid;
  memcpy(peer.gid.raw, m.gid, 16);
  if (m.type == kRequest && m.lane == 0) {
    // Lane 0's QPs serve both directions: the same one whoever asked first. To this PE itself
    // (all-HW AMOs to its own memory) that is one QP connected to itself, which a ConnectX
    // accepts: rdma-core's mlx5 provider connects its tag-matching command QP the same way.
    Endpoint *ep = find_or_create_locked(lanes_[0].get(), m.pe);
    if (!ep) return;
    if (!ep->connected) ep->connected = connect_qp(ep->qp, m.qpn, peer);
    if (ep->connected) send_cm(m.pe, kReply, 0, ep->qp->qp_num, m.qpn);
  } else if (m.type == kRequest) {
    // Another lane: a responder-only QP; a new QP of the same (PE, lane) replaces it (that
    // lane was closed and its number reused).
    const std::pair<int, int> key{static_cast<int>(m.pe), static_cast<int>(m.lane)};
    auto it = passive_.find(key);
    if (it != passive_.end() && it->second.remote_qpn != m.qpn) {
      ibv_destroy_qp(it->second.qp);
      passive_.erase(it);
      it = passive_.end();
    }
    if (it == passive_.end()) {
      ibv_qp *qp = create_qp(passive_cq_);
      if (!qp) return;
      if (!connect_qp(qp, m.qpn, peer)) {
        ibv_destroy_qp(qp);
        return;
      }
      it = passive_.emplace(key, Passive{qp, m.qpn}).first;
    }
    send_cm(m.pe, kReply, m.lane, it->second.qp->qp_num, m.qpn);
  } else if (m.type == kReply) {
    Lane *l = lanes_[m.lane].get();
    Endpoint *ep = l ? l->eps[static_cast<size_t>(m.pe)].load() : nullptr;
    if (!ep || ep->qp->qp_num != m.answers) return;  // a lane since closed
    if (!ep->connected) ep->connected = connect_qp(ep->qp, m.qpn, peer);
    ep->answered = ep->connected;
  }
  cm_changed_.notify_all();
}

ibv_qp *Transport::create_qp(ibv_cq *cq) {
  ibv_qp_init_attr init{};
  init.qp_type = IBV_QPT_RC;
  init.send_cq = init.recv_cq = cq;
  if (arrivals_srq_) init.srq = arrivals_srq_, init.recv_cq = arrivals_cq_;
  init.cap.max_send_wr = kSendQueueDepth;
  init.cap.max_recv_wr = 1;
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  init.cap.max_inline_data = max_inline_ ? max_inline_ : 128;
  ibv_qp *qp = ibv_create_qp(dev_->pd(), &init);
  if (!qp) return nullptr;
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.port_num = dev_->port();
  attr.qp_access_flags =
      IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                   IBV_QP_ACCESS_FLAGS) != 0) {
    ibv_destroy_qp(qp);
    return nullptr;
  }
  return qp;
}

// Called with cm_mutex_ held.
Transport::Endpoint *Transport::find_or_create_locked(Lane *l, int pe) {
  if (Endpoint *ep = l->eps[static_cast<size_t>(pe)].load()) return ep;
  ibv_qp *qp = create_qp(l->cq);
  if (!qp) return nullptr;
  std::unique_ptr<Endpoint> ep = make_endpoint(l, qp);
  if (!ep) {
    ibv_destroy_qp(qp);
    return nullptr;
  }
  ep->pe = pe;
  Endpoint *raw = ep.get();
  {
    LaneLock lock(l->mutex, l->exclusive);  // lane 0: the connection thread adds to it
    l->by_qpn[qp->qp_num] = raw;
    l->owned.push_back(std::move(ep));
  }
  l->eps[static_cast<size_t>(pe)].store(raw, std::memory_order_release);
  return raw;
}

// The state of a queue pair (RC) or initiator (DC) of lane `l`: its send queue, signaling
// intervals and ring of signaled WQEs. nullptr if its send queue cannot be read.
std::unique_ptr<Transport::Endpoint> Transport::make_endpoint(Lane *l, ibv_qp *qp) {
  auto ep = std::make_unique<Endpoint>();
  ep->qp = qp;
  if (raw_) {
    if (!ep->sq.init(qp)) return nullptr;
    // A signaled WQE at least every so many, so that a full ring always has one to wait for.
    ep->signal_every = std::max(1u, std::min(kSignalEvery, ep->sq.ring().bb_count /
                                                               (2 * kMaxWqeBbs)));
  } else {
    ep->signal_every = kSignalEvery;
  }
  ep->atomic_signal_every = std::min(ep->signal_every, std::max(1u, rd_depth_ / 2));
  // One entry per WQE the queue can hold (raw: every WQE takes at least one BB).
  const uint64_t entries = raw_ ? ep->sq.ring().bb_count : kSendQueueDepth;
  ep->signaled = std::make_unique<Endpoint::Signaled[]>(entries);
  ep->signaled_mask = entries - 1;
  if (raw_) {
    ep->fetch_add.init(qp->qp_num, l->discard);
    ep->write_inline.init(qp->qp_num);
  }
  return ep;
}

bool Transport::connect_qp(ibv_qp *qp, uint32_t remote_qpn, const PeerAddress &peer) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTR;
  // Packets must fit both ends' ports (a peer on a port of smaller MTU rejects larger ones).
  attr.path_mtu = dev_->port_attr().active_mtu;
  if (peer.mtu) attr.path_mtu = std::min(attr.path_mtu, static_cast<ibv_mtu>(peer.mtu));
  attr.dest_qp_num = remote_qpn;
  attr.rq_psn = 0;
  attr.max_dest_rd_atomic = static_cast<uint8_t>(responder_depth());
  attr.min_rnr_timer = 12;
  dev_->fill_address(&attr.ah_attr, peer.lid, peer.gid);
  if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                                   IBV_QP_MIN_RNR_TIMER) != 0)
    return false;
  attr.qp_state = IBV_QPS_RTS;
  attr.sq_psn = 0;
  attr.timeout = ack_timeout_;  // 7 tries of it in a row without an answer end the job
  attr.retry_cnt = 7;
  attr.rnr_retry = 7;
  attr.max_rd_atomic = static_cast<uint8_t>(rd_depth_);
  return ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
                                      IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                      IBV_QP_MAX_QP_RD_ATOMIC) == 0;
}

Transport::Endpoint *Transport::endpoint(Lane *l, int pe) {
  if (dc_) return nullptr;  // nothing to connect: queue_for() picks an initiator
  Endpoint *ep = l->eps[static_cast<size_t>(pe)].load(std::memory_order_acquire);
  if (ep && ep->ready.load(std::memory_order_acquire)) return ep;
  std::unique_lock<std::mutex> lock(cm_mutex_);
  ep = find_or_create_locked(l, pe);
  if (!ep) {
    lock.unlock();
    fail(pe, "cannot create an RC queue pair");
  }
  const auto timeout = connect_timeout(npes_);
  const auto deadline = Clock::now() + timeout;
  auto next_request = Clock::now();
  while (!ep->answered) {
    const auto now = Clock::now();
    if (now >= deadline) {
      lock.unlock();
      char cause[96];
      snprintf(cause, sizeof cause, "no answer to the connection request within %.1f s (has it exited?)",
               static_cast<double>(timeout.count()) / 1000);
      fail(pe, cause);
    }
    if (now >= next_request) {
      send_cm(pe, kRequest, static_cast<uint16_t>(l->id), ep->qp->qp_num, 0);
      next_request = now + kRequestResend;
    }
    cm_changed_.wait_for(lock, std::chrono::milliseconds(5));
  }
  ep->ready.store(true, std::memory_order_release);
  return ep;
}

// With the lane's lock held. An initiator serves one target at a time, and orders only what it
// carries: a peer keeps its initiator while anything it sent there is outstanding.
Transport::Endpoint *Transport::dci_for(Lane *l, int pe) {
  if (Endpoint *ep = l->eps[static_cast<size_t>(pe)].load(std::memory_order_relaxed)) return ep;
  const size_t n = l->dcis.size();
  for (;;) {
    for (size_t i = 0; i < n; ++i) {
      Endpoint *ep = l->dcis[(l->next_dci + i) % n];
      if (ep->done != ep->posted) continue;
      // Idle: everything it carried is complete, so its old peer's order no longer needs it.
      if (ep->pe >= 0) l->eps[static_cast<size_t>(ep->pe)].store(nullptr, std::memory_order_relaxed);
      ep->pe = pe;
      ep->fence_next = ep->write_unfenced = false;
      if ((ep->to = dc_addresses_.get(pe, &ep->av)).segments == 0)
        fail(pe, "cannot make an address handle for its DC target");
      // The inline paths wait for the general path's first operation to this peer.
      ep->inline_ok = ep->put_inline_ok = false;
      update_add_budget(l, ep);
      l->eps[static_cast<size_t>(pe)].store(ep, std::memory_order_relaxed);
      l->next_dci = (l->next_dci + i + 1) % n;
      return ep;
    }
    // None idle: read completions; if none came, make sure every initiator's last WQE will
    // bring one (the first to finish goes to this peer), then wait for them.
    if (progress(l)) continue;
    for (Endpoint *ep : l->dcis) ask_completion(l, ep);
    while (!progress(l)) sched_yield();
  }
}

void Transport::fail(int pe, const char *cause) {
  if (!failed_.exchange(true)) {
    on_error_(pe, cause);
    abort();  // the handler does not return
  }
  for (;;) pause();  // another thread is reporting the first failure and ending the process
}

// --- the send path ---------------------------------------------------------------------------

uint64_t Transport::submit(Lane *l, Endpoint *ep, const Wqe &w, const Action &action,
                           bool signal, bool doorbell) {
  const bool read_or_atomic =
      w.kind == Wqe::kRead || w.kind == Wqe::kAtomic || w.kind == Wqe::kAtomicWide;
  // A read or atomic may pass earlier writes of this QP unless fenced.
  const bool fence = ep->fence_next || (read_or_atomic && ep->write_unfenced);
  // The QP grants rd_depth_ reads and atomics in flight (max_rd_atomic); one more waits for
  // room. A real HCA would hold the excess in its send queue; keeping it here bounds what a
  // responder sees queued from us. Reads and atomics ask for a completion every
  // atomic_signal_every (at most rd_depth_ / 2) WQEs: room comes back before the limit is
  // reached, and any rd_depth_ of them in flight include a signaled WQE to wait for.
  signal = signal || action.kind != Action::kNone ||
           ep->since_signal() + 1 >= (read_or_atomic ? ep->atomic_signal_every : ep->signal_every);
  // Room first: retiring WQEs may run completions but never posts. Then a CQ credit for a
  // signaled WQE (reading completions for it never takes room away).
  if (!has_room(ep, read_or_atomic)) [[unlikely]]
    wait_for_room(l, ep, read_or_atomic);
  if (signal) {
    if (l->cq_credits == 0) [[unlikely]]
      wait_for_credit(l);
    --l->cq_credits;
  }
  const uint64_t seq = ++ep->posted;
  ep->reads_atomics_posted += read_or_atomic;
  uint16_t index = 0, bbs = 0;
  if (raw_) {
    const ib::SqRing &ring = ep->sq.ring();
    const ib::WqeFlags flags{signal, fence};
    const ib::AddressVector &to = ep->to;  // DC: the peer's target (dci_for); RC: none
    index = ring.pi;
    switch (w.kind) {
      case Wqe::kWrite: bbs = static_cast<uint16_t>(
                            ib::write_rdma_write(ring, w.local, w.length, w.remote, flags, to));
        break;
      case Wqe::kWriteInline: bbs = static_cast<uint16_t>(
                                  ib::write_rdma_write_inline(ring, w.data, w.length, w.remote,
                                                              flags, to));
        break;
      case Wqe::kWriteInlineImm: bbs = static_cast<uint16_t>(
                                     ib::write_rdma_write_inline_imm(ring, w.data, w.length,
                                                                     w.remote, w.imm, flags, to));
        break;
      case Wqe::kRead: bbs = static_cast<uint16_t>(
                           ib::write_rdma_read(ring, w.local, w.length, w.remote, flags, to));
        break;
      case Wqe::kAtomic: bbs = static_cast<uint16_t>(
                             ib::write_atomic(ring, *w.atomic, w.local, w.remote, flags, to));
        break;
      case Wqe::kAtomicWide: bbs = static_cast<uint16_t>(ib::write_atomic_wide(
                                 ring, w.wide_op, w.length, static_cast<const uint8_t *>(w.data),
                                 w.operand_bytes, w.local, w.remote, flags, to));
        break;
      case Wqe::kNop: bbs = static_cast<uint16_t>(ib::write_nop(ring, {signal, true}, to));
        break;
    }
    if (signal) ep->record_signaled(index, bbs, action);
    if (doorbell) [[likely]]
      ep->sq.post(bbs);
    else
      ep->sq.stage(bbs);
  } else {
    ibv_sge sge{w.local.addr, w.length, w.local.lkey};
    ibv_send_wr wr{}, *bad = nullptr;
    wr.wr_id = seq;
    wr.sg_list = &sge;
    wr.num_sge = w.length ? 1 : 0;
    wr.send_flags = (signal ? IBV_SEND_SIGNALED : 0) | (fence ? IBV_SEND_FENCE : 0);
    wr.wr.rdma.remote_addr = w.remote.addr;
    wr.wr.rdma.rkey = w.remote.rkey;
    switch (w.kind) {
      case Wqe::kWriteInlineImm:
      case Wqe::kWriteInline:
        sge.addr = reinterpret_cast<uint64_t>(w.data);
        sge.lkey = 0;
        wr.send_flags |= IBV_SEND_INLINE;
        [[fallthrough]];
      case Wqe::kNop:  // a zero-length write instead
      case Wqe::kWrite: wr.opcode = IBV_WR_RDMA_WRITE; break;
      case Wqe::kRead: wr.opcode = IBV_WR_RDMA_READ; break;
      case Wqe::kAtomic:
        if (w.atomic->opcode == atomics::HcaOpcode::FetchAdd) {
          wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
          wr.wr.atomic.compare_add = w.atomic->swap_add;
        } else if (w.atomic->opcode == atomics::HcaOpcode::CompareSwap) {
          wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
          wr.wr.atomic.compare_add = w.atomic->compare;
          wr.wr.atomic.swap = w.atomic->swap_add;
        } else {
          fail(ep->pe, "masked atomic on a device reached through plain verbs (none there)");
        }
        wr.wr.atomic.remote_addr = w.remote.addr;
        wr.wr.atomic.rkey = w.remote.rkey;
        sge.length = 8;
        wr.num_sge = 1;
        break;
      case Wqe::kAtomicWide:
        fail(ep->pe, "wide masked atomic on a device reached through plain verbs (none there)");
    }
    if (w.kind == Wqe::kWriteInlineImm) {
      wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
      wr.imm_data = htobe32(w.imm);
    }
    if (signal) ep->record_signaled(0, 0, action);
    if (const int err = ibv_post_send(ep->qp, &wr, &bad); err != 0) {
      char why[96];
      snprintf(why, sizeof why, "cannot post a work request: %s", strerror(err));
      fail(ep->pe, why);
    }
  }
  ep->fence_next = false;
  if (read_or_atomic && fence) ep->write_unfenced = false;
  if (!read_or_atomic) ep->write_unfenced = true;
  ep->last_remote = w.remote;
  update_add_budget(l, ep);
  return seq;
}

void Transport::wait_for_room(Lane *l, Endpoint *ep, bool read_or_atomic) {
  while (!has_room(ep, read_or_atomic))
    if (!progress(l)) sched_yield();
}

// Every CQ credit is held by a signaled WQE in flight, an unread CQE, or an endpoint's budget
// for inline adds: read completions, and if none come, take the budgets' credits back (their
// adds then take the general path and this wait).
void Transport::wait_for_credit(Lane *l) {
  while (l->cq_credits == 0) {
    if (progress(l)) continue;
    for (auto &ep : l->owned) {
      l->cq_credits += ep->add_credits;
      ep->add_credits = 0;
      ep->add_budget = 0;
    }
    if (l->cq_credits == 0) sched_yield();
  }
}

bool Transport::progress(Lane *l) {
  bool any = false;
  if (raw_) {
    ib::Completion c;
    while (l->ring.poll(&c)) {
      any = true;
      ++l->cq_credits;
      l->cqes.fetch_add(1, std::memory_order_relaxed);
      auto it = l->by_qpn.find(c.qpn);
      if (it == l->by_qpn.end()) continue;
      if (c.opcode == MLX5_CQE_REQ_ERR || c.opcode == MLX5_CQE_RESP_ERR)
        fail(it->second->pe, error_cause(syndrome_name(c.syndrome), "syndrome", c.syndrome,
                                         c.vendor_syndrome).c_str());
      retire(l, it->second, c.wqe_counter, false);
    }
  } else {
    ibv_wc wc[16];
    for (int n; (n = ibv_poll_cq(l->cq, 16, wc)) > 0;) {
      any = true;
      l->cq_credits += static_cast<uint32_t>(n);
      l->cqes.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
      for (int i = 0; i < n; ++i) {
        auto it = l->by_qpn.find(wc[i].qp_num);
        if (it == l->by_qpn.end()) continue;
        if (wc[i].status != IBV_WC_SUCCESS)
          fail(it->second->pe, error_cause(status_name(wc[i].status), "status", wc[i].status,
                                           wc[i].vendor_err).c_str());
        retire(l, it->second, wc[i].wr_id, true);
      }
    }
  }
  return any;
}

// A completion for the WQE `id` (first BB on the raw path, sequence number on the verbs path)
// retires it and every earlier WQE of the QP: they complete in order.
void Transport::retire(Lane *l, Endpoint *ep, uint64_t id, bool by_seq) {
  while (ep->signaled_done < ep->signaled_posted) {
    const Endpoint::Signaled &p = ep->signaled[++ep->signaled_done & ep->signaled_mask];
    l->wqes.store(l->wqes.load(std::memory_order_relaxed) + (p.seq - ep->done),
                  std::memory_order_relaxed);
    ep->done = p.seq;
    ep->reads_atomics_done = p.reads_atomics_upto;
    if (raw_) ep->sq.completed(p.index, p.bbs);
    if (p.action.kind != Action::kNone) complete(l, p.action);
    if (by_seq ? p.seq == id : p.index == static_cast<uint16_t>(id)) break;
  }
  // Nothing in flight: no earlier write left for a read or atomic to pass.
  if (ep->done == ep->posted) ep->write_unfenced = false;
  update_add_budget(l, ep);
}

void Transport::complete(Lane *l, const Action &a) {
  switch (a.kind) {
    case Action::kNone: break;
    case Action::kCopyOut:
      memcpy(a.dst, l->bounce + size_t{a.slot} * kSlotBytes, a.length);
      [[fallthrough]];
    case Action::kSlot: l->free_slots.push_back(a.slot); break;
    case Action::kFetch: {
      const uint64_t v = dev_->atomics().reply_value(&l->replies[a.slot], a.size);
      memcpy(a.dst, &v, a.size);  // little-endian host: the low bytes
      l->free_replies.push_back(a.slot);
      break;
    }
    case Action::kCache: cache_release(a.entry); break;
  }
}

void Transport::wait_for(Lane *l, Endpoint *ep, uint64_t seq) {
  Clock::time_point since{};
  for (unsigned spins = 0; ep->done < seq; ++spins) {
    if (!progress(l) && spins > 1000) sched_yield();
    if (spins % 4096 == 4095) check_lost(ep, seq, since);
  }
}

// A device retries an unacknowledged request ack_timeout_ at a time, 7 times, and then fails it
// (RNR waits aside, which a receiver that serves ends within milliseconds): a work request still
// without a completion, on a queue pair that still reports no error, long after that, was lost
// by the device or its driver. Linux 6.1's soft-RoCE does that to an atomic it retransmitted,
// and the job would otherwise wait forever (or fail elsewhere with the wrong cause).
void Transport::check_lost(Endpoint *ep, uint64_t seq, Clock::time_point &since) {
  const Clock::time_point now = Clock::now();
  if (since == Clock::time_point{}) {
    since = now;
    return;
  }
  const double try_s = 4.096e-6 * static_cast<double>(uint64_t{1} << ack_timeout_);
  const auto limit = std::chrono::duration<double>(8 * try_s * 1.5 + 5);
  if (now - since < limit) return;
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  if (ibv_query_qp(ep->qp, &attr, IBV_QP_STATE, &init) != 0 || attr.qp_state != IBV_QPS_RTS)
    return;  // an error: its completion reports it
  // A write with immediate still in flight may instead be waiting for a receive (RNR).
  char cause[240];
  snprintf(cause, sizeof cause, "work request %llu got no completion in %.0f s, and its queue "
           "pair reports no error: the RDMA device or its driver lost it%s",
           static_cast<unsigned long long>(seq),
           std::chrono::duration<double>(now - since).count(),
           ep->last_imm > ep->done ? ", or the peer posts no receive for a write with immediate"
                                   : "");
  fail(ep->pe, cause);
}

unsigned Transport::take_slot(Lane *l) {
  for (unsigned spins = 0; l->free_slots.empty(); ++spins)
    if (!progress(l) && spins > 1000) sched_yield();
  const unsigned slot = l->free_slots.back();
  l->free_slots.pop_back();
  return slot;
}

// Everything posted on `ep` is complete: if the last WQE went unsignaled, a signaled NOP behind
// it brings the CQE that retires it.
void Transport::quiet_endpoint(Lane *l, Endpoint *ep) {
  if (ep->done == ep->posted) return;
  wait_for(l, ep, ask_completion(l, ep));
}

// Makes sure a completion will come for the last WQE posted on `ep` (a signaled NOP behind it if
// it went unsignaled; over plain verbs, which have none, a zero-length write); returns its number.
// A NOP costs no packet and no round trip of its own: its completion waits only for the WQEs
// ahead of it.
uint64_t Transport::ask_completion(Lane *l, Endpoint *ep) {
  if (ep->since_signal() == 0) return ep->posted;
  // A pending fence stays for the next real operation, and the NOP carries no data that a later
  // read or atomic could pass.
  const bool fence = ep->fence_next, unfenced = ep->write_unfenced;
  const Wqe nop{raw_ ? Wqe::kNop : Wqe::kWrite, nullptr, {0, 0}, 0, ep->last_remote, nullptr};
  const uint64_t last = submit(l, ep, nop, Action{}, true);
  ep->fence_next = fence;
  ep->write_unfenced = unfenced;
  update_add_budget(l, ep);
  return last;
}

void Transport::rma(Lane *l, int pe, bool write, void *local, size_t length,
                    const ib::RemoteAddr &remote, bool nbi) {
  if (length == 0) return;
  Endpoint *ep = endpoint(l, pe);
  LaneLock lock(l->mutex, l->exclusive);
  ep = queue_for(l, pe, ep);
  const auto base = reinterpret_cast<uintptr_t>(local);
  // Every peer here is on another node: from now on the inline paths may post here.
  if (!ep->inline_ok && raw_) {
    ep->inline_ok = true;
    update_add_budget(l, ep);
  }
  if (write && length <= max_inline_) {  // the data is in the WQE when this returns
    if (!ep->put_inline_ok && raw_ && max_inline_ >= ib::WriteInlineTemplate::kMaxBytes) {
      if (dc_) {  // the template of this initiator's peer
        if (!ep->write_inline_dc) ep->write_inline_dc = std::make_unique<ib::WriteInlineDcTemplate>();
        ep->write_inline_dc->init(ep->qp->qp_num, ep->to);
      }
      ep->put_inline_ok = true;
    }
    submit(l, ep, Wqe{Wqe::kWriteInline, local, {0, 0}, static_cast<uint32_t>(length), remote,
                      nullptr},
           Action{}, false);
    return;
  }
  uint32_t lkey = lkey_of(local, length);
  CacheEntry *entry = nullptr;
  if (!lkey && length >= cache_min_ && (entry = cache_lookup(l, local, length)))
    lkey = entry->mr->lkey;
  if (lkey) {  // zero-copy, in messages the device accepts
    uint64_t last = 0;
    for (size_t off = 0; off < length;) {
      const auto n = static_cast<uint32_t>(std::min<size_t>(max_msg_, length - off));
      const bool final = off + n == length;
      Action a{};
      if (final && entry) a.kind = Action::kCache, a.entry = entry;  // released when done
      last = submit(l, ep, Wqe{write ? Wqe::kWrite : Wqe::kRead, nullptr, {base + off, lkey}, n,
                               {remote.addr + off, remote.rkey}, nullptr},
                    a, final && !nbi);
      off += n;
    }
    if (!nbi) wait_for(l, ep, last);
    return;
  }
  // Bounce slots: a put copies the next chunk while earlier ones are on the wire (and returns
  // once all are copied); a get's chunks are copied out as their completions are read.
  uint64_t last = 0;
  for (size_t off = 0; off < length;) {
    const auto n = static_cast<uint32_t>(std::min(kSlotBytes, length - off));
    const unsigned slot = take_slot(l);
    uint8_t *at = l->bounce + size_t{slot} * kSlotBytes;
    Action a{};
    a.slot = slot;
    if (write) {
      memcpy(at, reinterpret_cast<const uint8_t *>(local) + off, n);
      a.kind = Action::kSlot;
    } else {
      a.kind = Action::kCopyOut;
      a.dst = reinterpret_cast<uint8_t *>(local) + off;
      a.length = n;
    }
    last = submit(l, ep, Wqe{write ? Wqe::kWrite : Wqe::kRead, nullptr,
                             {reinterpret_cast<uint64_t>(at), l->bounce_mr->lkey}, n,
                             {remote.addr + off, remote.rkey}, nullptr},
                  a, true);
    off += n;
  }
  if (!write && !nbi) wait_for(l, ep, last);
}

void Transport::put(int lane, int pe, const void *source, size_t length,
                    const ib::RemoteAddr &dest, bool nbi) {
  rma(lane_of(lane), pe, true, const_cast<void *>(source), length, dest, nbi);
}

void Transport::get(int lane, int pe, void *dest, size_t length, const ib::RemoteAddr &source,
                    bool nbi) {
  rma(lane_of(lane), pe, false, dest, length, source, nbi);
}

uint64_t Transport::atomic(int lane, int pe, const atomics::HcaAtomic &a,
                           const ib::RemoteAddr &target) {
  Lane *l = lane_of(lane);
  Endpoint *ep = endpoint(l, pe);
  LaneLock lock(l->mutex, l->exclusive);
  for (unsigned spins = 0; l->free_replies.empty(); ++spins)
    if (!progress(l) && spins > 1000) sched_yield();
  ep = queue_for(l, pe, ep);
  const unsigned slot = l->free_replies.back();
  l->free_replies.pop_back();
  const uint64_t seq =
      submit(l, ep, Wqe{Wqe::kAtomic, nullptr,
                        {reinterpret_cast<uint64_t>(&l->replies[slot]), l->replies_mr->lkey},
                        a.size, target, &a},
             Action{}, true);
  wait_for(l, ep, seq);
  const uint64_t old = dev_->atomics().reply_value(&l->replies[slot], a.size);
  l->free_replies.push_back(slot);
  return old;
}

void Transport::atomic_nbi(int lane, int pe, const atomics::HcaAtomic &a,
                           const ib::RemoteAddr &target, void *fetch_out) {
  Lane *l = lane_of(lane);
  Endpoint *ep = endpoint(l, pe);
  LaneLock lock(l->mutex, l->exclusive);
  Action action{};
  unsigned slot = kReplySlots;  // non-fetching: the discard slot, no completion needed
  if (fetch_out) {
    for (unsigned spins = 0; l->free_replies.empty(); ++spins)
      if (!progress(l) && spins > 1000) sched_yield();
    slot = l->free_replies.back();
    l->free_replies.pop_back();
    action.kind = Action::kFetch;
    action.slot = slot;
    action.size = a.size;
    action.dst = fetch_out;
  }
  ep = queue_for(l, pe, ep);
  submit(l, ep, Wqe{Wqe::kAtomic, nullptr,
                    {reinterpret_cast<uint64_t>(&l->replies[slot]), l->replies_mr->lkey}, a.size,
                    target, &a},
         action, false);
}

void Transport::allow_inline(int lane, int pe) {
  Lane *l = lane_of(lane);
  LaneLock lock(l->mutex, l->exclusive);
  Endpoint *ep = l->eps[static_cast<size_t>(pe)].load();
  if (!ep || ep->inline_ok || !raw_) return;
  ep->inline_ok = true;
  update_add_budget(l, ep);
}

uint64_t Transport::finish_fetch(Lane *l, Endpoint *ep, uint64_t seq, unsigned size) {
  wait_for(l, ep, seq);
  return dev_->atomics().reply_value(reinterpret_cast<const void *>(l->blocking.addr), size);
}

void Transport::atomic_wide(int lane, int pe, atomics::HcaOpcode op, unsigned size,
                            const uint8_t *operands, uint32_t operand_bytes,
                            const ib::RemoteAddr &target, uint8_t *result) {
  Lane *l = lane_of(lane);
  Endpoint *ep = endpoint(l, pe);
  LaneLock lock(l->mutex, l->exclusive);
  ep = queue_for(l, pe, ep);
  // The WQE may take more BBs than has_room keeps free (kMaxWqeBbs): drain the queue first.
  if (raw_ && ep->sq.free_bbs() < ib::wide_atomic_bbs(operand_bytes, 3)) quiet_endpoint(l, ep);
  uint8_t *reply = reinterpret_cast<uint8_t *>(l->replies) + kPage;
  Wqe w{Wqe::kAtomicWide, operands, {reinterpret_cast<uint64_t>(reply), l->replies_mr->lkey},
        size, target, nullptr};
  w.wide_op = op;
  w.operand_bytes = operand_bytes;
  wait_for(l, ep, submit(l, ep, w, Action{}, true));
  memcpy(result, reply, size);
}

void Transport::atomic_add_nbi(int lane, int pe, uint64_t addend,
                               const ib::RemoteAddr &target) {
  Lane *l = lane_of(lane);
  Endpoint *ep = endpoint(l, pe);
  LaneLock lock(l->mutex, l->exclusive);
  ep = queue_for(l, pe, ep);
  ep->inline_ok = raw_;  // from now on the inline paths may post here
  const atomics::HcaAtomic a = atomics::encode_for_hca(atomics::AmoOp::FetchAdd, 8, addend, 0);
  submit(l, ep, Wqe{Wqe::kAtomic, nullptr, l->discard, 8, target, &a}, Action{}, false);
}

void Transport::fence(int lane, int pe) {
  Lane *l = lane_of(lane);
  LaneLock lock(l->mutex, l->exclusive);
  if (Endpoint *ep = l->eps[static_cast<size_t>(pe)].load()) {
    ep->fence_next = true;
    update_add_budget(l, ep);
  }
}

void Transport::fence_all(int lane) {
  Lane *l = lane_of(lane);
  LaneLock lock(l->mutex, l->exclusive);
  for (auto &ep : l->owned) {
    ep->fence_next = true;
    update_add_budget(l, ep.get());
  }
}

void Transport::quiet(int lane) {
  Lane *l = lane_of(lane);
  LaneLock lock(l->mutex, l->exclusive);
  for (auto &ep : l->owned) quiet_endpoint(l, ep.get());
}

void Transport::pe_quiet(int lane, const int *pes, size_t npes) {
  Lane *l = lane_of(lane);
  LaneLock lock(l->mutex, l->exclusive);
  for (size_t i = 0; i < npes; ++i)
    if (Endpoint *ep = l->eps[static_cast<size_t>(pes[i])].load()) quiet_endpoint(l, ep);
}

// --- lane 0, as before lanes -------------------------------------------------------------------

void Transport::put(int pe, const ib::LocalBuf &source, uint32_t length,
                    const ib::RemoteAddr &dest) {
  if (length == 0) return;
  Lane *l = lane_of(0);
  Endpoint *ep = endpoint(l, pe);
  LaneLock lock(l->mutex, false);
  ep = queue_for(l, pe, ep);
  for (uint32_t off = 0; off < length;) {
    const uint32_t n = std::min(max_msg_, length - off);
    submit(l, ep, Wqe{Wqe::kWrite, nullptr, {source.addr + off, source.lkey}, n,
                      {dest.addr + off, dest.rkey}, nullptr},
           Action{}, false);
    off += n;
  }
}

void Transport::put_inline(int pe, const void *source, uint32_t length,
                           const ib::RemoteAddr &dest) {
  Lane *l = lane_of(0);
  Endpoint *ep = endpoint(l, pe);
  LaneLock lock(l->mutex, false);
  ep = queue_for(l, pe, ep);
  submit(l, ep, Wqe{Wqe::kWriteInline, source, {0, 0}, length, dest, nullptr}, Action{}, false);
}

size_t Transport::max_batch_write() { return kSlotBytes; }

void Transport::put_all(int pe, const BatchWrite *writes, size_t n) {
  if (n == 0) return;
  Lane *l = lane_of(0);
  Endpoint *ep = endpoint(l, pe);
  LaneLock lock(l->mutex, false);
  ep = queue_for(l, pe, ep);
  for (size_t i = 0; i < n; ++i) {
    const BatchWrite &w = writes[i];
    const bool doorbell = i + 1 == n;
    if (w.length <= max_inline_) {
      submit(l, ep, Wqe{Wqe::kWriteInline, w.source, {0, 0}, w.length, w.dest, nullptr},
             Action{}, false, doorbell);
      continue;
    }
    // rma()'s bounce path for one slot (waiting for a slot reads completions, never posts).
    const unsigned slot = take_slot(l);
    uint8_t *at = l->bounce + size_t{slot} * kSlotBytes;
    memcpy(at, w.source, w.length);
    Action a{};
    a.kind = Action::kSlot;
    a.slot = slot;
    submit(l, ep,
           Wqe{Wqe::kWrite, nullptr, {reinterpret_cast<uint64_t>(at), l->bounce_mr->lkey},
               w.length, w.dest, nullptr},
           a, true, doorbell);
  }
}

void Transport::put_inline_notify(int pe, const void *source, uint32_t length,
                                  const ib::RemoteAddr &dest, uint32_t imm) {
  Lane *l = lane_of(0);
  Endpoint *ep = endpoint(l, pe);
  LaneLock lock(l->mutex, false);
  ep = queue_for(l, pe, ep);
  Wqe w{Wqe::kWriteInlineImm, source, {0, 0}, length, dest, nullptr};
  w.imm = imm;
  ep->last_imm = submit(l, ep, w, Action{}, false);
}

bool Transport::open_arrivals(unsigned depth, std::string *why) {
  ibv_context *ctx = dev_->context();
  arrivals_channel_ = ibv_create_comp_channel(ctx);
  arrivals_cq_ = arrivals_channel_ ? ibv_create_cq(ctx, static_cast<int>(depth), nullptr,
                                                   arrivals_channel_, 0)
                                   : nullptr;
  ibv_srq_init_attr attr{};
  attr.attr.max_wr = depth;
  attr.attr.max_sge = 1;
  arrivals_srq_ = arrivals_cq_ ? ibv_create_srq(dev_->pd(), &attr) : nullptr;
  if (!arrivals_srq_) {
    *why = std::string("cannot create the receive side of writes with immediate: ") +
           strerror(errno);
    close_arrivals();
    return false;
  }
  if (arrivals_channel_) {  // the sleeper polls it: never block in ibv_get_cq_event
    const int flags = fcntl(arrivals_channel_->fd, F_GETFL);
    fcntl(arrivals_channel_->fd, F_SETFL, flags | O_NONBLOCK);
  }
  // A write with immediate consumes a receive and scatters nothing: receives without buffers.
  for (unsigned i = 0; i < depth; ++i) {
    ibv_recv_wr wr{}, *bad = nullptr;
    if (ibv_post_srq_recv(arrivals_srq_, &wr, &bad) != 0) {
      *why = "cannot post the receives of writes with immediate";
      close_arrivals();
      return false;
    }
  }
  return true;
}

void Transport::close_arrivals() {
  if (arrivals_srq_) ibv_destroy_srq(arrivals_srq_);
  if (arrivals_cq_) ibv_destroy_cq(arrivals_cq_);
  if (arrivals_channel_) ibv_destroy_comp_channel(arrivals_channel_);
  arrivals_srq_ = nullptr, arrivals_cq_ = nullptr, arrivals_channel_ = nullptr;
}

void Transport::arm_arrivals() {
  if (!arrivals_cq_) return;
  std::lock_guard<std::mutex> lock(arrivals_mutex_);
  ibv_req_notify_cq(arrivals_cq_, 0);
}

unsigned Transport::take_arrival_events() {
  if (!arrivals_channel_) return 0;
  std::lock_guard<std::mutex> lock(arrivals_mutex_);
  ibv_cq *cq;
  void *context;
  unsigned events = 0;
  while (ibv_get_cq_event(arrivals_channel_, &cq, &context) == 0) ++events;  // non-blocking fd
  if (events) ibv_ack_cq_events(arrivals_cq_, events);
  return events;
}

unsigned Transport::drain_arrivals() {
  if (!arrivals_cq_) return 0;
  std::lock_guard<std::mutex> lock(arrivals_mutex_);
  unsigned total = 0;
  ibv_wc wc[16];
  for (int n; (n = ibv_poll_cq(arrivals_cq_, 16, wc)) > 0;) {
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) {
        char cause[96];
        snprintf(cause, sizeof cause, "a write with immediate completed with %s",
                 ibv_wc_status_str(wc[i].status));
        fail(me_, cause);
      }
      ibv_recv_wr wr{}, *bad = nullptr;
      if (ibv_post_srq_recv(arrivals_srq_, &wr, &bad) != 0)
        fail(me_, "cannot give a receive back to the shared receive queue");
    }
    total += static_cast<unsigned>(n);
  }
  return total;
}

void Transport::get(int pe, const ib::LocalBuf &dest, uint32_t length,
                    const ib::RemoteAddr &source) {
  if (length == 0) return;
  Lane *l = lane_of(0);
  Endpoint *ep = endpoint(l, pe);
  LaneLock lock(l->mutex, false);
  ep = queue_for(l, pe, ep);
  uint64_t last = 0;
  for (uint32_t off = 0; off < length;) {
    const uint32_t n = std::min(max_msg_, length - off);
    last = submit(l, ep, Wqe{Wqe::kRead, nullptr, {dest.addr + off, dest.lkey}, n,
                             {source.addr + off, source.rkey}, nullptr},
                  Action{}, off + n == length);
    off += n;
  }
  wait_for(l, ep, last);
}

}  // namespace hoshmem::rc
