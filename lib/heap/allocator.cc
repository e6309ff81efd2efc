#include "lib/heap/allocator.h"

#include <algorithm>
#include <bit>

namespace hoshmem {
namespace {
constexpr size_t round_up(size_t v, size_t a) { return (v + a - 1) & ~(a - 1); }
int msb(size_t v) { return 63 - std::countl_zero(static_cast<uint64_t>(v)); }
}  // namespace

SymmetricAllocator::SymmetricAllocator(uintptr_t base_address, size_t capacity)
    : base_(base_address), capacity_(capacity & ~(kGranule - 1)) {
  if (capacity_ >= kGranule) insert_free(new_block(0, capacity_, nullptr, nullptr));
}

void SymmetricAllocator::mapping(size_t size, int *fl, int *sl) {
  if (size < kSmallLimit) {
    *fl = 0;
    *sl = static_cast<int>(size / kGranule);
  } else {
    int m = msb(size);
    *fl = m - (kSlLog2 + 4) + 1;
    *sl = static_cast<int>((size >> (m - kSlLog2)) ^ (size_t{1} << kSlLog2));
  }
}

SymmetricAllocator::Block *SymmetricAllocator::new_block(size_t offset, size_t size, Block *prev,
                                                         Block *next) {
  Block *b;
  if (!spare_.empty()) {
    b = spare_.back();
    spare_.pop_back();
  } else {
    b = &storage_.emplace_back();
  }
  *b = Block{offset, size, prev, next, nullptr, nullptr, false};
  if (prev) prev->next_phys = b;
  if (next) next->prev_phys = b;
  return b;
}

void SymmetricAllocator::release_block(Block *b) { spare_.push_back(b); }

void SymmetricAllocator::insert_free(Block *b) {
  int fl, sl;
  mapping(b->size, &fl, &sl);
  b->is_free = true;
  b->prev_free = nullptr;
  b->next_free = heads_[fl][sl];
  if (b->next_free) b->next_free->prev_free = b;
  heads_[fl][sl] = b;
  fl_bitmap_ |= uint64_t{1} << fl;
  sl_bitmap_[fl] |= 1u << sl;
  ++free_count_;
}

void SymmetricAllocator::remove_free(Block *b) {
  int fl, sl;
  mapping(b->size, &fl, &sl);
  if (b->prev_free) b->prev_free->next_free = b->next_free;
  else heads_[fl][sl] = b->next_free;
  if (b->next_free) b->next_free->prev_free = b->prev_free;
  if (!heads_[fl][sl]) {
    sl_bitmap_[fl] &= ~(1u << sl);
    if (!sl_bitmap_[fl]) fl_bitmap_ &= ~(uint64_t{1} << fl);
  }
  b->is_free = false;
  --free_count_;
}

// Good fit: round the request up to the next list boundary so that every block in the list found
// is large enough, then take the first non-empty list at or above it.
SymmetricAllocator::Block *SymmetricAllocator::find_free(size_t size) {
  if (size >= kSmallLimit) {
    size_t step = size_t{1} << (msb(size) - kSlLog2);
    if (size > SIZE_MAX - step) return nullptr;
    size += step - 1;
  }
  int fl, sl;
  mapping(size, &fl, &sl);
  if (fl >= kFlCount) return nullptr;
  uint32_t sl_map = sl < kSlCount ? sl_bitmap_[fl] & (~0u << sl) : 0;
  if (!sl_map) {
    uint64_t fl_map = fl + 1 < kFlCount ? fl_bitmap_ & (~uint64_t{0} << (fl + 1)) : 0;
    if (!fl_map) return nullptr;
    fl = std::countr_zero(fl_map);
    sl_map = sl_bitmap_[fl];
  }
  sl = std::countr_zero(sl_map);
  return heads_[fl][sl];
}

void SymmetricAllocator::split_tail(Block *b, size_t size) {
  if (b->size - size < kGranule) return;
  Block *rest = new_block(b->offset + size, b->size - size, b, b->next_phys);
  b->size = size;
  insert_free(rest);  // its neighbours are allocated: free blocks are always coalesced
}

std::optional<size_t> SymmetricAllocator::allocate(size_t size, size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1))) return std::nullopt;
  alignment = std::max(alignment, kGranule);
  if (size > capacity_) return std::nullopt;
  size = round_up(std::max<size_t>(size, 1), kGranule);
  size_t search = alignment == kGranule ? size : size + alignment;
  if (search < size) return std::nullopt;
  Block *b = find_free(search);
  if (!b) return std::nullopt;
  remove_free(b);
  size_t aligned = round_up(base_ + b->offset, alignment) - base_;
  if (size_t gap = aligned - b->offset; gap > 0) {
    // The gap in front becomes its own free block.
    Block *front = new_block(b->offset, gap, b->prev_phys, b);
    b->offset = aligned;
    b->size -= gap;
    insert_free(front);
  }
  split_tail(b, size);
  allocated_.emplace(b->offset, b);
  in_use_ += b->size;
  return b->offset;
}

bool SymmetricAllocator::free(size_t offset) {
  auto it = allocated_.find(offset);
  if (it == allocated_.end()) return false;
  Block *b = it->second;
  allocated_.erase(it);
  in_use_ -= b->size;
  if (Block *prev = b->prev_phys; prev && prev->is_free) {
    remove_free(prev);
    prev->size += b->size;
    prev->next_phys = b->next_phys;
    if (b->next_phys) b->next_phys->prev_phys = prev;
    release_block(b);
    b = prev;
  }
  if (Block *next = b->next_phys; next && next->is_free) {
    remove_free(next);
    b->size += next->size;
    b->next_phys = next->next_phys;
    if (next->next_phys) next->next_phys->prev_phys = b;
    release_block(next);
  }
  insert_free(b);
  return true;
}

size_t SymmetricAllocator::block_size(size_t offset) const {
  auto it = allocated_.find(offset);
  return it == allocated_.end() ? 0 : it->second->size;
}

size_t SymmetricAllocator::largest_free_block() const {
  if (!fl_bitmap_) return 0;
  int fl = msb(fl_bitmap_);
  size_t best = 0;
  for (int sl = 0; sl < kSlCount; ++sl)
    for (Block *b = heads_[fl][sl]; b; b = b->next_free) best = std::max(best, b->size);
  return best;
}

}  // namespace hoshmem
