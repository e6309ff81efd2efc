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

struct Chan;
struct Cq;

// SOFTHCA_EVENT_DELAY_US: what the interrupt of a completion event and the wake-up of the thread
// sleeping on the channel cost. Queues `cq`'s event on `ch` (Chan::signal) the knob's delay after
// now, from the event-delay thread (started at the first delayed event), so the caller (the
// thread that wrote the CQE) does not wait. Events are raised in the order they were delayed.
void delay_event(Chan* ch, Cq* cq);
// Forgets the delayed events not raised yet of `cq` (ibv_destroy_cq) or of every CQ of `ch`
// (ibv_destroy_comp_channel). When it returns, none of them is being raised either.
void drop_delayed_events(const Cq* cq);
void drop_delayed_events(const Chan* ch);

}  // namespace softhca
