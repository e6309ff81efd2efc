// softhca model threads and the CPU: a model thread that a message wakes must run at once, even
// while the program spins on a CQ buffer on every core (a real HCA delivers without the CPU).
#pragma once

namespace softhca {

// Asks the scheduler to let the calling (model) thread preempt busy threads when it wakes: a short
// EEVDF slice (Linux 6.12 and later, unprivileged; elsewhere nothing changes). And lets it run on
// any online CPU even when the process is bound to one (as a real HCA does not use its cores).
void prefer_prompt_wakeup();

// A model thread's pause between two looks while it polls (about 5 us; see wakeup.cc).
void model_pause();

}  // namespace softhca
