// softhca execution-model tests: raw doorbells in both doorbell modes, delivery to programs that
// poll CQ buffers themselves, and the knobs that use the hardware's freedom of timing and order.
#include <signal.h>

#include "test/softhca/tests/common.h"

namespace {

// One process-local loopback RC pair (a -> b) on one CQ, with a registered buffer.
struct Loop {
  Dev& d;
  ibv_comp_channel* ch = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp *a = nullptr, *b = nullptr;
  ibv_mr* mr = nullptr;
  alignas(64) uint8_t buf[8192] = {};
  Loop(Dev& dev, bool channel, bool raw = false) : d(dev) {
    if (channel) ch = ibv_create_comp_channel(d.ctx);
    cq = ibv_create_cq(d.ctx, 64, nullptr, ch, 0);
    a = make_rc(d, cq, raw);
    b = make_rc(d, cq, raw);
    if (!a || !b || connect_rc(a, b->qp_num, lid_of(d)) || connect_rc(b, a->qp_num, lid_of(d))) {
      a = b = nullptr;
      return;
    }
    mr = ibv_reg_mr(d.pd, buf, sizeof buf,
                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                        IBV_ACCESS_REMOTE_ATOMIC);
  }
  bool ok() const { return a && b && mr && cq; }
  // The raw view of QP a and the CQ, for tests that write WQEs and read CQEs themselves.
  bool init_raw(mlx5dv_qp* dq, mlx5dv_cq* dc) {
    mlx5dv_obj o{};
    o.qp.in = a;
    o.qp.out = dq;
    o.cq.in = cq;
    o.cq.out = dc;
    return mlx5dv_init_obj(&o, MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ) == 0;
  }
  ~Loop() {
    if (a) ibv_destroy_qp(a);
    if (b) ibv_destroy_qp(b);
    if (mr) ibv_dereg_mr(mr);
    if (cq) ibv_destroy_cq(cq);
    if (ch) ibv_destroy_comp_channel(ch);
  }
  int post_write(ibv_qp* qp, uint32_t off, uint32_t roff, uint32_t len, unsigned flags) {
    ibv_sge s{uint64_t(uintptr_t(buf + off)), len, mr->lkey};
    ibv_send_wr wr{}, *bad;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = flags;
    wr.wr.rdma.remote_addr = uint64_t(uintptr_t(buf + roff));
    wr.wr.rdma.rkey = mr->rkey;
    return ibv_post_send(qp, &wr, &bad);
  }
};

// A raw 8-byte fetch-add WQE (control, remote address, atomic, data segment) rung by the
// doorbell record and an 8-byte store to the BlueFlame register, as UCX does it.
void raw_fadd(const mlx5dv_qp& dq, uint32_t qpn, uint32_t pi, uint64_t* target, uint32_t rkey,
              uint64_t* result, uint32_t lkey, uint32_t bf_off, bool ring = true) {
  auto* w = static_cast<uint8_t*>(dq.sq.buf) + (pi & (dq.sq.wqe_cnt - 1)) * dq.sq.stride;
  memset(w, 0, 64);
  auto* c = reinterpret_cast<mlx5_wqe_ctrl_seg*>(w);
  c->opmod_idx_opcode = bswap32((pi & 0xffff) << 8 | MLX5_OPCODE_ATOMIC_FA);
  c->qpn_ds = bswap32(qpn << 8 | 4);
  c->fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE;
  auto* rs = reinterpret_cast<mlx5_wqe_raddr_seg*>(w + 16);
  rs->raddr = bswap64(uint64_t(uintptr_t(target)));
  rs->rkey = bswap32(rkey);
  reinterpret_cast<mlx5_wqe_atomic_seg*>(w + 32)->swap_add = bswap64(1);
  auto* ds = reinterpret_cast<mlx5_wqe_data_seg*>(w + 48);
  ds->byte_count = bswap32(8);
  ds->lkey = bswap32(lkey);
  ds->addr = bswap64(uint64_t(uintptr_t(result)));
  __atomic_thread_fence(__ATOMIC_RELEASE);
  dq.dbrec[MLX5_SND_DBR] = bswap32((pi + 1) & 0xffff);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  if (!ring) return;
  *reinterpret_cast<volatile uint64_t*>(static_cast<uint8_t*>(dq.bf.reg) + bf_off) =
      *reinterpret_cast<uint64_t*>(w);
}

// ibv_poll_cq until one completion arrives; false after `seconds` without one (no hang).
bool poll_cq_for(ibv_cq* cq, ibv_wc* wc, int seconds) {
  timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (uint64_t i = 0;; ++i) {
    int n = ibv_poll_cq(cq, 1, wc);
    if (n) return n > 0;
    if (i % 1024 == 0) {
      clock_gettime(CLOCK_MONOTONIC, &t);
      if (t.tv_sec - t0.tv_sec > seconds) return false;
    }
    if (i > 10000) usleep(20);
  }
}

// Waits for CQE number n of a CQ by its owner bit, without any verbs call; false if none comes.
bool wait_cqe_raw(const mlx5dv_cq& dc, uint32_t n, mlx5_cqe64* out, int seconds = 20) {
  auto* cqe = reinterpret_cast<mlx5_cqe64*>(static_cast<uint8_t*>(dc.buf) + (n & (dc.cqe_cnt - 1)) * 64);
  uint8_t owner = (n / dc.cqe_cnt) & 1;
  uint64_t spins = 0;
  timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    uint8_t op_own = __atomic_load_n(&cqe->op_own, __ATOMIC_ACQUIRE);
    if ((op_own >> 4) != MLX5_CQE_INVALID && (op_own & 1) == owner) break;
    if (++spins % 1024 == 0) {
      clock_gettime(CLOCK_MONOTONIC, &t);
      if (t.tv_sec - t0.tv_sec > seconds) return false;
      if (spins > 100000) usleep(20);
    }
  }
  if (out) memcpy(out, cqe, sizeof *out);
  dc.dbrec[0] = bswap32((n + 1) & 0xffffff);
  return true;
}

