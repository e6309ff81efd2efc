// The RC transport's lanes and RMA from any memory, between two processes over the software HCA.
// PE 1 (a child process) only holds the target memory and answers hash requests about it over a
// pipe, so every put is checked byte for byte where it landed. The same binary runs under several
// softhca knob sets and on the plain-verbs path (BUILD.bazel): DEFER/LATE_SOURCE make a source
// reused before its completion send the new data, REORDER lets an unfenced read or atomic pass
// earlier writes.
#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "lib/transport/rc/rc_transport.h"
#include "test/ib/rc_pair.h"
#include "test/ib/softhca_main.h"


namespace hoshmem::rc {
namespace {

using atomics::AmoOp;

// PE 1's memory
constexpr size_t kPeerBytes = 4 << 20;
constexpr size_t kData = 0;                 // RMA target, up to 1 MiB + 5 + a little
constexpr size_t kFlag = 2 << 20;           // put-then-signal: the signal word
constexpr size_t kBlocks = kFlag + 4096;    // put-then-signal: round k's block
constexpr size_t kWords = 3 << 20;          // atomics
constexpr size_t kRegions = kWords + 65536;  // one per thread in the lanes test
// PE 0's registered memory
constexpr size_t kMyBytes = 5 << 19;  // 2.5 MiB
constexpr size_t kBig = (1 << 20) + 5;

uint64_t fnv(const uint8_t *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// The shared setup, plus the buffer made known to the transport (zero-copy).
bool setup_registered(Side &s, int me, size_t bytes) {
  if (!setup(s, me, bytes)) return false;
  s.rc.add_registered(s.buf, bytes, s.mr->lkey);
  return true;
}

// PE 1: answers "H off len" with the hash of its memory there; "W rounds len" watches the
// signal word and, each time it grows, checks that every block signalled so far holds its data
// (put data, then atomic signal: the signal must never arrive first); "X" exits at once; "Q"
// shuts down and exits.
int child() {
  Side s;
  if (!setup_registered(s, 1, kPeerBytes)) return 2;
  write_address(stdout, s);
  if (!read_address(stdin, s, 0)) return 3;
  char cmd[4];
  while (fscanf(stdin, "%3s", cmd) == 1) {
    if (!strcmp(cmd, "H")) {
      size_t off, len;
      if (fscanf(stdin, "%zu %zu", &off, &len) != 2) return 4;
      printf("%" PRIu64 "\n", fnv(s.buf + off, len));
    } else if (!strcmp(cmd, "W")) {
      unsigned rounds;
      size_t len;
      if (fscanf(stdin, "%u %zu", &rounds, &len) != 2) return 4;
      printf("READY\n");
      fflush(stdout);
      volatile uint64_t *flag = reinterpret_cast<volatile uint64_t *>(s.buf + kFlag);
      unsigned seen = 0, early = 0;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (seen < rounds && std::chrono::steady_clock::now() < deadline) {
        const auto now = static_cast<unsigned>(*flag);
        for (; seen < now; ++seen) {  // block k (1-based) = seen + 1: every byte k
          const volatile uint8_t *b = s.buf + kBlocks + seen * len;
          for (size_t i = 0; i < len; ++i)
            if (b[i] != static_cast<uint8_t>(seen + 1)) {
              ++early;
              break;
            }
        }
      }
      printf("%u %u\n", seen, early);
    } else if (!strcmp(cmd, "X")) {
      _exit(0);
    } else if (!strcmp(cmd, "Q")) {
      break;
    }
    fflush(stdout);
  }
  s.rc.quiet();
  s.rc.shutdown();
  return 0;
}

// PE 1, which also hashes ranges of its memory on request.
struct Child : PeerProcess {
  uint64_t hash(size_t off, size_t len) {
    fprintf(in, "H %zu %zu\n", off, len);
    fflush(in);
    uint64_t h = 0;
    if (fscanf(out, "%" SCNu64, &h) != 1) return 0;
    return h;
  }
  int wait(const char *last = "Q") { return PeerProcess::wait(last); }
};

// Both sides up, addresses exchanged.
struct Pair {
  Child c;
  Side s;
  bool ok = false;
  Pair() {
    if (!setup_registered(s, 0, kMyBytes)) return;
    write_address(c.in, s);
    ok = read_address(c.out, s, 1);
  }
};

void fill(uint8_t *p, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(rng());
}

enum Where { kRegistered, kStack, kMalloc };
const char *where_name(Where w) {
  return w == kRegistered ? "registered" : w == kStack ? "stack" : "malloc";
}

// Puts of every size from registered, stack and malloc'ed buffers, blocking and nbi, each
// checked at the target; then gets back into each kind of buffer.
void sizes_and_sources(Pair &p, int lane) {
  Side &s = p.s;
  const uint32_t mi = s.rc.max_inline();
  std::vector<size_t> sizes = {0, 1, 7, 8, 63, 64, 65, mi - 1, mi, mi + 1, 4096, 65536 + 3, kBig};
  static uint8_t stack_room[kBig + 64];  // "stack": a fresh frame would do; this keeps it small
  uint8_t frame[70000];                  // a real stack buffer for the sizes that fit
  uint8_t *heap = static_cast<uint8_t *>(malloc(kBig + 64));
  uint64_t seed = 1;
  for (size_t n : sizes) {
    for (Where w : {kRegistered, kStack, kMalloc}) {
      for (bool nbi : {false, true}) {
        uint8_t *src = w == kRegistered ? s.buf + 1 : w == kMalloc ? heap + 3
                       : n <= sizeof frame - 8 ? frame + 5 : stack_room + 5;
        fill(src, n, ++seed);
        const uint64_t want = fnv(src, n);
        s.rc.put(lane, 1, src, n, s.remote(kData), nbi);
        s.rc.quiet(lane);  // remotely complete (a blocking put only frees its source)
        const std::string what = std::to_string(n) + " bytes from " + where_name(w) +
                                 (nbi ? " nbi" : "");
        ASSERT_EQ(p.c.hash(kData, n), want) << "put of " << what;
        for (Where d : {kRegistered, kStack, kMalloc}) {
          uint8_t *dst = d == kRegistered ? s.buf + (kBig + 4096 + 7) : d == kMalloc ? heap + 3
                         : n <= sizeof frame - 8 ? frame + 5 : stack_room + 5;
          memset(dst, 0xee, n);
          s.rc.get(lane, 1, dst, n, s.remote(kData), nbi);
          if (nbi) s.rc.quiet(lane);
          ASSERT_EQ(fnv(dst, n), want) << "get of " << n << " bytes into " << where_name(d)
                                       << (nbi ? " nbi" : "");
        }
      }
    }
  }
  free(heap);
}

TEST(RcLanes, PutGetEverySizeFromAnyMemoryLane0) {
  Pair p;
  ASSERT_TRUE(p.ok);
  sizes_and_sources(p, 0);
  EXPECT_EQ(p.c.wait(), 0);
}

TEST(RcLanes, PutGetEverySizeFromAnyMemoryExclusiveLane) {
  Pair p;
  ASSERT_TRUE(p.ok);
  const int lane = p.s.rc.open_lane(true);
  ASSERT_GT(lane, 0);
  sizes_and_sources(p, lane);
  p.s.rc.close_lane(lane);
  EXPECT_EQ(p.c.wait(), 0);
}

// A blocking put returns with the source reusable: overwritten at once, the target still gets
// what it held at the call (LATE_SOURCE reads sources only when the completion is due).
TEST(RcLanes, SourceReusableWhenBlockingPutReturns) {
  Pair p;
  ASSERT_TRUE(p.ok);
  Side &s = p.s;
  uint8_t *heap = static_cast<uint8_t *>(malloc(kBig));
  for (size_t n : {size_t{200}, size_t{4096}, size_t{65536 + 3}, size_t{300000}, kBig}) {
    for (Where w : {kRegistered, kMalloc}) {
      uint8_t *src = w == kRegistered ? s.buf : heap;
      fill(src, n, n);
      const uint64_t want = fnv(src, n);
      s.rc.put(0, 1, src, n, s.remote(kData), false);
      memset(src, 0x5a, n);
      s.rc.quiet(0);
      ASSERT_EQ(p.c.hash(kData, n), want) << n << " bytes from " << where_name(w);
    }
  }
  free(heap);
  EXPECT_EQ(p.c.wait(), 0);
}

TEST(RcLanes, AtomicNbiFetchingAndNot) {
  Pair p;
  ASSERT_TRUE(p.ok);
  Side &s = p.s;
  const ib::RemoteAddr word = s.remote(kWords);
  constexpr int kN = 300;
  s.rc.atomic(0, 1, atomics::encode_for_hca(AmoOp::Fetch, 8, 0, 0), word);  // connected
  const Transport::Stats s0 = s.rc.stats();
  for (int i = 0; i < kN; ++i)
    s.rc.atomic_nbi(0, 1, atomics::encode_for_hca(AmoOp::FetchAdd, 8, 2, 0), word, nullptr);
  s.rc.quiet(0);
  // far fewer completions than WQEs: only every few non-fetching WQEs asks for one
  const Transport::Stats s1 = s.rc.stats();
  EXPECT_LT((s1.cqes - s0.cqes) * 4, s1.wqes - s0.wqes)
      << s1.cqes - s0.cqes << " CQEs for " << s1.wqes - s0.wqes << " WQEs";
  EXPECT_EQ(s.rc.atomic(0, 1, atomics::encode_for_hca(AmoOp::Fetch, 8, 0, 0), word),
            uint64_t{2 * kN});
  std::vector<uint64_t> got(kN, ~uint64_t{0});
  for (int i = 0; i < kN; ++i)
    s.rc.atomic_nbi(0, 1, atomics::encode_for_hca(AmoOp::FetchAdd, 8, 1, 0), word, &got[i]);
  s.rc.quiet(0);
  for (int i = 0; i < kN; ++i) ASSERT_EQ(got[i], uint64_t{2 * kN} + i) << i;  // one QP: in order
  if (s.dev.atomics().masked) {  // a 4-byte fetch writes exactly 4 bytes
    uint64_t out = ~uint64_t{0};
    s.rc.atomic_nbi(0, 1, atomics::encode_for_hca(AmoOp::FetchAdd, 4, 5, 0), s.remote(kWords + 8),
                    &out);
    s.rc.quiet(0);
    EXPECT_EQ(out, 0xffffffff00000000ull);
    EXPECT_EQ(s.rc.atomic(0, 1, atomics::encode_for_hca(AmoOp::Fetch, 4, 0, 0),
                          s.remote(kWords + 8)),
              5u);
  }
  EXPECT_EQ(p.c.wait(), 0);
}

// The API's inline add (try_add_inline) posts only where atomic_add_nbi has gone first, and
// gives way to it whenever a fence is due (after fence(), after a put under REORDER) or the
// queue pair has no room: every add counted once, the inline ones most of them on the mlx5 path,
// none through plain verbs.
TEST(RcLanes, InlineAddGivesWayToFencesAndRoom) {
  Pair p;
  ASSERT_TRUE(p.ok);
  Side &s = p.s;
  const int lane = s.rc.open_lane(true);
  const Transport::LaneTable lanes = s.rc.lane_table();
  const ib::RemoteAddr word = s.remote(kWords + 128);
  uint64_t expect = s.rc.atomic(0, 1, atomics::encode_for_hca(AmoOp::Fetch, 8, 0, 0), word);
  for (int l : {0, lane}) {
    ASSERT_FALSE(Transport::try_add_inline(lanes, l, 1, 1, word))
        << "lane " << l << ": inline before atomic_add_nbi used the queue pair";
    int inline_adds = 0, general_adds = 0;
    auto add = [&](uint64_t v) {
      if (Transport::try_add_inline(lanes, l, 1, v, word)) {
        ++inline_adds;
      } else {
        s.rc.atomic_add_nbi(l, 1, v, word);
        ++general_adds;
      }
      expect += v;
    };
    for (int i = 0; i < 400; ++i) add(static_cast<uint64_t>(i));  // past the room, many times
    s.rc.fence(l, 1);
    EXPECT_FALSE(Transport::try_add_inline(lanes, l, 1, 1, word)) << "lane " << l << ": after fence";
    add(3);  // fenced, through atomic_add_nbi
    // A put, then adds to the word it wrote: the first must be fenced (REORDER lets it pass).
    for (uint64_t i = 1; i <= 50; ++i) {
      const uint64_t v = i << 32;
      s.rc.put(l, 1, &v, 8, word, false);
      EXPECT_FALSE(Transport::try_add_inline(lanes, l, 1, 1, word)) << "lane " << l << ": after put";
      expect = v;
      add(5);
      add(7);
    }
    s.rc.quiet(l);
    EXPECT_EQ(s.rc.atomic(l, 1, atomics::encode_for_hca(AmoOp::Fetch, 8, 0, 0), word), expect)
        << "lane " << l;
    if (s.rc.raw_wqes())
      EXPECT_GT(inline_adds, general_adds) << "lane " << l;
    else
      EXPECT_EQ(inline_adds, 0) << "lane " << l << ": plain verbs";
  }
  s.rc.close_lane(lane);
  EXPECT_EQ(p.c.wait(), 0);
}

// REORDER: an unfenced read or atomic passes earlier writes. The transport fences those that
// follow a write, so each sees the put just before it.
TEST(RcLanes, ReadOrAtomicAfterPutSeesThePut) {
  Pair p;
  ASSERT_TRUE(p.ok);
  Side &s = p.s;
  const int lane = s.rc.open_lane(true);
  for (int l : {0, lane}) {
    for (uint64_t i = 1; i <= 200; ++i) {
      const uint64_t v = i * 1000 + static_cast<uint64_t>(l);
      s.rc.put(l, 1, &v, 8, s.remote(kWords + 64), false);
      ASSERT_EQ(s.rc.atomic(l, 1, atomics::encode_for_hca(AmoOp::FetchAdd, 8, 1, 0),
                            s.remote(kWords + 64)),
                v)
          << "atomic after put, lane " << l;
      const uint64_t w = v * 7;
      s.rc.put(l, 1, &w, 8, s.remote(kWords + 64), true);
      uint64_t back = 0;
      s.rc.get(l, 1, &back, 8, s.remote(kWords + 64), false);
      ASSERT_EQ(back, w) << "get after put, lane " << l;
    }
  }
  s.rc.close_lane(lane);
  EXPECT_EQ(p.c.wait(), 0);
}

// Put data, then an atomic signal: PE 1 never sees a signal before its data.
TEST(RcLanes, PutThenAtomicSignalNeverOvertakes) {
  Pair p;
  ASSERT_TRUE(p.ok);
  Side &s = p.s;
  constexpr unsigned kRounds = 150;
  constexpr size_t kLen = 2048;
  fprintf(p.c.in, "W %u %zu\n", kRounds, kLen);
  fflush(p.c.in);
  char ready[8];
  ASSERT_EQ(fscanf(p.c.out, "%7s", ready), 1);
  std::vector<uint8_t> block(kLen);
  for (unsigned k = 1; k <= kRounds; ++k) {
    memset(block.data(), static_cast<int>(k), kLen);
    s.rc.put(0, 1, block.data(), kLen, s.remote(kBlocks + (k - 1) * kLen), true);
    s.rc.atomic_nbi(0, 1, atomics::encode_for_hca(AmoOp::FetchAdd, 8, 1, 0), s.remote(kFlag),
                    nullptr);
  }
  s.rc.quiet(0);
  unsigned seen = 0, early = 99;
  ASSERT_EQ(fscanf(p.c.out, "%u %u", &seen, &early), 2);
  EXPECT_EQ(seen, kRounds);
  EXPECT_EQ(early, 0u) << "signals that arrived before their data";
  EXPECT_EQ(p.c.wait(), 0);
}

// pe_quiet completes the nbi puts to that PE (DEFER: not done when the post returns).
TEST(RcLanes, PeQuietCompletesNbiPuts) {
  Pair p;
  ASSERT_TRUE(p.ok);
  Side &s = p.s;
  const int pes[] = {1};
  for (int round = 0; round < 20; ++round) {
    const size_t n = round % 2 ? 8 : 65536;
    fill(s.buf, n, 77 + static_cast<uint64_t>(round));
    s.rc.put(0, 1, s.buf, n, s.remote(kData), true);
    uint64_t small = 0x1234 + static_cast<uint64_t>(round);
    s.rc.put(0, 1, &small, 8, s.remote(kWords + 128), true);
    s.rc.fence(0, 1);
    s.rc.fence_all(0);
    s.rc.pe_quiet(0, pes, 1);
    ASSERT_EQ(p.c.hash(kData, n), fnv(s.buf, n)) << round;
    ASSERT_EQ(p.c.hash(kWords + 128, 8), fnv(reinterpret_cast<uint8_t *>(&small), 8)) << round;
  }
  EXPECT_EQ(p.c.wait(), 0);
}

// Two exclusive lanes and the shared lane 0, from four threads at once: exact counts and data.
TEST(RcLanes, ThreadsOnExclusiveLanesAndSharedLane0) {
  Pair p;
  ASSERT_TRUE(p.ok);
  Side &s = p.s;
  constexpr int kThreads = 4, kAdds = 1000;
  constexpr size_t kRegion = 16384;
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const bool own = t < 2;
      const int lane = own ? s.rc.open_lane(true) : 0;
      if (lane < 0) return void(bad.fetch_add(1));
      std::vector<uint8_t> data(kRegion);
      for (int i = 0; i < kAdds; ++i) {
        const auto a = atomics::encode_for_hca(AmoOp::FetchAdd, 8, 1, 0);
        if (i % 2) s.rc.atomic_nbi(lane, 1, a, s.remote(kWords + 256), nullptr);
        else s.rc.atomic(lane, 1, a, s.remote(kWords + 256));
        if (i % 100 == 0) {
          fill(data.data(), kRegion, static_cast<uint64_t>(t * 1000 + i));
          s.rc.put(lane, 1, data.data(), kRegion, s.remote(kRegions + t * kRegion), i % 200 == 0);
          std::vector<uint8_t> back(kRegion);
          s.rc.get(lane, 1, back.data(), kRegion, s.remote(kRegions + t * kRegion), false);
          if (back != data) bad.fetch_add(1);
        }
      }
      s.rc.quiet(lane);
      if (own) s.rc.close_lane(lane);
    });
  }
  for (auto &t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(s.rc.atomic(0, 1, atomics::encode_for_hca(AmoOp::Fetch, 8, 0, 0),
                        s.remote(kWords + 256)),
            uint64_t{kThreads * kAdds});
  // a lane number used again: the peer replaces its side of the closed lane's QP
  const int again = s.rc.open_lane(false);
  ASSERT_GT(again, 0);
  EXPECT_EQ(s.rc.atomic(again, 1, atomics::encode_for_hca(AmoOp::FetchAdd, 8, 1, 0),
                        s.remote(kWords + 256)),
            uint64_t{kThreads * kAdds});
  s.rc.close_lane(again);
  EXPECT_EQ(p.c.wait(), 0);
}

// Large unregistered buffers go through the registration cache: a hit on reuse, a new
// registration when the page range is not covered, and after forget() (a range the caller says is
// gone; its address may come back with other pages) never the old registration.
TEST(RcLanes, RegistrationCacheAndReusedAddress) {
  Pair p;
  ASSERT_TRUE(p.ok);
  Side &s = p.s;
  const size_t n = s.rc.cache_threshold() * 2;
  auto *a = static_cast<uint8_t *>(malloc(n));
  fill(a, n, 1);
  const Transport::Stats s0 = s.rc.stats();
  s.rc.put(0, 1, a, n / 2, s.remote(kData), false);
  ASSERT_EQ(p.c.hash(kData, n / 2), fnv(a, n / 2));
  s.rc.put(0, 1, a, n / 2, s.remote(kData), false);  // same range: a hit
  s.rc.put(0, 1, a, n, s.remote(kData), false);      // more pages: registered anew
  ASSERT_EQ(p.c.hash(kData, n), fnv(a, n));
  const Transport::Stats s1 = s.rc.stats();
  EXPECT_EQ(s1.cache_misses - s0.cache_misses, 2u);
  EXPECT_EQ(s1.cache_hits - s0.cache_hits, 1u);
  // freed (the library forgets it), allocated again with other contents
  s.rc.forget(a, n);
  free(a);
  auto *b = static_cast<uint8_t *>(malloc(n));
  fill(b, n, 2);
  s.rc.put(0, 1, b, n, s.remote(kData), false);
  ASSERT_EQ(p.c.hash(kData, n), fnv(b, n)) << (a == b ? "same address" : "other address");
  memset(b, 0, n);
  s.rc.get(0, 1, b, n, s.remote(kData), true);
  s.rc.quiet(0);
  std::vector<uint8_t> want(n);
  fill(want.data(), n, 2);
  EXPECT_EQ(memcmp(b, want.data(), n), 0);
  const Transport::Stats s2 = s.rc.stats();
  EXPECT_GE(s2.cache_misses - s1.cache_misses, 1u) << "a forgotten range must not hit";
  free(b);
  EXPECT_EQ(p.c.wait(), 0);
}

// malloc(n) from a mapping of its own, so that free() unmaps it (the tests below set
// M_MMAP_THRESHOLD under n): glibc still serves n from a free chunk or the heap's top when one is
// big enough, which the model's threads may leave; such blocks go to *held (the caller frees
// them) and the next try maps. glibc marks a mapped chunk in its header (IS_MMAPPED, 2).
uint8_t *malloc_mapped(size_t n, std::vector<void *> *held) {
  for (int i = 0; i < 64; ++i) {
    void *p = malloc(n);
    auto header = reinterpret_cast<uintptr_t>(p) - sizeof(size_t);
    asm("" : "+r"(header));  // the compiler need not know it reads malloc's own bytes
    if (*reinterpret_cast<const size_t *>(header) & 2) return static_cast<uint8_t *>(p);
    held->push_back(p);
  }
  return nullptr;
}

// The same, at address `want` (the mapping just unmapped there): mappings that land elsewhere
// are held so the next one goes to the next hole. nullptr if it does not come back.
uint8_t *malloc_mapped_at(uintptr_t want, size_t n, std::vector<void *> *held) {
  for (int i = 0; i < 16; ++i) {
    uint8_t *p = malloc_mapped(n, held);
    if (reinterpret_cast<uintptr_t>(p) == want) return p;
    held->push_back(p);
  }
  return nullptr;
}

// The cache is on by default, and memory the program frees is forgotten without anyone calling
// forget(): a 1 MiB malloc'ed buffer is put twice (a miss, then a hit), freed, allocated again at
// the same address with other contents and put again, which must miss (a new registration) and
// deliver the new bytes. Both ways glibc gives such memory back: a block with its own mapping (free
// -> munmap) and heap memory (free, then malloc_trim -> brk, or madvise of a free chunk inside the
// heap). Catches a missing or broken memory-release hook: the third put would hit the old entry.
// (softhca reads sources by virtual address, so the bytes arrive right even through a stale entry;
// on real hardware they would be the old pages'. The miss is what the model can check.)
TEST(RcLanes, FreedBufferIsForgottenWithoutForget) {
  Pair p;
  ASSERT_TRUE(p.ok);
  Side &s = p.s;
  ASSERT_EQ(s.rc.cache_threshold(), Transport::kCacheThreshold) << s.rc.cache_description();
  constexpr size_t n = 1 << 20;
  std::vector<void *> held;
  for (bool heap : {false, true}) {
    const char *how = heap ? "heap, malloc_trim" : "own mapping, free";
    // fixed thresholds (no dynamic adjustment): 1 MiB is mapped, or comes from the heap and stays
    // there until malloc_trim
    mallopt(M_MMAP_THRESHOLD, heap ? 64 << 20 : 128 << 10);
    mallopt(M_TRIM_THRESHOLD, heap ? 1 << 30 : 128 << 10);
    bool tested = false;
    for (int attempt = 0; attempt < 3 && !tested; ++attempt) {  // the heap is shared
      uint8_t *a = heap ? static_cast<uint8_t *>(malloc(n)) : malloc_mapped(n, &held);
      ASSERT_NE(a, nullptr);
      fill(a, n, 10);
      const Transport::Stats s0 = s.rc.stats();
      s.rc.put(0, 1, a, n, s.remote(kData), false);
      s.rc.put(0, 1, a, n, s.remote(kData), false);
      ASSERT_EQ(p.c.hash(kData, n), fnv(a, n)) << how;
      const Transport::Stats s1 = s.rc.stats();
      EXPECT_EQ(s1.cache_misses - s0.cache_misses, 1u) << how;
      EXPECT_EQ(s1.cache_hits - s0.cache_hits, 1u) << how;
      const auto old = reinterpret_cast<uintptr_t>(a);
      free(a);
      if (heap) malloc_trim(0);
      uint8_t *b = heap ? static_cast<uint8_t *>(malloc(n)) : malloc_mapped_at(old, n, &held);
      if (reinterpret_cast<uintptr_t>(b) != old) {  // another thread took it: nothing to test
        free(b);
        continue;
      }
      tested = true;
      fill(b, n, 11);
      s.rc.put(0, 1, b, n, s.remote(kData), false);
      ASSERT_EQ(p.c.hash(kData, n), fnv(b, n)) << how << ": the new contents";
      const Transport::Stats s2 = s.rc.stats();
      EXPECT_EQ(s2.cache_misses - s1.cache_misses, 1u) << how << ": the old entry must be gone";
      EXPECT_EQ(s2.cache_hits - s1.cache_hits, 0u) << how;
      free(b);
    }
    EXPECT_TRUE(tested) << how << ": the address never came back";
  }
  for (void *h : held) free(h);
  mallopt(M_MMAP_THRESHOLD, 128 << 10);  // glibc's initial values (fixed from now on)
  mallopt(M_TRIM_THRESHOLD, 128 << 10);
  EXPECT_EQ(p.c.wait(), 0);
}

// Two threads, each on its own lane, put from and get into buffers they free and allocate again
// (the addresses come back) while the other one may be inside the cache (registering,
// deregistering). Every buffer is new pages, so no lookup may hit, and every put and get must
// carry the right bytes. (How often a release meets the other thread's lock is up to the
// scheduler; the next test forces it.)
TEST(RcLanes, ReleasesWhileAnotherThreadHoldsTheCache) {
  Pair p;
  ASSERT_TRUE(p.ok);
  Side &s = p.s;
  mallopt(M_MMAP_THRESHOLD, 128 << 10);  // each buffer its own mapping: free unmaps it
  constexpr int kThreads = 2, kRounds = 30;
  constexpr size_t n = 512 << 10;  // four entries fit the cache's 4 MiB: none is evicted
  std::atomic<int> bad{0};
  const Transport::Stats s0 = s.rc.stats();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const int lane = s.rc.open_lane(true);
      if (lane <= 0) return void(bad.fetch_add(1));
      std::vector<void *> held;
      for (int i = 0; i < kRounds; ++i) {
        uint8_t *a = malloc_mapped(n, &held), *b = malloc_mapped(n, &held);
        if (!a || !b) return void(bad.fetch_add(1));
        fill(a, n, static_cast<uint64_t>(t * 1000 + i));
        s.rc.put(lane, 1, a, n, s.remote(kData + t * n), false);
        s.rc.get(lane, 1, b, n, s.remote(kData + t * n), false);
        if (memcmp(a, b, n) != 0) bad.fetch_add(1);
        free(a);
        free(b);
      }
      for (void *h : held) free(h);
      s.rc.close_lane(lane);
    });
  }
  for (auto &t : threads) t.join();
  const Transport::Stats s1 = s.rc.stats();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(s1.cache_hits - s0.cache_hits, 0u) << "a released buffer's registration was used";
  EXPECT_EQ(s1.cache_misses - s0.cache_misses, uint64_t{2 * kThreads * kRounds});
  EXPECT_EQ(p.c.wait(), 0);
}

}  // namespace

