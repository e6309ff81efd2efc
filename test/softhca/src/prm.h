// softhca: the subset of the mlx5 PRM command layouts that the model's DevX objects read and
// write, as bit-layout structs in the form rdma-core's DEVX_SET/DEVX_GET/DEVX_ADDR_OF macros
// (mlx5dv.h) take: every member is an array of one byte per bit, so offsetof() is the bit offset.
// The offsets are the PRM's (as rdma-core's providers/mlx5/mlx5_ifc.h and the kernel's
// mlx5_ifc.h encode them); the structs are this model's own, with the fields it does not use
// folded into reserved ranges. Names carry an `sh_` prefix so that a program may include these
// next to another copy of mlx5_ifc.h.
#pragma once
#include <cstdint>

#define SH_BITS(name, n) uint8_t name[n]

// Address path (ads), 0x160 bits.
struct mlx5_ifc_sh_ads_bits {
  SH_BITS(rsvd_0, 0x10);
  SH_BITS(pkey_index, 0x10);
  SH_BITS(rsvd_20, 0x8);
  SH_BITS(grh, 0x1);
  SH_BITS(mlid, 0x7);
  SH_BITS(rlid, 0x10);
  SH_BITS(ack_timeout, 0x5);
  SH_BITS(rsvd_45, 0x13);
  SH_BITS(hop_limit, 0x8);
  SH_BITS(rsvd_60, 0x4);
  SH_BITS(tclass, 0x8);
  SH_BITS(flow_label, 0x14);
  SH_BITS(rgid_rip, 0x80);
  SH_BITS(rsvd_100, 0x24);
  SH_BITS(sl, 0x4);
  SH_BITS(vhca_port_num, 0x8);
  SH_BITS(rsvd_130, 0x30);
};

// QP context (qpc), 0x740 bits.
struct mlx5_ifc_sh_qpc_bits {
  SH_BITS(state, 0x4);
  SH_BITS(rsvd_4, 0x4);
  SH_BITS(st, 0x8);
  SH_BITS(rsvd_10, 0x3);
  SH_BITS(pm_state, 0x2);
  SH_BITS(rsvd_15, 0x3);
  SH_BITS(offload_type, 0x4);
  SH_BITS(rsvd_1c, 0xc);
  SH_BITS(pd, 0x18);
  SH_BITS(mtu, 0x3);
  SH_BITS(log_msg_max, 0x5);
  SH_BITS(rsvd_48, 0x1);
  SH_BITS(log_rq_size, 0x4);
  SH_BITS(log_rq_stride, 0x3);
  SH_BITS(no_sq, 0x1);
  SH_BITS(log_sq_size, 0x4);
  SH_BITS(rsvd_55, 0xb);
  SH_BITS(counter_set_id, 0x8);
  SH_BITS(uar_page, 0x18);
  SH_BITS(rsvd_80, 0x8);
  SH_BITS(user_index, 0x18);
  SH_BITS(rsvd_a0, 0x8);
  SH_BITS(remote_qpn, 0x18);
  struct mlx5_ifc_sh_ads_bits primary_address_path;   // 0xc0
  struct mlx5_ifc_sh_ads_bits secondary_address_path; // 0x220
  SH_BITS(log_ack_req_freq, 0x4);                     // 0x380
  SH_BITS(rsvd_384, 0x4);
  SH_BITS(log_sra_max, 0x3);
  SH_BITS(rsvd_38b, 0x2);
  SH_BITS(retry_count, 0x3);
  SH_BITS(rnr_retry, 0x3);
  SH_BITS(rsvd_393, 0xd);
  SH_BITS(rsvd_3a0, 0x20);
  SH_BITS(rsvd_3c0, 0x8);
  SH_BITS(next_send_psn, 0x18);
  SH_BITS(rsvd_3e0, 0x8);
  SH_BITS(cqn_snd, 0x18);
  SH_BITS(rsvd_400, 0x88);
  SH_BITS(log_rra_max, 0x3);  // 0x488
  SH_BITS(rsvd_48b, 0x1);
  SH_BITS(atomic_mode, 0x4);
  SH_BITS(rre, 0x1);
  SH_BITS(rwe, 0x1);
  SH_BITS(rae, 0x1);
  SH_BITS(rsvd_493, 0xd);
  SH_BITS(rsvd_4a0, 0x3);
  SH_BITS(min_rnr_nak, 0x5);
  SH_BITS(next_rcv_psn, 0x18);
  SH_BITS(rsvd_4c0, 0x28);
  SH_BITS(cqn_rcv, 0x18);     // 0x4e8
  SH_BITS(dbr_addr, 0x40);    // 0x500
  SH_BITS(q_key, 0x20);       // 0x540
  SH_BITS(rsvd_560, 0x5);
  SH_BITS(rq_type, 0x3);
  SH_BITS(srqn_rmpn_xrqn, 0x18);
  SH_BITS(rsvd_580, 0xb0);
  SH_BITS(cs_req, 0x8);       // 0x630
  SH_BITS(cs_res, 0x8);
  SH_BITS(dc_access_key, 0x40);  // 0x640
  SH_BITS(rsvd_680, 0x3);
  SH_BITS(dbr_umem_valid, 0x1);
  SH_BITS(rsvd_684, 0x9c);
  SH_BITS(dbr_umem_id, 0x20);  // 0x720
};

