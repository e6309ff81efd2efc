/* The verbs counterpart of rc_rma.c: the same operations written directly in verbs, between two
 * processes (forked before either opens the device, so each is a node of its own, like two PEs
 * with HOSHMEM_PES_PER_NODE=1), one RC QP each, connected to each other. The parent posts with
 * ibv_post_send and waits with ibv_poll_cq; the child only registers its memory and sleeps in
 * read() until the parent is done (like a PE waiting in a barrier).
 *   verbs_rc [ITERATIONS [BATCH]]
 * Same output and loop shapes as rc_rma.c (best of 5 loops after one untimed):
 *   lat put SIZE       RDMA write, signaled, polled (inline up to 128 B, hoshmem's inline size)
 *   lat get SIZE       RDMA read, signaled, polled
 *   rate put_nbi 8     8-byte inline RDMA writes, only the last of each BATCH signaled, polled
 *   lat/rate amo_OP 8  the standard atomic hoshmem uses for OP on 64 bits (fetch, fetch_add, add,
 *                      fetch_inc, inc: fetch-add; compare_swap: compare-swap); verbs has no
 *                      masked atomics, so the other AMOs have no verbs row (see raw_amo --table)
 * Prints "lat NAME SIZE ns" and "rate NAME SIZE Mops" lines. */
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "loopback.h"
#include "best.h"

#define MAX_SIZE (1 << 20)
#define MAX_BATCH 1024
#define INLINE_BYTES 128

struct side {
  uint32_t qpn, lid, rkey;
  uint64_t addr;
};

static void die(const char *what) {
  fprintf(stderr, "verbs_rc: %s\n", what);
  exit(1);
}

static struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *cq, int depth) {
  struct ibv_qp_init_attr a;
  memset(&a, 0, sizeof a);
  a.send_cq = a.recv_cq = cq;
  a.cap.max_send_wr = depth;
  a.cap.max_recv_wr = 1;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  a.cap.max_inline_data = INLINE_BYTES;
  a.qp_type = IBV_QPT_RC;
  struct ibv_qp *qp = ibv_create_qp(pd, &a);
  if (!qp) die("ibv_create_qp failed");
  struct ibv_qp_attr m;
  memset(&m, 0, sizeof m);
  m.qp_state = IBV_QPS_INIT;
  m.port_num = 1;
  m.qp_access_flags = IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    die("INIT failed");
  return qp;
}

static struct ibv_qp *qp;
static struct ibv_cq *cq;
static struct ibv_mr *mr;
static char *buf;  /* [0, MAX_SIZE): data; then 8-byte words */
static struct side peer;

static void post(int opcode, uint64_t local, uint32_t len, uint64_t remote, int flags,
                 uint64_t add_or_compare, uint64_t swap) {
  struct ibv_sge sge = {local, len, mr->lkey};
  struct ibv_send_wr wr, *bad;
  memset(&wr, 0, sizeof wr);
  wr.opcode = opcode;
  wr.send_flags = flags;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  if (opcode == IBV_WR_ATOMIC_FETCH_AND_ADD || opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
    wr.wr.atomic.remote_addr = remote;
    wr.wr.atomic.rkey = peer.rkey;
    wr.wr.atomic.compare_add = add_or_compare;
    wr.wr.atomic.swap = swap;
  } else {
    wr.wr.rdma.remote_addr = remote;
    wr.wr.rdma.rkey = peer.rkey;
  }
  if (ibv_post_send(qp, &wr, &bad)) die("ibv_post_send failed");
}

static void wait_one(void) {
  struct ibv_wc wc;
  int n;
  while ((n = ibv_poll_cq(cq, 1, &wc)) == 0) {
  }
  if (n < 0 || wc.status != IBV_WC_SUCCESS) die("completion error");
}

