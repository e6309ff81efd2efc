/* One sender, many receivers: PE 0 sends every other PE, in turn, a round of puts of several sizes
 * followed by the signal that announces them, and each receiver checks that when it sees the
 * signal of a round, all of that round's data is there.
 *
 * Each round, for p = 1 .. npes-1 in turn (so consecutive operations keep changing target), PE 0
 * puts five segments to p (8 B shmem_put64, 40 B putmem_nbi, 1000 B putmem_nbi, 3000 B blocking
 * putmem, 64-192 KiB putmem_nbi from malloc'ed memory), forward or reversed, then a last segment
 * of 8 B-2 KiB that carries the announcement, one of three ways chosen by (round + p) % 3:
 *   0: shmem_putmem_signal_nbi, SHMEM_SIGNAL_SET of round + 1
 *   1: shmem_putmem_nbi, shmem_fence, shmem_uint64_atomic_set of a flag word to round + 1
 *   2: shmem_putmem_signal (blocking), SHMEM_SIGNAL_SET of round + 1
 * Nothing completes the operations to one peer before PE 0 moves on to the next: PE 0 quiets only
 * when it reuses a source buffer (every SRC_SETS rounds, between rounds) and at the end.
 *
 * The receiver waits for the announcement, compares every byte of the round with the pattern
 * derived from (round, peer, segment), then adds 1 to its acknowledgement counter on PE 0. Rounds
 * alternate between two data buffers and two signal (and flag) words; PE 0 reuses a peer's buffer
 * only after that peer acknowledged the round that last used it, so it may run one round ahead of
 * a peer but never overwrites data that was not checked yet.
 *
 * PUT_SIGNAL_ROUNDS overrides the number of rounds. Success: PE 0 prints
 * "put_signal_peers: OK on N PEs (R rounds)". Any mismatch: a line naming the PE, round, segment,
 * offset, expected and got byte, and a non-zero exit. */
#include "shtest.h"

#define SRC_SETS 4 /* source buffers per peer, reused round-robin (a quiet before each reuse) */

enum { SEG_W8, SEG_SMALL, SEG_1K, SEG_MED, SEG_LARGE, SEG_SIG, NSEG };
static const char *const seg_name[NSEG] = {"put64 8 B", "putmem_nbi 40 B", "putmem_nbi 1000 B",
                                           "putmem 3000 B", "large putmem_nbi", "signal-carrying put"};
static const size_t seg_max[NSEG] = {8, 40, 1000, 3000, 192 * 1024, 2048};
static size_t seg_off[NSEG + 1]; /* offsets in a data slot; seg_off[NSEG] is the slot size */
static size_t src_off[NSEG + 1]; /* the same in a set of sources, without the large segment */

static const char *const mode_name[3] = {"putmem_signal_nbi", "putmem_nbi+fence+atomic_set",
                                         "putmem_signal"};

static uint64_t sig[2];  /* on each receiver: signal words, by round parity */
static uint64_t flag[2]; /* on each receiver: flag words (mode 1), by round parity */
static uint64_t fails;   /* on PE 0: mismatches reported by all PEs */

static int mode_of(long r, int p) { return (int)((r + p) % 3); }

static size_t seg_len(int seg, long r, int p) {
  if (seg == SEG_LARGE) return 64 * 1024 + ((size_t)(r * 7 + p) * 8191) % (128 * 1024 + 1);
  if (seg == SEG_SIG) return 8 + ((size_t)(r * 5 + p) * 331) % (2048 - 8 + 1);
  return seg_max[seg];
}

static uint64_t seed_of(long r, int p, int seg) {
  return shtest_mix(0x7075747369676e00ULL ^ ((uint64_t)r << 20) ^ ((uint64_t)p << 4) ^ (uint64_t)seg);
}

static unsigned char pattern_byte(uint64_t seed, size_t i) {
  uint64_t w = shtest_mix(seed ^ (i >> 3));
  unsigned char b[8];
  memcpy(b, &w, 8);
  return b[i & 7];
}

