// rdma-core's provider-facing interface (IBVERBS_PRIVATE_34): used by kernel-backed providers,
// never by applications. The model has no kernel and no providers, so these fail with EOPNOTSUPP.
#include <cerrno>

extern "C" int __ioctl_final_num_attrs() { return EOPNOTSUPP; }
extern "C" void __verbs_log() {}
extern "C" void* _verbs_init_and_alloc_context() { errno = EOPNOTSUPP; return nullptr; }
extern "C" int execute_ioctl() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_advise_mr() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_alloc_dm() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_alloc_mw() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_alloc_pd() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_attach_mcast() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_close_xrcd() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_create_ah() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_create_counters() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_create_cq() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_create_cq_ex() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_create_flow() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_create_flow_action_esp() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_create_qp() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_create_qp_ex() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_create_qp_ex2() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_create_rwq_ind_table() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_create_srq() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_create_srq_ex() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_create_wq() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_dealloc_mw() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_dealloc_pd() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_dereg_mr() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_destroy_ah() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_destroy_counters() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_destroy_cq() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_destroy_flow() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_destroy_flow_action() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_destroy_qp() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_destroy_rwq_ind_table() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_destroy_srq() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_destroy_wq() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_detach_mcast() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_free_dm() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_get_context() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_modify_cq() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_modify_flow_action_esp() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_modify_qp() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_modify_qp_ex() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_modify_srq() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_modify_wq() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_open_qp() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_open_xrcd() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_poll_cq() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_post_recv() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_post_send() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_post_srq_recv() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_query_context() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_query_device_any() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_query_mr() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_query_port() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_query_qp() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_query_srq() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_read_counters() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_reg_dm_mr() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_reg_dmabuf_mr() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_reg_mr() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_req_notify_cq() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_rereg_mr() { return EOPNOTSUPP; }
extern "C" int ibv_cmd_resize_cq() { return EOPNOTSUPP; }
extern "C" int ibv_read_ibdev_sysfs_file() { return EOPNOTSUPP; }
extern "C" {
bool verbs_allow_disassociate_destroy = false;
}
extern "C" void verbs_init_cq() {}
extern "C" void* verbs_open_device() { errno = EOPNOTSUPP; return nullptr; }
extern "C" void verbs_register_driver_34() {}
extern "C" void verbs_set_ops() {}
extern "C" void verbs_uninit_context() {}
