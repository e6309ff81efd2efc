/* The limit of an AMO over UD on this device: UD send/recv written directly in verbs between two
 * processes (forked before either opens the device, so each is a node of its own, like two PEs
 * with HOSHMEM_PES_PER_NODE=1), one UD QP each, an address handle to the other. The parent
 * (pinned to CPU 0) sends requests, the child (pinned to CPU 1 mod the CPU count) answers each
 * with a datagram of the same size; like hoshmem's UD transport, every datagram is copied into a
 * registered send slot and sent signaled, and lands in a registered receive slot behind the
 * 40 bytes a UD receive keeps for a GRH; the receive queue is refilled as it is consumed.
 *   verbs_ud [ITERATIONS [WINDOW]]
 * The child waits for a request in one of two ways:
 *   poll    ibv_poll_cq in a loop (a responder that spins: the best case)
 *   event   ibv_poll_cq, else ibv_req_notify_cq, poll again, else block in ibv_get_cq_event on
 *           the CQ's completion channel (a responder that sleeps until a datagram arrives)
 *   ppoll   as event, but block in ppoll(2) on the channel's fd and call ibv_get_cq_event once it
 *           is readable: what hoshmem's progress thread does (it also waits for an eventfd and a
 *           timeout); ping-pong of 8 and 64 B and the rate
 * and two more change the requester, not the responder (which polls), ping-pong of 8 and 64 B:
 *   yield   the requester calls sched_yield after every ibv_poll_cq that found nothing (as
 *           hoshmem's blocking calls do while they wait)
 *   armed   as yield, and the requester arms its receive CQ (ibv_req_notify_cq) before each
 *           request while a second thread of it blocks in poll(2) on the completion channel and
 *           takes the events (ibv_get_cq_event, ibv_ack_cq_events): what a hoshmem initiator
 *           does, whose progress thread sleeps on the channel while the application polls
 * Prints, each the best of 5 timed loops after one untimed (ITERATIONS each):
 *   pp MODE SIZE ONEWAY_NS RTT_NS   ping-pong of SIZE-byte datagrams (8 B to the port's MTU):
 *                                   one request, wait for its answer; ONEWAY = RTT / 2
 *   rate MODE 8 MOPS                request/answer pairs of 8 bytes with WINDOW (default 32, like
 *                                   HOSHMEM_UD_WINDOW) requests in flight: a new request as each
 *                                   answer arrives; answers per microsecond
 *   mtu BYTES                       the port's active MTU (the largest datagram) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define QKEY 0x11111111u
#define GRH 40
#define SEND_SLOTS 256
#define RECV_SLOTS 512
#define MAX_WINDOW 128
#define STOP 0x53544f50u /* a 4-byte datagram: stop */
#define MODE 0x4d4f4445u /* an 8-byte datagram {MODE, 0 poll | 1 event} */

struct side {
  uint32_t qpn, lid;
};

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void die(const char *what) {
  fprintf(stderr, "verbs_ud: %s\n", what);
  exit(1);
}

/* the requester's channel is read by its event thread ("armed"): the receive CQ has one */
static struct ibv_context *ctx;
static struct ibv_comp_channel *channel;
static struct ibv_cq *send_cq, *recv_cq;
static struct ibv_qp *qp;
static struct ibv_mr *mr;
static struct ibv_ah *ah;
static uint8_t *buf;
static size_t mtu;
static unsigned next_send;
static struct side peer;

static int yield_when_empty; /* the requester: sched_yield after an empty poll */

static uint8_t *send_slot(unsigned i) { return buf + (size_t)i * mtu; }
static uint8_t *recv_slot(unsigned i) { return buf + SEND_SLOTS * mtu + (size_t)i * (GRH + mtu); }

static void post_recv(unsigned slot) {
  struct ibv_sge sge = {(uintptr_t)recv_slot(slot), (uint32_t)(GRH + mtu), mr->lkey};
  struct ibv_recv_wr wr, *bad;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  if (ibv_post_recv(qp, &wr, &bad)) die("ibv_post_recv failed");
}

