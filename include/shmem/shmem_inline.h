/*
 * hoshmem: the intra-node fast path of the RMA and AMO routines, compiled into the caller.
 *
 * Each routine below is the library's exported one, defined again here as a GNU inline function:
 * the compiler inlines this body (or, where it takes the routine's address, calls the library),
 * and both do the same thing. The body handles only the common case: a job whose PEs are all on
 * this node, all-SW atomics, no SHMEM_DEBUG, a valid PE and a symmetric address. Then a put or an
 * AMO is one table lookup, the store or CPU atomic on the peer's memory as mapped here, and a look
 * at whether the peer sleeps. Anything else (argument errors, other nodes, the HCA path) calls
 * the pshmem_ twin, which checks and reports as always.
 *
 * Why: calling into a shared library with its checks costs a few nanoseconds, several times a
 * store into shared memory. Define HOSHMEM_NO_INLINE (oshcc -DHOSHMEM_NO_INLINE) to call the
 * library for everything, e.g. for a profiling tool that interposes shmem_ names.
 */
#ifndef HOSHMEM_SHMEM_INLINE_H
#define HOSHMEM_SHMEM_INLINE_H

#include <stddef.h>
#include <stdint.h>

#include "shmem_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Published by the library (lib/core/fast_path.cc) and read here: part of libhoshmem's ABI.
 * Every field but npes is pointer-typed: a program's stores (integer or floating types) cannot
 * alias a pointer, so the compiler may keep these in registers across a loop of puts. */
struct hoshmem_fast_peer {
  char *heap;                /* where that PE's symmetric heap is mapped here */
  char *data;                /* where that PE's .data/.bss is mapped here */
  const uint32_t *sleeping;  /* set while that PE sleeps on its doorbell */
};
struct hoshmem_fast_state {
  int npes; /* the number of PEs while the fast path applies, otherwise 0 */
  const char *heap_lo, *heap_hi; /* this PE's symmetric heap */
  const char *data_lo, *data_hi; /* this PE's .data/.bss */
  const struct hoshmem_fast_peer *peers; /* indexed by PE */
};
extern struct hoshmem_fast_state hoshmem_fast;
void hoshmem_fast_wake(int pe); /* rings the doorbell of PE pe, which sleeps */

#ifdef __cplusplus
}
#endif

/* The helpers are declared even under HOSHMEM_NO_INLINE: the library's own routines copy with
 * hoshmem_fast_put_copy too, so the inline and the out-of-line put store alike. */
#if defined(__GNUC__)

