// The verbs layer's own send/completion queue code (lib/transport/ib) against the software mlx5
// HCA (test/softhca): WQEs written by wqe.h into a real QP's send queue, rung by doorbell record
// and register, completions read from the CQ ring by owner bit. Every AMO of the API on 4 and 8
// bytes leaves the word an HCA leaves (atomics::hca_apply is the reference) and returns the old
// value (8 bytes: big-endian reply mode); RDMA write (registered and inline) and read move the
// data; a bad rkey completes with the remote-access syndrome; thousands of WQEs wrap the ring
// and its 16-bit counters.
//
// The binary links Debian's libibverbs/libmlx5 and runs itself again with the model selected
// (softhca_main.h), 8-byte atomic replies big-endian.
#include <endian.h>
#include <gtest/gtest.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "lib/transport/ib/queue.h"
#include "lib/transport/ib/wqe.h"
#include "test/ib/softhca_main.h"

namespace hoshmem::ib {
namespace {

using atomics::AmoOp;

struct Loopback {
  ibv_context *ctx = nullptr;
  ibv_pd *pd = nullptr;
  ibv_cq *cq = nullptr;
  ibv_qp *a = nullptr, *b = nullptr;  // a's sends reach b, in this process
  ibv_mr *mr = nullptr;
  alignas(4096) static inline uint8_t memory[1 << 20];  // [0, 512K): remote side; rest: local
  SendQueue sq;
  CompletionQueue cqq;

  ibv_qp *make_qp() {
    ibv_qp_init_attr init{};
    init.qp_type = IBV_QPT_RC;
    init.send_cq = init.recv_cq = cq;
    init.cap.max_send_wr = 64;
    init.cap.max_recv_wr = 1;
    init.cap.max_send_sge = init.cap.max_recv_sge = 1;
    init.cap.max_inline_data = 128;
    ibv_qp *qp = ibv_create_qp(pd, &init);
    if (!qp) return nullptr;
    ibv_qp_attr m{};
    m.qp_state = IBV_QPS_INIT;
    m.port_num = 1;
    m.qp_access_flags =
        IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
      return nullptr;
    return qp;
  }

  bool connect(ibv_qp *qp, uint32_t dest, uint16_t lid) {
    ibv_qp_attr m{};
    m.qp_state = IBV_QPS_RTR;
    m.path_mtu = IBV_MTU_4096;
    m.dest_qp_num = dest;
    m.max_dest_rd_atomic = 16;
    m.min_rnr_timer = 1;
    m.ah_attr.dlid = lid;
    m.ah_attr.port_num = 1;
    if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
      return false;
    m.qp_state = IBV_QPS_RTS;
    m.timeout = 10;
    m.retry_cnt = 2;
    m.rnr_retry = 7;
    m.max_rd_atomic = 16;
    return ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
                                     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                     IBV_QP_MAX_QP_RD_ATOMIC) == 0;
  }

  bool open() {
    int n = 0;
    ibv_device **list = ibv_get_device_list(&n);
    if (!list || n < 1) return false;
    ctx = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    if (!ctx || !(pd = ibv_alloc_pd(ctx)) || !(cq = ibv_create_cq(ctx, 256, nullptr, nullptr, 0)))
      return false;
    mr = ibv_reg_mr(pd, memory, sizeof memory,
                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                        IBV_ACCESS_REMOTE_ATOMIC);
    if (!mr || !(a = make_qp()) || !(b = make_qp())) return false;
    ibv_port_attr port{};
    if (ibv_query_port(ctx, 1, &port)) return false;
    return connect(a, b->qp_num, port.lid) && connect(b, a->qp_num, port.lid) && sq.init(a) &&
           cqq.init(cq);
  }

  ~Loopback() {
    if (a) ibv_destroy_qp(a);
    if (b) ibv_destroy_qp(b);
    if (mr) ibv_dereg_mr(mr);
    if (cq) ibv_destroy_cq(cq);
    if (pd) ibv_dealloc_pd(pd);
    if (ctx) ibv_close_device(ctx);
  }

  uint8_t *remote(size_t off) { return memory + off; }
  uint8_t *local(size_t off) { return memory + (1 << 19) + off; }
  RemoteAddr raddr(size_t off) { return {reinterpret_cast<uint64_t>(remote(off)), mr->rkey}; }
  LocalBuf lbuf(size_t off) { return {reinterpret_cast<uint64_t>(local(off)), mr->lkey}; }

  // Posts the WQE just written (signaled) and waits for its completion.
  Completion post_and_wait(unsigned bbs) {
    const uint16_t first = sq.ring().pi;
    sq.post(bbs);
    Completion c{};
    // Spin (the model's doorbell thread answers in microseconds), then back off; give up after
    // 10 s so a lost WQE fails instead of hanging.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (long i = 0; !cqq.poll(&c); ++i) {
      if (i % 1024 == 0 && std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "no completion for the WQE at " << first;
        return c;
      }
      if (i > 1000000) usleep(50);
    }
    EXPECT_EQ(c.wqe_counter, first);
    EXPECT_EQ(c.qpn, a->qp_num);
    sq.completed(c.wqe_counter, bbs);
    return c;
  }
};

