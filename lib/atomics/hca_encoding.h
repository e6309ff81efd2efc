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
// `mask` and `mask2`: the masked operations' extra operands (AmoRequest). Inline: with a
// constant op (the API's inline paths) it folds to a few stores.
inline HcaAtomic encode_for_hca(AmoOp op, unsigned size, uint64_t operand, uint64_t compare,
                                uint64_t mask = 0, uint64_t mask2 = 0) {
  const auto masked_cs = [size](uint64_t swap, uint64_t cmp, uint64_t swap_mask,
                                uint64_t compare_mask) {
    return HcaAtomic{HcaOpcode::MaskedCompareSwap, static_cast<uint8_t>(size), swap, cmp,
                     swap_mask, compare_mask, 0};
  };
  const auto masked_fa = [size](uint64_t add, uint64_t boundary) {
    return HcaAtomic{HcaOpcode::MaskedFetchAdd, static_cast<uint8_t>(size), add, 0, 0, 0, boundary};
  };
  const uint64_t ones = size == 4 ? 0xffffffffull : ~0ull;
  operand &= ones;
  compare &= ones;
  mask &= ones;
  mask2 &= ones;
  switch (op) {
    case AmoOp::Fetch:
      return size == 8 ? HcaAtomic{HcaOpcode::FetchAdd, 8, 0, 0, 0, 0, 0} : masked_fa(0, 0);
    case AmoOp::Set:
    case AmoOp::Swap: return masked_cs(operand, 0, ones, 0);
    case AmoOp::CompareSwap:
      return size == 8 ? HcaAtomic{HcaOpcode::CompareSwap, 8, operand, compare, 0, 0, 0}
                       : masked_cs(operand, compare, ones, ones);
    case AmoOp::FetchAdd:
      return size == 8 ? HcaAtomic{HcaOpcode::FetchAdd, 8, operand, 0, 0, 0, 0}
                       : masked_fa(operand, 0);
    case AmoOp::FetchAnd: return masked_cs(operand, 0, ~operand & ones, 0);
    case AmoOp::FetchOr: return masked_cs(operand, 0, operand, 0);
    case AmoOp::FetchXor: return masked_fa(operand, ones);
    case AmoOp::MaskedFetchAdd: return masked_fa(operand, mask);
    case AmoOp::MaskedCompareSwap: return masked_cs(operand, compare, mask, mask2);
  }
  return {};
}

// Opcode modifier of the WQE control segment: 0x8 | (log2(size) - 2) for extended atomics, 0 for
// the standard ones.
uint8_t hca_opcode_modifier(const HcaAtomic &a);

// What the HCA does with `a` on the word at `p` (non-atomically): returns the old value. The
// reference model used to test the table and by software HCA models.
uint64_t hca_apply(const HcaAtomic &a, void *p);

}  // namespace hoshmem::atomics
