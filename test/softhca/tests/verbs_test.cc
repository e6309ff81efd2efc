// softhca conformance tests: drive the model only through the public verbs and mlx5dv APIs.
#include "test/softhca/tests/common.h"

namespace {

// A loopback pair of RC QPs in this process (the requests still cross the fabric).
struct Pair : ::testing::Test {
  Dev d;
  ibv_cq *cq = nullptr;
  ibv_qp *a = nullptr, *b = nullptr;
  alignas(64) uint8_t src[4096], dst[4096];
  ibv_mr *msrc = nullptr, *mdst = nullptr;
  void SetUp() override {
    ASSERT_NE(d.ctx, nullptr);
    cq = ibv_create_cq(d.ctx, 256, nullptr, nullptr, 0);
    a = make_rc(d, cq, true);
    b = make_rc(d, cq, true);
    ASSERT_TRUE(a && b);
    ASSERT_EQ(connect_rc(a, b->qp_num, lid_of(d)), 0);
    ASSERT_EQ(connect_rc(b, a->qp_num, lid_of(d)), 0);
    int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
              IBV_ACCESS_REMOTE_ATOMIC;
    msrc = ibv_reg_mr(d.pd, src, sizeof src, all);
    mdst = ibv_reg_mr(d.pd, dst, sizeof dst, all);
    ASSERT_TRUE(msrc && mdst);
  }
  void TearDown() override {
    if (a) ibv_destroy_qp(a);
    if (b) ibv_destroy_qp(b);
    if (msrc) ibv_dereg_mr(msrc);
    if (mdst) ibv_dereg_mr(mdst);
    if (cq) ibv_destroy_cq(cq);
  }
  ibv_wc post(ibv_qp* qp, ibv_wr_opcode op, void* laddr, uint32_t len, uint32_t lkey, void* raddr,
              uint32_t rkey, uint64_t cmp_add = 0, uint64_t swap = 0) {
    ibv_sge s{uint64_t(uintptr_t(laddr)), len, lkey};
    ibv_send_wr wr{}, *bad;
    wr.wr_id = 7;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = op;
    wr.send_flags = IBV_SEND_SIGNALED;
    if (op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
      wr.wr.atomic.remote_addr = uint64_t(uintptr_t(raddr));
      wr.wr.atomic.rkey = rkey;
      wr.wr.atomic.compare_add = cmp_add;
      wr.wr.atomic.swap = swap;
    } else {
      wr.wr.rdma.remote_addr = uint64_t(uintptr_t(raddr));
      wr.wr.rdma.rkey = rkey;
    }
    EXPECT_EQ(ibv_post_send(qp, &wr, &bad), 0);
    return wait_wc(cq);
  }
  // Posts one raw masked-atomic WQE (DESIGN.md layouts) through mlx5dv_wr_raw_wqe.
  ibv_wc masked(uint8_t opcode, int size, void* target, const uint8_t* seg, int seg_units,
                void* result) {
    alignas(64) uint8_t w[128] = {};
    uint32_t ds = 1 + 1 + seg_units + 1;
    auto* c = reinterpret_cast<mlx5_wqe_ctrl_seg*>(w);
    uint8_t opmod = 0x8 | (size == 8 ? 1 : 0);
    c->opmod_idx_opcode = bswap32(uint32_t(opmod) << 24 | opcode);
    c->qpn_ds = bswap32(ds);
    auto* r = reinterpret_cast<mlx5_wqe_raddr_seg*>(w + 16);
    r->raddr = bswap64(uint64_t(uintptr_t(target)));
    r->rkey = bswap32(mdst->rkey);
    memcpy(w + 32, seg, size_t(seg_units) * 16);
    auto* dseg = reinterpret_cast<mlx5_wqe_data_seg*>(w + 32 + seg_units * 16);
    dseg->byte_count = bswap32(uint32_t(size));
    dseg->lkey = bswap32(msrc->lkey);
    dseg->addr = bswap64(uint64_t(uintptr_t(result)));
    ibv_qp_ex* x = ibv_qp_to_qp_ex(a);
    mlx5dv_qp_ex* m = mlx5dv_qp_ex_from_ibv_qp_ex(x);
    ibv_wr_start(x);
    x->wr_id = 99;
    x->wr_flags = IBV_SEND_SIGNALED;
    mlx5dv_wr_raw_wqe(m, w);
    EXPECT_EQ(ibv_wr_complete(x), 0);
    return wait_wc(cq);
  }
};

TEST(Device, PresentsAsConnectX6) {
  Dev d;
  ASSERT_NE(d.ctx, nullptr);
  ibv_device_attr_ex a{};
  ASSERT_EQ(ibv_query_device_ex(d.ctx, nullptr, &a), 0);
  EXPECT_EQ(a.orig_attr.vendor_id, 0x02c9u);
  EXPECT_EQ(a.orig_attr.vendor_part_id, 4123u);
  EXPECT_EQ(a.orig_attr.atomic_cap, IBV_ATOMIC_HCA);
  ibv_port_attr p;
  ASSERT_EQ(ibv_query_port(d.ctx, 1, &p), 0);
  EXPECT_EQ(p.state, IBV_PORT_ACTIVE);
  EXPECT_NE(p.lid, 0);
  ibv_gid g;
  ASSERT_EQ(ibv_query_gid(d.ctx, 1, 0, &g), 0);
  EXPECT_EQ(g.raw[0], 0xfe);
  EXPECT_TRUE(mlx5dv_is_supported(d.ctx->device));
  mlx5dv_context dv{};
  EXPECT_EQ(mlx5dv_query_device(d.ctx, &dv), 0);
  EXPECT_TRUE(dv.flags & MLX5DV_CONTEXT_FLAGS_CQE_V1);
}

TEST(Device, DevxQueryHcaCapAtomic) {
  Dev d;
  uint32_t in[4] = {bswap32(0x100u << 16), bswap32((3u << 1) | 1), 0, 0};
  uint8_t out[0x10 + 0x100];
  ASSERT_EQ(mlx5dv_devx_general_cmd(d.ctx, in, sizeof in, out, sizeof out), 0);
  const uint8_t* cap = out + 0x10;
  auto field = [&](unsigned off, unsigned bits) {
    uint32_t w;
    memcpy(&w, cap + off / 32 * 4, 4);
    return (bswap32(w) >> (32 - off % 32 - bits)) & ((1u << bits) - 1);
  };
  EXPECT_EQ(field(0x90, 16), 0xfu);  // CS, FA, masked CS, masked FA
  EXPECT_EQ(field(0xb0, 16) & 0xc, 0xcu);  // 4 and 8 bytes on RC
  EXPECT_EQ(field(0xd0, 16) & 0xc, 0xcu);  // and on DC
  EXPECT_EQ(field(0x40, 2), 1u);  // host-endian 8-byte replies (default knob)
  in[1] = bswap32(1);  // general caps
  ASSERT_EQ(mlx5dv_devx_general_cmd(d.ctx, in, sizeof in, out, sizeof out), 0);
  EXPECT_EQ(field(0x21a, 1), 1u);  // dct
  EXPECT_EQ(field(0x21e, 1), 1u);  // atomic
}

TEST_F(Pair, RdmaWriteAndRead) {
  for (int i = 0; i < 4096; ++i) src[i] = uint8_t(i * 7);
  memset(dst, 0, sizeof dst);
  ibv_wc wc = post(a, IBV_WR_RDMA_WRITE, src, 4096, msrc->lkey, dst, mdst->rkey);
  ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
  EXPECT_EQ(memcmp(src, dst, 4096), 0);
  memset(src, 0, sizeof src);
  wc = post(a, IBV_WR_RDMA_READ, src, 1000, msrc->lkey, dst + 10, mdst->rkey);
  ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.byte_len, 1000u);
  EXPECT_EQ(memcmp(src, dst + 10, 1000), 0);
}

TEST_F(Pair, SendRecvWithImmediate) {
  ibv_sge rs{uint64_t(uintptr_t(dst)), 256, mdst->lkey};
  ibv_recv_wr rw{}, *rbad;
  rw.wr_id = 42;
  rw.sg_list = &rs;
  rw.num_sge = 1;
  ASSERT_EQ(ibv_post_recv(b, &rw, &rbad), 0);
  strcpy(reinterpret_cast<char*>(src), "hello over softhca");
  ibv_sge s{uint64_t(uintptr_t(src)), 19, msrc->lkey};
  ibv_send_wr wr{}, *bad;
  wr.wr_id = 1;
  wr.sg_list = &s;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND_WITH_IMM;
  wr.imm_data = htonl(0x1234);
  wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
  ASSERT_EQ(ibv_post_send(a, &wr, &bad), 0);
  int got = 0;
  for (int i = 0; i < 2; ++i) {
    ibv_wc wc = wait_wc(cq);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    if (wc.opcode == IBV_WC_RECV) {
      EXPECT_EQ(wc.wr_id, 42u);
      EXPECT_EQ(wc.byte_len, 19u);
      EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
      EXPECT_EQ(ntohl(wc.imm_data), 0x1234u);
      // No src_qp check: 19 bytes on RC are scattered into the CQE, whose data then covers the
      // source-QP and SLID fields (as on ConnectX; rdma-core reads them anyway).
      got |= 1;
    } else {
      EXPECT_EQ(wc.opcode, IBV_WC_SEND);
      got |= 2;
    }
  }
  EXPECT_EQ(got, 3);
  EXPECT_STREQ(reinterpret_cast<char*>(dst), "hello over softhca");
}

TEST_F(Pair, StandardAtomics) {
  uint64_t* t = reinterpret_cast<uint64_t*>(dst);
  uint64_t* r = reinterpret_cast<uint64_t*>(src);
  *t = 100;
  ASSERT_EQ(post(a, IBV_WR_ATOMIC_FETCH_AND_ADD, r, 8, msrc->lkey, t, mdst->rkey, 5).status,
            IBV_WC_SUCCESS);
  EXPECT_EQ(*r, 100u);  // host-endian reply mode
  EXPECT_EQ(*t, 105u);
  ibv_wc wc = post(a, IBV_WR_ATOMIC_CMP_AND_SWP, r, 8, msrc->lkey, t, mdst->rkey, 105, 7);
  ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.opcode, IBV_WC_COMP_SWAP);
  EXPECT_EQ(*r, 105u);
  EXPECT_EQ(*t, 7u);
  post(a, IBV_WR_ATOMIC_CMP_AND_SWP, r, 8, msrc->lkey, t, mdst->rkey, 1, 9);  // compare fails
  EXPECT_EQ(*r, 7u);
  EXPECT_EQ(*t, 7u);
}