#ifdef __cplusplus
extern "C" {
#endif

/* The helpers are inline here and emitted once by the library (HOSHMEM_EMIT_FAST_HELPERS). */
#ifdef HOSHMEM_EMIT_FAST_HELPERS
#define HOSHMEM_FAST_HELPER
#else
#define HOSHMEM_FAST_HELPER extern __inline__ __attribute__((__gnu_inline__, __always_inline__))
#endif

typedef uint64_t hoshmem_u64_any __attribute__((__aligned__(1), __may_alias__));
typedef uint32_t hoshmem_u32_any __attribute__((__aligned__(1), __may_alias__));
typedef uint16_t hoshmem_u16_any __attribute__((__aligned__(1), __may_alias__));

/* 1 when the fast path applies to PE pe and the symmetric address sym: then *at is PE pe's copy
 * of the object as mapped here. 0 sends the call to the library, which decides (and reports bad
 * arguments). */
HOSHMEM_FAST_HELPER int hoshmem_fast_resolve(const void *sym, int pe, char **at) {
  const struct hoshmem_fast_state *f = &hoshmem_fast;
  uintptr_t a = (uintptr_t)sym;
  if ((unsigned)pe >= (unsigned)f->npes) return 0;
  if (__builtin_expect(a - (uintptr_t)f->heap_lo < (uintptr_t)f->heap_hi - (uintptr_t)f->heap_lo, 1)) {
    *at = f->peers[pe].heap + (a - (uintptr_t)f->heap_lo);
    return 1;
  }
  if (a - (uintptr_t)f->data_lo < (uintptr_t)f->data_hi - (uintptr_t)f->data_lo) {
    *at = f->peers[pe].data + (a - (uintptr_t)f->data_lo);
    return 1;
  }
  return 0;
}

/* After changing PE pe's memory: wake it if it sleeps in a wait (lib/progress/wait.h). */
HOSHMEM_FAST_HELPER void hoshmem_fast_notify(int pe) {
  if (__builtin_expect(__atomic_load_n(hoshmem_fast.peers[pe].sleeping, __ATOMIC_RELAXED) != 0, 0))
    hoshmem_fast_wake(pe);
}

/* Stores bytes [0, bytes) once each and in address order (8, then 4, 2, 1 at a time). */
HOSHMEM_FAST_HELPER void hoshmem_fast_store_once(char *to, const char *from, size_t bytes) {
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8)
    *(volatile hoshmem_u64_any *)(to + i) = *(const hoshmem_u64_any *)(from + i);
  if (i + 4 <= bytes) {
    *(volatile hoshmem_u32_any *)(to + i) = *(const hoshmem_u32_any *)(from + i);
    i += 4;
  }
  if (i + 2 <= bytes) {
    *(volatile hoshmem_u16_any *)(to + i) = *(const hoshmem_u16_any *)(from + i);
    i += 2;
  }
  if (i < bytes) *(volatile char *)(to + i) = from[i];
}

/* Every put's copy, inline and in the library: the last 64 bytes are stored once each and last,
 * so a receiver polling the last element never sees it written twice (glibc memcpy stores small
 * sizes as overlapping moves: a receiver that waits for the last element, zeroes it and answers
 * could see a second store bring its flag back);
 * what comes before is a plain copy. The tail goes as four 16-byte stores in address order
 * (an aligned element inside one is never torn). */
typedef long long hoshmem_v16_any __attribute__((__vector_size__(16), __aligned__(1), __may_alias__));
/* Unoptimized builds inline this without pruning the branch a constant size never takes, and
 * would warn about the head size it computes there. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif
HOSHMEM_FAST_HELPER void hoshmem_fast_put_copy(char *to, const void *source, size_t bytes) {
  const char *from = (const char *)source;
  if (bytes >= 64) {
    size_t head = bytes - 64, i = 0;
    if (head > 192) {
      __builtin_memcpy(to, from, head);
    } else if (head >= 16) { /* short head: 16-byte moves, the last one overlapping */
      for (; i + 16 <= head; i += 16)
        *(hoshmem_v16_any *)(to + i) = *(const hoshmem_v16_any *)(from + i);
      if (i < head) *(hoshmem_v16_any *)(to + head - 16) = *(const hoshmem_v16_any *)(from + head - 16);
    } else {
      hoshmem_fast_store_once(to, from, head);
    }
    *(volatile hoshmem_v16_any *)(to + head) = *(const hoshmem_v16_any *)(from + head);
    *(volatile hoshmem_v16_any *)(to + head + 16) = *(const hoshmem_v16_any *)(from + head + 16);
    *(volatile hoshmem_v16_any *)(to + head + 32) = *(const hoshmem_v16_any *)(from + head + 32);
    *(volatile hoshmem_v16_any *)(to + head + 48) = *(const hoshmem_v16_any *)(from + head + 48);
  } else {
    hoshmem_fast_store_once(to, from, bytes);
  }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#ifdef __cplusplus
}
#endif

#endif /* helpers */

#if defined(__GNUC__) && !defined(HOSHMEM_NO_INLINE)