// ---- doorbells ------------------------------------------------------------------------------

// Two threads arm their own CQs through cq_uar at the same moment, many times; each then makes
// one completion and must get its event. One arm doorbell page shared by all CQs loses arms when
// the two stores meet.
int peer_concurrent_arms() {
  Dev d;
  if (!d.ctx) return 2;
  constexpr int kThreads = 2, kRounds = 300;
  std::atomic<int> barrier{0}, failed{0};
  auto body = [&](int t) {
    Loop l(d, true);
    if (!l.ok()) return void(failed = 1);
    mlx5dv_cq dc{};
    mlx5dv_obj o{};
    o.cq.in = l.cq;
    o.cq.out = &dc;
    if (mlx5dv_init_obj(&o, MLX5DV_OBJ_CQ)) return void(failed = 1);
    uint32_t ci = 0;
    for (int k = 0; k < kRounds && !failed; ++k) {
      // meet the other thread, then arm at once
      int target = (k + 1) * kThreads;
      barrier.fetch_add(1);
      while (barrier.load() < target && !failed) {
      }
      uint32_t sn = uint32_t(k) & 3;
      uint32_t db[2] = {bswap32(sn << 28 | MLX5_CQ_DB_REQ_NOT | (ci & 0xffffff)), bswap32(dc.cqn)};
      dc.dbrec[1] = db[0];
      __atomic_thread_fence(__ATOMIC_RELEASE);
      uint64_t v;
      memcpy(&v, db, 8);
      *reinterpret_cast<volatile uint64_t*>(static_cast<uint8_t*>(dc.cq_uar) + MLX5_CQ_DOORBELL) = v;
      if (l.post_write(l.a, 0, 64, 8, IBV_SEND_SIGNALED)) return void(failed = 1);
      ibv_wc wc;
      if (!poll_cq_for(l.cq, &wc, 30) || wc.status != IBV_WC_SUCCESS) return void(failed = 1);
      ci++;
      pollfd p{l.ch->fd, POLLIN, 0};
      if (poll(&p, 1, 10000) != 1) {
        fprintf(stderr, "thread %d round %d: no event (arm lost)\n", t, k);
        return void(failed = 1);
      }
      ibv_cq* ev;
      void* ctx;
      if (ibv_get_cq_event(l.ch, &ev, &ctx) || ev != l.cq) return void(failed = 1);
      ibv_ack_cq_events(ev, 1);
    }
  };
  std::vector<std::thread> th;
  for (int t = 0; t < kThreads; ++t) th.emplace_back(body, t);
  for (auto& x : th) x.join();
  return failed ? 1 : 0;
}

TEST(Doorbell, ConcurrentArmsFromTwoThreadsPollMode) {
  Child c("concurrent-arms", {"SOFTHCA_DOORBELL=poll"});
  EXPECT_EQ(c.wait(), 0);
}

TEST(Doorbell, ConcurrentArmsFromTwoThreadsTrapMode) {
  Child c("concurrent-arms", {"SOFTHCA_DOORBELL=trap"});
  EXPECT_EQ(c.wait(), 0);
}

// Raw fetch-adds rung through the BlueFlame register and completed by owner bit, with SIGTRAP back
// at its default action after mlx5dv_init_obj (as under a debugger, which keeps SIGTRAP for
// itself): in poll mode no doorbell single-steps, so the program runs on.
int peer_raw_without_sigtrap() {
  Dev d;
  Loop l(d, false, true);
  if (!l.ok()) return 2;
  mlx5dv_qp dq{};
  mlx5dv_cq dc{};
  if (!l.init_raw(&dq, &dc)) return 3;
  signal(SIGTRAP, SIG_DFL);
  auto* target = reinterpret_cast<uint64_t*>(l.buf + 256);
  auto* result = reinterpret_cast<uint64_t*>(l.buf + 512);
  for (uint32_t n = 0; n < 1000; ++n) {
    raw_fadd(dq, l.a->qp_num, n, target, l.mr->rkey, result, l.mr->lkey, (n & 1) * dq.bf.size);
    mlx5_cqe64 cqe;
    if (!wait_cqe_raw(dc, n, &cqe)) return 4;
    if ((cqe.op_own >> 4) != MLX5_CQE_REQ || *result != n) return 5;
    if (n % 100 == 99) usleep(2000);  // long enough for the doorbell thread to fall asleep
  }
  return *target == 1000 ? 0 : 6;
}

