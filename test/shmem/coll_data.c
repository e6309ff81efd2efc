/* Team data movement: broadcast (root's dest updated too), collect (a different count on each
 * PE, zeros included), fcollect, alltoall, alltoalls (strides), typed over all 24 stdrmatypes and
 * the mem forms from 0 bytes to well above the scratch slot (1 MiB, pipelined broadcast), on
 * SHMEM_TEAM_WORLD and split teams, back to back without barriers. Every destination element is
 * checked against a serial reference, and elements that must not be written against a sentinel. */
#include "coll_common.h"

#define MAXBYTES (1u << 20)
static char *g_src, *g_dst;

#define V(T, ISF, pe, i, salt) SHT_V(T, ISF, shtest_val(pe, i, salt))
#define SENT(T, ISF, i, salt) SHT_V(T, ISF, shtest_val(0xABC, i, salt))

/* count of member m in a collect of nominal size nel (0 for some members) */
static size_t collect_count(size_t nel, int m) { return nel ? nel + (size_t)(m % 3) - 1 : (size_t)(m % 2); }

#define DEF_DATA(T, NAME, ISF)                                                                    \
  static void bcast_##NAME(const struct sht_team *t, size_t nel, int root, int salt) {           \
    T *src = (T *)g_src, *dst = (T *)g_dst;                                                       \
    for (size_t i = 0; i < nel; i++) src[i] = V(T, ISF, t->me, i, salt);                          \
    for (size_t i = 0; i <= nel; i++) dst[i] = SENT(T, ISF, i, salt);                             \
    int rc = shmem_##NAME##_broadcast(t->team, dst, src, nel, root);                              \
    CHECK(rc == 0, "broadcast returned %d", rc);                                                  \
    for (size_t i = 0; i < nel; i++)                                                              \
      CHECK(dst[i] == V(T, ISF, root, i, salt),                                                   \
            "%s_broadcast on %s (%d PEs), root %d, nelems %zu: element %zu: expected %.21Lg "     \
            "got %.21Lg", #NAME, t->name, t->n, root, nel, i,                                     \
            (long double)V(T, ISF, root, i, salt), (long double)dst[i]);                          \
    CHECK(dst[nel] == SENT(T, ISF, nel, salt), "%s_broadcast wrote past nelems", #NAME);          \
  }                                                                                               \
  static void collect_##NAME(const struct sht_team *t, size_t nel, int fixed, int salt) {        \
    T *src = (T *)g_src, *dst = (T *)g_dst;                                                       \
    const size_t mine = fixed ? nel : collect_count(nel, t->me);                                  \
    size_t total = 0;                                                                             \
    for (int m = 0; m < t->n; m++) total += fixed ? nel : collect_count(nel, m);                  \
    for (size_t i = 0; i < mine; i++) src[i] = V(T, ISF, t->me, i, salt);                         \
    for (size_t i = 0; i <= total; i++) dst[i] = SENT(T, ISF, i, salt);                           \
    int rc = fixed ? shmem_##NAME##_fcollect(t->team, dst, src, nel)                              \
                   : shmem_##NAME##_collect(t->team, dst, src, mine);                             \
    CHECK(rc == 0, "collect returned %d", rc);                                                    \
    size_t at = 0;                                                                                \
    for (int m = 0; m < t->n; m++) {                                                              \
      const size_t cnt = fixed ? nel : collect_count(nel, m);                                     \
      for (size_t i = 0; i < cnt; i++, at++)                                                      \
        CHECK(dst[at] == V(T, ISF, m, i, salt),                                                   \
              "%s_%s on %s (%d PEs), nelems %zu: element %zu of member %d: expected %.21Lg got "  \
              "%.21Lg", #NAME, fixed ? "fcollect" : "collect", t->name, t->n, nel, i, m,          \
              (long double)V(T, ISF, m, i, salt), (long double)dst[at]);                          \
    }                                                                                             \
    CHECK(dst[total] == SENT(T, ISF, total, salt), "%s collect wrote past the end", #NAME);       \
  }                                                                                               \
  /* block j of my source goes to member j; element strides dst and sst (1 for alltoall) */       \
  static void alltoall_##NAME(const struct sht_team *t, size_t nel, ptrdiff_t dst_st,            \
                              ptrdiff_t sst, int salt) {                                          \
    T *src = (T *)g_src, *dst = (T *)g_dst;                                                       \
    const size_t total = nel * (size_t)t->n;                                                      \
    const size_t dspan = total ? (total - 1) * dst_st + 1 : 0;                                    \
    for (size_t i = 0; i < total; i++) src[i * sst] = V(T, ISF, t->me, i, salt);                  \
    for (size_t i = 0; i <= dspan; i++) dst[i] = SENT(T, ISF, i, salt);                           \
    int rc = dst_st == 1 && sst == 1                                                              \
                 ? shmem_##NAME##_alltoall(t->team, dst, src, nel)                                \
                 : shmem_##NAME##_alltoalls(t->team, dst, src, dst_st, sst, nel);                 \
    CHECK(rc == 0, "alltoall returned %d", rc);                                                   \
    for (size_t i = 0; i <= dspan; i++) {                                                         \
      T want = SENT(T, ISF, i, salt);                                                             \
      if (i < dspan && i % dst_st == 0) {                                                         \
        size_t logical = i / dst_st, from = logical / nel, k = logical % nel;                     \
        want = V(T, ISF, (int)from, t->me * nel + k, salt);                                       \
      }                                                                                           \
      CHECK(dst[i] == want, "%s_alltoall%s on %s (%d PEs), nelems %zu, dst %td, sst %td: "        \
            "dest[%zu]: expected %.21Lg got %.21Lg", #NAME, dst_st == 1 && sst == 1 ? "" : "s",   \
            t->name, t->n, nel, dst_st, sst, i, (long double)want, (long double)dst[i]);          \
    }                                                                                             \
  }
