// lib/transport/rc: RDMA over reliable-connected queue pairs, one per peer and lane that is
// actually used, connected on first use.
//
// Connections. What a PE publishes at startup is O(1): its port's LID and GID and the number of
// one UD queue pair, its connection manager (PeerAddress). The first operation of a lane to a
// peer creates that lane's RC QP for it and sends the peer a request datagram {PE, lane, QP
// number, LID, GID}; the peer's connection thread, asleep on a completion channel, connects a QP
// of its own and answers with its number. Requests are resent until answered (UD may drop them).
// Lane 0's QPs are used from both ends (two PEs that connect to each other at once end with one
// pair); a request for another lane gets a responder-only QP on the peer (it never sends), kept
// until shutdown or until the same (PE, lane) connects again with a new QP: close_lane destroys
// only this PE's side and leaves the peer's idle.
//
// Lanes. A lane is a set of QPs (one per peer), one CQ, bounce buffers, reply slots and a lock.
// Lane 0 always exists and is always locked (the connection thread adds QPs to it); a lane opened
// `exclusive` is used by one thread only and takes no lock anywhere on its path.
//
// Data path. WQEs are written straight into the send queue as mlx5 WQEs (lib/transport/ib/wqe.h)
// and completions read from the CQ ring by owner bit; on a device that is not mlx5, or with
// HOSHMEM_RC_VERBS=1, the same operations go through ibv_post_send/ibv_poll_cq and only the
// standard 8-byte atomics (the device then reports no masked atomics). Messages are split at the
// port's max_msg_sz. A put of at most max_inline() bytes travels inline; a source in memory the
// library registered (add_registered) goes zero-copy; other memory goes through the lane's
// pre-registered bounce slots (copy the next chunk while the previous one is on the wire), or,
// from the cache threshold up (kCacheThreshold unless HOSHMEM_RC_CACHE_MIN says otherwise; 0:
// off), through a registration cache. Cache entries are whole pages, reference-counted by the
// WQEs that use them; a lookup hits only a live entry whose page range covers the buffer (else it
// registers anew). A registration pins the pages it covers, so an address that comes back with
// other pages (freed and allocated again, unmapped and mapped again) must never hit the old
// entry: real hardware would move the old pages' bytes. So init() subscribes to the process's
// memory-release events (lib/base/memory_events.h: libc's munmap, mremap, madvise, mmap and brk
// are patched, which catches glibc's free, realloc and malloc_trim too), and every release marks
// the entries overlapping it dead before the pages go; forget() does the same for a range the
// caller names. A release arrives on whatever thread frees, maybe inside malloc: it never blocks
// and never deregisters. It takes the cache lock only with try_lock, else (another thread, or
// this one inside ibv_reg_mr, holds it) it leaves the range for the holder, which applies it
// before any lookup; dead entries are deregistered by the next lookup or by their last release.
// If the hooks cannot be installed (not glibc on x86-64, code not as expected, text not
// writable), the cache stays off; if another library overwrites them later (checked at every
// lookup), it drops every entry and stays off. SHMEM_INFO says which. The library's own heap and
// globals are registered once (add_registered), never cached.
// A blocking zero-copy put waits for its completion; a bounce put returns once copied. A get into
// unregistered memory is copied out of its bounce slot when its completion is read.
// The threshold (kCacheThreshold, 64 KiB) is measured over softhca (rc_lanes_test --bench,
// blocking put + quiet from malloc'ed memory, 2 cores, the model executing doorbells in their
// fault): at 64 KiB a cache hit takes 0.64x the bounce path and a miss (register + deregister)
// 1.6x; at 128 KiB a hit 0.5x and a miss 1.04x (at 32 KiB a hit gains nothing). Real HCAs pin
// pages at registration, which makes misses dearer, and skip the bounce copy's memcpy, which
// makes hits better; caching starts where fewer than two hits repay one miss.
//
// Signaling. Only every kSignalEvery-th WQE asks for a completion, plus every WQE that carries a
// bounce slot, a cache reference or a fetch result; completions of a QP come in order, so one
// CQE retires every earlier WQE of that QP. On the inline paths (the API's small operations) a
// WQE posted to a queue with nothing in flight is signaled too (signal_when_idle): an operation
// followed by quiet, the latency-bound pattern, then needs nothing more, while a burst still asks
// for one completion in kSignalEvery. quiet posts a signaled, fenced NOP (plain verbs: a
// zero-length write) when the last WQE of a QP went unsignaled: one more doorbell. The general
// path does not signal when idle: the library's own messages (collectives' stores) measured
// slower with it on the software HCA (barrier_all 10 -> 14 us), and a latency-bound user
// operation takes the inline paths. A lane's QPs (or initiators) share its CQ, and an overrun
// CQ goes to error on a ConnectX, so the lane counts credits as UCX does: each signaled WQE
// takes one of the CQ's entries and its CQE, read, gives it back; with none left the poster
// reads completions first. The inline add takes its credits ahead, with its budget.
//
// Ordering. IB lets an RDMA read or atomic pass earlier RDMA writes of the same QP unless it
// carries the fence flag. A read or atomic posted after an unfenced write on the same QP gets the
// flag automatically (a get after a put sees the put; put then atomic signal stays ordered), and
// fence(lane, pe) sets it on the next WQE to that peer whatever it is.
//
// DC. The same engine drives DC initiators (lib/transport/dc) instead of RC queue pairs once
// use_dc() is called: every PE has one DC target, published with its address at init, and each
// lane a pool of HOSHMEM_DCI_COUNT initiators whose WQEs carry the target's address vector. A
// peer keeps the initiator it is using while it has operations outstanding on it (so fence,
// put-then-signal and "a read sees my earlier write" keep holding: they are orders within one
// queue); once they are complete the initiator may go to another peer (the next idle one in
// turn). With none idle, every initiator is asked for a completion of its last WQE and the first
// to finish goes to the new peer. There is no connection: no connection thread, no per-peer queue
// pair, the same per-PE cost at any job size. DC needs the mlx5 WQE path (not HOSHMEM_RC_VERBS).
//
// Errors. An error completion (peer gone: retries exceeded, flushed) or a connection that is not
// answered within 10 s calls the ErrorHandler once, naming the PE.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lib/atomics/hca_encoding.h"
#include "lib/transport/dc/dc.h"
#include "lib/transport/ib/device.h"
#include "lib/transport/ib/queue.h"
#include "lib/transport/ib/wqe.h"

