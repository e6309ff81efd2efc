/* Team reductions (and/or/xor/max/min/sum/prod over every type of their teamreducetypes table,
 * complex sum/prod) and the 1.6 sum_inscan/sum_exscan, against a serial reference computed from the
 * same deterministic inputs. Sizes 0, 1, 7, across the small/large algorithm switch and 1 MiB; in
 * place and disjoint; calls back to back without barriers (a collective must not return while a
 * peer still reads its buffers); on SHMEM_TEAM_WORLD and on strided split teams. */
#include <complex.h>

#include "coll_common.h"

#define MAXBYTES (1u << 20)
static char *g_src, *g_dst;

/* input of team member `pe`, element i */
#define GEN_BIT(T, ISF, pe, i, salt) ((T)shtest_val(pe, i, salt))
#define GEN_MINMAX(T, ISF, pe, i, salt) SHT_V(T, ISF, shtest_val(pe, i, salt))
#define GEN_SUM(T, ISF, pe, i, salt) ((T)((int)(shtest_val(pe, i, salt) % 16) - 4))
/* products stay tiny: factors 1 or 2, negative (for signed types) now and then */
#define GEN_PROD(T, ISF, pe, i, salt)                                                     \
  ((T)((((i) + (pe) + (salt)) % 5 == 0 ? 2 : 1) *                                         \
       (((T)-1 < (T)0) && ((i) + 3 * (pe)) % 7 == 0 ? -1 : 1)))

#define COMB_AND(a, b) a = (a) & (b)
#define COMB_OR(a, b) a = (a) | (b)
#define COMB_XOR(a, b) a = (a) ^ (b)
#define COMB_MAX(a, b) a = (b) > (a) ? (b) : (a)
#define COMB_MIN(a, b) a = (b) < (a) ? (b) : (a)
#define COMB_SUM(a, b) a = (a) + (b)
#define COMB_PROD(a, b) a = (a) * (b)