#ifdef __cplusplus
extern "C" {
#endif

#define HOSHMEM_FAST extern __inline__ __attribute__((__gnu_inline__, __always_inline__))
#define HOSHMEM_FAST_LIKELY(x) __builtin_expect(!!(x), 1)

/* put/get of nelems elements of esize bytes; `slow` is the library call */
#define HOSHMEM_FAST_PUT(dest, source, nelems, esize, pe, slow)                           \
  do {                                                                                    \
    char *hoshmem_to_;                                                                    \
    if (HOSHMEM_FAST_LIKELY(hoshmem_fast_resolve(dest, pe, &hoshmem_to_))) {              \
      hoshmem_fast_put_copy(hoshmem_to_, source, (nelems) * (esize));                     \
      hoshmem_fast_notify(pe);                                                            \
      return;                                                                             \
    }                                                                                     \
    slow;                                                                                 \
  } while (0)
#define HOSHMEM_FAST_GET(dest, source, nelems, esize, pe, slow)                           \
  do {                                                                                    \
    char *hoshmem_from_;                                                                  \
    if (HOSHMEM_FAST_LIKELY(hoshmem_fast_resolve(source, pe, &hoshmem_from_))) {          \
      __builtin_memcpy(dest, hoshmem_from_, (nelems) * (esize));                          \
      return;                                                                             \
    }                                                                                     \
    slow;                                                                                 \
  } while (0)

/* --- ordering: every operation above completed in its call, so quiet is a full fence --- */
HOSHMEM_FAST void shmem_quiet(void) {
  if (HOSHMEM_FAST_LIKELY(hoshmem_fast.npes)) {
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return;
  }
  pshmem_quiet();
}
HOSHMEM_FAST void shmem_fence(void) {
  if (HOSHMEM_FAST_LIKELY(hoshmem_fast.npes)) {
    __atomic_thread_fence(__ATOMIC_RELEASE);
    return;
  }
  pshmem_fence();
}

/* --- RMA: p, g, put, get and their _nbi forms (complete at once on this node) --- */
#define HOSHMEM_FAST_RMA_TYPED(P, T, N)                                                   \
  HOSHMEM_FAST void shmem_##N##_p(T *dest, T value, int pe) {                              \
    char *to;                                                                              \
    if (HOSHMEM_FAST_LIKELY(hoshmem_fast_resolve(dest, pe, &to))) {                        \
      *(volatile T *)to = value;                                                           \
      hoshmem_fast_notify(pe);                                                       \
      return;                                                                              \
    }                                                                                      \
    pshmem_##N##_p(dest, value, pe);                                                       \
  }                                                                                        \
  HOSHMEM_FAST T shmem_##N##_g(const T *source, int pe) {                                  \
    char *from;                                                                            \
    if (HOSHMEM_FAST_LIKELY(hoshmem_fast_resolve(source, pe, &from)))                      \
      return *(const volatile T *)from;                                                    \
    return pshmem_##N##_g(source, pe);                                                     \
  }                                                                                        \
  HOSHMEM_FAST void shmem_##N##_put(T *dest, const T *source, size_t nelems, int pe) {     \
    HOSHMEM_FAST_PUT(dest, source, nelems, sizeof(T), pe,                                 \
                     pshmem_##N##_put(dest, source, nelems, pe));                          \
  }                                                                                        \
  HOSHMEM_FAST void shmem_##N##_put_nbi(T *dest, const T *source, size_t nelems, int pe) { \
    HOSHMEM_FAST_PUT(dest, source, nelems, sizeof(T), pe,                                 \
                     pshmem_##N##_put_nbi(dest, source, nelems, pe));                      \
  }                                                                                        \
  HOSHMEM_FAST void shmem_##N##_get(T *dest, const T *source, size_t nelems, int pe) {     \
    HOSHMEM_FAST_GET(dest, source, nelems, sizeof(T), pe,                                 \
                     pshmem_##N##_get(dest, source, nelems, pe));                          \
  }                                                                                        \
  HOSHMEM_FAST void shmem_##N##_get_nbi(T *dest, const T *source, size_t nelems, int pe) { \
    HOSHMEM_FAST_GET(dest, source, nelems, sizeof(T), pe,                                 \
                     pshmem_##N##_get_nbi(dest, source, nelems, pe));                      \
  }
