/* Helpers shared by the multi-PE conformance tests (test/shmem/).
 *
 * Every check names what it checked and the expected/actual values, then takes the whole job down
 * with shmem_global_exit(1) so a failure can never turn into a hang.
 *
 * SHTEST_OSHMEM is defined only when a test is built against Open MPI's OSHMEM (OpenSHMEM 1.4) to
 * validate the test itself; it compiles out the 1.5-only routines that OSHMEM lacks. Against
 * hoshmem nothing is compiled out. */
#ifndef HOSHMEM_TEST_SHMEM_SHTEST_H
#define HOSHMEM_TEST_SHMEM_SHTEST_H

#include <shmem.h>

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* OSHMEM over UCX tcp executes incoming AMOs only when the target makes progress, and its
 * shmem_*_test does not progress; validation-only workaround in polling loops. */
#ifdef SHTEST_OSHMEM
#define SHT_REF_PROGRESS() shmem_quiet()
#else
#define SHT_REF_PROGRESS() ((void)0)
#endif

/* OSHMEM (Open MPI 4.1.4, UCX) lets an AMO overtake a put issued before shmem_fence, and leaves a
 * non-fetching AMO pending at the source until the source quiets (a PE waiting for it can hang).
 * When validating against OSHMEM only, a quiet follows such fences and signalling AMOs. */
#ifdef SHTEST_OSHMEM
#define SHT_REF_QUIET() shmem_quiet()
#else
#define SHT_REF_QUIET() ((void)0)
#endif

static int shtest_me = -1;
static int shtest_npes = 0;
static long shtest_nchecks = 0;

#define SHT_FAIL(...)                                                                      \
  do {                                                                                     \
    fprintf(stderr, "FAIL PE %d (%s:%d): ", shtest_me, __FILE__, __LINE__);                \
    fprintf(stderr, __VA_ARGS__);                                                          \
    fprintf(stderr, "\n");                                                                 \
    fflush(stderr);                                                                        \
    fflush(stdout);                                                                        \
    shmem_global_exit(1);                                                                  \
  } while (0)

/* CHECK(cond, "what: expected %d got %d", e, a) */
#define CHECK(cond, ...)          \
  do {                            \
    shtest_nchecks++;             \
    if (!(cond)) SHT_FAIL(__VA_ARGS__); \
  } while (0)

/* Integer equality with both values printed (as 64-bit). */
#define CHECK_EQ_U(what, expected, actual)                                                    \
  do {                                                                                        \
    unsigned long long e_ = (unsigned long long)(expected), a_ = (unsigned long long)(actual); \
    CHECK(e_ == a_, "%s: expected %llu (0x%llx) got %llu (0x%llx)", (what), e_, e_, a_, a_);  \
  } while (0)

static inline void shtest_init(void) {
  shmem_init();
  shtest_me = shmem_my_pe();
  shtest_npes = shmem_n_pes();
}

/* Whether PE `pe` shares this PE's node: HOSHMEM_PES_PER_NODE=k (tests of the inter-node paths
 * on one machine) groups k consecutive PEs per node; unset or 0, every PE is on this node. */
static inline int shtest_same_node(int pe) {
  const char *k_text = getenv("HOSHMEM_PES_PER_NODE");
  int k = k_text ? atoi(k_text) : 0;
  return k <= 0 || pe / k == shmem_my_pe() / k;
}

/* Used by tests that initialise with shmem_init_thread. */
static inline void shtest_after_init(void) {
  shtest_me = shmem_my_pe();
  shtest_npes = shmem_n_pes();
}

static inline void shtest_done(const char *name) {
  shmem_barrier_all();
  if (shtest_me == 0) printf("PASS %s: %d PEs, %ld checks on PE 0\n", name, shtest_npes, shtest_nchecks);
  fflush(stdout);
  shmem_finalize();
}

/* Work scale: full work when every PE has a core, less when oversubscribed (8 PEs on 2 cores)
 * so the whole suite stays fast; never below 1/8. */
static inline long shtest_scaled(long full) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores < 1) cores = 1;
  long div = 1;
  if (shtest_npes > cores) div = (shtest_npes + cores - 1) / cores;
  if (div > 8) div = 8;
  long v = full / div;
  return v < 1 ? 1 : v;
}

/* Deterministic 64-bit mixer (splitmix64 finaliser): values depend on every input bit. */
static inline uint64_t shtest_mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static inline uint64_t shtest_val(uint64_t pe, uint64_t idx, uint64_t salt) {
  return shtest_mix((pe << 48) ^ (salt << 32) ^ idx);
}

/* Byte i of a pattern identified by seed: cheap enough for 64 MiB buffers. */
static inline void shtest_fill(unsigned char *p, size_t n, uint64_t seed) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w = shtest_mix(seed ^ (i >> 3));
    memcpy(p + i, &w, 8);
  }
  if (i < n) {
    uint64_t w = shtest_mix(seed ^ (i >> 3));
    memcpy(p + i, &w, n - i);
  }
}

/* Returns the first index where p differs from the pattern, or n if it matches. */
static inline size_t shtest_verify(const unsigned char *p, size_t n, uint64_t seed) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w = shtest_mix(seed ^ (i >> 3));
    if (memcmp(p + i, &w, 8) != 0) {
      for (size_t j = 0; j < 8; j++)
        if (p[i + j] != ((unsigned char *)&w)[j]) return i + j;
    }
  }
  if (i < n) {
    uint64_t w = shtest_mix(seed ^ (i >> 3));
    for (size_t j = 0; i + j < n; j++)
      if (p[i + j] != ((unsigned char *)&w)[j]) return i + j;
  }
  return n;
}

/* For the failure tests: the runner checks that no recorded PE outlives the launcher. */
static inline void shtest_record_pid(void) {
  const char *dir = getenv("SHTEST_PIDDIR");
  if (!dir) return;
  char path[512];
  snprintf(path, sizeof path, "%s/%d", dir, shtest_me);
  FILE *f = fopen(path, "w");
  if (f) {
    fprintf(f, "%d\n", (int)getpid());
    fclose(f);
  }
}

static inline void shtest_sleep_ms(long ms) { usleep((useconds_t)(ms * 1000)); }

#endif
