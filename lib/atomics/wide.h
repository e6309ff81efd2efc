// lib/atomics: masked atomics wider than 8 bytes (16..256), the pieces every path shares.
//
// Program semantics (<shmemx.h>): an operand of `size` bytes is one little-endian integer, its
// bytes in memory order (on x86: the word at the lowest address least significant).
//   fetch-add with fields: add without carrying out of any bit set in `boundary`;
//   compare-swap-masked: if ((old ^ compare) & compare_mask) == 0,
//   new = (old & ~swap_mask) | (swap & swap_mask); old is always returned.
//
// The HCA's encoding (mlx5 extended atomics, checked by test/softhca's ext_atomics_test): opcode
// modifier 0x08 | (log2(size) - 2), operands inline after the remote-address segment, each of
// `size` bytes as 8-byte words in memory order, every word big-endian; the result comes back in
// the same order. The HCA reads the operand as one big-endian integer, so the word at the LOWEST
// address is its MOST significant: its carries run between words the other way round from the
// program's. Compare-swap is bitwise and unaffected; a fetch-add matches the program's only when
// no carry crosses a word, i.e. `boundary` has bit 63 of every 8-byte word set
// (hca_fetch_add_agrees); otherwise it must not go to the HCA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "lib/atomics/backend.h"
#include "lib/atomics/hca_encoding.h"

namespace hoshmem::atomics {

constexpr unsigned kWideMax = 256;

// 16, 32, 64, 128 or 256.
constexpr bool wide_size(size_t size) {
  return size >= 16 && size <= kWideMax && (size & (size - 1)) == 0;
}

// Bytes of operands a masked atomic's WQE carries (16-byte units): CS 4 * size, FA 2 * size.
uint32_t hca_wide_operand_bytes(HcaOpcode op, unsigned size);

// A 256-byte masked compare-swap's 1024 bytes of operands do not fit the 63 units a WQE control
// segment counts: the largest masked compare-swap a WQE can carry is 128 bytes.
constexpr unsigned kHcaMaxMaskedCompareSwap = 128;

// Writes the WQE operand bytes of a wide masked atomic from the program's operands (memory
// images of `size` bytes). CS: a = swap, b = compare, c = swap_mask, d = compare_mask;
// FA: a = add, b = boundary (c, d unused).
void hca_wide_operands(HcaOpcode op, unsigned size, const void *a, const void *b, const void *c,
                       const void *d, uint8_t *out);

// The HCA's result bytes (big-endian words) back into the memory image.
void hca_wide_result(const uint8_t *wire, unsigned size, void *out);

// True when the HCA's fetch-add with `boundary` gives the program's result (see above).
bool hca_fetch_add_agrees(const void *boundary, unsigned size);

// The program semantics on the bytes at `mem` (not atomic: callers hold whatever makes it so);
// `old` receives the previous contents. Used by the CPU and UD-target paths and as the reference.
void wide_fetch_add(void *mem, const void *add, const void *boundary, unsigned size, void *old);
void wide_compare_swap(void *mem, const void *compare, const void *compare_mask, const void *swap,
                       const void *swap_mask, unsigned size, void *old);

// A wide masked atomic on an HCA that has masked atomics of r.size (<= kHcaMaxMaskedCompareSwap):
// `post` executes one masked atomic (opcode, operand bytes and their count) and writes the HCA's
// `size` result bytes. Compare-swap and a fetch-add the HCA computes as the program means
// (hca_fetch_add_agrees) are one post; any other fetch-add is a loop of full-width masked
// compare-swaps (read, compute, swap if unchanged), atomic with respect to every HCA atomic.
using WidePost = void (*)(void *ctx, HcaOpcode op, const uint8_t *operands, uint32_t bytes,
                          uint8_t *result);
void hca_wide_execute(const WideRequest &r, WidePost post, void *ctx);

// For SHMEM_INFO: which sizes the job's backend (null: none, one node) executes natively and
// which take the lock fallback (lib/api/amo_masked.cc), one line.
std::string wide_rule(const AtomicBackend *backend);

}  // namespace hoshmem::atomics
