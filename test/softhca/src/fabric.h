// softhca fabric: the shared-memory "wire" between processes on one machine.
// One POSIX shm segment per fabric holds a node table (one node per attached process), a QPN
// directory and one inbox ring per node. A node's model thread is the only consumer of its inbox,
// so every request aimed at a process's memory is executed by that process, one at a time.
#pragma once
#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace softhca {

constexpr uint32_t kMaxNodes = 64;
constexpr uint32_t kQpnSlots = 1u << 16;      // QPNs 0x100..0xffff
constexpr uint64_t kRingBytes = 4ull << 20;   // per-node inbox (sparse in tmpfs until used)
constexpr uint32_t kMaxMsgPayload = 1u << 20; // largest single message (port max_msg_sz)
constexpr uint32_t kMrSlots = 4096;           // published MRs per node (more fall back to messages)
constexpr uint32_t kCqSlots = 1024;           // published CQs per node (the rest: messages only)
constexpr uint32_t kSrqSlots = 256;           // published SRQs/RMPs per node

// A process whose threads polled a CQ (ibv_poll_cq) this recently executes its own inbox from
// there: nobody wakes its model thread, and requesters leave sends to it rather than execute them.
constexpr uint64_t kPollerWindowNs = 300000;

// kNotify: a requester executed a completion into an armed CQ of the node; its completion
// channel (the node's own file descriptors) gets the event from the node's model.
enum MsgType : uint32_t { kWrap = 0, kReq = 1, kResp = 2, kUd = 3, kNotify = 4 };

struct MsgHdr {
  uint32_t len;  // whole record, 8-byte aligned
  uint32_t type;
};

struct Ring {
  alignas(64) std::atomic<uint64_t> head;  // consumer position
  alignas(64) std::atomic<uint64_t> tail;  // committed producer position
  alignas(64) pthread_mutex_t producer_lock;
  std::atomic<uint32_t> doorbell;  // futex word: bumped on every publish
  std::atomic<uint32_t> sleeping;  // model thread (about to be) in futex_wait: 1 timed, 2 until woken
  std::atomic<uint64_t> last_poll_ns;  // a thread of the owner polled a CQ (and this inbox)
  alignas(64) uint8_t data[kRingBytes];
};

struct Node {
  uint32_t in_use;
  uint32_t gen;  // bumped on every (re)claim, so stale references are detectable
  pthread_mutex_t alive;  // robust; held by the owner's model thread while it lives
  // Direct execution: a requester may execute RDMA write/read and atomics into this node's memory
  // itself (process_vm_writev/readv), with this node's published MR and QP state, under `direct`.
  // The node's own HCA atomics and MR/QP unpublishing take the same lock, so HCA atomics stay
  // atomic with respect to each other and no direct access outlives a deregistration.
  pthread_mutex_t direct;  // robust
  // The owner's own threads waiting for `direct` (its model executing a message-path atomic,
  // publishing state). Requesters then take the message path instead of grabbing the lock
  // again: the mutex is not fair, and a message-path request starved behind a stream of direct
  // ones would run into its requester's retry timeout.
  std::atomic<uint32_t> owner_waiting;
  int32_t pid;             // as the node sees itself; verified through `token` before use
  uint64_t token, token_addr;
  uint32_t host;           // index into Shared::hosts: the emulated machine this process is on
};

// An emulated machine (SOFTHCA_NODE): its processes share port LIDs (and GIDs, derived from the
// name). A host is in use while a node refers to it; unnamed hosts belong to one process.
constexpr uint32_t kLidsPerHost = 16;  // 8 devices x 2 ports
struct Host {
  char name[64];
  uint32_t lid_base;
};

// An MR as the responder checks it; slot = (key >> 8) % kMrSlots. Guarded by Node::direct.
struct MrSlot {
  uint32_t key, access, pdn, pad;
  uint64_t addr, len;
};

// A CQ's producer state: the model writes CQEs through it, and so does a requester executing a
// send directly into the CQ's process. slot = cqn % kCqSlots; a CQ whose slot is taken keeps the
// same state privately and receives sends through messages only. Guarded by the owner's
// Node::direct, which serializes every producer of the ring.
struct CqSlot {
  uint32_t cqn;  // 0: free
  uint32_t cnt, cqe_sz;
  uint8_t ignore_overrun, armed, armed_sol, overrun;  // overrun: the CQ is in error
  uint32_t pi;  // producer index
  uint32_t pad;
  uint64_t buf, dbrec;  // addresses in the owner: the ring, its doorbell record (consumer index)
};

// An SRQ's (or RMP's) consumer counter and ring, as for CqSlot: slot = srqn % kSrqSlots.
struct SrqSlot {
  uint32_t srqn;  // 0: free
  uint32_t cnt, stride, max_sge;
  uint32_t hw_ci;  // next receive WQE the device takes
  uint32_t pad;
  uint64_t buf, dbrec;
};

