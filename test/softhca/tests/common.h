// Shared harness of the softhca GoogleTest binaries: they drive the model only through the public
// verbs and mlx5dv APIs. Each binary links Debian's libibverbs/libmlx5 and re-executes itself with
// softhca selected through LD_LIBRARY_PATH (as production code runs over it), in a fabric of its own.
#pragma once
#include <gtest/gtest.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

std::string g_self;  // this executable, for child processes

inline uint64_t bswap64(uint64_t v) { return __builtin_bswap64(v); }
inline uint32_t bswap32(uint32_t v) { return __builtin_bswap32(v); }

struct Dev {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  explicit Dev(int index = 0) {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (!list || n <= index) {
      if (list) ibv_free_device_list(list);
      return;
    }
    ctx = ibv_open_device(list[index]);
    ibv_free_device_list(list);
    if (ctx) pd = ibv_alloc_pd(ctx);
  }
  ~Dev() {
    if (pd) ibv_dealloc_pd(pd);
    if (ctx) ibv_close_device(ctx);
  }
};

inline ibv_qp* make_rc(Dev& d, ibv_cq* cq, bool raw = false, int access = IBV_ACCESS_REMOTE_WRITE |
                                                                 IBV_ACCESS_REMOTE_READ |
                                                                 IBV_ACCESS_REMOTE_ATOMIC,
                 bool sig_all = false) {
  ibv_qp_init_attr_ex a{};
  a.qp_type = IBV_QPT_RC;
  a.send_cq = cq;
  a.recv_cq = cq;
  a.cap.max_send_wr = 64;
  a.cap.max_recv_wr = 64;
  a.cap.max_send_sge = 2;
  a.cap.max_recv_sge = 2;
  a.cap.max_inline_data = 64;
  a.sq_sig_all = sig_all;
  a.pd = d.pd;
  a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  a.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                     IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |
                     IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
  mlx5dv_qp_init_attr dv{};
  if (raw) {
    dv.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS;
    dv.send_ops_flags = MLX5DV_QP_EX_WITH_RAW_WQE;
  }
  ibv_qp* qp = mlx5dv_create_qp(d.ctx, &a, &dv);
  if (!qp) return nullptr;
  ibv_qp_attr m{};
  m.qp_state = IBV_QPS_INIT;
  m.port_num = 1;
  m.qp_access_flags = access;
  if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    return nullptr;
  return qp;
}

