// lib/core: active messages over UD or the receive ring (messages.h).
#include "lib/core/messages.h"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "lib/atomics/cpu_atomics.h"
#include "lib/atomics/wide.h"
#include "lib/core/accumulate.h"
#include "lib/core/hybrid_lock.h"
#include "lib/core/rdma.h"
#include "lib/core/runtime.h"
#include "lib/transport/net/peer.h"
#include "lib/transport/ring/transport.h"
#include "lib/transport/shm/control_block.h"
#include "lib/transport/ud/ud_transport.h"

namespace hoshmem {
namespace {

constexpr char kAddressKey[] = "hoshmem.ud";

struct AddressRecord {
  uint8_t ok;
  int32_t server;  // the PE that serves this PE's messages (HOSHMEM_PROGRESS=node: its node's first)
  ud::PeerAddress address;
  char why_not[96];
};

enum MessageType : uint8_t {
  kAmo = 1, kPut = 2, kGet = 3, kAccumulate = 4, kWideAmo = 5, kLock = 6
};
// Where a message's bytes are on the target: an offset in its "file" (control area, then heap, one
// address range: the same layout on every PE) or in its globals.
enum Segment : uint8_t { kFile = 0, kGlobals = 1 };

// Both ends are the same build on hosts of the same byte order (little-endian x86-64): fields
// travel in host order. `target` is the PE whose memory a request is for: the PE it was sent to,
// or (HOSHMEM_PROGRESS=node) a PE of the node that PE serves.
struct Place {
  uint8_t type;
  uint8_t segment;
  uint16_t reserved;
  uint32_t length;  // kPut: bytes that follow; kGet: bytes wanted
  uint64_t offset;
  int32_t target;
  uint32_t reserved2;
};
// An AMO on the target's word.
struct AmoMessage {
  Place place;
  uint8_t op;    // atomics::AmoOp
  uint8_t size;  // 4 or 8
  uint8_t reserved[6];
  uint64_t operand, compare;
  uint64_t mask, mask2;  // the masked operations' (AmoRequest)
};

// An accumulate the target computes (lib/core/accumulate.h, owner computes): the elements follow.
struct AccumulateMessage {
  Place place;      // length: bytes of elements that follow
  uint8_t type;     // acc::Type
  uint8_t op;       // acc::Op
  uint8_t locked;   // the sender holds the stripe locks (all-HW mode): apply at once
  uint8_t reserved[5];
};
// Its reply: one byte.
enum AccumulateStatus : uint8_t { kRefused = 0, kApplied = 1, kBusy = 2 };

// A masked atomic of 16-256 bytes the target computes under its stripe locks (place.length: the
// size): the operands follow, as atomics::WideRequest's a, b (and c, d for compare-swap). Its
// reply: an AccumulateStatus byte, then the old bytes when applied.
struct WideAmoMessage {
  Place place;
  uint8_t op;  // atomics::AmoOp
  uint8_t reserved[7];
};

// A request to the manager of a hybrid lock homed on the target (lib/core/hybrid_lock.h). Its
// reply: one hybrid_lock::Answer byte.
struct LockMessage {
  uint8_t type;     // kLock
  uint8_t request;  // hybrid_lock::Request
  uint8_t reserved[2];
  int32_t target;   // the lock's home (Place::target)
  uint64_t key;     // the lock's place in the symmetric segment
};

[[noreturn]] void ud_failed(int pe, const char *cause) {
  fatal("UD", "messages to PE %d failed: %s", pe, cause);
}

[[noreturn]] void ring_failed(int pe, const char *cause) {
  if (pe == rt.me) fatal("ring", "%s", cause);
  fatal("ring", "messages to PE %d failed: %s", pe, cause);
}

// The messages' AMO backend and request handler, over either port (UD or the ring).
class MessageAtomics final : public atomics::AtomicBackend, public net::RequestHandler {
 public:
  const char *name() const override {
    return ring ? "CPU atomics of the target PE, through its receive ring"
                : "CPU atomics of the target PE, over UD";
  }

