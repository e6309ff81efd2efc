/* Sized RMA (put/get/iput/iget/put_nbi/get_nbi for SIZE 8/16/32/64/128) and the mem forms
 * (putmem/getmem/putmem_nbi/getmem_nbi), with element offsets, partial and zero counts, strides.
 * Same scheme as rma_typed.c, element by element, byte exact. */
#include "shtest.h"

#define N 37
#define MAXE 16

typedef void (*xfer_fn)(void *, const void *, size_t, int);
typedef void (*ixfer_fn)(void *, const void *, ptrdiff_t, ptrdiff_t, size_t, int);

struct sized_api {
  const char *name;
  size_t esize;
  xfer_fn put, get, put_nbi, get_nbi;
  ixfer_fn iput, iget;
};

static const struct sized_api apis[] = {
    {"8", 1, shmem_put8, shmem_get8, shmem_put8_nbi, shmem_get8_nbi, shmem_iput8, shmem_iget8},
    {"16", 2, shmem_put16, shmem_get16, shmem_put16_nbi, shmem_get16_nbi, shmem_iput16, shmem_iget16},
    {"32", 4, shmem_put32, shmem_get32, shmem_put32_nbi, shmem_get32_nbi, shmem_iput32, shmem_iget32},
    {"64", 8, shmem_put64, shmem_get64, shmem_put64_nbi, shmem_get64_nbi, shmem_iput64, shmem_iget64},
    {"128", 16, shmem_put128, shmem_get128, shmem_put128_nbi, shmem_get128_nbi, shmem_iput128,
     shmem_iget128},
    {"mem", 1, shmem_putmem, shmem_getmem, shmem_putmem_nbi, shmem_getmem_nbi, NULL, NULL},
};

enum { K_PUT, K_PUT_NBI, K_IPUT, K_GET, K_GET_NBI, K_IGET };

static void elem_bytes(unsigned char *out, size_t esize, int srcpe, int q, int salt, int sentinel) {
  uint64_t a = shtest_val(srcpe, q, salt), b = shtest_val(srcpe, q + 1000, salt);
  unsigned char tmp[16];
  memcpy(tmp, &a, 8);
  memcpy(tmp + 8, &b, 8);
  for (size_t i = 0; i < esize; i++) out[i] = sentinel ? (unsigned char)~tmp[i] : tmp[i];
}

static void fill_expected(unsigned char *buf, size_t es, const int *map, int srcpe, int salt) {
  for (int p = 0; p < N; p++) {
    if (map[p] >= 0)
      elem_bytes(buf + p * es, es, srcpe, map[p], salt, 1); /* sentinel differs in every byte */
    else
      elem_bytes(buf + p * es, es, 0xABC, p, salt, 0);
  }
}

static void check(const char *api, const char *kind, const unsigned char *buf, size_t es,
                  const int *map, int srcpe, int salt) {
  unsigned char want[MAXE];
  for (int p = 0; p < N; p++) {
    if (map[p] >= 0)
      elem_bytes(want, es, srcpe, map[p], salt, 0);
    else
      elem_bytes(want, es, 0xABC, p, salt, 0);
    for (size_t i = 0; i < es; i++)
      CHECK(buf[p * es + i] == want[i],
            "shmem_%s%s (salt %d): element %d byte %zu: expected 0x%02x got 0x%02x (source PE %d, %s)",
            kind, api, salt, p, i, want[i], buf[p * es + i], srcpe,
            map[p] >= 0 ? "must be written" : "must stay untouched");
  }
}

