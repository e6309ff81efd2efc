// lib/transport/ib: device and port choice, capabilities (device.h).
#include "lib/transport/ib/device.h"

#include <endian.h>
#include <infiniband/mlx5dv.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "lib/transport/ib/device_choice.h"

namespace hoshmem::ib {
namespace {

// QUERY_HCA_CAP (the device's command interface, reached through DevX): command and output
// layouts as in the public mlx5 programming reference (rdma-core's mlx5_ifc.h). Fields are
// big-endian bit fields, addressed by bit offset from the start of the capability block.
constexpr uint16_t kQueryHcaCap = 0x100;
constexpr uint16_t kCapGeneral = 0, kCapAtomic = 3;  // capability type: op_mod = type << 1 | cur
constexpr size_t kCapOffset = 0x10;                  // status, syndrome, reserved: 16 bytes
constexpr size_t kCapBytes = 0x1000;

// General capabilities.
constexpr unsigned kGenDct = 0x21a, kGenAtomic = 0x21e, kGenCompactAv = 0x200;
// Atomic capabilities.
constexpr unsigned kAtomicReply8Mode = 0x40;  // 2 bits: 1 = host endianness
constexpr unsigned kAtomicOperations = 0x90, kAtomicSizeQp = 0xb0, kAtomicSizeDc = 0xd0;
constexpr unsigned kPciFetchAdd = 0x280, kPciCompareSwap = 0x2a0;
// atomic_operations bits
constexpr uint32_t kOpCompareSwap = 1, kOpFetchAdd = 2, kOpMaskedCompareSwap = 4,
                   kOpMaskedFetchAdd = 8;

uint32_t get_bits(const uint8_t *block, unsigned bit_offset, unsigned bits) {
  uint32_t dword;
  memcpy(&dword, block + bit_offset / 32 * 4, 4);
  dword = be32toh(dword);
  const unsigned shift = 32 - bit_offset % 32 - bits;
  return (dword >> shift) & (bits == 32 ? ~0u : (1u << bits) - 1);
}

// One QUERY_HCA_CAP of `type` (current values); the capability block, or false.
bool query_cap(ibv_context *ctx, uint16_t type, uint8_t *out, size_t out_bytes) {
  uint32_t in[4] = {};
  in[0] = htobe32(uint32_t{kQueryHcaCap} << 16);
  in[1] = htobe32(uint32_t{type} << 1 | 1);
  memset(out, 0, out_bytes);
  return mlx5dv_devx_general_cmd(ctx, in, sizeof in, out, out_bytes) == 0 && out[0] == 0;
}

const char *link_name(uint8_t link_layer) {
  return link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand";
}

std::string size_list(uint16_t sizes) {
  std::string s;
  for (unsigned b : {4u, 8u, 16u, 32u, 64u, 128u, 256u})
    if (sizes & b) s += (s.empty() ? "" : "/") + std::to_string(b);
  return s.empty() ? "none" : s;
}

}  // namespace

uint64_t AtomicCaps::reply_value(const void *reply, unsigned size) const {
  if (size == 4) {
    uint32_t v;
    memcpy(&v, reply, 4);
    return be32toh(v);
  }
  uint64_t v;
  memcpy(&v, reply, 8);
  return reply8_host_endian ? v : be64toh(v);
}

std::optional<DeviceSpec> parse_device_spec(const char *text) {
  DeviceSpec spec;
  if (!text || !*text) return spec;
  const char *colon = strchr(text, ':');
  spec.name.assign(text, colon ? static_cast<size_t>(colon - text) : strlen(text));
  if (spec.name.empty()) return std::nullopt;
  if (colon) {
    char *end = nullptr;
    const long port = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || *end || port < 1 || port > 255) return std::nullopt;
    spec.port = static_cast<int>(port);
  }
  return spec;
}

Device::~Device() {
  if (pd_) ibv_dealloc_pd(pd_);
  if (ctx_) ibv_close_device(ctx_);
}

