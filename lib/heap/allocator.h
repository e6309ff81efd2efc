// lib/heap: the symmetric heap allocator.
//
// A two-level segregated-fit allocator (TLSF): O(1) allocate and free, immediate coalescing, and
// good-fit placement that keeps fragmentation low under malloc/free churn. It hands out *offsets*
// and keeps all of its bookkeeping in private memory, never inside the heap: remote PEs write the
// heap freely, so metadata there could be corrupted by a buggy put and would cost a round of cache
// misses. Deterministic: the same sequence of calls gives the same offsets on every PE, which is
// what makes the heap symmetric.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>
#include <vector>

namespace hoshmem {

class SymmetricAllocator {
 public:
  static constexpr size_t kGranule = 16;  // minimum size and alignment (alignof(max_align_t))

  // Manages [0, capacity). `base_address` is where offset 0 lives; it is used only so that
  // alignment requests hold for addresses, not just offsets.
  SymmetricAllocator(uintptr_t base_address, size_t capacity);
  SymmetricAllocator(const SymmetricAllocator &) = delete;
  SymmetricAllocator &operator=(const SymmetricAllocator &) = delete;

  // Offset of a block of at least `size` bytes aligned to `alignment` (a power of two), or nullopt
  // if no free block fits. size 0 is treated as 1.
  std::optional<size_t> allocate(size_t size, size_t alignment = kGranule);
  // Frees the block that starts at `offset`. False if no allocated block starts there.
  bool free(size_t offset);
  // Usable bytes of the allocated block at `offset`, or 0 if there is none.
  size_t block_size(size_t offset) const;

  size_t capacity() const { return capacity_; }
  size_t bytes_in_use() const { return in_use_; }
  size_t free_blocks() const { return free_count_; }
  size_t largest_free_block() const;

 private:
  static constexpr int kSlLog2 = 5;  // 32 second-level lists per power of two
  static constexpr int kSlCount = 1 << kSlLog2;
  static constexpr int kFlCount = 58;
  static constexpr size_t kSmallLimit = size_t{1} << (kSlLog2 + 4);  // sizes below: fl 0

  struct Block {
    size_t offset, size;
    Block *prev_phys, *next_phys;
    Block *prev_free, *next_free;
    bool is_free;
  };

  static void mapping(size_t size, int *fl, int *sl);
  Block *find_free(size_t size);
  void insert_free(Block *b);
  void remove_free(Block *b);
  Block *new_block(size_t offset, size_t size, Block *prev, Block *next);
  void release_block(Block *b);
  // Splits `b` so that it keeps `size` bytes; the rest becomes a free block after it.
  void split_tail(Block *b, size_t size);

  uintptr_t base_;
  size_t capacity_;
  size_t in_use_ = 0;
  size_t free_count_ = 0;
  uint64_t fl_bitmap_ = 0;
  uint32_t sl_bitmap_[kFlCount] = {};
  Block *heads_[kFlCount][kSlCount] = {};
  std::unordered_map<size_t, Block *> allocated_;
  std::deque<Block> storage_;
  std::vector<Block *> spare_;
};

}  // namespace hoshmem
