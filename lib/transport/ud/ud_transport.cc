// lib/transport/ud: requests and replies over one UD QP per PE (ud_transport.h).
#include "lib/transport/ud/ud_transport.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace hoshmem::ud {
namespace {

constexpr uint32_t kQkey = 0x48535544;   // "HSUD"
constexpr uint32_t kMagic = 0x68756431;  // every datagram's second word
constexpr unsigned kSendSlots = 64;
constexpr size_t kGrh = 40;  // every UD receive starts with room for a GRH

// What precedes the engine's bytes in every datagram.
struct Prefix {
  uint32_t pe;
  uint32_t magic;
};
constexpr size_t kPrefix = sizeof(Prefix);

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

// The port's MTU in bytes (IBV_MTU_256 = 1, ... IBV_MTU_4096 = 5).
size_t mtu_bytes(ibv_mtu mtu) { return size_t{128} << static_cast<int>(mtu); }

}  // namespace

// A request waiting for its reply: on the caller's stack (call) or from the pool (call_nbi).
struct Transport::Pending {
  void *reply = nullptr;
  size_t capacity = 0;
  size_t len = 0;
  bool pooled = false;
  std::atomic<bool> done{false};
};

Transport::~Transport() { shutdown(); }

bool Transport::init(ib::Device *device, int me, int npes, const Options &options,
                     RequestHandler *handler, ErrorHandler on_error, std::string *why) {
  options_ = options;
  if (const char *ms = getenv("HOSHMEM_UD_DEBUG_MS")) debug_ns_ = strtoull(ms, nullptr, 10) * 1'000'000;
  dev_ = device;
  me_ = me;
  npes_ = npes;
  handler_ = handler;
  on_error_ = on_error;
  datagram_bytes_ = mtu_bytes(dev_->port_attr().active_mtu);
  peers_.assign(static_cast<size_t>(npes), PeerAddress{});
  ahs_.reset(dev_, static_cast<size_t>(npes));

  ibv_context *ctx = dev_->context();
  const unsigned receives = options_.receive_slots;
  channel_ = ibv_create_comp_channel(ctx);
  recv_cq_ = channel_ ? ibv_create_cq(ctx, static_cast<int>(receives), nullptr, channel_, 0)
                      : nullptr;
  send_cq_ = recv_cq_ ? ibv_create_cq(ctx, kSendSlots, nullptr, nullptr, 0) : nullptr;
  qp_ = send_cq_ ? dev_->create_ud_qp(send_cq_, recv_cq_, receives, kQkey, 0) : nullptr;
  if (!qp_) {
    *why = std::string("cannot create the UD queue pair and its completion queues: ") +
           strerror(errno);
    return false;
  }
  // The thread sleeps in poll(2) on the channel and on an eventfd that interrupt() writes.
  fcntl(channel_->fd, F_SETFL, fcntl(channel_->fd, F_GETFL) | O_NONBLOCK);
  stop_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  const size_t bytes = kSendSlots * datagram_bytes_ + receives * (kGrh + datagram_bytes_);
  buffers_ = static_cast<uint8_t *>(aligned_alloc(4096, (bytes + 4095) & ~size_t{4095}));
  mr_ = buffers_ ? ibv_reg_mr(dev_->pd(), buffers_, bytes, IBV_ACCESS_LOCAL_WRITE) : nullptr;
  if (!mr_ || stop_fd_ < 0) {
    *why = std::string("cannot register the UD transport's buffers: ") + strerror(errno);
    return false;
  }
  for (unsigned i = kSendSlots; i-- > 0;) free_sends_.push_back(i);
  batch_wrs_.resize(kSendSlots);
  batch_sges_.resize(kSendSlots);
  for (unsigned i = 0; i < receives; ++i) post_receive(i);

  Config config;
  config.npes = npes;
  config.mtu = datagram_bytes_ - kPrefix;
  config.max_window = options.window;
  config.initial_window = std::min<uint32_t>(config.initial_window, options.window);
  config.rto_ns = options.rto_ns;
  config.rto_max_ns = std::max(config.rto_max_ns, options.rto_ns);
  config.give_up_ns = options.give_up_ns;
  config.ack_delay_ns = options.ack_delay_ns;
  // A rack owed after a reply: the next request of a loop of AMOs carries it. Not sooner than
  // the progress thread's next look while the application polls: waking it for a rack would
  // cost a wake-up per AMO (the target's replay timer allows for the delay).
  config.rack_delay_ns = progress::Thread::kPollingCheckNs;
  config.max_reply = config.max_window * (config.mtu - kHeaderBytes);
  engine_ = std::make_unique<Endpoint>(config, static_cast<Callbacks &>(*this));
  max_message_ = config.max_reply;
  return true;
}

