/* Every AMO over every type of its table, with exact expected values: each PE drives a fixed
 * sequence of AMOs on its right neighbour's word (the only PE touching it), checks every fetched
 * value, and finally the owner checks the value the sequence left behind.
 * Standard (fetch_inc, inc, fetch_add, add, compare_swap), extended (fetch, set, swap, also float
 * and double, bit exact), bitwise (fetch_and/and/fetch_or/or/fetch_xor/xor), the fetching _nbi
 * forms (1.5), and the deprecated names (cswap/finc/inc/fadd/add/fetch/set/swap). */
#include "shtest.h"
#include "types.h"

#ifdef SHTEST_OSHMEM
/* Open MPI 4.1.4's OSHMEM smashes its own stack in 32-bit compare_swap: skip it there only. */
#define SHT_CSWAP_OK(T) (sizeof(T) != 4)
#else
#define SHT_CSWAP_OK(T) 1
#endif

#define RIGHT ((shtest_me + 1) % shtest_npes)
#define LEFT ((shtest_me + shtest_npes - 1) % shtest_npes)

/* value used by PE `pe` at step `s`, truncated to T; stays positive for signed types */
#define SV(T, pe, s) ((T)(0x01234560 + (pe) * 16 + (s) * 0x01000000))

#define CHK(T, what, want, got)                                                               \
  CHECK((T)(want) == (T)(got), "%s (" #T ") on PE %d: expected %lld (0x%llx) got %lld (0x%llx)", \
        what, RIGHT, (long long)(T)(want), (unsigned long long)(T)(want), (long long)(T)(got), \
        (unsigned long long)(T)(got))

