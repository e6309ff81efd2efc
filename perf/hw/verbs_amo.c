/* The limit of the HCA path: the same atomics written directly in verbs, one process, an RC QP
 * connected to a second QP of the same process (loopback), ibv_post_send then ibv_poll_cq,
 * best of 5 runs. Standard 8-byte fetch-add and compare-swap only (verbs has no masked atomics).
 * Prints "name ns" lines. */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "loopback.h"

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
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
  struct ibv_qp *a = loopback_qp(pd, cq), *b = loopback_qp(pd, cq);
  struct ibv_port_attr port;
  ibv_query_port(ctx, 1, &port);
  loopback_connect(a, b->qp_num, port.lid);
  loopback_connect(b, a->qp_num, port.lid);
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