PeerAddress Transport::address() const {
  return {dev_->port_attr().lid, dev_->gid(), qp_ ? qp_->qp_num : 0,
          static_cast<uint8_t>(dev_->port_attr().active_mtu)};
}

void Transport::set_peer(int pe, const PeerAddress &address) {
  peers_[static_cast<size_t>(pe)] = address;
}

void Transport::start() {
  if (options_.progress_thread) thread_.start(this);
}

void Transport::shutdown() {
  thread_.stop();
  engine_.reset();
  batched_ = 0;
  ahs_.reset(dev_, 0);
  if (qp_) ibv_destroy_qp(qp_), qp_ = nullptr;
  if (send_cq_) ibv_destroy_cq(send_cq_), send_cq_ = nullptr;
  if (recv_cq_) ibv_destroy_cq(recv_cq_), recv_cq_ = nullptr;
  if (channel_) ibv_destroy_comp_channel(channel_), channel_ = nullptr;
  if (mr_) ibv_dereg_mr(mr_), mr_ = nullptr;
  free(buffers_);
  buffers_ = nullptr;
  if (stop_fd_ >= 0) close(stop_fd_), stop_fd_ = -1;
  for (Pending *p : pool_) delete p;
  pool_.clear();
}

// --- requests ----------------------------------------------------------------------------------

void Transport::send(int pe, const void *msg, size_t len, Kind kind, Pending *pending) {
  outstanding_.fetch_add(1, std::memory_order_relaxed);
  bool waited = false;
  for (;;) {
    SendResult r;
    uint64_t rto = 0;
    uint32_t seen;  // completions before a refusal: taken under the lock that completes them
    {
      std::lock_guard<SpinLock> guard(lock_);
      seen = completions_.load(std::memory_order_relaxed);
      r = engine_->send(pe, msg, len, kind, reinterpret_cast<uint64_t>(pending),
                        pending ? pending->capacity : 0);
      flush_sends();
      rto = engine_->rto_ns(pe);
    }
    if (r == SendResult::kOk) {
      // Its first resend, if needed: at the peer's timeout, which may be far longer than
      // rto_ns (waking the thread for rto_ns would cost a wake-up per message).
      thread_.due_in(static_cast<long>(rto));
      return;
    }
    if (r == SendResult::kFailed) on_error_(pe, "it stopped answering over UD earlier");
    if (!waited) {
      waited = true;
      std::lock_guard<SpinLock> guard(lock_);
      ++busy_;
    }
    // The peer's window is full: it opens when one of our messages completes. `seen` was read
    // with the refusal: read here, the completions of the moment between would be missed and,
    // when they were the last, the wait would never end.
    wait_for([&] { return completions_.load(std::memory_order_acquire) != seen; });
  }
}

template <class Done>
void Transport::wait_for(const Done &done) {
  progress::Thread::Polling polling(thread_);
  uint64_t next_dump = 0;
  for (uint32_t i = 1; !done(); ++i) {
    if (!serve()) sched_yield();
    // The clock only every 1024th pass: on a guest it is an emulated device.
    if (debug_ns_ && i % 1024 == 0) {
      const uint64_t now = monotonic_ns();
      if (next_dump == 0) {
        next_dump = now + debug_ns_;
      } else if (now >= next_dump) {
        next_dump = now + debug_ns_;
        dump("a wait");
      }
    }
  }
}

