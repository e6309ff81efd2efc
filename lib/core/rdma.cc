// lib/core: the job's RDMA path over the RC transport (rdma.h).
#include "lib/core/rdma.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>

#include "lib/atomics/hca_encoding.h"
#include "lib/atomics/wide.h"
#include "lib/core/rdma_inline.h"
#include "lib/core/runtime.h"
#include "lib/transport/ib/device.h"
#include "lib/transport/net/peer.h"
#include "lib/transport/rc/rc_transport.h"
#include "lib/transport/ring/transport.h"
#include "lib/transport/shm/control_block.h"

namespace hoshmem {
namespace {

constexpr char kProbeKey[] = "hoshmem.hca";
constexpr char kSegmentsKey[] = "hoshmem.rdma.seg";

struct ProbeRecord {
  uint8_t reachable;  // the device and RC are open
  uint8_t capable;    // and it has HCA atomics
  uint64_t kernel;    // which running kernel (boot_id): PEs with the same one share its memory
  rc::PeerAddress address;  // address.dct: its DC target (0: none)
  uint8_t masked;     // its device's masked atomics (the job uses what every PE's has)
  uint8_t coherent;   // its HCA executes 8-byte fetch-add and compare-swap as PCIe atomics
  uint16_t masked_sizes_rc, masked_sizes_dc;
  char why_not[96];  // when not capable: why (for the error the other PEs report)
  char no_dc[96];    // when it has no DC target (and one was asked for): why
};

struct SegmentRecord {  // where a PE's segments are and their keys: O(1) per PE
  uint64_t file_base, data_base;  // file: control area, then the heap
  uint32_t file_rkey, data_rkey;
};

}  // namespace

RdmaInlinePath rdma_add_path, rdma_put_path;

namespace {

[[noreturn]] void rc_failed(int pe, const char *cause) {
  if (rc::means_peer_lost(cause))  // it died, most likely: the launcher names it (error.h)
    fatal_peer_lost("RDMA", "operation on PE %d failed: %s", pe, cause);
  fatal("RDMA", "operation on PE %d failed: %s", pe, cause);
}

// The AMO backend of the all-HW mode and of other nodes, and the network of peer.h.
class Rdma final : public atomics::AtomicBackend, public peer::Network {
 public:
  const char *name() const override {
    return transport.dc() ? "HCA atomics over DC" : "HCA atomics over RC";
  }

  void execute(const atomics::AmoRequest &r, bool nbi) override {
    const ib::RemoteAddr where = remote(r.target, r.pe, r.routine);
    const ib::AtomicCaps &caps = device->atomics();
    uint64_t old;
    // Straight to the HCA when it has the encoding this op needs on this size; otherwise
    // compare-swap loops.
    const bool masked_here =
        caps.masked && ((transport.dc() ? caps.masked_sizes_dc : caps.masked_sizes_rc) & r.size);
    const bool direct = r.size == 8 && simple(r.op) ? caps.standard : masked_here;
    if (direct && nbi && !rt.control[r.pe]) {
      // To another node: a non-fetching AMO does not wait (complete at quiet), a fetching _nbi
      // one delivers its old value by quiet; the fence flag orders later operations on the QP.
      // To this node (loopback) AMOs complete in the call instead: puts there are plain stores,
      // which a fence could not order after an AMO still in flight, and the waiter is rung
      // after the update, not before.
      transport.atomic_nbi(r.lane, r.pe,
                           atomics::encode_for_hca(r.op, r.size, r.operand, r.compare, r.mask, r.mask2), where,
                           r.fetch_out);
      if (rdma_add_path.caps) transport.allow_inline(r.lane, r.pe);  // rdma_atomic_inline
      return;
    }
    if (direct) {
      old = transport.atomic(r.lane, r.pe,
                             atomics::encode_for_hca(r.op, r.size, r.operand, r.compare, r.mask, r.mask2), where);
      if (!rt.control[r.pe] && rdma_add_path.caps) transport.allow_inline(r.lane, r.pe);
    } else {
      old = cas_loop(r, where);
    }
    if (r.fetch_out) memcpy(r.fetch_out, &old, r.size);  // little-endian: the low bytes
    if (r.op != atomics::AmoOp::Fetch && rt.control[r.pe]) notify(r.pe);  // a waiter here
  }

