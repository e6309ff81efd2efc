/* Masked atomics for programs (<shmemx.h>), every PE on every PE's words at once:
 * 1. fetch_add_fields on 64-bit words of four 16-bit fields and 32-bit words of two, the fields
 *    starting 16 below their wrap: exact per-field sums, and no carry ever crosses a field
 *    (typed, generic with a fetch, and non-blocking with a NULL fetch completed by quiet; the
 *    default context and a private one).
 * 2. compare_swap_masked: each PE sets its own bit of the low half unconditionally (compare mask
 *    0) while all of them increment the high half with compare-swaps that compare the high half
 *    only: every bit set, and the high half equals the number of successful compare-swaps.
 * 3. sizes 16-256 (one little-endian integer of `size` bytes), every PE on every PE's words:
 *    fetch-add with 16-bit fields (boundary bit 63 of every 8-byte word set: what the HCA carries
 *    as the program means) and with 128-bit fields (carries cross 8-byte words: never the HCA's
 *    own add), starting below their wrap, exact per-field sums and every fetched value a state
 *    the field can have been in; masked compare-swap claiming bits in the first word and counting
 *    in the last while comparing a constant middle word.
 * 4. PE 0 alone, on its own word and on the last PE's (in the across-node runs: the CPU or HCA
 *    loopback path and the network's), a fixed pseudo-random sequence of both operations of
 *    every size against this file's own reference: every fetched value and the final bytes, so
 *    every path (CPU, lock, message, HCA) must agree bit for bit.
 * AMO_MASKED_BAD_SIZE=1: a 24-byte call, which must stop the job with one line. */
#include <shmemx.h>
#include <stdlib.h>
#include <string.h>

#include "shtest.h"

static uint64_t packed64;
static uint32_t packed32;
static uint64_t nbi64;
static uint64_t claim;

#define B64 0x8000800080008000ull
#define B32 0x80008000u
#define START64 0xfff0fff0fff0fff0ull
#define START32 0xfff0fff0u

/* --- sizes 16-256 ------------------------------------------------------------------------ */

#define NSIZES 5
static const size_t sizes[NSIZES] = {16, 32, 64, 128, 256};

/* Reference semantics on byte images (little-endian integer: byte 0 least significant). */
static void ref_fetch_add(uint8_t *m, const uint8_t *a, const uint8_t *b, size_t n) {
  unsigned carry = 0;
  for (size_t i = 0; i < n * 8; i++) {
    const unsigned x = m[i / 8] >> (i % 8) & 1, y = a[i / 8] >> (i % 8) & 1;
    const unsigned sum = x + y + carry;
    m[i / 8] = (uint8_t)((m[i / 8] & ~(1u << (i % 8))) | (sum & 1) << (i % 8));
    carry = sum >> 1;
    if (b[i / 8] >> (i % 8) & 1) carry = 0;
  }
}
static void ref_compare_swap(uint8_t *m, const uint8_t *c, const uint8_t *cm, const uint8_t *sw,
                             const uint8_t *sm, size_t n) {
  for (size_t i = 0; i < n; i++)
    if ((m[i] ^ c[i]) & cm[i]) return;
  for (size_t i = 0; i < n; i++) m[i] = (uint8_t)((m[i] & ~sm[i]) | (sw[i] & sm[i]));
}

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}
static void rng_fill(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i += 8) {
    const uint64_t v = rng();
    memcpy(p + i, &v, 8);
  }
}

/* 16-bit fields: bit 15 of each (bit 63 of every word set). */
static void set16(uint8_t *b, size_t n) {
  for (size_t i = 0; i < n; i += 2) b[i] = 0, b[i + 1] = 0x80;
}
/* 128-bit fields: only bit 127 of each 16-byte unit. */
static void set128(uint8_t *b, size_t n) {
  memset(b, 0, n);
  for (size_t i = 15; i < n; i += 16) b[i] = 0x80;
}
static unsigned __int128 get128(const uint8_t *p) {
  unsigned __int128 v;
  memcpy(&v, p, 16);
  return v;
}
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

