/* Why the all-HW mode exists, shown on the software HCA (run with HOSHMEM_ATOMICS=hw over
 * //test/softhca, whose HCA atomics are, like real ones, not atomic with respect to CPU atomics).
 *
 * 1. Every PE contends on one word of PE 0 with every AMO type, through the library: in all-HW
 *    mode the HCA executes all of them, PE 0's own included (loopback), and nothing is lost:
 *    add/inc/fetch_add/fetch_inc sum exactly; compare_swap increments are exact; each PE's bit,
 *    set with or and cleared with and, ends clear; xor toggles an even number of times end at 0;
 *    every value swapped in is swapped out once or left. 32- and 64-bit types.
 * 2. The hazard (2 or more PEs): PE 0 adds to its own word with CPU atomics through shmem_ptr,
 *    bypassing the library, for as long as the others add through the HCA: updates are lost (the
 *    model widens its read-to-write window with SOFTHCA_ATOMIC_WINDOW_US). Unless the model's
 *    HCA executes 8-byte fetch-add and compare-swap as PCIe atomics (SOFTHCA_PCIE_ATOMICS=1):
 *    then nothing may be lost, and the library runs in coherent mode (HOSHMEM_COHERENT), where
 *    part 1 mixes CPU atomics (this node's PEs) with HCA compare-swap loops and fetch-adds. */
#include <shmemx.h>

#include "shtest.h"

#define ITERS 300

static long long word64;
static int word32;
static long long cas64;
static unsigned int bits32;
static unsigned long long bits64;
static unsigned long long xor64;
static unsigned int xor32;
static long long token, taken_total;
static long long mixed, done;
static long lost_all;

int main(void) {
  shtest_init();
  const int me = shtest_me, n = shtest_npes;
  CHECK(!strcmp(shmemx_atomicity_mode(), "all-hw"), "atomicity mode is %s, not all-hw",
        shmemx_atomicity_mode());
  const long iters = shtest_scaled(ITERS);
  long long taken_sum = 0;
  shmem_barrier_all();

  /* 1. every AMO type, every PE on PE 0's words */
  for (long i = 0; i < iters; i++) {
    shmem_longlong_atomic_add(&word64, 2, 0);
    shmem_longlong_atomic_inc(&word64, 0);
    (void)shmem_int_atomic_fetch_add(&word32, 3, 0);
    (void)shmem_int_atomic_fetch_inc(&word32, 0);
    long long seen = shmem_longlong_atomic_fetch(&cas64, 0), got;
    while ((got = shmem_longlong_atomic_compare_swap(&cas64, seen, seen + 1, 0)) != seen) seen = got;
    shmem_uint_atomic_or(&bits32, 1u << (me % 32), 0);
    shmem_ulonglong_atomic_fetch_or(&bits64, 1ull << (me % 64), 0);
    shmem_uint_atomic_and(&bits32, ~(1u << (me % 32)), 0);
    shmem_ulonglong_atomic_fetch_and(&bits64, ~(1ull << (me % 64)), 0);
    shmem_ulonglong_atomic_xor(&xor64, 0x9e3779b97f4a7c15ull, 0);
    shmem_uint_atomic_fetch_xor(&xor32, 0x7f4a7c15u, 0);
    shmem_ulonglong_atomic_xor(&xor64, 0x9e3779b97f4a7c15ull, 0);
    shmem_uint_atomic_fetch_xor(&xor32, 0x7f4a7c15u, 0);
    /* swap: every value swapped in comes out exactly once (or is the last one left) */
    taken_sum += shmem_longlong_atomic_swap(&token, (long long)me * iters + i + 1, 0);
  }
  shmem_longlong_atomic_add(&taken_total, taken_sum, 0);
  shmem_barrier_all();
  if (me == 0) {
    CHECK_EQ_U("add + inc on one 64-bit word", (long long)n * iters * 3, word64);
    CHECK_EQ_U("fetch_add + fetch_inc on one 32-bit word", (long long)n * iters * 4, word32);
    CHECK_EQ_U("compare_swap increments", (long long)n * iters, cas64);
    CHECK_EQ_U("or/and of each PE's bit, 32-bit", 0, bits32);
    CHECK_EQ_U("fetch_or/fetch_and of each PE's bit, 64-bit", 0, bits64);
    CHECK_EQ_U("xor twice, 64-bit", 0, xor64);
    CHECK_EQ_U("fetch_xor twice, 32-bit", 0, xor32);
    const long long all = (long long)n * iters;
    CHECK_EQ_U("values swapped out plus the one left = values swapped in", all * (all + 1) / 2,
               taken_total + token);
  }

  /* 2. CPU and HCA atomics mixed on one word lose updates */
  if (n >= 2) {
    static long lost = 0;
    for (int round = 0; round < 5 && lost == 0; round++) {  /* coherent: all 5 */
      if (me == 0) mixed = 0, done = 0;
      shmem_barrier_all();
      long cpu_adds = 0;
      if (me == 0) {
        /* CPU atomics for as long as the others add through the HCA */
        long long *mine = shmem_ptr(&mixed, 0);
        CHECK(mine != NULL, "shmem_ptr to this PE");
        while (__atomic_load_n(&done, __ATOMIC_ACQUIRE) < n - 1) {
          __atomic_fetch_add(mine, 1, __ATOMIC_SEQ_CST);
          cpu_adds++;
        }
      } else {
        for (long i = 0; i < 200; i++) shmem_longlong_atomic_add(&mixed, 1, 0);
        shmem_quiet();
        shmem_longlong_atomic_add(&done, 1, 0);
      }
      shmem_barrier_all();
      if (me == 0) lost = cpu_adds + 200L * (n - 1) - mixed;
      shmem_long_broadcast(SHMEM_TEAM_WORLD, &lost_all, &lost, 1, 0);
      lost = lost_all;
    }
    const char *pcie = getenv("SOFTHCA_PCIE_ATOMICS");
    const int coherent = pcie && !strcmp(pcie, "1");
    if (me == 0) printf("CPU and HCA atomics mixed on one word: %ld updates lost\n", lost);
    if (coherent)
      CHECK(lost == 0, "coherent (PCIe) HCA atomics and CPU atomics on one word lost %ld updates",
            lost);
    else
      CHECK(lost > 0, "CPU and HCA atomics mixed lost nothing in 5 rounds: is the model's window on?");
  }
  shtest_done("hw_atomicity");
  return 0;
}