  // Masked atomics of 16-128 bytes when every PE's device has the size (the job's caps):
  // lib/atomics/wide.h. 256 bytes never: its compare-swap does not fit a WQE, and a size must
  // not mix the HCA with the lock fallback.
  bool wide_native(unsigned size) const override {
    const ib::AtomicCaps &caps = device->atomics();
    return caps.masked && size <= atomics::kHcaMaxMaskedCompareSwap &&
           ((transport.dc() ? caps.masked_sizes_dc : caps.masked_sizes_rc) & size);
  }
  const char *wide_path() const override {
    return "on the HCA (a fetch-add whose fields cross 8-byte words: full-width masked "
           "compare-swap loops)";
  }
  bool execute_wide(const atomics::WideRequest &r) override {
    if (!wide_native(r.size)) return false;
    struct Post {
      Rdma *self;
      const atomics::WideRequest &r;
      ib::RemoteAddr where;
    } p{this, r, remote(r.target, r.pe, r.routine)};
    atomics::hca_wide_execute(r, [](void *ctx, atomics::HcaOpcode op, const uint8_t *operands,
                                    uint32_t bytes, uint8_t *result) {
      auto *q = static_cast<Post *>(ctx);
      q->self->transport.atomic_wide(q->r.lane, q->r.pe, op, q->r.size, operands, bytes, q->where,
                                     result);
    }, &p);
    if (rt.control[r.pe]) notify(r.pe);  // a waiter here
    return true;
  }

  // The API tried rdma_add_inline (rdma_inline.h) first.
  void add_nbi(int lane, int pe, const void *target, uint64_t value,
               const char *routine) override {
    if (rt.control[pe])  // this node: complete in the call, as execute says why
      return execute({atomics::AmoOp::FetchAdd, 8, pe, target, value, 0, nullptr, lane, routine},
                     true);
    transport.atomic_add_nbi(lane, pe, value, remote(target, pe, routine));
  }

  void quiet(int lane) override { transport.quiet(lane); }
  void fence(int lane, int pe) override {
    if (pe >= 0)
      transport.fence(lane, pe);
    else
      transport.fence_all(lane);
  }
  void pe_quiet(int lane, const int *pes, size_t npes) override {
    transport.pe_quiet(lane, pes, npes);
  }

  // peer::Network: the library's own messages, on lane 0 like the default context.
  void write(int pe, void *mine, const void *src, size_t len) override {
    transport.put(0, pe, src, len, remote(mine, pe), false);
  }
  void read(int pe, void *dst, const void *mine, size_t len) override {
    transport.get(0, pe, dst, len, remote(mine, pe), false);
  }
  // Runs of writes of at most one bounce slot go out with one doorbell; a longer one takes
  // write().
  void write_all(int pe, const peer::Write *writes, size_t n) override {
    rc::Transport::BatchWrite run[4];
    size_t k = 0;
    for (size_t i = 0; i < n; ++i) {
      const peer::Write &w = writes[i];
      if (w.len <= rc::Transport::max_batch_write() && k < std::size(run)) {
        run[k++] = {w.src, static_cast<uint32_t>(w.len), remote(w.mine, pe)};
        continue;
      }
      transport.put_all(pe, run, k);
      k = 0;
      write(pe, w.mine, w.src, w.len);
    }
    transport.put_all(pe, run, k);
  }
  void flush() override { transport.quiet(0); }

  // Where this PE's address `sym` (control area, heap or globals) is on PE `pe`; an address in
  // none of them is reported as not symmetric, in `routine`'s name.
  ib::RemoteAddr remote(const void *sym, int pe, const char *routine = "RDMA") const {
    const uintptr_t a = reinterpret_cast<uintptr_t>(sym);
    const PeerSegments &s = segments[static_cast<size_t>(pe)];
    if (uintptr_t off = a - file_base; off < file_size) [[likely]]
      return {(same_file_base ? file_base : file_bases[static_cast<size_t>(pe)]) + off,
              s.file_rkey};
    if (uintptr_t off = a - rt.space.data.base; off >= rt.space.data.size) [[unlikely]]
      report_not_symmetric(sym, pe, routine ? routine : "RDMA");
    return {s.data_base + (a - rt.space.data.base), s.data_rkey};
  }

