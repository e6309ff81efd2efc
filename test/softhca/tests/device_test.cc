// Devices and ports (issue item 2): this binary runs with SOFTHCA_NUM_DEVICES=3 and
// SOFTHCA_NUM_PORTS=2 (set by main()), checks what programs see of them and that LIDs and GIDs
// really address ports: traffic between a port of one device and a port of another.
#include "test/softhca/tests/common.h"

#include <set>

namespace {

constexpr int kDevices = 3, kPorts = 2;

uint32_t cap_field(const uint8_t* cap, unsigned off, unsigned bits) {
  uint32_t w;
  memcpy(&w, cap + off / 32 * 4, 4);
  return (bswap32(w) >> (32 - off % 32 - bits)) & ((1u << bits) - 1);
}

// QUERY_HCA_CAP through DevX; op_mod type 0 = general, 3 = atomic (current values).
bool query_hca_cap(ibv_context* ctx, unsigned type, uint8_t (&out)[0x10 + 0x100]) {
  uint32_t in[4] = {bswap32(0x100u << 16), bswap32((type << 1) | 1), 0, 0};
  return mlx5dv_devx_general_cmd(ctx, in, sizeof in, out, sizeof out) == 0;
}

TEST(Devices, CountNamesPortsLidsGids) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ASSERT_NE(list, nullptr);
  ASSERT_EQ(n, kDevices);
  std::set<uint16_t> lids;
  std::set<std::string> gids;
  std::set<uint64_t> guids;
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(std::string(ibv_get_device_name(list[i])), "mlx5_" + std::to_string(i));
    guids.insert(ibv_get_device_guid(list[i]));
    ibv_context* ctx = ibv_open_device(list[i]);
    ASSERT_NE(ctx, nullptr);
    EXPECT_TRUE(mlx5dv_is_supported(list[i]));
    ibv_device_attr a{};
    ASSERT_EQ(ibv_query_device(ctx, &a), 0);
    EXPECT_EQ(a.phys_port_cnt, kPorts);
    EXPECT_EQ(a.vendor_id, 0x02c9u);
    EXPECT_EQ(a.vendor_part_id, 4123u);
    for (int p = 1; p <= kPorts; ++p) {
      ibv_port_attr pa{};
      ASSERT_EQ(ibv_query_port(ctx, uint8_t(p), &pa), 0);
      EXPECT_EQ(pa.state, IBV_PORT_ACTIVE);
      EXPECT_EQ(pa.link_layer, IBV_LINK_LAYER_INFINIBAND);
      EXPECT_EQ(pa.active_mtu, IBV_MTU_4096);
      EXPECT_NE(pa.lid, 0);
      EXPECT_GE(pa.gid_tbl_len, 1);
      lids.insert(pa.lid);
      ibv_gid g{};
      ASSERT_EQ(ibv_query_gid(ctx, uint8_t(p), 0, &g), 0);
      EXPECT_EQ(g.raw[0], 0xfe);  // link-local fe80::/64 with the port GUID
      EXPECT_EQ(g.raw[1], 0x80);
      gids.emplace(reinterpret_cast<const char*>(g.raw), 16);
      uint16_t pkey = 0;
      ASSERT_EQ(ibv_query_pkey(ctx, uint8_t(p), 0, &pkey), 0);
      EXPECT_EQ(ntohs(pkey), 0xffff);  // default partition, full member
    }
    ibv_port_attr pa;
    EXPECT_NE(ibv_query_port(ctx, kPorts + 1, &pa), 0);  // no such port
    ibv_gid g;
    EXPECT_NE(ibv_query_gid(ctx, kPorts + 1, 0, &g), 0);
    uint8_t out[0x10 + 0x100];
    ASSERT_TRUE(query_hca_cap(ctx, 0, out));
    EXPECT_EQ(cap_field(out + 0x10, 0x1b8, 8), unsigned(kPorts));  // num_ports
    EXPECT_EQ(ibv_close_device(ctx), 0);
  }
  ibv_free_device_list(list);
  EXPECT_EQ(lids.size(), size_t(kDevices * kPorts));  // every port its own LID
  EXPECT_EQ(gids.size(), size_t(kDevices * kPorts));  // and its own GID
  EXPECT_EQ(guids.size(), size_t(kDevices));
}