HOSHMEM_RMA_TYPES(HOSHMEM_FAST_RMA_TYPED, _)

#define HOSHMEM_FAST_RMA_SIZED(P, B)                                                      \
  HOSHMEM_FAST void shmem_put##B(void *dest, const void *source, size_t nelems, int pe) {  \
    HOSHMEM_FAST_PUT(dest, source, nelems, B / 8, pe,                                   \
                     pshmem_put##B(dest, source, nelems, pe));                             \
  }                                                                                        \
  HOSHMEM_FAST void shmem_put##B##_nbi(void *dest, const void *source, size_t nelems,      \
                                       int pe) {                                           \
    HOSHMEM_FAST_PUT(dest, source, nelems, B / 8, pe,                                   \
                     pshmem_put##B##_nbi(dest, source, nelems, pe));                       \
  }                                                                                        \
  HOSHMEM_FAST void shmem_get##B(void *dest, const void *source, size_t nelems, int pe) {  \
    HOSHMEM_FAST_GET(dest, source, nelems, B / 8, pe,                                   \
                     pshmem_get##B(dest, source, nelems, pe));                             \
  }                                                                                        \
  HOSHMEM_FAST void shmem_get##B##_nbi(void *dest, const void *source, size_t nelems,      \
                                       int pe) {                                           \
    HOSHMEM_FAST_GET(dest, source, nelems, B / 8, pe,                                   \
                     pshmem_get##B##_nbi(dest, source, nelems, pe));                       \
  }
HOSHMEM_RMA_SIZES(HOSHMEM_FAST_RMA_SIZED, _)

HOSHMEM_FAST void shmem_putmem(void *dest, const void *source, size_t nelems, int pe) {
  HOSHMEM_FAST_PUT(dest, source, nelems, 1, pe, pshmem_putmem(dest, source, nelems, pe));
}
HOSHMEM_FAST void shmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe) {
  HOSHMEM_FAST_PUT(dest, source, nelems, 1, pe, pshmem_putmem_nbi(dest, source, nelems, pe));
}
HOSHMEM_FAST void shmem_getmem(void *dest, const void *source, size_t nelems, int pe) {
  HOSHMEM_FAST_GET(dest, source, nelems, 1, pe, pshmem_getmem(dest, source, nelems, pe));
}
HOSHMEM_FAST void shmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe) {
  HOSHMEM_FAST_GET(dest, source, nelems, 1, pe, pshmem_getmem_nbi(dest, source, nelems, pe));
}

/* --- AMOs: CPU atomics on the peer's word, with the library's memory orders (fetch acquire, set
 * release, the rest seq_cst); every update but fetch wakes a sleeping target. --- */
#define HOSHMEM_FAST_AMO(RET, NAME, PARAMS, DEST, PE, ON_WORD, SLOW)                      \
  HOSHMEM_FAST RET NAME PARAMS {                                                          \
    char *w;                                                                              \
    if (HOSHMEM_FAST_LIKELY(hoshmem_fast_resolve(DEST, PE, &w))) {                        \
      ON_WORD;                                                                            \
    }                                                                                     \
    SLOW;                                                                                 \
  }
/* ON_WORD bodies: `w` is the mapped word */
#define HOSHMEM_FAST_RMW(T, EXPR)                                                         \
  {                                                                                       \
    T hoshmem_old_ = EXPR;                                                                \
    hoshmem_fast_notify(pe);                                                              \
    return hoshmem_old_;                                                                  \
  }
#define HOSHMEM_FAST_RMW_VOID(EXPR) \
  {                                 \
    (void)(EXPR);                   \
    hoshmem_fast_notify(pe);        \
    return;                         \
  }
#define HOSHMEM_FAST_RMW_NBI(T, EXPR) \
  {                                   \
    T hoshmem_old_ = EXPR;            \
    hoshmem_fast_notify(pe);          \
    *fetch = hoshmem_old_;            \
    return;                           \
  }

