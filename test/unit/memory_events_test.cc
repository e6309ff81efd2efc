// Memory-release events (lib/base/memory_events.h): every way this process gives pages back or
// replaces them reaches a subscriber, with a range covering those pages, before the registration
// cache of lib/transport/rc could serve a stale registration. Each test fails if its path is not
// hooked: glibc's free() and realloc() of mmapped blocks and malloc_trim() call libc's munmap,
// mremap, brk and madvise internally, where only the patched code sees them.
#include "lib/base/memory_events.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace hoshmem::memory_events {
namespace {

// What the subscriber saw (no allocation in the callback: it may run inside malloc).
struct Seen {
  uintptr_t start, end;
};
constexpr unsigned kSeen = 4096;
Seen g_seen[kSeen];
std::atomic<unsigned> g_nseen{0};

void record(void *, const void *base, size_t length) {
  const unsigned i = g_nseen.fetch_add(1);
  if (i < kSeen) g_seen[i] = {reinterpret_cast<uintptr_t>(base),
                              reinterpret_cast<uintptr_t>(base) + length};
}

void forget_seen() { g_nseen.store(0); }

// Some reported range covers [p, p + n) whole.
bool reported(const void *p, size_t n) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  const unsigned count = std::min(g_nseen.load(), kSeen);
  for (unsigned i = 0; i < count; ++i)
    if (g_seen[i].start <= a && a + n <= g_seen[i].end) return true;
  return false;
}

// Some reported range overlaps [p, p + n).
bool touched(const void *p, size_t n) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  const unsigned count = std::min(g_nseen.load(), kSeen);
  for (unsigned i = 0; i < count; ++i)
    if (g_seen[i].start < a + n && a < g_seen[i].end) return true;
  return false;
}

void *map(size_t n) {
  void *p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT_NE(p, MAP_FAILED);
  memset(p, 1, n);
  return p;
}

constexpr size_t kMiB = 1 << 20;

#if defined(__x86_64__)

class MemoryEvents : public testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    ASSERT_TRUE(subscribe(record, nullptr, &why)) << why;
    forget_seen();
  }
  void TearDown() override { unsubscribe(record, nullptr); }
};

#else  // the hooks are x86-64 code: elsewhere subscribe refuses, and says why

TEST(MemoryEventsElsewhere, SubscribeRefusesAndSaysWhy) {
  std::string why;
  EXPECT_FALSE(subscribe(record, nullptr, &why));
  EXPECT_NE(why.find("x86-64 only"), std::string::npos) << why;
  EXPECT_FALSE(intact());
  EXPECT_EQ(method(), "not hooked: " + why);
}

class MemoryEvents : public testing::Test {
 protected:
  void SetUp() override { GTEST_SKIP() << "no memory-release hooks on this architecture"; }
};

#endif

TEST_F(MemoryEvents, InstalledByPatchingLibc) {
  EXPECT_TRUE(intact());
  EXPECT_NE(method().find("patched"), std::string::npos) << method();
}

// free() of a block malloc served with its own mapping: glibc's munmap_chunk -> __munmap.
TEST_F(MemoryEvents, FreeOfAnMmappedBlock) {
  mallopt(M_MMAP_THRESHOLD, 1 << 20);  // fixed: 8 MiB is always mmapped
  void *p = malloc(8 * kMiB);
  ASSERT_NE(p, nullptr);
  memset(p, 2, 8 * kMiB);
  forget_seen();
  free(p);
  EXPECT_TRUE(reported(p, 8 * kMiB));
}

TEST_F(MemoryEvents, DirectMunmap) {
  void *p = map(kMiB);
  forget_seen();
  ASSERT_EQ(munmap(p, kMiB), 0);
  EXPECT_TRUE(reported(p, kMiB));
  // an odd length: the whole last page
  char *q = static_cast<char *>(map(3 * 4096));
  forget_seen();
  ASSERT_EQ(munmap(q, 4096 + 1), 0);
  EXPECT_TRUE(reported(q, 2 * 4096));
  munmap(q + 2 * 4096, 4096);
}

// The old range of a moved mapping: directly, and glibc's realloc of an mmapped block (mremap).
TEST_F(MemoryEvents, MremapOldRange) {
  void *p = map(kMiB);
  void *hole = map(kMiB);  // somewhere else to move it
  forget_seen();
  void *q = mremap(p, kMiB, kMiB, MREMAP_MAYMOVE | MREMAP_FIXED, hole);
  ASSERT_EQ(q, hole);
  EXPECT_TRUE(reported(p, kMiB)) << "the old pages";
  EXPECT_TRUE(reported(hole, kMiB)) << "the target's pages (replaced)";
  munmap(q, kMiB);

  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  void *b = malloc(8 * kMiB);
  ASSERT_NE(b, nullptr);
  const auto old = reinterpret_cast<uintptr_t>(b);  // compared after realloc, never used
  forget_seen();
  void *c = realloc(b, 32 * kMiB);
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(reported(reinterpret_cast<void *>(old), 8 * kMiB));
  free(c);
}

