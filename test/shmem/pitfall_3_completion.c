/* Pitfall 3: when each kind of operation is complete.
 * - A blocking put (put, putmem, iput, ibput, put_signal, ctx put) returns with `source`
 *   reusable: the source is overwritten right after the call and the target must still receive
 *   the values it held during the call (small and 1 MiB transfers).
 * - A blocking get (get, getmem, iget, g, ctx get) returns with the data delivered: checked with
 *   no quiet, fence or barrier in between.
 * - put_nbi / get_nbi / put_signal_nbi / fetching nbi AMOs on the default context and on a created
 *   context are complete after shmem_quiet / shmem_ctx_quiet: the nbi source is overwritten after
 *   the quiet, the fetched values and nbi-get buffers are read after it.
 * - Non-fetching AMOs are complete after quiet: the target sees them once a flag written after
 *   the quiet (no fence) arrives.
 * Cannot observe: that nbi operations or non-fetching AMOs *may* complete late (intra-node they
 * complete in the call); a test may only rely on the guarantees, which is what this one checks. */
#include "shtest.h"

#define BIG (1 << 20)
#define SMALL 37

static long flag;
static long amo_word;

static void fill_long(long *p, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; i++) p[i] = (long)shtest_mix(seed ^ i);
}
static size_t first_bad(const long *p, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != (long)shtest_mix(seed ^ i)) return i;
  return n;
}

