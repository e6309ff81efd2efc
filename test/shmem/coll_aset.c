/* The deprecated active-set collectives: shmem_barrier, shmem_sync, broadcast32/64 (the root's
 * dest is NOT updated), collect32/64, fcollect32/64, alltoall32/64, alltoalls32/64 and every
 * TYPENAME_OP_to_all of asetreducetypes (incl. complex), over active sets with strides 1, 2 and 4
 * and offsets. Sets follow each other without barriers (PEs outside a set go straight on to the
 * next one), and one pSync is reused throughout: it must read SHMEM_SYNC_VALUE after every call. */
#include <complex.h>

#include "coll_common.h"

#define MAXBYTES (1u << 18)
static char *g_src, *g_dst, *g_wrk;
static long psync[SHMEM_SYNC_SIZE];
static long flag_area[64];

struct aset {
  int start, logstride, size, me; /* me: my index in the set, -1 if not a member */
  const char *name;
};

static void check_psync(const char *what) {
  for (int i = 0; i < SHMEM_SYNC_SIZE; i++)
    CHECK(psync[i] == SHMEM_SYNC_VALUE, "%s: pSync[%d] is %ld after the call", what, i, psync[i]);
}
static int world_of(const struct aset *s, int m) { return s->start + (m << s->logstride); }

#define V(T, ISF, m, i, salt) SHT_V(T, ISF, shtest_val(m, i, salt))

#define GEN_BIT(T, ISF, m, i, salt) ((T)shtest_val(m, i, salt))
#define GEN_MINMAX(T, ISF, m, i, salt) SHT_V(T, ISF, shtest_val(m, i, salt))
#define GEN_SUM(T, ISF, m, i, salt) ((T)((int)(shtest_val(m, i, salt) % 16) - 4))
#define GEN_PROD(T, ISF, m, i, salt) \
  ((T)((((i) + (m) + (salt)) % 5 == 0 ? 2 : 1) * (((i) + 3 * (m)) % 7 == 0 ? -1 : 1)))
#define COMB_AND(a, b) a = (a) & (b)
#define COMB_OR(a, b) a = (a) | (b)
#define COMB_XOR(a, b) a = (a) ^ (b)
#define COMB_MAX(a, b) a = (b) > (a) ? (b) : (a)
#define COMB_MIN(a, b) a = (b) < (a) ? (b) : (a)
#define COMB_SUM(a, b) a = (a) + (b)
#define COMB_PROD(a, b) a = (a) * (b)

#define DEF_TO_ALL(OP, T, NAME, ISF, GEN, COMB, REAL, IMAG)                                       \
  static void to_all_##OP##_##NAME(const struct aset *s, int nel, int inplace, int salt) {        \
    T *src = (T *)g_src, *dst = inplace ? (T *)g_src : (T *)g_dst;                                \
    for (int i = 0; i < nel; i++) src[i] = GEN(T, ISF, s->me, i, salt);                           \
    shmem_##NAME##_##OP##_to_all(dst, src, nel, s->start, s->logstride, s->size, (T *)g_wrk,      \
                                 psync);                                                          \
    check_psync(#NAME "_" #OP "_to_all");                                                         \
    for (int i = 0; i < nel; i++) {                                                               \
      T acc = GEN(T, ISF, 0, i, salt);                                                            \
      for (int p = 1; p < s->size; p++) {                                                         \
        T x = GEN(T, ISF, p, i, salt);                                                            \
        COMB(acc, x);                                                                             \
      }                                                                                           \
      CHECK(dst[i] == acc, "%s_" #OP "_to_all on %s (%d PEs), nreduce %d%s: element %d: "         \
            "expected %.17Lg%+.17Lgi got %.17Lg%+.17Lgi", #NAME, s->name, s->size, nel,           \
            inplace ? " in place" : "", i, (long double)REAL(acc), (long double)IMAG(acc),        \
            (long double)REAL(dst[i]), (long double)IMAG(dst[i]));                                \
    }                                                                                             \
  }
#define ID(x) (x)
#define ZERO(x) 0
#define DEF_BIT(T, NAME, ISF)                                        \
  DEF_TO_ALL(and, T, NAME, ISF, GEN_BIT, COMB_AND, ID, ZERO)         \
  DEF_TO_ALL(or, T, NAME, ISF, GEN_BIT, COMB_OR, ID, ZERO)           \
  DEF_TO_ALL(xor, T, NAME, ISF, GEN_BIT, COMB_XOR, ID, ZERO)
#define DEF_MINMAX(T, NAME, ISF)                                     \
  DEF_TO_ALL(max, T, NAME, ISF, GEN_MINMAX, COMB_MAX, ID, ZERO)      \
  DEF_TO_ALL(min, T, NAME, ISF, GEN_MINMAX, COMB_MIN, ID, ZERO)      \
  DEF_TO_ALL(sum, T, NAME, ISF, GEN_SUM, COMB_SUM, ID, ZERO)         \
  DEF_TO_ALL(prod, T, NAME, ISF, GEN_PROD, COMB_PROD, ID, ZERO)