/* ---------------- standard + extended integer AMOs ---------------- */
#define DEF_STD(T, NAME, ISF)                                                                     \
  static void std_##NAME(T *x) {                                                                  \
    int r = RIGHT;                                                                                \
    T v, f;                                                                                       \
    *x = SV(T, shtest_me, 9); /* local store, published by the barrier */                       \
    shmem_barrier_all();                                                                          \
    v = shmem_##NAME##_atomic_fetch(x, r);                                                        \
    CHK(T, "shmem_" #NAME "_atomic_fetch of a value stored before barrier", SV(T, r, 9), v);      \
    shmem_##NAME##_atomic_set(x, SV(T, shtest_me, 1), r);                                         \
    shmem_quiet();                                                                                \
    CHK(T, "shmem_" #NAME "_atomic_set then fetch", SV(T, shtest_me, 1), shmem_##NAME##_atomic_fetch(x, r)); \
    v = shmem_##NAME##_atomic_swap(x, SV(T, shtest_me, 2), r);                                    \
    CHK(T, "shmem_" #NAME "_atomic_swap returns old", SV(T, shtest_me, 1), v);                    \
    CHK(T, "shmem_" #NAME "_atomic_swap then fetch", SV(T, shtest_me, 2), shmem_##NAME##_atomic_fetch(x, r)); \
    if (SHT_CSWAP_OK(T)) {                                                                        \
    v = shmem_##NAME##_atomic_compare_swap(x, SV(T, shtest_me, 1), SV(T, shtest_me, 3), r);       \
    CHK(T, "shmem_" #NAME "_atomic_compare_swap (no match) returns old", SV(T, shtest_me, 2), v); \
    CHK(T, "shmem_" #NAME "_atomic_compare_swap (no match) leaves value", SV(T, shtest_me, 2),   \
        shmem_##NAME##_atomic_fetch(x, r));                                                       \
    v = shmem_##NAME##_atomic_compare_swap(x, SV(T, shtest_me, 2), SV(T, shtest_me, 3), r);       \
    CHK(T, "shmem_" #NAME "_atomic_compare_swap (match) returns old", SV(T, shtest_me, 2), v);   \
    } else {                                                                                      \
      shmem_##NAME##_atomic_set(x, SV(T, shtest_me, 3), r);                                       \
      shmem_quiet();                                                                              \
    }                                                                                             \
    T cur = SV(T, shtest_me, 3);                                                                  \
    CHK(T, "shmem_" #NAME "_atomic_compare_swap (match) stores", cur, shmem_##NAME##_atomic_fetch(x, r)); \
    v = shmem_##NAME##_atomic_fetch_inc(x, r);                                                    \
    CHK(T, "shmem_" #NAME "_atomic_fetch_inc returns old", cur, v);                               \
    cur = (T)(cur + 1);                                                                           \
    CHK(T, "shmem_" #NAME "_atomic_fetch_inc then fetch", cur, shmem_##NAME##_atomic_fetch(x, r)); \
    shmem_##NAME##_atomic_inc(x, r);                                                              \
    shmem_quiet();                                                                                \
    cur = (T)(cur + 1);                                                                           \
    CHK(T, "shmem_" #NAME "_atomic_inc then fetch", cur, shmem_##NAME##_atomic_fetch(x, r));      \
    v = shmem_##NAME##_atomic_fetch_add(x, (T)0x1111, r);                                         \
    CHK(T, "shmem_" #NAME "_atomic_fetch_add returns old", cur, v);                               \
    cur = (T)(cur + 0x1111);                                                                      \
    CHK(T, "shmem_" #NAME "_atomic_fetch_add then fetch", cur, shmem_##NAME##_atomic_fetch(x, r)); \
    shmem_##NAME##_atomic_add(x, (T)0x222, r);                                                    \
    shmem_quiet();                                                                                \
    cur = (T)(cur + 0x222);                                                                       \
    CHK(T, "shmem_" #NAME "_atomic_add then fetch", cur, shmem_##NAME##_atomic_fetch(x, r));      \
    v = shmem_##NAME##_atomic_fetch_add(x, (T)-0x30, r); /* negative / wrapping addend */         \
    CHK(T, "shmem_" #NAME "_atomic_fetch_add(-0x30) returns old", cur, v);                        \
    cur = (T)(cur + (T)-0x30);                                                                    \
    shmem_##NAME##_atomic_add(x, (T)-0x7, r);                                                     \
    shmem_quiet();                                                                                \
    cur = (T)(cur + (T)-0x7);                                                                     \
    CHK(T, "shmem_" #NAME "_atomic_add(-7) then fetch", cur, shmem_##NAME##_atomic_fetch(x, r));  \
    /* all-ones + 1 wraps to 0 for unsigned, -1 + 1 = 0 for signed: the full width is used */     \
    shmem_##NAME##_atomic_set(x, (T)-1, r);                                                       \
    shmem_quiet();                                                                                \
    v = shmem_##NAME##_atomic_fetch_inc(x, r);                                                    \
    CHK(T, "shmem_" #NAME "_atomic_fetch_inc of all-ones returns old", (T)-1, v);                 \
    CHK(T, "shmem_" #NAME "_atomic_fetch_inc of all-ones gives 0", 0, shmem_##NAME##_atomic_fetch(x, r)); \
    /* high bits: compare_swap must compare the full width */                                     \
    T hi = (T)((T)1 << (sizeof(T) * 8 - 2));                                                      \
    shmem_##NAME##_atomic_set(x, hi, r);                                                          \
    shmem_quiet();                                                                                \
    if (SHT_CSWAP_OK(T)) {                                                                        \
    v = shmem_##NAME##_atomic_compare_swap(x, (T)0, (T)5, r);                                     \
    CHK(T, "shmem_" #NAME "_atomic_compare_swap(cond 0) on high-bit value returns old", hi, v);   \
    CHK(T, "shmem_" #NAME "_atomic_compare_swap(cond 0) on high-bit value must not store", hi,    \
        shmem_##NAME##_atomic_fetch(x, r));                                                       \
    }                                                                                             \
    f = 0;                                                                                        \
    (void)f;                                                                                      \
    NBI_STD(T, NAME, x, r)                                                                        \
    shmem_##NAME##_atomic_set(x, SV(T, shtest_me, 7), r);                                         \
    shmem_barrier_all(); /* completes the set (barrier quiets) */                                 \
    CHECK(*x == SV(T, LEFT, 7), "final value of " #T " word after left PE %d's AMO sequence: expected %lld got %lld", \
          LEFT, (long long)SV(T, LEFT, 7), (long long)*x);                                        \
    shmem_barrier_all();                                                                          \
  }

#ifdef SHTEST_OSHMEM
#define NBI_STD(T, NAME, x, r)
#else
/* fetching _nbi forms (1.5): the fetched value is valid only after quiet */
#define NBI_STD(T, NAME, x, r)                                                                    \
  shmem_##NAME##_atomic_set(x, SV(T, shtest_me, 4), r);                                           \
  shmem_quiet();                                                                                  \
  f = 0;                                                                                          \
  shmem_##NAME##_atomic_fetch_nbi(&f, x, r);                                                      \
  shmem_quiet();                                                                                  \
  CHK(T, "shmem_" #NAME "_atomic_fetch_nbi", SV(T, shtest_me, 4), f);                            \
  f = 0;                                                                                          \
  shmem_##NAME##_atomic_swap_nbi(&f, x, SV(T, shtest_me, 5), r);                                  \
  shmem_quiet();                                                                                  \
  CHK(T, "shmem_" #NAME "_atomic_swap_nbi returns old", SV(T, shtest_me, 4), f);                 \
  f = 0;                                                                                          \
  shmem_##NAME##_atomic_compare_swap_nbi(&f, x, SV(T, shtest_me, 4), SV(T, shtest_me, 6), r);     \
  shmem_quiet();                                                                                  \
  CHK(T, "shmem_" #NAME "_atomic_compare_swap_nbi (no match) returns old", SV(T, shtest_me, 5), f); \
  f = 0;                                                                                          \
  shmem_##NAME##_atomic_compare_swap_nbi(&f, x, SV(T, shtest_me, 5), SV(T, shtest_me, 6), r);     \
  shmem_quiet();                                                                                  \
  CHK(T, "shmem_" #NAME "_atomic_compare_swap_nbi (match) returns old", SV(T, shtest_me, 5), f);  \
  CHK(T, "shmem_" #NAME "_atomic_compare_swap_nbi (match) stores", SV(T, shtest_me, 6),           \
      shmem_##NAME##_atomic_fetch(x, r));                                                         \
  f = 0;                                                                                          \
  shmem_##NAME##_atomic_fetch_inc_nbi(&f, x, r);                                                  \
  shmem_quiet();                                                                                  \
  CHK(T, "shmem_" #NAME "_atomic_fetch_inc_nbi returns old", SV(T, shtest_me, 6), f);             \
  f = 0;                                                                                          \
  shmem_##NAME##_atomic_fetch_add_nbi(&f, x, (T)0x40, r);                                         \
  shmem_quiet();                                                                                  \
  CHK(T, "shmem_" #NAME "_atomic_fetch_add_nbi returns old", (T)(SV(T, shtest_me, 6) + 1), f);    \
  CHK(T, "shmem_" #NAME "_atomic_fetch_add_nbi then fetch", (T)(SV(T, shtest_me, 6) + 0x41),      \
      shmem_##NAME##_atomic_fetch(x, r));
#endif

/* ---------------- bitwise AMOs ---------------- */
#define BITPAT(T, k) ((T)(0xF0F0A5A5C3C39696ULL * (uint64_t)(2 * (k) + 1) + (uint64_t)shtest_me))

#define DEF_BIT(T, NAME, ISF)                                                                     \
  static void bit_##NAME(T *x) {                                                                  \
    int r = RIGHT;                                                                                \
    T v, cur = BITPAT(T, 0), f;                                                                   \
    shmem_##NAME##_atomic_set(x, cur, r);                                                         \
    shmem_quiet();                                                                                \
    v = shmem_##NAME##_atomic_fetch_and(x, BITPAT(T, 1), r);                                      \
    CHK(T, "shmem_" #NAME "_atomic_fetch_and returns old", cur, v);                               \
    cur = (T)(cur & BITPAT(T, 1));                                                                \
    CHK(T, "shmem_" #NAME "_atomic_fetch_and then fetch", cur, shmem_##NAME##_atomic_fetch(x, r)); \
    shmem_##NAME##_atomic_and(x, BITPAT(T, 2), r);                                                \
    shmem_quiet();                                                                                \
    cur = (T)(cur & BITPAT(T, 2));                                                                \
    CHK(T, "shmem_" #NAME "_atomic_and then fetch", cur, shmem_##NAME##_atomic_fetch(x, r));      \
    v = shmem_##NAME##_atomic_fetch_or(x, BITPAT(T, 3), r);                                       \
    CHK(T, "shmem_" #NAME "_atomic_fetch_or returns old", cur, v);                                \
    cur = (T)(cur | BITPAT(T, 3));                                                                \
    CHK(T, "shmem_" #NAME "_atomic_fetch_or then fetch", cur, shmem_##NAME##_atomic_fetch(x, r)); \
    shmem_##NAME##_atomic_or(x, BITPAT(T, 4), r);                                                 \
    shmem_quiet();                                                                                \
    cur = (T)(cur | BITPAT(T, 4));                                                                \
    CHK(T, "shmem_" #NAME "_atomic_or then fetch", cur, shmem_##NAME##_atomic_fetch(x, r));       \
    v = shmem_##NAME##_atomic_fetch_xor(x, BITPAT(T, 5), r);                                      \
    CHK(T, "shmem_" #NAME "_atomic_fetch_xor returns old", cur, v);                               \
    cur = (T)(cur ^ BITPAT(T, 5));                                                                \
    CHK(T, "shmem_" #NAME "_atomic_fetch_xor then fetch", cur, shmem_##NAME##_atomic_fetch(x, r)); \
    shmem_##NAME##_atomic_xor(x, BITPAT(T, 6), r);                                                \
    shmem_quiet();                                                                                \
    cur = (T)(cur ^ BITPAT(T, 6));                                                                \
    CHK(T, "shmem_" #NAME "_atomic_xor then fetch", cur, shmem_##NAME##_atomic_fetch(x, r));      \
    f = 0;                                                                                        \
    (void)f;                                                                                      \
    NBI_BIT(T, NAME, x, r)                                                                        \
    shmem_barrier_all();                                                                          \
    /* the owner recomputes the left PE's sequence */                                             \
    {                                                                                             \
      int l = LEFT;                                                                               \
      T e = (T)(0xF0F0A5A5C3C39696ULL * 1u + (uint64_t)l);                                        \
      T p[10];                                                                                    \
      for (int k = 1; k < 10; k++) p[k] = (T)(0xF0F0A5A5C3C39696ULL * (uint64_t)(2 * k + 1) + (uint64_t)l); \
      e = (T)(e & p[1]); e = (T)(e & p[2]); e = (T)(e | p[3]); e = (T)(e | p[4]);                \
      e = (T)(e ^ p[5]); e = (T)(e ^ p[6]);                                                       \
      BITNBI_FINAL(T, e, p)                                                                          \
      CHECK(*x == e, "final " #T " word after left PE %d's bitwise sequence: expected 0x%llx got 0x%llx", \
            l, (unsigned long long)e, (unsigned long long)*x);                                    \
    }                                                                                             \
    shmem_barrier_all();                                                                          \
  }

#ifdef SHTEST_OSHMEM
#define NBI_BIT(T, NAME, x, r)
#define BITNBI_FINAL(T, e, p)
#else
#define NBI_BIT(T, NAME, x, r)                                                                    \
  shmem_##NAME##_atomic_fetch_and_nbi(&f, x, BITPAT(T, 7), r);                                    \
  shmem_quiet();                                                                                  \
  CHK(T, "shmem_" #NAME "_atomic_fetch_and_nbi returns old", cur, f);                             \
  cur = (T)(cur & BITPAT(T, 7));                                                                  \
  f = 0;                                                                                          \
  shmem_##NAME##_atomic_fetch_or_nbi(&f, x, BITPAT(T, 8), r);                                     \
  shmem_quiet();                                                                                  \
  CHK(T, "shmem_" #NAME "_atomic_fetch_or_nbi returns old", cur, f);                              \
  cur = (T)(cur | BITPAT(T, 8));                                                                  \
  f = 0;                                                                                          \
  shmem_##NAME##_atomic_fetch_xor_nbi(&f, x, BITPAT(T, 9), r);                                    \
  shmem_quiet();                                                                                  \
  CHK(T, "shmem_" #NAME "_atomic_fetch_xor_nbi returns old", cur, f);                             \
  cur = (T)(cur ^ BITPAT(T, 9));                                                                  \
  CHK(T, "shmem_" #NAME "_atomic_fetch_xor_nbi then fetch", cur, shmem_##NAME##_atomic_fetch(x, r));
#define BITNBI_FINAL(T, e, p) e = (T)(e & p[7]); e = (T)(e | p[8]); e = (T)(e ^ p[9]);
#endif

SHT_AMO_STD_TYPES(DEF_STD)
SHT_AMO_BIT_TYPES(DEF_BIT)

/* ---------------- float / double: fetch, set, swap, bit exact ---------------- */
#define DEF_FLT(T, NAME, UT)                                                                      \
  static void flt_##NAME(T *x) {                                                                  \
    int r = RIGHT;                                                                                \
    T vals[] = {(T)1.5 + (T)shtest_me, (T)-2.25, (T)-0.0, (T)3.0e-30, (T)1e30};                   \
    UT bits;                                                                                      \
    shmem_##NAME##_atomic_set(x, vals[0], r);                                                     \
    shmem_quiet();                                                                                \
    T v = shmem_##NAME##_atomic_fetch(x, r);                                                      \
    CHECK(memcmp(&v, &vals[0], sizeof(T)) == 0, "shmem_" #NAME "_atomic_set/fetch: expected %a got %a", \
          (double)vals[0], (double)v);                                                            \
    for (int i = 1; i < 5; i++) {                                                                 \
      v = shmem_##NAME##_atomic_swap(x, vals[i], r);                                              \
      CHECK(memcmp(&v, &vals[i - 1], sizeof(T)) == 0,                                             \
            "shmem_" #NAME "_atomic_swap #%d returns old: expected %a got %a", i, (double)vals[i - 1], (double)v); \
    }                                                                                             \
    /* a NaN with a payload must travel bit for bit */                                          \
    bits = (UT)(((UT)-1 >> 1) ^ (UT)0x5);                                                         \
    T nan_;                                                                                       \
    memcpy(&nan_, &bits, sizeof(T));                                                              \
    v = shmem_##NAME##_atomic_swap(x, nan_, r);                                                   \
    CHECK(memcmp(&v, &vals[4], sizeof(T)) == 0, "shmem_" #NAME "_atomic_swap returns old: expected %a got %a", \
          (double)vals[4], (double)v);                                                            \
    v = shmem_##NAME##_atomic_fetch(x, r);                                                        \
    CHECK(memcmp(&v, &nan_, sizeof(T)) == 0, "shmem_" #NAME "_atomic_fetch of a NaN payload changed bits"); \
    FLT_NBI(T, NAME)                                                                              \
    shmem_##NAME##_atomic_set(x, (T)-0.0, r);                                                     \
    shmem_barrier_all();                                                                          \
    T negz = (T)-0.0;                                                                             \
    CHECK(memcmp(x, &negz, sizeof(T)) == 0, "final " #T " word after left PE's set(-0.0): got %a", (double)*x); \
    shmem_barrier_all();                                                                          \
  }

#ifdef SHTEST_OSHMEM
#define FLT_NBI(T, NAME)
#else
#define FLT_NBI(T, NAME)                                                                          \
  {                                                                                               \
    T f = 0, w = (T)-7.75;                                                                        \
    shmem_##NAME##_atomic_fetch_nbi(&f, x, r);                                                    \
    shmem_quiet();                                                                                \
    CHECK(memcmp(&f, &nan_, sizeof(T)) == 0, "shmem_" #NAME "_atomic_fetch_nbi: NaN bits changed"); \
    shmem_##NAME##_atomic_swap_nbi(&f, x, w, r);                                                  \
    shmem_quiet();                                                                                \
    CHECK(memcmp(&f, &nan_, sizeof(T)) == 0, "shmem_" #NAME "_atomic_swap_nbi returned wrong old"); \
    v = shmem_##NAME##_atomic_fetch(x, r);                                                        \
    CHECK(v == w, "shmem_" #NAME "_atomic_swap_nbi then fetch: expected %a got %a", (double)w, (double)v); \
  }
#endif

DEF_FLT(float, float, uint32_t)
DEF_FLT(double, double, uint64_t)

/* ---------------- deprecated names (since 1.4, must still work) ---------------- */
#define DEF_DEP(T, NAME)                                                                          \
  static void dep_##NAME(T *x) {                                                                  \
    int r = RIGHT;                                                                                \
    shmem_##NAME##_set(x, SV(T, shtest_me, 1), r);                                                \
    shmem_quiet();                                                                                \
    CHK(T, "shmem_" #NAME "_set then shmem_" #NAME "_fetch", SV(T, shtest_me, 1), shmem_##NAME##_fetch(x, r)); \
    CHK(T, "shmem_" #NAME "_swap returns old", SV(T, shtest_me, 1), shmem_##NAME##_swap(x, SV(T, shtest_me, 2), r)); \
    if (SHT_CSWAP_OK(T)) {                                                                        \
    CHK(T, "shmem_" #NAME "_cswap (no match) returns old", SV(T, shtest_me, 2),                   \
        shmem_##NAME##_cswap(x, SV(T, shtest_me, 1), SV(T, shtest_me, 3), r));                    \
    CHK(T, "shmem_" #NAME "_cswap (match) returns old", SV(T, shtest_me, 2),                      \
        shmem_##NAME##_cswap(x, SV(T, shtest_me, 2), SV(T, shtest_me, 3), r));                    \
    } else {                                                                                      \
      shmem_##NAME##_set(x, SV(T, shtest_me, 3), r);                                              \
      shmem_quiet();                                                                              \
    }                                                                                             \
    T cur = SV(T, shtest_me, 3);                                                                  \
    CHK(T, "shmem_" #NAME "_finc returns old", cur, shmem_##NAME##_finc(x, r));                   \
    cur = (T)(cur + 1);                                                                           \
    shmem_##NAME##_inc(x, r);                                                                     \
    shmem_quiet();                                                                                \
    cur = (T)(cur + 1);                                                                           \
    CHK(T, "shmem_" #NAME "_inc then fetch", cur, shmem_##NAME##_fetch(x, r));                    \
    CHK(T, "shmem_" #NAME "_fadd returns old", cur, shmem_##NAME##_fadd(x, (T)0x100, r));         \
    cur = (T)(cur + 0x100);                                                                       \
    shmem_##NAME##_add(x, (T)-3, r);                                                              \
    shmem_quiet();                                                                                \
    cur = (T)(cur - 3);                                                                           \
    CHK(T, "shmem_" #NAME "_add(-3) then fetch", cur, shmem_##NAME##_fetch(x, r));                \
    shmem_barrier_all();                                                                          \
    CHECK(*x == (T)(SV(T, LEFT, 3) + 0x100 + 2 - 3), "final value after deprecated AMO sequence of PE %d", LEFT); \
    shmem_barrier_all();                                                                          \
  }
DEF_DEP(int, int)
DEF_DEP(long, long)
DEF_DEP(long long, longlong)

#define DEF_DEP_FLT(T, NAME)                                                                      \
  static void depf_##NAME(T *x) {                                                                 \
    int r = RIGHT;                                                                                \
    shmem_##NAME##_set(x, (T)0.5 + (T)shtest_me, r);                                              \
    shmem_quiet();                                                                                \
    T v = shmem_##NAME##_fetch(x, r);                                                             \
    CHECK(v == (T)0.5 + (T)shtest_me, "shmem_" #NAME "_set/fetch: expected %g got %g", (double)((T)0.5 + shtest_me), (double)v); \
    v = shmem_##NAME##_swap(x, (T)-8.125, r);                                                     \
    CHECK(v == (T)0.5 + (T)shtest_me, "shmem_" #NAME "_swap returns old: expected %g got %g", (double)((T)0.5 + shtest_me), (double)v); \
    shmem_barrier_all();                                                                          \
    CHECK(*x == (T)-8.125, "final " #T " after deprecated shmem_" #NAME "_swap: got %g", (double)*x); \
    shmem_barrier_all();                                                                          \
  }
DEF_DEP_FLT(float, float)
DEF_DEP_FLT(double, double)

/* ---------------- driver ---------------- */
static union {
  long double align_;
  unsigned char bytes[64];
} word; /* global (.bss), symmetric without shmem_malloc */

int main(void) {
  shtest_init();
  void *heap = shmem_malloc(64);
  CHECK(heap != NULL, "shmem_malloc(64) returned NULL");
  void *targets[2] = {heap, word.bytes};
  for (int t = 0; t < 2; t++) {
#define RUN_STD(T, NAME, ISF) std_##NAME((T *)targets[t]);
#define RUN_BIT(T, NAME, ISF) bit_##NAME((T *)targets[t]);
    SHT_AMO_STD_TYPES(RUN_STD)
    SHT_AMO_BIT_TYPES(RUN_BIT)
    flt_float((float *)targets[t]);
    flt_double((double *)targets[t]);
    dep_int((int *)targets[t]);
    dep_long((long *)targets[t]);
    dep_longlong((long long *)targets[t]);
    depf_float((float *)targets[t]);
    depf_double((double *)targets[t]);
  }
  shmem_free(heap);
  shtest_done("amo");
  return 0;
}
