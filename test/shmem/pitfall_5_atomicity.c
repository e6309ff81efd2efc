/* Pitfall 5 (and 6, last bullet): atomicity.
 * 1. AMOs through different contexts of the same atomicity domain (the default context, contexts
 *    from shmem_ctx_create with each option, from two threads each with a PRIVATE context) on one
 *    word are atomic with each other: the fetched values are all distinct and the sum is exact.
 * 2. test / test_any / signal_fetch read ivars atomically while AMOs change them: a writer thread
 *    on the left PE moves a 64-bit word back and forth across a 32-bit carry boundary
 *    (0x0_FFFFFFF0 .. 0x1_00000010) and a 32-bit word across a 16-bit one; a reader that splits
 *    the load would see a value outside that range (e.g. 0x1_FFFFFFF0 or 0x0_00000010), which
 *    the comparisons below would report.
 * Cannot observe: that WORLD and SHARED are different domains (nothing may rely on atomicity
 * across them; here they share the CPU atomics), and the undefined mixes of AMOs with plain
 * puts/stores. A torn read is unlikely on x86-64 even when broken; this part catches a reader that
 * assembles the word from narrower loads (or reads through a non-atomic memcpy). */
#include <pthread.h>
#include <stdatomic.h>

#include "shtest.h"

#define LO64 0x00000000FFFFFFF0ULL
#define HI64 0x0000000100000010ULL
#define LO32 0x0000FFF0U
#define HI32 0x00010010U

static long counter;         /* on PE 0 */
static long fetched_log[4096]; /* on PE 0: a flag per fetched value */
static uint64_t w64;
static uint32_t w32;
static uint64_t sigw;
static atomic_int stop_writer;

struct adder { shmem_ctx_t ctx; long iters; };

static void *add_thread(void *arg) {
  struct adder *a = arg;
  for (long i = 0; i < a->iters; i++) {
    long v = shmem_ctx_long_atomic_fetch_inc(a->ctx, &counter, 0);
    CHECK(v >= 0 && v < 4096, "fetched %ld out of range", v);
    long seen = shmem_ctx_long_atomic_fetch_inc(a->ctx, &fetched_log[v], 0);
    CHECK(seen == 0, "value %ld fetched twice: two AMOs on contexts of one domain were not atomic", v);
  }
  return NULL;
}

static void *writer_thread(void *arg) {
  const int right = *(int *)arg;
  while (!atomic_load(&stop_writer)) {
    shmem_uint64_atomic_set(&w64, LO64, right);
    shmem_uint32_atomic_set(&w32, LO32, right);
    shmem_signal_set(&sigw, LO64, right);
    for (int k = 0; k < 32; k++) {
      shmem_uint64_atomic_inc(&w64, right);
      shmem_uint32_atomic_inc(&w32, right);
      shmem_signal_add(&sigw, 1, right);
    }
  }
  return NULL;
}

int main(void) {
  int provided;
  CHECK(shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) == 0, "init_thread");
  shtest_after_init();
  const int me = shtest_me, n = shtest_npes, right = (me + 1) % n;
  CHECK(provided == SHMEM_THREAD_MULTIPLE, "hoshmem provides SHMEM_THREAD_MULTIPLE (got %d)", provided);

  /* --- 1. AMOs across contexts of the world domain --- */
  shmem_ctx_t c0, cp, cs, t1, t2;
  CHECK_EQ_U("ctx_create(0)", 0, shmem_ctx_create(0, &c0));
  CHECK_EQ_U("ctx_create(PRIVATE)", 0, shmem_ctx_create(SHMEM_CTX_PRIVATE, &cp));
  CHECK_EQ_U("ctx_create(SERIALIZED|NOSTORE)", 0, shmem_ctx_create(SHMEM_CTX_SERIALIZED | SHMEM_CTX_NOSTORE, &cs));
  CHECK_EQ_U("ctx_create(PRIVATE) for thread 1", 0, shmem_ctx_create(SHMEM_CTX_PRIVATE, &t1));
  CHECK_EQ_U("ctx_create(PRIVATE) for thread 2", 0, shmem_ctx_create(SHMEM_CTX_PRIVATE, &t2));
  /* 4096 values in all: 6 routes per PE */
  const long per = 4096 / (6 * n) < shtest_scaled(120) ? 4096 / (6 * n) : shtest_scaled(120);
  shmem_barrier_all();
  pthread_t th[2];
  struct adder a1 = {t1, per}, a2 = {t2, per};
  CHECK(pthread_create(&th[0], NULL, add_thread, &a1) == 0, "pthread_create");
  CHECK(pthread_create(&th[1], NULL, add_thread, &a2) == 0, "pthread_create");
  struct adder mine[4] = {{SHMEM_CTX_DEFAULT, per}, {c0, per}, {cp, per}, {cs, per}};
  for (int k = 0; k < 4; k++) add_thread(&mine[k]);
  pthread_join(th[0], NULL);
  pthread_join(th[1], NULL);
  shmem_barrier_all();
  if (me == 0) {
    CHECK_EQ_U("fetch_inc total over 6 contexts per PE", 6 * per * n, counter);
    for (long v = 0; v < 6 * per * n; v++) CHECK(fetched_log[v] == 1, "value %ld fetched %ld times", v, fetched_log[v]);
  }
  shmem_ctx_destroy(t2);
  shmem_ctx_destroy(t1);
  shmem_ctx_destroy(cs);
  shmem_ctx_destroy(cp);
  shmem_ctx_destroy(c0);

  /* --- 2. atomic reads in test / test_any / signal_fetch while AMOs update the word --- */
  w64 = LO64;
  w32 = LO32;
  sigw = LO64;
  shmem_barrier_all();
  pthread_t wt;
  int target = right;
  CHECK(pthread_create(&wt, NULL, writer_thread, &target) == 0, "pthread_create");
  const long reads = shtest_scaled(60000);
  for (long i = 0; i < reads; i++) {
    CHECK(!shmem_uint64_test(&w64, SHMEM_CMP_GT, HI64), "uint64_test saw a value above %llx (torn read)", HI64);
    CHECK(!shmem_uint64_test(&w64, SHMEM_CMP_LT, LO64), "uint64_test saw a value below %llx (torn read)", LO64);
    CHECK(!shmem_uint32_test(&w32, SHMEM_CMP_GT, HI32), "uint32_test saw a value above %x (torn read)", HI32);
    CHECK(!shmem_uint32_test(&w32, SHMEM_CMP_LT, LO32), "uint32_test saw a value below %x (torn read)", LO32);
    CHECK(shmem_uint64_test_any(&w64, 1, NULL, SHMEM_CMP_GT, HI64) == SIZE_MAX, "uint64_test_any: torn read");
    uint64_t s = shmem_signal_fetch(&sigw);
    CHECK(s >= LO64 && s <= HI64, "signal_fetch returned %llx outside [%llx, %llx] (torn read)",
          (unsigned long long)s, LO64, HI64);
    /* wait_until with an always-true condition must return (and read atomically) */
    if ((i & 1023) == 0) shmem_uint64_wait_until(&w64, SHMEM_CMP_LE, HI64);
  }
  atomic_store(&stop_writer, 1);
  pthread_join(wt, NULL);
  shmem_barrier_all();
  shtest_done("pitfall_5_atomicity");
  return 0;
}
