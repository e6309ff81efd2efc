// softhca per-process HCA model: configuration, object tables, the model thread and the engine
// that executes send WQEs (requester) and incoming requests (responder).
#pragma once
#include <future>
#include <shared_mutex>
#include <thread>

#include "fabric.h"
#include "model.h"
#include "recv.h"

namespace softhca {

// SOFTHCA_LINK: what the ports present. kIb: an InfiniBand port routed by LID (a GRH optional).
// kIbGrh: the same port flagged IBV_QPF_GRH_REQUIRED (an SR-IOV virtual function sharing its
// PF's LID): every address handle, QP address and datagram must carry a GRH. kRoce: Ethernet,
// LID 0, a GID table of RoCE v1 and v2 entries, every address a GRH plus the peer's MAC.
enum class Link : uint8_t { kIb, kIbGrh, kRoce };

struct Config {
  int num_devices = 1, num_ports = 1;
  Link link = Link::kIb;
  ibv_mtu port_mtu = IBV_MTU_4096;  // SOFTHCA_PORT_MTU (bytes): every port's active MTU
  uint32_t max_rd_atomic = 16;      // SOFTHCA_MAX_RD_ATOMIC: reads/atomics in flight per QP
  bool devx = true;                 // SOFTHCA_DEVX=0: DevX contexts refused (EPERM)
  uint32_t atomic_window_us = 0;  // widens the HCA atomic read-modify-write window
  bool atomic_host_endian = true;  // 8-byte atomic replies in host order (else big-endian)
  bool masked_atomics = true;      // SOFTHCA_MASKED_ATOMICS=0: a device without extended atomics
  uint32_t ext_atomic_max = 8;     // SOFTHCA_EXT_ATOMIC_MAX: widest masked atomic operand (bytes)
  bool pcie_atomics = false;       // SOFTHCA_PCIE_ATOMICS=1: 8-byte CS/FA coherent with CPU atomics
  uint32_t lose_atomic = 0;        // SOFTHCA_LOSE_ATOMIC=N: the Nth direct atomic never completes
  uint32_t log_max_msg = 30;       // SOFTHCA_LOG_MAX_MSG: largest message 2^n (QUERY_HCA_CAP, max_msg_sz)
  bool compact_av = true;          // SOFTHCA_COMPACT_AV=0: no 16-byte address vectors
  double ud_loss = 0, ud_dup = 0, ud_reorder = 0;
  uint64_t seed = 1;
  uint32_t max_retry_ms = 2000;
  uint32_t spin_us = 0;
  bool stats = false;
  bool direct = true;  // requesters execute RDMA write/read/atomics into peer memory themselves
};
const Config& config();

// Big-endian helpers for the hardware formats.
inline uint32_t be32(uint32_t v) { return __builtin_bswap32(v); }
inline uint16_t be16(uint16_t v) { return __builtin_bswap16(v); }
inline uint64_t be64(uint64_t v) { return __builtin_bswap64(v); }

// Identity of this process's emulated machine and keys (identity.cc): distinct per process, or
// per SOFTHCA_NODE group, so that a peer's LID, GID or rkey cannot be mistaken for one's own.
uint16_t port_lid(int dev, int port);
uint64_t node_guid(int dev);
class Hca;
void port_gid(int dev, int port, uint8_t out[16]);  // GID index 0: link-local from the port GUID

// The link personality (link.cc).
inline bool roce() { return config().link == Link::kRoce; }
inline bool grh_required() { return config().link != Link::kIb; }
constexpr int kRoceGids = 4;  // fe80:: v1, fe80:: v2, ::ffff:10.x.y.z v1, the same v2
int gid_table_len();
// GID `index` of a port and its type (IBV_GID_TYPE_IB / _ROCE_V1 / _ROCE_V2); false: no entry.
bool port_gid_at(int dev, int port, int index, uint8_t out[16], int* type = nullptr);
void port_mac(uint16_t lid, uint8_t mac[6]);  // RoCE: the port's MAC (the port named by its LID)
// RoCE: the port (its model LID) that owns `gid`; 0 if none does.
uint16_t lid_of_gid(const uint8_t gid[16]);
// Whether `gid` is one of the GIDs of the port whose model LID is `lid` (RoCE), or of port
// `port` of device `dev` (any link).
bool port_owns_gid(uint16_t lid, const uint8_t gid[16]);
bool port_owns_gid(int dev, int port, const uint8_t gid[16]);
// What a requester puts on the wire for an address vector: the destination port (its model LID,
// 0: nowhere), the GRH's presence, traffic class and service level. `syndrome` is non-zero when
// the WQE must complete in error without leaving (a GRH-requiring port given none).
struct WireAddress {
  uint16_t lid = 0;
  bool grh = false;
  uint8_t tclass = 0, sl = 0;
  uint8_t syndrome = 0;
  uint8_t dgid[16] = {};  // with a GRH: the destination GID, which the port must own
};
// Whether a packet with this address reaches the port whose directory entry is `e`.
bool reaches(const WireAddress& w, const QpnEntry& e);
// `extended`: the 48-byte vector (else the compact 16 bytes, which has no GRH).
WireAddress wire_address(const mlx5_wqe_av& av, bool extended);
// The same for a connected QP's address (ibv_qp_attr.ah_attr, set at RTR).
WireAddress wire_address(const ibv_ah_attr& ah);
// SOFTHCA_STATS: packets sent per traffic class and service level.
void count_wire(const WireAddress& w, uint32_t packets = 1);
std::string wire_stats();
uint32_t next_mr_key();  // lkey = rkey of a new MR: random start per process, then sequential
// Affiliated async events (async_events.cc). responder_error: an RC responder detected a remote
// access error or invalid request: QP to ERR, flushed, event raised (QP lock held).
void raise_qp_event(Qp* qp, ibv_event_type type);
void raise_cq_event(Cq* cq, ibv_event_type type);  // IBV_EVENT_CQ_ERR: the CQ was overrun
void responder_error(Hca& h, Qp* qp, ibv_event_type type);
// Memory registration as the kernel pins it (registration.cc): 0, EINVAL, EFAULT (unmapped, or
// not writable for a writable access) or ENOMEM (RLIMIT_MEMLOCK without CAP_IPC_LOCK).
int pin_for_registration(const void* addr, size_t len, unsigned access);
void unpin_registration(const void* addr, size_t len);
// Scatter-to-CQE (cqe_scatter.cc): which of a QP's completions carry their data, the CQE data
// area, and the driver's copy of it to the WQE's buffers (false: they cannot hold it).
void decide_cqe_scatter(Qp* qp);  // at creation
// Scatter-to-CQE data limit of a CQ: half its CQE size (32 bytes in the CQE itself with 64-byte
// CQEs, 64 bytes in the first half of a 128-byte entry), as the kernel sets cs_req/cs_res.
inline uint32_t cqe_scatter_max(const Cq* cq) { return cq->cqe_sz / 2; }
// Writes scatter-to-CQE data into an entry of `cqe_sz` bytes whose 64-byte CQE is `c` (its last
// 64 bytes); sets the op_own flag.
void put_cqe_data(uint32_t cqe_sz, uint8_t* entry, mlx5_cqe64* c, const void* data, uint32_t len);
// Where the driver finds the data of a CQE flagged MLX5_INLINE_SCATTER_32/_64 (nullptr: none).
const uint8_t* cqe_scatter_data(const mlx5_cqe64* c, uint8_t op_own);
bool copy_cqe_to_send_wqe(Qp* qp, uint16_t idx, const uint8_t* data, uint32_t len);
bool copy_cqe_to_recv_wqe(Qp* qp, uint16_t idx, const uint8_t* data, uint32_t len);
// What arrived of long sends to `qp` is dropped (the QP is reset or destroyed).
void forget_partial_sends(const Qp* qp);
// mlx5dv_create_qp creation flags (qp_flags.cc): 0 or the errno rdma-core/the kernel give.
int check_dv_create_flags(const mlx5dv_qp_init_attr* dv);

// DevX QPs (devx_obj.cc): the program's rings, doorbell record and UAR page for devx_make_qp.
struct DevxQueues {
  uint8_t* sq = nullptr;  // nullptr: no send queue
  uint32_t sq_bbs = 0;
  uint8_t* rq = nullptr;  // nullptr: SRQ or no receive queue
  uint32_t rq_cnt = 0, rq_stride = 0;
  uint32_t* dbrec = nullptr;
  uint8_t* uar = nullptr;
  bool cs_req = false, cs_res = false;  // QPC scatter-to-CQE settings
};
Qp* devx_make_qp(ibv_context* c, ibv_qp_init_attr_ex* a, Kind kind, uint64_t dc_key,
                 const DevxQueues& q);

class Hca {
 public:
  static Hca& get();
  bool acquire();  // first user attaches to the fabric and starts the model thread
  void release();
  void leave_at_exit();
  Fabric& fab() { return fab_; }

