// The store decoder the doorbell fault handler uses to step over a doorbell store
// (src/store_insn.h), on encodings as the GNU assembler emits them, whatever this machine's CPU
// can execute (exec_test executes the forms the CPU has).
#include "test/softhca/src/store_insn.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

struct Case {
  const char* what;
  std::vector<uint8_t> bytes;
  int length, size;
  bool gpr;
  int reg;
};

TEST(StoreInsn, DecodesStoresOfEveryEncoding) {
  const Case cases[] = {
      {"mov %rax,0x20(%rdx)", {0x48, 0x89, 0x42, 0x20}, 4, 8, true, 0},
      {"mov %r9,(%rdi)", {0x4c, 0x89, 0x0f}, 3, 8, true, 9},
      {"mov %ecx,(%rax)", {0x89, 0x08}, 2, 4, true, 1},
      {"mov %cx,(%rax)", {0x66, 0x89, 0x08}, 3, 2, true, 1},
      {"mov %rsi,0x100(%rdi,%rax,8)", {0x48, 0x89, 0xb4, 0xc7, 0x00, 0x01, 0x00, 0x00}, 8, 8, true, 6},
      {"mov %rax,(%rsp)", {0x48, 0x89, 0x04, 0x24}, 4, 8, true, 0},
      {"mov %rax,0x0(,%rcx,1) (SIB without base)", {0x48, 0x89, 0x04, 0x0d, 0, 0, 0, 0}, 8, 8, true, 0},
      {"mov %rbx,0x10(%rip)", {0x48, 0x89, 0x1d, 0x10, 0, 0, 0}, 7, 8, true, 3},
      {"movnti %r8,(%rdx)", {0x4c, 0x0f, 0xc3, 0x02}, 4, 8, true, 8},
      {"movdqa %xmm1,(%rdx)", {0x66, 0x0f, 0x7f, 0x0a}, 4, 16, false, 1},
      {"movdqu %xmm9,0x40(%rdx)", {0xf3, 0x44, 0x0f, 0x7f, 0x4a, 0x40}, 6, 16, false, 9},
      {"movaps %xmm0,(%rdi)", {0x0f, 0x29, 0x07}, 3, 16, false, 0},
      {"movups %xmm3,(%rdi)", {0x0f, 0x11, 0x1f}, 3, 16, false, 3},
      {"movntdq %xmm2,(%rdi)", {0x66, 0x0f, 0xe7, 0x17}, 4, 16, false, 2},
      {"movq %xmm1,(%rdi)", {0x66, 0x0f, 0xd6, 0x0f}, 4, 8, false, 1},
      {"movq %xmm1,(%rdi) (66 REX.W 0F 7E)", {0x66, 0x48, 0x0f, 0x7e, 0x0f}, 5, 8, false, 1},
      {"vmovdqu %ymm2,(%rdi) (VEX2)", {0xc5, 0xfe, 0x7f, 0x17}, 4, 32, false, 2},
      {"vmovdqa %xmm3,(%rdi) (VEX2)", {0xc5, 0xf9, 0x7f, 0x1f}, 4, 16, false, 3},
      {"vmovdqu %ymm12,0x20(%rdi) (VEX2 R)", {0xc5, 0x7e, 0x7f, 0x67, 0x20}, 5, 32, false, 12},
      {"vmovups %ymm0,(%r8) (VEX3)", {0xc4, 0xc1, 0x7c, 0x11, 0x00}, 5, 32, false, 0},
      {"vmovntdq %ymm1,(%rdi)", {0xc5, 0xfd, 0xe7, 0x0f}, 4, 32, false, 1},
      {"vmovdqu64 %zmm16,(%rdi) (EVEX, glibc memcpy)", {0x62, 0xe1, 0xfe, 0x48, 0x7f, 0x07}, 6, 64, false, 16},
      {"vmovdqu64 %zmm1,0x40(%rdi) (EVEX disp8*N)", {0x62, 0xf1, 0xfe, 0x48, 0x7f, 0x4f, 0x01}, 7, 64, false, 1},
      {"vmovdqa64 %ymm17,(%rdi) (EVEX 256)", {0x62, 0xe1, 0xfd, 0x28, 0x7f, 0x0f}, 6, 32, false, 17},
      {"vmovntdq %zmm3,(%rdi)", {0x62, 0xf1, 0x7d, 0x48, 0xe7, 0x1f}, 6, 64, false, 3},
  };
  for (const Case& c : cases) {
    softhca::StoreInsn s;
    ASSERT_TRUE(softhca::decode_store(c.bytes.data(), &s)) << c.what;
    EXPECT_EQ(s.length, c.length) << c.what;
    EXPECT_EQ(s.size, c.size) << c.what;
    EXPECT_EQ(s.gpr, c.gpr) << c.what;
    EXPECT_EQ(s.reg, c.reg) << c.what;
  }
}

TEST(StoreInsn, RejectsWhatIsNotAStoreToMemory) {
  const std::vector<std::vector<uint8_t>> rejects = {
      {0x48, 0x8b, 0x07},              // mov (%rdi),%rax: a load
      {0x48, 0x89, 0xc7},              // mov %rax,%rdi: register to register
      {0x66, 0x0f, 0x6f, 0x07},        // movdqa (%rdi),%xmm0: a load
      {0xc5, 0xfe, 0x6f, 0x07},        // vmovdqu (%rdi),%ymm0: a load
      {0xf0, 0x48, 0x0f, 0xc1, 0x07},  // lock xadd: not a plain store
      {0xf3, 0xa4},                    // rep movsb: a string copy
      {0x48, 0xc7, 0x07, 1, 0, 0, 0},  // movq $1,(%rdi): an immediate (not stepped over)
      {0xc4, 0xe2, 0x7d, 0x7f, 0x07},  // VEX map 0F38: not a move
  };
  for (const auto& b : rejects) {
    softhca::StoreInsn s;
    EXPECT_FALSE(softhca::decode_store(b.data(), &s)) << "byte 0x" << std::hex << int(b[0]);
  }
}

}  // namespace
