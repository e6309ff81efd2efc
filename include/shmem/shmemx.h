/*
 * hoshmem: extensions beyond the OpenSHMEM specification (shmemx_ prefix).
 */
#ifndef HOSHMEM_SHMEMX_H
#define HOSHMEM_SHMEMX_H

#include "shmem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The atomicity mode the job agreed on at shmem_init: "all-sw" (CPU atomics intra-node, software
 * active messages inter-node) or "all-hw" (HCA atomics everywhere, HCA loopback intra-node). */
const char *shmemx_atomicity_mode(void);

/* Prints what SHMEM_INFO=1 prints (version, build, every variable and its value) to stdout. */
void shmemx_info_print(void);

/* Seconds since an arbitrary fixed point, from a monotonic clock (for benchmarks and tests). */
double shmemx_wtime(void);

/* --- masked atomics (mlx5's extended atomics, for programs) ------------------------------------
 *
 * fetch_add_fields: adds `value` to the `size`-byte word at dest on PE pe field by field: a set
 * bit of `boundary` marks the most significant bit of a field, and no carry leaves a field (the
 * top bit of the word always ends one). compare_swap_masked: if ((old ^ compare) & compare_mask)
 * == 0, writes (old & ~swap_mask) | (swap & swap_mask). Both return the old word (in *fetch; a
 * NULL fetch makes the call non-blocking, complete at shmem_quiet). Values are host-order
 * integers of `size` bytes, 4, 8, 16, 32, 64, 128 or 256 (other sizes stop the job with one
 * line); above 8, the bytes in memory order as one little-endian integer (carries run toward
 * higher addresses). dest must be aligned to `size`.
 *   4 and 8 bytes: atomic with respect to every other AMO the job issues on that word, in either
 *   mode (the HCA's masked atomics in all-HW mode, compare-swap loops on a device without them
 *   and in coherent mode, whose PEs use CPU atomics on their node's words; CPU compare-swap
 *   loops in all-SW mode).
 *   16-128 bytes in all-HW mode when every PE's device has that size, outside coherent mode: the
 *   target's HCA (a fetch-add whose fields cross 8-byte words as full-width masked compare-swap
 *   loops), atomic with respect to every HCA atomic on those bytes.
 *   Otherwise (all-SW mode, coherent mode, a size a device lacks, 256 bytes): the lock
 *   fallback, under the target's stripe locks (the caller gets, computes and puts; in all-SW mode
 *   to another node the target's CPU computes, in one message), complete on return: atomic with
 *   respect to other masked atomics of 16-256 bytes on those bytes only, not to smaller AMOs,
 *   puts or stores.
 * Which one a size uses is the same on every PE; SHMEM_INFO=1 prints it ("wide masked atomics").
 * docs/user-guide.md, "Masked atomics". */
void shmemx_atomic_fetch_add_fields(void *dest, const void *value, const void *boundary,
                                    void *fetch, size_t size, int pe);
void shmemx_atomic_compare_swap_masked(void *dest, const void *compare, const void *compare_mask,
                                       const void *swap, const void *swap_mask, void *fetch,
                                       size_t size, int pe);
void shmemx_ctx_atomic_fetch_add_fields(shmem_ctx_t ctx, void *dest, const void *value,
                                        const void *boundary, void *fetch, size_t size, int pe);
void shmemx_ctx_atomic_compare_swap_masked(shmem_ctx_t ctx, void *dest, const void *compare,
                                           const void *compare_mask, const void *swap,
                                           const void *swap_mask, void *fetch, size_t size,
                                           int pe);
uint32_t shmemx_uint32_atomic_fetch_add_fields(uint32_t *dest, uint32_t value, uint32_t boundary,
                                               int pe);
uint64_t shmemx_uint64_atomic_fetch_add_fields(uint64_t *dest, uint64_t value, uint64_t boundary,
                                               int pe);