  void execute(const atomics::AmoRequest &r, bool nbi) override {
    AmoMessage m{};
    m.place = user_place(kAmo, r.target, r.size, r.pe, r.routine);
    m.op = static_cast<uint8_t>(r.op);
    m.size = r.size;
    m.operand = r.operand;
    m.compare = r.compare;
    m.mask = r.mask;
    m.mask2 = r.mask2;
    if (!r.fetch_out) return port->post(via(r.pe), &m, sizeof m);
    if (nbi) return port->call_nbi(via(r.pe), &m, sizeof m, r.fetch_out, r.size);
    port->call(via(r.pe), &m, sizeof m, r.fetch_out, r.size);
  }

  // With RMA over RC and AMOs as messages, quiet completes both, and fence too, since neither
  // transport orders its operations with the other's. With everything over UD, requests to a PE
  // are executed in the order they were sent: a fence has nothing to do.
  void quiet(int lane) override {
    if (!rma_over_ud) rdma_quiet(lane);
    port->quiet();
  }
  void fence(int lane, int pe) override {
    if (rma_over_ud) return;
    if (pe < 0)
      rdma_quiet(lane);
    else
      rdma_pe_quiet(lane, &pe, 1);
    port->quiet();
  }
  void pe_quiet(int lane, const int *pes, size_t npes) override {
    if (!rma_over_ud) rdma_pe_quiet(lane, pes, npes);
    port->quiet();
  }

  // RMA over UD, split into messages of at most max_message() bytes. A put returns once its
  // bytes are copied (complete at quiet); a get waits for its replies, or with `nbi` leaves
  // them to arrive by quiet.
  void put(int pe, void *sym, const void *source, size_t bytes) {
    const size_t chunk = port->max_message() - sizeof(Place);
    // The message: header, then the bytes; in a buffer on the stack up to kStackPut bytes, else
    // one allocation per put (not a thread_local buffer: exit() destroys thread_locals before
    // the implicit finalize runs, and its barrier puts).
    constexpr size_t kStackPut = 256;
    alignas(16) uint8_t small[sizeof(Place) + kStackPut];
    std::vector<uint8_t> large;
    uint8_t *m = small;
    if (bytes > kStackPut) {
      large.resize(sizeof(Place) + std::min(chunk, bytes));
      m = large.data();
    }
    for (size_t off = 0; off < bytes; off += chunk) {
      const size_t n = std::min(chunk, bytes - off);
      const Place p = file_place(kPut, static_cast<char *>(sym) + off, n, pe);
      memcpy(m, &p, sizeof p);
      memcpy(m + sizeof p, static_cast<const char *>(source) + off, n);
      port->post(via(pe), m, sizeof p + n);
    }
  }
  void get(int pe, void *dest, const void *sym, size_t bytes, bool nbi) {
    const size_t chunk = port->max_message();
    for (size_t off = 0; off < bytes; off += chunk) {
      const size_t n = std::min(chunk, bytes - off);
      const Place p = file_place(kGet, static_cast<const char *>(sym) + off, n, pe);
      char *to = static_cast<char *>(dest) + off;
      if (nbi)
        port->call_nbi(via(pe), &p, sizeof p, to, n);
      else
        port->call(via(pe), &p, sizeof p, to, n);
    }
  }

  // On the target (or its node's server): the request of PE `from`. An AMO is executed on the
  // target's word with a CPU atomic. A request for a PE this one does not serve is dropped (its
  // sender then fails for want of a reply).
  void handle(int from, const void *msg, size_t len, net::Reply &reply) override {
    if (len == sizeof(LockMessage) && static_cast<const uint8_t *>(msg)[0] == kLock)
      return lock_here(from, msg, reply);
    Place p;
    if (len < sizeof p) return;
    memcpy(&p, msg, sizeof p);
    if (!serves(p.target)) return;
    if (p.target != rt.me) ++served_for_node;
    const auto *bytes = static_cast<const uint8_t *>(msg) + sizeof p;
    switch (p.type) {
      case kPut:
        if (char *to = local(p, p.length); to && len - sizeof p == p.length) {
          memcpy(to, bytes, p.length);
          notify_sync(p.target);  // a waiter of that PE: for data, or a library message
        }
        return;
      case kGet:
        if (const char *from = local(p, p.length); from && reply.capacity >= p.length) {
          memcpy(reply.data, from, p.length);
          reply.len = p.length;
        }
        return;
      case kAmo:
        if (len == sizeof(AmoMessage)) return amo(msg, reply);
        return;
      case kAccumulate:
        return accumulate_here(msg, len, reply);
      case kWideAmo:
        return wide_here(msg, len, reply);
    }
  }

