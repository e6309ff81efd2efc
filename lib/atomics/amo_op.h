// lib/atomics: the atomic memory operations every backend executes. An OpenSHMEM AMO routine is
// one of these ops on a 4- or 8-byte word (float and double move their bits as integers).
#pragma once

#include <cstdint>

namespace hoshmem::atomics {

enum class AmoOp : uint8_t {
  Fetch,        // old
  Set,          // word = operand
  Swap,         // old; word = operand
  CompareSwap,  // old; if old == compare: word = operand
  FetchAdd,     // old; word += operand   (inc is add of 1)
  FetchAnd,     // old; word &= operand
  FetchOr,      // old; word |= operand
  FetchXor,     // old; word ^= operand
  // mlx5's extended forms, for programs (shmemx_atomic_*_fields/_masked). `mask`, `mask2` are
  // AmoRequest's extra operands.
  MaskedFetchAdd,     // old; add `operand` field by field: a set bit of `mask` tops a field
  MaskedCompareSwap,  // old; if ((old ^ compare) & mask2) == 0:
                      //   word = (old & ~mask) | (operand & mask)
};

const char *amo_op_name(AmoOp op);

}  // namespace hoshmem::atomics