#define DEF_RED(OP, T, NAME, ISF, GEN, COMB)                                                      \
  static void red_##OP##_##NAME(const struct sht_team *t, size_t nel, int inplace, int salt) {    \
    T *src = (T *)g_src, *dst = inplace ? (T *)g_src : (T *)g_dst;                                \
    const T sentinel = (T)0x5a;                                                                   \
    for (size_t i = 0; i < nel; i++) src[i] = GEN(T, ISF, t->me, i, salt);                        \
    if (!inplace)                                                                                 \
      for (size_t i = 0; i < nel; i++) dst[i] = sentinel;                                         \
    dst[nel] = sentinel;                                                                          \
    int rc = shmem_##NAME##_##OP##_reduce(t->team, dst, src, nel);                                \
    CHECK(rc == 0, #OP "_reduce(%s) returned %d", #NAME, rc);                                     \
    for (size_t i = 0; i < nel; i++) {                                                            \
      T acc = GEN(T, ISF, 0, i, salt);                                                            \
      for (int p = 1; p < t->n; p++) {                                                            \
        T x = GEN(T, ISF, p, i, salt);                                                            \
        COMB(acc, x);                                                                             \
      }                                                                                           \
      CHECK(dst[i] == acc,                                                                        \
            "%s_" #OP "_reduce on %s (%d PEs), nelems %zu%s: element %zu: expected %.21Lg "       \
            "got %.21Lg",                                                                         \
            #NAME, t->name, t->n, nel, inplace ? " in place" : "", i, (long double)acc,           \
            (long double)dst[i]);                                                                 \
      if (!inplace)                                                                               \
        CHECK(src[i] == GEN(T, ISF, t->me, i, salt), "%s_" #OP "_reduce changed source[%zu]",    \
              #NAME, i);                                                                          \
    }                                                                                             \
    CHECK(dst[nel] == sentinel, "%s_" #OP "_reduce wrote past nelems %zu", #NAME, nel);          \
  }

#define DEF_BIT(T, NAME, ISF)                        \
  DEF_RED(and, T, NAME, ISF, GEN_BIT, COMB_AND)      \
  DEF_RED(or, T, NAME, ISF, GEN_BIT, COMB_OR)        \
  DEF_RED(xor, T, NAME, ISF, GEN_BIT, COMB_XOR)
#define DEF_MINMAX(T, NAME, ISF)                     \
  DEF_RED(max, T, NAME, ISF, GEN_MINMAX, COMB_MAX)   \
  DEF_RED(min, T, NAME, ISF, GEN_MINMAX, COMB_MIN)
#define DEF_ARITH(T, NAME, ISF)                      \
  DEF_RED(sum, T, NAME, ISF, GEN_SUM, COMB_SUM)      \
  DEF_RED(prod, T, NAME, ISF, GEN_PROD, COMB_PROD)   \
  DEF_SCAN(T, NAME, ISF)

/* scans: member me gets the sum over members 0..me (inclusive) or 0..me-1 (exclusive; 0 on 0) */
#define DEF_SCAN(T, NAME, ISF)                                                                    \
  static void scan_##NAME(const struct sht_team *t, size_t nel, int inplace, int inclusive,      \
                          int salt) {                                                             \
    T *src = (T *)g_src, *dst = inplace ? (T *)g_src : (T *)g_dst;                                \
    for (size_t i = 0; i < nel; i++) src[i] = GEN_SUM(T, ISF, t->me, i, salt);                    \
    int rc = inclusive ? shmem_##NAME##_sum_inscan(t->team, dst, src, nel)                        \
                       : shmem_##NAME##_sum_exscan(t->team, dst, src, nel);                       \
    CHECK(rc == 0, "scan returned %d", rc);                                                       \
    const int upto = inclusive ? t->me : t->me - 1;                                               \
    for (size_t i = 0; i < nel; i++) {                                                            \
      T acc = (T)0;                                                                               \
      for (int p = 0; p <= upto; p++) {                                                           \
        T x = GEN_SUM(T, ISF, p, i, salt);                                                        \
        COMB_SUM(acc, x);                                                                         \
      }                                                                                           \
      CHECK(dst[i] == acc, "%s_sum_%s on %s (%d PEs), nelems %zu%s: element %zu: expected %.21Lg " \
            "got %.21Lg", #NAME, inclusive ? "inscan" : "exscan", t->name, t->n, nel,             \
            inplace ? " in place" : "", i, (long double)acc, (long double)dst[i]);                \
    }                                                                                             \
  }

SHT_REDUCE_BIT_TYPES(DEF_BIT)
SHT_REDUCE_MINMAX_TYPES(DEF_MINMAX)
SHT_REDUCE_MINMAX_TYPES(DEF_ARITH)

/* complex: sum of small Gaussian integers, products of 1, i and 2 */
#define DEF_COMPLEX(T, NAME)                                                                      \
  static T cgen_##NAME(int op, int pe, size_t i, int salt) {                                      \
    uint64_t v = shtest_val(pe, i, salt);                                                         \
    if (op == 0) return (T)((int)(v % 9) - 4) + (T)((int)((v >> 8) % 9) - 4) * (T)I;              \
    switch ((i + pe + salt) % 4) {                                                                \
      case 0: return (T)I;                                                                        \
      case 1: return (T)2;                                                                        \
      default: return (T)1;                                                                       \
    }                                                                                             \
  }                                                                                               \
  static void cred_##NAME(const struct sht_team *t, int op, size_t nel, int inplace, int salt) {  \
    T *src = (T *)g_src, *dst = inplace ? (T *)g_src : (T *)g_dst;                                \
    for (size_t i = 0; i < nel; i++) src[i] = cgen_##NAME(op, t->me, i, salt);                    \
    int rc = op == 0 ? shmem_##NAME##_sum_reduce(t->team, dst, src, nel)                          \
                     : shmem_##NAME##_prod_reduce(t->team, dst, src, nel);                        \
    CHECK(rc == 0, "complex reduce returned %d", rc);                                             \
    for (size_t i = 0; i < nel; i++) {                                                            \
      T acc = cgen_##NAME(op, 0, i, salt);                                                        \
      for (int p = 1; p < t->n; p++) {                                                            \
        if (op == 0) acc += cgen_##NAME(op, p, i, salt);                                          \
        else acc *= cgen_##NAME(op, p, i, salt);                                                  \
      }                                                                                           \
      CHECK(dst[i] == acc, "%s_%s_reduce on %s, nelems %zu: element %zu: expected %g%+gi got "   \
            "%g%+gi", #NAME, op ? "prod" : "sum", t->name, nel, i, (double)creal(acc),            \
            (double)cimag(acc), (double)creal(dst[i]), (double)cimag(dst[i]));                    \
    }                                                                                             \
  }                                                                                               \
  static void cscan_##NAME(const struct sht_team *t, size_t nel, int inclusive, int salt) {       \
    T *src = (T *)g_src, *dst = (T *)g_dst;                                                       \
    for (size_t i = 0; i < nel; i++) src[i] = cgen_##NAME(0, t->me, i, salt);                     \
    int rc = inclusive ? shmem_##NAME##_sum_inscan(t->team, dst, src, nel)                        \
                       : shmem_##NAME##_sum_exscan(t->team, dst, src, nel);                       \
    CHECK(rc == 0, "complex scan returned %d", rc);                                               \
    for (size_t i = 0; i < nel; i++) {                                                            \
      T acc = 0;                                                                                  \
      for (int p = 0; p <= (inclusive ? t->me : t->me - 1); p++) acc += cgen_##NAME(0, p, i, salt); \
      CHECK(dst[i] == acc, "%s scan element %zu wrong", #NAME, i);                                \
    }                                                                                             \
  }