TEST(Queue, EveryAtomicOverTheModel) {
  Loopback l;
  ASSERT_TRUE(l.open());
  std::mt19937_64 rng(7);
  const AmoOp ops[] = {AmoOp::Fetch,    AmoOp::Set,      AmoOp::Swap,    AmoOp::CompareSwap,
                       AmoOp::FetchAdd, AmoOp::FetchAnd, AmoOp::FetchOr, AmoOp::FetchXor};
  for (int round = 0; round < 40; ++round) {
    for (AmoOp op : ops) {
      for (unsigned size : {4u, 8u}) {
        const uint64_t start = rng(), operand = rng();
        // compare-swap: match half of the time
        const uint64_t compare = round % 2 ? start : rng();
        uint8_t *word = l.remote(size * 8);
        memcpy(word, &start, size);
        uint8_t expect[8];
        memcpy(expect, &start, size);
        const atomics::HcaAtomic enc = atomics::encode_for_hca(op, size, operand, compare);
        const uint64_t old = atomics::hca_apply(enc, expect);
        memset(l.local(0), 0xee, 8);
        const unsigned bbs = write_atomic(l.sq.ring(), enc, l.lbuf(0), l.raddr(size * 8), {true});
        const Completion c = l.post_and_wait(bbs);
        const std::string what = std::string(atomics::amo_op_name(op)) + "/" +
                                 std::to_string(size) + " round " + std::to_string(round);
        ASSERT_EQ(c.opcode, MLX5_CQE_REQ) << what << " syndrome " << int{c.syndrome};
        ASSERT_EQ(memcmp(word, expect, size), 0) << what << ": the word";
        if (size == 8) {  // big-endian reply mode (SOFTHCA_ATOMIC_ENDIAN=big)
          uint64_t reply;
          memcpy(&reply, l.local(0), 8);
          ASSERT_EQ(be64toh(reply), old) << what << ": the reply";
        }
      }
    }
  }
}

TEST(Queue, RdmaWriteInlineWriteAndRead) {
  Loopback l;
  ASSERT_TRUE(l.open());
  for (uint32_t length : {1u, 7u, 64u, 100u, 4096u, 65536u + 3}) {
    for (uint32_t i = 0; i < length; ++i) l.local(0)[i] = static_cast<uint8_t>(i * 7 + length);
    memset(l.remote(0), 0, length + 16);
    Completion c = l.post_and_wait(
        write_rdma_write(l.sq.ring(), l.lbuf(0), length, l.raddr(0), {true}));
    ASSERT_EQ(c.opcode, MLX5_CQE_REQ);
    ASSERT_EQ(memcmp(l.remote(0), l.local(0), length), 0) << "write of " << length;
    if (length <= 100) {
      memset(l.remote(4096), 0, length + 16);
      c = l.post_and_wait(
          write_rdma_write_inline(l.sq.ring(), l.local(0), length, l.raddr(4096), {true}));
      ASSERT_EQ(c.opcode, MLX5_CQE_REQ);
      ASSERT_EQ(memcmp(l.remote(4096), l.local(0), length), 0) << "inline write of " << length;
      ASSERT_EQ(l.remote(4096)[length], 0) << "inline write past its length";
    }
    memset(l.local(200000), 0, length);
    c = l.post_and_wait(
        write_rdma_read(l.sq.ring(), l.lbuf(200000), length, l.raddr(0), {true}));
    ASSERT_EQ(c.opcode, MLX5_CQE_REQ);
    ASSERT_EQ(memcmp(l.local(200000), l.local(0), length), 0) << "read of " << length;
  }
}

TEST(Queue, ManyWqesWrapTheRingAndItsCounters) {
  Loopback l;
  ASSERT_TRUE(l.open());
  uint64_t *counter = reinterpret_cast<uint64_t *>(l.remote(64));
  *counter = 0;
  // 70,000 WQEs of 1 and 2 BBs (fetch-add; swap, a masked compare-swap of 8 bytes): far past
  // the 16-bit WQE counter, and 2-BB WQEs that start in the ring's last BB and wrap.
  for (int i = 0; i < 70000; ++i) {
    const atomics::HcaAtomic enc =
        atomics::encode_for_hca(i % 3 ? AmoOp::FetchAdd : AmoOp::Swap, 8, i % 3 ? 1 : i, 0);
    const Completion c =
        l.post_and_wait(write_atomic(l.sq.ring(), enc, l.lbuf(0), l.raddr(64), {true}));
    ASSERT_EQ(c.opcode, MLX5_CQE_REQ) << "WQE " << i;
  }
  uint64_t expect = 0;
  for (int i = 0; i < 70000; ++i) expect = i % 3 ? expect + 1 : static_cast<uint64_t>(i);
  EXPECT_EQ(*counter, expect);
}

TEST(Queue, BadRkeyCompletesWithRemoteAccessError) {
  Loopback l;
  ASSERT_TRUE(l.open());
  RemoteAddr bad = l.raddr(0);
  bad.rkey ^= 0x5a5a00;
  const Completion c =
      l.post_and_wait(write_rdma_write(l.sq.ring(), l.lbuf(0), 8, bad, {true}));
  EXPECT_EQ(c.opcode, MLX5_CQE_REQ_ERR);
  EXPECT_EQ(c.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
}

}  // namespace
}  // namespace hoshmem::ib

int main(int argc, char **argv) { return softhca_test_main(argc, argv, "ib-queue-test"); }
