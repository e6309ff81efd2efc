/* Instructions per operation, for perf/ucx/instructions.sh (which runs PE 0 under callgrind).
 * Standard OpenSHMEM only, so the same source builds with hoshmem's and Open MPI's oshcc.
 *
 * PE 0 calls each operation COUNT times, each call inside a noinline function op_<row>: the
 * script gives callgrind --collect-atstart=no --toggle-collect=op_*, so only instructions inside
 * those functions count (the loop, the quiets between calls and the warm-up do not).
 * CALLGRIND_DUMP_STATS_AT("<row>") after each row's loop writes one profile per row. op_empty
 * (the same call with nothing in it) is the baseline the script subtracts. Non-blocking rows
 * quiet outside the counted function every 8 calls, so a counted call never waits for room.
 * PE 1 (the target) only serves: it waits in shmem_long_wait_until for PE 0's end flag (over UD
 * both libraries answer from inside that wait; OSHMEM's shmem_long_test does not progress UCX,
 * so a target looping in it never answers a ud_mlx5 get).
 * Without valgrind the client requests are no-ops: the program then just checks its results.
 *   instr_ops [COUNT]            (default 1000) */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <valgrind/callgrind.h>

#define NOINLINE __attribute__((noinline))

static long *lw, *lsrc;      /* symmetric: long target word, put/get source */
static int *iw;              /* symmetric: 32-bit AMO target */
static long *endflag;       /* symmetric: PE 1 leaves when it is not 0 */
static long sink;

NOINLINE void op_empty(int pe) { __asm__ volatile("" : : "r"(pe) : "memory"); }
NOINLINE void op_p(int pe) { shmem_long_p(lw, 1, pe); }
NOINLINE void op_put(int pe) { shmem_putmem(lw, lsrc, 8, pe); }
NOINLINE void op_put_nbi(int pe) { shmem_putmem_nbi(lw, lsrc, 8, pe); }
NOINLINE void op_get(int pe) { shmem_getmem(&sink, lw, 8, pe); }
NOINLINE void op_g(int pe) { sink += shmem_long_g(lw, pe); }
NOINLINE void op_add(int pe) { shmem_long_atomic_add(lw, 1, pe); }
NOINLINE void op_fetch_add(int pe) { sink += shmem_long_atomic_fetch_add(lw, 1, pe); }
NOINLINE void op_compare_swap(int pe) { sink += shmem_long_atomic_compare_swap(lw, 5, 6, pe); }
NOINLINE void op_swap(int pe) { sink += shmem_long_atomic_swap(lw, 7, pe); }
NOINLINE void op_add32(int pe) { shmem_int_atomic_add(iw, 1, pe); }
NOINLINE void op_fetch_add32(int pe) { sink += shmem_int_atomic_fetch_add(iw, 1, pe); }
NOINLINE void op_quiet(int pe) { (void)pe; shmem_quiet(); }

typedef void (*op_fn)(int);
struct row {
  const char *name;
  op_fn fn;
  int nbi; /* completes only at a quiet: quiet every 8 calls, outside the count */
};
static const struct row rows[] = {
    {"empty", op_empty, 0},         {"p", op_p, 1},
    {"put", op_put, 1},             {"put_nbi", op_put_nbi, 1},
    {"get", op_get, 0},             {"g", op_g, 0},
    {"add", op_add, 1},             {"fetch_add", op_fetch_add, 0},
    {"compare_swap", op_compare_swap, 0}, {"swap", op_swap, 0},
    {"add32", op_add32, 1},         {"fetch_add32", op_fetch_add32, 0},
    {"quiet16", op_quiet, 0},
};

static void run_row(const struct row *r, int count, int pe) {
  const int quiet = r->fn == op_quiet;
  for (int i = 0; i < count; i++) {
    if (quiet) /* 16 puts, not counted, then the counted quiet */
      for (int k = 0; k < 16; k++) shmem_putmem_nbi(lw, lsrc, 8, pe);
    r->fn(pe);
    if (r->nbi && i % 8 == 7) shmem_quiet();
  }
  shmem_quiet();
}

int main(int argc, char **argv) {
  shmem_init();
  const int count = argc > 1 ? atoi(argv[1]) : 1000;
  const int me = shmem_my_pe(), peer = shmem_n_pes() - 1;
  lw = shmem_calloc(1, sizeof(long));
  lsrc = shmem_calloc(1, sizeof(long));
  iw = shmem_calloc(1, sizeof(int));
  endflag = shmem_calloc(1, sizeof(long));
  const int nrows = (int)(sizeof rows / sizeof rows[0]);
  shmem_barrier_all();
  if (me == 0 && peer > 0) {
    for (int r = 0; r < nrows; r++) run_row(&rows[r], 100, peer); /* warm-up: connect, fill caches */
    CALLGRIND_ZERO_STATS; /* the warm-up's calls counted too (op_*): drop them */
    for (int r = 0; r < nrows; r++) {
      run_row(&rows[r], count, peer);
      CALLGRIND_DUMP_STATS_AT(rows[r].name);
    }
    /* check: every counted and warm-up add/fetch_add reached the target, in order */
    shmem_long_atomic_set(lw, 0, peer);
    for (int i = 0; i < 10; i++) shmem_long_atomic_add(lw, 3, peer);
    const long got = shmem_long_atomic_fetch(lw, peer);
    const int got32 = shmem_int_atomic_fetch(iw, peer);
    const int want32 = 2 * (count + 100);
    printf("# instr_ops: %d calls per row, %d rows; check: long %ld (want 30), int %d (want %d)%s\n",
           count, nrows, got, got32, want32, got == 30 && got32 == want32 ? "" : " WRONG");
    shmem_long_p(endflag, 1, peer);
    shmem_quiet();
  } else if (me == peer) {
    shmem_long_wait_until(endflag, SHMEM_CMP_NE, 0);
  }
  shmem_barrier_all();
  shmem_finalize();
  return 0;
}
