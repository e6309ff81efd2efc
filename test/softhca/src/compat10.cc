// The IBVERBS_1.0 entry points exist in rdma-core only for binaries linked against the pre-1.1
// struct layouts (2006). They are exported with the same versions so that the symbol table matches;
// the model does not implement that ABI, so each one fails with ENOSYS.
#include <cerrno>
#include <cstdint>

extern "C" void softhca_compat10_ibv_ack_async_event() { errno = ENOSYS; }
__asm__(".symver softhca_compat10_ibv_ack_async_event, ibv_ack_async_event@IBVERBS_1.0");
extern "C" uint64_t softhca_compat10_ibv_get_device_guid() { errno = ENOSYS; return 0; }
__asm__(".symver softhca_compat10_ibv_get_device_guid, ibv_get_device_guid@IBVERBS_1.0");
extern "C" void* softhca_compat10_ibv_get_device_name() { errno = ENOSYS; return nullptr; }
__asm__(".symver softhca_compat10_ibv_get_device_name, ibv_get_device_name@IBVERBS_1.0");
extern "C" void softhca_compat10_ibv_free_device_list() { errno = ENOSYS; }
__asm__(".symver softhca_compat10_ibv_free_device_list, ibv_free_device_list@IBVERBS_1.0");
extern "C" int softhca_compat10_ibv_query_pkey() { errno = ENOSYS; return -1; }
__asm__(".symver softhca_compat10_ibv_query_pkey, ibv_query_pkey@IBVERBS_1.0");
extern "C" void* softhca_compat10_ibv_create_cq() { errno = ENOSYS; return nullptr; }
__asm__(".symver softhca_compat10_ibv_create_cq, ibv_create_cq@IBVERBS_1.0");
extern "C" int softhca_compat10_ibv_close_device() { errno = ENOSYS; return -1; }
__asm__(".symver softhca_compat10_ibv_close_device, ibv_close_device@IBVERBS_1.0");
extern "C" int softhca_compat10_ibv_destroy_ah() { errno = ENOSYS; return -1; }
__asm__(".symver softhca_compat10_ibv_destroy_ah, ibv_destroy_ah@IBVERBS_1.0");
extern "C" int softhca_compat10_ibv_query_gid() { errno = ENOSYS; return -1; }
__asm__(".symver softhca_compat10_ibv_query_gid, ibv_query_gid@IBVERBS_1.0");
extern "C" int softhca_compat10_ibv_get_cq_event() { errno = ENOSYS; return -1; }
__asm__(".symver softhca_compat10_ibv_get_cq_event, ibv_get_cq_event@IBVERBS_1.0");
extern "C" int softhca_compat10_ibv_query_qp() { errno = ENOSYS; return -1; }
__asm__(".symver softhca_compat10_ibv_query_qp, ibv_query_qp@IBVERBS_1.0");
extern "C" int softhca_compat10_ibv_destroy_qp() { errno = ENOSYS; return -1; }
__asm__(".symver softhca_compat10_ibv_destroy_qp, ibv_destroy_qp@IBVERBS_1.0");
extern "C" void* softhca_compat10_ibv_reg_mr() { errno = ENOSYS; return nullptr; }
__asm__(".symver softhca_compat10_ibv_reg_mr, ibv_reg_mr@IBVERBS_1.0");
extern "C" int softhca_compat10_ibv_resize_cq() { errno = ENOSYS; return -1; }
__asm__(".symver softhca_compat10_ibv_resize_cq, ibv_resize_cq@IBVERBS_1.0");
extern "C" int softhca_compat10_ibv_destroy_srq() { errno = ENOSYS; return -1; }
__asm__(".symver softhca_compat10_ibv_destroy_srq, ibv_destroy_srq@IBVERBS_1.0");
extern "C" int softhca_compat10_ibv_query_srq() { errno = ENOSYS; return -1; }
__asm__(".symver softhca_compat10_ibv_query_srq, ibv_query_srq@IBVERBS_1.0");
extern "C" int softhca_compat10_ibv_dereg_mr() { errno = ENOSYS; return -1; }
__asm__(".symver softhca_compat10_ibv_dereg_mr, ibv_dereg_mr@IBVERBS_1.0");
extern "C" int softhca_compat10_ibv_detach_mcast() { errno = ENOSYS; return -1; }
__asm__(".symver softhca_compat10_ibv_detach_mcast, ibv_detach_mcast@IBVERBS_1.0");
extern "C" void* softhca_compat10_ibv_get_device_list() { errno = ENOSYS; return nullptr; }
__asm__(".symver softhca_compat10_ibv_get_device_list, ibv_get_device_list@IBVERBS_1.0");
extern "C" int softhca_compat10_ibv_modify_qp() { errno = ENOSYS; return -1; }
__asm__(".symver softhca_compat10_ibv_modify_qp, ibv_modify_qp@IBVERBS_1.0");
extern "C" void softhca_compat10_ibv_ack_cq_events() { errno = ENOSYS; }
__asm__(".symver softhca_compat10_ibv_ack_cq_events, ibv_ack_cq_events@IBVERBS_1.0");
extern "C" int softhca_compat10_ibv_query_port() { errno = ENOSYS; return -1; }
__asm__(".symver softhca_compat10_ibv_query_port, ibv_query_port@IBVERBS_1.0");
extern "C" void* softhca_compat10_ibv_create_srq() { errno = ENOSYS; return nullptr; }
__asm__(".symver softhca_compat10_ibv_create_srq, ibv_create_srq@IBVERBS_1.0");
extern "C" int softhca_compat10_ibv_get_async_event() { errno = ENOSYS; return -1; }
__asm__(".symver softhca_compat10_ibv_get_async_event, ibv_get_async_event@IBVERBS_1.0");
extern "C" void* softhca_compat10_ibv_create_ah() { errno = ENOSYS; return nullptr; }
__asm__(".symver softhca_compat10_ibv_create_ah, ibv_create_ah@IBVERBS_1.0");
extern "C" int softhca_compat10_ibv_modify_srq() { errno = ENOSYS; return -1; }
__asm__(".symver softhca_compat10_ibv_modify_srq, ibv_modify_srq@IBVERBS_1.0");
extern "C" int softhca_compat10_ibv_attach_mcast() { errno = ENOSYS; return -1; }
__asm__(".symver softhca_compat10_ibv_attach_mcast, ibv_attach_mcast@IBVERBS_1.0");
extern "C" void* softhca_compat10_ibv_create_qp() { errno = ENOSYS; return nullptr; }
__asm__(".symver softhca_compat10_ibv_create_qp, ibv_create_qp@IBVERBS_1.0");
extern "C" int softhca_compat10_ibv_query_device() { errno = ENOSYS; return -1; }
__asm__(".symver softhca_compat10_ibv_query_device, ibv_query_device@IBVERBS_1.0");
extern "C" int softhca_compat10_ibv_dealloc_pd() { errno = ENOSYS; return -1; }
__asm__(".symver softhca_compat10_ibv_dealloc_pd, ibv_dealloc_pd@IBVERBS_1.0");
extern "C" void* softhca_compat10_ibv_alloc_pd() { errno = ENOSYS; return nullptr; }
__asm__(".symver softhca_compat10_ibv_alloc_pd, ibv_alloc_pd@IBVERBS_1.0");
extern "C" int softhca_compat10_ibv_destroy_cq() { errno = ENOSYS; return -1; }
__asm__(".symver softhca_compat10_ibv_destroy_cq, ibv_destroy_cq@IBVERBS_1.0");
extern "C" void* softhca_compat10_ibv_open_device() { errno = ENOSYS; return nullptr; }
__asm__(".symver softhca_compat10_ibv_open_device, ibv_open_device@IBVERBS_1.0");
extern "C" void softhca_compat11_ibv_register_driver(const char*, void*) {}
__asm__(".symver softhca_compat11_ibv_register_driver, ibv_register_driver@IBVERBS_1.1");
