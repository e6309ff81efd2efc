// softhca fidelity tests: hardware counters wrap, driver rules as rdma-core applies them, and what
// distinguishes one process (or emulated node) from another.
#include <dirent.h>
#include <signal.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/resource.h>

#include "test/softhca/tests/common.h"

namespace {

constexpr int kAll = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                     IBV_ACCESS_REMOTE_ATOMIC;

// A DCT (with its own SRQ) and a DCI in RTS, in one process.
struct DcPair {
  Dev& d;
  ibv_cq* cq;
  ibv_srq* srq = nullptr;
  ibv_qp *dct = nullptr, *dci = nullptr;
  static constexpr uint64_t kKey = 0x5eed;
  DcPair(Dev& dev, ibv_cq* c, int depth, uint32_t dct_access = IBV_ACCESS_REMOTE_WRITE |
                                                                IBV_ACCESS_REMOTE_READ |
                                                                IBV_ACCESS_REMOTE_ATOMIC)
      : d(dev), cq(c) {
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = 16;
    sa.attr.max_sge = 1;
    srq = ibv_create_srq(d.pd, &sa);
    if (!srq || !(dct = make_dct(d, cq, srq, kKey, int(dct_access)))) return;
    dci = make_dci(d, cq, {uint32_t(depth), 0, IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ |
                                               IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
                           8, 1, 16});
  }
  ~DcPair() {
    if (dci) ibv_destroy_qp(dci);
    if (dct) ibv_destroy_qp(dct);
    if (srq) ibv_destroy_srq(srq);
  }
};

ibv_ah* ah_to_self(Dev& d) {
  ibv_ah_attr aa{};
  aa.dlid = lid_of(d);
  aa.port_num = 1;
  return ibv_create_ah(d.pd, &aa);
}

// ---- 1: every counter that wraps on hardware wraps in the model --------------------------------
// Posts `total` one-WQE operations through `post_one(i, signaled)`, one in 16 signaled, waiting for
// each signaled completion. Past 65,536 WQE basic blocks the 16-bit WQE counter of the CQE wraps.
void post_many(ibv_cq* cq, int total, const std::function<int(int i, bool signaled)>& post_one) {
  for (int i = 0; i < total; ++i) {
    bool sig = i % 16 == 15 || i == total - 1;
    int rc = post_one(i, sig);
    ASSERT_EQ(rc, 0) << "post " << i << " failed";
    if (!sig) continue;
    ibv_wc wc = wait_wc(cq);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS) << "post " << i;
    ASSERT_EQ(wc.wr_id, uint64_t(i));
  }
}

constexpr int kWrapPosts = 140000;  // > 2 * 65,536 one-block WQEs, > 4 * 65,536 blocks of UD/DC

TEST(Wrap, RcSendQueueThroughEveryPostingPath) {
  Dev d;
  ibv_cq* cq = ibv_create_cq(d.ctx, 256, nullptr, nullptr, 0);
  ibv_qp* a = make_rc(d, cq, true);
  ibv_qp* b = make_rc(d, cq, true);
  ASSERT_TRUE(a && b);
  ASSERT_EQ(connect_rc(a, b->qp_num, lid_of(d)), 0);
  ASSERT_EQ(connect_rc(b, a->qp_num, lid_of(d)), 0);
  static uint64_t src[2], dst[2];
  ibv_mr* ms = ibv_reg_mr(d.pd, src, sizeof src, kAll);
  ibv_mr* md = ibv_reg_mr(d.pd, dst, sizeof dst, kAll);
  // ibv_post_send
  post_many(cq, kWrapPosts, [&](int i, bool sig) {
    src[0] = uint64_t(i);
    ibv_sge s{uint64_t(uintptr_t(src)), 8, ms->lkey};
    ibv_send_wr wr{}, *bad;
    wr.wr_id = uint64_t(i);
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = sig ? IBV_SEND_SIGNALED : 0;
    wr.wr.rdma.remote_addr = uint64_t(uintptr_t(dst));
    wr.wr.rdma.rkey = md->rkey;
    return ibv_post_send(a, &wr, &bad);
  });
  EXPECT_EQ(dst[0], uint64_t(kWrapPosts - 1));
  // ibv_wr_* on the same QP (its counters keep going from where they are)
  ibv_qp_ex* x = ibv_qp_to_qp_ex(a);
  post_many(cq, kWrapPosts, [&](int i, bool sig) {
    ibv_wr_start(x);
    x->wr_id = uint64_t(i);
    x->wr_flags = sig ? IBV_SEND_SIGNALED : 0;
    ibv_wr_atomic_fetch_add(x, md->rkey, uint64_t(uintptr_t(&dst[1])), 1);
    ibv_wr_set_sge(x, ms->lkey, uint64_t(uintptr_t(&src[1])), 8);
    return ibv_wr_complete(x);
  });
  EXPECT_EQ(dst[1], uint64_t(kWrapPosts));
  // mlx5dv_wr_raw_wqe: an RDMA write WQE of three segments
  mlx5dv_qp_ex* m = mlx5dv_qp_ex_from_ibv_qp_ex(x);
  post_many(cq, kWrapPosts, [&](int i, bool sig) {
    alignas(64) uint8_t w[64] = {};
    auto* c = reinterpret_cast<mlx5_wqe_ctrl_seg*>(w);
    c->opmod_idx_opcode = bswap32(MLX5_OPCODE_RDMA_WRITE);
    c->qpn_ds = bswap32(3);
    auto* r = reinterpret_cast<mlx5_wqe_raddr_seg*>(w + 16);
    r->raddr = bswap64(uint64_t(uintptr_t(dst)));
    r->rkey = bswap32(md->rkey);
    auto* ds = reinterpret_cast<mlx5_wqe_data_seg*>(w + 32);
    ds->byte_count = bswap32(8);
    ds->lkey = bswap32(ms->lkey);
    ds->addr = bswap64(uint64_t(uintptr_t(src)));
    src[0] = uint64_t(i) + 7;
    ibv_wr_start(x);
    x->wr_id = uint64_t(i);
    x->wr_flags = sig ? IBV_SEND_SIGNALED : 0;
    mlx5dv_wr_raw_wqe(m, w);
    return ibv_wr_complete(x);
  });
  EXPECT_EQ(dst[0], uint64_t(kWrapPosts - 1 + 7));
  ibv_destroy_qp(a);
  ibv_destroy_qp(b);
  ibv_dereg_mr(ms);
  ibv_dereg_mr(md);
  ibv_destroy_cq(cq);
}

TEST(Wrap, UdSendQueue) {
  Dev d;
  ibv_cq* cq = ibv_create_cq(d.ctx, 256, nullptr, nullptr, 0);
  ibv_qp* q = make_ud(d, cq, 64);
  ibv_qp* peer = make_ud(d, cq, 64);  // receives nothing: every datagram is dropped there
  ASSERT_TRUE(q && peer);
  ibv_ah* ah = ah_to_self(d);
  static uint64_t src;
  ibv_mr* ms = ibv_reg_mr(d.pd, &src, sizeof src, kAll);
  ibv_qp_ex* x = ibv_qp_to_qp_ex(q);
  post_many(cq, kWrapPosts, [&](int i, bool sig) {
    ibv_sge s{uint64_t(uintptr_t(&src)), 8, ms->lkey};
    if (i % 2) {  // alternate ibv_post_send and ibv_wr_*
      ibv_wr_start(x);
      x->wr_id = uint64_t(i);
      x->wr_flags = sig ? IBV_SEND_SIGNALED : 0;
      ibv_wr_send(x);
      ibv_wr_set_ud_addr(x, ah, peer->qp_num, 0x11111111);
      ibv_wr_set_sge(x, ms->lkey, uint64_t(uintptr_t(&src)), 8);
      return ibv_wr_complete(x);
    }
    ibv_send_wr wr{}, *bad;
    wr.wr_id = uint64_t(i);
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = sig ? IBV_SEND_SIGNALED : 0;
    wr.wr.ud.ah = ah;
    wr.wr.ud.remote_qpn = peer->qp_num;
    wr.wr.ud.remote_qkey = 0x11111111;
    return ibv_post_send(q, &wr, &bad);
  });
  ibv_destroy_qp(q);
  ibv_destroy_qp(peer);
  ibv_destroy_ah(ah);
  ibv_dereg_mr(ms);
  ibv_destroy_cq(cq);
}

