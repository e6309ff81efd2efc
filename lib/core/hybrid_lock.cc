// lib/core: hybrid locks (hybrid_lock.h).
#include "lib/core/hybrid_lock.h"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "lib/core/messages.h"
#include "lib/core/runtime.h"
#include "lib/transport/shm/control_block.h"

namespace hoshmem::hybrid_lock {
namespace {

using namespace protocol;

// 16 bytes: four locks share a cache line (a table of lines would hold a quarter as many locks
// in the same memory; the pages of the table are touched only where locks hash).
struct alignas(16) Slot {
  std::atomic<uint64_t> key;  // 1 + the lock's key; 0: free
  std::atomic<uint64_t> word;
};
constexpr size_t kSlots = shm::kLockTableBytes / sizeof(Slot);
static_assert((kSlots & (kSlots - 1)) == 0);

struct Global {
  bool hybrid = false;
  bool hash_home = true;
  unsigned migrate_after = 4;    // the policy's count (1: eager)
  bool flip_on_release = false;  // HOSHMEM_LOCK_POLICY=always
  std::vector<int> node_pes;     // this node's PEs (those whose control area is mapped)
  const char *why = "";          // for SHMEM_INFO: why this lock
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
  fatal("shmem_set_lock", "more than %zu hybrid locks are homed on PE %d: its lock table is full "
        "(HOSHMEM_LOCK_HOME=hash spreads locks over the PEs; HOSHMEM_LOCK=mcs has no table)",
        kSlots, home);
}

bool local_home(int home) { return rt.control[home] != nullptr; }

// The home of the lock whose key is `key` (HOSHMEM_LOCK_HOME), for both kinds of lock.
int home_of(uint64_t key) {
  return g.hash_home ? static_cast<int>(mix(key) % static_cast<uint64_t>(rt.npes)) : 0;
}

// The protocol's environment in the library (hybrid_lock_protocol.h): one lock, this PE. The
// network word goes through the job's atomics: CPU atomics where the mode allows them (all-SW
// mode, this node), else the network backend (HCA atomics, loopback included; all-SW mode's
// messages). The CPU word exists only on the home's node (slot null elsewhere).
struct Env {
  int me = rt.me;
  unsigned migrate_after = g.migrate_after;
  bool flip_on_release = g.flip_on_release;
  long *lock;
  int home;
  uint64_t key;
  const char *routine;
  Slot *slot = nullptr;

  Env(long *l, const char *r) : lock(l), routine(r) {
    key = key_of(lock, routine);
    home = home_of(key);
    if (local_home(home)) slot = &slot_of(home, key);
  }

