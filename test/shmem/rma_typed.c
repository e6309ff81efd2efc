/* Typed RMA over all 24 stdrmatypes: put, get, p, g, iput, iget, put_nbi, get_nbi (+ quiet),
 * with element offsets, partial counts, zero counts and strides. Every PE writes to / reads from
 * its right neighbour; each destination element is checked exactly, and elements that must not be
 * written are checked against a sentinel that differs from the value that would have landed. */
#include "shtest.h"
#include "types.h"

#define N 37

enum { K_PUT, K_PUT_NBI, K_P, K_IPUT, K_GET, K_GET_NBI, K_G, K_IGET };

/* One step: dst[doff + k*tst] <- src[soff + k*sst] for k < nel. srcmap[p] = source index or -1. */
static void make_map(int *srcmap, int doff, int soff, int tst, int sst, int nel) {
  for (int p = 0; p < N; p++) srcmap[p] = -1;
  for (int k = 0; k < nel; k++) srcmap[doff + k * tst] = soff + k * sst;
}

#define DEF_RMA_TEST(T, NAME, ISF)                                                                  \
  static void check_##NAME(const char *what, const T *buf, const int *map, int srcpe, int salt) {   \
    for (int p = 0; p < N; p++) {                                                                   \
      T want = map[p] >= 0 ? SHT_V(T, ISF, shtest_val(srcpe, map[p], salt))                         \
                           : SHT_V(T, ISF, shtest_val(0xABC, p, salt));                             \
      CHECK(buf[p] == want, "%s (%s): element %d: expected %.21Lg got %.21Lg (source PE %d, %s)",    \
            what, #T, p, (long double)want, (long double)buf[p], srcpe,                             \
            map[p] >= 0 ? "must be written" : "must stay untouched");                              \
    }                                                                                               \
  }                                                                                                 \
  /* sentinel: differs from the value that would land there */                                     \
  static void prefill_##NAME(T *buf, const int *map, int srcpe, int salt) {                         \
    for (int p = 0; p < N; p++)                                                                     \
      buf[p] = map[p] >= 0 ? (T)(SHT_V(T, ISF, shtest_val(srcpe, map[p], salt)) + 1)                \
                           : SHT_V(T, ISF, shtest_val(0xABC, p, salt));                             \
  }                                                                                                 \
  static void step_##NAME(T *sym, int kind, const char *what, int doff, int soff, int tst, int sst, \
                          int nel, int salt) {                                                      \
    int me = shtest_me, n = shtest_npes, right = (me + 1) % n, left = (me + n - 1) % n;            \
    int map[N];                                                                                     \
    T loc[N];                                                                                       \
    make_map(map, doff, soff, tst, sst, nel);                                                       \
    if (kind <= K_IPUT) {                                                                           \
      /* my source values are tagged with me; my sym buffer receives from left */                 \
      for (int q = 0; q < N; q++) loc[q] = SHT_V(T, ISF, shtest_val(me, q, salt));                 \
      prefill_##NAME(sym, map, left, salt);                                                         \
      shmem_barrier_all();                                                                          \
      switch (kind) {                                                                               \
        case K_PUT: shmem_##NAME##_put(sym + doff, loc + soff, (size_t)nel, right); break;          \
        case K_PUT_NBI:                                                                             \
          shmem_##NAME##_put_nbi(sym + doff, loc + soff, (size_t)nel, right);                       \
          shmem_quiet();                                                                            \
          break;                                                                                    \
        case K_P:                                                                                   \
          for (int k = 0; k < nel; k++) shmem_##NAME##_p(sym + doff + k, loc[soff + k], right);     \
          break;                                                                                    \
        case K_IPUT:                                                                                \
          shmem_##NAME##_iput(sym + doff, loc + soff, tst, sst, (size_t)nel, right);                \
          break;                                                                                    \
      }                                                                                             \
      /* the source buffer must be reusable as soon as the call returns (nbi: after quiet) */     \
      for (int q = 0; q < N; q++) loc[q] = (T)0;                                                    \
      shmem_barrier_all();                                                                          \
      check_##NAME(what, sym, map, left, salt);                                                     \
    } else {                                                                                        \
      /* my sym buffer is the source, indexed by source position, read by left */                  \
      for (int q = 0; q < N; q++) sym[q] = SHT_V(T, ISF, shtest_val(me, q, salt));                 \
      prefill_##NAME(loc, map, right, salt);                                                        \
      shmem_barrier_all();                                                                          \
      switch (kind) {                                                                               \
        case K_GET: shmem_##NAME##_get(loc + doff, sym + soff, (size_t)nel, right); break;          \
        case K_GET_NBI:                                                                             \
          shmem_##NAME##_get_nbi(loc + doff, sym + soff, (size_t)nel, right);                       \
          shmem_quiet();                                                                            \
          break;                                                                                    \
        case K_G:                                                                                   \
          for (int k = 0; k < nel; k++) loc[doff + k] = shmem_##NAME##_g(sym + soff + k, right);    \
          break;                                                                                    \
        case K_IGET:                                                                                \
          shmem_##NAME##_iget(loc + doff, sym + soff, tst, sst, (size_t)nel, right);                \
          break;                                                                                    \
      }                                                                                             \
      check_##NAME(what, loc, map, right, salt);                                                    \
      shmem_barrier_all();                                                                          \
    }                                                                                               \
  }                                                                                                 \
  static void test_##NAME(void) {                                                                   \
    T *sym = (T *)shmem_malloc(sizeof(T) * N);                                                      \
    CHECK(sym != NULL, "shmem_malloc(%zu) for " #NAME " returned NULL", sizeof(T) * N);             \
    step_##NAME(sym, K_PUT, "shmem_" #NAME "_put full", 0, 0, 1, 1, N, 1);                           \
    step_##NAME(sym, K_PUT, "shmem_" #NAME "_put offset", 1, 2, 1, 1, N - 3, 2);                     \
    step_##NAME(sym, K_PUT, "shmem_" #NAME "_put 1 element", 5, 7, 1, 1, 1, 3);                      \
    step_##NAME(sym, K_PUT, "shmem_" #NAME "_put 0 elements", 0, 0, 1, 1, 0, 4);                     \
    step_##NAME(sym, K_PUT_NBI, "shmem_" #NAME "_put_nbi+quiet", 2, 1, 1, 1, N - 2, 5);              \
    step_##NAME(sym, K_PUT_NBI, "shmem_" #NAME "_put_nbi 0 elements", 0, 0, 1, 1, 0, 6);             \
    step_##NAME(sym, K_P, "shmem_" #NAME "_p", 0, 0, 1, 1, N, 7);                                    \
    step_##NAME(sym, K_IPUT, "shmem_" #NAME "_iput tst=3 sst=2", 1, 0, 3, 2, 12, 8);                 \
    step_##NAME(sym, K_IPUT, "shmem_" #NAME "_iput tst=1 sst=3", 0, 2, 1, 3, 11, 9);                 \
    step_##NAME(sym, K_IPUT, "shmem_" #NAME "_iput 0 elements", 0, 0, 2, 2, 0, 10);                  \
    step_##NAME(sym, K_GET, "shmem_" #NAME "_get full", 0, 0, 1, 1, N, 11);                          \
    step_##NAME(sym, K_GET, "shmem_" #NAME "_get offset", 2, 1, 1, 1, N - 3, 12);                    \
    step_##NAME(sym, K_GET, "shmem_" #NAME "_get 0 elements", 0, 0, 1, 1, 0, 13);                    \
    step_##NAME(sym, K_GET_NBI, "shmem_" #NAME "_get_nbi+quiet", 1, 3, 1, 1, N - 4, 14);             \
    step_##NAME(sym, K_G, "shmem_" #NAME "_g", 0, 0, 1, 1, N, 15);                                   \
    step_##NAME(sym, K_IGET, "shmem_" #NAME "_iget tst=2 sst=3", 0, 1, 2, 3, 12, 16);                \
    step_##NAME(sym, K_IGET, "shmem_" #NAME "_iget tst=3 sst=1", 2, 0, 3, 1, 11, 17);                \
    shmem_free(sym);                                                                                \
  }

SHT_RMA_TYPES(DEF_RMA_TEST)

int main(void) {
  shtest_init();
#define RUN(T, NAME, ISF) test_##NAME();
  SHT_RMA_TYPES(RUN)
  shtest_done("rma_typed");
  return 0;
}
