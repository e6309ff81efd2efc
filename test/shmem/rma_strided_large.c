/* Large strided transfers with one contiguous side (to another node the library gathers or
 * scatters them in chunks): iput with target stride 1, iget with source stride 1, ibput/ibget
 * with adjacent blocks on the remote side, of more elements than a chunk holds and a count that
 * is not a multiple of it, for 2-, 8- and 16-byte elements. Every element is checked, and so are
 * the elements the strides skip and those after the end (never written). */
#include "shtest.h"

#define N 100003 /* elements: many chunks, the last one partial */
#define S 3      /* the strided side's stride */
#define BS 5     /* ibput/ibget block size (elements) */
#define NB 20001 /* blocks */

static uint64_t val(int pe, size_t i, uint64_t salt) { return shtest_mix(((uint64_t)pe << 40) ^ (salt << 32) ^ i); }

#define STRIDED(T, NAME, IPUT, IGET, IBPUT, IBGET, MK, EQ)                                                \
  static void NAME(T *sym, T *loc, int me, int right, int left) {                                    \
    const size_t span = (size_t)N * S + 8;                                                           \
    /* iput: loc[i * S] -> right's sym[i] (target contiguous) */                                     \
    for (size_t i = 0; i < span; i++) { loc[i] = MK(val(me, i, 1)); sym[i] = MK(val(99, i, 0)); }        \
    shmem_barrier_all();                                                                             \
    IPUT(sym, loc, 1, S, N, right);                                                                  \
    shmem_barrier_all();                                                                             \
    for (size_t i = 0; i < span; i++) {                                                              \
      T want = i < N ? MK(val(left, i * S, 1)) : MK(val(99, i, 0));                                    \
      CHECK(EQ(sym[i], want), #IPUT " tst=1 sst=%d: element %zu wrong", S, i);                       \
    }                                                                                                \
    /* iget: right's sym[i] -> loc[i * S] (source contiguous) */                                     \
    for (size_t i = 0; i < span; i++) { sym[i] = MK(val(me, i, 2)); loc[i] = MK(val(98, i, 0)); }        \
    shmem_barrier_all();                                                                             \
    IGET(loc, sym, S, 1, N, right);                                                                  \
    for (size_t i = 0; i < span; i++) {                                                              \
      T want = i % S == 0 && i / S < N ? MK(val(right, i / S, 2)) : MK(val(98, i, 0));                 \
      CHECK(EQ(loc[i], want), #IGET " tst=%d sst=1: element %zu wrong", S, i);                       \
    }                                                                                                \
    shmem_barrier_all();                                                                             \
    /* ibput: blocks of BS at stride BS + 2 here -> adjacent blocks at right */                     \
    for (size_t i = 0; i < span; i++) { loc[i] = MK(val(me, i, 3)); sym[i] = MK(val(97, i, 0)); }        \
    shmem_barrier_all();                                                                             \
    IBPUT(sym, loc, BS, BS + 2, BS, NB, right);                                                      \
    shmem_barrier_all();                                                                             \
    for (size_t i = 0; i < span; i++) {                                                              \
      T want = i < (size_t)BS * NB ? MK(val(left, i / BS * (BS + 2) + i % BS, 3)) : MK(val(97, i, 0)); \
      CHECK(EQ(sym[i], want), #IBPUT " dst=bsize=%d: element %zu wrong", BS, i);                     \
    }                                                                                                \
    /* ibget: adjacent blocks at right -> blocks at stride BS + 2 here */                           \
    for (size_t i = 0; i < span; i++) { sym[i] = MK(val(me, i, 4)); loc[i] = MK(val(96, i, 0)); }        \
    shmem_barrier_all();                                                                             \
    IBGET(loc, sym, BS + 2, BS, BS, NB, right);                                                      \
    for (size_t i = 0; i < span; i++) {                                                              \
      size_t b = i / (BS + 2), k = i % (BS + 2);                                                     \
      T want = b < NB && k < BS ? MK(val(right, b * BS + k, 4)) : MK(val(96, i, 0));                   \
      CHECK(EQ(loc[i], want), #IBGET " sst=bsize=%d: element %zu wrong", BS, i);                     \
    }                                                                                                \
    shmem_barrier_all();                                                                             \
  }

typedef struct { uint64_t lo, hi; } pair16; /* shmem_iput128 and friends move 16 bytes */
static int16_t mk16(uint64_t v) { return (int16_t)v; }
static long mk64(uint64_t v) { return (long)v; }
static pair16 mk128(uint64_t v) { pair16 p = {v, ~v * 3}; return p; }
#define EQ_PLAIN(a, b) ((a) == (b))
#define EQ_PAIR(a, b) ((a).lo == (b).lo && (a).hi == (b).hi)
STRIDED(int16_t, run16, shmem_int16_iput, shmem_int16_iget, shmem_int16_ibput, shmem_int16_ibget, mk16,
        EQ_PLAIN)
STRIDED(long, run64, shmem_long_iput, shmem_long_iget, shmem_long_ibput, shmem_long_ibget, mk64, EQ_PLAIN)
STRIDED(pair16, run128, shmem_iput128, shmem_iget128, shmem_ibput128, shmem_ibget128, mk128, EQ_PAIR)

int main(void) {
  shtest_init();
  const int me = shtest_me, n = shtest_npes, right = (me + 1) % n, left = (me + n - 1) % n;
  const size_t bytes = ((size_t)N * S + 8) * 16;
  void *sym = shmem_malloc(bytes);
  void *loc = malloc(bytes);
  CHECK(sym && loc, "allocation of %zu bytes failed", bytes);
  run16(sym, loc, me, right, left);
  run64(sym, loc, me, right, left);
  run128(sym, loc, me, right, left);
  shmem_free(sym);
  free(loc);
  shtest_done("rma_strided_large");
  return 0;
}
