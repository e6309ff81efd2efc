/* Pitfalls 1, 8 and 18: the routines with an implied quiet of the default context complete every
 * kind of default-context update issued before them, with no explicit shmem_quiet:
 *   shmem_barrier_all, the deprecated active-set shmem_barrier, shmem_malloc/shmem_free (implied
 *   barrier_all) and shmem_clear_lock (quiets before releasing).
 * Each round every PE issues, to its right neighbour, a blocking put, a put_nbi, a put_signal_nbi,
 * a non-fetching AMO, a fetching nbi AMO and a get_nbi, then calls only the routine under test; the
 * neighbour (and the issuer, for the get_nbi and fetch_nbi results) then checks every value.
 *
 * What this can observe: an implementation whose barrier (or free, or clear_lock) leaves any of
 * these updates incomplete or invisible. On hoshmem's shared-memory path every operation is done
 * when its call returns, so here the test guards the memory ordering of those routines; over a
 * deferred transport (the RDMA backends) it guards the quiet itself.
 * What it cannot observe: that barrier_all leaves *other* contexts alone (nothing is ever pending
 * on a context here), nor that sync_all does not quiet (same reason). */
#include "shtest.h"

#define NW 48

static long data_put[NW], data_nbi[NW], data_sig[NW];
static uint64_t sig;
static long amo_word, fetch_word;
static long src_get[NW];
static long psync[SHMEM_SYNC_SIZE];
static long lock;

static long v(int pe, int i, int round, int kind) { return (long)shtest_val((uint64_t)pe, (uint64_t)i, (uint64_t)(round * 8 + kind)); }

/* Issues every kind of default-context update to `right`; get_nbi/fetch_nbi land in got/fetched. */
static void issue(int round, int right, long *got, long *fetched) {
  const int me = shtest_me;
  /* nbi sources may be reused only after the completing routine: one static buffer per kind */
  static long buf[3][NW];
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < NW; i++) buf[k][i] = v(me, i, round, k);
  shmem_long_put(data_put, buf[0], NW, right);
  shmem_long_put_nbi(data_nbi, buf[1], NW, right);
  shmem_long_put_signal_nbi(data_sig, buf[2], NW, &sig, 1, SHMEM_SIGNAL_ADD, right);
  shmem_long_atomic_add(&amo_word, me + 1, right);
  shmem_long_atomic_fetch_add_nbi(fetched, &fetch_word, 1, right);
  shmem_long_get_nbi(got, src_get, NW, right);
}

/* Checks what the left neighbour issued and what this PE fetched. */
static void verify(const char *routine, int round, int left, int right, long *got, long fetched,
                   long fetch_expect) {
  for (int i = 0; i < NW; i++) {
    CHECK(data_put[i] == v(left, i, round, 0), "%s round %d: put from PE %d element %d: expected %ld got %ld",
          routine, round, left, i, v(left, i, round, 0), data_put[i]);
    CHECK(data_nbi[i] == v(left, i, round, 1), "%s round %d: put_nbi from PE %d not complete (element %d: %ld)",
          routine, round, left, i, data_nbi[i]);
    CHECK(data_sig[i] == v(left, i, round, 2),
          "%s round %d: put_signal_nbi data from PE %d not complete (element %d: %ld)", routine, round, left, i,
          data_sig[i]);
    CHECK(got[i] == v(right, i, round, 3), "%s round %d: get_nbi from PE %d not complete (element %d: %ld)",
          routine, round, right, i, got[i]);
  }
  CHECK_EQ_U("put_signal_nbi signal (one ADD per round) after the implied quiet", (uint64_t)round + 1,
             shmem_signal_fetch(&sig));
  CHECK(amo_word == (long)(round + 1) * (left + 1),
        "%s round %d: non-fetching AMOs from PE %d not complete: word %ld, expected %ld", routine, round, left,
        amo_word, (long)(round + 1) * (left + 1));
  CHECK(fetched == fetch_expect, "%s round %d: fetch_add_nbi result not delivered: %ld, expected %ld", routine,
        round, fetched, fetch_expect);
}

int main(void) {
  shtest_init();
  const int me = shtest_me, n = shtest_npes, right = (me + 1) % n, left = (me + n - 1) % n;
  for (int i = 0; i < SHMEM_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;
  for (int i = 0; i < NW; i++) src_get[i] = v(me, i, 0, 3);
  shmem_barrier_all();
  long got[NW], fetched;
  const int rounds = 4 * (int)shtest_scaled(20);
  for (int round = 0; round < rounds; round++) {
    const int how = round % 4;
    static const char *names[4] = {"shmem_barrier_all", "shmem_barrier (active set)", "shmem_malloc+free",
                                   "shmem_clear_lock"};
    fetched = -1;
    memset(got, 0, sizeof got);
    if (how == 3) shmem_set_lock(&lock); /* one PE at a time: the others wait in set_lock */
    issue(round, right, got, &fetched);
    switch (how) {
      case 0: shmem_barrier_all(); break;
      case 1: shmem_barrier(0, 0, n, psync); break;
      case 2: {
        /* free has an implied barrier_all on entry (quiets), malloc on exit */
        void *p = shmem_malloc(64);
        CHECK(p != NULL, "shmem_malloc(64) failed");
        shmem_free(p);
        break;
      }
      case 3: {
        /* clear_lock quiets the default context first; the fetched value and get_nbi are mine */
        shmem_clear_lock(&lock);
        /* my own checks need the left neighbour's updates: wait until everyone has released */
        shmem_sync_all();
        break;
      }
    }
    /* fetch_word on the right PE gets one increment per round from me only */
    verify(names[how], round, left, right, got, fetched, round);
    for (int i = 0; i < SHMEM_SYNC_SIZE; i++)
      CHECK(psync[i] == SHMEM_SYNC_VALUE, "pSync[%d] = %ld after shmem_barrier", i, psync[i]);
    /* next round's get_nbi source; every PE has read this round's before the barrier ends */
    shmem_barrier_all();
    for (int i = 0; i < NW; i++) src_get[i] = v(me, i, round + 1, 3);
    shmem_barrier_all();
  }
  shtest_done("pitfall_1_implied_quiet");
  return 0;
}