bool Device::open(const DeviceSpec &spec, std::string *why, const Addressing &addressing) {
  int count = 0;
  ibv_device **list = ibv_get_device_list(&count);
  if (!list || count == 0) {  // ENOSYS: a kernel without RDMA; no devices either way
    if (list) ibv_free_device_list(list);
    why->clear();
    return false;
  }
  std::string names;
  bool found = false;
  // HOSHMEM_DEVICE names none: the devices nearest to this PE's CPUs first (device_choice.h).
  const DeviceOrder order = spec.name.empty() ? DeviceOrder::of(list, count)
                                              : DeviceOrder(static_cast<size_t>(count));
  for (size_t k = 0; k < order.size() && !found; ++k) {
    const int i = static_cast<int>(order[k]);
    const char *name = ibv_get_device_name(list[i]);
    names += (names.empty() ? "" : ", ") + std::string(name);
    if (!spec.name.empty() && spec.name != name) continue;
    // mlx5 with DevX first: the capability query needs it.
    ibv_context *ctx = nullptr;
    bool mlx5 = mlx5dv_is_supported(list[i]);
    if (mlx5) {
      mlx5dv_context_attr attr{};
      attr.flags = MLX5DV_CONTEXT_FLAGS_DEVX;
      ctx = mlx5dv_open_device(list[i], &attr);
    }
    if (!ctx) ctx = ibv_open_device(list[i]);
    if (!ctx) {
      if (!spec.name.empty()) *why = "cannot open device " + spec.name + ": " + strerror(errno);
      continue;
    }
    ibv_device_attr attr{};
    if (ibv_query_device(ctx, &attr) != 0) {
      ibv_close_device(ctx);
      continue;
    }
    for (int p = 1; p <= attr.phys_port_cnt && !found; ++p) {
      if (spec.port && p != spec.port) continue;
      ibv_port_attr pa{};
      if (ibv_query_port(ctx, static_cast<uint8_t>(p), &pa) != 0) continue;
      if (pa.state != IBV_PORT_ACTIVE) {
        if (spec.port) *why = spec.name + " port " + std::to_string(p) + " is not active";
        continue;
      }
      // A port without a usable GID (a RoCE port with no RoCE v2 GID yet) is passed over for
      // the next one; the reason stays for the error if none is left.
      if (!choose_gid(ctx, static_cast<uint8_t>(p), pa, addressing.gid_index, why)) continue;
      ctx_ = ctx;
      max_rd_atomic_ = static_cast<unsigned>(attr.max_qp_init_rd_atom);
      max_dest_rd_atomic_ = static_cast<unsigned>(attr.max_qp_rd_atom);
      name_ = name;
      port_ = static_cast<uint8_t>(p);
      port_attr_ = pa;
      mlx5_ = mlx5;
      choice_ = spec.name.empty() ? order.why(static_cast<size_t>(i)) : "HOSHMEM_DEVICE";
      found = true;
    }
    if (!found) {
      if (!spec.name.empty() && spec.port > attr.phys_port_cnt)
        *why = spec.name + " has no port " + std::to_string(spec.port) + " (ports 1-" +
               std::to_string(attr.phys_port_cnt) + ")";
      ibv_close_device(ctx);
    }
  }
  ibv_free_device_list(list);
  if (!found) {
    if (why->empty())
      *why = spec.name.empty() ? "no device has an active port (devices: " + names + ")"
                               : "no device named " + spec.name + " (devices: " + names + ")";
    return false;
  }
  why->clear();
  choose_traffic(addressing);
  if (roce() && service_level_ > 7) {
    *why = "HOSHMEM_IB_SL=" + std::to_string(service_level_) + " is not a RoCE priority (0 to 7)";
    return false;
  }
  pd_ = ibv_alloc_pd(ctx_);
  if (!pd_) {
    *why = "cannot allocate a protection domain on " + name_ + ": " + strerror(errno);
    return false;
  }
  if (!(mlx5_ && read_caps_devx())) read_caps_verbs();
  return true;
}