  std::unique_ptr<ib::Device> device;
  rc::Transport transport;
  std::vector<PeerSegments> segments;
  std::vector<uint64_t> file_bases;  // unless same_file_base: every PE's
  bool same_file_base = true;        // every PE's file is at file_base
  uintptr_t file_base = 0;
  size_t file_size = 0;
  ibv_mr *file_mr = nullptr, *data_mr = nullptr;

 private:

  // 8-byte operations the standard atomics do without masks.
  static bool simple(atomics::AmoOp op) {
    return op == atomics::AmoOp::Fetch || op == atomics::AmoOp::FetchAdd ||
           op == atomics::AmoOp::CompareSwap;
  }

  // Without the masked atomics this operation needs: compare-swap loops on the aligned 8-byte
  // word that holds it (still atomic with respect to every other HCA atomic).
  uint64_t cas_loop(const atomics::AmoRequest &r, const ib::RemoteAddr &where) {
    const ib::RemoteAddr word{where.addr & ~uint64_t{7}, where.rkey};
    const unsigned shift = static_cast<unsigned>(where.addr & 7) * 8;  // little-endian host
    const uint64_t mask = r.size == 8 ? ~uint64_t{0} : ((uint64_t{1} << 32) - 1) << shift;
    const atomics::HcaAtomic op = atomics::encode_for_hca(r.op, r.size, r.operand, r.compare, r.mask, r.mask2);
    uint64_t seen = transport.atomic(
        r.lane, r.pe, atomics::encode_for_hca(atomics::AmoOp::Fetch, 8, 0, 0), word);
    for (;;) {
      uint64_t part = (seen & mask) >> shift;
      const uint64_t old = atomics::hca_apply(op, &part);  // part becomes the new value
      const uint64_t next = (seen & ~mask) | ((part << shift) & mask);
      if (next == seen) return old;  // nothing to write: the read was the atomic
      const uint64_t got = transport.atomic(
          r.lane, r.pe, atomics::encode_for_hca(atomics::AmoOp::CompareSwap, 8, next, seen), word);
      if (got == seen) return old;
      seen = got;
    }
  }
};

// The receive ring's network (HOSHMEM_AM=ring): its operations on lane 0, whose lock lets the
// progress thread post replies beside the application.
class RingLink final : public ring::Link {
 public:
  explicit RingLink(Rdma &r) : r_(r) {}
  uint64_t fetch_add(int pe, uint64_t offset, uint64_t add) override {
    return r_.transport.atomic(0, pe, atomics::encode_for_hca(atomics::AmoOp::FetchAdd, 8, add, 0),
                               at(pe, offset));
  }
  uint64_t read_word(int pe, uint64_t offset) override {
    uint64_t v = 0;
    r_.transport.get(0, pe, &v, sizeof v, at(pe, offset), false);
    return v;
  }
  void write(int pe, uint64_t offset, const void *src, size_t len) override {
    r_.transport.put(0, pe, src, len, at(pe, offset), false);
  }
  void write_notify(int pe, uint64_t offset, const void *src, size_t len) override {
    r_.transport.put_inline_notify(pe, src, static_cast<uint32_t>(len), at(pe, offset),
                                   static_cast<uint32_t>(rt.me));
  }
  int arrivals_fd() override { return r_.transport.arrivals_fd(); }
  void arm_arrivals() override { r_.transport.arm_arrivals(); }
  void take_arrival_events() override { r_.transport.take_arrival_events(); }
  unsigned drain_arrivals() override { return r_.transport.drain_arrivals(); }