int main(void) {
  shtest_init();
  const int me = shtest_me, n = shtest_npes, right = (me + 1) % n, left = (me + n - 1) % n;
  unsigned char *dst = shmem_malloc(BIG);
  long *ldst = shmem_malloc(BIG);
  long *lsrc_sym = shmem_malloc(BIG);
  unsigned char *src = malloc(BIG);
  long *lsrc = malloc(BIG);
  CHECK(dst && ldst && lsrc_sym && src && lsrc, "allocation failed");
  shmem_ctx_t ctx;
  CHECK_EQ_U("ctx_create", 0, shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx));
  const size_t sizes[2] = {SMALL, BIG};
  uint64_t seed = 1;

  /* --- blocking puts: the source is reusable on return --- */
  for (int s = 0; s < 2; s++) {
    const size_t bytes = sizes[s];
    const size_t nl = bytes / sizeof(long);
    for (int form = 0; form < 6; form++, seed++) {
      static const char *names[6] = {"putmem", "long_put", "ctx_long_put", "long_iput", "long_ibput",
                                     "putmem_signal"};
      static uint64_t sig;
      shmem_barrier_all(); /* the target is free */
      const uint64_t my = shtest_val(me, bytes, seed), theirs = shtest_val(left, bytes, seed);
      size_t nchk = nl; /* longs checked at the target (iput moves every other one) */
      switch (form) {
        case 0: shtest_fill(src, bytes, my); shmem_putmem(dst, src, bytes, right); break;
        case 1: fill_long(lsrc, nl, my); shmem_long_put(ldst, lsrc, nl, right); break;
        case 2: fill_long(lsrc, nl, my); shmem_ctx_long_put(ctx, ldst, lsrc, nl, right); break;
        case 3: /* dst stride 1, source stride 2: ldst[i] = lsrc[2i] */
          nchk = nl / 2;
          for (size_t i = 0; i < nchk; i++) lsrc[2 * i] = (long)shtest_mix(my ^ i);
          shmem_long_iput(ldst, lsrc, 1, 2, nchk, right);
          break;
        case 4: /* blocks of 1 with dst stride 1, source stride 2: same layout as the iput */
          nchk = nl / 2;
          for (size_t i = 0; i < nchk; i++) lsrc[2 * i] = (long)shtest_mix(my ^ i);
          shmem_long_ibput(ldst, lsrc, 1, 2, 1, nchk, right);
          break;
        case 5: shtest_fill(src, bytes, my); shmem_putmem_signal(dst, src, bytes, &sig, 1, SHMEM_SIGNAL_ADD, right); break;
      }
      /* reuse the source at once */
      memset(src, 0xA5, bytes);
      memset(lsrc, 0x5A, bytes);
      shmem_barrier_all();
      if (form == 0 || form == 5) {
        size_t bad = shtest_verify(dst, bytes, theirs);
        CHECK(bad == bytes, "shmem_%s(%zu bytes): byte %zu differs: the source was not copied before the call returned",
              names[form], bytes, bad);
      } else {
        size_t bad = first_bad(ldst, nchk, theirs);
        CHECK(bad == nchk, "shmem_%s(%zu longs): element %zu differs: the source was not copied before the call returned",
              names[form], nchk, bad);
      }
    }
  }

  /* --- blocking gets: data delivered on return (no quiet in between) --- */
  for (int s = 0; s < 2; s++, seed++) {
    const size_t bytes = sizes[s], nl = bytes / sizeof(long);
    shmem_barrier_all();
    fill_long(lsrc_sym, nl, shtest_val(me, bytes, seed));
    shmem_barrier_all();
    const uint64_t theirs = shtest_val(right, bytes, seed);
    memset(ldst, 0, bytes);
    shmem_getmem(ldst, lsrc_sym, bytes, right);
    CHECK(first_bad(ldst, nl, theirs) == nl, "shmem_getmem(%zu bytes) returned before the data arrived", bytes);
    memset(ldst, 0, bytes);
    shmem_ctx_long_get(ctx, ldst, lsrc_sym, nl, right);
    CHECK(first_bad(ldst, nl, theirs) == nl, "shmem_ctx_long_get(%zu longs) returned before the data arrived", nl);
    memset(ldst, 0, bytes);
    shmem_long_iget(ldst, lsrc_sym, 1, 1, nl, right);
    CHECK(first_bad(ldst, nl, theirs) == nl, "shmem_long_iget(%zu longs) returned before the data arrived", nl);
    CHECK(shmem_long_g(&lsrc_sym[nl - 1], right) == (long)shtest_mix(theirs ^ (nl - 1)), "shmem_long_g");
  }

  /* --- nbi: complete after quiet (default context) and ctx_quiet (created context) --- */
  for (int c = 0; c < 2; c++)
    for (int s = 0; s < 2; s++, seed++) {
      const size_t bytes = sizes[s], nl = bytes / sizeof(long);
      shmem_ctx_t cx = c ? ctx : SHMEM_CTX_DEFAULT;
      static long fetched[3];
      static uint64_t sig2;
      shmem_barrier_all();
      fill_long(lsrc_sym, nl, shtest_val(me, bytes, seed + 1000));
      amo_word = 0;
      flag = 0;
      shmem_barrier_all();
      const uint64_t my = shtest_val(me, bytes, seed), theirs = shtest_val(left, bytes, seed);
      fill_long(lsrc, nl, my);
      shmem_ctx_long_put_nbi(cx, ldst, lsrc, nl, right);
      shtest_fill(src, bytes, my);
      shmem_ctx_putmem_signal_nbi(cx, dst, src, bytes, &sig2, 1, SHMEM_SIGNAL_ADD, right);
      static long got[BIG / sizeof(long)];
      memset(got, 0, bytes);
      shmem_ctx_long_get_nbi(cx, got, lsrc_sym, nl, right);
      fetched[0] = fetched[1] = fetched[2] = -1;
      shmem_ctx_long_atomic_fetch_nbi(cx, &fetched[0], &lsrc_sym[0], right);
      shmem_ctx_long_atomic_fetch_add_nbi(cx, &fetched[1], &amo_word, 5, right);
      shmem_ctx_long_atomic_compare_swap_nbi(cx, &fetched[2], &flag, 0, 0, right);
      shmem_ctx_long_atomic_add(cx, &amo_word, 7, right);
      if (c) shmem_ctx_quiet(cx); else shmem_quiet();
      /* after the quiet: sources reusable, fetched values and get buffers delivered */
      memset(lsrc, 0x11, bytes);
      memset(src, 0x22, bytes);
      const uint64_t right_seed = shtest_val(right, bytes, seed + 1000);
      CHECK(first_bad(got, nl, right_seed) == nl, "get_nbi (%s, %zu bytes): data missing after quiet",
            c ? "ctx" : "default", bytes);
      CHECK_EQ_U("atomic_fetch_nbi result after quiet", (uint64_t)shtest_mix(right_seed ^ 0), (uint64_t)fetched[0]);
      /* without a fence the later blocking add may overtake the nbi fetch_add: 0 or 7 */
      CHECK(fetched[1] == 0 || fetched[1] == 7, "atomic_fetch_add_nbi result after quiet: %ld, expected 0 or 7",
            fetched[1]);
      CHECK_EQ_U("atomic_compare_swap_nbi result after quiet", 0, fetched[2]);
      /* a flag after the quiet, no fence: everything before the quiet is at the target already */
      shmem_ctx_long_atomic_set(cx, &flag, 1, right);
      SHT_REF_QUIET();
      shmem_long_wait_until(&flag, SHMEM_CMP_EQ, 1);
      CHECK(first_bad(ldst, nl, theirs) == nl, "put_nbi (%s, %zu bytes) incomplete after the sender's quiet",
            c ? "ctx" : "default", bytes);
      CHECK(shtest_verify(dst, bytes, theirs) == bytes, "putmem_signal_nbi (%s, %zu bytes) data incomplete after quiet",
            c ? "ctx" : "default", bytes);
      CHECK_EQ_U("non-fetching atomic_add + fetch_add_nbi complete after quiet", 12, amo_word);
    }
  shmem_barrier_all();
  shmem_ctx_destroy(ctx);
  shmem_free(lsrc_sym);
  shmem_free(ldst);
  shmem_free(dst);
  free(src);
  free(lsrc);
  shtest_done("pitfall_3_completion");
  return 0;
}