namespace hoshmem::rc {

// Whether a failure `cause` passed to the error handler means the peer stopped answering (it
// died or became unreachable) rather than that the operation itself was wrong: those causes,
// and only those, start with "no answer".
inline bool means_peer_lost(const char *cause) { return std::strncmp(cause, "no answer", 9) == 0; }

// What every PE publishes for the others (through the bootstrap's exchange).
struct PeerAddress {
  uint16_t lid;
  ibv_gid gid;
  uint32_t cm_qpn;  // the connection manager's UD QP
  uint32_t dct;     // its DC target (0: none, DC cannot be used with it)
  uint8_t mtu;      // its port's active MTU (enum ibv_mtu): a path's is the smaller end's
  uint8_t rd_atomic;  // reads/atomics its QPs take in flight as responder (max_dest_rd_atomic)
};

// Called with the peer and a one-line cause when an operation to it fails (the QP is then in
// error) or it cannot be reached: the library makes that fatal. It must not return.
using ErrorHandler = void (*)(int pe, const char *cause);

class Transport {
  struct Lane;

 public:
  // The lanes by number (a table of fixed size for the transport's life).
  using LaneTable = const std::unique_ptr<Lane> *;
  static constexpr size_t kCacheThreshold = 64 * 1024;  // unregistered: cache from here up
  // A queue pair's wait for an acknowledgement before it sends again (HOSHMEM_RC_TIMEOUT):
  // 4.096 us * 2^18 = 1.07 s (UCX's default is 1 s), 7 tries: a peer that is only slow (a loaded
  // node, a 1 MiB zero-copy message through a software HCA) is not declared dead.
  static constexpr uint8_t kDefaultAckTimeout = 18;
  static constexpr unsigned kSignalEvery = 16;
  static constexpr int kLaneCqEntries = 4096;  // a lane's CQ, as asked (mlx5 gives 8191)

  Transport();
  Transport(const Transport &) = delete;
  Transport &operator=(const Transport &) = delete;
  ~Transport();