TEST_F(Pair, QpExWrApi) {
  ibv_qp_ex* x = ibv_qp_to_qp_ex(a);
  uint64_t* t = reinterpret_cast<uint64_t*>(dst + 64);
  *t = 1;
  memset(dst, 0, 64);
  ibv_wr_start(x);
  x->wr_id = 1;
  x->wr_flags = 0;  // unsignaled
  ibv_wr_rdma_write(x, mdst->rkey, uint64_t(uintptr_t(dst)));
  char msg[] = "inline!";
  ibv_wr_set_inline_data(x, msg, sizeof msg);
  x->wr_id = 2;
  x->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_atomic_fetch_add(x, mdst->rkey, uint64_t(uintptr_t(t)), 41);
  ibv_wr_set_sge(x, msrc->lkey, uint64_t(uintptr_t(src)), 8);
  ASSERT_EQ(ibv_wr_complete(x), 0);
  ibv_wc wc = wait_wc(cq);
  ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.wr_id, 2u);  // the unsignaled write produced no completion
  EXPECT_EQ(*t, 42u);
  EXPECT_STREQ(reinterpret_cast<char*>(dst), "inline!");
  ibv_wc none;
  EXPECT_EQ(ibv_poll_cq(cq, 1, &none), 0);
}

// Every masked-atomic mapping of DESIGN.md, bit-exact, through raw WQEs.
TEST_F(Pair, MaskedAtomics) {
  auto be32s = [](std::initializer_list<uint32_t> v, uint8_t* out) {
    int i = 0;
    for (uint32_t x : v) {
      uint32_t b = bswap32(x);
      memcpy(out + 4 * i++, &b, 4);
    }
  };
  auto be64s = [](std::initializer_list<uint64_t> v, uint8_t* out) {
    int i = 0;
    for (uint64_t x : v) {
      uint64_t b = bswap64(x);
      memcpy(out + 8 * i++, &b, 8);
    }
  };
  uint8_t seg[32];
  uint32_t* t32 = reinterpret_cast<uint32_t*>(dst + 128);
  uint64_t* t64 = reinterpret_cast<uint64_t*>(dst + 256);
  uint32_t* r32 = reinterpret_cast<uint32_t*>(src + 128);
  uint64_t* r64 = reinterpret_cast<uint64_t*>(src + 256);
  // add32: masked FA, boundary 0
  *t32 = 0xfffffff0u;
  be32s({0x11, 0, 0, 0}, seg);
  ASSERT_EQ(masked(MLX5_OPCODE_ATOMIC_MASKED_FA, 4, t32, seg, 1, r32).status, IBV_WC_SUCCESS);
  EXPECT_EQ(*r32, bswap32(0xfffffff0u));  // 4-byte replies are big-endian in either mode
  EXPECT_EQ(*t32, 0x00000001u);
  // xor32: masked FA with boundary all-ones (carry-less)
  *t32 = 0xf0f0a5a5u;
  be32s({0xffff0000u, 0xffffffffu, 0, 0}, seg);
  masked(MLX5_OPCODE_ATOMIC_MASKED_FA, 4, t32, seg, 1, r32);
  EXPECT_EQ(*t32, 0x0f0fa5a5u);
  // cswap32: masked CS, both masks all-ones
  *t32 = 5;
  be32s({9, 5, 0xffffffffu, 0xffffffffu}, seg);
  masked(MLX5_OPCODE_ATOMIC_MASKED_CS, 4, t32, seg, 1, r32);
  EXPECT_EQ(*r32, bswap32(5u));
  EXPECT_EQ(*t32, 9u);
  be32s({1, 5, 0xffffffffu, 0xffffffffu}, seg);  // compare fails
  masked(MLX5_OPCODE_ATOMIC_MASKED_CS, 4, t32, seg, 1, r32);
  EXPECT_EQ(*t32, 9u);
  // and32 / or32 / swap32
  *t32 = 0xff00ff00u;
  be32s({0x0ff00ff0u, 0, ~0x0ff00ff0u, 0}, seg);
  masked(MLX5_OPCODE_ATOMIC_MASKED_CS, 4, t32, seg, 1, r32);
  EXPECT_EQ(*t32, 0x0f000f00u);
  be32s({0x000000ffu, 0, 0x000000ffu, 0}, seg);
  masked(MLX5_OPCODE_ATOMIC_MASKED_CS, 4, t32, seg, 1, r32);
  EXPECT_EQ(*t32, 0x0f000fffu);
  be32s({0xdeadbeefu, 0, 0xffffffffu, 0}, seg);
  masked(MLX5_OPCODE_ATOMIC_MASKED_CS, 4, t32, seg, 1, r32);
  EXPECT_EQ(*r32, bswap32(0x0f000fffu));
  EXPECT_EQ(*t32, 0xdeadbeefu);
  // 64-bit: xor, or, and, swap, add with field boundary
  *t64 = 0x0123456789abcdefull;
  be64s({0xffffffff00000000ull, ~0ull}, seg);
  masked(MLX5_OPCODE_ATOMIC_MASKED_FA, 8, t64, seg, 1, r64);
  EXPECT_EQ(*r64, 0x0123456789abcdefull);
  EXPECT_EQ(*t64, 0xfedcba9889abcdefull);
  be64s({0xf0ull, 0, 0xf0ull, 0}, seg);  // or: {swap, compare} {swap_mask, compare_mask}
  masked(MLX5_OPCODE_ATOMIC_MASKED_CS, 8, t64, seg, 2, r64);
  EXPECT_EQ(*t64, 0xfedcba9889abcdffull);
  be64s({0xffffull, 0, ~0xffffull, 0}, seg);  // and with 0xffff
  masked(MLX5_OPCODE_ATOMIC_MASKED_CS, 8, t64, seg, 2, r64);
  EXPECT_EQ(*t64, 0xcdffull);
  be64s({0x1122334455667788ull, 0, ~0ull, 0}, seg);  // swap
  masked(MLX5_OPCODE_ATOMIC_MASKED_CS, 8, t64, seg, 2, r64);
  EXPECT_EQ(*t64, 0x1122334455667788ull);
  *t64 = 0x00000000ffffffffull;  // two 32-bit fields: boundary at bit 31 stops the carry
  be64s({1, 0x0000000080000000ull}, seg);
  masked(MLX5_OPCODE_ATOMIC_MASKED_FA, 8, t64, seg, 1, r64);
  EXPECT_EQ(*t64, 0x0000000000000000ull);
}

TEST_F(Pair, UnsupportedEncodingGivesErrorCompletion) {
  alignas(64) uint8_t w[64] = {};
  auto* c = reinterpret_cast<mlx5_wqe_ctrl_seg*>(w);
  c->opmod_idx_opcode = bswap32(0x0au << 24 | MLX5_OPCODE_ATOMIC_MASKED_FA);  // 16-byte operand
  c->qpn_ds = bswap32(4);
  ibv_qp_ex* x = ibv_qp_to_qp_ex(a);
  ibv_wr_start(x);
  x->wr_id = 5;
  x->wr_flags = IBV_SEND_SIGNALED;
  mlx5dv_wr_raw_wqe(mlx5dv_qp_ex_from_ibv_qp_ex(x), w);
  ASSERT_EQ(ibv_wr_complete(x), 0);
  ibv_wc wc = wait_wc(cq);
  EXPECT_EQ(wc.status, IBV_WC_LOC_QP_OP_ERR);
  EXPECT_EQ(wc.wr_id, 5u);
}

TEST_F(Pair, RemoteAccessViolation) {
  ibv_mr* ro = ibv_reg_mr(d.pd, dst + 2048, 1024, IBV_ACCESS_REMOTE_READ);
  ASSERT_NE(ro, nullptr);
  ibv_wc wc = post(a, IBV_WR_RDMA_WRITE, src, 8, msrc->lkey, dst + 2048, ro->rkey);
  EXPECT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
  ibv_qp_attr qa;
  ibv_qp_init_attr ia;
  ibv_query_qp(a, &qa, IBV_QP_STATE, &ia);
  EXPECT_EQ(qa.qp_state, IBV_QPS_ERR);
  // Work posted to a QP in error is flushed.
  wc = post(a, IBV_WR_RDMA_READ, src, 8, msrc->lkey, dst, mdst->rkey);
  EXPECT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
  ibv_dereg_mr(ro);
}

TEST_F(Pair, BadLkeyAndOutOfRange) {
  ibv_wc wc = post(a, IBV_WR_RDMA_WRITE, src, 8, 0xdead00, dst, mdst->rkey);
  EXPECT_EQ(wc.status, IBV_WC_LOC_PROT_ERR);
}

TEST_F(Pair, RemoteOutOfRangeIsAccessError) {
  ibv_wc wc = post(a, IBV_WR_RDMA_WRITE, src, 64, msrc->lkey, dst + 4090, mdst->rkey);
  EXPECT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
}

TEST(Errors, RnrRetryExceeded) {
  Dev d;
  ibv_cq* cq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
  ibv_qp* a = make_rc(d, cq);
  ibv_qp* b = make_rc(d, cq);
  ASSERT_EQ(connect_rc(a, b->qp_num, lid_of(d), /*rnr_retry=*/1), 0);
  ASSERT_EQ(connect_rc(b, a->qp_num, lid_of(d)), 0);
  ibv_send_wr wr{}, *bad;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ASSERT_EQ(ibv_post_send(a, &wr, &bad), 0);
  EXPECT_EQ(wait_wc(cq).status, IBV_WC_RNR_RETRY_EXC_ERR);
  ibv_destroy_qp(a);
  ibv_destroy_qp(b);
  ibv_destroy_cq(cq);
}

TEST(Errors, RetryExceededToMissingQp) {
  Dev d;
  ibv_cq* cq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
  ibv_qp* a = make_rc(d, cq);
  ASSERT_EQ(connect_rc(a, 0xfff0, lid_of(d), 7, /*timeout=*/8, /*retry=*/1), 0);
  ibv_send_wr wr{}, *bad;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ASSERT_EQ(ibv_post_send(a, &wr, &bad), 0);
  EXPECT_EQ(wait_wc(cq).status, IBV_WC_RETRY_EXC_ERR);
  ibv_destroy_qp(a);
  ibv_destroy_cq(cq);
}

TEST(StateMachine, AttributeChecks) {
  Dev d;
  ibv_cq* cq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
  ibv_qp_init_attr ia{};
  ia.send_cq = ia.recv_cq = cq;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ia.qp_type = IBV_QPT_RC;
  ibv_qp* qp = ibv_create_qp(d.pd, &ia);
  ASSERT_NE(qp, nullptr);
  ibv_qp_attr m{};
  m.qp_state = IBV_QPS_RTR;  // RESET -> RTR is not a transition
  EXPECT_NE(ibv_modify_qp(qp, &m, IBV_QP_STATE), 0);
  m.qp_state = IBV_QPS_INIT;
  m.port_num = 1;
  EXPECT_NE(ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PORT), 0);  // missing required attrs
  EXPECT_EQ(ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
  ibv_send_wr wr{}, *bad;
  wr.opcode = IBV_WR_SEND;
  EXPECT_NE(ibv_post_send(qp, &wr, &bad), 0);  // cannot send before RTS
  ibv_destroy_qp(qp);
  ibv_destroy_cq(cq);
}

