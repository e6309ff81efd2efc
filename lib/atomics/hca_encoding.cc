#include "lib/atomics/hca_encoding.h"

#include <cstring>

namespace hoshmem::atomics {

uint8_t hca_opcode_modifier(const HcaAtomic &a) {
  if (a.opcode == HcaOpcode::MaskedCompareSwap || a.opcode == HcaOpcode::MaskedFetchAdd)
    return static_cast<uint8_t>(0x8 | (a.size == 4 ? 0 : 1));
  return 0;
}

uint64_t hca_apply(const HcaAtomic &a, void *p) {
  const uint64_t ones = a.size == 4 ? 0xffffffffull : ~0ull;
  uint64_t old = 0;
  memcpy(&old, p, a.size);
  uint64_t next = old;
  switch (a.opcode) {
    case HcaOpcode::CompareSwap:
      if (old == a.compare) next = a.swap_add;
      break;
    case HcaOpcode::FetchAdd: next = old + a.swap_add; break;
    case HcaOpcode::MaskedCompareSwap:
      if (((old ^ a.compare) & a.compare_mask) == 0)
        next = (old & ~a.swap_mask) | (a.swap_add & a.swap_mask);
      break;
    case HcaOpcode::MaskedFetchAdd: {
      // Add field by field: a field ends at each set bit of the boundary (and at the top).
      uint64_t result = 0;
      unsigned start = 0;
      for (unsigned bit = 0; bit < a.size * 8u; ++bit) {
        bool last = ((a.field_boundary >> bit) & 1) || bit == a.size * 8u - 1;
        if (!last) continue;
        unsigned width = bit - start + 1;
        uint64_t mask = width == 64 ? ~0ull : ((1ull << width) - 1);
        uint64_t sum = ((old >> start) + (a.swap_add >> start)) & mask;
        result |= sum << start;
        start = bit + 1;
      }
      next = result;
      break;
    }
  }
  next &= ones;
  memcpy(p, &next, a.size);
  return old;
}

}  // namespace hoshmem::atomics
