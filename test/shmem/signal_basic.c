/* Signals (OpenSHMEM 1.5 put-with-signal, 1.6 signal_add/signal_set):
 * - put_signal / put_signal_nbi over every stdrmatype, the SIZE forms and putmem, with and without
 *   a context: when the receiver sees the signal, that call's data has arrived (ping-pong rounds
 *   with a fresh pattern each round, acknowledged by signal_add so the next round cannot overtake);
 * - SHMEM_SIGNAL_SET replaces the word, SHMEM_SIGNAL_ADD adds to it;
 * - signal_wait_until returns the value that satisfied it; signal_fetch reads the word;
 * - many PEs adding to one signal (put_signal ADD, signal_add, ctx_signal_add) sum exactly;
 * - nelems == 0 still updates the signal. */
#include "shtest.h"
#include "types.h"

#define NELEMS 300 /* not a power of two: catches off-by-one sizes */

static uint64_t sig;     /* data-ready signal, written by the left neighbour */
static uint64_t ack;     /* acknowledgements, added to by the right neighbour */
static uint64_t counter; /* on PE 0: the many-writer sum */
static unsigned char rx[NELEMS * 16];

static int right_pe(void) { return (shtest_me + 1) % shtest_npes; }
static int left_pe(void) { return (shtest_me + shtest_npes - 1) % shtest_npes; }

static uint64_t rounds_done = 0;

/* One round to the right neighbour: send `bytes` of a pattern with put-signal (variant chosen by
 * `how`), wait for our own incoming round from the left, verify, acknowledge, wait for our ack. */
typedef void (*sender_fn)(void *dest, const void *src, size_t nelems, uint64_t *sig_addr,
                          uint64_t value, int op, int pe, int how);

static void round_trip(const char *what, size_t elem_size, size_t nelems, sender_fn send, int how) {
  static unsigned char tx[NELEMS * 16];
  size_t bytes = elem_size * nelems;
  uint64_t round = ++rounds_done;
  uint64_t seed = (uint64_t)shtest_me * 1000003u + round;
  shtest_fill(tx, bytes, seed);
  /* SET on even rounds, ADD of 1 on odd ones: sig == round either way */
  int op = (round & 1) ? SHMEM_SIGNAL_ADD : SHMEM_SIGNAL_SET;
  uint64_t value = op == SHMEM_SIGNAL_SET ? round : 1;
  send(rx, tx, nelems, &sig, value, op, right_pe(), how);
  uint64_t got = shmem_signal_wait_until(&sig, SHMEM_CMP_GE, round);
  CHECK_EQ_U(what, round, got);
  CHECK_EQ_U("signal_fetch after wait", round, shmem_signal_fetch(&sig));
  uint64_t left_seed = (uint64_t)left_pe() * 1000003u + round;
  size_t bad = shtest_verify(rx, bytes, left_seed);
  CHECK(bad == bytes, "%s (%zu x %zu bytes, round %llu): byte %zu not delivered when the signal was seen",
        what, nelems, elem_size, (unsigned long long)round, bad);
  /* the left neighbour may send the next round only after we checked this one */
  shmem_signal_add(&ack, 1, left_pe());
  uint64_t a = shmem_signal_wait_until(&ack, SHMEM_CMP_EQ, round);
  CHECK_EQ_U("ack count", round, a);
}

/* how: 0 blocking, 1 nbi (+quiet), 2 ctx blocking, 3 ctx nbi (+ctx quiet) */
#define DEF_SENDER(T, N, ISF)                                                                        \
  static void send_##N(void *dest, const void *src, size_t nelems, uint64_t *sa, uint64_t v, int op, \
                       int pe, int how) {                                                            \
    switch (how) {                                                                                   \
      case 0: shmem_##N##_put_signal((T *)dest, (const T *)src, nelems, sa, v, op, pe); break;      \
      case 1: shmem_##N##_put_signal_nbi((T *)dest, (const T *)src, nelems, sa, v, op, pe);         \
        shmem_quiet(); break;                                                                        \
      case 2: shmem_ctx_##N##_put_signal(SHMEM_CTX_DEFAULT, (T *)dest, (const T *)src, nelems, sa, v, \
                                         op, pe); break;                                             \
      default: shmem_ctx_##N##_put_signal_nbi(SHMEM_CTX_DEFAULT, (T *)dest, (const T *)src, nelems, \
                                              sa, v, op, pe);                                        \
        shmem_quiet(); break;                                                                        \
    }                                                                                                \
  }
