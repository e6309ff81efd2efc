// lib/core: the all-HW mode's atomic backend over the RC transport (hca_atomics.h).
#include "lib/core/hca_atomics.h"

#include <cstring>
#include <memory>

#include "lib/atomics/hca_encoding.h"
#include "lib/core/runtime.h"
#include "lib/transport/ib/device.h"
#include "lib/transport/rc/rc_transport.h"

namespace hoshmem {
namespace {

constexpr char kProbeKey[] = "hoshmem.hca";
constexpr char kSegmentsKey[] = "hoshmem.hca.seg";

struct ProbeRecord {
  uint8_t capable;
  rc::PeerAddress address;
};

struct SegmentRecord {  // where a PE's segments are and their keys: O(1) per PE
  uint64_t heap_base, data_base;
  uint32_t heap_rkey, data_rkey;
};

[[noreturn]] void rc_failed(int pe, const char *cause) {
  fatal("HCA atomic", "operation on PE %d failed: %s", pe, cause);
}

class HcaAtomics final : public atomics::AtomicBackend {
 public:
  const char *name() const override { return "HCA atomics over RC"; }

  void execute(const atomics::AmoRequest &r, bool) override {
    const ib::RemoteAddr where = remote(r.target, r.pe);
    const ib::AtomicCaps &caps = device->atomics();
    uint64_t old;
    // Straight to the HCA when it has the encoding this op needs on this size; otherwise
    // compare-swap loops.
    const bool masked_here = caps.masked && (caps.masked_sizes_rc & r.size);
    const bool direct = r.size == 8 && simple(r.op) ? caps.standard : masked_here;
    if (direct) {
      old = transport.atomic(r.pe, atomics::encode_for_hca(r.op, r.size, r.operand, r.compare),
                             where);
    } else {
      old = cas_loop(r, where);
    }
    if (r.fetch_out) memcpy(r.fetch_out, &old, r.size);  // little-endian: the low bytes
    if (r.op != atomics::AmoOp::Fetch && rt.control[r.pe]) notify(r.pe);  // a waiter here
  }

  void quiet() override { transport.quiet(); }

  std::unique_ptr<ib::Device> device;
  rc::Transport transport;
  std::vector<SegmentRecord> segments;
  ibv_mr *heap_mr = nullptr, *data_mr = nullptr;

 private:
  // 8-byte operations the standard atomics do without masks.
  static bool simple(atomics::AmoOp op) {
    return op == atomics::AmoOp::Fetch || op == atomics::AmoOp::FetchAdd ||
           op == atomics::AmoOp::CompareSwap;
  }

  ib::RemoteAddr remote(const void *sym, int pe) const {
    const uintptr_t a = reinterpret_cast<uintptr_t>(sym);
    const SegmentRecord &s = segments[static_cast<size_t>(pe)];
    if (uintptr_t off = a - rt.space.heap.base; off < rt.space.heap.size)
      return {s.heap_base + off, s.heap_rkey};
    return {s.data_base + (a - rt.space.data.base), s.data_rkey};
  }