  std::shared_mutex tables;  // lock order: tables, then a QP, then a CQ
  std::unordered_map<uint32_t, Qp*> qps;
  std::unordered_map<uint32_t, Mr*> mrs;
  std::unordered_map<uint32_t, Cq*> cqs;  // by CQN (CQ arm doorbells name the CQ by number)
  std::unordered_map<uint32_t, Pd*> pds;   // by PDN, SRQN: DevX commands name them by number
  std::unordered_map<uint32_t, Srq*> srqs;
  std::atomic<uint32_t> next_obj{1};  // PD, CQ, SRQ, AH numbers (memory keys: next_mr_key)

  // Hand a message to the fabric without ever blocking the caller.
  void post_msg(uint32_t node, uint32_t gen, MsgType t, const void* a, size_t alen, const void* b,
                size_t blen);
  // Requester: execute the send WQEs the doorbell record says were posted (`deferred`: called by
  // the execution thread of the timing knobs, which otherwise take the work over).
  void ring_sq(Qp* qp, bool deferred = false);
  void cq_lost(Qp* qp);   // a completion of qp was refused by its CQ (in error): qp to error
  void flush_qp(Qp* qp);  // QP entered the error state: flush outstanding and posted work
  // data/len: scatter-to-CQE data (at most cqe_scatter_max(cq) bytes) placed with the CQE.
  // False: the CQ is in error (overrun) and the completion was not written.
  bool cq_push(Cq* cq, const mlx5_cqe64& cqe, bool solicited, const void* data = nullptr,
               uint32_t len = 0);
  // The same with this node's direct lock held (it guards every CQ's producer state).
  bool cq_push_locked(Cq* cq, const mlx5_cqe64& cqe, bool solicited, const void* data = nullptr,
                      uint32_t len = 0);
  void arm_cq(Cq* cq, bool solicited_only);
  Mr* find_mr(uint32_t key);  // tables lock held
  // Publish what a requester needs to execute directly into this process's memory.
  void publish_mr(Mr* mr, bool on);
  void publish_qp(Qp* qp);  // QP lock held; call after every state change and before destroy
  // A CQ's / SRQ's producer and consumer state moves into the fabric (on, at creation) so that
  // requesters can execute sends into them, and back (off, before the rings are freed).
  void publish_cq(Cq* cq, bool on);
  void publish_srq(Srq* srq, bool on);