// `depth`: the initiator depth (max_rd_atomic) and responder resources (max_dest_rd_atomic).
inline int connect_rc(ibv_qp* qp, uint32_t remote, uint16_t lid, int rnr_retry = 7, int timeout = 10,
               int retry = 2, uint8_t depth = 16) {
  ibv_qp_attr m{};
  m.qp_state = IBV_QPS_RTR;
  m.path_mtu = IBV_MTU_4096;
  m.dest_qp_num = remote;
  m.rq_psn = 0;
  m.max_dest_rd_atomic = depth;
  m.min_rnr_timer = 1;
  m.ah_attr.dlid = lid;
  m.ah_attr.port_num = 1;
  if (int r = ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                        IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    return r;
  m.qp_state = IBV_QPS_RTS;
  m.sq_psn = 0;
  m.timeout = uint8_t(timeout);
  m.retry_cnt = uint8_t(retry);
  m.rnr_retry = uint8_t(rnr_retry);
  m.max_rd_atomic = depth;
  return ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                   IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

// A DC target in RTR receiving from `srq`, with access key `key` and remote `access` flags.
inline ibv_qp* make_dct(Dev& d, ibv_cq* cq, ibv_srq* srq, uint64_t key, int access) {
  ibv_qp_init_attr_ex a{};
  a.qp_type = IBV_QPT_DRIVER;
  a.send_cq = a.recv_cq = cq;
  a.srq = srq;
  a.pd = d.pd;
  a.comp_mask = IBV_QP_INIT_ATTR_PD;
  mlx5dv_qp_init_attr dv{};
  dv.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC;
  dv.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCT;
  dv.dc_init_attr.dct_access_key = key;
  ibv_qp* dct = mlx5dv_create_qp(d.ctx, &a, &dv);
  if (!dct) return nullptr;
  ibv_qp_attr m{};
  m.qp_state = IBV_QPS_INIT;
  m.port_num = 1;
  m.qp_access_flags = access;
  m.path_mtu = IBV_MTU_4096;
  m.min_rnr_timer = 1;
  if (ibv_modify_qp(dct, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) ||
      (m.qp_state = IBV_QPS_RTR,
       ibv_modify_qp(dct, &m, IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_MIN_RNR_TIMER))) {
    ibv_destroy_qp(dct);
    return nullptr;
  }
  return dct;
}

// What a DC initiator is created and moved to RTS with.
struct DciAttr {
  uint32_t depth = 64, max_inline = 0;
  uint64_t send_ops = 0;  // IBV_QP_EX_WITH_*
  uint8_t timeout = 14, retry_cnt = 7, max_rd_atomic = 1;
};

// A DC initiator in RTS (rnr_retry 7: retry forever).
inline ibv_qp* make_dci(Dev& d, ibv_cq* cq, const DciAttr& at) {
  ibv_qp_init_attr_ex a{};
  a.qp_type = IBV_QPT_DRIVER;
  a.send_cq = a.recv_cq = cq;
  a.cap.max_send_wr = at.depth;
  a.cap.max_send_sge = 1;
  a.cap.max_inline_data = at.max_inline;
  a.pd = d.pd;
  a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  a.send_ops_flags = at.send_ops;
  mlx5dv_qp_init_attr dv{};
  dv.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC;
  dv.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCI;
  ibv_qp* dci = mlx5dv_create_qp(d.ctx, &a, &dv);
  if (!dci) return nullptr;
  ibv_qp_attr m{};
  m.qp_state = IBV_QPS_INIT;
  m.port_num = 1;
  m.path_mtu = IBV_MTU_4096;
  m.timeout = at.timeout;
  m.retry_cnt = at.retry_cnt;
  m.rnr_retry = 7;
  m.max_rd_atomic = at.max_rd_atomic;
  if (ibv_modify_qp(dci, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT) ||
      (m.qp_state = IBV_QPS_RTR, ibv_modify_qp(dci, &m, IBV_QP_STATE | IBV_QP_PATH_MTU)) ||
      (m.qp_state = IBV_QPS_RTS,
       ibv_modify_qp(dci, &m, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))) {
    ibv_destroy_qp(dci);
    return nullptr;
  }
  return dci;
}

inline uint16_t lid_of(Dev& d) {
  ibv_port_attr p;
  ibv_query_port(d.ctx, 1, &p);
  return p.lid;
}

inline ibv_wc wait_wc(ibv_cq* cq) {
  ibv_wc wc{};
  for (long i = 0; i < 20000000; ++i) {
    int n = ibv_poll_cq(cq, 1, &wc);
    if (n == 1) return wc;
    if (i > 1000) usleep(50);
  }
  ADD_FAILURE() << "no completion";
  wc.status = IBV_WC_GENERAL_ERR;
  return wc;
}


// Starts this test binary again as `--peer MODE` with `env` in front of ours (earlier entries win
// in getenv) and the file actions `fa`; its pid, or -1.
inline pid_t spawn_self(const char* mode, const std::vector<std::string>& env,
                        const posix_spawn_file_actions_t* fa) {
  const char* argv[] = {g_self.c_str(), "--peer", mode, nullptr};
  std::vector<std::string> vars = env;
  for (char** e = environ; *e; ++e) vars.push_back(*e);
  std::vector<char*> envp;
  for (auto& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, g_self.c_str(), fa, nullptr, const_cast<char**>(argv), envp.data()) != 0)
    return -1;
  return pid;
}

// A child process running this binary as `--peer MODE`, with `env` ("NAME=value") added to ours;
// talks to us through its stdin/stdout.
struct Child {
  pid_t pid = -1;
  FILE *in = nullptr, *out = nullptr;
  explicit Child(const char* mode, const std::vector<std::string>& env = {}) {
    int to[2], from[2];
    // Close-on-exec: a later child must not inherit this one's stdin (it would never see EOF).
    if (pipe2(to, O_CLOEXEC) || pipe2(from, O_CLOEXEC)) return;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, to[0], 0);
    posix_spawn_file_actions_adddup2(&fa, from[1], 1);
    pid = spawn_self(mode, env, &fa);
    posix_spawn_file_actions_destroy(&fa);
    close(to[0]);
    close(from[1]);
    in = fdopen(to[1], "w");
    out = fdopen(from[0], "r");
  }
  int status = -1;
  int wait() {  // closes our end of its stdin, reaps it; again returns the same status
    if (in) fclose(in), in = nullptr;
    if (status < 0) {
      int st = 0;
      waitpid(pid, &st, 0);
      status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    }
    if (out) fclose(out), out = nullptr;
    return status;
  }
  ~Child() {
    if (pid > 0) wait();
  }
};


