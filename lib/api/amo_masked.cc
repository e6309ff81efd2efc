// Masked atomics for programs (<shmemx.h>): fetch-add with fields and masked compare-swap.
// 4 and 8 bytes go through the same paths as every AMO: CPU compare-swap loops on the mapped word
// (all-SW mode, this node), else the job's atomic backend (a message the target's CPU executes,
// or the HCA's masked atomics, or compare-swap loops on a device without them).
// 16-256 bytes (lib/atomics/wide.h): the HCA's wide masked atomics when every PE's device has the
// size (all-HW mode, 16-128 bytes), else the lock fallback under the target's stripe locks over
// those bytes (lib/core/accumulate.h): in all-SW mode to another node one message the target's
// CPU applies under them (lib/core/messages.cc), otherwise lock, get, compute, put, fence, unlock.
#include <atomic>
#include <cstring>

#include "lib/api/api.h"
#include "lib/atomics/cpu_atomics.h"
#include "lib/atomics/wide.h"
#include "lib/core/accumulate.h"
#include "lib/core/net.h"
#include "lib/core/team.h"

using namespace hoshmem;
using atomics::AmoOp;

namespace {

uint64_t load_operand(const void *p, size_t size, const char *what, const char *routine) {
  if (!p) report_null(what, routine);
  uint64_t v = 0;
  memcpy(&v, p, size);  // little-endian host: the low bytes
  return v;
}

// Sizes above 8 bytes: `a`..`d` as in atomics::WideRequest. Always complete on return.
void wide(AmoOp op, Target t, void *dest, const void *a, const void *b, const void *c,
          const void *d, void *fetch, size_t size, const char *routine) {
  const int pe = t.pe;
  char *mapped = remote_address(dest, size, pe, routine);  // checks PE and range
  const atomics::WideRequest r{op, static_cast<unsigned>(size), pe, dest, a, b, c, d, fetch,
                               t.lane, routine};
  if (!mapped && !rt.remote_atomics)
    fatal(routine, "no atomic backend reaches PE %d (mode %s)", pe, atomics::mode_name(rt.mode));
  if (!rt.cpu_atomics_ok[pe] && rt.remote_atomics && rt.remote_atomics->execute_wide(r)) return;
  // The lock fallback: atomic with respect to the other wide atomics on these bytes (every size
  // the HCA does not execute takes it), not to 4- and 8-byte AMOs or puts on them.
  const acc::HeldLocks held = acc::lock_range(t, dest, size, routine);
  alignas(16) uint8_t copy[atomics::kWideMax], old[atomics::kWideMax];
  uint8_t *mem = mapped ? reinterpret_cast<uint8_t *>(mapped) : copy;
  if (!mapped) net_get(t.lane, pe, copy, dest, size, false);
  if (op == AmoOp::MaskedCompareSwap)
    atomics::wide_compare_swap(mem, b, d, a, c, static_cast<unsigned>(size), old);
  else
    atomics::wide_fetch_add(mem, a, b, static_cast<unsigned>(size), old);
  if (mapped) {
    std::atomic_thread_fence(std::memory_order_seq_cst);  // the stores, then the release
    notify(pe);
  } else if (memcmp(old, copy, size) != 0) {
    net_put(t.lane, pe, dest, copy, size, false);
    rt.remote_atomics->fence(t.lane, pe);  // the bytes land before the locks are free
  }
  acc::unlock_range(t, held, routine);
  if (fetch) memcpy(fetch, old, size);
}

// `fetch` null: non-blocking (complete at quiet).
void masked(AmoOp op, Target t, void *dest, uint64_t operand, uint64_t compare, uint64_t mask,
            uint64_t mask2, void *fetch, size_t size, const char *routine) {
  if (size != 4 && size != 8)
    fatal(routine, "size %zu: masked atomics take 4, 8, 16, 32, 64, 128 or 256 bytes", size);
  if (reinterpret_cast<uintptr_t>(dest) & (size - 1))
    report_misaligned(dest, size, routine);
  const int pe = t.pe;
  if (static_cast<unsigned>(pe) >= static_cast<unsigned>(rt.npes)) report_bad_pe(pe, routine);
  if (rt.cpu_atomics_ok[pe]) {
    char *word = amo_address(dest, size, pe, routine);
    const uint64_t old = atomics::cpu::execute(op, word, static_cast<unsigned>(size), operand,
                                               compare, mask, mask2);
    notify(pe);
    if (fetch) memcpy(fetch, &old, size);
    return;
  }
  if (rt.debug) amo_address(dest, size, pe, routine);
  if (!rt.remote_atomics)
    fatal(routine, "no atomic backend reaches PE %d (mode %s)", pe, atomics::mode_name(rt.mode));
  atomics::AmoRequest r{op,    static_cast<uint8_t>(size), pe,      dest,  operand, compare,
                        fetch, t.lane,                     routine, mask,  mask2};
  rt.remote_atomics->execute(r, fetch == nullptr);
}

// 16, 32, 64, 128, 256: checked and aligned, else one fatal line.
bool is_wide(void *dest, size_t size, const char *routine) {
  if (size == 4 || size == 8) return false;
  if (!atomics::wide_size(size))
    fatal(routine, "size %zu: masked atomics take 4, 8, 16, 32, 64, 128 or 256 bytes", size);
  if (reinterpret_cast<uintptr_t>(dest) & (size - 1)) report_misaligned(dest, size, routine);
  return true;
}

void fields(Target t, void *dest, const void *value, const void *boundary, void *fetch,
            size_t size, const char *routine) {
  if (is_wide(dest, size, routine)) {
    if (!value) report_null("value", routine);
    if (!boundary) report_null("boundary", routine);
    return wide(AmoOp::MaskedFetchAdd, t, dest, value, boundary, nullptr, nullptr, fetch, size,
                routine);
  }
  masked(AmoOp::MaskedFetchAdd, t, dest, load_operand(value, size, "value", routine), 0,
         load_operand(boundary, size, "boundary", routine), 0, fetch, size, routine);
}

void compare_swap_masked(Target t, void *dest, const void *compare, const void *compare_mask,
                         const void *swap, const void *swap_mask, void *fetch, size_t size,
                         const char *routine) {
  if (is_wide(dest, size, routine)) {
    if (!compare) report_null("compare", routine);
    if (!compare_mask) report_null("compare_mask", routine);
    if (!swap) report_null("swap", routine);
    if (!swap_mask) report_null("swap_mask", routine);
    return wide(AmoOp::MaskedCompareSwap, t, dest, swap, compare, swap_mask, compare_mask, fetch,
                size, routine);
  }
  masked(AmoOp::MaskedCompareSwap, t, dest, load_operand(swap, size, "swap", routine),
         load_operand(compare, size, "compare", routine),
         load_operand(swap_mask, size, "swap_mask", routine),
         load_operand(compare_mask, size, "compare_mask", routine), fetch, size, routine);
}

}  // namespace

