/* Point-to-point synchronisation and ordering:
 * - wait_until and test for every comparison op over every p2p type (and the deprecated
 *   short/ushort forms): test is 0 before the update, wait_until returns only once the condition
 *   holds, never on the intermediate non-satisfying values the writer sets first;
 * - fence: data put before a fence is visible once the flag written after it is seen;
 * - quiet: put_nbi + quiet is complete; barrier_all completes put_nbi without an explicit quiet;
 * - sync_all: local stores made before it are visible to other PEs after it. */
#include "shtest.h"
#include "types.h"

#define NPAY 64

static long payload[NPAY];
static long ack;

static const int ops[6] = {SHMEM_CMP_EQ, SHMEM_CMP_NE, SHMEM_CMP_GT, SHMEM_CMP_GE, SHMEM_CMP_LT, SHMEM_CMP_LE};
static const char *op_names[6] = {"EQ", "NE", "GT", "GE", "LT", "LE"};
/* per op: {start value (not satisfying), compare value, intermediate (not satisfying), final} */
static const long long op_vals[6][4] = {
    {5, 9, 8, 9}, {5, 5, 5, 6}, {5, 5, 4, 6}, {6, 7, 5, 7}, {5, 5, 6, 4}, {6, 5, 7, 5},
};

static void send_payload(int round, int pe) {
  long buf[NPAY];
  for (int i = 0; i < NPAY; i++) buf[i] = (long)shtest_val(shtest_me, i, (uint64_t)round);
  shmem_long_put(payload, buf, NPAY, pe);
}

static void check_payload(const char *what, int round, int from) {
  for (int i = 0; i < NPAY; i++)
    CHECK(payload[i] == (long)shtest_val(from, i, (uint64_t)round),
          "%s: payload[%d] put before shmem_fence not visible after the flag (round %d, from PE %d):"
          " expected %ld got %ld", what, i, round, from, (long)shtest_val(from, i, (uint64_t)round), payload[i]);
}