// Holds the cache's lock as a lookup on another thread would (the transport's friend).
struct CacheTestAccess {
  static std::mutex &lock(Transport &t) { return t.cache_mutex_; }
};

namespace {

// A release that finds the cache's lock taken (a lookup registering on another thread) is left
// for the holder and applied before the next lookup: a buffer freed then, allocated again at the
// same address, misses. Beyond the deferred list's room (32 releases) everything is dropped:
// the 40th release, a cached buffer's, still takes effect. Catches a deferred release that is
// lost, and one lost to a full list (the buffer's old entry would hit).
TEST(RcLanes, ReleaseWhileTheCacheIsLockedIsAppliedLater) {
  Pair p;
  ASSERT_TRUE(p.ok);
  Side &s = p.s;
  mallopt(M_MMAP_THRESHOLD, 128 << 10);  // each buffer its own mapping: free unmaps it
  constexpr size_t n = 512 << 10;
  std::vector<void *> held;
  for (int extra : {0, 39}) {  // releases before the buffer's own, all while the lock is held
    uint8_t *a = malloc_mapped(n, &held);
    ASSERT_NE(a, nullptr);
    fill(a, n, 20);
    s.rc.put(0, 1, a, n, s.remote(kData), false);  // a miss: registered
    const Transport::Stats s0 = s.rc.stats();
    const auto old = reinterpret_cast<uintptr_t>(a);
    std::vector<void *> pages;
    for (int i = 0; i < extra; ++i)
      pages.push_back(mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    CacheTestAccess::lock(s.rc).lock();
    std::thread([&] {
      for (void *page : pages) munmap(page, 4096);
      free(a);
    }).join();
    CacheTestAccess::lock(s.rc).unlock();
    uint8_t *b = malloc_mapped_at(old, n, &held);
    ASSERT_NE(b, nullptr) << "the address did not come back";
    fill(b, n, 21);
    s.rc.put(0, 1, b, n, s.remote(kData), false);
    ASSERT_EQ(p.c.hash(kData, n), fnv(b, n));
    const Transport::Stats s1 = s.rc.stats();
    EXPECT_EQ(s1.cache_hits - s0.cache_hits, 0u) << extra << " releases before: the old entry hit";
    EXPECT_EQ(s1.cache_misses - s0.cache_misses, 1u);
    free(b);
  }
  for (void *h : held) free(h);
  EXPECT_EQ(p.c.wait(), 0);
}

TEST(RcLanes, PathFollowsTheKnob) {
  Pair p;
  ASSERT_TRUE(p.ok);
  const char *v = getenv("HOSHMEM_RC_VERBS");
  const bool verbs = v && !strcmp(v, "1");
  EXPECT_EQ(p.s.rc.raw_wqes(), !verbs);
  if (verbs) {
    EXPECT_FALSE(p.s.dev.atomics().masked);
  }
  EXPECT_EQ(p.c.wait(), 0);
}

// A peer that dies: the next operation to it fails, reported once with its PE and the
// completion's numbers in hex, no hang.
TEST(RcLanes, DeadPeerIsReported) {
  for (bool own_lane : {false, true}) {
    EXPECT_EXIT(
        {
          Pair p;
          if (!p.ok) _exit(2);
          const int lane = own_lane ? p.s.rc.open_lane(true) : 0;
          p.s.rc.atomic(lane, 1, atomics::encode_for_hca(AmoOp::FetchAdd, 8, 1, 0),
                        p.s.remote(kWords));
          p.c.wait("X");
          for (int i = 0; i < 100; ++i) p.s.rc.put(lane, 1, p.s.buf, 4096, p.s.remote(kData), true);
          p.s.rc.quiet(lane);
          _exit(0);
        },
        testing::ExitedWithCode(42),
        "rc error with PE 1: .*(retries|flushed).* \\((syndrome|status) 0x[0-9a-f]{2}, vendor "
        "error 0x[0-9a-f]{2}\\)");
  }
}

}  // namespace

// `rc_lanes_test --bench` (not run by the test target): blocking put + quiet from malloc'ed
// memory through bounce slots, through a registration cache hit, and through a cache miss each
// time (register, deregister). Prints; asserts nothing.
int bench() {
  const char *modes[] = {"bounce", "cache hit", "cache miss"};
  for (int mode = 0; mode < 3; ++mode) {
    setenv("HOSHMEM_RC_CACHE_MIN", mode == 0 ? "0" : "1", 1);
    Pair p;
    if (!p.ok) return 1;
    auto *heap = static_cast<uint8_t *>(malloc(2 << 20));
    memset(heap, 1, 2 << 20);
    for (size_t n : {size_t{4096}, size_t{16384}, size_t{32768}, size_t{65536}, size_t{131072},
                     size_t{262144}, size_t{1 << 20},
                     size_t{2 << 20}}) {
      p.s.rc.put(0, 1, heap, n, p.s.remote(kData), false);
      p.s.rc.quiet(0);
      const int reps = static_cast<int>(std::max<size_t>(50, (64u << 20) / n));
      double best = 1e30;
      for (int trial = 0; trial < 3; ++trial) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int r = 0; r < reps; ++r) {
          p.s.rc.put(0, 1, heap, n, p.s.remote(kData), false);
          p.s.rc.quiet(0);
          if (mode == 2) p.s.rc.forget(heap, n);
        }
        const std::chrono::duration<double, std::micro> us = std::chrono::steady_clock::now() - t0;
        best = std::min(best, us.count() / reps);
      }
      printf("%-10s %8zu bytes: %9.1f us per put+quiet, %7.0f MB/s\n", modes[mode], n, best,
             static_cast<double>(n) / best);
    }
    free(heap);
    p.c.wait();
  }
  return 0;
}

}  // namespace hoshmem::rc

int main(int argc, char **argv) {
  // The registration cache is on by default, at its measured threshold (rc_transport.h).
  if (argc >= 2 && !strcmp(argv[1], "--peer") && getenv("HOSHMEM_TEST_SOFTHCA"))
    return hoshmem::rc::child();
  if (getenv("HOSHMEM_TEST_SOFTHCA"))
    for (int i = 1; i < argc; ++i)
      if (!strcmp(argv[i], "--bench")) return hoshmem::rc::bench();
  testing::GTEST_FLAG(death_test_style) = "threadsafe";
  return softhca_test_main(argc, argv, "ib-lanes-test");
}
