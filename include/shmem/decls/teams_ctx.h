/*
 * hoshmem: declarations of teams, contexts and every ctx_ form of RMA/AMO/ordering, plus the 1.6
 * team_ptr, ibput/ibget, pe_quiet and session routines. Expanded by HOSHMEM_DECLARE_API(P).
 * (Filled in as the routines are implemented: a declared routine works.)
 */
#ifndef HOSHMEM_DECLS_TEAMS_CTX_H
#define HOSHMEM_DECLS_TEAMS_CTX_H

/* RMA on a context (typed), and the 1.6 interleaved-block forms with and without a context */
#define HOSHMEM_DECL_CTX_RMA_TYPED(P, T, N)                                                      \
  void P##_ctx_##N##_put(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe);      \
  void P##_ctx_##N##_get(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe);      \
  void P##_ctx_##N##_put_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe);  \
  void P##_ctx_##N##_get_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe);  \
  void P##_ctx_##N##_p(shmem_ctx_t ctx, T *dest, T value, int pe);                               \
  T P##_ctx_##N##_g(shmem_ctx_t ctx, const T *source, int pe);                                   \
  void P##_ctx_##N##_iput(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst,              \
                          ptrdiff_t sst, size_t nelems, int pe);                                 \
  void P##_ctx_##N##_iget(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst,              \
                          ptrdiff_t sst, size_t nelems, int pe);                                 \
  void P##_##N##_ibput(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize,     \
                       size_t nblocks, int pe);                                                  \
  void P##_##N##_ibget(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize,     \
                       size_t nblocks, int pe);                                                  \
  void P##_ctx_##N##_ibput(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst,             \
                           ptrdiff_t sst, size_t bsize, size_t nblocks, int pe);                 \
  void P##_ctx_##N##_ibget(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst,             \
                           ptrdiff_t sst, size_t bsize, size_t nblocks, int pe);

/* RMA on a context (sized, bits), and ibput/ibget sized with and without a context */
#define HOSHMEM_DECL_CTX_RMA_SIZED(P, B)                                                         \
  void P##_ctx_put##B(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);   \
  void P##_ctx_get##B(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);   \
  void P##_ctx_put##B##_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,      \
                            int pe);                                                             \
  void P##_ctx_get##B##_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,      \
                            int pe);                                                             \
  void P##_ctx_iput##B(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst,           \
                       ptrdiff_t sst, size_t nelems, int pe);                                    \
  void P##_ctx_iget##B(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst,           \
                       ptrdiff_t sst, size_t nelems, int pe);                                    \
  void P##_ibput##B(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize,  \
                    size_t nblocks, int pe);                                                     \
  void P##_ibget##B(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize,  \
                    size_t nblocks, int pe);                                                     \
  void P##_ctx_ibput##B(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst,          \
                        ptrdiff_t sst, size_t bsize, size_t nblocks, int pe);                    \
  void P##_ctx_ibget##B(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst,          \
                        ptrdiff_t sst, size_t bsize, size_t nblocks, int pe);

/* AMO on a context */
#define HOSHMEM_DECL_CTX_AMO_STD(P, T, N)                                                        \
  T P##_ctx_##N##_atomic_compare_swap(shmem_ctx_t ctx, T *dest, T cond, T value, int pe);        \
  T P##_ctx_##N##_atomic_fetch_inc(shmem_ctx_t ctx, T *dest, int pe);                            \
  void P##_ctx_##N##_atomic_inc(shmem_ctx_t ctx, T *dest, int pe);                               \
  T P##_ctx_##N##_atomic_fetch_add(shmem_ctx_t ctx, T *dest, T value, int pe);                   \
  void P##_ctx_##N##_atomic_add(shmem_ctx_t ctx, T *dest, T value, int pe);                      \
  void P##_ctx_##N##_atomic_compare_swap_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T cond,         \
                                             T value, int pe);                                   \
  void P##_ctx_##N##_atomic_fetch_inc_nbi(shmem_ctx_t ctx, T *fetch, T *dest, int pe);           \
  void P##_ctx_##N##_atomic_fetch_add_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe);

