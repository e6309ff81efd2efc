// softhca: mlx5dv_create_qp creation flags, accepted as rdma-core 44's mlx5 provider and the
// kernel accept them for the QP types the model has, and the scatter-to-CQE decision they feed.
#include <cerrno>

#include "hca.h"

namespace softhca {

int check_dv_create_flags(const mlx5dv_qp_init_attr* dv) {
  if (!dv || !(dv->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS)) return 0;
  const uint32_t f = dv->create_flags;
  const uint32_t known = MLX5DV_QP_CREATE_TUNNEL_OFFLOADS | MLX5DV_QP_CREATE_TIR_ALLOW_SELF_LOOPBACK_UC |
                         MLX5DV_QP_CREATE_TIR_ALLOW_SELF_LOOPBACK_MC |
                         MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE | MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE |
                         MLX5DV_QP_CREATE_PACKET_BASED_CREDIT_MODE | MLX5DV_QP_CREATE_SIG_PIPELINING;
  if (f & ~known) return EINVAL;
  if ((f & MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE) && (f & MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE))
    return EINVAL;  // rdma-core: contradictory
  bool dct = (dv->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_DC) &&
             dv->dc_init_attr.dc_type == MLX5DV_DCTYPE_DCT;
  if (dct && (f & ~uint32_t(MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE)))
    return EINVAL;  // a DCT takes no creation flag but the scatter one
  // Tunnel offloads and self-loopback are for raw-packet/RSS QPs, credit mode and signature
  // pipelining need capabilities the model does not report: the kernel refuses them.
  if (f & ~uint32_t(MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE | MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE))
    return EOPNOTSUPP;
  return 0;
}

}  // namespace softhca