// Every QP command (CREATE_QP, the state transitions, QUERY_QP, DESTROY_QP, 2ERR, 2RST) in one
// layout: the QPN at 0x48 (reserved in CREATE_QP), the QPC at 0xc0, CREATE_QP's WQ umem after it.
struct mlx5_ifc_sh_qp_in_bits {
  SH_BITS(opcode, 0x10);
  SH_BITS(uid, 0x10);
  SH_BITS(rsvd_20, 0x10);
  SH_BITS(op_mod, 0x10);
  SH_BITS(rsvd_40, 0x8);
  SH_BITS(qpn, 0x18);
  SH_BITS(rsvd_60, 0x20);
  SH_BITS(opt_param_mask, 0x20);
  SH_BITS(rsvd_a0, 0x20);
  struct mlx5_ifc_sh_qpc_bits qpc;
  SH_BITS(wq_umem_offset, 0x40);  // 0x800
  SH_BITS(wq_umem_id, 0x20);
  SH_BITS(wq_umem_valid, 0x1);
  SH_BITS(rsvd_861, 0x1f);
};

// Their outputs: status and syndrome; CREATE_QP's QPN at 0x48; QUERY_QP's QPC at 0xc0.
struct mlx5_ifc_sh_qp_out_bits {
  SH_BITS(status, 0x8);
  SH_BITS(rsvd_8, 0x18);
  SH_BITS(syndrome, 0x20);
  SH_BITS(rsvd_40, 0x8);
  SH_BITS(qpn, 0x18);
  SH_BITS(rsvd_60, 0x20);
  SH_BITS(opt_param_mask, 0x20);
  SH_BITS(rsvd_a0, 0x20);
  struct mlx5_ifc_sh_qpc_bits qpc;
  SH_BITS(rsvd_800, 0x80);
};

// DCT context (dctc), 0x200 bits.
struct mlx5_ifc_sh_dctc_bits {
  SH_BITS(rsvd_0, 0x4);
  SH_BITS(state, 0x4);
  SH_BITS(rsvd_8, 0x20);
  SH_BITS(user_index, 0x18);
  SH_BITS(rsvd_40, 0x8);
  SH_BITS(cqn, 0x18);
  SH_BITS(counter_set_id, 0x8);
  SH_BITS(atomic_mode, 0x4);
  SH_BITS(rre, 0x1);
  SH_BITS(rwe, 0x1);
  SH_BITS(rae, 0x1);
  SH_BITS(rsvd_6f, 0x19);
  SH_BITS(cs_res, 0x8);  // 0x88
  SH_BITS(rsvd_90, 0x3);
  SH_BITS(min_rnr_nak, 0x5);
  SH_BITS(rsvd_98, 0x10);
  SH_BITS(srqn_xrqn, 0x18);  // 0xa8
  SH_BITS(rsvd_c0, 0x8);
  SH_BITS(pd, 0x18);
  SH_BITS(tclass, 0x8);
  SH_BITS(rsvd_e8, 0x4);
  SH_BITS(flow_label, 0x14);
  SH_BITS(dc_access_key, 0x40);  // 0x100
  SH_BITS(rsvd_140, 0x5);
  SH_BITS(mtu, 0x3);
  SH_BITS(port, 0x8);
  SH_BITS(pkey_index, 0x10);
  SH_BITS(rsvd_160, 0x8);
  SH_BITS(my_addr_index, 0x8);
  SH_BITS(rsvd_170, 0x8);
  SH_BITS(hop_limit, 0x8);
  SH_BITS(dc_access_key_violation_count, 0x20);
  SH_BITS(rsvd_1a0, 0x60);
};

