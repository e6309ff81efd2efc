// The store decoder the doorbell fault handler uses to step over a doorbell store
// (src/store_insn.h), on encodings as the GNU assembler emits them, whatever this machine's CPU
// can execute (exec_test executes the forms the CPU has).
#include "test/softhca/src/store_insn.h"

#include <gtest/gtest.h>
#include <ucontext.h>

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

// Where each store writes, from registers set in a signal context as the fault handler sees them
// (encodings as GNU as emits them for the AT&T text shown).
TEST(StoreInsn, ComputesTheAddressStoredTo) {
  ucontext_t uc{};
  const int kRegs[16] = {REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP, REG_RSI, REG_RDI,
                         REG_R8,  REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15};
  for (int r = 0; r < 16; ++r) uc.uc_mcontext.gregs[kRegs[r]] = greg_t(0x100000 * (r + 1));
  auto reg = [](int r) { return uint64_t(0x100000) * uint64_t(r + 1); };
  const uint64_t ip = 0x7000000;
  struct AddrCase {
    const char* what;
    std::vector<uint8_t> bytes;
    uint64_t address;
  };
  const AddrCase cases[] = {
      {"vmovdqu64 %zmm16,(%rdi)", {0x62, 0xe1, 0xfe, 0x48, 0x7f, 0x07}, reg(7)},
      {"vmovdqu64 %zmm17,-0x40(%rdi,%rdx,1)", {0x62, 0xe1, 0xfe, 0x48, 0x7f, 0x4c, 0x17, 0xff},
       reg(7) + reg(2) - 0x40},
      {"mov %rax,0x10(%rax,%rcx,8)", {0x48, 0x89, 0x44, 0xc8, 0x10}, reg(0) + reg(1) * 8 + 0x10},
      {"mov %eax,0x12345678(%rbx)", {0x89, 0x83, 0x78, 0x56, 0x34, 0x12}, reg(3) + 0x12345678},
      {"mov %rcx,0x100(%rip)", {0x48, 0x89, 0x0d, 0x00, 0x01, 0x00, 0x00}, ip + 7 + 0x100},
      {"mov %rdx,(%r12)", {0x49, 0x89, 0x14, 0x24}, reg(12)},
      {"mov %rdx,0x8(%r13)", {0x49, 0x89, 0x55, 0x08}, reg(13) + 8},
      {"mov %rsi,0x20(,%r9,4)", {0x4a, 0x89, 0x34, 0x8d, 0x20, 0x00, 0x00, 0x00}, reg(9) * 4 + 0x20},
      {"vmovdqu %ymm1,0x20(%r8)", {0xc4, 0xc1, 0x7e, 0x7f, 0x48, 0x20}, reg(8) + 0x20},
      {"vmovdqu %xmm2,(%rsi,%r10,2)", {0xc4, 0xa1, 0x7a, 0x7f, 0x14, 0x56}, reg(6) + reg(10) * 2},
      {"movups %xmm3,-0x8(%r15,%r14,1)", {0x43, 0x0f, 0x11, 0x5c, 0x37, 0xf8}, reg(15) + reg(14) - 8},
      {"movnti %rax,0x40(%rdi)", {0x48, 0x0f, 0xc3, 0x47, 0x40}, reg(7) + 0x40},
      {"movq %xmm0,0x18(%rsp)", {0x66, 0x0f, 0xd6, 0x44, 0x24, 0x18}, reg(4) + 0x18},
      {"vmovdqu64 %zmm1,0x80(%rax)", {0x62, 0xf1, 0xfe, 0x48, 0x7f, 0x48, 0x02}, reg(0) + 0x80},
      {"vmovdqu64 %zmm1,0x1000(%rax)", {0x62, 0xf1, 0xfe, 0x48, 0x7f, 0x48, 0x40}, reg(0) + 0x1000},
  };
  for (const AddrCase& c : cases) {
    softhca::StoreInsn s;
    ASSERT_TRUE(softhca::decode_store(c.bytes.data(), &s)) << c.what;
    EXPECT_EQ(s.length, c.bytes.size()) << c.what;
    ASSERT_TRUE(s.addressable) << c.what;
    EXPECT_EQ(softhca::store_address(s, &uc, ip), c.address) << c.what;
  }
  softhca::StoreInsn s;  // a segment base the context does not hold: no address
  const uint8_t fs_store[] = {0x64, 0x88, 0x40, 0x10};  // mov %al,%fs:0x10(%rax)
  ASSERT_TRUE(softhca::decode_store(fs_store, &s));
  EXPECT_FALSE(s.addressable);
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
