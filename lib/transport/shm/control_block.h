// lib/transport/shm: the per-PE control block, shared with every PE of the node. It sits in front
// of the PE's symmetric heap in the same shared-memory file, so mapping a peer's heap maps its
// control block too. It carries what PEs of a node use to synchronize with each other.
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

struct ControlBlock {
  // Doorbell: a PE that has waited long enough raises `sleeping` and sleeps on `doorbell` (futex);
  // whoever updates its memory next lowers the flag, bumps the doorbell and wakes it. Only that
  // first writer pays for the wake-up: a stream of puts to a sleeping PE costs one syscall.
  alignas(kCacheLine) std::atomic<uint32_t> doorbell;
  std::atomic<uint32_t> sleeping;
  // Dissemination barrier: round k of barrier number e stores e into barrier_round[k] of the
  // partner PE (me + 2^k) mod n.
  PaddedCounter barrier_round[kMaxBarrierRounds];
  // Number of world barriers this PE has entered (SHMEM_DEBUG uses it to tell a peer that is
  // ahead of us from one that called a collective we did not).
  PaddedCounter barriers_entered;
};

// Each PE's shared-memory file starts with the control block, then one scratch slot per team
// (collective flags and buffers; slot 0 is the world team's), then the symmetric heap. Slots are
// symmetric: a team uses the same slot index on all its members.
constexpr size_t kControlBlockBytes = 64 * 1024;
constexpr int kTeamSlots = 64;
constexpr size_t kTeamSlotBytes = 256 * 1024;
constexpr size_t kControlBytes = kControlBlockBytes + kTeamSlots * kTeamSlotBytes;
static_assert(sizeof(ControlBlock) <= kControlBlockBytes);

// Team scratch slot `slot` of the PE whose control block is `cb` (as mapped here).
inline char *team_slot(ControlBlock *cb, int slot) {
  return reinterpret_cast<char *>(cb) + kControlBlockBytes + static_cast<size_t>(slot) * kTeamSlotBytes;
}

// Wakes the owner of `cb` if it is asleep. Cheap when nobody sleeps: one shared-line load.
inline void ring_doorbell(ControlBlock *cb) {
  if (cb->sleeping.load(std::memory_order_relaxed) != 0 &&
      cb->sleeping.exchange(0, std::memory_order_seq_cst) != 0) {
    cb->doorbell.fetch_add(1, std::memory_order_seq_cst);
    futex_wake_all(&cb->doorbell);
  }
}

}  // namespace hoshmem::shm