TEST(Doorbell, PollModeRawDoorbellsNeedNoSingleStep) {
  Child c("raw-without-sigtrap", {"SOFTHCA_DOORBELL=poll"});
  EXPECT_EQ(c.wait(), 0);
}

// BlueFlame stores of a WQE's first bytes in the forms programs use; each returns the block's first
// 8 bytes as read back from the register it stored from (the instruction after the store must run
// with every register as it was).
uint64_t store_movnti(uint8_t* reg, const uint8_t* block) {
  uint64_t v = *reinterpret_cast<const uint64_t*>(block), out;
  __asm__ volatile("movnti %1, (%2)\n\tmov %1, %0" : "=r"(out) : "r"(v), "r"(reg) : "memory");
  return out;
}
uint64_t store_sse(uint8_t* reg, const uint8_t* block) {
  uint64_t out;
  __asm__ volatile("movdqa (%1), %%xmm1\n\tmovdqa %%xmm1, (%2)\n\tmovq %%xmm1, %0"
                   : "=r"(out) : "r"(block), "r"(reg) : "xmm1", "memory");
  return out;
}
__attribute__((target("avx"))) uint64_t store_avx(uint8_t* reg, const uint8_t* block) {
  uint64_t out;
  __asm__ volatile("vmovdqa (%1), %%ymm2\n\tvmovdqu %%ymm2, (%2)\n\tvmovq %%xmm2, %0\n\tvzeroupper"
                   : "=r"(out) : "r"(block), "r"(reg) : "xmm2", "memory");
  return out;
}
__attribute__((target("avx512f"))) uint64_t store_avx512(uint8_t* reg, const uint8_t* block) {
  uint64_t out;  // zmm17: an EVEX register field with R' set, as glibc's memcpy uses zmm16+
  __asm__ volatile("vmovdqu64 (%1), %%zmm17\n\tvmovdqu64 %%zmm17, (%2)\n\tvmovq %%xmm17, %0"
                   : "=r"(out) : "r"(block), "r"(reg) : "xmm17", "memory");
  return out;
}
// A BlueFlame copy in 16-byte words (four adjacent stores): the first rings, the fault handler
// steps over the three that follow into the same page.
uint64_t store_sse_words(uint8_t* reg, const uint8_t* block) {
  uint64_t out;
  __asm__ volatile(
      "movdqa (%1), %%xmm1\n\tmovdqa 16(%1), %%xmm2\n\tmovdqa 32(%1), %%xmm3\n\t"
      "movdqa 48(%1), %%xmm4\n\tmovdqa %%xmm1, (%2)\n\tmovdqa %%xmm2, 16(%2)\n\t"
      "movdqa %%xmm3, 32(%2)\n\tmovdqa %%xmm4, 48(%2)\n\tmovq %%xmm1, %0"
      : "=r"(out) : "r"(block), "r"(reg) : "xmm1", "xmm2", "xmm3", "xmm4", "memory");
  return out;
}
// A doorbell store followed at once by a store to ordinary memory: that one must happen.
uint64_t store_then_memory(uint8_t* reg, const uint8_t* block) {
  alignas(16) uint64_t cell[2] = {0, 0};
  __asm__ volatile("movdqa (%0), %%xmm1\n\tmovdqa %%xmm1, (%1)\n\tmovdqa %%xmm1, (%2)"
                   : : "r"(block), "r"(reg), "r"(cell) : "xmm1", "memory");
  return cell[0];
}

// Waits until the page holding `addr` is read-only in this process's mappings: the doorbell thread
// has found nothing to do and protected its pages before sleeping. False after 20 s. (A fixed sleep
// is not enough on a loaded machine: the thread may not have run yet, and the store then lands
// unprotected and is left to it.)
bool wait_write_protected(const void* addr) {
  const uintptr_t a = uintptr_t(addr);
  for (int i = 0; i < 20000; ++i) {
    FILE* f = fopen("/proc/self/maps", "r");
    if (!f) return false;
    char line[512];
    bool ro = false;
    while (fgets(line, sizeof line, f)) {
      unsigned long lo, hi;
      char perms[8];
      if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && a >= lo && a < hi) {
        ro = perms[1] == '-';
        break;
      }
    }
    fclose(f);
    if (ro) return true;
    usleep(1000);
  }
  return false;
}

