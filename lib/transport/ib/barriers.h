// lib/transport/ib: the orderings between the CPU and the HCA that driving a send queue and a
// completion queue directly needs (queue.h), one function per ordering, defined once per
// architecture. They are not the barriers between threads (std::atomic's): the HCA is not a CPU,
// sees the send queue's ring and the doorbell record in memory, and the doorbell register as a
// write-combining MMIO mapping. The choice per architecture is the one rdma-core's mlx5 provider
// makes for the same steps (its udma_to_device_barrier, mmio_wc_start, mmio_flush_writes and
// udma_from_device_barrier), except where a comment says otherwise.
//
// Posting a WQE:  write the WQE, wqe_before_doorbell_record(), store the doorbell record,
//                 doorbell_record_before_doorbell(), store 8 bytes to the doorbell register,
//                 doorbell_out().
// Polling a CQE:  read its owner byte; if software owns it, cqe_owner_before_body(), then read
//                 the rest of it (and whatever the HCA wrote before it: get and fetch results).
//                 The consumer index record is stored with no barrier, as rdma-core does: the HCA
//                 overwrites an entry only after it has gone round the whole ring.
#pragma once

#include <atomic>

namespace hoshmem::ib {

#if defined(__x86_64__)

// x86-64 keeps stores to ordinary (write-back) memory in order, and loads in order: the WQE and
// the CQE orderings only need the compiler to keep them. Stores to write-combining memory are
// not ordered with other stores, hence sfence on either side of the doorbell register's.

// The WQE, and everything stored before it that the HCA will read (a put's source), before the
// doorbell record that announces it.
[[gnu::always_inline]] inline void wqe_before_doorbell_record() {
  std::atomic_signal_fence(std::memory_order_seq_cst);
}
// The doorbell record before the doorbell register: the HCA, told by the register, may read
// the record.
[[gnu::always_inline]] inline void doorbell_record_before_doorbell() { __builtin_ia32_sfence(); }
// The doorbell out of the write-combining buffer now (it would wait there, or merge with the
// next doorbell to the same register), before the lane's lock lets another thread ring it.
[[gnu::always_inline]] inline void doorbell_out() { __builtin_ia32_sfence(); }
// A CQE's body (and what the HCA wrote before it) read after the owner byte that says software
// owns it. rdma-core uses lfence here; x86 does not reorder loads from write-back memory (the CQ
// ring is), and this library has always relied on that: a compiler barrier.
[[gnu::always_inline]] inline void cqe_owner_before_body() {
  std::atomic_thread_fence(std::memory_order_acquire);
}

#elif defined(__aarch64__)

// The HCA observes memory in the outer-shareable domain: the barriers of std::atomic (dmb ish,
// inner shareable) order the CPUs among themselves but promise the HCA nothing.

// Earlier stores before later ones as the HCA sees them: a WQE it reads after the record.
[[gnu::always_inline]] inline void wqe_before_doorbell_record() {
  asm volatile("dmb oshst" ::: "memory");
}
// dsb, not dmb: the doorbell register is mapped write-combining (Normal non-cacheable), and the
// record's store must have completed, not just be ordered, before the register's store can go.
[[gnu::always_inline]] inline void doorbell_record_before_doorbell() {
  asm volatile("dsb st" ::: "memory");
}
// Waits until the doorbell's store has left the core (no merging with the next doorbell).
[[gnu::always_inline]] inline void doorbell_out() { asm volatile("dsb st" ::: "memory"); }
// Later loads after the owner byte's, as far as the HCA's writes are concerned.
[[gnu::always_inline]] inline void cqe_owner_before_body() {
  asm volatile("dmb oshld" ::: "memory");
}

#else
#error "barriers.h: no CPU-to-HCA barriers for this architecture (x86-64 and aarch64 have them)"
#endif

}  // namespace hoshmem::ib
