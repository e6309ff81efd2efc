// lib/transport/shm: the per-PE control block, shared with every PE of the node. It is a
// shared-memory file of its own (4 KiB pages, whatever the heap's), mapped right in front of the
// PE's symmetric heap, by the PE and by each peer, so one address range (and one registration)
// covers both. It carries what PEs of a node use to synchronize with each other.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "lib/base/futex.h"

namespace hoshmem::shm {

constexpr size_t kCacheLine = 64;
constexpr int kMaxBarrierRounds = 32;  // dissemination rounds: log2(max PEs)

struct alignas(kCacheLine) PaddedCounter {
  std::atomic<uint64_t> value;
};

// What a sleeping PE waits for (bits of ControlBlock::sleeping; threads of one PE may sleep for
// both at once). A PE in a barrier or collective waits for a message the library sends and rings
// for explicitly, so puts and AMOs, which only look at kSleepForData, never wake it: a stream of
// puts to a PE that sits in a barrier costs no wake-ups.
enum SleepFor : uint32_t {
  kSleepForData = 1,  // wait_until and friends: any put, AMO or signal may satisfy the wait
  kSleepForSync = 2,  // barriers, collectives, locks, team setup: woken by ring_doorbell only
};

// The doorbell's line is the last of the block's first page. The library's puts and every AMO
// read the target's `sleeping` right after storing into the target's memory, and on x86 a load
// whose address matches a just-stored one in its low 12 bits waits for that store (4K aliasing):
// page-aligned buffers, the most common put destinations, start at page offset 0. Measured in a
// loop of 128-byte copies, each followed by the flag's load: 1.4x slower with the flag at page
// offset 4.
constexpr size_t kDoorbellOffset = 4096 - kCacheLine;

struct ControlBlock {
  // Dissemination barrier: round k of barrier number e stores e into barrier_round[k] of the
  // partner PE (me + 2^k) mod n.
  PaddedCounter barrier_round[kMaxBarrierRounds];
  // Number of world barriers this PE has entered (SHMEM_DEBUG uses it to tell a peer that is
  // ahead of us from one that called a collective we did not).
  PaddedCounter barriers_entered;
  char unused_[kDoorbellOffset - (kMaxBarrierRounds + 1) * sizeof(PaddedCounter)];
  // Doorbell: a PE that has waited long enough raises a SleepFor bit in `sleeping` and sleeps on
  // `doorbell` (futex); the next writer that the bit concerns lowers the flag, bumps the doorbell
  // and wakes it. Only that first writer pays for the wake-up: a stream of puts to a sleeping PE
  // costs one syscall.
  alignas(kCacheLine) std::atomic<uint32_t> doorbell;
  std::atomic<uint32_t> sleeping;
};

// Each PE's control file holds the control block, then one scratch slot per team (collective
// flags and buffers; slot 0 is the world team's); the symmetric heap follows it in memory.
// Slots are symmetric: a team uses the same slot index on all its members.
constexpr size_t kControlBlockBytes = 64 * 1024;
constexpr int kTeamSlots = 64;
constexpr size_t kTeamSlotBytes = 256 * 1024;
// After the team slots: the area of the receive ring that carries the job's messages to this
// PE's CPU over RDMA (lib/transport/ring/transport.h, HOSHMEM_AM=ring): its counters, the reply
// slots of this PE's requests and the ring itself. The same size whatever the job's size.
constexpr size_t kRingAreaOffset = kControlBlockBytes + kTeamSlots * kTeamSlotBytes;
constexpr size_t kRingAreaBytes = 192 * 1024;
// After it: the CPU words of the hybrid locks homed on this PE (lib/core/hybrid_lock.h), 16
// bytes each (65,536 locks), found by the lock's place in the symmetric segment; only this
// node's PEs touch them, with CPU atomics.
constexpr size_t kLockTableOffset = kRingAreaOffset + kRingAreaBytes;
constexpr size_t kLockTableBytes = 1024 * 1024;
constexpr size_t kControlBytes = kLockTableOffset + kLockTableBytes;
static_assert(sizeof(ControlBlock) <= kControlBlockBytes);
static_assert(offsetof(ControlBlock, doorbell) == kDoorbellOffset);

// Later in the control block area (4 KiB pages, so this part can be mapped alone): the backing of
// a page-aligned range of the owner's process that its peers write into (the inline fast path's
// state, lib/core/fast_path.cc: a PE that goes to sleep for data turns the other PEs' inline
// stores to it off there, so they ring instead).
constexpr size_t kSharedStateOffset = 16 * 1024;
constexpr size_t kSharedStateBytes = 40 * 1024;
static_assert(sizeof(ControlBlock) <= kSharedStateOffset);
static_assert(kSharedStateOffset + kSharedStateBytes <= kControlBlockBytes);

// After it: the stripe locks of one-sided accumulates into this PE's memory (lib/core/accumulate.cc),
// one 8-byte word per cache line, taken with the job's atomics (CPU or HCA) by whoever updates.
constexpr size_t kAccumulateLocksOffset = kSharedStateOffset + kSharedStateBytes;
constexpr int kAccumulateLocks = 64;
static_assert(kAccumulateLocksOffset + kAccumulateLocks * kCacheLine <= kControlBlockBytes);

// The shared state of the PE whose control block is `cb` (as mapped here).
inline void *shared_state(ControlBlock *cb) {
  return reinterpret_cast<char *>(cb) + kSharedStateOffset;
}

// Team scratch slot `slot` of the PE whose control block is `cb` (as mapped here).
inline char *team_slot(ControlBlock *cb, int slot) {
  return reinterpret_cast<char *>(cb) + kControlBlockBytes + static_cast<size_t>(slot) * kTeamSlotBytes;
}

// Wakes the owner of `cb` if it sleeps for something in `reasons` (SleepFor bits). Cheap when it
// does not: one shared-line load.
inline void ring_doorbell_for(ControlBlock *cb, uint32_t reasons) {
  if ((cb->sleeping.load(std::memory_order_relaxed) & reasons) != 0 &&
      cb->sleeping.exchange(0, std::memory_order_seq_cst) != 0) {
    cb->doorbell.fetch_add(1, std::memory_order_seq_cst);
    futex_wake_all(&cb->doorbell);
  }
}

// After a library message (barrier, collective, lock hand-over): wakes the owner whatever it
// sleeps for.
inline void ring_doorbell(ControlBlock *cb) {
  ring_doorbell_for(cb, kSleepForData | kSleepForSync);
}

// After a put, AMO or signal: wakes the owner only if it waits for memory to change.
inline void ring_doorbell_for_data(ControlBlock *cb) { ring_doorbell_for(cb, kSleepForData); }

}  // namespace hoshmem::shm
