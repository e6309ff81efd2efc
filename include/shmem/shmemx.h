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