// Raw fetch-adds whose doorbell is stored with each of those forms (and raw_fadd's 8-byte mov),
// while the doorbell thread sleeps with the pages protected (SOFTHCA_DOORBELL_SPIN_US=0): each
// store is handled inside its fault, so the fetch-add has executed when the store returns.
int peer_rung_in_fault() {
  Dev d;
  Loop l(d, false, true);
  if (!l.ok()) return 2;
  mlx5dv_qp dq{};
  mlx5dv_cq dc{};
  if (!l.init_raw(&dq, &dc)) return 3;
  auto* target = reinterpret_cast<uint64_t*>(l.buf + 256);
  auto* result = reinterpret_cast<uint64_t*>(l.buf + 512);
  using Store = uint64_t (*)(uint8_t*, const uint8_t*);
  std::vector<Store> forms = {nullptr, store_movnti, store_sse,  // nullptr: raw_fadd's mov
                              store_sse_words, store_then_memory};
  if (__builtin_cpu_supports("avx")) forms.push_back(store_avx);
  if (__builtin_cpu_supports("avx512f")) forms.push_back(store_avx512);
  uint32_t n = 0;
  for (int round = 0; round < 10; ++round)
    for (size_t f = 0; f < forms.size(); ++f, ++n) {
      if (!wait_write_protected(dq.bf.reg)) return 7;  // the doorbell thread sleeps
      raw_fadd(dq, l.a->qp_num, n, target, l.mr->rkey, result, l.mr->lkey, (n & 1) * dq.bf.size,
               forms[f] == nullptr);
      if (forms[f]) {
        alignas(64) uint8_t block[64];
        memcpy(block, static_cast<uint8_t*>(dq.sq.buf) + (n & (dq.sq.wqe_cnt - 1)) * dq.sq.stride, 64);
        auto* reg = static_cast<uint8_t*>(dq.bf.reg) + (n & 1) * dq.bf.size;
        if (forms[f](reg, block) != *reinterpret_cast<uint64_t*>(block)) return 5;
      }
      if (*target != n + 1) {  // no wait: left to the doorbell thread, it would not be done yet
        fprintf(stderr, "form %zu: the fetch-add had not executed when the store returned\n", f);
        return 4;
      }
      mlx5_cqe64 cqe;
      if (!wait_cqe_raw(dc, n, &cqe) || (cqe.op_own >> 4) != MLX5_CQE_REQ || *result != n) return 6;
    }
  return 0;
}

TEST(Doorbell, PollModeRingsEachStoreFormInsideItsFault) {
  Child c("rung-in-fault", {"SOFTHCA_DOORBELL=poll", "SOFTHCA_DOORBELL_SPIN_US=0"});
  EXPECT_EQ(c.wait(), 0);
  // Without it the doorbell thread handles the store after it: not yet done when it returns.
  Child off("rung-in-fault", {"SOFTHCA_DOORBELL=poll", "SOFTHCA_DOORBELL_SPIN_US=0",
                              "SOFTHCA_DOORBELL_IN_FAULT=0"});
  EXPECT_EQ(off.wait(), 4);
}

// ---- delivery to programs that poll CQ buffers themselves ------------------------------------