  // Creates lane 0 and the connection manager and starts its thread. `device` outlives this.
  // HOSHMEM_RC_VERBS=1 selects the plain-verbs path on an mlx5 device (and clears its masked
  // atomics); HOSHMEM_RC_CACHE_MIN overrides the registration cache's threshold (0: off). With
  // the cache on, subscribes to memory-release events (installing libc's hooks on first use);
  // without them the cache stays off (cache_description() says why).
  // `dc_key` != 0: also open this PE's DC target with that access key, when the device has DC
  // (dc_target_why() says why not), so that use_dc() can be chosen after the exchange.
  // `arrivals` != 0: every QP (and the DC target) receives into one SRQ of that many receives,
  // whose completions (writes with immediate from peers: put_inline_notify) land on one CQ
  // with a completion channel (arrivals_fd), for a thread that sleeps until a peer writes.
  bool init(ib::Device *device, int me, int npes, ErrorHandler on_error, std::string *why,
            uint64_t dc_key = 0, unsigned arrivals = 0);
  const std::string &dc_target_why() const { return dc_why_; }
  // Switches to DC before any operation: every peer's address must have a DC target. Stops the
  // connection manager; each lane then has `dcis` initiators. False with *why on failure.
  bool use_dc(unsigned dcis, std::string *why);
  // RC was chosen: releases the DC target init() opened (its DCT, SRQ and CQ), if any.
  void close_dc_target() { dct_.reset(); }
  bool dc() const { return dc_; }
  unsigned dci_count() const { return dci_count_; }
  // What this PE's transport holds now: queue pairs (of lanes, responder-only, the DC target,
  // the connection manager); bytes of their send queues and the state kept with them (rings of
  // signaled WQEs), of lanes' completion queues, bounce and reply buffers; and bytes kept for
  // every PE of the job whether used or not (addresses, endpoint slots).
  struct Footprint {
    size_t queue_pairs = 0;
    size_t queue_bytes = 0;
    size_t lane_bytes = 0;
    size_t bytes_per_peer = 0;
  };
  Footprint footprint() const;
  PeerAddress address() const;
  void set_peer(int pe, const PeerAddress &address);
  // Stops the connection thread, destroys every QP of every lane and every cache entry.
  void shutdown();

  // Memory the transport may use zero-copy (the library registers it and gives the lkey).
  void add_registered(const void *base, size_t length, uint32_t lkey);
  // Drops the registration cache's entries that overlap [base, base + length): memory freed.
  // (Releases through libc are seen without it; this is for a range the caller knows of.)
  void forget(const void *base, size_t length);

  int open_lane(bool exclusive);  // -1 when no more lanes can be opened
  void close_lane(int lane);

  void put(int lane, int pe, const void *source, size_t length, const ib::RemoteAddr &dest,
           bool nbi);
  void get(int lane, int pe, void *dest, size_t length, const ib::RemoteAddr &source, bool nbi);
  uint64_t atomic(int lane, int pe, const atomics::HcaAtomic &a, const ib::RemoteAddr &target);
  void atomic_nbi(int lane, int pe, const atomics::HcaAtomic &a, const ib::RemoteAddr &target,
                  void *fetch_out);
  // A masked atomic of 16-256 bytes (op MaskedCompareSwap or MaskedFetchAdd, operands as
  // atomics::hca_wide_operands wrote them), blocking: its `size` result bytes, as the HCA
  // returns them (big-endian words), land in `result`. Only when the device has that size.
  void atomic_wide(int lane, int pe, atomics::HcaOpcode op, unsigned size,
                   const uint8_t *operands, uint32_t operand_bytes, const ib::RemoteAddr &target,
                   uint8_t *result);
  // atomic_nbi of a 64-bit add whose old value nobody wants (shmem_*_atomic_add and _inc to
  // another node).
  void atomic_add_nbi(int lane, int pe, uint64_t addend, const ib::RemoteAddr &target);
  // The same, inline and short (rc_lane.h): the API calls it first and takes the general path
  // when it returns false. It posts only to an endpoint that atomic_add_nbi has used, while the
  // endpoint's add budget lasts (add_budget: room, no fence due). `lanes`: lane_table(), which
  // the caller keeps (one load less on the way).
  [[gnu::always_inline]] static inline bool try_add_inline(LaneTable lanes, int lane, int pe,
                                                           uint64_t addend,
                                                           ib::RemoteAddr target);
  // The same for a put of 1 to max_inline() bytes (p, put, put_nbi of small sizes to another node;
  // up to WriteInlineTemplate::kMaxBytes from the endpoint's template): an endpoint of the raw path
  // that put() has used (over DC, the initiator the peer keeps), with room and no fence due. The
  // data is in the WQE when it returns true.
  template <bool Dc>  // the lane's endpoints are DC initiators
  [[gnu::always_inline]] static inline bool try_put_inline(LaneTable lanes, int lane, int pe,
                                                           const void *data, uint32_t length,
                                                           ib::RemoteAddr target);
  // The same for any atomic whose encoding every PE's device has: blocking with `old` (the old value lands there), else
  // non-fetching. The endpoint must be one an atomic to another node's PE has used
  // (allow_inline).
  [[gnu::always_inline]] static inline bool try_atomic_inline(Transport *t, int lane, int pe,
                                                              const atomics::HcaAtomic &a,
                                                              ib::RemoteAddr target,
                                                              uint64_t *old);
  // A blocking get of at most kInlineGetBytes, by the same rules.
  static constexpr uint32_t kInlineGetBytes = 64;
  [[gnu::always_inline]] static inline bool try_get_inline(Transport *t, int lane, int pe,
                                                           void *dest, uint32_t length,
                                                           ib::RemoteAddr source);
  // The general path's word that `pe` is on another node: the inline paths may post to its
  // endpoint of `lane` from now on (RC, raw WQEs).
  void allow_inline(int lane, int pe);
  LaneTable lane_table() const { return lanes_.data(); }
  void fence(int lane, int pe);
  void fence_all(int lane);
  void quiet(int lane);
  void pe_quiet(int lane, const int *pes, size_t npes);

