// Masked atomics for programs (<shmemx.h>): fetch-add with fields and masked compare-swap on 4-
// and 8-byte words, through the same paths as every AMO: CPU compare-swap loops on the mapped
// word (all-SW mode, this node), else the job's atomic backend (a UD message the target's CPU
// executes, or the HCA's masked atomics, or compare-swap loops on a device without them).
#include <cstring>

#include "lib/api/api.h"
#include "lib/atomics/cpu_atomics.h"
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

// `fetch` null: non-blocking (complete at quiet).
void masked(AmoOp op, Target t, void *dest, uint64_t operand, uint64_t compare, uint64_t mask,
            uint64_t mask2, void *fetch, size_t size, const char *routine) {
  if (size != 4 && size != 8)
    fatal(routine, "size %zu: this release does masked atomics on 4 and 8 bytes only", size);
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

void fields(Target t, void *dest, const void *value, const void *boundary, void *fetch,
            size_t size, const char *routine) {
  masked(AmoOp::MaskedFetchAdd, t, dest, load_operand(value, size, "value", routine), 0,
         load_operand(boundary, size, "boundary", routine), 0, fetch, size, routine);
}

void compare_swap_masked(Target t, void *dest, const void *compare, const void *compare_mask,
                         const void *swap, const void *swap_mask, void *fetch, size_t size,
                         const char *routine) {
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
