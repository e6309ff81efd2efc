// lib/coll over a mix of same-node and other-node members, before a multi-node runtime exists:
// every PE is a forked process, all of them share one mapping that holds each PE's control area
// and heap, and peer::routes maps only the PEs of a PE's own "node". The others are reached
// through FakeNetwork, which copies through the shared mapping, so the remote paths of the
// collectives run: peer::write/store/read instead of loads and stores, no doorbells (waiters see
// remote writes only when their sleep times out). The delayed variant holds every write in a
// queue per target and lands it up to a few hundred microseconds later, in order per target
// but in any order across targets, or at flush(): code that relies on a remote write being
// visible at once, or on writes to different PEs arriving in issue order, fails or hangs here.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <csignal>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <tuple>
#include <vector>

#include "lib/coll/barrier.h"
#include "lib/coll/collectives.h"
#include "lib/coll/team_exchange.h"
#include "lib/transport/net/peer.h"

namespace hoshmem {
namespace {

constexpr size_t kHeapBytes = 4 << 20;
constexpr size_t kRegionBytes = shm::kControlBytes + kHeapBytes;  // per PE: control area, heap

struct Job {
  int npes;
  int pes_per_node;
  bool delayed;  // FakeNetwork delays writes
};

char *g_shared = nullptr;  // every PE's region, PE by PE
char *region(int pe) { return g_shared + static_cast<size_t>(pe) * kRegionBytes; }

// The inter-node half of peer.h over the shared mapping.
class FakeNetwork : public peer::Network {
 public:
  FakeNetwork(int me, bool delayed) : me_(me), delayed_(delayed) {
    if (delayed_) deliverer_ = std::thread([this] { deliver_loop(); });
  }
  ~FakeNetwork() override {
    if (!delayed_) return;
    stop_ = true;
    deliverer_.join();
    flush();  // a real network delivers what a PE wrote just before it exits
  }

  void write(int pe, void *mine, const void *src, size_t len) override {
    char *target = there(pe, mine, len);
    if (!delayed_) return land(target, static_cast<const char *>(src), len);
    std::lock_guard<std::mutex> lock(mutex_);
    auto &q = queues_[pe];
    // Due some time from now, never before the previous write to the same PE.
    auto due = std::chrono::steady_clock::now() + std::chrono::microseconds(delay_(rng_));
    if (!q.empty() && q.back().due > due) due = q.back().due;
    q.push_back({target, std::vector<char>(static_cast<const char *>(src),
                                           static_cast<const char *>(src) + len), due});
  }
  void read(int pe, void *dst, const void *mine, size_t len) override {
    memcpy(dst, there(pe, mine, len), len);
  }
  void flush() override {
    if (!delayed_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto &[pe, q] : queues_)
      for (; !q.empty(); q.pop_front()) land(q.front().target, q.front().bytes.data(), q.front().bytes.size());
  }

 private:
  struct Pending {
    char *target;
    std::vector<char> bytes;
    std::chrono::steady_clock::time_point due;
  };

