/*
 * hoshmem: declarations of every routine, written once and expanded twice:
 * HOSHMEM_DECLARE_API(shmem) in shmem.h and HOSHMEM_DECLARE_API(pshmem) in pshmem.h
 * (the profiling names). Typed families expand over the lists in shmem_types.h.
 */
#ifndef HOSHMEM_SHMEM_DECLS_H
#define HOSHMEM_SHMEM_DECLS_H

#include "shmem_types.h"
#include "decls/collectives.h"
#include "decls/signals_sync.h"
#include "decls/teams_ctx.h"

#if defined(__GNUC__)
#define HOSHMEM_NORETURN __attribute__((noreturn))
#define HOSHMEM_DEPRECATED __attribute__((deprecated))
#else
#define HOSHMEM_NORETURN
#define HOSHMEM_DEPRECATED
#endif

/* --- RMA, typed: put, get, p, g, iput, iget, put_nbi, get_nbi --------------------------------- */
#define HOSHMEM_DECL_RMA_TYPED(P, T, N)                                                          \
  void P##_##N##_put(T *dest, const T *source, size_t nelems, int pe);                           \
  void P##_##N##_get(T *dest, const T *source, size_t nelems, int pe);                           \
  void P##_##N##_put_nbi(T *dest, const T *source, size_t nelems, int pe);                       \
  void P##_##N##_get_nbi(T *dest, const T *source, size_t nelems, int pe);                       \
  void P##_##N##_p(T *dest, T value, int pe);                                                    \
  T P##_##N##_g(const T *source, int pe);                                                        \
  void P##_##N##_iput(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,     \
                      int pe);                                                                   \
  void P##_##N##_iget(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,     \
                      int pe);

/* --- RMA, sized (bits) ------------------------------------------------------------------------ */
#define HOSHMEM_DECL_RMA_SIZED(P, B)                                                             \
  void P##_put##B(void *dest, const void *source, size_t nelems, int pe);                        \
  void P##_get##B(void *dest, const void *source, size_t nelems, int pe);                        \
  void P##_put##B##_nbi(void *dest, const void *source, size_t nelems, int pe);                  \
  void P##_get##B##_nbi(void *dest, const void *source, size_t nelems, int pe);                  \
  void P##_iput##B(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,  \
                   int pe);                                                                      \
  void P##_iget##B(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,  \
                   int pe);

/* --- AMO -------------------------------------------------------------------------------------- */
#define HOSHMEM_DECL_AMO_STD(P, T, N)                                                            \
  T P##_##N##_atomic_compare_swap(T *dest, T cond, T value, int pe);                             \
  T P##_##N##_atomic_fetch_inc(T *dest, int pe);                                                 \
  void P##_##N##_atomic_inc(T *dest, int pe);                                                    \
  T P##_##N##_atomic_fetch_add(T *dest, T value, int pe);                                        \
  void P##_##N##_atomic_add(T *dest, T value, int pe);                                           \
  void P##_##N##_atomic_compare_swap_nbi(T *fetch, T *dest, T cond, T value, int pe);            \
  void P##_##N##_atomic_fetch_inc_nbi(T *fetch, T *dest, int pe);                                \
  void P##_##N##_atomic_fetch_add_nbi(T *fetch, T *dest, T value, int pe);

#define HOSHMEM_DECL_AMO_EXT(P, T, N)                                                            \
  T P##_##N##_atomic_fetch(const T *source, int pe);                                             \
  void P##_##N##_atomic_set(T *dest, T value, int pe);                                           \
  T P##_##N##_atomic_swap(T *dest, T value, int pe);                                             \
  void P##_##N##_atomic_fetch_nbi(T *fetch, const T *source, int pe);                            \
  void P##_##N##_atomic_swap_nbi(T *fetch, T *dest, T value, int pe);

#define HOSHMEM_DECL_AMO_BIT(P, T, N)                                                            \
  T P##_##N##_atomic_fetch_and(T *dest, T value, int pe);                                        \
  void P##_##N##_atomic_and(T *dest, T value, int pe);                                           \
  T P##_##N##_atomic_fetch_or(T *dest, T value, int pe);                                         \
  void P##_##N##_atomic_or(T *dest, T value, int pe);                                            \
  T P##_##N##_atomic_fetch_xor(T *dest, T value, int pe);                                        \
  void P##_##N##_atomic_xor(T *dest, T value, int pe);                                           \
  void P##_##N##_atomic_fetch_and_nbi(T *fetch, T *dest, T value, int pe);                       \
  void P##_##N##_atomic_fetch_or_nbi(T *fetch, T *dest, T value, int pe);                        \
  void P##_##N##_atomic_fetch_xor_nbi(T *fetch, T *dest, T value, int pe);

/* deprecated since 1.4 */
#define HOSHMEM_DECL_AMO_OLD_STD(P, T, N)                                                        \
  T P##_##N##_cswap(T *dest, T cond, T value, int pe);                                           \
  T P##_##N##_finc(T *dest, int pe);                                                             \
  void P##_##N##_inc(T *dest, int pe);                                                           \
  T P##_##N##_fadd(T *dest, T value, int pe);                                                    \
  void P##_##N##_add(T *dest, T value, int pe);
#define HOSHMEM_DECL_AMO_OLD_EXT(P, T, N)                                                        \
  T P##_##N##_fetch(const T *source, int pe);                                                    \
  void P##_##N##_set(T *dest, T value, int pe);                                                  \
  T P##_##N##_swap(T *dest, T value, int pe);

