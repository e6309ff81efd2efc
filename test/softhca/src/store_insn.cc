#include "store_insn.h"

#include <ucontext.h>

namespace softhca {

namespace {

// Parses the ModRM memory operand at p (ModRM, SIB, displacement) into s's address fields and
// returns its length; 0 for a register operand. rex_b/rex_x: the base and index extension bits
// (REX, VEX or EVEX); disp8_scale: EVEX's compressed 8-bit displacement unit (1 otherwise).
int memory_operand(const uint8_t* p, int rex_b, int rex_x, int disp8_scale, StoreInsn* s) {
  const uint8_t modrm = p[0], mod = modrm >> 6, rm = modrm & 7;
  if (mod == 3) return 0;
  int n = 1;
  s->base = int8_t(rm | rex_b << 3);
  s->index = -1;
  s->scale = 1;
  s->rip_relative = false;
  bool disp32 = mod == 2;
  if (rm == 4) {  // SIB
    const uint8_t sib = p[1], idx = uint8_t(((sib >> 3) & 7) | rex_x << 3);
    n += 1;
    s->scale = uint8_t(1 << (sib >> 6));
    s->index = idx == 4 ? -1 : int8_t(idx);  // rsp cannot be an index: "none"
    s->base = int8_t((sib & 7) | rex_b << 3);
    if (mod == 0 && (sib & 7) == 5) s->base = -1, disp32 = true;
  } else if (mod == 0 && rm == 5) {
    s->base = -1;
    s->rip_relative = true;
    disp32 = true;
  }
  const uint8_t* d = p + n;
  if (mod == 1) {
    s->disp = int32_t(int8_t(d[0])) * disp8_scale;
    n += 1;
  } else if (disp32) {
    s->disp = int32_t(uint32_t(d[0]) | uint32_t(d[1]) << 8 | uint32_t(d[2]) << 16 | uint32_t(d[3]) << 24);
    n += 4;
  } else {
    s->disp = 0;
  }
  return n;
}

// Map-1 (0F xx) vector stores: the bytes stored for a given mandatory prefix and vector length.
// vlen: 16, 32 or 64 bytes (VEX.L / EVEX.L'L), 16 for legacy SSE.
int vector_store_size(uint8_t op, uint8_t pp, int vlen) {
  switch (op) {
    case 0x11:  // movups/movupd (vlen); movss (F3) 4, movsd (F2) 8
      return pp == 2 ? 4 : pp == 3 ? 8 : vlen;
    case 0x29:  // movaps/movapd
    case 0x2b:  // movntps/movntpd
    case 0xe7:  // movntdq (66)
      return vlen;
    case 0x7f:  // movdqa (66) / movdqu (F3)
      return pp == 1 || pp == 2 ? vlen : 0;
    case 0xd6:  // movq xmm -> m64 (66)
      return pp == 1 ? 8 : 0;
    case 0x13:  // movlps/movlpd
    case 0x17:  // movhps/movhpd
      return 8;
    default: return 0;
  }
}

}  // namespace

bool decode_store(const uint8_t* ip, StoreInsn* out) {
  const uint8_t* p = ip;
  uint8_t pp = 0;  // mandatory prefix: 1 = 66, 2 = F3, 3 = F2
  bool opsize16 = false, addressable = true;
  for (int i = 0; i < 4; ++i, ++p) {
    const uint8_t b = *p;
    if (b == 0x66) { pp = 1; opsize16 = true; }
    else if (b == 0xf3) pp = 2;
    else if (b == 0xf2) pp = 3;
    else if (b == 0x2e || b == 0x3e || b == 0x26 || b == 0x36) {}  // ignored in 64-bit mode
    else if (b == 0x64 || b == 0x65 || b == 0x67) addressable = false;  // fs/gs base, 32-bit address
    else break;
  }
  StoreInsn s;
  if (p[0] == 0xc5 || p[0] == 0xc4 || p[0] == 0x62) {  // VEX / EVEX: map 0F vector stores
    uint8_t map, vpp, op;
    int vlen, rbit, hdr, bbit = 0, xbit = 0;  // B and X are stored inverted in VEX/EVEX
    const bool evex = p[0] == 0x62;
    if (p[0] == 0xc5) {
      map = 1, vpp = p[1] & 3, vlen = (p[1] & 4) ? 32 : 16, rbit = !(p[1] & 0x80), hdr = 2;
    } else if (p[0] == 0xc4) {
      map = p[1] & 0x1f, vpp = p[2] & 3, vlen = (p[2] & 4) ? 32 : 16, rbit = !(p[1] & 0x80), hdr = 3;
      bbit = !(p[1] & 0x20), xbit = !(p[1] & 0x40);
    } else {
      map = p[1] & 7, vpp = p[2] & 3, rbit = (p[1] & 0x80 ? 0 : 1) | (p[1] & 0x10 ? 0 : 2), hdr = 4;
      bbit = !(p[1] & 0x20), xbit = !(p[1] & 0x40);
      const int ll = (p[3] >> 5) & 3;
      vlen = ll == 0 ? 16 : ll == 1 ? 32 : ll == 2 ? 64 : 0;
    }
    if (map != 1 || !vlen) return false;
    op = p[hdr];
    const int size = vector_store_size(op, vpp, vlen);
    // EVEX scales an 8-bit displacement by the memory operand's size (disp8*N): for these moves,
    // the bytes stored.
    const int m = memory_operand(p + hdr + 1, bbit, xbit, evex ? size : 1, &s);
    if (!size || !m) return false;
    s.length = uint8_t(p - ip + hdr + 1 + m);
    s.size = uint8_t(size);
    s.reg = uint8_t(((p[hdr + 1] >> 3) & 7) | rbit << 3);
    s.addressable = addressable;
    *out = s;
    return true;
  }
  uint8_t rex = 0;
  if ((p[0] & 0xf0) == 0x40) rex = *p++;
  const int rex_b = rex & 1, rex_x = (rex >> 1) & 1;
  if (p[0] == 0x88 || p[0] == 0x89) {  // mov r8 / r16 / r32 / r64 -> m
    const int m = memory_operand(p + 1, rex_b, rex_x, 1, &s);
    if (!m) return false;
    s.length = uint8_t(p - ip + 1 + m);
    s.size = uint8_t(p[0] == 0x88 ? 1 : (rex & 8) ? 8 : opsize16 ? 2 : 4);
    s.gpr = true;
    s.reg = uint8_t(((p[1] >> 3) & 7) | ((rex & 4) ? 8 : 0));
    s.addressable = addressable;
    *out = s;
    return true;
  }
  if (p[0] != 0x0f) return false;
  const uint8_t op = p[1];
  const int m = memory_operand(p + 2, rex_b, rex_x, 1, &s);
  if (!m) return false;
  s.reg = uint8_t(((p[2] >> 3) & 7) | ((rex & 4) ? 8 : 0));
  if (op == 0xc3) {  // movnti r32/r64 -> m
    s.size = (rex & 8) ? 8 : 4;
    s.gpr = true;
  } else if (op == 0x7e && pp == 1) {  // movd/movq xmm -> r/m
    s.size = (rex & 8) ? 8 : 4;
  } else {
    s.size = uint8_t(vector_store_size(op, pp, 16));
    if (!s.size) return false;
  }
  s.length = uint8_t(p - ip + 2 + m);
  s.addressable = addressable;
  *out = s;
  return true;
}

uint64_t gpr_value(const void* ucontext, int reg) {
  static const int kGreg[16] = {REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP,
                                REG_RSI, REG_RDI, REG_R8,  REG_R9,  REG_R10, REG_R11,
                                REG_R12, REG_R13, REG_R14, REG_R15};
  const auto* uc = static_cast<const ucontext_t*>(ucontext);
  return uint64_t(uc->uc_mcontext.gregs[kGreg[reg & 15]]);
}

uint64_t store_address(const StoreInsn& s, const void* ucontext, uint64_t ip) {
  uint64_t a = uint64_t(int64_t(s.disp));
  if (s.rip_relative) a += ip + s.length;
  if (s.base >= 0) a += gpr_value(ucontext, s.base);
  if (s.index >= 0) a += gpr_value(ucontext, s.index) * s.scale;
  return a;
}

}  // namespace softhca
