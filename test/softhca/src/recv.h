// softhca receive side: taking a receive WQE, scattering into it and writing the responder's CQE,
// for the owner's model (message path) and for a requester that executes a send directly into the
// owner's memory. Both go through Fabric::direct_read/direct_write (a plain copy when the node is
// this process) and the same shared counters, under the owner's Node::direct lock: one lock keeps
// receive WQEs, and the CQEs that report them, in the same order whoever executes the send.
#pragma once
#include <infiniband/mlx5dv.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "fabric.h"

namespace softhca {

// A receive queue as the device reads it: a QP's own ring or its SRQ's.
struct RecvQueue {
  uint64_t buf = 0, dbrec = 0;  // in the owner; dbrec[0]: receive counter (big-endian)
  uint32_t cnt = 0, stride = 0;
  uint32_t seg_off = 0, nsegs = 0;  // where the data segments start in a WQE, how many at most
  bool srq = false;                 // SRQ CQEs name the ring slot, RQ CQEs the 16-bit counter
  uint32_t* hw_ci = nullptr;        // the device's consumer counter (SrqSlot/QpnEntry)
};
RecvQueue rq_of(QpnEntry& e);
RecvQueue rq_of(SrqSlot& s);

struct RecvWqe {
  uint32_t idx;  // what the CQE's wqe_counter reports
  std::vector<mlx5_wqe_data_seg> segs;
};
// The next posted receive WQE, without taking it (++*q.hw_ci takes it); false when none is posted
// or the owner's memory cannot be read. `also`: one more read done in the same call.
bool peek_recv(Fabric& f, uint32_t node, const RecvQueue& q, RecvWqe* out,
               const Fabric::Copy* also = nullptr);

// Lays `len` bytes of data over the WQE's buffers after skipping `skip` bytes of them (UD: the
// GRH area), checking each buffer with `mr_ok(lkey, addr, byte_count)` (local write access).
// Returns 0 or the MLX5 syndrome the responder reports.
struct ScatterPiece {
  uint64_t addr;
  uint32_t src_off, n;
};
using LkeyCheck = std::function<bool(uint32_t lkey, uint64_t addr, uint32_t len)>;
uint8_t plan_scatter(const RecvWqe& w, uint32_t len, uint32_t skip, const LkeyCheck& mr_ok,
                     std::vector<ScatterPiece>* out);
// Scatter-to-CQE: the buffers are not written, only their room is checked.
uint8_t recv_room(const RecvWqe& w, uint32_t len);

// The 40-byte GRH an HCA places in front of a UD datagram's payload.
void make_grh(uint8_t out[40], uint32_t payload_len, const uint8_t sgid[16], const uint8_t dgid[16]);

mlx5_cqe64 resp_cqe(uint32_t qpn, uint32_t srqn, uint8_t op, uint32_t idx, uint32_t len,
                    uint32_t imm, uint32_t src_qp, uint16_t slid, bool grh, bool se);

// True when the CQ has room for one more entry, given its doorbell record's consumer index
// (big-endian, as stored); IGNORE_OVERRUN CQs always have, a CQ in error (overrun) never.
bool cq_room(const CqSlot& cq, uint32_t dbrec_ci);
// Writes a CQE (with scatter-to-CQE data when `data`) at the producer index and advances it, after
// the copies in `before` (a receive's data) and in the same call; the entry's ownership byte is
// stored last. False if the owner's memory cannot be written.
bool write_cqe(Fabric& f, uint32_t node, CqSlot& cq, const mlx5_cqe64& cqe, const void* data,
               uint32_t len, std::vector<Fabric::Copy> before = {});

}  // namespace softhca
