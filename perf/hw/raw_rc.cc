// The same-path limit across nodes over RC: perf/hw/verbs_rc.c's loops, with the WQEs written
// the way hoshmem (and UCX's rc_mlx5) posts them instead of through ibv_post_send: lib/transport/ib
// writes each WQE into the send queue, updates the doorbell record and stores to the doorbell
// register; completions are read from the CQ buffer by owner bit. Two processes (forked before
// either opens the device, so each is a node of its own, like two PEs with
// HOSHMEM_PES_PER_NODE=1), one RC QP each; the child only registers its memory and sleeps in
// read() until the parent is done. On softhca the doorbell store is noticed by the model's
// doorbell thread (or its fault handler) instead of running inside ibv_post_send, which is why
// this limit differs from verbs_rc's.
//   raw_rc [ITERATIONS [BATCH]]
// Output as verbs_rc (best of 5 loops after one untimed):
//   lat put SIZE      RDMA write, signaled, polled (inline up to 128 B), 8 B-1 MiB
//   lat get SIZE      RDMA read, signaled, polled
//   rate put_nbi 8    8-byte inline writes, a doorbell each, only the last of each BATCH signaled
//   lat/rate amo_OP SIZE   every AMO of rc_rma.c as the WQE hoshmem writes for it
//                     (lib/atomics/hca_encoding: standard or masked atomics), 8 and 4 bytes
#include <infiniband/verbs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "lib/transport/ib/queue.h"
#include "lib/transport/ib/wqe.h"
#include "perf/hw/loopback.h"

using namespace hoshmem;

namespace {

constexpr int kMaxSize = 1 << 20;
constexpr unsigned kInline = 128;
constexpr int kDepth = 1024;

struct Side {
  uint32_t qpn, lid, rkey;
  uint64_t addr;
};

[[noreturn]] void die(const char *what) {
  fprintf(stderr, "raw_rc: %s\n", what);
  exit(1);
}

double now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

ibv_qp *make_qp(ibv_pd *pd, ibv_cq *cq) {
  ibv_qp_init_attr a{};
  a.send_cq = a.recv_cq = cq;
  a.cap.max_send_wr = kDepth;
  a.cap.max_recv_wr = 1;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  a.cap.max_inline_data = kInline;
  a.qp_type = IBV_QPT_RC;
  ibv_qp *qp = ibv_create_qp(pd, &a);
  if (!qp) die("ibv_create_qp failed");
  ibv_qp_attr m{};
  m.qp_state = IBV_QPS_INIT;
  m.port_num = 1;
  m.qp_access_flags = IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    die("INIT failed");
  return qp;
}

ib::SendQueue sq;
ib::CompletionQueue cqq;

// Waits for the completion of the signaled WQE just posted (`bbs` its size) and frees the ring.
void wait_one(unsigned bbs) {
  ib::Completion done;
  while (!cqq.poll(&done)) {
  }
  if (done.opcode != MLX5_CQE_REQ) die("error completion");
  sq.completed(done.wqe_counter, bbs);
}

// Best of 5 timed loops of `n` calls of body(i) after one untimed, ns per call.
template <class F>
double best(int n, F body) {
  double b = 1e30;
  for (int rep = 0; rep < 6; ++rep) {
    const double t0 = now_ns();
    for (int i = 0; i < n; ++i) body(i);
    const double t = (now_ns() - t0) / n;
    if (rep > 0 && t < b) b = t;
  }
  return b;
}

}  // namespace