  // PE `pe`'s copy of my `mine`: the same offset in its region. Only off-node PEs come here.
  char *there(int pe, const void *mine, size_t len) const {
    const size_t off = static_cast<const char *>(mine) - region(me_);
    if (off + len > kRegionBytes) {
      fprintf(stderr, "PE %d: network access outside the region (offset %zu)\n", me_, off);
      _exit(3);
    }
    return region(pe) + off;
  }
  // A counter lands as one atomic store (its reader polls it with atomic loads).
  static void land(char *target, const char *src, size_t len) {
    if (len == 8 && reinterpret_cast<uintptr_t>(target) % 8 == 0) {
      uint64_t v;
      memcpy(&v, src, 8);
      reinterpret_cast<std::atomic<uint64_t> *>(target)->store(v, std::memory_order_seq_cst);
      return;
    }
    memcpy(target, src, len);
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  void deliver_loop() {
    while (!stop_) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        const auto now = std::chrono::steady_clock::now();
        for (auto &[pe, q] : queues_)
          for (; !q.empty() && q.front().due <= now; q.pop_front())
            land(q.front().target, q.front().bytes.data(), q.front().bytes.size());
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  const int me_;
  const bool delayed_;
  std::mutex mutex_;
  std::map<int, std::deque<Pending>> queues_;
  std::mt19937 rng_{12345};
  std::uniform_int_distribution<int> delay_{0, 300};
  std::atomic<bool> stop_{false};
  std::thread deliverer_;
};

// --- what one PE runs --------------------------------------------------------------------------

int g_failures = 0;
#define EXPECT_PE(cond, ...)                                                  \
  do {                                                                        \
    if (!(cond)) {                                                            \
      fprintf(stderr, "PE %d: %s:%d: ", g_me, __FILE__, __LINE__);            \
      fprintf(stderr, __VA_ARGS__);                                           \
      fputc('\n', stderr);                                                    \
      if (++g_failures > 20) _exit(1);                                        \
    }                                                                         \
  } while (0)

int g_me = -1;
char *g_heap = nullptr;  // my heap
size_t g_heap_used = 0;

// The same sequence of allocations on every PE gives symmetric addresses.
template <class T>
T *sym_alloc(size_t n) {
  T *p = reinterpret_cast<T *>(g_heap + g_heap_used);
  g_heap_used += (n * sizeof(T) + 63) / 64 * 64;
  if (g_heap_used > kHeapBytes - 64) _exit(4);  // the last line is the phase word
  return p;
}

const char *token_address(uint64_t token) { return g_heap + token; }

void sum_long(void *acc, const void *in, size_t n) {
  for (size_t i = 0; i < n; ++i) static_cast<long *>(acc)[i] += static_cast<const long *>(in)[i];
}

long value(int pe, size_t i, int round) { return pe * 1000003L + static_cast<long>(i) * 7 + round; }

struct Team {
  std::vector<int> members;
  TeamView view;
  uint64_t epoch = 0;
};

Team make_team(std::vector<int> members, int slot, shm::ControlBlock *const *controls,
               const WaitPolicy *policy) {
  Team t;
  t.members = std::move(members);
  t.view.size = static_cast<int>(t.members.size());
  t.view.world = t.members.data();
  for (int i = 0; i < t.view.size; ++i)
    if (t.members[i] == g_me) t.view.rank = i;
  t.view.slot = slot;
  t.view.control = controls;
  t.view.wait = policy;
  t.view.note_locality();
  return t;
}

// A sync must not let anyone out before everyone came in: each member raises its phase word (in
// the test's own memory, not through the library) before the sync and checks the others' after.
void check_sync(const TeamView &t, int round) {
  auto phase = [](int pe) {
    return reinterpret_cast<std::atomic<long> *>(region(pe) + shm::kControlBytes + kHeapBytes - 64);
  };
  phase(g_me)->fetch_add(1);
  const long mine = phase(g_me)->load();
  coll::sync(t);
  for (int m = 0; m < t.size; ++m)
    EXPECT_PE(phase(t.world[m])->load() >= mine, "sync %d: PE %d not there yet", round, t.world[m]);
  coll::sync(t);
}

void run_collectives(const TeamView &t, int round) {
  const int n = t.size, me = t.rank;
  check_sync(t, round);

  // broadcast: pushed cells, one chunk, pipelined chunks (and a partial last one)
  for (size_t bytes : {8ul, 2048ul, 20000ul, 3 * coll::kBroadcastChunkBytes + 808}) {
    const size_t count = bytes / sizeof(long);
    long *src = sym_alloc<long>(count), *dst = sym_alloc<long>(count);
    const int root = (round + static_cast<int>(bytes)) % n;
    for (size_t i = 0; i < count; ++i) src[i] = value(t.world[me], i, round), dst[i] = -1;
    coll::broadcast(t, dst, src, count * sizeof(long), root, true, nullptr);
    for (size_t i = 0; i < count; ++i)
      EXPECT_PE(dst[i] == value(t.world[root], i, round), "broadcast %zu B [%zu]", bytes, i);
  }

  // fcollect: cells and the gather of blocks
  for (size_t count : {3ul, 700ul}) {
    long *src = sym_alloc<long>(count), *dst = sym_alloc<long>(count * n);
    for (size_t i = 0; i < count; ++i) src[i] = value(t.world[me], i, round);
    coll::fcollect(t, dst, src, count * sizeof(long), nullptr);
    for (int m = 0; m < n; ++m)
      for (size_t i = 0; i < count; ++i)
        EXPECT_PE(dst[m * count + i] == value(t.world[m], i, round), "fcollect %zu [%d][%zu]",
                  count, m, i);
  }

  // collect: sizes differ per member (0 included), blocks in the cell or read from the source
  for (size_t scale : {1ul, 300ul}) {
    auto count_of = [&](int m) { return ((m + round) % 3) * scale; };
    size_t total = 0;
    for (int m = 0; m < n; ++m) total += count_of(m);
    long *src = sym_alloc<long>(2 * scale), *dst = sym_alloc<long>(total + 1);
    for (size_t i = 0; i < count_of(me); ++i) src[i] = value(t.world[me], i, round);
    coll::collect(t, token_address, dst, src, reinterpret_cast<char *>(src) - g_heap,
                  count_of(me) * sizeof(long));
    size_t at = 0;
    for (int m = 0; m < n; ++m)
      for (size_t i = 0; i < count_of(m); ++i, ++at)
        EXPECT_PE(dst[at] == value(t.world[m], i, round), "collect x%zu [%d][%zu]", scale, m, i);
  }

  // alltoall: cells, blocks read directly, and strided (dst 2, sst 3)
  for (auto [count, dst_stride, src_stride] :
       {std::tuple{4ul, 1l, 1l}, std::tuple{600ul, 1l, 1l}, std::tuple{500ul, 2l, 3l}}) {
    long *src = sym_alloc<long>(count * n * src_stride), *dst = sym_alloc<long>(count * n * dst_stride);
    for (size_t j = 0; j < count * n; ++j) src[j * src_stride] = value(t.world[me], j, round);
    coll::alltoall(t, dst, src, dst_stride, src_stride, count, sizeof(long), nullptr);
    for (int m = 0; m < n; ++m)
      for (size_t i = 0; i < count; ++i)
        EXPECT_PE(dst[(m * count + i) * dst_stride] == value(t.world[m], me * count + i, round),
                  "alltoall %zu/%ld/%ld [%d][%zu]", count, dst_stride, src_stride, m, i);
  }

  // reduce in every size class: cells, staging tree, reduce-scatter + allgather (also in place)
  for (size_t count : {5ul, 1000ul, 30000ul}) {
    for (bool in_place : {false, true}) {
      long *src = sym_alloc<long>(count), *dst = in_place ? src : sym_alloc<long>(count);
      for (size_t i = 0; i < count; ++i) src[i] = value(t.world[me], i, round);
      coll::reduce(t, dst, src, count, sizeof(long), sum_long, nullptr);
      for (size_t i = 0; i < count; ++i) {
        long want = 0;
        for (int m = 0; m < n; ++m) want += value(t.world[m], i, round);
        EXPECT_PE(dst[i] == want, "reduce %zu%s [%zu]: %ld, want %ld", count,
                  in_place ? " in place" : "", i, dst[i], want);
      }
    }
  }

  // scans, inclusive and exclusive (they write into other members' dests)
  for (bool inclusive : {true, false}) {
    const size_t count = 1500;
    long *src = sym_alloc<long>(count), *dst = sym_alloc<long>(count);
    const long zero = 0;
    for (size_t i = 0; i < count; ++i) src[i] = value(t.world[me], i, round);
    coll::scan(t, dst, src, count, sizeof(long), sum_long, inclusive, &zero, nullptr);
    for (size_t i = 0; i < count; ++i) {
      long want = 0;
      for (int m = 0; m < (inclusive ? me + 1 : me); ++m) want += value(t.world[m], i, round);
      EXPECT_PE(dst[i] == want, "%s scan [%zu]", inclusive ? "inclusive" : "exclusive", i);
    }
  }
  check_sync(t, round);
}

int pe_main(int me, const Job &job) {
  g_me = me;
  g_heap = region(me) + shm::kControlBytes;
  const int n = job.npes;
  auto node = [&](int pe) { return pe / job.pes_per_node; };
  std::vector<shm::ControlBlock *> controls(n, nullptr);
  std::vector<char *> heaps(n, nullptr), data(n, nullptr);
  bool spans = false;
  for (int pe = 0; pe < n; ++pe) {
    if (node(pe) != node(me)) {
      spans = true;
      continue;
    }
    controls[pe] = reinterpret_cast<shm::ControlBlock *>(region(pe));
    heaps[pe] = region(pe) + shm::kControlBytes;
  }
  FakeNetwork network(me, job.delayed);
  peer::routes = peer::Routes{controls.data(), region(me), shm::kControlBytes,
                              reinterpret_cast<uintptr_t>(g_heap), 0, kHeapBytes, 0,
                              heaps.data(), data.data(), spans ? &network : nullptr};
  // Short sleeps: an off-node write rings no doorbell, the sleeper sees it when it times out.
  // No spinning with every PE on one node: the gather shape of small reductions runs too.
  WaitPolicy policy;
  policy.spin_iterations = spans ? 64 : 0;
  policy.yield_iterations = 32;
  policy.sleep_timeout_ns = 100 * 1000;

  WorldBarrier barrier;
  barrier.setup(me, controls, &policy);
  barrier.run();

  std::vector<int> all(n), odd_reversed, strided;
  for (int pe = 0; pe < n; ++pe) all[pe] = pe;
  for (int pe = n - 1; pe >= 0; --pe)
    if (pe % 2) odd_reversed.push_back(pe);
  for (int pe = 0; pe < n; pe += 2) strided.push_back(pe);
  Team world = make_team(all, 2, controls.data(), &policy);
  EXPECT_PE(world.view.spans_nodes == spans, "note_locality");

  for (int round = 0; round < 3; ++round) {
    g_heap_used = 0;
    run_collectives(world.view, round);
    barrier.run();

    // A team in a slot that is retired and handed out again every round (team destroy).
    if (me % 2) {
      Team odd = make_team(odd_reversed, 3, controls.data(), &policy);
      odd.epoch = 0;
      run_collectives(odd.view, round);
      uint64_t words[20] = {};
      words[odd.view.rank] = uint64_t{1} << odd.view.rank;
      words[19] = uint64_t{1} << (63 - odd.view.rank);
      coll::allreduce_or(odd.view, odd.epoch, words, 20);
      for (int m = 0; m < odd.view.size; ++m) {
        EXPECT_PE(words[m] == uint64_t{1} << m, "allreduce_or word %d", m);
        EXPECT_PE(words[19] >> (63 - m) & 1, "allreduce_or word 19 bit %d", 63 - m);
      }
      coll::retire_slot(odd.view, odd.epoch);
    }
    // The active-set slot: channels per world PE, shared by overlapping sets.
    if (me % 2 == 0) {
      Team set = make_team(strided, kActiveSetSlot, controls.data(), &policy);
      run_collectives(set.view, round);
      EXPECT_PE(coll::unmatched_active_set_peer(set.view) == -1, "active-set messages left");
    }
    barrier.run();
  }
  network.flush();
  barrier.run();
  return g_failures ? 1 : 0;
}

void run_job(const Job &job) {
  const size_t bytes = kRegionBytes * job.npes;
  g_shared = static_cast<char *>(
      mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(g_shared, MAP_FAILED);
  std::vector<pid_t> pids;
  for (int pe = 0; pe < job.npes; ++pe) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) _exit(pe_main(pe, job));
    pids.push_back(pid);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  std::vector<int> status(job.npes, -1);
  for (int left = job.npes; left > 0;) {
    for (int pe = 0; pe < job.npes; ++pe) {
      if (status[pe] != -1) continue;
      int st;
      if (waitpid(pids[pe], &st, WNOHANG) == pids[pe]) status[pe] = st, --left;
    }
    if (left && std::chrono::steady_clock::now() > deadline) {
      for (int pe = 0; pe < job.npes; ++pe)
        if (status[pe] == -1) kill(pids[pe], SIGKILL), waitpid(pids[pe], &status[pe], 0);
      ADD_FAILURE() << "timed out (a wait that never saw a remote write?)";
      break;
    }
    usleep(1000);
  }
  for (int pe = 0; pe < job.npes; ++pe)
    EXPECT_TRUE(WIFEXITED(status[pe]) && WEXITSTATUS(status[pe]) == 0)
        << "PE " << pe << " status " << status[pe];
  munmap(g_shared, bytes);
}

class CollOverNetwork : public ::testing::TestWithParam<Job> {};

TEST_P(CollOverNetwork, EveryCollectiveGivesTheRightResult) { run_job(GetParam()); }

INSTANTIATE_TEST_SUITE_P(
    Jobs, CollOverNetwork,
    ::testing::Values(Job{4, 4, false},  // one node: the gather shapes, no network
                      Job{4, 2, false}, Job{5, 2, false}, Job{6, 3, true}, Job{5, 2, true},
                      Job{3, 1, true}, Job{8, 4, true}),
    [](const auto &info) {
      return "np" + std::to_string(info.param.npes) + "_per_node" +
             std::to_string(info.param.pes_per_node) + (info.param.delayed ? "_delayed" : "");
    });

}  // namespace
}  // namespace hoshmem
