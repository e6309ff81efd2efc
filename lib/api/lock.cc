// Distributed locks: a queue lock (MCS) spread over the symmetric long of every PE, so waiters are
// served first-come first-served and each one waits on its own memory, not on a shared word.
//
// With HOSHMEM_LOCK=hybrid the routines hand over to lib/core/hybrid_lock.h instead.
//
// The lock is a symmetric long, zero when unused. Its two 32-bit halves:
//   tail (low half, used on the lock's home PE only, hybrid_lock::home): 1 + the last PE in the
//        queue, 0 if the lock is free;
//   node (high half, on each PE): 1 + the PE queued behind this one (0: none yet), plus the
//        WAITING bit while this PE waits for its predecessor to hand the lock over.
#include <algorithm>
#include <mutex>
#include <vector>

#include "lib/api/api.h"
#include "lib/atomics/cpu_atomics.h"
#include "lib/core/hybrid_lock.h"

using namespace hoshmem;
using atomics::AmoOp;

namespace {

constexpr uint32_t kWaiting = 1u << 31;
constexpr uint32_t kNextMask = kWaiting - 1;

struct LockWords {
  long *lock;
  const char *routine;
  int home = hybrid_lock::home(lock, routine);

  uint32_t *tail() const { return half(home, 0); }
  uint32_t *node(int pe) const { return half(pe, 1); }
  uint32_t *half(int pe, int which) const {
    return reinterpret_cast<uint32_t *>(amo_address(lock, sizeof(long), pe, routine)) + which;
  }
};

uint32_t load(const uint32_t *w) { return __atomic_load_n(w, __ATOMIC_ACQUIRE); }

// An atomic update of half `which` of the lock word on PE `pe`: a CPU atomic in all-SW mode, the
// job's HCA atomics in all-HW mode (where a CPU atomic, or even a plain store, could lose an
// update the HCA makes at the same time). Returns the old value.
uint32_t update(const LockWords &w, int pe, int which, AmoOp op, uint32_t operand,
                uint32_t compare = 0) {
  if (rt.cpu_atomics_ok[pe]) {
    uint32_t *half = w.half(pe, which);
    switch (op) {
      case AmoOp::Set: __atomic_store_n(half, operand, __ATOMIC_SEQ_CST); return 0;
      case AmoOp::Swap: return __atomic_exchange_n(half, operand, __ATOMIC_SEQ_CST);
      case AmoOp::FetchAnd: return __atomic_fetch_and(half, operand, __ATOMIC_SEQ_CST);
      case AmoOp::FetchOr: return __atomic_fetch_or(half, operand, __ATOMIC_SEQ_CST);
      case AmoOp::CompareSwap:
        __atomic_compare_exchange_n(half, &compare, operand, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST);
        return compare;  // the old value, whether or not it matched
      default: break;
    }
    fatal(w.routine, "internal: lock operation %s", atomics::amo_op_name(op));
  }
  uint32_t old = 0;
  atomics::AmoRequest r{op, 4, pe, reinterpret_cast<char *>(w.lock) + 4 * which, operand, compare,
                        &old};
  rt.remote_atomics->execute(r, false);
  return old;
}


// The locks this PE holds (few at a time): a release of one it does not hold would wait forever
// for a successor that never comes, so it is an error instead.
std::mutex g_held_mutex;
std::vector<const long *> g_held;

void hold(const long *lock) {
  ThreadLock<std::mutex> guard(g_held_mutex);
  g_held.push_back(lock);
}

void release(const long *lock, const char *routine) {
  ThreadLock<std::mutex> guard(g_held_mutex);
  const auto it = std::find(g_held.begin(), g_held.end(), lock);
  if (it == g_held.end())
    fatal(routine, "lock %p: PE %d releases a lock it does not hold",
          static_cast<const void *>(lock), rt.me);
  g_held.erase(it);
}

}  // namespace

extern "C" {

void pshmem_set_lock(long *lock) {
  if (hybrid_lock::enabled()) return hybrid_lock::set(lock, HOSHMEM_ROUTINE);
  LockWords w{lock, HOSHMEM_ROUTINE};
  uint32_t *mine = w.node(rt.me);
  update(w, rt.me, 1, AmoOp::Set, kWaiting);
  uint32_t prev = update(w, w.home, 0, AmoOp::Swap, rt.me + 1);
  hold(lock);
  if (prev == 0) {
    // Only drop WAITING: a successor may already have linked itself into our node.
    update(w, rt.me, 1, AmoOp::FetchAnd, ~kWaiting);
    return;
  }
  // Queue behind the previous tail and wait until it hands the lock over.
  update(w, prev - 1, 1, AmoOp::FetchOr, rt.me + 1);
  notify_sync(prev - 1);
  wait_until_ready(rt.wait, rt.control[rt.me], shm::kSleepForSync,
                   [&] { return (load(mine) & kWaiting) == 0; });
}

void pshmem_clear_lock(long *lock) {
  if (hybrid_lock::enabled()) return hybrid_lock::clear(lock, HOSHMEM_ROUTINE);
  LockWords w{lock, HOSHMEM_ROUTINE};
  release(lock, HOSHMEM_ROUTINE);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // quiet the default context first
  if (rt.remote_atomics) rt.remote_atomics->quiet();
  const uint32_t me1 = rt.me + 1;
  if (update(w, w.home, 0, AmoOp::CompareSwap, 0, me1) == me1) return;  // nobody queued behind us
  uint32_t *mine = w.node(rt.me);
  wait_until_ready(rt.wait, rt.control[rt.me], shm::kSleepForSync,
                   [&] { return (load(mine) & kNextMask) != 0; });
  int next = static_cast<int>((load(mine) & kNextMask) - 1);
  update(w, rt.me, 1, AmoOp::Set, 0);
  update(w, next, 1, AmoOp::FetchAnd, ~kWaiting);
  notify_sync(next);
}

// 0 if the lock was free and is now held, 1 if it was already set.
int pshmem_test_lock(long *lock) {
  if (hybrid_lock::enabled()) return hybrid_lock::test(lock, HOSHMEM_ROUTINE);
  LockWords w{lock, HOSHMEM_ROUTINE};
  update(w, rt.me, 1, AmoOp::Set, 0);
  if (update(w, w.home, 0, AmoOp::CompareSwap, rt.me + 1, 0) != 0) return 1;
  hold(lock);
  return 0;
}

}  // extern "C"

HOSHMEM_ALIAS(shmem_set_lock);
HOSHMEM_ALIAS(shmem_clear_lock);
HOSHMEM_ALIAS(shmem_test_lock);
