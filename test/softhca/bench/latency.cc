// softhca latency benchmark (prints numbers; not a test): two processes, one RC QP each.
//   pingpong   each side RDMA-writes an 8-byte sequence number into the other's flag word and
//              busy-polls its own flag word in memory (no verbs call while waiting)
//   write+cq   8-byte RDMA write, then busy-poll the CQ for its completion (peer idle)
//   fadd+cq    8-byte fetch-add, then busy-poll the CQ for the result (peer idle)
//   raw-write, raw-fadd   the same two, but the WQE is written into the SQ buffer from
//              mlx5dv_init_obj, rung by the doorbell record and an 8-byte BlueFlame store, and
//              the CQE is polled by its owner bit (what a UCX-style backend does)
// Links Debian's libibverbs and re-executes itself with softhca selected (like verbs_test), so
// under Bazel: bazel run //test/softhca:latency_bench -- [iterations]; or with real hardware
// unchanged: SOFTHCA_SELECTED=1 ./latency_bench.
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace {

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

[[noreturn]] void die(const char* what) {
  fprintf(stderr, "latency_bench: %s\n", what);
  exit(1);
}

// Flag word written by the peer, fetch-add target, local source/result words.
struct alignas(64) Words {
  volatile uint64_t flag;
  uint64_t counter;
  uint64_t src;
  uint64_t result;
};

struct Side {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  ibv_mr* mr = nullptr;
  Words w{};
  uint16_t lid = 0;
  uint64_t raddr = 0;
  uint32_t rkey = 0;

  void open() {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (!list || n < 1) die("no RDMA device");
    ctx = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    if (!ctx) die("ibv_open_device");
    pd = ibv_alloc_pd(ctx);
    cq = ibv_create_cq(ctx, 256, nullptr, nullptr, 0);
    ibv_qp_init_attr a{};
    a.send_cq = a.recv_cq = cq;
    a.cap.max_send_wr = 128;
    a.cap.max_recv_wr = 1;
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    a.cap.max_inline_data = 16;
    a.qp_type = IBV_QPT_RC;
    qp = ibv_create_qp(pd, &a);
    if (!pd || !cq || !qp) die("pd/cq/qp");
    mr = ibv_reg_mr(pd, &w, sizeof w,
                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
    if (!mr) die("ibv_reg_mr");
    ibv_port_attr p;
    if (ibv_query_port(ctx, 1, &p)) die("ibv_query_port");
    lid = p.lid;
    ibv_qp_attr m{};
    m.qp_state = IBV_QPS_INIT;
    m.port_num = 1;
    m.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
    if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
      die("INIT");
  }
  void connect(uint32_t qpn, uint16_t rlid) {
    ibv_qp_attr m{};
    m.qp_state = IBV_QPS_RTR;
    m.path_mtu = IBV_MTU_4096;
    m.dest_qp_num = qpn;
    m.max_dest_rd_atomic = 16;
    m.min_rnr_timer = 1;
    m.ah_attr.dlid = rlid;
    m.ah_attr.port_num = 1;
    if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
      die("RTR");
    m.qp_state = IBV_QPS_RTS;
    m.timeout = 14;
    m.retry_cnt = 7;
    m.rnr_retry = 7;
    m.max_rd_atomic = 16;
    if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
      die("RTS");
  }
  void post(ibv_wr_opcode op, uint64_t value, bool signaled) {
    ibv_sge s{uint64_t(uintptr_t(op == IBV_WR_RDMA_WRITE ? &w.src : &w.result)), 8, mr->lkey};
    ibv_send_wr wr{}, *bad;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = op;
    wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
    if (op == IBV_WR_RDMA_WRITE) {
      w.src = value;
      wr.send_flags |= IBV_SEND_INLINE;
      wr.wr.rdma.remote_addr = raddr + offsetof(Words, flag);
      wr.wr.rdma.rkey = rkey;
    } else {
      wr.wr.atomic.remote_addr = raddr + offsetof(Words, counter);
      wr.wr.atomic.rkey = rkey;
      wr.wr.atomic.compare_add = value;
    }
    if (ibv_post_send(qp, &wr, &bad)) die("ibv_post_send");
  }
  void wait_cq() {
    ibv_wc wc;
    int n;
    while ((n = ibv_poll_cq(cq, 1, &wc)) == 0) {
    }
    if (n < 0 || wc.status != IBV_WC_SUCCESS) die(ibv_wc_status_str(wc.status));
  }
  void drain_cq() {
    ibv_wc wc[16];
    int n = ibv_poll_cq(cq, 16, wc);
    for (int i = 0; i < n; ++i)
      if (wc[i].status != IBV_WC_SUCCESS) die(ibv_wc_status_str(wc[i].status));
  }
};

// Ping-pong on flags: the initiator writes i and waits for i back; the peer waits, then answers.
// Every 32nd write is signaled so the send queue is drained now and then.
void pingpong(Side& s, bool initiator, int from, int to, std::vector<uint64_t>* rtt) {
  for (int i = from; i <= to; ++i) {
    uint64_t t0 = now_ns();
    if (initiator) s.post(IBV_WR_RDMA_WRITE, uint64_t(i), i % 32 == 0);
    while (s.w.flag != uint64_t(i)) {
    }
    if (!initiator) s.post(IBV_WR_RDMA_WRITE, uint64_t(i), i % 32 == 0);
    if (rtt) rtt->push_back(now_ns() - t0);
    if (i % 32 == 0) s.drain_cq();
  }
}

// Raw WQEs on the side's QP and CQ (after the verbs phases: continues their indices).
struct Raw {
  Side& s;
  mlx5dv_qp dq{};
  mlx5dv_cq dc{};
  uint32_t pi = 0, ci = 0, bf_off = 0;
  explicit Raw(Side& side) : s(side) {
    mlx5dv_obj o{};
    o.qp.in = s.qp;
    o.qp.out = &dq;
    o.cq.in = s.cq;
    o.cq.out = &dc;
    if (mlx5dv_init_obj(&o, MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ)) die("mlx5dv_init_obj");
    pi = __builtin_bswap32(dq.dbrec[MLX5_SND_DBR]) & 0xffff;
    ci = __builtin_bswap32(dc.dbrec[0]) & 0xffffff;
  }
  void post(bool fadd, uint64_t value) {
    auto* w = static_cast<uint8_t*>(dq.sq.buf) + (pi & (dq.sq.wqe_cnt - 1)) * dq.sq.stride;
    memset(w, 0, 64);
    auto* c = reinterpret_cast<mlx5_wqe_ctrl_seg*>(w);
    uint8_t op = fadd ? MLX5_OPCODE_ATOMIC_FA : MLX5_OPCODE_RDMA_WRITE;
    c->opmod_idx_opcode = __builtin_bswap32((pi & 0xffff) << 8 | op);
    c->qpn_ds = __builtin_bswap32(s.qp->qp_num << 8 | (fadd ? 4 : 3));
    c->fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE;
    auto* r = reinterpret_cast<mlx5_wqe_raddr_seg*>(w + 16);
    r->raddr = __builtin_bswap64(s.raddr + (fadd ? offsetof(Words, counter) : offsetof(Words, flag)));
    r->rkey = __builtin_bswap32(s.rkey);
    if (fadd) {
      reinterpret_cast<mlx5_wqe_atomic_seg*>(w + 32)->swap_add = __builtin_bswap64(value);
      auto* d = reinterpret_cast<mlx5_wqe_data_seg*>(w + 48);
      d->byte_count = __builtin_bswap32(8);
      d->lkey = __builtin_bswap32(s.mr->lkey);
      d->addr = __builtin_bswap64(uint64_t(uintptr_t(&s.w.result)));
    } else {  // 8 bytes inline
      uint32_t hdr = __builtin_bswap32(8 | MLX5_INLINE_SEG);
      memcpy(w + 32, &hdr, 4);
      memcpy(w + 36, &value, 8);
    }
    pi++;
    __atomic_thread_fence(__ATOMIC_RELEASE);
    dq.dbrec[MLX5_SND_DBR] = __builtin_bswap32(pi & 0xffff);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    *reinterpret_cast<volatile uint64_t*>(static_cast<uint8_t*>(dq.bf.reg) + bf_off) =
        *reinterpret_cast<uint64_t*>(w);
    bf_off ^= dq.bf.size;
  }
  void wait_cqe() {
    auto* cqe = reinterpret_cast<volatile mlx5_cqe64*>(static_cast<uint8_t*>(dc.buf) +
                                                       (ci & (dc.cqe_cnt - 1)) * 64);
    uint8_t owner = (ci / dc.cqe_cnt) & 1;
    uint8_t op_own;
    while (((op_own = cqe->op_own) >> 4) == MLX5_CQE_INVALID || (op_own & 1) != owner) {
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if ((op_own >> 4) != MLX5_CQE_REQ) die("raw WQE completed with an error");
    ci++;
    dc.dbrec[0] = __builtin_bswap32(ci & 0xffffff);
  }
};

void report(const char* name, std::vector<uint64_t> v) {
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (uint64_t x : v) sum += double(x);
  auto pct = [&](double p) { return double(v[size_t(p * double(v.size() - 1))]) / 1000.0; };
  printf("%-10s iters %6zu  median %8.2f us  mean %8.2f us  p99 %8.2f us  min %7.2f us\n", name,
         v.size(), pct(0.5), sum / double(v.size()) / 1000.0, pct(0.99), pct(0.0));
  fflush(stdout);
}

int run(bool peer, int iters, FILE* in, FILE* out) {
  Side s;
  s.open();
  fprintf(out, "%u %u %lu %u\n", s.qp->qp_num, s.lid, (unsigned long)uintptr_t(&s.w), s.mr->rkey);
  fflush(out);
  unsigned qpn, lid, rkey;
  unsigned long addr;
  if (fscanf(in, "%u %u %lu %u", &qpn, &lid, &addr, &rkey) != 4) die("exchange");
  s.raddr = addr;
  s.rkey = rkey;
  s.connect(qpn, uint16_t(lid));
  fprintf(out, "ready\n");
  fflush(out);
  char word[16];
  if (fscanf(in, "%15s", word) != 1) die("sync");
  const int warm = std::max(100, iters / 10);
  if (peer) {
    pingpong(s, false, 1, warm + iters, nullptr);
    // The requester-only phases need nothing from this process but its model: wait idle.
    if (fscanf(in, "%15s", word) != 1) die("sync");
    fprintf(out, "%lu\n", (unsigned long)s.w.counter);
    fflush(out);
  } else {
    std::vector<uint64_t> rtt;
    pingpong(s, true, 1, warm, nullptr);
    pingpong(s, true, warm + 1, warm + iters, &rtt);
    report("pingpong", rtt);
    for (int k = 0; k < 100; ++k) s.drain_cq(), usleep(100);
    std::vector<uint64_t> wr, fa;
    for (int i = 0; i < warm + iters; ++i) {
      uint64_t t0 = now_ns();
      s.post(IBV_WR_RDMA_WRITE, 0, true);
      s.wait_cq();
      if (i >= warm) wr.push_back(now_ns() - t0);
    }
    report("write+cq", wr);
    for (int i = 0; i < warm + iters; ++i) {
      uint64_t t0 = now_ns();
      s.post(IBV_WR_ATOMIC_FETCH_AND_ADD, 1, true);
      s.wait_cq();
      if (s.w.result != uint64_t(i)) die("fetch-add returned a wrong value");
      if (i >= warm) fa.push_back(now_ns() - t0);
    }
    report("fadd+cq", fa);
    Raw raw(s);
    std::vector<uint64_t> rwr, rfa;
    for (int i = 0; i < warm + iters; ++i) {
      uint64_t t0 = now_ns();
      raw.post(false, 0);
      raw.wait_cqe();
      if (i >= warm) rwr.push_back(now_ns() - t0);
    }
    report("raw-write", rwr);
    for (int i = 0; i < warm + iters; ++i) {
      uint64_t t0 = now_ns();
      raw.post(true, 1);
      raw.wait_cqe();
      if (s.w.result != uint64_t(warm + iters + i)) die("raw fetch-add returned a wrong value");
      if (i >= warm) rfa.push_back(now_ns() - t0);
    }
    report("raw-fadd", rfa);
    fprintf(out, "done\n");
    fflush(out);
    unsigned long counter;
    if (fscanf(in, "%lu", &counter) != 1 || counter != 2 * unsigned(warm + iters))
      die("peer's counter disagrees");
  }
  ibv_destroy_qp(s.qp);
  ibv_dereg_mr(s.mr);
  ibv_destroy_cq(s.cq);
  ibv_dealloc_pd(s.pd);
  ibv_close_device(s.ctx);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string self = "/proc/self/exe";
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) self.assign(buf, size_t(n));
  if (!getenv("SOFTHCA_SELECTED")) {
    std::string dir;
    if (const char* s = getenv("RUNFILES_DIR")) dir = std::string(s) + "/hoshmem/test/softhca/softlib";
    else dir = self + ".runfiles/hoshmem/test/softhca/softlib";
    if (access((dir + "/libibverbs.so.1").c_str(), R_OK) == 0) setenv("LD_LIBRARY_PATH", dir.c_str(), 1);
    setenv("SOFTHCA_SELECTED", "1", 1);
    if (!getenv("SOFTHCA_FABRIC")) {
      char tok[64];
      snprintf(tok, sizeof tok, "bench-%lx-%lx", (unsigned long)getpid(),
               (unsigned long)now_ns() ^ (unsigned long)uintptr_t(&tok));
      setenv("SOFTHCA_FABRIC", tok, 1);
    }
    execv(self.c_str(), argv);
    perror("execv");
    return 1;
  }
  if (argc >= 2 && !strcmp(argv[1], "--peer")) return run(true, atoi(argv[2]), stdin, stdout);
  int iters = argc >= 2 ? atoi(argv[1]) : 20000;
  if (iters < 1) iters = 20000;
  int to[2], from[2];
  if (pipe(to) || pipe(from)) die("pipe");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, to[0], 0);
  posix_spawn_file_actions_adddup2(&fa, from[1], 1);
  posix_spawn_file_actions_addclose(&fa, to[1]);
  posix_spawn_file_actions_addclose(&fa, from[0]);
  std::string it = std::to_string(iters);
  const char* cargv[] = {self.c_str(), "--peer", it.c_str(), nullptr};
  pid_t pid;
  if (posix_spawn(&pid, self.c_str(), &fa, nullptr, const_cast<char**>(cargv), environ))
    die("posix_spawn");
  close(to[0]);
  close(from[1]);
  printf("8-byte RDMA latency between two processes, %d iterations, %s\n", iters,
         getenv("LD_LIBRARY_PATH") ? "softhca" : "system libibverbs");
  int rc = run(false, iters, fdopen(from[0], "r"), fdopen(to[1], "w"));
  int st = 0;
  waitpid(pid, &st, 0);
  return rc || !WIFEXITED(st) || WEXITSTATUS(st);
}
