/* AMO suite: every OpenSHMEM atomic, fetching and not, from PE 0 on a word of the highest PE.
 *
 * Types: long and int for the standard/extended AMOs (fetch, set, swap, compare_swap, fetch_inc,
 * inc, fetch_add, add and the fetching _nbi forms); uint64 and uint32 for the bitwise AMOs (the
 * spec has no bitwise AMOs on signed long/int).
 * Results (size = bytes of the type):
 *   amo_<type>_<op>_lat   one operation at a time; non-fetching and _nbi ones followed by quiet  us
 *   amo_<type>_<op>_rate  non-fetching and _nbi only: AMO_WINDOW back to back, then quiet      Mops/s
 * Verification: the target word is reset before every run; after it, the final value, the sum
 * of fetched values (blocking fetching ops) and the last AMO_WINDOW fetched values (_nbi) are
 * compared with a local replay of the same operation sequence. */
#ifndef PERF_SUITE_AMO_H
#define PERF_SUITE_AMO_H

#include "../common/bench.h"

#define AMO_WINDOW 64
#define AMO_MASK(bits) ((bits) == 64 ? ~(uint64_t)0 : (((uint64_t)1 << (bits)) - 1))

enum amo_op { AO_FETCH, AO_SET, AO_SWAP, AO_CSWAP, AO_INC, AO_ADD, AO_AND, AO_OR, AO_XOR };
enum amo_kind { AK_F /* blocking fetching */, AK_N /* non-fetching */, AK_B /* fetching _nbi */ };

static struct {
  int peer;
  void *target;                  /* symmetric word (only the peer's copy is used) */
  uint64_t fetched[AMO_WINDOW];  /* _nbi fetch destinations, used as T[AMO_WINDOW] */
  uint64_t sum;                  /* masked sum of blocking fetched values */
} amo;

/* Operands as functions of the iteration number, shared by the loops and the replay. */
static inline uint64_t amo_opnd_add(long i) { return (uint64_t)(i % 7) + 1; }
static inline uint64_t amo_opnd_and(long i, int bits) { return ~((uint64_t)1 << (i % bits)); }
static inline uint64_t amo_opnd_or(long i, int bits) { return (uint64_t)1 << (i % bits); }
static inline uint64_t amo_opnd_xor(long i) {
  uint64_t z = (uint64_t)i * 0x9E3779B97F4A7C15ull;
  z ^= z >> 29;
  z *= 0xBF58476D1CE4E5B9ull;
  return z ^ (z >> 32);
}

static uint64_t amo_init_value(enum amo_op op, int bits) {
  if (op == AO_FETCH) return 0x5a5a5a5aull;
  if (op == AO_AND) return AMO_MASK(bits);
  return 0;
}

static uint64_t amo_apply(enum amo_op op, uint64_t s, long i, int bits) {
  uint64_t m = AMO_MASK(bits);
  switch (op) {
    case AO_FETCH: return s;
    case AO_SET:
    case AO_SWAP: return (uint64_t)(i + 1) & m;
    case AO_CSWAP: return s == ((uint64_t)i & m) ? (uint64_t)(i + 1) & m : s;
    case AO_INC: return (s + 1) & m;
    case AO_ADD: return (s + amo_opnd_add(i)) & m;
    case AO_AND: return s & amo_opnd_and(i, bits) & m;
    case AO_OR: return (s | amo_opnd_or(i, bits)) & m;
    default: return s ^ (amo_opnd_xor(i) & m);
  }
}

/* ---- loops, generated per (type, op) ------------------------------------------------------ */

#define AMO_LAT_F(E) amo_sum += (uint64_t)(E) & amo_mask;
#define AMO_LAT_N(E) E; bk_quiet();
#define AMO_LAT_B(E) { T_ *f = &fb[i % AMO_WINDOW]; E; bk_quiet(); }
#define AMO_RATE_N(E) E; if (i % AMO_WINDOW == AMO_WINDOW - 1) bk_quiet();
#define AMO_RATE_B(E) { T_ *f = &fb[i % AMO_WINDOW]; E; if (i % AMO_WINDOW == AMO_WINDOW - 1) bk_quiet(); }

