/* A put writes each destination element once.
 *
 * Found by running public OpenSHMEM ping-pong programs: the receiver waits until the last element
 * of a put becomes nonzero, zeroes it, and answers. If the library copies with a routine that
 * stores some bytes twice (glibc memcpy stores an 8-byte copy as two overlapping 8-byte stores),
 * the second store can land after the receiver's zero and bring the flag back: the receiver then
 * sees a message nobody sent and the exchange hangs.
 *
 * Part 1 (exact, where perf_event_open is allowed): a hardware write watchpoint on the last element
 * of a put to this PE counts the stores that hit it: exactly one.
 * Part 2 (statistical, always): pairs ping-pong; each receiver, after zeroing, watches the flag for
 * a while; the sender is blocked waiting for the answer, so nothing may write it. */
#include "shtest.h"

#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>

#define MAXN 160

static long lbuf[MAXN];
static int ibuf[MAXN];

enum { KIND_LONG_PUT, KIND_PUTMEM, KIND_PUT64, KIND_PUT_NBI, KIND_INT_PUT, KIND_PUT32, NKINDS };
static const char *kind_name[NKINDS] = {"shmem_long_put", "shmem_putmem", "shmem_put64",
                                        "shmem_long_put_nbi", "shmem_int_put", "shmem_put32"};

static void send(int kind, size_t n, int peer, const long *lsrc, const int *isrc) {
  switch (kind) {
    case KIND_LONG_PUT: shmem_long_put(lbuf, lsrc, n, peer); break;
    case KIND_PUTMEM: shmem_putmem(lbuf, lsrc, n * sizeof(long), peer); break;
    case KIND_PUT64: shmem_put64(lbuf, lsrc, n, peer); break;
    case KIND_PUT_NBI: shmem_long_put_nbi(lbuf, lsrc, n, peer); shmem_quiet(); break;
    case KIND_INT_PUT: shmem_int_put(ibuf, isrc, n, peer); break;
    default: shmem_put32(ibuf, isrc, n, peer); break;
  }
}

/* Waits for the flag (last element), zeroes it, then checks that it stays zero. */
static void receive(int kind, size_t n, long rep) {
  const int is_int = kind >= KIND_INT_PUT;
  if (is_int) {
    shmem_int_wait_until(&ibuf[n - 1], SHMEM_CMP_NE, 0);
    ibuf[n - 1] = 0;
  } else {
    shmem_long_wait_until(&lbuf[n - 1], SHMEM_CMP_NE, 0);
    lbuf[n - 1] = 0;
  }
  for (int i = 0; i < 200; ++i) {
    long v = is_int ? *(volatile int *)&ibuf[n - 1] : *(volatile long *)&lbuf[n - 1];
    CHECK(v == 0, "%s of %zu elements, round %ld: the last element came back as %ld after the "
          "receiver zeroed it (the put stored it twice)", kind_name[kind], n, rep, v);
  }
}

/* A counting write watchpoint on [addr, addr + len) for this thread, or -1 if not permitted. */
static int watch_writes(void *addr, int len) {
  struct perf_event_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.type = PERF_TYPE_BREAKPOINT;
  attr.size = sizeof attr;
  attr.bp_type = HW_BREAKPOINT_W;
  attr.bp_addr = (uintptr_t)addr;
  attr.bp_len = len == 8 ? HW_BREAKPOINT_LEN_8 : HW_BREAKPOINT_LEN_4;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  return (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
}

/* 1 if a watchpoint here counts a plain store exactly once: some virtual machines accept the
 * event and then count nothing, which would read as "stored 0 times". */
static int watchpoints_count(void) {
  static long probe;
  int fd = watch_writes(&probe, 8);
  if (fd < 0) return 0;
  *(volatile long *)&probe = 1;
  long long hits = -1;
  if (read(fd, &hits, sizeof hits) != (ssize_t)sizeof hits) hits = -1;
  close(fd);
  return hits == 1;
}

/* Returns 1 if the watchpoint check ran. */
static int count_stores_to_self(const long *lsrc, const int *isrc, const size_t *sizes,
                                int nsizes) {
  if (!watchpoints_count()) return 0;
  for (int kind = 0; kind < NKINDS; ++kind) {
    for (int s = 0; s < nsizes; ++s) {
      const size_t n = sizes[s];
      const int is_int = kind >= KIND_INT_PUT;
      void *flag = is_int ? (void *)&ibuf[n - 1] : (void *)&lbuf[n - 1];
      int fd = watch_writes(flag, is_int ? 4 : 8);
      if (fd < 0) return 0;
      send(kind, n, shtest_me, lsrc, isrc);
      long long hits = -1;
      CHECK(read(fd, &hits, sizeof hits) == (ssize_t)sizeof hits, "reading the watchpoint count");
      close(fd);
      CHECK(hits == 1, "%s of %zu elements to this PE stored the last element %lld times",
            kind_name[kind], n, hits);
    }
  }
  return 1;
}

int main(void) {
  shtest_init();
  static long lsrc[MAXN];
  static int isrc[MAXN];
  for (int i = 0; i < MAXN; ++i) {
    lsrc[i] = 1000 + i;
    isrc[i] = 2000 + i;
  }
  static const size_t sizes[] = {1, 2, 3, 4, 5, 8, 9, 16, 33, 64, 129, MAXN};
  const int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
  const int watched = count_stores_to_self(lsrc, isrc, sizes, nsizes);
  if (shtest_me == 0)
    printf("write watchpoints %s\n", watched ? "checked every put kind and size"
                                        : "not permitted or not counting here: skipped");
  shmem_barrier_all();
  /* A pair exchanges often enough to hit a double store with high probability when PEs have their
   * own cores, fewer times when oversubscribed (every exchange then sleeps). */
  const long ncores = sysconf(_SC_NPROCESSORS_ONLN);
  const long reps = shtest_npes <= ncores ? 2000 : 100;
  const int peer = shtest_me ^ 1;
  const int active = peer < shtest_npes;
  for (int kind = 0; kind < NKINDS; ++kind) {
    for (int s = 0; s < nsizes; ++s) {
      const size_t n = sizes[s];
      memset(lbuf, 0, sizeof lbuf); /* no flag left over from the previous round */
      memset(ibuf, 0, sizeof ibuf);
      shmem_barrier_all();
      if (!active) continue;
      for (long r = 0; r < reps; ++r) {
        if (shtest_me & 1) {
          receive(kind, n, r);
          send(kind, n, peer, lsrc, isrc);
        } else {
          send(kind, n, peer, lsrc, isrc);
          receive(kind, n, r);
        }
      }
      /* the data arrived with the flag */
      for (size_t i = 0; i + 1 < n; ++i) {
        if (kind >= KIND_INT_PUT)
          CHECK_EQ_U("int element", isrc[i], ibuf[i]);
        else
          CHECK_EQ_U("long element", lsrc[i], lbuf[i]);
      }
    }
  }
  shtest_done("sosval_put_once");
  return 0;
}