extern "C" {

void pshmemx_atomic_fetch_add_fields(void *dest, const void *value, const void *boundary,
                                     void *fetch, size_t size, int pe) {
  fields(pe, dest, value, boundary, fetch, size, HOSHMEM_ROUTINE);
}
void pshmemx_ctx_atomic_fetch_add_fields(shmem_ctx_t ctx, void *dest, const void *value,
                                         const void *boundary, void *fetch, size_t size, int pe) {
  fields(ctx_target(ctx, pe, HOSHMEM_ROUTINE), dest, value, boundary, fetch, size,
         HOSHMEM_ROUTINE);
}
void pshmemx_atomic_compare_swap_masked(void *dest, const void *compare, const void *compare_mask,
                                        const void *swap, const void *swap_mask, void *fetch,
                                        size_t size, int pe) {
  compare_swap_masked(pe, dest, compare, compare_mask, swap, swap_mask, fetch, size,
                      HOSHMEM_ROUTINE);
}
void pshmemx_ctx_atomic_compare_swap_masked(shmem_ctx_t ctx, void *dest, const void *compare,
                                            const void *compare_mask, const void *swap,
                                            const void *swap_mask, void *fetch, size_t size,
                                            int pe) {
  compare_swap_masked(ctx_target(ctx, pe, HOSHMEM_ROUTINE), dest, compare, compare_mask, swap,
                      swap_mask, fetch, size, HOSHMEM_ROUTINE);
}

#define DEFINE_MASKED_TYPED(T, N)                                                                \
  T pshmemx_##N##_atomic_fetch_add_fields(T *dest, T value, T boundary, int pe) {               \
    T old = 0;                                                                                   \
    fields(pe, dest, &value, &boundary, &old, sizeof(T), HOSHMEM_ROUTINE);                       \
    return old;                                                                                  \
  }                                                                                              \
  T pshmemx_##N##_atomic_compare_swap_masked(T *dest, T compare, T compare_mask, T swap,        \
                                             T swap_mask, int pe) {                              \
    T old = 0;                                                                                   \
    compare_swap_masked(pe, dest, &compare, &compare_mask, &swap, &swap_mask, &old, sizeof(T),   \
                        HOSHMEM_ROUTINE);                                                        \
    return old;                                                                                  \
  }
DEFINE_MASKED_TYPED(uint32_t, uint32)
DEFINE_MASKED_TYPED(uint64_t, uint64)

}  // extern "C"

HOSHMEM_ALIAS(shmemx_atomic_fetch_add_fields);
HOSHMEM_ALIAS(shmemx_ctx_atomic_fetch_add_fields);
HOSHMEM_ALIAS(shmemx_atomic_compare_swap_masked);
HOSHMEM_ALIAS(shmemx_ctx_atomic_compare_swap_masked);
HOSHMEM_ALIAS(shmemx_uint32_atomic_fetch_add_fields);
HOSHMEM_ALIAS(shmemx_uint64_atomic_fetch_add_fields);
HOSHMEM_ALIAS(shmemx_uint32_atomic_compare_swap_masked);
HOSHMEM_ALIAS(shmemx_uint64_atomic_compare_swap_masked);