  // Lane 0, as before lanes: put/put_inline complete at quiet(); get and atomic on return.
  void put(int pe, const ib::LocalBuf &source, uint32_t length, const ib::RemoteAddr &dest);
  void put_inline(int pe, const void *source, uint32_t length, const ib::RemoteAddr &dest);
  // Several puts, in order, with one doorbell (the raw path): a payload and the word that
  // announces it cost one doorbell, not two. Each source is reusable on return: up to
  // max_inline() bytes travel in the WQE, longer ones (up to max_batch_write()) are copied to a
  // bounce slot first.
  struct BatchWrite {
    const void *source;
    uint32_t length;
    ib::RemoteAddr dest;
  };
  void put_all(int pe, const BatchWrite *writes, size_t n);
  static size_t max_batch_write();
  // The same as a write with immediate `imm`: an arrival at `pe` (init's `arrivals`), after
  // every earlier write of lane 0 to it. At most max_inline() bytes.
  void put_inline_notify(int pe, const void *source, uint32_t length, const ib::RemoteAddr &dest,
                         uint32_t imm);
  // Arrivals (init's `arrivals`): the channel's descriptor (readable once armed and a write
  // with immediate came, until its event is taken), arm it, take its events, and read the
  // completions while giving their receives back (the number read). Any thread.
  int arrivals_fd() const { return arrivals_channel_ ? arrivals_channel_->fd : -1; }
  void arm_arrivals();
  unsigned take_arrival_events();  // what made the descriptor readable, acknowledged
  unsigned drain_arrivals();
  void get(int pe, const ib::LocalBuf &dest, uint32_t length, const ib::RemoteAddr &source);
  uint64_t atomic(int pe, const atomics::HcaAtomic &a, const ib::RemoteAddr &target) {
    return atomic(0, pe, a, target);
  }
  void fence(int pe) { fence(0, pe); }
  void quiet() { quiet(0); }

  uint32_t max_inline() const { return max_inline_; }
  int connected_peers() const;  // lane 0
  bool raw_wqes() const { return raw_; }  // mlx5 WQEs (else ibv_post_send)
  // Unregistered transfers of at least this many bytes use the registration cache
  // (kCacheThreshold, or HOSHMEM_RC_CACHE_MIN bytes; SIZE_MAX: off).
  size_t cache_threshold() const { return cache_min_; }
  unsigned ack_timeout() const { return ack_timeout_; }
  // One line for SHMEM_INFO: the threshold and how released memory is seen, or why it is off.
  std::string cache_description() const;
  struct Stats {
    uint64_t cqes = 0, wqes = 0;          // completions read, WQEs completed (every lane)
    uint64_t cache_hits = 0, cache_misses = 0;
  };
  Stats stats() const;

 private:
  struct Endpoint;
  struct CacheEntry;
  struct Action;
  struct Wqe;

