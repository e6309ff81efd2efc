// lib/core: distributed locks that migrate between CPU and HCA atomics (HOSHMEM_LOCK=hybrid),
// and where every lock lives (HOSHMEM_LOCK_HOME), for the MCS lock of lib/api/lock.cc too.
//
// A lock is homed on one PE (PE 0, or one chosen from the lock's address) and has two words that
// never meet each other's kind of atomic:
//   the network word: the user's symmetric long on the home, updated only with the job's atomics
//     to that PE (HCA atomics in all-HW mode, loopback included; in all-SW mode CPU atomics on
//     its node and messages its CPU executes from other nodes);
//       0      CPU mode: the home's node holds it (a zeroed lock starts here)
//       1      network mode, free
//       2 + p  network mode, held by PE p
//   the CPU word: library memory on the home's node (a table in the home's control area, found
//     by the lock's place in the symmetric segment), updated only with CPU atomics by that
//     node's PEs: the mode as that node sees it (CPU free, CPU held, network, migrating), the
//     holder, a streak (how many acquisitions in a row came from the side that does not own
//     the mode) and which of the node's PEs sleep waiting for it.
//
// In CPU mode the home's node takes the lock with a CPU compare-and-swap on the CPU word, and a PE
// of another node asks the home's lock manager (a message its CPU answers: progress thread, or a
// wait inside the library), which takes the CPU word on its behalf and grants it. In network
// mode every PE, the home's node included, takes the network word with one compare-and-swap.
// A request that finds the lock in the other side's mode migrates it when the policy says so
// (HOSHMEM_LOCK_POLICY): a PE of the home's node marks the CPU word migrating, takes the network
// word from free to CPU mode and holds the CPU word; a PE of another node is told by the manager
// (which marked the CPU word migrating for it) to move the network word from CPU mode to itself,
// and then tells the manager the mode is network. Whoever finds the CPU word migrating waits; no
// second migration is ever asked for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "lib/core/hybrid_lock_protocol.h"  // Request, Answer: the manager's messages

namespace hoshmem::hybrid_lock {


// At shmem_init, after the transports: reads HOSHMEM_LOCK*, refuses a hybrid lock the job cannot
// run (another node's lock manager unreachable: no messages). `routine` names the caller.
void setup(const char *routine);
bool enabled();
std::string description();  // for SHMEM_INFO
void print_stats();          // SHMEM_INFO at finalize: this PE's acquisitions and migrations

// The PE a lock lives on (HOSHMEM_LOCK_HOME), for either kind of lock.
int home(const long *lock, const char *routine);

void set(long *lock, const char *routine);
void clear(long *lock, const char *routine);
int test(long *lock, const char *routine);  // 0: acquired; 1: held by another

// On the home, or its node's server (HOSHMEM_PROGRESS=node): PE `from`'s request for the lock
// whose key (its place in the segment) is `key`, homed on PE `home` of this node. Only CPU atomics
// on the CPU word and a load of the network word: a manager never waits.
Answer serve(int from, int home, Request request, uint64_t key);

}  // namespace hoshmem::hybrid_lock