TEST(Events, SleepingThreadWokenByCqEvent) {
  Dev d;
  ibv_comp_channel* ch = ibv_create_comp_channel(d.ctx);
  ibv_cq* cq = ibv_create_cq(d.ctx, 16, reinterpret_cast<void*>(0x77), ch, 0);
  ibv_qp* a = make_rc(d, cq);
  ibv_qp* b = make_rc(d, cq);
  ASSERT_EQ(connect_rc(a, b->qp_num, lid_of(d)), 0);
  ASSERT_EQ(connect_rc(b, a->qp_num, lid_of(d)), 0);
  ASSERT_EQ(ibv_req_notify_cq(cq, 0), 0);
  std::atomic<bool> woke{false};
  std::thread sleeper([&] {
    ibv_cq* ev;
    void* ctx;
    if (ibv_get_cq_event(ch, &ev, &ctx) == 0 && ev == cq && ctx == reinterpret_cast<void*>(0x77)) {
      ibv_ack_cq_events(ev, 1);
      woke = true;
    }
  });
  usleep(20000);
  EXPECT_FALSE(woke.load());
  static uint64_t word;
  ibv_mr* mr = ibv_reg_mr(d.pd, &word, 8, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  ibv_sge s{uint64_t(uintptr_t(&word)), 8, mr->lkey};
  ibv_send_wr wr{}, *bad;
  wr.sg_list = &s;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = uint64_t(uintptr_t(&word));
  wr.wr.rdma.rkey = mr->rkey;
  ASSERT_EQ(ibv_post_send(a, &wr, &bad), 0);
  sleeper.join();
  EXPECT_TRUE(woke.load());
  EXPECT_EQ(wait_wc(cq).status, IBV_WC_SUCCESS);
  ibv_destroy_qp(a);
  ibv_destroy_qp(b);
  ibv_dereg_mr(mr);
  ibv_destroy_cq(cq);
  ibv_destroy_comp_channel(ch);
}

// ibv_destroy_cq as rdma-core 44 over the kernel: EBUSY while a QP uses the CQ (and for the
// channel while a CQ uses it); otherwise it discards unread events and blocks until every event
// handed out by ibv_get_cq_event has been acked.
TEST(Events, DestroyCqWaitsForAcksAndDropsUnreadEvents) {
  Dev d;
  ibv_comp_channel* ch = ibv_create_comp_channel(d.ctx);
  ASSERT_NE(ch, nullptr);
  ibv_cq* cq = ibv_create_cq(d.ctx, 16, nullptr, ch, 0);
  ibv_qp* a = make_rc(d, cq);
  ibv_qp* b = make_rc(d, cq);
  ASSERT_EQ(connect_rc(a, b->qp_num, lid_of(d)), 0);
  ASSERT_EQ(connect_rc(b, a->qp_num, lid_of(d)), 0);
  // non-blocking: a missing event fails the test instead of hanging it
  ASSERT_EQ(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), EBUSY);
  EXPECT_EQ(ibv_destroy_comp_channel(ch), EBUSY);
  static uint64_t word;
  ibv_mr* mr = ibv_reg_mr(d.pd, &word, 8, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  auto write_and_event = [&] {
    ASSERT_EQ(ibv_req_notify_cq(cq, 0), 0);
    ibv_sge s{uint64_t(uintptr_t(&word)), 8, mr->lkey};
    ibv_send_wr wr{}, *bad;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = uint64_t(uintptr_t(&word));
    wr.wr.rdma.rkey = mr->rkey;
    ASSERT_EQ(ibv_post_send(a, &wr, &bad), 0);
    EXPECT_EQ(wait_wc(cq).status, IBV_WC_SUCCESS);
    pollfd p{ch->fd, POLLIN, 0};
    EXPECT_EQ(poll(&p, 1, 5000), 1);  // the event is waiting
  };
  write_and_event();
  ibv_cq* ev = nullptr;
  void* ctx;
  ASSERT_EQ(ibv_get_cq_event(ch, &ev, &ctx), 0);  // handed out, not acked yet
  EXPECT_EQ(ev, cq);
  write_and_event();  // a second event stays unread
  ibv_destroy_qp(a);
  ibv_destroy_qp(b);
  std::atomic<bool> done{false};
  std::atomic<int> rc{-1};
  std::thread destroyer([&] {
    rc = ibv_destroy_cq(cq);
    done = true;
  });
  usleep(30000);
  EXPECT_FALSE(done.load());  // blocked on the unacked event
  ibv_ack_cq_events(ev, 1);
  destroyer.join();
  EXPECT_EQ(rc.load(), 0);
  pollfd p{ch->fd, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 0), 0);  // the unread event went with its CQ
  EXPECT_EQ(ibv_destroy_comp_channel(ch), 0);
  ibv_dereg_mr(mr);
}

// Arming a CQ the way libmlx5 does it, through mlx5dv_cq: arm doorbell record, then the 64-bit
// doorbell {sn << 28 | command | ci, cqn} stored to cq_uar + MLX5_CQ_DOORBELL.
TEST(Events, ArmThroughCqUar) {
  Dev d;
  ibv_comp_channel* ch = ibv_create_comp_channel(d.ctx);
  ibv_cq* cq = ibv_create_cq(d.ctx, 16, nullptr, ch, 0);
  ibv_qp* a = make_rc(d, cq);
  ibv_qp* b = make_rc(d, cq);
  ASSERT_EQ(connect_rc(a, b->qp_num, lid_of(d)), 0);
  ASSERT_EQ(connect_rc(b, a->qp_num, lid_of(d)), 0);
  // non-blocking: a missing event fails the test instead of hanging it
  ASSERT_EQ(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK), 0);
  mlx5dv_cq dc{};
  mlx5dv_obj o{};
  o.cq.in = cq;
  o.cq.out = &dc;
  ASSERT_EQ(mlx5dv_init_obj(&o, MLX5DV_OBJ_CQ), 0);
  ASSERT_NE(dc.cq_uar, nullptr);
  static uint64_t word;
  ibv_mr* mr = ibv_reg_mr(d.pd, &word, 8, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  uint32_t ci = 0;
  for (uint32_t sn = 0; sn < 3; ++sn) {
    uint32_t cmd = sn == 1 ? MLX5_CQ_DB_REQ_NOT_SOL : MLX5_CQ_DB_REQ_NOT;
    uint32_t db[2] = {bswap32(sn << 28 | cmd | (ci & 0xffffff)), bswap32(dc.cqn)};
    dc.dbrec[1] = db[0];  // the arm doorbell record
    __atomic_thread_fence(__ATOMIC_RELEASE);
    uint64_t v;
    memcpy(&v, db, 8);
    *reinterpret_cast<volatile uint64_t*>(static_cast<uint8_t*>(dc.cq_uar) + MLX5_CQ_DOORBELL) = v;
    pollfd p{ch->fd, POLLIN, 0};
    EXPECT_EQ(poll(&p, 1, 0), 0);  // armed, nothing yet
    ibv_sge s{uint64_t(uintptr_t(&word)), 8, mr->lkey};
    ibv_send_wr wr{}, *bad;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = uint64_t(uintptr_t(&word));
    wr.wr.rdma.rkey = mr->rkey;
    ASSERT_EQ(ibv_post_send(a, &wr, &bad), 0);
    EXPECT_EQ(wait_wc(cq).status, IBV_WC_SUCCESS);
    ci++;
    if (sn == 1) {  // armed for solicited completions only: a successful send completion is not
      EXPECT_EQ(poll(&p, 1, 20), 0);
      continue;
    }
    EXPECT_EQ(poll(&p, 1, 5000), 1);
    ibv_cq* ev;
    void* ctx;
    ASSERT_EQ(ibv_get_cq_event(ch, &ev, &ctx), 0);
    EXPECT_EQ(ev, cq);
    ibv_ack_cq_events(ev, 1);
  }
  ibv_destroy_qp(a);
  ibv_destroy_qp(b);
  ibv_dereg_mr(mr);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  EXPECT_EQ(ibv_destroy_comp_channel(ch), 0);
}