SHT_RMA_TYPES(DEF_DATA)

/* the untyped mem forms, byte-exact patterns */
static void mem_forms(const struct sht_team *t, size_t bytes, int salt) {
  unsigned char *src = (unsigned char *)g_src, *dst = (unsigned char *)g_dst;
  const int n = t->n, root = salt % n;
  shtest_fill(src, bytes, shtest_val(t->me, 1, salt));
  memset(dst, 0xEE, bytes + 1);
  CHECK(shmem_broadcastmem(t->team, dst, src, bytes, root) == 0, "broadcastmem failed");
  size_t bad = shtest_verify(dst, bytes, shtest_val(root, 1, salt));
  CHECK(bad == bytes, "broadcastmem on %s (%d PEs), %zu bytes, root %d: byte %zu differs", t->name,
        n, bytes, root, bad);
  CHECK(dst[bytes] == 0xEE, "broadcastmem wrote past the end");

  const size_t each = bytes / n;
  shtest_fill(src, each, shtest_val(t->me, 2, salt));
  CHECK(shmem_fcollectmem(t->team, dst, src, each) == 0, "fcollectmem failed");
  for (int m = 0; m < n; m++) {
    bad = shtest_verify(dst + m * each, each, shtest_val(m, 2, salt));
    CHECK(bad == each, "fcollectmem on %s, %zu bytes each: member %d byte %zu differs", t->name,
          each, m, bad);
  }
  const size_t mine = each - (size_t)(t->me % 2) * (each / 3);
  shtest_fill(src, mine, shtest_val(t->me, 3, salt));
  CHECK(shmem_collectmem(t->team, dst, src, mine) == 0, "collectmem failed");
  size_t at = 0;
  for (int m = 0; m < n; m++) {
    const size_t cnt = each - (size_t)(m % 2) * (each / 3);
    bad = shtest_verify(dst + at, cnt, shtest_val(m, 3, salt));
    CHECK(bad == cnt, "collectmem on %s: member %d byte %zu differs", t->name, m, bad);
    at += cnt;
  }
  const size_t block = bytes / n;
  for (int j = 0; j < n; j++) shtest_fill(src + j * block, block, shtest_val(t->me, 100 + j, salt));
  CHECK(shmem_alltoallmem(t->team, dst, src, block) == 0, "alltoallmem failed");
  for (int m = 0; m < n; m++) {
    bad = shtest_verify(dst + m * block, block, shtest_val(m, 100 + t->me, salt));
    CHECK(bad == block, "alltoallmem on %s, %zu-byte blocks: block from %d byte %zu differs",
          t->name, block, m, bad);
  }
  /* alltoallsmem with unit elements: every other byte */
  const size_t half = bytes / (2 * n);
  for (size_t i = 0; i < half * n; i++) src[2 * i] = (unsigned char)shtest_val(t->me, i, salt);
  CHECK(shmem_alltoallsmem(t->team, dst, src, 1, 2, half) == 0, "alltoallsmem failed");
  for (size_t i = 0; i < half * n; i++) {
    const size_t from = i / half, k = i % half;
    CHECK(dst[i] == (unsigned char)shtest_val((int)from, t->me * half + k, salt),
          "alltoallsmem on %s: dest[%zu] wrong", t->name, i);
  }
}

static void run_all(const struct sht_team *t) {
  static const size_t counts[] = {0, 1, 7, 100};
  int salt = 0;
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
    const size_t nel = counts[c];
    salt++;
#define RUN_DATA(T, NAME, ISF)                                   \
  bcast_##NAME(t, nel, 0, salt);                                 \
  bcast_##NAME(t, nel, t->n - 1, salt + 1);                      \
  collect_##NAME(t, nel, 0, salt);                               \
  collect_##NAME(t, nel, 1, salt);                               \
  alltoall_##NAME(t, nel, 1, 1, salt);                           \
  alltoall_##NAME(t, nel, 2, 3, salt);
    SHT_RMA_TYPES(RUN_DATA)
  }
  static const size_t sizes[] = {0, 1, 1000, 300000, MAXBYTES};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) mem_forms(t, sizes[s], 50 + (int)s);
  /* large typed, well above the scratch slot and the broadcast chunk */
  bcast_long(t, MAXBYTES / sizeof(long) - 1, t->n / 2, 77);
  collect_double(t, MAXBYTES / sizeof(double) / t->n - 2, 0, 78);
  alltoall_int(t, MAXBYTES / sizeof(int) / t->n - 1, 1, 1, 79);
}

int main(void) {
  shtest_init();
  g_src = shmem_malloc(4 * MAXBYTES);
  g_dst = shmem_malloc(4 * MAXBYTES);
  CHECK(g_src && g_dst, "shmem_malloc failed");
  struct sht_team world = sht_world();
  run_all(&world);
  SHT_FOR_SPLIT_TEAMS(run_all);
  shmem_free(g_dst);
  shmem_free(g_src);
  shtest_done("coll_data");
  return 0;
}
