// softhca internal objects: what a process's model keeps for each verbs object.
// The public structs (ibv_*, verbs_context, ibv_qp_ex, mlx5dv_qp_ex) come first in each object so
// that pointers handed to the program convert back with a cast.
#pragma once
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <random>
#include <unordered_map>
#include <vector>

#include "fabric.h"

namespace softhca {

enum class Kind { kRc, kUd, kDci, kDct };

struct Device {
  ibv_device dev;  // first: programs get &dev
  int index;
};

struct Context {
  verbs_context vctx;  // ends with ibv_context
  Device* dev;
  int async_pipe[2];
  bool devx;
};

struct Pd {
  ibv_pd pd;
  uint32_t pdn;
};

struct Mr {
  ibv_mr mr;
  int access;
};

struct Ah {
  ibv_ah ah;
  ibv_ah_attr attr;
  mlx5_wqe_av av;  // the hardware address vector (what mlx5dv_init_obj hands out)
};

struct Cq;

// A completion channel. Events are queued here; the pipe carries one byte per queued event so that
// `ch.fd` polls readable exactly while events wait (programs poll() it and may make it
// non-blocking). Destroying a CQ discards its unread events, as the kernel does.
// With SOFTHCA_EVENT_DELAY_US, notify hands the event to the event-delay thread (wakeup.h), which
// queues it here (signal) only when it is due: until then the fd is not readable.
struct Chan {
  ibv_comp_channel ch;  // first
  int wfd = -1;         // write end (non-blocking)
  int drain_fd = -1;    // the read end opened once more, non-blocking: consumes discarded events
  std::mutex mu;
  std::deque<Cq*> events;
  void notify(Cq* cq);  // raise one event (now, or after the event delay)
  void signal(Cq* cq);  // queue one event now
};

struct Cq {
  ibv_cq_ex cqx;
  Context* ctx;
  uint32_t cqn;
  // hardware-visible ring: 64- or 128-byte CQEs (the mlx5_cqe64 in the last 64 bytes of each
  // entry), owner bit, consumer index in dbrec[0]
  uint8_t* buf;
  uint32_t cnt;
  uint32_t cqe_sz = 64;         // 64 or 128 (mlx5dv_create_cq cqe_size)
  bool ignore_overrun = false;  // IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN: the consumer index is not checked
  mlx5_cqe64* cqe(uint32_t n) const {  // entry n (mod cnt): its 64-byte CQE
    return reinterpret_cast<mlx5_cqe64*>(buf + size_t(n & (cnt - 1)) * cqe_sz + (cqe_sz - 64));
  }
  uint32_t* dbrec;
  // Producer state (pi, armed, overrun): the fabric's CqSlot when published (requesters executing
  // sends directly write this CQ too), else `own`; either way under this node's direct lock.
  CqSlot own{};
  CqSlot* st = &own;
  Chan* chan = nullptr;  // completion channel
  uint32_t events_reported = 0;  // events handed out by ibv_get_cq_event (under cqx.mutex)
  // driver side (ibv_poll_cq / ibv_start_poll)
  std::mutex cons;
  uint32_t ci = 0;
  bool dv_owned = false;
  uint8_t* uar = nullptr;  // arm doorbell page handed out by mlx5dv_init_obj
  ibv_wc cur{};  // current entry for the ibv_cq_ex read_* callbacks
};

struct Srq {
  ibv_srq srq;
  Context* ctx;
  uint32_t srqn;
  std::mutex mu;
  uint8_t* buf;
  uint32_t* dbrec;  // [0]: receive counter (verbs: after the ring; DevX RMP: in the dbr umem)
  bool devx = false;  // an RMP: ring and doorbell record are the program's umems
  uint32_t cnt, stride, max_sge;
  uint32_t pi = 0, polled = 0;  // driver side: posted, completed
  // The device's consumer counter and ring: the fabric's SrqSlot when published, else `own`.
  SrqSlot own{};
  SrqSlot* st = &own;
  std::vector<uint64_t> wrid;
  uint32_t limit = 0;
};

// One send WQE the requester has handed to the fabric and not yet retired.
struct Pending {
  uint32_t idx, psn;  // psn: the last of the message's PSNs
  uint32_t chunks = 1;  // requests the message travels as (RDMA write/read beyond kMaxMsgPayload)
  bool signaled;
  uint8_t opcode, opmod;
  int syndrome = -1;  // -1 still in flight, 0 done, else an MLX5_CQE_SYNDROME_*
  uint32_t byte_len = 0;
  std::vector<ibv_sge> local;  // where read data / atomic results land
  uint32_t result_size = 0;
  std::vector<uint8_t> msg;  // the request, kept for RNR replay
  std::vector<std::vector<uint8_t>> pieces;  // a long message's requests before `msg` (chunks > 1)
  uint32_t dst_node = 0, dst_gen = 0;
  uint64_t sent_ns = 0;
  uint64_t inbox_pos = 0;    // the responder's inbox tail after the request was queued
  uint64_t complete_at = 0;  // SOFTHCA_COMPLETION_DELAY_US: not retired before (ns)
  uint32_t rnr_count = 0;
  bool in_cqe = false;  // the result goes into the CQE (scatter-to-CQE), not to `local`
  bool lost = false;    // SOFTHCA_LOSE_ATOMIC: executed, but never completed nor retried
  uint8_t cqe_data[64] = {};
};

struct Qp {
  ibv_qp_ex qpx;        // first
  mlx5dv_qp_ex dvx;
  Context* ctx;
  Kind kind;
  std::recursive_mutex mu;
  Pd* pd;
  Cq *scq, *rcq;
  Srq* srq;
  bool sig_all;
  uint32_t max_inline, max_send_sge, max_recv_sge;
  uint64_t send_ops_flags;
  uint32_t dv_create_flags = 0;  // MLX5DV_QP_CREATE_*
  bool scatter_req = false, scatter_resp = false;  // scatter-to-CQE (cqe_scatter.cc)
  // hardware-visible queues
  uint32_t* dbrec;  // [0] receive counter, [1] send counter (big-endian)
  uint8_t* sq_buf;
  uint32_t sq_bbs;  // 64-byte basic blocks, power of two
  uint8_t* rq_buf;
  uint32_t rq_cnt, rq_stride;
  uint8_t* bf;  // BlueFlame page (write-trapped once handed out by mlx5dv_init_obj)
  // Created by DevX CREATE_QP/CREATE_DCT (devx_obj.cc): the queues and doorbell record live in the
  // program's umems and `bf` is its DevX UAR page (shared with other QPs, watched as a UAR).
  bool devx = false;
  uint32_t user_index = 0;  // DevX QPC user_index: requester CQEs carry it in srqn_uidx (CQE v1)
  // driver bookkeeping
  uint32_t sq_pi = 0, sq_ci = 0;
  std::vector<uint64_t> sq_wrid;
  std::vector<uint8_t> sq_wqe_bbs, sq_wc_opcode;
  uint32_t rq_pi = 0, rq_ci = 0;
  std::vector<uint64_t> rq_wrid;
  // wr_* API state
  uint32_t wr_start_pi = 0;
  int wr_err = 0;
  uint8_t* cur_ctrl = nullptr;
  uint32_t cur_units = 0, cur_av_unit = 0;
  bool cur_has_av = false;
  bool cur_addr_set = false, cur_data_set = false;  // UD/DC: the WQE ends when both setters ran
  // attributes
  ibv_qp_attr attr{};
  uint64_t dc_key = 0;
  // model: requester
  uint32_t hw_ci = 0;  // next send WQE (in basic blocks) the model will execute
  uint32_t next_psn = 0;
  std::deque<Pending> out;
  uint64_t rnr_resend_at = 0;
  // The send queue waits behind a read/atomic for its initiator depth (max_rd_atomic) to free up:
  // a read/atomic response resumes it.
  bool rd_atomic_stalled = false;
  // UD: per destination node, its generation and inbox tail after this QP's last datagram sent
  // through messages; a datagram executed directly waits until the inbox has passed it (order).
  std::vector<std::pair<uint32_t, uint64_t>> ud_inbox_tail;
  // model: responder (the receive queue's consumer counter is QpnEntry::rq_hw_ci)
  uint32_t rc_epsn = 0;
  std::unordered_map<uint64_t, uint32_t> dc_epsn;
  std::mt19937_64 rng;
};

}  // namespace softhca
