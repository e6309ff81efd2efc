// Initiator depth (max_rd_atomic) of RC QPs, from the IB spec's semantics: a requester keeps at
// most max_rd_atomic RDMA reads/atomics outstanding; later ones (and, RC being in order, every
// WQE behind them) wait in the send queue until responses arrive. They never fail for it.
// main() forces the message path (SOFTHCA_DIRECT=0: the responder's model executes every request)
// and a 200 us atomic window, so a queue of requests at the responder lasts long enough to see.
#include "test/softhca/tests/common.h"

namespace {

constexpr uint64_t kInitial = 5000;
constexpr uint64_t kSentinel = ~0ull;  // a result slot no response has written yet
constexpr int kAdds = 64, kReads = 8;

ibv_qp* make_deep_rc(Dev& d, ibv_cq* cq) {
  ibv_qp_init_attr ia{};
  ia.qp_type = IBV_QPT_RC;
  ia.send_cq = ia.recv_cq = cq;
  ia.cap.max_send_wr = 128;
  ia.cap.max_recv_wr = 4;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ibv_qp* qp = ibv_create_qp(d.pd, &ia);
  if (!qp) return nullptr;
  ibv_qp_attr m{};
  m.qp_state = IBV_QPS_INIT;
  m.port_num = 1;
  m.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    return nullptr;
  return qp;
}

TEST(RdAtomic, InitiatorDepthBoundsOutstandingReadsAndAtomics) {
  Dev d;
  ASSERT_NE(d.pd, nullptr);
  ibv_cq* cq = ibv_create_cq(d.ctx, 256, nullptr, nullptr, 0);
  ibv_qp* a = make_deep_rc(d, cq);
  ibv_qp* b = make_deep_rc(d, cq);
  ASSERT_TRUE(a && b);
  alignas(8) static uint64_t word;
  word = kInitial;
  static uint64_t results[kAdds + kReads];
  for (auto& r : results) __atomic_store_n(&r, kSentinel, __ATOMIC_RELAXED);
  ibv_mr* target = ibv_reg_mr(d.pd, &word, 8, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC |
                                                  IBV_ACCESS_REMOTE_READ);
  ibv_mr* local = ibv_reg_mr(d.pd, results, sizeof results, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_TRUE(target && local);
  constexpr uint8_t kDepth = 2;
  // timeout 10 (~4 ms) and 2 retries: well below the ~13 ms 64 queued atomics keep a responder busy
  ASSERT_EQ(connect_rc(a, b->qp_num, lid_of(d), 7, 10, 2, kDepth), 0);
  ASSERT_EQ(connect_rc(b, a->qp_num, lid_of(d), 7, 10, 2, kDepth), 0);

  // Observer: the responder executes a request when it changes `word`; a request counts as
  // outstanding until its response has landed in `results`. Sampling `word` first and the landed
  // count after makes executed - landed an upper bound never above the true count, so any value
  // above the depth is a real violation.
  std::atomic<bool> done{false};
  std::atomic<int> max_outstanding{0};
  std::thread watch([&] {
    while (!done.load()) {
      uint64_t executed = __atomic_load_n(&word, __ATOMIC_ACQUIRE) - kInitial;
      int landed = 0;
      for (int i = 0; i < kAdds; ++i)
        if (__atomic_load_n(&results[i], __ATOMIC_ACQUIRE) != kSentinel) landed++;
      int out = int(executed) - landed;
      if (out > max_outstanding.load()) max_outstanding.store(out);
    }
  });

  // 64 fetch-adds then 8 reads of the word, back to back in one post, unsignaled except the last.
  std::vector<ibv_send_wr> wrs(kAdds + kReads);
  std::vector<ibv_sge> sges(kAdds + kReads);
  for (int i = 0; i < kAdds + kReads; ++i) {
    sges[i] = {uint64_t(uintptr_t(&results[i])), 8, local->lkey};
    ibv_send_wr& w = wrs[i];
    w.wr_id = uint64_t(i);
    w.sg_list = &sges[i];
    w.num_sge = 1;
    if (i < kAdds) {
      w.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
      w.wr.atomic.remote_addr = uint64_t(uintptr_t(&word));
      w.wr.atomic.rkey = target->rkey;
      w.wr.atomic.compare_add = 1;
    } else {
      w.opcode = IBV_WR_RDMA_READ;
      w.wr.rdma.remote_addr = uint64_t(uintptr_t(&word));
      w.wr.rdma.rkey = target->rkey;
    }
    w.send_flags = i == kAdds + kReads - 1 ? IBV_SEND_SIGNALED : 0;
    w.next = i + 1 < kAdds + kReads ? &wrs[i + 1] : nullptr;
  }
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a, wrs.data(), &bad), 0);

  // Queued requests wait rather than fail: the only completion is the last WQE's, successful.
  ibv_wc wc = wait_wc(cq);
  done.store(true);
  watch.join();
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
  EXPECT_EQ(wc.wr_id, uint64_t(kAdds + kReads - 1));
  usleep(20000);
  ibv_wc extra;
  EXPECT_EQ(ibv_poll_cq(cq, 1, &extra), 0) << "unexpected completion, status "
                                            << ibv_wc_status_str(extra.status);

  EXPECT_LE(max_outstanding.load(), int(kDepth));
  EXPECT_EQ(__atomic_load_n(&word, __ATOMIC_ACQUIRE), kInitial + kAdds);
  for (int i = 0; i < kAdds; ++i) EXPECT_EQ(results[i], kInitial + uint64_t(i)) << "fetch-add " << i;
  for (int i = kAdds; i < kAdds + kReads; ++i)  // in order: each read sees every earlier add
    EXPECT_EQ(results[i], kInitial + kAdds) << "read " << i - kAdds;

  ibv_destroy_qp(a);
  ibv_destroy_qp(b);
  ibv_dereg_mr(target);
  ibv_dereg_mr(local);
  ibv_destroy_cq(cq);
}

}  // namespace

int main(int argc, char** argv) {
  setenv("SOFTHCA_DIRECT", "0", 1);  // every request through the responder's queue
  setenv("SOFTHCA_ATOMIC_WINDOW_US", "200", 0);
  return softhca_test_main(argc, argv, "rd-atomic-test", [](const char*) { return 64; });
}