SHT_RMA_TYPES(DEF_SENDER)

#define DEF_SIZED_SENDER(B)                                                                          \
  static void send_##B(void *dest, const void *src, size_t nelems, uint64_t *sa, uint64_t v, int op, \
                       int pe, int how) {                                                            \
    switch (how) {                                                                                   \
      case 0: shmem_put##B##_signal(dest, src, nelems, sa, v, op, pe); break;                        \
      case 1: shmem_put##B##_signal_nbi(dest, src, nelems, sa, v, op, pe); shmem_quiet(); break;     \
      case 2: shmem_ctx_put##B##_signal(SHMEM_CTX_DEFAULT, dest, src, nelems, sa, v, op, pe); break; \
      default: shmem_ctx_put##B##_signal_nbi(SHMEM_CTX_DEFAULT, dest, src, nelems, sa, v, op, pe);   \
        shmem_quiet(); break;                                                                        \
    }                                                                                                \
  }
DEF_SIZED_SENDER(8)
DEF_SIZED_SENDER(16)
DEF_SIZED_SENDER(32)
DEF_SIZED_SENDER(64)
DEF_SIZED_SENDER(128)

static void send_mem(void *dest, const void *src, size_t nelems, uint64_t *sa, uint64_t v, int op,
                     int pe, int how) {
  switch (how) {
    case 0: shmem_putmem_signal(dest, src, nelems, sa, v, op, pe); break;
    case 1: shmem_putmem_signal_nbi(dest, src, nelems, sa, v, op, pe); shmem_quiet(); break;
    case 2: shmem_ctx_putmem_signal(SHMEM_CTX_DEFAULT, dest, src, nelems, sa, v, op, pe); break;
    default: shmem_ctx_putmem_signal_nbi(SHMEM_CTX_DEFAULT, dest, src, nelems, sa, v, op, pe);
      shmem_quiet(); break;
  }
}

