// lib/transport/ib: the RDMA device a PE uses: which device and port (HOSHMEM_DEVICE), its
// protection domain, its address on the fabric, and what its atomics can do.
//
// Capabilities come from the device itself: on mlx5 a DevX QUERY_HCA_CAP (general and atomic
// capabilities: masked atomics, their operand sizes for RC and DC, the byte order of 8-byte atomic
// replies, PCIe atomics); where DevX is refused (not mlx5, or no permission), ibv_query_device_ex,
// which knows only the standard 8-byte atomics.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hoshmem::ib {

struct AtomicCaps {
  bool from_devx = false;          // read by QUERY_HCA_CAP (else ibv_query_device_ex)
  bool standard = false;           // 8-byte compare-swap and fetch-add
  bool masked = false;             // masked compare-swap and fetch-add (mlx5 extended atomics)
  uint16_t masked_sizes_rc = 0;    // operand sizes in bytes, as bits (4 | 8 | ... | 256), over RC
  uint16_t masked_sizes_dc = 0;    // the same over DC
  bool reply8_host_endian = false; // 8-byte replies in host order (else big-endian)
  uint16_t pci_fetch_add = 0;      // PCIe atomic operand sizes (bytes, as bits), 0 if none
  uint16_t pci_compare_swap = 0;
  bool dc = false;                 // DC targets (DCT) supported
  bool compact_av = false;         // DC WQEs may carry the 16-byte address vector (no GRH)

  // What a 4- or 8-byte reply of the HCA holds, in host order. 4-byte (masked) replies are
  // big-endian in every mode: the mode bit covers 8-byte replies only.
  uint64_t reply_value(const void *reply, unsigned size) const;
};

// HOSHMEM_DEVICE: "name" or "name:port"; nullopt if malformed.
struct DeviceSpec {
  std::string name;  // empty: any
  int port = 0;      // 0: the first active one
};
std::optional<DeviceSpec> parse_device_spec(const char *text);

// How packets are addressed (HOSHMEM_IB_GID_INDEX, HOSHMEM_IB_TC, HOSHMEM_IB_SL); -1: the default.
struct Addressing {
  int gid_index = -1;      // RoCE: the best RoCE v2 GID; InfiniBand: 0
  int traffic_class = -1;  // the port's configured one if the system shows it, else RoCE 106, IB 0
  int service_level = -1;  // RoCE 3 (the priority lossless setups give traffic class 106), IB 0
};

class Device {
 public:
  Device() = default;
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;
  ~Device();

  // Opens the device and port `spec` names (default: the first active port of the device nearest
  // to the calling thread's CPUs, see device_choice.h).
  // False with *why set when there is none; *why is empty when the machine has no RDMA device.
  bool open(const DeviceSpec &spec, std::string *why, const Addressing &addressing = {});