// RoCE: a RoCE v2 GID (routable over IP). A port has one v2 GID per IP address of its netdev, the
// IPv6 link-local (fe80::) one usually first. Between hosts the IPv4 one (::ffff:a.b.c.d) is the
// address the network is set up to route, so it is preferred when the port has one, then a
// routable IPv6 GID, then fe80::. InfiniBand: GID 0 (the port GUID's), used only in a GRH.
bool Device::choose_gid(ibv_context *ctx, uint8_t port, const ibv_port_attr &attr, int wanted,
                        std::string *why) {
  const std::string where = std::string(ibv_get_device_name(ctx->device)) + " port " +
                            std::to_string(port);
  if (wanted >= 0) {
    ibv_gid_entry entry{};
    if (wanted >= attr.gid_tbl_len ||
        ibv_query_gid_ex(ctx, port, static_cast<uint32_t>(wanted), &entry, 0) != 0) {
      *why = where + " has no GID at HOSHMEM_IB_GID_INDEX=" + std::to_string(wanted) +
             " (its table has " + std::to_string(attr.gid_tbl_len) + " entries)";
      return false;
    }
    gid_index_ = wanted;
    gid_ = entry.gid;
    return true;
  }
  if (attr.link_layer != IBV_LINK_LAYER_ETHERNET) {
    gid_index_ = 0;
    if (ibv_query_gid(ctx, port, 0, &gid_) != 0) memset(&gid_, 0, sizeof gid_);
    return true;
  }
  int best = 3;  // rank of the chosen GID: 0 IPv4-mapped, 1 other IPv6, 2 link-local
  for (int i = 0; i < attr.gid_tbl_len && best > 0; ++i) {
    ibv_gid_entry entry{};
    if (ibv_query_gid_ex(ctx, port, static_cast<uint32_t>(i), &entry, 0) != 0) continue;
    if (entry.gid_type != IBV_GID_TYPE_ROCE_V2) continue;
    const uint8_t *raw = entry.gid.raw;
    static const uint8_t v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    const int rank = memcmp(raw, v4_mapped, sizeof v4_mapped) == 0 ? 0
                     : raw[0] == 0xfe && (raw[1] & 0xc0) == 0x80 ? 2
                                                                 : 1;
    if (rank >= best) continue;
    best = rank;
    gid_index_ = i;
    gid_ = entry.gid;
  }
  if (best == 3) *why = where + " is RoCE but has no RoCE v2 GID";
  return best < 3;
}

// RoCE: the traffic class the port is configured with (mlx5 shows it in sysfs as
// "Global tclass=N" once an administrator set one), else 106 (DSCP 26 with ECN capable: the
// class lossless RoCE setups reserve, with priority 3). InfiniBand: 0 and service level 0, the
// subnet's defaults. HOSHMEM_IB_TC and HOSHMEM_IB_SL override both.
void Device::choose_traffic(const Addressing &addressing) {
  int tc = roce() ? 106 : 0;
  traffic_source_ = "default";
  if (addressing.traffic_class >= 0) {
    tc = addressing.traffic_class;
    traffic_source_ = "HOSHMEM_IB_TC";
  } else if (roce()) {
    const std::string path = std::string("/sys/class/infiniband/") + name_ + "/tc/" +
                             std::to_string(port_) + "/traffic_class";
    if (FILE *f = fopen(path.c_str(), "r")) {
      char line[128] = "";
      const char *at = fgets(line, sizeof line, f) ? strstr(line, "tclass=") : nullptr;
      if (at && isdigit(static_cast<unsigned char>(at[7]))) {
        const long v = strtol(at + 7, nullptr, 10);
        if (v >= 0 && v <= 255) tc = static_cast<int>(v), traffic_source_ = "the port's";
      }
      fclose(f);
    }
  }
  traffic_class_ = static_cast<uint8_t>(tc);
  service_level_ = static_cast<uint8_t>(addressing.service_level >= 0 ? addressing.service_level
                                        : roce()                       ? 3
                                                                       : 0);
}