static long rounds_from_env(void) {
  const char *text = getenv("PUT_SIGNAL_ROUNDS");
  if (text && *text) {
    long v = atol(text);
    if (v > 0) return v;
  }
  return 50;
}

/* Receiver side: one round's data in slot `data`; returns the number of bad segments. */
static long check_round(const unsigned char *data, long r, int me) {
  long bad = 0;
  for (int s = 0; s < NSEG; s++) {
    size_t n = seg_len(s, r, me);
    const unsigned char *d = data + seg_off[s];
    uint64_t seed = seed_of(r, me, s);
    size_t i = shtest_verify(d, n, seed);
    if (i == n) continue;
    bad++;
    unsigned char got = d[i], want = pattern_byte(seed, i);
    size_t wrong = 0;
    for (size_t j = i; j < n; j++) wrong += d[j] != pattern_byte(seed, j);
    /* what the wrong byte looks like: the same slot's previous round, never written, or it was
     * still being written while we checked */
    const char *looks = "";
    if (got == want)
      looks = " (right when read again: arrived after the announcement)";
    else if (r >= 2 && i < seg_len(s, r - 2, me) && got == pattern_byte(seed_of(r - 2, me, s), i))
      looks = " (= round - 2's data: stale)";
    else if (got == 0)
      looks = " (zero)";
    fprintf(stderr,
            "put_signal_peers: FAIL PE %d round %ld (%s): %s of %zu bytes, offset %zu: expected 0x%02x "
            "got 0x%02x%s; %zu of %zu bytes from there wrong\n",
            me, r, mode_name[mode_of(r, me)], seg_name[s], n, i, want, got, looks,
            wrong, n - i);
    fflush(stderr);
  }
  return bad;
}

