// The limit of hoshmem's own HCA path: the same atomics as mlx5 WQEs written by
// lib/transport/ib straight into the send queue (doorbell record, doorbell register) and
// completed by owner bit, in one process, loopback between two RC QPs, best of 5 runs. No library
// around them: what hoshmem adds is the difference. Prints "name ns" lines.
#include <infiniband/verbs.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "lib/transport/ib/queue.h"
#include "lib/transport/ib/wqe.h"
#include "perf/hw/loopback.h"

using namespace hoshmem;

static double now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv) {
  const int iters = argc > 1 ? atoi(argv[1]) : 2000;
  int n;
  ibv_device **list = ibv_get_device_list(&n);
  if (!list || n < 1) return fprintf(stderr, "raw_amo: no RDMA device\n"), 1;
  ibv_context *ctx = ibv_open_device(list[0]);
  ibv_pd *pd = ibv_alloc_pd(ctx);
  ibv_cq *cq = ibv_create_cq(ctx, 256, nullptr, nullptr, 0);
  alignas(64) static uint64_t words[2];
  ibv_mr *mr = ibv_reg_mr(pd, words, sizeof words,
                          IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
  ibv_qp *a = loopback_qp(pd, cq), *b = loopback_qp(pd, cq);
  ibv_port_attr port;
  ibv_query_port(ctx, 1, &port);
  loopback_connect(a, b->qp_num, port.lid);
  loopback_connect(b, a->qp_num, port.lid);
  ib::SendQueue sq;
  ib::CompletionQueue cqq;
  if (!sq.init(a) || !cqq.init(cq)) return fprintf(stderr, "raw_amo: not an mlx5 QP\n"), 1;
  struct Case {
    const char *name;
    atomics::AmoOp op;
    unsigned size;
  } cases[] = {{"fetch_add64", atomics::AmoOp::FetchAdd, 8},
               {"cswap64", atomics::AmoOp::CompareSwap, 8},
               {"swap64", atomics::AmoOp::Swap, 8},
               {"fetch_add32", atomics::AmoOp::FetchAdd, 4},
               {"cswap32", atomics::AmoOp::CompareSwap, 4},
               {"fetch_xor64", atomics::AmoOp::FetchXor, 8},
               {"fetch64", atomics::AmoOp::Fetch, 8}};
  for (const Case &c : cases) {
    const atomics::HcaAtomic enc = atomics::encode_for_hca(c.op, c.size, 1, 0);
    double best = 1e30;
    for (int rep = 0; rep < 5; ++rep) {
      const double t0 = now_ns();
      for (int i = 0; i < iters; ++i) {
        const uint16_t first = sq.ring().pi;
        const unsigned bbs =
            ib::write_atomic(sq.ring(), enc, {reinterpret_cast<uint64_t>(&words[1]), mr->lkey},
                             {reinterpret_cast<uint64_t>(&words[0]), mr->rkey}, {true, false});
        sq.post(bbs);
        ib::Completion done;
        while (!cqq.poll(&done)) {
        }
        if (done.opcode != MLX5_CQE_REQ) return fprintf(stderr, "raw_amo: error completion\n"), 1;
        sq.completed(first, bbs);
      }
      const double t = (now_ns() - t0) / iters;
      if (t < best) best = t;
    }
    printf("%s %.0f\n", c.name, best);
  }
  return 0;
}