// HOSHMEM_UD_DEBUG_MS: what this PE's engine holds, to stderr, when a wait takes that long.
void Transport::dump(const char *why) {
  std::string text;
  {
    std::lock_guard<SpinLock> guard(lock_);
    if (!engine_) return;
    const ud::Stats &e = engine_->stats();
    char head[400];
    snprintf(head, sizeof head,
             "hoshmem: PE %d: UD: %s is %llu ms long: %llu datagrams sent, %llu received, %llu "
             "resent, %llu replays, %llu timeouts, %llu duplicates, %llu requests outstanding, "
             "%zu send slots free\n",
             me_, why, static_cast<unsigned long long>(debug_ns_ / 1'000'000),
             static_cast<unsigned long long>(e.datagrams),
             static_cast<unsigned long long>(received_),
             static_cast<unsigned long long>(e.retransmits),
             static_cast<unsigned long long>(e.replays),
             static_cast<unsigned long long>(e.timeouts),
             static_cast<unsigned long long>(e.duplicates),
             static_cast<unsigned long long>(outstanding_.load(std::memory_order_relaxed)),
             free_sends_.size());
    text = head + engine_->describe(monotonic_ns());
  }
  fputs(text.c_str(), stderr);
}

void Transport::post(int pe, const void *msg, size_t len) {
  send(pe, msg, len, Kind::kAcked, nullptr);
}

size_t Transport::call(int pe, const void *msg, size_t len, void *reply, size_t capacity) {
  Pending p;
  p.reply = reply;
  p.capacity = capacity;
  send(pe, msg, len, Kind::kFetch, &p);
  wait_for([&] { return p.done.load(std::memory_order_acquire); });
  return p.len;
}

void Transport::call_nbi(int pe, const void *msg, size_t len, void *reply, size_t capacity) {
  Pending *p;
  {
    std::lock_guard<SpinLock> guard(lock_);
    if (pool_.empty()) {
      p = new Pending;
    } else {
      p = pool_.back();
      pool_.pop_back();
    }
  }
  p->reply = reply;
  p->capacity = capacity;
  p->pooled = true;
  send(pe, msg, len, Kind::kFetch, p);
}

void Transport::quiet() {
  if (outstanding_.load(std::memory_order_acquire) == 0) return;
  wait_for([&] { return outstanding_.load(std::memory_order_acquire) == 0; });
}

// --- the engine's callbacks (the lock held) ----------------------------------------------------

uint64_t Transport::now_ns() { return monotonic_ns(); }

void Transport::send_datagram(int peer, const iovec *iov, int iovcnt) {
  if (free_sends_.empty()) {
    flush_sends();  // what is batched completes only once posted
    while (free_sends_.empty()) reap_sends();
  }
  const unsigned slot = free_sends_.back();
  free_sends_.pop_back();
  uint8_t *at = buffers_ + size_t{slot} * datagram_bytes_;
  const Prefix prefix{static_cast<uint32_t>(me_), kMagic};
  memcpy(at, &prefix, kPrefix);
  size_t len = kPrefix;
  for (int i = 0; i < iovcnt; ++i) {
    memcpy(at + len, iov[i].iov_base, iov[i].iov_len);
    len += iov[i].iov_len;
  }
  ibv_ah *ah = ah_for(peer);
  if (!ah) on_error_(peer, "cannot create an address handle for it");
  ibv_sge &sge = batch_sges_[batched_];
  sge = {reinterpret_cast<uint64_t>(at), static_cast<uint32_t>(len), mr_->lkey};
  ibv_send_wr &wr = batch_wrs_[batched_++];
  wr = {};
  wr.wr_id = uint64_t{static_cast<uint32_t>(peer)} << 32 | slot;  // the peer, for an error
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.wr.ud.ah = ah;
  wr.wr.ud.remote_qpn = peers_[static_cast<size_t>(peer)].qpn;
  wr.wr.ud.remote_qkey = kQkey;
}