uint32_t shmemx_uint32_atomic_compare_swap_masked(uint32_t *dest, uint32_t compare,
                                                  uint32_t compare_mask, uint32_t swap,
                                                  uint32_t swap_mask, int pe);
uint64_t shmemx_uint64_atomic_compare_swap_masked(uint64_t *dest, uint64_t compare,
                                                  uint64_t compare_mask, uint64_t swap,
                                                  uint64_t swap_mask, int pe);

/* --- one-sided accumulate -------------------------------------------------------------------
 *
 *   void shmemx_TYPENAME_OP_accumulate(TYPE *dest, const TYPE *source, size_t nelems, int pe);
 *
 * dest[i] = OP(dest[i], source[i]) for i < nelems, on PE pe's symmetric array dest; source is any
 * local memory. OP is sum, prod, min, max or replace (dest[i] = source[i]) for the types of the
 * matching *_reduce routines (sum, prod and replace: shmem_TYPENAME_sum_reduce's; min and max:
 * max_reduce's), and and, or, xor for those of and_reduce. The source may be reused on return;
 * the update is complete at the next shmem_quiet (or barrier) of the context, like a put's.
 * _nbi forms: the source must not change until that quiet. shmemx_ctx_ forms take a context.
 *
 * Each element's update is atomic with respect to every other accumulate on that element, from
 * any PE, of any size: whatever scheme carries them (HOSHMEM_ACC), the job updates each element
 * type one way only. It is NOT atomic with respect to AMOs, puts or plain stores on the same
 * elements: do not mix them on one array between synchronizations. */
#define HOSHMEMX_DECL_ACC(P, T, N, OPNAME)                                                         \
  void P##_##N##_##OPNAME(T *dest, const T *source, size_t nelems, int pe);                      \
  void P##_##N##_##OPNAME##_nbi(T *dest, const T *source, size_t nelems, int pe);                \
  void P##_ctx_##N##_##OPNAME(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe); \
  void P##_ctx_##N##_##OPNAME##_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems,    \
                                    int pe);
#define HOSHMEMX_DECL_ACC_BIT(P, T, N) \
  HOSHMEMX_DECL_ACC(P, T, N, and_accumulate) \
  HOSHMEMX_DECL_ACC(P, T, N, or_accumulate) HOSHMEMX_DECL_ACC(P, T, N, xor_accumulate)
#define HOSHMEMX_DECL_ACC_MINMAX(P, T, N) \
  HOSHMEMX_DECL_ACC(P, T, N, min_accumulate) HOSHMEMX_DECL_ACC(P, T, N, max_accumulate)
#define HOSHMEMX_DECL_ACC_ARITH(P, T, N)                                              \
  HOSHMEMX_DECL_ACC(P, T, N, sum_accumulate) HOSHMEMX_DECL_ACC(P, T, N, prod_accumulate) \
  HOSHMEMX_DECL_ACC(P, T, N, replace_accumulate)
HOSHMEM_REDUCE_BIT_TYPES(HOSHMEMX_DECL_ACC_BIT, shmemx)
HOSHMEM_REDUCE_MINMAX_TYPES(HOSHMEMX_DECL_ACC_MINMAX, shmemx)
HOSHMEM_REDUCE_ARITH_TYPES(HOSHMEMX_DECL_ACC_ARITH, shmemx)
HOSHMEM_REDUCE_BIT_TYPES(HOSHMEMX_DECL_ACC_BIT, pshmemx)
HOSHMEM_REDUCE_MINMAX_TYPES(HOSHMEMX_DECL_ACC_MINMAX, pshmemx)
HOSHMEM_REDUCE_ARITH_TYPES(HOSHMEMX_DECL_ACC_ARITH, pshmemx)

#ifdef __cplusplus
}
#endif

/* C11: shmemx_OP_accumulate(dest, source, nelems, pe) and its _nbi form select the routine by
 * dest's type; with a context first, the shmemx_ctx_ routine. */