static void wide_tests(int me, int n) {
  if (getenv("AMO_MASKED_BAD_SIZE")) {
    uint8_t v[24] = {0}, f[24];
    shmemx_atomic_fetch_add_fields(&packed64, v, v, f, 24, 0);
    CHECK(0, "a 24-byte masked atomic returned");
  }
  const long rounds = shtest_scaled(60);
  /* per size: a 16-bit-field word, a 128-bit-field word, a compare-swap word, a private one */
  uint8_t *fa16[NSIZES], *fa128[NSIZES], *cs[NSIZES], *det[NSIZES];
  uint8_t start16[256], start128[256], inc16[256], inc128[256], b16[256], b128[256];
  for (size_t i = 0; i < 256; i += 2) start16[i] = 0xf0, start16[i + 1] = 0xff;  /* 0xfff0 */
  for (size_t i = 0; i < 256; i += 16) {  /* 2^64 - 8 + i: a carry out of the low word */
    const uint64_t lo = 0xfffffffffffffff8ull + i / 16, hi = i == 240 ? ~0ull : 0;
    memcpy(start128 + i, &lo, 8);
    memcpy(start128 + i + 8, &hi, 8);  /* the last unit of 256 bytes: 2^128 - 8, wraps */
  }
  for (size_t i = 0; i < 256; i += 2) inc16[i] = (uint8_t)(1 + i / 2 % 3), inc16[i + 1] = 0;
  memset(inc128, 0, sizeof inc128);
  for (size_t i = 0; i < 256; i += 16) inc128[i] = (uint8_t)(1 + i / 16 % 2);
  set16(b16, 256);
  set128(b128, 256);
  for (int k = 0; k < NSIZES; k++) {
    const size_t sz = sizes[k];
    fa16[k] = shmem_align(256, sz);
    fa128[k] = shmem_align(256, sz);
    cs[k] = shmem_align(256, sz);
    det[k] = shmem_align(256, sz);
    CHECK(fa16[k] && fa128[k] && cs[k] && det[k], "shmem_align(256, %zu) failed", sz);
    memcpy(fa16[k], start16, sz);
    memcpy(fa128[k], start128, sz);
    memset(cs[k], 0, sz);
    for (size_t i = 8; i + 8 < sz; i++) cs[k][i] = 0xa5;  /* the constant middle */
  }
  shmem_barrier_all();

  /* 3a. fetch-add with fields */
  shmem_ctx_t ctx;
  CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) == 0, "shmem_ctx_create failed");
  const uint64_t adds = (uint64_t)rounds * (uint64_t)n;
  for (long r = 0; r < rounds; r++)
    for (int t = 0; t < n; t++) {
      const int pe = (me + t) % n;
      for (int k = 0; k < NSIZES; k++) {
        const size_t sz = sizes[k];
        uint8_t old[256];
        shmemx_atomic_fetch_add_fields(fa16[k], inc16, b16, old, sz, pe);
        for (size_t i = 0; i < sz; i += 2) {
          const uint16_t steps = (uint16_t)(get16(old + i) - 0xfff0u);
          CHECK(steps % inc16[i] == 0 && steps / inc16[i] < adds,
                "%zu-byte 16-bit field %zu fetched %#x", sz, i / 2, get16(old + i));
        }
        if (r & 1) {
          shmemx_ctx_atomic_fetch_add_fields(ctx, fa128[k], inc128, b128, NULL, sz, pe);
        } else {
          shmemx_atomic_fetch_add_fields(fa128[k], inc128, b128, old, sz, pe);
          for (size_t i = 0; i < sz; i += 16) {
            const unsigned __int128 steps = get128(old + i) - get128(start128 + i);
            CHECK(steps % inc128[i] == 0 && steps / inc128[i] < adds,
                  "%zu-byte 128-bit field %zu fetched %#llx:%016llx", sz, i / 16,
                  (unsigned long long)(get128(old + i) >> 64),
                  (unsigned long long)get128(old + i));
          }
        }
      }
    }
  shmem_ctx_quiet(ctx);
  shmem_barrier_all();
  for (int k = 0; k < NSIZES; k++) {
    const size_t sz = sizes[k];
    for (size_t i = 0; i < sz; i += 2)
      CHECK_EQ_U("wide 16-bit field", (0xfff0 + adds * inc16[i]) & 0xffff, get16(fa16[k] + i));
    for (size_t i = 0; i < sz; i += 16) {
      const unsigned __int128 want = get128(start128 + i) + (unsigned __int128)adds * inc128[i];
      CHECK(get128(fa128[k] + i) == want, "%zu-byte word, 128-bit field %zu: expected "
            "%#llx:%016llx got %#llx:%016llx", sz, i / 16, (unsigned long long)(want >> 64),
            (unsigned long long)want, (unsigned long long)(get128(fa128[k] + i) >> 64),
            (unsigned long long)get128(fa128[k] + i));
    }
  }
  shmem_barrier_all();

  /* 3b. masked compare-swap: a bit per PE in the first word, a counter in the last */
  long wins = 0;
  for (int t = 0; t < n; t++) {
    const int pe = (me + t) % n;
    for (int k = 0; k < NSIZES; k++) {
      const size_t sz = sizes[k];
      uint8_t cmp[256] = {0}, cmask[256] = {0}, swap[256] = {0}, smask[256] = {0}, old[256];
      const uint64_t bit = 1ull << me;
      memcpy(swap, &bit, 8);
      memcpy(smask, &bit, 8);
      shmemx_atomic_compare_swap_masked(cs[k], cmp, cmask, swap, smask, old, sz, pe);
      uint64_t first;
      memcpy(&first, old, 8);
      CHECK((first & bit) == 0, "%zu bytes: PE %d's bit already set on PE %d", sz, me, pe);
      for (long r = 0; r < rounds; r++) {
        uint8_t seen[256];
        memset(smask, 0, sz);
        shmemx_ctx_atomic_compare_swap_masked(ctx, cs[k], cmp, cmask, swap, smask, seen, sz, pe);
        uint64_t count;
        memcpy(&count, seen + sz - 8, 8);
        memset(cmask, 0, sz);
        memset(cmask + 8, 0xff, sz - 8);     /* the middle and the counter */
        memcpy(cmp, seen, sz);
        memset(cmp + 8, 0xa5, sz - 16);      /* the middle must be as written */
        memset(swap, 0, sz);
        const uint64_t next = count + 1;
        memcpy(swap + sz - 8, &next, 8);
        memset(smask, 0, sz);
        memset(smask + sz - 8, 0xff, 8);
        shmemx_atomic_compare_swap_masked(cs[k], cmp, cmask, swap, smask, seen, sz, pe);
        uint64_t got;
        memcpy(&got, seen + sz - 8, 8);
        if (got == count) wins++;
        memset(cmask, 0, sz);
        memset(cmp, 0, sz);
      }
    }
  }
  shmem_ctx_destroy(ctx);
  shmem_barrier_all();
  long *sums = shmem_calloc(2, sizeof(long));
  CHECK(sums != NULL, "shmem_calloc failed");
  shmem_barrier_all();
  long mine = 0;
  for (int k = 0; k < NSIZES; k++) {
    const size_t sz = sizes[k];
    uint64_t first, count;
    memcpy(&first, cs[k], 8);
    memcpy(&count, cs[k] + sz - 8, 8);
    CHECK_EQ_U("wide claimed bits", n == 64 ? ~0ull : (1ull << n) - 1, first);
    for (size_t i = 8; i + 8 < sz; i++) CHECK_EQ_U("wide constant middle", 0xa5, cs[k][i]);
    mine += (long)count;
  }
  shmem_long_atomic_add(&sums[0], wins, 0);
  shmem_long_atomic_add(&sums[1], mine, 0);
  shmem_barrier_all();
  if (me == 0) CHECK_EQ_U("successful wide compare-swaps", sums[0], sums[1]);
  shmem_barrier_all();

  /* 4. PE 0: a fixed sequence against the reference, on its own word and the last PE's */
  if (me == 0) {
    const int targets[2] = {0, n - 1};
    for (int ti = 0; ti < (n > 1 ? 2 : 1); ti++) {
      const int pe = targets[ti];
      for (int k = 0; k < NSIZES; k++) {
        const size_t sz = sizes[k];
        uint8_t ref[256], init[256];
        rng_fill(init, sz);
        memcpy(ref, init, sz);
        shmem_putmem(det[k], init, sz, pe);
        shmem_quiet();
        for (int step = 0; step < 24; step++) {
          uint8_t a[256], b[256], c[256], d[256], old[256];
          rng_fill(a, sz), rng_fill(b, sz), rng_fill(c, sz), rng_fill(d, sz);
          if (step % 2 == 0) {
            if (step % 4 == 0) /* boundaries the HCA computes itself */
              for (size_t i = 7; i < sz; i += 8) b[i] |= 0x80;
            shmemx_atomic_fetch_add_fields(det[k], a, b, old, sz, pe);
            for (size_t i = 0; i < sz; i++)
              CHECK(old[i] == ref[i], "PE %d %zu-byte fetch-add step %d: byte %zu fetched %#x, "
                    "reference %#x", pe, sz, step, i, old[i], ref[i]);
            ref_fetch_add(ref, a, b, sz);
          } else {
            if (step % 3 == 0) memcpy(b, ref, sz);  /* compare equal where masked: it swaps */
            shmemx_atomic_compare_swap_masked(det[k], b, d, a, c, old, sz, pe);
            for (size_t i = 0; i < sz; i++)
              CHECK(old[i] == ref[i], "PE %d %zu-byte compare-swap step %d: byte %zu fetched "
                    "%#x, reference %#x", pe, sz, step, i, old[i], ref[i]);
            ref_compare_swap(ref, b, d, a, c, sz);
          }
        }
        uint8_t now[256];
        shmem_getmem(now, det[k], sz, pe);
        for (size_t i = 0; i < sz; i++)
          CHECK(now[i] == ref[i], "PE %d %zu bytes after the sequence: byte %zu is %#x, "
                "reference %#x", pe, sz, i, now[i], ref[i]);
      }
    }
  }
  shmem_barrier_all();
  for (int k = 0; k < NSIZES; k++) {
    shmem_free(det[k]);
    shmem_free(cs[k]);
    shmem_free(fa128[k]);
    shmem_free(fa16[k]);
  }
  shmem_free(sums);
}

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
  wide_tests(me, n);
  shtest_done("amo_masked");
  return 0;
}