  // All-SW mode, another node: the target's CPU computes, in one message, under its stripe
  // locks (the lock fallback's, which this node's PEs take too); busy: sent again.
  bool wide_native(unsigned) const override { return true; }
  const char *wide_path() const override {
    return "to other nodes by the target's CPU under its stripe locks (one message), on this "
           "node under the stripe locks (CPU loads and stores)";
  }
  bool execute_wide(const atomics::WideRequest &r) override {
    const bool cs = r.op == atomics::AmoOp::MaskedCompareSwap;
    const size_t n = r.size, operands = (cs ? 4 : 2) * n;
    uint8_t m[sizeof(WideAmoMessage) + 4 * atomics::kWideMax];
    WideAmoMessage h{user_place(kWideAmo, r.target, n, r.pe, r.routine), static_cast<uint8_t>(r.op), {}};
    memcpy(m, &h, sizeof h);
    const void *from[4] = {r.a, r.b, r.c, r.d};
    for (size_t i = 0; i < operands / n; ++i) memcpy(m + sizeof h + i * n, from[i], n);
    uint8_t answer[1 + atomics::kWideMax];
    for (unsigned round = 0;; ++round) {
      answer[0] = kRefused;
      port->call(via(r.pe), m, sizeof h + operands, answer, 1 + n);
      if (answer[0] == kApplied) break;
      if (answer[0] != kBusy)
        fatal(r.routine, "PE %d refused a %zu-byte masked atomic at %p (not in its segment, or "
              "misaligned)", r.pe, n, r.target);
      if (round > 0) sched_yield();  // a PE of its node holds the locks: let it finish
    }
    if (r.fetch_out) memcpy(r.fetch_out, answer + 1, n);
    return true;
  }
  void wide_here(const void *msg, size_t len, net::Reply &reply) {
    WideAmoMessage m;
    if (len < sizeof m || reply.capacity < 1) return;
    memcpy(&m, msg, sizeof m);
    const size_t n = m.place.length;
    const auto op = static_cast<atomics::AmoOp>(m.op);
    const bool cs = op == atomics::AmoOp::MaskedCompareSwap;
    char *to = atomics::wide_size(n) && (cs || op == atomics::AmoOp::MaskedFetchAdd) &&
                       len == sizeof m + (cs ? 4 : 2) * n && reply.capacity >= 1 + n
                   ? local(m.place, n)
                   : nullptr;
    if (to && (reinterpret_cast<uintptr_t>(to) & (n - 1))) to = nullptr;
    reply.len = 1;
    reply.data[0] = kRefused;
    if (!to) return;
    acc::HeldLocks held;
    if (!acc::try_lock_here(m.place.target, mine(m.place), n, &held)) {
      reply.data[0] = kBusy;
      return;
    }
    const auto *ops = static_cast<const uint8_t *>(msg) + sizeof m;
    uint8_t *old = reinterpret_cast<uint8_t *>(reply.data) + 1;
    if (cs)
      atomics::wide_compare_swap(to, ops + n, ops + 3 * n, ops, ops + 2 * n,
                                 static_cast<unsigned>(n), old);
    else
      atomics::wide_fetch_add(to, ops, ops + n, static_cast<unsigned>(n), old);
    acc::unlock_here(m.place.target, held);
    reply.data[0] = kApplied;
    reply.len = 1 + n;
    notify(m.place.target);  // a waiter of that PE
  }

  // Owner computes: the chunk's elements applied under this PE's stripe locks, if they are free
  // (a caller computing on them holds them: the sender retries).
  void accumulate_here(const void *msg, size_t len, net::Reply &reply) {
    AccumulateMessage m;
    if (len < sizeof m || reply.capacity < 1) return;
    memcpy(&m, msg, sizeof m);
    char *to = len - sizeof m == m.place.length ? local(m.place, m.place.length) : nullptr;
    AccumulateStatus status = kRefused;
    if (to)
      status = acc::owner_apply(m.place.target, m.type, m.op, mine(m.place), to,
                                static_cast<const char *>(msg) + sizeof m, m.place.length,
                                m.locked != 0)
                   ? kApplied
                   : kBusy;
    reply.data[0] = status;
    reply.len = 1;
    if (status == kApplied) notify(m.place.target);  // a waiter of that PE
  }

