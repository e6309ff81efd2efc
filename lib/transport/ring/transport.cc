// lib/transport/ring: active messages through the shared receive ring (transport.h).
#include "lib/transport/ring/transport.h"

#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace hoshmem::ring {
namespace {

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

// A stalled ring is checked against the clock only every this many idle passes (a waiting PE
// passes continuously, and a guest's clock can be dear).
constexpr unsigned kStallCheckEvery = 64;

}  // namespace

Transport::Transport(int me, int npes, uint8_t *area, Link *link, net::RequestHandler *handler,
                     net::ErrorHandler on_error, const Options &options)
    : me_(me), npes_(npes), area_(area), link_(link), handler_(handler), on_error_(on_error),
      options_(options), sender_(this, kRingBytes, npes),
      receiver_(area + kRingOffset, kRingBytes,
                reinterpret_cast<std::atomic<uint64_t> *>(area + kConsumerOffset)),
      reply_scratch_(kMaxMessage) {
  for (unsigned s = kReplySlots; s-- > 0;) free_slots_.push_back(s);
  stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

Transport::~Transport() {
  shutdown();
  if (stop_fd_ >= 0) close(stop_fd_);
}

void Transport::start() {
  if (options_.progress_thread) thread_.start(this);
}

void Transport::shutdown() {
  if (thread_.running()) thread_.stop();
}

// --- sending -----------------------------------------------------------------------------------

uint64_t Transport::fetch_add_producer(int pe, uint64_t bytes) {
  return link_->fetch_add(pe, kProducerOffset, bytes);
}

uint64_t Transport::read_consumer(int pe) { return link_->read_word(pe, kConsumerOffset); }

void Transport::write(int pe, uint64_t offset, const void *data, size_t len) {
  link_->write(pe, kRingOffset + offset, data, len);
}

void Transport::write_header(int pe, uint64_t offset, uint64_t header) {
  link_->write_notify(pe, kRingOffset + offset, &header, sizeof header);
}

bool Transport::wait_for_room(int pe, uint64_t waited_ns) {
  // The owner may be waiting for room in ours: serve it meanwhile.
  bool busy = false;
  if (!serve_if_free(busy)) sched_yield();
  if (waited_ns < options_.give_up_ns) return true;
  char cause[160];
  snprintf(cause, sizeof cause, "its receive ring stayed full for %llu ms (it does not take the "
           "messages sent to it)", static_cast<unsigned long long>(waited_ns / 1'000'000));
  on_error_(pe, cause);
  return false;  // not reached: the handler does not return
}

void Transport::send(int pe, const void *msg, size_t len, void *reply, size_t capacity,
                     size_t *len_out, std::atomic<bool> *done) {
  unsigned slot;
  {
    progress::Thread::Polling polling(thread_);
    for (bool waited = false;; waited = true) {
      {
        std::lock_guard<SpinLock> guard(lock_);
        if (free_slots_.empty()) serve_locked();
        if (!free_slots_.empty()) {
          slot = free_slots_.back();
          free_slots_.pop_back();
          slot_waits_ += waited;
          Slot &s = slots_[slot];
          s.busy = true;
          s.pe = pe;
          s.sent_ns = monotonic_ns();
          s.reply = reply;
          s.capacity = capacity;
          s.len_out = len_out;
          s.done = done;
          break;
        }
      }
      sched_yield();
    }
  }
  outstanding_.fetch_add(1, std::memory_order_relaxed);
  if (len > kMaxMessage) [[unlikely]]
    on_error_(pe, "a message larger than the ring transport carries (a library bug)");
  uint8_t bytes[sizeof(RequestHeader) + kMaxMessage];
  const RequestHeader h{slot, static_cast<uint32_t>(std::min(capacity, kMaxMessage))};
  memcpy(bytes, &h, sizeof h);
  memcpy(bytes + sizeof h, msg, len);
  if (!sender_.send(pe, static_cast<uint32_t>(me_), bytes, sizeof h + len))
    on_error_(pe, "its receive ring stayed full");
  sent_.fetch_add(1, std::memory_order_relaxed);
}

void Transport::post(int pe, const void *msg, size_t len) {
  send(pe, msg, len, nullptr, 0, nullptr, nullptr);
}

size_t Transport::call(int pe, const void *msg, size_t len, void *reply, size_t capacity) {
  size_t got = 0;
  std::atomic<bool> done{false};
  send(pe, msg, len, reply, capacity, &got, &done);
  progress::Thread::Polling polling(thread_);
  while (!done.load(std::memory_order_acquire))
    if (!serve()) sched_yield();
  return got;
}

void Transport::call_nbi(int pe, const void *msg, size_t len, void *reply, size_t capacity) {
  send(pe, msg, len, reply, capacity, nullptr, nullptr);
}

void Transport::quiet() {
  if (outstanding_.load(std::memory_order_acquire) == 0) return;
  progress::Thread::Polling polling(thread_);
  while (outstanding_.load(std::memory_order_acquire) != 0)
    if (!serve()) sched_yield();
}

// --- receiving ---------------------------------------------------------------------------------

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
  // The arrivals' completions only wake a sleeper: the ring itself says what arrived. Read them
  // here too, so that their receives go back before the shared receive queue runs dry.
  arrivals_ += link_->drain_arrivals();
  const size_t n = receiver_.poll([this](uint32_t sender, const uint8_t *data, size_t len) {
    RequestHeader h;
    if (len < sizeof h || sender >= static_cast<uint32_t>(npes_)) return;
    memcpy(&h, data, sizeof h);
    if (h.slot >= kReplySlots) return;
    net::Reply reply{reply_scratch_.data(), std::min<size_t>(h.capacity, kMaxMessage), 0};
    handler_->handle(static_cast<int>(sender), data + sizeof h, len - sizeof h, reply);
    // The reply, then the slot's word (its length + 1): the requester polls the word.
    const int pe = static_cast<int>(sender);
    const uint64_t slot = kReplySlotsOffset + uint64_t{h.slot} * kReplySlotBytes;
    if (reply.len) link_->write(pe, slot + 64, reply.data, reply.len);
    const uint64_t word = reply.len + 1;
    link_->write(pe, slot, &word, sizeof word);
  });
  received_ += n;
  const bool collected = collect_locked();
  if (n == 0) check_stalled_locked();
  return n > 0 || collected;
}