  // Without the masked atomics this operation needs: compare-swap loops on the aligned 8-byte
  // word that holds it (still atomic with respect to every other HCA atomic).
  uint64_t cas_loop(const atomics::AmoRequest &r, const ib::RemoteAddr &where) {
    const ib::RemoteAddr word{where.addr & ~uint64_t{7}, where.rkey};
    const unsigned shift = static_cast<unsigned>(where.addr & 7) * 8;  // little-endian host
    const uint64_t mask = r.size == 8 ? ~uint64_t{0} : ((uint64_t{1} << 32) - 1) << shift;
    const atomics::HcaAtomic op = atomics::encode_for_hca(r.op, r.size, r.operand, r.compare);
    uint64_t seen = transport.atomic(r.pe, atomics::encode_for_hca(atomics::AmoOp::Fetch, 8, 0, 0),
                                     word);
    for (;;) {
      uint64_t part = (seen & mask) >> shift;
      const uint64_t old = atomics::hca_apply(op, &part);  // part becomes the new value
      const uint64_t next = (seen & ~mask) | ((part << shift) & mask);
      if (next == seen) return old;  // nothing to write: the read was the atomic
      const uint64_t got = transport.atomic(
          r.pe, atomics::encode_for_hca(atomics::AmoOp::CompareSwap, 8, next, seen), word);
      if (got == seen) return old;
      seen = got;
    }
  }
};

HcaAtomics *g_hca = nullptr;
std::string g_why_not;  // why this PE has no HCA atomics

ibv_mr *register_segment(const SegmentMap &s) {
  if (s.size == 0) return nullptr;
  return ibv_reg_mr(g_hca->device->pd(), reinterpret_cast<void *>(s.base), s.size,
                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                        IBV_ACCESS_REMOTE_ATOMIC);
}

}  // namespace

bool hca_probe(Bootstrap &boot, std::string *why) {
  ProbeRecord mine{};
  if (rt.config.atomics != "sw") {
    auto spec = ib::parse_device_spec(rt.config.device.c_str());
    if (!spec)
      fatal("shmem_init", "invalid HOSHMEM_DEVICE='%s': expected a device name, optionally with "
            ":port (e.g. mlx5_0:1)", rt.config.device.c_str());
    auto hca = std::make_unique<HcaAtomics>();
    hca->device = std::make_unique<ib::Device>();
    if (!hca->device->open(*spec, why)) {
      if (!spec->name.empty() && why->empty()) *why = "no RDMA device";
    } else if (!hca->device->atomics().standard) {
      *why = std::string(hca->device->name()) + " has no atomics";
    } else if (!hca->transport.init(hca->device.get(), rt.me, rt.npes, rc_failed, why)) {
    } else {
      mine.capable = 1;
      mine.address = hca->transport.address();
      g_hca = hca.release();
    }
  }
  g_why_not = mine.capable ? "" : (why->empty() ? "no RDMA device" : *why);
  boot.put(kProbeKey, &mine, sizeof mine);
  return mine.capable;
}

bool hca_capable(Bootstrap &boot, int pe) {
  std::vector<uint8_t> bytes = boot.get(pe, kProbeKey);
  ProbeRecord r{};
  if (bytes.size() == sizeof r) memcpy(&r, bytes.data(), sizeof r);
  if (r.capable && g_hca) g_hca->transport.set_peer(pe, r.address);
  return r.capable != 0;
}

atomics::AtomicBackend *hca_start(Bootstrap &boot) {
  if (!g_hca) fatal("shmem_init", "all-HW mode without a device on this PE: %s", g_why_not.c_str());
  g_hca->heap_mr = register_segment(rt.space.heap);
  g_hca->data_mr = rt.space.data.mapped ? register_segment(rt.space.data) : nullptr;
  if (!g_hca->heap_mr)
    fatal("shmem_init", "cannot register the symmetric heap (%zu bytes) with %s: %s (raise the "
          "locked-memory limit, ulimit -l)", rt.space.heap.size, g_hca->device->name(),
          strerror(errno));
  SegmentRecord mine{rt.space.heap.base, rt.space.data.base, g_hca->heap_mr->rkey,
                     g_hca->data_mr ? g_hca->data_mr->rkey : 0};
  boot.put(kSegmentsKey, &mine, sizeof mine);
  boot.exchange();
  g_hca->segments.resize(static_cast<size_t>(rt.npes));
  for (int pe = 0; pe < rt.npes; ++pe) {
    std::vector<uint8_t> bytes = boot.get(pe, kSegmentsKey);
    if (bytes.size() != sizeof(SegmentRecord))
      fatal("shmem_init", "PE %d published no memory keys", pe);
    memcpy(&g_hca->segments[static_cast<size_t>(pe)], bytes.data(), sizeof(SegmentRecord));
  }
  return g_hca;
}

void hca_stop() {
  if (!g_hca) return;
  g_hca->transport.quiet();
  g_hca->transport.shutdown();
  if (g_hca->heap_mr) ibv_dereg_mr(g_hca->heap_mr);
  if (g_hca->data_mr) ibv_dereg_mr(g_hca->data_mr);
  delete g_hca;
  g_hca = nullptr;
}

std::string hca_description() {
  if (g_hca) return g_hca->device->describe();
  return rt.config.atomics == "sw" ? "not opened (HOSHMEM_ATOMICS=sw)" : g_why_not;
}

}  // namespace hoshmem
