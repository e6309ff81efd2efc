// softhca libmlx5.so.1: the mlx5 direct-verbs entry points, forwarded to the model that lives in
// softhca's libibverbs.so.1 (exported there under the SOFTHCA_PRIVATE version).
#include <infiniband/mlx5dv.h>

#include <cerrno>
#include <cstring>

extern "C" {
bool softhca_is_softhca_device(ibv_device* d);
ibv_cq_ex* softhca_create_cq_dv(ibv_context* c, ibv_cq_init_attr_ex* a, mlx5dv_cq_init_attr* dv);
ibv_qp* softhca_create_qp_dv(ibv_context* c, ibv_qp_init_attr_ex* a, mlx5dv_qp_init_attr* dv);
mlx5dv_qp_ex* softhca_qp_ex_to_dv(ibv_qp_ex* x);
int softhca_init_obj(mlx5dv_obj* obj, uint64_t type);
int softhca_query_device_dv(ibv_context* c, mlx5dv_context* a);
void softhca_set_devx(ibv_context* c, bool on);
int softhca_num_ports(void);
int softhca_atomic_host_endian(void);
int softhca_masked_atomics(void);
unsigned softhca_ext_atomic_max(void);
int softhca_pcie_atomics(void);
int softhca_log_max_msg(void);
int softhca_log_max_rd_atomic(void);
int softhca_compact_av(void);
int softhca_devx_allowed(void);

bool mlx5dv_is_supported(ibv_device* d) { return softhca_is_softhca_device(d); }

ibv_context* mlx5dv_open_device(ibv_device* d, mlx5dv_context_attr* attr) {
  if (attr && (attr->comp_mask || (attr->flags & ~uint32_t(MLX5DV_CONTEXT_FLAGS_DEVX)))) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  // SOFTHCA_DEVX=0: the kernel refuses DevX contexts (no CAP_NET_RAW, or a kernel without DevX).
  if (attr && (attr->flags & MLX5DV_CONTEXT_FLAGS_DEVX) && !softhca_devx_allowed()) {
    errno = EPERM;
    return nullptr;
  }
  ibv_context* c = ibv_open_device(d);
  if (c && attr) softhca_set_devx(c, attr->flags & MLX5DV_CONTEXT_FLAGS_DEVX);
  return c;
}

int mlx5dv_query_device(ibv_context* c, mlx5dv_context* a) { return softhca_query_device_dv(c, a); }

ibv_qp* mlx5dv_create_qp(ibv_context* c, ibv_qp_init_attr_ex* a, mlx5dv_qp_init_attr* dv) {
  return softhca_create_qp_dv(c, a, dv);
}

mlx5dv_qp_ex* mlx5dv_qp_ex_from_ibv_qp_ex(ibv_qp_ex* x) { return softhca_qp_ex_to_dv(x); }

int softhca_init_obj_1_2(mlx5dv_obj* obj, uint64_t type) { return softhca_init_obj(obj, type); }
__asm__(".symver softhca_init_obj_1_2, mlx5dv_init_obj@@MLX5_1.2");
int softhca_init_obj_1_0(mlx5dv_obj* obj, uint64_t type) { return softhca_init_obj(obj, type); }
__asm__(".symver softhca_init_obj_1_0, mlx5dv_init_obj@MLX5_1.0");

ibv_cq_ex* mlx5dv_create_cq(ibv_context* c, ibv_cq_init_attr_ex* a, mlx5dv_cq_init_attr* dv) {
  // 64- and 128-byte CQEs (cqe_size); compressed CQEs and 128-byte padding are not modelled
  // (the capabilities that allow them are not reported).
  if (dv && (dv->comp_mask & ~uint64_t(MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE))) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  return softhca_create_cq_dv(c, a, dv);
}

// DevX general commands: only QUERY_HCA_CAP (general device and atomic capabilities); objects
// (QP, DCI, DCT) are created through mlx5dv_devx_obj_create (devx.cc, devx_obj.cc).
namespace {
void set_field(uint8_t* base, unsigned bit_off, unsigned bits, uint32_t v) {
  uint32_t* dw = reinterpret_cast<uint32_t*>(base) + bit_off / 32;
  unsigned shift = 32 - (bit_off % 32) - bits;
  uint32_t mask = (bits == 32 ? ~0u : ((1u << bits) - 1)) << shift;
  uint32_t cur = __builtin_bswap32(*dw);
  cur = (cur & ~mask) | ((v << shift) & mask);
  *dw = __builtin_bswap32(cur);
}
}  // namespace

int mlx5dv_devx_general_cmd(ibv_context* c, const void* in, size_t inlen, void* out, size_t outlen) {
  if (!softhca_is_softhca_device(c->device) || inlen < 16 || outlen < 16) return EINVAL;
  // QUERY_HCA_CAP is on the kernel's DevX whitelist, allowed without a DevX context, but only
  // where the kernel has DevX at all (SOFTHCA_DEVX=0: it has not).
  if (!softhca_devx_allowed()) return EOPNOTSUPP;
  const uint32_t* w = static_cast<const uint32_t*>(in);
  uint32_t opcode = __builtin_bswap32(w[0]) >> 16;
  uint32_t op_mod = __builtin_bswap32(w[1]) & 0xffff;
  auto* o = static_cast<uint8_t*>(out);
  memset(o, 0, outlen);
  if (opcode != 0x100) {  // bad opcode: the firmware's status, and EREMOTEIO from the kernel
    o[0] = 0x2;
    return EREMOTEIO;
  }
  if (outlen < 0x10 + 0x100) return EINVAL;
  uint8_t* cap = o + 0x10;
  unsigned type = op_mod >> 1;
  if (type == 0) {  // general device capabilities
    set_field(cap, 0x1b6, 2, 0);                     // port_type: IB
    set_field(cap, 0x1b8, 8, unsigned(softhca_num_ports()));
    // log_max_msg: 30 (1 GiB messages, as ibv_query_port's max_msg_sz), what every ConnectX
    // reports and the only value with which UCX 1.13 takes its DevX path; SOFTHCA_LOG_MAX_MSG=20
    // gives a device with 1 MiB messages (see README, "UCX").
    set_field(cap, 0x1c3, 5, unsigned(softhca_log_max_msg()));
    // Reads/atomics outstanding per DCI and QP (16 unless SOFTHCA_MAX_RD_ATOMIC says less).
    const unsigned log_ra = unsigned(softhca_log_max_rd_atomic());
    set_field(cap, 0x12a, 6, log_ra);  // log_max_ra_req_dc
    set_field(cap, 0x13a, 6, log_ra);  // log_max_ra_res_dc
    set_field(cap, 0x14a, 6, log_ra);  // log_max_ra_req_qp (max_qp_init_rd_atom)
    set_field(cap, 0x15a, 6, log_ra);  // log_max_ra_res_qp (max_qp_rd_atom)
    set_field(cap, 0x208, 1, 1);  // umr_modify_atomic_disabled: no UMR, so no atomic mkeys
    // fixed_buffer_size: KSM indirect mkeys (DevX CREATE_MKEY), what UCX 1.13 makes its atomic
    // keys with; max_indirection 1: their entries name MRs, not other indirect mkeys.
    set_field(cap, 0x108, 1, 1);
    set_field(cap, 0x100, 8, 1);
    set_field(cap, 0x88, 8, 15);  // log_max_qp_sz: 32768 WQEs
    set_field(cap, 0x80, 8, 15);  // log_max_srq_sz
    set_field(cap, 0x383, 5, 16); // log_max_rmp: RMPs (DevX shared receive queues) exist
    set_field(cap, 0x1fc, 4, 1);                     // cqe_version
    set_field(cap, 0x200, 1, softhca_compact_av());  // compact_address_vector
    set_field(cap, 0x21a, 1, 1);                     // dct
    set_field(cap, 0x21e, 1, 1);                     // atomic
    set_field(cap, 0x23d, 1, 1);                     // ud
    set_field(cap, 0x23f, 1, 1);                     // rc
  } else if (type == 3) {  // atomic capabilities
    set_field(cap, 0x40, 2, softhca_atomic_host_endian() ? 1 : 0);  // 8B reply endianness mode
    set_field(cap, 0x46, 1, 1);  // supported_atomic_req_8B_endianness_mode_1
    set_field(cap, 0x90, 16, softhca_masked_atomics() ? 0xf : 0x3);  // CS, FA (, masked CS, FA)
    // atomic_size_qp/_dc: bit n set = operands of 2^n bytes, 4 up to SOFTHCA_EXT_ATOMIC_MAX.
    const unsigned sizes = (softhca_ext_atomic_max() * 2 - 1) & ~3u;
    set_field(cap, 0xb0, 16, sizes);
    set_field(cap, 0xd0, 16, sizes);
    // fetch_add/swap/compare_swap_pci_atomic (bit 0: 4 bytes, 1: 8, 2: 16), as rdma-core's
    // get_pci_atomic_caps reads them: 8-byte FA and CS coherent with the CPU's atomics.
    const unsigned pci = softhca_pcie_atomics() ? 0x2 : 0;
    set_field(cap, 0x280, 16, pci);
    set_field(cap, 0x290, 16, 0);
    set_field(cap, 0x2a0, 16, pci);
  } else {
    o[0] = 0x3;  // bad parameter
    return EREMOTEIO;
  }
  return 0;
}

}  // extern "C"