SHT_ASET_BIT_TYPES(DEF_BIT)
SHT_ASET_MINMAX_TYPES(DEF_MINMAX)
/* complex: Gaussian integers (sum) and products of 1, i, 2 */
#define GEN_CSUM(T, ISF, m, i, salt) \
  ((T)((int)(shtest_val(m, i, salt) % 9) - 4) + (T)((int)((shtest_val(m, i, salt) >> 8) % 9) - 4) * (T)I)
#define GEN_CPROD(T, ISF, m, i, salt) \
  (((i) + (m) + (salt)) % 4 == 0 ? (T)I : ((i) + (m) + (salt)) % 4 == 1 ? (T)2 : (T)1)
DEF_TO_ALL(sum, double _Complex, complexd, 1, GEN_CSUM, COMB_SUM, creal, cimag)
DEF_TO_ALL(prod, double _Complex, complexd, 1, GEN_CPROD, COMB_PROD, creal, cimag)
DEF_TO_ALL(sum, float _Complex, complexf, 1, GEN_CSUM, COMB_SUM, crealf, cimagf)
DEF_TO_ALL(prod, float _Complex, complexf, 1, GEN_CPROD, COMB_PROD, crealf, cimagf)

#define DEF_SIZED(B, T)                                                                           \
  static void data_##B(const struct aset *s, size_t nel, int salt) {                              \
    T *src = (T *)g_src, *dst = (T *)g_dst;                                                       \
    const int n = s->size, me = s->me, root = salt % n;                                           \
    /* broadcast: the root's dest stays as it was */                                              \
    for (size_t i = 0; i < nel; i++) src[i] = (T)shtest_val(me, i, salt);                         \
    for (size_t i = 0; i <= nel; i++) dst[i] = (T)0xEEEE;                                         \
    shmem_broadcast##B(dst, src, nel, root, s->start, s->logstride, n, psync);                    \
    check_psync("broadcast" #B);                                                                  \
    for (size_t i = 0; i <= nel; i++) {                                                           \
      T want = (me == root || i == nel) ? (T)0xEEEE : (T)shtest_val(root, i, salt);               \
      CHECK(dst[i] == want, "broadcast%d on %s, root %d, nelems %zu: dest[%zu] expected %llx got " \
            "%llx", B, s->name, root, nel, i, (unsigned long long)want,                           \
            (unsigned long long)dst[i]);                                                          \
    }                                                                                             \
    /* fcollect, collect (counts differ per member) */                                            \
    for (int fixed = 0; fixed < 2; fixed++) {                                                     \
      const size_t mine = fixed ? nel : nel + (size_t)(me % 2);                                   \
      for (size_t i = 0; i < mine; i++) src[i] = (T)shtest_val(me, i, salt + 7);                  \
      if (fixed) shmem_fcollect##B(dst, src, nel, s->start, s->logstride, n, psync);              \
      else shmem_collect##B(dst, src, mine, s->start, s->logstride, n, psync);                    \
      check_psync("collect" #B);                                                                  \
      size_t at = 0;                                                                              \
      for (int m = 0; m < n; m++) {                                                               \
        const size_t cnt = fixed ? nel : nel + (size_t)(m % 2);                                   \
        for (size_t i = 0; i < cnt; i++, at++)                                                    \
          CHECK(dst[at] == (T)shtest_val(m, i, salt + 7), "%scollect%d on %s, nelems %zu: "       \
                "member %d element %zu wrong", fixed ? "f" : "", B, s->name, nel, m, i);          \
      }                                                                                           \
    }                                                                                             \
    /* alltoall and alltoalls (dst 3, sst 2) */                                                   \
    for (int strided = 0; strided < 2; strided++) {                                               \
      const ptrdiff_t dst_st = strided ? 3 : 1, sst = strided ? 2 : 1;                            \
      for (size_t i = 0; i < nel * n; i++) src[i * sst] = (T)shtest_val(me, i, salt + 9);         \
      for (size_t i = 0; i < nel * n * dst_st; i++) dst[i] = (T)0xEEEE;                           \
      if (strided)                                                                                \
        shmem_alltoalls##B(dst, src, dst_st, sst, nel, s->start, s->logstride, n, psync);         \
      else                                                                                        \
        shmem_alltoall##B(dst, src, nel, s->start, s->logstride, n, psync);                       \
      check_psync("alltoall" #B);                                                                 \
      for (size_t i = 0; i < nel * n * dst_st; i++) {                                             \
        T want = (T)0xEEEE;                                                                       \
        if (i % dst_st == 0) {                                                                    \
          size_t l = i / dst_st;                                                                  \
          want = (T)shtest_val((int)(l / nel), me * nel + l % nel, salt + 9);                     \
        }                                                                                         \
        CHECK(dst[i] == want, "alltoall%s%d on %s, nelems %zu: dest[%zu] wrong",                  \
              strided ? "s" : "", B, s->name, nel, i);                                            \
      }                                                                                           \
    }                                                                                             \
  }
DEF_SIZED(32, uint32_t)
DEF_SIZED(64, uint64_t)

/* barrier completes my puts: after it, my right neighbour in the set sees them; sync orders
 * stores (intra-node puts are stores) */
static void barrier_and_sync(const struct aset *s, int round) {
  const int right = world_of(s, (s->me + 1) % s->size);
  const int left_m = (s->me + s->size - 1) % s->size;
  shmem_long_p(&flag_area[round % 64], 1000L * round + s->me, right);
  if (round % 2) shmem_barrier(s->start, s->logstride, s->size, psync);
  else shmem_sync(s->start, s->logstride, s->size, psync);
  check_psync(round % 2 ? "shmem_barrier" : "shmem_sync");
  CHECK(flag_area[round % 64] == 1000L * round + left_m, "%s on %s: round %d: expected %ld got %ld",
        round % 2 ? "barrier" : "sync", s->name, round, 1000L * round + left_m,
        flag_area[round % 64]);
  /* nobody may overwrite this slot before everyone has read it */
  shmem_barrier(s->start, s->logstride, s->size, psync);
}

static void run_set(struct aset *s, int salt) {
  for (int r = 0; r < 6; r++) barrier_and_sync(s, salt * 8 + r);
  static const size_t counts[] = {0, 1, 5, 3000};
  for (size_t c = 0; c < 4; c++) {
    data_32(s, counts[c], salt + (int)c);
    data_64(s, counts[c], salt + (int)c);
  }
  static const int nreds[] = {0, 1, 9, 5000};
  for (int c = 0; c < 4; c++) {
    const int nel = nreds[c];
    for (int inplace = 0; inplace < 2; inplace++) {
#define RUN_BIT(T, NAME, ISF)                                                   \
  to_all_and_##NAME(s, nel, inplace, salt + c);                                 \
  to_all_or_##NAME(s, nel, inplace, salt + c);                                  \
  to_all_xor_##NAME(s, nel, inplace, salt + c);
#define RUN_MINMAX(T, NAME, ISF)                                                \
  to_all_max_##NAME(s, nel, inplace, salt + c);                                 \
  to_all_min_##NAME(s, nel, inplace, salt + c);                                 \
  to_all_sum_##NAME(s, nel, inplace, salt + c);                                 \
  to_all_prod_##NAME(s, nel, inplace, salt + c);
      SHT_ASET_BIT_TYPES(RUN_BIT)
      SHT_ASET_MINMAX_TYPES(RUN_MINMAX)
      to_all_sum_complexd(s, nel, inplace, salt + c);
      to_all_prod_complexd(s, nel, inplace, salt + c);
      to_all_sum_complexf(s, nel, inplace, salt + c);
      to_all_prod_complexf(s, nel, inplace, salt + c);
    }
  }
}

int main(void) {
  shtest_init();
  for (int i = 0; i < SHMEM_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;
  g_src = shmem_malloc(4 * MAXBYTES);
  g_dst = shmem_malloc(4 * MAXBYTES);
  g_wrk = shmem_malloc(4 * MAXBYTES);
  CHECK(g_src && g_dst && g_wrk, "shmem_malloc failed");
  shmem_barrier_all(); /* pSync initialized everywhere before first use */
  const int n = shtest_npes;
  struct aset sets[] = {
      {0, 0, n, -1, "all PEs"},
      {n > 1 ? 1 : 0, 0, n > 1 ? n - 1 : 1, -1, "PEs 1..n-1"},
      {0, 1, (n + 1) / 2, -1, "even PEs (stride 2)"},
      {n > 1 ? 1 : 0, 1, n > 1 ? n / 2 : 1, -1, "odd PEs (stride 2)"},
      {n > 2 ? 2 : 0, 2, n > 2 ? (n - 2 + 3) / 4 : 1, -1, "PEs 2, 6, ... (stride 4)"},
  };
  for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++) {
    struct aset *s = &sets[k];
    const int off = shtest_me - s->start;
    if (off >= 0 && off % (1 << s->logstride) == 0 && (off >> s->logstride) < s->size) {
      s->me = off >> s->logstride;
      run_set(s, 10 * (int)k + 1);
    }
  }
  shmem_barrier_all();
  shmem_free(g_wrk);
  shmem_free(g_dst);
  shmem_free(g_src);
  shtest_done("coll_aset");
  return 0;
}