// Posts the datagrams batched since the last flush, as one list.
void Transport::flush_sends() {
  if (batched_ == 0) return;
  for (size_t i = 0; i + 1 < batched_; ++i) batch_wrs_[i].next = &batch_wrs_[i + 1];
  batch_wrs_[batched_ - 1].next = nullptr;
  batched_ = 0;
  ++posts_;
  ibv_send_wr *bad = nullptr;
  if (const int err = ibv_post_send(qp_, batch_wrs_.data(), &bad); err != 0) {
    char cause[96];
    snprintf(cause, sizeof cause, "cannot post a datagram to it: %s", strerror(err));
    on_error_(bad ? static_cast<int>(bad->wr_id >> 32) : 0, cause);
  }
}

void Transport::handle(int peer, const void *msg, size_t len, Reply &reply) {
  handler_->handle(peer, msg, len, reply);
}

void Transport::on_acked(uint64_t) {
  outstanding_.fetch_sub(1, std::memory_order_release);
  completions_.fetch_add(1, std::memory_order_release);
}

void Transport::on_reply(uint64_t token, const void *reply, size_t len) {
  auto *p = reinterpret_cast<Pending *>(token);
  memcpy(p->reply, reply, std::min(len, p->capacity));
  p->len = len;
  outstanding_.fetch_sub(1, std::memory_order_release);
  if (p->pooled)
    pool_.push_back(p);
  else
    p->done.store(true, std::memory_order_release);  // last use of p: the caller may return
  completions_.fetch_add(1, std::memory_order_release);
}

void Transport::on_peer_failed(int peer) {
  if (closing_.load(std::memory_order_acquire)) return;
  const ud::Stats &st = engine_->stats();
  char cause[256];
  snprintf(cause, sizeof cause,
           "no answer over UD for %llu ms (has it exited?) [sent %llu datagrams, %llu resent, "
           "%llu timeouts, %llu replies replayed, %llu duplicates received]",
           static_cast<unsigned long long>(options_.give_up_ns / 1'000'000),
           static_cast<unsigned long long>(st.datagrams),
           static_cast<unsigned long long>(st.retransmits),
           static_cast<unsigned long long>(st.timeouts), static_cast<unsigned long long>(st.replays),
           static_cast<unsigned long long>(st.duplicates));
  on_error_(peer, cause);
}

void Transport::on_failed(uint64_t) {
  outstanding_.fetch_sub(1, std::memory_order_release);
  completions_.fetch_add(1, std::memory_order_release);
}

// --- progress ----------------------------------------------------------------------------------

bool Transport::serve() {
  std::lock_guard<SpinLock> guard(lock_);
  return serve_locked();
}

bool Transport::serve_if_free(bool &busy) {
  if (!lock_.try_lock()) {
    busy = true;
    return false;
  }
  std::lock_guard<SpinLock> guard(lock_, std::adopt_lock);
  return serve_locked();
}

bool Transport::serve_locked() {
  if (!engine_) return false;
  reap_sends();
  ibv_wc wc[16];
  const int n = ibv_poll_cq(recv_cq_, 16, wc);
  if (n > 0) {
    received_ += static_cast<unsigned>(n);
    if (progress::Thread::on_progress_thread()) received_by_thread_ += static_cast<unsigned>(n);
    if (n == 16) ++full_polls_;
  }
  for (int i = 0; i < n; ++i) {
    const auto slot = static_cast<unsigned>(wc[i].wr_id);
    const uint8_t *at = buffers_ + kSendSlots * datagram_bytes_ + slot * (kGrh + datagram_bytes_);
    Prefix prefix{};
    if (wc[i].status == IBV_WC_SUCCESS && wc[i].byte_len >= kGrh + kPrefix) {
      memcpy(&prefix, at + kGrh, kPrefix);
      if (prefix.magic == kMagic && prefix.pe < static_cast<uint32_t>(npes_))
        engine_->on_datagram(static_cast<int>(prefix.pe), at + kGrh + kPrefix,
                             wc[i].byte_len - kGrh - kPrefix);
    }
    if (qp_) post_receive(slot);
  }
  // The engine's timers (resends, delayed racks: a millisecond or more by default) at every
  // pass that read something and at every 16th idle one: a poll reads the clock, which is dear on
  // a guest whose clock is an emulated device, and a waiting PE passes here continuously.
  if (n > 0 || ++idle_passes_ % 16 == 0) engine_->poll();
  flush_sends();  // every reply of this pass in one post
  return n > 0;
}

