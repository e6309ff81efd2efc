/*
 * hoshmem: the intra-node fast path of the RMA and AMO routines, compiled into the caller.
 *
 * Each routine below is the library's exported one, defined again here as a GNU inline function:
 * the compiler inlines this body (or, where it takes the routine's address, calls the library),
 * and both do the same thing. The body handles only the common case: a job whose PEs are all on
 * this node, all-SW atomics, no SHMEM_DEBUG, a valid PE and a symmetric address. Then a put is one
 * table lookup and the stores into the peer's memory as mapped here; an AMO also looks at whether
 * the peer sleeps. Anything else (argument errors, other nodes, the HCA path, a peer asleep in a
 * wait for its memory) calls the pshmem_ twin, which checks, reports and wakes as always.
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

/* Published by the library (lib/core/fast_path.cc) and read here: part of libhoshmem's ABI (the
 * symbol's name carries the layout's version, so a program built against another layout does not
 * link). Per-PE entries are arrays inside the state, indexed by PE: one load each, no pointer to
 * chase. The fast path applies only to jobs of at most HOSHMEM_FAST_MAX_PES PEs. */
#define HOSHMEM_FAST_MAX_PES 1024
/* Calls through the GOT, not a PLT stub: one jump less on every put of a size not known small */
#if defined(__has_attribute)
#if __has_attribute(__noplt__)
#define HOSHMEM_NOPLT __attribute__((__noplt__))
#endif
#endif
#ifndef HOSHMEM_NOPLT
#define HOSHMEM_NOPLT
#endif
#define HOSHMEM_FAST_SLEEP_FOR_DATA 1u /* bit of *sleeping[pe]: PE pe waits for its memory */
/* The address of the symmetric heap, a constant: the library places the heap there (the default
 * of HOSHMEM_HEAP_BASE) and applies the fast path only when it did. The heap bound check then
 * needs no load from the state, which made loops of g, p and small puts and gets 10-22% faster
 * (measured). */
#define HOSHMEM_FAST_HEAP_BASE 0x500000000000
struct hoshmem_fast_state {
  /* The state is page-aligned and the words every call reads start at page offset 3072: a load
   * whose page offset matches a pending store's waits for that store (4K aliasing), and the
   * buffers small puts write and read are mostly page-aligned or malloc'd (page offset 16). */
  unsigned char unused_[3072];
  uintptr_t data_lo;       /* this PE's .data/.bss: data_len bytes from data_lo */
  uintptr_t data_len;
  int npes;                /* the number of PEs while the fast path applies, otherwise 0 */
  /* Per PE, as arrays of 8-byte entries (the index scales inside the address, no arithmetic):
   * heap_len[pe] is the size of the heap while PE pe is reachable here and not asleep in a wait
   * for its memory, otherwise 0 (no offset is below it), so one unsigned compare of
   * a - HOSHMEM_FAST_HEAP_BASE tests both bounds. PE pe writes its own entry here before it
   * sleeps, so stores to it go to the library, which wakes it (lib/core/fast_path.cc); the
   * state is page-aligned so that it can be moved into shared memory. PE pe's copy of the heap
   * (data) object at address a is mapped here at a + heap_shift[pe] (a + data_shift[pe]),
   * modulo 2^64: the access needs no subtraction, only a two-register address. sleeping[pe] is
   * the byte of PE pe's sleep flags that holds HOSHMEM_FAST_SLEEP_FOR_DATA. */
  uintptr_t heap_len[HOSHMEM_FAST_MAX_PES];
  uintptr_t heap_shift[HOSHMEM_FAST_MAX_PES];
  uintptr_t data_shift[HOSHMEM_FAST_MAX_PES];
  const volatile unsigned char *sleeping[HOSHMEM_FAST_MAX_PES];
} __attribute__((__aligned__(4096)));
extern struct hoshmem_fast_state hoshmem_fast_v6;
void hoshmem_fast_wake(int pe); /* rings the doorbell of PE pe, which sleeps */
/* Copies a put's bytes as the library does (see hoshmem_fast_put_small for the rule); picks the
 * widest vector moves this CPU has. */
void hoshmem_fast_put_copy(char *to, const void *from, size_t bytes) HOSHMEM_NOPLT;

