// lib/atomics: the CPU backend's operations, inline for the intra-node fast path: one atomic
// instruction on the peer's word as mapped in this process. Atomic with respect to every other
// CPU atomic on that word, and NOT with respect to HCA atomics, which is why a job uses CPU
// atomics only in all-SW mode (see docs/DESIGN.md).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "lib/atomics/amo_op.h"

namespace hoshmem::atomics::cpu {

// The integer type whose bits an AMO on T moves (float -> uint32_t, double -> uint64_t).
template <class T>
using Bits = std::conditional_t<sizeof(T) == 4, uint32_t,
                                std::conditional_t<sizeof(T) == 8, uint64_t, uint16_t>>;

template <class T>
inline Bits<T> to_bits(T v) {
  Bits<T> b;
  memcpy(&b, &v, sizeof v);
  return b;
}
template <class T>
inline T from_bits(Bits<T> b) {
  T v;
  memcpy(&v, &b, sizeof v);
  return v;
}

template <class T>
inline Bits<T> *word(void *p) {
  return static_cast<Bits<T> *>(p);
}

template <class T>
inline T fetch(const void *p) {
  return from_bits<T>(__atomic_load_n(static_cast<const Bits<T> *>(p), __ATOMIC_ACQUIRE));
}
template <class T>
inline void set(void *p, T v) {
  __atomic_store_n(word<T>(p), to_bits(v), __ATOMIC_RELEASE);
}
template <class T>
inline T swap(void *p, T v) {
  return from_bits<T>(__atomic_exchange_n(word<T>(p), to_bits(v), __ATOMIC_SEQ_CST));
}
template <class T>
inline T compare_swap(void *p, T cond, T v) {
  Bits<T> expected = to_bits(cond);
  __atomic_compare_exchange_n(word<T>(p), &expected, to_bits(v), false, __ATOMIC_SEQ_CST,
                              __ATOMIC_SEQ_CST);
  return from_bits<T>(expected);  // the old value whether or not it matched
}
// Arithmetic and bitwise ops are for integer types only.
template <class T>
inline T fetch_add(void *p, T v) {
  return __atomic_fetch_add(static_cast<T *>(p), v, __ATOMIC_SEQ_CST);
}
template <class T>
inline T fetch_and(void *p, T v) {
  return __atomic_fetch_and(static_cast<T *>(p), v, __ATOMIC_SEQ_CST);
}
template <class T>
inline T fetch_or(void *p, T v) {
  return __atomic_fetch_or(static_cast<T *>(p), v, __ATOMIC_SEQ_CST);
}
template <class T>
inline T fetch_xor(void *p, T v) {
  return __atomic_fetch_xor(static_cast<T *>(p), v, __ATOMIC_SEQ_CST);
}

// Executes `op` on a 4- or 8-byte word given as raw bits; the generic form backends and tests use.
uint64_t execute(AmoOp op, void *p, unsigned size, uint64_t operand, uint64_t compare,
                 uint64_t mask = 0, uint64_t mask2 = 0);

}  // namespace hoshmem::atomics::cpu
