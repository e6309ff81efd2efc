/* Library queries: init_thread/query_thread, info_get_version/get_name and the version constants,
 * shmem_ptr (non-NULL for every PE of this single node, on heap and globals; writes through it
 * are visible), addr_accessible, pe_accessible. With SHMEM_THREAD_MULTIPLE provided, two threads
 * per PE do AMOs concurrently. */
#include <pthread.h>

#include "shtest.h"

static long g_word; /* .bss */
static int g_data[2048] = {5}; /* .data, > 1 page */
static long thread_counter;

/* hoshmem maps globals of same-node PEs; OSHMEM returns NULL for them (conforming, but hoshmem's
 * design promises more, so the global part is skipped only when validating against OSHMEM). */
#ifdef SHTEST_OSHMEM
#define PTR_GLOBALS 0
#else
#define PTR_GLOBALS 1
#endif

static void *thread_body(void *arg) {
  long iters = (long)arg;
  for (long i = 0; i < iters; i++) shmem_long_atomic_fetch_add(&thread_counter, 1, 0);
  return NULL;
}

int main(void) {
  int provided = -1;
  int rc = shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
  shtest_after_init();
  int me = shtest_me, n = shtest_npes;
  CHECK(rc == 0, "shmem_init_thread returned %d, expected 0", rc);
  CHECK(SHMEM_THREAD_SINGLE < SHMEM_THREAD_FUNNELED && SHMEM_THREAD_FUNNELED < SHMEM_THREAD_SERIALIZED &&
            SHMEM_THREAD_SERIALIZED < SHMEM_THREAD_MULTIPLE,
        "thread level constants not increasing: %d %d %d %d", SHMEM_THREAD_SINGLE, SHMEM_THREAD_FUNNELED,
        SHMEM_THREAD_SERIALIZED, SHMEM_THREAD_MULTIPLE);
  CHECK(provided == SHMEM_THREAD_SINGLE || provided == SHMEM_THREAD_FUNNELED ||
            provided == SHMEM_THREAD_SERIALIZED || provided == SHMEM_THREAD_MULTIPLE,
        "shmem_init_thread: provided = %d is not one of the four levels", provided);
  int queried = -2;
  shmem_query_thread(&queried);
  CHECK(queried == provided, "shmem_query_thread = %d, shmem_init_thread provided %d", queried, provided);
  CHECK(n >= 1 && me >= 0 && me < n, "my_pe %d / n_pes %d", me, n);

  /* version and name */
  int major = -1, minor = -1;
  shmem_info_get_version(&major, &minor);
  CHECK(major == SHMEM_MAJOR_VERSION && minor == SHMEM_MINOR_VERSION,
        "shmem_info_get_version = %d.%d, header says %d.%d", major, minor, SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION);
#ifndef SHTEST_OSHMEM
  CHECK(SHMEM_MAJOR_VERSION == 1 && SHMEM_MINOR_VERSION >= 5, "SHMEM version %d.%d, expected 1.5 or later",
        SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION);
#endif
  CHECK(_SHMEM_MAJOR_VERSION == SHMEM_MAJOR_VERSION && _SHMEM_MINOR_VERSION == SHMEM_MINOR_VERSION,
        "deprecated _SHMEM_*_VERSION differ");
  char name[SHMEM_MAX_NAME_LEN + 1];
  memset(name, 0x7f, sizeof name);
  shmem_info_get_name(name);
  size_t len = strnlen(name, sizeof name);
  CHECK(len > 0 && len < SHMEM_MAX_NAME_LEN, "shmem_info_get_name: length %zu (max %d)", len, SHMEM_MAX_NAME_LEN);
  CHECK(strcmp(name, SHMEM_VENDOR_STRING) == 0, "shmem_info_get_name '%s' != SHMEM_VENDOR_STRING '%s'", name,
        SHMEM_VENDOR_STRING);
  CHECK(SHMEM_CMP_EQ != SHMEM_CMP_NE && SHMEM_CMP_GT != SHMEM_CMP_LT && SHMEM_CMP_GE != SHMEM_CMP_LE,
        "SHMEM_CMP_* constants collide");

  /* pe_accessible: every PE of the job; not outside it */
  for (int pe = 0; pe < n; pe++) CHECK(shmem_pe_accessible(pe) == 1, "shmem_pe_accessible(%d) = 0 with %d PEs", pe, n);
  CHECK(shmem_pe_accessible(n) == 0, "shmem_pe_accessible(n_pes = %d) = %d, expected 0", n, shmem_pe_accessible(n));
  CHECK(shmem_pe_accessible(-1) == 0, "shmem_pe_accessible(-1) = %d, expected 0", shmem_pe_accessible(-1));

  /* addr_accessible: symmetric heap and globals yes, stack and private heap no */
  long *heap = shmem_malloc(4096 * sizeof(long));
  CHECK(heap != NULL, "shmem_malloc failed");
  long stack_var = 0;
  long *priv = malloc(64);
  for (int pe = 0; pe < n; pe++) {
    CHECK(shmem_addr_accessible(heap, pe) == 1, "shmem_addr_accessible(heap, %d) = 0", pe);
    CHECK(shmem_addr_accessible(heap + 4095, pe) == 1, "shmem_addr_accessible(heap end, %d) = 0", pe);
    CHECK(shmem_addr_accessible(&g_word, pe) == 1, "shmem_addr_accessible(global .bss, %d) = 0", pe);
    CHECK(shmem_addr_accessible(&g_data[2047], pe) == 1, "shmem_addr_accessible(global .data, %d) = 0", pe);
    CHECK(shmem_addr_accessible(&stack_var, pe) == 0, "shmem_addr_accessible(stack variable, %d) = 1", pe);
    CHECK(shmem_addr_accessible(priv, pe) == 0, "shmem_addr_accessible(malloc'ed memory, %d) = 1", pe);
  }
  free(priv);

  /* shmem_ptr: own PE gives the address itself; every PE of this node is reachable, no other */
  CHECK(shmem_ptr(heap, me) == heap, "shmem_ptr(heap, my_pe) = %p, expected %p", shmem_ptr(heap, me), (void *)heap);
  CHECK(shmem_ptr(&g_word, me) == &g_word, "shmem_ptr(global, my_pe) = %p, expected %p", shmem_ptr(&g_word, me),
        (void *)&g_word);
  for (int pe = 0; pe < n; pe++) {
    long *ph = shmem_ptr(heap, pe);
    long *pg = shmem_ptr(&g_word, pe);
    int *pd = shmem_ptr(&g_data[0], pe);
    if (!shtest_same_node(pe)) {
      CHECK(ph == NULL && pg == NULL && pd == NULL, "shmem_ptr(PE %d of another node) = %p, %p, %p",
            pe, (void *)ph, (void *)pg, (void *)pd);
      continue;
    }
    CHECK(ph != NULL, "shmem_ptr(heap, PE %d) = NULL on a single node", pe);
    if (PTR_GLOBALS) {
      CHECK(pg != NULL, "shmem_ptr(global .bss, PE %d) = NULL on a single node", pe);
      CHECK(pd != NULL, "shmem_ptr(global .data, PE %d) = NULL on a single node", pe);
    }
  }
  heap[0] = -1;
  g_word = -1;
  shmem_barrier_all();
  /* stores through shmem_ptr into the right neighbour (shmem_p when it is on another node) */
  {
    int right = (me + 1) % n;
    if (!shtest_same_node(right)) {
      shmem_long_p(&heap[4095], 1000 + me, right);
      shmem_long_p(&heap[0], 2000 + me, right);
      if (PTR_GLOBALS) {
        CHECK(shmem_int_g(&g_data[0], right) == 5, "initial .data value of PE %d", right);
        shmem_long_p(&g_word, 3000 + me, right);
        shmem_int_p(&g_data[2047], 4000 + me, right);
      }
      shmem_quiet();
    } else {
      long *ph = shmem_ptr(heap, right);
      long *pg = shmem_ptr(&g_word, right);
      int *pd = shmem_ptr(&g_data[0], right);
      ph[4095] = 1000 + me; /* the last element: the whole object is mapped */
      ph[0] = 2000 + me;
      if (PTR_GLOBALS) {
        CHECK(pd[0] == 5, "initial .data value read through shmem_ptr: expected 5 got %d", pd[0]);
        *pg = 3000 + me;
        pd[2047] = 4000 + me;
      }
    }
  }
  shmem_barrier_all();
  {
    int left = (me + n - 1) % n;
    CHECK(heap[4095] == 1000 + left, "store through shmem_ptr(heap end) by PE %d: got %ld", left, heap[4095]);
    CHECK(heap[0] == 2000 + left, "store through shmem_ptr(heap) by PE %d: got %ld", left, heap[0]);
    if (PTR_GLOBALS) {
      CHECK(g_word == 3000 + left, "store through shmem_ptr(global .bss) by PE %d: got %ld", left, g_word);
      CHECK(g_data[2047] == 4000 + left, "store through shmem_ptr(global .data) by PE %d: got %d", left,
            g_data[2047]);
    }
  }
  shmem_barrier_all();

  /* SHMEM_THREAD_MULTIPLE: concurrent AMOs from two threads per PE */
  if (provided == SHMEM_THREAD_MULTIPLE) {
    long iters = shtest_scaled(2000);
    pthread_t t[2];
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&t[i], NULL, thread_body, (void *)iters) == 0, "pthread_create");
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    shmem_barrier_all();
    if (me == 0) CHECK_EQ_U("counter after 2 threads x n PEs of fetch_add", 2 * iters * n, thread_counter);
  }
  if (me == 0) printf("provided thread level %d, name '%s', version %d.%d\n", provided, name, major, minor);
  shmem_free(heap);
  shtest_done("misc");
  return 0;
}