#ifdef __cplusplus
}
#endif

/* The helpers are declared even under HOSHMEM_NO_INLINE: the library's own put copies with them
 * too, so the inline and the out-of-line put store alike. */
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
typedef long long hoshmem_v16_any
    __attribute__((__vector_size__(16), __aligned__(1), __may_alias__));

/* A full memory fence (quiet's). On x86-64 a locked add of 0 orders like mfence at a lower cost.
 * It targets 64 bytes below the stack pointer, not the top of the stack as the compiler's own
 * fence does: a loop that keeps a spilled variable at (%rsp) would otherwise wait, on its next
 * load of it, for the locked store (measured: a fetch_xor_nbi + quiet loop 20 ns instead of
 * 13 ns). The red zone there is this thread's, signal handlers leave it alone, and adding 0 keeps
 * whatever the compiler keeps in it. */
HOSHMEM_FAST_HELPER void hoshmem_fast_full_fence(void) {
#if defined(__x86_64__)
  __asm__ __volatile__("lock; addl $0, -64(%%rsp)" ::: "memory", "cc");
#else
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* The fast path's .data/.bss case: 1 and *shift when sym (at a) is in this PE's .data/.bss and
 * PE pe (index i) is reachable. heap_len[i] is read again, volatile: were the compiler to keep the
 * heap case's load of it in a register for this test, that load could no longer be folded into
 * the heap case's compare. */
HOSHMEM_FAST_HELPER int hoshmem_fast_data_shift(uintptr_t a, unsigned i, uintptr_t *shift) {
  const struct hoshmem_fast_state *f = &hoshmem_fast_v6;
  if (*(const volatile uintptr_t *)&f->heap_len[i] == 0 || a - f->data_lo >= f->data_len) return 0;
  *shift = f->data_shift[i];
  return 1;
}

/* 1 when the fast path applies to PE pe and the symmetric address sym: then *at is PE pe's copy
 * of the object as mapped here. 0 sends the call to the library, which decides (and reports bad
 * arguments). The common case, a heap address, is two loads from the state (PE pe's heap_len
 * and heap_shift) and two branches: in a loop of gets or AMOs these, not the access, set the
 * pace. The index is unsigned, so the load of pe already widens it. How the shift is added
 * depends on the access (each measured, 15-20% of a loop of them):
 *  - a load or an AMO: both cases choose a shift and add it once, so the access can take a
 *    two-register address;
 *  - a store (for_store: p, put, atomic_set): the heap case adds its shift on its own, so the
 *    store gets a one-register address (x86 stores with two cannot use the store-only address
 *    unit). */
HOSHMEM_FAST_HELPER int hoshmem_fast_resolve_for(const void *sym, int pe, char **at,
                                                 int for_store) {
  const struct hoshmem_fast_state *f = &hoshmem_fast_v6;
  const uintptr_t a = (uintptr_t)sym;
  const unsigned i = (unsigned)pe;
  uintptr_t shift;
  if (i >= HOSHMEM_FAST_MAX_PES) return 0;
  if (__builtin_expect(a - (uintptr_t)HOSHMEM_FAST_HEAP_BASE < f->heap_len[i], 1)) {
    if (for_store) {
      *at = (char *)(a + f->heap_shift[i]);
      return 1;
    }
    shift = f->heap_shift[i];
  } else if (!hoshmem_fast_data_shift(a, i, &shift)) {
    return 0;
  }
  *at = (char *)(a + shift);
  return 1;
}
HOSHMEM_FAST_HELPER int hoshmem_fast_resolve(const void *sym, int pe, char **at) {
  return hoshmem_fast_resolve_for(sym, pe, at, 0);
}
HOSHMEM_FAST_HELPER int hoshmem_fast_resolve_store(const void *sym, int pe, char **at) {
  return hoshmem_fast_resolve_for(sym, pe, at, 1);
}

/* Puts and gets of `bytes`: as above, and the whole range [sym, sym + bytes) lies in the
 * segment; a range that runs past its end goes to the library, which reports the overrun
 * instead of writing into whatever is mapped after PE pe's heap. (p, g and AMOs touch one
 * aligned element, which cannot cross a segment's end.) */
HOSHMEM_FAST_HELPER int hoshmem_fast_resolve_range(const void *sym, size_t bytes, int pe,
                                                   char **at) {
  const struct hoshmem_fast_state *f = &hoshmem_fast_v6;
  const uintptr_t a = (uintptr_t)sym;
  const unsigned i = (unsigned)pe;
  if (i >= HOSHMEM_FAST_MAX_PES) return 0;
  const uintptr_t off = a - (uintptr_t)HOSHMEM_FAST_HEAP_BASE, len = f->heap_len[i];
  if (__builtin_expect(off < len && bytes <= len - off, 1)) {
    *at = (char *)(a + f->heap_shift[i]);
    return 1;
  }
  uintptr_t shift;
  if (!hoshmem_fast_data_shift(a, i, &shift) || bytes > f->data_len - (a - f->data_lo)) return 0;
  *at = (char *)(a + shift);
  return 1;
}

/* After an AMO on PE pe's memory: wake it if it sleeps in a wait for its memory
 * (lib/progress/wait.h). A PE asleep in a barrier is not woken by AMOs. Stores do not need this:
 * a PE that sleeps for data has turned them off first (heap_len). An AMO is a full barrier, so
 * this check after it never misses a sleeper's announcement. */
HOSHMEM_FAST_HELPER void hoshmem_fast_notify(int pe) {
  const unsigned char flags = *hoshmem_fast_v6.sleeping[(unsigned)pe];
  if (__builtin_expect((flags & HOSHMEM_FAST_SLEEP_FOR_DATA) != 0, 0))
    hoshmem_fast_wake(pe);
}

/* A put of fewer than 64 bytes, and the rule every put's copy keeps: its last 64 bytes are stored
 * once each, by stores in address order (or one store), after everything before them. A
 * receiver polling the last element so never sees it written twice (glibc memcpy stores small
 * sizes as overlapping moves: a receiver that waits for the last element, zeroes it and answers
 * could see a second store bring its flag back). Pieces of 16, 8, 4, 2 and 1 bytes, all loaded
 * before any is stored (no load waits behind a store to a nearby address); an aligned element
 * inside one is never torn. */
HOSHMEM_FAST_HELPER void hoshmem_fast_put_small(char *to, const char *from, size_t bytes) {
  hoshmem_v16_any v0 = {0, 0}, v1 = {0, 0}, v2 = {0, 0};
  uint64_t q = 0;
  uint32_t d = 0;
  uint16_t w = 0;
  char b = 0;
  const size_t o16 = bytes & 32, o8 = bytes & 48, o4 = bytes & 56, o2 = bytes & 60, o1 = bytes & 62;
  if (bytes & 32) {
    v0 = *(const hoshmem_v16_any *)from;
    v1 = *(const hoshmem_v16_any *)(from + 16);
  }
  if (bytes & 16) v2 = *(const hoshmem_v16_any *)(from + o16);
  if (bytes & 8) q = *(const hoshmem_u64_any *)(from + o8);
  if (bytes & 4) d = *(const hoshmem_u32_any *)(from + o4);
  if (bytes & 2) w = *(const hoshmem_u16_any *)(from + o2);
  if (bytes & 1) b = from[o1];
  if (bytes & 32) {
    *(volatile hoshmem_v16_any *)to = v0;
    *(volatile hoshmem_v16_any *)(to + 16) = v1;
  }
  if (bytes & 16) *(volatile hoshmem_v16_any *)(to + o16) = v2;
  if (bytes & 8) *(volatile hoshmem_u64_any *)(to + o8) = q;
  if (bytes & 4) *(volatile hoshmem_u32_any *)(to + o4) = d;
  if (bytes & 2) *(volatile hoshmem_u16_any *)(to + o2) = w;
  if (bytes & 1) *(volatile char *)(to + o1) = b;
}

/* The inline put's copy: a small constant size is stored right here (a typed put of a few
 * elements becomes a few moves); anything else goes to the library's copy, which uses the CPU's
 * widest moves (a call, as memcpy would be). */
HOSHMEM_FAST_HELPER void hoshmem_fast_put_bytes(char *to, const void *from, size_t bytes) {
  if (__builtin_constant_p(bytes) && bytes < 64)
    hoshmem_fast_put_small(to, (const char *)from, bytes);
  else
    hoshmem_fast_put_copy(to, from, bytes);
}

/* The inline get's copy: a constant size is the compiler's memcpy; any other goes to the put's
 * copy, whose moves suit a get as well, and which aligns the destination where memcpy does not
 * (a get into malloc'ed memory of 4 KiB-1 MiB: twice as fast on some CPUs). */
HOSHMEM_FAST_HELPER void hoshmem_fast_get_bytes(void *to, const char *from, size_t bytes) {
  if (__builtin_constant_p(bytes))
    __builtin_memcpy(to, from, bytes);
  else
    hoshmem_fast_put_copy((char *)to, from, bytes);
}

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

/* On PE pe's copy of the symmetric range [sym, sym + bytes), mapped here at hoshmem_at_:
 * `copy`, else `slow` (the library call). Puts and gets of nelems elements of esize bytes: */
#define HOSHMEM_FAST_RMA(sym, bytes, pe, copy, slow)                                      \
  do {                                                                                    \
    char *hoshmem_at_;                                                                    \
    if (HOSHMEM_FAST_LIKELY(hoshmem_fast_resolve_range(sym, bytes, pe, &hoshmem_at_))) {  \
      copy;                                                                               \
      return;                                                                             \
    }                                                                                     \
    slow;                                                                                 \
  } while (0)
#define HOSHMEM_FAST_PUT(dest, source, nelems, esize, pe, slow)           \
  HOSHMEM_FAST_RMA(dest, (nelems) * (esize), pe,                          \
                   hoshmem_fast_put_bytes(hoshmem_at_, source, (nelems) * (esize)), slow)
#define HOSHMEM_FAST_GET(dest, source, nelems, esize, pe, slow)           \
  HOSHMEM_FAST_RMA(source, (nelems) * (esize), pe,                        \
                   hoshmem_fast_get_bytes(dest, hoshmem_at_, (nelems) * (esize)), slow)

/* --- ordering: every operation above completed in its call, so quiet is a full fence --- */
HOSHMEM_FAST void shmem_quiet(void) {
  if (HOSHMEM_FAST_LIKELY(hoshmem_fast_v6.npes)) {
    hoshmem_fast_full_fence();
    return;
  }
  pshmem_quiet();
}
HOSHMEM_FAST void shmem_fence(void) {
  if (HOSHMEM_FAST_LIKELY(hoshmem_fast_v6.npes)) {
    __atomic_thread_fence(__ATOMIC_RELEASE);
    return;
  }
  pshmem_fence();
}

/* --- RMA: p, g, put, get and their _nbi forms (complete at once on this node) --- */
#define HOSHMEM_FAST_RMA_TYPED(P, T, N)                                                   \
  HOSHMEM_FAST void shmem_##N##_p(T *dest, T value, int pe) {                              \
    char *to;                                                                              \
    if (HOSHMEM_FAST_LIKELY(hoshmem_fast_resolve_store(dest, pe, &to))) {                  \
      *(volatile T *)to = value;                                                           \
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
 * release, the rest seq_cst); every read-modify-write wakes a sleeping target (set is a store). */
#define HOSHMEM_FAST_AMO_ON(RESOLVE, RET, NAME, PARAMS, DEST, PE, ON_WORD, SLOW)          \
  HOSHMEM_FAST RET NAME PARAMS {                                                          \
    char *w;                                                                              \
    if (HOSHMEM_FAST_LIKELY(RESOLVE(DEST, PE, &w))) {                                     \
      ON_WORD;                                                                            \
    }                                                                                     \
    SLOW;                                                                                 \
  }
#define HOSHMEM_FAST_AMO(...) HOSHMEM_FAST_AMO_ON(hoshmem_fast_resolve, __VA_ARGS__)
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
  HOSHMEM_FAST_AMO_ON(hoshmem_fast_resolve_store, void, shmem_##N##_atomic_set,                \
                      (T * dest, T value, int pe), dest, pe,                                    \
                      { __atomic_store((T *)w, &value, __ATOMIC_RELEASE); return; },            \
                      pshmem_##N##_atomic_set(dest, value, pe))                                 \
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
