/* The operations whose mlx5 WQEs wqe_compare_test.sh compares with UCX's: PE 0 performs each
 * once on a word of its own at PE 1 (run with HOSHMEM_PES_PER_NODE=1, HOSHMEM_ATOMICS=hw,
 * HOSHMEM_TRANSPORT=rc or dc over the model, SOFTHCA_WQE_LOG set). The values are those UCX's
 * ucx_perftest sends in the WQE the comparison picks (its "sentinel": 2; compare 0; add_lat's 1),
 * so that operands compare byte for byte. PE 1 prints where each word is (the remote address in
 * PE 0's WQE), PE 0 its pid (the log file to read); PE 0 checks every operation took effect. */
#include <shmem.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ZCOPY_BYTES 1024 /* above hoshmem's inline limit: a zero-copy RDMA write */

enum {
  PUT_INLINE, PUT_ZCOPY, GET, ADD64, ADD64_AGAIN, FADD64, CSWAP64, SWAP64,
  ADD32, FADD32, CSWAP32, SWAP32, NOPS
};
static const char *const names[NOPS] = {"put_inline", "put_zcopy", "get",     "add64",
                                        "add64_again", "fadd64",   "cswap64", "swap64",
                                        "add32",      "fadd32",    "cswap32", "swap32"};

static int failed;
static void check(const char *what, long long want, long long got) {
  if (want != got) {
    fprintf(stderr, "wqe_ops: %s: expected %lld, got %lld\n", what, want, got);
    failed = 1;
  }
}

int main(void) {
  shmem_init();
  const int me = shmem_my_pe();
  if (shmem_n_pes() != 2) {
    if (me == 0) fprintf(stderr, "wqe_ops: run with 2 PEs\n");
    shmem_finalize();
    return 2;
  }
  /* one word (or range) per operation, 2 KiB apart */
  uint8_t *at = shmem_calloc(NOPS, 2 * ZCOPY_BYTES);
  /* registered (the heap): the zero-copy put's source and the get's target */
  uint8_t *local = shmem_calloc(1, 2 * ZCOPY_BYTES);
  void *t[NOPS];
  for (int i = 0; i < NOPS; i++) t[i] = at + (size_t)i * 2 * ZCOPY_BYTES;
  *(long long *)t[GET] = 0x0102030405060708ll;
  if (me == 1) {
    for (int i = 0; i < NOPS; i++)
      printf("wqe-target %s 0x%llx\n", names[i], (unsigned long long)(uintptr_t)t[i]);
    fflush(stdout);
  } else {
    printf("wqe-pe0 pid %d\n", (int)getpid());
    fflush(stdout);
  }
  shmem_barrier_all();
  if (me == 0) {
    long long old;
    int old32;
    shmem_long_p((long *)t[PUT_INLINE], 2, 1);
    shmem_quiet();
    for (int i = 0; i < ZCOPY_BYTES; i++) local[i] = (uint8_t)(i + 1);
    shmem_putmem(t[PUT_ZCOPY], local, ZCOPY_BYTES, 1);
    shmem_quiet();
    shmem_getmem(local + ZCOPY_BYTES, t[GET], 8, 1);
    check("get", 0x0102030405060708ll, *(long long *)(local + ZCOPY_BYTES));
    shmem_longlong_atomic_add((long long *)t[ADD64], 1, 1);
    shmem_quiet();
    /* RC: the endpoint has had an add, so this one is written from the endpoint's fetch-add
     * template (lib/transport/rc/rc_lane.h try_add_inline), not by write_atomic */
    shmem_longlong_atomic_add((long long *)t[ADD64_AGAIN], 1, 1);
    shmem_quiet();
    old = shmem_longlong_atomic_fetch_add((long long *)t[FADD64], 2, 1);
    check("fadd64 old", 0, old);
    old = shmem_longlong_atomic_compare_swap((long long *)t[CSWAP64], 0, 2, 1);
    check("cswap64 old", 0, old);
    old = shmem_longlong_atomic_swap((long long *)t[SWAP64], 2, 1);
    check("swap64 old", 0, old);
    shmem_int_atomic_add((int *)t[ADD32], 2, 1);
    shmem_quiet();
    old32 = shmem_int_atomic_fetch_add((int *)t[FADD32], 2, 1);
    check("fadd32 old", 0, old32);
    old32 = shmem_int_atomic_compare_swap((int *)t[CSWAP32], 0, 2, 1);
    check("cswap32 old", 0, old32);
    old32 = shmem_int_atomic_swap((int *)t[SWAP32], 2, 1);
    check("swap32 old", 0, old32);
    shmem_quiet();
  }
  shmem_barrier_all();
  if (me == 1) {
    check("put_inline", 2, *(long long *)t[PUT_INLINE]);
    for (int i = 0; i < ZCOPY_BYTES; i++)
      if (((uint8_t *)t[PUT_ZCOPY])[i] != (uint8_t)(i + 1)) {
        check("put_zcopy byte", (uint8_t)(i + 1), ((uint8_t *)t[PUT_ZCOPY])[i]);
        break;
      }
    check("add64", 1, *(long long *)t[ADD64]);
    check("add64_again", 1, *(long long *)t[ADD64_AGAIN]);
    check("fadd64", 2, *(long long *)t[FADD64]);
    check("cswap64", 2, *(long long *)t[CSWAP64]);
    check("swap64", 2, *(long long *)t[SWAP64]);
    check("add32", 2, *(int *)t[ADD32]);
    check("fadd32", 2, *(int *)t[FADD32]);
    check("cswap32", 2, *(int *)t[CSWAP32]);
    check("swap32", 2, *(int *)t[SWAP32]);
  }
  shmem_barrier_all();
  if (me == 0 && !failed) printf("wqe-ops done\n");
  shmem_finalize();
  return failed;
}
