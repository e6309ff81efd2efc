/* Type tables of OpenSHMEM 1.5 (the spec's stdrmatypes, amo and reduction type tables) as X-macros:
 * X(C type, TYPENAME, is_floating). */
#ifndef HOSHMEM_TEST_SHMEM_TYPES_H
#define HOSHMEM_TEST_SHMEM_TYPES_H

/* stdrmatypes (24) */
#define SHT_RMA_TYPES(X)                                                                       \
  X(float, float, 1) X(double, double, 1) X(long double, longdouble, 1) X(char, char, 0)        \
  X(signed char, schar, 0) X(short, short, 0) X(int, int, 0) X(long, long, 0)                  \
  X(long long, longlong, 0) X(unsigned char, uchar, 0) X(unsigned short, ushort, 0)             \
  X(unsigned int, uint, 0) X(unsigned long, ulong, 0) X(unsigned long long, ulonglong, 0)       \
  X(int8_t, int8, 0) X(int16_t, int16, 0) X(int32_t, int32, 0) X(int64_t, int64, 0)             \
  X(uint8_t, uint8, 0) X(uint16_t, uint16, 0) X(uint32_t, uint32, 0) X(uint64_t, uint64, 0)     \
  X(size_t, size, 0) X(ptrdiff_t, ptrdiff, 0)

/* stdamotypes (12); OSHMEM (1.4) has only the first six. */
#define SHT_AMO_STD_TYPES_14(X)                                                                 \
  X(int, int, 0) X(long, long, 0) X(long long, longlong, 0) X(unsigned int, uint, 0)            \
  X(unsigned long, ulong, 0) X(unsigned long long, ulonglong, 0)
#ifdef SHTEST_OSHMEM
#define SHT_AMO_STD_TYPES(X) SHT_AMO_STD_TYPES_14(X)
#else
#define SHT_AMO_STD_TYPES(X)                                                                    \
  SHT_AMO_STD_TYPES_14(X)                                                                       \
  X(int32_t, int32, 0) X(int64_t, int64, 0) X(uint32_t, uint32, 0) X(uint64_t, uint64, 0)       \
  X(size_t, size, 0) X(ptrdiff_t, ptrdiff, 0)
#endif

/* extamotypes (14) = standard + float, double */
#define SHT_AMO_EXT_FLOAT_TYPES(X) X(float, float, 1) X(double, double, 1)

/* bitamotypes (7) */
#define SHT_AMO_BIT_TYPES(X)                                                                    \
  X(unsigned int, uint, 0) X(unsigned long, ulong, 0) X(unsigned long long, ulonglong, 0)       \
  X(int32_t, int32, 0) X(int64_t, int64, 0) X(uint32_t, uint32, 0) X(uint64_t, uint64, 0)

/* p2p sync types (current table = stdamotypes) */
#define SHT_P2P_TYPES_14(X) SHT_AMO_STD_TYPES_14(X)
#define SHT_P2P_TYPES(X)                                                                        \
  SHT_AMO_STD_TYPES_14(X)                                                                       \
  X(int32_t, int32, 0) X(int64_t, int64, 0) X(uint32_t, uint32, 0) X(uint64_t, uint64, 0)       \
  X(size_t, size, 0) X(ptrdiff_t, ptrdiff, 0)

/* Deterministic value of type T from a 64-bit pattern; floating values stay exact integers. */
#define SHT_V(T, ISF, x) ((ISF) ? (T)((uint64_t)(x) & 0xFFFFFFu) : (T)(uint64_t)(x))

#ifdef SHTEST_OSHMEM
/* OSHMEM (1.4) has bitwise AMOs for int32/int64/uint32/uint64 but not their fetch/set; for
 * validation only, route them to the same-width 1.4 types. */
#define SHT_SHIM(T, NAME, BASE, BT)                                                        \
  static inline T shmem_##NAME##_atomic_fetch(const T *x, int pe) {                        \
    return (T)shmem_##BASE##_atomic_fetch((const BT *)x, pe);                              \
  }                                                                                        \
  static inline void shmem_##NAME##_atomic_set(T *x, T v, int pe) {                        \
    shmem_##BASE##_atomic_set((BT *)x, (BT)v, pe);                                         \
  }
SHT_SHIM(int32_t, int32, int, int)
SHT_SHIM(int64_t, int64, long, long)
SHT_SHIM(uint32_t, uint32, uint, unsigned int)
SHT_SHIM(uint64_t, uint64, ulong, unsigned long)
static inline uint32_t shmem_uint32_atomic_fetch_add(uint32_t *x, uint32_t v, int pe) {
  return shmem_uint_atomic_fetch_add((unsigned int *)x, v, pe);
}
static inline void shmem_uint32_atomic_add(uint32_t *x, uint32_t v, int pe) {
  shmem_uint_atomic_add((unsigned int *)x, v, pe);
}
#endif

#endif
