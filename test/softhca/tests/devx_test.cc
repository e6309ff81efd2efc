// DevX objects of the model, driven as a DevX program drives ConnectX: command bytes built with
// rdma-core's DEVX_SET/DEVX_GET over the PRM layouts (src/prm.h, checked here against the PRM's
// bit offsets), queues and doorbell records in umems, WQEs written into the rings, doorbells
// stored to a DevX UAR, CQEs polled. Covers QUERY_HCA_CAP, CREATE_QP (RC, DCI), the QP state
// transitions, QUERY_QP, DESTROY_QP, CREATE/QUERY/DRAIN/DESTROY_DCT, CREATE/QUERY/DESTROY_RMP,
// event subscription, and the statuses of bad commands.
#include "common.h"

#include <sys/mman.h>

#include "../src/prm.h"

namespace {

ibv_context* devx_ctx(bool devx = true) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list || n < 1) return nullptr;
  mlx5dv_context_attr a{};
  a.flags = devx ? MLX5DV_CONTEXT_FLAGS_DEVX : 0;
  ibv_context* c = mlx5dv_open_device(list[0], &a);
  ibv_free_device_list(list);
  return c;
}

uint32_t pdn_of(ibv_pd* pd) {
  mlx5dv_pd p{};
  mlx5dv_obj o{};
  o.pd.in = pd;
  o.pd.out = &p;
  mlx5dv_init_obj(&o, MLX5DV_OBJ_PD);
  return p.pdn;
}

uint32_t cqn_of(ibv_cq* cq) {
  mlx5dv_cq c{};
  mlx5dv_obj o{};
  o.cq.in = cq;
  o.cq.out = &c;
  mlx5dv_init_obj(&o, MLX5DV_OBJ_CQ);
  return c.cqn;
}

// One device context with what DevX objects need: PD, CQ, UAR, and umem-backed memory.
struct Env {
  ibv_context* ctx = devx_ctx();
  ibv_pd* pd = ctx ? ibv_alloc_pd(ctx) : nullptr;
  ibv_cq* cq = ctx ? ibv_create_cq(ctx, 256, nullptr, nullptr, 0) : nullptr;
  mlx5dv_devx_uar* uar = ctx ? mlx5dv_devx_alloc_uar(ctx, 0) : nullptr;
  uint16_t lid = 0;
  Env() {
    ibv_port_attr p{};
    if (ctx) ibv_query_port(ctx, 1, &p);
    lid = p.lid;
  }
  ~Env() {
    if (uar) mlx5dv_devx_free_uar(uar);
    if (cq) ibv_destroy_cq(cq);
    if (pd) ibv_dealloc_pd(pd);
    if (ctx) ibv_close_device(ctx);
  }
};