struct QpnEntry {
  std::atomic<uint32_t> used;
  uint32_t node, gen;
  uint16_t lid;
  uint8_t type;  // IBV_QPT_* or 0xdc for DCT
  // Responder state for direct execution (guarded by the owner's Node::direct): accepting is 1
  // while an RC QP is in RTR/RTS or a DCT in RTR; the rest mirrors the QP's attributes.
  uint8_t accepting;
  uint16_t port_lid;
  uint32_t access, peer_qpn, pdn;
  uint64_t dc_key;
  // Receive side (same guard): the QP's own receive queue, whose consumer counter lives here,
  // its receive CQ and SRQ by number (0: none), and what a UD datagram is checked against.
  // accepting also covers a UD QP in RTR/RTS/SQE.
  uint32_t rq_hw_ci;
  uint32_t rq_cnt, rq_stride;
  uint32_t rcqn, srqn;
  uint32_t qkey;
  uint8_t scatter_resp;  // receives of up to half a CQE land in the CQE (scatter-to-CQE)
  uint8_t path_mtu;      // ibv_mtu of its responses (RC, DCT)
  uint8_t gid[16];       // the port's GID (UD: a GRH must name it)
  uint64_t rq_buf, rq_dbrec;
};

struct Shared {
  uint32_t magic, version;
  pthread_mutex_t lock;  // robust; guards node/QPN allocation and teardown
  uint32_t dead;         // segment was unlinked; late openers must retry
  uint32_t next_qpn;
  uint32_t next_lid_base;
  Host hosts[kMaxNodes];
  Node nodes[kMaxNodes];
  QpnEntry qpns[kQpnSlots];
  MrSlot mrs[kMaxNodes][kMrSlots];
  CqSlot cqs[kMaxNodes][kCqSlots];
  SrqSlot srqs[kMaxNodes][kSrqSlots];
  Ring rings[kMaxNodes];
};

class Fabric {
 public:
  // Attach (creating the segment if needed) and claim a node slot.
  bool attach();
  // Release the node slot; unlink the segment if no other live node remains.
  void detach(bool unmap = true);
  uint32_t node() const { return node_; }
  uint32_t lid_base() const { return lid_base_; }  // first port LID of this process's host
  uint32_t gen() const { return gen_; }
  Shared* shm() const { return shm_; }

  bool node_alive(uint32_t node, uint32_t gen);
  // Publish one message (header + two body parts) into a node's inbox. Returns 1 when sent, 0 when
  // the inbox is full and `wait` is false, -1 when the target is gone (the message is lost, as on a
  // wire). With `wait`, `while_waiting` runs between retries so the model thread can drain its own
  // inbox meanwhile (two full inboxes would otherwise deadlock).
  int send(uint32_t node, uint32_t gen, MsgType type, const void* a, size_t alen, const void* b,
           size_t blen, bool wait, const std::function<void()>& while_waiting);
  void wake(uint32_t node);

  uint32_t alloc_qpn(uint16_t lid, uint8_t type);
  void free_qpn(uint32_t qpn);
  bool lookup_qpn(uint32_t qpn, QpnEntry* out);
  QpnEntry& qpn_entry(uint32_t qpn) { return shm_->qpns[qpn % kQpnSlots]; }

  // Direct execution into a node's memory (see Node::direct).
  void lock_direct(uint32_t node);
  void unlock_direct(uint32_t node);
  bool owner_waiting(uint32_t node) { return shm_->nodes[node].owner_waiting.load() != 0; }
  // True when this process can write the node's memory (pid verified through its token).
  bool direct_usable(uint32_t node, uint32_t gen);
  // Copies into / out of the node's address space; false if the memory is not accessible.
  bool direct_write(uint32_t node, uint64_t addr, const void* src, size_t len);
  bool direct_read(uint32_t node, uint64_t addr, void* dst, size_t len);
  // Several such copies in one system call, done in order (each one's stores before the next's).
  struct Copy {
    uint64_t remote;
    void* local;
    size_t len;
  };
  bool direct_readv(uint32_t node, const Copy* c, int n);
  bool direct_writev(uint32_t node, const Copy* c, int n);
  MrSlot& mr_slot(uint32_t node, uint32_t key) { return shm_->mrs[node][(key >> 8) % kMrSlots]; }
  CqSlot& cq_slot(uint32_t node, uint32_t cqn) { return shm_->cqs[node][cqn % kCqSlots]; }
  SrqSlot& srq_slot(uint32_t node, uint32_t srqn) { return shm_->srqs[node][srqn % kSrqSlots]; }

  // Consumer side (model thread only).
  Ring& inbox() { return shm_->rings[node_]; }
  void lock_alive();
  void unlock_alive();
  std::string name() const { return name_; }

 private:
  void lock_shared();
  void unlock_shared();
  void join_host(uint32_t slot);  // shared lock held
  // Removes fabric segments none of whose nodes is alive (their users were killed).
  static void reap_abandoned_fabrics();
  Shared* shm_ = nullptr;
  uint32_t lid_base_ = 1;
  uint32_t node_ = 0, gen_ = 0;
  std::string name_;
  // Per node: generation whose pid was verified (+1 usable, or the negated generation if not).
  std::atomic<int64_t> direct_checked_[kMaxNodes] = {};
};

void futex_wait(std::atomic<uint32_t>* word, uint32_t val, int timeout_ms);
void futex_wait_ns(std::atomic<uint32_t>* word, uint32_t val, uint64_t timeout_ns);
void futex_wake(std::atomic<uint32_t>* word);
uint64_t now_ns();

}  // namespace softhca