  // Sends [source, source + bytes) to be applied to PE `pe`'s `sym` by that PE, in chunks of
  // whole elements that fit a message, all in flight at once; the chunks found busy go again
  // until applied. Every chunk is applied on return.
  void accumulate(int pe, void *sym, uint8_t type, uint8_t op, size_t elem, const void *source,
                  size_t bytes, bool locked, const char *routine) {
    const size_t chunk = (port->max_message() - sizeof(AccumulateMessage)) / elem * elem;
    const size_t count = (bytes + chunk - 1) / chunk;
    std::vector<uint8_t> messages(count * (sizeof(AccumulateMessage) + chunk));
    std::vector<uint8_t> status(count, kBusy);
    auto message = [&](size_t i) { return messages.data() + i * (sizeof(AccumulateMessage) + chunk); };
    for (size_t i = 0; i < count; ++i) {
      const size_t off = i * chunk, n = std::min(chunk, bytes - off);
      AccumulateMessage m{user_place(kAccumulate, static_cast<char *>(sym) + off, n, pe, routine),
                          type, op, locked, {}};
      memcpy(message(i), &m, sizeof m);
      memcpy(message(i) + sizeof m, static_cast<const char *>(source) + off, n);
    }
    for (unsigned round = 0;; ++round) {
      size_t busy = 0;
      for (size_t i = 0; i < count; ++i) {
        if (status[i] != kBusy) continue;
        ++busy;
        const size_t n = std::min(chunk, bytes - i * chunk);
        port->call_nbi(via(pe), message(i), sizeof(AccumulateMessage) + n, &status[i], 1);
      }
      if (busy == 0) return;
      if (round > 0) sched_yield();  // a caller computing there holds the locks: let it finish
      port->quiet();
      for (size_t i = 0; i < count; ++i)
        if (status[i] == kRefused)
          fatal(routine, "PE %d refused an accumulate of %zu bytes at %p (not in its segment)",
                pe, std::min(chunk, bytes - i * chunk), static_cast<char *>(sym) + i * chunk);
    }
  }

  void lock_here(int from, const void *msg, net::Reply &reply) {
    LockMessage m;
    memcpy(&m, msg, sizeof m);
    if (m.target != rt.me && serves(m.target)) ++served_for_node;
    const auto answer =
        serves(m.target)
            ? hybrid_lock::serve(from, m.target, static_cast<hybrid_lock::Request>(m.request), m.key)
            : hybrid_lock::kRefused;
    if (reply.capacity >= 1) {
      reply.data[0] = answer;
      reply.len = 1;
    }
  }

  void amo(const void *msg, net::Reply &reply) {
    AmoMessage m;
    memcpy(&m, msg, sizeof m);
    char *word = m.size == 4 || m.size == 8 ? local(m.place, m.size) : nullptr;
    if (!word) return;
    const auto op = static_cast<atomics::AmoOp>(m.op);
    const uint64_t old =
        atomics::cpu::execute(op, word, m.size, m.operand, m.compare, m.mask, m.mask2);
    if (reply.capacity >= m.size) {
      memcpy(reply.data, &old, m.size);  // little-endian: the low bytes
      reply.len = m.size;
    }
    if (op != atomics::AmoOp::Fetch) notify(m.place.target);  // a waiter of that PE
  }

  std::unique_ptr<ud::Transport> ud;      // the port: UD datagrams,
  std::unique_ptr<ring::Transport> ring;  // or the receive ring (HOSHMEM_AM=ring)
  net::MessagePort *port = nullptr;
  bool rma_over_ud = false;  // HOSHMEM_TRANSPORT=ud: puts, gets and library messages too
  // HOSHMEM_PROGRESS=node: per PE, the PE whose queue pair and progress thread serve its
  // messages (its node's first PE); empty: every PE serves its own.
  std::vector<int> server;
  uint64_t served_for_node = 0;  // requests executed for another PE of this node (the handler's)

  // Where a request for PE `pe` goes.
  int via(int pe) const { return server.empty() ? pe : server[pe]; }
  // Whether this PE executes requests for PE `target`: its own, and its node's as their server.
  bool serves(int target) const {
    if (target == rt.me) return true;
    return !server.empty() && static_cast<unsigned>(target) < static_cast<unsigned>(rt.npes) &&
           server[target] == rt.me && rt.control[target] != nullptr;
  }

