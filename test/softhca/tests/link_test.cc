// Link personalities (SOFTHCA_LINK, from --link=ib|ib-grh|roce): what a program sees of the port
// and what the model accepts, as rdma-core's mlx5 provider and the kernel behave on such ports.
//  * ib-grh (an SR-IOV virtual function): port flag IBV_QPF_GRH_REQUIRED; ibv_create_ah and a QP
//    address without a GRH fail with EINVAL; a datagram whose vector has no GRH completes in error.
//  * roce: Ethernet, LID 0, GIDs of RoCE v1 and v2 per IP address; every address has a GRH; the
//    provider's vector has the GRH bit clear (reserved on RoCE), the UDP source port in rlid, the
//    priority in bits 1-3 of stat_rate_sl and the destination MAC; a frame to another MAC is lost.
#include "common.h"

namespace {

std::string g_link = "ib";
bool is_roce() { return g_link == "roce"; }
bool grh_required() { return g_link != "ib"; }

ibv_port_attr port_of(Dev& d) {
  ibv_port_attr p{};
  EXPECT_EQ(ibv_query_port(d.ctx, 1, &p), 0);
  return p;
}

// The GID programs use to reach this port: RoCE the v2 GID of the IPv4 address, else GID 0.
int peer_gid_index() { return is_roce() ? 3 : 0; }

ibv_ah_attr address_of(Dev& d, bool global, uint8_t sl = 0, uint8_t tclass = 0) {
  ibv_ah_attr a{};
  a.port_num = 1;
  a.dlid = port_of(d).lid;
  a.sl = sl;
  if (global) {
    a.is_global = 1;
    a.grh.sgid_index = uint8_t(peer_gid_index());
    a.grh.hop_limit = 64;
    a.grh.traffic_class = tclass;
    EXPECT_EQ(ibv_query_gid(d.ctx, 1, peer_gid_index(), &a.grh.dgid), 0);
  }
  return a;
}

mlx5_wqe_av* vector_of(ibv_ah* ah) {
  mlx5dv_ah dv{};
  mlx5dv_obj obj{};
  obj.ah.in = ah;
  obj.ah.out = &dv;
  return mlx5dv_init_obj(&obj, MLX5DV_OBJ_AH) == 0 ? dv.av : nullptr;
}

// A completion within `ms`, or false.
bool poll_for(ibv_cq* cq, ibv_wc* wc, int ms) {
  for (int i = 0; i < ms * 10; ++i) {
    if (ibv_poll_cq(cq, 1, wc) == 1) return true;
    usleep(100);
  }
  return false;
}

TEST(Link, PortAttributes) {
  Dev d;
  ASSERT_TRUE(d.pd);
  ibv_port_attr p = port_of(d);
  EXPECT_EQ(p.link_layer, is_roce() ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND);
  if (is_roce()) EXPECT_EQ(p.lid, 0);
  else EXPECT_NE(p.lid, 0);
  EXPECT_EQ((p.flags & IBV_QPF_GRH_REQUIRED) != 0, g_link == "ib-grh");
  EXPECT_EQ(p.gid_tbl_len, is_roce() ? 4 : 1);
}

TEST(Link, GidTable) {
  Dev d;
  ASSERT_TRUE(d.pd);
  const int n = port_of(d).gid_tbl_len;
  for (int i = 0; i < n; ++i) {
    ibv_gid_entry e{};
    ASSERT_EQ(ibv_query_gid_ex(d.ctx, 1, uint32_t(i), &e, 0), 0) << i;
    EXPECT_EQ(e.gid_index, uint32_t(i));
    if (!is_roce()) {
      EXPECT_EQ(e.gid_type, uint32_t(IBV_GID_TYPE_IB));
      EXPECT_EQ(e.gid.raw[0], 0xfe);
      continue;
    }
    // The kernel's order: per IP address a RoCE v1 then a v2 entry; link-local first.
    EXPECT_EQ(e.gid_type, uint32_t(i % 2 ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_ROCE_V1)) << i;
    static const uint8_t v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (i < 2) EXPECT_TRUE(e.gid.raw[0] == 0xfe && e.gid.raw[1] == 0x80) << i;
    else EXPECT_EQ(memcmp(e.gid.raw, v4_mapped, 12), 0) << i;
    EXPECT_NE(e.ndev_ifindex, 0u);  // RoCE GIDs belong to a netdev
  }
  ibv_gid g;
  EXPECT_NE(ibv_query_gid(d.ctx, 1, n, &g), 0);
  ibv_gid_entry table[8];
  EXPECT_EQ(ibv_query_gid_table(d.ctx, table, 8, 0), n);
}

TEST(Link, AddressHandleNeedsGrhWhereThePortDoes) {
  Dev d;
  ASSERT_TRUE(d.pd);
  ibv_ah_attr lid_only = address_of(d, false);
  errno = 0;
  ibv_ah* ah = ibv_create_ah(d.pd, &lid_only);
  if (grh_required()) {
    EXPECT_EQ(ah, nullptr);
    EXPECT_EQ(errno, EINVAL);
  } else {
    EXPECT_NE(ah, nullptr);
  }
  if (ah) ibv_destroy_ah(ah);
  ibv_ah_attr global = address_of(d, true);
  ah = ibv_create_ah(d.pd, &global);
  EXPECT_NE(ah, nullptr);
  if (ah) ibv_destroy_ah(ah);
  global.grh.sgid_index = uint8_t(port_of(d).gid_tbl_len);  // no such source GID
  EXPECT_EQ(ibv_create_ah(d.pd, &global), nullptr);
}

TEST(Link, AddressVectorAsTheProviderBuildsIt) {
  Dev d;
  ASSERT_TRUE(d.pd);
  ibv_ah_attr a = address_of(d, true, 5, 0x6a);
  ibv_ah* ah = ibv_create_ah(d.pd, &a);
  ASSERT_NE(ah, nullptr);
  mlx5_wqe_av* av = vector_of(ah);
  ASSERT_NE(av, nullptr);
  const uint32_t grh_gid_fl = be32toh(av->grh_gid_fl);
  EXPECT_EQ((grh_gid_fl >> 20) & 0xff, uint32_t(peer_gid_index()));
  EXPECT_EQ(av->tclass, 0x6a);
  EXPECT_EQ(memcmp(av->rgid, a.grh.dgid.raw, 16), 0);
  if (is_roce()) {
    EXPECT_EQ(grh_gid_fl & (1u << 30), 0u);  // reserved on RoCE: the GRH is implied
    EXPECT_GE(be16toh(av->rlid), 0xc000);  // RoCE v2: the UDP source port
    EXPECT_EQ(av->stat_rate_sl, (5 & 7) << 1);
    static const uint8_t zero[6] = {};
    EXPECT_NE(memcmp(av->rmac, zero, 6), 0);
  } else {
    EXPECT_NE(grh_gid_fl & (1u << 30), 0u);
    EXPECT_EQ(be16toh(av->rlid), port_of(d).lid);
    EXPECT_EQ(av->stat_rate_sl, 5);
  }
  ibv_destroy_ah(ah);
}

TEST(Link, QpAddressNeedsGrhWhereThePortDoes) {
  Dev d;
  ASSERT_TRUE(d.pd);
  ibv_cq* cq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
  ibv_qp* qp = make_rc(d, cq);
  ASSERT_TRUE(qp);
  ibv_qp_attr m{};
  m.qp_state = IBV_QPS_RTR;
  m.path_mtu = IBV_MTU_1024;
  m.dest_qp_num = qp->qp_num;
  m.max_dest_rd_atomic = 1;
  m.min_rnr_timer = 1;
  m.ah_attr = address_of(d, false);
  const int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  EXPECT_EQ(ibv_modify_qp(qp, &m, mask), grh_required() ? EINVAL : 0);
  if (grh_required()) {
    m.ah_attr = address_of(d, true);
    EXPECT_EQ(ibv_modify_qp(qp, &m, mask), 0);
  }
  ibv_destroy_qp(qp);
  ibv_destroy_cq(cq);
}

// Two RC QPs of this process connected through GRH addresses: an RDMA write arrives.
TEST(Link, RcWriteOverGrhAddresses) {
  Dev d;
  ASSERT_TRUE(d.pd);
  ibv_cq* cq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
  ibv_qp* a = make_rc(d, cq);
  ibv_qp* b = make_rc(d, cq);
  ASSERT_TRUE(a && b);
  for (auto [qp, peer] : {std::pair{a, b}, std::pair{b, a}}) {
    ibv_qp_attr m{};
    m.qp_state = IBV_QPS_RTR;
    m.path_mtu = IBV_MTU_4096;
    m.dest_qp_num = peer->qp_num;
    m.max_dest_rd_atomic = 1;
    m.min_rnr_timer = 1;
    m.ah_attr = address_of(d, true, 3, 106);
    ASSERT_EQ(ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                        IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                                        IBV_QP_MIN_RNR_TIMER),
              0);
    m.qp_state = IBV_QPS_RTS;
    m.timeout = 10;
    m.retry_cnt = 2;
    m.rnr_retry = 7;
    m.max_rd_atomic = 1;
    ASSERT_EQ(ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
                                        IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                        IBV_QP_MAX_QP_RD_ATOMIC),
              0);
  }
  static uint64_t src = 0x1122334455667788ull, dst = 0;
  ibv_mr* smr = ibv_reg_mr(d.pd, &src, 8, IBV_ACCESS_LOCAL_WRITE);
  ibv_mr* dmr = ibv_reg_mr(d.pd, &dst, 8, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  ibv_sge s{uint64_t(uintptr_t(&src)), 8, smr->lkey};
  ibv_send_wr w{}, *bad;
  w.opcode = IBV_WR_RDMA_WRITE;
  w.send_flags = IBV_SEND_SIGNALED;
  w.sg_list = &s;
  w.num_sge = 1;
  w.wr.rdma.remote_addr = uint64_t(uintptr_t(&dst));
  w.wr.rdma.rkey = dmr->rkey;
  ASSERT_EQ(ibv_post_send(a, &w, &bad), 0);
  EXPECT_EQ(wait_wc(cq).status, IBV_WC_SUCCESS);
  EXPECT_EQ(dst, src);
  ibv_destroy_qp(a);
  ibv_destroy_qp(b);
  ibv_dereg_mr(smr);
  ibv_dereg_mr(dmr);
  ibv_destroy_cq(cq);
}

