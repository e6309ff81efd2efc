// softhca timing and ordering knobs (SOFTHCA_DEFER, _LATE_SOURCE, _COMPLETION_DELAY_US, _REORDER,
// or SOFTHCA_CHAOS for all): the model's execution thread that runs deferred send queues and
// releases held completions. Off by default: then nothing here runs.
#pragma once
#include <cstdint>

#include "model.h"

namespace softhca {

// Called by Hca::ring_sq with the QP locked: true when the knobs defer the QP's new WQEs to the
// execution thread, which calls ring_sq(qp, true) once they are due.
bool chaos_defer_ring(Qp* qp);
// A completion of this QP may not appear before `at_ns`: retire the QP again then.
void chaos_retire_at(Qp* qp, uint64_t at_ns);
// When a WQE executed now may complete at the earliest (0: at once).
uint64_t chaos_complete_at();
// Writes read data or an atomic's result into the requester's local buffer; under
// SOFTHCA_REORDER it may land only after the WQEs that follow without a fence have run.
void place_local(uint64_t addr, const void* src, uint32_t len);

}  // namespace softhca