static void reap_sends(void) {
  struct ibv_wc wc[16];
  int n;
  while ((n = ibv_poll_cq(send_cq, 16, wc)) > 0)
    for (int i = 0; i < n; i++)
      if (wc[i].status != IBV_WC_SUCCESS) die("send completion error");
  if (n < 0) die("ibv_poll_cq (send) failed");
}

/* copies len bytes into the next send slot and sends them to the peer, signaled */
static void send_bytes(const void *data, uint32_t len) {
  const unsigned slot = next_send++ % SEND_SLOTS;
  memcpy(send_slot(slot), data, len);
  struct ibv_sge sge = {(uintptr_t)send_slot(slot), len, mr->lkey};
  struct ibv_send_wr wr, *bad;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = slot;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.wr.ud.ah = ah;
  wr.wr.ud.remote_qpn = peer.qpn;
  wr.wr.ud.remote_qkey = QKEY;
  if (ibv_post_send(qp, &wr, &bad)) die("ibv_post_send failed");
}

/* one received datagram: its payload is copied to `out` (at most mtu bytes); returns its length */
static uint32_t take(const struct ibv_wc *wc, void *out) {
  if (wc->status != IBV_WC_SUCCESS || wc->byte_len < GRH) die("receive completion error");
  const uint32_t len = wc->byte_len - GRH;
  memcpy(out, recv_slot((unsigned)wc->wr_id) + GRH, len);
  post_recv((unsigned)wc->wr_id);
  return len;
}

/* the parent: waits (polling) for one answer; dies after 10 s (a lost datagram) */
static void wait_answer(void *out) {
  struct ibv_wc wc;
  int n;
  const double give_up = now_ns() + 10e9;
  unsigned spins = 0;
  while ((n = ibv_poll_cq(recv_cq, 1, &wc)) == 0) {
    if (++spins % 65536 == 0 && now_ns() > give_up) die("no answer for 10 s (a datagram lost?)");
    if (yield_when_empty) sched_yield();
  }
  if (n < 0) die("ibv_poll_cq failed");
  take(&wc, out);
  reap_sends();
}

/* the child: answers every request with the same bytes until STOP */
static void responder(void) {
  static uint8_t msg[8192];
  uint32_t mode = 0; /* 0 poll, 1 event, 2 ppoll */
  for (;;) {
    struct ibv_wc wc[16];
    int n = ibv_poll_cq(recv_cq, 16, wc);
    if (n < 0) die("ibv_poll_cq failed");
    if (n == 0 && mode != 0) {
      if (ibv_req_notify_cq(recv_cq, 0)) die("ibv_req_notify_cq failed");
      n = ibv_poll_cq(recv_cq, 16, wc);
      if (n == 0) {
        struct ibv_cq *cq;
        void *cq_context;
        if (mode == 2) { /* sleep in ppoll on the channel's fd first */
          struct pollfd fd = {channel->fd, POLLIN, 0};
          if (ppoll(&fd, 1, NULL, NULL) < 0) die("ppoll failed");
        }
        if (ibv_get_cq_event(channel, &cq, &cq_context)) die("ibv_get_cq_event failed");
        ibv_ack_cq_events(cq, 1);
        continue;
      }
    }
    for (int i = 0; i < n; i++) {
      const uint32_t len = take(&wc[i], msg);
      uint32_t word;
      memcpy(&word, msg, 4);
      if (len == 4 && word == STOP) return;
      if (len == 8 && word == MODE) {
        memcpy(&word, msg + 4, 4);
        mode = word;
      }
      send_bytes(msg, len);
    }
    reap_sends();
  }
}

static void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof set, &set); /* best effort */
}

#define BEST(OUT, N, BODY)                    \
  do {                                        \
    double best_ = 1e30;                      \
    for (int rep_ = 0; rep_ < 6; rep_++) {    \
      double t0_ = now_ns();                  \
      BODY;                                   \
      double t_ = (now_ns() - t0_) / (N);     \
      if (rep_ > 0 && t_ < best_) best_ = t_; \
    }                                         \
    (OUT) = best_;                            \
  } while (0)

