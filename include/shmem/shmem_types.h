/*
 * hoshmem: the OpenSHMEM type tables, as X-macros.
 *
 * Every typed family of the API (declarations in shmem.h and pshmem.h, definitions in lib/api/)
 * is generated from these lists, so a type is added or removed in exactly one place.
 * Each list calls X(P, TYPE, TYPENAME) where P is passed through unchanged (the name prefix:
 * shmem or pshmem). Source: OpenSHMEM 1.5/1.6 rma_intro.tex, atomics_intro.tex.
 */
#ifndef HOSHMEM_SHMEM_TYPES_H
#define HOSHMEM_SHMEM_TYPES_H

/* stdrmatypes: put, get, p, g, iput, iget, put_nbi, get_nbi */
#define HOSHMEM_RMA_TYPES(X, P)                                                      \
  X(P, float, float) X(P, double, double) X(P, long double, longdouble)              \
  X(P, char, char) X(P, signed char, schar) X(P, short, short) X(P, int, int)        \
  X(P, long, long) X(P, long long, longlong) X(P, unsigned char, uchar)              \
  X(P, unsigned short, ushort) X(P, unsigned int, uint) X(P, unsigned long, ulong)   \
  X(P, unsigned long long, ulonglong) X(P, int8_t, int8) X(P, int16_t, int16)        \
  X(P, int32_t, int32) X(P, int64_t, int64) X(P, uint8_t, uint8)                     \
  X(P, uint16_t, uint16) X(P, uint32_t, uint32) X(P, uint64_t, uint64)               \
  X(P, size_t, size) X(P, ptrdiff_t, ptrdiff)

/* SIZE forms (bits): put8..put128, get, iput, iget, nbi. X(P, BITS) */
#define HOSHMEM_RMA_SIZES(X, P) X(P, 8) X(P, 16) X(P, 32) X(P, 64) X(P, 128)

/* stdamotypes: compare_swap, fetch_inc, inc, fetch_add, add (+ _nbi); also wait_until/test */
#define HOSHMEM_AMO_STD_TYPES(X, P)                                                  \
  X(P, int, int) X(P, long, long) X(P, long long, longlong) X(P, unsigned int, uint) \
  X(P, unsigned long, ulong) X(P, unsigned long long, ulonglong)                     \
  X(P, int32_t, int32) X(P, int64_t, int64) X(P, uint32_t, uint32)                   \
  X(P, uint64_t, uint64) X(P, size_t, size) X(P, ptrdiff_t, ptrdiff)

/* extamotypes: fetch, set, swap (+ _nbi) = standard + float, double */
#define HOSHMEM_AMO_EXT_TYPES(X, P) \
  X(P, float, float) X(P, double, double) HOSHMEM_AMO_STD_TYPES(X, P)

/* bitamotypes: fetch_and/and/fetch_or/or/fetch_xor/xor (+ _nbi) */
#define HOSHMEM_AMO_BIT_TYPES(X, P)                                                  \
  X(P, unsigned int, uint) X(P, unsigned long, ulong)                                \
  X(P, unsigned long long, ulonglong) X(P, int32_t, int32) X(P, int64_t, int64)      \
  X(P, uint32_t, uint32) X(P, uint64_t, uint64)

/* point-to-point sync (wait_until, test) = stdamotypes; deprecated short/ushort forms below */
#define HOSHMEM_P2P_TYPES(X, P) HOSHMEM_AMO_STD_TYPES(X, P)
#define HOSHMEM_P2P_DEPRECATED_TYPES(X, P) X(P, short, short) X(P, unsigned short, ushort)

/* deprecated (1.4) AMO names: shmem_TYPENAME_{cswap,finc,inc,fadd,add} and {fetch,set,swap} */
#define HOSHMEM_AMO_OLD_STD_TYPES(X, P) X(P, int, int) X(P, long, long) X(P, long long, longlong)
#define HOSHMEM_AMO_OLD_EXT_TYPES(X, P) \
  X(P, float, float) X(P, double, double) HOSHMEM_AMO_OLD_STD_TYPES(X, P)

/* deprecated shmem_TYPENAME_wait (1.4) */
#define HOSHMEM_WAIT_OLD_TYPES(X, P) \
  X(P, short, short) X(P, int, int) X(P, long, long) X(P, long long, longlong)

/* --- reductions (collectives) --------------------------------------------------------------- */
/* teamreducetypes: and/or/xor_reduce (unsigned, fixed-width and size only) */
#define HOSHMEM_REDUCE_BIT_TYPES(X, P)                                                    \
  X(P, unsigned char, uchar) X(P, unsigned short, ushort) X(P, unsigned int, uint)        \
  X(P, unsigned long, ulong) X(P, unsigned long long, ulonglong) X(P, int8_t, int8)       \
  X(P, int16_t, int16) X(P, int32_t, int32) X(P, int64_t, int64) X(P, uint8_t, uint8)     \
  X(P, uint16_t, uint16) X(P, uint32_t, uint32) X(P, uint64_t, uint64) X(P, size_t, size)

/* teamreducetypes: max/min_reduce */
#define HOSHMEM_REDUCE_MINMAX_TYPES(X, P)                                                 \
  X(P, char, char) X(P, signed char, schar) X(P, short, short) X(P, int, int)             \
  X(P, long, long) X(P, long long, longlong) X(P, ptrdiff_t, ptrdiff)                     \
  X(P, unsigned char, uchar) X(P, unsigned short, ushort) X(P, unsigned int, uint)        \
  X(P, unsigned long, ulong) X(P, unsigned long long, ulonglong) X(P, int8_t, int8)       \
  X(P, int16_t, int16) X(P, int32_t, int32) X(P, int64_t, int64) X(P, uint8_t, uint8)     \
  X(P, uint16_t, uint16) X(P, uint32_t, uint32) X(P, uint64_t, uint64) X(P, size_t, size) \
  X(P, float, float) X(P, double, double) X(P, long double, longdouble)

/* teamreducetypes: sum/prod_reduce and the 1.6 sum_inscan/sum_exscan = min/max + complex */
#define HOSHMEM_REDUCE_ARITH_TYPES(X, P)                                                  \
  HOSHMEM_REDUCE_MINMAX_TYPES(X, P)                                                       \
  X(P, double _Complex, complexd) X(P, float _Complex, complexf)

/* asetreducetypes: deprecated active-set TYPENAME_{and,or,xor}_to_all */
#define HOSHMEM_ASET_REDUCE_BIT_TYPES(X, P) \
  X(P, short, short) X(P, int, int) X(P, long, long) X(P, long long, longlong)
/* asetreducetypes: TYPENAME_{max,min}_to_all */
#define HOSHMEM_ASET_REDUCE_MINMAX_TYPES(X, P) \
  HOSHMEM_ASET_REDUCE_BIT_TYPES(X, P)          \
  X(P, float, float) X(P, double, double) X(P, long double, longdouble)
/* asetreducetypes: TYPENAME_{sum,prod}_to_all */
#define HOSHMEM_ASET_REDUCE_ARITH_TYPES(X, P) \
  HOSHMEM_ASET_REDUCE_MINMAX_TYPES(X, P)      \
  X(P, double _Complex, complexd) X(P, float _Complex, complexf)

#endif /* HOSHMEM_SHMEM_TYPES_H */
