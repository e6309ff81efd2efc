/* The "limit" backend: what the hardware allows between processes on one machine, with no
 * communication library at all. The PEs are processes forked from one parent that share one
 * MAP_SHARED|MAP_ANONYMOUS mapping; PE k's "symmetric heap" is slab k of it. put/get are memcpy,
 * AMOs are __atomic builtins (relaxed: x86 read-modify-writes are locked anyway), quiet is a full
 * fence, and the barrier is a sense-reversing counter barrier that spins briefly, then yields.
 * It offers exactly the interface of backend_shmem.h, so the suites run unchanged on it. */
#ifndef PERF_BACKEND_LIMIT_H
#define PERF_BACKEND_LIMIT_H

#define _GNU_SOURCE /* sched_setaffinity */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BK_HAS_AMO_NBI 1
#define BK_SLAB ((size_t)96 << 20) /* per-PE heap; pages are touched only when used */

struct bk_control {
  _Alignas(64) int count; /* arrivals in the current barrier episode */
  _Alignas(64) int sense; /* flips when the last PE arrives */
};

static char *bk_base;          /* whole mapping: control block, then one slab per PE */
static char *bk_mine;          /* this PE's slab */
static size_t bk_heap_used;    /* bump allocator offset, identical on every PE */
static int bk_me_, bk_npes_ = 1;
static int bk_local_sense;
static pid_t bk_children[64];

static inline struct bk_control *bk_ctl(void) { return (struct bk_control *)bk_base; }
static inline char *bk_slab(int pe) { return bk_base + 4096 + (size_t)pe * BK_SLAB; }
static inline int bk_me(void) { return bk_me_; }
static inline int bk_npes(void) { return bk_npes_; }

/* The address of symmetric object p on PE pe. */
static inline void *bk_remote(const void *p, int pe) {
  return bk_slab(pe) + ((const char *)p - bk_mine);
}
#define BK_R(p, pe) ((__typeof__(p))bk_remote((const void *)(p), pe))

/* npes: number of processes; the caller forks them all here. */
static void bk_init_n(int npes) {
  if (npes < 1 || npes > 64) { fprintf(stderr, "limit: -n must be 1..64\n"); exit(2); }
  size_t len = 4096 + (size_t)npes * BK_SLAB;
  bk_base = (char *)mmap(NULL, len, PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (bk_base == MAP_FAILED) { perror("limit: mmap"); exit(2); }
  bk_npes_ = npes;
  fflush(stdout);
  for (int pe = 1; pe < npes; pe++) {
    pid_t pid = fork();
    if (pid < 0) { perror("limit: fork"); exit(2); }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive PE 0 (e.g. killed by SIGPIPE) */
      if (getppid() == 1) _exit(1);
      bk_me_ = pe;
      break;
    }
    bk_children[pe] = pid;
  }
  bk_mine = bk_slab(bk_me_);
  /* same placement as perf/pin.sh gives the library runs: PE r on CPU r mod ncpus */
  const char *pin = getenv("PERF_PIN");
  if (pin && strcmp(pin, "1") == 0) {
    cpu_set_t all, one;
    if (sched_getaffinity(0, sizeof all, &all) == 0) {
      int want = bk_me_ % CPU_COUNT(&all), seen = 0;
      for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, &all) && seen++ == want) {
          CPU_ZERO(&one);
          CPU_SET(cpu, &one);
          sched_setaffinity(0, sizeof one, &one);
          break;
        }
    }
  }
}

static inline void *bk_malloc(size_t n) {
  void *p = bk_mine + bk_heap_used;
  bk_heap_used += (n + 4095) & ~(size_t)4095;
  if (bk_heap_used > BK_SLAB) { fprintf(stderr, "limit: heap exhausted\n"); exit(2); }
  return p;
}
static inline void bk_free(void *p) { (void)p; }

static inline void bk_spin_pause(unsigned *k) {
  if (++*k < 256) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("isb" ::: "memory"); /* as lib/base/cpu_relax.h: yield is a no-op there */
#else
#error "backend_limit.h: no spin-wait pause for this architecture"
#endif
  } else if (*k < 4096) {
    sched_yield(); /* oversubscribed: let the PE we wait for run */
  } else {
    struct timespec ts = {0, 20000}; /* long wait (idle target PE): stop burning a core */
    nanosleep(&ts, NULL);
  }
}

static void bk_barrier(void) {
  struct bk_control *c = bk_ctl();
  bk_local_sense = !bk_local_sense;
  if (__atomic_add_fetch(&c->count, 1, __ATOMIC_ACQ_REL) == bk_npes_) {
    __atomic_store_n(&c->count, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&c->sense, bk_local_sense, __ATOMIC_RELEASE);
  } else {
    unsigned k = 0;
    while (__atomic_load_n(&c->sense, __ATOMIC_ACQUIRE) != bk_local_sense) bk_spin_pause(&k);
  }
}