// The receiver: an RC QP whose receive CQ it reads by owner bit only (never ibv_poll_cq), the way
// a backend drives its CQs. It reports its QPN and LID, connects to the sender, then expects
// `count` sends in order and reports how many arrived. The CQ is spun on without pause.
int peer_raw_receiver() {
  Dev d;
  ibv_cq* cq = ibv_create_cq(d.ctx, 256, nullptr, nullptr, 0);
  ibv_qp* qp = make_rc(d, cq);
  static uint8_t rbuf[64 * 64];
  ibv_mr* mr = ibv_reg_mr(d.pd, rbuf, sizeof rbuf, IBV_ACCESS_LOCAL_WRITE);
  if (!cq || !qp || !mr) return 2;
  mlx5dv_cq dc{};
  mlx5dv_qp dq{};
  mlx5dv_obj o{};
  o.cq.in = cq;
  o.cq.out = &dc;
  o.qp.in = qp;
  o.qp.out = &dq;
  if (mlx5dv_init_obj(&o, MLX5DV_OBJ_CQ | MLX5DV_OBJ_QP)) return 3;
  printf("%u %u\n", qp->qp_num, lid_of(d));
  fflush(stdout);
  unsigned rqpn, rlid, count;
  if (scanf("%u %u %u", &rqpn, &rlid, &count) != 3) return 4;
  // Receives are posted raw too (the driver's own ring accounting advances only in ibv_poll_cq).
  auto post_recv = [&](uint32_t i) {
    auto* w = static_cast<uint8_t*>(dq.rq.buf) + (i & (dq.rq.wqe_cnt - 1)) * dq.rq.stride;
    mlx5_wqe_data_seg seg[2] = {};
    seg[0].byte_count = bswap32(64);
    seg[0].lkey = bswap32(mr->lkey);
    seg[0].addr = bswap64(uint64_t(uintptr_t(rbuf + (i % 64) * 64)));
    seg[1].lkey = bswap32(MLX5_INVALID_LKEY);
    memcpy(w, seg, std::min<size_t>(sizeof seg, dq.rq.stride));
    __atomic_thread_fence(__ATOMIC_RELEASE);
    dq.dbrec[MLX5_RCV_DBR] = bswap32((i + 1) & 0xffff);
    return 0;
  };
  for (uint32_t i = 0; i < 32; ++i)
    if (post_recv(i)) return 5;
  if (connect_rc(qp, rqpn, uint16_t(rlid))) return 6;
  printf("ready\n");
  fflush(stdout);
  uint32_t got = 0;
  for (; got < count; ++got) {
    auto* cqe = reinterpret_cast<volatile mlx5_cqe64*>(static_cast<uint8_t*>(dc.buf) +
                                                       (got & (dc.cqe_cnt - 1)) * 64);
    uint8_t owner = (got / dc.cqe_cnt) & 1, op_own;
    timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t spins = 0;
    bool timed_out = false;
    while (((op_own = cqe->op_own) >> 4) == MLX5_CQE_INVALID || (op_own & 1) != owner) {
      if (++spins % 4096) continue;
      clock_gettime(CLOCK_MONOTONIC, &t);
      if (t.tv_sec - t0.tv_sec > 30) {
        timed_out = true;
        break;
      }
    }
    if (timed_out) break;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    // A small receive on an RC QP with its own receive queue is scattered into the CQE itself
    // (the first bytes of a 64-byte CQE), as rdma-core's poll code expects.
    const uint8_t byte = (op_own & MLX5_INLINE_SCATTER_32)
                             ? *reinterpret_cast<volatile uint8_t*>(cqe)
                             : rbuf[(got % 64) * 64];
    if ((op_own >> 4) != MLX5_CQE_RESP_SEND || byte != uint8_t(got)) {
      fprintf(stderr, "receive %u: opcode %u byte %u\n", got, op_own >> 4, byte);
      break;
    }
    dc.dbrec[0] = bswap32((got + 1) & 0xffffff);
    if (int r = post_recv(got + 32)) {
      fprintf(stderr, "receive %u: ibv_post_recv %d\n", got, r);
      break;
    }
  }
  printf("%u\n", got);
  fflush(stdout);
  ibv_destroy_qp(qp);
  ibv_dereg_mr(mr);
  ibv_destroy_cq(cq);
  return 0;
}

// Sends 2000 messages, one at a time, to a receiver process that spins on its CQ buffer and never
// calls ibv_poll_cq: each must reach it (executed by this process directly; the receiver's model
// thread, woken in time while the receiver's thread spins, delivers them with SOFTHCA_DIRECT=0,
// as in SendsToStoppedReceiverDoNotTimeOut). The sender's transport timer is short (~12 ms); it must never run out
// for a live receiver, as on hardware. Prints the time taken (not asserted).
TEST(Delivery, ReceiverPollingCqBufferGetsSends) {
  Child c("raw-receiver");
  unsigned rqpn, rlid;
  ASSERT_EQ(fscanf(c.out, "%u %u", &rqpn, &rlid), 2);
  Dev d;
  ibv_cq* cq = ibv_create_cq(d.ctx, 64, nullptr, nullptr, 0);
  ibv_qp* qp = make_rc(d, cq);
  ASSERT_TRUE(cq && qp);
  ASSERT_EQ(connect_rc(qp, rqpn, uint16_t(rlid), 7, 10, 2), 0);  // ~12 ms transport timeout
  constexpr unsigned kCount = 2000;
  fprintf(c.in, "%u %u %u\n", qp->qp_num, lid_of(d), kCount);
  fflush(c.in);
  char word[16];
  ASSERT_EQ(fscanf(c.out, "%15s", word), 1);
  timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (unsigned i = 0; i < kCount; ++i) {
    uint8_t v = uint8_t(i);
    ibv_sge s{uint64_t(uintptr_t(&v)), 1, 0};
    ibv_send_wr wr{}, *bad;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
    ASSERT_EQ(ibv_post_send(qp, &wr, &bad), 0);
    ibv_wc wc;
    ASSERT_TRUE(poll_cq_for(cq, &wc, 60)) << "send " << i << " never completed";
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS) << "send " << i;
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  fprintf(stderr, "%u sends in %.1f ms\n", kCount,
          double(t1.tv_sec - t0.tv_sec) * 1e3 + double(t1.tv_nsec - t0.tv_nsec) / 1e6);
  unsigned got = 0;
  ASSERT_EQ(fscanf(c.out, "%u", &got), 1);
  EXPECT_EQ(got, kCount);
  EXPECT_EQ(c.wait(), 0);
  ibv_destroy_qp(qp);
  ibv_destroy_cq(cq);
}