inline ibv_qp* make_ud(Dev& d, ibv_cq* cq, int depth) {
  ibv_qp_init_attr ia{};
  ia.send_cq = ia.recv_cq = cq;
  ia.cap.max_send_wr = uint32_t(depth);
  ia.cap.max_recv_wr = uint32_t(depth);
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ia.cap.max_inline_data = 64;
  ia.qp_type = IBV_QPT_UD;
  ibv_qp* qp = ibv_create_qp(d.pd, &ia);
  if (!qp) return nullptr;
  ibv_qp_attr m{};
  m.qp_state = IBV_QPS_INIT;
  m.port_num = 1;
  m.qkey = 0x11111111;
  if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)) return nullptr;
  m.qp_state = IBV_QPS_RTR;
  if (ibv_modify_qp(qp, &m, IBV_QP_STATE)) return nullptr;
  m.qp_state = IBV_QPS_RTS;
  if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_SQ_PSN)) return nullptr;
  return qp;
}


// main() of every test binary: select the model and a fresh fabric, run again; then either serve
// as a child (`--peer MODE`, handled by `peer`) or run the tests.
int softhca_test_main(int argc, char** argv, const char* name,
                      const std::function<int(const char* mode)>& peer) {
  g_self = "/proc/self/exe";
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) g_self.assign(buf, size_t(n));
  if (!getenv("SOFTHCA_SELECTED")) {
    std::string dir;
    if (const char* s = getenv("TEST_SRCDIR")) dir = std::string(s) + "/hoshmem/test/softhca/softlib";
    else dir = g_self + ".runfiles/hoshmem/test/softhca/softlib";
    setenv("LD_LIBRARY_PATH", dir.c_str(), 1);
    setenv("SOFTHCA_SELECTED", "1", 1);
    if (!getenv("SOFTHCA_FABRIC")) {
      // Test sandboxes have PID namespaces of their own: the name comes from /dev/urandom.
      unsigned long long r = 0;
      FILE* f = fopen("/dev/urandom", "r");
      if (!f || fread(&r, sizeof r, 1, f) != 1) r = (unsigned long long)time(nullptr) ^ uintptr_t(&r);
      if (f) fclose(f);
      char tok[80];
      snprintf(tok, sizeof tok, "%s-%llx", name, r);
      setenv("SOFTHCA_FABRIC", tok, 1);
    }
    execv(g_self.c_str(), argv);
    perror("execv");
    return 1;
  }
  if (argc >= 3 && !strcmp(argv[1], "--peer")) return peer(argv[2]);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

}  // namespace
