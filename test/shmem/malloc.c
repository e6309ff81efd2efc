/* Symmetric memory management: malloc/calloc/align/realloc/free/malloc_with_hints semantics,
 * symmetry (a put to the returned address on another PE lands in that PE's block), alignment,
 * churn with integrity checks, and heap exhaustion (NULL on every PE, library still usable).
 * Run with SHMEM_SYMMETRIC_SIZE=64M (BUILD sets it). */
#include <stdalign.h>

#include "shtest.h"

#define HEAP_BYTES ((size_t)64 << 20)

#ifdef SHTEST_OSHMEM
#define REALLOC_ALIGN 8 /* OSHMEM's realloc only aligns to 8 */
#else
#define REALLOC_ALIGN alignof(max_align_t)
#endif

static void check_symmetric(const char *what, unsigned char *p, size_t size, int salt) {
  int me = shtest_me, n = shtest_npes, right = (me + 1) % n, left = (me + n - 1) % n;
  size_t len = size < 4096 ? size : 4096;
  unsigned char buf[4096];
  shmem_barrier_all(); /* the right neighbour may still be checking its block's contents */
  shtest_fill(buf, len, shtest_val(me, size, salt));
  shmem_putmem(p + size - len, buf, len, right); /* the end of the block: all of it is mapped */
  shmem_barrier_all();
  size_t bad = shtest_verify(p + size - len, len, shtest_val(left, size, salt));
  CHECK(bad == len, "%s(%zu): put to the same address on PE %d did not land in its block (byte %zu)", what, size,
        right, bad);
  shmem_barrier_all();
}

static unsigned long long lcg_state;
static unsigned long long lcg(void) {
  lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return lcg_state >> 17;
}

