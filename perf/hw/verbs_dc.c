/* verbs_rc.c over DC instead of RC: the same operations written directly in verbs with rdma-core's
 * public DC API (mlx5dv_create_qp with MLX5DV_QP_INIT_ATTR_MASK_DC), between processes forked
 * before any opens the device, so each is a node of its own (like PEs with
 * HOSHMEM_PES_PER_NODE=1). Each child is a target node: a DCT (DC target, on an SRQ, with a DC
 * access key of its own) in RTR, and registered memory; it sleeps in read() until the parent is
 * done (like a PE waiting in a barrier). The parent is the initiator: one DCI (DC initiator,
 * RESET->INIT->RTR->RTS) and an address handle per target; every work request is posted with the
 * extended send API (ibv_wr_start, one ibv_wr_* operation, mlx5dv_wr_set_dc_addr naming the
 * target's AH, DCT number and key, ibv_wr_set_sge or ibv_wr_set_inline_data, ibv_wr_complete: one
 * doorbell per operation, as verbs_rc's ibv_post_send per operation) and waited for with
 * ibv_poll_cq.
 *   verbs_dc [ITERATIONS [BATCH]]                one target
 *   verbs_dc --targets T [ITERATIONS [BATCH]]    T targets (T processes, T DCTs), rate only
 * ITERATIONS defaults to 1000, BATCH to 64 (at most 1024). Every value is the best of 5 timed
 * loops after one untimed; loops on sizes above 8 KiB run ITERATIONS * 8 KiB / size times, at
 * least 10. Output, one target (the lines of verbs_rc, same names and loop shapes):
 *   lat put SIZE ns          RDMA write of SIZE bytes (8 B, x4 up to 1 MiB), signaled, then polled
 *                            to its completion; inline up to 128 B (hoshmem's inline size)
 *   lat get SIZE ns          RDMA read of SIZE bytes, signaled, polled
 *   rate put_nbi 8 Mops      8-byte inline RDMA writes back to back, to consecutive words, only
 *                            the last of each BATCH signaled and polled; operations per us
 *   lat amo_OP 8 ns          one 8-byte atomic, signaled, polled to its completion (the fetched
 *                            value lands in local registered memory)
 *   rate amo_OP 8 Mops       BATCH atomics back to back on one remote word (each fetching into a
 *                            word of its own), only the last signaled and polled
 *     where amo_OP is the standard atomic hoshmem uses for OP on 64 bits: fetch, fetch_add, add,
 *     fetch_inc, inc: fetch-add (of 0 for fetch, 1 for the others); compare_swap: compare-swap.
 *     Verbs has no masked atomics, so the other AMOs have no row.
 * Output, --targets T:
 *   rate put_nbi_rr<T> 8 Mops   8-byte inline RDMA writes from the one DCI, round-robin over the
 *                               T targets (write i goes to target i mod T, to word i mod BATCH of
 *                               its buffer), only the last of each BATCH signaled and polled: the
 *                               put_nbi rate when the DCI switches targets at every write
 *                               (T=1: the same loop as put_nbi, one target). */
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "best.h"

#define MAX_SIZE (1 << 20)
#define MAX_BATCH 1024
#define MAX_TARGETS 64
#define INLINE_BYTES 128
#define DC_KEY 0x5eed0000ull /* target t's DCT has key DC_KEY + t */
#define BUF_BYTES (MAX_SIZE + 16384)

struct target {
  uint32_t dctn, lid, rkey;
  uint64_t addr, key;
};

static void die(const char *what) {
  fprintf(stderr, "verbs_dc: %s\n", what);
  exit(1);
}

static struct ibv_context *open_first_device(void) {
  int n;
  struct ibv_device **list = ibv_get_device_list(&n);
  if (!list || n < 1) die("no RDMA device");
  struct ibv_context *ctx = ibv_open_device(list[0]);
  if (!ctx) die("cannot open the device");
  ibv_free_device_list(list);
  return ctx;
}

static char *register_buffer(struct ibv_pd *pd, struct ibv_mr **mr) {
  char *b = aligned_alloc(4096, BUF_BYTES);
  if (!b) die("out of memory");
  memset(b, 0, BUF_BYTES);
  *mr = ibv_reg_mr(pd, b, BUF_BYTES,
                   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                       IBV_ACCESS_REMOTE_ATOMIC);
  if (!*mr) die("ibv_reg_mr failed");
  return b;
}

