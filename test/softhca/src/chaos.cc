// The execution thread of the timing and ordering knobs (see chaos.h and README "Knobs").
#include "chaos.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "exec_knobs.h"
#include "hca.h"

namespace softhca {

namespace {

struct Item {
  Qp* qp;
  uint32_t qpn;
  uint64_t at, seq;
};

// Never destroyed: the execution thread outlives static destructors.
struct State {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Item> items;  // at most one per QP: the earliest time it must be looked at
  uint64_t seq = 0;
  std::once_flag started;
};
State& st() {
  static State* s = new State;
  return *s;
}

void run_due(std::vector<Item>& due) {
  // Doorbells of different QPs have no order on the wire: the knob runs the latest first.
  std::sort(due.begin(), due.end(), [](const Item& a, const Item& b) { return a.seq < b.seq; });
  if (exec_knobs().reorder) std::reverse(due.begin(), due.end());
  Hca& h = Hca::get();
  for (Item& it : due) {
    std::shared_lock<std::shared_mutex> g(h.tables);
    auto q = h.qps.find(it.qpn);
    if (q == h.qps.end() || q->second != it.qp) continue;  // destroyed meanwhile
    std::lock_guard<std::recursive_mutex> l(it.qp->mu);
    h.ring_sq(it.qp, true);
  }
}

void execution_thread() {
  std::unique_lock<std::mutex> g(st().mu);
  for (;;) {
    if (st().items.empty()) {
      st().cv.wait(g);
      continue;
    }
    uint64_t next = ~0ull;
    for (auto& it : st().items) next = std::min(next, it.at);
    uint64_t now = now_ns();
    if (next > now) {
      st().cv.wait_for(g, std::chrono::nanoseconds(next - now));
      continue;
    }
    // Reordering takes every QP rung so far at once (as an HCA that finds several doorbells).
    uint64_t horizon = now + (exec_knobs().reorder ? uint64_t(exec_knobs().defer_us) * 1000 : 0);
    std::vector<Item> due;
    for (size_t i = 0; i < st().items.size();)
      if (st().items[i].at <= horizon) {
        due.push_back(st().items[i]);
        st().items[i] = st().items.back();
        st().items.pop_back();
      } else {
        ++i;
      }
    g.unlock();
    run_due(due);
    g.lock();
  }
}

void schedule(Qp* qp, uint64_t at) {
  std::call_once(st().started, [] { std::thread(execution_thread).detach(); });
  std::lock_guard<std::mutex> g(st().mu);
  for (auto& it : st().items)
    if (it.qp == qp) {
      it.at = std::min(it.at, at);
      st().cv.notify_one();
      return;
    }
  st().items.push_back({qp, qp->qpx.qp_base.qp_num, at, st().seq++});
  st().cv.notify_one();
}

// Local placements held back while a reordered batch runs (see execute_reordered).
struct HeldPlacement {
  uint64_t addr;
  std::vector<uint8_t> bytes;
};
thread_local std::vector<HeldPlacement>* t_held = nullptr;

void place_held() {
  for (HeldPlacement& h : *t_held)
    memcpy(reinterpret_cast<void*>(uintptr_t(h.addr)), h.bytes.data(), h.bytes.size());
  t_held->clear();
}

}  // namespace

void place_local(uint64_t addr, const void* src, uint32_t len) {
  if (t_held) {
    auto* b = static_cast<const uint8_t*>(src);
    t_held->push_back({addr, std::vector<uint8_t>(b, b + len)});
    return;
  }
  memcpy(reinterpret_cast<void*>(uintptr_t(addr)), src, len);
}

bool chaos_defer_ring(Qp* qp) {
  const ExecKnobs& k = exec_knobs();
  if (!k.defers()) return false;
  uint64_t hold_us = k.defer_us;
  // The source is read at the latest moment: when the completion could appear.
  if (k.late_source) hold_us = std::max<uint64_t>(hold_us, k.completion_delay_us ? k.completion_delay_us : 1000);
  schedule(qp, now_ns() + hold_us * 1000);
  return true;
}

void chaos_retire_at(Qp* qp, uint64_t at_ns) { schedule(qp, at_ns); }

uint64_t chaos_complete_at() {
  const ExecKnobs& k = exec_knobs();
  if (!k.completion_delay_us || k.late_source) return 0;  // late source: execution itself waited
  return now_ns() + uint64_t(k.completion_delay_us) * 1000;
}

// Runs the WQEs from hw_ci to `target` in the order the knob allows: an RDMA read or atomic
// without a fence passes the RDMA writes before it (a program must fence a read or atomic that
// has to see its own earlier writes), and the data a read or atomic returns lands locally only
// when a fenced WQE comes or the batch ends, so a WQE that gathers it without a fence (a send of
// what was just read) sends the old contents. Remote execution keeps its order otherwise;
// completions follow the send queue's order.
void Hca::execute_reordered(Qp* qp, uint32_t target) {
  struct W {
    uint32_t start, bbs;
    bool rd_atomic, write, fence;
  };
  std::vector<W> ws;
  uint32_t ci = qp->hw_ci;
  while ((ci & 0xffff) != target) {
    mlx5_wqe_ctrl_seg ctrl;
    memcpy(&ctrl, qp->sq_buf + size_t(ci & (qp->sq_bbs - 1)) * 64, sizeof ctrl);
    uint32_t ds = be32(ctrl.qpn_ds) & 0x3f;
    uint32_t bbs = (ds * 16 + 63) / 64;
    if (bbs == 0 || bbs > qp->sq_bbs) bbs = 1;
    uint8_t op = be32(ctrl.opmod_idx_opcode) & 0xff;
    bool rd = op == MLX5_OPCODE_RDMA_READ || op == MLX5_OPCODE_ATOMIC_CS ||
              op == MLX5_OPCODE_ATOMIC_FA || op == MLX5_OPCODE_ATOMIC_MASKED_CS ||
              op == MLX5_OPCODE_ATOMIC_MASKED_FA;
    bool wr = op == MLX5_OPCODE_RDMA_WRITE || op == MLX5_OPCODE_RDMA_WRITE_IMM;
    ws.push_back({ci, bbs, rd, wr, (ctrl.fm_ce_se >> 5) != 0});  // any fence mode
    ci += bbs;
  }
  auto may_pass = [](const W& earlier, const W& later) {
    return !later.fence && later.rd_atomic && earlier.write;
  };
  for (size_t i = 1; i < ws.size(); ++i)
    for (size_t j = i; j > 0 && may_pass(ws[j - 1], ws[j]); --j) std::swap(ws[j - 1], ws[j]);
  size_t before = qp->out.size();
  uint32_t first = qp->hw_ci;
  std::vector<HeldPlacement> held;
  t_held = &held;
  for (const W& w : ws) {
    if (w.fence) place_held();  // a fence waits for earlier reads and atomics to complete
    execute_wqe(qp, w.start, w.bbs);
  }
  place_held();
  t_held = nullptr;
  qp->hw_ci = ci;
  std::stable_sort(qp->out.begin() + long(before), qp->out.end(), [&](const Pending& a, const Pending& b) {
    return ((a.idx - first) & 0xffff) < ((b.idx - first) & 0xffff);
  });
}

}  // namespace softhca
