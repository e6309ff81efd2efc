// lib/transport/dc: DC target, initiators and address vectors (dc.h).
#include "lib/transport/dc/dc.h"

#include <endian.h>

#include <cerrno>
#include <cstring>

namespace hoshmem::dc {
namespace {

constexpr int kRemoteAccess =
    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
constexpr uint32_t kSrqDepth = 1;  // a DCT needs an SRQ; RDMA and atomics consume no receive

// mlx5dv_create_qp of a DCT or DCI (IBV_QPT_DRIVER with the DC attributes).
ibv_qp *create_dc_qp(const ib::Device &device, ibv_qp_init_attr_ex *attr,
                     mlx5dv_dc_type type, uint64_t key) {
  attr->qp_type = IBV_QPT_DRIVER;
  attr->pd = device.pd();
  attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
  mlx5dv_qp_init_attr dv{};
  dv.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC;
  dv.dc_init_attr.dc_type = type;
  dv.dc_init_attr.dct_access_key = key;
  return mlx5dv_create_qp(device.context(), attr, &dv);
}

}  // namespace

uint64_t job_key(const std::string &job) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : job) h = (h ^ c) * 0x100000001b3ull;
  return h ? h : 1;
}

bool supported(const ib::Device &device, std::string *why) {
  if (!device.mlx5()) {
    *why = std::string(device.name()) + " is not an mlx5 device (DC is mlx5's)";
    return false;
  }
  if (!device.atomics().dc) {
    *why = std::string(device.name()) +
           (device.atomics().from_devx ? " reports no DC targets (QUERY_HCA_CAP dct = 0)"
                                       : " creates no DC target (and DevX, which could say why, "
                                         "is refused)");
    return false;
  }
  return true;
}

bool Target::open(const ib::Device &device, uint64_t key, std::string *why, ibv_srq *shared_srq,
                  ibv_cq *shared_cq) {
  shared_ = shared_srq != nullptr;
  if (shared_) {
    srq_ = shared_srq, cq_ = shared_cq;
  } else {
    cq_ = ibv_create_cq(device.context(), 1, nullptr, nullptr, 0);
    ibv_srq_init_attr srq{};
    srq.attr.max_wr = kSrqDepth;
    srq.attr.max_sge = 1;
    srq_ = cq_ ? ibv_create_srq(device.pd(), &srq) : nullptr;
  }
  if (srq_) {
    ibv_qp_init_attr_ex attr{};
    attr.send_cq = attr.recv_cq = cq_;
    attr.srq = srq_;
    dct_ = create_dc_qp(device, &attr, MLX5DV_DCTYPE_DCT, key);
  }
  if (!dct_) {
    *why = std::string("cannot create a DC target: ") + strerror(errno);
    close();
    return false;
  }
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = device.port();
  a.qp_access_flags = kRemoteAccess;
  if (ibv_modify_qp(dct_, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                  IBV_QP_ACCESS_FLAGS) != 0) {
    *why = std::string("cannot initialize the DC target: ") + strerror(errno);
    close();
    return false;
  }
  return true;
}

bool Target::start(const ib::Device &device, ibv_mtu path_mtu, std::string *why) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = path_mtu;
  a.min_rnr_timer = 12;
  device.fill_address(&a.ah_attr, 0, ibv_gid{});  // a target has no peer: port, GRH, service level
  if (ibv_modify_qp(dct_, &a, IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_MIN_RNR_TIMER |
                                  IBV_QP_AV) != 0) {
    *why = std::string("cannot bring the DC target up: ") + strerror(errno);
    return false;
  }
  return true;
}

void Target::close() {
  if (dct_) ibv_destroy_qp(dct_);
  if (srq_ && !shared_) ibv_destroy_srq(srq_);
  if (cq_ && !shared_) ibv_destroy_cq(cq_);
  dct_ = nullptr, srq_ = nullptr, cq_ = nullptr;
}

ibv_qp *create_initiator(const ib::Device &device, ibv_cq *cq, uint32_t depth,
                         uint32_t max_inline, unsigned rd_atomic, ibv_mtu path_mtu,
                         uint8_t ack_timeout) {
  ibv_qp_init_attr_ex attr{};
  attr.send_cq = attr.recv_cq = cq;
  attr.cap.max_send_wr = depth;
  attr.cap.max_send_sge = 1;
  attr.cap.max_inline_data = max_inline;
  ibv_qp *qp = create_dc_qp(device, &attr, MLX5DV_DCTYPE_DCI, 0);
  if (!qp) return nullptr;
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = device.port();
  bool ok = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT) == 0;
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = path_mtu;
  device.fill_address(&a.ah_attr, 0, ibv_gid{});  // each WQE's address vector names the peer
  ok = ok && ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_AV) == 0;
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 0;
  // As the RC queue pairs: `ack_timeout` per try, 7 tries, receiver-not-ready retried forever.
  a.timeout = ack_timeout;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = static_cast<uint8_t>(rd_atomic);
  ok = ok && ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
                                       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                       IBV_QP_MAX_QP_RD_ATOMIC) == 0;
  if (!ok) {
    const int err = errno;
    ibv_destroy_qp(qp);
    errno = err;
    return nullptr;
  }
  return qp;
}

bool Addresses::init(const ib::Device &device, uint64_t key, size_t peers, std::string *why) {
  device_ = &device;
  key_ = key;
  global_ = device.needs_grh();
  peers_.assign(peers, Peer{});
  if (global_) {
    gids_.assign(peers, ibv_gid{});
    handles_.reset(&device, peers);
    vectors_.assign(peers, nullptr);
    return true;
  }
  // The fields every vector shares: the DC key, the service level at the port's rate, no
  // source path bits, no GRH (what rdma-core's address handle for a LID on this port holds).
  compact_ = device.atomics().compact_av;
  fixed_ = mlx5_wqe_av{};
  fixed_.key.dc_key = htobe64(key);
  fixed_.stat_rate_sl = device.service_level() & 0xf;
  (void)why;
  return true;
}

void Addresses::clear() {
  handles_.reset(nullptr, 0);
  peers_.clear();
  gids_.clear();
  vectors_.clear();
}

void Addresses::set(int peer, uint32_t dct, uint16_t lid, const ibv_gid &gid) {
  peers_[static_cast<size_t>(peer)] = {dct, lid};
  if (global_) gids_[static_cast<size_t>(peer)] = gid;
}

ib::AddressVector Addresses::get(int peer, mlx5_wqe_av *out) {
  const Peer &p = peers_[static_cast<size_t>(peer)];
  if (!global_) {
    memcpy(out, &fixed_, compact_ ? 16 : sizeof *out);
    out->dqp_dct = htobe32(compact_ ? p.dct : p.dct | MLX5_EXTENDED_UD_AV);
    out->rlid = htobe16(p.lid);
    return {out, compact_ ? 1u : 3u};
  }
  const mlx5_wqe_av *&av = vectors_[static_cast<size_t>(peer)];
  if (!av) {
    ibv_ah *ah = handles_.get(peer, p.lid, gids_[static_cast<size_t>(peer)]);
    mlx5dv_ah dv{};
    mlx5dv_obj obj{};
    obj.ah.in = ah;
    obj.ah.out = &dv;
    if (!ah || mlx5dv_init_obj(&obj, MLX5DV_OBJ_AH) != 0 || !dv.av) return {nullptr, 0};
    av = dv.av;
  }
  memcpy(out, av, sizeof *out);
  out->key.dc_key = htobe64(key_);
  out->dqp_dct = htobe32(p.dct | MLX5_EXTENDED_UD_AV);
  return {out, 3};
}

}  // namespace hoshmem::dc