/* compare-and-swap: the old value whether or not it matched */
#define HOSHMEM_FAST_CSWAP(T, cond, value) \
  (__atomic_compare_exchange_n((T *)w, &cond, value, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST), cond)

#define HOSHMEM_FAST_AMO_STD(P, T, N)                                                          \
  HOSHMEM_FAST_AMO(T, shmem_##N##_atomic_compare_swap, (T * dest, T cond, T value, int pe),     \
                   dest, pe, HOSHMEM_FAST_RMW(T, HOSHMEM_FAST_CSWAP(T, cond, value)),           \
                   return pshmem_##N##_atomic_compare_swap(dest, cond, value, pe))              \
  HOSHMEM_FAST_AMO(T, shmem_##N##_atomic_fetch_inc, (T * dest, int pe), dest, pe,               \
                   HOSHMEM_FAST_RMW(T, __atomic_fetch_add((T *)w, (T)1, __ATOMIC_SEQ_CST)),     \
                   return pshmem_##N##_atomic_fetch_inc(dest, pe))                              \
  HOSHMEM_FAST_AMO(void, shmem_##N##_atomic_inc, (T * dest, int pe), dest, pe,                  \
                   HOSHMEM_FAST_RMW_VOID(__atomic_fetch_add((T *)w, (T)1, __ATOMIC_SEQ_CST)),   \
                   pshmem_##N##_atomic_inc(dest, pe))                                           \
  HOSHMEM_FAST_AMO(T, shmem_##N##_atomic_fetch_add, (T * dest, T value, int pe), dest, pe,      \
                   HOSHMEM_FAST_RMW(T, __atomic_fetch_add((T *)w, value, __ATOMIC_SEQ_CST)),    \
                   return pshmem_##N##_atomic_fetch_add(dest, value, pe))                       \
  HOSHMEM_FAST_AMO(void, shmem_##N##_atomic_add, (T * dest, T value, int pe), dest, pe,         \
                   HOSHMEM_FAST_RMW_VOID(__atomic_fetch_add((T *)w, value, __ATOMIC_SEQ_CST)),  \
                   pshmem_##N##_atomic_add(dest, value, pe))                                    \
  HOSHMEM_FAST_AMO(void, shmem_##N##_atomic_compare_swap_nbi,                                   \
                   (T * fetch, T * dest, T cond, T value, int pe), dest, pe,                    \
                   HOSHMEM_FAST_RMW_NBI(T, HOSHMEM_FAST_CSWAP(T, cond, value)),                 \
                   pshmem_##N##_atomic_compare_swap_nbi(fetch, dest, cond, value, pe))          \
  HOSHMEM_FAST_AMO(void, shmem_##N##_atomic_fetch_inc_nbi, (T * fetch, T * dest, int pe), dest, \
                   pe, HOSHMEM_FAST_RMW_NBI(T, __atomic_fetch_add((T *)w, (T)1, __ATOMIC_SEQ_CST)), \
                   pshmem_##N##_atomic_fetch_inc_nbi(fetch, dest, pe))                          \
  HOSHMEM_FAST_AMO(void, shmem_##N##_atomic_fetch_add_nbi,                                      \
                   (T * fetch, T * dest, T value, int pe), dest, pe,                            \
                   HOSHMEM_FAST_RMW_NBI(T, __atomic_fetch_add((T *)w, value, __ATOMIC_SEQ_CST)), \
                   pshmem_##N##_atomic_fetch_add_nbi(fetch, dest, value, pe))
HOSHMEM_AMO_STD_TYPES(HOSHMEM_FAST_AMO_STD, _)

/* fetch/set/swap also on float and double: the generic builtins move the value's bits */
#define HOSHMEM_FAST_LOAD(T) (__atomic_load((const T *)w, &hoshmem_v_, __ATOMIC_ACQUIRE), hoshmem_v_)
#define HOSHMEM_FAST_SWAP(T) (__atomic_exchange((T *)w, &value, &hoshmem_v_, __ATOMIC_SEQ_CST), hoshmem_v_)
#define HOSHMEM_FAST_AMO_EXT(P, T, N)                                                          \
  HOSHMEM_FAST_AMO(T, shmem_##N##_atomic_fetch, (const T *source, int pe), source, pe,          \
                   { T hoshmem_v_; return HOSHMEM_FAST_LOAD(T); },                              \
                   return pshmem_##N##_atomic_fetch(source, pe))                                \
  HOSHMEM_FAST_AMO(void, shmem_##N##_atomic_set, (T * dest, T value, int pe), dest, pe,         \
                   HOSHMEM_FAST_RMW_VOID((__atomic_store((T *)w, &value, __ATOMIC_RELEASE), 0)), \
                   pshmem_##N##_atomic_set(dest, value, pe))                                    \
  HOSHMEM_FAST_AMO(T, shmem_##N##_atomic_swap, (T * dest, T value, int pe), dest, pe,           \
                   { T hoshmem_v_; HOSHMEM_FAST_RMW(T, HOSHMEM_FAST_SWAP(T)) },                 \
                   return pshmem_##N##_atomic_swap(dest, value, pe))                            \
  HOSHMEM_FAST_AMO(void, shmem_##N##_atomic_fetch_nbi, (T * fetch, const T *source, int pe),    \
                   source, pe, { T hoshmem_v_; *fetch = HOSHMEM_FAST_LOAD(T); return; },        \
                   pshmem_##N##_atomic_fetch_nbi(fetch, source, pe))                            \
  HOSHMEM_FAST_AMO(void, shmem_##N##_atomic_swap_nbi, (T * fetch, T * dest, T value, int pe),   \
                   dest, pe, { T hoshmem_v_; HOSHMEM_FAST_RMW_NBI(T, HOSHMEM_FAST_SWAP(T)) },   \
                   pshmem_##N##_atomic_swap_nbi(fetch, dest, value, pe))
HOSHMEM_AMO_EXT_TYPES(HOSHMEM_FAST_AMO_EXT, _)

#define HOSHMEM_FAST_AMO_BIT_OP(T, N, OP)                                                      \
  HOSHMEM_FAST_AMO(T, shmem_##N##_atomic_fetch_##OP, (T * dest, T value, int pe), dest, pe,     \
                   HOSHMEM_FAST_RMW(T, __atomic_fetch_##OP((T *)w, value, __ATOMIC_SEQ_CST)),   \
                   return pshmem_##N##_atomic_fetch_##OP(dest, value, pe))                      \
  HOSHMEM_FAST_AMO(void, shmem_##N##_atomic_##OP, (T * dest, T value, int pe), dest, pe,        \
                   HOSHMEM_FAST_RMW_VOID(__atomic_fetch_##OP((T *)w, value, __ATOMIC_SEQ_CST)), \
                   pshmem_##N##_atomic_##OP(dest, value, pe))                                   \
  HOSHMEM_FAST_AMO(void, shmem_##N##_atomic_fetch_##OP##_nbi,                                   \
                   (T * fetch, T * dest, T value, int pe), dest, pe,                            \
                   HOSHMEM_FAST_RMW_NBI(T, __atomic_fetch_##OP((T *)w, value, __ATOMIC_SEQ_CST)), \
                   pshmem_##N##_atomic_fetch_##OP##_nbi(fetch, dest, value, pe))
#define HOSHMEM_FAST_AMO_BIT(P, T, N) \
  HOSHMEM_FAST_AMO_BIT_OP(T, N, and) HOSHMEM_FAST_AMO_BIT_OP(T, N, or) HOSHMEM_FAST_AMO_BIT_OP(T, N, xor)
HOSHMEM_AMO_BIT_TYPES(HOSHMEM_FAST_AMO_BIT, _)

#ifdef __cplusplus
}
#endif

#endif /* inline routines */

#endif /* HOSHMEM_SHMEM_INLINE_H */
