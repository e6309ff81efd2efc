// The shared receive ring's protocol (lib/transport/ring) over local memory: messages that wrap
// and straddle the end, a full ring that senders wait on, several senders racing their
// reservations, credit that spares reads of the consumer counter, and giving up.
#include "lib/transport/ring/ring.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

namespace hoshmem::ring {
namespace {

// One PE's ring in this process's memory, reached as the network would reach it.
struct LocalRing : RemoteRing {
  explicit LocalRing(size_t bytes) : bytes(bytes), memory(new uint8_t[bytes]()) {}
  uint64_t fetch_add_producer(int, uint64_t n) override { return producer.fetch_add(n); }
  uint64_t read_consumer(int) override { return consumer.load(std::memory_order_acquire); }
  void write(int, uint64_t offset, const void *data, size_t len) override {
    EXPECT_LE(offset + len, bytes);
    if (len == sizeof(uint64_t) && offset % 8 == 0) {  // a header: after the payload
      uint64_t v;
      memcpy(&v, data, sizeof v);
      reinterpret_cast<std::atomic<uint64_t> *>(memory.get() + offset)
          ->store(v, std::memory_order_release);
    } else {
      memcpy(memory.get() + offset, data, len);
    }
  }
  bool wait_for_room(int, uint64_t waited_ns) override {
    ++waits;
    std::this_thread::yield();
    return give_up_after_ns == 0 || waited_ns < give_up_after_ns;
  }
  size_t bytes;
  std::unique_ptr<uint8_t[]> memory;
  std::atomic<uint64_t> producer{0}, consumer{0};
  std::atomic<uint64_t> waits{0};
  uint64_t give_up_after_ns = 0;
};

// Message `seq` of `sender`: its length and bytes follow from both.
std::vector<uint8_t> message(uint32_t sender, uint32_t seq, size_t max_len) {
  std::mt19937 rng(sender * 100003u + seq);
  std::vector<uint8_t> m(rng() % (max_len + 1));
  for (auto &b : m) b = static_cast<uint8_t>(rng());
  if (m.size() >= 8) {
    memcpy(m.data(), &sender, 4);
    memcpy(m.data() + 4, &seq, 4);
  }
  return m;
}

TEST(Ring, FootprintAndHeader) {
  EXPECT_EQ(footprint(0), 8u);
  EXPECT_EQ(footprint(1), 16u);
  EXPECT_EQ(footprint(8), 16u);
  EXPECT_EQ(footprint(9), 24u);
  const uint64_t h = header(300, 0);
  EXPECT_NE(h, 0u);  // PE 0's empty message is still a message
  EXPECT_EQ(header_length(h), 300u);
  EXPECT_EQ(header_sender(h), 0u);
  EXPECT_EQ(header_sender(header(0, 70000)), 70000u);
}

// One sender, no concurrency: every size up to the whole ring, through many laps, so that
// messages start at every offset and straddle the end.
TEST(Ring, WrapsAndStraddles) {
  constexpr size_t kBytes = 512;
  LocalRing net(kBytes);
  Sender s(&net, kBytes, 1);
  Receiver r(net.memory.get(), kBytes, &net.consumer);
  uint32_t received = 0, straddled = 0;
  for (uint32_t seq = 0; seq < 2000; ++seq) {
    const size_t max = seq % 50 == 0 ? s.max_payload() : 100;
    const std::vector<uint8_t> m = message(3, seq, max);
    const uint64_t at = net.producer.load();
    if ((at & (kBytes - 1)) + footprint(m.size()) > kBytes) ++straddled;
    ASSERT_TRUE(s.send(0, 3, m.data(), m.size()));
    EXPECT_EQ(r.poll([&](uint32_t sender, const uint8_t *data, size_t len) {
      EXPECT_EQ(sender, 3u);
      ASSERT_EQ(len, m.size());
      EXPECT_EQ(memcmp(data, m.data(), len), 0) << seq;
      ++received;
    }), 1u);
    EXPECT_FALSE(r.ready());
  }
  EXPECT_EQ(received, 2000u);
  EXPECT_GT(straddled, 100u);
  // The owner zeroed everything it consumed.
  for (size_t i = 0; i < kBytes; ++i) ASSERT_EQ(net.memory[i], 0) << i;
}

// Credit: while the last consumer value read proves room, a sender reads nothing.
TEST(Ring, CreditSparesConsumerReads) {
  constexpr size_t kBytes = 1024;
  LocalRing net(kBytes);
  Sender s(&net, kBytes, 1);
  Receiver r(net.memory.get(), kBytes, &net.consumer);
  const uint8_t eight[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  for (int i = 0; i < 64; ++i) ASSERT_TRUE(s.send(0, 0, eight, 8));  // exactly fills the ring
  EXPECT_EQ(s.consumer_reads(), 0u);
  EXPECT_EQ(r.poll([](uint32_t, const uint8_t *, size_t) {}), 64u);
  for (int i = 0; i < 64; ++i) ASSERT_TRUE(s.send(0, 0, eight, 8));  // one read proves the lap
  EXPECT_EQ(s.consumer_reads(), 1u);
  EXPECT_EQ(net.waits.load(), 0u);
}

// Senders racing for one small ring while its owner consumes: everything arrives once, intact,
// in each sender's order, and senders waited for room.
TEST(Ring, ManySendersOneOwner) {
  constexpr size_t kBytes = 1024;
  constexpr uint32_t kSenders = 4, kEach = 3000;
  LocalRing net(kBytes);
  std::vector<std::thread> threads;
  for (uint32_t id = 0; id < kSenders; ++id)
    threads.emplace_back([&, id] {
      Sender s(&net, kBytes, 1);
      for (uint32_t seq = 0; seq < kEach; ++seq) {
        const std::vector<uint8_t> m = message(id, seq, 200);
        ASSERT_TRUE(s.send(0, id, m.data(), m.size()));
      }
    });
  Receiver r(net.memory.get(), kBytes, &net.consumer);
  std::vector<uint32_t> next(kSenders, 0);
  uint32_t total = 0;
  while (total < kSenders * kEach) {
    const size_t n = r.poll([&](uint32_t sender, const uint8_t *data, size_t len) {
      ASSERT_LT(sender, kSenders);
      const std::vector<uint8_t> m = message(sender, next[sender], 200);
      ASSERT_EQ(len, m.size()) << sender << " " << next[sender];
      EXPECT_EQ(memcmp(data, m.data(), len), 0);
      ++next[sender];
    });
    total += static_cast<uint32_t>(n);
    if (n == 0) std::this_thread::yield();
  }
  for (auto &t : threads) t.join();
  for (uint32_t id = 0; id < kSenders; ++id) EXPECT_EQ(next[id], kEach);
  EXPECT_FALSE(r.ready());
  EXPECT_GT(net.waits.load(), 0u);  // the ring was full at times
}

// Nobody consumes: the sender that finds no room gives up when wait_for_room says so.
TEST(Ring, FullRingGivesUp) {
  constexpr size_t kBytes = 256;
  LocalRing net(kBytes);
  net.give_up_after_ns = 20'000'000;  // 20 ms
  Sender s(&net, kBytes, 1);
  const uint8_t data[56] = {};
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(s.send(0, 1, data, sizeof data));  // 4 x 64 bytes
  EXPECT_FALSE(s.send(0, 1, data, sizeof data));
  EXPECT_GT(net.waits.load(), 0u);
}

}  // namespace
}  // namespace hoshmem::ring