/* A target node: DCT with key DC_KEY + t on an SRQ, INIT then RTR; reports itself on out, says
 * "r" when ready, then waits until in says anything or closes. */
static int run_target(int t, int in, int out) {
  struct ibv_context *ctx = open_first_device();
  struct ibv_pd *pd = ibv_alloc_pd(ctx);
  struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
  if (!cq) die("target: cannot set up PD or CQ");
  struct ibv_srq_init_attr sa;
  memset(&sa, 0, sizeof sa);
  sa.attr.max_wr = 1;
  sa.attr.max_sge = 1;
  struct ibv_srq *srq = ibv_create_srq(pd, &sa);
  if (!srq) die("target: ibv_create_srq failed");
  struct ibv_mr *mr;
  char *buf = register_buffer(pd, &mr);

  struct ibv_qp_init_attr_ex a;
  memset(&a, 0, sizeof a);
  a.qp_type = IBV_QPT_DRIVER;
  a.send_cq = a.recv_cq = cq;
  a.srq = srq;
  a.pd = pd;
  a.comp_mask = IBV_QP_INIT_ATTR_PD;
  struct mlx5dv_qp_init_attr dv;
  memset(&dv, 0, sizeof dv);
  dv.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC;
  dv.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCT;
  dv.dc_init_attr.dct_access_key = DC_KEY + t;
  struct ibv_qp *dct = mlx5dv_create_qp(ctx, &a, &dv);
  if (!dct) die("target: mlx5dv_create_qp (DCT) failed");
  struct ibv_qp_attr m;
  memset(&m, 0, sizeof m);
  m.qp_state = IBV_QPS_INIT;
  m.port_num = 1;
  m.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  if (ibv_modify_qp(dct, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    die("target: DCT to INIT failed");
  m.qp_state = IBV_QPS_RTR;
  m.path_mtu = IBV_MTU_4096;
  m.min_rnr_timer = 12;
  if (ibv_modify_qp(dct, &m, IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_MIN_RNR_TIMER))
    die("target: DCT to RTR failed");

  struct ibv_port_attr port;
  if (ibv_query_port(ctx, 1, &port)) die("target: ibv_query_port failed");
  struct target me = {dct->qp_num, port.lid, mr->rkey, (uintptr_t)buf, DC_KEY + t};
  char c;
  if (write(out, &me, sizeof me) != sizeof me || write(out, "r", 1) != 1) return 1;
  if (read(in, &c, 1) < 0) return 1; /* a byte or EOF: the initiator is done */
  ibv_destroy_qp(dct);
  ibv_dereg_mr(mr);
  ibv_destroy_srq(srq);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  return 0;
}

static struct ibv_qp *dci;
static struct ibv_qp_ex *qx;
static struct mlx5dv_qp_ex *dvx;
static struct ibv_cq *cq;
static struct ibv_mr *mr;
static char *buf; /* [0, MAX_SIZE): data; then 8-byte words */
static struct target tg[MAX_TARGETS];
static struct ibv_ah *ah[MAX_TARGETS];

enum op { WRITE, READ, FETCH_ADD, CMP_SWP };

/* One work request to target t, one doorbell. WRITE of at most INLINE_BYTES with IBV_SEND_INLINE
 * carries its data in the WQE; everything else gathers/scatters through local. */
static inline void post(int t, enum op op, uint64_t local, uint32_t len, uint64_t remote,
                        unsigned flags, uint64_t add_or_compare, uint64_t swap) {
  ibv_wr_start(qx);
  qx->wr_id = 0;
  qx->wr_flags = flags;
  switch (op) {
    case WRITE: ibv_wr_rdma_write(qx, tg[t].rkey, remote); break;
    case READ: ibv_wr_rdma_read(qx, tg[t].rkey, remote); break;
    case FETCH_ADD: ibv_wr_atomic_fetch_add(qx, tg[t].rkey, remote, add_or_compare); break;
    case CMP_SWP: ibv_wr_atomic_cmp_swp(qx, tg[t].rkey, remote, add_or_compare, swap); break;
  }
  mlx5dv_wr_set_dc_addr(dvx, ah[t], tg[t].dctn, tg[t].key);
  if (flags & IBV_SEND_INLINE)
    ibv_wr_set_inline_data(qx, (void *)(uintptr_t)local, len);
  else
    ibv_wr_set_sge(qx, mr->lkey, local, len);
  if (ibv_wr_complete(qx)) die("ibv_wr_complete failed");
}

static void wait_one(void) {
  struct ibv_wc wc;
  int n;
  while ((n = ibv_poll_cq(cq, 1, &wc)) == 0) {
  }
  if (n < 0 || wc.status != IBV_WC_SUCCESS) {
    fprintf(stderr, "verbs_dc: completion error: %s\n",
            n < 0 ? "ibv_poll_cq failed" : ibv_wc_status_str(wc.status));
    exit(1);
  }
}

/* The initiator's DCI: RESET->INIT (port), INIT->RTR (path MTU; the destination comes with each
 * work request), RTR->RTS (timeout, retries, up to 16 reads/atomics outstanding). */
static struct ibv_qp *make_dci(struct ibv_context *ctx, struct ibv_pd *pd, int depth) {
  struct ibv_qp_init_attr_ex a;
  memset(&a, 0, sizeof a);
  a.qp_type = IBV_QPT_DRIVER;
  a.send_cq = a.recv_cq = cq;
  a.cap.max_send_wr = depth;
  a.cap.max_send_sge = 1;
  a.cap.max_inline_data = INLINE_BYTES;
  a.pd = pd;
  a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  a.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ |
                     IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP;
  struct mlx5dv_qp_init_attr dv;
  memset(&dv, 0, sizeof dv);
  dv.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC;
  dv.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCI;
  struct ibv_qp *qp = mlx5dv_create_qp(ctx, &a, &dv);
  if (!qp) die("mlx5dv_create_qp (DCI) failed");
  struct ibv_qp_attr m;
  memset(&m, 0, sizeof m);
  m.qp_state = IBV_QPS_INIT;
  m.port_num = 1;
  if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT))
    die("DCI to INIT failed");
  m.qp_state = IBV_QPS_RTR;
  m.path_mtu = IBV_MTU_4096;
  if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PATH_MTU)) die("DCI to RTR failed");
  m.qp_state = IBV_QPS_RTS;
  m.timeout = 14;
  m.retry_cnt = 7;
  m.rnr_retry = 7;
  m.max_rd_atomic = 16;
  if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
    die("DCI to RTS failed");
  return qp;
}