// CREATE_DCT / DRAIN_DCT / QUERY_DCT / DESTROY_DCT: the DCT number at 0x48 (reserved in
// CREATE_DCT), the DCTC at 0x80.
struct mlx5_ifc_sh_dct_in_bits {
  SH_BITS(opcode, 0x10);
  SH_BITS(uid, 0x10);
  SH_BITS(rsvd_20, 0x10);
  SH_BITS(op_mod, 0x10);
  SH_BITS(rsvd_40, 0x8);
  SH_BITS(dctn, 0x18);
  SH_BITS(rsvd_60, 0x20);
  struct mlx5_ifc_sh_dctc_bits dctc;
  SH_BITS(rsvd_280, 0x180);
};

struct mlx5_ifc_sh_dct_out_bits {
  SH_BITS(status, 0x8);
  SH_BITS(rsvd_8, 0x18);
  SH_BITS(syndrome, 0x20);
  SH_BITS(rsvd_40, 0x8);
  SH_BITS(dctn, 0x18);
  SH_BITS(rsvd_60, 0x20);
  struct mlx5_ifc_sh_dctc_bits dctc;
};

// Work queue (wq), as an RMP's context carries it: type, PD, doorbell record, stride and size,
// the umems; 0x1c0 bits of it are used.
struct mlx5_ifc_sh_wq_bits {
  SH_BITS(wq_type, 0x4);
  SH_BITS(rsvd_4, 0x44);
  SH_BITS(pd, 0x18);  // 0x48
  SH_BITS(rsvd_60, 0x8);
  SH_BITS(uar_page, 0x18);
  SH_BITS(dbr_addr, 0x40);  // 0x80
  SH_BITS(hw_counter, 0x20);
  SH_BITS(sw_counter, 0x20);
  SH_BITS(rsvd_100, 0xc);
  SH_BITS(log_wq_stride, 0x4);  // 0x10c
  SH_BITS(rsvd_110, 0x3);
  SH_BITS(log_wq_pg_sz, 0x5);
  SH_BITS(rsvd_118, 0x3);
  SH_BITS(log_wq_sz, 0x5);  // 0x11b
  SH_BITS(dbr_umem_valid, 0x1);
  SH_BITS(wq_umem_valid, 0x1);
  SH_BITS(rsvd_122, 0x1e);
  SH_BITS(dbr_umem_id, 0x20);  // 0x140
  SH_BITS(wq_umem_id, 0x20);
  SH_BITS(wq_umem_offset, 0x40);  // 0x180
  SH_BITS(rsvd_1c0, 0x440);
};

// RMP context: state, then the WQ at 0x180.
struct mlx5_ifc_sh_rmpc_bits {
  SH_BITS(rsvd_0, 0x8);
  SH_BITS(state, 0x4);
  SH_BITS(rsvd_c, 0x14);
  SH_BITS(basic_cyclic_rcv_wqe, 0x1);
  SH_BITS(rsvd_21, 0x15f);
  struct mlx5_ifc_sh_wq_bits wq;
};

// CREATE_RMP / DESTROY_RMP / QUERY_RMP (output alike): the RMP number at 0x48, the context at 0x100.
struct mlx5_ifc_sh_rmp_in_bits {
  SH_BITS(opcode, 0x10);
  SH_BITS(uid, 0x10);
  SH_BITS(rsvd_20, 0x10);
  SH_BITS(op_mod, 0x10);
  SH_BITS(rsvd_40, 0x8);
  SH_BITS(rmpn, 0x18);
  SH_BITS(rsvd_60, 0xa0);
  struct mlx5_ifc_sh_rmpc_bits ctx;
};
struct mlx5_ifc_sh_rmp_out_bits {
  SH_BITS(status, 0x8);
  SH_BITS(rsvd_8, 0x18);
  SH_BITS(syndrome, 0x20);
  SH_BITS(rsvd_40, 0x8);
  SH_BITS(rmpn, 0x18);
  SH_BITS(rsvd_60, 0xa0);
  struct mlx5_ifc_sh_rmpc_bits ctx;
};

