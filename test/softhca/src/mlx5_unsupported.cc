// mlx5dv entry points the model does not implement. They exist so the symbol table matches
// rdma-core 44 and programs load; each fails the way the real library fails on hardware that
// lacks the feature (NULL or an error number, errno = EOPNOTSUPP).
#include <cerrno>
#include <cstddef>
#include <cstdint>

extern "C" long mlx5dv_set_context_attr() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" void* mlx5dv_create_wq() { errno = EOPNOTSUPP; return nullptr; }  // struct ibv_wq *
extern "C" long mlx5dv_get_clock_info() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" void* mlx5dv_create_flow_action_esp() { errno = EOPNOTSUPP; return nullptr; }  // struct ibv_flow_action *
extern "C" void* mlx5dv_create_flow() { errno = EOPNOTSUPP; return nullptr; }  // struct ibv_flow *
extern "C" void* mlx5dv_create_flow_matcher() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_flow_matcher *
extern "C" long mlx5dv_destroy_flow_matcher() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" void* mlx5dv_create_flow_action_modify_header() { errno = EOPNOTSUPP; return nullptr; }  // struct ibv_flow_action *
extern "C" void* mlx5dv_create_flow_action_packet_reformat() { errno = EOPNOTSUPP; return nullptr; }  // struct ibv_flow_action *
extern "C" long mlx5dv_devx_query_eqn() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_devx_cq_modify() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_devx_cq_query() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_devx_ind_tbl_modify() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_devx_ind_tbl_query() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_devx_srq_modify() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_devx_srq_query() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_devx_wq_modify() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_devx_wq_query() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" void* mlx5dv_devx_create_cmd_comp() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_devx_cmd_comp *
extern "C" void mlx5dv_devx_destroy_cmd_comp() {  }  // void
extern "C" long mlx5dv_devx_get_async_cmd_comp() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_devx_obj_query_async() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" void* mlx5dv_alloc_dm() { errno = EOPNOTSUPP; return nullptr; }  // struct ibv_dm *
extern "C" void* mlx5dv_create_mkey() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_mkey *
extern "C" long mlx5dv_destroy_mkey() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" void* mlx5dv_dr_action_create_dest_ibv_qp() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_dr_action *
extern "C" void* mlx5dv_dr_action_create_dest_table() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_dr_action *
extern "C" void* mlx5dv_dr_action_create_dest_vport() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_dr_action *
extern "C" void* mlx5dv_dr_action_create_drop() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_dr_action *
extern "C" void* mlx5dv_dr_action_create_flow_counter() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_dr_action *
extern "C" void* mlx5dv_dr_action_create_modify_header() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_dr_action *
extern "C" void* mlx5dv_dr_action_create_packet_reformat() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_dr_action *
extern "C" void* mlx5dv_dr_action_create_tag() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_dr_action *
extern "C" long mlx5dv_dr_action_destroy() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" void* mlx5dv_dr_domain_create() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_dr_domain *
extern "C" long mlx5dv_dr_domain_destroy() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_dr_domain_sync() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" void* mlx5dv_dr_matcher_create() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_dr_matcher *
extern "C" long mlx5dv_dr_matcher_destroy() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" void* mlx5dv_dr_rule_create() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_dr_rule *
extern "C" long mlx5dv_dr_rule_destroy() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" void* mlx5dv_dr_table_create() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_dr_table *
extern "C" long mlx5dv_dr_table_destroy() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_devx_subscribe_devx_event_fd() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" void* mlx5dv_alloc_var() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_var *
extern "C" void* mlx5dv_dr_action_create_flow_meter() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_dr_action *
extern "C" long mlx5dv_dr_action_modify_flow_meter() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_dump_dr_domain() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_dump_dr_matcher() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_dump_dr_rule() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_dump_dr_table() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" void mlx5dv_free_var() {  }  // void
extern "C" void* mlx5dv_pp_alloc() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_pp *
extern "C" void mlx5dv_pp_free() {  }  // void
extern "C" void* mlx5dv_dr_action_create_default_miss() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_dr_action *
extern "C" void mlx5dv_dr_domain_set_reclaim_device_memory() {  }  // void
extern "C" long mlx5dv_modify_qp_lag_port() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_query_qp_lag_port() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" void* mlx5dv_dr_action_create_dest_devx_tir() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_dr_action *
extern "C" void* mlx5dv_dr_action_create_dest_array() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_dr_action *
extern "C" void* mlx5dv_dr_action_create_flow_sampler() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_dr_action *
extern "C" void* mlx5dv_dr_action_create_aso() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_dr_action *
extern "C" void* mlx5dv_dr_action_create_pop_vlan() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_dr_action *
extern "C" void* mlx5dv_dr_action_create_push_vlan() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_dr_action *
extern "C" long mlx5dv_dr_action_modify_aso() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_modify_qp_sched_elem() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_modify_qp_udp_sport() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" void* mlx5dv_sched_leaf_create() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_sched_leaf *
extern "C" long mlx5dv_sched_leaf_destroy() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_sched_leaf_modify() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" void* mlx5dv_sched_node_create() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_sched_node *
extern "C" long mlx5dv_sched_node_destroy() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_sched_node_modify() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_reserved_qpn_alloc() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_reserved_qpn_dealloc() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long _mlx5dv_query_port() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" void* mlx5dv_devx_umem_reg_ex() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_devx_umem *
extern "C" void* mlx5dv_dm_map_op_addr() { errno = EOPNOTSUPP; return nullptr; }  // void *
extern "C" long _mlx5dv_mkey_check() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" void mlx5dv_dr_domain_allow_duplicate_rules() {  }  // void
extern "C" long mlx5dv_map_ah_to_qp() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_qp_cancel_posted_send_wrs() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_crypto_login() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_crypto_login_query_state() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_crypto_logout() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_dci_stream_id_reset() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" void* mlx5dv_dek_create() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_dek *
extern "C" long mlx5dv_dek_destroy() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_dek_query() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" void* mlx5dv_dr_action_create_dest_ib_port() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_dr_action *
extern "C" long mlx5dv_dr_matcher_set_layout() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" void* mlx5dv_get_vfio_device_list() { errno = EOPNOTSUPP; return nullptr; }  // struct ibv_device **
extern "C" long mlx5dv_vfio_get_events_fd() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_vfio_process_events() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_dr_aso_other_domain_link() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_dr_aso_other_domain_unlink() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" void* mlx5dv_devx_alloc_msi_vector() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_devx_msi_vector *
extern "C" void* mlx5dv_devx_create_eq() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_devx_eq *
extern "C" long mlx5dv_devx_destroy_eq() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_devx_free_msi_vector() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" void* mlx5dv_create_steering_anchor() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_steering_anchor *
extern "C" void* mlx5dv_crypto_login_create() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_crypto_login_obj *
extern "C" long mlx5dv_crypto_login_destroy() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_crypto_login_query() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" long mlx5dv_destroy_steering_anchor() { errno = EOPNOTSUPP; return EOPNOTSUPP; }  // int
extern "C" void* mlx5dv_dr_action_create_dest_root_table() { errno = EOPNOTSUPP; return nullptr; }  // struct mlx5dv_dr_action *