 private:
  // Where this PE's address `sym` (`n` bytes: control area, heap or globals) is, as a segment
  // and offset, the same on every PE. An AMO's word must be in the heap, the globals or (the
  // library's own words: accumulate locks) the control area.
  static Place user_place(uint8_t type, const void *sym, size_t n, int pe, const char *routine) {
    const auto a = reinterpret_cast<uintptr_t>(sym);
    if (a - reinterpret_cast<uintptr_t>(rt.memory.own_file()) >= rt.memory.file_size() &&
        a - rt.space.data.base >= rt.space.data.size)
      report_not_symmetric(sym, pe, routine ? routine : "UD");
    return file_place(type, sym, n, pe);
  }
  static Place file_place(uint8_t type, const void *sym, size_t n, int pe) {
    const auto a = reinterpret_cast<uintptr_t>(sym);
    const auto file = reinterpret_cast<uintptr_t>(rt.memory.own_file());
    Place p{type, kFile, 0, static_cast<uint32_t>(n), a - file, pe, 0};
    if (a - file >= rt.memory.file_size()) {
      p.segment = kGlobals;
      p.offset = a - rt.space.data.base;
      if (p.offset >= rt.space.data.size) report_not_symmetric(sym, pe, "UD");
    }
    return p;
  }
  // This PE's address of the place a message names (in range: local() said so).
  static char *mine(const Place &p) {
    const uintptr_t base = p.segment == kFile ? reinterpret_cast<uintptr_t>(rt.memory.own_file())
                                              : rt.space.data.base;
    return reinterpret_cast<char *>(base + p.offset);
  }
  // The `n` bytes a message names on its target (this PE, or one of this node's PEs whose
  // memory is mapped here); nullptr if they are not all in one segment.
  static char *local(const Place &p, size_t n) {
    const size_t size = p.segment == kFile ? rt.memory.file_size() : rt.space.data.size;
    if (p.offset > size || size - p.offset < n) return nullptr;
    if (p.target == rt.me) return mine(p);
    // Another PE's copy: the control area and the heap are mapped apart, so a range must not
    // cross from one to the other.
    if (p.segment == kFile && p.offset < shm::kControlBytes && shm::kControlBytes - p.offset < n)
      return nullptr;
    return peer::mapped(p.target, mine(p));
  }
};

// The library's own messages (lib/transport/net/peer.h) when everything goes over UD.
class UdNetwork final : public peer::Network {
 public:
  explicit UdNetwork(MessageAtomics &ud) : ud_(ud) {}
  void write(int pe, void *mine, const void *src, size_t len) override {
    ud_.put(pe, mine, src, len);
  }
  void read(int pe, void *dst, const void *mine, size_t len) override {
    ud_.get(pe, dst, mine, len, false);
  }
  void flush() override { ud_.port->quiet(); }

