/* Two RC queue pairs of one process connected to each other (loopback), for the one-process
 * limits of perf/hw (verbs_amo.c, raw_amo.cc). C and C++. */
#ifndef HOSHMEM_PERF_HW_LOOPBACK_H
#define HOSHMEM_PERF_HW_LOOPBACK_H

#include <infiniband/verbs.h>
#include <string.h>

static inline struct ibv_qp *loopback_qp_depth(struct ibv_pd *pd, struct ibv_cq *cq,
                                               unsigned depth) {
  struct ibv_qp_init_attr a;
  memset(&a, 0, sizeof a);
  a.send_cq = a.recv_cq = cq;
  a.cap.max_send_wr = depth;
  a.cap.max_recv_wr = 1;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  a.qp_type = IBV_QPT_RC;
  struct ibv_qp *qp = ibv_create_qp(pd, &a);
  if (!qp) return NULL;
  struct ibv_qp_attr m;
  memset(&m, 0, sizeof m);
  m.qp_state = IBV_QPS_INIT;
  m.port_num = 1;
  m.qp_access_flags = IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  return qp;
}

static inline struct ibv_qp *loopback_qp(struct ibv_pd *pd, struct ibv_cq *cq) {
  return loopback_qp_depth(pd, cq, 64);
}

static inline void loopback_connect(struct ibv_qp *qp, unsigned dest, unsigned lid) {
  struct ibv_qp_attr m;
  memset(&m, 0, sizeof m);
  m.qp_state = IBV_QPS_RTR;
  m.path_mtu = IBV_MTU_4096;
  m.dest_qp_num = dest;
  m.max_dest_rd_atomic = 16;
  m.min_rnr_timer = 12;
  m.ah_attr.dlid = (uint16_t)lid;
  m.ah_attr.port_num = 1;
  ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                            IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  m.qp_state = IBV_QPS_RTS;
  m.timeout = 14;
  m.retry_cnt = 7;
  m.rnr_retry = 7;
  m.max_rd_atomic = 16;
  ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                            IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

#endif
