// lib/heap: address translation. A symmetric address is (segment, offset); the same offset in the
// same segment of another PE is the remote object. For each PE of this node the segment is mapped
// here at some address, so translation is one range check and one table lookup.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hoshmem {

struct SegmentMap {
  uintptr_t base = 0;        // this PE's address of the segment
  size_t size = 0;           // bytes
  char **mapped = nullptr;   // per PE: where that PE's segment is mapped here (null: off-node)
};

struct SymmetricSpace {
  SegmentMap heap;  // the symmetric heap
  SegmentMap data;  // the executable's .data/.bss

  // Address here of PE `pe`'s copy of the symmetric object at `sym`; nullptr if `sym` is not a
  // symmetric address. `pe` must be valid. Also gives the bytes left in the segment.
  inline char *translate(const void *sym, int pe, size_t *room = nullptr) const {
    uintptr_t a = reinterpret_cast<uintptr_t>(sym);
    if (uintptr_t off = a - heap.base; off < heap.size) {
      if (room) *room = heap.size - off;
      return heap.mapped[pe] + off;
    }
    if (uintptr_t off = a - data.base; off < data.size) {
      if (room) *room = data.size - off;
      return data.mapped[pe] + off;
    }
    return nullptr;
  }

  // The object at `sym` as every PE can name it: its offset in the heap, or its offset in .data/.bss
  // with the top bit set (the segments' bases differ between PEs). kNoToken if not symmetric.
  static constexpr uint64_t kNoToken = ~uint64_t{0};
  static constexpr uint64_t kDataBit = uint64_t{1} << 63;
  inline uint64_t token(const void *sym) const {
    uintptr_t a = reinterpret_cast<uintptr_t>(sym);
    if (uintptr_t off = a - heap.base; off < heap.size) return off;
    if (uintptr_t off = a - data.base; off < data.size) return off | kDataBit;
    return kNoToken;
  }
  // Address here of PE `pe`'s copy of the object named by a valid token.
  inline char *at_token(uint64_t token, int pe) const {
    return token & kDataBit ? data.mapped[pe] + (token & ~kDataBit) : heap.mapped[pe] + token;
  }

  inline bool is_symmetric(const void *sym) const {
    uintptr_t a = reinterpret_cast<uintptr_t>(sym);
    return a - heap.base < heap.size || a - data.base < data.size;
  }
};

}  // namespace hoshmem