static void step(const struct sized_api *a, unsigned char *sym, int kind, int doff, int soff,
                 int tst, int sst, int nel, int salt) {
  int me = shtest_me, n = shtest_npes, right = (me + 1) % n, left = (me + n - 1) % n;
  size_t es = a->esize;
  int map[N];
  unsigned char loc[N * MAXE];
  for (int p = 0; p < N; p++) map[p] = -1;
  for (int k = 0; k < nel; k++) map[doff + k * tst] = soff + k * sst;
  /* the sized names spell the kind before the size: shmem_put64, shmem_iput64, shmem_put64_nbi */
  char api[32];
  snprintf(api, sizeof api, "%s%s", a->name,
           (kind == K_PUT_NBI || kind == K_GET_NBI) ? "_nbi(+quiet)" : "");
  const char *kname = (kind == K_IPUT) ? "iput" : (kind == K_IGET) ? "iget"
                      : (kind <= K_IPUT) ? "put" : "get";
  size_t cnt = (size_t)nel;
  if (kind <= K_IPUT) {
    for (int q = 0; q < N; q++) elem_bytes(loc + q * es, es, me, q, salt, 0);
    fill_expected(sym, es, map, left, salt);
    shmem_barrier_all();
    if (kind == K_PUT) a->put(sym + doff * es, loc + soff * es, cnt, right);
    if (kind == K_PUT_NBI) {
      a->put_nbi(sym + doff * es, loc + soff * es, cnt, right);
      shmem_quiet();
    }
    if (kind == K_IPUT) a->iput(sym + doff * es, loc + soff * es, tst, sst, cnt, right);
    memset(loc, 0, sizeof loc); /* source reusable once the call (nbi: quiet) returned */
    shmem_barrier_all();
    check(api, kname, sym, es, map, left, salt);
  } else {
    for (int q = 0; q < N; q++) elem_bytes(sym + q * es, es, me, q, salt, 0);
    fill_expected(loc, es, map, right, salt);
    shmem_barrier_all();
    if (kind == K_GET) a->get(loc + doff * es, sym + soff * es, cnt, right);
    if (kind == K_GET_NBI) {
      a->get_nbi(loc + doff * es, sym + soff * es, cnt, right);
      shmem_quiet();
    }
    if (kind == K_IGET) a->iget(loc + doff * es, sym + soff * es, tst, sst, cnt, right);
    check(api, kname, loc, es, map, right, salt);
    shmem_barrier_all();
  }
}

int main(void) {
  shtest_init();
  unsigned char *sym = shmem_malloc(N * MAXE);
  CHECK(sym != NULL, "shmem_malloc(%d) returned NULL", N * MAXE);
  for (size_t i = 0; i < sizeof apis / sizeof apis[0]; i++) {
    const struct sized_api *a = &apis[i];
    int salt = (int)i * 100;
    step(a, sym, K_PUT, 0, 0, 1, 1, N, salt + 1);
    step(a, sym, K_PUT, 3, 1, 1, 1, N - 5, salt + 2);
    step(a, sym, K_PUT, 0, 0, 1, 1, 0, salt + 3);
    step(a, sym, K_PUT_NBI, 1, 2, 1, 1, N - 3, salt + 4);
    step(a, sym, K_PUT_NBI, 0, 0, 1, 1, 0, salt + 5);
    step(a, sym, K_GET, 0, 0, 1, 1, N, salt + 6);
    step(a, sym, K_GET, 2, 5, 1, 1, N - 6, salt + 7);
    step(a, sym, K_GET, 0, 0, 1, 1, 0, salt + 8);
    step(a, sym, K_GET_NBI, 4, 1, 1, 1, N - 5, salt + 9);
    if (a->iput) {
      step(a, sym, K_IPUT, 1, 0, 3, 2, 12, salt + 10);
      step(a, sym, K_IPUT, 0, 3, 2, 1, 17, salt + 11);
      step(a, sym, K_IPUT, 0, 0, 2, 2, 0, salt + 12);
      step(a, sym, K_IGET, 0, 1, 2, 3, 12, salt + 13);
      step(a, sym, K_IGET, 2, 0, 3, 1, 11, salt + 14);
    }
  }
  shmem_free(sym);
  shtest_done("rma_sized");
  return 0;
}
