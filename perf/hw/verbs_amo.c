/* The limit of the HCA path: the same atomics written directly in verbs, one process, an RC QP
 * connected to a second QP of the same process (loopback), ibv_post_send then ibv_poll_cq,
 * best of 5 runs. Standard 8-byte fetch-add and compare-swap only (verbs has no masked atomics).
 * Prints "name ns" lines. */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *cq) {
  struct ibv_qp_init_attr a = {0};
  a.send_cq = a.recv_cq = cq;
  a.cap.max_send_wr = 64;
  a.cap.max_recv_wr = 1;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  a.qp_type = IBV_QPT_RC;
  struct ibv_qp *qp = ibv_create_qp(pd, &a);
  struct ibv_qp_attr m = {0};
  m.qp_state = IBV_QPS_INIT;
  m.port_num = 1;
  m.qp_access_flags = IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  return qp;
}

static void connect_qp(struct ibv_qp *qp, unsigned dest, unsigned lid) {
  struct ibv_qp_attr m = {0};
  m.qp_state = IBV_QPS_RTR;
  m.path_mtu = IBV_MTU_4096;
  m.dest_qp_num = dest;
  m.max_dest_rd_atomic = 16;
  m.min_rnr_timer = 12;
  m.ah_attr.dlid = lid;
  m.ah_attr.port_num = 1;
  ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                            IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  m.qp_state = IBV_QPS_RTS;
  m.timeout = 14;
  m.retry_cnt = 7;
  m.rnr_retry = 7;
  m.max_rd_atomic = 16;
  ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                            IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

int main(int argc, char **argv) {
  const int iters = argc > 1 ? atoi(argv[1]) : 2000;
  int n;
  struct ibv_device **list = ibv_get_device_list(&n);
  if (!list || n < 1) return fprintf(stderr, "verbs_amo: no RDMA device\n"), 1;
  struct ibv_context *ctx = ibv_open_device(list[0]);
  struct ibv_pd *pd = ibv_alloc_pd(ctx);
  struct ibv_cq *cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
  static unsigned long long words[2] __attribute__((aligned(64)));
  struct ibv_mr *mr = ibv_reg_mr(pd, words, sizeof words,
                                 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
  struct ibv_qp *a = make_qp(pd, cq), *b = make_qp(pd, cq);
  struct ibv_port_attr port;
  ibv_query_port(ctx, 1, &port);
  connect_qp(a, b->qp_num, port.lid);
  connect_qp(b, a->qp_num, port.lid);
  const char *names[2] = {"fetch_add64", "cswap64"};
  for (int k = 0; k < 2; k++) {
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
      double t0 = now_ns();
      for (int i = 0; i < iters; i++) {
        struct ibv_sge sge = {(uintptr_t)&words[1], 8, mr->lkey};
        struct ibv_send_wr wr = {0}, *bad;
        wr.opcode = k == 0 ? IBV_WR_ATOMIC_FETCH_AND_ADD : IBV_WR_ATOMIC_CMP_AND_SWP;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.wr.atomic.remote_addr = (uintptr_t)&words[0];
        wr.wr.atomic.rkey = mr->rkey;
        wr.wr.atomic.compare_add = k == 0 ? 1 : 0;
        wr.wr.atomic.swap = 1;
        if (ibv_post_send(a, &wr, &bad)) return fprintf(stderr, "post failed\n"), 1;
        struct ibv_wc wc;
        while (ibv_poll_cq(cq, 1, &wc) == 0) {
        }
        if (wc.status != IBV_WC_SUCCESS) return fprintf(stderr, "completion error\n"), 1;
      }
      double t = (now_ns() - t0) / iters;
      if (t < best) best = t;
    }
    printf("%s %.0f\n", names[k], best);
  }
  return 0;
}
