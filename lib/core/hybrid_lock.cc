// lib/core: hybrid locks (hybrid_lock.h).
#include "lib/core/hybrid_lock.h"

#include <time.h>

#include <cstdio>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "lib/core/messages.h"
#include "lib/core/runtime.h"
#include "lib/transport/shm/control_block.h"

namespace hoshmem::hybrid_lock {
namespace {

// The network word's values.
constexpr uint64_t kNetCpuMode = 0;
constexpr uint64_t kNetFree = 1;
uint64_t net_held_by(int pe) { return 2 + static_cast<uint64_t>(pe); }

// The CPU word: state (2 bits), holder (24 bits), streak (16 bits), sleeping waiters (16 bits,
// one per PE number modulo 16: a release rings every PE of the node whose bit is set).
enum State : uint64_t { kCpuFree = 0, kCpuHeld = 1, kNetwork = 2, kMigrating = 3 };
constexpr int kHolderShift = 2, kStreakShift = 26, kWaiterShift = 48;
constexpr uint64_t kHolderMask = (uint64_t{1} << 24) - 1, kStreakMask = 0xffff;
constexpr uint64_t kWaitersMask = uint64_t{0xffff} << kWaiterShift;

State state_of(uint64_t w) { return static_cast<State>(w & 3); }
int holder_of(uint64_t w) { return static_cast<int>((w >> kHolderShift) & kHolderMask); }
unsigned streak_of(uint64_t w) { return static_cast<unsigned>((w >> kStreakShift) & kStreakMask); }
uint64_t word(State s, int holder, unsigned streak, uint64_t waiters = 0) {
  return s | (static_cast<uint64_t>(holder) & kHolderMask) << kHolderShift |
         uint64_t{std::min(streak, 0xffffu)} << kStreakShift | (waiters & kWaitersMask);
}
uint64_t waiter_bit(int pe) { return uint64_t{1} << (kWaiterShift + pe % 16); }

struct alignas(shm::kCacheLine) Slot {
  std::atomic<uint64_t> key;  // 1 + the lock's key; 0: free
  std::atomic<uint64_t> word;
};
constexpr size_t kSlots = shm::kLockTableBytes / sizeof(Slot);
static_assert((kSlots & (kSlots - 1)) == 0);

// How this PE holds a lock it acquired, for its release.
enum class Held : uint8_t { kCpuWord, kNetworkWord, kByManager };

struct State_ {
  bool hybrid = false;
  bool hash_home = true;
  unsigned migrate_after = 4;  // the policy's count (1: eager)
  bool flip_on_release = false;  // HOSHMEM_LOCK_POLICY=always
  std::vector<int> node_pes;     // this node's PEs (those whose control area is mapped)
  std::mutex held_mutex;
  std::unordered_map<const long *, Held> held;
  // SHMEM_INFO at finalize: how this PE's acquisitions went.
  std::atomic<uint64_t> by_cpu{0}, by_network{0}, by_manager{0};  // acquisitions, by the word taken
  std::atomic<uint64_t> to_cpu{0}, to_network{0};  // migrations this PE made
  std::atomic<uint64_t> asked{0}, busy{0}, served{0};  // manager requests: sent, busy, answered
} g;

void count(std::atomic<uint64_t> &c) { c.fetch_add(1, std::memory_order_relaxed); }

constexpr uint64_t kGlobalsKey = uint64_t{1} << 63;

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

// The lock's place in the symmetric segment: the same on every PE.
uint64_t key_of(const long *lock, const char *routine) {
  const auto a = reinterpret_cast<uintptr_t>(lock);
  const auto file = reinterpret_cast<uintptr_t>(rt.memory.own_file());
  if (a - file < rt.memory.file_size()) return a - file;
  if (a - rt.space.data.base < rt.space.data.size) return kGlobalsKey | (a - rt.space.data.base);
  report_not_symmetric(lock, rt.me, routine);
}

// This PE's copy of the lock with key `key` (the manager's network word).
const long *lock_here(uint64_t key) {
  if (key & kGlobalsKey)
    return reinterpret_cast<const long *>(rt.space.data.base + (key & ~kGlobalsKey));
  return reinterpret_cast<const long *>(rt.memory.own_file() + key);
}

// The CPU word of the lock with key `key` homed on `home` (a PE of this node).
Slot &slot_of(int home, uint64_t key) {
  auto *table = reinterpret_cast<Slot *>(reinterpret_cast<char *>(rt.control[home]) +
                                         shm::kLockTableOffset);
  const uint64_t tag = key + 1;
  size_t i = mix(key) & (kSlots - 1);
  for (size_t n = 0; n < kSlots; ++n, i = (i + 1) & (kSlots - 1)) {
    uint64_t k = table[i].key.load(std::memory_order_acquire);
    if (k == 0 && table[i].key.compare_exchange_strong(k, tag, std::memory_order_acq_rel))
      return table[i];
    if (k == tag) return table[i];
  }
  fatal("shmem_set_lock", "more than %zu hybrid locks are homed on PE %d (HOSHMEM_LOCK_HOME=hash "
        "spreads them over the PEs)", kSlots, home);
}

// The job's atomics on the network word: CPU atomics where the mode allows them (all-SW mode,
// this node), else the network backend (HCA atomics, loopback included; all-SW mode's messages).
uint64_t net_cas(int home, long *lock, uint64_t expected, uint64_t desired, const char *routine) {
  if (rt.cpu_atomics_ok[home]) {
    auto *w = reinterpret_cast<uint64_t *>(amo_address(lock, sizeof(long), home, routine));
    __atomic_compare_exchange_n(w, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return expected;
  }
  uint64_t old = 0;
  atomics::AmoRequest r{atomics::AmoOp::CompareSwap, 8, home, lock, desired, expected, &old};
  rt.remote_atomics->execute(r, false);
  return old;
}

void net_store(int home, long *lock, uint64_t value, const char *routine) {
  if (rt.cpu_atomics_ok[home]) {
    auto *w = reinterpret_cast<uint64_t *>(amo_address(lock, sizeof(long), home, routine));
    __atomic_store_n(w, value, __ATOMIC_SEQ_CST);
    return;
  }
  atomics::AmoRequest r{atomics::AmoOp::Set, 8, home, lock, value, 0, nullptr};
  rt.remote_atomics->execute(r, false);
}

// Rings the doorbell of every PE of this node that `old` says sleeps waiting for the word.
void wake(uint64_t old) {
  const uint64_t waiters = old & kWaitersMask;
  if (!waiters) return;
  for (int pe : g.node_pes)
    if (waiters & waiter_bit(pe)) notify_sync(pe);
}

// Sets the CPU word to `desired` (waiters cleared) if it still is `seen`, and wakes them.
bool move(Slot &s, uint64_t &seen, uint64_t desired) {
  if (!s.word.compare_exchange_strong(seen, desired & ~kWaitersMask, std::memory_order_acq_rel))
    return false;
  wake(seen);
  return true;
}

// Waits until the CPU word is no longer `seen` (announced first, so its next change rings).
void wait_change(Slot &s, uint64_t seen) {
  const uint64_t bit = waiter_bit(rt.me);
  if (!(seen & bit)) {
    if (!s.word.compare_exchange_strong(seen, seen | bit, std::memory_order_acq_rel)) return;
    seen |= bit;
  }
  wait_until_ready(rt.wait, rt.control[rt.me], shm::kSleepForSync,
                   [&] { return s.word.load(std::memory_order_acquire) != seen; });
}

// Lets another holder finish: exponential from 1 us to 1 ms, serving this PE's messages.
void pause(unsigned &round) {
  const uint64_t until = now_ns() + (uint64_t{1000} << std::min(round++, 10u));
  wait_until_ready(rt.wait, rt.control[rt.me], shm::kSleepForSync,
                   [&] { return now_ns() >= until; });
}

void remember(const long *lock, Held how) {
  count(how == Held::kCpuWord ? g.by_cpu : how == Held::kNetworkWord ? g.by_network : g.by_manager);
  std::lock_guard<std::mutex> guard(g.held_mutex);
  g.held[lock] = how;
}

bool local_home(int home) { return rt.control[home] != nullptr; }

[[noreturn]] void corrupt(const long *lock, int home, uint64_t net, const char *routine) {
  fatal(routine, "lock %p (home PE %d): its word holds %llu where CPU mode (0) was expected: "
        "was it zeroed before its first use, and is it touched only by the lock routines?",
        static_cast<const void *>(lock), home, static_cast<unsigned long long>(net));
}

// --- a PE of the home's node --------------------------------------------------------------------

// Moves the lock from network to CPU mode, for this PE, which then holds it. `seen`: the CPU
// word in network mode. False if the word changed first, or (`wait` false) the network word is
// held (*held set): the lock then stays in network mode.
bool migrate_here(long *lock, int home, Slot &s, uint64_t seen, bool wait, bool *held,
                  const char *routine) {
  uint64_t claimed = word(kMigrating, rt.me, 0, seen);
  if (!s.word.compare_exchange_strong(seen, claimed, std::memory_order_acq_rel)) return false;
  // The network word's holder (another node's PE, or this node's in network mode) releases to
  // free; 0 means the lock was zeroed by its owner since it was last used in network mode.
  for (unsigned round = 0;;) {
    const uint64_t old = net_cas(home, lock, kNetFree, kNetCpuMode, routine);
    if (old == kNetFree || old == kNetCpuMode) break;
    if (!wait) {
      while (!move(s, claimed, word(kNetwork, 0, streak_of(seen)))) {
      }
      *held = true;
      return false;
    }
    pause(round);
  }
  uint64_t now = s.word.load(std::memory_order_acquire);
  while (!move(s, now, word(kCpuHeld, rt.me, 0))) {
  }
  count(g.to_cpu);
  return true;
}

// One attempt; `wait`: on a held lock, wait for its word to change. True when acquired.
bool acquire_here(long *lock, int home, bool wait, const char *routine) {
  Slot &s = slot_of(home, key_of(lock, routine));
  for (unsigned round = 0;;) {
    uint64_t w = s.word.load(std::memory_order_acquire);
    switch (state_of(w)) {
      case kCpuFree:
        // A local acquisition ends a streak of other nodes' grants.
        if (s.word.compare_exchange_strong(w, word(kCpuHeld, rt.me, 0, w),
                                           std::memory_order_acq_rel)) {
          remember(lock, Held::kCpuWord);
          return true;
        }
        continue;
      case kCpuHeld:
      case kMigrating:
        if (!wait) return false;
        wait_change(s, w);
        continue;
      case kNetwork: {
        if (streak_of(w) + 1 >= g.migrate_after) {
          bool held = false;
          if (!migrate_here(lock, home, s, w, wait, &held, routine)) {
            if (held) return false;
            continue;
          }
          remember(lock, Held::kCpuWord);
          return true;
        }
        const uint64_t old = net_cas(home, lock, kNetFree, net_held_by(rt.me), routine);
        if (old == kNetFree) {
          // One more acquisition from the side that does not own the mode. Advice only: a
          // count lost to a concurrent change of the word just delays a migration.
          uint64_t now = w;
          if (streak_of(w) < kStreakMask - 1)
            s.word.compare_exchange_strong(now, w + (uint64_t{1} << kStreakShift));
          remember(lock, Held::kNetworkWord);
          return true;
        }
        if (old == kNetCpuMode) {  // zeroed since its network-mode use: claim it for CPU mode
          bool held = false;
          if (migrate_here(lock, home, s, w, true, &held, routine)) {
            remember(lock, Held::kCpuWord);
            return true;
          }
          continue;
        }
        if (!wait) return false;
        pause(round);
        continue;
      }
    }
  }
}

void release_here(long *lock, int home, Held how, const char *routine) {
  Slot &s = slot_of(home, key_of(lock, routine));
  uint64_t w = s.word.load(std::memory_order_acquire);
  if (how == Held::kCpuWord) {
    for (;;) {
      if (state_of(w) != kCpuHeld || holder_of(w) != rt.me)
        fatal(routine, "lock %p: released by PE %d, which does not hold it",
              static_cast<const void *>(lock), rt.me);
      if (g.flip_on_release) {  // to network mode: the next acquisition migrates it back
        if (!s.word.compare_exchange_strong(w, word(kMigrating, rt.me, 0, w),
                                            std::memory_order_acq_rel))
          continue;
        const uint64_t old = net_cas(home, lock, kNetCpuMode, kNetFree, routine);
        if (old != kNetCpuMode) corrupt(lock, home, old, routine);
        uint64_t now = s.word.load(std::memory_order_acquire);
        while (!move(s, now, word(kNetwork, 0, 0))) {
        }
        count(g.to_network);
        return;
      }
      if (move(s, w, word(kCpuFree, 0, streak_of(w)))) return;
    }
  }
  // Held in network mode.
  if (g.flip_on_release && state_of(w) == kNetwork &&
      s.word.compare_exchange_strong(w, word(kMigrating, rt.me, 0, w), std::memory_order_acq_rel)) {
    const uint64_t old = net_cas(home, lock, net_held_by(rt.me), kNetCpuMode, routine);
    if (old != net_held_by(rt.me)) corrupt(lock, home, old, routine);
    uint64_t now = s.word.load(std::memory_order_acquire);
    while (!move(s, now, word(kCpuFree, 0, 0))) {
    }
    count(g.to_cpu);
    return;
  }
  net_store(home, lock, kNetFree, routine);
}

// --- a PE of another node -----------------------------------------------------------------------

// One attempt through the home's manager, the lock being in CPU mode. True when acquired.
// `answer`: what the manager said.
bool ask_manager(long *lock, int home, Answer *answer, const char *routine) {
  count(g.asked);
  *answer = static_cast<Answer>(messages_lock(home, kAcquire, key_of(lock, routine)));
  switch (*answer) {
    case kGranted:
      remember(lock, Held::kByManager);
      return true;
    case kMigrate: {  // the manager marked it migrating for us: the network word is ours to move
      const uint64_t old = net_cas(home, lock, kNetCpuMode, net_held_by(rt.me), routine);
      if (old != kNetCpuMode) corrupt(lock, home, old, routine);
      messages_lock_post(home, kMigrated, key_of(lock, routine));
      count(g.to_network);
      remember(lock, Held::kNetworkWord);
      return true;
    }
    case kBusy:
      count(g.busy);
      return false;
    case kNetworkMode:
      return false;
    default:
      fatal(routine, "lock %p: its home PE %d refused the request (not a symmetric address "
            "there?)", static_cast<const void *>(lock), home);
  }
}

bool acquire_remote(long *lock, int home, bool wait, const char *routine) {
  for (unsigned round = 0;;) {
    const uint64_t old = net_cas(home, lock, kNetFree, net_held_by(rt.me), routine);
    if (old == kNetFree) {
      remember(lock, Held::kNetworkWord);
      return true;
    }
    if (old == kNetCpuMode) {
      Answer answer;
      if (ask_manager(lock, home, &answer, routine)) return true;
      if (answer == kNetworkMode) continue;  // migrated since: try the word again
    }
    if (!wait) return false;
    pause(round);
  }
}

}  // namespace

void setup(const char *routine) {
  g.hybrid = rt.config.lock == "hybrid";
  g.hash_home = rt.config.lock_home == "hash";
  g.migrate_after = rt.config.lock_policy == 0 ? 1 : static_cast<unsigned>(rt.config.lock_policy);
  g.flip_on_release = rt.config.lock_policy == 0;
  g.node_pes.clear();
  for (int pe = 0; pe < rt.npes; ++pe)
    if (rt.control[pe]) g.node_pes.push_back(pe);
  if (g.hybrid && rt.spans_nodes && !messages_source())
    fatal(routine, "HOSHMEM_LOCK=hybrid: a lock homed on another node is taken through its "
          "manager's messages, and this job has none (%s)", rt.messages_why_not.c_str());
}

bool enabled() { return g.hybrid; }

void print_stats() {
  if (!g.hybrid) return;
  const auto v = [](const std::atomic<uint64_t> &c) {
    return static_cast<unsigned long long>(c.load(std::memory_order_relaxed));
  };
  printf("hoshmem: PE %d: locks: acquired %llu times with CPU atomics, %llu on the network word, "
         "%llu through a manager; migrations to CPU mode %llu, to network mode %llu; %llu "
         "requests to managers (%llu busy), %llu served\n",
         rt.me, v(g.by_cpu), v(g.by_network), v(g.by_manager), v(g.to_cpu), v(g.to_network),
         v(g.asked), v(g.busy), v(g.served));
  fflush(stdout);
}

const char *description() {
  if (!g.hybrid)
    return g.hash_home ? "MCS queue lock over the job's atomics, homed by address"
                       : "MCS queue lock over the job's atomics, homed on PE 0";
  return g.hash_home ? "hybrid (CPU atomics on the home's node, HCA atomics or its manager "
                       "elsewhere), homed by address"
                     : "hybrid (CPU atomics on the home's node, HCA atomics or its manager "
                       "elsewhere), homed on PE 0";
}

int home(const long *lock, const char *routine) {
  if (!g.hash_home) return 0;
  return static_cast<int>(mix(key_of(lock, routine)) % static_cast<uint64_t>(rt.npes));
}

void set(long *lock, const char *routine) {
  const int h = home(lock, routine);
  if (local_home(h))
    acquire_here(lock, h, true, routine);
  else
    acquire_remote(lock, h, true, routine);
}

int test(long *lock, const char *routine) {
  const int h = home(lock, routine);
  return (local_home(h) ? acquire_here(lock, h, false, routine)
                        : acquire_remote(lock, h, false, routine))
             ? 0
             : 1;
}

void clear(long *lock, const char *routine) {
  Held how;
  {
    std::lock_guard<std::mutex> guard(g.held_mutex);
    auto it = g.held.find(lock);
    if (it == g.held.end())
      fatal(routine, "lock %p: PE %d releases a lock it does not hold",
            static_cast<const void *>(lock), rt.me);
    how = it->second;
    g.held.erase(it);
  }
  // What the critical section wrote is complete before anyone else can hold the lock.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (rt.remote_atomics) rt.remote_atomics->quiet();
  const int h = home(lock, routine);
  if (how == Held::kByManager)
    messages_lock_post(h, kRelease, key_of(lock, routine));
  else if (local_home(h))
    release_here(lock, h, how, routine);
  else
    net_store(h, lock, kNetFree, routine);
}

Answer serve(int from, Request request, uint64_t key) {
  if (!local_home(rt.me) || from < 0 || from >= rt.npes) return kRefused;
  count(g.served);
  Slot &s = slot_of(rt.me, key);
  uint64_t w = s.word.load(std::memory_order_acquire);
  switch (request) {
    case kAcquire:
      for (;;) {
        switch (state_of(w)) {
          case kCpuFree: {
            const unsigned streak = streak_of(w) + 1;
            if (streak >= g.migrate_after) {
              if (s.word.compare_exchange_strong(w, word(kMigrating, from, 0, w)))
                return kMigrate;
            } else if (s.word.compare_exchange_strong(w, word(kCpuHeld, from, streak, w))) {
              return kGranted;
            }
            continue;
          }
          case kCpuHeld:
          case kMigrating:
            return kBusy;
          case kNetwork: {
            // The requester saw CPU mode in the network word: a migration since (answer
            // so), or a lock zeroed since its network-mode use (claim it back first).
            const auto *net = reinterpret_cast<const volatile uint64_t *>(lock_here(key));
            if (*net != kNetCpuMode) return kNetworkMode;
            uint64_t claimed = word(kMigrating, rt.me, 0, w);
            if (!s.word.compare_exchange_strong(w, claimed)) continue;
            if (*net != kNetCpuMode) {  // moved between the load and the claim: give it back
              while (!move(s, claimed, word(kNetwork, 0, 0))) {
              }
              return kNetworkMode;
            }
            w = claimed;  // ours: back to CPU mode, free, then served as such
            while (!move(s, w, word(kCpuFree, 0, 0))) {
            }
            w = s.word.load(std::memory_order_acquire);
            continue;
          }
        }
      }
    case kMigrated:
      for (;;) {
        if (state_of(w) != kMigrating || holder_of(w) != from) return kRefused;
        if (move(s, w, word(kNetwork, 0, 0))) return kGranted;
      }
    case kRelease:
      for (;;) {
        if (state_of(w) != kCpuHeld || holder_of(w) != from) return kRefused;
        if (move(s, w, word(kCpuFree, 0, streak_of(w)))) return kGranted;
      }
  }
  return kRefused;
}

}  // namespace hoshmem::hybrid_lock