// The receiver's process is stopped while sends are posted to it. A real receiver's HCA places and
// acknowledges them whatever its CPUs do. Executed directly by the sender (SOFTHCA_DIRECT=1) they
// complete at once; through the receiver's model (SOFTHCA_DIRECT=0) they wait for it, and the
// sender's transport timer (here ~12 ms) must not run out meanwhile: they complete once it runs.
// Both run as a child (the knob is read once per process); it reports "ok" or what went wrong.
int peer_stopped_receiver_sender() {
  const bool direct = strcmp(getenv("SOFTHCA_DIRECT"), "0") != 0;
  Child c("raw-receiver");
  unsigned rqpn, rlid;
  if (fscanf(c.out, "%u %u", &rqpn, &rlid) != 2) return 2;
  Dev d;
  ibv_cq* cq = ibv_create_cq(d.ctx, 64, nullptr, nullptr, 0);
  ibv_qp* qp = make_rc(d, cq);
  if (!cq || !qp || connect_rc(qp, rqpn, uint16_t(rlid), 7, 10, 2)) return 3;
  constexpr unsigned kCount = 16;
  fprintf(c.in, "%u %u %u\n", qp->qp_num, lid_of(d), kCount);
  fflush(c.in);
  char word[16];
  if (fscanf(c.out, "%15s", word) != 1) return 4;
  int st = 0;
  if (kill(c.pid, SIGSTOP) || waitpid(c.pid, &st, WUNTRACED) != c.pid || !WIFSTOPPED(st)) return 5;
  for (unsigned i = 0; i < kCount; ++i) {
    uint8_t v = uint8_t(i);
    ibv_sge s{uint64_t(uintptr_t(&v)), 1, 0};
    ibv_send_wr wr{}, *bad;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
    if (ibv_post_send(qp, &wr, &bad)) return 6;
  }
  unsigned done = 0;
  for (int i = 0; i < 30; ++i) {  // many transport timeouts long
    ibv_wc wc;
    int n = ibv_poll_cq(cq, 1, &wc);
    if (n < 0) return 7;
    if (n && wc.status != IBV_WC_SUCCESS) {
      printf("send %u: %s while the receiver is stopped\n", done, ibv_wc_status_str(wc.status));
      return 0;
    }
    done += unsigned(n);
    if (!n) usleep(10000);
  }
  if (direct ? done != kCount : done != 0) {
    printf("%u of %u sends completed while the receiver was stopped\n", done, kCount);
    return 0;
  }
  if (kill(c.pid, SIGCONT)) return 8;
  for (; done < kCount; ++done) {
    ibv_wc wc;
    if (!poll_cq_for(cq, &wc, 30) || wc.status != IBV_WC_SUCCESS) {
      printf("send %u never completed\n", done);
      return 0;
    }
  }
  unsigned got = 0;
  if (fscanf(c.out, "%u", &got) != 1 || got != kCount) {
    printf("the receiver got %u of %u\n", got, kCount);
    return 0;
  }
  if (c.wait() != 0) return 9;
  printf("ok\n");
  ibv_destroy_qp(qp);
  ibv_destroy_cq(cq);
  return 0;
}

void stopped_receiver(const char* direct) {
  Child c("stopped-sender", {direct});
  char line[200] = {};
  ASSERT_TRUE(fgets(line, sizeof line, c.out)) << "exit " << c.wait();
  EXPECT_STREQ(line, "ok\n");
  EXPECT_EQ(c.wait(), 0);
}
TEST(Delivery, SendsToStoppedReceiverCompleteWhenExecutedDirectly) {
  stopped_receiver("SOFTHCA_DIRECT=1");
}
TEST(Delivery, SendsToStoppedReceiverDoNotTimeOut) { stopped_receiver("SOFTHCA_DIRECT=0"); }

// ---- timing and ordering knobs ---------------------------------------------------------------
// Each scenario runs in a child process (knobs are read once per process) and returns what it
// observed; each test runs it with the knob and without, and checks that only the knob exposes
// the program's bug.

// The knobs given, all others off (whatever this process's environment says).
std::vector<std::string> knobs(std::vector<std::string> on = {}) {
  for (const char* k : {"SOFTHCA_CHAOS=0", "SOFTHCA_DEFER=0", "SOFTHCA_LATE_SOURCE=0",
                        "SOFTHCA_REORDER=0", "SOFTHCA_COMPLETION_DELAY_US=0"})
    on.push_back(k);
  return on;
}

uint64_t word_at(Loop& l, uint32_t off) {
  uint64_t v;
  memcpy(&v, l.buf + off, 8);
  return v;
}
void set_word(Loop& l, uint32_t off, uint64_t v) { memcpy(l.buf + off, &v, 8); }

// Reuses the source of an RDMA write before its completion: returns 1 if the modified data
// arrived, 0 if the data as posted arrived.
int peer_reuse_source() {
  Dev d;
  Loop l(d, false);
  if (!l.ok()) return 100;
  set_word(l, 0, 0xA);
  set_word(l, 64, 0);
  if (l.post_write(l.a, 0, 64, 8, IBV_SEND_SIGNALED)) return 101;  // not inline: gathered by the HCA
  set_word(l, 0, 0xB);  // the bug: the source is reused before the completion
  ibv_wc wc;
  if (!poll_cq_for(l.cq, &wc, 30) || wc.status != IBV_WC_SUCCESS) return 102;
  return word_at(l, 64) == 0xB ? 1 : word_at(l, 64) == 0xA ? 0 : 103;
}

