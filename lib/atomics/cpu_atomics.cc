#include "lib/atomics/cpu_atomics.h"
#include "lib/atomics/hca_encoding.h"

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
    case AmoOp::MaskedFetchAdd: return "fetch_add_fields";
    case AmoOp::MaskedCompareSwap: return "compare_swap_masked";
  }
  return "?";
}

namespace cpu {
namespace {
// The masked operations as compare-swap loops, computing each new value the way the HCA does
// (hca_apply): the same results on every path.
template <class W>
W masked(AmoOp op, void *p, W operand, W compare, W mask, W mask2) {
  const HcaAtomic a = encode_for_hca(op, sizeof(W), operand, compare, mask, mask2);
  W old = __atomic_load_n(static_cast<W *>(p), __ATOMIC_RELAXED);
  for (;;) {
    W next = old;
    hca_apply(a, &next);
    if (next == old ||
        __atomic_compare_exchange_n(static_cast<W *>(p), &old, next, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_RELAXED))
      return old;
  }
}

template <class W>
W run(AmoOp op, void *p, W operand, W compare, W mask, W mask2) {
  switch (op) {
    case AmoOp::MaskedFetchAdd:
    case AmoOp::MaskedCompareSwap: return masked<W>(op, p, operand, compare, mask, mask2);
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

uint64_t execute(AmoOp op, void *p, unsigned size, uint64_t operand, uint64_t compare,
                 uint64_t mask, uint64_t mask2) {
  if (size == 4)
    return run<uint32_t>(op, p, static_cast<uint32_t>(operand), static_cast<uint32_t>(compare),
                         static_cast<uint32_t>(mask), static_cast<uint32_t>(mask2));
  return run<uint64_t>(op, p, operand, compare, mask, mask2);
}
}  // namespace cpu

}  // namespace hoshmem::atomics