int main(int argc, char **argv) {
  const int iters = argc > 1 ? atoi(argv[1]) : 1000;
  int batch = argc > 2 ? atoi(argv[2]) : 64;
  if (batch > MAX_BATCH) batch = MAX_BATCH;
  int to_child[2], to_parent[2];
  if (pipe(to_child) || pipe(to_parent)) die("pipe failed");
  fflush(stdout);
  const pid_t child = fork();
  if (child < 0) die("fork failed");
  const int active = child != 0;

  int n;
  struct ibv_device **list = ibv_get_device_list(&n);
  if (!list || n < 1) die("no RDMA device");
  struct ibv_context *ctx = ibv_open_device(list[0]);
  if (!ctx) die("cannot open the device");
  struct ibv_pd *pd = ibv_alloc_pd(ctx);
  cq = ibv_create_cq(ctx, 2 * MAX_BATCH, NULL, NULL, 0);
  buf = aligned_alloc(4096, MAX_SIZE + 16384);
  memset(buf, 0, MAX_SIZE + 16384);
  mr = ibv_reg_mr(pd, buf, MAX_SIZE + 16384,
                  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                      IBV_ACCESS_REMOTE_ATOMIC);
  if (!pd || !cq || !mr) die("cannot set up PD, CQ or MR");
  qp = make_qp(pd, cq, 2 * MAX_BATCH);
  struct ibv_port_attr port;
  ibv_query_port(ctx, 1, &port);
  struct side mine = {qp->qp_num, port.lid, mr->rkey, (uintptr_t)buf};
  /* exchange: each side writes its record to the other's pipe */
  if (write(active ? to_child[1] : to_parent[1], &mine, sizeof mine) != sizeof mine ||
      read(active ? to_parent[0] : to_child[0], &peer, sizeof peer) != sizeof peer)
    die("exchange failed");
  loopback_connect(qp, peer.qpn, peer.lid);
  if (!active) { /* the passive side: wait for the end */
    char c;
    if (write(to_parent[1], "r", 1) != 1 || read(to_child[0], &c, 1) < 0) return 1;
    return 0;
  }
  char c;
  if (read(to_parent[0], &c, 1) != 1) die("the passive side did not get ready");

  const uint64_t local = (uintptr_t)buf, words = (uintptr_t)buf + MAX_SIZE;
  const uint64_t remote = peer.addr, rwords = peer.addr + MAX_SIZE;
  double t;
  for (int size = 8; size <= MAX_SIZE;
       size = size * 4 > MAX_SIZE && size < MAX_SIZE ? MAX_SIZE : size * 4) {
    long scaled = (long)iters * 8192 / size;
    const int k = size <= 8192 ? iters : (scaled < 10 ? 10 : (int)scaled);
    const int inl = size <= INLINE_BYTES ? IBV_SEND_INLINE : 0;
    BEST(t, k, post(IBV_WR_RDMA_WRITE, local, size, remote, IBV_SEND_SIGNALED | inl, 0, 0);
         wait_one());
    printf("lat put %d %.0f\n", size, t);
    BEST(t, k, post(IBV_WR_RDMA_READ, local, size, remote, IBV_SEND_SIGNALED, 0, 0); wait_one());
    printf("lat get %d %.0f\n", size, t);
    fflush(stdout);
  }
  const int nb = (iters / batch > 0 ? iters / batch : 1) * batch;
#define BATCHED(OPCODE, LOCAL, LEN, REMOTE, FLAGS, A, B)                                      \
  BEST(t, nb, post(OPCODE, LOCAL, LEN, REMOTE, (FLAGS) | (i % batch == batch - 1 ? IBV_SEND_SIGNALED : 0), A, B); \
       if (i % batch == batch - 1) wait_one())
  BATCHED(IBV_WR_RDMA_WRITE, local, 8, remote + 8 * (i % batch), IBV_SEND_INLINE, 0, 0);
  printf("rate put_nbi 8 %.3f\n", 1e3 / t);
  const struct {
    const char *name;
    int opcode;
    uint64_t operand;
  } amos[] = {{"amo_fetch", IBV_WR_ATOMIC_FETCH_AND_ADD, 0},
              {"amo_compare_swap", IBV_WR_ATOMIC_CMP_AND_SWP, 0},
              {"amo_fetch_add", IBV_WR_ATOMIC_FETCH_AND_ADD, 1},
              {"amo_add", IBV_WR_ATOMIC_FETCH_AND_ADD, 1},
              {"amo_fetch_inc", IBV_WR_ATOMIC_FETCH_AND_ADD, 1},
              {"amo_inc", IBV_WR_ATOMIC_FETCH_AND_ADD, 1}};
  for (unsigned a = 0; a < sizeof amos / sizeof amos[0]; a++) {
    BEST(t, iters, post(amos[a].opcode, words, 8, rwords, IBV_SEND_SIGNALED, amos[a].operand,
                        (uint64_t)i + 1);
         wait_one());
    printf("lat %s 8 %.0f\n", amos[a].name, t);
    BATCHED(amos[a].opcode, words + 8 * (1 + i % batch), 8, rwords, 0, amos[a].operand,
            (uint64_t)i + 1);
    printf("rate %s 8 %.3f\n", amos[a].name, 1e3 / t);
    fflush(stdout);
  }
  if (write(to_child[1], "x", 1) != 1) die("cannot stop the passive side");
  int status;
  waitpid(child, &status, 0);
  return 0;
}