// What programs (UCX, hoshmem) look at before they use DC and extended atomics: the vendor and part
// ids, HCA atomics in ibv_query_device_ex, mlx5dv support and the DevX capabilities, on every
// device. The DC transport itself is then exercised across devices below.
TEST(Devices, AdvertiseDcAndExtendedAtomics) {
  for (int i = 0; i < kDevices; ++i) {
    Dev d(i);
    ASSERT_NE(d.ctx, nullptr);
    ibv_device_attr_ex a{};
    ASSERT_EQ(ibv_query_device_ex(d.ctx, nullptr, &a), 0);
    EXPECT_EQ(a.orig_attr.atomic_cap, IBV_ATOMIC_HCA);
    EXPECT_GT(a.orig_attr.max_qp_rd_atom, 0);
    EXPECT_EQ(a.pci_atomic_caps.fetch_add, 0u);  // not coherent with CPU atomics: not claimed
    mlx5dv_context dv{};
    dv.comp_mask = MLX5DV_CONTEXT_MASK_NUM_LAG_PORTS;
    ASSERT_EQ(mlx5dv_query_device(d.ctx, &dv), 0);
    EXPECT_TRUE(dv.flags & MLX5DV_CONTEXT_FLAGS_CQE_V1);
    uint8_t out[0x10 + 0x100];
    ASSERT_TRUE(query_hca_cap(d.ctx, 0, out));
    EXPECT_EQ(cap_field(out + 0x10, 0x21a, 1), 1u);  // dct
    EXPECT_EQ(cap_field(out + 0x10, 0x200, 1), 1u);  // compact_address_vector: 16-byte AVs
    EXPECT_EQ(cap_field(out + 0x10, 0x21e, 1), 1u);  // atomic
    ASSERT_TRUE(query_hca_cap(d.ctx, 3, out));
    EXPECT_EQ(cap_field(out + 0x10, 0x90, 16), 0xfu);       // CS, FA, masked CS, masked FA
    EXPECT_EQ(cap_field(out + 0x10, 0xb0, 16) & 0xc, 0xcu);  // 4 and 8 bytes on RC
    EXPECT_EQ(cap_field(out + 0x10, 0xd0, 16) & 0xc, 0xcu);  // and on DC
  }
}

// An RC QP bound to `port`, in INIT.
ibv_qp* rc_on_port(Dev& d, ibv_cq* cq, uint8_t port) {
  ibv_qp_init_attr ia{};
  ia.send_cq = ia.recv_cq = cq;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = 8;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ia.qp_type = IBV_QPT_RC;
  ibv_qp* qp = ibv_create_qp(d.pd, &ia);
  if (!qp) return nullptr;
  ibv_qp_attr m{};
  m.qp_state = IBV_QPS_INIT;
  m.port_num = port;
  m.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    return nullptr;
  return qp;
}