TEST(Wrap, DciSendQueue) {
  Dev d;
  ibv_cq* cq = ibv_create_cq(d.ctx, 256, nullptr, nullptr, 0);
  DcPair dc(d, cq, 64);
  ASSERT_TRUE(dc.dci);
  ibv_ah* ah = ah_to_self(d);
  static uint64_t word, res;
  ibv_mr* mw = ibv_reg_mr(d.pd, &word, 8, kAll);
  ibv_mr* mr = ibv_reg_mr(d.pd, &res, 8, kAll);
  ibv_qp_ex* x = ibv_qp_to_qp_ex(dc.dci);
  mlx5dv_qp_ex* m = mlx5dv_qp_ex_from_ibv_qp_ex(x);
  post_many(cq, kWrapPosts, [&](int i, bool sig) {
    ibv_wr_start(x);
    x->wr_id = uint64_t(i);
    x->wr_flags = sig ? IBV_SEND_SIGNALED : 0;
    ibv_wr_atomic_fetch_add(x, mw->rkey, uint64_t(uintptr_t(&word)), 1);
    mlx5dv_wr_set_dc_addr(m, ah, dc.dct->qp_num, DcPair::kKey);
    ibv_wr_set_sge(x, mr->lkey, uint64_t(uintptr_t(&res)), 8);
    return ibv_wr_complete(x);
  });
  EXPECT_EQ(word, uint64_t(kWrapPosts));
  ibv_destroy_ah(ah);
  ibv_dereg_mr(mw);
  ibv_dereg_mr(mr);
  ibv_destroy_cq(cq);
}

