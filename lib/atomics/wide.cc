#include "lib/atomics/wide.h"

#include <cstring>

namespace hoshmem::atomics {

uint32_t hca_wide_operand_bytes(HcaOpcode op, unsigned size) {
  const uint32_t n = op == HcaOpcode::MaskedCompareSwap ? 4 * size : 2 * size;
  return (n + 15) & ~15u;
}

namespace {
void be_words(const void *src, unsigned size, uint8_t *dst) {
  for (unsigned i = 0; i < size; i += 8) {
    uint64_t w;
    memcpy(&w, static_cast<const uint8_t *>(src) + i, 8);
    w = __builtin_bswap64(w);
    memcpy(dst + i, &w, 8);
  }
}
}  // namespace

void hca_wide_operands(HcaOpcode op, unsigned size, const void *a, const void *b, const void *c,
                       const void *d, uint8_t *out) {
  memset(out, 0, hca_wide_operand_bytes(op, size));
  be_words(a, size, out);
  be_words(b, size, out + size);
  if (op == HcaOpcode::MaskedCompareSwap) {
    be_words(c, size, out + 2 * size);
    be_words(d, size, out + 3 * size);
  }
}

void hca_wide_result(const uint8_t *wire, unsigned size, void *out) {
  be_words(wire, size, static_cast<uint8_t *>(out));  // the swap is its own inverse
}

bool hca_fetch_add_agrees(const void *boundary, unsigned size) {
  const auto *b = static_cast<const uint8_t *>(boundary);
  for (unsigned i = 7; i < size; i += 8)  // bit 63 of each little-endian word: its last byte's top
    if (!(b[i] & 0x80)) return false;
  return true;
}

void wide_fetch_add(void *mem, const void *add, const void *boundary, unsigned size, void *old) {
  auto *m = static_cast<uint8_t *>(mem);
  const auto *a = static_cast<const uint8_t *>(add);
  const auto *b = static_cast<const uint8_t *>(boundary);
  if (old) memcpy(old, mem, size);
  unsigned carry = 0;
  for (unsigned i = 0; i < size; ++i) {  // little-endian: byte 0 least significant
    for (unsigned bit = 0; bit < 8; ++bit) {
      const unsigned x = (m[i] >> bit) & 1, y = (a[i] >> bit) & 1;
      m[i] = static_cast<uint8_t>((m[i] & ~(1u << bit)) | ((x ^ y ^ carry) << bit));
      carry = (x & y) | (carry & (x ^ y));
      if ((b[i] >> bit) & 1) carry = 0;  // a field ends at this bit
    }
  }
}

void wide_compare_swap(void *mem, const void *compare, const void *compare_mask, const void *swap,
                       const void *swap_mask, unsigned size, void *old) {
  auto *m = static_cast<uint8_t *>(mem);
  const auto *c = static_cast<const uint8_t *>(compare), *cm = static_cast<const uint8_t *>(compare_mask),
             *s = static_cast<const uint8_t *>(swap), *sm = static_cast<const uint8_t *>(swap_mask);
  if (old) memcpy(old, mem, size);
  for (unsigned i = 0; i < size; ++i)
    if ((m[i] ^ c[i]) & cm[i]) return;
  for (unsigned i = 0; i < size; ++i) m[i] = static_cast<uint8_t>((m[i] & ~sm[i]) | (s[i] & sm[i]));
}

std::string wide_rule(const AtomicBackend *backend) {
  std::string hca, lock;
  for (unsigned size = 16; size <= kWideMax; size *= 2)
    ((backend && backend->wide_native(size)) ? hca : lock) +=
        (size == 16 ? "" : "/") + std::to_string(size);
  std::string s;
  if (!hca.empty()) s = (hca[0] == '/' ? hca.substr(1) : hca) + " bytes " + backend->wide_path();
  if (!lock.empty()) {
    if (lock[0] == '/') lock = lock.substr(1);
    s += (s.empty() ? "" : "; ") + lock +
         " bytes under the target's stripe locks (get, compute, put; atomic with respect to "
         "other wide masked atomics only)";
  }
  return s;
}

void hca_wide_execute(const WideRequest &r, WidePost post, void *ctx) {
  const unsigned n = r.size;
  alignas(16) uint8_t ops[4 * kWideMax], wire[kWideMax], old[kWideMax];
  if (r.op == AmoOp::MaskedCompareSwap) {
    hca_wide_operands(HcaOpcode::MaskedCompareSwap, n, r.a, r.b, r.c, r.d, ops);
    post(ctx, HcaOpcode::MaskedCompareSwap, ops, hca_wide_operand_bytes(HcaOpcode::MaskedCompareSwap, n), wire);
    if (r.fetch_out) hca_wide_result(wire, n, r.fetch_out);
    return;
  }
  if (hca_fetch_add_agrees(r.b, n)) {
    hca_wide_operands(HcaOpcode::MaskedFetchAdd, n, r.a, r.b, nullptr, nullptr, ops);
    post(ctx, HcaOpcode::MaskedFetchAdd, ops, hca_wide_operand_bytes(HcaOpcode::MaskedFetchAdd, n), wire);
    if (r.fetch_out) hca_wide_result(wire, n, r.fetch_out);
    return;
  }
  // Carries cross 8-byte words: the HCA would carry them the other way. Read (a compare-swap
  // that compares and swaps nothing), compute here, swap the whole operand if it is unchanged.
  uint8_t zero[kWideMax] = {}, ones[kWideMax], next[kWideMax];
  memset(ones, 0xff, n);
  hca_wide_operands(HcaOpcode::MaskedCompareSwap, n, zero, zero, zero, zero, ops);
  post(ctx, HcaOpcode::MaskedCompareSwap, ops, hca_wide_operand_bytes(HcaOpcode::MaskedCompareSwap, n), wire);
  hca_wide_result(wire, n, old);
  for (;;) {
    memcpy(next, old, n);
    wide_fetch_add(next, r.a, r.b, n, nullptr);
    hca_wide_operands(HcaOpcode::MaskedCompareSwap, n, next, old, ones, ones, ops);
    post(ctx, HcaOpcode::MaskedCompareSwap, ops, hca_wide_operand_bytes(HcaOpcode::MaskedCompareSwap, n), wire);
    uint8_t seen[kWideMax];
    hca_wide_result(wire, n, seen);
    if (memcmp(seen, old, n) == 0) break;
    memcpy(old, seen, n);
  }
  if (r.fetch_out) memcpy(r.fetch_out, old, n);
}

}  // namespace hoshmem::atomics
