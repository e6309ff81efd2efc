// lib/transport/dc: the objects of Dynamically Connected transport on mlx5, for the RDMA engine
// of lib/transport/rc (which drives DC initiators exactly as it drives RC queue pairs, with an
// address vector in every WQE).
//
// A PE has one DC target (DCT) that every other PE reaches, with the SRQ and CQ a DCT needs
// even when it only serves RDMA and atomics, and a few DC initiators (DCIs) per lane, each able
// to talk to any DCT, one at a time. Every PE of a job uses the same DC access key (job_key): a
// DCT accepts only WQEs that carry it.
//
// What a PE needs to reach a peer is its DCT number and port address. On InfiniBand the WQE's
// address vector is built from them: the 16-byte compact form where the device advertises it
// (QUERY_HCA_CAP compact_address_vector), else the whole 48 bytes with no GRH. Where every
// packet needs a GRH (RoCE; an InfiniBand port that requires one) it is copied from an address
// handle made for the peer on first use (on RoCE the kernel resolves its destination MAC), as
// rdma-core's mlx5dv_wr_set_dc_addr does.
#pragma once

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <cstdint>
#include <string>
#include <vector>

#include "lib/transport/ib/device.h"
#include "lib/transport/ib/wqe.h"

namespace hoshmem::dc {

// The DC access key of the job named `job` (the launcher's job identifier): the same on every
// PE of the job, different between jobs, never 0.
uint64_t job_key(const std::string &job);

// Whether `device` can run the DC transport: an mlx5 device reached through its WQEs whose
// capabilities say DC (*why says why not).
bool supported(const ib::Device &device, std::string *why);

// This PE's DC target: a DCT with its SRQ and CQ, in RTR, accepting RDMA reads, writes and
// atomics that carry `key`.
class Target {
 public:
  Target() = default;
  Target(const Target &) = delete;
  Target &operator=(const Target &) = delete;
  ~Target() { close(); }
  // Creates the target (in INIT: its number can be published) ... `srq` and `cq` (both or
  // neither): the transport's arrivals (writes with immediate) instead of a receive side of its
  // own, which nothing then uses.
  bool open(const ib::Device &device, uint64_t key, std::string *why, ibv_srq *srq = nullptr,
            ibv_cq *cq = nullptr);
  // ... and starts it once the job's smallest port MTU is known: its responses (read data) are
  // packets of `path_mtu`, which every initiator's port must take. Before the job exchanges
  // memory keys, so no peer reaches it earlier.
  bool start(const ib::Device &device, ibv_mtu path_mtu, std::string *why);
  void close();
  uint32_t number() const { return dct_ ? dct_->qp_num : 0; }

 private:
  ibv_cq *cq_ = nullptr;    // owned unless shared
  ibv_srq *srq_ = nullptr;  // owned unless shared
  bool shared_ = false;
  ibv_qp *dct_ = nullptr;
};

// A DC initiator in RTS on the device's port: `depth` WQEs, `max_inline` bytes inline,
// `rd_atomic` reads and atomics in flight, packets of `path_mtu` (one initiator reaches every
// target: the smallest port MTU among them); completions (send and receive: it has none) to
// `cq`; each try waits `ack_timeout` (4.096 us * 2^N) for an acknowledgement. nullptr on failure
// (errno set).
ibv_qp *create_initiator(const ib::Device &device, ibv_cq *cq, uint32_t depth,
                         uint32_t max_inline, unsigned rd_atomic, ibv_mtu path_mtu,
                         uint8_t ack_timeout);

// The address vectors of a job's DCTs.
class Addresses {
 public:
  // `peers` slots; `key` goes into every vector.
  bool init(const ib::Device &device, uint64_t key, size_t peers, std::string *why);
  void clear();
  // Where `peer`'s DCT is: its number and port address (from its published record).
  void set(int peer, uint32_t dct, uint16_t lid, const ibv_gid &gid);
  // The address vector of `peer` (written into *out), or segments 0 if it cannot be made (its
  // address handle could not be created).
  ib::AddressVector get(int peer, mlx5_wqe_av *out);
  // The bytes of every vector: 16 (compact) or 48.
  unsigned bytes() const { return compact_ ? 16 : sizeof(mlx5_wqe_av); }
  // Bytes this object keeps per peer: 8 on InfiniBand (DCT number and LID); RoCE adds the GID,
  // the address handle and its vector's address (the handle itself is rdma-core's).
  size_t bytes_per_peer() const {
    return peers_.empty() ? 0
                          : sizeof(Peer) + (global_ ? sizeof(ibv_gid) + 2 * sizeof(void *) : 0);
  }

 private:
  struct Peer {  // InfiniBand: all it takes to address a peer
    uint32_t dct;
    uint16_t lid;
  };
  const ib::Device *device_ = nullptr;
  bool global_ = false;   // GRH in every vector: copied from address handles
  bool compact_ = false;  // 16-byte vectors
  mlx5_wqe_av fixed_{};   // what every InfiniBand vector holds: the key, rate, SL, no GRH
  std::vector<Peer> peers_;
  // RoCE only: the GID of each peer and its address handle once made.
  std::vector<ibv_gid> gids_;
  ib::AddressHandles handles_;
  std::vector<const mlx5_wqe_av *> vectors_;  // inside the handles (rdma-core's copy)
  uint64_t key_ = 0;
};

}  // namespace hoshmem::dc