void Device::fill_address(ibv_ah_attr *attr, uint16_t lid, const ibv_gid &gid) const {
  attr->dlid = lid;
  attr->port_num = port_;
  attr->sl = service_level_;
  if (needs_grh()) {
    attr->is_global = 1;
    attr->grh.dgid = gid;
    attr->grh.sgid_index = static_cast<uint8_t>(gid_index_);
    attr->grh.hop_limit = 64;
    attr->grh.traffic_class = traffic_class_;
  }
}

bool Device::read_caps_devx() {
  uint8_t out[kCapOffset + kCapBytes];
  if (!query_cap(ctx_, kCapGeneral, out, sizeof out)) return false;
  const uint8_t *cap = out + kCapOffset;
  AtomicCaps c;
  c.from_devx = true;
  c.dc = get_bits(cap, kGenDct, 1) != 0;
  c.compact_av = get_bits(cap, kGenCompactAv, 1) != 0;
  if (get_bits(cap, kGenAtomic, 1)) {
    if (!query_cap(ctx_, kCapAtomic, out, sizeof out)) return false;
    const uint32_t ops = get_bits(cap, kAtomicOperations, 16);
    c.standard = (ops & (kOpCompareSwap | kOpFetchAdd)) == (kOpCompareSwap | kOpFetchAdd);
    c.masked = (ops & (kOpMaskedCompareSwap | kOpMaskedFetchAdd)) ==
               (kOpMaskedCompareSwap | kOpMaskedFetchAdd);
    if (c.masked) {
      // 4 to 256 bytes (bit n: 2^n bytes); the wide ones serve shmemx's masked atomics only.
      c.masked_sizes_rc = static_cast<uint16_t>(get_bits(cap, kAtomicSizeQp, 16) & 0x1fc);
      c.masked_sizes_dc = static_cast<uint16_t>(get_bits(cap, kAtomicSizeDc, 16) & 0x1fc);
    }
    c.reply8_host_endian = get_bits(cap, kAtomicReply8Mode, 2) == 1;
    c.pci_fetch_add = static_cast<uint16_t>(get_bits(cap, kPciFetchAdd, 16) << 2);
    c.pci_compare_swap = static_cast<uint16_t>(get_bits(cap, kPciCompareSwap, 16) << 2);
  }
  caps_ = c;
  return true;
}

// Without DevX nothing says whether the device has DC: an mlx5 device that creates a DC target
// through mlx5dv_create_qp has it.
bool Device::probe_dc() const {
  ibv_cq *cq = ibv_create_cq(ctx_, 1, nullptr, nullptr, 0);
  ibv_srq_init_attr srq_attr{};
  srq_attr.attr.max_wr = 1;
  srq_attr.attr.max_sge = 1;
  ibv_srq *srq = cq ? ibv_create_srq(pd_, &srq_attr) : nullptr;
  ibv_qp *dct = nullptr;
  if (srq) {
    ibv_qp_init_attr_ex attr{};
    attr.qp_type = IBV_QPT_DRIVER;
    attr.send_cq = attr.recv_cq = cq;
    attr.srq = srq;
    attr.pd = pd_;
    attr.comp_mask = IBV_QP_INIT_ATTR_PD;
    mlx5dv_qp_init_attr dv{};
    dv.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC;
    dv.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCT;
    dv.dc_init_attr.dct_access_key = 1;
    dct = mlx5dv_create_qp(ctx_, &attr, &dv);
  }
  const bool dc = dct != nullptr;
  if (dct) ibv_destroy_qp(dct);
  if (srq) ibv_destroy_srq(srq);
  if (cq) ibv_destroy_cq(cq);
  return dc;
}

