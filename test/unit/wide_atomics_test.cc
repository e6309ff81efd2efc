// Masked atomics wider than 8 bytes (lib/atomics/wide.h): the WQE operand bytes, the program
// semantics (one little-endian integer), and where the HCA's reading (the word at the lowest
// address most significant, as test/softhca's ext_atomics_test executes it) agrees with them.
#include "lib/atomics/wide.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace hoshmem::atomics {
namespace {

using Words = std::vector<uint64_t>;

// The HCA's fetch-add on host-order words, w[0] most significant, word by word (SWAR fields).
void hca_fetch_add(Words &w, const Words &add, const Words &b) {
  unsigned carry = 0;
  for (size_t i = w.size(); i-- > 0;) {
    unsigned __int128 low = (unsigned __int128)(w[i] & ~b[i]) + (add[i] & ~b[i]) + carry;
    carry = (b[i] >> 63) ? 0 : unsigned(low >> 64);
    w[i] = uint64_t(low) ^ ((w[i] ^ add[i]) & b[i]);
  }
}

TEST(WideAtomics, Sizes) {
  for (unsigned s : {16u, 32u, 64u, 128u, 256u}) EXPECT_TRUE(wide_size(s)) << s;
  for (unsigned s : {0u, 4u, 8u, 24u, 512u}) EXPECT_FALSE(wide_size(s)) << s;
  EXPECT_EQ(hca_wide_operand_bytes(HcaOpcode::MaskedCompareSwap, 16), 64u);
  EXPECT_EQ(hca_wide_operand_bytes(HcaOpcode::MaskedFetchAdd, 256), 512u);
  // 16 + 16 + 4 * 256 + 16 bytes: more than 63 units of 16.
  EXPECT_GT((16 + 16 + hca_wide_operand_bytes(HcaOpcode::MaskedCompareSwap, 256) + 16) / 16, 63u);
  EXPECT_LE((16 + 16 + hca_wide_operand_bytes(HcaOpcode::MaskedCompareSwap, kHcaMaxMaskedCompareSwap) + 16) / 16, 63u);
}

TEST(WideAtomics, OperandBytesAreBigEndianWordsInMemoryOrder) {
  const uint64_t swap[2] = {0x0102030405060708, 0x1112131415161718},
                 cmp[2] = {0x2122232425262728, 0x3132333435363738},
                 smask[2] = {0x41, 0x51}, cmask[2] = {0x61, 0x71};
  uint8_t out[64];
  hca_wide_operands(HcaOpcode::MaskedCompareSwap, 16, swap, cmp, smask, cmask, out);
  const uint8_t first[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(memcmp(out, first, 8), 0);
  EXPECT_EQ(out[15], 0x18);
  EXPECT_EQ(out[16], 0x21);  // compare after swap
  EXPECT_EQ(out[39], 0x41);  // swap_mask word 0, least significant byte last
  EXPECT_EQ(out[47], 0x51);
  EXPECT_EQ(out[55], 0x61);  // compare_mask
  EXPECT_EQ(out[63], 0x71);
  uint64_t back[2];
  hca_wide_result(out, 16, back);
  EXPECT_EQ(back[0], swap[0]);
  EXPECT_EQ(back[1], swap[1]);
}

TEST(WideAtomics, FetchAddIsOneLittleEndianInteger) {
  uint64_t mem[2] = {~0ull, 5}, add[2] = {1, 0}, none[2] = {0, 0}, old[2];
  wide_fetch_add(mem, add, none, 16, old);
  EXPECT_EQ(mem[0], 0u);
  EXPECT_EQ(mem[1], 6u);  // the carry went to the word at the higher address
  EXPECT_EQ(old[0], ~0ull);
  uint64_t mem2[2] = {~0ull, 5}, words[2] = {1ull << 63, 1ull << 63};
  wide_fetch_add(mem2, add, words, 16, nullptr);
  EXPECT_EQ(mem2[0], 0u);
  EXPECT_EQ(mem2[1], 5u);  // a boundary at bit 63 keeps it in its word
  uint64_t bytes[2] = {0xff, 0}, one[2] = {1, 0}, b8[2] = {0x8080808080808080, 0x8080808080808080};
  wide_fetch_add(bytes, one, b8, 16, nullptr);
  EXPECT_EQ(bytes[0], 0u);  // byte fields: 0xff + 1 wraps within the byte
}

TEST(WideAtomics, CompareSwapMasked) {
  uint64_t mem[4] = {1, 2, 3, 4}, cmp[4] = {1, 2, 3, 0xff4}, cm[4] = {~0ull, ~0ull, ~0ull, 0xf},
           sw[4] = {9, 9, 9, 9}, sm[4] = {0, ~0ull, 0, 0xf0}, old[4];
  wide_compare_swap(mem, cmp, cm, sw, sm, 32, old);
  EXPECT_EQ(mem[0], 1u);
  EXPECT_EQ(mem[1], 9u);
  EXPECT_EQ(mem[3], 4u);  // (4 & ~0xf0) | (9 & 0xf0)
  EXPECT_EQ(old[1], 2u);
  cm[0] = 0x10;
  cmp[0] = 0x10;  // now differs in a compared bit: nothing written, old returned
  wide_compare_swap(mem, cmp, cm, sw, sm, 32, old);
  EXPECT_EQ(mem[1], 9u);
  EXPECT_EQ(old[0], 1u);
}

// The HCA's fetch-add agrees with the program's exactly when no carry crosses a word: then the
// library may use it; compare-swap (bitwise) always agrees.
TEST(WideAtomics, HcaAgreesWhenFieldsStayInWords) {
  std::mt19937_64 g(7);
  for (unsigned size : {16u, 32u, 64u, 128u, 256u}) {
    const size_t n = size / 8;
    int differed = 0;
    for (int round = 0; round < 200; ++round) {
      Words mem(n), add(n), b(n);
      for (size_t i = 0; i < n; ++i) mem[i] = g(), add[i] = g(), b[i] = g();
      const bool in_words = round % 2;
      for (auto &x : b) x = in_words ? x | (1ull << 63) : x & ~(1ull << 63);
      EXPECT_EQ(hca_fetch_add_agrees(b.data(), size), in_words);
      Words cpu = mem, hca = mem;
      wide_fetch_add(cpu.data(), add.data(), b.data(), size, nullptr);
      hca_fetch_add(hca, add, b);
      if (in_words) EXPECT_EQ(cpu, hca) << size;
      else differed += cpu != hca;
    }
    EXPECT_GT(differed, 0) << size;  // without the rule the HCA would give other sums
  }
}

}  // namespace
}  // namespace hoshmem::atomics