int rc_connect(ibv_qp* qp, uint8_t port, uint32_t remote, uint16_t dlid) {
  ibv_qp_attr m{};
  m.qp_state = IBV_QPS_RTR;
  m.path_mtu = IBV_MTU_4096;
  m.dest_qp_num = remote;
  m.max_dest_rd_atomic = 1;
  m.min_rnr_timer = 1;
  m.ah_attr.dlid = dlid;
  m.ah_attr.port_num = port;
  if (int r = ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                        IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    return r;
  m.qp_state = IBV_QPS_RTS;
  m.timeout = 8;
  m.retry_cnt = 1;
  m.rnr_retry = 7;
  m.max_rd_atomic = 1;
  return ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                   IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

uint16_t lid_of_port(Dev& d, uint8_t port) {
  ibv_port_attr p{};
  ibv_query_port(d.ctx, port, &p);
  return p.lid;
}

// Port 1 of mlx5_0 writes into memory behind port 2 of mlx5_2; a QP addressed with the LID of the
// other port of that device reaches nothing (retry exceeded), as on a real subnet.
TEST(Devices, RcAcrossDevicesAndPortsByLid) {
  Dev d0(0), d2(2);
  ASSERT_TRUE(d0.pd && d2.pd);
  ibv_cq* cq0 = ibv_create_cq(d0.ctx, 16, nullptr, nullptr, 0);
  ibv_cq* cq2 = ibv_create_cq(d2.ctx, 16, nullptr, nullptr, 0);
  ibv_qp* a = rc_on_port(d0, cq0, 1);
  ibv_qp* b = rc_on_port(d2, cq2, 2);
  ibv_qp* lost = rc_on_port(d0, cq0, 1);
  ASSERT_TRUE(a && b && lost);
  ASSERT_EQ(rc_connect(a, 1, b->qp_num, lid_of_port(d2, 2)), 0);
  ASSERT_EQ(rc_connect(b, 2, a->qp_num, lid_of_port(d0, 1)), 0);
  ASSERT_EQ(rc_connect(lost, 1, b->qp_num, lid_of_port(d2, 1)), 0);  // right QPN, wrong port
  static uint64_t src = 0x5eed, dst;
  ibv_mr* ms = ibv_reg_mr(d0.pd, &src, 8, IBV_ACCESS_LOCAL_WRITE);
  ibv_mr* md = ibv_reg_mr(d2.pd, &dst, 8, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  ASSERT_TRUE(ms && md);
  auto write = [&](ibv_qp* qp) {
    ibv_sge s{uint64_t(uintptr_t(&src)), 8, ms->lkey};
    ibv_send_wr wr{}, *bad;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = uint64_t(uintptr_t(&dst));
    wr.wr.rdma.rkey = md->rkey;
    EXPECT_EQ(ibv_post_send(qp, &wr, &bad), 0);
    return wait_wc(cq0).status;
  };
  EXPECT_EQ(write(a), IBV_WC_SUCCESS);
  EXPECT_EQ(dst, 0x5eedu);
  dst = 0;
  EXPECT_EQ(write(lost), IBV_WC_RETRY_EXC_ERR);
  EXPECT_EQ(dst, 0u);
  ibv_destroy_qp(a);
  ibv_destroy_qp(b);
  ibv_destroy_qp(lost);
  ibv_dereg_mr(ms);
  ibv_dereg_mr(md);
  ibv_destroy_cq(cq0);
  ibv_destroy_cq(cq2);
}

// UD from port 2 of mlx5_1 to port 1 of mlx5_0 with a GRH: the receiver sees the sender's port
// GID as the source and its own port GID as the destination, and the sender's LID.
TEST(Devices, UdAcrossDevicesWithGids) {
  Dev d0(0), d1(1);
  ASSERT_TRUE(d0.pd && d1.pd);
  ibv_cq* cq0 = ibv_create_cq(d0.ctx, 16, nullptr, nullptr, 0);
  ibv_cq* cq1 = ibv_create_cq(d1.ctx, 16, nullptr, nullptr, 0);
  ibv_qp* rx = make_ud(d0, cq0, 8);  // port 1
  ibv_qp_init_attr ia{};
  ia.send_cq = ia.recv_cq = cq1;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = 8;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ia.cap.max_inline_data = 64;
  ia.qp_type = IBV_QPT_UD;
  ibv_qp* tx = ibv_create_qp(d1.pd, &ia);
  ASSERT_TRUE(rx && tx);
  ibv_qp_attr m{};
  m.qp_state = IBV_QPS_INIT;
  m.port_num = 2;
  m.qkey = 0x11111111;
  ASSERT_EQ(ibv_modify_qp(tx, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY), 0);
  m.qp_state = IBV_QPS_RTR;
  ASSERT_EQ(ibv_modify_qp(tx, &m, IBV_QP_STATE), 0);
  m.qp_state = IBV_QPS_RTS;
  ASSERT_EQ(ibv_modify_qp(tx, &m, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
  static uint8_t buf[128];
  ibv_mr* mr = ibv_reg_mr(d0.pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
  ibv_sge rs{uint64_t(uintptr_t(buf)), sizeof buf, mr->lkey};
  ibv_recv_wr rw{}, *rbad;
  rw.sg_list = &rs;
  rw.num_sge = 1;
  ASSERT_EQ(ibv_post_recv(rx, &rw, &rbad), 0);
  ibv_gid rx_gid, tx_gid;
  ASSERT_EQ(ibv_query_gid(d0.ctx, 1, 0, &rx_gid), 0);
  ASSERT_EQ(ibv_query_gid(d1.ctx, 2, 0, &tx_gid), 0);
  ibv_ah_attr aa{};
  aa.dlid = lid_of_port(d0, 1);
  aa.port_num = 2;
  aa.is_global = 1;
  aa.grh.dgid = rx_gid;
  aa.grh.hop_limit = 1;
  ibv_ah* ah = ibv_create_ah(d1.pd, &aa);
  ASSERT_NE(ah, nullptr);
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
  EXPECT_EQ(wait_wc(cq1).status, IBV_WC_SUCCESS);
  ibv_wc wc = wait_wc(cq0);
  ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_TRUE(wc.wc_flags & IBV_WC_GRH);
  EXPECT_EQ(wc.src_qp, tx->qp_num);
  EXPECT_EQ(wc.slid, lid_of_port(d1, 2));
  auto* grh = reinterpret_cast<ibv_grh*>(buf);
  EXPECT_EQ(memcmp(grh->sgid.raw, tx_gid.raw, 16), 0);
  EXPECT_EQ(memcmp(grh->dgid.raw, rx_gid.raw, 16), 0);
  uint32_t got;
  memcpy(&got, buf + 40, 4);
  EXPECT_EQ(got, 0xfeedbeefu);
  ibv_destroy_ah(ah);
  ibv_destroy_qp(tx);
  ibv_destroy_qp(rx);
  ibv_dereg_mr(mr);
  ibv_destroy_cq(cq0);
  ibv_destroy_cq(cq1);
}

// Child "list": prints how many devices it sees.
int run_list_child() {
  int n = -1;
  ibv_device** list = ibv_get_device_list(&n);
  printf("%d\n", n);
  fflush(stdout);
  if (list) ibv_free_device_list(list);
  return 0;
}

int child_devices(const std::vector<std::string>& env, int* status) {
  Child c("list", env);
  int n = -1;
  if (fscanf(c.out, "%d", &n) != 1) n = -1;
  *status = c.wait();
  return n;
}

TEST(Devices, CountFollowsKnobAndBadValuesAreRejected) {
  int st;
  EXPECT_EQ(child_devices({"SOFTHCA_NUM_DEVICES=0"}, &st), 0);
  EXPECT_EQ(st, 0);
  EXPECT_EQ(child_devices({"SOFTHCA_NUM_DEVICES=5"}, &st), 5);
  EXPECT_EQ(st, 0);
  EXPECT_EQ(child_devices({"SOFTHCA_NUM_DEVICES=9"}, &st), -1);  // rejected with its range
  EXPECT_EQ(st, 1);
  EXPECT_EQ(child_devices({"SOFTHCA_NUM_PORTS=3"}, &st), -1);
  EXPECT_EQ(st, 1);
}

}  // namespace

int main(int argc, char** argv) {
  setenv("SOFTHCA_NUM_DEVICES", std::to_string(kDevices).c_str(), 0);
  setenv("SOFTHCA_NUM_PORTS", std::to_string(kPorts).c_str(), 0);
  return softhca_test_main(argc, argv, "device-test", [](const char* mode) {
    if (!strcmp(mode, "list")) return run_list_child();
    return 64;
  });
}
