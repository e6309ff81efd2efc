#include "lib/atomics/cpu_atomics.h"

namespace hoshmem::atomics {

const char *amo_op_name(AmoOp op) {
  switch (op) {
    case AmoOp::Fetch: return "fetch";
    case AmoOp::Set: return "set";
    case AmoOp::Swap: return "swap";
    case AmoOp::CompareSwap: return "compare_swap";
    case AmoOp::FetchAdd: return "fetch_add";
    case AmoOp::FetchAnd: return "fetch_and";
    case AmoOp::FetchOr: return "fetch_or";
    case AmoOp::FetchXor: return "fetch_xor";
  }
  return "?";
}

namespace cpu {
namespace {
template <class W>
W run(AmoOp op, void *p, W operand, W compare) {
  switch (op) {
    case AmoOp::Fetch: return fetch<W>(p);
    case AmoOp::Set: set<W>(p, operand); return 0;
    case AmoOp::Swap: return swap<W>(p, operand);
    case AmoOp::CompareSwap: return compare_swap<W>(p, compare, operand);
    case AmoOp::FetchAdd: return fetch_add<W>(p, operand);
    case AmoOp::FetchAnd: return fetch_and<W>(p, operand);
    case AmoOp::FetchOr: return fetch_or<W>(p, operand);
    case AmoOp::FetchXor: return fetch_xor<W>(p, operand);
  }
  return 0;
}
}  // namespace

uint64_t execute(AmoOp op, void *p, unsigned size, uint64_t operand, uint64_t compare) {
  if (size == 4)
    return run<uint32_t>(op, p, static_cast<uint32_t>(operand), static_cast<uint32_t>(compare));
  return run<uint64_t>(op, p, operand, compare);
}
}  // namespace cpu

}  // namespace hoshmem::atomics