DEF_COMPLEX(double _Complex, complexd)
DEF_COMPLEX(float _Complex, complexf)

static void run_all(const struct sht_team *t) {
  static const size_t counts[] = {0, 1, 7, 1500, 20000};
  int salt = 0;
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
    const size_t nel = counts[c];
    for (int inplace = 0; inplace < 2; inplace++) {
      salt++;
#define RUN_BIT(T, NAME, ISF)                         \
  if (nel * sizeof(T) < MAXBYTES) {                   \
    red_and_##NAME(t, nel, inplace, salt);            \
    red_or_##NAME(t, nel, inplace, salt);             \
    red_xor_##NAME(t, nel, inplace, salt);            \
  }
#define RUN_MINMAX(T, NAME, ISF)                      \
  if (nel * sizeof(T) < MAXBYTES) {                   \
    red_max_##NAME(t, nel, inplace, salt);            \
    red_min_##NAME(t, nel, inplace, salt);            \
    red_sum_##NAME(t, nel, inplace, salt);            \
    red_prod_##NAME(t, nel, inplace, salt);           \
    scan_##NAME(t, nel, inplace, 1, salt);            \
    scan_##NAME(t, nel, inplace, 0, salt);            \
  }
      SHT_REDUCE_BIT_TYPES(RUN_BIT)
      SHT_REDUCE_MINMAX_TYPES(RUN_MINMAX)
      for (int op = 0; op < 2; op++) {
        cred_complexd(t, op, nel, inplace, salt);
        cred_complexf(t, op, nel, inplace, salt);
      }
      cscan_complexd(t, nel, inplace, salt);
      cscan_complexf(t, nel, !inplace, salt);
    }
  }
  /* 1 MiB vectors, well above the scratch slot */
  const size_t big = MAXBYTES / sizeof(long) - 1;
  red_sum_long(t, big, 0, 1000);
  red_sum_long(t, big, 1, 1001);
  red_max_double(t, MAXBYTES / sizeof(double) - 1, 1, 1002);
  red_xor_uint8(t, MAXBYTES - 1, 0, 1003);
  scan_int(t, MAXBYTES / sizeof(int) - 1, 0, 1, 1004);
}

int main(void) {
  shtest_init();
  g_src = shmem_malloc(MAXBYTES + 64);
  g_dst = shmem_malloc(MAXBYTES + 64);
  CHECK(g_src && g_dst, "shmem_malloc failed");
  struct sht_team world = sht_world();
  run_all(&world);
  SHT_FOR_SPLIT_TEAMS(run_all);
  shmem_free(g_dst);
  shmem_free(g_src);
  shtest_done("coll_reduce");
  return 0;
}
