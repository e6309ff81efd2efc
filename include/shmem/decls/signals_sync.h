/*
 * hoshmem: declarations of signals (put_signal, signal_fetch/add/set, signal_wait_until) and the
 * point-to-point _all/_any/_some/_vector families. Expanded by HOSHMEM_DECLARE_API(P).
 * (Filled in as the routines are implemented: a declared routine works.)
 */
#ifndef HOSHMEM_DECLS_SIGNALS_SYNC_H
#define HOSHMEM_DECLS_SIGNALS_SYNC_H

/* --- put-with-signal, typed (stdrmatypes), with and without a context ------------------------- */
#define HOSHMEM_DECL_PUT_SIGNAL_TYPED(P, T, N)                                                   \
  void P##_##N##_put_signal(T *dest, const T *source, size_t nelems, uint64_t *sig_addr,         \
                            uint64_t signal, int sig_op, int pe);                                \
  void P##_##N##_put_signal_nbi(T *dest, const T *source, size_t nelems, uint64_t *sig_addr,     \
                                uint64_t signal, int sig_op, int pe);                            \
  void P##_ctx_##N##_put_signal(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems,        \
                                uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);        \
  void P##_ctx_##N##_put_signal_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems,    \
                                    uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);

/* --- put-with-signal, sized (bits) ------------------------------------------------------------ */
#define HOSHMEM_DECL_PUT_SIGNAL_SIZED(P, B)                                                      \
  void P##_put##B##_signal(void *dest, const void *source, size_t nelems, uint64_t *sig_addr,    \
                           uint64_t signal, int sig_op, int pe);                                 \
  void P##_put##B##_signal_nbi(void *dest, const void *source, size_t nelems,                    \
                               uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);         \
  void P##_ctx_put##B##_signal(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,   \
                               uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);         \
  void P##_ctx_put##B##_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source,              \
                                   size_t nelems, uint64_t *sig_addr, uint64_t signal,           \
                                   int sig_op, int pe);

/* --- point-to-point families over stdamotypes (1.6: the _vector forms take const cmp_values) -- */
#define HOSHMEM_DECL_P2P_FAMILIES(P, T, N)                                                       \
  void P##_##N##_wait_until_all(T *ivars, size_t nelems, const int *status, int cmp,             \
                                T cmp_value);                                                    \
  size_t P##_##N##_wait_until_any(T *ivars, size_t nelems, const int *status, int cmp,           \
                                  T cmp_value);                                                  \
  size_t P##_##N##_wait_until_some(T *ivars, size_t nelems, size_t *indices, const int *status,  \
                                   int cmp, T cmp_value);                                        \
  void P##_##N##_wait_until_all_vector(T *ivars, size_t nelems, const int *status, int cmp,      \
                                       const T *cmp_values);                                     \
  size_t P##_##N##_wait_until_any_vector(T *ivars, size_t nelems, const int *status, int cmp,    \
                                         const T *cmp_values);                                   \
  size_t P##_##N##_wait_until_some_vector(T *ivars, size_t nelems, size_t *indices,              \
                                          const int *status, int cmp, const T *cmp_values);      \
  int P##_##N##_test_all(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value);      \
  size_t P##_##N##_test_any(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value);   \
  size_t P##_##N##_test_some(T *ivars, size_t nelems, size_t *indices, const int *status,        \
                             int cmp, T cmp_value);                                              \
  int P##_##N##_test_all_vector(T *ivars, size_t nelems, const int *status, int cmp,             \
                                const T *cmp_values);                                            \
  size_t P##_##N##_test_any_vector(T *ivars, size_t nelems, const int *status, int cmp,          \
                                   const T *cmp_values);                                         \
  size_t P##_##N##_test_some_vector(T *ivars, size_t nelems, size_t *indices, const int *status, \
                                    int cmp, const T *cmp_values);

#define HOSHMEM_DECL_SIGNALS_SYNC(P)                                                             \
  HOSHMEM_RMA_TYPES(HOSHMEM_DECL_PUT_SIGNAL_TYPED, P)                                            \
  HOSHMEM_RMA_SIZES(HOSHMEM_DECL_PUT_SIGNAL_SIZED, P)                                            \
  void P##_putmem_signal(void *dest, const void *source, size_t nelems, uint64_t *sig_addr,      \
                         uint64_t signal, int sig_op, int pe);                                   \
  void P##_putmem_signal_nbi(void *dest, const void *source, size_t nelems, uint64_t *sig_addr,  \
                             uint64_t signal, int sig_op, int pe);                               \
  void P##_ctx_putmem_signal(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,     \
                             uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);           \
  void P##_ctx_putmem_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source,                \
                                 size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, \
                                 int pe);                                                        \
  uint64_t P##_signal_fetch(const uint64_t *sig_addr);                                           \
  void P##_signal_add(uint64_t *sig_addr, uint64_t signal, int pe);                              \
  void P##_signal_set(uint64_t *sig_addr, uint64_t signal, int pe);                              \
  void P##_ctx_signal_add(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal, int pe);         \
  void P##_ctx_signal_set(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal, int pe);         \
  uint64_t P##_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value);               \
  HOSHMEM_P2P_TYPES(HOSHMEM_DECL_P2P_FAMILIES, P)                                                 \
  /* beyond the spec table, as in SOS: short and unsigned short */                              \
  HOSHMEM_P2P_DEPRECATED_TYPES(HOSHMEM_DECL_P2P_FAMILIES, P)

#endif
