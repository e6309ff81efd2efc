/*
 * hoshmem: declarations of the collectives: team sync/barrier, broadcast, collect, fcollect,
 * alltoall(s), reductions, scans, and the deprecated active-set forms. Expanded by
 * HOSHMEM_DECLARE_API(P). (Filled in as the routines are implemented: a declared routine works.)
 */
#ifndef HOSHMEM_DECLS_COLLECTIVES_H
#define HOSHMEM_DECLS_COLLECTIVES_H

/* typed data movement over stdrmatypes */
#define HOSHMEM_DECL_COLL_RMA(P, T, N)                                                           \
  int P##_##N##_broadcast(shmem_team_t team, T *dest, const T *source, size_t nelems,           \
                          int PE_root);                                                          \
  int P##_##N##_collect(shmem_team_t team, T *dest, const T *source, size_t nelems);            \
  int P##_##N##_fcollect(shmem_team_t team, T *dest, const T *source, size_t nelems);           \
  int P##_##N##_alltoall(shmem_team_t team, T *dest, const T *source, size_t nelems);           \
  int P##_##N##_alltoalls(shmem_team_t team, T *dest, const T *source, ptrdiff_t dst,           \
                          ptrdiff_t sst, size_t nelems);

/* team reductions and scans */
#define HOSHMEM_DECL_REDUCE_BIT(P, T, N)                                                         \
  int P##_##N##_and_reduce(shmem_team_t team, T *dest, const T *source, size_t nreduce);        \
  int P##_##N##_or_reduce(shmem_team_t team, T *dest, const T *source, size_t nreduce);         \
  int P##_##N##_xor_reduce(shmem_team_t team, T *dest, const T *source, size_t nreduce);
#define HOSHMEM_DECL_REDUCE_MINMAX(P, T, N)                                                      \
  int P##_##N##_max_reduce(shmem_team_t team, T *dest, const T *source, size_t nreduce);        \
  int P##_##N##_min_reduce(shmem_team_t team, T *dest, const T *source, size_t nreduce);
#define HOSHMEM_DECL_REDUCE_ARITH(P, T, N)                                                       \
  int P##_##N##_sum_reduce(shmem_team_t team, T *dest, const T *source, size_t nreduce);        \
  int P##_##N##_prod_reduce(shmem_team_t team, T *dest, const T *source, size_t nreduce);       \
  int P##_##N##_sum_inscan(shmem_team_t team, T *dest, const T *source, size_t nelems);         \
  int P##_##N##_sum_exscan(shmem_team_t team, T *dest, const T *source, size_t nelems);

/* deprecated active-set reductions */
#define HOSHMEM_DECL_ASET_ARGS(T)                                                                \
  (T * dest, const T *source, int nreduce, int PE_start, int logPE_stride, int PE_size,         \
   T *pWrk, long *pSync)
#define HOSHMEM_DECL_TO_ALL_BIT(P, T, N)                                                         \
  void P##_##N##_and_to_all HOSHMEM_DECL_ASET_ARGS(T);                                           \
  void P##_##N##_or_to_all HOSHMEM_DECL_ASET_ARGS(T);                                            \
  void P##_##N##_xor_to_all HOSHMEM_DECL_ASET_ARGS(T);
#define HOSHMEM_DECL_TO_ALL_MINMAX(P, T, N)                                                      \
  void P##_##N##_max_to_all HOSHMEM_DECL_ASET_ARGS(T);                                           \
  void P##_##N##_min_to_all HOSHMEM_DECL_ASET_ARGS(T);
#define HOSHMEM_DECL_TO_ALL_ARITH(P, T, N)                                                       \
  void P##_##N##_sum_to_all HOSHMEM_DECL_ASET_ARGS(T);                                           \
  void P##_##N##_prod_to_all HOSHMEM_DECL_ASET_ARGS(T);

/* deprecated active-set data movement, 32- and 64-bit elements */
#define HOSHMEM_DECL_ASET_SIZED(P, B)                                                            \
  void P##_broadcast##B(void *dest, const void *source, size_t nelems, int PE_root,             \
                        int PE_start, int logPE_stride, int PE_size, long *pSync);               \
  void P##_collect##B(void *dest, const void *source, size_t nelems, int PE_start,              \
                      int logPE_stride, int PE_size, long *pSync);                               \
  void P##_fcollect##B(void *dest, const void *source, size_t nelems, int PE_start,             \
                       int logPE_stride, int PE_size, long *pSync);                              \
  void P##_alltoall##B(void *dest, const void *source, size_t nelems, int PE_start,             \
                       int logPE_stride, int PE_size, long *pSync);                              \
  void P##_alltoalls##B(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,           \
                        size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync);

#define HOSHMEM_DECL_COLLECTIVES(P)                                                              \
  int P##_team_sync(shmem_team_t team);                                                          \
  void P##_sync(int PE_start, int logPE_stride, int PE_size, long *pSync);                       \
  void P##_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync);                    \
  HOSHMEM_RMA_TYPES(HOSHMEM_DECL_COLL_RMA, P)                                                    \
  int P##_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems,         \
                       int PE_root);                                                             \
  int P##_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);          \
  int P##_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);         \
  int P##_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems);         \
  int P##_alltoallsmem(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst,         \
                       ptrdiff_t sst, size_t nelems);                                            \
  HOSHMEM_REDUCE_BIT_TYPES(HOSHMEM_DECL_REDUCE_BIT, P)                                           \
  HOSHMEM_REDUCE_MINMAX_TYPES(HOSHMEM_DECL_REDUCE_MINMAX, P)                                     \
  HOSHMEM_REDUCE_ARITH_TYPES(HOSHMEM_DECL_REDUCE_ARITH, P)                                       \
  HOSHMEM_DECL_ASET_SIZED(P, 32)                                                                 \
  HOSHMEM_DECL_ASET_SIZED(P, 64)                                                                 \
  HOSHMEM_ASET_REDUCE_BIT_TYPES(HOSHMEM_DECL_TO_ALL_BIT, P)                                      \
  HOSHMEM_ASET_REDUCE_MINMAX_TYPES(HOSHMEM_DECL_TO_ALL_MINMAX, P)                                \
  HOSHMEM_ASET_REDUCE_ARITH_TYPES(HOSHMEM_DECL_TO_ALL_ARITH, P)

#endif