bool Transport::collect_locked() {
  if (free_slots_.size() == kReplySlots) return false;
  bool any = false;
  for (unsigned i = 0; i < kReplySlots; ++i) {
    Slot &s = slots_[i];
    if (!s.busy) continue;
    const uint64_t word = slot_word(i)->load(std::memory_order_acquire);
    if (word == 0) continue;
    ib::cqe_owner_before_body();  // the reply the HCA wrote before the word
    const size_t len = std::min<size_t>(word - 1, s.capacity);
    if (len) memcpy(s.reply, area_ + kReplySlotsOffset + size_t{i} * kReplySlotBytes + 64, len);
    if (s.len_out) *s.len_out = len;
    if (s.done) s.done->store(true, std::memory_order_release);
    // A free slot's word is zero (the file starts zeroed): a slot is never seen answered by a
    // reply that belonged to its last request.
    slot_word(i)->store(0, std::memory_order_relaxed);
    s.busy = false;
    free_slots_.push_back(i);
    outstanding_.fetch_sub(1, std::memory_order_release);
    any = true;
  }
  return any;
}

// A sender that reserved bytes in this ring and never wrote its message (it died between the
// fetch-add and the write) blocks every message behind it: past the give-up time, the job ends.
void Transport::check_stalled_locked() {
  if (++idle_passes_ % kStallCheckEvery != 0) return;
  const uint64_t now = monotonic_ns();
  check_overdue_locked(now);
  const uint64_t consumer =
      reinterpret_cast<std::atomic<uint64_t> *>(area_ + kConsumerOffset)->load(
          std::memory_order_relaxed);
  // Written by HCA atomics only; a plain load of it races nothing.
  const uint64_t producer = reinterpret_cast<volatile uint64_t *>(area_ + kProducerOffset)[0];
  if (producer == consumer) {
    stalled_at_ = ~uint64_t{0};
    return;
  }
  if (stalled_at_ != consumer) {
    stalled_at_ = consumer;
    stalled_since_ns_ = now;
    return;
  }
  if (now - stalled_since_ns_ < options_.give_up_ns) return;
  char cause[192];
  snprintf(cause, sizeof cause, "a message reserved at byte %llu of its receive ring never "
           "arrived in %llu ms (its sender died, or cannot write to it)",
           static_cast<unsigned long long>(consumer),
           static_cast<unsigned long long>((now - stalled_since_ns_) / 1'000'000));
  on_error_(me_, cause);
}

// A request unanswered past the give-up time: its target no longer serves its ring (it died, or
// computes without the library and without a progress thread).
void Transport::check_overdue_locked(uint64_t now) {
  if (free_slots_.size() == kReplySlots) return;
  for (const Slot &s : slots_)
    if (s.busy && now - s.sent_ns > options_.give_up_ns) {
      char cause[128];
      snprintf(cause, sizeof cause, "it answered no request in %llu ms (it does not serve its "
               "receive ring)", static_cast<unsigned long long>((now - s.sent_ns) / 1'000'000));
      on_error_(s.pe, cause);
    }
}

// --- the progress thread -----------------------------------------------------------------------

void Transport::arm() { link_->arm_arrivals(); }

void Transport::sleep(long timeout_ns) {
  pollfd fds[2] = {{link_->arrivals_fd(), POLLIN, 0}, {stop_fd_, POLLIN, 0}};
  // The stall check needs a pass now and then while something is reserved and missing.
  if (timeout_ns < 0 || timeout_ns > 100'000'000) timeout_ns = 100'000'000;
  timespec limit{timeout_ns / 1'000'000'000, timeout_ns % 1'000'000'000};
  if (ppoll(fds, 2, &limit, nullptr) <= 0) return;
  if (fds[0].revents & POLLIN) link_->take_arrival_events();
  if (fds[1].revents & POLLIN) {
    uint64_t count;
    if (read(stop_fd_, &count, sizeof count) < 0) {
      // nothing to do: the flag the thread looks at is what matters
    }
  }
}

void Transport::interrupt() {
  const uint64_t one = 1;
  if (::write(stop_fd_, &one, sizeof one) < 0) {
    // the counter is full: the thread wakes anyway
  }
}

long Transport::next_deadline_ns() { return -1; }

Transport::Stats Transport::stats() {
  Stats s;
  {
    std::lock_guard<SpinLock> guard(lock_);
    s.received = received_;
    s.slot_waits = slot_waits_;
    s.arrivals = arrivals_;
  }
  s.sent = sent_.load(std::memory_order_relaxed);
  s.consumer_reads = sender_.consumer_reads();
  s.wakeups = thread_.wakeups();
  s.productive_wakeups = thread_.productive();
  return s;
}

}  // namespace hoshmem::ring
