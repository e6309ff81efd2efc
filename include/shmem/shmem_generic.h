/*
 * hoshmem: the C11 type-generic interfaces (shmem_put, shmem_atomic_fetch_add, ...), as _Generic
 * macros over the type tables. C11 and later only; C++ programs call the typed names.
 *
 * No two associations of one _Generic may be compatible types, and the typedef'd names of the
 * tables (int32_t, size_t, ptrdiff_t, ...) are the same types as some C base type. So, as the
 * specification suggests, each generic lists the C base types of its table (plus int32_t/int64_t
 * where a table has no signed base type of that size); a size_t argument selects the
 * unsigned long routine, which moves the same bits.
 *
 * A generic with a context overload looks at its first argument: a shmem_ctx_t selects the
 * shmem_ctx_ routine by the second argument's type, anything else the plain routine by the first.
 * Names that are also deprecated C routines (shmem_wait_until, shmem_sync) stay callable: a
 * function-like macro does not expand its own name, and (shmem_wait_until)(...) names the routine.
 * Only generics whose typed routines exist are defined (the list grows with the library).
 */
#ifndef HOSHMEM_SHMEM_GENERIC_H
#define HOSHMEM_SHMEM_GENERIC_H

#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L

/* Never defined: named only by _Generic branches that are not selected. If one is selected, the
 * compiler reports that this object is not a function. */
extern const int hoshmem_no_routine_for_these_argument_types;
#define HOSHMEM_G_NONE hoshmem_no_routine_for_these_argument_types

#define HOSHMEM_G_ARG1(a, ...) a
#define HOSHMEM_G_ARG2(a, b, ...) b

/* --- association lists: "TYPE *: PFX_TYPENAME_OP," ------------------------------------------- */
#define HOSHMEM_G_ENTRY(T, N, PFX, OP) T *: PFX##_##N##_##OP,
#define HOSHMEM_G_ENTRY_C(T, N, PFX, OP) T *: PFX##_##N##_##OP, const T *: PFX##_##N##_##OP,

/* stdrmatypes by their C base types */
#define HOSHMEM_G_RMA_LIST(E, PFX, OP)                                                           \
  E(float, float, PFX, OP) E(double, double, PFX, OP) E(long double, longdouble, PFX, OP)        \
  E(char, char, PFX, OP) E(signed char, schar, PFX, OP) E(short, short, PFX, OP)                 \
  E(int, int, PFX, OP) E(long, long, PFX, OP) E(long long, longlong, PFX, OP)                    \
  E(unsigned char, uchar, PFX, OP) E(unsigned short, ushort, PFX, OP)                            \
  E(unsigned int, uint, PFX, OP) E(unsigned long, ulong, PFX, OP)                                \
  E(unsigned long long, ulonglong, PFX, OP)
/* stdamotypes */
#define HOSHMEM_G_AMO_STD_LIST(E, PFX, OP)                                                       \
  E(int, int, PFX, OP) E(long, long, PFX, OP) E(long long, longlong, PFX, OP)                    \
  E(unsigned int, uint, PFX, OP) E(unsigned long, ulong, PFX, OP)                                \
  E(unsigned long long, ulonglong, PFX, OP)
/* extamotypes */
#define HOSHMEM_G_AMO_EXT_LIST(E, PFX, OP)                                                       \
  E(float, float, PFX, OP) E(double, double, PFX, OP) HOSHMEM_G_AMO_STD_LIST(E, PFX, OP)
/* bitamotypes: no signed base types in the table, so the signed ones come from int32/int64 */
#define HOSHMEM_G_AMO_BIT_LIST(E, PFX, OP)                                                       \
  E(unsigned int, uint, PFX, OP) E(unsigned long, ulong, PFX, OP)                                \
  E(unsigned long long, ulonglong, PFX, OP) E(int32_t, int32, PFX, OP)                           \
  E(int64_t, int64, PFX, OP)
/* p2p sync: stdamotypes plus short/unsigned short (deprecated for wait_until/test; for the
 * _all/_any/_some/_vector families an extension that SOS also has) */
