// The x86-64 store instructions programs use to ring doorbells, decoded far enough to step over
// one without executing it: a store to a write-protected doorbell page can then be handled inside
// its fault (one signal) instead of by unprotecting the page and single-stepping (two signals and
// two mprotect calls, each a TLB shootdown).
#pragma once

#include <cstdint>

namespace softhca {

struct StoreInsn {
  uint8_t length = 0;  // bytes of the instruction
  uint8_t size = 0;    // bytes stored: 1..64
  bool gpr = false;    // the source is a general-purpose register (reg below), else a vector one
  uint8_t reg = 0;     // source register number (0 = rax/xmm0 ...)
  // The destination: base + index * scale + disp, plus the next instruction's address when
  // rip_relative; base/index -1 when absent. addressable is false where the address also needs
  // a segment base (fs/gs) or is 32-bit (address-size prefix): store_address does not know it.
  int8_t base = -1, index = -1;
  uint8_t scale = 1;
  int32_t disp = 0;
  bool rip_relative = false;
  bool addressable = false;
};

// Decodes the instruction at ip if it is a plain store of a register to memory (mov, movnti, the
// SSE/AVX/AVX-512 vector moves, legacy, VEX or EVEX encoded); false for anything else.
bool decode_store(const uint8_t* ip, StoreInsn* out);

// The value of general-purpose register `reg` (0..15 as encoded) in a signal handler's context.
uint64_t gpr_value(const void* ucontext, int reg);

// Where the store decoded at `ip` writes, with the registers of a signal handler's context
// (s.addressable must be true).
uint64_t store_address(const StoreInsn& s, const void* ucontext, uint64_t ip);

}  // namespace softhca