// Memory key context (mkc), 0x200 bits. In KSM mode the 5 bits PRM names log_page_size hold
// log_entity_size (the size of the memory each KSM entry maps).
struct mlx5_ifc_sh_mkc_bits {
  SH_BITS(rsvd_0, 0x1);
  SH_BITS(free, 0x1);
  SH_BITS(rsvd_2, 0x1);
  SH_BITS(access_mode_4_2, 0x3);
  SH_BITS(rsvd_6, 0x7);
  SH_BITS(relaxed_ordering_write, 0x1);  // 0xd
  SH_BITS(rsvd_e, 0x2);
  SH_BITS(umr_en, 0x1);                  // 0x10
  SH_BITS(a, 0x1);
  SH_BITS(rw, 0x1);
  SH_BITS(rr, 0x1);
  SH_BITS(lw, 0x1);
  SH_BITS(lr, 0x1);
  SH_BITS(access_mode_1_0, 0x2);         // 0x16
  SH_BITS(rsvd_18, 0x8);
  SH_BITS(qpn, 0x18);                    // 0x20
  SH_BITS(mkey_7_0, 0x8);                // 0x38
  SH_BITS(rsvd_40, 0x20);
  SH_BITS(length64, 0x1);                // 0x60
  SH_BITS(rsvd_61, 0x7);
  SH_BITS(pd, 0x18);                     // 0x68
  SH_BITS(start_addr, 0x40);             // 0x80
  SH_BITS(len, 0x40);                    // 0xc0
  SH_BITS(bsf_octword_size, 0x20);       // 0x100
  SH_BITS(rsvd_120, 0x80);
  SH_BITS(translations_octword_size, 0x20);  // 0x1a0
  SH_BITS(rsvd_1c0, 0x19);
  SH_BITS(relaxed_ordering_read, 0x1);   // 0x1d9
  SH_BITS(rsvd_1da, 0x1);
  SH_BITS(log_entity_size, 0x5);         // 0x1db
  SH_BITS(rsvd_1e0, 0x20);
};

// CREATE_MKEY: the mkc at 0x80, the number of translation entries at 0x300, the entries (KLM/KSM,
// 16 bytes each) after the fixed part, from byte 0x110.
struct mlx5_ifc_sh_create_mkey_in_bits {
  SH_BITS(opcode, 0x10);
  SH_BITS(uid, 0x10);
  SH_BITS(rsvd_20, 0x10);
  SH_BITS(op_mod, 0x10);
  SH_BITS(rsvd_40, 0x20);
  SH_BITS(pg_access, 0x1);  // 0x60
  SH_BITS(mkey_umem_valid, 0x1);
  SH_BITS(rsvd_62, 0x1e);
  struct mlx5_ifc_sh_mkc_bits memory_key_mkey_entry;  // 0x80
  SH_BITS(rsvd_280, 0x80);
  SH_BITS(translations_octword_actual_size, 0x20);  // 0x300
  SH_BITS(rsvd_320, 0x560);
  // 0x880 (byte 0x110, the struct's size): klm_pas_mtt, the translation entries
};
struct mlx5_ifc_sh_create_mkey_out_bits {
  SH_BITS(status, 0x8);
  SH_BITS(rsvd_8, 0x18);
  SH_BITS(syndrome, 0x20);
  SH_BITS(rsvd_40, 0x8);
  SH_BITS(mkey_index, 0x18);  // 0x48: the key is mkey_index << 8 | mkey_7_0
  SH_BITS(rsvd_60, 0x20);
};
// DESTROY_MKEY / QUERY_MKEY input: the mkey index at 0x48.
struct mlx5_ifc_sh_mkey_cmd_in_bits {
  SH_BITS(opcode, 0x10);
  SH_BITS(uid, 0x10);
  SH_BITS(rsvd_20, 0x10);
  SH_BITS(op_mod, 0x10);
  SH_BITS(rsvd_40, 0x8);
  SH_BITS(mkey_index, 0x18);
  SH_BITS(rsvd_60, 0x20);
};
// A KLM or KSM translation entry (16 bytes; KSM ignores byte_count).
struct mlx5_ifc_sh_klm_bits {
  SH_BITS(byte_count, 0x20);
  SH_BITS(mkey, 0x20);
  SH_BITS(address, 0x40);
};