int main(void) {
  shtest_init();
  int me = shtest_me, n = shtest_npes, right = (me + 1) % n, left = (me + n - 1) % n;

  /* size 0 -> NULL (1.5; OSHMEM 1.4 returns a pointer); free(NULL) is a no-op */
#ifndef SHTEST_OSHMEM
  CHECK(shmem_malloc(0) == NULL, "shmem_malloc(0) returned non-NULL");
  CHECK(shmem_calloc(0, 8) == NULL, "shmem_calloc(0, 8) returned non-NULL");
  CHECK(shmem_calloc(8, 0) == NULL, "shmem_calloc(8, 0) returned non-NULL");
  CHECK(shmem_align(64, 0) == NULL, "shmem_align(64, 0) returned non-NULL");
#endif
  shmem_free(NULL);

  /* malloc: alignment and symmetry over a range of sizes */
  static const size_t sizes[] = {1, 7, 8, 16, 100, 4095, 4096, 4097, 65536 + 3, 1 << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    unsigned char *p = shmem_malloc(sizes[i]);
    CHECK(p != NULL, "shmem_malloc(%zu) returned NULL", sizes[i]);
    CHECK((uintptr_t)p % alignof(max_align_t) == 0, "shmem_malloc(%zu) = %p not aligned to %zu", sizes[i], (void *)p,
          alignof(max_align_t));
    check_symmetric("shmem_malloc", p, sizes[i], 1);
    shmem_free(p);
  }

  /* calloc zeroes memory that was dirty before */
  {
    size_t sz = 256 * 1024;
    unsigned char *d = shmem_malloc(sz);
    CHECK(d != NULL, "shmem_malloc(%zu) returned NULL", sz);
    memset(d, 0xEE, sz);
    shmem_free(d);
    unsigned char *c = shmem_calloc(sz / 8, 8);
    CHECK(c != NULL, "shmem_calloc(%zu, 8) returned NULL", sz / 8);
    CHECK((uintptr_t)c % alignof(max_align_t) == 0, "shmem_calloc result %p misaligned", (void *)c);
    for (size_t i = 0; i < sz; i++) CHECK(c[i] == 0, "shmem_calloc: byte %zu is 0x%02x, not zero", i, c[i]);
    check_symmetric("shmem_calloc", c, sz, 2);
    shmem_free(c);
  }

  /* align: every power-of-two multiple of sizeof(void*) up to 1 MiB */
  for (size_t a = sizeof(void *); a <= ((size_t)1 << 20); a <<= 1) {
    unsigned char *p = shmem_align(a, 3 * a + 5);
    CHECK(p != NULL, "shmem_align(%zu, %zu) returned NULL", a, 3 * a + 5);
    CHECK((uintptr_t)p % a == 0, "shmem_align(%zu): %p not aligned", a, (void *)p);
    check_symmetric("shmem_align", p, 3 * a + 5, 3);
    shmem_free(p);
  }

  /* realloc: NULL -> malloc, grow and shrink keep the contents, 0 -> free */
  {
    unsigned char *p = shmem_realloc(NULL, 100);
    CHECK(p != NULL, "shmem_realloc(NULL, 100) returned NULL");
    check_symmetric("shmem_realloc(NULL)", p, 100, 4);
    shtest_fill(p, 100, shtest_val(me, 100, 5));
    unsigned char *blocker = shmem_malloc(64); /* makes in-place growth less likely */
    p = shmem_realloc(p, 300000);
    CHECK(p != NULL, "shmem_realloc(p, 300000) returned NULL");
    CHECK((uintptr_t)p % REALLOC_ALIGN == 0, "shmem_realloc result %p misaligned", (void *)p);
    size_t bad = shtest_verify(p, 100, shtest_val(me, 100, 5));
    CHECK(bad == 100, "shmem_realloc grow: byte %zu of the old contents changed", bad);
    check_symmetric("shmem_realloc grow", p, 300000, 6);
    shtest_fill(p, 300000, shtest_val(me, 300000, 7));
    p = shmem_realloc(p, 5000);
    CHECK(p != NULL, "shmem_realloc(p, 5000) returned NULL");
    bad = shtest_verify(p, 5000, shtest_val(me, 300000, 7));
    CHECK(bad == 5000, "shmem_realloc shrink: byte %zu of the kept contents changed", bad);
    check_symmetric("shmem_realloc shrink", p, 5000, 8);
    p = shmem_realloc(p, 0);
#ifndef SHTEST_OSHMEM
    CHECK(p == NULL, "shmem_realloc(p, 0) returned %p, expected NULL", (void *)p);
#endif
    shmem_free(blocker);
  }

#ifndef SHTEST_OSHMEM
  /* malloc_with_hints (1.5) */
  {
    static const long hints[] = {0, SHMEM_MALLOC_ATOMICS_REMOTE, SHMEM_MALLOC_SIGNAL_REMOTE,
                                 SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE};
    CHECK(shmem_malloc_with_hints(0, SHMEM_MALLOC_ATOMICS_REMOTE) == NULL, "shmem_malloc_with_hints(0) not NULL");
    for (int h = 0; h < 4; h++) {
      long *p = shmem_malloc_with_hints(4096, hints[h]);
      CHECK(p != NULL, "shmem_malloc_with_hints(4096, %ld) returned NULL", hints[h]);
      CHECK((uintptr_t)p % alignof(max_align_t) == 0, "shmem_malloc_with_hints result misaligned");
      check_symmetric("shmem_malloc_with_hints", (unsigned char *)p, 4096, 9 + h);
      p[0] = 0;
      shmem_barrier_all();
      shmem_long_atomic_add(p, me + 1, 0);
      shmem_barrier_all();
      if (me == 0) CHECK_EQ_U("atomic_add on malloc_with_hints memory", (unsigned long long)n * (n + 1) / 2, p[0]);
      shmem_free(p);
    }
  }
#endif

  /* churn: the same random sequence of malloc/free/realloc on every PE; each live block carries
   * an owner pattern in its first half and the left neighbour's pattern (put) in its second */
  {
    enum { SLOTS = 48 };
    unsigned char *slot[SLOTS] = {0};
    size_t slot_size[SLOTS] = {0};
    unsigned gen[SLOTS] = {0};
    lcg_state = 12345;
    long ops = shtest_scaled(1200);
    for (long op = 0; op < ops; op++) {
      int s = (int)(lcg() % SLOTS);
      unsigned long long r = lcg();
      size_t size = (r & 3) == 0 ? 1 + (size_t)(lcg() % (512 * 1024)) : 1 + (size_t)(lcg() % 2048);
      if (slot[s] == NULL) {
        slot[s] = shmem_malloc(size);
        CHECK(slot[s] != NULL, "churn op %ld: shmem_malloc(%zu) returned NULL", op, size);
        slot_size[s] = size;
      } else if ((r & 7) == 1) {
        unsigned char *q = shmem_realloc(slot[s], size);
        CHECK(q != NULL, "churn op %ld: shmem_realloc(%zu) returned NULL", op, size);
        /* my own half survives; beyond size/2 the left PE may already be putting its new half */
        size_t keep = slot_size[s] / 2 < size / 2 ? slot_size[s] / 2 : size / 2;
        size_t bad = shtest_verify(q, keep, shtest_val(me, (uint64_t)s, gen[s]));
        CHECK(bad == keep, "churn op %ld: shmem_realloc lost the contents at byte %zu", op, bad);
        slot[s] = q;
        slot_size[s] = size;
      } else {
        shmem_free(slot[s]);
        slot[s] = NULL;
        continue;
      }
      gen[s] = (unsigned)op + 1;
      size_t half = slot_size[s] / 2;
      shtest_fill(slot[s], half, shtest_val(me, (uint64_t)s, gen[s]));
      unsigned char *tmp = malloc(slot_size[s] - half + 1);
      shtest_fill(tmp, slot_size[s] - half, shtest_val(me + 1000, (uint64_t)s, gen[s]));
      shmem_putmem(slot[s] + half, tmp, slot_size[s] - half, right);
      free(tmp);
      if (op % 16 == 15 || op == ops - 1) {
        shmem_barrier_all(); /* completes the puts; then every live block must be intact */
        for (int k = 0; k < SLOTS; k++) {
          if (!slot[k]) continue;
          size_t h = slot_size[k] / 2;
          size_t bad = shtest_verify(slot[k], h, shtest_val(me, (uint64_t)k, gen[k]));
          CHECK(bad == h, "churn op %ld: slot %d (%zu bytes) own half corrupted at byte %zu", op, k, slot_size[k], bad);
          bad = shtest_verify(slot[k] + h, slot_size[k] - h, shtest_val(left + 1000, (uint64_t)k, gen[k]));
          CHECK(bad == slot_size[k] - h, "churn op %ld: slot %d (%zu bytes) half put by PE %d corrupted at byte %zu",
                op, k, slot_size[k], left, bad);
        }
        shmem_barrier_all();
      }
    }
    for (int k = 0; k < SLOTS; k++) shmem_free(slot[k]);
  }

  /* exhaustion: too large requests give NULL on every PE and the library stays usable */
  {
    static long nulls;
    nulls = 0;
    shmem_barrier_all();
    void *huge = shmem_malloc((size_t)1 << 46);
    CHECK(huge == NULL, "shmem_malloc(2^46) returned %p", huge);
    void *over = shmem_malloc(HEAP_BYTES + 4096);
    CHECK(over == NULL, "shmem_malloc(SHMEM_SYMMETRIC_SIZE + 4096) returned %p", over);
    shmem_long_atomic_inc(&nulls, 0);
    shmem_barrier_all();
    if (me == 0) CHECK_EQ_U("PEs that got NULL for too-large allocations", n, nulls);
    /* fill the heap with 1 MiB blocks until NULL: same count on every PE, then free and redo */
    enum { MAXB = 256 };
    static void *blocks[MAXB];
    static long counts[2];
    int count = 0;
    while (count < MAXB && (blocks[count] = shmem_malloc((size_t)1 << 20)) != NULL) count++;
    CHECK(count >= 32 && count < MAXB, "fitted %d blocks of 1 MiB in a 64 MiB heap", count);
    shmem_barrier_all();
    shmem_long_atomic_add(&counts[1], count, 0);
    shmem_barrier_all();
    if (me == 0) CHECK_EQ_U("sum of per-PE block counts at exhaustion", (unsigned long long)count * n, counts[1]);
    for (int i = 0; i < count; i++) {
      int *b = blocks[i];
      shmem_int_p(b, i, right);
    }
    shmem_barrier_all();
    for (int i = 0; i < count; i++) CHECK(*(int *)blocks[i] == i, "block %d after exhaustion: got %d", i, *(int *)blocks[i]);
    shmem_barrier_all();
    for (int i = 0; i < count; i++) shmem_free(blocks[i]);
    int again = 0;
    while (again < MAXB && (blocks[again] = shmem_malloc((size_t)1 << 20)) != NULL) again++;
    CHECK(again == count, "after freeing everything, %d blocks fit again (first time %d)", again, count);
    for (int i = 0; i < again; i++) shmem_free(blocks[i]);
    /* a realloc that cannot be satisfied leaves the block unchanged (1.5) */
    unsigned char *p = shmem_malloc(1000);
    CHECK(p != NULL, "shmem_malloc(1000) after exhaustion returned NULL");
    shtest_fill(p, 1000, shtest_val(me, 1, 77));
#ifndef SHTEST_OSHMEM
    unsigned char *q = shmem_realloc(p, HEAP_BYTES * 2);
    CHECK(q == NULL, "shmem_realloc to twice the heap returned %p", (void *)q);
    size_t bad = shtest_verify(p, 1000, shtest_val(me, 1, 77));
    CHECK(bad == 1000, "failed shmem_realloc changed the block at byte %zu", bad);
#endif
    check_symmetric("shmem_malloc after exhaustion", p, 1000, 78);
    shmem_free(p);
  }
  shtest_done("malloc");
  return 0;
}