  ibv_context *context() const { return ctx_; }
  ibv_pd *pd() const { return pd_; }
  const char *name() const { return name_.c_str(); }
  uint8_t port() const { return port_; }
  const ibv_port_attr &port_attr() const { return port_attr_; }
  bool roce() const { return port_attr_.link_layer == IBV_LINK_LAYER_ETHERNET; }
  // Every address needs a GRH: RoCE, or an InfiniBand port that requires one (IBV_QPF_GRH_REQUIRED:
  // an SR-IOV virtual function sharing its physical function's LID).
  bool needs_grh() const {
    return roce() || (port_attr_.flags & IBV_QPF_GRH_REQUIRED) != 0;
  }
  int gid_index() const { return gid_index_; }  // the source GID of every GRH
  const ibv_gid &gid() const { return gid_; }
  // Reads and atomics a QP may have in flight (max_qp_init_rd_atom) and may take from a peer as
  // responder (max_qp_rd_atom): what the device allows.
  unsigned max_rd_atomic() const { return max_rd_atomic_; }
  unsigned max_dest_rd_atomic() const { return max_dest_rd_atomic_; }
  uint8_t traffic_class() const { return traffic_class_; }
  uint8_t service_level() const { return service_level_; }
  // The address of the port at `lid` / `gid` as this port reaches it: LID, service level, and
  // where needed a GRH from this port's GID with the traffic class. For a QP's RTR (a DC target
  // or initiator has no peer: lid 0, a zero GID) and for address handles.
  void fill_address(ibv_ah_attr *attr, uint16_t lid, const ibv_gid &gid) const;
  bool mlx5() const { return mlx5_; }
  const AtomicCaps &atomics() const { return caps_; }
  // The transport posts through plain verbs (HOSHMEM_RC_VERBS=1 on an mlx5 device): only the
  // standard 8-byte atomics are reachable, whatever the HCA could do with raw WQEs.
  void use_standard_atomics_only() {
    caps_.masked = false;
    caps_.masked_sizes_rc = caps_.masked_sizes_dc = 0;
  }
  // The job's PEs agreed on these masked-atomic operand sizes (the intersection of their
  // devices'): the target's HCA executes a masked atomic, so none beyond them may be posted.
  void limit_masked_atomics(uint16_t sizes_rc, uint16_t sizes_dc) {
    caps_.masked_sizes_rc &= sizes_rc;
    caps_.masked_sizes_dc &= sizes_dc;
    if (!caps_.masked_sizes_rc && !caps_.masked_sizes_dc) caps_.masked = false;
  }
  // Why open() took this device and port: "HOSHMEM_DEVICE", "nearest to the PE's CPUs 1 (NUMA
  // node 1)", "first active port (...)" (device_choice.h).
  const std::string &choice() const { return choice_; }
  // One line for SHMEM_INFO: device, port, link, address, why it was chosen, atomic capabilities.
  std::string describe() const;

  // An address handle for datagrams to the port at `lid` (InfiniBand) or `gid` (RoCE, through
  // this port's RoCE v2 GID). nullptr on failure (errno set).
  ibv_ah *create_ah(uint16_t lid, const ibv_gid &gid) const;
  // A UD queue pair in RTS on this port with Q_Key `qkey`: `depth` sends and receives, one SGE
  // each, `max_inline` bytes inline. nullptr on failure.
  ibv_qp *create_ud_qp(ibv_cq *send_cq, ibv_cq *recv_cq, uint32_t depth, uint32_t qkey,
                       uint32_t max_inline) const;

 private:
  bool read_caps_devx();
  void read_caps_verbs();
  bool probe_dc() const;
  // The source GID (and its index) of port `port` on `ctx`; false with *why set if it has none
  // that fits (a RoCE port without a RoCE v2 GID, a HOSHMEM_IB_GID_INDEX it does not have).
  bool choose_gid(ibv_context *ctx, uint8_t port, const ibv_port_attr &attr, int wanted,
                  std::string *why);
  void choose_traffic(const Addressing &addressing);

  ibv_context *ctx_ = nullptr;
  ibv_pd *pd_ = nullptr;
  std::string name_;
  std::string choice_;
  uint8_t port_ = 0;
  ibv_port_attr port_attr_{};
  int gid_index_ = -1;
  ibv_gid gid_{};
  uint8_t traffic_class_ = 0, service_level_ = 0;
  unsigned max_rd_atomic_ = 0, max_dest_rd_atomic_ = 0;
  std::string traffic_source_;  // where the traffic class came from (SHMEM_INFO)
  bool mlx5_ = false;
  AtomicCaps caps_;
};

// Address handles for datagrams, one per peer, made on first use.
class AddressHandles {
 public:
  explicit AddressHandles(const Device *device = nullptr, size_t peers = 0) { reset(device, peers); }
  AddressHandles(const AddressHandles &) = delete;
  AddressHandles &operator=(const AddressHandles &) = delete;
  ~AddressHandles() { reset(nullptr, 0); }
  // Destroys every handle; then `peers` empty slots on `device`.
  void reset(const Device *device, size_t peers);
  // The handle for `peer` at `lid`/`gid` (made now if it is the first); nullptr on failure.
  ibv_ah *get(int peer, uint16_t lid, const ibv_gid &gid);
  size_t slots() const { return handles_.size(); }

 private:
  const Device *device_ = nullptr;
  std::vector<ibv_ah *> handles_;
};

}  // namespace hoshmem::ib