// Command opcodes, QP service types and states, statuses (PRM numbering).
enum : uint16_t {
  SH_CMD_QUERY_HCA_CAP = 0x100,
  SH_CMD_CREATE_MKEY = 0x200,
  SH_CMD_QUERY_MKEY = 0x201,
  SH_CMD_DESTROY_MKEY = 0x202,
  SH_CMD_CREATE_QP = 0x500,
  SH_CMD_DESTROY_QP = 0x501,
  SH_CMD_RST2INIT_QP = 0x502,
  SH_CMD_INIT2RTR_QP = 0x503,
  SH_CMD_RTR2RTS_QP = 0x504,
  SH_CMD_RTS2RTS_QP = 0x505,
  SH_CMD_2ERR_QP = 0x507,
  SH_CMD_2RST_QP = 0x50a,
  SH_CMD_QUERY_QP = 0x50b,
  SH_CMD_INIT2INIT_QP = 0x50e,
  SH_CMD_CREATE_DCT = 0x710,
  SH_CMD_DESTROY_DCT = 0x711,
  SH_CMD_DRAIN_DCT = 0x712,
  SH_CMD_QUERY_DCT = 0x713,
  SH_CMD_CREATE_RMP = 0x90c,
  SH_CMD_DESTROY_RMP = 0x90e,
  SH_CMD_QUERY_RMP = 0x90f,
};
// mkc access modes (access_mode_4_2 << 2 | access_mode_1_0).
enum : uint8_t { SH_MKC_ACCESS_MODE_PA = 0x0, SH_MKC_ACCESS_MODE_MTT = 0x1, SH_MKC_ACCESS_MODE_KLMS = 0x2,
                 SH_MKC_ACCESS_MODE_KSM = 0x3 };
enum : uint8_t { SH_RMPC_STATE_RST = 0x0, SH_RMPC_STATE_RDY = 0x1, SH_RMPC_STATE_ERR = 0x3 };
enum : uint8_t { SH_WQ_LINKED_LIST = 0x0, SH_WQ_CYCLIC = 0x1 };
enum : uint8_t { SH_QPC_ST_RC = 0x0, SH_QPC_ST_UD = 0x2, SH_QPC_ST_DCI = 0x5 };
enum : uint8_t {
  SH_QP_STATE_RST = 0x0,
  SH_QP_STATE_INIT = 0x1,
  SH_QP_STATE_RTR = 0x2,
  SH_QP_STATE_RTS = 0x3,
  SH_QP_STATE_SQER = 0x4,
  SH_QP_STATE_ERR = 0x6,
};
enum : uint8_t { SH_DCTC_STATE_ACTIVE = 0x0, SH_DCTC_STATE_DRAINING = 0x1, SH_DCTC_STATE_DRAINED = 0x2 };
enum : uint8_t { SH_RQ_REGULAR = 0x0, SH_RQ_SRQ = 0x1, SH_RQ_ZERO = 0x3 };
enum : uint8_t {
  SH_STAT_OK = 0x0,
  SH_STAT_BAD_OP = 0x2,
  SH_STAT_BAD_PARAM = 0x3,
  SH_STAT_BAD_RES = 0x5,
  SH_STAT_BAD_RES_STATE = 0x9,
  SH_STAT_BAD_INP_LEN = 0x10,
  SH_STAT_BAD_OUTP_LEN = 0x11,
  SH_STAT_BAD_QP_STATE = 0x30,
};
// opt_param_mask bits of the QP state transitions.
enum : uint32_t {
  SH_OPT_RRE = 1u << 1,
  SH_OPT_RAE = 1u << 2,
  SH_OPT_RWE = 1u << 3,
  SH_OPT_PKEY_INDEX = 1u << 4,
  SH_OPT_RNR_TIMEOUT = 1u << 6,
};
// Asynchronous event types (EQE event_type) a DevX object can be subscribed to.
enum : uint16_t { SH_EVENT_LAST_WQE_REACHED = 0x13 };