/* mode 0: wait_until; mode 1: poll with test */
#define DEF_P2P(T, NAME, ISF)                                                                     \
  static void p2p_##NAME(T *ivar, int mode, int round0) {                                        \
    int me = shtest_me, n = shtest_npes, right = (me + 1) % n, left = (me + n - 1) % n;           \
    for (int o = 0; o < 6; o++) {                                                                 \
      int round = round0 + o;                                                                     \
      T start = (T)op_vals[o][0], cmp = (T)op_vals[o][1], mid = (T)op_vals[o][2], fin = (T)op_vals[o][3]; \
      char what[96];                                                                              \
      snprintf(what, sizeof what, "shmem_" #NAME "_%s(SHMEM_CMP_%s, %lld)",                       \
               mode ? "test loop" : "wait_until", op_names[o], (long long)cmp);                   \
      *ivar = start;                                                                              \
      shmem_barrier_all();                                                                        \
      CHECK(shmem_##NAME##_test(ivar, ops[o], cmp) == 0, "%s: test returned nonzero for value %lld", \
            what, (long long)*ivar);                                                              \
      shmem_barrier_all();                                                                        \
      /* writer: a non-satisfying value first, then payload, fence, the satisfying value */       \
      shmem_##NAME##_atomic_set(ivar, mid, right);                                                \
      shmem_quiet();                                                                              \
      send_payload(round, right);                                                                 \
      shmem_fence();                                                                              \
      SHT_REF_QUIET();                                                                            \
      shmem_##NAME##_atomic_set(ivar, fin, right);                                                \
      SHT_REF_QUIET();                                                                            \
      /* waiter */                                                                                \
      if (mode == 0) {                                                                            \
        shmem_##NAME##_wait_until(ivar, ops[o], cmp);                                             \
      } else {                                                                                    \
        while (!shmem_##NAME##_test(ivar, ops[o], cmp)) {                                         \
          SHT_REF_PROGRESS();                                                                     \
        }                                                                                         \
      }                                                                                           \
      CHECK(*ivar == fin, "%s returned with value %lld (the final value is %lld)", what,          \
            (long long)*ivar, (long long)fin);                                                    \
      check_payload(what, round, left);                                                           \
      CHECK(shmem_##NAME##_test(ivar, ops[o], cmp) == 1, "%s: test after the update returned 0", what); \
      shmem_barrier_all();                                                                        \
    }                                                                                             \
    /* signed types: negative values compare as signed */                                        \
    if ((T)-1 < (T)1) { /* signed */                                                                           \
      *ivar = 0;                                                                                  \
      shmem_barrier_all();                                                                        \
      CHECK(shmem_##NAME##_test(ivar, SHMEM_CMP_LT, (T)0) == 0, "shmem_" #NAME "_test(LT 0) on 0");  \
      shmem_barrier_all();                                                                        \
      shmem_##NAME##_atomic_set(ivar, (T)-3, right);                                              \
      SHT_REF_QUIET();                                                                            \
      shmem_##NAME##_wait_until(ivar, SHMEM_CMP_LT, (T)0);                                        \
      CHECK(*ivar == (T)-3, "shmem_" #NAME "_wait_until(LT 0): value %lld", (long long)*ivar);    \
      CHECK(shmem_##NAME##_test(ivar, SHMEM_CMP_GT, (T)-4) == 1, "shmem_" #NAME "_test(GT -4) on -3"); \
      shmem_barrier_all();                                                                        \
    }                                                                                             \
  }

#ifdef SHTEST_OSHMEM
#define P2P_TYPES SHT_P2P_TYPES_14
#else
#define P2P_TYPES SHT_P2P_TYPES
#endif
P2P_TYPES(DEF_P2P)

/* deprecated short/ushort wait_until/test (no AMOs exist for them: the writer uses put + fence) */
#define DEF_P2P_DEP(T, NAME)                                                                      \
  static void p2pdep_##NAME(T *ivar) {                                                            \
    int me = shtest_me, n = shtest_npes, right = (me + 1) % n;                                    \
    for (int o = 0; o < 6; o++) {                                                                 \
      T start = (T)op_vals[o][0], cmp = (T)op_vals[o][1], fin = (T)op_vals[o][3];                 \
      *ivar = start;                                                                              \
      shmem_barrier_all();                                                                        \
      CHECK(shmem_##NAME##_test(ivar, ops[o], cmp) == 0, "deprecated shmem_" #NAME "_test(%s) before update", op_names[o]); \
      shmem_barrier_all();                                                                        \
      shmem_##NAME##_p(ivar, fin, right);                                                         \
      shmem_##NAME##_wait_until(ivar, ops[o], cmp);                                               \
      CHECK(*ivar == fin, "deprecated shmem_" #NAME "_wait_until(%s) returned with %d", op_names[o], (int)*ivar); \
      CHECK(shmem_##NAME##_test(ivar, ops[o], cmp) == 1, "deprecated shmem_" #NAME "_test(%s) after update", op_names[o]); \
      shmem_barrier_all();                                                                        \
    }                                                                                             \
  }
DEF_P2P_DEP(short, short)
DEF_P2P_DEP(unsigned short, ushort)

static void fence_rounds(void) {
  int me = shtest_me, n = shtest_npes, right = (me + 1) % n, left = (me + n - 1) % n;
  long *flag = shmem_malloc(sizeof(long));
  CHECK(flag != NULL, "shmem_malloc failed");
  *flag = 0;
  ack = 0;
  shmem_barrier_all();
  long rounds = shtest_scaled(300);
  for (long r = 1; r <= rounds; r++) {
    /* data (blocking put in odd rounds, put_nbi in even rounds), fence, flag */
    long buf[NPAY];
    for (int i = 0; i < NPAY; i++) buf[i] = (long)shtest_val(me, i, (uint64_t)r + 1000);
    if (r & 1)
      shmem_long_put(payload, buf, NPAY, right);
    else
      shmem_long_put_nbi(payload, buf, NPAY, right);
    shmem_fence();
    SHT_REF_QUIET();
    shmem_long_atomic_set(flag, r, right);
    SHT_REF_QUIET();
    shmem_long_wait_until(flag, SHMEM_CMP_EQ, r);
    for (int i = 0; i < NPAY; i++)
      CHECK(payload[i] == (long)shtest_val(left, i, (uint64_t)r + 1000),
            "shmem_fence ordering (%s): round %ld payload[%d] from PE %d not visible when the flag is",
            (r & 1) ? "put" : "put_nbi", r, i, left);
    /* tell left it may overwrite my payload; wait until right has read the one I sent */
    shmem_long_atomic_set(&ack, r, left);
    SHT_REF_QUIET();
    shmem_long_wait_until(&ack, SHMEM_CMP_EQ, r);
  }
  shmem_barrier_all();
  /* quiet: put_nbi + quiet completes, then a flag without fence */
  for (long r = 1; r <= rounds / 4 + 1; r++) {
    long buf[NPAY];
    for (int i = 0; i < NPAY; i++) buf[i] = (long)shtest_val(me, i, (uint64_t)r + 5000);
    shmem_long_put_nbi(payload, buf, NPAY, right);
    shmem_quiet();
    shmem_long_atomic_set(flag, -r, right);
    SHT_REF_QUIET();
    shmem_long_wait_until(flag, SHMEM_CMP_EQ, -r);
    for (int i = 0; i < NPAY; i++)
      CHECK(payload[i] == (long)shtest_val(left, i, (uint64_t)r + 5000),
            "shmem_quiet: round %ld payload[%d] put_nbi by PE %d before quiet not visible", r, i, left);
    shmem_long_atomic_set(&ack, -r, left);
    SHT_REF_QUIET();
    shmem_long_wait_until(&ack, SHMEM_CMP_EQ, -r);
  }
  shmem_barrier_all();
  shmem_free(flag);
}

static void barrier_and_sync(void) {
  int me = shtest_me, n = shtest_npes, right = (me + 1) % n, left = (me + n - 1) % n;
  /* barrier_all completes put_nbi without an explicit quiet */
  for (int r = 0; r < 20; r++) {
    long buf[NPAY];
    for (int i = 0; i < NPAY; i++) buf[i] = (long)shtest_val(me, i, (uint64_t)r + 9000);
    shmem_long_put_nbi(payload, buf, NPAY, right);
    shmem_barrier_all();
    for (int i = 0; i < NPAY; i++)
      CHECK(payload[i] == (long)shtest_val(left, i, (uint64_t)r + 9000),
            "shmem_barrier_all did not complete put_nbi: round %d payload[%d] from PE %d", r, i, left);
    shmem_barrier_all();
  }
  /* sync_all publishes local stores: a late writer, everyone reads after sync_all */
  for (int r = 0; r < 10; r++) {
    int writer = r % n;
    if (me == writer) {
      if (r < 3) shtest_sleep_ms(20);
      for (int i = 0; i < NPAY; i++) payload[i] = (long)shtest_val(me, i, (uint64_t)r + 7000);
    }
    shmem_sync_all();
    long got[NPAY];
    shmem_long_get(got, payload, NPAY, writer);
    for (int i = 0; i < NPAY; i++)
      CHECK(got[i] == (long)shtest_val(writer, i, (uint64_t)r + 7000),
            "shmem_sync_all: local store by PE %d before sync_all not visible (round %d, element %d)", writer, r, i);
    shmem_sync_all();
  }
  /* barrier_all is a barrier: nobody leaves before the last one arrives */
  static long arrived;
  arrived = 0;
  shmem_barrier_all();
  if (me == n - 1) shtest_sleep_ms(50);
  shmem_long_atomic_inc(&arrived, 0);
  shmem_barrier_all();
  if (me == 0) CHECK_EQ_U("arrivals counted after shmem_barrier_all", n, shmem_long_atomic_fetch(&arrived, 0));
  (void)left;
}

int main(void) {
  shtest_init();
  void *ivar = shmem_malloc(16);
  CHECK(ivar != NULL, "shmem_malloc failed");
  int round = 1;
  for (int mode = 0; mode < 2; mode++) {
#define RUN(T, NAME, ISF)                  \
  p2p_##NAME((T *)ivar, mode, round);      \
  round += 10;
    P2P_TYPES(RUN)
  }
  p2pdep_short((short *)ivar);
  p2pdep_ushort((unsigned short *)ivar);
  fence_rounds();
  barrier_and_sync();
  shmem_free(ivar);
  shtest_done("p2p");
  return 0;
}