int main(void) {
  shtest_init();
  const int me = shtest_me, n = shtest_npes;
  const long rounds = rounds_from_env();
  for (int s = 0; s < NSEG; s++) {
    size_t room = (seg_max[s] + 63) & ~(size_t)63;
    seg_off[s + 1] = seg_off[s] + room;
    src_off[s + 1] = src_off[s] + (s == SEG_LARGE ? 0 : room);
  }
  const size_t slot = seg_off[NSEG];
  /* the large sources are malloc'ed (across nodes they go through bounce buffers, in chunks), the
   * others are in the symmetric heap (registered memory): SRC_SETS sets per peer */
  const size_t nsrc = (size_t)SRC_SETS * (size_t)(n > 1 ? n - 1 : 1);

  unsigned char *buf = shmem_calloc(2, slot);             /* receivers: the data, by round parity */
  uint64_t *acks = shmem_calloc((size_t)n, sizeof *acks); /* PE 0: rounds checked, per peer */
  unsigned char *src_small = shmem_malloc(nsrc * src_off[NSEG]); /* PE 0: sources */
  CHECK(buf && acks && src_small, "symmetric allocation failed");

  long my_bad = 0;
  if (me == 0 && n > 1) {
    unsigned char *src_large = malloc(nsrc * seg_max[SEG_LARGE]);
    CHECK(src_large, "malloc of %zu bytes failed", nsrc * seg_max[SEG_LARGE]);
    for (long r = 0; r < rounds; r++) {
      if (r > 0 && r % SRC_SETS == 0) shmem_quiet(); /* the nbi puts' sources become reusable */
      unsigned char *dst = buf + (size_t)(r & 1) * slot;
      int order_reversed = (r & 2) != 0;
      for (int p = 1; p < n; p++) {
        size_t set = (size_t)(r % SRC_SETS) * (size_t)(n - 1) + (size_t)(p - 1);
        unsigned char *src[NSEG];
        for (int s = 0; s < NSEG; s++) src[s] = src_small + set * src_off[NSEG] + src_off[s];
        src[SEG_LARGE] = src_large + set * seg_max[SEG_LARGE];
        for (int s = 0; s < NSEG; s++) shtest_fill(src[s], seg_len(s, r, p), seed_of(r, p, s));
        /* the slot of this parity was last filled in round r - 2: wait until p checked it */
        if (r >= 2) shmem_uint64_wait_until(&acks[p], SHMEM_CMP_GE, (uint64_t)(r - 1));
        for (int k = 0; k < SEG_SIG; k++) {
          int s = order_reversed ? SEG_SIG - 1 - k : k;
          void *d = dst + seg_off[s];
          size_t len = seg_len(s, r, p);
          switch (s) {
            case SEG_W8: shmem_put64(d, src[s], 1, p); break;
            case SEG_MED: shmem_putmem(d, src[s], len, p); break;
            default: shmem_putmem_nbi(d, src[s], len, p); break;
          }
        }
        void *d = dst + seg_off[SEG_SIG];
        size_t len = seg_len(SEG_SIG, r, p);
        uint64_t value = (uint64_t)r + 1;
        switch (mode_of(r, p)) {
          case 0:
            shmem_putmem_signal_nbi(d, src[SEG_SIG], len, &sig[r & 1], value, SHMEM_SIGNAL_SET, p);
            break;
          case 1:
            shmem_putmem_nbi(d, src[SEG_SIG], len, p);
            shmem_fence();
            shmem_uint64_atomic_set(&flag[r & 1], value, p);
            break;
          default:
            shmem_putmem_signal(d, src[SEG_SIG], len, &sig[r & 1], value, SHMEM_SIGNAL_SET, p);
            break;
        }
        SHT_REF_QUIET();
      }
    }
    shmem_quiet();
    free(src_large);
  } else if (me != 0) {
    for (long r = 0; r < rounds; r++) {
      const unsigned char *data = buf + (size_t)(r & 1) * slot;
      uint64_t want = (uint64_t)r + 1, got;
      if (mode_of(r, me) == 1) {
        shmem_uint64_wait_until(&flag[r & 1], SHMEM_CMP_GE, want);
        got = shmem_uint64_atomic_fetch(&flag[r & 1], me);
      } else
        got = shmem_signal_wait_until(&sig[r & 1], SHMEM_CMP_GE, want);
      if (got != want) {
        fprintf(stderr, "put_signal_peers: FAIL PE %d round %ld (%s): announcement word is %llu, expected %llu\n",
                me, r, mode_name[mode_of(r, me)], (unsigned long long)got, (unsigned long long)want);
        fflush(stderr);
        my_bad++;
      }
      my_bad += check_round(data, r, me);
      shmem_uint64_atomic_inc(&acks[me], 0);
      SHT_REF_QUIET();
    }
    if (my_bad) shmem_uint64_atomic_add(&fails, (uint64_t)my_bad, 0);
  }

  shmem_barrier_all(); /* completes the acknowledgements and failure counts on PE 0 */
  int status = 0;
  if (me == 0) {
    uint64_t total = shmem_uint64_atomic_fetch(&fails, 0);
    for (int p = 1; p < n; p++) {
      uint64_t a = shmem_uint64_atomic_fetch(&acks[p], 0);
      if (a != (uint64_t)rounds) {
        fprintf(stderr, "put_signal_peers: FAIL PE %d acknowledged %llu rounds, expected %ld\n", p,
                (unsigned long long)a, rounds);
        total++;
      }
    }
    if (total == 0) {
      printf("put_signal_peers: OK on %d PEs (%ld rounds)\n", n, rounds);
    } else {
      printf("put_signal_peers: FAILED on %d PEs (%ld rounds): %llu mismatches\n", n, rounds,
             (unsigned long long)total);
      status = 1;
    }
    fflush(stdout);
    fflush(stderr);
  }
  shmem_barrier_all();
  shmem_free(src_small);
  shmem_free(acks);
  shmem_free(buf);
  shmem_finalize();
  return status;
}
