// lib/transport/ib: an mlx5 send queue and completion queue driven directly, as mlx5dv_init_obj
// hands them out: WQEs written into the ring (wqe.h), the doorbell record, then the doorbell
// register; completions read from the CQ ring by owner bit, the consumer index written back.
#pragma once

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <endian.h>

#include <cstdint>

#include "lib/transport/ib/barriers.h"
#include "lib/transport/ib/wqe.h"

namespace hoshmem::ib {

class SendQueue {
 public:
  // `qp` must have been created by mlx5dv_create_qp / ibv_create_qp on an mlx5 device.
  bool init(ibv_qp *qp);
  // The ring as the next WQE sees it (SqRing::pi is the producer index).
  const SqRing &ring() const { return ring_; }
  // Free BBs: the ring holds `bb_count`, less those posted and not yet completed.
  uint32_t free_bbs() const { return ring_.bb_count - static_cast<uint16_t>(ring_.pi - done_); }
  // Hands the WQE just written (of `bbs` BBs, at the producer index) to the HCA: the doorbell
  // record, then the first 8 bytes of its control segment to the doorbell register. (BlueFlame,
  // which copies the whole WQE there to save the HCA a read, is left for later.) A register
  // rdma-core hands out shared between QPs (its bf->need_lock) is safe for this: its lock guards
  // BlueFlame copies, and one aligned 8-byte store is what a shared register takes. With BlueFlame
  // registers, consecutive doorbells alternate between the register's two halves.
  void post(unsigned bbs) { post(ring_.segment(0), bbs); }
  // The same when the caller holds the WQE's address (ring().segment(0)).
  [[gnu::always_inline]] void post(const void *wqe, unsigned bbs) {
    const uint64_t first8 = *static_cast<const uint64_t *>(wqe);
    ring_.pi = static_cast<uint16_t>(ring_.pi + bbs);
    // The orderings (barriers.h): the WQE before the record that announces it, the record before
    // the doorbell (device memory, write-combining), and the doorbell out of the write-combining
    // buffer.
    wqe_before_doorbell_record();
    dbrec_[MLX5_SND_DBR] = htobe32(ring_.pi);
    doorbell_record_before_doorbell();
    *reinterpret_cast<volatile uint64_t *>(bf_next_) = first8;
    doorbell_out();
    bf_next_ ^= bf_toggle_;
  }
  // Takes the WQE just written (of `bbs` BBs) into the ring without telling the HCA: the next
  // post() announces it with its own (the doorbell record names the producer index, and the HCA
  // executes every WQE up to it). Several WQEs, one doorbell, as rdma-core posts a list of work
  // requests. A staged WQE must be followed by a post() on this queue.
  void stage(unsigned bbs) { ring_.pi = static_cast<uint16_t>(ring_.pi + bbs); }
  // The BB at the producer index, for a WQE of one BB (ring().segment(0) with one operation
  // less: the ring's byte mask is kept).
  [[gnu::always_inline]] void *next_bb() const {
    return ring_.buf + ((size_t{ring_.pi} * MLX5_SEND_WQE_BB) & bytes_mask_);
  }
  // post() of a WQE of one BB, at producer index `pi`, whose first 8 bytes the caller has.
  [[gnu::always_inline]] void post_one(uint64_t first8, uint16_t pi) {
    const uint16_t next = static_cast<uint16_t>(pi + 1);
    ring_.pi = next;
    wqe_before_doorbell_record();
    dbrec_[MLX5_SND_DBR] = htobe32(next);
    doorbell_record_before_doorbell();
    *reinterpret_cast<volatile uint64_t *>(bf_next_) = first8;
    doorbell_out();
    bf_next_ ^= bf_toggle_;
  }
  // A completion for the WQE whose first BB had index `wqe_counter` frees the BBs up to it (and
  // that WQE's `bbs`): WQEs complete in order on a send queue.
  void completed(uint16_t wqe_counter, unsigned bbs) {
    done_ = static_cast<uint16_t>(wqe_counter + bbs);
  }

 private:
  SqRing ring_;
  size_t bytes_mask_ = 0;  // ring bytes - 1
  uint16_t done_ = 0;
  volatile __be32 *dbrec_ = nullptr;
  // The doorbell register (a BlueFlame buffer of two halves when the QP has one): where the
  // next doorbell goes, and what flips it to the other half (0 without BlueFlame).
  uintptr_t bf_next_ = 0;
  uintptr_t bf_toggle_ = 0;
};

struct Completion {
  uint8_t opcode;        // MLX5_CQE_REQ, MLX5_CQE_REQ_ERR, MLX5_CQE_RESP_SEND, ...
  uint8_t syndrome;      // for the error opcodes: MLX5_CQE_SYNDROME_*
  uint8_t vendor_syndrome;  // and the device's own reason (vendor_err_synd)
  uint16_t wqe_counter;  // first BB of the completed send WQE
  uint32_t qpn;
  uint32_t byte_count;
};

class CompletionQueue {
 public:
  bool init(ibv_cq *cq);
  // The next completion, if the HCA has written one.
  bool poll(Completion *out);

 private:
  uint8_t *buf_ = nullptr;
  uint32_t cqe_count_ = 0;  // a power of two
  uint32_t cqe_size_ = 64;
  uint32_t ci_ = 0;         // consumer index
  volatile __be32 *dbrec_ = nullptr;
};

}  // namespace hoshmem::ib