TEST_F(MemoryEvents, MadviseThatDropsPages) {
  char *p = static_cast<char *>(map(kMiB));
  for (int advice : {MADV_DONTNEED, MADV_FREE, MADV_REMOVE}) {
    forget_seen();
    madvise(p + 65536, 65536, advice);  // MADV_REMOVE fails on private memory: reported anyway
    EXPECT_TRUE(reported(p + 65536, 65536)) << "advice " << advice;
  }
  forget_seen();
  ASSERT_EQ(madvise(p, kMiB, MADV_WILLNEED), 0);
  EXPECT_FALSE(touched(p, kMiB)) << "advice that keeps the pages";
  munmap(p, kMiB);
}

TEST_F(MemoryEvents, MmapFixedOverAMapping) {
  char *p = static_cast<char *>(map(kMiB));
  forget_seen();
  void *q = mmap(p + 65536, 65536, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  ASSERT_EQ(q, p + 65536);
  EXPECT_TRUE(reported(p + 65536, 65536));
  forget_seen();
  q = mmap(nullptr, 65536, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT_FALSE(touched(q, 65536)) << "a new mapping replaces nothing";
  munmap(q, 65536);
  munmap(p, kMiB);
}

// sbrk lowering the break (through libc's brk), and malloc_trim giving the heap's top back
// (glibc's systrim -> __sbrk -> __brk, and madvise of free chunks).
TEST_F(MemoryEvents, BreakLowered) {
  char *top = static_cast<char *>(sbrk(0));
  ASSERT_NE(sbrk(static_cast<intptr_t>(kMiB)), reinterpret_cast<void *>(-1));
  memset(top, 3, kMiB);
  forget_seen();
  ASSERT_NE(sbrk(-static_cast<intptr_t>(kMiB)), reinterpret_cast<void *>(-1));
  EXPECT_EQ(sbrk(0), top);
  EXPECT_TRUE(reported(top, kMiB));

  mallopt(M_MMAP_THRESHOLD, 64 << 20);  // 4 MiB from the heap
  mallopt(M_TRIM_THRESHOLD, 1 << 30);   // free() alone keeps it
  char *p = static_cast<char *>(malloc(4 * kMiB));
  ASSERT_NE(p, nullptr);
  memset(p, 4, 4 * kMiB);
  const auto freed = reinterpret_cast<uintptr_t>(p);
  free(p);
  forget_seen();
  malloc_trim(0);
  EXPECT_TRUE(reported(reinterpret_cast<void *>(freed + kMiB), 3 * kMiB))
      << "the heap's top, less glibc's pad";
  mallopt(M_TRIM_THRESHOLD, 128 << 10);
  mallopt(M_MMAP_THRESHOLD, 128 << 10);
}

TEST_F(MemoryEvents, UnsubscribeStopsDelivery) {
  unsubscribe(record, nullptr);
  void *p = map(kMiB);
  forget_seen();
  munmap(p, kMiB);
  EXPECT_FALSE(touched(p, kMiB));
  std::string why;
  ASSERT_TRUE(subscribe(record, nullptr, &why)) << why;
  p = map(kMiB);
  forget_seen();
  munmap(p, kMiB);
  EXPECT_TRUE(reported(p, kMiB));
}

// A callback that releases memory itself (as a careless subscriber might): the nested release is
// not delivered inside the callback (no recursion) but right after it, to every subscriber.
void *g_spare = nullptr;
std::atomic<int> g_depth{0}, g_max_depth{0};
void unmapping(void *, const void *, size_t) {
  const int d = ++g_depth;
  if (d > g_max_depth) g_max_depth = d;
  if (void *s = g_spare) {
    g_spare = nullptr;
    munmap(s, 65536);
  }
  --g_depth;
}

TEST_F(MemoryEvents, ReleaseInsideACallbackIsReportedAfterIt) {
  std::string why;
  ASSERT_TRUE(subscribe(unmapping, nullptr, &why)) << why;
  g_spare = map(65536);
  void *spare = g_spare;
  void *p = map(kMiB);
  forget_seen();
  munmap(p, kMiB);
  unsubscribe(unmapping, nullptr);
  EXPECT_TRUE(reported(p, kMiB));
  EXPECT_TRUE(reported(spare, 65536)) << "the callback's own munmap";
  EXPECT_EQ(g_max_depth.load(), 1) << "callbacks never nest";
}

}  // namespace
}  // namespace hoshmem::memory_events