/* --- point-to-point synchronization ----------------------------------------------------------- */
#define HOSHMEM_DECL_P2P(P, T, N)                                                                \
  void P##_##N##_wait_until(T *ivar, int cmp, T cmp_value);                                      \
  int P##_##N##_test(T *ivar, int cmp, T cmp_value);
#define HOSHMEM_DECL_WAIT_OLD(P, T, N) void P##_##N##_wait(T *ivar, T cmp_value);

/* --- everything, for one prefix --------------------------------------------------------------- */
#define HOSHMEM_DECLARE_API(P)                                                                   \
  /* setup, exit, query */                                                                       \
  void P##_init(void);                                                                           \
  int P##_init_thread(int requested, int *provided);                                             \
  void P##_query_thread(int *provided);                                                          \
  void P##_query_initialized(int *initialized);                                                  \
  void P##_finalize(void);                                                                       \
  HOSHMEM_NORETURN void P##_global_exit(int status);                                             \
  int P##_my_pe(void);                                                                           \
  int P##_n_pes(void);                                                                           \
  int P##_pe_accessible(int pe);                                                                 \
  int P##_addr_accessible(const void *addr, int pe);                                             \
  void *P##_ptr(const void *dest, int pe);                                                       \
  void P##_info_get_version(int *major, int *minor);                                             \
  void P##_info_get_name(char *name);                                                            \
  void P##_pcontrol(int level, ...);                                                             \
  /* memory management */                                                                        \
  void *P##_malloc(size_t size);                                                                 \
  void *P##_calloc(size_t count, size_t size);                                                   \
  void *P##_align(size_t alignment, size_t size);                                                \
  void *P##_realloc(void *ptr, size_t size);                                                     \
  void *P##_malloc_with_hints(size_t size, long hints);                                          \
  void P##_free(void *ptr);                                                                      \
  /* RMA */                                                                                      \
  HOSHMEM_RMA_TYPES(HOSHMEM_DECL_RMA_TYPED, P)                                                   \
  HOSHMEM_RMA_SIZES(HOSHMEM_DECL_RMA_SIZED, P)                                                   \
  void P##_putmem(void *dest, const void *source, size_t nelems, int pe);                        \
  void P##_getmem(void *dest, const void *source, size_t nelems, int pe);                        \
  void P##_putmem_nbi(void *dest, const void *source, size_t nelems, int pe);                    \
  void P##_getmem_nbi(void *dest, const void *source, size_t nelems, int pe);                    \
  /* AMO */                                                                                      \
  HOSHMEM_AMO_STD_TYPES(HOSHMEM_DECL_AMO_STD, P)                                                 \
  HOSHMEM_AMO_EXT_TYPES(HOSHMEM_DECL_AMO_EXT, P)                                                 \
  HOSHMEM_AMO_BIT_TYPES(HOSHMEM_DECL_AMO_BIT, P)                                                 \
  HOSHMEM_AMO_OLD_STD_TYPES(HOSHMEM_DECL_AMO_OLD_STD, P)                                         \
  HOSHMEM_AMO_OLD_EXT_TYPES(HOSHMEM_DECL_AMO_OLD_EXT, P)                                         \
  /* point-to-point synchronization */                                                           \
  HOSHMEM_P2P_TYPES(HOSHMEM_DECL_P2P, P)                                                         \
  HOSHMEM_P2P_DEPRECATED_TYPES(HOSHMEM_DECL_P2P, P)                                              \
  HOSHMEM_WAIT_OLD_TYPES(HOSHMEM_DECL_WAIT_OLD, P)                                               \
  void P##_wait(long *ivar, long cmp_value);                                                     \
  void P##_wait_until(long *ivar, int cmp, long cmp_value);                                      \
  /* memory ordering, barriers */                                                                \
  void P##_fence(void);                                                                          \
  void P##_quiet(void);                                                                          \
  void P##_barrier_all(void);                                                                    \
  void P##_sync_all(void);                                                                       \
  /* distributed locking */                                                                      \
  void P##_set_lock(long *lock);                                                                 \
  void P##_clear_lock(long *lock);                                                               \
  int P##_test_lock(long *lock);                                                                 \
  /* cache management (OpenSHMEM 1.0-1.4, deprecated): no-ops on cache-coherent machines */      \
  HOSHMEM_DEPRECATED void P##_clear_cache_inv(void);                                             \
  HOSHMEM_DEPRECATED void P##_set_cache_inv(void);                                               \
  HOSHMEM_DEPRECATED void P##_clear_cache_line_inv(void *dest);                                  \
  HOSHMEM_DEPRECATED void P##_set_cache_line_inv(void *dest);                                    \
  HOSHMEM_DEPRECATED void P##_udcflush(void);                                                    \
  HOSHMEM_DEPRECATED void P##_udcflush_line(void *dest);                                         \
  /* teams, contexts, collectives, signals, sync families (decls/) */                            \
  HOSHMEM_DECL_TEAMS_CTX(P)                                                                      \
  HOSHMEM_DECL_COLLECTIVES(P)                                                                    \
  HOSHMEM_DECL_SIGNALS_SYNC(P)

/* deprecated setup / memory names (1.2), without a shmem_ prefix */
#define HOSHMEM_DECLARE_OLD_NAMES(P)                                                             \
  void P##start_pes(int npes);                                                                   \
  int P##_my_pe(void);                                                                           \
  int P##_num_pes(void);                                                                         \
  void *P##shmalloc(size_t size);                                                                \
  void P##shfree(void *ptr);                                                                     \
  void *P##shrealloc(void *ptr, size_t size);                                                    \
  void *P##shmemalign(size_t alignment, size_t size);

#endif /* HOSHMEM_SHMEM_DECLS_H */
