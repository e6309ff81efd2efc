// lib/transport/rc: the state of a lane and of its endpoints (one per peer), and the inline path
// of the non-fetching 64-bit add. Included by rc_transport.h only: the add is the commonest AMO
// and its path from the API to the doorbell is counted in instructions (perf/hw/rc.sh), so the
// API routine inlines it (lib/core/rdma_inline.h); everything else of the transport is in
// rc_transport.cc.
#pragma once

#include <atomic>
#include <memory>
#include <unordered_map>
#include <vector>

#include "lib/base/spin_lock.h"
#include "lib/transport/ib/queue.h"
#include "lib/transport/ib/wqe.h"

namespace hoshmem::rc {

constexpr uint32_t kSendQueueDepth = 256;  // WQEs per RC QP
constexpr unsigned kMaxInitiatorDepth = 16;  // reads/atomics in flight per QP, at most (see rd_depth_)
constexpr uint32_t kMaxWqeBbs = 4;         // the largest WQE we write (inline data included)

// What happens when a WQE completes (its CQE, or a later one of the same QP, is read).
struct Transport::Action {
  enum Kind : uint8_t { kNone, kSlot, kCopyOut, kFetch, kCache } kind = kNone;
  uint8_t size = 0;     // kFetch: bytes of old value
  uint32_t slot = 0;    // bounce slot (kSlot, kCopyOut) or reply slot (kFetch)
  uint32_t length = 0;  // kCopyOut
  void *dst = nullptr;  // kCopyOut, kFetch
  CacheEntry *entry = nullptr;
};

struct Transport::Endpoint {
  int pe = -1;  // RC: the peer; DC: the peer the initiator serves now (-1: none yet)
  ibv_qp *qp = nullptr;
  ib::SendQueue sq;                // raw path
  bool connected = false;          // our QP is in RTS, aimed at the peer's (cm_mutex_)
  bool answered = false;           // the peer replied: its QP is ready too (cm_mutex_)
  std::atomic<bool> ready{false};  // both: operations may go (never set on a DC initiator)
  // The rest: the lane's lock.
  bool fence_next = false;      // the next WQE carries the fence flag
  bool write_unfenced = false;  // a write was posted since the last fenced read/atomic
  // WQEs are numbered 1, 2, ... (posted: the last one; done: the last one retired). Only a
  // signaled WQE brings a completion, and one completion retires every earlier WQE of the QP,
  // so only signaled WQEs are recorded (every WQE with an Action is signaled): a fixed ring, one
  // entry per WQE the send queue can hold, `signaled[n & mask]` the n-th signaled WQE.
  struct Signaled {
    uint64_t seq;
    uint64_t reads_atomics_upto;  // reads and atomics posted up to this WQE, itself included
    uint16_t index;               // first BB (raw path)
    uint16_t bbs;
    Action action;
  };
  std::unique_ptr<Signaled[]> signaled;
  uint64_t signaled_mask = 0, signaled_posted = 0, signaled_done = 0;
  uint64_t posted = 0, done = 0;
  uint64_t reads_atomics_posted = 0, reads_atomics_done = 0;
  // Reads and atomics in flight (at most rd_depth_).
  unsigned reads_atomics() const {
    return static_cast<unsigned>(reads_atomics_posted - reads_atomics_done);
  }
  // Records the WQE just posted as signaled.
  [[gnu::always_inline]] void record_signaled(uint16_t index, uint16_t bbs, const Action &action) {
    signaled[++signaled_posted & signaled_mask] = {posted, reads_atomics_posted, index, bbs, action};
    last_signaled = posted;
  }
  // Unsignaled WQEs since the last signaled one.
  uint64_t since_signal() const { return posted - last_signaled; }
  ib::FetchAddTemplate fetch_add;  // raw path: the non-fetching add's WQE (its result discarded)
  // The inline paths' budget (try_add_inline, try_atomic_inline, try_get_inline): how many more
  // BBs of reads and atomics they may post with no other check. Nonzero only on an RC endpoint
  // of the raw path to another node's PE that the general path has used (inline_ok), with no
  // fence due and no write since the last fenced read/atomic, within the room for reads/atomics
  // in flight and for BBs and the CQ credits it took for its signaled adds; every change of
  // those recomputes it (update_add_budget).
  uint32_t add_budget = 0;
  uint32_t adds_to_signal = 1;  // try_add_inline signals the WQE that brings this to 0
  uint32_t add_credits = 0;     // CQ credits the budget took for its signaled adds, not yet used
  bool inline_ok = false;
  ib::WriteInlineTemplate write_inline;  // raw path, RC: try_put_inline's WQE
  // DC: the address vector of the peer this initiator serves (dci_for), which every WQE
  // carries; RC: none.
  mlx5_wqe_av av{};
  ib::AddressVector to{};
  std::unique_ptr<ib::WriteInlineDcTemplate> write_inline_dc;  // DC: try_put_inline's WQE
  bool put_inline_ok = false;  // an endpoint of the raw path that rma() has used for a write
  uint64_t last_signaled = 0;     // the number of the last signaled WQE
  uint64_t last_imm = 0;          // the number of the last write with immediate (check_lost)
  unsigned signal_every = 1;
  unsigned atomic_signal_every = 1;  // for reads and atomics: at most rd_depth_ / 2
  ib::RemoteAddr last_remote{};   // where quiet's zero-length write goes (verbs)
};

struct Transport::Lane {
  int id = 0;
  bool exclusive = false;
  SpinLock mutex;
  ibv_cq *cq = nullptr;
  ib::CompletionQueue ring;
  std::unique_ptr<std::atomic<Endpoint *>[]> eps;  // by PE
  std::vector<std::unique_ptr<Endpoint>> owned;
  std::unordered_map<uint32_t, Endpoint *> by_qpn;
  uint8_t *bounce = nullptr;
  ibv_mr *bounce_mr = nullptr;
  std::vector<unsigned> free_slots;
  uint64_t *replies = nullptr;  // kReplySlots + 1 (the last: non-fetching atomics' discard)
  ibv_mr *replies_mr = nullptr;
  std::vector<unsigned> free_replies;
  ib::LocalBuf discard{};  // the reply slot of atomics whose old value nobody wants
  ib::LocalBuf blocking{};  // try_atomic_inline's reply slot (one at a time: the lock is held)
  std::vector<Endpoint *> dcis;  // DC: the lane's initiators (owned too)
  size_t next_dci = 0;           // DC: where the search for an idle initiator starts
  std::atomic<uint64_t> cqes{0}, wqes{0};
  // CQ credits: the CQ's entries that no signaled WQE in flight and no unread CQE holds. A
  // signaled WQE takes one when posted and its CQE gives it back when read; with none left the
  // poster reads completions first. The CQ is shared by every QP (or initiator) of the lane and
  // an overrun puts it in error on a ConnectX (its QPs with it), however many peers there are.
  uint32_t cq_credits = 0;
};

// The lane's lock, unless the lane is exclusive (one thread only).
class LaneLock {
 public:
  explicit LaneLock(SpinLock &m, bool exclusive) : m_(exclusive ? nullptr : &m) {
    if (m_) m_->lock();
  }
  ~LaneLock() {
    if (m_) m_->unlock();
  }
  LaneLock(const LaneLock &) = delete;
  LaneLock &operator=(const LaneLock &) = delete;

