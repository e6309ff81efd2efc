// lib/core: the job's RDMA path, used for PEs of other nodes (RMA, AMOs, the library's own
// messages) and, in the all-HW atomicity mode, for every AMO (to this PE itself and to the PEs of
// this node included: HCA loopback), so no CPU atomic ever races an HCA atomic on a symmetric word.
//
// At shmem_init, before the mode is chosen, rdma_probe() opens the device (HOSHMEM_DEVICE) and
// publishes whether this PE can do HCA atomics, with its connection manager's address; the mode
// is then chosen from every PE's answer. rdma_start() registers this PE's control area and heap
// (one memory region: two files mapped side by side) and its globals, exchanges one base address and rkey per
// segment (O(1) per PE), installs the atomic backend and routes library messages to other nodes
// through it (lib/transport/net/peer.h).
#pragma once

#include <cstddef>
#include <string>

#include "lib/atomics/backend.h"
#include "lib/bootstrap/bootstrap.h"

namespace hoshmem {
namespace ib {
class Device;
}
namespace ring {
class Link;
}

// Opens the device and the RC transport if the configuration may use them; publishes this PE's
// record (before the bootstrap's next exchange). False with *why when this PE cannot do HCA
// atomics (*why empty: no RDMA device at all).
// `for_messages`: open the device and RC even in all-SW mode (a job across nodes: RMA goes over
// RC and AMOs over UD, lib/core/messages.h).
bool rdma_probe(Bootstrap &boot, bool for_messages, std::string *why);
// After the exchange: whether PE `pe` published that it can (if not, *why says why).
bool rdma_capable(Bootstrap &boot, int pe, std::string *why = nullptr);
// After rdma_capable() for every PE: the first PE whose HCA does not execute 8-byte fetch-add and
// compare-swap as PCIe atomics (coherent with CPU atomics), or whose HCA has no atomics; -1 when
// every PE's does (coherent mode may be used: rt.coherent, set before rdma_start).
int rdma_first_incoherent();
// Registers the segments, exchanges their keys (a collective exchange), sets peer::routes.network
// and returns the atomic backend. Fatal on failure.
atomics::AtomicBackend *rdma_start(Bootstrap &boot);
// Completes outstanding operations and releases the device (also when it was only probed).
void rdma_stop();
// HOSHMEM_AM=ring: RDMA on every PE's ring area (shm::kRingAreaOffset of its control file) on
// lane 0, and this PE's arrivals; after rdma_start.
ring::Link *rdma_ring_link();
// The device rdma_probe opened (nullptr: none).
ib::Device *rdma_device();
// For SHMEM_INFO: the device and its capabilities, or why there is none; how work is posted.
std::string rdma_description();
const char *rdma_post_path();
// After rdma_start: "rc" or "dc", and why (HOSHMEM_TRANSPORT, or what auto saw).
const char *rdma_transport_name();
std::string rdma_transport_reason();
// How operations travel, for SHMEM_INFO ("RC queue pairs, ..." or "DC: ...").
const char *rdma_queues();
// For SHMEM_INFO: what the transport holds now (queue pairs, bytes, bytes per peer), one line.
std::string rdma_footprint();
// For SHMEM_INFO: the RC registration cache's threshold and hooks, or why it is off (one line).
std::string rdma_cache_description();
// SHMEM_INFO: how long a queue pair waits for an acknowledgement (HOSHMEM_RC_TIMEOUT).
std::string rdma_ack_timeout();

// RMA with PE `pe` of another node. `sym` is this PE's address of the symmetric object (heap or
// globals, checked by the caller). put: `source` is reusable on return unless `nbi` (then after
// quiet); get: `dest` is complete on return unless `nbi` (then after quiet).
// `lane`: the context's (0: the default context's).
void rdma_put(int lane, int pe, void *sym, const void *source, size_t bytes, bool nbi);
void rdma_get(int lane, int pe, void *dest, const void *sym, size_t bytes, bool nbi);
// Every operation of `lane` to those (world) PEs is complete; rdma_quiet: to every PE.
void rdma_pe_quiet(int lane, const int *pes, size_t npes);
void rdma_quiet(int lane);

// A context's own lane: its own queue pairs and completion queue; `exclusive` (a private or
// serialized context, or no concurrent threads at all) takes no lock on its path. 0 when no RDMA
// path is open or the device has no more room: the context then shares the default's lane.
int rdma_open_lane(bool exclusive);
// Completes the lane's operations and closes it (0: nothing).
void rdma_close_lane(int lane);

}  // namespace hoshmem
