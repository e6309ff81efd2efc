// Poll-mode doorbells (see doorbell.h). The model fills the watched words with a poison value
// that no doorbell store can carry and swaps it back in when it sees a store: every store is
// noticed once, whatever value it writes.
#include "doorbell.h"

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "exec_knobs.h"
#include "hca.h"
#include "store_insn.h"
#include "wakeup.h"

namespace softhca {

bool doorbell_trap_mode() { return exec_knobs().doorbell_trap; }

namespace {

// As stored: opcode 0xff and DS 0 in a control segment's first 8 bytes (no valid WQE), and a CQ
// number above 24 bits in an arm doorbell.
constexpr uint64_t kPoison = 0x00ffffffffffffffull;
// A doorbell store writes the first 8 bytes of a control segment to bf.reg + offset, the offset
// alternating between the two 256-byte buffers; BlueFlame copies continue in 64-byte chunks.
constexpr int kBfWords = 8;  // chunk starts 0, 64, .., 448
constexpr int kMaxPages = 4096;

struct Watched {
  Qp* qp = nullptr;
  Cq* cq = nullptr;
  uint8_t* page;
  bool uar = false;  // a DevX UAR page: rings the DevX QPs that use it
};

// Never destroyed: the doorbell thread outlives static destructors.
std::mutex& g_mu = *new std::mutex;  // the watch list and every scan of it
std::vector<Watched>& g_list = *new std::vector<Watched>;
std::atomic<int> g_count{0};
std::atomic<uint8_t*> g_pages[kMaxPages];  // for the fault handler: which pages are ours
Watched g_slot[kMaxPages];                 // and what each is (written before g_pages[i])
thread_local bool t_holds_mu = false;      // this thread holds g_mu: its own faults must not lock
std::atomic<uint32_t> g_wake{0};           // futex word of the doorbell thread
std::atomic<bool> g_protected{false};      // pages are write-protected: the thread sleeps
std::once_flag g_started;
struct sigaction g_old_segv;

std::atomic<uint64_t>* word(uint8_t* page, uint32_t off) {
  return reinterpret_cast<std::atomic<uint64_t>*>(page + off);
}

void fill_poison(uint8_t* page) {
  for (uint32_t off = 0; off < 4096; off += 8) word(page, off)->store(kPoison, std::memory_order_relaxed);
}

struct HoldMu {  // g_mu, marked for the fault handler
  std::lock_guard<std::mutex> g{g_mu};
  HoldMu() { t_holds_mu = true; }
  ~HoldMu() { t_holds_mu = false; }
};

void ring_qp(Hca& h, Qp* qp) {
  std::shared_lock<std::shared_mutex> g(h.tables);
  std::lock_guard<std::recursive_mutex> q(qp->mu);
  h.ring_sq(qp);
}

void ring_uar(Hca& h, uint8_t* page) {  // every DevX QP on this UAR executes what it announces
  std::shared_lock<std::shared_mutex> g(h.tables);
  for (auto& [n, qp] : h.qps) {
    if (qp->bf != page || !qp->sq_buf) continue;
    std::lock_guard<std::recursive_mutex> q(qp->mu);
    if (qp->devx) h.ring_sq(qp);
  }
}

// A BlueFlame copy is several stores to the register (glibc's memcpy of 64 bytes: two adjacent
// 64-byte stores; older copies: 16-byte words). The doorbell has executed at the first: the rest
// carry nothing the model reads (it reads WQEs from the send queue), so the stores that follow
// directly and land in the same page are stepped over too, instead of faulting once each.
void skip_rest_of_doorbell(ucontext_t* uc, const uint8_t* page) {
  for (int i = 0; i < 8; ++i) {
    const uint64_t ip = uint64_t(uc->uc_mcontext.gregs[REG_RIP]);
    StoreInsn s;
    if (!decode_store(reinterpret_cast<const uint8_t*>(ip), &s) || !s.addressable) return;
    const uint64_t a = store_address(s, uc, ip), p = uint64_t(uintptr_t(page));
    if (a < p || a + s.size > p + 4096) return;
    uc->uc_mcontext.gregs[REG_RIP] += s.length;
  }
}

// The store that faulted on watched page `w`, handled inside the fault: the instruction is
// stepped over (the register is write-only, like a UAR: nothing is written) and the doorbell it
// is executes now, in the storing thread, as the verbs post path does. False when the instruction
// is not a store we decode or an arm doorbell's value cannot be read: the caller then lets the
// store through and the doorbell thread handles it.
bool ring_in_fault(int slot, uint8_t* addr, void* ucv) {
  auto* uc = static_cast<ucontext_t*>(ucv);
  StoreInsn s;
  if (!decode_store(reinterpret_cast<const uint8_t*>(uc->uc_mcontext.gregs[REG_RIP]), &s)) return false;
  HoldMu g;  // after the doorbell thread's current look: order with the stores it has seen
  const Watched w = g_slot[slot];
  if (g_pages[slot].load() != w.page) return false;  // unwatched meanwhile
  const uint32_t off = uint32_t(addr - w.page);
  if (w.cq) {
    if (!s.gpr || s.size != 8 || off != MLX5_CQ_DOORBELL) return false;
    const uint64_t v = gpr_value(uc, s.reg);
    uint32_t db[2];
    memcpy(db, &v, 8);
    ring_cq_arm(db);
  } else if (w.uar) {
    ring_uar(Hca::get(), w.page);
  } else {
    ring_qp(Hca::get(), w.qp);
  }
  uc->uc_mcontext.gregs[REG_RIP] += s.length;
  if (!w.cq) skip_rest_of_doorbell(uc, w.page);
  return true;
}

// A store to a watched page while it is write-protected (the doorbell thread sleeps).
void on_segv(int sig, siginfo_t* si, void* uc) {
  auto* addr = static_cast<uint8_t*>(si->si_addr);
  auto* page = reinterpret_cast<uint8_t*>(uintptr_t(addr) & ~uintptr_t(4095));
  for (int i = 0; page && i < kMaxPages; ++i)
    if (g_pages[i].load(std::memory_order_acquire) == page) {
      if (!t_holds_mu && exec_knobs().doorbell_in_fault && ring_in_fault(i, addr, uc)) return;
      // Let it through and wake the doorbell thread to handle it.
      mprotect(page, 4096, PROT_READ | PROT_WRITE);
      g_wake.fetch_add(1);
      futex_wake(&g_wake);
      return;
    }
  if (g_old_segv.sa_flags & SA_SIGINFO) {
    if (g_old_segv.sa_sigaction) return g_old_segv.sa_sigaction(sig, si, uc);
  } else if (g_old_segv.sa_handler != SIG_DFL && g_old_segv.sa_handler != SIG_IGN) {
    return g_old_segv.sa_handler(sig);
  }
  signal(sig, SIG_DFL);  // re-executing the instruction now takes the default action
}

void install_handler() {
  struct sigaction sa {}, cur;
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, nullptr, &cur);
  if (cur.sa_sigaction != on_segv) sigaction(SIGSEGV, &sa, &g_old_segv);
}

void add_page(const Watched& w) {  // g_mu held
  for (int i = 0; i < kMaxPages; ++i)
    if (g_pages[i].load() == nullptr) {
      g_slot[i] = w;
      g_pages[i].store(w.page, std::memory_order_release);
      return;
    }
}

void remove_page(uint8_t* page) {  // g_mu held
  for (int i = 0; i < kMaxPages; ++i)
    if (g_pages[i].load() == page) {
      g_pages[i].store(nullptr);
      return;
    }
}

void protect_all(bool on) {  // g_mu held
  for (auto& w : g_list) mprotect(w.page, 4096, on ? PROT_READ : PROT_READ | PROT_WRITE);
  g_protected.store(on);
}

// One look at every watched page (g_mu held). Arm doorbells are handled before the SQ doorbells
// seen in the same look: a program's arm store precedes its later doorbell store, so when the
// latter is visible the former is too, and its order is kept.
bool scan() {
  Hca& h = Hca::get();
  Qp* rung[64];
  int nrung = 0;
  bool any = false;
  uint8_t* uars[64];
  int nuar = 0;
  for (auto& w : g_list) {
    if (!w.qp && !w.uar) continue;
    bool hit = false;
    const uint32_t reg = w.uar ? 0x800 : 0;  // a DevX UAR's register is at 0x800 of its page
    for (int i = 0; i < kBfWords; ++i)
      if (word(w.page, reg + uint32_t(i) * 64)->load(std::memory_order_relaxed) != kPoison) hit = true;
    if (!hit) continue;
    for (int i = 0; i < kBfWords; ++i) word(w.page, reg + uint32_t(i) * 64)->exchange(kPoison);
    if (w.uar) {
      if (nuar < 64) uars[nuar++] = w.page;
    } else if (nrung < 64) {
      rung[nrung++] = w.qp;
    }
    any = true;
  }
  for (auto& w : g_list) {
    if (!w.cq) continue;
    auto* a = word(w.page, MLX5_CQ_DOORBELL);
    if (a->load(std::memory_order_relaxed) == kPoison) continue;
    uint64_t v = a->exchange(kPoison);
    uint32_t db[2];
    memcpy(db, &v, 8);
    ring_cq_arm(db);
    any = true;
  }
  for (int i = 0; i < nrung; ++i) ring_qp(h, rung[i]);
  for (int i = 0; i < nuar; ++i) ring_uar(h, uars[i]);
  return any;
}

void doorbell_thread() {
  pthread_setname_np(pthread_self(), "softhca-db");
  prefer_prompt_wakeup();
  uint64_t last = now_ns();
  const uint64_t spin_ns = uint64_t(exec_knobs().doorbell_spin_us) * 1000;
  for (;;) {
    uint32_t seen = g_wake.load();
    {
      HoldMu g;
      if (scan()) last = now_ns();
    }
    if (now_ns() - last < spin_ns) {
      model_pause();
      continue;
    }
    // Idle: protect the pages and sleep; the next store faults once and wakes us. A store that
    // landed before the protection is seen by the look after it.
    {
      HoldMu g;
      protect_all(true);
      if (scan()) {
        protect_all(false);
        last = now_ns();
        continue;
      }
    }
    futex_wait(&g_wake, seen, -1);
    HoldMu g;
    protect_all(false);
    last = now_ns();
  }
}

void watch(Qp* qp, Cq* cq, uint8_t* page, bool uar = false) {
  std::call_once(g_started, [] { std::thread(doorbell_thread).detach(); });
  // Again at every watch, as in trap mode: a library loaded later (UCX) may have put its own
  // SIGSEGV handler in front of ours; it is chained behind ours again.
  install_handler();
  HoldMu g;
  for (auto& w : g_list)
    if (w.page == page) return;
  fill_poison(page);
  if (g_protected.load()) mprotect(page, 4096, PROT_READ);
  Watched w{qp, cq, page, uar};
  add_page(w);
  g_list.push_back(w);
  g_count.fetch_add(1);
}

void unwatch(uint8_t* page) {
  HoldMu g;
  for (size_t i = 0; i < g_list.size(); ++i)
    if (g_list[i].page == page) {
      mprotect(page, 4096, PROT_READ | PROT_WRITE);
      remove_page(page);
      g_list.erase(g_list.begin() + long(i));
      g_count.fetch_sub(1);
      return;
    }
}

}  // namespace