 private:
  ib::RemoteAddr at(int pe, uint64_t offset) const {
    const uintptr_t base =
        r_.same_file_base ? r_.file_base : r_.file_bases[static_cast<size_t>(pe)];
    return {base + shm::kRingAreaOffset + offset, r_.segments[static_cast<size_t>(pe)].file_rkey};
  }
  Rdma &r_;
};

Rdma *g_rdma = nullptr;
std::unique_ptr<RingLink> g_ring_link;
std::string g_why_not;  // why this PE has no HCA atomics
int g_no_dc_pe = -1;    // the first PE without a DC target, and why
std::string g_no_dc;
std::string g_transport_reason;  // why RC or DC (SHMEM_INFO)
// Masked atomics are executed by the target's HCA: the job uses the operand sizes every PE's
// device has (AND), and SHMEM_INFO names the first PE that lacks one some other PE has (OR).
uint16_t g_job_masked_rc = 0xffff, g_job_masked_dc = 0xffff;
uint16_t g_any_masked_rc = 0, g_any_masked_dc = 0;
int g_first_lacking[2][16];  // [rc, dc][size bit]: the first PE without it (-1: none yet)
int g_masked_limited_by = -1;
int g_first_incoherent = -1;  // the first PE whose HCA atomics are not coherent (-1: none)

// Pinning. ibv_reg_mr (no on-demand paging here) makes the kernel allocate and lock every page
// of the heap at shmem_init, as rxe and real HCAs do: a heap that does not fit in memory gets the
// PE OOM-killed. So the PEs that share this kernel's memory (the same boot_id, whatever
// HOSHMEM_PES_PER_NODE says) must fit in what was available before any of them registered.
uint64_t g_kernel = 0;          // this PE's boot_id (0: unknown)
uint64_t g_mem_available = 0;   // MemAvailable read by rdma_probe, bytes (0: unknown)
int g_sharing_kernel = 0;       // PEs with an open device on this kernel (this one included)

uint64_t kernel_instance() {
  char id[64] = {};
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
  if (!f) return 0;
  const bool ok = fgets(id, sizeof id, f) != nullptr;
  fclose(f);
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (const char *c = id; ok && *c; ++c) h = (h ^ static_cast<uint8_t>(*c)) * 1099511628211ull;
  return ok ? h : 0;
}

uint64_t mem_available() {
  FILE *f = fopen("/proc/meminfo", "re");
  if (!f) return 0;
  char line[128];
  unsigned long long kib = 0;
  while (fgets(line, sizeof line, f) && sscanf(line, "MemAvailable: %llu kB", &kib) != 1) {
  }
  fclose(f);
  return kib * 1024;
}

// Stops shmem_init with one line before registering `bytes` would exceed this kernel's memory.
void check_pinnable(size_t bytes, const char *device) {
  const uint64_t need = uint64_t{bytes} * static_cast<uint64_t>(std::max(1, g_sharing_kernel));
  if (g_mem_available == 0 || need <= g_mem_available) return;
  constexpr uint64_t kMiB = 1024 * 1024;
  fatal("shmem_init", "registering the symmetric heap with %s pins it: %llu MiB for %d PE(s) on "
        "this machine, more than its %llu MiB of available memory (MemAvailable); set "
        "SHMEM_SYMMETRIC_SIZE smaller (now %llu MiB per PE)", device,
        static_cast<unsigned long long>(need / kMiB), std::max(1, g_sharing_kernel),
        static_cast<unsigned long long>(g_mem_available / kMiB),
        static_cast<unsigned long long>(rt.space.heap.size / kMiB));
}

// HOSHMEM_TRANSPORT=auto picks DC from this many PEs up (when every PE can). Measured by
// perf/hw/dc.sh over softhca: per operation DC costs what RC does (within 2%); from 16 PEs both
// its memory (a constant 1.7 MiB against RC's 120 KiB per connected peer) and the first
// all-to-all (no connections: 7 ms against 40-50 ms) are below RC's. Below 16 RC's queue pair per
// peer costs little, and a PE busy with more peers than HOSHMEM_DCI_COUNT initiators waits for
// one to go idle, which RC never does.
constexpr int kDcCrossover = 16;

ibv_mr *register_range(uintptr_t base, size_t size, int access) {
  if (size == 0) return nullptr;
  return ibv_reg_mr(g_rdma->device->pd(), reinterpret_cast<void *>(base), size, access);
}

// HOSHMEM_AM=ring: receives for writes with immediate (one per message in the ring until served;
// every serve gives them back).
constexpr unsigned kRingArrivals = 512;

constexpr int kRemoteAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                              IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

}  // namespace

bool rdma_probe(Bootstrap &boot, bool for_messages, std::string *why) {
  ProbeRecord mine{};
  if (rt.config.atomics != "sw" || for_messages) {
    auto spec = ib::parse_device_spec(rt.config.device.c_str());
    if (!spec)
      fatal("shmem_init", "invalid HOSHMEM_DEVICE='%s': expected a device name, optionally with "
            ":port (e.g. mlx5_0:1)", rt.config.device.c_str());
    auto hca = std::make_unique<Rdma>();
    hca->device = std::make_unique<ib::Device>();
    ib::Addressing addressing;
    addressing.gid_index = rt.config.ib_gid_index;
    addressing.traffic_class = rt.config.ib_tc;
    addressing.service_level = rt.config.ib_sl;
    if (!hca->device->open(*spec, why, addressing)) {
      if (!spec->name.empty() && why->empty()) *why = "no RDMA device";
    } else if (!hca->transport.init(
                   hca->device.get(), rt.me, rt.npes, rc_failed, why,
                   rt.config.transport == "dc" || rt.config.transport == "auto"
                       ? dc::job_key(boot.launcher())
                       : 0,
                   rt.config.am == "ring" ? kRingArrivals : 0)) {
    } else {
      mine.reachable = 1;
      mine.capable = hca->device->atomics().standard;
      if (!mine.capable) *why = std::string(hca->device->name()) + " has no atomics";
      mine.address = hca->transport.address();
      const ib::AtomicCaps &caps = hca->device->atomics();
      mine.masked = caps.masked;
      mine.masked_sizes_rc = caps.masked_sizes_rc;
      mine.masked_sizes_dc = caps.masked_sizes_dc;
      mine.coherent = (caps.pci_fetch_add & 8) && (caps.pci_compare_swap & 8);
      snprintf(mine.no_dc, sizeof mine.no_dc, "%s", hca->transport.dc_target_why().c_str());
      g_rdma = hca.release();
    }
  }
  // Read before the exchange: no PE registers its heap before every PE has read this.
  mine.kernel = g_kernel = kernel_instance();
  g_mem_available = mem_available();
  g_sharing_kernel = 0;
  g_why_not = mine.capable ? "" : (why->empty() ? "no RDMA device" : *why);
  snprintf(mine.why_not, sizeof mine.why_not, "%s", g_why_not.c_str());
  boot.put(kProbeKey, &mine, sizeof mine);
  return mine.capable;
}

bool rdma_capable(Bootstrap &boot, int pe, std::string *why) {
  std::vector<uint8_t> bytes = boot.get(pe, kProbeKey);
  ProbeRecord r{};
  if (bytes.size() == sizeof r) memcpy(&r, bytes.data(), sizeof r);
  r.why_not[sizeof r.why_not - 1] = 0;
  r.no_dc[sizeof r.no_dc - 1] = 0;
  if (!r.capable && why) *why = r.why_not;
  if (!r.address.dct && g_no_dc_pe < 0) {
    g_no_dc_pe = pe;
    g_no_dc = r.reachable ? r.no_dc : r.why_not;
  }
  if (pe == 0) {  // the first record of this shmem_init (the PEs are read in order)
    g_job_masked_rc = g_job_masked_dc = 0xffff;
    g_any_masked_rc = g_any_masked_dc = 0;
    for (auto &row : g_first_lacking)
      for (int &p : row) p = -1;
    g_first_incoherent = -1;
  }
  if (!(r.capable && r.coherent) && g_first_incoherent < 0) g_first_incoherent = pe;
  if (r.capable) {
    const uint16_t sizes[2] = {r.masked ? r.masked_sizes_rc : uint16_t(0),
                               r.masked ? r.masked_sizes_dc : uint16_t(0)};
    for (int t = 0; t < 2; ++t)
      for (int bit = 0; bit < 16; ++bit)
        if (!(sizes[t] >> bit & 1) && g_first_lacking[t][bit] < 0) g_first_lacking[t][bit] = pe;
    g_job_masked_rc &= sizes[0];
    g_job_masked_dc &= sizes[1];
    g_any_masked_rc |= sizes[0];
    g_any_masked_dc |= sizes[1];
  }
  if (r.reachable && g_rdma) g_rdma->transport.set_peer(pe, r.address);
  if (r.reachable && g_kernel && r.kernel == g_kernel) ++g_sharing_kernel;
  return r.capable != 0;
}

atomics::AtomicBackend *rdma_start(Bootstrap &boot) {
  if (!g_rdma) fatal("shmem_init", "no RDMA device on this PE: %s", g_why_not.c_str());
  Rdma &r = *g_rdma;
  // RC or DC: every PE decides the same from the same records.
  const std::string &t = rt.config.transport;
  if (t == "dc" && g_no_dc_pe >= 0)
    fatal("shmem_init", "HOSHMEM_TRANSPORT=dc, but PE %d cannot use DC: %s", g_no_dc_pe,
          g_no_dc.c_str());
  bool dc = t == "dc";
  if (dc) {
    g_transport_reason = "HOSHMEM_TRANSPORT=dc";
  } else if (t == "auto" && g_no_dc_pe >= 0) {
    g_transport_reason = "auto: PE " + std::to_string(g_no_dc_pe) + " cannot use DC (" + g_no_dc +
                         ")";
  } else if (t == "auto") {
    dc = rt.npes >= kDcCrossover;
    g_transport_reason = "auto: " + std::to_string(rt.npes) + " PEs, " +
                         (dc ? "at least " : "fewer than ") + std::to_string(kDcCrossover) +
                         " (DC from there)";
  } else {
    g_transport_reason = "HOSHMEM_TRANSPORT=" + t;
  }
  // Coherent mode: no masked atomic (none is a PCIe atomic) reaches a word that CPU atomics
  // may update; the operations that needed one become compare-swap loops.
  if (rt.coherent) g_job_masked_rc = g_job_masked_dc = 0;
  r.device->limit_masked_atomics(g_job_masked_rc, g_job_masked_dc);
  g_masked_limited_by = -1;
  for (int t = 0; t < 2; ++t)
    for (int bit = 0; bit < 16; ++bit)
      if (((t ? g_any_masked_dc : g_any_masked_rc) >> bit & 1) && g_first_lacking[t][bit] >= 0 &&
          (g_masked_limited_by < 0 || g_first_lacking[t][bit] < g_masked_limited_by))
        g_masked_limited_by = g_first_lacking[t][bit];
  std::string why;
  if (dc && !r.transport.use_dc(static_cast<unsigned>(rt.config.dci_count), &why))
    fatal("shmem_init", "cannot start the DC transport: %s", why.c_str());
  if (!dc) r.transport.close_dc_target();  // every PE chose RC: nothing will reach it
  // The control area (team slots: the library's messages) and the heap are one address range
  // (two files side by side; the heap's may be of huge pages): one region.
  r.file_base = reinterpret_cast<uintptr_t>(rt.memory.own_file());
  r.file_size = rt.memory.file_size();
  check_pinnable(r.file_size + (rt.space.data.mapped ? rt.space.data.size : 0), r.device->name());
  r.file_mr = register_range(r.file_base, r.file_size, kRemoteAccess);
  r.data_mr = rt.space.data.mapped ? register_range(rt.space.data.base, rt.space.data.size,
                                                    kRemoteAccess)
                                   : nullptr;
  if (!r.file_mr || (rt.space.data.mapped && rt.space.data.size && !r.data_mr))
    fatal("shmem_init", "cannot register the symmetric heap (%zu bytes) and globals with %s: %s "
          "(raise the locked-memory limit, ulimit -l, or set SHMEM_SYMMETRIC_SIZE smaller)",
          rt.space.heap.size, r.device->name(), strerror(errno));
  // Sources and destinations there go zero-copy; any other memory through bounce buffers.
  r.transport.add_registered(rt.memory.own_file(), r.file_size, r.file_mr->lkey);
  if (r.data_mr) r.transport.add_registered(r.data_mr->addr, r.data_mr->length, r.data_mr->lkey);
  SegmentRecord mine{r.file_base, rt.space.data.base, r.file_mr->rkey,
                     r.data_mr ? r.data_mr->rkey : 0};
  boot.put(kSegmentsKey, &mine, sizeof mine);
  boot.exchange();
  r.segments.resize(static_cast<size_t>(rt.npes));
  for (int pe = 0; pe < rt.npes; ++pe) {
    std::vector<uint8_t> bytes = boot.get(pe, kSegmentsKey);
    if (bytes.size() != sizeof(SegmentRecord))
      fatal("shmem_init", "PE %d published no memory keys", pe);
    SegmentRecord s;
    memcpy(&s, bytes.data(), sizeof s);
    r.segments[static_cast<size_t>(pe)] = {s.data_base, s.file_rkey, s.data_rkey};
    if (s.file_base != r.file_base && r.file_bases.empty()) {  // not where ours is: keep all
      r.file_bases.reserve(static_cast<size_t>(rt.npes));
      r.file_bases.assign(static_cast<size_t>(pe), r.file_base);  // those before were
    }
    if (r.file_bases.capacity()) r.file_bases.push_back(s.file_base);
  }
  r.same_file_base = r.file_bases.empty();
  // The API's inline paths (rdma_inline.h) need the heap where ours is and make none of
  // SHMEM_DEBUG's checks. The add serves HCA atomics only; in coherent mode this node's PEs take
  // CPU atomics, which it does not tell apart: it serves only PEs alone on their node.
  bool node_peers = false;
  for (int pe = 0; pe < rt.npes; ++pe) node_peers = node_peers || (pe != rt.me && rt.control[pe]);
  // They write mlx5 WQEs: over plain verbs a call would only try and fall through.
  const bool inline_paths = r.same_file_base && !rt.debug && r.transport.raw_wqes();
  if (inline_paths && rt.mode == atomics::AtomicityMode::AllHardware &&
      !(rt.coherent && node_peers))
    rdma_add_path = {r.transport.lane_table(), r.file_base, r.file_size, rt.space.data.base,
                     r.data_mr ? rt.space.data.size : 0, r.segments.data(), &r.transport,
                     &r.device->atomics(), r.transport.dc()};
  // The put serves what a user may write: the heap and the globals.
  if (inline_paths)
    rdma_put_path = {r.transport.lane_table(), rt.space.heap.base, rt.space.heap.size,
                     rt.space.data.base, r.data_mr ? rt.space.data.size : 0, r.segments.data(),
                     &r.transport, nullptr, r.transport.dc(), r.transport.max_inline()};
  peer::routes.network = &r;
  return &r;
}

ring::Link *rdma_ring_link() {
  if (!g_rdma) return nullptr;
  if (!g_ring_link) g_ring_link = std::make_unique<RingLink>(*g_rdma);
  return g_ring_link.get();
}

void rdma_stop() {
  g_ring_link.reset();
  if (!g_rdma) return;
  peer::routes.network = nullptr;
  rdma_add_path = rdma_put_path = {};
  g_no_dc_pe = -1;
  g_no_dc.clear();
  g_rdma->transport.quiet();
  g_rdma->transport.shutdown();
  for (ibv_mr *mr : {g_rdma->file_mr, g_rdma->data_mr})
    if (mr) ibv_dereg_mr(mr);
  delete g_rdma;
  g_rdma = nullptr;
}

void rdma_put(int lane, int pe, void *sym, const void *source, size_t bytes, bool nbi) {
  g_rdma->transport.put(lane, pe, source, bytes, g_rdma->remote(sym, pe), nbi);
}

void rdma_get(int lane, int pe, void *dest, const void *sym, size_t bytes, bool nbi) {
  g_rdma->transport.get(lane, pe, dest, bytes, g_rdma->remote(sym, pe), nbi);
}

void rdma_pe_quiet(int lane, const int *pes, size_t npes) {
  g_rdma->transport.pe_quiet(lane, pes, npes);
}

void rdma_quiet(int lane) { g_rdma->transport.quiet(lane); }

ib::Device *rdma_device() { return g_rdma ? g_rdma->device.get() : nullptr; }

int rdma_open_lane(bool exclusive) {
  if (!g_rdma || !rt.remote_atomics || rt.rma_over_ud) return 0;  // UD: one queue pair
  const int lane = g_rdma->transport.open_lane(exclusive);
  return lane > 0 ? lane : 0;
}

void rdma_close_lane(int lane) {
  if (g_rdma && lane > 0) g_rdma->transport.close_lane(lane);
}

const char *rdma_transport_name() {
  return g_rdma && g_rdma->transport.dc() ? "dc" : "rc";
}

std::string rdma_transport_reason() { return g_transport_reason; }

const char *rdma_queues() {
  if (g_rdma && g_rdma->transport.dc()) {
    static char text[96];
    snprintf(text, sizeof text, "DC: one DC target per PE, %u initiators per context",
             g_rdma->transport.dci_count());
    return text;
  }
  return "RC queue pairs, connected on first use";
}

std::string rdma_footprint() {
  if (!g_rdma) return "-";
  const rc::Transport::Footprint f = g_rdma->transport.footprint();
  // The memory keys of every PE's segments are per-peer state too.
  const size_t per_peer = f.bytes_per_peer + sizeof(PeerSegments) +
                          (g_rdma->same_file_base ? 0 : sizeof(uint64_t));
  char text[256];
  snprintf(text, sizeof text,
           "%zu queue pairs, %zu KiB in their queues, %zu KiB in lanes (CQs, bounce buffers), "
           "%zu bytes per peer (%zu KiB for %d PEs)",
           f.queue_pairs, f.queue_bytes / 1024, f.lane_bytes / 1024, per_peer,
           per_peer * static_cast<size_t>(rt.npes) / 1024, rt.npes);
  return text;
}

const char *rdma_post_path() {
  if (!g_rdma) return "-";
  return g_rdma->transport.raw_wqes() ? "mlx5 WQEs written into the send queue"
                                      : "ibv_post_send (HOSHMEM_RC_VERBS=1 or not mlx5)";
}

static_assert(rc::Transport::kCacheThreshold == 64 * 1024,
              "HOSHMEM_RC_CACHE_MIN's default in config.cc's table says 64K");

static_assert(rc::Transport::kDefaultAckTimeout == 18,
              "HOSHMEM_RC_TIMEOUT's default in config.cc's table says 18");

std::string rdma_ack_timeout() {
  if (!g_rdma) return "-";
  const unsigned n = g_rdma->transport.ack_timeout();
  char text[96];
  snprintf(text, sizeof text, "%.3g ms per try, 7 tries (HOSHMEM_RC_TIMEOUT=%u)",
           4.096e-3 * static_cast<double>(uint64_t{1} << n), n);
  return text;
}

std::string rdma_cache_description() {
  return g_rdma ? g_rdma->transport.cache_description() : "-";
}

int rdma_first_incoherent() { return g_first_incoherent; }

std::string rdma_description() {
  if (g_rdma && rt.coherent)
    return g_rdma->device->describe() + "; masked atomics unused (coherent mode)";
  if (g_rdma && g_masked_limited_by >= 0)
    return g_rdma->device->describe() + "; masked atomics as PE " + std::to_string(g_masked_limited_by) +
           "'s device has them (the job uses what every PE's has)";
  if (g_rdma) return g_rdma->device->describe();
  return rt.config.atomics == "sw" ? "not opened (HOSHMEM_ATOMICS=sw)" : g_why_not;
}

}  // namespace hoshmem
