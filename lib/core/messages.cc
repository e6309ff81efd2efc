// lib/core: active messages over UD (messages.h).
#include "lib/core/messages.h"

#include <cstdio>
#include <cstring>
#include <memory>

#include "lib/atomics/cpu_atomics.h"
#include "lib/core/rdma.h"
#include "lib/core/runtime.h"
#include "lib/transport/ud/ud_transport.h"

namespace hoshmem {
namespace {

constexpr char kAddressKey[] = "hoshmem.ud";

struct AddressRecord {
  uint8_t ok;
  ud::PeerAddress address;
  char why_not[96];
};

enum MessageType : uint8_t { kAmo = 1 };
enum Segment : uint8_t { kHeap = 0, kGlobals = 1 };

// An AMO on the target's word at `offset` in its segment. Both ends are the same build on hosts
// of the same byte order (little-endian x86-64): fields travel in host order.
struct AmoMessage {
  uint8_t type;
  uint8_t op;    // atomics::AmoOp
  uint8_t size;  // 4 or 8
  uint8_t segment;
  uint32_t reserved;
  uint64_t offset;
  uint64_t operand, compare;
};

[[noreturn]] void ud_failed(int pe, const char *cause) {
  fatal("UD", "messages to PE %d failed: %s", pe, cause);
}

class UdAtomics final : public atomics::AtomicBackend, public ud::RequestHandler {
 public:
  const char *name() const override { return "CPU atomics of the target PE, over UD"; }

  void execute(const atomics::AmoRequest &r, bool nbi) override {
    AmoMessage m{};
    m.type = kAmo;
    m.op = static_cast<uint8_t>(r.op);
    m.size = r.size;
    place(r.target, r.pe, r.routine, &m);
    m.operand = r.operand;
    m.compare = r.compare;
    if (!r.fetch_out) return transport.post(r.pe, &m, sizeof m);
    if (nbi) return transport.call_nbi(r.pe, &m, sizeof m, r.fetch_out, r.size);
    transport.call(r.pe, &m, sizeof m, r.fetch_out, r.size);
  }

  // RMA went over RC, AMOs over UD: quiet completes both; fence too, since neither transport
  // orders its operations with the other's.
  void quiet(int lane) override {
    rdma_quiet(lane);
    transport.quiet();
  }
  void fence(int lane, int pe) override {
    if (pe < 0)
      rdma_quiet(lane);
    else
      rdma_pe_quiet(lane, &pe, 1);
    transport.quiet();
  }
  void pe_quiet(int lane, const int *pes, size_t npes) override {
    rdma_pe_quiet(lane, pes, npes);
    transport.quiet();
  }

  // On the target: the request of PE `pe`, executed on our word with a CPU atomic.
  void handle(int, const void *msg, size_t len, ud::Reply &reply) override {
    AmoMessage m;
    if (len != sizeof m) return;
    memcpy(&m, msg, sizeof m);
    char *word = local(m);
    if (m.type != kAmo || !word) return;
    const auto op = static_cast<atomics::AmoOp>(m.op);
    const uint64_t old = atomics::cpu::execute(op, word, m.size, m.operand, m.compare);
    if (reply.capacity >= m.size) {
      memcpy(reply.data, &old, m.size);  // little-endian: the low bytes
      reply.len = m.size;
    }
    if (op != atomics::AmoOp::Fetch) notify(rt.me);  // a waiter of this PE
  }

  ud::Transport transport;

 private:
  // Where the symmetric address `sym` is, as a segment and offset (the same on every PE).
  static void place(const void *sym, int pe, const char *routine, AmoMessage *m) {
    const auto a = reinterpret_cast<uintptr_t>(sym);
    if (uintptr_t off = a - rt.space.heap.base; off < rt.space.heap.size) {
      m->segment = kHeap;
      m->offset = off;
    } else if (uintptr_t off = a - rt.space.data.base; off < rt.space.data.size) {
      m->segment = kGlobals;
      m->offset = off;
    } else {
      report_not_symmetric(sym, pe, routine ? routine : "UD");
    }
  }
  // The word a message names on this PE; nullptr if it is outside the segment.
  static char *local(const AmoMessage &m) {
    const SymmetricSpace &s = rt.space;
    const uintptr_t base = m.segment == kHeap ? s.heap.base : s.data.base;
    const size_t size = m.segment == kHeap ? s.heap.size : s.data.size;
    if ((m.size != 4 && m.size != 8) || m.offset > size || size - m.offset < m.size) return nullptr;
    return reinterpret_cast<char *>(base + m.offset);
  }
};

UdAtomics *g_ud = nullptr;

}  // namespace

bool messages_probe(Bootstrap &boot, std::string *why) {
  AddressRecord mine{};
  ib::Device *device = rdma_device();
  if (!device) {
    *why = "no RDMA device";
  } else {
    auto ud = std::make_unique<UdAtomics>();
    ud::Transport::Options options;
    options.window = static_cast<uint32_t>(rt.config.ud_window);
    options.rto_ns = rt.config.ud_rto_us * 1000;
    options.give_up_ns = rt.config.ud_give_up_ms * 1'000'000;
    options.progress_thread = rt.config.ud_progress_thread;
    if (ud->transport.init(device, rt.me, rt.npes, options, ud.get(), ud_failed, why)) {
      mine.ok = 1;
      mine.address = ud->transport.address();
      g_ud = ud.release();
    }
  }
  snprintf(mine.why_not, sizeof mine.why_not, "%s", mine.ok ? "" : why->c_str());
  boot.put(kAddressKey, &mine, sizeof mine);
  return mine.ok;
}

atomics::AtomicBackend *messages_start(Bootstrap &boot) {
  for (int pe = 0; pe < rt.npes; ++pe) {
    std::vector<uint8_t> bytes = boot.get(pe, kAddressKey);
    AddressRecord r{};
    if (bytes.size() == sizeof r) memcpy(&r, bytes.data(), sizeof r);
    r.why_not[sizeof r.why_not - 1] = 0;
    if (!r.ok)
      fatal("shmem_init", "the job spans several nodes, and PE %d cannot reach the others: %s",
            pe, bytes.size() == sizeof r ? r.why_not : "it published no UD address");
    if (g_ud) g_ud->transport.set_peer(pe, r.address);
  }
  g_ud->transport.start();
  return g_ud;
}

progress::Source *messages_source() { return g_ud ? &g_ud->transport : nullptr; }
progress::Thread *messages_thread() { return g_ud ? g_ud->transport.thread() : nullptr; }

void messages_stop() {
  if (!g_ud) return;
  g_ud->transport.shutdown();
  delete g_ud;
  g_ud = nullptr;
}

std::string messages_description() {
  if (!g_ud) return "-";
  const ud::Transport::Options &o = g_ud->transport.options();
  char text[320];
  snprintf(text, sizeof text,
           "ud (AMOs to other nodes as messages executed by the target's CPU: one UD QP, "
           "messages up to %zu bytes, window %u datagrams, first resend after %llu us, a silent "
           "peer dead after %llu ms; %s)",
           g_ud->transport.max_message(), o.window,
           static_cast<unsigned long long>(o.rto_ns / 1000),
           static_cast<unsigned long long>(o.give_up_ns / 1'000'000),
           o.progress_thread ? "a progress thread answers them"
                             : "no progress thread: served only inside library calls");
  return text;
}

}  // namespace hoshmem