TEST(Knobs, LateSourceShowsSourceReusedBeforeCompletion) {
  Child with("reuse-source", knobs({"SOFTHCA_LATE_SOURCE=1", "SOFTHCA_COMPLETION_DELAY_US=200000"}));
  EXPECT_EQ(with.wait(), 1);
  Child chaos("reuse-source", {"SOFTHCA_CHAOS=1", "SOFTHCA_COMPLETION_DELAY_US=200000"});
  EXPECT_EQ(chaos.wait(), 1);
  Child without("reuse-source", knobs());
  EXPECT_EQ(without.wait(), 0);
}

// Looks at the target of an RDMA write right after ibv_post_send returns: 1 if it has not landed
// yet (execution deferred), 0 if it has; then waits for the completion, after which it must have.
int peer_landed_at_post() {
  Dev d;
  Loop l(d, false);
  if (!l.ok()) return 100;
  set_word(l, 0, 7);
  set_word(l, 64, 0);
  if (l.post_write(l.a, 0, 64, 8, IBV_SEND_SIGNALED)) return 101;
  int r = word_at(l, 64) == 0 ? 1 : 0;
  ibv_wc wc;
  if (!poll_cq_for(l.cq, &wc, 30) || wc.status != IBV_WC_SUCCESS) return 102;
  return word_at(l, 64) == 7 ? r : 103;
}

TEST(Knobs, DeferExecutesAfterThePostReturns) {
  Child with("landed-at-post", knobs({"SOFTHCA_DEFER=1", "SOFTHCA_DEFER_US=200000"}));
  EXPECT_EQ(with.wait(), 1);
  Child without("landed-at-post", knobs());
  EXPECT_EQ(without.wait(), 0);
}

// A program that assumes the completion is there once the data is: polls the CQ once after
// seeing the data. Returns 1 if the completion was not there yet, 0 if it was.
int peer_cqe_with_data() {
  Dev d;
  Loop l(d, false);
  if (!l.ok()) return 100;
  set_word(l, 0, 9);
  set_word(l, 64, 0);
  if (l.post_write(l.a, 0, 64, 8, IBV_SEND_SIGNALED)) return 101;
  timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (__atomic_load_n(reinterpret_cast<volatile uint64_t*>(l.buf + 64), __ATOMIC_ACQUIRE) != 9) {
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (t.tv_sec - t0.tv_sec > 30) return 104;
  }
  ibv_wc wc;
  int n = ibv_poll_cq(l.cq, 1, &wc);
  if (n == 0 && (!poll_cq_for(l.cq, &wc, 30) || wc.status != IBV_WC_SUCCESS)) return 102;
  return n == 0 ? 1 : 0;
}

TEST(Knobs, CompletionDelayHoldsCompletionsAfterTheData) {
  Child with("cqe-with-data", knobs({"SOFTHCA_COMPLETION_DELAY_US=200000"}));
  EXPECT_EQ(with.wait(), 1);
  Child without("cqe-with-data", knobs());
  EXPECT_EQ(without.wait(), 0);
}