  Lane *lane_of(int lane);
  Endpoint *endpoint(Lane *lane, int pe);  // connected (or on_error, which does not return)
  // The queue operations to `pe` go on, with the lane's lock held: RC, the endpoint endpoint()
  // returned; DC, the initiator `pe` keeps or one that is idle.
  Endpoint *queue_for(Lane *lane, int pe, Endpoint *rc) { return dc_ ? dci_for(lane, pe) : rc; }
  Endpoint *dci_for(Lane *lane, int pe);
  Endpoint *find_or_create_locked(Lane *lane, int pe);
  std::unique_ptr<Endpoint> make_endpoint(Lane *lane, ibv_qp *qp);
  ibv_qp *create_qp(ibv_cq *cq);
  bool connect_qp(ibv_qp *qp, uint32_t remote_qpn, const PeerAddress &peer);
  ibv_ah *ah_for(int pe);
  void send_cm(int pe, uint8_t type, uint16_t lane, uint32_t qpn, uint32_t answers);
  void cm_loop();
  bool drain_cm();
  void handle_cm(const uint8_t *message);
  void post_cm_receive(unsigned slot);
  bool make_lane(Lane *lane, std::string *why);
  void open_dc_target(uint64_t key);
  void stop_cm();  // the connection thread and its UD QP
  void destroy_lane(Lane *lane);

  // The send path (the lane's lock held, if any).
  // Writes and posts one WQE; with `doorbell` false it is only staged (SendQueue::stage), and the
  // caller's next submit on `ep`, before it lets go of the lane, rings for both.
  uint64_t submit(Lane *lane, Endpoint *ep, const Wqe &w, const Action &action, bool signal,
                  bool doorbell = true);
  [[gnu::always_inline]] static inline bool take_budget(Lane *lane, Endpoint *ep,
                                                       unsigned segments, bool *signal);
  void wait_for(Lane *lane, Endpoint *ep, uint64_t seq);
  // try_atomic_inline's blocking fetch: waits for WQE `seq` and returns the old value.
  uint64_t finish_fetch(Lane *lane, Endpoint *ep, uint64_t seq, unsigned size);
  // Room on `ep` for one more WQE (and, for a read or atomic, one more in flight: the QP's
  // max_rd_atomic); wait_for_room reads completions until there is.
  inline bool has_room(const Endpoint *ep, bool read_or_atomic) const;
  void wait_for_room(Lane *lane, Endpoint *ep, bool read_or_atomic);
  // A signaled WQE needs a CQ credit (Lane::cq_credits): reads completions until one is free.
  void wait_for_credit(Lane *lane);
  // Recomputes ep->add_budget after anything that changes its room or its fence state.
  inline void update_add_budget(Lane *lane, Endpoint *ep) const;
  bool progress(Lane *lane);  // reads completions; true if any
  void retire(Lane *lane, Endpoint *ep, uint64_t id, bool by_seq);
  void complete(Lane *lane, const Action &action);
  void quiet_endpoint(Lane *lane, Endpoint *ep);
  uint64_t ask_completion(Lane *lane, Endpoint *ep);
  unsigned take_slot(Lane *lane);
  uint32_t lkey_of(const void *p, size_t length) const;  // 0: not registered
  CacheEntry *cache_lookup(Lane *lane, const void *p, size_t length);
  void cache_release(CacheEntry *e);
  // memory_events callback: marks what overlaps [base, base + length) dead, or defers it.
  static void on_release(void *self, const void *base, size_t length);
  void defer_release(uintptr_t start, uintptr_t end);
  // With cache_mutex_ held: mark dead, apply the deferred releases, deregister the dead.
  void invalidate_locked(uintptr_t start, uintptr_t end);
  void take_deferred_locked();
  void reap_locked();
  [[noreturn]] void fail(int pe, const char *cause);
  void check_lost(Endpoint *ep, uint64_t seq, std::chrono::steady_clock::time_point &since);
  void rma(Lane *lane, int pe, bool write, void *local, size_t length,
           const ib::RemoteAddr &remote, bool nbi);

