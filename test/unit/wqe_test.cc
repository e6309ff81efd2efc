// Every WQE the RC transport builds (lib/transport/ib/wqe.h), bit for bit against a table written
// by hand from the mlx5 WQE format: control segment (opcode, opcode modifier, producer index, QP
// number, size in 16-byte units, flags), remote-address segment, atomic segments (standard and
// masked, 4 and 8 bytes), data and inline segments, all big-endian; WQEs that wrap at the end of
// the ring; and nothing written outside the WQE. DC WQEs: the same with the address vector
// (compact 16 or whole 48 bytes) after the control segment, counted in its size; the NOP that asks
// a queue for a completion.
#include "lib/transport/ib/wqe.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace hoshmem::ib {
namespace {

using atomics::AmoOp;

constexpr uint32_t kQpn = 0x123456;
constexpr uint64_t kRemote = 0x0000500000001000ull;
constexpr uint32_t kRkey = 0xa1b2c3d4;
constexpr uint64_t kLocal = 0x00007f0000002000ull;
constexpr uint32_t kLkey = 0x0badcafe;

// Bytes from hex text; spaces and '|' are only for reading.
std::vector<uint8_t> hex(const std::string &text) {
  std::vector<uint8_t> out;
  std::string digits;
  for (char c : text)
    if (isxdigit(static_cast<unsigned char>(c))) digits += c;
  for (size_t i = 0; i + 1 < digits.size(); i += 2)
    out.push_back(static_cast<uint8_t>(std::stoul(digits.substr(i, 2), nullptr, 16)));
  return out;
}

// Control segment: opmod | pi (2) | opcode, qpn (3) | ds, signature, 2 reserved, fm_ce_se, imm.
std::string ctrl(uint8_t opmod, uint16_t pi, uint8_t opcode, uint8_t ds, uint8_t fm_ce_se) {
  char buf[80];
  snprintf(buf, sizeof buf, "%02x %04x %02x | %06x %02x | 00 0000 %02x | 00000000", opmod, pi,
           opcode, kQpn, ds, fm_ce_se);
  return buf;
}
const std::string kRaddr = "0000500000001000 a1b2c3d4 00000000";
std::string data_seg(uint32_t bytes) {
  char buf[64];
  snprintf(buf, sizeof buf, "%08x 0badcafe 00007f0000002000", bytes);
  return buf;
}

// A ring of 4 BBs filled with 0xcc; the WQE is written at producer index `pi`.
struct Ring {
  alignas(64) uint8_t mem[4 * 64];
  SqRing sq;
  explicit Ring(uint16_t pi) {
    memset(mem, 0xcc, sizeof mem);
    sq.buf = mem;
    sq.bb_count = 4;
    sq.qpn = kQpn;
    sq.pi = pi;
  }
  // The WQE's bytes in order, following the wrap; checks that every other byte is untouched.
  void expect(const std::vector<uint8_t> &want, unsigned bbs, const char *what) const {
    ASSERT_EQ(bbs, (want.size() + 63) / 64) << what << ": size in BBs";
    std::vector<bool> in_wqe(sizeof mem, false);
    for (size_t i = 0; i < want.size(); ++i) {
      const size_t at = (size_t{sq.pi} * 64 + i) % sizeof mem;
      in_wqe[at] = true;
      ASSERT_EQ(mem[at], want[i]) << what << ": byte " << i << " of the WQE (segment " << i / 16
                                  << ")";
    }
    for (size_t i = 0; i < sizeof mem; ++i) {
      if (!in_wqe[i]) {
        ASSERT_EQ(mem[i], 0xcc) << what << ": wrote ring byte " << i;
      }
    }
  }
};

struct AmoRow {
  AmoOp op;
  unsigned size;
  uint8_t opcode, opmod, ds;
  const char *atomic_segments;  // after ctrl and raddr, before the data segment
};

// operand 0x1122334455667788 (4 bytes: 0x55667788), compare 0x0102030405060708 (0x05060708).
const AmoRow kAmoTable[] = {
    {AmoOp::Fetch, 8, 0x12, 0x00, 4, "0000000000000000 0000000000000000"},
    {AmoOp::Fetch, 4, 0x15, 0x08, 4, "00000000 00000000 00000000 00000000"},
    {AmoOp::Set, 8, 0x14, 0x09, 5,
     "1122334455667788 0000000000000000 | ffffffffffffffff 0000000000000000"},
    {AmoOp::Set, 4, 0x14, 0x08, 4, "55667788 00000000 ffffffff 00000000"},
    {AmoOp::Swap, 8, 0x14, 0x09, 5,
     "1122334455667788 0000000000000000 | ffffffffffffffff 0000000000000000"},
    {AmoOp::Swap, 4, 0x14, 0x08, 4, "55667788 00000000 ffffffff 00000000"},
    {AmoOp::CompareSwap, 8, 0x11, 0x00, 4, "1122334455667788 0102030405060708"},
    {AmoOp::CompareSwap, 4, 0x14, 0x08, 4, "55667788 05060708 ffffffff ffffffff"},
    {AmoOp::FetchAdd, 8, 0x12, 0x00, 4, "1122334455667788 0000000000000000"},
    {AmoOp::FetchAdd, 4, 0x15, 0x08, 4, "55667788 00000000 00000000 00000000"},
    {AmoOp::FetchAnd, 8, 0x14, 0x09, 5,
     "1122334455667788 0000000000000000 | eeddccbbaa998877 0000000000000000"},
    {AmoOp::FetchAnd, 4, 0x14, 0x08, 4, "55667788 00000000 aa998877 00000000"},
    {AmoOp::FetchOr, 8, 0x14, 0x09, 5,
     "1122334455667788 0000000000000000 | 1122334455667788 0000000000000000"},
    {AmoOp::FetchOr, 4, 0x14, 0x08, 4, "55667788 00000000 55667788 00000000"},
    {AmoOp::FetchXor, 8, 0x15, 0x09, 4, "1122334455667788 ffffffffffffffff"},
    {AmoOp::FetchXor, 4, 0x15, 0x08, 4, "55667788 ffffffff 00000000 00000000"},
};

TEST(Wqe, EveryAtomicBitForBit) {
  for (const AmoRow &row : kAmoTable) {
    // at the ring's start, and in the last BB so that the rest wraps to the start
    for (uint16_t pi : {uint16_t{0}, uint16_t{7}}) {
      for (int signaled = 0; signaled < 2; ++signaled) {
        Ring ring(pi);
        const atomics::HcaAtomic a =
            atomics::encode_for_hca(row.op, row.size, 0x1122334455667788ull, 0x0102030405060708ull);
        const unsigned bbs = write_atomic(ring.sq, a, {kLocal, kLkey}, {kRemote, kRkey},
                                          {signaled != 0, false});
        const std::string want = ctrl(row.opmod, pi, row.opcode, row.ds, signaled ? 0x08 : 0) +
                                 kRaddr + row.atomic_segments + data_seg(row.size);
        const std::string what = std::string(atomics::amo_op_name(row.op)) + "/" +
                                 std::to_string(row.size) + " at pi " + std::to_string(pi);
        ring.expect(hex(want), bbs, what.c_str());
      }
    }
  }
}

// The non-fetching add's template: the table's 8-byte fetch-add row, bit for bit, at ring
// positions up to past the 16-bit index's low byte, signaled or not, written over a ring that
// held other bytes; what write() returns is the WQE's first 8 bytes (the doorbell's).
TEST(Wqe, FetchAddTemplateMatchesTable) {
  FetchAddTemplate t;
  t.init(kQpn, {kLocal, kLkey});
  for (uint16_t pi : {uint16_t{0}, uint16_t{3}, uint16_t{7}, uint16_t{0x1234}, uint16_t{0xffff}}) {
    for (bool signaled : {false, true}) {
      Ring ring(pi);
      void *wqe = ring.sq.segment(0);
      const uint64_t first8 = t.write(wqe, pi, 0x1122334455667788ull, {kRemote, kRkey});
      if (signaled) FetchAddTemplate::set_signaled(wqe);
      uint64_t written;
      memcpy(&written, wqe, sizeof written);
      EXPECT_EQ(first8, written) << "pi " << pi;
      const std::string want = ctrl(0x00, pi, 0x12, 4, signaled ? 0x08 : 0) + kRaddr +
                               "1122334455667788 0000000000000000" + data_seg(8);
      ring.expect(hex(want), 1, ("fetch-add template at pi " + std::to_string(pi)).c_str());
    }
  }
}

TEST(Wqe, FenceFlag) {
  Ring ring(1);
  const atomics::HcaAtomic a = atomics::encode_for_hca(AmoOp::FetchAdd, 8, 1, 0);
  const unsigned bbs = write_atomic(ring.sq, a, {kLocal, kLkey}, {kRemote, kRkey}, {true, true});
  ring.expect(hex(ctrl(0, 1, 0x12, 4, 0x88) + kRaddr + "0000000000000001 0000000000000000" +
                  data_seg(8)),
              bbs, "fetch-add with fence and completion");
}

TEST(Wqe, RdmaWriteAndRead) {
  {
    Ring ring(2);
    const unsigned bbs = write_rdma_write(ring.sq, {kLocal, kLkey}, 4096, {kRemote, kRkey}, {});
    ring.expect(hex(ctrl(0, 2, 0x08, 3, 0) + kRaddr + data_seg(4096)), bbs, "RDMA write");
  }
  {
    Ring ring(0x1234);  // a producer index past the ring size: BB 0x1234 % 4, index as given
    const unsigned bbs = write_rdma_write(ring.sq, {kLocal, kLkey}, 0, {kRemote, kRkey}, {true});
    ring.expect(hex(ctrl(0, 0x1234, 0x08, 2, 0x08) + kRaddr), bbs, "RDMA write of 0 bytes");
  }
  {
    Ring ring(3);
    const unsigned bbs = write_rdma_read(ring.sq, {kLocal, kLkey}, 65536, {kRemote, kRkey},
                                         {true, true});
    ring.expect(hex(ctrl(0, 3, 0x10, 3, 0x88) + kRaddr + data_seg(65536)), bbs, "RDMA read");
  }
  {
    Ring ring(0xffff);  // the quiet's NOP: opcode 0, control segment only, completion and fence
    const unsigned bbs = write_nop(ring.sq, {true, true});
    ring.expect(hex(ctrl(0, 0xffff, 0x00, 1, 0x88)), bbs, "NOP");
  }
}

TEST(Wqe, InlineRdmaWrite) {
  uint8_t payload[256];
  for (size_t i = 0; i < sizeof payload; ++i) payload[i] = static_cast<uint8_t>(i + 1);
  std::string bytes;
  for (uint32_t length : {1u, 5u, 12u, 13u, 60u, 100u, max_inline_write(4)}) {
    for (uint16_t pi : {uint16_t{0}, uint16_t{2}, uint16_t{3}}) {
      Ring ring(pi);
      const unsigned bbs =
          write_rdma_write_inline(ring.sq, payload, length, {kRemote, kRkey}, {true});
      char header[16];
      snprintf(header, sizeof header, "%08x", length | 0x80000000u);  // MLX5_INLINE_SEG
      std::string data;
      for (uint32_t i = 0; i < length; ++i) {
        char b[3];
        snprintf(b, sizeof b, "%02x", payload[i]);
        data += b;
      }
      const unsigned segments = 2 + (4 + length + 15) / 16;
      std::vector<uint8_t> want = hex(ctrl(0, pi, 0x08, static_cast<uint8_t>(segments), 0x08) +
                                      kRaddr + header + data);
      // the padding after the data is not part of the message: take it as the ring has it
      const size_t padded = segments * 16;
      for (size_t i = want.size(); i < padded; ++i)
        want.push_back(ring.mem[(size_t{pi} * 64 + i) % sizeof ring.mem]);
      const std::string what = "inline write of " + std::to_string(length) + " bytes at pi " +
                               std::to_string(pi);
      ring.expect(want, bbs, what.c_str());
    }
  }
  EXPECT_EQ(max_inline_write(4), 4u * 64 - 16 - 16 - 4);
}

// The p/put fast path's template: bit for bit what write_rdma_write_inline writes, for every
// length it takes, signaled or not, at producer indexes past the 16-bit index's low byte, over a
// ring that held other bytes; write() returns the doorbell's 8 bytes.
TEST(Wqe, WriteInlineTemplateMatchesWriter) {
  WriteInlineTemplate t;
  t.init(kQpn);
  EXPECT_EQ(WriteInlineTemplate::kMaxBytes, 28u);
  uint8_t payload[WriteInlineTemplate::kMaxBytes];
  for (size_t i = 0; i < sizeof payload; ++i) payload[i] = static_cast<uint8_t>(0xa0 + i);
  for (uint32_t length = 1; length <= WriteInlineTemplate::kMaxBytes; ++length)
    for (uint16_t pi : {uint16_t{0}, uint16_t{3}, uint16_t{0x1234}, uint16_t{0xffff}})
      for (bool signaled : {false, true}) {
        Ring want(pi), got(pi);
        const unsigned bbs =
            write_rdma_write_inline(want.sq, payload, length, {kRemote, kRkey}, {signaled});
        ASSERT_EQ(bbs, 1u);
        void *wqe = got.sq.segment(0);
        const uint64_t first8 = t.write(wqe, pi, payload, length, {kRemote, kRkey}, signaled);
        const std::string what = std::to_string(length) + " bytes at pi " + std::to_string(pi) +
                                 (signaled ? ", signaled" : "");
        EXPECT_EQ(memcmp(want.mem, got.mem, sizeof want.mem), 0) << what;
        EXPECT_EQ(memcmp(&first8, wqe, sizeof first8), 0) << what;
      }
}

// The DC template: bit for bit what write_rdma_write_inline writes with the same address vector
// (compact and whole), for every length, signaled or not, at every position of a 4-BB ring
// (the second BB wrapping to the start from the last), over a ring that held other bytes.
TEST(Wqe, WriteInlineDcTemplateMatchesWriter) {
  uint8_t payload[WriteInlineDcTemplate::kMaxBytes];
  for (size_t i = 0; i < sizeof payload; ++i) payload[i] = static_cast<uint8_t>(0x30 + i);
  for (const unsigned segments : {1u, 3u}) {
    mlx5_wqe_av av{};
    auto *raw = reinterpret_cast<uint8_t *>(&av);
    for (unsigned i = 0; i < sizeof av; ++i) raw[i] = static_cast<uint8_t>(0x61 + i);
    const AddressVector to{&av, segments};
    WriteInlineDcTemplate t;
    t.init(kQpn, to);
    for (uint32_t length = 1; length <= WriteInlineDcTemplate::kMaxBytes; ++length)
      for (uint16_t pi : {uint16_t{0}, uint16_t{2}, uint16_t{3}, uint16_t{0xffff}})
        for (bool signaled : {false, true}) {
          Ring want(pi), got(pi);
          const unsigned bbs = write_rdma_write_inline(want.sq, payload, length,
                                                       {kRemote, kRkey}, {signaled}, to);
          const std::string what = std::to_string(segments * 16) + "-byte vector, " +
                                   std::to_string(length) + " bytes at pi " +
                                   std::to_string(pi) + (signaled ? ", signaled" : "");
          EXPECT_EQ(t.write(got.sq, payload, length, {kRemote, kRkey}, signaled), bbs) << what;
          // the padding after the data is not part of the message: take it as the writer left it
          const size_t data_end = (1 + segments + 1) * 16 + 4 + length;
          const size_t wqe_end = (data_end + 15) / 16 * 16;
          for (size_t i = data_end; i < wqe_end; ++i) {
            const size_t at = (size_t{pi} * 64 + i) % sizeof got.mem;
            got.mem[at] = want.mem[at];
          }
          EXPECT_EQ(memcmp(want.mem, got.mem, sizeof want.mem), 0) << what;
        }
  }
}

// DC: the address vector goes right after the control segment (1 or 3 segments, counted in the
// WQE's size), then the segments of the RC WQE; at the ring's start and wrapping from its end.
TEST(Wqe, DcAddressVectorAfterControl) {
  for (const unsigned segments : {1u, 3u}) {
    mlx5_wqe_av av{};
    av.key.dc_key = htobe64(0x0011223344556677ull);
    av.dqp_dct = htobe32(0x00abcdefu | (segments == 3 ? MLX5_EXTENDED_UD_AV : 0));
    av.rlid = htobe16(0x0007);
    std::string av_hex = segments == 3 ? "0011223344556677 80abcdef 00 00 0007"
                                       : "0011223344556677 00abcdef 00 00 0007";
    if (segments == 3) {  // the rest (MAC, GRH fields, GID) copied as it is
      auto *rest = reinterpret_cast<uint8_t *>(&av) + 16;
      for (unsigned i = 0; i < 32; ++i) {
        rest[i] = static_cast<uint8_t>(0xa0 + i);
        char b[3];
        snprintf(b, sizeof b, "%02x", rest[i]);
        av_hex += b;
      }
    }
    const AddressVector to{&av, segments};
    const auto ds = [&](unsigned rc_ds) { return static_cast<uint8_t>(rc_ds + segments); };
    for (uint16_t pi : {uint16_t{0}, uint16_t{3}}) {
      const std::string at = " (" + std::to_string(segments * 16) + "-byte vector, pi " +
                             std::to_string(pi) + ")";
      {
        Ring ring(pi);
        const unsigned bbs =
            write_rdma_write(ring.sq, {kLocal, kLkey}, 4096, {kRemote, kRkey}, {}, to);
        ring.expect(hex(ctrl(0, pi, 0x08, ds(3), 0) + av_hex + kRaddr + data_seg(4096)), bbs,
                    ("DC RDMA write" + at).c_str());
      }
      {
        Ring ring(pi);
        const unsigned bbs = write_nop(ring.sq, {true, true}, to);
        ring.expect(hex(ctrl(0, pi, 0x00, ds(1), 0x88) + av_hex), bbs, ("DC NOP" + at).c_str());
      }
      {
        Ring ring(pi);
        const unsigned bbs =
            write_rdma_read(ring.sq, {kLocal, kLkey}, 64, {kRemote, kRkey}, {true}, to);
        ring.expect(hex(ctrl(0, pi, 0x10, ds(3), 0x08) + av_hex + kRaddr + data_seg(64)), bbs,
                    ("DC RDMA read" + at).c_str());
      }
      for (const AmoRow &row : kAmoTable) {
        Ring ring(pi);
        const atomics::HcaAtomic a =
            atomics::encode_for_hca(row.op, row.size, 0x1122334455667788ull, 0x0102030405060708ull);
        const unsigned bbs =
            write_atomic(ring.sq, a, {kLocal, kLkey}, {kRemote, kRkey}, {true, true}, to);
        ring.expect(hex(ctrl(row.opmod, pi, row.opcode, ds(row.ds), 0x88) + av_hex + kRaddr +
                        row.atomic_segments + data_seg(row.size)),
                    bbs,
                    ("DC " + std::string(atomics::amo_op_name(row.op)) + "/" +
                     std::to_string(row.size) + at)
                        .c_str());
      }
      {
        Ring ring(pi);
        const uint8_t payload[20] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
                                     18, 19, 20};
        const unsigned bbs =
            write_rdma_write_inline(ring.sq, payload, 20, {kRemote, kRkey}, {true}, to);
        std::vector<uint8_t> want =
            hex(ctrl(0, pi, 0x08, ds(2 + 2), 0x08) + av_hex + kRaddr +
                "80000014 0102030405060708090a0b0c0d0e0f1011121314");
        const size_t padded = (ds(4)) * 16u;  // padding: as the ring has it
        for (size_t i = want.size(); i < padded; ++i)
          want.push_back(ring.mem[(size_t{pi} * 64 + i) % sizeof ring.mem]);
        ring.expect(want, bbs, ("DC inline write" + at).c_str());
      }
    }
  }
  EXPECT_EQ(max_inline_write(4, 48), 4u * 64 - 16 - 48 - 16 - 4);
}