/* "armed": the requester's second thread takes the events of its receive CQ */
static volatile int armed, stop_events;

static void *event_thread(void *arg) {
  (void)arg;
  while (!stop_events) {
    struct pollfd fd = {channel->fd, POLLIN, 0};
    if (poll(&fd, 1, 10) <= 0) continue; /* looks at stop_events every 10 ms */
    struct ibv_cq *cq;
    void *cq_context;
    if (ibv_get_cq_event(channel, &cq, &cq_context) == 0) {
      ibv_ack_cq_events(cq, 1);
    }
  }
  return NULL;
}

static void ping_pong(int iters, uint32_t size, uint8_t *msg, uint8_t *answer) {
  for (int i = 0; i < iters; i++) {
    msg[0] = (uint8_t)i;
    if (armed && ibv_req_notify_cq(recv_cq, 0)) die("ibv_req_notify_cq failed");
    send_bytes(msg, size);
    wait_answer(answer);
  }
}

/* iters request/answer pairs, `window` requests in flight */
static void windowed(int iters, int window, uint8_t *msg, uint8_t *answer) {
  int sent = 0, answered = 0;
  for (; sent < window && sent < iters; sent++) send_bytes(msg, 8);
  while (answered < iters) {
    struct ibv_wc wc[16];
    const int n = ibv_poll_cq(recv_cq, 16, wc);
    if (n < 0) die("ibv_poll_cq failed");
    for (int i = 0; i < n; i++) {
      take(&wc[i], answer);
      answered++;
      if (sent < iters) send_bytes(msg, 8), sent++;
    }
    reap_sends();
  }
}