int main(int argc, char **argv) {
  const int iters = argc > 1 ? atoi(argv[1]) : 1000;
  int batch = argc > 2 ? atoi(argv[2]) : 64;
  int to_child[2], to_parent[2];
  if (pipe(to_child) || pipe(to_parent)) die("pipe failed");
  fflush(stdout);
  const pid_t child = fork();
  if (child < 0) die("fork failed");
  const bool active = child != 0;

  int n;
  ibv_device **list = ibv_get_device_list(&n);
  if (!list || n < 1) die("no RDMA device");
  ibv_context *ctx = ibv_open_device(list[0]);
  if (!ctx) die("cannot open the device");
  ibv_pd *pd = ibv_alloc_pd(ctx);
  ibv_cq *cq = ibv_create_cq(ctx, 2 * kDepth, nullptr, nullptr, 0);
  auto *buf = static_cast<char *>(aligned_alloc(4096, kMaxSize + 16384));
  memset(buf, 0, kMaxSize + 16384);
  ibv_mr *mr = ibv_reg_mr(pd, buf, kMaxSize + 16384,
                          IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                              IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
  if (!pd || !cq || !mr) die("cannot set up PD, CQ or MR");
  ibv_qp *qp = make_qp(pd, cq);
  ibv_port_attr port;
  ibv_query_port(ctx, 1, &port);
  const Side mine{qp->qp_num, port.lid, mr->rkey, reinterpret_cast<uintptr_t>(buf)};
  Side peer;
  if (write(active ? to_child[1] : to_parent[1], &mine, sizeof mine) != sizeof mine ||
      read(active ? to_parent[0] : to_child[0], &peer, sizeof peer) != sizeof peer)
    die("exchange failed");
  loopback_connect(qp, peer.qpn, peer.lid);
  if (!active) {  // the passive side: wait for the end
    char c;
    if (write(to_parent[1], "r", 1) != 1 || read(to_child[0], &c, 1) < 0) return 1;
    return 0;
  }
  char c;
  if (read(to_parent[0], &c, 1) != 1) die("the passive side did not get ready");
  if (!sq.init(qp) || !cqq.init(cq)) die("not an mlx5 QP (mlx5dv_init_obj)");

  const uint64_t local = reinterpret_cast<uintptr_t>(buf), words = local + kMaxSize;
  const uint64_t remote = peer.addr, rwords = peer.addr + kMaxSize;
  const uint32_t lkey = mr->lkey, rkey = peer.rkey;
  for (int size = 8; size <= kMaxSize;
       size = size * 4 > kMaxSize && size < kMaxSize ? kMaxSize : size * 4) {
    const long scaled = static_cast<long>(iters) * 8192 / size;
    const int k = size <= 8192 ? iters : (scaled < 10 ? 10 : static_cast<int>(scaled));
    double t = best(k, [&](int) {
      const unsigned bbs =
          size <= static_cast<int>(kInline)
              ? ib::write_rdma_write_inline(sq.ring(), buf, size, {remote, rkey}, {true, false})
              : ib::write_rdma_write(sq.ring(), {local, lkey}, size, {remote, rkey}, {true, false});
      sq.post(bbs);
      wait_one(bbs);
    });
    printf("lat put %d %.0f\n", size, t);
    t = best(k, [&](int) {
      const unsigned bbs =
          ib::write_rdma_read(sq.ring(), {local, lkey}, size, {remote, rkey}, {true, false});
      sq.post(bbs);
      wait_one(bbs);
    });
    printf("lat get %d %.0f\n", size, t);
    fflush(stdout);
  }
  // a batch fits in the ring without completions (the largest WQE here is 2 BBs)
  if (batch > static_cast<int>(sq.free_bbs() / 2)) batch = static_cast<int>(sq.free_bbs() / 2);
  const int nb = (iters / batch > 0 ? iters / batch : 1) * batch;
  double t = best(nb, [&](int i) {
    const bool last = i % batch == batch - 1;
    const unsigned bbs = ib::write_rdma_write_inline(sq.ring(), buf, 8,
                                                     {remote + 8 * (i % batch), rkey}, {last, false});
    sq.post(bbs);
    if (last) wait_one(bbs);
  });
  printf("rate put_nbi 8 %.3f\n", 1e3 / t);
  using atomics::AmoOp;
  const struct {
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
  for (unsigned size : {8u, 4u}) {
    for (const auto &r : rows) {
      const atomics::HcaAtomic enc = atomics::encode_for_hca(r.op, size, r.operand, 0);
      t = best(iters, [&](int) {
        const unsigned bbs =
            ib::write_atomic(sq.ring(), enc, {words + 8, lkey}, {rwords, rkey}, {true, false});
        sq.post(bbs);
        wait_one(bbs);
      });
      printf("lat %s %u %.0f\n", r.name, size, t);
      t = best(nb, [&](int i) {
        const bool last = i % batch == batch - 1;
        const unsigned bbs = ib::write_atomic(sq.ring(), enc, {words + 8 * (2 + i % batch), lkey},
                                              {rwords, rkey}, {last, false});
        sq.post(bbs);
        if (last) wait_one(bbs);
      });
      printf("rate %s %u %.3f\n", r.name, size, 1e3 / t);
      fflush(stdout);
    }
  }
  if (write(to_child[1], "x", 1) != 1) die("cannot stop the passive side");
  int status;
  waitpid(child, &status, 0);
  return 0;
}
