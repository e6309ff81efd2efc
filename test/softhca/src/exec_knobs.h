// softhca knobs of execution timing: how doorbells are noticed and how much of the hardware's
// freedom in ordering and timing the model uses (all of it off by default: see README "Knobs").
#pragma once
#include <cstdint>

namespace softhca {

struct ExecKnobs {
  bool doorbell_trap = false;       // SOFTHCA_DOORBELL=trap (default poll)
  uint32_t doorbell_spin_us = 100;  // SOFTHCA_DOORBELL_SPIN_US: doorbell thread polls this long
  bool doorbell_in_fault = true;    // SOFTHCA_DOORBELL_IN_FAULT: poll mode rings a faulting store itself
  bool defer = false;               // SOFTHCA_DEFER: WQEs run on the model's execution thread
  uint32_t defer_us = 20;           // SOFTHCA_DEFER_US: ... this long after their doorbell at the earliest
  uint32_t completion_delay_us = 0; // SOFTHCA_COMPLETION_DELAY_US: requester CQEs appear this late
  bool late_source = false;         // SOFTHCA_LATE_SOURCE: gather the source when executing
  bool reorder = false;             // SOFTHCA_REORDER: reorder across QPs, reads/atomics pass writes
  uint64_t event_delay_ns = 0;      // SOFTHCA_EVENT_DELAY_US: completion-channel events this late
  bool defers() const { return defer || late_source || reorder; }
};
const ExecKnobs& exec_knobs();

// An integer knob: `def` when unset, else its value in [lo, hi]; anything else ends the process
// with one line naming the variable and the range.
long env_knob(const char* name, long def, long lo, long hi);

// A duration knob in microseconds, fractional allowed ("54.5"): 0 when unset, else its value in
// nanoseconds when it lies in [0, hi_us]; anything else (negative, not a number, too large) ends
// the process with one line naming the variable and the range.
uint64_t env_knob_us(const char* name, double hi_us);

}  // namespace softhca