int main(int argc, char **argv) {
  const int iters = argc > 1 ? atoi(argv[1]) : 1000;
  int window = argc > 2 ? atoi(argv[2]) : 32;
  if (window > MAX_WINDOW) window = MAX_WINDOW;
  if (window < 1) window = 1;
  int to_child[2], to_parent[2];
  if (pipe(to_child) || pipe(to_parent)) die("pipe failed");
  fflush(stdout);
  const pid_t child = fork();
  if (child < 0) die("fork failed");
  const int active = child != 0;
  const long ncpu = sysconf(_SC_NPROCESSORS_CONF);
  pin(active ? 0 : (int)(1 % (ncpu > 0 ? ncpu : 1)));

  int n;
  struct ibv_device **list = ibv_get_device_list(&n);
  if (!list || n < 1) die("no RDMA device");
  ctx = ibv_open_device(list[0]);
  if (!ctx) die("cannot open the device");
  struct ibv_port_attr port;
  if (ibv_query_port(ctx, 1, &port)) die("ibv_query_port failed");
  mtu = (size_t)128 << port.active_mtu;
  struct ibv_pd *pd = ibv_alloc_pd(ctx);
  channel = ibv_create_comp_channel(ctx);
  send_cq = ibv_create_cq(ctx, SEND_SLOTS, NULL, NULL, 0);
  recv_cq = ibv_create_cq(ctx, RECV_SLOTS, NULL, channel, 0);
  if (!pd || !channel || !send_cq || !recv_cq) die("cannot create the PD, channel or CQs");
  const size_t bytes = SEND_SLOTS * mtu + RECV_SLOTS * (GRH + mtu);
  buf = aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);
  if (!buf) die("out of memory");
  memset(buf, 0, bytes);
  mr = ibv_reg_mr(pd, buf, bytes, IBV_ACCESS_LOCAL_WRITE);
  if (!mr) die("ibv_reg_mr failed");

  struct ibv_qp_init_attr a;
  memset(&a, 0, sizeof a);
  a.send_cq = send_cq;
  a.recv_cq = recv_cq;
  a.cap.max_send_wr = SEND_SLOTS;
  a.cap.max_recv_wr = RECV_SLOTS;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  a.qp_type = IBV_QPT_UD;
  qp = ibv_create_qp(pd, &a);
  if (!qp) die("ibv_create_qp (UD) failed");
  struct ibv_qp_attr m;
  memset(&m, 0, sizeof m);
  m.qp_state = IBV_QPS_INIT;
  m.port_num = 1;
  m.qkey = QKEY;
  if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
    die("INIT failed");
  m.qp_state = IBV_QPS_RTR;
  if (ibv_modify_qp(qp, &m, IBV_QP_STATE)) die("RTR failed");
  m.qp_state = IBV_QPS_RTS;
  m.sq_psn = 0;
  if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_SQ_PSN)) die("RTS failed");
  for (unsigned i = 0; i < RECV_SLOTS; i++) post_recv(i);

  struct side mine = {qp->qp_num, port.lid};
  if (write(active ? to_child[1] : to_parent[1], &mine, sizeof mine) != sizeof mine ||
      read(active ? to_parent[0] : to_child[0], &peer, sizeof peer) != sizeof peer)
    die("exchange failed");
  struct ibv_ah_attr ah_attr;
  memset(&ah_attr, 0, sizeof ah_attr);
  ah_attr.dlid = (uint16_t)peer.lid;
  ah_attr.port_num = 1;
  ah = ibv_create_ah(pd, &ah_attr);
  if (!ah) die("ibv_create_ah failed");
  /* both receive queues are full before the first request */
  char c = 'r';
  if (write(active ? to_child[1] : to_parent[1], &c, 1) != 1 ||
      read(active ? to_parent[0] : to_child[0], &c, 1) != 1)
    die("the other side did not get ready");
  if (!active) {
    responder();
    return 0;
  }

  static uint8_t msg[8192], answer[8192];
  memset(msg, 0x5a, sizeof msg);
  printf("mtu %zu\n", mtu);
  const char *modes[] = {"poll", "event", "ppoll"};
  for (uint32_t mode = 0; mode < 3; mode++) {
    uint32_t set[2] = {MODE, mode};
    send_bytes(set, sizeof set);
    wait_answer(answer);
    double t;
    const uint32_t last = mode == 2 ? 64 : (uint32_t)mtu; /* ppoll: 8 and 64 B */
    for (uint32_t size = 8; size <= last; size = size * 8 > last && size < last ? last : size * 8) {
      BEST(t, iters, ping_pong(iters, size, msg, answer));
      printf("pp %s %u %.0f %.0f\n", modes[mode], size, t / 2, t);
      fflush(stdout);
    }
    BEST(t, iters, windowed(iters, window, msg, answer));
    printf("rate %s 8 %.3f\n", modes[mode], 1e3 / t);
    fflush(stdout);
  }
  { /* the requester yields, then also arms; the responder polling */
    uint32_t set[2] = {MODE, 0};
    send_bytes(set, sizeof set);
    wait_answer(answer);
    double t;
    yield_when_empty = 1;
    for (uint32_t size = 8; size <= 64; size *= 8) {
      BEST(t, iters, ping_pong(iters, size, msg, answer));
      printf("pp yield %u %.0f %.0f\n", size, t / 2, t);
      fflush(stdout);
    }
    int fl = fcntl(channel->fd, F_GETFL);
    if (fl < 0 || fcntl(channel->fd, F_SETFL, fl | O_NONBLOCK) < 0) die("fcntl failed");
    pthread_t th;
    if (pthread_create(&th, NULL, event_thread, NULL)) die("pthread_create failed");
    armed = 1;
    for (uint32_t size = 8; size <= 64; size *= 8) {
      BEST(t, iters, ping_pong(iters, size, msg, answer));
      printf("pp armed %u %.0f %.0f\n", size, t / 2, t);
      fflush(stdout);
    }
    armed = 0;
    yield_when_empty = 0;
    stop_events = 1;
    pthread_join(th, NULL);
  }
  const uint32_t stop = STOP;
  send_bytes(&stop, 4);
  int status;
  waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
