/* Masked atomics for programs (<shmemx.h>), every PE on every PE's words at once:
 * 1. fetch_add_fields on 64-bit words of four 16-bit fields and 32-bit words of two, the fields
 *    starting 16 below their wrap: exact per-field sums, and no carry ever crosses a field
 *    (typed, generic with a fetch, and non-blocking with a NULL fetch completed by quiet; the
 *    default context and a private one).
 * 2. compare_swap_masked: each PE sets its own bit of the low half unconditionally (compare mask
 *    0) while all of them increment the high half with compare-swaps that compare the high half
 *    only: every bit set, and the high half equals the number of successful compare-swaps. */
#include <shmemx.h>

#include "shtest.h"

static uint64_t packed64;
static uint32_t packed32;
static uint64_t nbi64;
static uint64_t claim;

#define B64 0x8000800080008000ull
#define B32 0x80008000u
#define START64 0xfff0fff0fff0fff0ull
#define START32 0xfff0fff0u

int main(void) {
  shtest_init();
  const int me = shtest_me, n = shtest_npes;
  const long rounds = shtest_scaled(40);
  packed64 = START64;
  packed32 = START32;
  nbi64 = START64;
  claim = 0;
  shmem_barrier_all();

  shmem_ctx_t ctx;
  CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) == 0, "shmem_ctx_create failed");
  const uint64_t inc64 = 1ull | 1ull << 16 | 2ull << 32 | 3ull << 48;
  const uint32_t inc32 = 1u | 5u << 16;
  for (long r = 0; r < rounds; r++)
    for (int t = 0; t < n; t++) {
      const int pe = (me + t) % n;
      const uint64_t old = shmemx_uint64_atomic_fetch_add_fields(&packed64, inc64, B64, pe);
      (void)old;
      const uint32_t old32 = shmemx_uint32_atomic_fetch_add_fields(&packed32, inc32, B32, pe);
      (void)old32;
      uint64_t fetched = 0;
      if (r & 1)
        shmemx_ctx_atomic_fetch_add_fields(ctx, &nbi64, &inc64, &(uint64_t){B64}, NULL, 8, pe);
      else
        shmemx_atomic_fetch_add_fields(&nbi64, &inc64, &(uint64_t){B64}, &fetched, 8, pe);
    }
  shmem_ctx_quiet(ctx);
  shmem_quiet();
  shmem_barrier_all();
  const uint64_t adds = (uint64_t)rounds * (uint64_t)n;
  const uint64_t mult64[4] = {1, 1, 2, 3};
  for (int f = 0; f < 4; f++) {
    const uint64_t want = (0xfff0 + adds * mult64[f]) & 0xffff;
    CHECK_EQ_U("64-bit field", want, (packed64 >> (16 * f)) & 0xffff);
    CHECK_EQ_U("64-bit field (fetch or NULL fetch)", want, (nbi64 >> (16 * f)) & 0xffff);
  }
  CHECK_EQ_U("32-bit field 0", (0xfff0 + adds) & 0xffff, packed32 & 0xffff);
  CHECK_EQ_U("32-bit field 1", (0xfff0 + adds * 5) & 0xffff, packed32 >> 16);
  shmem_barrier_all();

  /* 2. bits of the low half, a counter in the high half */
  long wins = 0;
  for (int t = 0; t < n; t++) {
    const int pe = (me + t) % n;
    const uint64_t bit = 1ull << me;
    const uint64_t before = shmemx_uint64_atomic_compare_swap_masked(&claim, 0, 0, bit, bit, pe);
    CHECK((before & bit) == 0, "PE %d's bit already set on PE %d: %#llx", me, pe,
          (unsigned long long)before);
    for (long r = 0; r < rounds; r++) {
      const uint64_t hi = 0xffffffff00000000ull;
      uint64_t seen = shmemx_uint64_atomic_compare_swap_masked(&claim, 0, 0, 0, 0, pe); /* fetch */
      const uint64_t want_hi = seen & hi;
      const uint64_t next = want_hi + (1ull << 32);
      uint64_t got = 0;
      shmemx_ctx_atomic_compare_swap_masked(ctx, &claim, &want_hi, &hi, &next, &hi, &got, 8, pe);
      if ((got & hi) == want_hi) wins++;
    }
  }
  shmem_ctx_destroy(ctx);
  shmem_barrier_all();
  long *all_wins = shmem_malloc(sizeof(long));
  CHECK(all_wins != NULL, "shmem_malloc failed");
  *all_wins = 0;
  shmem_barrier_all();
  shmem_long_atomic_add(all_wins, wins, 0);
  shmem_barrier_all();
  const uint64_t all_bits = n == 64 ? ~0ull : (1ull << n) - 1;
  CHECK_EQ_U("claimed bits", all_bits, claim & 0xffffffffull);
  /* PE 0 knows the total of wins over every PE's word; each PE knows its own word's count */
  long mine_total = (long)(claim >> 32);
  long *totals = shmem_malloc(sizeof(long));
  CHECK(totals != NULL, "shmem_malloc failed");
  *totals = 0;
  shmem_barrier_all();
  shmem_long_atomic_add(totals, mine_total, 0);
  shmem_barrier_all();
  if (me == 0) CHECK_EQ_U("successful masked compare-swaps", *all_wins, *totals);
  shmem_free(totals);
  shmem_free(all_wins);
  shtest_done("amo_masked");
  return 0;
}
