// lib/transport/rc: RDMA over reliable-connected queue pairs, one per peer that is actually used,
// connected on first use.
//
// What a PE publishes at startup is O(1): its port's LID and GID and the number of one UD queue
// pair, its connection manager (PeerAddress). The first operation to a peer creates this PE's RC
// QP for it and sends the peer a connection request datagram {PE, QP number, LID, GID}; the peer's
// connection thread, asleep on a completion channel until a datagram arrives, creates (or finds)
// its QP for this PE, connects it and replies with its number; the reply connects ours. Requests
// are resent until answered (UD may drop them) and answered again when repeated; two PEs that
// connect to each other at once end with one QP pair. A peer that is busy computing answers all
// the same: the thread needs no call into the library.
//
// Operations go straight into the QP's send queue as mlx5 WQEs (lib/transport/ib/wqe.h) when the
// device is mlx5, and complete on one shared CQ read by owner bit.
#pragma once

#include <infiniband/verbs.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "lib/atomics/hca_encoding.h"
#include "lib/transport/ib/device.h"
#include "lib/transport/ib/queue.h"
#include "lib/transport/ib/wqe.h"

namespace hoshmem::rc {

// What every PE publishes for the others (through the bootstrap's exchange).
struct PeerAddress {
  uint16_t lid;
  ibv_gid gid;
  uint32_t cm_qpn;  // the connection manager's UD QP
};

// Called with the peer and a one-line cause when an operation to it fails (the QP is then in
// error) or it cannot be reached: the library makes that fatal. It must not return.
using ErrorHandler = void (*)(int pe, const char *cause);

class Transport {
 public:
  Transport();
  Transport(const Transport &) = delete;
  Transport &operator=(const Transport &) = delete;
  ~Transport();

  // Creates the CQs and the connection manager and starts its thread. `device` outlives this.
  bool init(ib::Device *device, int me, int npes, ErrorHandler on_error, std::string *why);
  PeerAddress address() const;
  void set_peer(int pe, const PeerAddress &address);
  // Stops the connection thread, destroys every QP.
  void shutdown();

  // RMA and atomics on `pe` (connected first if need be). put/put_inline complete at quiet();
  // get and atomic return when done. The local buffers are registered (their lkey given).
  void put(int pe, const ib::LocalBuf &source, uint32_t length, const ib::RemoteAddr &dest);
  void put_inline(int pe, const void *source, uint32_t length, const ib::RemoteAddr &dest);
  void get(int pe, const ib::LocalBuf &dest, uint32_t length, const ib::RemoteAddr &source);
  // Executes `atomic` on the word at `target`; the old value in host order.
  uint64_t atomic(int pe, const atomics::HcaAtomic &atomic, const ib::RemoteAddr &target);
  // The next operation to `pe` waits for that peer's earlier reads and atomics.
  void fence(int pe);
  // Every operation issued so far is complete.
  void quiet();

  uint32_t max_inline() const { return max_inline_; }
  int connected_peers() const;

 private:
  struct Endpoint;
  Endpoint *endpoint(int pe);  // connected (or on_error, which does not return)
  Endpoint *find_or_create_locked(int pe);
  bool connect_qp(Endpoint *ep, uint32_t remote_qpn, const PeerAddress &peer);
  ibv_ah *ah_for(int pe);
  void send_cm(int pe, uint8_t type, uint32_t qpn);
  void cm_loop();
  bool drain_cm();
  void handle_cm(const uint8_t *message);
  void post_cm_receive(unsigned slot);
  // Posts the WQE just written on `ep` and records it; waits for room first.
  void post(Endpoint *ep, unsigned bbs);
  void wait_for(Endpoint *ep, uint64_t ticket);
  bool progress();  // reads completions; true if any

  ib::Device *dev_ = nullptr;
  int me_ = -1, npes_ = 0;
  ErrorHandler on_error_ = nullptr;
  uint32_t max_inline_ = 0;
  std::vector<PeerAddress> peers_;

  // RC side
  ibv_cq *send_cq_ = nullptr;
  ib::CompletionQueue send_cq_ring_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;  // by PE, created on first use
  std::unordered_map<uint32_t, Endpoint *> by_qpn_;
  std::mutex ops_mutex_;  // the send path and the CQ (one thread at a time, for now)
  ibv_mr *scratch_mr_ = nullptr;
  uint64_t *scratch_ = nullptr;  // where atomic replies land

  // Connection manager side
  ibv_comp_channel *cm_channel_ = nullptr;
  ibv_cq *cm_cq_ = nullptr;
  ibv_qp *cm_qp_ = nullptr;
  ibv_mr *cm_mr_ = nullptr;
  uint8_t *cm_buf_ = nullptr;  // receive slots, then one send slot
  std::vector<ibv_ah *> ahs_;
  std::thread cm_thread_;
  std::mutex cm_mutex_;  // endpoints' connection state
  std::condition_variable cm_changed_;
  bool stopping_ = false;
};

}  // namespace hoshmem::rc