  uint64_t load() { return slot->word.load(std::memory_order_acquire); }
  bool cas(uint64_t &expected, uint64_t desired) {
    return slot->word.compare_exchange_strong(expected, desired, std::memory_order_acq_rel);
  }
  uint64_t net_cas(uint64_t expected, uint64_t desired) {
    if (rt.cpu_atomics_ok[home]) {
      auto *w = reinterpret_cast<uint64_t *>(amo_address(lock, sizeof(long), home, routine));
      __atomic_compare_exchange_n(w, &expected, desired, false, __ATOMIC_SEQ_CST,
                                  __ATOMIC_SEQ_CST);
      return expected;
    }
    uint64_t old = 0;
    atomics::AmoRequest r{atomics::AmoOp::CompareSwap, 8, home, lock, desired, expected, &old};
    rt.remote_atomics->execute(r, false);
    return old;
  }
  void net_store(uint64_t value) {
    if (rt.cpu_atomics_ok[home]) {
      auto *w = reinterpret_cast<uint64_t *>(amo_address(lock, sizeof(long), home, routine));
      __atomic_store_n(w, value, __ATOMIC_SEQ_CST);
      return;
    }
    atomics::AmoRequest r{atomics::AmoOp::Set, 8, home, lock, value, 0, nullptr};
    rt.remote_atomics->execute(r, false);
  }
  // The manager's look at the home's copy (its own, or a PE's of its node that it serves): a
  // load (an HCA may update it: a load is no atomic read-modify-write).
  uint64_t net_peek() {
    return *reinterpret_cast<const volatile uint64_t *>(
        remote_address(lock, sizeof(long), home, routine));
  }
  void wake(uint64_t old) {
    const uint64_t waiters = old & kWaitersMask;
    if (!waiters) return;
    for (int pe : g.node_pes)
      if (waiters & waiter_bit(pe)) notify_sync(pe);
  }
  void wait_change(uint64_t seen) {
    wait_until_ready(rt.wait, rt.control[rt.me], shm::kSleepForSync,
                     [&] { return load() != seen; });
  }
  // Exponential from 1 us to 1 ms, serving this PE's messages meanwhile.
  void pause(unsigned &round) {
    const uint64_t until = now_ns() + (uint64_t{1000} << std::min(round++, 10u));
    wait_until_ready(rt.wait, rt.control[rt.me], shm::kSleepForSync,
                     [&] { return now_ns() >= until; });
  }
  Answer ask() {
    const auto answer = static_cast<Answer>(messages_lock(home, kAcquire, key));
    if (answer != kGranted && answer != kMigrate && answer != kBusy && answer != kNetworkMode)
      fatal(routine, "lock %p: its home PE %d refused the request (not a symmetric address "
            "there?)", static_cast<const void *>(lock), home);
    return answer;
  }
  // A release or the end of a migration waits for the manager's answer: it is in effect when
  // the call returns, as on the home's node. Sent without waiting, it could still be in flight
  // (or resent after a loss) when a barrier lets another PE find the lock held: test_lock then
  // failed on a free lock (lock_k1_ud_loss, with the model losing UD datagrams).
  void post(Request request) {
    if (static_cast<Answer>(messages_lock(home, request, key)) != kGranted)
      fatal(routine, "lock %p: its home PE %d refused %s from PE %d, which it did not expect",
            static_cast<const void *>(lock), home,
            request == kRelease ? "the release" : "the end of a migration", rt.me);
  }
  void count(Event e) {
    switch (e) {
      case Event::kToCpu: return hybrid_lock::count(g.to_cpu);
      case Event::kToNetwork: return hybrid_lock::count(g.to_network);
      case Event::kAsked: return hybrid_lock::count(g.asked);
      case Event::kBusy: return hybrid_lock::count(g.busy);
      case Event::kServed: return hybrid_lock::count(g.served);
    }
  }
  [[noreturn]] void corrupt(uint64_t net) {
    fatal(routine, "lock %p (home PE %d): its word holds %llu where CPU mode (0) was expected: "
          "was it zeroed before its first use, and is it touched only by the lock routines?",
          static_cast<const void *>(lock), home, static_cast<unsigned long long>(net));
  }
  [[noreturn]] void not_held() {
    fatal(routine, "lock %p: released by PE %d, which does not hold it",
          static_cast<const void *>(lock), rt.me);
  }
};

void remember(const long *lock, Held how) {
  count(how == Held::kCpuWord ? g.by_cpu : how == Held::kNetworkWord ? g.by_network : g.by_manager);
  std::lock_guard<std::mutex> guard(g.held_mutex);
  g.held[lock] = how;
}

bool acquire(long *lock, bool wait, const char *routine) {
  Env e(lock, routine);
  Held how;
  const bool got = e.slot ? acquire_here(e, wait, &how) : acquire_remote(e, wait, &how);
  if (got) remember(lock, how);
  return got;
}

}  // namespace

void setup(const char *routine) {
  // auto: where perf/hw/lock.sh measured it ahead of the MCS lock in every experiment (all-HW
  // mode: CPU atomics on the home's node instead of loopback atomics), if every manager can be
  // reached; all-SW mode keeps the MCS lock, CPU atomics on a node already.
  const bool reachable = !rt.spans_nodes || messages_source();
  // Coherent mode needs no second word: the MCS lock already takes CPU atomics on this node.
  g.hybrid = rt.config.lock == "hybrid" ||
             (rt.config.lock == "auto" && rt.mode == atomics::AtomicityMode::AllHardware &&
              !rt.coherent && reachable);
  g.why = rt.config.lock != "auto" ? "HOSHMEM_LOCK"
          : g.hybrid               ? "auto: all-HW mode"
          : rt.coherent            ? "auto: coherent atomics (CPU atomics on this node already)"
          : rt.mode == atomics::AtomicityMode::AllHardware
              ? "auto: all-HW mode, but no messages reach other nodes' lock managers"
              : "auto: all-SW mode";
  g.hash_home = rt.config.lock_home == "hash";
  g.migrate_after = rt.config.lock_policy == 0 ? 1 : static_cast<unsigned>(rt.config.lock_policy);
  g.flip_on_release = rt.config.lock_policy == 0;
  g.node_pes.clear();
  for (int pe = 0; pe < rt.npes; ++pe)
    if (rt.control[pe]) g.node_pes.push_back(pe);
  if (g.hybrid && !reachable)
    fatal(routine, "HOSHMEM_LOCK=hybrid: a lock homed on another node is taken through its "
          "manager's messages, and this job has none (%s)", rt.messages_why_not.c_str());
}

bool enabled() { return g.hybrid; }

void print_stats() {
  if (!g.hybrid) return;
  const auto v = [](const std::atomic<uint64_t> &c) {
    return static_cast<unsigned long long>(c.load(std::memory_order_relaxed));
  };
  if (v(g.by_cpu) + v(g.by_network) + v(g.by_manager) + v(g.served) == 0) return;  // no lock used
  printf("hoshmem: PE %d: locks: acquired %llu times with CPU atomics, %llu on the network word, "
         "%llu through a manager; migrations to CPU mode %llu, to network mode %llu; %llu "
         "requests to managers (%llu busy), %llu served\n",
         rt.me, v(g.by_cpu), v(g.by_network), v(g.by_manager), v(g.to_cpu), v(g.to_network),
         v(g.asked), v(g.busy), v(g.served));
  fflush(stdout);
}

std::string description() {
  std::string text = g.hybrid ? "hybrid (CPU atomics on the home's node, HCA atomics or its "
                                "manager elsewhere; migrates after "
                              : "MCS queue lock over the job's atomics (";
  if (g.hybrid)
    text += g.flip_on_release ? "every acquisition, HOSHMEM_LOCK_POLICY=always; "
            : g.migrate_after == 1
                ? std::string("the first acquisition from the other side; ")
                : std::to_string(g.migrate_after) + " acquisitions in a row from the other side; ";
  text += g.why;
  text += g.hash_home ? "), homed by address" : "), homed on PE 0";
  return text;
}

int home(const long *lock, const char *routine) {
  return g.hash_home ? home_of(key_of(lock, routine)) : 0;
}

void set(long *lock, const char *routine) { acquire(lock, true, routine); }

int test(long *lock, const char *routine) { return acquire(lock, false, routine) ? 0 : 1; }

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
  Env e(lock, routine);
  if (e.slot)
    release_here(e, how);
  else
    release_remote(e, how);
}

Answer serve(int from, int home, Request request, uint64_t key) {
  if (from < 0 || from >= rt.npes) return kRefused;
  Env e(const_cast<long *>(lock_here(key)), "the lock manager");
  if (!e.slot || e.home != home) return kRefused;
  return protocol::serve(e, from, request);
}

}  // namespace hoshmem::hybrid_lock