  // Lets a thread that polls an empty CQ execute pending fabric messages itself (the model thread
  // would otherwise need a time slice on a machine whose cores the pollers keep busy).
  void progress();
  void stop_polling();  // the polling thread is about to block (e.g. on a completion channel)

  std::atomic<uint64_t> direct_ops{0}, direct_sends{0};
  std::atomic<uint64_t> devx_qps{0}, devx_dcts{0};  // DevX QPs/DCIs and DCTs created (SOFTHCA_STATS)
  std::atomic<uint64_t> ud_sent{0}, ud_dropped{0}, ud_duplicated{0}, ud_reordered{0};

 private:
  void run(std::promise<bool>* ready);
  void handle(const uint8_t* rec, uint32_t type, uint32_t len);
  void on_req(const uint8_t* body, uint32_t len);
  void on_resp(const uint8_t* body, uint32_t len);
  void on_ud(const uint8_t* body, uint32_t len);
  void timers();
  void flush_egress();
  void drain_inbox_to_backlog();
  void execute_wqe(Qp* qp, uint32_t start, uint32_t bbs);
  void execute_reordered(Qp* qp, uint32_t target);  // chaos.cc
  bool try_direct(Qp* qp, Pending& p, uint32_t dst_node, uint32_t dst_gen, uint32_t dst_qpn,
                  uint16_t dlid, uint64_t dc_key, uint64_t raddr, uint32_t rkey,
                  const uint8_t* atomic, const std::vector<uint8_t>& payload, uint32_t total);
  // Executes a send (RC, DC or UD) into the responder's receive queue and CQ from the
  // requester's thread (recv.cc); false: it takes the message path.
  struct DirectSend {
    uint32_t node, gen, dst_qpn;
    uint8_t type;  // what the destination must be: IBV_QPT_RC, IBV_QPT_UD or 0xdc (DCT)
    uint16_t dlid, slid;
    uint64_t dc_key;
    uint32_t qkey;  // UD
    bool grh;       // UD
    const uint8_t *sgid, *dgid;
    uint8_t opcode;
    bool se;
    uint32_t imm;
  };
  bool try_direct_send(Qp* qp, const DirectSend& d, const std::vector<uint8_t>& payload);
  // This process's receive side (own direct lock held): take a receive WQE, scatter into it.
  RecvQueue recv_queue(Qp* qp);
  bool take_recv(Qp* qp, RecvWqe* out);
  uint8_t scatter(Qp* qp, const RecvWqe& w, const uint8_t* data, uint32_t len, uint32_t skip);
  void deliver(Pending& p, const uint8_t* data, uint32_t len);
  void retire(Qp* qp);
  void send_resp(uint32_t node, uint32_t gen, uint32_t qpn, uint32_t psn, uint8_t synd,
                 uint8_t rnr_timer, const void* data, uint32_t len);