struct Umem {
  uint8_t* buf = nullptr;
  size_t len = 0;
  mlx5dv_devx_umem* u = nullptr;
  Umem(ibv_context* c, size_t n) : len(n) {
    buf = static_cast<uint8_t*>(mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    u = mlx5dv_devx_umem_reg(c, buf, n, IBV_ACCESS_LOCAL_WRITE);
  }
  ~Umem() {
    if (u) mlx5dv_devx_umem_dereg(u);
    munmap(buf, len);
  }
  uint32_t id() const { return u->umem_id; }
};

// A DevX RC QP or DCI: SQ of 64 basic blocks, and (rq_type regular) 16 receive WQEs of 32 bytes
// in front of it in the WQ umem; the doorbell record in its own umem.
struct DevxQp {
  Env& e;
  Umem wq, db;
  mlx5dv_devx_obj* obj = nullptr;
  uint32_t qpn = 0;
  uint32_t sq_pi = 0, rq_pi = 0;
  bool regular_rq;
  uint8_t out[DEVX_ST_SZ_BYTES(sh_qp_out)] = {};
  DevxQp(Env& env, uint8_t st, uint32_t srqn = 0, bool rq = true, uint32_t uidx = 0)
      : e(env), wq(env.ctx, 16384), db(env.ctx, 4096), regular_rq(rq && !srqn) {
    uint8_t in[DEVX_ST_SZ_BYTES(sh_qp_in)] = {};
    DEVX_SET(sh_qp_in, in, opcode, SH_CMD_CREATE_QP);
    void* c = DEVX_ADDR_OF(sh_qp_in, in, qpc);
    DEVX_SET(sh_qpc, c, st, st);
    DEVX_SET(sh_qpc, c, pm_state, 3);  // migrated
    DEVX_SET(sh_qpc, c, pd, pdn_of(e.pd));
    DEVX_SET(sh_qpc, c, uar_page, e.uar->page_id);
    DEVX_SET(sh_qpc, c, user_index, uidx);
    DEVX_SET(sh_qpc, c, rq_type, srqn ? SH_RQ_SRQ : rq ? SH_RQ_REGULAR : SH_RQ_ZERO);
    DEVX_SET(sh_qpc, c, srqn_rmpn_xrqn, srqn);
    DEVX_SET(sh_qpc, c, cqn_snd, cqn_of(e.cq));
    DEVX_SET(sh_qpc, c, cqn_rcv, cqn_of(e.cq));
    DEVX_SET(sh_qpc, c, log_sq_size, 6);
    DEVX_SET(sh_qpc, c, log_rq_size, 4);
    DEVX_SET(sh_qpc, c, log_rq_stride, 1);  // 32 bytes
    DEVX_SET64(sh_qpc, c, dbr_addr, 64);
    DEVX_SET(sh_qpc, c, dbr_umem_id, db.id());
    DEVX_SET(sh_qp_in, in, wq_umem_id, wq.id());
    obj = mlx5dv_devx_obj_create(e.ctx, in, sizeof in, out, sizeof out);
    if (obj) qpn = DEVX_GET(sh_qp_out, out, qpn);
  }
  ~DevxQp() {
    if (obj) mlx5dv_devx_obj_destroy(obj);
  }
  uint32_t* dbrec() { return reinterpret_cast<uint32_t*>(db.buf + 64); }
  uint8_t* sq() { return wq.buf + (regular_rq ? 16 * 32 : 0); }
  uint8_t* rq() { return wq.buf; }
  // A state transition command with `fill` setting the QPC; returns errno, status in `status`.
  int modify(uint16_t opcode, const std::function<void(void* qpc)>& fill, uint32_t opt = 0,
             uint8_t* status = nullptr, uint32_t* syndrome = nullptr) {
    uint8_t in[DEVX_ST_SZ_BYTES(sh_qp_in)] = {};
    uint8_t o[DEVX_ST_SZ_BYTES(sh_qp_out)] = {};
    DEVX_SET(sh_qp_in, in, opcode, opcode);
    DEVX_SET(sh_qp_in, in, qpn, qpn);
    DEVX_SET(sh_qp_in, in, opt_param_mask, opt);
    if (fill) fill(DEVX_ADDR_OF(sh_qp_in, in, qpc));
    int r = mlx5dv_devx_obj_modify(obj, in, sizeof in, o, sizeof o);
    if (status) *status = uint8_t(DEVX_GET(sh_qp_out, o, status));
    if (syndrome) *syndrome = DEVX_GET(sh_qp_out, o, syndrome);
    return r;
  }
  int to_init(bool rc) {
    return modify(SH_CMD_RST2INIT_QP, [&](void* c) {
      DEVX_SET(sh_ads, DEVX_ADDR_OF(sh_qpc, c, primary_address_path), vhca_port_num, 1);
      if (rc) {
        DEVX_SET(sh_qpc, c, rre, 1);
        DEVX_SET(sh_qpc, c, rwe, 1);
        DEVX_SET(sh_qpc, c, rae, 1);
      }
    });
  }
  int to_rtr_rc(uint32_t remote, uint16_t lid) {
    return modify(SH_CMD_INIT2RTR_QP, [&](void* c) {
      DEVX_SET(sh_qpc, c, mtu, IBV_MTU_4096);
      DEVX_SET(sh_qpc, c, log_msg_max, 30);
      DEVX_SET(sh_qpc, c, remote_qpn, remote);
      void* p = DEVX_ADDR_OF(sh_qpc, c, primary_address_path);
      DEVX_SET(sh_ads, p, rlid, lid);
      DEVX_SET(sh_ads, p, vhca_port_num, 1);
      DEVX_SET(sh_qpc, c, next_rcv_psn, 0x456);  // the peer's next_send_psn
      DEVX_SET(sh_qpc, c, log_rra_max, 2);
      DEVX_SET(sh_qpc, c, min_rnr_nak, 1);
    });
  }
  int to_rtr_dci() {
    return modify(SH_CMD_INIT2RTR_QP, [&](void* c) { DEVX_SET(sh_qpc, c, mtu, IBV_MTU_4096); });
  }
  int to_rts() {
    return modify(SH_CMD_RTR2RTS_QP, [&](void* c) {
      DEVX_SET(sh_qpc, c, next_send_psn, 0x456);
      DEVX_SET(sh_qpc, c, log_sra_max, 2);
      DEVX_SET(sh_qpc, c, retry_count, 3);
      DEVX_SET(sh_qpc, c, rnr_retry, 7);
      DEVX_SET(sh_ads, DEVX_ADDR_OF(sh_qpc, c, primary_address_path), ack_timeout, 14);
    });
  }
  int query(uint8_t* o, size_t n) {
    uint8_t in[DEVX_ST_SZ_BYTES(sh_qp_in)] = {};
    DEVX_SET(sh_qp_in, in, opcode, SH_CMD_QUERY_QP);
    DEVX_SET(sh_qp_in, in, qpn, qpn);
    return mlx5dv_devx_obj_query(obj, in, 16, o, n);
  }
  // Writes one WQE (ctrl + `segs`) at the producer index, rings the doorbell record and the UAR.
  void post(uint8_t opcode, const std::vector<std::pair<const void*, size_t>>& segs, uint8_t opmod = 0) {
    uint8_t* w = sq() + size_t(sq_pi % 64) * 64;
    memset(w, 0, 64);
    size_t off = 16;
    for (auto& [p, n] : segs) {
      memcpy(w + off, p, n);
      off += n;
    }
    auto* ctrl = reinterpret_cast<mlx5_wqe_ctrl_seg*>(w);
    ctrl->opmod_idx_opcode = htobe32(uint32_t(opmod) << 24 | (sq_pi & 0xffff) << 8 | opcode);
    ctrl->qpn_ds = htobe32(qpn << 8 | uint32_t(off / 16));
    ctrl->fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE;
    sq_pi += uint32_t((off + 63) / 64);
    __atomic_store_n(&dbrec()[MLX5_SND_DBR], htobe32(sq_pi & 0xffff), __ATOMIC_RELEASE);
    uint64_t bell;
    memcpy(&bell, w, 8);
    *reinterpret_cast<volatile uint64_t*>(e.uar->reg_addr) = bell;
  }
  void post_recv(const ibv_sge& s) {
    auto* d = reinterpret_cast<mlx5_wqe_data_seg*>(rq() + size_t(rq_pi % 16) * 32);
    mlx5dv_set_data_seg(d, s.length, s.lkey, s.addr);
    d[1].lkey = htobe32(MLX5_INVALID_LKEY);
    ++rq_pi;
    __atomic_store_n(&dbrec()[MLX5_RCV_DBR], htobe32(rq_pi & 0xffff), __ATOMIC_RELEASE);
  }
};

mlx5_wqe_raddr_seg raddr(const void* a, uint32_t rkey) {
  mlx5_wqe_raddr_seg r{};
  r.raddr = htobe64(uint64_t(uintptr_t(a)));
  r.rkey = htobe32(rkey);
  return r;
}

mlx5_wqe_data_seg dseg(const void* a, uint32_t len, uint32_t lkey) {
  mlx5_wqe_data_seg d{};
  mlx5dv_set_data_seg(&d, len, lkey, uint64_t(uintptr_t(a)));
  return d;
}

// What a DevX program reads from the CQ ring itself (rdma-core's ibv_poll_cq knows only the QPs
// it created): owner bit, opcode, QPN, the WQE opcode of requester CQEs, byte count, syndrome.
struct Cqe {
  uint8_t opcode = 0xff;  // MLX5_CQE_*
  uint8_t wqe_opcode = 0, syndrome = 0;
  uint32_t qpn = 0, byte_cnt = 0;
  uint32_t srqn_uidx = 0;  // host order: the user index (CQE version 1) or SRQ number
};

struct RawCq {
  mlx5dv_cq dv{};
  uint32_t ci = 0;
  explicit RawCq(ibv_cq* cq) {
    mlx5dv_obj o{};
    o.cq.in = cq;
    o.cq.out = &dv;
    mlx5dv_init_obj(&o, MLX5DV_OBJ_CQ);
  }
  Cqe poll() {
    for (long i = 0; i < 2000000; ++i) {
      auto* c = reinterpret_cast<mlx5_cqe64*>(static_cast<uint8_t*>(dv.buf) +
                                              size_t(ci & (dv.cqe_cnt - 1)) * dv.cqe_size +
                                              dv.cqe_size - 64);
      uint8_t op_own = __atomic_load_n(&c->op_own, __ATOMIC_ACQUIRE);
      if ((op_own >> 4) != MLX5_CQE_INVALID && !(op_own & MLX5_CQE_OWNER_MASK) == !(ci & dv.cqe_cnt)) {
        Cqe r;
        r.opcode = op_own >> 4;
        r.qpn = be32toh(c->sop_drop_qpn) & 0xffffff;
        r.wqe_opcode = uint8_t(be32toh(c->sop_drop_qpn) >> 24);
        r.byte_cnt = be32toh(c->byte_cnt);
        r.srqn_uidx = be32toh(c->srqn_uidx) & 0xffffff;
        if (r.opcode == MLX5_CQE_REQ_ERR || r.opcode == MLX5_CQE_RESP_ERR)
          r.syndrome = reinterpret_cast<mlx5_err_cqe*>(c)->syndrome;
        ++ci;
        dv.dbrec[0] = htobe32(ci & 0xffffff);
        return r;
      }
      if (i > 1000) usleep(50);
    }
    ADD_FAILURE() << "no completion";
    return Cqe{};
  }
};

uint32_t hca_cap(ibv_context* c, unsigned type, unsigned bit_off, unsigned bits) {
  uint8_t in[16] = {}, out[0x1010] = {};
  in[0] = 0x01;  // QUERY_HCA_CAP (0x100)
  in[7] = uint8_t(type << 1 | 1);
  EXPECT_EQ(mlx5dv_devx_general_cmd(c, in, sizeof in, out, sizeof out), 0);
  const uint8_t* cap = out + 0x10;
  uint32_t dw;
  memcpy(&dw, cap + bit_off / 32 * 4, 4);
  dw = be32toh(dw);
  return (dw >> (32 - bits - bit_off % 32)) & ((bits == 32) ? ~0u : ((1u << bits) - 1));
}

// The layouts against the PRM's bit offsets (as mlx5_ifc.h numbers them).
TEST(DevxLayout, PrmOffsets) {
  EXPECT_EQ(__devx_bit_off(sh_qp_in, qpn), 0x48u);
  EXPECT_EQ(__devx_bit_off(sh_qp_in, opt_param_mask), 0x80u);
  EXPECT_EQ(__devx_bit_off(sh_qp_in, qpc), 0xc0u);
  EXPECT_EQ(__devx_bit_off(sh_qp_in, wq_umem_id), 0x840u);
  EXPECT_EQ(__devx_bit_off(sh_qpc, pd), 0x28u);
  EXPECT_EQ(__devx_bit_off(sh_qpc, log_sq_size), 0x51u);
  EXPECT_EQ(__devx_bit_off(sh_qpc, uar_page), 0x68u);
  EXPECT_EQ(__devx_bit_off(sh_qpc, remote_qpn), 0xa8u);
  EXPECT_EQ(__devx_bit_off(sh_qpc, primary_address_path) + __devx_bit_off(sh_ads, rlid), 0xc0u + 0x30u);
  EXPECT_EQ(__devx_bit_off(sh_qpc, log_sra_max), 0x388u);
  EXPECT_EQ(__devx_bit_off(sh_qpc, cqn_snd), 0x3e8u);
  EXPECT_EQ(__devx_bit_off(sh_qpc, rre), 0x490u);
  EXPECT_EQ(__devx_bit_off(sh_qpc, cqn_rcv), 0x4e8u);
  EXPECT_EQ(__devx_bit_off(sh_qpc, srqn_rmpn_xrqn), 0x568u);
  EXPECT_EQ(__devx_bit_off(sh_qpc, dc_access_key), 0x640u);
  EXPECT_EQ(__devx_bit_off(sh_qpc, dbr_umem_id), 0x720u);
  EXPECT_EQ(DEVX_ST_SZ_BYTES(sh_qp_in), 0x110u);
  EXPECT_EQ(__devx_bit_off(sh_dct_in, dctc), 0x80u);
  EXPECT_EQ(__devx_bit_off(sh_dctc, srqn_xrqn), 0xa8u);
  EXPECT_EQ(__devx_bit_off(sh_dctc, dc_access_key), 0x100u);
  EXPECT_EQ(__devx_bit_off(sh_dctc, port), 0x148u);
  EXPECT_EQ(__devx_bit_off(sh_rmp_in, ctx), 0x100u);
  EXPECT_EQ(__devx_bit_off(sh_rmpc, wq), 0x180u);
  EXPECT_EQ(__devx_bit_off(sh_wq, log_wq_sz), 0x11bu);
  EXPECT_EQ(__devx_bit_off(sh_wq, wq_umem_id), 0x160u);
  EXPECT_EQ(__devx_bit_off(sh_create_mkey_in, memory_key_mkey_entry), 0x80u);
  EXPECT_EQ(__devx_bit_off(sh_create_mkey_in, translations_octword_actual_size), 0x300u);
  EXPECT_EQ(DEVX_ST_SZ_BYTES(sh_create_mkey_in), 0x110u);  // the entries follow
  EXPECT_EQ(__devx_bit_off(sh_mkc, access_mode_4_2), 0x3u);
  EXPECT_EQ(__devx_bit_off(sh_mkc, a), 0x11u);
  EXPECT_EQ(__devx_bit_off(sh_mkc, access_mode_1_0), 0x16u);
  EXPECT_EQ(__devx_bit_off(sh_mkc, mkey_7_0), 0x38u);
  EXPECT_EQ(__devx_bit_off(sh_mkc, pd), 0x68u);
  EXPECT_EQ(__devx_bit_off(sh_mkc, start_addr), 0x80u);
  EXPECT_EQ(__devx_bit_off(sh_mkc, len), 0xc0u);
  EXPECT_EQ(__devx_bit_off(sh_mkc, translations_octword_size), 0x1a0u);
  EXPECT_EQ(__devx_bit_off(sh_mkc, log_entity_size), 0x1dbu);
  EXPECT_EQ(DEVX_ST_SZ_BYTES(sh_mkc), 64u);
  EXPECT_EQ(__devx_bit_off(sh_create_mkey_out, mkey_index), 0x48u);
  EXPECT_EQ(DEVX_ST_SZ_BYTES(sh_klm), 16u);
  EXPECT_EQ(__devx_bit_off(sh_klm, address), 0x40u);
}

// What UCX checks before it takes its DevX path, and the rest of what the model reports.
TEST(DevxCaps, GeneralCapabilities) {
  Env e;
  ASSERT_NE(e.ctx, nullptr);
  EXPECT_EQ(hca_cap(e.ctx, 0, 0x1c3, 5), 30u);  // log_max_msg: 30 by default, as ConnectX
  EXPECT_EQ(hca_cap(e.ctx, 0, 0x12a, 6), 4u);   // log_max_ra_req_dc
  EXPECT_EQ(hca_cap(e.ctx, 0, 0x14a, 6), 4u);   // log_max_ra_req_qp
  EXPECT_EQ(hca_cap(e.ctx, 0, 0x208, 1), 1u);   // umr_modify_atomic_disabled
  EXPECT_GT(hca_cap(e.ctx, 0, 0x383, 5), 0u);   // log_max_rmp
  EXPECT_EQ(hca_cap(e.ctx, 0, 0x21a, 1), 1u);   // dct
  EXPECT_EQ(hca_cap(e.ctx, 0, 0x108, 1), 1u);   // fixed_buffer_size: KSM mkeys (UCX's atomic keys)
  EXPECT_EQ(hca_cap(e.ctx, 0, 0x100, 8), 1u);   // max_indirection: KSM entries name MRs
}

// Two DevX RC QPs: create, RST2INIT/INIT2RTR/RTR2RTS, QUERY_QP, then an RDMA write, a fetch-add
// and a send into the regular receive queue, all as WQEs in the umem rings.
TEST(DevxQp, RcPairMovesDataAndAtomics) {
  Env e;
  ASSERT_NE(e.uar, nullptr);
  DevxQp a(e, SH_QPC_ST_RC), b(e, SH_QPC_ST_RC);
  ASSERT_NE(a.obj, nullptr) << errno << " status " << DEVX_GET(sh_qp_out, a.out, status);
  ASSERT_NE(b.obj, nullptr);
  EXPECT_NE(a.qpn, b.qpn);
  ASSERT_EQ(a.to_init(true), 0);
  ASSERT_EQ(b.to_init(true), 0);
  ASSERT_EQ(a.to_rtr_rc(b.qpn, e.lid), 0);
  ASSERT_EQ(b.to_rtr_rc(a.qpn, e.lid), 0);
  ASSERT_EQ(a.to_rts(), 0);
  ASSERT_EQ(b.to_rts(), 0);

  uint8_t q[DEVX_ST_SZ_BYTES(sh_qp_out)] = {};
  ASSERT_EQ(a.query(q, sizeof q), 0);
  void* c = DEVX_ADDR_OF(sh_qp_out, q, qpc);
  EXPECT_EQ(DEVX_GET(sh_qpc, c, state), SH_QP_STATE_RTS);
  EXPECT_EQ(DEVX_GET(sh_qpc, c, st), SH_QPC_ST_RC);
  EXPECT_EQ(DEVX_GET(sh_qpc, c, remote_qpn), b.qpn);
  EXPECT_EQ(DEVX_GET(sh_qpc, c, mtu), uint32_t(IBV_MTU_4096));
  EXPECT_EQ(DEVX_GET(sh_qpc, c, next_send_psn), 0x456u);
  EXPECT_EQ(DEVX_GET(sh_qpc, c, next_rcv_psn), 0x456u);
  EXPECT_EQ(DEVX_GET(sh_qpc, c, log_sra_max), 2u);
  EXPECT_EQ(DEVX_GET(sh_qpc, c, log_rra_max), 2u);
  EXPECT_EQ(DEVX_GET(sh_qpc, c, retry_count), 3u);
  EXPECT_EQ(DEVX_GET(sh_qpc, c, rnr_retry), 7u);
  EXPECT_EQ(DEVX_GET(sh_qpc, c, log_sq_size), 6u);
  EXPECT_EQ(DEVX_GET(sh_qpc, c, cqn_snd), cqn_of(e.cq));
  EXPECT_EQ(DEVX_GET(sh_qpc, c, rwe), 1u);
  void* p = DEVX_ADDR_OF(sh_qpc, c, primary_address_path);
  EXPECT_EQ(DEVX_GET(sh_ads, p, rlid), e.lid);
  EXPECT_EQ(DEVX_GET(sh_ads, p, ack_timeout), 14u);
  EXPECT_EQ(DEVX_GET(sh_ads, p, vhca_port_num), 1u);
  EXPECT_EQ(DEVX_GET(sh_qpc, c, pd), pdn_of(e.pd));

  alignas(64) static uint64_t src[8], dst[8], word, fetched;
  const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                  IBV_ACCESS_REMOTE_ATOMIC;
  ibv_mr* ms = ibv_reg_mr(e.pd, src, sizeof src, acc);
  ibv_mr* md = ibv_reg_mr(e.pd, dst, sizeof dst, acc);
  ibv_mr* mw = ibv_reg_mr(e.pd, &word, 8, acc);
  ibv_mr* mf = ibv_reg_mr(e.pd, &fetched, 8, acc);
  for (int i = 0; i < 8; ++i) src[i] = 0x1111 * uint64_t(i + 1);
  memset(dst, 0, sizeof dst);
  auto r = raddr(dst, md->rkey);
  auto d = dseg(src, sizeof src, ms->lkey);
  RawCq cq(e.cq);
  a.post(MLX5_OPCODE_RDMA_WRITE, {{&r, 16}, {&d, 16}});
  Cqe wc = cq.poll();
  EXPECT_EQ(wc.opcode, MLX5_CQE_REQ);
  EXPECT_EQ(wc.wqe_opcode, MLX5_OPCODE_RDMA_WRITE);
  EXPECT_EQ(wc.qpn, a.qpn);
  EXPECT_EQ(memcmp(src, dst, sizeof src), 0);

  word = 40;
  auto ra = raddr(&word, mw->rkey);
  mlx5_wqe_atomic_seg at{};
  at.swap_add = htobe64(2);
  auto df = dseg(&fetched, 8, mf->lkey);
  a.post(MLX5_OPCODE_ATOMIC_FA, {{&ra, 16}, {&at, 16}, {&df, 16}});
  wc = cq.poll();
  EXPECT_EQ(wc.opcode, MLX5_CQE_REQ);
  EXPECT_EQ(wc.wqe_opcode, MLX5_OPCODE_ATOMIC_FA);
  EXPECT_EQ(word, 42u);
  // The result: in memory or, scatter-to-CQE being off (cs_req 0), never in the CQE.
  EXPECT_EQ(fetched == 40 || be64toh(fetched) == 40, true);

  memset(dst, 0, sizeof dst);
  b.post_recv(ibv_sge{uint64_t(uintptr_t(dst)), 64, md->lkey});
  auto ds = dseg(src, 48, ms->lkey);
  a.post(MLX5_OPCODE_SEND, {{&ds, 16}});
  bool got_send = false, got_recv = false;
  for (int i = 0; i < 2; ++i) {
    wc = cq.poll();
    if (wc.opcode == MLX5_CQE_REQ && wc.qpn == a.qpn) got_send = true;
    if (wc.opcode == MLX5_CQE_RESP_SEND) {
      got_recv = true;
      EXPECT_EQ(wc.byte_cnt, 48u);
      EXPECT_EQ(wc.qpn, b.qpn);
    }
  }
  EXPECT_TRUE(got_send && got_recv);
  EXPECT_EQ(memcmp(src, dst, 48), 0);

  // 2ERR, then 2RST, then QUERY_QP says so; RST2INIT works again.
  EXPECT_EQ(a.modify(SH_CMD_2ERR_QP, nullptr), 0);
  ASSERT_EQ(a.query(q, sizeof q), 0);
  EXPECT_EQ(DEVX_GET(sh_qpc, DEVX_ADDR_OF(sh_qp_out, q, qpc), state), SH_QP_STATE_ERR);
  EXPECT_EQ(a.modify(SH_CMD_2RST_QP, nullptr), 0);
  ASSERT_EQ(a.query(q, sizeof q), 0);
  EXPECT_EQ(DEVX_GET(sh_qpc, DEVX_ADDR_OF(sh_qp_out, q, qpc), state), SH_QP_STATE_RST);
  EXPECT_EQ(a.to_init(true), 0);
  for (ibv_mr* m : {ms, md, mw, mf}) ibv_dereg_mr(m);
}

// Two connected DevX RC QPs on one Env.
struct RcPair {
  DevxQp a, b;
  explicit RcPair(Env& e) : a(e, SH_QPC_ST_RC), b(e, SH_QPC_ST_RC) {
    ok = a.obj && b.obj && a.to_init(true) == 0 && b.to_init(true) == 0 &&
         a.to_rtr_rc(b.qpn, e.lid) == 0 && b.to_rtr_rc(a.qpn, e.lid) == 0 && a.to_rts() == 0 &&
         b.to_rts() == 0;
  }
  bool ok = false;
};

// CREATE_MKEY in KSM mode, as a DevX program (UCX's atomic key) builds it: returns the object,
// the key in *key, the status and syndrome of a failure in *status/*syndrome.
struct KsmEntry {
  uint32_t key;
  uint64_t addr;
};
mlx5dv_devx_obj* create_ksm(Env& e, uint64_t start, uint64_t len, uint32_t log_entity,
                            const std::vector<KsmEntry>& entries, uint32_t* key,
                            const std::function<void(uint8_t* in, void* mkc)>& spoil = nullptr,
                            uint8_t* status = nullptr, uint32_t* syndrome = nullptr,
                            size_t cut = 0) {
  const size_t fixed = DEVX_ST_SZ_BYTES(sh_create_mkey_in), entry = DEVX_ST_SZ_BYTES(sh_klm);
  std::vector<uint8_t> in(fixed + entries.size() * entry);
  uint8_t out[DEVX_ST_SZ_BYTES(sh_create_mkey_out)] = {};
  DEVX_SET(sh_create_mkey_in, in.data(), opcode, SH_CMD_CREATE_MKEY);
  void* mkc = DEVX_ADDR_OF(sh_create_mkey_in, in.data(), memory_key_mkey_entry);
  DEVX_SET(sh_mkc, mkc, access_mode_1_0, SH_MKC_ACCESS_MODE_KSM & 3);
  DEVX_SET(sh_mkc, mkc, access_mode_4_2, SH_MKC_ACCESS_MODE_KSM >> 2);
  DEVX_SET(sh_mkc, mkc, a, 1);
  DEVX_SET(sh_mkc, mkc, rw, 1);
  DEVX_SET(sh_mkc, mkc, rr, 1);
  DEVX_SET(sh_mkc, mkc, lw, 1);
  DEVX_SET(sh_mkc, mkc, lr, 1);
  DEVX_SET(sh_mkc, mkc, pd, pdn_of(e.pd));
  DEVX_SET(sh_mkc, mkc, qpn, 0xffffff);
  DEVX_SET(sh_mkc, mkc, mkey_7_0, 0x5a);
  DEVX_SET64(sh_mkc, mkc, start_addr, start);
  DEVX_SET64(sh_mkc, mkc, len, len);
  DEVX_SET(sh_mkc, mkc, translations_octword_size, uint32_t(entries.size()));
  DEVX_SET(sh_mkc, mkc, log_entity_size, log_entity);
  DEVX_SET(sh_create_mkey_in, in.data(), translations_octword_actual_size, uint32_t(entries.size()));
  for (size_t i = 0; i < entries.size(); ++i) {
    uint8_t* k = in.data() + fixed + i * entry;
    DEVX_SET(sh_klm, k, mkey, entries[i].key);
    DEVX_SET64(sh_klm, k, address, entries[i].addr);
  }
  if (spoil) spoil(in.data(), mkc);
  mlx5dv_devx_obj* o = mlx5dv_devx_obj_create(e.ctx, in.data(), in.size() - cut, out, sizeof out);
  if (o && key) *key = DEVX_GET(sh_create_mkey_out, out, mkey_index) << 8 | 0x5a;
  if (status) *status = uint8_t(DEVX_GET(sh_create_mkey_out, out, status));
  if (syndrome) *syndrome = DEVX_GET(sh_create_mkey_out, out, syndrome);
  return o;
}

// A KSM indirect mkey over two MRs (4 KiB entities, as UCX's atomic key maps its MR at an offset
// but here with one entry per MR): an RDMA write and a read that cross from the first entry into
// the second, and a fetch-add at an offset in the second, all land in the MRs behind it.
TEST(DevxMkey, KsmOverTwoMrsWriteReadAtomic) {
  Env e;
  ASSERT_NE(e.uar, nullptr);
  RcPair p(e);
  ASSERT_TRUE(p.ok);
  const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                  IBV_ACCESS_REMOTE_ATOMIC;
  alignas(4096) static uint8_t one[4096], two[4096], src[64], back[64];
  alignas(8) static uint64_t fetched;
  ibv_mr* m1 = ibv_reg_mr(e.pd, one, sizeof one, acc);
  ibv_mr* m2 = ibv_reg_mr(e.pd, two, sizeof two, acc);
  ibv_mr* ms = ibv_reg_mr(e.pd, src, sizeof src, acc);
  ibv_mr* mb = ibv_reg_mr(e.pd, back, sizeof back, acc);
  ibv_mr* mf = ibv_reg_mr(e.pd, &fetched, 8, acc);
  memset(one, 0, sizeof one);
  memset(two, 0, sizeof two);
  // The mkey's own address space: 8 KiB from 0x10000000 (no memory there), entry 0 -> `one`,
  // entry 1 -> `two`.
  const uint64_t start = 0x10000000;
  uint32_t key = 0;
  mlx5dv_devx_obj* mk = create_ksm(e, start, 8192, 12,
                                   {{m1->lkey, uint64_t(uintptr_t(one))},
                                    {m2->lkey, uint64_t(uintptr_t(two))}}, &key);
  ASSERT_NE(mk, nullptr) << errno;
  EXPECT_NE(key, m1->rkey);
  EXPECT_NE(key, m2->rkey);
  for (int i = 0; i < 64; ++i) src[i] = uint8_t(i + 1);
  RawCq cq(e.cq);
  mlx5_wqe_raddr_seg r{};
  r.raddr = htobe64(start + 4096 - 24);
  r.rkey = htobe32(key);
  auto d = dseg(src, 64, ms->lkey);
  p.a.post(MLX5_OPCODE_RDMA_WRITE, {{&r, 16}, {&d, 16}});
  Cqe wc = cq.poll();
  EXPECT_EQ(wc.opcode, MLX5_CQE_REQ) << int(wc.syndrome);
  EXPECT_EQ(memcmp(one + 4096 - 24, src, 24), 0);
  EXPECT_EQ(memcmp(two, src + 24, 40), 0);
  EXPECT_EQ(two[40], 0);

  memset(back, 0, sizeof back);
  auto db = dseg(back, 64, mb->lkey);
  p.a.post(MLX5_OPCODE_RDMA_READ, {{&r, 16}, {&db, 16}});
  wc = cq.poll();
  EXPECT_EQ(wc.opcode, MLX5_CQE_REQ) << int(wc.syndrome);
  EXPECT_EQ(memcmp(back, src, 64), 0);

  uint64_t word = 1000;
  memcpy(two + 8 * 37, &word, 8);
  mlx5_wqe_raddr_seg ra{};
  ra.raddr = htobe64(start + 4096 + 8 * 37);
  ra.rkey = htobe32(key);
  mlx5_wqe_atomic_seg at{};
  at.swap_add = htobe64(24);
  auto df = dseg(&fetched, 8, mf->lkey);
  fetched = 0;
  p.a.post(MLX5_OPCODE_ATOMIC_FA, {{&ra, 16}, {&at, 16}, {&df, 16}});
  wc = cq.poll();
  EXPECT_EQ(wc.opcode, MLX5_CQE_REQ) << int(wc.syndrome);
  memcpy(&word, two + 8 * 37, 8);
  EXPECT_EQ(word, 1024u);
  EXPECT_TRUE(fetched == 1000 || be64toh(fetched) == 1000);

  EXPECT_EQ(mlx5dv_devx_obj_destroy(mk), 0);
  for (ibv_mr* m : {m1, m2, ms, mb, mf}) ibv_dereg_mr(m);
}

// Accesses through a KSM mkey that it does not allow: past its length, into the part of an entry
// its MR does not cover, an atomic through a key without `a`, and through a destroyed key. Each
// completes with the remote access error (each on a fresh QP pair: the error moves both to ERR),
// and the memory stays untouched.
TEST(DevxMkey, KsmOutOfRangeIsRemoteAccessError) {
  Env e;
  ASSERT_NE(e.uar, nullptr);
  const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                  IBV_ACCESS_REMOTE_ATOMIC;
  alignas(4096) static uint8_t mem[8192], src[64];
  alignas(8) static uint64_t fetched;
  memset(mem, 0, sizeof mem);
  memset(src, 0xab, sizeof src);
  ibv_mr* m = ibv_reg_mr(e.pd, mem, 4096, acc);  // only the first page of `mem`
  ibv_mr* ms = ibv_reg_mr(e.pd, src, sizeof src, acc);
  ibv_mr* mf = ibv_reg_mr(e.pd, &fetched, 8, acc);
  const uint64_t start = 0x20000000;
  const uint64_t base = uint64_t(uintptr_t(mem));
  RawCq cq(e.cq);  // every pair's completions: one consumer index
  auto expect_access_error = [&](uint32_t key, uint64_t addr, uint8_t opcode, const char* what) {
    RcPair p(e);
    ASSERT_TRUE(p.ok);
    mlx5_wqe_raddr_seg r{};
    r.raddr = htobe64(addr);
    r.rkey = htobe32(key);
    auto d = dseg(src, 16, ms->lkey);
    auto df = dseg(&fetched, 8, mf->lkey);
    mlx5_wqe_atomic_seg at{};
    at.swap_add = htobe64(1);
    if (opcode == MLX5_OPCODE_ATOMIC_FA) p.a.post(opcode, {{&r, 16}, {&at, 16}, {&df, 16}});
    else p.a.post(opcode, {{&r, 16}, {&d, 16}});
    Cqe wc = cq.poll();
    EXPECT_EQ(wc.opcode, MLX5_CQE_REQ_ERR) << what;
    EXPECT_EQ(wc.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR) << what;
    // One completion per case: the responder, now in ERR too, has no receive to flush.
    EXPECT_EQ(p.a.modify(SH_CMD_2RST_QP, nullptr), 0);
    EXPECT_EQ(p.b.modify(SH_CMD_2RST_QP, nullptr), 0);
  };
  // Two 4 KiB entries over `mem`'s two pages; the MR covers only the first.
  uint32_t key = 0, noatomic = 0;
  mlx5dv_devx_obj* mk = create_ksm(e, start, 8192, 12, {{m->lkey, base}, {m->lkey, base + 4096}}, &key);
  ASSERT_NE(mk, nullptr);
  mlx5dv_devx_obj* mn = create_ksm(e, start, 8192, 12, {{m->lkey, base}, {m->lkey, base + 4096}},
                                   &noatomic, [](uint8_t*, void* mkc) { DEVX_SET(sh_mkc, mkc, a, 0); });
  ASSERT_NE(mn, nullptr);
  expect_access_error(key, start + 8192 - 8, MLX5_OPCODE_RDMA_WRITE, "past the mkey's length");
  expect_access_error(key, start - 8, MLX5_OPCODE_RDMA_WRITE, "below the mkey's start");
  expect_access_error(key, start + 4096 - 8, MLX5_OPCODE_RDMA_WRITE, "into the page its MR lacks");
  expect_access_error(key, start + 4096, MLX5_OPCODE_RDMA_READ, "read beyond the entry's MR");
  expect_access_error(noatomic, start + 64, MLX5_OPCODE_ATOMIC_FA, "atomic without the a bit");
  for (int i = 0; i < 8192; ++i) ASSERT_EQ(mem[i], 0) << i;
  // Within range the same key works, and after DESTROY_MKEY it is gone.
  {
    RcPair p(e);
    ASSERT_TRUE(p.ok);
    mlx5_wqe_raddr_seg r{};
    r.raddr = htobe64(start + 4096 - 16);
    r.rkey = htobe32(key);
    auto d = dseg(src, 16, ms->lkey);
    p.a.post(MLX5_OPCODE_RDMA_WRITE, {{&r, 16}, {&d, 16}});
    EXPECT_EQ(cq.poll().opcode, MLX5_CQE_REQ);
    EXPECT_EQ(memcmp(mem + 4096 - 16, src, 16), 0);
  }
  ASSERT_EQ(mlx5dv_devx_obj_destroy(mk), 0);
  expect_access_error(key, start + 64, MLX5_OPCODE_RDMA_WRITE, "destroyed mkey");
  EXPECT_EQ(mlx5dv_devx_obj_destroy(mn), 0);
  // An mkey over an MR that is deregistered afterwards (as on ConnectX, nothing stops that): its
  // accesses fail from then on.
  ibv_mr* gone = ibv_reg_mr(e.pd, mem + 4096, 4096, acc);
  uint32_t k2 = 0;
  mlx5dv_devx_obj* m2 = create_ksm(e, start, 4096, 12, {{gone->lkey, base + 4096}}, &k2);
  ASSERT_NE(m2, nullptr);
  {
    RcPair p(e);
    ASSERT_TRUE(p.ok);
    mlx5_wqe_raddr_seg r{};
    r.raddr = htobe64(start + 8);
    r.rkey = htobe32(k2);
    auto d = dseg(src, 16, ms->lkey);
    p.a.post(MLX5_OPCODE_RDMA_WRITE, {{&r, 16}, {&d, 16}});
    EXPECT_EQ(cq.poll().opcode, MLX5_CQE_REQ);
    EXPECT_EQ(memcmp(mem + 4096 + 8, src, 16), 0);
  }
  ibv_dereg_mr(gone);
  memset(mem + 4096, 0, 4096);
  expect_access_error(k2, start + 8, MLX5_OPCODE_RDMA_WRITE, "entry MR deregistered");
  for (int i = 4096; i < 8192; ++i) ASSERT_EQ(mem[i], 0) << i;
  EXPECT_EQ(mlx5dv_devx_obj_destroy(m2), 0);
  for (ibv_mr* x : {m, ms, mf}) ibv_dereg_mr(x);
}

// The KSM tests above with every request executed by the responder's model (SOFTHCA_DIRECT=0):
// above, a KSM mkey aliasing one MR is also executed directly by the requester.
TEST(DevxMkey, KsmThroughTheMessagePath) {
  Child c("mkey-tests", {"SOFTHCA_DIRECT=0"});
  std::string out;
  char line[512];
  while (c.out && fgets(line, sizeof line, c.out)) out += line;
  EXPECT_EQ(c.wait(), 0) << out;
  EXPECT_NE(out.find("[  PASSED  ] 2 tests"), std::string::npos) << out;
}

// CREATE_MKEY commands the model refuses: the PRM status and a syndrome, EREMOTEIO; a command
// shorter than its fixed part: EINVAL (the kernel's check).
TEST(DevxMkey, BadCreateMkeyGivesThePrmStatus) {
  Env e;
  ASSERT_NE(e.ctx, nullptr);
  alignas(4096) static uint8_t mem[4096];
  ibv_mr* m = ibv_reg_mr(e.pd, mem, sizeof mem, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  const std::vector<KsmEntry> one{{m->lkey, uint64_t(uintptr_t(mem))}};
  struct Case {
    const char* what;
    std::function<void(uint8_t*, void*)> spoil;
    uint8_t status;
    size_t cut;
  };
  const std::vector<Case> cases = {
      {"unknown PD", [](uint8_t*, void* c) { DEVX_SET(sh_mkc, c, pd, 0xfffff0); }, SH_STAT_BAD_PARAM, 0},
      {"MTT mode", [](uint8_t*, void* c) { DEVX_SET(sh_mkc, c, access_mode_1_0, SH_MKC_ACCESS_MODE_MTT); },
       SH_STAT_BAD_OP, 0},
      {"UMR-owned (free)", [](uint8_t*, void* c) { DEVX_SET(sh_mkc, c, free, 1); }, SH_STAT_BAD_OP, 0},
      {"no entries", [](uint8_t* in, void* c) {
         DEVX_SET(sh_mkc, c, translations_octword_size, 0);
         DEVX_SET(sh_create_mkey_in, in, translations_octword_actual_size, 0);
       }, SH_STAT_BAD_PARAM, 0},
      {"more entries than the size", [](uint8_t* in, void*) {
         DEVX_SET(sh_create_mkey_in, in, translations_octword_actual_size, 2);
       }, SH_STAT_BAD_PARAM, 0},
      {"entity below 4 KiB", [](uint8_t*, void* c) { DEVX_SET(sh_mkc, c, log_entity_size, 3); },
       SH_STAT_BAD_PARAM, 0},
      {"length 0", [](uint8_t*, void* c) { DEVX_SET64(sh_mkc, c, len, 0); }, SH_STAT_BAD_PARAM, 0},
      {"range wraps", [](uint8_t*, void* c) { DEVX_SET64(sh_mkc, c, start_addr, ~0ull - 100); },
       SH_STAT_BAD_PARAM, 0},
      {"entries cut off", nullptr, SH_STAT_BAD_INP_LEN, 8},
  };
  std::vector<uint32_t> syndromes;
  for (const Case& c : cases) {
    uint8_t status = 0;
    uint32_t syndrome = 0;
    errno = 0;
    EXPECT_EQ(create_ksm(e, 0x30000000, 4096, 12, one, nullptr, c.spoil, &status, &syndrome, c.cut),
              nullptr) << c.what;
    EXPECT_EQ(errno, EREMOTEIO) << c.what;
    EXPECT_EQ(status, c.status) << c.what;
    EXPECT_NE(syndrome, 0u) << c.what;
    syndromes.push_back(syndrome);
  }
  EXPECT_NE(syndromes[0], syndromes[3]);  // the syndromes tell the checks apart
  EXPECT_NE(syndromes[3], syndromes[5]);
  errno = 0;
  EXPECT_EQ(create_ksm(e, 0x30000000, 4096, 12, one, nullptr, nullptr, nullptr, nullptr,
                       DEVX_ST_SZ_BYTES(sh_create_mkey_in) / 2),
            nullptr);
  EXPECT_EQ(errno, EINVAL);
  // A good one works, and QUERY_MKEY (not modelled) says so with its status.
  uint32_t key = 0;
  mlx5dv_devx_obj* mk = create_ksm(e, 0x30000000, 4096, 12, one, &key);
  ASSERT_NE(mk, nullptr);
  EXPECT_EQ(key & 0xff, 0x5au);
  uint8_t qin[DEVX_ST_SZ_BYTES(sh_mkey_cmd_in)] = {}, qout[64] = {};
  DEVX_SET(sh_mkey_cmd_in, qin, opcode, SH_CMD_QUERY_MKEY);
  DEVX_SET(sh_mkey_cmd_in, qin, mkey_index, key >> 8);
  EXPECT_EQ(mlx5dv_devx_obj_query(mk, qin, sizeof qin, qout, sizeof qout), EREMOTEIO);
  EXPECT_EQ(DEVX_GET(sh_create_mkey_out, qout, status), SH_STAT_BAD_OP);
  EXPECT_EQ(mlx5dv_devx_obj_destroy(mk), 0);
  ibv_dereg_mr(m);
}

// With CQE version 1 a requester CQE carries the QP's user_index (QPC), good and bad: UCX's DC
// transport finds the DCI of a completion by it.
TEST(DevxQp, RequesterCqesCarryTheUserIndex) {
  Env e;
  ASSERT_NE(e.uar, nullptr);
  DevxQp a(e, SH_QPC_ST_RC, 0, true, 0x30000), b(e, SH_QPC_ST_RC, 0, true, 0x50000);
  ASSERT_TRUE(a.obj && b.obj);
  ASSERT_EQ(a.to_init(true), 0);
  ASSERT_EQ(b.to_init(true), 0);
  ASSERT_EQ(a.to_rtr_rc(b.qpn, e.lid), 0);
  ASSERT_EQ(b.to_rtr_rc(a.qpn, e.lid), 0);
  ASSERT_EQ(a.to_rts(), 0);
  ASSERT_EQ(b.to_rts(), 0);
  alignas(64) static uint64_t src[2], dst[2];
  const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  ibv_mr* ms = ibv_reg_mr(e.pd, src, sizeof src, acc);
  ibv_mr* md = ibv_reg_mr(e.pd, dst, sizeof dst, acc);
  RawCq cq(e.cq);
  auto d = dseg(src, 16, ms->lkey);
  auto r = raddr(dst, md->rkey);
  b.post(MLX5_OPCODE_RDMA_WRITE, {{&r, 16}, {&d, 16}});
  Cqe wc = cq.poll();
  EXPECT_EQ(wc.opcode, MLX5_CQE_REQ);
  EXPECT_EQ(wc.qpn, b.qpn);
  EXPECT_EQ(wc.srqn_uidx, 0x50000u);
  auto bad = raddr(dst, md->rkey ^ 0x100);  // no such key: a remote access error
  a.post(MLX5_OPCODE_RDMA_WRITE, {{&bad, 16}, {&d, 16}});
  wc = cq.poll();
  EXPECT_EQ(wc.opcode, MLX5_CQE_REQ_ERR);
  EXPECT_EQ(wc.qpn, a.qpn);
  EXPECT_EQ(wc.srqn_uidx, 0x30000u);
  ibv_dereg_mr(ms);
  ibv_dereg_mr(md);
}

// Bad commands: the PRM status and EREMOTEIO, or EINVAL for what the kernel rejects itself.
TEST(DevxQp, BadCommandsGiveThePrmStatus) {
  Env e;
  ASSERT_NE(e.uar, nullptr);
  auto create = [&](const std::function<void(uint8_t* in, void* qpc)>& spoil, uint8_t* status) {
    Umem wq(e.ctx, 16384), db(e.ctx, 4096);
    uint8_t in[DEVX_ST_SZ_BYTES(sh_qp_in)] = {}, out[DEVX_ST_SZ_BYTES(sh_qp_out)] = {};
    DEVX_SET(sh_qp_in, in, opcode, SH_CMD_CREATE_QP);
    void* c = DEVX_ADDR_OF(sh_qp_in, in, qpc);
    DEVX_SET(sh_qpc, c, st, SH_QPC_ST_RC);
    DEVX_SET(sh_qpc, c, pd, pdn_of(e.pd));
    DEVX_SET(sh_qpc, c, uar_page, e.uar->page_id);
    DEVX_SET(sh_qpc, c, cqn_snd, cqn_of(e.cq));
    DEVX_SET(sh_qpc, c, cqn_rcv, cqn_of(e.cq));
    DEVX_SET(sh_qpc, c, log_sq_size, 6);
    DEVX_SET(sh_qpc, c, rq_type, SH_RQ_ZERO);
    DEVX_SET(sh_qpc, c, dbr_umem_id, db.id());
    DEVX_SET(sh_qp_in, in, wq_umem_id, wq.id());
    spoil(in, c);
    errno = 0;
    mlx5dv_devx_obj* o = mlx5dv_devx_obj_create(e.ctx, in, sizeof in, out, sizeof out);
    int err = errno;
    *status = uint8_t(DEVX_GET(sh_qp_out, out, status));
    if (o) mlx5dv_devx_obj_destroy(o);
    return o ? 0 : err;
  };
  uint8_t st = 0;
  EXPECT_EQ(create([](uint8_t*, void*) {}, &st), 0);
  EXPECT_EQ(create([](uint8_t*, void* c) { DEVX_SET(sh_qpc, c, pd, 0xfffff0); }, &st), EREMOTEIO);
  EXPECT_EQ(st, SH_STAT_BAD_PARAM);
  EXPECT_EQ(create([](uint8_t*, void* c) { DEVX_SET(sh_qpc, c, st, 0x7); }, &st), EREMOTEIO);
  EXPECT_EQ(st, SH_STAT_BAD_PARAM);
  EXPECT_EQ(create([](uint8_t*, void* c) { DEVX_SET(sh_qpc, c, cqn_snd, 0xfffff0); }, &st), EREMOTEIO);
  EXPECT_EQ(st, SH_STAT_BAD_PARAM);
  EXPECT_EQ(create([](uint8_t*, void* c) { DEVX_SET(sh_qpc, c, log_sq_size, 10); }, &st), EREMOTEIO);
  EXPECT_EQ(st, SH_STAT_BAD_PARAM);  // 64 KiB of SQ in a 16 KiB umem
  EXPECT_EQ(create([](uint8_t* in, void*) { DEVX_SET(sh_qp_in, in, wq_umem_id, 0xdead); }, &st), EREMOTEIO);
  EXPECT_EQ(st, SH_STAT_BAD_PARAM);
  EXPECT_EQ(create([](uint8_t*, void* c) { DEVX_SET(sh_qpc, c, uar_page, 0xffff); }, &st), EREMOTEIO);
  EXPECT_EQ(st, SH_STAT_BAD_PARAM);
  EXPECT_EQ(create([](uint8_t*, void* c) {
              DEVX_SET(sh_qpc, c, rq_type, SH_RQ_SRQ);
              DEVX_SET(sh_qpc, c, srqn_rmpn_xrqn, 0xfffff0);
            }, &st), EREMOTEIO);
  EXPECT_EQ(st, SH_STAT_BAD_PARAM);
  EXPECT_EQ(create([](uint8_t* in, void*) { DEVX_SET(sh_qp_in, in, opcode, 0x904); }, &st), EREMOTEIO);
  EXPECT_EQ(st, SH_STAT_BAD_OP);  // CREATE_SQ: not modelled

  DevxQp q(e, SH_QPC_ST_RC);
  ASSERT_NE(q.obj, nullptr);
  uint32_t syn = 0;
  EXPECT_EQ(q.modify(SH_CMD_INIT2RTR_QP, nullptr, 0, &st, &syn), EREMOTEIO);  // still in RST
  EXPECT_EQ(st, SH_STAT_BAD_RES_STATE);
  EXPECT_NE(syn, 0u);
  EXPECT_EQ(q.modify(SH_CMD_RST2INIT_QP, [](void* c) {
    DEVX_SET(sh_ads, DEVX_ADDR_OF(sh_qpc, c, primary_address_path), vhca_port_num, 9);
  }, 0, &st), EREMOTEIO);
  EXPECT_EQ(st, SH_STAT_BAD_PARAM);
  EXPECT_EQ(q.to_init(true), 0);
  EXPECT_EQ(q.modify(SH_CMD_INIT2RTR_QP, [](void* c) { DEVX_SET(sh_qpc, c, log_rra_max, 6); }, 0, &st),
            EREMOTEIO);  // 64 responder resources: more than the 16 reported
  EXPECT_EQ(st, SH_STAT_BAD_PARAM);
  // Another QP's number in the command, a query through modify: refused before the "firmware".
  uint8_t in[DEVX_ST_SZ_BYTES(sh_qp_in)] = {}, out[DEVX_ST_SZ_BYTES(sh_qp_out)] = {};
  DEVX_SET(sh_qp_in, in, opcode, SH_CMD_2ERR_QP);
  DEVX_SET(sh_qp_in, in, qpn, q.qpn + 1);
  EXPECT_EQ(mlx5dv_devx_obj_modify(q.obj, in, sizeof in, out, sizeof out), EINVAL);
  DEVX_SET(sh_qp_in, in, opcode, SH_CMD_QUERY_QP);
  DEVX_SET(sh_qp_in, in, qpn, q.qpn);
  EXPECT_EQ(mlx5dv_devx_obj_modify(q.obj, in, sizeof in, out, sizeof out), EINVAL);
  // A umem an object uses cannot be deregistered.
  EXPECT_EQ(mlx5dv_devx_umem_dereg(q.wq.u), EBUSY);

  // A context opened without DevX creates no objects.
  ibv_context* plain = devx_ctx(false);
  ASSERT_NE(plain, nullptr);
  errno = 0;
  uint8_t cin[DEVX_ST_SZ_BYTES(sh_qp_in)] = {};
  DEVX_SET(sh_qp_in, cin, opcode, SH_CMD_CREATE_QP);
  EXPECT_EQ(mlx5dv_devx_obj_create(plain, cin, sizeof cin, out, sizeof out), nullptr);
  EXPECT_EQ(errno, EINVAL);
  ibv_close_device(plain);
}

struct Rmp {
  Umem wq, db;
  mlx5dv_devx_obj* obj = nullptr;
  uint32_t rmpn = 0, pi = 0;
  uint8_t out[DEVX_ST_SZ_BYTES(sh_rmp_out)] = {};
  explicit Rmp(Env& e) : wq(e.ctx, 16 * 32), db(e.ctx, 4096) {
    uint8_t in[DEVX_ST_SZ_BYTES(sh_rmp_in)] = {};
    DEVX_SET(sh_rmp_in, in, opcode, SH_CMD_CREATE_RMP);
    void* r = DEVX_ADDR_OF(sh_rmp_in, in, ctx);
    DEVX_SET(sh_rmpc, r, state, SH_RMPC_STATE_RDY);
    void* w = DEVX_ADDR_OF(sh_rmpc, r, wq);
    DEVX_SET(sh_wq, w, wq_type, SH_WQ_CYCLIC);
    DEVX_SET(sh_wq, w, log_wq_sz, 4);
    DEVX_SET(sh_wq, w, log_wq_stride, 5);
    DEVX_SET(sh_wq, w, pd, pdn_of(e.pd));
    DEVX_SET(sh_wq, w, dbr_umem_id, db.id());
    DEVX_SET64(sh_wq, w, dbr_addr, 128);
    DEVX_SET(sh_wq, w, wq_umem_id, wq.id());
    obj = mlx5dv_devx_obj_create(e.ctx, in, sizeof in, out, sizeof out);
    if (obj) rmpn = DEVX_GET(sh_rmp_out, out, rmpn);
  }
  ~Rmp() {
    if (obj) mlx5dv_devx_obj_destroy(obj);
  }
  // A cyclic RMP WQE: a 16-byte next segment, then one data segment.
  void post(const ibv_sge& s) {
    uint8_t* w = wq.buf + size_t(pi % 16) * 32;
    memset(w, 0, 16);
    mlx5dv_set_data_seg(reinterpret_cast<mlx5_wqe_data_seg*>(w + 16), s.length, s.lkey, s.addr);
    ++pi;
    __atomic_store_n(reinterpret_cast<uint32_t*>(db.buf + 128), htobe32(pi & 0xffff), __ATOMIC_RELEASE);
  }
};

// DCT (on an RMP) and DCI over DevX: create, query, a send, an RDMA write and a fetch-add from
// the DCI through the address vector (DCT number, DC key, LID), a wrong key failing; DRAIN_DCT.
TEST(DevxDc, DctAndDciPair) {
  Env e;
  ASSERT_NE(e.uar, nullptr);
  Rmp rmp(e);
  ASSERT_NE(rmp.obj, nullptr) << errno << " status " << DEVX_GET(sh_rmp_out, rmp.out, status);
  const uint64_t key = 0x1ee7c0de;
  uint8_t in[DEVX_ST_SZ_BYTES(sh_dct_in)] = {}, out[DEVX_ST_SZ_BYTES(sh_dct_out)] = {};
  DEVX_SET(sh_dct_in, in, opcode, SH_CMD_CREATE_DCT);
  void* d = DEVX_ADDR_OF(sh_dct_in, in, dctc);
  DEVX_SET(sh_dctc, d, pd, pdn_of(e.pd));
  DEVX_SET(sh_dctc, d, cqn, cqn_of(e.cq));
  DEVX_SET(sh_dctc, d, srqn_xrqn, rmp.rmpn);
  DEVX_SET64(sh_dctc, d, dc_access_key, key);
  DEVX_SET(sh_dctc, d, rre, 1);
  DEVX_SET(sh_dctc, d, rwe, 1);
  DEVX_SET(sh_dctc, d, rae, 1);
  DEVX_SET(sh_dctc, d, port, 1);
  DEVX_SET(sh_dctc, d, mtu, IBV_MTU_4096);
  DEVX_SET(sh_dctc, d, min_rnr_nak, 1);
  mlx5dv_devx_obj* dct = mlx5dv_devx_obj_create(e.ctx, in, sizeof in, out, sizeof out);
  ASSERT_NE(dct, nullptr) << errno << " status " << DEVX_GET(sh_dct_out, out, status);
  uint32_t dctn = DEVX_GET(sh_dct_out, out, dctn);

  uint8_t qin[DEVX_ST_SZ_BYTES(sh_dct_in)] = {}, qout[DEVX_ST_SZ_BYTES(sh_dct_out)] = {};
  DEVX_SET(sh_dct_in, qin, opcode, SH_CMD_QUERY_DCT);
  DEVX_SET(sh_dct_in, qin, dctn, dctn);
  ASSERT_EQ(mlx5dv_devx_obj_query(dct, qin, sizeof qin, qout, sizeof qout), 0);
  void* qd = DEVX_ADDR_OF(sh_dct_out, qout, dctc);
  EXPECT_EQ(DEVX_GET(sh_dctc, qd, state), SH_DCTC_STATE_ACTIVE);
  EXPECT_EQ(DEVX_GET64(sh_dctc, qd, dc_access_key), key);
  EXPECT_EQ(DEVX_GET(sh_dctc, qd, srqn_xrqn), rmp.rmpn);
  EXPECT_EQ(DEVX_GET(sh_dctc, qd, cqn), cqn_of(e.cq));

  DevxQp dci(e, SH_QPC_ST_DCI, 0, false);
  ASSERT_NE(dci.obj, nullptr) << errno << " status " << DEVX_GET(sh_qp_out, dci.out, status);
  ASSERT_EQ(dci.to_init(false), 0);
  ASSERT_EQ(dci.to_rtr_dci(), 0);
  ASSERT_EQ(dci.to_rts(), 0);
  uint8_t q[DEVX_ST_SZ_BYTES(sh_qp_out)] = {};
  ASSERT_EQ(dci.query(q, sizeof q), 0);
  EXPECT_EQ(DEVX_GET(sh_qpc, DEVX_ADDR_OF(sh_qp_out, q, qpc), st), SH_QPC_ST_DCI);
  EXPECT_EQ(DEVX_GET(sh_qpc, DEVX_ADDR_OF(sh_qp_out, q, qpc), state), SH_QP_STATE_RTS);

  alignas(64) static uint64_t src[4], dst[4], word, fetched;
  const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                  IBV_ACCESS_REMOTE_ATOMIC;
  ibv_mr* ms = ibv_reg_mr(e.pd, src, sizeof src, acc);
  ibv_mr* md = ibv_reg_mr(e.pd, dst, sizeof dst, acc);
  ibv_mr* mw = ibv_reg_mr(e.pd, &word, 8, acc);
  ibv_mr* mf = ibv_reg_mr(e.pd, &fetched, 8, acc);
  for (int i = 0; i < 4; ++i) src[i] = 0xabc0 + uint64_t(i);
  auto av_for = [&](uint64_t k) {
    mlx5_wqe_av av{};
    av.key.dc_key = htobe64(k);
    av.dqp_dct = htobe32(dctn | MLX5_EXTENDED_UD_AV);
    av.rlid = htobe16(e.lid);
    return av;
  };
  mlx5_wqe_av av = av_for(key);
  RawCq cq(e.cq);

  rmp.post(ibv_sge{uint64_t(uintptr_t(dst)), 32, md->lkey});
  auto ds = dseg(src, 32, ms->lkey);
  dci.post(MLX5_OPCODE_SEND, {{&av, sizeof av}, {&ds, 16}});
  bool got_send = false, got_recv = false;
  for (int i = 0; i < 2; ++i) {
    Cqe wc = cq.poll();
    got_send |= wc.opcode == MLX5_CQE_REQ && wc.qpn == dci.qpn;
    got_recv |= wc.opcode == MLX5_CQE_RESP_SEND && wc.qpn == dctn;
  }
  EXPECT_TRUE(got_send && got_recv);
  EXPECT_EQ(memcmp(src, dst, 32), 0);

  memset(dst, 0, sizeof dst);
  auto r = raddr(dst, md->rkey);
  dci.post(MLX5_OPCODE_RDMA_WRITE, {{&av, sizeof av}, {&r, 16}, {&ds, 16}});
  Cqe wc = cq.poll();
  EXPECT_EQ(wc.opcode, MLX5_CQE_REQ);
  EXPECT_EQ(memcmp(src, dst, 32), 0);

  word = 100;
  auto ra = raddr(&word, mw->rkey);
  mlx5_wqe_atomic_seg at{};
  at.swap_add = htobe64(5);
  auto df = dseg(&fetched, 8, mf->lkey);
  dci.post(MLX5_OPCODE_ATOMIC_FA, {{&av, sizeof av}, {&ra, 16}, {&at, 16}, {&df, 16}});
  wc = cq.poll();
  EXPECT_EQ(wc.opcode, MLX5_CQE_REQ);
  EXPECT_EQ(wc.wqe_opcode, MLX5_OPCODE_ATOMIC_FA);
  EXPECT_EQ(word, 105u);

  // A wrong DC key: the DCT does not answer, the DCI's WQE ends in transport retry exceeded.
  mlx5_wqe_av bad = av_for(key + 1);
  dci.post(MLX5_OPCODE_RDMA_WRITE, {{&bad, sizeof bad}, {&r, 16}, {&ds, 16}});
  wc = cq.poll();
  EXPECT_EQ(wc.opcode, MLX5_CQE_REQ_ERR);
  EXPECT_EQ(wc.syndrome, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);

  // DRAIN_DCT: drained at once; QUERY_DCT says so; a second drain is a bad resource state.
  uint8_t din[DEVX_ST_SZ_BYTES(sh_dct_in)] = {}, dout[DEVX_ST_SZ_BYTES(sh_dct_out)] = {};
  DEVX_SET(sh_dct_in, din, opcode, SH_CMD_DRAIN_DCT);
  DEVX_SET(sh_dct_in, din, dctn, dctn);
  EXPECT_EQ(mlx5dv_devx_obj_modify(dct, din, sizeof din, dout, sizeof dout), 0);
  ASSERT_EQ(mlx5dv_devx_obj_query(dct, qin, sizeof qin, qout, sizeof qout), 0);
  EXPECT_EQ(DEVX_GET(sh_dctc, qd, state), SH_DCTC_STATE_DRAINED);
  EXPECT_EQ(mlx5dv_devx_obj_modify(dct, din, sizeof din, dout, sizeof dout), EREMOTEIO);
  EXPECT_EQ(DEVX_GET(sh_dct_out, dout, status), SH_STAT_BAD_RES_STATE);

  // The RMP cannot go while the DCT uses it.
  EXPECT_EQ(mlx5dv_devx_obj_destroy(rmp.obj), EBUSY);
  EXPECT_EQ(mlx5dv_devx_obj_destroy(dct), 0);
  for (ibv_mr* m : {ms, md, mw, mf}) ibv_dereg_mr(m);
}

// CREATE_DCT with bad fields; QUERY_RMP.
TEST(DevxDc, BadDctAndRmpQuery) {
  Env e;
  Rmp rmp(e);
  ASSERT_NE(rmp.obj, nullptr);
  uint8_t qin[DEVX_ST_SZ_BYTES(sh_rmp_in)] = {}, qout[DEVX_ST_SZ_BYTES(sh_rmp_out)] = {};
  DEVX_SET(sh_rmp_in, qin, opcode, SH_CMD_QUERY_RMP);
  DEVX_SET(sh_rmp_in, qin, rmpn, rmp.rmpn);
  ASSERT_EQ(mlx5dv_devx_obj_query(rmp.obj, qin, sizeof qin, qout, sizeof qout), 0);
  void* w = DEVX_ADDR_OF(sh_rmpc, DEVX_ADDR_OF(sh_rmp_out, qout, ctx), wq);
  EXPECT_EQ(DEVX_GET(sh_wq, w, log_wq_sz), 4u);
  EXPECT_EQ(DEVX_GET(sh_rmpc, DEVX_ADDR_OF(sh_rmp_out, qout, ctx), state), SH_RMPC_STATE_RDY);
  for (int bad = 0; bad < 3; ++bad) {
    uint8_t in[DEVX_ST_SZ_BYTES(sh_dct_in)] = {}, out[DEVX_ST_SZ_BYTES(sh_dct_out)] = {};
    DEVX_SET(sh_dct_in, in, opcode, SH_CMD_CREATE_DCT);
    void* d = DEVX_ADDR_OF(sh_dct_in, in, dctc);
    DEVX_SET(sh_dctc, d, pd, pdn_of(e.pd));
    DEVX_SET(sh_dctc, d, cqn, bad == 0 ? 0xffff00 : cqn_of(e.cq));
    DEVX_SET(sh_dctc, d, srqn_xrqn, bad == 1 ? 0xffff00 : rmp.rmpn);
    DEVX_SET(sh_dctc, d, port, bad == 2 ? 7 : 1);
    DEVX_SET(sh_dctc, d, mtu, IBV_MTU_4096);
    errno = 0;
    EXPECT_EQ(mlx5dv_devx_obj_create(e.ctx, in, sizeof in, out, sizeof out), nullptr);
    EXPECT_EQ(errno, EREMOTEIO);
    EXPECT_EQ(DEVX_GET(sh_dct_out, out, status), SH_STAT_BAD_PARAM);
  }
}

// LAST_WQE_REACHED of a QP on an SRQ (RMP) when it enters ERR, on a subscribed event channel.
TEST(DevxEvents, LastWqeReachedOnErr) {
  Env e;
  Rmp rmp(e);
  ASSERT_NE(rmp.obj, nullptr);
  DevxQp q(e, SH_QPC_ST_RC, rmp.rmpn);
  ASSERT_NE(q.obj, nullptr);
  for (auto flags : {MLX5DV_DEVX_CREATE_EVENT_CHANNEL_FLAGS_OMIT_EV_DATA,
                     mlx5dv_devx_create_event_channel_flags(0)}) {
    mlx5dv_devx_event_channel* ch = mlx5dv_devx_create_event_channel(e.ctx, flags);
    ASSERT_NE(ch, nullptr);
    uint16_t ev = SH_EVENT_LAST_WQE_REACHED;
    ASSERT_EQ(mlx5dv_devx_subscribe_devx_event(ch, q.obj, sizeof ev, &ev, 0xc00c1e), 0);
    uint16_t other = 0x2;  // not modelled
    EXPECT_NE(mlx5dv_devx_subscribe_devx_event(ch, q.obj, sizeof other, &other, 1), 0);
    pollfd p{ch->fd, POLLIN, 0};
    EXPECT_EQ(poll(&p, 1, 0), 0);
    ASSERT_EQ(q.modify(SH_CMD_2ERR_QP, nullptr), 0);
    EXPECT_EQ(poll(&p, 1, 1000), 1);
    uint8_t buf[128];
    auto* h = reinterpret_cast<mlx5dv_devx_async_event_hdr*>(buf);
    ssize_t n = mlx5dv_devx_get_event(ch, h, sizeof buf);
    EXPECT_EQ(n, flags ? 8 : 8 + 64);
    EXPECT_EQ(h->cookie, 0xc00c1eu);
    if (!flags) {
      EXPECT_EQ(buf[8 + 1], SH_EVENT_LAST_WQE_REACHED);
    }
    EXPECT_EQ(poll(&p, 1, 0), 0);
    ASSERT_EQ(q.modify(SH_CMD_2RST_QP, nullptr), 0);
    mlx5dv_devx_destroy_event_channel(ch);
  }
}

// mlx5dv_devx_qp_modify/_query on a QP created through verbs.
TEST(DevxQp, VerbsQpThroughDevxModifyAndQuery) {
  Env e;
  ibv_qp_init_attr_ex a{};
  a.qp_type = IBV_QPT_RC;
  a.send_cq = a.recv_cq = e.cq;
  a.cap.max_send_wr = a.cap.max_recv_wr = 16;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  a.pd = e.pd;
  a.comp_mask = IBV_QP_INIT_ATTR_PD;
  ibv_qp* qp = ibv_create_qp_ex(e.ctx, &a);
  ASSERT_NE(qp, nullptr);
  uint8_t in[DEVX_ST_SZ_BYTES(sh_qp_in)] = {}, out[DEVX_ST_SZ_BYTES(sh_qp_out)] = {};
  DEVX_SET(sh_qp_in, in, opcode, SH_CMD_RST2INIT_QP);
  DEVX_SET(sh_qp_in, in, qpn, qp->qp_num);
  void* c = DEVX_ADDR_OF(sh_qp_in, in, qpc);
  DEVX_SET(sh_ads, DEVX_ADDR_OF(sh_qpc, c, primary_address_path), vhca_port_num, 1);
  DEVX_SET(sh_qpc, c, rwe, 1);
  ASSERT_EQ(mlx5dv_devx_qp_modify(qp, in, sizeof in, out, sizeof out), 0);
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(ibv_query_qp(qp, &attr, IBV_QP_STATE, &init), 0);
  EXPECT_EQ(attr.qp_state, IBV_QPS_INIT);
  EXPECT_EQ(attr.qp_access_flags, int(IBV_ACCESS_REMOTE_WRITE));
  uint8_t qin[DEVX_ST_SZ_BYTES(sh_qp_in)] = {};
  DEVX_SET(sh_qp_in, qin, opcode, SH_CMD_QUERY_QP);
  DEVX_SET(sh_qp_in, qin, qpn, qp->qp_num);
  ASSERT_EQ(mlx5dv_devx_qp_query(qp, qin, 16, out, sizeof out), 0);
  EXPECT_EQ(DEVX_GET(sh_qpc, DEVX_ADDR_OF(sh_qp_out, out, qpc), state), SH_QP_STATE_INIT);
  EXPECT_EQ(DEVX_GET(sh_qpc, DEVX_ADDR_OF(sh_qp_out, out, qpc), log_rq_size), 4u);
  ibv_destroy_qp(qp);
}

}  // namespace

int main(int argc, char** argv) {
  return softhca_test_main(argc, argv, "devx-test", [&](const char* mode) {
    if (strcmp(mode, "mkey-tests")) return 64;
    // DevxMkey.KsmThroughTheMessagePath: the KSM tests again, in a child with SOFTHCA_DIRECT=0.
    char filter[] = "--gtest_filter=DevxMkey.Ksm*:-DevxMkey.KsmThroughTheMessagePath";
    char* args[] = {argv[0], filter, nullptr};
    int n = 2;
    ::testing::InitGoogleTest(&n, args);
    return RUN_ALL_TESTS();
  });
}