#define HOSHMEM_G_P2P_LIST(E, PFX, OP) HOSHMEM_G_P2P_OLD_LIST(E, PFX, OP)
#define HOSHMEM_G_P2P_OLD_LIST(E, PFX, OP)                                                       \
  HOSHMEM_G_AMO_STD_LIST(E, PFX, OP) E(short, short, PFX, OP) E(unsigned short, ushort, PFX, OP)
/* teamreducetypes per operator (int8_t..int64_t are signed char, short, int, long or long long:
 * the bitwise table has no other signed types, so they do not collide) */
#define HOSHMEM_G_REDUCE_BIT_LIST(E, PFX, OP)                                                    \
  E(unsigned char, uchar, PFX, OP) E(unsigned short, ushort, PFX, OP)                            \
  E(unsigned int, uint, PFX, OP) E(unsigned long, ulong, PFX, OP)                                \
  E(unsigned long long, ulonglong, PFX, OP) E(int8_t, int8, PFX, OP) E(int16_t, int16, PFX, OP)  \
  E(int32_t, int32, PFX, OP) E(int64_t, int64, PFX, OP)
#define HOSHMEM_G_REDUCE_MINMAX_LIST(E, PFX, OP)                                                 \
  E(char, char, PFX, OP) E(signed char, schar, PFX, OP) E(short, short, PFX, OP)                 \
  E(int, int, PFX, OP) E(long, long, PFX, OP) E(long long, longlong, PFX, OP)                    \
  E(unsigned char, uchar, PFX, OP) E(unsigned short, ushort, PFX, OP)                            \
  E(unsigned int, uint, PFX, OP) E(unsigned long, ulong, PFX, OP)                                \
  E(unsigned long long, ulonglong, PFX, OP) E(float, float, PFX, OP) E(double, double, PFX, OP)  \
  E(long double, longdouble, PFX, OP)
#define HOSHMEM_G_REDUCE_ARITH_LIST(E, PFX, OP)                                                  \
  HOSHMEM_G_REDUCE_MINMAX_LIST(E, PFX, OP)                                                       \
  E(double _Complex, complexd, PFX, OP) E(float _Complex, complexf, PFX, OP)

/* deprecated (1.4) AMO generics */
#define HOSHMEM_G_OLD_EXT_LIST(E, PFX, OP)                                                       \
  E(float, float, PFX, OP) E(double, double, PFX, OP) E(int, int, PFX, OP)                       \
  E(long, long, PFX, OP) E(long long, longlong, PFX, OP)
#define HOSHMEM_G_OLD_STD_LIST(E, PFX, OP)                                                       \
  E(int, int, PFX, OP) E(long, long, PFX, OP) E(long long, longlong, PFX, OP)

/* --- dispatchers ------------------------------------------------------------------------------ */
/* by the first argument; no context overload */
#define HOSHMEM_G_PLAIN(LIST, E, OP, ...)                                                        \
  _Generic(HOSHMEM_G_ARG1(__VA_ARGS__, 0), LIST(E, shmem, OP) default: HOSHMEM_G_NONE)(__VA_ARGS__)
/* by the second argument (collectives: team first, then dest) */
#define HOSHMEM_G_BY2(LIST, E, OP, ...)                                                          \
  _Generic(HOSHMEM_G_ARG2(__VA_ARGS__, 0, 0), LIST(E, shmem, OP) default: HOSHMEM_G_NONE)(__VA_ARGS__)
/* with a context overload */
#define HOSHMEM_G_CTX(LIST, E, OP, ...)                                                          \
  _Generic(HOSHMEM_G_ARG1(__VA_ARGS__, 0),                                                       \
           shmem_ctx_t: _Generic(HOSHMEM_G_ARG2(__VA_ARGS__, 0, 0),                              \
                                 LIST(E, shmem_ctx, OP) default: HOSHMEM_G_NONE),                \
           default: _Generic(HOSHMEM_G_ARG1(__VA_ARGS__, 0),                                     \
                             LIST(E, shmem, OP) default: HOSHMEM_G_NONE))(__VA_ARGS__)