void Device::read_caps_verbs() {
  AtomicCaps c;
  c.dc = mlx5_ && probe_dc();
  ibv_device_attr_ex attr{};
  if (ibv_query_device_ex(ctx_, nullptr, &attr) == 0) {
    c.standard = attr.orig_attr.atomic_cap != IBV_ATOMIC_NONE;
    // Verbs promise the fetched value in host order: an mlx5 kernel driver reports atomics only
    // once it has set the device's 8-byte reply mode to host order; other devices (soft-RoCE)
    // write the value as the CPU would.
    c.reply8_host_endian = true;
    c.pci_fetch_add = static_cast<uint16_t>(attr.pci_atomic_caps.fetch_add << 2);
    c.pci_compare_swap = static_cast<uint16_t>(attr.pci_atomic_caps.compare_swap << 2);
  }
  caps_ = c;
}

ibv_ah *Device::create_ah(uint16_t lid, const ibv_gid &gid) const {
  ibv_ah_attr attr{};
  fill_address(&attr, lid, gid);
  return ibv_create_ah(pd_, &attr);
}

ibv_qp *Device::create_ud_qp(ibv_cq *send_cq, ibv_cq *recv_cq, uint32_t depth, uint32_t qkey,
                             uint32_t max_inline) const {
  ibv_qp_init_attr init{};
  init.qp_type = IBV_QPT_UD;
  init.send_cq = send_cq;
  init.recv_cq = recv_cq;
  init.cap.max_send_wr = init.cap.max_recv_wr = depth;
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  init.cap.max_inline_data = max_inline;
  ibv_qp *qp = ibv_create_qp(pd_, &init);
  if (!qp) return nullptr;
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.port_num = port_;
  attr.qkey = qkey;
  bool ok = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                         IBV_QP_QKEY) == 0;
  attr.qp_state = IBV_QPS_RTR;
  ok = ok && ibv_modify_qp(qp, &attr, IBV_QP_STATE) == 0;
  attr.qp_state = IBV_QPS_RTS;
  attr.sq_psn = 0;
  ok = ok && ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0;
  if (!ok) {
    ibv_destroy_qp(qp);
    return nullptr;
  }
  return qp;
}

void AddressHandles::reset(const Device *device, size_t peers) {
  for (ibv_ah *ah : handles_)
    if (ah) ibv_destroy_ah(ah);
  device_ = device;
  handles_.assign(peers, nullptr);
}

ibv_ah *AddressHandles::get(int peer, uint16_t lid, const ibv_gid &gid) {
  ibv_ah *&ah = handles_[static_cast<size_t>(peer)];
  if (!ah) ah = device_->create_ah(lid, gid);
  return ah;
}

std::string Device::describe() const {
  char address[160];
  if (roce())
    snprintf(address, sizeof address, "RoCE v2 GID index %d", gid_index_);
  else
    snprintf(address, sizeof address, "LID %u%s", port_attr_.lid,
             needs_grh() ? (", GRH required: GID index " + std::to_string(gid_index_)).c_str()
                         : "");
  char traffic[96];
  snprintf(traffic, sizeof traffic, "traffic class %u (%s), service level %u", traffic_class_,
           traffic_source_.c_str(), service_level_);
  std::string s = name_ + ":" + std::to_string(port_) + " (" + link_name(port_attr_.link_layer) +
                  ", " + address + ", " + traffic + "); chosen: " + choice_ + "; atomics: ";
  if (!caps_.standard) return s + "none";
  s += caps_.masked ? "standard and masked (" + size_list(caps_.masked_sizes_rc) + " bytes over RC, " +
                          size_list(caps_.masked_sizes_dc) + " over DC)"
                    : std::string("standard 8-byte only (no masked atomics: compare-swap loops)");
  s += caps_.reply8_host_endian ? ", 8-byte replies in host order" : ", 8-byte replies big-endian";
  s += caps_.pci_fetch_add || caps_.pci_compare_swap
           ? ", PCIe atomics " + size_list(caps_.pci_fetch_add | caps_.pci_compare_swap) + " bytes"
           : ", no PCIe atomics";
  s += caps_.from_devx ? " [QUERY_HCA_CAP]"
                       : caps_.dc ? " [ibv_query_device_ex: DevX not available; DC: a target was created]"
                                  : " [ibv_query_device_ex: DevX not available]";
  return s;
}

}  // namespace hoshmem::ib
