/* Global and static variables are symmetric: remote put/get/AMO on globals, file statics and
 * function-local statics, in .data (initialised) and .bss (zero), including arrays larger than a
 * page. Initial values must be intact before anyone writes. */
#include "shtest.h"

#define BIG_DATA 3001 /* longs: ~23 KiB, several pages, odd length */
#define BIG_BSS 5003

int g_data_int = 42;
long g_data_arr[BIG_DATA] = {1, 2, 3};
long g_bss_arr[BIG_BSS];
long long g_bss_counter;
double g_data_dbl = 2.5;
static int s_data_int = 7;
static short s_bss_arr[4099]; /* odd size in bytes, crosses pages */
static char s_data_bytes[9000] = "symmetric";

static long *local_static_counter(void) {
  static long sl_counter; /* .bss, function-local */
  return &sl_counter;
}
static int *local_static_data(void) {
  static int sl_data[1500] = {11, 22, 33}; /* .data, function-local, > 1 page */
  return sl_data;
}

int main(void) {
  shtest_init();
  int me = shtest_me, n = shtest_npes, right = (me + 1) % n, left = (me + n - 1) % n;

  /* 0. initial values, read remotely before anyone writes */
  CHECK(shmem_int_g(&g_data_int, right) == 42, "remote g of initialised global int: expected 42 got %d",
        shmem_int_g(&g_data_int, right));
  CHECK(shmem_long_g(&g_data_arr[2], right) == 3, "remote g of initialised global array[2]: got %ld",
        shmem_long_g(&g_data_arr[2], right));
  CHECK(shmem_long_g(&g_data_arr[BIG_DATA - 1], right) == 0, "remote g of global array tail: got %ld",
        shmem_long_g(&g_data_arr[BIG_DATA - 1], right));
  CHECK(shmem_int_g(&s_data_int, right) == 7, "remote g of static int: got %d", shmem_int_g(&s_data_int, right));
  CHECK(shmem_double_g(&g_data_dbl, right) == 2.5, "remote g of global double: got %g", shmem_double_g(&g_data_dbl, right));
  CHECK(shmem_int_g(&local_static_data()[1], right) == 22, "remote g of static-local data: got %d",
        shmem_int_g(&local_static_data()[1], right));
  {
    char buf[16] = {0};
    shmem_getmem(buf, s_data_bytes, 10, right);
    CHECK(strcmp(buf, "symmetric") == 0, "remote getmem of static char array: got '%s'", buf);
    long tmp[BIG_BSS];
    shmem_long_get(tmp, g_bss_arr, BIG_BSS, right);
    for (int i = 0; i < BIG_BSS; i++) CHECK(tmp[i] == 0, "global .bss array[%d] not zero: %ld", i, tmp[i]);
  }
  shmem_barrier_all();

  /* 1. puts into the right neighbour's globals, checked by the owner */
  long src[BIG_BSS];
  for (int i = 0; i < BIG_BSS; i++) src[i] = (long)shtest_val(me, i, 1);
  shmem_long_put(g_bss_arr, src, BIG_BSS, right);
  shmem_long_put(g_data_arr, src, BIG_DATA, right);
  short ssrc[4099];
  for (int i = 0; i < 4099; i++) ssrc[i] = (short)shtest_val(me, i, 2);
  shmem_short_put(s_bss_arr, ssrc, 4099, right);
  shmem_int_p(&g_data_int, 1000 + me, right);
  shmem_int_p(&s_data_int, 2000 + me, right);
  shmem_double_p(&g_data_dbl, 0.25 * me, right);
  int isrc[1500];
  for (int i = 0; i < 1500; i++) isrc[i] = (int)shtest_val(me, i, 3);
  shmem_int_put(local_static_data(), isrc, 1500, right);
  char csrc[9000];
  shtest_fill((unsigned char *)csrc, sizeof csrc, shtest_val(me, 0, 4));
  shmem_putmem(s_data_bytes, csrc, sizeof csrc, right);
  shmem_barrier_all();
  for (int i = 0; i < BIG_BSS; i++)
    CHECK(g_bss_arr[i] == (long)shtest_val(left, i, 1), "put into global .bss array[%d] from PE %d: wrong value", i, left);
  for (int i = 0; i < BIG_DATA; i++)
    CHECK(g_data_arr[i] == (long)shtest_val(left, i, 1), "put into global .data array[%d] from PE %d: wrong value", i, left);
  for (int i = 0; i < 4099; i++)
    CHECK(s_bss_arr[i] == (short)shtest_val(left, i, 2), "put into static .bss short array[%d]: wrong value", i);
  CHECK(g_data_int == 1000 + left, "p into global int: expected %d got %d", 1000 + left, g_data_int);
  CHECK(s_data_int == 2000 + left, "p into static int: expected %d got %d", 2000 + left, s_data_int);
  CHECK(g_data_dbl == 0.25 * left, "p into global double: expected %g got %g", 0.25 * left, g_data_dbl);
  for (int i = 0; i < 1500; i++)
    CHECK(local_static_data()[i] == (int)shtest_val(left, i, 3), "put into static-local int array[%d]: wrong value", i);
  {
    size_t bad = shtest_verify((unsigned char *)s_data_bytes, sizeof s_data_bytes, shtest_val(left, 0, 4));
    CHECK(bad == sizeof s_data_bytes, "putmem into static char[9000]: first wrong byte %zu", bad);
  }
  shmem_barrier_all();

  /* 2. gets from the right neighbour's globals */
  {
    long got[BIG_BSS];
    shmem_long_get(got, g_bss_arr, BIG_BSS, right);
    for (int i = 0; i < BIG_BSS; i++)
      CHECK(got[i] == (long)shtest_val(me, i, 1), "get of PE %d's global .bss array[%d]: wrong value", right, i);
    int gi[1500];
    shmem_int_get(gi, local_static_data(), 1500, right);
    for (int i = 0; i < 1500; i++)
      CHECK(gi[i] == (int)shtest_val(me, i, 3), "get of PE %d's static-local array[%d]: wrong value", right, i);
  }
  shmem_barrier_all();

  /* 3. AMOs on globals and statics: everyone increments PE 0's and its right neighbour's */
  long iters = shtest_scaled(500);
  for (long i = 0; i < iters; i++) {
    shmem_longlong_atomic_inc(&g_bss_counter, 0);
    shmem_long_atomic_fetch_add(local_static_counter(), 2, right);
    shmem_int_atomic_add(&s_data_int, 1, right);
  }
  shmem_barrier_all();
  if (me == 0) CHECK_EQ_U("global .bss counter after atomic_inc by all PEs", (unsigned long long)(iters * n), g_bss_counter);
  CHECK_EQ_U("static-local counter after fetch_add by left PE", (unsigned long long)(2 * iters), *local_static_counter());
  CHECK_EQ_U("static .data int after atomic_add by left PE", (unsigned long long)(2000 + left + iters), s_data_int);
  shtest_done("globals");
  return 0;
}