/* --- RMA --------------------------------------------------------------------------------------- */
#define shmem_put(...) HOSHMEM_G_CTX(HOSHMEM_G_RMA_LIST, HOSHMEM_G_ENTRY, put, __VA_ARGS__)
#define shmem_get(...) HOSHMEM_G_CTX(HOSHMEM_G_RMA_LIST, HOSHMEM_G_ENTRY, get, __VA_ARGS__)
#define shmem_p(...) HOSHMEM_G_CTX(HOSHMEM_G_RMA_LIST, HOSHMEM_G_ENTRY, p, __VA_ARGS__)
#define shmem_g(...) HOSHMEM_G_CTX(HOSHMEM_G_RMA_LIST, HOSHMEM_G_ENTRY_C, g, __VA_ARGS__)
#define shmem_iput(...) HOSHMEM_G_CTX(HOSHMEM_G_RMA_LIST, HOSHMEM_G_ENTRY, iput, __VA_ARGS__)
#define shmem_iget(...) HOSHMEM_G_CTX(HOSHMEM_G_RMA_LIST, HOSHMEM_G_ENTRY, iget, __VA_ARGS__)
#define shmem_ibput(...) HOSHMEM_G_CTX(HOSHMEM_G_RMA_LIST, HOSHMEM_G_ENTRY, ibput, __VA_ARGS__)
#define shmem_ibget(...) HOSHMEM_G_CTX(HOSHMEM_G_RMA_LIST, HOSHMEM_G_ENTRY, ibget, __VA_ARGS__)
#define shmem_put_nbi(...) HOSHMEM_G_CTX(HOSHMEM_G_RMA_LIST, HOSHMEM_G_ENTRY, put_nbi, __VA_ARGS__)
#define shmem_get_nbi(...) HOSHMEM_G_CTX(HOSHMEM_G_RMA_LIST, HOSHMEM_G_ENTRY, get_nbi, __VA_ARGS__)

/* --- signals ------------------------------------------------------------------------------------ */
#define shmem_put_signal(...)                                                                    \
  HOSHMEM_G_CTX(HOSHMEM_G_RMA_LIST, HOSHMEM_G_ENTRY, put_signal, __VA_ARGS__)
#define shmem_put_signal_nbi(...)                                                                \
  HOSHMEM_G_CTX(HOSHMEM_G_RMA_LIST, HOSHMEM_G_ENTRY, put_signal_nbi, __VA_ARGS__)
/* shmem_signal_add/set(sig_addr, signal, pe) are C routines; the generic adds the ctx overload */
#define shmem_signal_add(...)                                                                    \
  _Generic(HOSHMEM_G_ARG1(__VA_ARGS__, 0), shmem_ctx_t: shmem_ctx_signal_add,                    \
           default: shmem_signal_add)(__VA_ARGS__)
#define shmem_signal_set(...)                                                                    \
  _Generic(HOSHMEM_G_ARG1(__VA_ARGS__, 0), shmem_ctx_t: shmem_ctx_signal_set,                    \
           default: shmem_signal_set)(__VA_ARGS__)

/* --- AMO --------------------------------------------------------------------------------------- */
#define shmem_atomic_fetch(...)                                                                  \
  HOSHMEM_G_CTX(HOSHMEM_G_AMO_EXT_LIST, HOSHMEM_G_ENTRY_C, atomic_fetch, __VA_ARGS__)
#define shmem_atomic_set(...)                                                                    \
  HOSHMEM_G_CTX(HOSHMEM_G_AMO_EXT_LIST, HOSHMEM_G_ENTRY, atomic_set, __VA_ARGS__)
#define shmem_atomic_swap(...)                                                                   \
  HOSHMEM_G_CTX(HOSHMEM_G_AMO_EXT_LIST, HOSHMEM_G_ENTRY, atomic_swap, __VA_ARGS__)
#define shmem_atomic_fetch_nbi(...)                                                              \
  HOSHMEM_G_CTX(HOSHMEM_G_AMO_EXT_LIST, HOSHMEM_G_ENTRY, atomic_fetch_nbi, __VA_ARGS__)
#define shmem_atomic_swap_nbi(...)                                                               \
  HOSHMEM_G_CTX(HOSHMEM_G_AMO_EXT_LIST, HOSHMEM_G_ENTRY, atomic_swap_nbi, __VA_ARGS__)