// Raw SQ and CQ access: WQE written into the SQ buffer, doorbell record, BlueFlame store,
// CQE polled by owner bit.
TEST_F(Pair, RawSqDoorbellAndCqOwnerBit) {
  ibv_cq* rcq = ibv_create_cq(d.ctx, 8, nullptr, nullptr, 0);
  ibv_qp* q = make_rc(d, rcq);
  ASSERT_EQ(connect_rc(q, b->qp_num, lid_of(d)), 0);
  // b must accept q as its peer: reconnect b to q.
  ibv_qp_attr r{};
  r.qp_state = IBV_QPS_RESET;
  ASSERT_EQ(ibv_modify_qp(b, &r, IBV_QP_STATE), 0);
  ibv_qp_attr m{};
  m.qp_state = IBV_QPS_INIT;
  m.port_num = 1;
  m.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
  ASSERT_EQ(ibv_modify_qp(b, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
  ASSERT_EQ(connect_rc(b, q->qp_num, lid_of(d)), 0);
  mlx5dv_qp dq{};
  mlx5dv_cq dc{};
  mlx5dv_obj o{};
  o.qp.in = q;
  o.qp.out = &dq;
  o.cq.in = rcq;
  o.cq.out = &dc;
  ASSERT_EQ(mlx5dv_init_obj(&o, MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ), 0);
  ASSERT_EQ(dc.cqe_size, 64u);
  uint64_t* t = reinterpret_cast<uint64_t*>(dst + 512);
  *t = 10;
  for (uint32_t n = 0; n < 3 * dc.cqe_cnt; ++n) {  // wraps both rings: owner bit flips
    uint32_t pi = n;
    auto* w = static_cast<uint8_t*>(dq.sq.buf) + (pi & (dq.sq.wqe_cnt - 1)) * dq.sq.stride;
    memset(w, 0, 64);
    auto* c = reinterpret_cast<mlx5_wqe_ctrl_seg*>(w);
    c->opmod_idx_opcode = bswap32((pi & 0xffff) << 8 | MLX5_OPCODE_ATOMIC_FA);
    c->qpn_ds = bswap32(q->qp_num << 8 | 4);
    c->fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE;
    auto* rs = reinterpret_cast<mlx5_wqe_raddr_seg*>(w + 16);
    rs->raddr = bswap64(uint64_t(uintptr_t(t)));
    rs->rkey = bswap32(mdst->rkey);
    auto* as = reinterpret_cast<mlx5_wqe_atomic_seg*>(w + 32);
    as->swap_add = bswap64(1);
    auto* ds = reinterpret_cast<mlx5_wqe_data_seg*>(w + 48);
    ds->byte_count = bswap32(8);
    ds->lkey = bswap32(msrc->lkey);
    ds->addr = bswap64(uint64_t(uintptr_t(src)));
    __atomic_thread_fence(__ATOMIC_RELEASE);
    dq.dbrec[1] = bswap32((pi + 1) & 0xffff);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    *reinterpret_cast<volatile uint64_t*>(dq.bf.reg) = *reinterpret_cast<uint64_t*>(w);
    auto* cqe = reinterpret_cast<mlx5_cqe64*>(static_cast<uint8_t*>(dc.buf) + (n & (dc.cqe_cnt - 1)) * 64);
    uint8_t owner = (n / dc.cqe_cnt) & 1;
    int spins = 0;
    while (((cqe->op_own >> 4) == MLX5_CQE_INVALID || (cqe->op_own & 1) != owner) && spins++ < 2000000)
      usleep(spins > 1000 ? 20 : 0);
    ASSERT_EQ(cqe->op_own >> 4, MLX5_CQE_REQ);
    EXPECT_EQ(bswap32(cqe->sop_drop_qpn) & 0xffffff, q->qp_num);
    EXPECT_EQ(bswap32(cqe->sop_drop_qpn) >> 24, uint32_t(MLX5_OPCODE_ATOMIC_FA));
    EXPECT_EQ(*reinterpret_cast<uint64_t*>(src), 10u + n);
    dc.dbrec[0] = bswap32((n + 1) & 0xffffff);
  }
  EXPECT_EQ(*t, 10u + 3 * dc.cqe_cnt);
  ibv_destroy_qp(q);
  ibv_destroy_cq(rcq);
}

// DC: one DCI talks to two DCTs in turn, each with its own access key.
TEST(Dc, DciSwitchesTargets) {
  Dev d;
  ibv_cq* cq = ibv_create_cq(d.ctx, 64, nullptr, nullptr, 0);
  ibv_srq_init_attr sa{};
  sa.attr.max_wr = 4;
  sa.attr.max_sge = 1;
  ibv_srq* srq = ibv_create_srq(d.pd, &sa);
  ASSERT_NE(srq, nullptr);
  ibv_qp* dct[2];
  for (int i = 0; i < 2; ++i) {
    dct[i] = make_dct(d, cq, srq, 0xabc0 + i, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
    ASSERT_NE(dct[i], nullptr);
  }
  ibv_qp* dci = make_dci(d, cq, {16, 0, IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
                                 8, 1, 16});
  ASSERT_NE(dci, nullptr);
  static uint64_t words[2], result;
  ibv_mr* mr = ibv_reg_mr(d.pd, words, sizeof words, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
  ibv_mr* mres = ibv_reg_mr(d.pd, &result, 8, IBV_ACCESS_LOCAL_WRITE);
  ibv_ah_attr aa{};
  aa.dlid = lid_of(d);
  aa.port_num = 1;
  ibv_ah* ah = ibv_create_ah(d.pd, &aa);
  ibv_qp_ex* x = ibv_qp_to_qp_ex(dci);
  mlx5dv_qp_ex* mx = mlx5dv_qp_ex_from_ibv_qp_ex(x);
  for (int round = 0; round < 6; ++round) {
    int i = round % 2;
    ibv_wr_start(x);
    x->wr_id = uint64_t(round);
    x->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_atomic_fetch_add(x, mr->rkey, uint64_t(uintptr_t(&words[i])), uint64_t(i + 1));
    mlx5dv_wr_set_dc_addr(mx, ah, dct[i]->qp_num, 0xabc0 + i);
    ibv_wr_set_sge(x, mres->lkey, uint64_t(uintptr_t(&result)), 8);
    ASSERT_EQ(ibv_wr_complete(x), 0);
    ibv_wc wc = wait_wc(cq);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(result, uint64_t(round / 2) * (i + 1));
  }
  EXPECT_EQ(words[0], 3u);
  EXPECT_EQ(words[1], 6u);
  // A wrong DC key is dropped by the target: the DCI reports retry exceeded.
  ibv_wr_start(x);
  x->wr_id = 100;
  x->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_atomic_fetch_add(x, mr->rkey, uint64_t(uintptr_t(&words[0])), 1);
  mlx5dv_wr_set_dc_addr(mx, ah, dct[0]->qp_num, 0xbad);
  ibv_wr_set_sge(x, mres->lkey, uint64_t(uintptr_t(&result)), 8);
  ASSERT_EQ(ibv_wr_complete(x), 0);
  EXPECT_EQ(wait_wc(cq).status, IBV_WC_RETRY_EXC_ERR);
  EXPECT_EQ(words[0], 3u);
  ibv_destroy_qp(dci);
  ibv_destroy_qp(dct[0]);
  ibv_destroy_qp(dct[1]);
  ibv_destroy_ah(ah);
  ibv_dereg_mr(mr);
  ibv_dereg_mr(mres);
  ibv_destroy_srq(srq);
  ibv_destroy_cq(cq);
}

// ---- multi-process ------------------------------------------------------------------------
// The peer: an RC QP whose number and buffer it reports on stdout, then it serves until told.
int run_peer(int mode) {
  Dev d;
  ibv_cq* cq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
  ibv_qp* qp = make_rc(d, cq);
  static uint64_t buf[16];
  ibv_mr* mr = ibv_reg_mr(d.pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                                   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
  buf[0] = 1000;
  printf("%u %lu %u %u\n", qp->qp_num, (unsigned long)uintptr_t(buf), mr->rkey, lid_of(d));
  fflush(stdout);
  unsigned remote, remote_lid;
  if (scanf("%u %u", &remote, &remote_lid) != 2) return 2;
  if (connect_rc(qp, remote, uint16_t(remote_lid))) return 3;
  printf("ready\n");
  fflush(stdout);
  char cmd[16];
  if (scanf("%15s", cmd) != 1) return 4;
  if (mode == 1) _exit(0);  // vanish without cleanup: the peer is gone
  printf("%lu\n", (unsigned long)buf[0]);
  fflush(stdout);
  return 0;
}

TEST(MultiProcess, AtomicsAcrossProcessesThenPeerGone) {
  for (const char* mode : {"0", "1"}) {
    Child c(mode);
    ASSERT_GT(c.pid, 0);
    unsigned qpn, rkey, lid;
    unsigned long addr;
    ASSERT_EQ(fscanf(c.out, "%u %lu %u %u", &qpn, &addr, &rkey, &lid), 4);
    Dev d;
    ibv_cq* cq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
    ibv_qp* qp = make_rc(d, cq);
    ASSERT_EQ(connect_rc(qp, qpn, uint16_t(lid), 7, 10, 1), 0);  // the peer's LID, not ours
    fprintf(c.in, "%u %u\n", qp->qp_num, lid_of(d));
    fflush(c.in);
    char word[16];
    ASSERT_EQ(fscanf(c.out, "%15s", word), 1);
    static uint64_t res;
    ibv_mr* mr = ibv_reg_mr(d.pd, &res, 8, IBV_ACCESS_LOCAL_WRITE);
    auto faa = [&](uint64_t add) {
      ibv_sge s{uint64_t(uintptr_t(&res)), 8, mr->lkey};
      ibv_send_wr wr{}, *bad;
      wr.sg_list = &s;
      wr.num_sge = 1;
      wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
      wr.send_flags = IBV_SEND_SIGNALED;
      wr.wr.atomic.remote_addr = addr;
      wr.wr.atomic.rkey = rkey;
      wr.wr.atomic.compare_add = add;
      EXPECT_EQ(ibv_post_send(qp, &wr, &bad), 0);
      return wait_wc(cq);
    };
    for (int i = 0; i < 10; ++i) {
      ibv_wc wc = faa(3);
      ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
      EXPECT_EQ(res, 1000u + 3u * unsigned(i));
    }
    fprintf(c.in, "go\n");
    fflush(c.in);
    if (mode[0] == '0') {
      unsigned long final_value;
      ASSERT_EQ(fscanf(c.out, "%lu", &final_value), 1);
      EXPECT_EQ(final_value, 1030u);
      EXPECT_EQ(c.wait(), 0);
    } else {
      EXPECT_EQ(c.wait(), 0);
      EXPECT_EQ(faa(1).status, IBV_WC_RETRY_EXC_ERR);  // no hang: the peer process is gone
    }
    ibv_destroy_qp(qp);
    ibv_dereg_mr(mr);
    ibv_destroy_cq(cq);
  }
}

// ---- UD fault injection ---------------------------------------------------------------------
// Senders are child processes started with the fault knobs in their environment (the knobs act
// at the sending HCA); this process receives. Each sender sends kUdCount datagrams carrying
// (sender id, sequence number) to our UD QP.
constexpr int kUdCount = 1000;

// Child: "<qpn> <lid>" in, datagrams out, "<completed sends>" back once all are on the wire.
int run_ud_sender(int id) {
  Dev d;
  ibv_cq* cq = ibv_create_cq(d.ctx, 2048, nullptr, nullptr, 0);
  ibv_qp* qp = make_ud(d, cq, 1024);
  if (!qp) return 2;
  unsigned qpn, lid;
  if (scanf("%u %u", &qpn, &lid) != 2) return 3;
  ibv_ah_attr aa{};
  aa.dlid = uint16_t(lid);
  aa.port_num = 1;
  ibv_ah* ah = ibv_create_ah(d.pd, &aa);
  int sends = 0;
  for (int i = 0; i < kUdCount; ++i) {
    uint32_t msg[2] = {uint32_t(id), uint32_t(i)};
    ibv_sge s{uint64_t(uintptr_t(msg)), sizeof msg, 0};
    ibv_send_wr w{}, *bad;
    w.opcode = IBV_WR_SEND;
    w.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
    w.sg_list = &s;
    w.num_sge = 1;
    w.wr.ud.ah = ah;
    w.wr.ud.remote_qpn = qpn;
    w.wr.ud.remote_qkey = 0x11111111;
    if (ibv_post_send(qp, &w, &bad)) return 4;
    ibv_wc wc[16];
    for (int n; (n = ibv_poll_cq(cq, 16, wc)) > 0;) sends += n;
    if (i % 64 == 63) usleep(200);  // paced: a datagram held for reordering is overtaken soon
  }
  for (int k = 0; k < 1000 && sends < kUdCount; ++k) {
    ibv_wc wc[16];
    int n = ibv_poll_cq(cq, 16, wc);
    sends += n > 0 ? n : 0;
    if (n <= 0) usleep(1000);
  }
  usleep(20000);  // datagrams held back for reordering are released by the model thread
  printf("%d\n", sends);
  fflush(stdout);
  ibv_destroy_qp(qp);
  ibv_destroy_ah(ah);
  ibv_destroy_cq(cq);
  return 0;
}

struct UdStats {
  int received = 0, distinct = 0, duplicates = 0, out_of_order = 0;
  std::vector<int> sends;
};

// Runs `senders` child processes with the given knobs against one receiving UD QP here.
UdStats ud_faults(int senders, const char* loss, const char* dup, const char* reorder) {
  UdStats st;
  Dev d;
  ibv_cq* cq = ibv_create_cq(d.ctx, 8192, nullptr, nullptr, 0);
  ibv_qp* qp = make_ud(d, cq, 4096);
  EXPECT_NE(qp, nullptr);
  if (!qp) return st;
  static uint8_t buf[4096][64];
  ibv_mr* mr = ibv_reg_mr(d.pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
  for (int i = 0; i < 4096; ++i) {
    ibv_sge s{uint64_t(uintptr_t(buf[i])), 64, mr->lkey};
    ibv_recv_wr w{}, *bad;
    w.wr_id = uint64_t(i);
    w.sg_list = &s;
    w.num_sge = 1;
    EXPECT_EQ(ibv_post_recv(qp, &w, &bad), 0);
  }
  setenv("SOFTHCA_UD_LOSS", loss, 1);
  setenv("SOFTHCA_UD_DUP", dup, 1);
  setenv("SOFTHCA_UD_REORDER", reorder, 1);
  setenv("SOFTHCA_SEED", "12345", 1);
  std::vector<std::unique_ptr<Child>> kids;
  for (int k = 0; k < senders; ++k) kids.push_back(std::make_unique<Child>(k ? "ud-send-1" : "ud-send-0"));
  for (const char* v : {"SOFTHCA_UD_LOSS", "SOFTHCA_UD_DUP", "SOFTHCA_UD_REORDER", "SOFTHCA_SEED"})
    unsetenv(v);
  for (auto& c : kids) {
    fprintf(c->in, "%u %u\n", qp->qp_num, unsigned(lid_of(d)));
    fflush(c->in);
  }
  std::vector<std::vector<int>> seen(size_t(senders), std::vector<int>(kUdCount, 0));
  std::vector<int> highest(size_t(senders), -1);
  auto drain = [&] {
    ibv_wc wc[32];
    int n = ibv_poll_cq(cq, 32, wc);
    for (int k = 0; k < n; ++k) {
      EXPECT_EQ(wc[k].status, IBV_WC_SUCCESS);
      uint32_t msg[2];
      memcpy(msg, buf[wc[k].wr_id] + 40, sizeof msg);  // behind the 40-byte GRH area
      if (msg[0] >= uint32_t(senders) || msg[1] >= uint32_t(kUdCount)) {
        ADD_FAILURE() << "garbled datagram";
        continue;
      }
      st.received++;
      if (seen[msg[0]][msg[1]]++) st.duplicates++;
      else st.distinct++;
      if (int(msg[1]) < highest[msg[0]]) st.out_of_order++;
      highest[msg[0]] = std::max(highest[msg[0]], int(msg[1]));
    }
    return n;
  };
  for (auto& c : kids) {  // each child reports once everything it sent is on the wire
    int sends = -1;
    while (fscanf(c->out, "%d", &sends) != 1) {
      if (feof(c->out)) break;
    }
    st.sends.push_back(sends);
  }
  for (int quiet = 0; quiet < 50;) {  // then collect until nothing arrives for 50 ms
    if (drain() > 0) quiet = 0;
    else quiet++, usleep(1000);
  }
  for (auto& c : kids) EXPECT_EQ(c->wait(), 0);
  printf("loss %s dup %s reorder %s: received %d, distinct %d, duplicates %d, out of order %d\n",
         loss, dup, reorder, st.received, st.distinct, st.duplicates, st.out_of_order);
  ibv_destroy_qp(qp);
  ibv_dereg_mr(mr);
  ibv_destroy_cq(cq);
  return st;
}

// UD with a global route header: the receiver gets the GRH (source and destination GID) in the
// first 40 bytes and IBV_WC_GRH; a datagram whose destination GID is not the port's is dropped.
TEST(Ud, GlobalRouteHeader) {
  Dev d;
  ibv_cq* cq = ibv_create_cq(d.ctx, 64, nullptr, nullptr, 0);
  ibv_qp* qp = make_ud(d, cq, 16);
  ASSERT_NE(qp, nullptr);
  static uint8_t buf[4][64];
  ibv_mr* mr = ibv_reg_mr(d.pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
  for (int i = 0; i < 4; ++i) {
    ibv_sge s{uint64_t(uintptr_t(buf[i])), 64, mr->lkey};
    ibv_recv_wr w{}, *bad;
    w.wr_id = uint64_t(i);
    w.sg_list = &s;
    w.num_sge = 1;
    ASSERT_EQ(ibv_post_recv(qp, &w, &bad), 0);
  }
  ibv_gid gid;
  ASSERT_EQ(ibv_query_gid(d.ctx, 1, 0, &gid), 0);
  // A datagram to this QP itself may be received before its send completes: either order.
  std::vector<ibv_wc> received;
  auto send = [&](const ibv_gid& dgid, uint32_t value) {
    ibv_ah_attr aa{};
    aa.dlid = lid_of(d);
    aa.port_num = 1;
    aa.is_global = 1;
    aa.grh.dgid = dgid;
    aa.grh.sgid_index = 0;
    aa.grh.hop_limit = 1;
    ibv_ah* ah = ibv_create_ah(d.pd, &aa);
    ASSERT_NE(ah, nullptr);
    ibv_sge s{uint64_t(uintptr_t(&value)), 4, 0};
    ibv_send_wr w{}, *bad;
    w.opcode = IBV_WR_SEND;
    w.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
    w.sg_list = &s;
    w.num_sge = 1;
    w.wr.ud.ah = ah;
    w.wr.ud.remote_qpn = qp->qp_num;
    w.wr.ud.remote_qkey = 0x11111111;
    ASSERT_EQ(ibv_post_send(qp, &w, &bad), 0);
    for (ibv_wc c = wait_wc(cq);; c = wait_wc(cq)) {
      if (c.opcode == IBV_WC_SEND) break;
      received.push_back(c);
      ASSERT_EQ(received.size(), 1u) << "a second receive";
    }
    ibv_destroy_ah(ah);
  };
  ibv_gid other = gid;
  other.raw[15] ^= 0x55;
  send(other, 1);  // dropped: not this port's GID
  EXPECT_TRUE(received.empty());
  send(gid, 2);
  ibv_wc wc = received.empty() ? wait_wc(cq) : received[0];
  ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.opcode, IBV_WC_RECV);
  EXPECT_TRUE(wc.wc_flags & IBV_WC_GRH);
  EXPECT_EQ(wc.byte_len, 44u);
  EXPECT_EQ(wc.src_qp, qp->qp_num);
  auto* grh = reinterpret_cast<ibv_grh*>(buf[wc.wr_id]);
  EXPECT_EQ(buf[wc.wr_id][0] >> 4, 6);  // IP version 6
  EXPECT_EQ(memcmp(grh->sgid.raw, gid.raw, 16), 0);
  EXPECT_EQ(memcmp(grh->dgid.raw, gid.raw, 16), 0);
  uint32_t value;
  memcpy(&value, buf[wc.wr_id] + 40, 4);
  EXPECT_EQ(value, 2u);
  ibv_ah* back = ibv_create_ah_from_wc(d.pd, &wc, grh, 1);  // a reply address from the GRH
  ASSERT_NE(back, nullptr);
  ibv_destroy_ah(back);
  ibv_wc none;
  EXPECT_EQ(ibv_poll_cq(cq, 1, &none), 0);  // the misaddressed datagram never arrived
  ibv_destroy_qp(qp);
  ibv_dereg_mr(mr);
  ibv_destroy_cq(cq);
}

TEST(Faults, UdNoFaultsByDefault) {
  UdStats s = ud_faults(2, "0", "0", "0");
  EXPECT_EQ(s.sends, (std::vector<int>{kUdCount, kUdCount}));
  EXPECT_EQ(s.received, 2 * kUdCount);
  EXPECT_EQ(s.distinct, 2 * kUdCount);
  EXPECT_EQ(s.duplicates, 0);
  EXPECT_EQ(s.out_of_order, 0);
}

TEST(Faults, UdLossStatistics) {
  UdStats s = ud_faults(2, "0.3", "0", "0");
  EXPECT_EQ(s.sends, (std::vector<int>{kUdCount, kUdCount}));  // UD completes locally anyway
  EXPECT_GT(s.received, 1200);  // ~1400 expected at a 30 % loss rate (sd ~20)
  EXPECT_LT(s.received, 1600);
  EXPECT_EQ(s.duplicates, 0);
  EXPECT_EQ(s.out_of_order, 0);
}

TEST(Faults, UdDuplicationStatistics) {
  UdStats s = ud_faults(2, "0", "0.2", "0");
  EXPECT_EQ(s.distinct, 2 * kUdCount);  // nothing lost
  EXPECT_GT(s.duplicates, 300);         // ~400 expected at a 20 % duplication rate (sd ~18)
  EXPECT_LT(s.duplicates, 500);
  EXPECT_EQ(s.received, s.distinct + s.duplicates);
  EXPECT_EQ(s.out_of_order, 0);  // a copy follows its original at once
}

TEST(Faults, UdReorderStatistics) {
  UdStats s = ud_faults(2, "0", "0", "0.2");
  EXPECT_EQ(s.distinct, 2 * kUdCount);  // delayed, never lost or doubled
  EXPECT_EQ(s.duplicates, 0);
  // ~400 datagrams are held back behind later ones; each arrives after a higher number.
  EXPECT_GT(s.out_of_order, 250);
  EXPECT_LT(s.out_of_order, 500);
}

// ---- issue item 4: completions, inline limit, write with immediate, UD Q_Key and MTU -------

// sq_sig_all=0: only IBV_SEND_SIGNALED work requests complete visibly, but an error completes
// even unsignaled. sq_sig_all=1: every work request completes.
TEST_F(Pair, SignaledAndUnsignaledCompletions) {
  auto write = [&](ibv_qp* qp, uint64_t id, unsigned flags, uint32_t lkey) {
    ibv_sge s{uint64_t(uintptr_t(src)), 8, lkey};
    ibv_send_wr wr{}, *bad;
    wr.wr_id = id;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = flags;
    wr.wr.rdma.remote_addr = uint64_t(uintptr_t(dst));
    wr.wr.rdma.rkey = mdst->rkey;
    EXPECT_EQ(ibv_post_send(qp, &wr, &bad), 0);
  };
  write(a, 1, 0, msrc->lkey);
  write(a, 2, IBV_SEND_SIGNALED, msrc->lkey);
  write(a, 3, 0, msrc->lkey);
  write(a, 4, IBV_SEND_SIGNALED, msrc->lkey);
  EXPECT_EQ(wait_wc(cq).wr_id, 2u);
  EXPECT_EQ(wait_wc(cq).wr_id, 4u);
  ibv_wc none;
  EXPECT_EQ(ibv_poll_cq(cq, 1, &none), 0);
  write(a, 5, 0, 0xbad00);  // unsignaled, bad lkey: the error completes anyway
  ibv_wc wc = wait_wc(cq);
  EXPECT_EQ(wc.wr_id, 5u);
  EXPECT_EQ(wc.status, IBV_WC_LOC_PROT_ERR);

  ibv_cq* cq2 = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
  ibv_qp* all = make_rc(d, cq2, false, IBV_ACCESS_REMOTE_WRITE, /*sig_all=*/true);
  ibv_qp* peer = make_rc(d, cq2);
  ASSERT_TRUE(all && peer);
  ASSERT_EQ(connect_rc(all, peer->qp_num, lid_of(d)), 0);
  ASSERT_EQ(connect_rc(peer, all->qp_num, lid_of(d)), 0);
  ibv_qp_attr qa;
  ibv_qp_init_attr ia;
  ASSERT_EQ(ibv_query_qp(all, &qa, IBV_QP_STATE, &ia), 0);
  EXPECT_EQ(ia.sq_sig_all, 1);
  write(all, 6, 0, msrc->lkey);
  write(all, 7, 0, msrc->lkey);
  EXPECT_EQ(wait_wc(cq2).wr_id, 6u);
  EXPECT_EQ(wait_wc(cq2).wr_id, 7u);
  ibv_destroy_qp(all);
  ibv_destroy_qp(peer);
  ibv_destroy_cq(cq2);
}

// Inline data up to max_inline_data is copied into the WQE; beyond it the post fails with ENOMEM
// (as rdma-core's mlx5 does), through ibv_post_send and through the wr_* API, and nothing runs.
TEST_F(Pair, InlineDataLimit) {
  ibv_qp_attr qa;
  ibv_qp_init_attr ia;
  ASSERT_EQ(ibv_query_qp(a, &qa, IBV_QP_CAP, &ia), 0);
  uint32_t max = ia.cap.max_inline_data;
  ASSERT_GE(max, 64u);
  ASSERT_LT(max, sizeof src);
  memset(dst, 0, sizeof dst);
  for (uint32_t i = 0; i < sizeof src; ++i) src[i] = uint8_t(i + 1);
  ibv_sge s{uint64_t(uintptr_t(src)), max, 0};  // inline: the lkey is not used
  ibv_send_wr wr{}, *bad = nullptr;
  wr.wr_id = 1;
  wr.sg_list = &s;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
  wr.wr.rdma.remote_addr = uint64_t(uintptr_t(dst));
  wr.wr.rdma.rkey = mdst->rkey;
  ASSERT_EQ(ibv_post_send(a, &wr, &bad), 0);
  ASSERT_EQ(wait_wc(cq).status, IBV_WC_SUCCESS);
  EXPECT_EQ(memcmp(src, dst, max), 0);
  EXPECT_EQ(dst[max], 0);
  memset(dst, 0, sizeof dst);
  s.length = max + 1;
  wr.wr_id = 2;
  EXPECT_EQ(ibv_post_send(a, &wr, &bad), ENOMEM);
  EXPECT_EQ(bad, &wr);
  ibv_qp_ex* x = ibv_qp_to_qp_ex(a);
  ibv_wr_start(x);
  x->wr_id = 3;
  x->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_rdma_write(x, mdst->rkey, uint64_t(uintptr_t(dst)));
  ibv_wr_set_inline_data(x, src, max + 1);
  EXPECT_EQ(ibv_wr_complete(x), ENOMEM);
  usleep(10000);
  ibv_wc none;
  EXPECT_EQ(ibv_poll_cq(cq, 1, &none), 0);  // neither rejected request produced anything
  EXPECT_EQ(dst[0], 0);
  ibv_query_qp(a, &qa, IBV_QP_STATE, &ia);
  EXPECT_EQ(qa.qp_state, IBV_QPS_RTS);  // a rejected post is no error completion
}

// RDMA write with immediate writes the data and consumes a receive WQE at the responder, which
// completes as IBV_WC_RECV_RDMA_WITH_IMM; without a receive the requester is RNR-NAKed and
// replays until one is posted.
TEST_F(Pair, RdmaWriteWithImmediateConsumesReceive) {
  auto post_recv = [&](uint64_t id) {
    ibv_sge rs{uint64_t(uintptr_t(dst + 2048)), 16, mdst->lkey};
    ibv_recv_wr rw{}, *rbad;
    rw.wr_id = id;
    rw.sg_list = &rs;
    rw.num_sge = 1;
    ASSERT_EQ(ibv_post_recv(b, &rw, &rbad), 0);
  };
  auto write_imm = [&](uint64_t id, uint32_t imm, uint32_t len) {
    ibv_sge s{uint64_t(uintptr_t(src)), len, msrc->lkey};
    ibv_send_wr wr{}, *bad;
    wr.wr_id = id;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.imm_data = htonl(imm);
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = uint64_t(uintptr_t(dst));
    wr.wr.rdma.rkey = mdst->rkey;
    ASSERT_EQ(ibv_post_send(a, &wr, &bad), 0);
  };
  for (int i = 0; i < 100; ++i) src[i] = uint8_t(0xa0 + i);
  memset(dst, 0, sizeof dst);
  memset(dst + 2048, 0x77, 16);
  post_recv(55);
  write_imm(9, 0xc0ffee, 100);
  bool got_req = false, got_resp = false;
  for (int i = 0; i < 2; ++i) {
    ibv_wc wc = wait_wc(cq);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    if (wc.qp_num == b->qp_num) {
      EXPECT_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
      EXPECT_EQ(wc.wr_id, 55u);
      EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
      EXPECT_EQ(ntohl(wc.imm_data), 0xc0ffeeu);
      EXPECT_EQ(wc.byte_len, 100u);
      got_resp = true;
    } else {
      EXPECT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
      EXPECT_EQ(wc.wr_id, 9u);
      got_req = true;
    }
  }
  EXPECT_TRUE(got_req && got_resp);
  EXPECT_EQ(memcmp(src, dst, 100), 0);
  EXPECT_EQ(dst[2048], 0x77);  // the receive buffer is not written: the data went to raddr
  // No receive posted: nothing completes until one is.
  write_imm(10, 1, 8);
  usleep(20000);
  ibv_wc none;
  EXPECT_EQ(ibv_poll_cq(cq, 1, &none), 0);
  post_recv(56);
  for (int i = 0; i < 2; ++i) {
    ibv_wc wc = wait_wc(cq);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.wr_id, wc.qp_num == b->qp_num ? 56u : 10u);
  }
}

// UD with a posted receive: returns the receiving QP, its buffer (8 KiB + GRH) and MR.
struct UdPair : ::testing::Test {
  Dev d;
  ibv_cq* cq = nullptr;
  ibv_qp *tx = nullptr, *rx = nullptr;
  static constexpr size_t kBuf = 8192 + 40;
  std::vector<uint8_t> sbuf = std::vector<uint8_t>(8192), rbuf = std::vector<uint8_t>(2 * kBuf);
  ibv_mr *ms = nullptr, *mr = nullptr;
  ibv_ah* ah = nullptr;
  void SetUp() override {
    ASSERT_NE(d.ctx, nullptr);
    cq = ibv_create_cq(d.ctx, 64, nullptr, nullptr, 0);
    tx = make_ud(d, cq, 16);
    rx = make_ud(d, cq, 16);
    ASSERT_TRUE(tx && rx);
    ms = ibv_reg_mr(d.pd, sbuf.data(), sbuf.size(), IBV_ACCESS_LOCAL_WRITE);
    mr = ibv_reg_mr(d.pd, rbuf.data(), rbuf.size(), IBV_ACCESS_LOCAL_WRITE);
    ASSERT_TRUE(ms && mr);
    ibv_ah_attr aa{};
    aa.dlid = lid_of(d);
    aa.port_num = 1;
    ah = ibv_create_ah(d.pd, &aa);
    ASSERT_NE(ah, nullptr);
  }
  void TearDown() override {
    if (ah) ibv_destroy_ah(ah);
    if (tx) ibv_destroy_qp(tx);
    if (rx) ibv_destroy_qp(rx);
    if (ms) ibv_dereg_mr(ms);
    if (mr) ibv_dereg_mr(mr);
    if (cq) ibv_destroy_cq(cq);
  }
  void recv(ibv_qp* qp, int slot) {
    ibv_sge s{uint64_t(uintptr_t(rbuf.data() + slot * kBuf)), uint32_t(kBuf), mr->lkey};
    ibv_recv_wr w{}, *bad;
    w.wr_id = uint64_t(100 + slot);
    w.sg_list = &s;
    w.num_sge = 1;
    ASSERT_EQ(ibv_post_recv(qp, &w, &bad), 0);
  }
  int send(ibv_qp* from, ibv_qp* to, uint32_t len, uint32_t qkey, uint64_t id) {
    ibv_sge s{uint64_t(uintptr_t(sbuf.data())), len, ms->lkey};
    ibv_send_wr w{}, *bad;
    w.wr_id = id;
    w.opcode = IBV_WR_SEND;
    w.send_flags = IBV_SEND_SIGNALED;
    w.sg_list = &s;
    w.num_sge = 1;
    w.wr.ud.ah = ah;
    w.wr.ud.remote_qpn = to->qp_num;
    w.wr.ud.remote_qkey = qkey;
    return ibv_post_send(from, &w, &bad);
  }
  ibv_qp_state state(ibv_qp* qp) {
    ibv_qp_attr qa;
    ibv_qp_init_attr ia;
    ibv_query_qp(qp, &qa, IBV_QP_STATE, &ia);
    return qa.qp_state;
  }
};

// A datagram whose Q_Key is not the receiving QP's is dropped silently (the sender still completes
// successfully); a "controlled" Q_Key (high bit set) sends with the sending QP's own Q_Key.
TEST_F(UdPair, QkeyMismatchDropsDatagram) {
  recv(rx, 0);
  sbuf[0] = 1;
  ASSERT_EQ(send(tx, rx, 4, 0x22222222, 1), 0);
  ibv_wc wc = wait_wc(cq);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.wr_id, 1u);
  usleep(20000);
  ibv_wc none;
  EXPECT_EQ(ibv_poll_cq(cq, 1, &none), 0);  // the receive is still posted, unused
  sbuf[0] = 2;
  ASSERT_EQ(send(tx, rx, 4, 0x80000000u, 2), 0);  // controlled: tx's own Q_Key, which matches
  int seen = 0;
  for (int i = 0; i < 2; ++i) {
    wc = wait_wc(cq);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    if (wc.opcode == IBV_WC_RECV) {
      EXPECT_EQ(wc.wr_id, 100u);
      EXPECT_EQ(wc.src_qp, tx->qp_num);
      EXPECT_EQ(rbuf[40], 2);  // the second datagram, not the dropped first one
      seen++;
    }
  }
  EXPECT_EQ(seen, 1);
}

// The port MTU bounds a UD message: a datagram of exactly the MTU arrives; one byte more completes
// with IBV_WC_LOC_LEN_ERR, moves the QP to SQE (its receive side keeps working), work posted
// meanwhile is flushed, and SQE -> RTS resumes sending.
TEST_F(UdPair, MtuLimit) {
  ibv_port_attr pa;
  ASSERT_EQ(ibv_query_port(d.ctx, 1, &pa), 0);
  uint32_t mtu = 128u << pa.active_mtu;
  ASSERT_EQ(mtu, 4096u);
  for (uint32_t i = 0; i < mtu; ++i) sbuf[i] = uint8_t(i * 13);
  recv(rx, 0);
  ASSERT_EQ(send(tx, rx, mtu, 0x11111111, 1), 0);
  for (int i = 0; i < 2; ++i) {
    ibv_wc wc = wait_wc(cq);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    if (wc.opcode == IBV_WC_RECV) {
      EXPECT_EQ(wc.byte_len, mtu + 40);
    }
  }
  EXPECT_EQ(memcmp(rbuf.data() + 40, sbuf.data(), mtu), 0);
  recv(tx, 1);  // the sender's own receive queue must survive its send error
  ASSERT_EQ(send(tx, rx, mtu + 1, 0x11111111, 2), 0);
  ibv_wc wc = wait_wc(cq);
  EXPECT_EQ(wc.wr_id, 2u);
  EXPECT_EQ(wc.status, IBV_WC_LOC_LEN_ERR);
  EXPECT_EQ(state(tx), IBV_QPS_SQE);
  ASSERT_EQ(send(tx, rx, 8, 0x11111111, 3), 0);
  wc = wait_wc(cq);
  EXPECT_EQ(wc.wr_id, 3u);
  EXPECT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
  sbuf[0] = 0x42;
  ASSERT_EQ(send(rx, tx, 8, 0x11111111, 4), 0);  // still received by the QP in SQE
  for (int i = 0; i < 2; ++i) {
    wc = wait_wc(cq);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    if (wc.opcode == IBV_WC_RECV) {
      EXPECT_EQ(wc.qp_num, tx->qp_num);
      EXPECT_EQ(wc.wr_id, 101u);
      EXPECT_EQ(rbuf[kBuf + 40], 0x42);
    }
  }
  ibv_qp_attr m{};
  m.qp_state = IBV_QPS_RTS;
  ASSERT_EQ(ibv_modify_qp(tx, &m, IBV_QP_STATE), 0);
  recv(rx, 0);
  ASSERT_EQ(send(tx, rx, 8, 0x11111111, 5), 0);
  for (int i = 0; i < 2; ++i) EXPECT_EQ(wait_wc(cq).status, IBV_WC_SUCCESS);
  ibv_wc none;
  EXPECT_EQ(ibv_poll_cq(cq, 1, &none), 0);
}

// Every ibv_qp_ex operation in one batch: send, send with immediate, RDMA write with immediate,
// RDMA read, compare-swap and fetch-add; the responder consumes a receive for the first three.
TEST_F(Pair, QpExEveryOperation) {
  for (uint64_t id = 100; id < 103; ++id) {
    ibv_sge rs{uint64_t(uintptr_t(dst + 1024 + (id - 100) * 64)), 64, mdst->lkey};
    ibv_recv_wr rw{}, *rbad;
    rw.wr_id = id;
    rw.sg_list = &rs;
    rw.num_sge = 1;
    ASSERT_EQ(ibv_post_recv(b, &rw, &rbad), 0);
  }
  memset(dst, 0, sizeof dst);
  memset(src, 0, sizeof src);
  strcpy(reinterpret_cast<char*>(src), "send");
  strcpy(reinterpret_cast<char*>(src + 16), "send-imm");
  strcpy(reinterpret_cast<char*>(src + 32), "write-imm");
  strcpy(reinterpret_cast<char*>(dst + 512), "read me");
  uint64_t* word = reinterpret_cast<uint64_t*>(dst + 256);
  *word = 40;
  ibv_qp_ex* x = ibv_qp_to_qp_ex(a);
  ibv_wr_start(x);
  x->wr_flags = IBV_SEND_SIGNALED;
  x->wr_id = 1;
  ibv_wr_send(x);
  ibv_wr_set_sge(x, msrc->lkey, uint64_t(uintptr_t(src)), 5);
  x->wr_id = 2;
  ibv_wr_send_imm(x, htonl(0x51));
  ibv_wr_set_sge(x, msrc->lkey, uint64_t(uintptr_t(src + 16)), 9);
  x->wr_id = 3;
  ibv_wr_rdma_write_imm(x, mdst->rkey, uint64_t(uintptr_t(dst + 128)), htonl(0x52));
  ibv_wr_set_sge(x, msrc->lkey, uint64_t(uintptr_t(src + 32)), 10);
  x->wr_id = 4;
  ibv_wr_rdma_read(x, mdst->rkey, uint64_t(uintptr_t(dst + 512)));
  ibv_wr_set_sge(x, msrc->lkey, uint64_t(uintptr_t(src + 512)), 8);
  x->wr_id = 5;
  ibv_wr_atomic_cmp_swp(x, mdst->rkey, uint64_t(uintptr_t(word)), 40, 77);
  ibv_wr_set_sge(x, msrc->lkey, uint64_t(uintptr_t(src + 1024)), 8);
  x->wr_id = 6;
  ibv_wr_atomic_fetch_add(x, mdst->rkey, uint64_t(uintptr_t(word)), 3);
  ibv_wr_set_sge(x, msrc->lkey, uint64_t(uintptr_t(src + 1032)), 8);
  ASSERT_EQ(ibv_wr_complete(x), 0);
  std::vector<uint64_t> req;
  std::vector<ibv_wc> resp;
  while (req.size() + resp.size() < 9) {
    ibv_wc wc = wait_wc(cq);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS) << "wr_id " << wc.wr_id;
    if (wc.qp_num == a->qp_num) req.push_back(wc.wr_id);
    else resp.push_back(wc);
  }
  EXPECT_EQ(req, (std::vector<uint64_t>{1, 2, 3, 4, 5, 6}));  // in posting order
  ASSERT_EQ(resp.size(), 3u);
  EXPECT_EQ(resp[0].opcode, IBV_WC_RECV);
  EXPECT_EQ(resp[0].byte_len, 5u);
  EXPECT_FALSE(resp[0].wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(resp[1].opcode, IBV_WC_RECV);
  EXPECT_EQ(ntohl(resp[1].imm_data), 0x51u);
  EXPECT_TRUE(resp[1].wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(resp[2].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
  EXPECT_EQ(ntohl(resp[2].imm_data), 0x52u);
  EXPECT_EQ(resp[2].wr_id, 102u);
  EXPECT_STREQ(reinterpret_cast<char*>(dst + 1024), "send");
  EXPECT_STREQ(reinterpret_cast<char*>(dst + 1088), "send-imm");
  EXPECT_STREQ(reinterpret_cast<char*>(dst + 128), "write-imm");
  EXPECT_STREQ(reinterpret_cast<char*>(src + 512), "read me");
  uint64_t cs_old, fa_old;
  memcpy(&cs_old, src + 1024, 8);
  memcpy(&fa_old, src + 1032, 8);
  EXPECT_EQ(cs_old, 40u);
  EXPECT_EQ(fa_old, 77u);
  EXPECT_EQ(*word, 80u);
}

// ibv_create_cq_ex and the ibv_start_poll / ibv_next_poll / ibv_end_poll iterator with read_*.
TEST(CqEx, StartNextEndPoll) {
  Dev d;
  ibv_cq_init_attr_ex ca{};
  ca.cqe = 32;
  ca.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |
                IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID;
  ibv_cq_ex* cqx = ibv_create_cq_ex(d.ctx, &ca);
  ASSERT_NE(cqx, nullptr);
  ibv_cq* cq = ibv_cq_ex_to_cq(cqx);
  ibv_qp* a = make_rc(d, cq);
  ibv_qp* b = make_rc(d, cq);
  ASSERT_TRUE(a && b);
  ASSERT_EQ(connect_rc(a, b->qp_num, lid_of(d)), 0);
  ASSERT_EQ(connect_rc(b, a->qp_num, lid_of(d)), 0);
  ibv_poll_cq_attr pa{};
  EXPECT_EQ(ibv_start_poll(cqx, &pa), ENOENT);  // empty: no ibv_end_poll
  static char buf[64] = "payload";
  ibv_mr* mr = ibv_reg_mr(d.pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
  ibv_sge rs{uint64_t(uintptr_t(buf + 32)), 32, mr->lkey};
  ibv_recv_wr rw{}, *rbad;
  rw.wr_id = 21;
  rw.sg_list = &rs;
  rw.num_sge = 1;
  ASSERT_EQ(ibv_post_recv(b, &rw, &rbad), 0);
  ibv_sge s{uint64_t(uintptr_t(buf)), 8, mr->lkey};
  ibv_send_wr wr{}, *bad;
  wr.wr_id = 20;
  wr.sg_list = &s;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND_WITH_IMM;
  wr.imm_data = htonl(0xabcd);
  wr.send_flags = IBV_SEND_SIGNALED;
  ASSERT_EQ(ibv_post_send(a, &wr, &bad), 0);
  int rc = ENOENT;
  for (int i = 0; i < 200000 && rc == ENOENT; ++i) {
    rc = ibv_start_poll(cqx, &pa);
    if (rc == ENOENT) usleep(i > 100 ? 50 : 0);
  }
  ASSERT_EQ(rc, 0);
  int seen = 0;
  do {
    ASSERT_EQ(cqx->status, IBV_WC_SUCCESS);
    if (cqx->wr_id == 20) {
      EXPECT_EQ(ibv_wc_read_opcode(cqx), IBV_WC_SEND);
      EXPECT_EQ(ibv_wc_read_qp_num(cqx), a->qp_num);
      seen |= 1;
    } else {
      EXPECT_EQ(cqx->wr_id, 21u);
      EXPECT_EQ(ibv_wc_read_opcode(cqx), IBV_WC_RECV);
      EXPECT_EQ(ibv_wc_read_byte_len(cqx), 8u);
      EXPECT_TRUE(ibv_wc_read_wc_flags(cqx) & IBV_WC_WITH_IMM);
      EXPECT_EQ(ntohl(ibv_wc_read_imm_data(cqx)), 0xabcdu);
      EXPECT_EQ(ibv_wc_read_qp_num(cqx), b->qp_num);
      // src_qp and slid are not checked: this 8-byte RC receive is scattered into the CQE,
      // whose data covers those fields (as on ConnectX).
      seen |= 2;
    }
    rc = ibv_next_poll(cqx);
    for (int i = 0; i < 200000 && rc == ENOENT && seen != 3; ++i) {
      usleep(50);
      rc = ibv_next_poll(cqx);
    }
  } while (rc == 0);
  ibv_end_poll(cqx);
  EXPECT_EQ(seen, 3);
  EXPECT_STREQ(buf + 32, "payload");
  ibv_destroy_qp(a);
  ibv_destroy_qp(b);
  ibv_dereg_mr(mr);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
}

// Two RC QPs share one SRQ: sends to either consume its receives in posting order; a receive
// too small for the message completes with IBV_WC_LOC_LEN_ERR at the responder and the requester
// sees IBV_WC_REM_INV_REQ_ERR.
TEST(Srq, SharedByTwoQpsAndTooSmallReceive) {
  Dev d;
  ibv_cq* cq = ibv_create_cq(d.ctx, 64, nullptr, nullptr, 0);
  ibv_srq_init_attr sa{};
  sa.attr.max_wr = 8;
  sa.attr.max_sge = 1;
  ibv_srq* srq = ibv_create_srq(d.pd, &sa);
  ASSERT_NE(srq, nullptr);
  ibv_qp *req[2], *resp[2];
  for (int i = 0; i < 2; ++i) {
    req[i] = make_rc(d, cq);
    ibv_qp_init_attr ia{};
    ia.send_cq = ia.recv_cq = cq;
    ia.srq = srq;
    ia.cap.max_send_wr = 4;
    ia.cap.max_send_sge = 1;
    ia.qp_type = IBV_QPT_RC;
    resp[i] = ibv_create_qp(d.pd, &ia);
    ASSERT_TRUE(req[i] && resp[i]);
    ibv_qp_attr m{};
    m.qp_state = IBV_QPS_INIT;
    m.port_num = 1;
    ASSERT_EQ(ibv_modify_qp(resp[i], &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                             IBV_QP_ACCESS_FLAGS), 0);
    ASSERT_EQ(connect_rc(req[i], resp[i]->qp_num, lid_of(d), 1), 0);
    ASSERT_EQ(connect_rc(resp[i], req[i]->qp_num, lid_of(d)), 0);
  }
  static char rbuf[4][32], sbuf[32] = "to the srq";
  ibv_mr* mr = ibv_reg_mr(d.pd, rbuf, sizeof rbuf, IBV_ACCESS_LOCAL_WRITE);
  ibv_mr* ms = ibv_reg_mr(d.pd, sbuf, sizeof sbuf, IBV_ACCESS_LOCAL_WRITE);
  auto post_srq = [&](int slot, uint32_t len) {
    ibv_sge s{uint64_t(uintptr_t(rbuf[slot])), len, mr->lkey};
    ibv_recv_wr w{}, *bad;
    w.wr_id = uint64_t(slot);
    w.sg_list = &s;
    w.num_sge = 1;
    ASSERT_EQ(ibv_post_srq_recv(srq, &w, &bad), 0);
  };
  auto send = [&](ibv_qp* qp, uint64_t id) {
    ibv_sge s{uint64_t(uintptr_t(sbuf)), 11, ms->lkey};
    ibv_send_wr w{}, *bad;
    w.wr_id = id;
    w.sg_list = &s;
    w.num_sge = 1;
    w.opcode = IBV_WR_SEND;
    w.send_flags = IBV_SEND_SIGNALED;
    ASSERT_EQ(ibv_post_send(qp, &w, &bad), 0);
  };
  post_srq(0, 32);
  post_srq(1, 32);
  send(req[1], 11);
  send(req[0], 10);
  int got = 0;
  while (got < 4) {
    ibv_wc wc = wait_wc(cq);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    if (wc.opcode == IBV_WC_RECV) {
      EXPECT_EQ(wc.byte_len, 11u);
      EXPECT_EQ(wc.qp_num, resp[wc.wr_id == 0 ? 1 : 0]->qp_num);  // first come, first served
    }
    got++;
  }
  EXPECT_STREQ(rbuf[0], "to the srq");
  EXPECT_STREQ(rbuf[1], "to the srq");
  post_srq(2, 8);  // too small for 11 bytes
  send(req[0], 12);
  bool resp_err = false, req_err = false;
  for (int i = 0; i < 2; ++i) {
    ibv_wc wc = wait_wc(cq);
    if (wc.qp_num == resp[0]->qp_num) {
      EXPECT_EQ(wc.status, IBV_WC_LOC_LEN_ERR);
      EXPECT_EQ(wc.wr_id, 2u);
      resp_err = true;
    } else {
      EXPECT_EQ(wc.status, IBV_WC_REM_INV_REQ_ERR);
      EXPECT_EQ(wc.wr_id, 12u);
      req_err = true;
    }
  }
  EXPECT_TRUE(resp_err && req_err);
  for (int i = 0; i < 2; ++i) {
    ibv_destroy_qp(req[i]);
    ibv_destroy_qp(resp[i]);
  }
  ibv_dereg_mr(mr);
  ibv_dereg_mr(ms);
  EXPECT_EQ(ibv_destroy_srq(srq), 0);
  ibv_destroy_cq(cq);
}

// A UD send written by the program as a raw WQE: control segment, datagram segment (the address
// vector mlx5dv_init_obj hands out for the AH, with remote QPN and Q_Key) and an inline data
// segment; the model parses it as the hardware does and the datagram arrives.
TEST_F(UdPair, RawWqeWithDatagramAndInlineSegments) {
  ibv_qp_init_attr_ex ia{};
  ia.qp_type = IBV_QPT_UD;
  ia.send_cq = ia.recv_cq = cq;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = 8;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ia.cap.max_inline_data = 64;
  ia.pd = d.pd;
  ia.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  ia.send_ops_flags = IBV_QP_EX_WITH_SEND;
  mlx5dv_qp_init_attr dv{};
  dv.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS;
  dv.send_ops_flags = MLX5DV_QP_EX_WITH_RAW_WQE;
  ibv_qp* raw = mlx5dv_create_qp(d.ctx, &ia, &dv);
  ASSERT_NE(raw, nullptr);
  ibv_qp_attr m{};
  m.qp_state = IBV_QPS_INIT;
  m.port_num = 1;
  m.qkey = 0x11111111;
  ASSERT_EQ(ibv_modify_qp(raw, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY), 0);
  m.qp_state = IBV_QPS_RTR;
  ASSERT_EQ(ibv_modify_qp(raw, &m, IBV_QP_STATE), 0);
  m.qp_state = IBV_QPS_RTS;
  ASSERT_EQ(ibv_modify_qp(raw, &m, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
  mlx5dv_ah dah{};
  mlx5dv_obj o{};
  o.ah.in = ah;
  o.ah.out = &dah;
  ASSERT_EQ(mlx5dv_init_obj(&o, MLX5DV_OBJ_AH), 0);
  ASSERT_NE(dah.av, nullptr);
  recv(rx, 0);
  const char msg[] = "raw datagram, inline";
  alignas(64) uint8_t w[128] = {};
  uint32_t inl_units = (4 + sizeof msg + 15) / 16;
  auto* c = reinterpret_cast<mlx5_wqe_ctrl_seg*>(w);
  c->opmod_idx_opcode = bswap32(MLX5_OPCODE_SEND_IMM);
  c->qpn_ds = bswap32(1 + 3 + inl_units);
  c->imm = htonl(0x600d);
  mlx5_wqe_av av = *dah.av;
  av.dqp_dct = bswap32(rx->qp_num | MLX5_EXTENDED_UD_AV);
  av.key.qkey.qkey = bswap32(0x11111111);
  memcpy(w + 16, &av, sizeof av);
  uint32_t hdr = bswap32(uint32_t(sizeof msg) | MLX5_INLINE_SEG);
  memcpy(w + 64, &hdr, 4);
  memcpy(w + 68, msg, sizeof msg);
  ibv_qp_ex* x = ibv_qp_to_qp_ex(raw);
  ibv_wr_start(x);
  x->wr_id = 77;
  x->wr_flags = IBV_SEND_SIGNALED;
  mlx5dv_wr_raw_wqe(mlx5dv_qp_ex_from_ibv_qp_ex(x), w);
  ASSERT_EQ(ibv_wr_complete(x), 0);
  bool sent = false, got = false;
  for (int i = 0; i < 2; ++i) {
    ibv_wc wc = wait_wc(cq);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    if (wc.qp_num == raw->qp_num) {
      EXPECT_EQ(wc.wr_id, 77u);
      sent = true;
    } else {
      EXPECT_EQ(wc.opcode, IBV_WC_RECV);
      EXPECT_EQ(wc.src_qp, raw->qp_num);
      EXPECT_EQ(wc.byte_len, sizeof msg + 40);
      EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
      EXPECT_EQ(ntohl(wc.imm_data), 0x600du);
      got = true;
    }
  }
  EXPECT_TRUE(sent && got);
  EXPECT_STREQ(reinterpret_cast<char*>(rbuf.data() + 40), msg);

  // Inline data is bounded by the WQE (its DS count), not by the QP's max_inline_data: UCX
  // creates its QPs with 64 and writes up to what its WQEs hold (180 bytes after a UD address
  // vector). The second WQE of the ring (the first took 2 BBs), 4 BBs.
  recv(rx, 0);
  char big[180];
  for (size_t i = 0; i < sizeof big; ++i) big[i] = static_cast<char>('a' + i % 26);
  alignas(64) uint8_t w2[256] = {};
  const uint32_t big_units = (4 + sizeof big + 15) / 16;
  auto* c2 = reinterpret_cast<mlx5_wqe_ctrl_seg*>(w2);
  c2->opmod_idx_opcode = bswap32(2u << 8 | MLX5_OPCODE_SEND);
  c2->qpn_ds = bswap32(1 + 3 + big_units);
  memcpy(w2 + 16, &av, sizeof av);
  const uint32_t big_hdr = bswap32(uint32_t(sizeof big) | MLX5_INLINE_SEG);
  memcpy(w2 + 64, &big_hdr, 4);
  memcpy(w2 + 68, big, sizeof big);
  ibv_wr_start(x);
  x->wr_id = 78;
  x->wr_flags = IBV_SEND_SIGNALED;
  mlx5dv_wr_raw_wqe(mlx5dv_qp_ex_from_ibv_qp_ex(x), w2);
  ASSERT_EQ(ibv_wr_complete(x), 0);
  for (int i = 0; i < 2; ++i) {
    ibv_wc wc = wait_wc(cq);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS) << "a 180-byte inline segment in a 4-BB WQE";
    if (wc.qp_num != raw->qp_num) {
      EXPECT_EQ(wc.byte_len, sizeof big + 40);
    }
  }
  EXPECT_EQ(memcmp(rbuf.data() + 40, big, sizeof big), 0);

  // An inline segment that runs past the WQE's DS count is malformed: a local QP operation error.
  c2->opmod_idx_opcode = bswap32(6u << 8 | MLX5_OPCODE_SEND);  // after 2 + 4 BBs
  c2->qpn_ds = bswap32(1 + 3 + big_units - 2);
  ibv_wr_start(x);
  x->wr_id = 79;
  x->wr_flags = IBV_SEND_SIGNALED;
  mlx5dv_wr_raw_wqe(mlx5dv_qp_ex_from_ibv_qp_ex(x), w2);
  ASSERT_EQ(ibv_wr_complete(x), 0);
  ibv_wc wc = wait_wc(cq);
  EXPECT_EQ(wc.qp_num, raw->qp_num);
  EXPECT_EQ(wc.status, IBV_WC_LOC_QP_OP_ERR);
  ibv_destroy_qp(raw);
}

}  // namespace

int main(int argc, char** argv) {
  return softhca_test_main(argc, argv, "verbs-test", [](const char* mode) {
    if (!strncmp(mode, "ud-send-", 8)) return run_ud_sender(atoi(mode + 8));
    return run_peer(atoi(mode));
  });
}