  bool consume(int max);  // consumer_mu_ held
  std::mutex consumer_mu_;  // one consumer of the inbox at a time: keeps execution serialized
  std::mutex mu_;
  int refs_ = 0;
  Fabric fab_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  bool keep_mapping_ = false;
  std::atomic<bool> idle_forever_{false};  // model thread sleeps with no retry clock running
  struct Egress {
    uint32_t node, gen;
    MsgType type;
    std::vector<uint8_t> bytes;
  };
  std::mutex egress_mu_;
  std::deque<Egress> egress_;
  std::deque<std::vector<uint8_t>> backlog_;
  struct Held {
    uint32_t node, gen;
    std::vector<uint8_t> bytes;
    uint64_t release_ns;
  };
  std::mutex held_mu_;
  std::deque<Held> held_;  // UD datagrams being reordered
};

// Raw-WQE access for mlx5dv_init_obj: make writes to a QP's BlueFlame page ring the doorbell.
void trap_bf_page(Qp* qp);
void untrap_bf_page(Qp* qp);
// The CQ's doorbell page handed out as mlx5dv_cq.cq_uar: arm doorbells stored to it arm the CQ
// they name. One page per CQ, so that threads arming different CQs never share one.
uint8_t* cq_uar_page(Cq* cq);
void release_cq_uar(Cq* cq);

}  // namespace softhca