// Within one QP, posted as one list: WRITE x=1, then (a) READ x, (b) READ x with IBV_SEND_FENCE,
// (c) FETCH_ADD x+=10, (d) the same with the fence. Returns a bit per case whose read or atomic
// saw x's old value 0 instead of the 1 written before it. Then (e) READ x=5 into l, then WRITE l
// to y, (f) the same with the fence on the write: bits 4 and 5 if y got l's old contents.
int peer_fence() {
  Dev d;
  Loop l(d, false);
  if (!l.ok()) return 100;
  int bits = 0;
  for (int c = 0; c < 4; ++c) {
    const uint32_t kX = 1024, kL = 2048, kSrc = 0;
    set_word(l, kSrc, 1);
    set_word(l, kX, 0);
    set_word(l, kL, ~0ull);
    ibv_sge s0{uint64_t(uintptr_t(l.buf + kSrc)), 8, l.mr->lkey};
    ibv_sge s1{uint64_t(uintptr_t(l.buf + kL)), 8, l.mr->lkey};
    ibv_send_wr w[2] = {}, *bad;
    w[0].opcode = IBV_WR_RDMA_WRITE;
    w[0].sg_list = &s0;
    w[0].num_sge = 1;
    w[0].wr.rdma.remote_addr = uint64_t(uintptr_t(l.buf + kX));
    w[0].wr.rdma.rkey = l.mr->rkey;
    w[0].next = &w[1];
    w[1].sg_list = &s1;
    w[1].num_sge = 1;
    w[1].send_flags = IBV_SEND_SIGNALED | (c % 2 ? IBV_SEND_FENCE : 0);
    if (c < 2) {
      w[1].opcode = IBV_WR_RDMA_READ;
      w[1].wr.rdma.remote_addr = uint64_t(uintptr_t(l.buf + kX));
      w[1].wr.rdma.rkey = l.mr->rkey;
    } else {
      w[1].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
      w[1].wr.atomic.remote_addr = uint64_t(uintptr_t(l.buf + kX));
      w[1].wr.atomic.rkey = l.mr->rkey;
      w[1].wr.atomic.compare_add = 10;
    }
    if (ibv_post_send(l.a, w, &bad)) return 101;
    ibv_wc wc;
    if (!poll_cq_for(l.cq, &wc, 30) || wc.status != IBV_WC_SUCCESS) return 102;
    if (word_at(l, kL) == 0) bits |= 1 << c;
    else if (word_at(l, kL) != 1) return 103;
  }
  for (int c = 4; c < 6; ++c) {
    const uint32_t kX = 1024, kL = 2048, kY = 3072;
    set_word(l, kX, 5);
    set_word(l, kL, ~0ull);
    set_word(l, kY, 0);
    ibv_sge s1{uint64_t(uintptr_t(l.buf + kL)), 8, l.mr->lkey};
    ibv_send_wr w[2] = {}, *bad;
    w[0].opcode = IBV_WR_RDMA_READ;
    w[0].sg_list = &s1;
    w[0].num_sge = 1;
    w[0].wr.rdma.remote_addr = uint64_t(uintptr_t(l.buf + kX));
    w[0].wr.rdma.rkey = l.mr->rkey;
    w[0].next = &w[1];
    w[1].opcode = IBV_WR_RDMA_WRITE;
    w[1].sg_list = &s1;
    w[1].num_sge = 1;
    w[1].wr.rdma.remote_addr = uint64_t(uintptr_t(l.buf + kY));
    w[1].wr.rdma.rkey = l.mr->rkey;
    w[1].send_flags = IBV_SEND_SIGNALED | (c % 2 ? IBV_SEND_FENCE : 0);
    if (ibv_post_send(l.a, w, &bad)) return 101;
    ibv_wc wc;
    if (!poll_cq_for(l.cq, &wc, 30) || wc.status != IBV_WC_SUCCESS) return 102;
    if (word_at(l, kL) != 5) return 104;  // the read's data is there by its completion
    if (word_at(l, kY) == ~0ull) bits |= 1 << c;
    else if (word_at(l, kY) != 5) return 105;
  }
  return bits;
}

TEST(Knobs, ReorderWithoutFenceSeesOldData) {
  Child with("fence", knobs({"SOFTHCA_REORDER=1"}));
  EXPECT_EQ(with.wait(), 0b010101);  // unfenced cases see old data, fenced ones never
  Child without("fence", knobs());
  EXPECT_EQ(without.wait(), 0);
}

// Two QPs write the same word, one after the other: returns the value left (2 in posting order).
int peer_across_qps() {
  Dev d;
  Loop l1(d, false), l2(d, false);
  if (!l1.ok() || !l2.ok()) return 100;
  set_word(l1, 0, 1);
  set_word(l2, 0, 2);
  uint64_t target = 0;
  auto post = [&](Loop& l) {
    ibv_sge s{uint64_t(uintptr_t(l.buf)), 8, l.mr->lkey};
    ibv_send_wr wr{}, *bad;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = uint64_t(uintptr_t(l1.buf + 4096));
    wr.wr.rdma.rkey = l1.mr->rkey;
    return ibv_post_send(l.a, &wr, &bad);
  };
  (void)target;
  if (post(l1) || post(l2)) return 101;
  ibv_wc wc;
  if (!poll_cq_for(l1.cq, &wc, 30) || !poll_cq_for(l2.cq, &wc, 30)) return 102;
  return int(word_at(l1, 4096));
}

TEST(Knobs, ReorderAcrossQps) {
  Child with("across-qps", knobs({"SOFTHCA_REORDER=1", "SOFTHCA_DEFER_US=100000"}));
  EXPECT_EQ(with.wait(), 1);  // the later QP's write ran first
  Child without("across-qps", knobs());
  EXPECT_EQ(without.wait(), 2);
}

TEST(Knobs, BadValuesAreRejected) {
  Child a("landed-at-post", knobs({"SOFTHCA_DOORBELL=fast"}));
  EXPECT_EQ(a.wait(), 1);
  Child b("landed-at-post", knobs({"SOFTHCA_CHAOS=2"}));
  EXPECT_EQ(b.wait(), 1);
}

int peer(const char* mode) {
  std::string m = mode;
  if (m == "concurrent-arms") return peer_concurrent_arms();
  if (m == "raw-without-sigtrap") return peer_raw_without_sigtrap();
  if (m == "rung-in-fault") return peer_rung_in_fault();
  if (m == "raw-receiver") return peer_raw_receiver();
  if (m == "stopped-sender") return peer_stopped_receiver_sender();
  if (m == "reuse-source") return peer_reuse_source();
  if (m == "landed-at-post") return peer_landed_at_post();
  if (m == "cqe-with-data") return peer_cqe_with_data();
  if (m == "fence") return peer_fence();
  if (m == "across-qps") return peer_across_qps();
  return 100;
}

}  // namespace

int main(int argc, char** argv) { return softhca_test_main(argc, argv, "exec_test", peer); }
