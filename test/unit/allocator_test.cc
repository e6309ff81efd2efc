// The symmetric heap allocator: correctness, alignment, determinism and fragmentation under churn.
#include "lib/heap/allocator.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace hoshmem {
namespace {

constexpr size_t kHeap = 64 << 20;

TEST(Allocator, FirstAllocationsArePackedAndAligned) {
  SymmetricAllocator a(0x500000000000, kHeap);
  auto x = a.allocate(1), y = a.allocate(24), z = a.allocate(100);
  ASSERT_TRUE(x && y && z);
  EXPECT_EQ(*x % 16, 0u);
  EXPECT_EQ(*y % 16, 0u);
  EXPECT_EQ(*z % 16, 0u);
  EXPECT_EQ(a.block_size(*x), 16u);
  EXPECT_EQ(a.block_size(*y), 32u);
  EXPECT_EQ(a.block_size(*z), 112u);
  EXPECT_EQ(a.bytes_in_use(), 160u);
}

TEST(Allocator, BlocksNeverOverlap) {
  SymmetricAllocator a(0, kHeap);
  std::map<size_t, size_t> live;
  std::mt19937_64 rng(1);
  for (int i = 0; i < 2000; ++i) {
    size_t size = 1 + rng() % 5000;
    auto off = a.allocate(size);
    ASSERT_TRUE(off);
    auto next = live.lower_bound(*off);
    if (next != live.end()) EXPECT_LE(*off + size, next->first);
    if (next != live.begin()) {
      auto prev = std::prev(next);
      EXPECT_LE(prev->first + prev->second, *off);
    }
    live[*off] = size;
  }
}

TEST(Allocator, AlignmentIsForAddressesNotOffsets) {
  const uintptr_t base = 0x500000000000 + 48;  // deliberately not aligned beyond 16
  SymmetricAllocator a(base, kHeap);
  a.allocate(40);
  for (size_t align : {32u, 64u, 4096u, 1u << 20}) {
    auto off = a.allocate(100, align);
    ASSERT_TRUE(off) << align;
    EXPECT_EQ((base + *off) % align, 0u) << align;
  }
  EXPECT_FALSE(a.allocate(10, 24));  // not a power of two
}

TEST(Allocator, FreeCoalescesBackToOneBlock) {
  SymmetricAllocator a(0, kHeap);
  std::vector<size_t> offs;
  for (int i = 0; i < 100; ++i) offs.push_back(*a.allocate(1000 + i));
  for (size_t i = 0; i < offs.size(); i += 2) EXPECT_TRUE(a.free(offs[i]));
  for (size_t i = 1; i < offs.size(); i += 2) EXPECT_TRUE(a.free(offs[i]));
  EXPECT_EQ(a.bytes_in_use(), 0u);
  EXPECT_EQ(a.free_blocks(), 1u);
  EXPECT_EQ(a.largest_free_block(), kHeap);
}

TEST(Allocator, RejectsBadFrees) {
  SymmetricAllocator a(0, kHeap);
  auto x = a.allocate(64);
  EXPECT_FALSE(a.free(*x + 16));
  EXPECT_TRUE(a.free(*x));
  EXPECT_FALSE(a.free(*x));  // double free
}

TEST(Allocator, ExhaustionReturnsNulloptAndRecovers) {
  SymmetricAllocator a(0, 1 << 20);
  EXPECT_FALSE(a.allocate((1 << 20) + 1));
  auto all = a.allocate(1 << 20);
  ASSERT_TRUE(all);
  EXPECT_FALSE(a.allocate(1));
  a.free(*all);
  EXPECT_TRUE(a.allocate(1000));
  EXPECT_FALSE(a.allocate(SIZE_MAX));
  EXPECT_FALSE(a.allocate(SIZE_MAX - 8, 4096));
}

TEST(Allocator, SameCallsGiveSameOffsets) {
  SymmetricAllocator a(0x500000000000, kHeap), b(0x500000000000, kHeap);
  std::mt19937_64 rng(7);
  std::vector<size_t> live_a;
  for (int i = 0; i < 5000; ++i) {
    if (!live_a.empty() && rng() % 3 == 0) {
      size_t k = rng() % live_a.size();
      EXPECT_TRUE(a.free(live_a[k]));
      EXPECT_TRUE(b.free(live_a[k]));
      live_a.erase(live_a.begin() + k);
    } else {
      size_t size = 1 + rng() % 100000, align = size_t{16} << (rng() % 6);
      auto x = a.allocate(size, align), y = b.allocate(size, align);
      ASSERT_EQ(x.has_value(), y.has_value());
      if (x) {
        EXPECT_EQ(*x, *y);
        live_a.push_back(*x);
      }
    }
  }
}

// Churn with random sizes must not fragment the heap: after freeing everything, one block remains,
// and while the live set stays bounded every request keeps succeeding.
TEST(Allocator, ChurnDoesNotFragment) {
  SymmetricAllocator a(0, kHeap);
  std::mt19937_64 rng(3);
  std::vector<size_t> live;
  size_t failures = 0;
  for (int i = 0; i < 200000; ++i) {
    if (live.size() > 500 || (!live.empty() && rng() % 2)) {
      size_t k = rng() % live.size();
      a.free(live[k]);
      live[k] = live.back();
      live.pop_back();
    } else {
      size_t size = (rng() % 4 == 0) ? 1 + rng() % 65536 : 1 + rng() % 512;
      if (auto off = a.allocate(size)) live.push_back(*off);
      else ++failures;
    }
  }
  EXPECT_EQ(failures, 0u);  // live data never exceeds ~9 MiB of 64 MiB
  for (size_t off : live) a.free(off);
  EXPECT_EQ(a.free_blocks(), 1u);
  EXPECT_EQ(a.bytes_in_use(), 0u);
}

}  // namespace
}  // namespace hoshmem