// A datagram whose vector a program altered: ib-grh without the GRH bit completes in error; a
// RoCE vector with another port's MAC leaves but arrives nowhere; plain InfiniBand delivers it
// without a GRH. With the vector as the provider made it, every link delivers (RoCE: with the
// 40-byte GRH in front, naming the GIDs).
TEST(Link, DatagramsFollowTheirVector) {
  Dev d;
  ASSERT_TRUE(d.pd);
  ibv_cq* scq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
  ibv_cq* rcq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
  ibv_qp* rx = make_ud(d, rcq, 8);
  ibv_qp* tx = make_ud(d, scq, 8);
  ASSERT_TRUE(rx && tx);
  static uint8_t buf[2][128];
  ibv_mr* mr = ibv_reg_mr(d.pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
  for (int i = 0; i < 2; ++i) {
    ibv_sge rs{uint64_t(uintptr_t(buf[i])), 128, mr->lkey};
    ibv_recv_wr rw{}, *rbad;
    rw.wr_id = uint64_t(i);
    rw.sg_list = &rs;
    rw.num_sge = 1;
    ASSERT_EQ(ibv_post_recv(rx, &rw, &rbad), 0);
  }
  ibv_ah_attr aa = address_of(d, true);
  ibv_ah* ah = ibv_create_ah(d.pd, &aa);
  ASSERT_NE(ah, nullptr);
  mlx5_wqe_av* av = vector_of(ah);
  ASSERT_NE(av, nullptr);
  const mlx5_wqe_av good = *av;
  if (is_roce()) av->rmac[5] ^= 0x55;
  else av->grh_gid_fl &= htobe32(~(1u << 30));
  uint32_t value = 0xfeedbeef;
  ibv_sge s{uint64_t(uintptr_t(&value)), 4, 0};
  ibv_send_wr w{}, *bad;
  w.opcode = IBV_WR_SEND;
  w.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
  w.sg_list = &s;
  w.num_sge = 1;
  w.wr.ud.ah = ah;
  w.wr.ud.remote_qpn = rx->qp_num;
  w.wr.ud.remote_qkey = 0x11111111;
  ASSERT_EQ(ibv_post_send(tx, &w, &bad), 0);
  ibv_wc wc{};
  ASSERT_TRUE(poll_for(scq, &wc, 5000));
  if (g_link == "ib-grh") {
    EXPECT_EQ(wc.status, IBV_WC_LOC_QP_OP_ERR);
    EXPECT_FALSE(poll_for(rcq, &wc, 200));
  } else if (is_roce()) {
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_FALSE(poll_for(rcq, &wc, 200));  // another MAC: nobody here receives it
  } else {
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    ASSERT_TRUE(poll_for(rcq, &wc, 5000));
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_FALSE(wc.wc_flags & IBV_WC_GRH);
  }
  if (g_link == "ib-grh") {  // the error took the sender to the error state: a new one
    ibv_destroy_qp(tx);
    tx = make_ud(d, scq, 8);
    ASSERT_TRUE(tx);
  }
  *av = good;
  ASSERT_EQ(ibv_post_send(tx, &w, &bad), 0);
  ASSERT_TRUE(poll_for(scq, &wc, 5000));
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  ASSERT_TRUE(poll_for(rcq, &wc, 5000));
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_TRUE(wc.wc_flags & IBV_WC_GRH);
  const auto* grh = reinterpret_cast<const ibv_grh*>(buf[wc.wr_id]);
  EXPECT_EQ(memcmp(grh->dgid.raw, aa.grh.dgid.raw, 16), 0);
  uint32_t got;
  memcpy(&got, buf[wc.wr_id] + 40, 4);
  EXPECT_EQ(got, 0xfeedbeefu);
  ibv_destroy_ah(ah);
  ibv_destroy_qp(tx);
  ibv_destroy_qp(rx);
  ibv_dereg_mr(mr);
  ibv_destroy_cq(scq);
  ibv_destroy_cq(rcq);
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (!strncmp(argv[i], "--link=", 7)) setenv("SOFTHCA_LINK", argv[i] + 7, 1);
  if (const char* l = getenv("SOFTHCA_LINK")) g_link = l;
  return softhca_test_main(argc, argv, "link-test", [](const char*) { return 64; });
}
