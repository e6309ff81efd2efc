// The header's inline fast path (include/shmem/shmem_inline.h) compiled as C++ at -O0 (where
// only always_inline makes it inline) with exact values: p/g, small and just-too-large put/get,
// globals, AMOs of every kind incl. float/double, fetching _nbi forms, a routine called through
// its address (the library's symbol), and a bad PE, which must still reach the library's check
// (BUILD runs that case expecting the one-line error).
#include <shmem.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

long global_word = 7;        // .data: symmetric through the remapped data segment
uint64_t global_counter;     // .bss

int me, npes;

void check(bool ok, const char *what, long long expected, long long actual) {
  if (ok) return;
  fprintf(stderr, "FAIL PE %d: %s: expected %lld got %lld\n", me, what, expected, actual);
  shmem_global_exit(1);
}
#define CHECK_EQ(what, e, a) check((e) == (a), what, (long long)(e), (long long)(a))

}  // namespace

int main() {
  shmem_init();
  me = shmem_my_pe();
  npes = shmem_n_pes();
  const int right = (me + 1) % npes, left = (me + npes - 1) % npes;

  auto *words = static_cast<long *>(shmem_calloc(16, sizeof(long)));
  auto *bytes = static_cast<unsigned char *>(shmem_calloc(256, 1));
  auto *d = static_cast<double *>(shmem_malloc(sizeof(double)));
  auto *f = static_cast<float *>(shmem_malloc(sizeof(float)));
  auto *u64 = static_cast<uint64_t *>(shmem_calloc(2, sizeof(uint64_t)));
  auto *i32 = static_cast<int32_t *>(shmem_calloc(2, sizeof(int32_t)));
  *d = 1.5 * me;
  *f = 0.25f * me;
  shmem_barrier_all();

  // p / g / put / get to the right neighbour, heap and globals
  const long five_k = 2000 + me;
  shmem_long_p(&words[0], 1000 + me, right);
  shmem_long_put(&words[1], &five_k, 1, right);
  void (*p_fn)(long *, long, int) = shmem_long_p;
  p_fn(&words[2], 3000 + me, right);
  long five[5] = {me * 10L, me * 10L + 1, me * 10L + 2, me * 10L + 3, me * 10L + 4};
  shmem_long_put(&words[3], five, 5, right);
  shmem_long_put_nbi(&words[8], five, 2, right);
  shmem_long_p(&global_word, 70 + me, right);
  unsigned char pattern[65];
  for (int i = 0; i < 65; ++i) pattern[i] = static_cast<unsigned char>(me * 3 + i);
  shmem_putmem(bytes, pattern, 64, right);        // inline (64 bytes)
  shmem_putmem(bytes + 64, pattern, 65, right);   // the library (65 bytes)
  shmem_put32(&i32[0], &me, 1, right);
  shmem_barrier_all();
  CHECK_EQ("long_p", 1000 + left, words[0]);
  CHECK_EQ("long_put of 1", 2000 + left, words[1]);
  CHECK_EQ("p through its address", 3000 + left, words[2]);
  for (int i = 0; i < 5; ++i) CHECK_EQ("long_put", left * 10L + i, words[3 + i]);
  for (int i = 0; i < 2; ++i) CHECK_EQ("long_put_nbi", left * 10L + i, words[8 + i]);
  CHECK_EQ("p into a global", 70 + left, global_word);
  for (int i = 0; i < 64; ++i) CHECK_EQ("putmem 64", (left * 3 + i) & 0xff, bytes[i]);
  for (int i = 0; i < 65; ++i) CHECK_EQ("putmem 65", (left * 3 + i) & 0xff, bytes[64 + i]);
  CHECK_EQ("put32", left, i32[0]);
  CHECK_EQ("long_g", 1000 + me, shmem_long_g(&words[0], right));
  CHECK_EQ("g of a global", 70 + me, shmem_long_g(&global_word, right));
  long got[5];
  shmem_long_get(got, &words[3], 5, right);
  for (int i = 0; i < 5; ++i) CHECK_EQ("long_get", me * 10L + i, got[i]);
  unsigned char back[65];
  shmem_getmem(back, bytes + 64, 65, right);
  for (int i = 0; i < 65; ++i) CHECK_EQ("getmem 65", (me * 3 + i) & 0xff, back[i]);
  shmem_getmem_nbi(back, bytes, 8, right);
  shmem_quiet();
  for (int i = 0; i < 8; ++i) CHECK_EQ("getmem_nbi 8", (me * 3 + i) & 0xff, back[i]);
  shmem_barrier_all();

  // AMOs: every PE on PE 0's words, then each on its right neighbour's
  shmem_uint64_atomic_add(&global_counter, 1, 0);
  const uint64_t before = shmem_uint64_atomic_fetch_add(&global_counter, 10, 0);
  check(before >= 1 && before < 11ull * npes, "fetch_add result in range", 0, (long long)before);
  shmem_uint64_atomic_fetch_xor(u64, uint64_t{1} << me, 0);
  shmem_uint64_atomic_inc(&u64[1], right);
  shmem_barrier_all();
  if (me == 0) {
    CHECK_EQ("add + fetch_add from every PE", 11ull * npes, global_counter);
    uint64_t all = 0;
    for (int pe = 0; pe < npes; ++pe) all ^= uint64_t{1} << pe;
    CHECK_EQ("fetch_xor of bit pe from every PE", all, u64[0]);
  }
  CHECK_EQ("inc from the left neighbour", 1, u64[1]);
  shmem_barrier_all();
  const double old_d = shmem_double_atomic_swap(d, 100.0 + me, right);
  CHECK_EQ("double swap old (x2)", 3 * right, static_cast<long>(old_d * 2));
  float fetched_f = -1;
  shmem_float_atomic_fetch_nbi(&fetched_f, f, right);
  shmem_quiet();
  CHECK_EQ("float fetch_nbi (x4)", right, static_cast<long>(fetched_f * 4));
  int32_t prev = -1;
  shmem_int32_atomic_compare_swap_nbi(&prev, &i32[1], 0, 500 + me, right);
  shmem_quiet();
  CHECK_EQ("cswap_nbi old", 0, prev);
  CHECK_EQ("cswap fails", 500 + me, shmem_int32_atomic_compare_swap(&i32[1], 1, 9, right));
  shmem_int32_atomic_set(&i32[0], -5, right);
  shmem_barrier_all();
  CHECK_EQ("double swap new", 100 + left, static_cast<long>(*d));
  CHECK_EQ("cswap landed", 500 + left, i32[1]);
  CHECK_EQ("set", -5, i32[0]);
  CHECK_EQ("fetch", -5, shmem_int32_atomic_fetch(&i32[0], right));

  const char *bad = getenv("INLINE_BAD_PE");
  if (bad && *bad == '1') shmem_long_p(&words[0], 1, npes);  // the library reports it
  shmem_barrier_all();
  if (me == 0) printf("inline_cxx: OK on %d PEs\n", npes);
  shmem_finalize();
  return 0;
}