#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define HOSHMEMX_G_ACC(LIST, OP, ...)                                                             \
  _Generic(HOSHMEM_G_ARG1(__VA_ARGS__, 0),                                                        \
           shmem_ctx_t: _Generic(HOSHMEM_G_ARG2(__VA_ARGS__, 0, 0),                               \
                                 LIST(HOSHMEM_G_ENTRY, shmemx_ctx, OP) default: HOSHMEM_G_NONE),  \
           default: _Generic(HOSHMEM_G_ARG1(__VA_ARGS__, 0),                                      \
                             LIST(HOSHMEM_G_ENTRY, shmemx, OP) default: HOSHMEM_G_NONE))(__VA_ARGS__)
#define shmemx_sum_accumulate(...) HOSHMEMX_G_ACC(HOSHMEM_G_REDUCE_ARITH_LIST, sum_accumulate, __VA_ARGS__)
#define shmemx_prod_accumulate(...) HOSHMEMX_G_ACC(HOSHMEM_G_REDUCE_ARITH_LIST, prod_accumulate, __VA_ARGS__)
#define shmemx_replace_accumulate(...) HOSHMEMX_G_ACC(HOSHMEM_G_REDUCE_ARITH_LIST, replace_accumulate, __VA_ARGS__)
#define shmemx_min_accumulate(...) HOSHMEMX_G_ACC(HOSHMEM_G_REDUCE_MINMAX_LIST, min_accumulate, __VA_ARGS__)
#define shmemx_max_accumulate(...) HOSHMEMX_G_ACC(HOSHMEM_G_REDUCE_MINMAX_LIST, max_accumulate, __VA_ARGS__)
#define shmemx_and_accumulate(...) HOSHMEMX_G_ACC(HOSHMEM_G_REDUCE_BIT_LIST, and_accumulate, __VA_ARGS__)
#define shmemx_or_accumulate(...) HOSHMEMX_G_ACC(HOSHMEM_G_REDUCE_BIT_LIST, or_accumulate, __VA_ARGS__)
#define shmemx_xor_accumulate(...) HOSHMEMX_G_ACC(HOSHMEM_G_REDUCE_BIT_LIST, xor_accumulate, __VA_ARGS__)
#define shmemx_sum_accumulate_nbi(...) HOSHMEMX_G_ACC(HOSHMEM_G_REDUCE_ARITH_LIST, sum_accumulate_nbi, __VA_ARGS__)
#define shmemx_prod_accumulate_nbi(...) HOSHMEMX_G_ACC(HOSHMEM_G_REDUCE_ARITH_LIST, prod_accumulate_nbi, __VA_ARGS__)
#define shmemx_replace_accumulate_nbi(...) HOSHMEMX_G_ACC(HOSHMEM_G_REDUCE_ARITH_LIST, replace_accumulate_nbi, __VA_ARGS__)
#define shmemx_min_accumulate_nbi(...) HOSHMEMX_G_ACC(HOSHMEM_G_REDUCE_MINMAX_LIST, min_accumulate_nbi, __VA_ARGS__)
#define shmemx_max_accumulate_nbi(...) HOSHMEMX_G_ACC(HOSHMEM_G_REDUCE_MINMAX_LIST, max_accumulate_nbi, __VA_ARGS__)
#define shmemx_and_accumulate_nbi(...) HOSHMEMX_G_ACC(HOSHMEM_G_REDUCE_BIT_LIST, and_accumulate_nbi, __VA_ARGS__)
#define shmemx_or_accumulate_nbi(...) HOSHMEMX_G_ACC(HOSHMEM_G_REDUCE_BIT_LIST, or_accumulate_nbi, __VA_ARGS__)
#define shmemx_xor_accumulate_nbi(...) HOSHMEMX_G_ACC(HOSHMEM_G_REDUCE_BIT_LIST, xor_accumulate_nbi, __VA_ARGS__)
#endif

#endif /* HOSHMEM_SHMEMX_H */