#define AMO_LOOP(FN, TN, T, BITS, BODY, E)                                    \
  static void FN(struct bench_case *c, long n) {                             \
    typedef T T_;                                                            \
    (void)c;                                                                 \
    T_ *t = (T_ *)amo.target;                                                \
    T_ *fb = (T_ *)amo.fetched;                                              \
    int pe = amo.peer;                                                       \
    const uint64_t amo_mask = AMO_MASK(BITS);                                \
    uint64_t amo_sum = 0;                                                    \
    (void)fb; (void)amo_mask;                                                \
    for (long i = 0; i < n; i++) { BODY(E) }                                 \
    bk_quiet();                                                              \
    amo.sum = amo_sum;                                                       \
  }

#define AMO_DEF_F(TN, T, BITS, NAME, E) AMO_LOOP(amo_##TN##_##NAME##_lat, TN, T, BITS, AMO_LAT_F, E)
#define AMO_DEF_N(TN, T, BITS, NAME, E)                          \
  AMO_LOOP(amo_##TN##_##NAME##_lat, TN, T, BITS, AMO_LAT_N, E) \
  AMO_LOOP(amo_##TN##_##NAME##_rate, TN, T, BITS, AMO_RATE_N, E)
#define AMO_DEF_B(TN, T, BITS, NAME, E)                          \
  AMO_LOOP(amo_##TN##_##NAME##_lat, TN, T, BITS, AMO_LAT_B, E) \
  AMO_LOOP(amo_##TN##_##NAME##_rate, TN, T, BITS, AMO_RATE_B, E)
#define AMO_DEF(TN, T, BITS, NAME, OP, KIND, E) AMO_DEF_##KIND(TN, T, BITS, NAME, E)

#define AMO_RATEFN_F(fn) NULL
#define AMO_RATEFN_N(fn) fn
#define AMO_RATEFN_B(fn) fn
#define AMO_ENTRY(TN, T, BITS, NAME, OP, KIND, E) \
  {#TN, #NAME, sizeof(T), BITS, OP, AK_##KIND, amo_##TN##_##NAME##_lat, AMO_RATEFN_##KIND(amo_##TN##_##NAME##_rate)},
#define AMO_ENTRY_NA(TN, T, BITS, NAME, OP, KIND, E) \
  {#TN, #NAME, sizeof(T), BITS, OP, AK_##KIND, NULL, NULL},

/* X(TN, T, BITS, name, op, kind, expression); t = target, pe = peer, i = iteration, f = fetch slot */
#define AMO_STD(X, TN, T, BITS)                                                   \
  X(TN, T, BITS, fetch, AO_FETCH, F, BK_FETCH(TN, t, pe))                        \
  X(TN, T, BITS, set, AO_SET, N, BK_SET(TN, t, (T)(i + 1), pe))                  \
  X(TN, T, BITS, swap, AO_SWAP, F, BK_SWAP(TN, t, (T)(i + 1), pe))               \
  X(TN, T, BITS, compare_swap, AO_CSWAP, F, BK_CSWAP(TN, t, (T)i, (T)(i + 1), pe)) \
  X(TN, T, BITS, fetch_inc, AO_INC, F, BK_FINC(TN, t, pe))                       \
  X(TN, T, BITS, inc, AO_INC, N, BK_INC(TN, t, pe))                              \
  X(TN, T, BITS, fetch_add, AO_ADD, F, BK_FADD(TN, t, (T)amo_opnd_add(i), pe))   \
  X(TN, T, BITS, add, AO_ADD, N, BK_ADD(TN, t, (T)amo_opnd_add(i), pe))
#define AMO_STD_NBI(X, TN, T, BITS)                                                        \
  X(TN, T, BITS, fetch_nbi, AO_FETCH, B, BK_FETCH_NBI(TN, f, t, pe))                      \
  X(TN, T, BITS, swap_nbi, AO_SWAP, B, BK_SWAP_NBI(TN, f, t, (T)(i + 1), pe))             \
  X(TN, T, BITS, compare_swap_nbi, AO_CSWAP, B, BK_CSWAP_NBI(TN, f, t, (T)i, (T)(i + 1), pe)) \
  X(TN, T, BITS, fetch_inc_nbi, AO_INC, B, BK_FINC_NBI(TN, f, t, pe))                     \
  X(TN, T, BITS, fetch_add_nbi, AO_ADD, B, BK_FADD_NBI(TN, f, t, (T)amo_opnd_add(i), pe))
#define AMO_BIT(X, TN, T, BITS)                                                          \
  X(TN, T, BITS, fetch_and, AO_AND, F, BK_FAND(TN, t, (T)amo_opnd_and(i, BITS), pe))    \
  X(TN, T, BITS, and, AO_AND, N, BK_AND(TN, t, (T)amo_opnd_and(i, BITS), pe))           \
  X(TN, T, BITS, fetch_or, AO_OR, F, BK_FOR(TN, t, (T)amo_opnd_or(i, BITS), pe))        \
  X(TN, T, BITS, or, AO_OR, N, BK_OR(TN, t, (T)amo_opnd_or(i, BITS), pe))               \
  X(TN, T, BITS, fetch_xor, AO_XOR, F, BK_FXOR(TN, t, (T)amo_opnd_xor(i), pe))          \
  X(TN, T, BITS, xor, AO_XOR, N, BK_XOR(TN, t, (T)amo_opnd_xor(i), pe))
#define AMO_BIT_NBI(X, TN, T, BITS)                                                               \
  X(TN, T, BITS, fetch_and_nbi, AO_AND, B, BK_FAND_NBI(TN, f, t, (T)amo_opnd_and(i, BITS), pe)) \
  X(TN, T, BITS, fetch_or_nbi, AO_OR, B, BK_FOR_NBI(TN, f, t, (T)amo_opnd_or(i, BITS), pe))     \
  X(TN, T, BITS, fetch_xor_nbi, AO_XOR, B, BK_FXOR_NBI(TN, f, t, (T)amo_opnd_xor(i), pe))

AMO_STD(AMO_DEF, long, long, 64)
AMO_STD(AMO_DEF, int, int, 32)
AMO_BIT(AMO_DEF, uint64, uint64_t, 64)
AMO_BIT(AMO_DEF, uint32, uint32_t, 32)
#if BK_HAS_AMO_NBI
AMO_STD_NBI(AMO_DEF, long, long, 64)
AMO_STD_NBI(AMO_DEF, int, int, 32)
AMO_BIT_NBI(AMO_DEF, uint64, uint64_t, 64)
AMO_BIT_NBI(AMO_DEF, uint32, uint32_t, 32)
#define AMO_NBI_ENTRY AMO_ENTRY
#else
#define AMO_NBI_ENTRY AMO_ENTRY_NA /* reported as n/a: the library predates OpenSHMEM 1.5 */
#endif

struct amo_case {
  const char *type, *op;
  int size, bits;
  enum amo_op aop;
  enum amo_kind kind;
  void (*lat)(struct bench_case *, long);
  void (*rate)(struct bench_case *, long);
};

static const struct amo_case amo_cases[] = {
    AMO_STD(AMO_ENTRY, long, long, 64) AMO_STD_NBI(AMO_NBI_ENTRY, long, long, 64)
    AMO_STD(AMO_ENTRY, int, int, 32) AMO_STD_NBI(AMO_NBI_ENTRY, int, int, 32)
    AMO_BIT(AMO_ENTRY, uint64, uint64_t, 64) AMO_BIT_NBI(AMO_NBI_ENTRY, uint64, uint64_t, 64)
    AMO_BIT(AMO_ENTRY, uint32, uint32_t, 32) AMO_BIT_NBI(AMO_NBI_ENTRY, uint32, uint32_t, 32)
};

/* ---- reset and verification ---------------------------------------------------------------- */

static void amo_reset(struct bench_case *c) {
  const struct amo_case *a = (const struct amo_case *)c->arg;
  uint64_t v64 = amo_init_value(a->aop, a->bits);
  uint32_t v32 = (uint32_t)v64;
  bk_putmem(amo.target, a->size == 8 ? (const void *)&v64 : (const void *)&v32, (size_t)a->size,
            amo.peer);
  bk_quiet();
  memset(amo.fetched, 0xee, sizeof amo.fetched);
  amo.sum = 0;
}

static uint64_t amo_fetched_slot(const struct amo_case *a, long slot) {
  if (a->size == 8) return ((const uint64_t *)amo.fetched)[slot];
  return ((const uint32_t *)amo.fetched)[slot];
}

static int amo_check(struct bench_case *c, long n) {
  const struct amo_case *a = (const struct amo_case *)c->arg;
  uint64_t m = AMO_MASK(a->bits), s = amo_init_value(a->aop, a->bits), sum = 0;
  int ok = 1;
  for (long i = 0; i < n; i++) {
    uint64_t before = s;
    s = amo_apply(a->aop, s, i, a->bits);
    if (a->kind == AK_F) sum += before;
    if (a->kind == AK_B && i >= n - AMO_WINDOW && amo_fetched_slot(a, i % AMO_WINDOW) != before) {
      if (ok)
        bench_error(c->name, c->size, "fetched value #%ld is %#llx, expected %#llx", i,
                    (unsigned long long)amo_fetched_slot(a, i % AMO_WINDOW),
                    (unsigned long long)before);
      ok = 0;
    }
  }
  uint64_t fin64 = 0;
  uint32_t fin32 = 0;
  bk_getmem(a->size == 8 ? (void *)&fin64 : (void *)&fin32, amo.target, (size_t)a->size, amo.peer);
  uint64_t fin = (a->size == 8 ? fin64 : fin32) & m;
  if (fin != s) {
    bench_error(c->name, c->size, "final value %#llx, expected %#llx", (unsigned long long)fin,
                (unsigned long long)s);
    ok = 0;
  }
  if (a->kind == AK_F && amo.sum != sum) {
    bench_error(c->name, c->size, "sum of fetched values %#llx, expected %#llx",
                (unsigned long long)amo.sum, (unsigned long long)sum);
    ok = 0;
  }
  return ok;
}

static void suite_amo(void) {
  amo.peer = bk_npes() - 1;
  amo.target = bk_malloc(64);
  memset(amo.target, 0, 64);
  bk_barrier();
  if (bk_me() == 0) {
    for (size_t k = 0; k < sizeof amo_cases / sizeof *amo_cases; k++) {
      const struct amo_case *a = &amo_cases[k];
      char lat[96], rate[96];
      snprintf(lat, sizeof lat, "amo_%s_%s_lat", a->type, a->op);
      snprintf(rate, sizeof rate, "amo_%s_%s_rate", a->type, a->op);
#ifdef BK_BROKEN_CSWAP32
      if (a->aop == AO_CSWAP && a->size == 4) {
        printf("# skipped %s: %s\n", lat, BK_BROKEN_CSWAP32);
        bench_print_na(lat, a->size, UNIT_US);
        if (a->kind != AK_F) bench_print_na(rate, a->size, UNIT_MOPS);
        continue;
      }
#endif
      if (!a->lat) {
        bench_print_na(lat, a->size, UNIT_US);
        if (a->kind != AK_F) bench_print_na(rate, a->size, UNIT_MOPS);
        continue;
      }
      struct bench_case c = {lat, a->size, UNIT_US, 1.0, amo_reset, a->lat, amo_check, (void *)a, 0};
      bench_measure(&c);
      if (a->rate) {
        c.name = rate;
        c.unit = UNIT_MOPS;
        c.run = a->rate;
        bench_measure(&c);
      }
    }
  }
  bk_barrier();
}

#endif
