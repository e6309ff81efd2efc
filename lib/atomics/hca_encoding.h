// lib/atomics: how each AMO maps onto what an mlx5 HCA executes (the all-HW backends, RC and DC).
//
// Standard InfiniBand atomics are only 8-byte fetch-add and compare-swap. mlx5 extended atomics
// add masked compare-swap and masked fetch-add on 4 or 8 bytes, which cover everything else:
//   add64 -> FA; add32 -> masked FA, field boundary 0; cswap64 -> CS; cswap32 -> masked CS with
//   both masks all-ones; swap/set -> masked CS, compare_mask 0, swap_mask all-ones;
//   fetch -> FA of 0; and(v) -> masked CS, compare_mask 0, swap_mask ~v, swap v;
//   or(v) -> masked CS, compare_mask 0, swap_mask v, swap v; xor(v) -> masked FA with the field
//   boundary all-ones (every bit its own field: an add without carries).
// Masked compare-swap: if ((old ^ compare) & compare_mask) == 0 then
//   new = (old & ~swap_mask) | (swap & swap_mask).
// Masked fetch-add: add field by field; a set bit in field_boundary marks the most significant
// bit of a field, so no carry leaves it.
#pragma once

#include <cstdint>

#include "lib/atomics/amo_op.h"

namespace hoshmem::atomics {

enum class HcaOpcode : uint8_t {
  CompareSwap = 0x11,        // IB standard, 8 bytes
  FetchAdd = 0x12,           // IB standard, 8 bytes
  MaskedCompareSwap = 0x14,  // mlx5 extended, 4 or 8 bytes
  MaskedFetchAdd = 0x15,     // mlx5 extended, 4 or 8 bytes
};

struct HcaAtomic {
  HcaOpcode opcode;
  uint8_t size;             // operand bytes: 4 or 8
  uint64_t swap_add;        // swap value (CS) or addend (FA)
  uint64_t compare;         // CS only
  uint64_t swap_mask;       // masked CS only
  uint64_t compare_mask;    // masked CS only
  uint64_t field_boundary;  // masked FA only
};

// The encoding of `op` on a word of `size` bytes (operand/compare are the value bits).
// `mask` and `mask2`: the masked operations' extra operands (AmoRequest).
HcaAtomic encode_for_hca(AmoOp op, unsigned size, uint64_t operand, uint64_t compare,
                         uint64_t mask = 0, uint64_t mask2 = 0);

// Opcode modifier of the WQE control segment: 0x8 | (log2(size) - 2) for extended atomics, 0 for
// the standard ones.
uint8_t hca_opcode_modifier(const HcaAtomic &a);

// What the HCA does with `a` on the word at `p` (non-atomically): returns the old value. The
// reference model used to test the table and by software HCA models.
uint64_t hca_apply(const HcaAtomic &a, void *p);

}  // namespace hoshmem::atomics