// Receive counters: the RQ's and the SRQ's 16-bit doorbell counters wrap as well. The SRQ is
// driven raw (WQEs and the 16-bit counter written as libmlx5 writes them), so the model must
// compare 16 bits; a receive not yet posted must not be taken after the wrap.
TEST(Wrap, ReceiveQueueAndSrqCounters) {
  Dev d;
  ibv_cq* cq = ibv_create_cq(d.ctx, 512, nullptr, nullptr, 0);
  ibv_srq_init_attr sa{};
  sa.attr.max_wr = 64;
  sa.attr.max_sge = 1;
  ibv_srq* srq = ibv_create_srq(d.pd, &sa);
  ASSERT_NE(srq, nullptr);
  mlx5dv_srq dvs{};
  mlx5dv_obj obj{};
  obj.srq.in = srq;
  obj.srq.out = &dvs;
  ASSERT_EQ(mlx5dv_init_obj(&obj, MLX5DV_OBJ_SRQ), 0);
  const uint32_t srq_cnt = dvs.tail + 1;
  static uint64_t src, rbuf[64];
  ibv_mr* ms = ibv_reg_mr(d.pd, &src, 8, kAll);
  ibv_mr* mr = ibv_reg_mr(d.pd, rbuf, sizeof rbuf, kAll);
  uint16_t srq_counter = 0;
  auto raw_srq_recv = [&](uint64_t* buf) {
    auto* w = static_cast<uint8_t*>(dvs.buf) + size_t(srq_counter & (srq_cnt - 1)) * dvs.stride;
    memset(w, 0, 16);
    auto* ds = reinterpret_cast<mlx5_wqe_data_seg*>(w + 16);
    ds->byte_count = bswap32(8);
    ds->lkey = bswap32(mr->lkey);
    ds->addr = bswap64(uint64_t(uintptr_t(buf)));
    srq_counter++;
    __atomic_store_n(&dvs.dbrec[0], bswap32(srq_counter), __ATOMIC_RELEASE);
  };
  for (bool use_srq : {false, true}) {
    ibv_qp_init_attr ia{};
    ia.send_cq = ia.recv_cq = cq;
    ia.srq = use_srq ? srq : nullptr;
    ia.cap.max_send_wr = 64;
    ia.cap.max_recv_wr = 64;
    ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
    ia.cap.max_inline_data = 16;
    ia.qp_type = IBV_QPT_RC;
    ibv_qp* a = ibv_create_qp(d.pd, &ia);
    ibv_qp* b = ibv_create_qp(d.pd, &ia);
    ASSERT_TRUE(a && b);
    for (ibv_qp* q : {a, b}) {
      ibv_qp_attr m{};
      m.qp_state = IBV_QPS_INIT;
      m.port_num = 1;
      ASSERT_EQ(ibv_modify_qp(q, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
    }
    ASSERT_EQ(connect_rc(a, b->qp_num, lid_of(d)), 0);
    ASSERT_EQ(connect_rc(b, a->qp_num, lid_of(d)), 0);
    auto send = [&](uint64_t v) {
      src = v;
      ibv_sge s{uint64_t(uintptr_t(&src)), 8, ms->lkey};
      ibv_send_wr wr{}, *bad;
      wr.wr_id = v;
      wr.sg_list = &s;
      wr.num_sge = 1;
      wr.opcode = IBV_WR_SEND;
      wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
      return ibv_post_send(a, &wr, &bad);
    };
    const int kRecvs = 70000, kBatch = 32;
    for (int base = 0; base < kRecvs; base += kBatch) {
      for (int j = 0; j < kBatch; ++j) {
        if (use_srq) {
          raw_srq_recv(&rbuf[j]);
          continue;
        }
        ibv_sge rs{uint64_t(uintptr_t(&rbuf[j])), 8, mr->lkey};
        ibv_recv_wr rw{}, *rbad;
        rw.wr_id = uint64_t(base + j);
        rw.sg_list = &rs;
        rw.num_sge = 1;
        ASSERT_EQ(ibv_post_recv(b, &rw, &rbad), 0) << "receive " << base + j;
      }
      for (int j = 0; j < kBatch; ++j) {
        ASSERT_EQ(send(uint64_t(base + j)), 0);
        for (int k = 0; k < 2; ++k) {
          ibv_wc wc = wait_wc(cq);
          ASSERT_EQ(wc.status, IBV_WC_SUCCESS) << (use_srq ? "srq " : "rq ") << base + j;
          if (wc.qp_num != b->qp_num) continue;
          if (!use_srq) {
            ASSERT_EQ(wc.wr_id, uint64_t(base + j));
          }
          ASSERT_EQ(rbuf[j], uint64_t(base + j));
        }
      }
    }
    // Nothing posted: the next send waits (RNR) until a receive is posted.
    ASSERT_EQ(send(1u << 30), 0);
    usleep(20000);
    ibv_wc none;
    EXPECT_EQ(ibv_poll_cq(cq, 1, &none), 0) << (use_srq ? "srq" : "rq");
    if (use_srq) raw_srq_recv(&rbuf[0]);
    else {
      ibv_sge rs{uint64_t(uintptr_t(&rbuf[0])), 8, mr->lkey};
      ibv_recv_wr rw{}, *rbad;
      rw.sg_list = &rs;
      rw.num_sge = 1;
      ASSERT_EQ(ibv_post_recv(b, &rw, &rbad), 0);
    }
    for (int k = 0; k < 2; ++k) EXPECT_EQ(wait_wc(cq).status, IBV_WC_SUCCESS);
    EXPECT_EQ(rbuf[0], 1u << 30);
    ibv_destroy_qp(a);
    ibv_destroy_qp(b);
  }
  ibv_destroy_srq(srq);
  ibv_dereg_mr(ms);
  ibv_dereg_mr(mr);
  ibv_destroy_cq(cq);
}

// ---- 2: rdma-core accepts the wr_* setters of a UD/DC WQE in either order ----------------------
TEST(WrSetters, AddressAfterDataForUdAndDc) {
  Dev d;
  ibv_cq* cq = ibv_create_cq(d.ctx, 64, nullptr, nullptr, 0);
  ibv_qp* q = make_ud(d, cq, 16);
  ibv_qp* peer = make_ud(d, cq, 16);
  ASSERT_TRUE(q && peer);
  ibv_ah* ah = ah_to_self(d);
  static char msg[16] = "either order", rbuf[64];
  ibv_mr* ms = ibv_reg_mr(d.pd, msg, sizeof msg, kAll);
  ibv_mr* mr = ibv_reg_mr(d.pd, rbuf, sizeof rbuf, kAll);
  ibv_sge rs{uint64_t(uintptr_t(rbuf)), sizeof rbuf, mr->lkey};
  ibv_recv_wr rw{}, *rbad;
  rw.wr_id = 1;
  rw.sg_list = &rs;
  rw.num_sge = 1;
  ASSERT_EQ(ibv_post_recv(peer, &rw, &rbad), 0);
  ibv_qp_ex* x = ibv_qp_to_qp_ex(q);
  ibv_wr_start(x);
  x->wr_id = 2;
  x->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_send(x);
  ibv_wr_set_sge(x, ms->lkey, uint64_t(uintptr_t(msg)), sizeof msg);
  ibv_wr_set_ud_addr(x, ah, peer->qp_num, 0x11111111);
  ASSERT_EQ(ibv_wr_complete(x), 0);
  for (int i = 0; i < 2; ++i) {
    ibv_wc wc = wait_wc(cq);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS) << "wr_id " << wc.wr_id;
  }
  EXPECT_STREQ(rbuf + 40, msg);
  // Inline data before the address, too.
  ASSERT_EQ(ibv_post_recv(peer, &rw, &rbad), 0);
  memset(rbuf, 0, sizeof rbuf);
  ibv_wr_start(x);
  x->wr_id = 3;
  x->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_send(x);
  ibv_wr_set_inline_data(x, msg, sizeof msg);
  ibv_wr_set_ud_addr(x, ah, peer->qp_num, 0x11111111);
  ASSERT_EQ(ibv_wr_complete(x), 0);
  for (int i = 0; i < 2; ++i) EXPECT_EQ(wait_wc(cq).status, IBV_WC_SUCCESS);
  EXPECT_STREQ(rbuf + 40, msg);
  // DC: the SGE first, then the DC address.
  DcPair dc(d, cq, 16);
  ASSERT_TRUE(dc.dci);
  static uint64_t word = 5, res;
  ibv_mr* mw = ibv_reg_mr(d.pd, &word, 8, kAll);
  ibv_mr* mres = ibv_reg_mr(d.pd, &res, 8, kAll);
  ibv_qp_ex* dx = ibv_qp_to_qp_ex(dc.dci);
  ibv_wr_start(dx);
  dx->wr_id = 4;
  dx->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_atomic_fetch_add(dx, mw->rkey, uint64_t(uintptr_t(&word)), 10);
  ibv_wr_set_sge(dx, mres->lkey, uint64_t(uintptr_t(&res)), 8);
  mlx5dv_wr_set_dc_addr(mlx5dv_qp_ex_from_ibv_qp_ex(dx), ah, dc.dct->qp_num, DcPair::kKey);
  ASSERT_EQ(ibv_wr_complete(dx), 0);
  ibv_wc wc = wait_wc(cq);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(res, 5u);
  EXPECT_EQ(word, 15u);
  ibv_destroy_qp(q);
  ibv_destroy_qp(peer);
  ibv_destroy_ah(ah);
  ibv_dereg_mr(ms);
  ibv_dereg_mr(mr);
  ibv_dereg_mr(mw);
  ibv_dereg_mr(mres);
}

// ---- 6: keys, LIDs and GIDs differ between processes (and SOFTHCA_NODE groups) ----------------
struct Ident {
  unsigned qpn = 0, rkey = 0, lid = 0;
  unsigned long addr = 0;
  unsigned long long gid_hi = 0, gid_lo = 0;
};

void gid_words(Dev& d, unsigned long long* hi, unsigned long long* lo) {
  ibv_gid g;
  ibv_query_gid(d.ctx, 1, 0, &g);
  uint64_t h, l;
  memcpy(&h, g.raw, 8);
  memcpy(&l, g.raw + 8, 8);
  *hi = bswap64(h);
  *lo = bswap64(l);
}

// Child: an RC QP and a registered buffer; prints its identity, connects to the QPN and LID it
// reads, then serves until stdin closes.
int run_ident_peer() {
  Dev d;
  ibv_cq* cq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
  ibv_qp* qp = make_rc(d, cq);
  static uint64_t buf[8];
  ibv_mr* mr = ibv_reg_mr(d.pd, buf, sizeof buf, kAll);
  if (!qp || !mr) return 2;
  unsigned long long hi, lo;
  gid_words(d, &hi, &lo);
  printf("%u %lu %u %u %llx %llx\n", qp->qp_num, (unsigned long)uintptr_t(buf), mr->rkey,
         lid_of(d), hi, lo);
  fflush(stdout);
  unsigned remote, lid;
  if (scanf("%u %u", &remote, &lid) != 2) return 0;
  if (connect_rc(qp, remote, uint16_t(lid))) return 3;
  printf("ready\n");
  fflush(stdout);
  char word[16];
  if (scanf("%15s", word) != 1) return 0;
  printf("%lu\n", (unsigned long)buf[0]);
  fflush(stdout);
  return 0;
}

Ident read_ident(Child& c) {
  Ident x;
  EXPECT_EQ(fscanf(c.out, "%u %lu %u %u %llx %llx", &x.qpn, &x.addr, &x.rkey, &x.lid, &x.gid_hi,
                   &x.gid_lo),
            6);
  return x;
}

TEST(Identity, ProcessesHaveDistinctKeysLidsAndGids) {
  Child p1("ident"), p2("ident");
  Ident a = read_ident(p1), b = read_ident(p2);
  Dev d;
  static uint64_t mine;
  ibv_mr* mr = ibv_reg_mr(d.pd, &mine, 8, kAll);
  unsigned long long hi, lo;
  gid_words(d, &hi, &lo);
  EXPECT_NE(a.lid, b.lid);
  EXPECT_NE(a.lid, lid_of(d));
  EXPECT_NE(b.lid, lid_of(d));
  EXPECT_NE(a.gid_lo, b.gid_lo);
  EXPECT_NE(a.gid_lo, lo);
  EXPECT_EQ(a.gid_hi, 0xfe80000000000000ull);
  EXPECT_NE(a.rkey, b.rkey);  // the first MR of each process
  EXPECT_NE(a.rkey, mr->rkey);
  ibv_dereg_mr(mr);
}

TEST(Identity, NodeKnobGroupsProcessesOnOneLidAndGid) {
  Child x1("ident", {"SOFTHCA_NODE=x"}), x2("ident", {"SOFTHCA_NODE=x"}), y("ident", {"SOFTHCA_NODE=y"});
  Ident a = read_ident(x1), b = read_ident(x2), c = read_ident(y);
  EXPECT_EQ(a.lid, b.lid);
  EXPECT_EQ(a.gid_lo, b.gid_lo);
  EXPECT_NE(a.lid, c.lid);
  EXPECT_NE(a.gid_lo, c.gid_lo);
  EXPECT_NE(a.rkey, b.rkey);  // one HCA, two processes: two keys
  EXPECT_NE(a.qpn, b.qpn);
}

// A requester that names its own LID, or its own rkey, where the peer's belongs fails.
TEST(Identity, OwnLidOrOwnRkeyInsteadOfPeersFails) {
  Child p("ident");
  Ident peer = read_ident(p);
  Dev d;
  ibv_cq* cq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
  static uint64_t src = 42;
  ibv_mr* ms = ibv_reg_mr(d.pd, &src, 8, kAll);
  auto write = [&](ibv_qp* qp, uint32_t rkey) {
    ibv_sge s{uint64_t(uintptr_t(&src)), 8, ms->lkey};
    ibv_send_wr wr{}, *bad;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = peer.addr;
    wr.wr.rdma.rkey = rkey;
    EXPECT_EQ(ibv_post_send(qp, &wr, &bad), 0);
    return wait_wc(cq).status;
  };
  // The peer accepts this QP; first we name our own LID as the destination: nothing answers.
  ibv_qp* qp = make_rc(d, cq);
  ASSERT_EQ(connect_rc(qp, peer.qpn, lid_of(d), 7, 4, 1), 0);
  fprintf(p.in, "%u %u\n", qp->qp_num, lid_of(d));
  fflush(p.in);
  char word[16];
  ASSERT_EQ(fscanf(p.out, "%15s", word), 1);
  EXPECT_EQ(write(qp, peer.rkey), IBV_WC_RETRY_EXC_ERR);
  // Again from RESET with the peer's LID: our own rkey is refused, the peer's accepted.
  ibv_qp_attr m{};
  m.qp_state = IBV_QPS_RESET;
  ASSERT_EQ(ibv_modify_qp(qp, &m, IBV_QP_STATE), 0);
  m.qp_state = IBV_QPS_INIT;
  m.port_num = 1;
  m.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  ASSERT_EQ(ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
  ASSERT_EQ(connect_rc(qp, peer.qpn, uint16_t(peer.lid)), 0);
  EXPECT_EQ(write(qp, peer.rkey), IBV_WC_SUCCESS);
  EXPECT_EQ(write(qp, ms->rkey), IBV_WC_REM_ACCESS_ERR);
  fprintf(p.in, "done\n");
  fflush(p.in);
  unsigned long v = 0;
  ASSERT_EQ(fscanf(p.out, "%lu", &v), 1);
  EXPECT_EQ(v, 42u);
  EXPECT_EQ(p.wait(), 0);
  ibv_destroy_qp(qp);
  ibv_dereg_mr(ms);
  ibv_destroy_cq(cq);
}

// ---- 8: max_ah, and no segment outlives the processes of its fabric ---------------------------
TEST(Device, ReportsMaxAh) {
  Dev d;
  ibv_device_attr a{};
  ASSERT_EQ(ibv_query_device(d.ctx, &a), 0);
  EXPECT_GT(a.max_ah, 0);
  ibv_device_attr_ex x{};
  ASSERT_EQ(ibv_query_device_ex(d.ctx, nullptr, &x), 0);
  EXPECT_EQ(x.orig_attr.max_ah, a.max_ah);
}

// Child: opens a device in the fabric its environment names and waits to be killed.
int run_sleeper() {
  Dev d;
  if (!d.ctx) return 2;
  printf("ready\n");
  fflush(stdout);
  pause();
  return 0;
}

std::vector<std::string> shm_entries_with(const std::string& part) {
  std::vector<std::string> out;
  if (DIR* dir = opendir("/dev/shm")) {
    while (dirent* de = readdir(dir))
      if (strstr(de->d_name, part.c_str())) out.push_back(de->d_name);
    closedir(dir);
  }
  return out;
}

TEST(Fabric, KilledLastProcessLeavesNoSegmentAfterNextStart) {
  std::string fab = std::string(getenv("SOFTHCA_FABRIC")) + "-killed";
  {
    Child c("sleeper", {"SOFTHCA_FABRIC=" + fab});
    char word[16];
    ASSERT_EQ(fscanf(c.out, "%15s", word), 1);
    ASSERT_FALSE(shm_entries_with(fab).empty());  // the fabric exists while its process lives
    kill(c.pid, SIGKILL);
    c.wait();
  }
  // Anything that starts next (here: this process, in its own fabric) removes the orphan.
  Dev d;
  ASSERT_NE(d.ctx, nullptr);
  EXPECT_TRUE(shm_entries_with(fab).empty()) << shm_entries_with(fab)[0];
  // A live fabric is left alone.
  std::string live = std::string(getenv("SOFTHCA_FABRIC")) + "-live";
  Child c("sleeper", {"SOFTHCA_FABRIC=" + live});
  char word[16];
  ASSERT_EQ(fscanf(c.out, "%15s", word), 1);
  {
    Child other("sleeper", {"SOFTHCA_FABRIC=" + fab});  // another start, another reap
    ASSERT_EQ(fscanf(other.out, "%15s", word), 1);
    kill(other.pid, SIGKILL);
  }
  EXPECT_FALSE(shm_entries_with(live).empty());
  kill(c.pid, SIGKILL);
  c.wait();
  Child("start").wait();  // a last start removes what this test killed
  EXPECT_TRUE(shm_entries_with(live).empty());
}

// ---- 4: mlx5dv_create_qp creation flags as rdma-core accepts them (perftest's DC mode) --------
TEST(CreateFlags, AcceptedAndRefusedAsRdmaCoreDoes) {
  Dev d;
  ibv_cq* cq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
  ibv_srq_init_attr sa{};
  sa.attr.max_wr = 4;
  sa.attr.max_sge = 1;
  ibv_srq* srq = ibv_create_srq(d.pd, &sa);
  auto create = [&](bool dct, uint32_t flags) -> int {
    ibv_qp_init_attr_ex a{};
    a.qp_type = IBV_QPT_DRIVER;
    a.send_cq = a.recv_cq = cq;
    a.pd = d.pd;
    a.comp_mask = IBV_QP_INIT_ATTR_PD;
    if (dct) {
      a.srq = srq;
    } else {
      a.cap.max_send_wr = 4;
      a.cap.max_send_sge = 1;
      a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
      a.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE;
    }
    mlx5dv_qp_init_attr dv{};
    dv.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC | MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS;
    dv.dc_init_attr.dc_type = dct ? MLX5DV_DCTYPE_DCT : MLX5DV_DCTYPE_DCI;
    dv.dc_init_attr.dct_access_key = 1;
    dv.create_flags = flags;
    errno = 0;
    ibv_qp* q = mlx5dv_create_qp(d.ctx, &a, &dv);
    if (!q) return errno;
    ibv_destroy_qp(q);
    return 0;
  };
  EXPECT_EQ(create(false, MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE), 0);  // perftest's DCI
  EXPECT_EQ(create(false, MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE), 0);
  EXPECT_EQ(create(false, 0), 0);
  EXPECT_EQ(create(true, MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE), 0);
  EXPECT_EQ(create(true, MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE), EINVAL);  // not for a DCT
  EXPECT_EQ(create(false, MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE |
                              MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE),
            EINVAL);
  EXPECT_EQ(create(false, 1u << 20), EINVAL);  // unknown flag
  EXPECT_EQ(create(false, MLX5DV_QP_CREATE_TUNNEL_OFFLOADS), EOPNOTSUPP);  // raw packet only
  // perftest's DC server also asks for the SRQ number.
  uint32_t srqn = 0;
  EXPECT_EQ(ibv_get_srq_num(srq, &srqn), 0);
  EXPECT_NE(srqn, 0u);
  ibv_destroy_srq(srq);
  ibv_destroy_cq(cq);
}

// DCI addressing through the stream variant of the setter, as perftest's DC tests post.
TEST(CreateFlags, DcAddrStreamSetterPosts) {
  Dev d;
  ibv_cq* cq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
  DcPair dc(d, cq, 8);
  ASSERT_TRUE(dc.dci);
  ibv_ah* ah = ah_to_self(d);
  static uint64_t word = 1, res;
  ibv_mr* mw = ibv_reg_mr(d.pd, &word, 8, kAll);
  ibv_mr* mr = ibv_reg_mr(d.pd, &res, 8, kAll);
  ibv_qp_ex* x = ibv_qp_to_qp_ex(dc.dci);
  ibv_wr_start(x);
  x->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_atomic_fetch_add(x, mw->rkey, uint64_t(uintptr_t(&word)), 2);
  mlx5dv_wr_set_dc_addr_stream(mlx5dv_qp_ex_from_ibv_qp_ex(x), ah, dc.dct->qp_num, DcPair::kKey, 0);
  ibv_wr_set_sge(x, mr->lkey, uint64_t(uintptr_t(&res)), 8);
  ASSERT_EQ(ibv_wr_complete(x), 0);
  EXPECT_EQ(wait_wc(cq).status, IBV_WC_SUCCESS);
  EXPECT_EQ(word, 3u);
  ibv_destroy_ah(ah);
  ibv_dereg_mr(mw);
  ibv_dereg_mr(mr);
}

// ---- 7: registration as the kernel pins memory; responder errors move the QP and raise events --
TEST(Registration, UnmappedAndReadOnlyRangesAreRefused) {
  Dev d;
  const size_t pg = size_t(sysconf(_SC_PAGESIZE));
  auto* two = static_cast<uint8_t*>(mmap(nullptr, 2 * pg, PROT_READ | PROT_WRITE,
                                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(two, MAP_FAILED);
  ASSERT_EQ(munmap(two + pg, pg), 0);
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(d.pd, two, 2 * pg, IBV_ACCESS_LOCAL_WRITE), nullptr);
  EXPECT_EQ(errno, EFAULT);
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(d.pd, two + pg, 8, IBV_ACCESS_REMOTE_READ), nullptr);  // wholly unmapped
  EXPECT_EQ(errno, EFAULT);
  ibv_mr* ok = ibv_reg_mr(d.pd, two, pg, kAll);
  EXPECT_NE(ok, nullptr);
  if (ok) ibv_dereg_mr(ok);
  auto* ro = static_cast<uint8_t*>(mmap(nullptr, pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(ro, MAP_FAILED);
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(d.pd, ro, pg, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE), nullptr);
  EXPECT_EQ(errno, EFAULT);
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(d.pd, ro, pg, IBV_ACCESS_LOCAL_WRITE), nullptr);  // any write pins for write
  EXPECT_EQ(errno, EFAULT);
  ibv_mr* rd = ibv_reg_mr(d.pd, ro, pg, IBV_ACCESS_REMOTE_READ);
  EXPECT_NE(rd, nullptr);
  if (rd) ibv_dereg_mr(rd);
  munmap(two, pg);
  munmap(ro, pg);
}

// Messages beyond 1 MiB (log_max_msg 30, max_msg_sz 1 GiB): a loopback RC pair RDMA-writes
// 4 MiB + 100 bytes, reads them back, writes 3 MiB with immediate (the receive's byte count is
// the whole message) and sends 3 MiB + 5 with immediate, once into a receive posted late (RNR). Returns 0, or the number of the check that failed. With
// SOFTHCA_LOG_MAX_MSG=20 (`limit_1mib`): max_msg_sz is 1 MiB and the 4 MiB write fails with
// LOC_LEN_ERR instead. Run in this process (requesters execute directly into the peer's memory)
// and in a child with SOFTHCA_DIRECT=0 (the requests travel to the responder's model in pieces).
int run_big_messages(bool limit_1mib) {
  Dev d;
  if (!d.ctx) return 1;
  ibv_port_attr pa{};
  if (ibv_query_port(d.ctx, 1, &pa)) return 2;
  if (pa.max_msg_sz != (limit_1mib ? 1u << 20 : 1u << 30)) return 3;
  ibv_cq* cq = ibv_create_cq(d.ctx, 64, nullptr, nullptr, 0);
  ibv_qp* a = make_rc(d, cq);
  ibv_qp* b = make_rc(d, cq);
  if (!cq || !a || !b) return 4;
  if (connect_rc(a, b->qp_num, lid_of(d)) || connect_rc(b, a->qp_num, lid_of(d))) return 5;
  const size_t n = (4u << 20) + 100, room = 5u << 20;
  auto* src = static_cast<uint8_t*>(mmap(nullptr, room, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  auto* dst = static_cast<uint8_t*>(mmap(nullptr, room, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  ibv_mr* ms = ibv_reg_mr(d.pd, src, room, acc);
  ibv_mr* md = ibv_reg_mr(d.pd, dst, room, acc);
  if (!ms || !md) return 6;
  for (size_t i = 0; i < n; ++i) src[i] = uint8_t(i * 131 + (i >> 20));
  auto send = [&](ibv_wr_opcode op, uint8_t* local, size_t len, uint8_t* remote) {
    ibv_sge sg{uint64_t(uintptr_t(local)), uint32_t(len), ms->lkey};
    ibv_send_wr wr{}, *bad;
    wr.sg_list = &sg;
    wr.num_sge = 1;
    wr.opcode = op;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htonl(7);
    wr.wr.rdma.remote_addr = uint64_t(uintptr_t(remote));
    wr.wr.rdma.rkey = md->rkey;
    return ibv_post_send(a, &wr, &bad);
  };
  auto post = [&](ibv_wr_opcode op, uint8_t* local, size_t len, uint8_t* remote) {
    if (send(op, local, len, remote)) return IBV_WC_GENERAL_ERR;
    return wait_wc(cq).status;
  };
  int rc = 0;
  if (limit_1mib) {
    if (post(IBV_WR_RDMA_WRITE, src, n, dst + 8) != IBV_WC_LOC_LEN_ERR) rc = 7;
    else if (dst[8] != 0) rc = 8;
  } else if (post(IBV_WR_RDMA_WRITE, src, n, dst + 8) != IBV_WC_SUCCESS) {
    rc = 9;
  } else if (memcmp(src, dst + 8, n) || dst[7] || dst[8 + n]) {
    rc = 10;
  } else {
    memset(src, 0, room);
    if (post(IBV_WR_RDMA_READ, src + 16, n, dst + 8) != IBV_WC_SUCCESS) rc = 11;
    else if (memcmp(src + 16, dst + 8, n) || src[15] || src[16 + n]) {
      rc = 12;
      size_t i = 0;
      while (i < n && src[16 + i] == dst[8 + i]) ++i;
      size_t j = n;
      while (j > i && src[16 + j - 1] == dst[8 + j - 1]) --j;
      fprintf(stderr, "read data differs in [%zu, %zu) of %zu; src15 %d src16n %d\n", i, j, n, src[15], src[16 + n]);
    }
    if (!rc) {
      ibv_recv_wr rw{}, *rbad;
      rw.wr_id = 99;
      if (ibv_post_recv(b, &rw, &rbad)) return 13;
      for (size_t i = 0; i < (3u << 20); ++i) src[i] = uint8_t(i * 7 + 1);
      if (send(IBV_WR_RDMA_WRITE_WITH_IMM, src, 3u << 20, dst)) return 14;
      bool got_req = false, got_resp = false;
      for (int i = 0; i < 2; ++i) {
        ibv_wc wc = wait_wc(cq);
        if (wc.status != IBV_WC_SUCCESS) rc = 15;
        if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
          got_resp = true;
          if (wc.byte_len != (3u << 20) || ntohl(wc.imm_data) != 7 || wc.wr_id != 99) rc = 16;
        } else {
          got_req = true;
        }
      }
      if (!rc && (!got_req || !got_resp || memcmp(src, dst, 3u << 20))) rc = 17;
    }
    // A send of 3 MiB + 5 with immediate into a 4 MiB receive, first posted before the receive
    // (RNR: the receiver takes it once the receive is there), then after it.
    for (int round = 0; round < 2 && !rc; ++round) {
      const uint32_t len = (3u << 20) + 5;
      for (uint32_t i = 0; i < len; ++i) src[i] = uint8_t(i * 13 + round);
      memset(dst, 0, room);
      ibv_sge ss{uint64_t(uintptr_t(src)), len, ms->lkey};
      ibv_send_wr wr{}, *bad;
      wr.sg_list = &ss;
      wr.num_sge = 1;
      wr.opcode = IBV_WR_SEND_WITH_IMM;
      wr.send_flags = IBV_SEND_SIGNALED;
      wr.imm_data = htonl(9);
      ibv_sge rs{uint64_t(uintptr_t(dst)), 4u << 20, md->lkey};
      ibv_recv_wr rw{}, *rbad;
      rw.wr_id = 100 + uint64_t(round);
      rw.sg_list = &rs;
      rw.num_sge = 1;
      if (round == 0) {
        if (ibv_post_send(a, &wr, &bad)) return 18;
        usleep(20000);
        if (ibv_post_recv(b, &rw, &rbad)) return 19;
      } else {
        if (ibv_post_recv(b, &rw, &rbad)) return 19;
        if (ibv_post_send(a, &wr, &bad)) return 18;
      }
      bool got_req = false, got_resp = false;
      for (int i = 0; i < 2; ++i) {
        ibv_wc wc = wait_wc(cq);
        if (wc.status != IBV_WC_SUCCESS) rc = 20;
        if (wc.opcode == IBV_WC_RECV) {
          got_resp = true;
          if (wc.byte_len != len || ntohl(wc.imm_data) != 9 || wc.wr_id != 100 + uint64_t(round)) rc = 21;
        } else {
          got_req = true;
        }
      }
      if (!rc && (!got_req || !got_resp || memcmp(src, dst, len) || dst[len])) rc = 22;
    }
  }
  ibv_dereg_mr(ms);
  ibv_dereg_mr(md);
  ibv_destroy_qp(a);
  ibv_destroy_qp(b);
  ibv_destroy_cq(cq);
  munmap(src, room);
  munmap(dst, room);
  return rc;
}

// Child: without CAP_IPC_LOCK and with a 64 KiB locked-memory limit, registers until refused.
int run_memlock() {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct cap[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capget, &hdr, cap) != 0) return 2;
  cap[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
  if (syscall(SYS_capset, &hdr, cap) != 0) return 3;
  rlimit rl{64 << 10, 64 << 10};
  if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0) return 4;
  Dev d;
  alignas(4096) static uint8_t buf[256 << 10];
  ibv_mr* a = ibv_reg_mr(d.pd, buf, 32 << 10, IBV_ACCESS_LOCAL_WRITE);
  errno = 0;
  ibv_mr* b = ibv_reg_mr(d.pd, buf + (64 << 10), 64 << 10, IBV_ACCESS_LOCAL_WRITE);
  int err = errno;
  if (a) ibv_dereg_mr(a);
  ibv_mr* c = ibv_reg_mr(d.pd, buf + (64 << 10), 64 << 10, IBV_ACCESS_LOCAL_WRITE);
  printf("%d %d %d %d\n", a != nullptr, b != nullptr, err, c != nullptr);
  fflush(stdout);
  if (c) ibv_dereg_mr(c);
  return 0;
}

TEST(Registration, LockedMemoryLimitWithoutCapIpcLock) {
  Child c("memlock");
  int a = -1, b = -1, err = -1, again = -1;
  ASSERT_EQ(fscanf(c.out, "%d %d %d %d", &a, &b, &err, &again), 4) << "child status " << c.wait();
  EXPECT_EQ(a, 1);       // 32 KiB of 64 KiB
  EXPECT_EQ(b, 0);       // 32 + 64 KiB: over the limit
  EXPECT_EQ(err, ENOMEM);
  EXPECT_EQ(again, 1);   // after deregistering the first, 64 KiB fit
  EXPECT_EQ(c.wait(), 0);
}

struct ErrPair {
  Dev d;
  ibv_cq* cq = nullptr;
  ibv_qp *a = nullptr, *b = nullptr;
  void make(int b_access) {
    cq = ibv_create_cq(d.ctx, 64, nullptr, nullptr, 0);
    a = make_rc(d, cq);
    b = make_rc(d, cq, false, b_access);
    connect_rc(a, b->qp_num, lid_of(d));
    connect_rc(b, a->qp_num, lid_of(d));
  }
  ~ErrPair() {
    if (a) ibv_destroy_qp(a);
    if (b) ibv_destroy_qp(b);
    if (cq) ibv_destroy_cq(cq);
  }
};

// Waits (bounded) for the context's async fd to become readable and reads one event.
bool next_async_event(ibv_context* ctx, ibv_async_event* ev) {
  pollfd p{ctx->async_fd, POLLIN, 0};
  if (poll(&p, 1, 10000) != 1) return false;
  return ibv_get_async_event(ctx, ev) == 0;
}

TEST(AsyncEvents, RemoteAccessErrorMovesResponderToErrorAndRaisesEvent) {
  ErrPair e;
  e.make(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  static uint64_t src, ro_word, rbuf;
  ibv_mr* ms = ibv_reg_mr(e.d.pd, &src, 8, kAll);
  ibv_mr* ro = ibv_reg_mr(e.d.pd, &ro_word, 8, IBV_ACCESS_REMOTE_READ);
  ibv_mr* mr = ibv_reg_mr(e.d.pd, &rbuf, 8, kAll);
  pollfd p{e.d.ctx->async_fd, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 0), 0);  // nothing yet
  ibv_sge rs{uint64_t(uintptr_t(&rbuf)), 8, mr->lkey};
  ibv_recv_wr rw{}, *rbad;
  rw.wr_id = 77;
  rw.sg_list = &rs;
  rw.num_sge = 1;
  ASSERT_EQ(ibv_post_recv(e.b, &rw, &rbad), 0);
  ibv_sge s{uint64_t(uintptr_t(&src)), 8, ms->lkey};
  ibv_send_wr wr{}, *bad;
  wr.wr_id = 1;
  wr.sg_list = &s;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = uint64_t(uintptr_t(&ro_word));
  wr.wr.rdma.rkey = ro->rkey;  // read-only MR: remote access error
  ASSERT_EQ(ibv_post_send(e.a, &wr, &bad), 0);
  bool req = false, flushed = false;
  for (int i = 0; i < 2; ++i) {
    ibv_wc wc{};
    for (int t = 0; t < 5000 && ibv_poll_cq(e.cq, 1, &wc) == 0; ++t) usleep(1000);  // bounded
    if (wc.qp_num == e.a->qp_num) {
      EXPECT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
      req = true;
    } else {
      EXPECT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);  // the responder's receive, flushed
      EXPECT_EQ(wc.wr_id, 77u);
      flushed = true;
    }
  }
  EXPECT_TRUE(req && flushed);
  ibv_qp_attr qa;
  ibv_qp_init_attr ia;
  ibv_query_qp(e.b, &qa, IBV_QP_STATE, &ia);
  EXPECT_EQ(qa.qp_state, IBV_QPS_ERR);
  ibv_async_event ev{};
  ASSERT_TRUE(next_async_event(e.d.ctx, &ev));
  EXPECT_EQ(ev.event_type, IBV_EVENT_QP_ACCESS_ERR);
  EXPECT_EQ(ev.element.qp, e.b);
  ibv_ack_async_event(&ev);
  EXPECT_EQ(poll(&p, 1, 0), 0);  // one event only
  ibv_dereg_mr(ms);
  ibv_dereg_mr(ro);
  ibv_dereg_mr(mr);
}

TEST(AsyncEvents, InvalidRequestRaisesRequestError) {
  ErrPair e;
  e.make(IBV_ACCESS_REMOTE_READ);  // no remote write on the responder QP
  static uint64_t src, word;
  ibv_mr* ms = ibv_reg_mr(e.d.pd, &src, 8, kAll);
  ibv_mr* mw = ibv_reg_mr(e.d.pd, &word, 8, kAll);
  ibv_sge s{uint64_t(uintptr_t(&src)), 8, ms->lkey};
  ibv_send_wr wr{}, *bad;
  wr.sg_list = &s;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = uint64_t(uintptr_t(&word));
  wr.wr.rdma.rkey = mw->rkey;
  ASSERT_EQ(ibv_post_send(e.a, &wr, &bad), 0);
  EXPECT_EQ(wait_wc(e.cq).status, IBV_WC_REM_INV_REQ_ERR);
  ibv_async_event ev{};
  ASSERT_TRUE(next_async_event(e.d.ctx, &ev));
  EXPECT_EQ(ev.event_type, IBV_EVENT_QP_REQ_ERR);
  EXPECT_EQ(ev.element.qp, e.b);
  ibv_ack_async_event(&ev);
  ibv_dereg_mr(ms);
  ibv_dereg_mr(mw);
}

// A full CQ (not IGNORE_OVERRUN) that is handed one more completion is overrun: as on a ConnectX
// (IBTA C11-37, C9-218) the CQ goes to error with IBV_EVENT_CQ_ERR, takes no completion any
// more, and the QP whose completion it refused goes to error with IBV_EVENT_QP_FATAL.
TEST(AsyncEvents, CqOverrunPutsCqAndQpInError) {
  Dev d;
  ibv_cq* small = ibv_create_cq(d.ctx, 3, nullptr, nullptr, 0);  // 4 entries
  ibv_cq* other = ibv_create_cq(d.ctx, 64, nullptr, nullptr, 0);
  ASSERT_TRUE(small && other);
  ASSERT_EQ(small->cqe, 3);
  ibv_qp* a = make_rc(d, small);
  ibv_qp* b = make_rc(d, other);
  ASSERT_TRUE(a && b);
  ASSERT_EQ(connect_rc(a, b->qp_num, lid_of(d)), 0);
  ASSERT_EQ(connect_rc(b, a->qp_num, lid_of(d)), 0);
  static uint64_t src = 1, dst = 0;
  ibv_mr* ms = ibv_reg_mr(d.pd, &src, 8, kAll);
  ibv_mr* md = ibv_reg_mr(d.pd, &dst, 8, kAll);
  auto write = [&](uint64_t id) {
    ibv_sge s{uint64_t(uintptr_t(&src)), 8, ms->lkey};
    ibv_send_wr wr{}, *bad;
    wr.wr_id = id;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = uint64_t(uintptr_t(&dst));
    wr.wr.rdma.rkey = md->rkey;
    return ibv_post_send(a, &wr, &bad);
  };
  pollfd p{d.ctx->async_fd, POLLIN, 0};
  for (uint64_t i = 1; i <= 4; ++i) ASSERT_EQ(write(i), 0);  // fills the CQ, nobody polls
  for (uint64_t i = 5; i <= 6; ++i) ASSERT_EQ(write(i), 0);  // one too many: overrun
  ibv_async_event ev{};
  ASSERT_TRUE(next_async_event(d.ctx, &ev));
  EXPECT_EQ(ev.event_type, IBV_EVENT_CQ_ERR);
  EXPECT_EQ(ev.element.cq, small);
  ibv_ack_async_event(&ev);
  ASSERT_TRUE(next_async_event(d.ctx, &ev));
  EXPECT_EQ(ev.event_type, IBV_EVENT_QP_FATAL);
  EXPECT_EQ(ev.element.qp, a);
  ibv_ack_async_event(&ev);
  EXPECT_EQ(poll(&p, 1, 0), 0);  // once each
  ibv_qp_attr qa;
  ibv_qp_init_attr ia;
  ibv_query_qp(a, &qa, IBV_QP_STATE, &ia);
  EXPECT_EQ(qa.qp_state, IBV_QPS_ERR);
  // What was written before the overrun is there; nothing after it, even with room again.
  ibv_wc wc[8];
  int n = ibv_poll_cq(small, 8, wc);
  EXPECT_EQ(n, 4);
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(wc[i].status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc[i].wr_id, uint64_t(i + 1));
  }
  ASSERT_EQ(write(7), 0);  // flushed by a QP in error, into a CQ in error: no entry
  usleep(20000);
  EXPECT_EQ(ibv_poll_cq(small, 8, wc), 0);
  EXPECT_EQ(poll(&p, 1, 0), 0);
  ibv_destroy_qp(a);
  ibv_destroy_qp(b);
  ibv_destroy_cq(small);
  ibv_destroy_cq(other);
  ibv_dereg_mr(ms);
  ibv_dereg_mr(md);
}

// ---- 5: scatter-to-CQE --------------------------------------------------------------------
// An RC QP with its own send and receive CQs; creation flags through mlx5dv_create_qp.
ibv_qp* make_rc_cqs(Dev& d, ibv_cq* scq, ibv_cq* rcq, bool sig_all, uint32_t create_flags = 0) {
  ibv_qp_init_attr_ex a{};
  a.qp_type = IBV_QPT_RC;
  a.send_cq = scq;
  a.recv_cq = rcq;
  a.cap.max_send_wr = a.cap.max_recv_wr = 16;
  a.cap.max_send_sge = a.cap.max_recv_sge = 2;
  a.sq_sig_all = sig_all;
  a.pd = d.pd;
  a.comp_mask = IBV_QP_INIT_ATTR_PD;
  mlx5dv_qp_init_attr dv{};
  if (create_flags) {
    dv.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS;
    dv.create_flags = create_flags;
  }
  ibv_qp* qp = mlx5dv_create_qp(d.ctx, &a, &dv);
  if (!qp) return nullptr;
  ibv_qp_attr m{};
  m.qp_state = IBV_QPS_INIT;
  m.port_num = 1;
  m.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    return nullptr;
  return qp;
}

// A CQ read the way a backend polling CQEs directly reads it.
struct RawCq {
  ibv_cq* cq = nullptr;
  mlx5dv_cq dv{};
  uint32_t ci = 0;
  explicit RawCq(Dev& d) {
    cq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
    mlx5dv_obj o{};
    o.cq.in = cq;
    o.cq.out = &dv;
    if (mlx5dv_init_obj(&o, MLX5DV_OBJ_CQ)) cq = nullptr;
  }
  // The next CQE (copied), or op_own 0xf0 (invalid) after a bounded wait.
  mlx5_cqe64 next() {
    auto* c = reinterpret_cast<mlx5_cqe64*>(static_cast<uint8_t*>(dv.buf) +
                                            size_t(ci & (dv.cqe_cnt - 1)) * 64);
    for (int i = 0; i < 500000; ++i) {
      uint8_t own = __atomic_load_n(&c->op_own, __ATOMIC_ACQUIRE);
      if ((own >> 4) != MLX5_CQE_INVALID && (own & 1) == ((ci / dv.cqe_cnt) & 1)) {
        mlx5_cqe64 copy = *c;
        ci++;
        __atomic_store_n(&dv.dbrec[0], bswap32(ci & 0xffffff), __ATOMIC_RELEASE);
        return copy;
      }
      if (i > 1000) usleep(20);
    }
    ADD_FAILURE() << "no CQE";
    mlx5_cqe64 none{};
    none.op_own = MLX5_CQE_INVALID << 4;
    return none;
  }
};

struct ScatterPair {
  Dev& d;
  ibv_qp *a = nullptr, *b = nullptr;
  ScatterPair(Dev& dev, ibv_cq* a_scq, ibv_cq* a_rcq, ibv_cq* b_scq, ibv_cq* b_rcq, bool a_sig_all,
              uint32_t a_flags = 0, uint32_t b_flags = 0)
      : d(dev) {
    a = make_rc_cqs(d, a_scq, a_rcq, a_sig_all, a_flags);
    b = make_rc_cqs(d, b_scq, b_rcq, false, b_flags);
    if (!a || !b || connect_rc(a, b->qp_num, lid_of(d)) || connect_rc(b, a->qp_num, lid_of(d)))
      a = b = nullptr;
  }
};

constexpr uint8_t kOp(const mlx5_cqe64& c) { return c.op_own >> 4; }

TEST(Scatter, SmallRcReceiveLandsInTheCqe) {
  Dev d;
  RawCq rraw(d);
  ibv_cq* other = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
  ibv_cq* polled = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
  ASSERT_TRUE(rraw.cq && other && polled);
  ScatterPair p(d, other, other, other, rraw.cq, false);
  ASSERT_TRUE(p.a);
  static char msg[64] = "twenty bytes of data", rbuf[64];
  ibv_mr* ms = ibv_reg_mr(d.pd, msg, sizeof msg, kAll);
  ibv_mr* mr = ibv_reg_mr(d.pd, rbuf, sizeof rbuf, kAll);
  auto recv = [&](ibv_qp* q) {
    memset(rbuf, 0xee, sizeof rbuf);
    ibv_sge rs{uint64_t(uintptr_t(rbuf)), sizeof rbuf, mr->lkey};
    ibv_recv_wr rw{}, *rbad;
    rw.wr_id = 5;
    rw.sg_list = &rs;
    rw.num_sge = 1;
    ASSERT_EQ(ibv_post_recv(q, &rw, &rbad), 0);
  };
  auto send = [&](ibv_qp* q, uint32_t len) {
    ibv_sge s{uint64_t(uintptr_t(msg)), len, ms->lkey};
    ibv_send_wr wr{}, *bad;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ASSERT_EQ(ibv_post_send(q, &wr, &bad), 0);
  };
  recv(p.b);
  send(p.a, 20);
  mlx5_cqe64 c = rraw.next();
  EXPECT_EQ(kOp(c), MLX5_CQE_RESP_SEND);
  EXPECT_TRUE(c.op_own & MLX5_INLINE_SCATTER_32);
  EXPECT_EQ(bswap32(c.byte_cnt), 20u);
  EXPECT_EQ(memcmp(&c, msg, 20), 0);          // the data is in the CQE ...
  EXPECT_EQ(uint8_t(rbuf[0]), 0xeeu);         // ... and not in the buffer
  EXPECT_EQ(wait_wc(other).status, IBV_WC_SUCCESS);
  // 33 bytes and more go to memory.
  recv(p.b);
  send(p.a, 40);
  c = rraw.next();
  EXPECT_FALSE(c.op_own & (MLX5_INLINE_SCATTER_32 | MLX5_INLINE_SCATTER_64));
  EXPECT_EQ(memcmp(rbuf, msg, 40), 0);
  EXPECT_EQ(wait_wc(other).status, IBV_WC_SUCCESS);
  // Through ibv_poll_cq the driver copies a scattered receive into the buffer.
  ScatterPair q(d, other, other, other, polled, false);
  ASSERT_TRUE(q.a);
  recv(q.b);
  send(q.a, 20);
  ibv_wc wc = wait_wc(polled);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.byte_len, 20u);
  EXPECT_EQ(memcmp(rbuf, msg, 20), 0);
  EXPECT_EQ(wait_wc(other).status, IBV_WC_SUCCESS);
  // MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE on the receiver: memory again.
  ScatterPair off(d, other, other, other, rraw.cq, false, 0, MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE);
  ASSERT_TRUE(off.a);
  recv(off.b);
  send(off.a, 20);
  c = rraw.next();
  EXPECT_FALSE(c.op_own & MLX5_INLINE_SCATTER_32);
  EXPECT_EQ(memcmp(rbuf, msg, 20), 0);
  EXPECT_EQ(wait_wc(other).status, IBV_WC_SUCCESS);
}

TEST(Scatter, ReadAndAtomicResultsInTheCqeWithSqSigAll) {
  Dev d;
  RawCq sraw(d);
  ibv_cq* other = ibv_create_cq(d.ctx, 32, nullptr, nullptr, 0);
  ibv_cq* polled = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
  ASSERT_TRUE(sraw.cq && other && polled);
  alignas(8) static uint8_t remote[64], local[64];
  ibv_mr* mrem = ibv_reg_mr(d.pd, remote, sizeof remote, kAll);
  ibv_mr* mloc = ibv_reg_mr(d.pd, local, sizeof local, kAll);
  for (int i = 0; i < 64; ++i) remote[i] = uint8_t(i + 1);
  auto post = [&](ibv_qp* q, ibv_wr_opcode op, uint32_t len, unsigned flags) {
    memset(local, 0xee, sizeof local);
    ibv_sge s{uint64_t(uintptr_t(local)), len, mloc->lkey};
    ibv_send_wr wr{}, *bad;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = op;
    wr.send_flags = flags;
    if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
      wr.wr.atomic.remote_addr = uint64_t(uintptr_t(remote + 32));
      wr.wr.atomic.rkey = mrem->rkey;
      wr.wr.atomic.compare_add = 1;
    } else {
      wr.wr.rdma.remote_addr = uint64_t(uintptr_t(remote));
      wr.wr.rdma.rkey = mrem->rkey;
    }
    ASSERT_EQ(ibv_post_send(q, &wr, &bad), 0);
  };
  ScatterPair p(d, sraw.cq, other, other, other, /*a_sig_all=*/true);
  ASSERT_TRUE(p.a);
  post(p.a, IBV_WR_RDMA_READ, 16, 0);
  mlx5_cqe64 c = sraw.next();
  EXPECT_EQ(kOp(c), MLX5_CQE_REQ);
  EXPECT_TRUE(c.op_own & MLX5_INLINE_SCATTER_32);
  EXPECT_EQ(memcmp(&c, remote, 16), 0);
  EXPECT_EQ(local[0], 0xee);  // not written: the driver copies it from the CQE
  uint64_t before;
  memcpy(&before, remote + 32, 8);
  post(p.a, IBV_WR_ATOMIC_FETCH_AND_ADD, 8, 0);
  c = sraw.next();
  EXPECT_TRUE(c.op_own & MLX5_INLINE_SCATTER_32);
  uint64_t in_cqe;
  memcpy(&in_cqe, &c, 8);
  EXPECT_EQ(in_cqe, bswap64(before));  // as on the wire: big-endian, whatever the mode
  EXPECT_EQ(local[0], 0xee);
  post(p.a, IBV_WR_RDMA_READ, 48, 0);  // more than 32 bytes: memory
  c = sraw.next();
  EXPECT_FALSE(c.op_own & MLX5_INLINE_SCATTER_32);
  EXPECT_EQ(memcmp(local, remote, 48), 0);
  // Without sq_sig_all (and without ALLOW_SCATTER_TO_CQE) a signaled read goes to memory.
  ScatterPair n(d, sraw.cq, other, other, other, false);
  ASSERT_TRUE(n.a);
  post(n.a, IBV_WR_RDMA_READ, 16, IBV_SEND_SIGNALED);
  c = sraw.next();
  EXPECT_FALSE(c.op_own & MLX5_INLINE_SCATTER_32);
  EXPECT_EQ(memcmp(local, remote, 16), 0);
  // MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE: signaled ones scatter without sq_sig_all.
  ScatterPair al(d, sraw.cq, other, other, other, false, MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE);
  ASSERT_TRUE(al.a);
  post(al.a, IBV_WR_RDMA_READ, 16, IBV_SEND_SIGNALED);
  c = sraw.next();
  EXPECT_TRUE(c.op_own & MLX5_INLINE_SCATTER_32);
  // Through ibv_poll_cq the driver copies the result to the local buffer.
  ScatterPair q(d, polled, other, other, other, true);
  ASSERT_TRUE(q.a);
  post(q.a, IBV_WR_RDMA_READ, 16, 0);
  ibv_wc wc = wait_wc(polled);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.byte_len, 16u);
  EXPECT_EQ(memcmp(local, remote, 16), 0);
  // MLX5_SCATTER_TO_CQE=0 (read by the driver when the QP is created) turns it off.
  setenv("MLX5_SCATTER_TO_CQE", "0", 1);
  ScatterPair e(d, sraw.cq, other, other, other, true);
  unsetenv("MLX5_SCATTER_TO_CQE");
  ASSERT_TRUE(e.a);
  post(e.a, IBV_WR_RDMA_READ, 16, 0);
  c = sraw.next();
  EXPECT_FALSE(c.op_own & MLX5_INLINE_SCATTER_32);
  EXPECT_EQ(memcmp(local, remote, 16), 0);
}

// F9: messages beyond 1 MiB up to log_max_msg 30 (see run_big_messages).
TEST(LargeMessages, RdmaWriteReadAndWriteImmOf4MiB) {
  EXPECT_EQ(run_big_messages(false), 0);
  Child c("bigmsg", {"SOFTHCA_DIRECT=0"});
  EXPECT_EQ(c.wait(), 0) << "message path";
}

TEST(LargeMessages, LogMaxMsg20LimitsMessagesTo1MiB) {
  Child c("bigmsg20", {"SOFTHCA_LOG_MAX_MSG=20"});
  EXPECT_EQ(c.wait(), 0);
}

}  // namespace

int main(int argc, char** argv) {
  return softhca_test_main(argc, argv, "fidelity-test", [](const char* mode) {
    if (!strcmp(mode, "ident")) return run_ident_peer();
    if (!strcmp(mode, "sleeper")) return run_sleeper();
    if (!strcmp(mode, "start")) return Dev().ctx ? 0 : 2;
    if (!strcmp(mode, "memlock")) return run_memlock();
    if (!strcmp(mode, "bigmsg")) return run_big_messages(false);
    if (!strcmp(mode, "bigmsg20")) return run_big_messages(true);
    return 64;
  });
}
