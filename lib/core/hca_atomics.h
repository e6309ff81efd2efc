// lib/core: the all-HW atomicity mode's backend. Every AMO (to this PE itself, to a PE of this
// node, to any PE) is executed by the HCA over an RC queue pair (loopback for this node), so no
// CPU atomic ever races an HCA atomic on a symmetric word.
//
// At shmem_init, before the mode is chosen, hca_probe() opens the device (HOSHMEM_DEVICE) and
// publishes whether this PE can do HCA atomics, with its connection manager's address; the mode
// is then chosen from every PE's answer, and in all-HW mode hca_start() registers the heap and
// the globals, exchanges one rkey and base address per segment, and installs the backend.
#pragma once

#include <string>

#include "lib/atomics/backend.h"
#include "lib/bootstrap/bootstrap.h"

namespace hoshmem {

// Opens the device and the RC transport if the configuration may use them; publishes this PE's
// record (before the bootstrap's next exchange). False with *why when this PE cannot do HCA
// atomics (*why empty: no RDMA device at all).
bool hca_probe(Bootstrap &boot, std::string *why);
// After the exchange: whether PE `pe` published that it can.
bool hca_capable(Bootstrap &boot, int pe);
// All-HW mode: registers the segments, exchanges their keys (a collective exchange), and returns
// the backend. Fatal on failure.
atomics::AtomicBackend *hca_start(Bootstrap &boot);
// Completes outstanding operations and releases the device (also when the mode is all-SW).
void hca_stop();
// For SHMEM_INFO: the device and its capabilities, or why there is none.
std::string hca_description();

}  // namespace hoshmem
