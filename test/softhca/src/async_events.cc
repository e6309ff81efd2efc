// softhca affiliated asynchronous events. A responder that detects a remote access error or an
// invalid request on an RC QP moves that QP to the error state and raises the event on its
// context's async fd, as ConnectX does; ibv_get_async_event reads it from there.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include "hca.h"

namespace softhca {

void raise_qp_event(Qp* qp, ibv_event_type type) {
  ibv_async_event ev{};
  ev.element.qp = &qp->qpx.qp_base;
  ev.event_type = type;
  int fd = qp->ctx->async_pipe[1];
  fcntl(fd, F_SETFL, O_NONBLOCK);  // the model never blocks on a program that does not read
  if (write(fd, &ev, sizeof ev) != ssize_t(sizeof ev))
    fprintf(stderr, "softhca: async event queue full: event lost\n");
}

void raise_cq_event(Cq* cq, ibv_event_type type) {
  ibv_async_event ev{};
  ev.element.cq = ibv_cq_ex_to_cq(&cq->cqx);  // the ibv_cq the program holds
  ev.event_type = type;
  int fd = cq->ctx->async_pipe[1];
  fcntl(fd, F_SETFL, O_NONBLOCK);
  if (write(fd, &ev, sizeof ev) != ssize_t(sizeof ev))
    fprintf(stderr, "softhca: async event queue full: event lost\n");
}

// QP lock held. The responder's QP stops accepting (published), flushes its work, and the
// program learns why from the async event.
void responder_error(Hca& h, Qp* qp, ibv_event_type type) {
  if (qp->kind != Kind::kRc || qp->attr.qp_state == IBV_QPS_ERR) return;
  qp->attr.qp_state = IBV_QPS_ERR;
  qp->qpx.qp_base.state = IBV_QPS_ERR;
  h.publish_qp(qp);
  h.flush_qp(qp);
  raise_qp_event(qp, type);
}

}  // namespace softhca
