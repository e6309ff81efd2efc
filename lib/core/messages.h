// lib/core: the job's active messages over UD (lib/transport/ud) or, with HOSHMEM_AM=ring, through
// the receive rings (lib/transport/ring), for the all-SW mode across
// nodes: an AMO to a PE of another node is a request that the target executes with a CPU atomic
// on its own word, so that it is atomic with respect to the CPU atomics of the target's node (its
// PEs' and the inline fast path's). Its progress thread answers while the target's application
// computes. Puts and gets go over RC (lib/core/rdma.h), and fence and quiet order and complete
// both; or with HOSHMEM_TRANSPORT=ud, over UD too.
//
// messages_probe() opens the UD transport on the device rdma_probe() opened and publishes its
// address (before the bootstrap's next exchange); messages_start() reads every PE's, starts the
// progress thread and returns the atomic backend.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "lib/atomics/backend.h"
#include "lib/bootstrap/bootstrap.h"
#include "lib/progress/progress_thread.h"

namespace hoshmem {

bool messages_probe(Bootstrap &boot, std::string *why);
// `rma_over_ud` (HOSHMEM_TRANSPORT=ud): puts, gets and the library's messages go over UD too
// (messages_put/get; peer::routes.network), so no RC queue pair is ever made.
// `why_not` null: a PE that UD cannot reach is fatal; else nullptr is returned with the reason
// there (the caller then calls messages_stop()).
atomics::AtomicBackend *messages_start(Bootstrap &boot, bool rma_over_ud,
                                       std::string *why_not = nullptr);
// HOSHMEM_AM=ring: the same messages through every PE's receive ring over RC or DC
// (lib/transport/ring/transport.h) instead of UD, after rdma_start (every PE has HCA atomics:
// the ring's room is reserved with them). Starts the progress thread; returns the AMO backend
// of all-SW mode.
atomics::AtomicBackend *messages_start_ring();
// RMA over UD with PE `pe` of another node, as rdma_put/rdma_get (rdma.h) over RC.
void messages_put(int pe, void *sym, const void *source, size_t bytes);
void messages_get(int pe, void *dest, const void *sym, size_t bytes, bool nbi);
// Owner computes (lib/core/accumulate.h): PE `pe` applies OP (acc::Op `op`) to its copy of `sym`
// with the `bytes` of elements (acc::Type `type`, `elem` bytes each) at `source`, in chunks of one
// message each, under its stripe locks (`locked`: the sender holds them). Every chunk is applied
// on return.
void messages_accumulate(int pe, void *sym, uint8_t type, uint8_t op, size_t elem,
                         const void *source, size_t bytes, bool locked, const char *routine);
// A hybrid lock's request to its manager on PE `pe` (lib/core/hybrid_lock.h): the answer.
uint8_t messages_lock(int pe, uint8_t request, uint64_t key);
// Finalize, after its quiet and barrier: a peer that stops answering is closing, not dead.
void messages_closing();
void messages_stop();
// What waits serve while they poll (WaitPolicy::serve, serve_thread); nullptr when not running.
progress::Source *messages_source();
progress::Thread *messages_thread();
// For SHMEM_INFO: the datagram size, window and give-up time.
std::string messages_description();

}  // namespace hoshmem