void ring_cq_arm(const uint32_t db[2]) {
  Hca& h = Hca::get();
  std::shared_lock<std::shared_mutex> g(h.tables);
  auto it = h.cqs.find(be32(db[1]));
  if (getenv("SOFTHCA_TRACE"))
    fprintf(stderr, "softhca: cq arm doorbell %08x cqn %u%s\n", be32(db[0]), be32(db[1]),
            it == h.cqs.end() ? " (no such CQ)" : "");
  if (it != h.cqs.end()) h.arm_cq(it->second, (be32(db[0]) & MLX5_CQ_DB_REQ_NOT_SOL) != 0);
}

void watch_bf_page(Qp* qp) { watch(qp, nullptr, qp->bf); }
void watch_uar_page(uint8_t* page) { watch(nullptr, nullptr, page, true); }
void unwatch_uar_page(uint8_t* page) { unwatch(page); }
void unwatch_bf_page(Qp* qp) { unwatch(qp->bf); }

uint8_t* watch_cq_page(Cq* cq) {
  void* m = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  watch(nullptr, cq, static_cast<uint8_t*>(m));
  return static_cast<uint8_t*>(m);
}

void unwatch_cq_page(Cq* cq) {
  if (!cq->uar) return;
  unwatch(cq->uar);
  munmap(cq->uar, 4096);
  cq->uar = nullptr;
}

void doorbell_sync() {
  if (g_count.load(std::memory_order_relaxed) == 0) return;
  HoldMu g;
  scan();
}

}  // namespace softhca
