// lib/core: one-sided accumulate (accumulate.h).
#include "lib/core/accumulate.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <iterator>
#include <type_traits>

#include "lib/atomics/backend.h"
#include "lib/base/cpu_relax.h"
#include "lib/base/error.h"
#include "lib/core/messages.h"
#include "lib/core/net.h"
#include "lib/core/runtime.h"
#include "lib/transport/shm/control_block.h"

namespace hoshmem::acc {
namespace {

// Runs f(T *) with T the C type of `type` (a null pointer that only carries the type).
template <class F>
decltype(auto) with_type(Type type, F &&f) {
  switch (type) {
#define HOSHMEM_ACC_TYPE_CASE(P, T, N) \
  case Type::t_##N: return f(static_cast<T *>(nullptr));
    HOSHMEM_REDUCE_ARITH_TYPES(HOSHMEM_ACC_TYPE_CASE, _)
#undef HOSHMEM_ACC_TYPE_CASE
  }
  __builtin_unreachable();
}

template <class T>
constexpr bool kInteger = std::is_integral_v<T>;
template <class T>
constexpr bool kOrdered = std::is_arithmetic_v<T>;  // complex types have no min or max

// OP(a, b). Integers wrap (computed unsigned: signed overflow is undefined in C++). The API
// pairs no type with an operation it lacks (bitwise on floating point, min/max on complex).
template <class T>
T combine(Op op, T a, T b) {
  if constexpr (kInteger<T>) {
    using U = std::make_unsigned_t<T>;
    const U x = static_cast<U>(a), y = static_cast<U>(b);
    switch (op) {
      case Op::Sum: return static_cast<T>(static_cast<U>(x + y));
      case Op::Prod: return static_cast<T>(static_cast<U>(x * y));
      case Op::And: return static_cast<T>(x & y);
      case Op::Or: return static_cast<T>(x | y);
      case Op::Xor: return static_cast<T>(x ^ y);
      case Op::Min: return b < a ? b : a;
      case Op::Max: return a < b ? b : a;
      case Op::Replace: return b;
    }
  } else {
    switch (op) {
      case Op::Sum: return a + b;
      case Op::Prod: return a * b;
      case Op::Replace: return b;
      case Op::Min:
        if constexpr (kOrdered<T>) return b < a ? b : a;
        break;
      case Op::Max:
        if constexpr (kOrdered<T>) return a < b ? b : a;
        break;
      default: break;
    }
  }
  return a;
}

template <size_t S>
struct BitsOf;
template <> struct BitsOf<1> { using type = uint8_t; };
template <> struct BitsOf<2> { using type = uint16_t; };
template <> struct BitsOf<4> { using type = uint32_t; };
template <> struct BitsOf<8> { using type = uint64_t; };

// Each element one CPU atomic on the mapped array (a one-node all-SW job).
template <class T>
void cpu_elements(Op op, char *dst, const T *src, size_t n) {
  if constexpr (sizeof(T) <= 8) {
    using B = typename BitsOf<sizeof(T)>::type;
    for (size_t i = 0; i < n; ++i) {
      B *w = reinterpret_cast<B *>(dst + i * sizeof(T));
      B v;
      memcpy(&v, &src[i], sizeof v);
      if constexpr (kInteger<T>) {
        switch (op) {
          case Op::Sum: __atomic_fetch_add(w, v, __ATOMIC_SEQ_CST); continue;
          case Op::And: __atomic_fetch_and(w, v, __ATOMIC_SEQ_CST); continue;
          case Op::Or: __atomic_fetch_or(w, v, __ATOMIC_SEQ_CST); continue;
          case Op::Xor: __atomic_fetch_xor(w, v, __ATOMIC_SEQ_CST); continue;
          default: break;
        }
      }
      if (op == Op::Replace) {
        __atomic_store_n(w, v, __ATOMIC_SEQ_CST);
        continue;
      }
      B old = __atomic_load_n(w, __ATOMIC_RELAXED);
      for (;;) {
        T a;
        memcpy(&a, &old, sizeof a);
        const T r = combine(op, a, src[i]);
        B next;
        memcpy(&next, &r, sizeof next);
        if (next == old) break;  // no change: the operation took effect at the load
        if (__atomic_compare_exchange_n(w, &old, next, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
          break;
      }
    }
  } else {
    fatal("accumulate", "internal: %zu-byte elements have no CPU atomic", sizeof(T));
  }
}

// Where a get of up to this many bytes of the target's array goes (on the stack).
constexpr size_t kChunkBytes = 16 * 1024;

// Each element one HCA atomic (all-HW mode, 32- and 64-bit integers), through the job's atomic
// backend, which reaches this node's PEs by loopback. Non-fetching operations are posted and
// complete at quiet; min, max and prod are compare-swap loops from a first guess read with a get.
template <class T>
void nic_elements(Op op, Target t, char *dest, const T *src, size_t n, const char *routine) {
  if constexpr (kInteger<T> && (sizeof(T) == 4 || sizeof(T) == 8)) {
    using B = typename BitsOf<sizeof(T)>::type;
    atomics::AtomicBackend *hca = rt.remote_atomics;
    atomics::AmoOp amo = atomics::AmoOp::CompareSwap;
    switch (op) {
      case Op::Sum: amo = atomics::AmoOp::FetchAdd; break;
      case Op::And: amo = atomics::AmoOp::FetchAnd; break;
      case Op::Or: amo = atomics::AmoOp::FetchOr; break;
      case Op::Xor: amo = atomics::AmoOp::FetchXor; break;
      case Op::Replace: amo = atomics::AmoOp::Set; break;
      default: break;
    }
    if (amo != atomics::AmoOp::CompareSwap) {
      for (size_t i = 0; i < n; ++i) {
        char *word = dest + i * sizeof(T);
        const uint64_t v = static_cast<B>(src[i]);
        if (sizeof(T) == 8 && amo == atomics::AmoOp::FetchAdd)
          hca->add_nbi(t.lane, t.pe, word, v, routine);
        else
          hca->execute({amo, sizeof(T), t.pe, word, v, 0, nullptr, t.lane, routine}, true);
      }
      return;
    }
    const char *mapped = remote_address(dest, n * sizeof(T), t.pe, routine);
    T guess[kChunkBytes / sizeof(T)];
    for (size_t base = 0; base < n; base += std::size(guess)) {
      const size_t k = std::min(std::size(guess), n - base);
      if (mapped)
        memcpy(guess, mapped + base * sizeof(T), k * sizeof(T));
      else
        net_get(t.lane, t.pe, guess, dest + base * sizeof(T), k * sizeof(T), false);
      for (size_t i = 0; i < k; ++i) {
        T seen = guess[i];
        for (;;) {
          const T next = combine(op, seen, src[base + i]);
          if (next == seen) break;  // no change: the operation took effect when `seen` was read
          B old = 0;
          hca->execute({atomics::AmoOp::CompareSwap, sizeof(T), t.pe,
                        dest + (base + i) * sizeof(T), static_cast<B>(next),
                        static_cast<B>(seen), &old, t.lane, routine},
                       false);
          if (static_cast<T>(old) == seen) break;
          seen = static_cast<T>(old);
        }
      }
    }
  } else {
    fatal(routine, "internal: the HCA computes no %zu-byte accumulate of this type", sizeof(T));
  }
}

// --- stripe locks ---

constexpr uintptr_t kStripeBytes = 64 * 1024;

// The locks that cover [sym, sym + bytes) of this PE's address `sym` of a symmetric object. By
// offset in the segment: an object's address differs between PEs (the globals of a
// position-independent executable, a heap without a fixed base), its offset does not.
void stripes(const void *sym, size_t bytes, bool (&take)[shm::kAccumulateLocks]) {
  const auto a = reinterpret_cast<uintptr_t>(sym);
  const uintptr_t off = a - rt.space.heap.base < rt.space.heap.size ? a - rt.space.heap.base
                                                                     : a - rt.space.data.base;
  const uintptr_t first = off / kStripeBytes, last = (off + bytes - 1) / kStripeBytes;
  std::fill(std::begin(take), std::end(take), last - first + 1 >= shm::kAccumulateLocks);
  for (uintptr_t k = first; k <= last && k - first < shm::kAccumulateLocks; ++k)
    take[k % shm::kAccumulateLocks] = true;
}

// This PE's address of lock `s` (the same offset in every PE's control block).
uint64_t *lock_word(int s) {
  return reinterpret_cast<uint64_t *>(rt.memory.own_file() + shm::kAccumulateLocksOffset +
                                      static_cast<size_t>(s) * shm::kCacheLine);
}

// Takes lock `s` of PE t.pe if it is free: a CPU compare-swap where CPU atomics serve that PE,
// else the job's atomic backend (an HCA atomic, or a message its CPU executes).
bool try_lock(Target t, int s, const char *routine) {
  const uint64_t holder = static_cast<uint64_t>(rt.me) + 1;
  if (rt.cpu_atomics_ok[t.pe]) {
    auto *w = reinterpret_cast<uint64_t *>(reinterpret_cast<char *>(rt.control[t.pe]) +
                                           shm::kAccumulateLocksOffset +
                                           static_cast<size_t>(s) * shm::kCacheLine);
    uint64_t free_value = 0;
    return __atomic_compare_exchange_n(w, &free_value, holder, false, __ATOMIC_ACQUIRE,
                                       __ATOMIC_RELAXED);
  }
  uint64_t old = 0;
  rt.remote_atomics->execute(
      {atomics::AmoOp::CompareSwap, 8, t.pe, lock_word(s), holder, 0, &old, t.lane, routine},
      false);
  return old == 0;
}

void lock(Target t, int s, const char *routine) {
  for (unsigned attempt = 0; !try_lock(t, s, routine); ++attempt) {
    if (attempt < 4) {
      cpu_relax();
    } else if (attempt < 64) {
      sched_yield();  // two cores may carry more PEs than that: let the holder run
    } else {
      const long us = std::min(1L << std::min(attempt - 64, 10u), 500L);
      const timespec ts{0, us * 1000};
      nanosleep(&ts, nullptr);
    }
  }
}

void unlock(Target t, int s, const char *routine) {
  if (rt.cpu_atomics_ok[t.pe]) {
    auto *w = reinterpret_cast<uint64_t *>(reinterpret_cast<char *>(rt.control[t.pe]) +
                                           shm::kAccumulateLocksOffset +
                                           static_cast<size_t>(s) * shm::kCacheLine);
    __atomic_store_n(w, 0, __ATOMIC_RELEASE);
    return;
  }
  rt.remote_atomics->execute(
      {atomics::AmoOp::Set, 8, t.pe, lock_word(s), 0, 0, nullptr, t.lane, routine}, true);
}

}  // namespace

// Caller computes: the locks of every stripe [dest, dest + bytes) touches, in ascending order
// (two callers never wait for each other in a cycle), then get, compute, put, release. The
// section's bytes cross the network twice.
HeldLocks lock_range(Target t, const void *dest, size_t bytes, const char *routine) {
  HeldLocks held;
  stripes(dest, bytes, held.take);
  for (int s = 0; s < shm::kAccumulateLocks; ++s)
    if (held.take[s]) lock(t, s, routine);
  return held;
}
void unlock_range(Target t, const HeldLocks &held, const char *routine) {
  for (int s = shm::kAccumulateLocks - 1; s >= 0; --s)
    if (held.take[s]) unlock(t, s, routine);
}

namespace {

void caller(Type type, Op op, Target t, char *dest, const char *src, size_t n, size_t size,
            const char *routine) {
  const size_t bytes = n * size;
  char *mapped = remote_address(dest, bytes, t.pe, routine);
  const HeldLocks held = lock_range(t, dest, bytes, routine);

  if (mapped) {
    apply(type, op, mapped, src, n);  // loads and stores on the peer's memory, mapped here
    std::atomic_thread_fence(std::memory_order_seq_cst);  // before a release an HCA may post
    notify(t.pe);
  } else {
    alignas(16) char section[kChunkBytes];
    const size_t chunk = kChunkBytes / size * size;
    for (size_t off = 0; off < bytes; off += chunk) {
      const size_t k = std::min(chunk, bytes - off);
      net_get(t.lane, t.pe, section, dest + off, k, false);
      apply(type, op, section, src + off, k / size);
      net_put(t.lane, t.pe, dest + off, section, k, false);
    }
    rt.remote_atomics->fence(t.lane, t.pe);  // the section lands before the locks are free
  }
  unlock_range(t, held, routine);
}

// Owner computes: the elements in messages, applied by the target's CPU. In all-SW mode it takes
// its stripe locks itself; in all-HW mode (its CPU may not touch a word the HCA updates) the
// caller holds them around the messages, which return once every chunk is applied.
void owner(Type type, Op op, Target t, char *dest, const char *src, size_t n, size_t size,
           const char *routine) {
  const size_t bytes = n * size;
  remote_address(dest, bytes, t.pe, routine);  // checks the range (another node)
  const bool hw = rt.mode == atomics::AtomicityMode::AllHardware;
  HeldLocks held{};
  if (hw) held = lock_range(t, dest, bytes, routine);
  messages_accumulate(t.pe, dest, static_cast<uint8_t>(type), static_cast<uint8_t>(op), size,
                      src, bytes, hw, routine);
  if (hw) unlock_range(t, held, routine);
}

// --- the job's rule ---

// All-HW mode, auto: from this size up owner computes (data once, the target's CPU woken) beats
// caller computes (data twice, no target CPU) to another node; below it caller computes does.
// Measured by perf/hw/acc.sh (perf/RESULTS.md).
constexpr size_t kHwOwnerFromBytes = 64 * 1024;

struct Rule {
  bool locked = false;         // HOSHMEM_ACC=caller or owner: every type under the stripe locks
  bool hw = false;             // all-HW mode: the HCA computes 32- and 64-bit integers
  bool one_node_sw = false;    // all-SW mode, every PE on this node: CPU atomics per element
  bool owner_remote = false;   // other nodes' PEs may compute (messages reach their CPUs)
  size_t owner_from = 0;       // ... for accumulates of at least this many bytes
} rule;

size_t type_size(Type type) {
  return with_type(type, [](auto *p) { return sizeof(*p); });
}
bool type_integer(Type type) {
  return with_type(type, [](auto *p) { return kInteger<std::remove_pointer_t<decltype(p)>>; });
}

}  // namespace

void apply(Type type, Op op, void *dst, const void *src, size_t nelems) {
  with_type(type, [&](auto *p) {
    using T = std::remove_pointer_t<decltype(p)>;
    T *d = static_cast<T *>(dst);
    const T *s = static_cast<const T *>(src);
    for (size_t i = 0; i < nelems; ++i) d[i] = combine(op, d[i], s[i]);
  });
}

const char *scheme_name(Scheme s) {
  switch (s) {
    case Scheme::CpuElements: return "cpu";
    case Scheme::NicElements: return "nic";
    case Scheme::Caller: return "caller";
    case Scheme::Owner: return "owner";
  }
  return "?";
}

Scheme scheme_for(Type type, int pe, size_t bytes) {
  const size_t size = type_size(type);
  if (!rule.locked) {
    if (rule.hw && type_integer(type) && (size == 4 || size == 8)) return Scheme::NicElements;
    if (rule.one_node_sw && size <= 8) return Scheme::CpuElements;
  }
  return rule.owner_remote && !rt.control[pe] && bytes >= rule.owner_from ? Scheme::Owner
                                                                          : Scheme::Caller;
}

void accumulate_init() {
  const std::string &forced = rt.config.acc;
  rule = Rule{};
  rule.hw = rt.mode == atomics::AtomicityMode::AllHardware;
  rule.one_node_sw = !rule.hw && !rt.spans_nodes;
  rule.locked = forced == "caller" || forced == "owner";
  rule.owner_remote = rt.spans_nodes && forced != "caller" && (!rule.hw || rt.messages_in_hw);
  rule.owner_from = rule.hw && forced != "owner" ? kHwOwnerFromBytes : 0;
  if (forced == "nic" && !rule.hw)
    fatal("shmem_init", "HOSHMEM_ACC=nic: the HCA computes accumulates in all-HW mode only, "
                        "and this job is all-SW (%s)", rt.mode_reason.c_str());
  if (forced == "owner" && rule.hw && !rt.messages_in_hw)
    fatal("shmem_init", "HOSHMEM_ACC=owner: owner computes needs messages to the target's CPU, "
                        "and there are none: %s", rt.messages_why_not.c_str());
}

std::string accumulate_rule() {
  std::string remote =
      !rule.owner_remote ? "caller computes under the target's stripe locks (get, compute, put; "
                           "CPU loads and stores on this node)"
      : rule.hw ? "under the target's stripe locks: owner computes to other nodes (the elements "
                  "in messages, applied by the target's CPU)" +
                      std::string(rule.owner_from ? " from " + std::to_string(rule.owner_from) +
                                                        " bytes, caller computes below"
                                                  : "") +
                      ", caller computes on this node"
                : "owner computes to other nodes (the elements in messages, applied by the "
                  "target's CPU under its stripe locks), caller computes on this node (CPU "
                  "loads and stores under the stripe locks)";
  std::string r;
  if (rule.locked)
    r = std::string("every type under the stripe locks (HOSHMEM_ACC=") + rt.config.acc + "): ";
  else if (rule.hw)
    r = "32- and 64-bit integers on the HCA, element by element (sum/and/or/xor non-fetching, "
        "replace a set, min/max/prod compare-swap loops); other types ";
  else if (rule.one_node_sw)
    return "CPU atomics element by element on the mapped array (types of up to 8 bytes); "
           "long double and double _Complex under the target's stripe locks";
  return r + remote;
}

// Lock `s` of PE `pe` of this node, as mapped here.
uint64_t *lock_word_of(int pe, int s) {
  return reinterpret_cast<uint64_t *>(reinterpret_cast<char *>(rt.control[pe]) +
                                      shm::kAccumulateLocksOffset +
                                      static_cast<size_t>(s) * shm::kCacheLine);
}

bool try_lock_here(int pe, const void *sym, size_t bytes, HeldLocks *held) {
  stripes(sym, bytes, held->take);
  for (int s = 0; s < shm::kAccumulateLocks; ++s) {
    if (!held->take[s]) continue;
    uint64_t free_value = 0;
    if (!__atomic_compare_exchange_n(lock_word_of(pe, s), &free_value, uint64_t(rt.me) + 1, false,
                                     __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
      for (int t = s - 1; t >= 0; --t)
        if (held->take[t]) __atomic_store_n(lock_word_of(pe, t), 0, __ATOMIC_RELEASE);
      return false;
    }
  }
  return true;
}

void unlock_here(int pe, const HeldLocks &held) {
  for (int s = shm::kAccumulateLocks - 1; s >= 0; --s)
    if (held.take[s]) __atomic_store_n(lock_word_of(pe, s), 0, __ATOMIC_RELEASE);
}

bool owner_apply(int pe, uint8_t type_byte, uint8_t op_byte, const void *sym, char *to,
                 const void *src, size_t bytes, bool locked) {
  constexpr uint8_t kTypes = 0
#define HOSHMEM_ACC_TYPE_COUNT(P, T, N) +1
      HOSHMEM_REDUCE_ARITH_TYPES(HOSHMEM_ACC_TYPE_COUNT, _);
#undef HOSHMEM_ACC_TYPE_COUNT
  if (type_byte >= kTypes || op_byte > static_cast<uint8_t>(Op::Replace))
    fatal("accumulate", "a message asked for element type %u, operation %u", type_byte, op_byte);
  const auto type = static_cast<Type>(type_byte);
  const auto op = static_cast<Op>(op_byte);
  const size_t size = type_size(type);
  bool take[shm::kAccumulateLocks];
  stripes(sym, bytes, take);
  int taken = 0;
  for (; taken < shm::kAccumulateLocks && !locked; ++taken) {
    if (!take[taken]) continue;
    uint64_t free_value = 0;
    if (!__atomic_compare_exchange_n(lock_word_of(pe, taken), &free_value, uint64_t(rt.me) + 1,
                                     false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
      break;
  }
  const bool all = locked || taken == shm::kAccumulateLocks;
  if (all) {
    alignas(16) char aligned[kChunkBytes];  // the message's elements need not be aligned
    const size_t chunk = kChunkBytes / size * size;
    for (size_t off = 0; off < bytes; off += chunk) {
      const size_t k = std::min(chunk, bytes - off);
      memcpy(aligned, static_cast<const char *>(src) + off, k);
      apply(type, op, to + off, aligned, k / size);
    }
  }
  for (int s = taken - 1; s >= 0; --s)
    if (take[s]) __atomic_store_n(lock_word_of(pe, s), 0, __ATOMIC_RELEASE);
  return all;
}

void accumulate(Type type, Op op, Target t, void *dest, const void *source, size_t nelems,
                const char *routine) {
  if (static_cast<unsigned>(t.pe) >= static_cast<unsigned>(rt.npes)) [[unlikely]]
    report_bad_pe(t.pe, routine);
  if (nelems == 0) return;
  const size_t size = type_size(type);
  if (nelems > SIZE_MAX / size) [[unlikely]]
    fatal(routine, "%zu elements of %zu bytes overflow the address space", nelems, size);
  check_local(source, nelems * size, "source", routine);
  char *to = static_cast<char *>(dest);
  const char *from = static_cast<const char *>(source);
  switch (scheme_for(type, t.pe, nelems * size)) {
    case Scheme::CpuElements: {
      char *mapped = remote_address(dest, nelems * size, t.pe, routine);
      with_type(type, [&](auto *p) {
        using T = std::remove_pointer_t<decltype(p)>;
        cpu_elements<T>(op, mapped, reinterpret_cast<const T *>(from), nelems);
      });
      notify(t.pe);
      return;
    }
    case Scheme::NicElements:
      remote_address(dest, nelems * size, t.pe, routine);  // the whole range, up front
      with_type(type, [&](auto *p) {
        using T = std::remove_pointer_t<decltype(p)>;
        nic_elements<T>(op, t, to, reinterpret_cast<const T *>(from), nelems, routine);
      });
      return;
    case Scheme::Caller:
      caller(type, op, t, to, from, nelems, size, routine);
      return;
    case Scheme::Owner:
      owner(type, op, t, to, from, nelems, size, routine);
      return;
  }
}

}  // namespace hoshmem::acc
