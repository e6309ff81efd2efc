// The AMO -> mlx5 atomic table (docs/DESIGN.md, "Facts the hardware paths rest on"), checked field by field,
// and checked end to end: an HCA executing the encoding must leave the same word and return the
// same old value as a CPU atomic doing the AMO.
#include "lib/atomics/hca_encoding.h"

#include <gtest/gtest.h>

#include <random>

#include "lib/atomics/cpu_atomics.h"

namespace hoshmem::atomics {
namespace {

TEST(HcaEncoding, Add64IsStandardFetchAdd) {
  HcaAtomic a = encode_for_hca(AmoOp::FetchAdd, 8, 5, 0);
  EXPECT_EQ(a.opcode, HcaOpcode::FetchAdd);
  EXPECT_EQ(static_cast<int>(a.opcode), 0x12);
  EXPECT_EQ(a.swap_add, 5u);
  EXPECT_EQ(hca_opcode_modifier(a), 0);
}

TEST(HcaEncoding, Add32IsMaskedFetchAddWithZeroBoundary) {
  HcaAtomic a = encode_for_hca(AmoOp::FetchAdd, 4, 7, 0);
  EXPECT_EQ(static_cast<int>(a.opcode), 0x15);
  EXPECT_EQ(a.size, 4);
  EXPECT_EQ(a.swap_add, 7u);
  EXPECT_EQ(a.field_boundary, 0u);
  EXPECT_EQ(hca_opcode_modifier(a), 0x8);  // 0x8 | (log2(4) - 2)
}

TEST(HcaEncoding, CompareSwap) {
  HcaAtomic a64 = encode_for_hca(AmoOp::CompareSwap, 8, 9, 3);
  EXPECT_EQ(static_cast<int>(a64.opcode), 0x11);
  EXPECT_EQ(a64.swap_add, 9u);
  EXPECT_EQ(a64.compare, 3u);
  HcaAtomic a32 = encode_for_hca(AmoOp::CompareSwap, 4, 9, 3);
  EXPECT_EQ(static_cast<int>(a32.opcode), 0x14);
  EXPECT_EQ(a32.swap_mask, 0xffffffffu);
  EXPECT_EQ(a32.compare_mask, 0xffffffffu);
}

TEST(HcaEncoding, SwapAndSetAreMaskedCompareSwapWithoutCompare) {
  for (AmoOp op : {AmoOp::Swap, AmoOp::Set}) {
    HcaAtomic a = encode_for_hca(op, 8, 0x1234, 0);
    EXPECT_EQ(static_cast<int>(a.opcode), 0x14);
    EXPECT_EQ(a.compare_mask, 0u);
    EXPECT_EQ(a.swap_mask, ~0ull);
    EXPECT_EQ(a.swap_add, 0x1234u);
    EXPECT_EQ(hca_opcode_modifier(a), 0x9);  // 0x8 | (log2(8) - 2)
  }
}

TEST(HcaEncoding, FetchIsAddOfZero) {
  HcaAtomic a = encode_for_hca(AmoOp::Fetch, 8, 0, 0);
  EXPECT_EQ(static_cast<int>(a.opcode), 0x12);
  EXPECT_EQ(a.swap_add, 0u);
}

TEST(HcaEncoding, BitwiseOps) {
  const uint64_t v = 0x00ff00ff12345678ull;
  HcaAtomic a = encode_for_hca(AmoOp::FetchAnd, 8, v, 0);
  EXPECT_EQ(static_cast<int>(a.opcode), 0x14);
  EXPECT_EQ(a.compare_mask, 0u);
  EXPECT_EQ(a.swap_mask, ~v);
  EXPECT_EQ(a.swap_add, v);
  HcaAtomic o = encode_for_hca(AmoOp::FetchOr, 8, v, 0);
  EXPECT_EQ(o.swap_mask, v);
  EXPECT_EQ(o.swap_add, v);
  HcaAtomic x = encode_for_hca(AmoOp::FetchXor, 4, 0x12345678, 0);
  EXPECT_EQ(static_cast<int>(x.opcode), 0x15);
  EXPECT_EQ(x.field_boundary, 0xffffffffu);
  EXPECT_EQ(x.swap_add, 0x12345678u);
}

// Every op, both sizes, random words: HCA model of the encoding == CPU atomic.
// The masked operations programs call (shmemx_atomic_fetch_add_fields/_compare_swap_masked): the
// encoding carries the masks unchanged, and the CPU path computes what an HCA computes, from
// values written by hand (not from hca_apply, which both share).
TEST(HcaEncoding, ProgramMaskedOpsCarryTheirMasks) {
  HcaAtomic fa = encode_for_hca(AmoOp::MaskedFetchAdd, 8, 0x0001000100010001ull, 0,
                                0x8000800080008000ull);
  EXPECT_EQ(static_cast<int>(fa.opcode), 0x15);
  EXPECT_EQ(fa.swap_add, 0x0001000100010001ull);
  EXPECT_EQ(fa.field_boundary, 0x8000800080008000ull);
  EXPECT_EQ(hca_opcode_modifier(fa), 0x9);
  HcaAtomic cs = encode_for_hca(AmoOp::MaskedCompareSwap, 4, 0xaabbccdd, 0x11223344, 0xff00ff00,
                                0x0000ffff);
  EXPECT_EQ(static_cast<int>(cs.opcode), 0x14);
  EXPECT_EQ(cs.swap_add, 0xaabbccddu);
  EXPECT_EQ(cs.compare, 0x11223344u);
  EXPECT_EQ(cs.swap_mask, 0xff00ff00u);
  EXPECT_EQ(cs.compare_mask, 0x0000ffffu);
  EXPECT_EQ(hca_opcode_modifier(cs), 0x8);
}

TEST(HcaEncoding, ProgramMaskedOpsOnTheCpu) {
  // fields of 16 bits, each at 0xfff0 + its index: adding 0x20 to each wraps each on its own
  uint64_t w = 0xfff3fff2fff1fff0ull;
  EXPECT_EQ(cpu::execute(AmoOp::MaskedFetchAdd, &w, 8, 0x0020002000200020ull, 0,
                         0x8000800080008000ull),
            0xfff3fff2fff1fff0ull);
  EXPECT_EQ(w, 0x0013001200110010ull);
  // no boundary: one 64-bit add
  uint64_t one = 0xffffull;
  cpu::execute(AmoOp::MaskedFetchAdd, &one, 8, 1, 0, 0);
  EXPECT_EQ(one, 0x10000ull);
  // compare on the low half only; swap the high byte of each half
  uint32_t v = 0x12345678;
  EXPECT_EQ(cpu::execute(AmoOp::MaskedCompareSwap, &v, 4, 0xaabbccdd, 0x99995678, 0xff00ff00,
                         0x0000ffff),
            0x12345678u);
  EXPECT_EQ(v, 0xaa34cc78u);
  // the compared bits differ: no write, the old value back
  EXPECT_EQ(cpu::execute(AmoOp::MaskedCompareSwap, &v, 4, 0, 0x0000ffff, ~0ull, 0x0000ffff),
            0xaa34cc78u);
  EXPECT_EQ(v, 0xaa34cc78u);
}

TEST(HcaEncoding, MatchesCpuSemantics) {
  std::mt19937_64 rng(42);
  const AmoOp ops[] = {AmoOp::Fetch,    AmoOp::Set,      AmoOp::Swap,    AmoOp::CompareSwap,
                       AmoOp::FetchAdd, AmoOp::FetchAnd, AmoOp::FetchOr, AmoOp::FetchXor};
  for (unsigned size : {4u, 8u}) {
    const uint64_t ones = size == 4 ? 0xffffffffull : ~0ull;
    for (AmoOp op : ops) {
      for (int i = 0; i < 2000; ++i) {
        uint64_t word = rng() & ones, operand = rng() & ones;
        uint64_t compare = (i % 2) ? word : rng() & ones;  // half the CAS attempts match
        if (i % 7 == 0) word = ones;                       // carries across the whole word
        alignas(8) uint64_t hca_word = word, cpu_word = word;
        uint64_t hca_old = hca_apply(encode_for_hca(op, size, operand, compare), &hca_word);
        uint64_t cpu_old = cpu::execute(op, &cpu_word, size, operand, compare);
        if (op == AmoOp::Set) cpu_old = word;  // set returns nothing; the HCA reports the old
        ASSERT_EQ(hca_word & ones, cpu_word & ones)
            << amo_op_name(op) << " size " << size << " word " << word << " operand " << operand;
        ASSERT_EQ(hca_old & ones, cpu_old & ones) << amo_op_name(op) << " size " << size;
      }
    }
  }
}

// 32-bit ops touch only their half of an 8-byte word.
TEST(HcaEncoding, ThirtyTwoBitOpsLeaveTheOtherHalfAlone) {
  alignas(8) uint32_t halves[2] = {0xffffffffu, 0xdeadbeefu};
  hca_apply(encode_for_hca(AmoOp::FetchAdd, 4, 1, 0), &halves[0]);
  EXPECT_EQ(halves[0], 0u);
  EXPECT_EQ(halves[1], 0xdeadbeefu);
}

}  // namespace
}  // namespace hoshmem::atomics