#define shmem_atomic_compare_swap(...)                                                           \
  HOSHMEM_G_CTX(HOSHMEM_G_AMO_STD_LIST, HOSHMEM_G_ENTRY, atomic_compare_swap, __VA_ARGS__)
#define shmem_atomic_fetch_inc(...)                                                              \
  HOSHMEM_G_CTX(HOSHMEM_G_AMO_STD_LIST, HOSHMEM_G_ENTRY, atomic_fetch_inc, __VA_ARGS__)
#define shmem_atomic_inc(...)                                                                    \
  HOSHMEM_G_CTX(HOSHMEM_G_AMO_STD_LIST, HOSHMEM_G_ENTRY, atomic_inc, __VA_ARGS__)
#define shmem_atomic_fetch_add(...)                                                              \
  HOSHMEM_G_CTX(HOSHMEM_G_AMO_STD_LIST, HOSHMEM_G_ENTRY, atomic_fetch_add, __VA_ARGS__)
#define shmem_atomic_add(...)                                                                    \
  HOSHMEM_G_CTX(HOSHMEM_G_AMO_STD_LIST, HOSHMEM_G_ENTRY, atomic_add, __VA_ARGS__)
#define shmem_atomic_compare_swap_nbi(...)                                                       \
  HOSHMEM_G_CTX(HOSHMEM_G_AMO_STD_LIST, HOSHMEM_G_ENTRY, atomic_compare_swap_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_inc_nbi(...)                                                          \
  HOSHMEM_G_CTX(HOSHMEM_G_AMO_STD_LIST, HOSHMEM_G_ENTRY, atomic_fetch_inc_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_add_nbi(...)                                                          \
  HOSHMEM_G_CTX(HOSHMEM_G_AMO_STD_LIST, HOSHMEM_G_ENTRY, atomic_fetch_add_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_and(...)                                                              \
  HOSHMEM_G_CTX(HOSHMEM_G_AMO_BIT_LIST, HOSHMEM_G_ENTRY, atomic_fetch_and, __VA_ARGS__)
#define shmem_atomic_and(...)                                                                    \
  HOSHMEM_G_CTX(HOSHMEM_G_AMO_BIT_LIST, HOSHMEM_G_ENTRY, atomic_and, __VA_ARGS__)
#define shmem_atomic_fetch_or(...)                                                               \
  HOSHMEM_G_CTX(HOSHMEM_G_AMO_BIT_LIST, HOSHMEM_G_ENTRY, atomic_fetch_or, __VA_ARGS__)
#define shmem_atomic_or(...)                                                                     \
  HOSHMEM_G_CTX(HOSHMEM_G_AMO_BIT_LIST, HOSHMEM_G_ENTRY, atomic_or, __VA_ARGS__)
#define shmem_atomic_fetch_xor(...)                                                              \
  HOSHMEM_G_CTX(HOSHMEM_G_AMO_BIT_LIST, HOSHMEM_G_ENTRY, atomic_fetch_xor, __VA_ARGS__)
#define shmem_atomic_xor(...)                                                                    \
  HOSHMEM_G_CTX(HOSHMEM_G_AMO_BIT_LIST, HOSHMEM_G_ENTRY, atomic_xor, __VA_ARGS__)
#define shmem_atomic_fetch_and_nbi(...)                                                          \
  HOSHMEM_G_CTX(HOSHMEM_G_AMO_BIT_LIST, HOSHMEM_G_ENTRY, atomic_fetch_and_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_or_nbi(...)                                                           \
  HOSHMEM_G_CTX(HOSHMEM_G_AMO_BIT_LIST, HOSHMEM_G_ENTRY, atomic_fetch_or_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_xor_nbi(...)                                                          \
  HOSHMEM_G_CTX(HOSHMEM_G_AMO_BIT_LIST, HOSHMEM_G_ENTRY, atomic_fetch_xor_nbi, __VA_ARGS__)

/* deprecated (1.4) generic AMO names; no context overload */
#define shmem_fetch(...) HOSHMEM_G_PLAIN(HOSHMEM_G_OLD_EXT_LIST, HOSHMEM_G_ENTRY_C, fetch, __VA_ARGS__)
#define shmem_set(...) HOSHMEM_G_PLAIN(HOSHMEM_G_OLD_EXT_LIST, HOSHMEM_G_ENTRY, set, __VA_ARGS__)
#define shmem_swap(...) HOSHMEM_G_PLAIN(HOSHMEM_G_OLD_EXT_LIST, HOSHMEM_G_ENTRY, swap, __VA_ARGS__)
#define shmem_cswap(...) HOSHMEM_G_PLAIN(HOSHMEM_G_OLD_STD_LIST, HOSHMEM_G_ENTRY, cswap, __VA_ARGS__)
#define shmem_finc(...) HOSHMEM_G_PLAIN(HOSHMEM_G_OLD_STD_LIST, HOSHMEM_G_ENTRY, finc, __VA_ARGS__)
#define shmem_inc(...) HOSHMEM_G_PLAIN(HOSHMEM_G_OLD_STD_LIST, HOSHMEM_G_ENTRY, inc, __VA_ARGS__)
#define shmem_fadd(...) HOSHMEM_G_PLAIN(HOSHMEM_G_OLD_STD_LIST, HOSHMEM_G_ENTRY, fadd, __VA_ARGS__)
#define shmem_add(...) HOSHMEM_G_PLAIN(HOSHMEM_G_OLD_STD_LIST, HOSHMEM_G_ENTRY, add, __VA_ARGS__)

/* --- point-to-point synchronization ------------------------------------------------------------ */
/* The deprecated C routine shmem_wait_until(long *, int, long) is what the long* case selects
 * (shmem_long_wait_until, the same operation). */
#define shmem_wait_until(...)                                                                    \
  HOSHMEM_G_PLAIN(HOSHMEM_G_P2P_OLD_LIST, HOSHMEM_G_ENTRY, wait_until, __VA_ARGS__)
#define shmem_test(...) HOSHMEM_G_PLAIN(HOSHMEM_G_P2P_OLD_LIST, HOSHMEM_G_ENTRY, test, __VA_ARGS__)
#define shmem_wait_until_all(...)                                                                \
  HOSHMEM_G_PLAIN(HOSHMEM_G_P2P_LIST, HOSHMEM_G_ENTRY, wait_until_all, __VA_ARGS__)
#define shmem_wait_until_any(...)                                                                \
  HOSHMEM_G_PLAIN(HOSHMEM_G_P2P_LIST, HOSHMEM_G_ENTRY, wait_until_any, __VA_ARGS__)
#define shmem_wait_until_some(...)                                                               \
  HOSHMEM_G_PLAIN(HOSHMEM_G_P2P_LIST, HOSHMEM_G_ENTRY, wait_until_some, __VA_ARGS__)
#define shmem_wait_until_all_vector(...)                                                         \
  HOSHMEM_G_PLAIN(HOSHMEM_G_P2P_LIST, HOSHMEM_G_ENTRY, wait_until_all_vector, __VA_ARGS__)
#define shmem_wait_until_any_vector(...)                                                         \
  HOSHMEM_G_PLAIN(HOSHMEM_G_P2P_LIST, HOSHMEM_G_ENTRY, wait_until_any_vector, __VA_ARGS__)
#define shmem_wait_until_some_vector(...)                                                        \
  HOSHMEM_G_PLAIN(HOSHMEM_G_P2P_LIST, HOSHMEM_G_ENTRY, wait_until_some_vector, __VA_ARGS__)
#define shmem_test_all(...) HOSHMEM_G_PLAIN(HOSHMEM_G_P2P_LIST, HOSHMEM_G_ENTRY, test_all, __VA_ARGS__)
#define shmem_test_any(...) HOSHMEM_G_PLAIN(HOSHMEM_G_P2P_LIST, HOSHMEM_G_ENTRY, test_any, __VA_ARGS__)
#define shmem_test_some(...)                                                                     \
  HOSHMEM_G_PLAIN(HOSHMEM_G_P2P_LIST, HOSHMEM_G_ENTRY, test_some, __VA_ARGS__)
#define shmem_test_all_vector(...)                                                               \
  HOSHMEM_G_PLAIN(HOSHMEM_G_P2P_LIST, HOSHMEM_G_ENTRY, test_all_vector, __VA_ARGS__)
#define shmem_test_any_vector(...)                                                               \
  HOSHMEM_G_PLAIN(HOSHMEM_G_P2P_LIST, HOSHMEM_G_ENTRY, test_any_vector, __VA_ARGS__)
#define shmem_test_some_vector(...)                                                              \
  HOSHMEM_G_PLAIN(HOSHMEM_G_P2P_LIST, HOSHMEM_G_ENTRY, test_some_vector, __VA_ARGS__)

/* --- collectives ---------------------------------------------------------------------------- */
/* shmem_sync(team) is shmem_team_sync; shmem_sync(PE_start, logPE_stride, PE_size, pSync) is the
 * deprecated active-set C routine of the same name, selected by its int first argument. */
#define shmem_sync(...)                                                                          \
  _Generic(HOSHMEM_G_ARG1(__VA_ARGS__, 0), shmem_team_t: shmem_team_sync,                        \
           default: shmem_sync)(__VA_ARGS__)
#define shmem_broadcast(...) HOSHMEM_G_BY2(HOSHMEM_G_RMA_LIST, HOSHMEM_G_ENTRY, broadcast, __VA_ARGS__)
#define shmem_collect(...) HOSHMEM_G_BY2(HOSHMEM_G_RMA_LIST, HOSHMEM_G_ENTRY, collect, __VA_ARGS__)
#define shmem_fcollect(...) HOSHMEM_G_BY2(HOSHMEM_G_RMA_LIST, HOSHMEM_G_ENTRY, fcollect, __VA_ARGS__)
#define shmem_alltoall(...) HOSHMEM_G_BY2(HOSHMEM_G_RMA_LIST, HOSHMEM_G_ENTRY, alltoall, __VA_ARGS__)
#define shmem_alltoalls(...) HOSHMEM_G_BY2(HOSHMEM_G_RMA_LIST, HOSHMEM_G_ENTRY, alltoalls, __VA_ARGS__)
#define shmem_and_reduce(...)                                                                    \
  HOSHMEM_G_BY2(HOSHMEM_G_REDUCE_BIT_LIST, HOSHMEM_G_ENTRY, and_reduce, __VA_ARGS__)
#define shmem_or_reduce(...)                                                                     \
  HOSHMEM_G_BY2(HOSHMEM_G_REDUCE_BIT_LIST, HOSHMEM_G_ENTRY, or_reduce, __VA_ARGS__)
#define shmem_xor_reduce(...)                                                                    \
  HOSHMEM_G_BY2(HOSHMEM_G_REDUCE_BIT_LIST, HOSHMEM_G_ENTRY, xor_reduce, __VA_ARGS__)
#define shmem_max_reduce(...)                                                                    \
  HOSHMEM_G_BY2(HOSHMEM_G_REDUCE_MINMAX_LIST, HOSHMEM_G_ENTRY, max_reduce, __VA_ARGS__)
#define shmem_min_reduce(...)                                                                    \
  HOSHMEM_G_BY2(HOSHMEM_G_REDUCE_MINMAX_LIST, HOSHMEM_G_ENTRY, min_reduce, __VA_ARGS__)
#define shmem_sum_reduce(...)                                                                    \
  HOSHMEM_G_BY2(HOSHMEM_G_REDUCE_ARITH_LIST, HOSHMEM_G_ENTRY, sum_reduce, __VA_ARGS__)
#define shmem_prod_reduce(...)                                                                   \
  HOSHMEM_G_BY2(HOSHMEM_G_REDUCE_ARITH_LIST, HOSHMEM_G_ENTRY, prod_reduce, __VA_ARGS__)
#define shmem_sum_inscan(...)                                                                    \
  HOSHMEM_G_BY2(HOSHMEM_G_REDUCE_ARITH_LIST, HOSHMEM_G_ENTRY, sum_inscan, __VA_ARGS__)
#define shmem_sum_exscan(...)                                                                    \
  HOSHMEM_G_BY2(HOSHMEM_G_REDUCE_ARITH_LIST, HOSHMEM_G_ENTRY, sum_exscan, __VA_ARGS__)

#endif /* C11 and not C++ */
#endif /* HOSHMEM_SHMEM_GENERIC_H */
