// Distributed locks: a queue lock (MCS) spread over the symmetric long of every PE, so waiters are
// served first-come first-served and each one waits on its own memory, not on a shared word.
//
// The lock is a symmetric long, zero when unused. Its two 32-bit halves:
//   tail (low half, used on PE 0 only): 1 + the last PE in the queue, 0 if the lock is free;
//   node (high half, on each PE): 1 + the PE queued behind this one (0: none yet), plus the
//        WAITING bit while this PE waits for its predecessor to hand the lock over.
#include "lib/api/api.h"
#include "lib/atomics/cpu_atomics.h"

using namespace hoshmem;

namespace {

constexpr uint32_t kWaiting = 1u << 31;
constexpr uint32_t kNextMask = kWaiting - 1;

struct LockWords {
  long *lock;
  const char *routine;

  uint32_t *tail() const { return half(0, 0); }
  uint32_t *node(int pe) const { return half(pe, 1); }
  uint32_t *half(int pe, int which) const {
    return reinterpret_cast<uint32_t *>(amo_address(lock, sizeof(long), pe, routine)) + which;
  }
};

uint32_t load(const uint32_t *w) { return __atomic_load_n(w, __ATOMIC_ACQUIRE); }


}  // namespace

extern "C" {

void pshmem_set_lock(long *lock) {
  LockWords w{lock, HOSHMEM_ROUTINE};
  uint32_t *mine = w.node(rt.me);
  __atomic_store_n(mine, kWaiting, __ATOMIC_SEQ_CST);
  uint32_t prev = __atomic_exchange_n(w.tail(), rt.me + 1, __ATOMIC_SEQ_CST);
  if (prev == 0) {
    // Only drop WAITING: a successor may already have linked itself into our node.
    __atomic_fetch_and(mine, ~kWaiting, __ATOMIC_SEQ_CST);
    return;
  }
  // Queue behind the previous tail and wait until it hands the lock over.
  __atomic_fetch_or(w.node(prev - 1), rt.me + 1, __ATOMIC_SEQ_CST);
  notify_sync(prev - 1);
  wait_until_ready(rt.wait, rt.control[rt.me], shm::kSleepForSync,
                   [&] { return (load(mine) & kWaiting) == 0; });
}

void pshmem_clear_lock(long *lock) {
  LockWords w{lock, HOSHMEM_ROUTINE};
  std::atomic_thread_fence(std::memory_order_seq_cst);  // quiet the default context first
  uint32_t me1 = rt.me + 1;
  if (__atomic_compare_exchange_n(w.tail(), &me1, 0, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
    return;  // nobody queued behind us
  uint32_t *mine = w.node(rt.me);
  wait_until_ready(rt.wait, rt.control[rt.me], shm::kSleepForSync,
                   [&] { return (load(mine) & kNextMask) != 0; });
  int next = static_cast<int>((load(mine) & kNextMask) - 1);
  __atomic_store_n(mine, 0, __ATOMIC_RELAXED);
  __atomic_fetch_and(w.node(next), ~kWaiting, __ATOMIC_SEQ_CST);
  notify_sync(next);
}

// 0 if the lock was free and is now held, 1 if it was already set.
int pshmem_test_lock(long *lock) {
  LockWords w{lock, HOSHMEM_ROUTINE};
  __atomic_store_n(w.node(rt.me), 0, __ATOMIC_SEQ_CST);
  uint32_t expected = 0;
  bool got = __atomic_compare_exchange_n(w.tail(), &expected, rt.me + 1, false, __ATOMIC_SEQ_CST,
                                         __ATOMIC_SEQ_CST);
  return got ? 0 : 1;
}

}  // extern "C"

HOSHMEM_ALIAS(shmem_set_lock);
HOSHMEM_ALIAS(shmem_clear_lock);
HOSHMEM_ALIAS(shmem_test_lock);