static void test_round_trips(void) {
  static const char *hows[4] = {"put_signal", "put_signal_nbi", "ctx_put_signal", "ctx_put_signal_nbi"};
  char what[128];
  for (int how = 0; how < 4; how++) {
#define RUN_TYPED(T, N, ISF)                                                          \
  snprintf(what, sizeof what, "shmem_%s (" #N "): signal_wait_until value", hows[how]); \
  round_trip(what, sizeof(T), NELEMS, send_##N, how);
    SHT_RMA_TYPES(RUN_TYPED)
#define RUN_SIZED(B)                                                                      \
  snprintf(what, sizeof what, "shmem_%s (SIZE " #B "): signal_wait_until value", hows[how]); \
  round_trip(what, (B) / 8, NELEMS, send_##B, how);
    RUN_SIZED(8) RUN_SIZED(16) RUN_SIZED(32) RUN_SIZED(64) RUN_SIZED(128)
    snprintf(what, sizeof what, "shmem_%s (mem): signal_wait_until value", hows[how]);
    round_trip(what, 1, NELEMS * 16, send_mem, how);
    snprintf(what, sizeof what, "shmem_%s (mem, nelems 0): signal_wait_until value", hows[how]);
    round_trip(what, 1, 0, send_mem, how);
  }
  /* streaming: many rounds of the same form back to back */
  long n = shtest_scaled(400);
  for (long i = 0; i < n; i++) round_trip("streamed putmem_signal", 1, 1 + (size_t)(i * 37) % (NELEMS * 16), send_mem, (int)(i & 3));
}

/* SET replaces, ADD adds, and signal_wait_until returns the satisfying value. */
static void test_set_vs_add(void) {
  shmem_barrier_all();
  sig = 0;
  shmem_barrier_all();
  int r = right_pe();
  static long one = 42;
  static long landing;
  shmem_long_put_signal(&landing, &one, 1, &sig, 1000, SHMEM_SIGNAL_SET, r);
  shmem_long_put_signal(&landing, &one, 1, &sig, 5, SHMEM_SIGNAL_ADD, r);
  shmem_long_put_signal(&landing, &one, 1, &sig, 7, SHMEM_SIGNAL_ADD, r);
  uint64_t got = shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 1012);
  CHECK_EQ_U("SET 1000 then ADD 5 then ADD 7", 1012, got);
  shmem_barrier_all();
  shmem_long_put_signal(&landing, &one, 1, &sig, 3, SHMEM_SIGNAL_SET, r);
  got = shmem_signal_wait_until(&sig, SHMEM_CMP_LT, 1000);
  CHECK_EQ_U("SET 3 replaces 1012 (wait LT 1000 returns it)", 3, got);
  shmem_barrier_all();
  /* 1.6 signal_set / signal_add and their ctx forms */
  shmem_signal_set(&sig, 100, r);
  shmem_signal_add(&sig, 20, r);
  shmem_ctx_signal_add(SHMEM_CTX_DEFAULT, &sig, 3, r);
  got = shmem_signal_wait_until(&sig, SHMEM_CMP_GE, 123);
  CHECK_EQ_U("signal_set 100, signal_add 20, ctx_signal_add 3", 123, got);
  shmem_barrier_all();
  shmem_ctx_signal_set(SHMEM_CTX_DEFAULT, &sig, 9, r);
  got = shmem_signal_wait_until(&sig, SHMEM_CMP_NE, 123);
  CHECK_EQ_U("ctx_signal_set 9 (wait NE 123 returns it)", 9, got);
  CHECK_EQ_U("signal_fetch", 9, shmem_signal_fetch(&sig));
  /* the returned value is the one compared, not a later read: the writer jumps straight to a
   * value above the threshold */
  shmem_barrier_all();
  sig = 0;
  shmem_barrier_all();
  if (shtest_me == 0) shtest_sleep_ms(20); /* let the right neighbour of PE 0 start waiting */
  shmem_signal_set(&sig, 77 + (uint64_t)shtest_me, r);
  got = shmem_signal_wait_until(&sig, SHMEM_CMP_GT, 50);
  CHECK_EQ_U("signal_wait_until(GT 50) after SET", 77 + (uint64_t)left_pe(), got);
  shmem_barrier_all();
}

/* Every PE adds to one signal on PE 0 (and on every PE) by three routes. */
static void test_many_adders(void) {
  shmem_barrier_all();
  counter = 0;
  sig = 0;
  shmem_barrier_all();
  long k = shtest_scaled(200);
  static long slot[8 * 1024];
  long mine = shtest_me + 1;
  for (long i = 0; i < k; i++) {
    shmem_signal_add(&counter, (uint64_t)mine, 0);
    shmem_long_put_signal_nbi(&slot[shtest_me], &mine, 1, &counter, 1, SHMEM_SIGNAL_ADD, 0);
    shmem_ctx_signal_add(SHMEM_CTX_DEFAULT, &counter, 2, 0);
  }
  shmem_quiet();
  /* everybody also tells every PE it is done, through put_signal ADD into its own slot */
  for (int pe = 0; pe < shtest_npes; pe++)
    shmem_long_put_signal(&slot[shtest_me], &mine, 1, &sig, 1, SHMEM_SIGNAL_ADD, pe);
  uint64_t n = (uint64_t)shtest_npes;
  uint64_t got = shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, n);
  CHECK_EQ_U("completion signal from every PE", n, got);
  for (int pe = 0; pe < shtest_npes; pe++)
    CHECK(slot[pe] == pe + 1, "slot %d put with the signal: expected %d got %ld", pe, pe + 1, slot[pe]);
  if (shtest_me == 0) {
    uint64_t expect = (uint64_t)k * (n * (n + 1) / 2 + 3 * n);
    uint64_t c = shmem_signal_wait_until(&counter, SHMEM_CMP_GE, expect);
    CHECK_EQ_U("sum of signal_add / put_signal ADD / ctx_signal_add from every PE", expect, c);
  }
  shmem_barrier_all();
}

int main(void) {
  shtest_init();
  test_round_trips();
  test_set_vs_add();
  test_many_adders();
  shtest_done("signal_basic");
  return 0;
}