  ib::Device *dev_ = nullptr;
  int me_ = -1, npes_ = 0;
  ErrorHandler on_error_ = nullptr;
  uint32_t max_inline_ = 0;
  uint32_t max_msg_ = 0;
  bool raw_ = true;
  // kCacheThreshold is the measured size from which the cache pays; SIZE_MAX: off (set to 0, or
  // no memory-release hooks: a cached registration could then outlive the pages it pinned).
  size_t cache_min_ = kCacheThreshold;
  uint8_t ack_timeout_ = kDefaultAckTimeout;  // HOSHMEM_RC_TIMEOUT
  int cq_entries_ = kLaneCqEntries;            // HOSHMEM_RC_CQ_SIZE: asked for each lane's CQ
  bool cache_hooked_ = false;  // subscribed to memory_events
  std::string cache_off_;      // why the cache is off
  std::vector<PeerAddress> peers_;
  std::atomic<bool> failed_{false};
  // DC: this PE's target, the peers' address vectors, initiators per lane.
  bool dc_ = false;
  unsigned dci_count_ = 0;
  std::unique_ptr<dc::Target> dct_;
  ibv_mtu dc_path_mtu_ = IBV_MTU_256;  // DC initiators: the smallest port MTU of the job
  // Reads and atomics in flight per QP or initiator (max_rd_atomic): what this device allows
  // (max_qp_init_rd_atom), no more than any peer takes as responder, at most kMaxInitiatorDepth.
  unsigned rd_depth_ = 16;
  unsigned responder_depth() const;
  dc::Addresses dc_addresses_;
  std::string dc_why_;

  std::vector<std::unique_ptr<Lane>> lanes_;  // fixed size; slots filled under cm_mutex_
  struct Registered {
    uintptr_t base;
    size_t length;
    uint32_t lkey;
  };
  static constexpr unsigned kMaxRegistered = 16;
  Registered registered_[kMaxRegistered] = {};
  std::atomic<unsigned> nregistered_{0};

  // Registration cache, shared by the lanes (taken only for large unregistered transfers).
  std::mutex cache_mutex_;
  std::vector<CacheEntry *> cache_;  // live and dead (still held by WQEs, or not yet reaped)
  size_t cache_bytes_ = 0;           // live entries' pages
  std::atomic<size_t> cache_live_{0};  // live entries: a release with nothing to hit returns
  bool hooks_lost_ = false;          // another library replaced the hooks: everything dropped
  std::atomic<uint64_t> cache_hits_{0}, cache_misses_{0};
  // Releases that found cache_mutex_ taken, for its holder (or the next lookup) to apply; when
  // full, or contended for long, everything is dropped instead (always correct).
  static constexpr unsigned kDeferred = 32;
  std::atomic_flag deferred_lock_;  // clear (C++20)
  struct Range {
    uintptr_t start, end;
  };
  Range deferred_[kDeferred];
  unsigned ndeferred_ = 0;
  std::atomic<bool> deferred_any_{false}, deferred_all_{false};
  friend struct CacheTestAccess;
  friend struct PathMtuTestAccess;  // test/ib/rc_transport_test.cc reads a QP's path MTU  // test/ib/rc_lanes_test.cc holds cache_mutex_ to force deferral

  // Arrivals: writes with immediate from peers, on every QP and the DC target.
  ibv_comp_channel *arrivals_channel_ = nullptr;
  ibv_cq *arrivals_cq_ = nullptr;
  ibv_srq *arrivals_srq_ = nullptr;
  std::mutex arrivals_mutex_;
  bool open_arrivals(unsigned depth, std::string *why);
  void close_arrivals();

  // Connection manager side
  ibv_comp_channel *cm_channel_ = nullptr;
  int cm_wake_ = -1;  // eventfd: stop_cm wakes the connection thread without the network
  std::atomic<unsigned> cm_sends_{0};  // datagrams sent: every 16th asks for a completion
  ibv_cq *cm_cq_ = nullptr;
  ibv_qp *cm_qp_ = nullptr;
  ibv_mr *cm_mr_ = nullptr;
  uint8_t *cm_buf_ = nullptr;  // receive slots
  ib::AddressHandles ahs_;
  ibv_cq *passive_cq_ = nullptr;  // responder-only QPs of other PEs' lanes
  struct Passive {
    ibv_qp *qp;
    uint32_t remote_qpn;
  };
  std::map<std::pair<int, int>, Passive> passive_;  // (PE, its lane)
  std::thread cm_thread_;
  mutable std::mutex cm_mutex_;  // connection state, lanes_ slots, passive_
  std::condition_variable cm_changed_;
  bool stopping_ = false;
};

}  // namespace hoshmem::rc

#include "lib/transport/rc/rc_lane.h"  // IWYU pragma: export
