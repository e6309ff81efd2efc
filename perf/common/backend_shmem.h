/* Benchmark backend on the standard OpenSHMEM C API (1.4 and later; the fetching _nbi AMOs of
 * 1.5 are used only when the header says 1.5 or later). Builds with any oshcc. */
#ifndef PERF_BACKEND_SHMEM_H
#define PERF_BACKEND_SHMEM_H

#include <shmem.h>
#include <stdlib.h>

#if defined(SHMEM_MAJOR_VERSION) && defined(SHMEM_MINOR_VERSION) && \
    (SHMEM_MAJOR_VERSION > 1 || (SHMEM_MAJOR_VERSION == 1 && SHMEM_MINOR_VERSION >= 5))
#define BK_HAS_AMO_NBI 1
#else
#define BK_HAS_AMO_NBI 0
#endif

/* Open MPI's OSHMEM before 4.1.5 writes 8 bytes into the 4-byte result of a 32-bit compare_swap
 * and aborts with "stack smashing detected" (open-mpi/ompi issue 11257, fixed in 4.1.5). */
#if defined(OSHMEM_MAJOR_VERSION) && defined(OSHMEM_MINOR_VERSION) && \
    defined(OSHMEM_RELEASE_VERSION) &&                                 \
    (OSHMEM_MAJOR_VERSION * 10000 + OSHMEM_MINOR_VERSION * 100 + OSHMEM_RELEASE_VERSION < 40105)
#define BK_BROKEN_CSWAP32 "OSHMEM < 4.1.5 corrupts the stack in 32-bit compare_swap (ompi issue 11257)"
#endif

/* The data-path adapters must cost nothing: always inlined, so that each library's own routine
 * (a call for OSHMEM, an inline body for hoshmem) sits directly in the benchmark loop. */
#define BK_DATA_PATH static inline __attribute__((always_inline))

/* PERF_THREAD_LEVEL=0..3 initializes with shmem_init_thread at that level (to compare levels). */
static inline void bk_init(void) {
  const char *level = getenv("PERF_THREAD_LEVEL");
  int provided;
  if (level && *level) shmem_init_thread(atoi(level), &provided);
  else shmem_init();
}
/* Returns the exit status for main(). */
static inline int bk_finish(int rc) { shmem_finalize(); return rc; }
static inline int bk_me(void) { return shmem_my_pe(); }
static inline int bk_npes(void) { return shmem_n_pes(); }
static inline void *bk_malloc(size_t n) { return shmem_malloc(n); }
static inline void bk_free(void *p) { shmem_free(p); }
static inline void bk_barrier(void) { shmem_barrier_all(); }
BK_DATA_PATH void bk_quiet(void) { shmem_quiet(); }

BK_DATA_PATH void bk_putmem(void *d, const void *s, size_t n, int pe) { shmem_putmem(d, s, n, pe); }
BK_DATA_PATH void bk_getmem(void *d, const void *s, size_t n, int pe) { shmem_getmem(d, s, n, pe); }
BK_DATA_PATH void bk_putmem_nbi(void *d, const void *s, size_t n, int pe) {
  shmem_putmem_nbi(d, s, n, pe);
}
BK_DATA_PATH void bk_getmem_nbi(void *d, const void *s, size_t n, int pe) {
  shmem_getmem_nbi(d, s, n, pe);
}
BK_DATA_PATH void bk_long_p(long *d, long v, int pe) { shmem_long_p(d, v, pe); }
BK_DATA_PATH long bk_long_g(const long *s, int pe) { return shmem_long_g(s, pe); }

/* AMOs: TN is the OpenSHMEM TYPENAME (long, int, uint64, uint32). */
#define BK_FETCH(TN, p, pe) shmem_##TN##_atomic_fetch(p, pe)
#define BK_SET(TN, p, v, pe) shmem_##TN##_atomic_set(p, v, pe)
#define BK_SWAP(TN, p, v, pe) shmem_##TN##_atomic_swap(p, v, pe)
#define BK_CSWAP(TN, p, c, v, pe) shmem_##TN##_atomic_compare_swap(p, c, v, pe)
#define BK_FINC(TN, p, pe) shmem_##TN##_atomic_fetch_inc(p, pe)
#define BK_INC(TN, p, pe) shmem_##TN##_atomic_inc(p, pe)
#define BK_FADD(TN, p, v, pe) shmem_##TN##_atomic_fetch_add(p, v, pe)
#define BK_ADD(TN, p, v, pe) shmem_##TN##_atomic_add(p, v, pe)
#define BK_FAND(TN, p, v, pe) shmem_##TN##_atomic_fetch_and(p, v, pe)
#define BK_AND(TN, p, v, pe) shmem_##TN##_atomic_and(p, v, pe)
#define BK_FOR(TN, p, v, pe) shmem_##TN##_atomic_fetch_or(p, v, pe)
#define BK_OR(TN, p, v, pe) shmem_##TN##_atomic_or(p, v, pe)
#define BK_FXOR(TN, p, v, pe) shmem_##TN##_atomic_fetch_xor(p, v, pe)
#define BK_XOR(TN, p, v, pe) shmem_##TN##_atomic_xor(p, v, pe)
#if BK_HAS_AMO_NBI
#define BK_FETCH_NBI(TN, f, p, pe) shmem_##TN##_atomic_fetch_nbi(f, p, pe)
#define BK_SWAP_NBI(TN, f, p, v, pe) shmem_##TN##_atomic_swap_nbi(f, p, v, pe)
#define BK_CSWAP_NBI(TN, f, p, c, v, pe) shmem_##TN##_atomic_compare_swap_nbi(f, p, c, v, pe)
#define BK_FINC_NBI(TN, f, p, pe) shmem_##TN##_atomic_fetch_inc_nbi(f, p, pe)
#define BK_FADD_NBI(TN, f, p, v, pe) shmem_##TN##_atomic_fetch_add_nbi(f, p, v, pe)
#define BK_FAND_NBI(TN, f, p, v, pe) shmem_##TN##_atomic_fetch_and_nbi(f, p, v, pe)
#define BK_FOR_NBI(TN, f, p, v, pe) shmem_##TN##_atomic_fetch_or_nbi(f, p, v, pe)
#define BK_FXOR_NBI(TN, f, p, v, pe) shmem_##TN##_atomic_fetch_xor_nbi(f, p, v, pe)
#endif

#endif
