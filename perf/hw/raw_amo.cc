// The limit of hoshmem's own HCA path: the same atomics as mlx5 WQEs written by
// lib/transport/ib straight into the send queue (doorbell record, doorbell register) and
// completed by owner bit, in one process, loopback between two RC QPs, best of 5 runs. No library
// around them: what hoshmem adds is the difference. Prints "name ns" lines.
//   raw_amo ITERATIONS                 the rows of perf/hw/compare.sh
//   raw_amo ITERATIONS --table [BATCH] the rows of perf/hw/rc.sh: every AMO of rc_rma.c as the
//     WQE hoshmem writes for it (lib/atomics/hca_encoding), "lat amo_OP SIZE ns" (signaled, polled,
//     one at a time) and "rate amo_OP SIZE Mops" (BATCH WQEs, a doorbell each, only the last
//     signaled, then its completion polled); best of 5 loops after one untimed.
#include <infiniband/verbs.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "lib/transport/ib/queue.h"
#include "lib/transport/ib/wqe.h"
#include "perf/hw/loopback.h"

using namespace hoshmem;

static double now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

// --table: every AMO of rc_rma.c, latency and rate.
static int run_table(ib::SendQueue &sq, ib::CompletionQueue &cqq, ibv_mr *mr, uint64_t *words,
                     int iters, int batch) {
  using atomics::AmoOp;
  struct Row {
    const char *name;
    AmoOp op;
    uint64_t operand;
  } rows[] = {{"amo_fetch", AmoOp::Fetch, 0},           {"amo_set", AmoOp::Set, 1},
              {"amo_swap", AmoOp::Swap, 1},             {"amo_compare_swap", AmoOp::CompareSwap, 1},
              {"amo_fetch_add", AmoOp::FetchAdd, 1},    {"amo_add", AmoOp::FetchAdd, 1},
              {"amo_fetch_inc", AmoOp::FetchAdd, 1},    {"amo_inc", AmoOp::FetchAdd, 1},
              {"amo_fetch_and", AmoOp::FetchAnd, ~6ull}, {"amo_fetch_or", AmoOp::FetchOr, 6},
              {"amo_fetch_xor", AmoOp::FetchXor, 6},    {"amo_and", AmoOp::FetchAnd, ~6ull},
              {"amo_or", AmoOp::FetchOr, 6},            {"amo_xor", AmoOp::FetchXor, 6}};
  // a batch must fit in the ring without completions (the largest atomic WQE is 2 BBs)
  const int cap = static_cast<int>(sq.free_bbs() / 2);
  if (batch > cap) batch = cap;
  const int nb = (iters / batch > 0 ? iters / batch : 1) * batch;
  for (unsigned size : {8u, 4u}) {
    for (const Row &r : rows) {
      const atomics::HcaAtomic enc = atomics::encode_for_hca(r.op, size, r.operand, 0);
      for (int mode = 0; mode < 2; ++mode) {  // 0: latency, 1: rate
        const int n = mode == 0 ? iters : nb;
        double best = 1e30;
        for (int rep = 0; rep < 6; ++rep) {
          const double t0 = now_ns();
          for (int i = 0; i < n; ++i) {
            const bool last = mode == 0 || i % batch == batch - 1;
            const unsigned bbs = ib::write_atomic(
                sq.ring(), enc, {reinterpret_cast<uint64_t>(&words[2 + i % batch]), mr->lkey},
                {reinterpret_cast<uint64_t>(&words[0]), mr->rkey}, {last, false});
            sq.post(bbs);
            if (!last) continue;
            ib::Completion done;
            while (!cqq.poll(&done)) {
            }
            if (done.opcode != MLX5_CQE_REQ)
              return fprintf(stderr, "raw_amo: error completion\n"), 1;
            sq.completed(done.wqe_counter, bbs);
          }
          const double t = (now_ns() - t0) / n;
          if (rep > 0 && t < best) best = t;
        }
        if (mode == 0)
          printf("lat %s %u %.0f\n", r.name, size, best);
        else
          printf("rate %s %u %.3f\n", r.name, size, 1e3 / best);
      }
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  const int iters = argc > 1 ? atoi(argv[1]) : 2000;
  const bool table = argc > 2 && strcmp(argv[2], "--table") == 0;
  int batch = table && argc > 3 ? atoi(argv[3]) : 64;
  int n;
  ibv_device **list = ibv_get_device_list(&n);
  if (!list || n < 1) return fprintf(stderr, "raw_amo: no RDMA device\n"), 1;
  ibv_context *ctx = ibv_open_device(list[0]);
  ibv_pd *pd = ibv_alloc_pd(ctx);
  ibv_cq *cq = ibv_create_cq(ctx, 256, nullptr, nullptr, 0);
  alignas(64) static uint64_t words[2 + 1024];
  ibv_mr *mr = ibv_reg_mr(pd, words, sizeof words,
                          IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
  ibv_qp *a = loopback_qp_depth(pd, cq, 1024), *b = loopback_qp_depth(pd, cq, 1024);
  ibv_port_attr port;
  ibv_query_port(ctx, 1, &port);
  loopback_connect(a, b->qp_num, port.lid);
  loopback_connect(b, a->qp_num, port.lid);
  ib::SendQueue sq;
  ib::CompletionQueue cqq;
  if (!sq.init(a) || !cqq.init(cq)) return fprintf(stderr, "raw_amo: not an mlx5 QP\n"), 1;
  if (table) return run_table(sq, cqq, mr, words, iters, batch);
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