#define HOSHMEM_DECL_CTX_AMO_EXT(P, T, N)                                                        \
  T P##_ctx_##N##_atomic_fetch(shmem_ctx_t ctx, const T *source, int pe);                        \
  void P##_ctx_##N##_atomic_set(shmem_ctx_t ctx, T *dest, T value, int pe);                      \
  T P##_ctx_##N##_atomic_swap(shmem_ctx_t ctx, T *dest, T value, int pe);                        \
  void P##_ctx_##N##_atomic_fetch_nbi(shmem_ctx_t ctx, T *fetch, const T *source, int pe);       \
  void P##_ctx_##N##_atomic_swap_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe);

#define HOSHMEM_DECL_CTX_AMO_BIT(P, T, N)                                                        \
  T P##_ctx_##N##_atomic_fetch_and(shmem_ctx_t ctx, T *dest, T value, int pe);                   \
  void P##_ctx_##N##_atomic_and(shmem_ctx_t ctx, T *dest, T value, int pe);                      \
  T P##_ctx_##N##_atomic_fetch_or(shmem_ctx_t ctx, T *dest, T value, int pe);                    \
  void P##_ctx_##N##_atomic_or(shmem_ctx_t ctx, T *dest, T value, int pe);                       \
  T P##_ctx_##N##_atomic_fetch_xor(shmem_ctx_t ctx, T *dest, T value, int pe);                   \
  void P##_ctx_##N##_atomic_xor(shmem_ctx_t ctx, T *dest, T value, int pe);                      \
  void P##_ctx_##N##_atomic_fetch_and_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe);  \
  void P##_ctx_##N##_atomic_fetch_or_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe);   \
  void P##_ctx_##N##_atomic_fetch_xor_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe);

#define HOSHMEM_DECL_TEAMS_CTX(P)                                                                \
  /* teams */                                                                                    \
  int P##_team_my_pe(shmem_team_t team);                                                         \
  int P##_team_n_pes(shmem_team_t team);                                                         \
  int P##_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config);     \
  int P##_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team);          \
  int P##_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,          \
                             const shmem_team_config_t *config, long config_mask,                \
                             shmem_team_t *new_team);                                            \
  int P##_team_split_2d(shmem_team_t parent_team, int xrange,                                    \
                        const shmem_team_config_t *xaxis_config, long xaxis_mask,                \
                        shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config,       \
                        long yaxis_mask, shmem_team_t *yaxis_team);                              \
  void P##_team_destroy(shmem_team_t team);                                                      \
  void *P##_team_ptr(shmem_team_t team, const void *dest, int pe);                               \
  /* contexts */                                                                                 \
  int P##_ctx_create(long options, shmem_ctx_t *ctx);                                            \
  int P##_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx);                    \
  void P##_ctx_destroy(shmem_ctx_t ctx);                                                         \
  int P##_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team);                                     \
  void P##_ctx_session_start(shmem_ctx_t ctx, long options,                                      \
                             const shmem_ctx_session_config_t *config, long config_mask);        \
  void P##_ctx_session_stop(shmem_ctx_t ctx);                                                    \
  /* RMA and AMO on contexts; 1.6 ibput/ibget */                                                 \
  HOSHMEM_RMA_TYPES(HOSHMEM_DECL_CTX_RMA_TYPED, P)                                               \
  HOSHMEM_RMA_SIZES(HOSHMEM_DECL_CTX_RMA_SIZED, P)                                               \
  void P##_ctx_putmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);   \
  void P##_ctx_getmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);   \
  void P##_ctx_putmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,        \
                          int pe);                                                               \
  void P##_ctx_getmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,        \
                          int pe);                                                               \
  HOSHMEM_AMO_STD_TYPES(HOSHMEM_DECL_CTX_AMO_STD, P)                                             \
  HOSHMEM_AMO_EXT_TYPES(HOSHMEM_DECL_CTX_AMO_EXT, P)                                             \
  HOSHMEM_AMO_BIT_TYPES(HOSHMEM_DECL_CTX_AMO_BIT, P)                                             \
  /* ordering on contexts; 1.6 pe_quiet */                                                       \
  void P##_ctx_fence(shmem_ctx_t ctx);                                                           \
  void P##_ctx_quiet(shmem_ctx_t ctx);                                                           \
  void P##_pe_quiet(const int *target_pes, size_t npes);                                         \
  void P##_ctx_pe_quiet(shmem_ctx_t ctx, const int *target_pes, size_t npes);
#endif