// Masked atomics of 16 and 32 bytes: opcode modifier 0x08 | (log2(size) - 2), the operand bytes
// copied as given after the remote address (they span BBs and wrap at pi 3), one data segment of
// `size` bytes; RC and DC (compact vector).
TEST(Wqe, WideMaskedAtomics) {
  mlx5_wqe_av av{};
  av.key.dc_key = htobe64(0x0011223344556677ull);
  av.dqp_dct = htobe32(0x00abcdefu);
  av.rlid = htobe16(0x0007);
  for (const unsigned segments : {0u, 1u}) {
    const AddressVector to{segments ? &av : nullptr, segments};
    const std::string av_hex = segments ? "0011223344556677 00abcdef 00 00 0007" : "";
    for (const unsigned size : {16u, 32u})
      for (const bool cs : {true, false})
        for (uint16_t pi : {uint16_t{0}, uint16_t{3}}) {
          const uint32_t operand_bytes = cs ? 4 * size : 2 * size;
          std::vector<uint8_t> ops(operand_bytes);
          std::string ops_hex;
          for (uint32_t i = 0; i < operand_bytes; ++i) {
            ops[i] = static_cast<uint8_t>(0x40 + i);
            char b[3];
            snprintf(b, sizeof b, "%02x", ops[i]);
            ops_hex += b;
          }
          Ring ring(pi);
          const unsigned bbs = write_atomic_wide(
              ring.sq, cs ? atomics::HcaOpcode::MaskedCompareSwap : atomics::HcaOpcode::MaskedFetchAdd,
              size, ops.data(), operand_bytes, {kLocal, kLkey}, {kRemote, kRkey}, {true, false}, to);
          const auto ds = static_cast<uint8_t>(3 + segments + operand_bytes / 16);
          const uint8_t opmod = size == 16 ? 0x0a : 0x0b;
          ring.expect(hex(ctrl(opmod, pi, cs ? 0x14 : 0x15, ds, 0x08) + av_hex + kRaddr + ops_hex +
                          data_seg(size)),
                      bbs,
                      ((cs ? "masked CS " : "masked FA ") + std::to_string(size) + " bytes, pi " +
                       std::to_string(pi) + (segments ? ", DC" : ""))
                          .c_str());
          EXPECT_EQ(bbs, wide_atomic_bbs(operand_bytes, segments));
        }
  }
}

}  // namespace
}  // namespace hoshmem::ib