 private:
  MessageAtomics &ud_;
};

MessageAtomics *g_am = nullptr;
UdNetwork *g_network = nullptr;

}  // namespace

bool messages_probe(Bootstrap &boot, std::string *why) {
  AddressRecord mine{};
  mine.server = rt.config.progress == "node" ? boot.node_ranks().front() : rt.me;
  ib::Device *device = rdma_device();
  if (!device) {
    *why = "no RDMA device";
  } else {
    auto am = std::make_unique<MessageAtomics>();
    am->ud = std::make_unique<ud::Transport>();
    ud::Transport::Options options;
    options.window = static_cast<uint32_t>(rt.config.ud_window);
    options.rto_ns = rt.config.ud_rto_us * 1000;
    options.give_up_ns = rt.config.ud_give_up_ms * 1'000'000;
    options.progress_thread = rt.config.ud_progress_thread;
    // A node's server takes every request for its node: a receive queue for all of them.
    if (mine.server == rt.me) options.receive_slots *= std::min<size_t>(boot.node_ranks().size(), 8);
    if (am->ud->init(device, rt.me, rt.npes, options, am.get(), ud_failed, why)) {
      mine.ok = 1;
      mine.address = am->ud->address();
      am->port = am->ud.get();
      g_am = am.release();
    }
  }
  snprintf(mine.why_not, sizeof mine.why_not, "%s", mine.ok ? "" : why->c_str());
  boot.put(kAddressKey, &mine, sizeof mine);
  return mine.ok;
}

atomics::AtomicBackend *messages_start(Bootstrap &boot, bool rma_over_ud, std::string *why_not) {
  char why[256];
  if (g_am && rt.config.progress == "node") g_am->server.assign(rt.npes, -1);
  for (int pe = 0; pe < rt.npes; ++pe) {
    std::vector<uint8_t> bytes = boot.get(pe, kAddressKey);
    AddressRecord r{};
    if (bytes.size() == sizeof r) memcpy(&r, bytes.data(), sizeof r);
    r.why_not[sizeof r.why_not - 1] = 0;
    if (!r.ok)
      snprintf(why, sizeof why, "the job spans several nodes, and PE %d cannot reach the others: "
               "%s", pe, bytes.size() == sizeof r ? r.why_not : "it published no UD address");
    // Datagrams are as large as this PE's port allows: a peer whose port takes less would drop
    // them (one datagram size for the whole job is not built).
    else if (g_am && r.address.mtu && r.address.mtu < g_am->ud->address().mtu)
      snprintf(why, sizeof why, "PE %d's port has an MTU of %zu bytes, smaller than this PE's "
               "%zu: UD messages need the same MTU on every port of the job", pe,
               size_t{128} << r.address.mtu, size_t{128} << g_am->ud->address().mtu);
    else {
      if (g_am) g_am->ud->set_peer(pe, r.address);
      if (g_am && !g_am->server.empty()) g_am->server[pe] = r.server;
      continue;
    }
    if (!why_not) fatal("shmem_init", "%s", why);
    *why_not = why;
    return nullptr;
  }
  g_am->ud->start();
  g_am->rma_over_ud = rma_over_ud;
  if (rma_over_ud) {
    g_network = new UdNetwork(*g_am);
    peer::routes.network = g_network;
  }
  return g_am;
}

atomics::AtomicBackend *messages_start_ring() {
  static_assert(ring::kAreaBytes <= shm::kRingAreaBytes, "the ring area of the control file");
  auto am = std::make_unique<MessageAtomics>();
  ring::Transport::Options options;
  options.give_up_ns = rt.config.ud_give_up_ms * 1'000'000;
  options.progress_thread = rt.config.ud_progress_thread;
  auto *area = reinterpret_cast<uint8_t *>(rt.memory.own_file()) + shm::kRingAreaOffset;
  am->ring = std::make_unique<ring::Transport>(rt.me, rt.npes, area, rdma_ring_link(), am.get(),
                                               ring_failed, options);
  am->port = am->ring.get();
  am->ring->start();
  g_am = am.release();
  return g_am;
}

progress::Source *messages_source() { return g_am ? g_am->port : nullptr; }
progress::Thread *messages_thread() { return g_am ? g_am->port->thread() : nullptr; }

void messages_accumulate(int pe, void *sym, uint8_t type, uint8_t op, size_t elem,
                         const void *source, size_t bytes, bool locked, const char *routine) {
  g_am->accumulate(pe, sym, type, op, elem, source, bytes, locked, routine);
}

uint8_t messages_lock(int pe, uint8_t request, uint64_t key) {
  const LockMessage m{kLock, request, {}, pe, key};
  uint8_t answer = hybrid_lock::kRefused;
  g_am->port->call(g_am->via(pe), &m, sizeof m, &answer, 1);
  return answer;
}

void messages_put(int pe, void *sym, const void *source, size_t bytes) {
  g_am->put(pe, sym, source, bytes);
}

void messages_get(int pe, void *dest, const void *sym, size_t bytes, bool nbi) {
  g_am->get(pe, dest, sym, bytes, nbi);
}

void messages_closing() {
  if (!g_am) return;
  g_am->port->closing();
  // SHMEM_INFO=1: what this PE's message traffic cost, one line per PE at finalize (UD: whether
  // the RTO fits the round trip; both: what the progress thread did).
  if (!rt.config.info) return;
  if (g_am->ring) {
    const ring::Transport::Stats s = g_am->ring->stats();
    printf("hoshmem: PE %d: ring: %llu requests sent, %llu received; %llu consumer reads for "
           "room, %llu requests waited for a reply slot; %llu writes with immediate read; "
           "progress thread: %llu wake-ups, %llu with work; memory: %zu KiB\n",
           rt.me, static_cast<unsigned long long>(s.sent),
           static_cast<unsigned long long>(s.received),
           static_cast<unsigned long long>(s.consumer_reads),
           static_cast<unsigned long long>(s.slot_waits),
           static_cast<unsigned long long>(s.arrivals),
           static_cast<unsigned long long>(s.wakeups),
           static_cast<unsigned long long>(s.productive_wakeups), ring::kAreaBytes / 1024);
    fflush(stdout);
    return;
  }
  const ud::Transport::Stats s = g_am->ud->stats();
  const ud::Stats &e = s.engine;
  printf("hoshmem: PE %d: UD: %llu datagrams sent (%llu standalone acks, %llu posts), %llu "
         "received (%llu by the progress thread, %llu full polls); %llu requests delivered "
         "(%llu for other PEs of this node); %llu segments resent, %llu replies replayed, %llu timeouts, %llu window shrinks, %llu "
         "duplicates, %llu dropped; %llu sends waited for the window; progress thread: %llu "
         "wake-ups, %llu with work; memory: %zu KiB\n",
         rt.me, static_cast<unsigned long long>(e.datagrams),
         static_cast<unsigned long long>(e.standalone_acks),
         static_cast<unsigned long long>(s.posts), static_cast<unsigned long long>(s.received),
         static_cast<unsigned long long>(s.received_by_thread),
         static_cast<unsigned long long>(s.full_polls),
         static_cast<unsigned long long>(e.delivered),
         static_cast<unsigned long long>(g_am->served_for_node),
         static_cast<unsigned long long>(e.retransmits),
         static_cast<unsigned long long>(e.replays), static_cast<unsigned long long>(e.timeouts),
         static_cast<unsigned long long>(e.window_shrinks),
         static_cast<unsigned long long>(e.duplicates),
         static_cast<unsigned long long>(e.dropped), static_cast<unsigned long long>(s.busy),
         static_cast<unsigned long long>(s.wakeups),
         static_cast<unsigned long long>(s.productive_wakeups),
         (s.memory_bytes + s.registered_bytes) / 1024);
  fflush(stdout);
}

void messages_stop() {
  if (peer::routes.network == g_network) peer::routes.network = nullptr;
  delete g_network;
  g_network = nullptr;
  if (!g_am) return;
  g_am->port->shutdown();
  delete g_am;
  g_am = nullptr;
}

std::string messages_description() {
  if (!g_am) return "-";
  char text[480];
  if (g_am->ring) {
    const ring::Transport::Options &o = g_am->ring->options();
    snprintf(text, sizeof text,
             "ring (%s to other nodes as messages executed by the target's CPU: one receive ring "
             "of %zu KiB per PE written with RDMA over %s, room reserved with HCA fetch-adds, "
             "messages up to %zu bytes, %u requests in flight per PE, a stuck ring fatal after "
             "%llu ms; %s)",
             rt.mode == atomics::AtomicityMode::AllHardware ? "accumulates" : "AMOs",
             ring::kRingBytes / 1024, rdma_transport_name(), g_am->port->max_message(),
             ring::kReplySlots, static_cast<unsigned long long>(o.give_up_ns / 1'000'000),
             o.progress_thread ? "a progress thread woken by writes with immediate serves them"
                               : "no progress thread: served only inside library calls");
    return text;
  }
  const ud::Transport::Options &o = g_am->ud->options();
  char served[128];
  if (g_am->server.empty())
    snprintf(served, sizeof served, "one UD QP per PE, which serves its own requests");
  else
    snprintf(served, sizeof served, "one UD QP per PE; a node's first PE serves every request "
             "for its node (HOSHMEM_PROGRESS=node: PE %d for this one)", g_am->server[rt.me]);
  snprintf(text, sizeof text,
           "ud (%s to other nodes as messages executed by the target's CPU: %s, "
           "messages up to %zu bytes, window %u datagrams, first resend after %llu us, a silent "
           "peer dead after %llu ms; %s)",
           g_am->rma_over_ud ? "puts, gets, AMOs and the library's messages" : "AMOs", served,
           g_am->port->max_message(), o.window,
           static_cast<unsigned long long>(o.rto_ns / 1000),
           static_cast<unsigned long long>(o.give_up_ns / 1'000'000),
           o.progress_thread ? "a progress thread answers them"
                             : "no progress thread: served only inside library calls");
  return text;
}

}  // namespace hoshmem
