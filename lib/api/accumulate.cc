// One-sided accumulate (<shmemx.h>): shmemx_TYPENAME_OP_accumulate, its _nbi form and their
// shmemx_ctx_ forms, for the types of the reduction tables. lib/core/accumulate.h does the work.
#include "lib/api/api.h"
#include "lib/core/accumulate.h"

using namespace hoshmem;

extern "C" {

// Blocking and _nbi share one path: either way the source is read before the call returns and
// the update completes at quiet (accumulate.h).
#define DEFINE_ACC(P, T, N, OPNAME, OP)                                                          \
  void pshmemx_##N##_##OPNAME(T *dest, const T *source, size_t nelems, int pe) {                \
    acc::accumulate(acc::Type::t_##N, acc::Op::OP, pe, dest, source, nelems, HOSHMEM_ROUTINE);   \
  }                                                                                              \
  void pshmemx_##N##_##OPNAME##_nbi(T *dest, const T *source, size_t nelems, int pe) {          \
    acc::accumulate(acc::Type::t_##N, acc::Op::OP, pe, dest, source, nelems, HOSHMEM_ROUTINE);   \
  }                                                                                              \
  void pshmemx_ctx_##N##_##OPNAME(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems,     \
                                  int pe) {                                                      \
    acc::accumulate(acc::Type::t_##N, acc::Op::OP, ctx_target(ctx, pe, HOSHMEM_ROUTINE), dest,   \
                    source, nelems, HOSHMEM_ROUTINE);                                        \
  }                                                                                              \
  void pshmemx_ctx_##N##_##OPNAME##_nbi(shmem_ctx_t ctx, T *dest, const T *source,              \
                                        size_t nelems, int pe) {                                 \
    acc::accumulate(acc::Type::t_##N, acc::Op::OP, ctx_target(ctx, pe, HOSHMEM_ROUTINE), dest,   \
                    source, nelems, HOSHMEM_ROUTINE);                                        \
  }
#define DEFINE_ACC_BIT(P, T, N)                \
  DEFINE_ACC(P, T, N, and_accumulate, And)     \
  DEFINE_ACC(P, T, N, or_accumulate, Or)       \
  DEFINE_ACC(P, T, N, xor_accumulate, Xor)
#define DEFINE_ACC_MINMAX(P, T, N)             \
  DEFINE_ACC(P, T, N, min_accumulate, Min)     \
  DEFINE_ACC(P, T, N, max_accumulate, Max)
#define DEFINE_ACC_ARITH(P, T, N)              \
  DEFINE_ACC(P, T, N, sum_accumulate, Sum)     \
  DEFINE_ACC(P, T, N, prod_accumulate, Prod)   \
  DEFINE_ACC(P, T, N, replace_accumulate, Replace)
HOSHMEM_REDUCE_BIT_TYPES(DEFINE_ACC_BIT, _)
HOSHMEM_REDUCE_MINMAX_TYPES(DEFINE_ACC_MINMAX, _)
HOSHMEM_REDUCE_ARITH_TYPES(DEFINE_ACC_ARITH, _)

}  // extern "C"

// The shmemx_ names, weak aliases of the pshmemx_ definitions (profiling tools interpose).
#define ALIAS_ACC(P, T, N, OPNAME)                  \
  HOSHMEM_ALIAS(shmemx_##N##_##OPNAME);             \
  HOSHMEM_ALIAS(shmemx_##N##_##OPNAME##_nbi);       \
  HOSHMEM_ALIAS(shmemx_ctx_##N##_##OPNAME);         \
  HOSHMEM_ALIAS(shmemx_ctx_##N##_##OPNAME##_nbi);
#define ALIAS_ACC_BIT(P, T, N) \
  ALIAS_ACC(P, T, N, and_accumulate) ALIAS_ACC(P, T, N, or_accumulate) ALIAS_ACC(P, T, N, xor_accumulate)
#define ALIAS_ACC_MINMAX(P, T, N) \
  ALIAS_ACC(P, T, N, min_accumulate) ALIAS_ACC(P, T, N, max_accumulate)
#define ALIAS_ACC_ARITH(P, T, N)                                         \
  ALIAS_ACC(P, T, N, sum_accumulate) ALIAS_ACC(P, T, N, prod_accumulate) \
  ALIAS_ACC(P, T, N, replace_accumulate)
HOSHMEM_REDUCE_BIT_TYPES(ALIAS_ACC_BIT, _)
HOSHMEM_REDUCE_MINMAX_TYPES(ALIAS_ACC_MINMAX, _)
HOSHMEM_REDUCE_ARITH_TYPES(ALIAS_ACC_ARITH, _)