int main(int argc, char **argv) {
  int ntargets = 1, rr = 0;
  if (argc > 1 && strcmp(argv[1], "--targets") == 0) {
    if (argc < 3) die("usage: verbs_dc [--targets T] [ITERATIONS [BATCH]]");
    ntargets = atoi(argv[2]);
    if (ntargets < 1 || ntargets > MAX_TARGETS) die("--targets takes 1 to 64");
    rr = 1;
    argv += 2;
    argc -= 2;
  }
  const int iters = argc > 1 ? atoi(argv[1]) : 1000;
  int batch = argc > 2 ? atoi(argv[2]) : 64;
  if (iters < 1 || batch < 1) die("ITERATIONS and BATCH must be positive");
  if (batch > MAX_BATCH) batch = MAX_BATCH;

  int to_child[MAX_TARGETS][2], to_parent[MAX_TARGETS][2];
  for (int t = 0; t < ntargets; t++)
    if (pipe(to_child[t]) || pipe(to_parent[t])) die("pipe failed");
  fflush(stdout);
  pid_t child[MAX_TARGETS];
  for (int t = 0; t < ntargets; t++) {
    child[t] = fork();
    if (child[t] < 0) die("fork failed");
    if (child[t] == 0) { /* keep only this target's ends: EOF reaches it if the parent dies */
      for (int u = 0; u < ntargets; u++) {
        if (u != t) close(to_child[u][0]), close(to_parent[u][1]);
        close(to_child[u][1]);
        close(to_parent[u][0]);
      }
      _exit(run_target(t, to_child[t][0], to_parent[t][1]));
    }
  }
  for (int t = 0; t < ntargets; t++) close(to_child[t][0]), close(to_parent[t][1]);

  struct ibv_context *ctx = open_first_device();
  struct ibv_pd *pd = ibv_alloc_pd(ctx);
  if (!pd) die("ibv_alloc_pd failed");
  cq = ibv_create_cq(ctx, 2 * MAX_BATCH, NULL, NULL, 0);
  if (!cq) die("ibv_create_cq failed");
  buf = register_buffer(pd, &mr);
  dci = make_dci(ctx, pd, 2 * MAX_BATCH);
  qx = ibv_qp_to_qp_ex(dci);
  dvx = mlx5dv_qp_ex_from_ibv_qp_ex(qx);
  if (!qx || !dvx) die("no extended QP");
  for (int t = 0; t < ntargets; t++) {
    char c;
    if (read(to_parent[t][0], &tg[t], sizeof tg[t]) != sizeof tg[t] ||
        read(to_parent[t][0], &c, 1) != 1)
      die("a target did not get ready");
    struct ibv_ah_attr aa;
    memset(&aa, 0, sizeof aa);
    aa.dlid = (uint16_t)tg[t].lid;
    aa.port_num = 1;
    ah[t] = ibv_create_ah(pd, &aa);
    if (!ah[t]) die("ibv_create_ah failed");
  }

  const uint64_t local = (uintptr_t)buf, words = (uintptr_t)buf + MAX_SIZE;
  const uint64_t remote = tg[0].addr, rwords = tg[0].addr + MAX_SIZE;
  const int nb = (iters / batch > 0 ? iters / batch : 1) * batch;
  double v;
#define LAST(i) ((i) % batch == batch - 1)
  if (rr) {
    BEST(v, nb, const int d = i % ntargets;
         post(d, WRITE, local, 8, tg[d].addr + 8 * (i % batch),
              IBV_SEND_INLINE | (LAST(i) ? IBV_SEND_SIGNALED : 0), 0, 0);
         if (LAST(i)) wait_one());
    printf("rate put_nbi_rr%d 8 %.3f\n", ntargets, 1e3 / v);
  } else {
    for (int size = 8; size <= MAX_SIZE;
         size = size * 4 > MAX_SIZE && size < MAX_SIZE ? MAX_SIZE : size * 4) {
      long scaled = (long)iters * 8192 / size;
      const int k = size <= 8192 ? iters : (scaled < 10 ? 10 : (int)scaled);
      const unsigned inl = size <= INLINE_BYTES ? IBV_SEND_INLINE : 0;
      BEST(v, k, post(0, WRITE, local, size, remote, IBV_SEND_SIGNALED | inl, 0, 0); wait_one());
      printf("lat put %d %.0f\n", size, v);
      BEST(v, k, post(0, READ, local, size, remote, IBV_SEND_SIGNALED, 0, 0); wait_one());
      printf("lat get %d %.0f\n", size, v);
      fflush(stdout);
    }
    BEST(v, nb, post(0, WRITE, local, 8, remote + 8 * (i % batch),
                     IBV_SEND_INLINE | (LAST(i) ? IBV_SEND_SIGNALED : 0), 0, 0);
         if (LAST(i)) wait_one());
    printf("rate put_nbi 8 %.3f\n", 1e3 / v);
    const struct {
      const char *name;
      enum op op;
      uint64_t operand;
    } amos[] = {{"amo_fetch", FETCH_ADD, 0},      {"amo_compare_swap", CMP_SWP, 0},
                {"amo_fetch_add", FETCH_ADD, 1},  {"amo_add", FETCH_ADD, 1},
                {"amo_fetch_inc", FETCH_ADD, 1},  {"amo_inc", FETCH_ADD, 1}};
    for (unsigned a = 0; a < sizeof amos / sizeof amos[0]; a++) {
      BEST(v, iters, post(0, amos[a].op, words, 8, rwords, IBV_SEND_SIGNALED, amos[a].operand,
                          (uint64_t)i + 1);
           wait_one());
      printf("lat %s 8 %.0f\n", amos[a].name, v);
      BEST(v, nb, post(0, amos[a].op, words + 8 * (1 + i % batch), 8, rwords,
                       LAST(i) ? IBV_SEND_SIGNALED : 0, amos[a].operand, (uint64_t)i + 1);
           if (LAST(i)) wait_one());
      printf("rate %s 8 %.3f\n", amos[a].name, 1e3 / v);
      fflush(stdout);
    }
  }
  fflush(stdout);
  for (int t = 0; t < ntargets; t++)
    if (write(to_child[t][1], "x", 1) != 1) die("cannot stop a target");
  for (int t = 0; t < ntargets; t++) {
    int status;
    waitpid(child[t], &status, 0);
  }
  for (int t = 0; t < ntargets; t++) ibv_destroy_ah(ah[t]);
  ibv_destroy_qp(dci);
  ibv_dereg_mr(mr);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  return 0;
}
