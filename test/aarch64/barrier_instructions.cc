// What the CPU-to-HCA barriers (lib/transport/ib/barriers.h), cpu_relax (lib/base/cpu_relax.h) and
// a doorbell (ib::SendQueue::post_one) compile to: one function each, compiled for x86-64 and for
// aarch64 and read back with objdump by scripts/test-aarch64.sh, which holds the instructions
// expected of each. Never linked or run.
#include <cstdint>

#include "lib/base/cpu_relax.h"
#include "lib/transport/ib/barriers.h"
#include "lib/transport/ib/queue.h"

extern "C" {

void probe_wqe_before_doorbell_record() { hoshmem::ib::wqe_before_doorbell_record(); }
void probe_doorbell_record_before_doorbell() { hoshmem::ib::doorbell_record_before_doorbell(); }
void probe_doorbell_out() { hoshmem::ib::doorbell_out(); }
void probe_cqe_owner_before_body() { hoshmem::ib::cqe_owner_before_body(); }
void probe_cpu_relax() { hoshmem::cpu_relax(); }
// The record, the register and the barriers between them, in that order.
void probe_post_one(hoshmem::ib::SendQueue *sq, uint64_t first8) { sq->post_one(first8, 7); }

}  // extern "C"
