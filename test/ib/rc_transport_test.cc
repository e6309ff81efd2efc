// The RC transport (lib/transport/rc) between two processes over the software HCA: queue pairs
// connected on first use through the connection manager, including both sides connecting to each
// other at once; a peer whose main thread computes without calling anything still answers the
// connection request (its connection thread does); put (registered and inline), get and every
// AMO of the API on 4 and 8 bytes against the reference hca_apply; fence then a flag the peer
// polls; and a peer that has exited is reported through the error handler, not a hang.
#include "lib/transport/rc/rc_transport.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>

#include "test/ib/rc_pair.h"
#include "test/ib/softhca_main.h"


namespace hoshmem::rc {
namespace {

using atomics::AmoOp;

constexpr size_t kBufBytes = 1 << 20;
constexpr size_t kCounter = 0, kFlag = 4096, kData = 8192, kWords = 65536;

// The child: PE 1. Adds 1 to PE 0's counter at the same moment PE 0 adds to its own (both
// connect at once), then computes, calling nothing, until PE 0's flag arrives.
int child(const char *mode) {
  Side s;
  if (!setup(s, 1, kBufBytes)) return 2;
  write_address(stdout, s);
  if (!read_address(stdin, s, 0)) return 3;
  if (!strcmp(mode, "exit")) return 0;  // gone before anyone connects
  char go[8];
  if (fscanf(stdin, "%7s", go) != 1) return 4;
  const uint64_t before = s.rc.atomic(0, atomics::encode_for_hca(AmoOp::FetchAdd, 8, 1, 0),
                                      s.remote(kCounter));
  volatile uint64_t *flag = reinterpret_cast<volatile uint64_t *>(s.buf + kFlag);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  uint64_t spins = 0;
  while (*flag == 0 && std::chrono::steady_clock::now() < deadline) ++spins;
  printf("DONE %" PRIu64 " %" PRIu64 "\n", static_cast<uint64_t>(*flag), before);
  fflush(stdout);
  s.rc.quiet();
  s.rc.shutdown();
  return 0;
}

using Child = PeerProcess;

TEST(RcTransport, LazyConnectionsRmaAndEveryAtomic) {
  Child c("work");
  Side s;
  ASSERT_TRUE(setup(s, 0, kBufBytes));
  write_address(c.in, s);
  ASSERT_TRUE(read_address(c.out, s, 1));
  EXPECT_EQ(s.rc.connected_peers(), 0);  // nothing connected before first use
  fprintf(c.in, "GO\n");
  fflush(c.in);
  // both sides connect to each other at once
  const uint64_t before = s.rc.atomic(1, atomics::encode_for_hca(AmoOp::FetchAdd, 8, 1, 0),
                                      s.remote(kCounter));
  EXPECT_EQ(before, 0u);
  EXPECT_EQ(s.rc.connected_peers(), 1);

  // put (registered and inline), get back
  std::mt19937_64 rng(3);
  for (uint32_t length : {1u, 8u, 100u, 4096u, 300000u}) {
    for (uint32_t i = 0; i < length; ++i) s.buf[kData + i] = static_cast<uint8_t>(rng());
    s.rc.put(1, s.local(kData), length, s.remote(kData));
    if (length <= s.rc.max_inline())
      s.rc.put_inline(1, s.buf + kData, length, s.remote(kData + 400000));
    s.rc.quiet();
    memset(s.buf + kData + 400000, 0, length);
    s.rc.get(1, s.local(kData + 400000), length, s.remote(kData));
    ASSERT_EQ(memcmp(s.buf + kData, s.buf + kData + 400000, length), 0) << length << " bytes";
    if (length <= s.rc.max_inline()) {
      memset(s.buf + kData + 400000, 0, length);
      s.rc.get(1, s.local(kData + 400000), length, s.remote(kData + 400000));
      ASSERT_EQ(memcmp(s.buf + kData, s.buf + kData + 400000, length), 0) << "inline " << length;
    }
  }

  // every AMO, 4 and 8 bytes, against the reference on a copy of the word
  const AmoOp ops[] = {AmoOp::Fetch,    AmoOp::Set,      AmoOp::Swap,    AmoOp::CompareSwap,
                       AmoOp::FetchAdd, AmoOp::FetchAnd, AmoOp::FetchOr, AmoOp::FetchXor};
  for (int round = 0; round < 20; ++round) {
    for (AmoOp op : ops) {
      for (unsigned size : {4u, 8u}) {
        const size_t off = kWords + 64 * (round % 8) + size;
        uint64_t start = rng(), operand = rng(), compare = round % 2 ? start : rng();
        memcpy(s.buf + kData, &start, 8);
        s.rc.put(1, s.local(kData), size, s.remote(off));
        uint8_t model[8];
        memcpy(model, &start, 8);
        const atomics::HcaAtomic enc = atomics::encode_for_hca(op, size, operand, compare);
        const uint64_t expect_old = atomics::hca_apply(enc, model);
        const uint64_t old = s.rc.atomic(1, enc, s.remote(off));  // after the put: RC order
        const std::string what = std::string(atomics::amo_op_name(op)) + "/" +
                                 std::to_string(size);
        ASSERT_EQ(old, expect_old) << what << ": old value";
        uint64_t after = 0;
        s.rc.get(1, s.local(kData + 64), size, s.remote(off));
        memcpy(&after, s.buf + kData + 64, size);
        uint64_t want = 0;
        memcpy(&want, model, size);
        ASSERT_EQ(after, want) << what << ": the word";
      }
    }
  }

  // the child computes, calling nothing, until this flag arrives after a fence
  s.rc.fence(1);
  const uint64_t one = 7;
  s.rc.put_inline(1, &one, 8, s.remote(kFlag));
  s.rc.quiet();
  uint64_t flag = 0, child_before = 99;
  ASSERT_EQ(fscanf(c.out, " DONE %" SCNu64 " %" SCNu64, &flag, &child_before), 2);
  EXPECT_EQ(flag, 7u);
  EXPECT_EQ(child_before, 0u);  // the child's add on our counter
  EXPECT_EQ(*reinterpret_cast<volatile uint64_t *>(s.buf + kCounter), 1u);
  EXPECT_EQ(c.wait(), 0);
  s.rc.shutdown();
}

}  // namespace

// Reads the path MTU the transport gave the queue pair of `lane` to `pe` (its friend).
struct PathMtuTestAccess {
  static ibv_mtu path_mtu(Transport &t, int lane, int pe) {
    Transport::Endpoint *ep = t.lanes_[static_cast<size_t>(lane)]->eps[static_cast<size_t>(pe)];
    ibv_qp_attr attr{};
    ibv_qp_init_attr init{};
    if (!ep || ibv_query_qp(ep->qp, &attr, IBV_QP_PATH_MTU, &init) != 0) return ibv_mtu{};
    return attr.path_mtu;
  }
};

namespace {

// A peer whose port has a smaller MTU (a RoCE host with a 1500-byte link next to a 9000-byte
// one): the queue pair to it sends packets of the smaller size, which both ports take; data of
// many packets arrives whole.
TEST(RcTransport, PathMtuIsTheSmallerPortsMtu) {
  Child c("work");
  Side s;
  ASSERT_TRUE(setup(s, 0, kBufBytes));
  ASSERT_GT(s.dev.port_attr().active_mtu, IBV_MTU_1024) << "the model's port MTU changed";
  write_address(c.in, s);
  ASSERT_TRUE(read_address(c.out, s, 1, IBV_MTU_1024));  // the peer's port, as it would say
  fprintf(c.in, "GO\n");
  fflush(c.in);
  s.rc.atomic(1, atomics::encode_for_hca(AmoOp::FetchAdd, 8, 1, 0), s.remote(kCounter));
  EXPECT_EQ(PathMtuTestAccess::path_mtu(s.rc, 0, 1), IBV_MTU_1024);
  std::mt19937_64 rng(5);
  constexpr uint32_t kLength = 300000;
  for (uint32_t i = 0; i < kLength; ++i) s.buf[kData + i] = static_cast<uint8_t>(rng());
  s.rc.put(1, s.local(kData), kLength, s.remote(kData));
  s.rc.quiet();
  s.rc.get(1, s.local(kData + 400000), kLength, s.remote(kData));
  EXPECT_EQ(memcmp(s.buf + kData, s.buf + kData + 400000, kLength), 0);
  const uint64_t one = 7;
  s.rc.put_inline(1, &one, 8, s.remote(kFlag));
  s.rc.quiet();
  uint64_t flag = 0, child_before = 99;
  ASSERT_EQ(fscanf(c.out, " DONE %" SCNu64 " %" SCNu64, &flag, &child_before), 2);
  EXPECT_EQ(flag, 7u);
  EXPECT_EQ(c.wait(), 0);
  s.rc.shutdown();
}

TEST(RcTransport, PeerThatExitedIsReportedNotWaitedFor) {
  EXPECT_EXIT(
      {
        Child c("exit");
        Side s;
        if (!setup(s, 0, kBufBytes)) _exit(2);
        write_address(c.in, s);
        if (!read_address(c.out, s, 1)) _exit(3);
        c.wait();  // it has exited
        s.rc.put_inline(1, "x", 1, s.remote(kData));
        s.rc.quiet();
        _exit(0);
      },
      testing::ExitedWithCode(42), "rc error with PE 1: (no answer|.*retries)");
}

}  // namespace
}  // namespace hoshmem::rc

int main(int argc, char **argv) {
  if (argc >= 3 && !strcmp(argv[1], "--peer") && getenv("HOSHMEM_TEST_SOFTHCA"))
    return hoshmem::rc::child(argv[2]);
  testing::GTEST_FLAG(death_test_style) = "threadsafe";
  return softhca_test_main(argc, argv, "ib-rc-test");
}