 private:
  SpinLock *m_;
};

inline bool Transport::has_room(const Endpoint *ep, bool read_or_atomic) const {
  if (read_or_atomic && ep->reads_atomics() >= rd_depth_) return false;
  return raw_ ? ep->sq.free_bbs() >= kMaxWqeBbs : ep->posted - ep->done < kSendQueueDepth;
}

inline void Transport::update_add_budget(Lane *l, Endpoint *ep) const {
  l->cq_credits += ep->add_credits;  // the last budget's credits it did not use go back
  ep->add_credits = 0;
  if (!ep->inline_ok || ep->fence_next || ep->write_unfenced) {
    ep->add_budget = 0;
    return;
  }
  // has_room before each add: fewer than rd_depth_ in flight, kMaxWqeBbs BBs free.
  const int by_depth = static_cast<int>(rd_depth_) - static_cast<int>(ep->reads_atomics());
  const int by_bbs = static_cast<int>(ep->sq.free_bbs()) - static_cast<int>(kMaxWqeBbs) + 1;
  const int budget = by_depth < by_bbs ? by_depth : by_bbs;
  ep->add_budget = budget > 0 ? static_cast<uint32_t>(budget) : 0;
  // submit()'s rule for atomics: signaled when since_signal() + 1 reaches atomic_signal_every.
  const uint64_t since = ep->since_signal();
  ep->adds_to_signal = since + 1 >= ep->atomic_signal_every
                           ? 1
                           : static_cast<uint32_t>(ep->atomic_signal_every - since);
  // The signaled adds within the budget take their CQ credits now, so that try_add_inline
  // counts nothing but them; the budget ends before the first signaled add left without one.
  if (ep->add_budget >= ep->adds_to_signal) {
    uint32_t signaled = 1 + (ep->add_budget - ep->adds_to_signal) / ep->atomic_signal_every;
    if (signaled > l->cq_credits) {
      signaled = l->cq_credits;
      ep->add_budget = ep->adds_to_signal - 1 + signaled * ep->atomic_signal_every;
    }
    l->cq_credits -= signaled;
    ep->add_credits = signaled;
  }
}

// submit()'s work for one non-fetching add, from the endpoint's WQE template, with the checks
// folded into the budget: no Action, no fence (the budget is zero when one is due), a
// completion every atomic_signal_every (at most rd_depth_ / 2, which also keeps a signaled
// WQE among any rd_depth_ in flight, so that waiting for room always ends).
// Over plain verbs the quiet's zero-length write keeps going to the last address submit() saw (any
// address of the peer's registered segments will do). False, having done nothing: take
// atomic_add_nbi.
inline bool Transport::try_add_inline(LaneTable lanes, int lane, int pe, uint64_t addend,
                                      ib::RemoteAddr target) {
  Lane *l = lanes[lane].get();
  Endpoint *ep = l->eps[static_cast<size_t>(pe)].load(std::memory_order_acquire);
  if (!ep) [[unlikely]]
    return false;
  if (!l->exclusive && !l->mutex.try_lock()) [[unlikely]]
    return false;
  if (ep->add_budget == 0) [[unlikely]] {
    l->mutex.unlock();
    return false;
  }
  --ep->add_budget;
  const uint16_t index = ep->sq.ring().pi;
  void *wqe = ep->sq.next_bb();
  const uint64_t first8 = ep->fetch_add.write(wqe, index, addend, target);
  const bool idle = ep->done == ep->posted;
  ++ep->posted;
  ++ep->reads_atomics_posted;
  if (--ep->adds_to_signal == 0) [[unlikely]] {
    ib::FetchAddTemplate::set_signaled(wqe);
    --ep->add_credits;  // taken by update_add_budget
    ep->record_signaled(index, 1, Action{});
    ep->adds_to_signal = ep->atomic_signal_every;
  } else if (idle && l->cq_credits) {  // signal_when_idle
    ib::FetchAddTemplate::set_signaled(wqe);
    --l->cq_credits;
    ep->record_signaled(index, 1, Action{});
  }
  ep->sq.post_one(first8, index);
  l->mutex.unlock();  // a store of "free": on an exclusive lane it was free already
  return true;
}

// The inline read's or atomic's share of the budget, with the lane's lock: the BBs of a WQE of
// `segments` (an RC WQE's; over DC the address vector's are added) and, when it is signaled (*signal on entry: it must be, for a wait; on return:
// it is), a CQ credit, the budget's own when its signal count falls due here. False, nothing
// taken and no lock held: take the general path.
[[gnu::always_inline]] inline bool Transport::take_budget(Lane *l, Endpoint *ep,
                                                          unsigned segments, bool *signal) {
  if (!ep) [[unlikely]]
    return false;
  if (!l->exclusive && !l->mutex.try_lock()) [[unlikely]]
    return false;
  const uint32_t bbs = (segments + ep->to.segments + 3) / 4;
  if (ep->add_budget < bbs || (*signal && l->cq_credits == 0)) [[unlikely]] {
    l->mutex.unlock();
    return false;
  }
  ep->add_budget -= bbs;
  if (--ep->adds_to_signal == 0) [[unlikely]] {  // the budget took this one's credit
    *signal = true;
    --ep->add_credits;
    ep->adds_to_signal = ep->atomic_signal_every;
  } else if (*signal || (ep->done == ep->posted && l->cq_credits)) {  // signal_when_idle
    *signal = true;
    --l->cq_credits;
  }
  return true;
}

// try_add_inline's budget and rules for any atomic whose encoding the job's devices have (the
// caller checked): with `old`, a blocking fetch, signaled, its CQ credit taken here,
// waited for under the lane's lock (finish_fetch, as atomic() does); without, non-fetching.
// False, having done nothing: take atomic() or atomic_nbi().
inline bool Transport::try_atomic_inline(Transport *t, int lane, int pe,
                                         const atomics::HcaAtomic &a, ib::RemoteAddr target,
                                         uint64_t *old) {
  Lane *l = t->lanes_[static_cast<size_t>(lane)].get();
  Endpoint *ep = l->eps[static_cast<size_t>(pe)].load(std::memory_order_acquire);
  // Control, remote address, the operation's segments (two for an 8-byte masked compare-swap),
  // the reply's data segment.
  bool signal = old != nullptr;
  if (!take_budget(l, ep,
                   3 + (a.opcode == atomics::HcaOpcode::MaskedCompareSwap && a.size == 8 ? 2 : 1),
                   &signal)) [[unlikely]]
    return false;
  const uint16_t index = ep->sq.ring().pi;
  const unsigned bbs = ib::write_atomic(ep->sq.ring(), a, old ? l->blocking : l->discard, target,
                                        {signal, false}, ep->to);
  const uint64_t seq = ++ep->posted;
  ++ep->reads_atomics_posted;
  if (signal) ep->record_signaled(index, static_cast<uint16_t>(bbs), Action{});
  ep->sq.post(bbs);
  if (old) *old = t->finish_fetch(l, ep, seq, a.size);
  l->mutex.unlock();
  return true;
}

// A blocking RDMA read of at most kInlineGetBytes into the lane's blocking slot, copied to
// `dest` when it completes: the budget's rules, signaled, waited for under the lane's lock.
inline bool Transport::try_get_inline(Transport *t, int lane, int pe, void *dest,
                                      uint32_t length, ib::RemoteAddr source) {
  Lane *l = t->lanes_[static_cast<size_t>(lane)].get();
  Endpoint *ep = l->eps[static_cast<size_t>(pe)].load(std::memory_order_acquire);
  bool signal = true;  // control, remote address, data
  if (!take_budget(l, ep, 3, &signal)) [[unlikely]]
    return false;
  const uint16_t index = ep->sq.ring().pi;
  const unsigned bbs =
      ib::write_rdma_read(ep->sq.ring(), l->blocking, length, source, {true, false}, ep->to);
  const uint64_t seq = ++ep->posted;
  ++ep->reads_atomics_posted;
  ep->record_signaled(index, static_cast<uint16_t>(bbs), Action{});
  ep->sq.post(bbs);
  t->wait_for(l, ep, seq);
  memcpy(dest, reinterpret_cast<const void *>(l->blocking.addr), length);
  l->mutex.unlock();
  return true;
}

// submit()'s work for one inline write of at most max_inline() bytes (from the endpoint's template
// up to WriteInlineTemplate::kMaxBytes), with its checks in the order submit() makes them: no fence
// due, room for the largest WQE, a CQ credit when this one is signaled (every signal_every, or the
// queue was idle: signal_when_idle). Writes need neither a read/atomic slot nor a fence of their
// own; after one, the next read or atomic must be fenced, so the add budget ends
// (update_add_budget's rule). False, having done nothing: take put().
template <bool Dc>
inline bool Transport::try_put_inline(LaneTable lanes, int lane, int pe, const void *data,
                                      uint32_t length, ib::RemoteAddr target) {
  Lane *l = lanes[lane].get();
  Endpoint *ep = l->eps[static_cast<size_t>(pe)].load(std::memory_order_acquire);
  if (!ep || !ep->put_inline_ok) [[unlikely]]
    return false;
  if (!l->exclusive && !l->mutex.try_lock()) [[unlikely]]
    return false;
  const bool signal = ep->since_signal() + 1 >= ep->signal_every ||
                      (ep->done == ep->posted && l->cq_credits);  // signal_when_idle
  if (ep->fence_next || ep->sq.free_bbs() < kMaxWqeBbs || (signal && l->cq_credits == 0))
    [[unlikely]] {
    l->mutex.unlock();
    return false;
  }
  const uint16_t index = ep->sq.ring().pi;
  void *wqe = ep->sq.next_bb();
  unsigned bbs = 1;
  uint64_t first8 = 0;
  const bool templated = length <= ib::WriteInlineTemplate::kMaxBytes;
  if (!templated)  // longer (up to max_inline(), the caller checked): the writer, 2-4 BBs
    bbs = ib::write_rdma_write_inline(ep->sq.ring(), data, length, target, {signal, false},
                                      ep->to);
  else if constexpr (Dc)  // the address vector first
    bbs = ep->write_inline_dc->write(ep->sq.ring(), data, length, target, signal);
  else
    first8 = ep->write_inline.write(wqe, index, data, length, target, signal);
  ++ep->posted;
  if (signal) [[unlikely]] {
    --l->cq_credits;
    ep->record_signaled(index, static_cast<uint16_t>(bbs), Action{});
  }
  ep->write_unfenced = true;
  ep->last_remote = target;
  if (ep->add_budget) [[unlikely]] {  // update_add_budget with a write unfenced
    l->cq_credits += ep->add_credits;
    ep->add_credits = 0;
    ep->add_budget = 0;
  }
  if (Dc || !templated)
    ep->sq.post(wqe, bbs);
  else
    ep->sq.post_one(first8, index);
  l->mutex.unlock();  // a store of "free": on an exclusive lane it was free already
  return true;
}

}  // namespace hoshmem::rc