void Transport::reap_sends() {
  ibv_wc wc[16];
  for (int n; (n = ibv_poll_cq(send_cq_, 16, wc)) > 0;)
    for (int i = 0; i < n; ++i) free_sends_.push_back(static_cast<uint32_t>(wc[i].wr_id));
}

void Transport::post_receive(unsigned slot) {
  uint8_t *at = buffers_ + kSendSlots * datagram_bytes_ + size_t{slot} * (kGrh + datagram_bytes_);
  ibv_sge sge{reinterpret_cast<uint64_t>(at), static_cast<uint32_t>(kGrh + datagram_bytes_),
              mr_->lkey};
  ibv_recv_wr wr{}, *bad = nullptr;
  wr.wr_id = slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_post_recv(qp_, &wr, &bad);
}

ibv_ah *Transport::ah_for(int pe) {
  const PeerAddress &peer = peers_[static_cast<size_t>(pe)];
  return ahs_.get(pe, peer.lid, peer.gid);
}

void Transport::arm() {
  // Under the lock: the application thread arms too (a wait going to sleep), and a provider's
  // arm (mlx5's sequence number and consumer index) must not race another arm or a poll.
  std::lock_guard<SpinLock> guard(lock_);
  if (recv_cq_) ibv_req_notify_cq(recv_cq_, 0);
}

void Transport::sleep(long timeout_ns) {
  pollfd fds[2] = {{channel_->fd, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
  timespec limit{timeout_ns / 1'000'000'000, timeout_ns % 1'000'000'000};
  if (ppoll(fds, 2, timeout_ns < 0 ? nullptr : &limit, nullptr) <= 0) return;
  if (fds[0].revents & POLLIN) {
    ibv_cq *cq = nullptr;
    void *context = nullptr;
    if (ibv_get_cq_event(channel_, &cq, &context) == 0) ibv_ack_cq_events(cq, 1);
  }
  if (fds[1].revents & POLLIN) {
    uint64_t count;
    if (read(stop_fd_, &count, sizeof count) < 0) {
      // nothing to do: the flag the thread looks at is what matters
    }
  }
}

void Transport::interrupt() {
  const uint64_t one = 1;
  if (write(stop_fd_, &one, sizeof one) < 0) {
    // the counter is full: the thread wakes anyway
  }
}

long Transport::next_deadline_ns() {
  std::lock_guard<SpinLock> guard(lock_);
  if (!engine_) return -1;
  const uint64_t due = engine_->poll();
  flush_sends();
  if (due == kNever) return -1;
  const uint64_t now = monotonic_ns();
  return due > now ? static_cast<long>(due - now) : 0;
}

Transport::Stats Transport::stats() {
  Stats s;
  {
    std::lock_guard<SpinLock> guard(lock_);
    if (engine_) {
      s.engine = engine_->stats();
      s.memory_bytes = engine_->memory_bytes() + engine_->spare_bytes();
      s.registered_bytes = mr_ ? mr_->length : 0;
    }
    s.received = received_;
    s.received_by_thread = received_by_thread_;
    s.full_polls = full_polls_;
    s.busy = busy_;
    s.posts = posts_;
  }
  s.wakeups = thread_.wakeups();
  s.productive_wakeups = thread_.productive();
  return s;
}

}  // namespace hoshmem::ud