static inline __attribute__((always_inline)) void bk_quiet(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

static inline __attribute__((always_inline)) void bk_putmem(void *d, const void *s, size_t n, int pe) {
  memcpy(bk_remote(d, pe), s, n);
}
static inline __attribute__((always_inline)) void bk_getmem(void *d, const void *s, size_t n, int pe) {
  memcpy(d, bk_remote(s, pe), n);
}
#define bk_putmem_nbi bk_putmem
#define bk_getmem_nbi bk_getmem
static inline __attribute__((always_inline)) void bk_long_p(long *d, long v, int pe) {
  __atomic_store_n(BK_R(d, pe), v, __ATOMIC_RELAXED);
}
static inline __attribute__((always_inline)) long bk_long_g(const long *s, int pe) {
  return __atomic_load_n(BK_R(s, pe), __ATOMIC_RELAXED);
}

/* Waits for the other PEs (parent) or leaves (child); returns the job's exit status. */
static int bk_finish(int rc) {
  fflush(stdout);
  if (bk_me_ != 0) _exit(rc);
  for (int pe = 1; pe < bk_npes_; pe++) {
    int st = 0;
    while (waitpid(bk_children[pe], &st, 0) < 0 && errno == EINTR) {}
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) rc = rc ? rc : 1;
  }
  return rc;
}

#define BK_FETCH(TN, p, pe) __atomic_load_n(BK_R(p, pe), __ATOMIC_RELAXED)
#define BK_SET(TN, p, v, pe) __atomic_store_n(BK_R(p, pe), v, __ATOMIC_RELAXED)
#define BK_SWAP(TN, p, v, pe) __atomic_exchange_n(BK_R(p, pe), v, __ATOMIC_RELAXED)
#define BK_CSWAP(TN, p, c, v, pe)                                                       \
  ({                                                                                    \
    __typeof__(*(p)) bk_old_ = (c);                                                     \
    __atomic_compare_exchange_n(BK_R(p, pe), &bk_old_, v, 0, __ATOMIC_RELAXED,          \
                                __ATOMIC_RELAXED);                                      \
    bk_old_;                                                                            \
  })
#define BK_FINC(TN, p, pe) __atomic_fetch_add(BK_R(p, pe), 1, __ATOMIC_RELAXED)
#define BK_INC(TN, p, pe) ((void)__atomic_fetch_add(BK_R(p, pe), 1, __ATOMIC_RELAXED))
#define BK_FADD(TN, p, v, pe) __atomic_fetch_add(BK_R(p, pe), v, __ATOMIC_RELAXED)
#define BK_ADD(TN, p, v, pe) ((void)__atomic_fetch_add(BK_R(p, pe), v, __ATOMIC_RELAXED))
#define BK_FAND(TN, p, v, pe) __atomic_fetch_and(BK_R(p, pe), v, __ATOMIC_RELAXED)
#define BK_AND(TN, p, v, pe) ((void)__atomic_fetch_and(BK_R(p, pe), v, __ATOMIC_RELAXED))
#define BK_FOR(TN, p, v, pe) __atomic_fetch_or(BK_R(p, pe), v, __ATOMIC_RELAXED)
#define BK_OR(TN, p, v, pe) ((void)__atomic_fetch_or(BK_R(p, pe), v, __ATOMIC_RELAXED))
#define BK_FXOR(TN, p, v, pe) __atomic_fetch_xor(BK_R(p, pe), v, __ATOMIC_RELAXED)
#define BK_XOR(TN, p, v, pe) ((void)__atomic_fetch_xor(BK_R(p, pe), v, __ATOMIC_RELAXED))
#define BK_FETCH_NBI(TN, f, p, pe) (*(f) = BK_FETCH(TN, p, pe))
#define BK_SWAP_NBI(TN, f, p, v, pe) (*(f) = BK_SWAP(TN, p, v, pe))
#define BK_CSWAP_NBI(TN, f, p, c, v, pe) (*(f) = BK_CSWAP(TN, p, c, v, pe))
#define BK_FINC_NBI(TN, f, p, pe) (*(f) = BK_FINC(TN, p, pe))
#define BK_FADD_NBI(TN, f, p, v, pe) (*(f) = BK_FADD(TN, p, v, pe))
#define BK_FAND_NBI(TN, f, p, v, pe) (*(f) = BK_FAND(TN, p, v, pe))
#define BK_FOR_NBI(TN, f, p, v, pe) (*(f) = BK_FOR(TN, p, v, pe))
#define BK_FXOR_NBI(TN, f, p, v, pe) (*(f) = BK_FXOR(TN, p, v, pe))

#endif
