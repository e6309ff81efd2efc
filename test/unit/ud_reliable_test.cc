// The UD reliability engine (lib/transport/ud/reliable.h) over a simulated network: 2 to 4
// endpoints, a fake clock, and a wire that drops, duplicates and delays (reorders) datagrams at
// random from a seeded PRNG (20% each) or as a test scripts it. Above each test: the mechanisms
// whose removal from reliable.cc made it fail when tried (one at a time, by hand).
#include "lib/transport/ud/reliable.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <vector>

namespace hoshmem::ud {
namespace {

constexpr uint64_t kUs = 1000;

Config test_config(int npes) {
  Config c;
  c.npes = npes;
  c.mtu = 256;  // 240 bytes of payload: multi-segment messages are cheap to make
  c.max_window = 16;
  c.initial_window = 4;
  c.max_reply = 8 * 240;
  c.rto_ns = 20 * kUs;
  c.rto_max_ns = 1000 * kUs;
  c.give_up_ns = 50'000 * kUs;
  c.ack_delay_ns = 5 * kUs;
  c.rack_delay_ns = 5 * kUs;
  return c;
}

class Net;

// One PE: its Endpoint and what its callbacks saw.
class Node : public Callbacks {
 public:
  Node(Net &net, int me, const Config &config) : net_(net), me(me), ep(config, *this) {}

  uint64_t now_ns() override;
  void send_datagram(int peer, const iovec *iov, int iovcnt) override;
  void handle(int peer, const void *msg, size_t len, Reply &reply) override {
    ++handled;
    ASSERT_TRUE(handler) << "PE " << me << " got a request";
    handler(peer, static_cast<const uint8_t *>(msg), len, reply);
  }
  void on_acked(uint64_t token) override {
    ++acked[token];
    if (acked_hook) acked_hook(token);
  }
  void on_reply(uint64_t token, const void *bytes, size_t len) override {
    const auto *b = static_cast<const uint8_t *>(bytes);
    replies[token].emplace_back(b, b + len);
  }
  void on_peer_failed(int peer) override { failed_peers.push_back({peer, now_ns()}); }
  void on_failed(uint64_t token) override { ++failed_tokens[token]; }

  Net &net_;
  const int me;
  Endpoint ep;
  bool silent = false;  // neither sends nor receives nor polls: a dead PE
  uint64_t handled = 0;
  std::function<void(int, const uint8_t *, size_t, Reply &)> handler;
  std::function<void(uint64_t)> acked_hook;
  std::map<uint64_t, int> acked;
  std::map<uint64_t, std::vector<std::vector<uint8_t>>> replies;
  std::vector<std::pair<int, uint64_t>> failed_peers;  // (peer, when)
  std::map<uint64_t, int> failed_tokens;
};

enum class Fate { kPass, kDrop, kDup };

// Datagrams in flight, ordered by arrival time; the fake clock jumps from event to event.
class Net {
 public:
  Net(int npes, uint64_t seed, double fault, const Config &config) : rng_(seed), fault_(fault) {
    for (int i = 0; i < npes; ++i) nodes.push_back(std::make_unique<Node>(*this, i, config));
  }
  explicit Net(int npes, uint64_t seed = 1, double fault = 0.0)
      : Net(npes, seed, fault, test_config(npes)) {}

  Node &operator[](int i) { return *nodes[static_cast<size_t>(i)]; }

  void transmit(int from, int to, const iovec *iov, int iovcnt) {
    std::vector<uint8_t> bytes;
    for (int i = 0; i < iovcnt; ++i) {
      const auto *b = static_cast<const uint8_t *>(iov[i].iov_base);
      bytes.insert(bytes.end(), b, b + iov[i].iov_len);
    }
    Header h;
    EXPECT_TRUE(decode_header(bytes.data(), bytes.size(), &h));
    EXPECT_LE(bytes.size(), nodes[0]->ep.payload_per_segment() + kHeaderBytes);
    log.push_back({now, from, to, h});
    if ((*this)[from].silent || (*this)[to].silent) return;
    // A receive queue of rq_slots: the receiver takes a datagram off it only when it arrives, so
    // one that finds the slots taken by those still on their way is lost (a UD receive queue's
    // overflow, which soft-RoCE drops without a count).
    if (rq_slots && in_flight_to(to) >= rq_slots) {
      ++rq_overflows;
      return;
    }
    const Fate fate = script ? script(from, to, h) : Fate::kPass;
    if (fate == Fate::kDrop || chance(fault_)) return;
    const int copies = fate == Fate::kDup || chance(fault_) ? 2 : 1;
    for (int c = 0; c < copies; ++c) {
      uint64_t at = now + latency + rng_() % kUs;
      if (chance(fault_)) at += rng_() % (40 * kUs);  // late: overtaken by later datagrams
      if (c == 1 && fate == Fate::kDup) at += dup_delay;
      wire_.emplace(std::make_pair(at, order_++), Packet{from, to, bytes});
    }
  }

  // Polls every PE, moves the clock to the next event and delivers what is due then. False when
  // nothing will ever happen again (every PE idle, nothing on the wire).
  bool step() {
    uint64_t next = kNever;
    for (auto &n : nodes)
      if (!n->silent) next = std::min(next, n->ep.poll());
    if (!wire_.empty()) next = std::min(next, wire_.begin()->first.first);
    if (next == kNever) return false;
    now = std::max(now, next);
    while (!wire_.empty() && wire_.begin()->first.first <= now) {
      const Packet pk = std::move(wire_.extract(wire_.begin()).mapped());
      if (!(*this)[pk.to].silent && !(*this)[pk.from].silent)
        (*this)[pk.to].ep.on_datagram(pk.from, pk.bytes.data(), pk.bytes.size());
    }
    if (each_step) each_step();
    return true;
  }
  // Steps until `done` (true) or until nothing happens or the clock passes `limit` (false).
  bool run(const std::function<bool()> &done, uint64_t limit = 10'000'000 * kUs) {
    while (!done())
      if (!step() || now > limit) return done();
    return true;
  }
  // Steps until nothing will ever happen again.
  void quiesce() {
    for (int i = 0; i < 10'000'000 && step(); ++i) {
    }
  }

  struct Logged {
    uint64_t at;
    int from, to;
    Header h;
  };
  uint64_t now = 0;
  std::vector<std::unique_ptr<Node>> nodes;
  std::function<Fate(int from, int to, const Header &h)> script;
  uint64_t dup_delay = 0;  // extra delay of a scripted duplicate
  uint64_t latency = 2 * kUs;  // one way, plus up to 1 us of jitter
  std::function<void()> each_step;
  std::vector<Logged> log;  // every datagram sent
  size_t rq_slots = 0;      // 0: receive queues never overflow
  uint64_t rq_overflows = 0;
  size_t in_flight_to(int to) const {
    size_t n = 0;
    for (const auto &[at, pk] : wire_) n += pk.to == to;
    return n;
  }

 private:
  struct Packet {
    int from, to;
    std::vector<uint8_t> bytes;
  };
  bool chance(double p) { return p > 0 && static_cast<double>(rng_() >> 11) * 0x1.0p-53 < p; }

  std::mt19937_64 rng_;
  double fault_;
  uint64_t order_ = 0;
  std::multimap<std::pair<uint64_t, uint64_t>, Packet> wire_;
};

uint64_t Node::now_ns() { return net_.now; }
void Node::send_datagram(int peer, const iovec *iov, int iovcnt) {
  net_.transmit(me, peer, iov, iovcnt);
}

uint64_t token_of(int to, uint32_t index) { return uint64_t(uint32_t(to)) << 32 | index; }

// The bytes of message `index` from `from` to `to` (salt 0) or of its reply (salt 1).
uint8_t pattern(int from, int to, uint32_t index, size_t k, int salt) {
  return static_cast<uint8_t>(from * 131 + to * 31 + index * 7 + k * 13 + (k >> 8) + salt * 101);
}

// Traffic between every pair of PEs: per pair, a planned list of messages of random kinds and
// sizes (up to several segments, replies too), each starting with its index. Handlers check the
// order (exactly once, in order per sender) and every byte; on_reply checks every reply byte.
class Traffic {
 public:
  struct Msg {
    Kind kind;
    size_t len, reply_len;
  };

  Traffic(Net &net, uint32_t count, size_t max_len, size_t max_reply, uint64_t seed)
      : net_(net), n_(static_cast<int>(net.nodes.size())), count_(count) {
    std::mt19937_64 rng(seed);
    plan_.resize(static_cast<size_t>(n_ * n_));
    next_.assign(static_cast<size_t>(n_ * n_), 0);
    expect_.assign(static_cast<size_t>(n_ * n_), 0);
    for (int from = 0; from < n_; ++from)
      for (int to = 0; to < n_; ++to)
        for (uint32_t i = 0; from != to && i < count; ++i)
          plan(from, to).push_back({rng() % 2 ? Kind::kFetch : Kind::kAcked,
                                    4 + rng() % (max_len - 3), rng() % (max_reply + 1)});
    for (int me = 0; me < n_; ++me)
      net[me].handler = [this, me](int from, const uint8_t *msg, size_t len, Reply &reply) {
        receive(me, from, msg, len, reply);
      };
    net.each_step = [this] { send_more(); };
    send_more();
  }

  std::vector<Msg> &plan(int from, int to) { return plan_[static_cast<size_t>(from * n_ + to)]; }

  void send_more() {
    for (int from = 0; from < n_; ++from)
      for (int to = 0; to < n_; ++to) {
        uint32_t &i = next_[static_cast<size_t>(from * n_ + to)];
        while (i < plan(from, to).size()) {
          const Msg &m = plan(from, to)[i];
          std::vector<uint8_t> bytes(m.len);
          for (size_t k = 4; k < m.len; ++k) bytes[k] = pattern(from, to, i, k, 0);
          std::memcpy(bytes.data(), &i, 4);
          const SendResult r = net_[from].ep.send(to, bytes.data(), m.len, m.kind, token_of(to, i));
          ASSERT_NE(r, SendResult::kFailed);
          if (r == SendResult::kBusy) break;
          ++i;
        }
      }
  }

  void receive(int me, int from, const uint8_t *msg, size_t len, Reply &reply) {
    uint32_t &expect = expect_[static_cast<size_t>(from * n_ + me)];
    ASSERT_GE(len, 4u);
    uint32_t index;
    std::memcpy(&index, msg, 4);
    ASSERT_EQ(index, expect) << "PE " << me << " from " << from << ": out of order or twice";
    ++expect;
    const Msg &m = plan(from, me)[index];
    ASSERT_EQ(len, m.len);
    for (size_t k = 4; k < len; ++k) ASSERT_EQ(msg[k], pattern(from, me, index, k, 0)) << k;
    ASSERT_EQ(reply.capacity, m.kind == Kind::kFetch ? net_[me].ep.payload_per_segment() * 8 : 0);
    if (m.kind == Kind::kAcked) return;
    reply.len = m.reply_len;
    for (size_t k = 0; k < m.reply_len; ++k) reply.data[k] = pattern(me, from, index, k, 1);
  }

  bool all_complete() const {
    for (const auto &node : net_.nodes)
      if (node->acked.size() + node->replies.size() < (static_cast<size_t>(n_) - 1) * count_)
        return false;
    return true;
  }

  // Every message completed exactly once, the right way, with the right reply; every one was
  // handled once.
  void check() {
    for (int from = 0; from < n_; ++from) {
      Node &node = net_[from];
      for (int to = 0; to < n_; ++to) {
        if (to == from) continue;
        EXPECT_EQ(expect_[static_cast<size_t>(from * n_ + to)], plan(from, to).size());
        for (uint32_t i = 0; i < plan(from, to).size(); ++i) {
          const Msg &m = plan(from, to)[i];
          const uint64_t t = token_of(to, i);
          if (m.kind == Kind::kAcked) {
            EXPECT_EQ(node.acked[t], 1) << from << "->" << to << " #" << i;
            EXPECT_EQ(node.replies.count(t), 0u);
            continue;
          }
          EXPECT_EQ(node.acked.count(t), 0u);
          ASSERT_EQ(node.replies[t].size(), 1u) << from << "->" << to << " #" << i;
          const std::vector<uint8_t> &r = node.replies[t][0];
          ASSERT_EQ(r.size(), m.reply_len);
          for (size_t k = 0; k < r.size(); ++k) ASSERT_EQ(r[k], pattern(to, from, i, k, 1));
        }
      }
      EXPECT_TRUE(node.failed_peers.empty());
      EXPECT_TRUE(node.failed_tokens.empty());
    }
  }

 private:
  Net &net_;
  int n_;
  size_t count_;                        // messages per ordered pair
  std::vector<std::vector<Msg>> plan_;  // [from * n + to]
  std::vector<uint32_t> next_;          // next to send, [from * n + to]
  std::vector<uint32_t> expect_;        // next to receive, [from * n + to]
};

// --- The header ---------------------------------------------------------------------------------

TEST(UdHeader, LayoutIsLittleEndianAt16Bytes) {
  Header h;
  h.type = Type::kRequest;
  h.flags = kFlagFetch | kFlagFirst | kFlagAckEcho;
  h.index = 0x0102;
  h.seq = 0x11223344;
  h.ack = 0x55667788;
  h.rack = 0x99aabbcc;
  uint8_t b[kHeaderBytes];
  encode_header(h, b);
  const uint8_t want[kHeaderBytes] = {0x4d, 0x02, 0x02, 0x01, 0x44, 0x33, 0x22, 0x11,
                                      0x88, 0x77, 0x66, 0x55, 0xcc, 0xbb, 0xaa, 0x99};
  EXPECT_EQ(0, std::memcmp(b, want, kHeaderBytes));
}

TEST(UdHeader, RoundTripsEveryTypeAndFlag) {
  for (Type type : {Type::kAck, Type::kRequest, Type::kReply})
    for (uint8_t flags = 0; flags < 64; ++flags) {
      Header h;
      h.type = type;
      h.flags = static_cast<uint8_t>(flags << 2);
      h.index = static_cast<uint16_t>(0xfff0 + flags);
      h.seq = 0xffffffffu - flags;
      h.ack = 7u * flags;
      h.rack = 0x80000000u | flags;
      uint8_t b[kHeaderBytes + 3];
      encode_header(h, b);
      Header d;
      ASSERT_TRUE(decode_header(b, sizeof b, &d));  // a payload may follow
      EXPECT_EQ(d.type, h.type);
      EXPECT_EQ(d.flags, h.flags);
      EXPECT_EQ(d.index, h.index);
      EXPECT_EQ(d.seq, h.seq);
      EXPECT_EQ(d.ack, h.ack);
      EXPECT_EQ(d.rack, h.rack);
    }
}

TEST(UdHeader, RejectsShortUnknownTypeOrVersion) {
  uint8_t b[kHeaderBytes];
  encode_header(Header{}, b);
  Header d;
  EXPECT_TRUE(decode_header(b, kHeaderBytes, &d));
  EXPECT_FALSE(decode_header(b, kHeaderBytes - 1, &d));
  uint8_t bad[kHeaderBytes];
  std::memcpy(bad, b, kHeaderBytes);
  bad[0] = 3;  // type 3
  EXPECT_FALSE(decode_header(bad, kHeaderBytes, &d));
  std::memcpy(bad, b, kHeaderBytes);
  bad[1] = 1;  // version 1 (no echo bits: its round trips would be misread)
  EXPECT_FALSE(decode_header(bad, kHeaderBytes, &d));
  bad[1] = 3;
  EXPECT_FALSE(decode_header(bad, kHeaderBytes, &d));
}

// --- Exactly once, in order, under faults -------------------------------------------------------

// 4 PEs, every pair both ways, 20% drops, duplicates and late datagrams, messages of 1 to 4
// segments, replies of 0 to 8. Memory stays under the bound on every step and is 0 once
// everything is idle. Fails with delivery on arrival instead of in order, when a duplicate is
// executed again, without the target's replay timer, when racks release no cached reply, or when
// reply segments are placed at the wrong offset.
TEST(UdReliable, ExactlyOnceInOrderUnderFaults) {
  Net net(4, /*seed=*/42, /*fault=*/0.2);
  const size_t payload = net[0].ep.payload_per_segment();
  size_t peak = 0;
  const size_t bound = 3 * net[0].ep.memory_bound_per_peer();
  Traffic traffic(net, 300, 4 * payload, 8 * payload, 7);
  auto send_more = net.each_step;
  net.each_step = [&] {
    send_more();
    for (auto &n : net.nodes) {
      peak = std::max(peak, n->ep.memory_bytes());
      ASSERT_LE(n->ep.memory_bytes(), bound);
    }
  };
  ASSERT_TRUE(net.run([&] { return traffic.all_complete(); }));
  traffic.check();
  net.quiesce();
  for (auto &n : net.nodes) {
    EXPECT_EQ(n->ep.memory_bytes(), 0u);
    EXPECT_GT(n->ep.stats().retransmits, 0u);  // the faults happened
    EXPECT_GT(n->ep.stats().duplicates, 0u);
    EXPECT_GT(n->ep.stats().replays, 0u);
  }
  printf("peak %zu bytes of buffers on one PE (bound %zu for 3 peers), %.1f ms simulated\n", peak,
         bound, net.now / 1e6);
}

// The same across the wrap of the 32-bit sequence numbers on the wire (starting 256 short of it).
// Fails when wire numbers are taken as plain integers instead of unwrapped near the expected one.
TEST(UdReliable, SequenceNumbersWrap) {
  Config c = test_config(2);
  c.initial_seq = 0xffffff00u;
  Net net(2, 3, 0.2, c);
  Traffic traffic(net, 400, 3 * net[0].ep.payload_per_segment(), 100, 11);
  ASSERT_TRUE(net.run([&] { return traffic.all_complete(); }));
  traffic.check();
  net.quiesce();
  EXPECT_EQ(net[0].ep.memory_bytes() + net[1].ep.memory_bytes(), 0u);
}

// --- Duplicate suppression replays the cached reply ---------------------------------------------

// A fetch-add target: a counter; a request {add} adds and replies the old value.
void fetch_add_target(Node &node, uint64_t &counter) {
  node.handler = [&counter](int, const uint8_t *msg, size_t len, Reply &reply) {
    ASSERT_EQ(len, 8u);
    uint64_t add;
    std::memcpy(&add, msg, 8);
    if (reply.capacity) {
      ASSERT_GE(reply.capacity, 8u);
      std::memcpy(reply.data, &counter, 8);
      reply.len = 8;
    }
    counter += add;
  };
}

// PEs 1-3 each send 400 fetching adds of 1 and 200 non-fetching adds of 2^32 to PE 0, 20% faults.
// Executing any of them twice breaks the sums; the low halves of the fetched values must be
// exactly 0..1199, each once. Fails when a duplicate request is executed again instead of
// answered from the reply cache.
TEST(UdReliable, FetchAddIsExactUnderFaults) {
  Net net(4, 99, 0.2);
  uint64_t counter = 0;
  fetch_add_target(net[0], counter);
  constexpr uint32_t kFetch = 400, kPlain = 200;
  std::vector<uint32_t> sent(4, 0);
  auto send_more = [&] {
    for (int pe = 1; pe < 4; ++pe)
      while (sent[pe] < kFetch + kPlain) {
        const bool fetch = sent[pe] % 3 != 2;
        const uint64_t add = fetch ? 1 : uint64_t{1} << 32;
        const SendResult r =
            net[pe].ep.send(0, &add, 8, fetch ? Kind::kFetch : Kind::kAcked, sent[pe]);
        if (r != SendResult::kOk) break;
        ++sent[pe];
      }
  };
  net.each_step = send_more;
  send_more();
  auto done = [&] {
    for (int pe = 1; pe < 4; ++pe)
      if (net[pe].replies.size() + net[pe].acked.size() < kFetch + kPlain) return false;
    return true;
  };
  ASSERT_TRUE(net.run(done));
  EXPECT_EQ(net[0].handled, 3u * (kFetch + kPlain));
  EXPECT_EQ(counter, 3 * kFetch + (uint64_t{3 * kPlain} << 32));
  std::vector<uint64_t> fetched;
  for (int pe = 1; pe < 4; ++pe)
    for (const auto &[token, replies] : net[pe].replies) {
      ASSERT_EQ(replies.size(), 1u);
      uint64_t old;
      std::memcpy(&old, replies[0].data(), 8);
      fetched.push_back(old & 0xffffffff);
    }
  std::sort(fetched.begin(), fetched.end());
  ASSERT_EQ(fetched.size(), 3u * kFetch);
  for (uint64_t i = 0; i < fetched.size(); ++i) ASSERT_EQ(fetched[i], i);
  EXPECT_GT(net[0].ep.stats().replays, 0u);
  net.quiesce();
  EXPECT_EQ(net[0].ep.memory_bytes(), 0u);
}

// Gets of the largest reply (8 segments) from PE 1, as many as the window lets go at once (a
// get_nbi of many chunks), into a receive queue of 24 slots (the window and a few acks). The
// replies awaited count against the window: at most 16 reply segments are on their way, nothing
// overflows, nothing is replayed. Fails when a fetch's reply size is not counted (16 fetches of
// one request segment each had 128 reply segments on their way: most overflowed, every replay
// of them overflowed again, which is how 1 MiB get_nbi crawled on soft-RoCE).
TEST(UdReliable, RepliesAwaitedStayWithinTheWindow) {
  Net net(2);
  net.rq_slots = 24;
  const Config c = test_config(2);
  const size_t reply_len = c.max_reply;
  net[0].handler = [&](int, const uint8_t *msg, size_t len, Reply &reply) {
    ASSERT_EQ(len, 4u);
    uint32_t index;
    std::memcpy(&index, msg, 4);
    ASSERT_EQ(reply.capacity, reply_len);
    reply.len = reply_len;
    for (size_t k = 0; k < reply_len; ++k) reply.data[k] = pattern(0, 1, index, k, 1);
  };
  constexpr uint32_t kGets = 64;
  uint32_t sent = 0;
  size_t most_in_flight = 0;
  net.each_step = [&] {
    most_in_flight = std::max(most_in_flight, net.in_flight_to(1));
    while (sent < kGets &&
           net[1].ep.send(0, &sent, 4, Kind::kFetch, sent, reply_len) == SendResult::kOk)
      ++sent;
  };
  net.each_step();
  ASSERT_TRUE(net.run([&] { return net[1].replies.size() == kGets; }));
  for (uint32_t i = 0; i < kGets; ++i) {
    ASSERT_EQ(net[1].replies[i].size(), 1u);
    const std::vector<uint8_t> &r = net[1].replies[i][0];
    ASSERT_EQ(r.size(), reply_len);
    for (size_t k = 0; k < reply_len; ++k) ASSERT_EQ(r[k], pattern(0, 1, i, k, 1)) << i << " " << k;
  }
  EXPECT_EQ(net.rq_overflows, 0u);
  EXPECT_LE(most_in_flight, size_t{c.max_window} + 4);
  EXPECT_EQ(net[0].ep.stats().replays, 0u);
  EXPECT_GT(net[1].ep.stats().reply_waits, 0u);  // the bound, not the send window, held them
}

// Scripted: the reply to PE 1's first fetching add is lost, and a duplicate of the request arrives
// 10 us after the original. The duplicate is answered at once from the cache (before the first
// timeout), the handler runs once. Fails when duplicates are executed again, or only acked.
TEST(UdReliable, DuplicateRequestReplaysCachedReply) {
  Net net(2);
  uint64_t counter = 40;
  fetch_add_target(net[0], counter);
  int replies_seen = 0;
  net.script = [&](int from, int, const Header &h) {
    if (from == 1 && h.type == Type::kRequest) return Fate::kDup;
    if (from == 0 && h.type == Type::kReply && replies_seen++ == 0) return Fate::kDrop;
    return Fate::kPass;
  };
  net.dup_delay = 10 * kUs;
  const uint64_t add = 2;
  ASSERT_EQ(net[1].ep.send(0, &add, 8, Kind::kFetch, 77), SendResult::kOk);
  ASSERT_TRUE(net.run([&] { return net[1].replies.count(77) > 0; }));
  EXPECT_LT(net.now, test_config(2).rto_ns);  // the duplicate, not the timer, brought it
  EXPECT_EQ(net[0].handled, 1u);
  EXPECT_EQ(counter, 42u);
  EXPECT_EQ(net[0].ep.stats().replays, 1u);
  uint64_t old;
  ASSERT_EQ(net[1].replies[77].size(), 1u);
  std::memcpy(&old, net[1].replies[77][0].data(), 8);
  EXPECT_EQ(old, 40u);
}

// Scripted: the reply is lost twice and the requester's retransmissions of its request (it saw
// no ack: the ack rode on the reply) are lost too, so no duplicate reaches the target: the target
// resends the reply on its own timer, after 20 us, then 40 us. Fails without the target's replay
// on timeout.
TEST(UdReliable, LostReplyIsResentByTheTarget) {
  Net net(2);
  uint64_t counter = 5;
  fetch_add_target(net[0], counter);
  int replies_seen = 0, requests_seen = 0;
  net.script = [&](int from, int, const Header &h) {
    if (from == 1 && h.type == Type::kRequest && requests_seen++ > 0) return Fate::kDrop;
    return from == 0 && h.type == Type::kReply && replies_seen++ < 2 ? Fate::kDrop : Fate::kPass;
  };
  const uint64_t add = 1;
  ASSERT_EQ(net[1].ep.send(0, &add, 8, Kind::kFetch, 1), SendResult::kOk);
  ASSERT_TRUE(net.run([&] { return net[1].replies.count(1) > 0; }));
  EXPECT_EQ(net[0].handled, 1u);
  EXPECT_EQ(net[0].ep.stats().replays, 2u);
  EXPECT_GE(net.now, 60 * kUs);
  net.quiesce();
  EXPECT_EQ(net[0].ep.memory_bytes(), 0u);  // the requester's rack released the cached reply
}

// Scripted: the reply is lost while the target keeps sending puts to the requester (their
// headers ack the request, so no duplicate comes, and their acks are progress on the target's own
// stream). The target's replay timer must not wait for its own stream to go quiet. Fails when
// request retransmission and reply replay share one timer reset by any progress.
TEST(UdReliable, ReplyReplayIsNotPostponedByOwnTraffic) {
  Net net(2);
  uint64_t counter = 0;
  fetch_add_target(net[0], counter);
  net[1].handler = [](int, const uint8_t *, size_t, Reply &) {};
  int replies_seen = 0;
  net.script = [&](int from, int, const Header &h) {
    return from == 0 && h.type == Type::kReply && replies_seen++ == 0 ? Fate::kDrop : Fate::kPass;
  };
  uint32_t puts = 0;
  net.each_step = [&] {
    if (net.now >= puts * 5 * kUs && puts < 100) {
      ASSERT_EQ(net[0].ep.send(1, "p", 1, Kind::kAcked, puts++), SendResult::kOk);
    }
  };
  const uint64_t add = 1;
  ASSERT_EQ(net[1].ep.send(0, &add, 8, Kind::kFetch, 1), SendResult::kOk);
  ASSERT_TRUE(net.run([&] { return net[1].replies.count(1) > 0; }));
  EXPECT_LT(net.now, 2 * test_config(2).rto_ns);
  EXPECT_EQ(net[1].ep.stats().retransmits, 0u);  // the request was acked: no duplicate came
  EXPECT_EQ(net[0].ep.stats().replays, 1u);
}

// PE 1 sends n blocking fetching adds to PE 0, one after another (`before` runs before each
// send), until every reply is in; PE 0's counter holds the sum.
void blocking_fetches(Net &net, uint64_t &counter, uint32_t n,
                      const std::function<void(uint32_t)> &before = nullptr) {
  fetch_add_target(net[0], counter);
  uint32_t sent = 0;
  net.each_step = [&] {
    if (sent < n && net[1].replies.size() == sent) {
      if (before) before(sent);
      const uint64_t add = 1;
      ASSERT_EQ(net[1].ep.send(0, &add, 8, Kind::kFetch, sent++), SendResult::kOk);
    }
  };
  net.each_step();
  ASSERT_TRUE(net.run([&] { return net[1].replies.size() == n; }));
  net.quiesce();
  EXPECT_EQ(counter, n);
}

// Blocking fetching adds under 20% loss, duplication and reordering, over a path whose round
// trip (about 100 us) exceeds rto_ns: the timeout follows the round trip up (no resend of every
// message) but does not stay doubled after each loss: samples come from echoed first sendings
// only, so a loss neither inflates one nor needs a doubling kept. Keeping each timeout's
// doubling until an unambiguous sample (Karn) drove it to rto_max (1 ms here).
TEST(UdReliable, TimeoutStaysNearTheRoundTripUnderSteadyLoss) {
  Net net(2, /*seed=*/7, /*fault=*/0.2);
  net.latency = 50 * kUs;
  uint64_t counter = 0, worst_rto = 0;
  blocking_fetches(net, counter, 300, [&](uint32_t i) {
    if (i >= 50) worst_rto = std::max(worst_rto, net[1].ep.rto_ns(0));
  });
  EXPECT_GT(net[1].ep.stats().retransmits, 0u);  // the losses happened
  EXPECT_GT(worst_rto, 100 * kUs);               // above the round trip ...
  EXPECT_LT(worst_rto, 500 * kUs) << "the timeout stayed doubled after losses";
}

// A path whose round trip (about 100 us) is five times rto_ns, as on a loaded host: blocking
// fetching adds one after another. The first message times out and is resent; its round trip,
// timed from its first sending (which the target echoes it received), is learned from it, and
// from then on the timeout exceeds the round trip: a handful of resends and replays in all, not
// one or more for every message. Fails without the round-trip estimate (every request resent,
// every reply replayed: hundreds).
TEST(UdReliable, TimeoutFollowsARoundTripLongerThanRto) {
  Net net(2);
  net.latency = 50 * kUs;
  constexpr uint32_t kFetches = 100;
  uint64_t counter = 0;
  blocking_fetches(net, counter, kFetches);
  EXPECT_EQ(net[0].handled, kFetches);
  const uint64_t resent = net[1].ep.stats().retransmits, replayed = net[0].ep.stats().replays;
  EXPECT_LE(resent + replayed, 10u) << resent << " requests resent, " << replayed << " replays";
  EXPECT_GT(net[1].ep.stats().rtt_samples, kFetches / 2);
  EXPECT_GT(net[1].ep.rto_ns(0), 100 * kUs);  // above the round trip ...
  EXPECT_LT(net[1].ep.rto_ns(0), test_config(2).rto_max_ns);  // ... not stuck at the cap
}

// --- Segmentation and reassembly ----------------------------------------------------------------

// Messages of 0 bytes to the whole window (16 segments), sizes around segment boundaries, and
// replies of 0 to 8 segments, both ways at once, under 20% faults: every byte arrives in place.
// Fails when a reply segment lands at the wrong offset, or when a duplicate is executed again.
TEST(UdReliable, LargeMessagesReassembleByteExact) {
  Net net(2, 5, 0.2);
  const size_t p = net[0].ep.payload_per_segment();
  const std::vector<size_t> sizes = {0, 1, p - 1, p, p + 1, 2 * p, 3 * p + 7, 16 * p - 1, 16 * p};
  const std::vector<size_t> reply_sizes = {0, 1, p, p + 1, 5 * p + 3, 8 * p - 1, 8 * p};
  std::vector<std::pair<size_t, size_t>> plan;  // (size, reply size or SIZE_MAX for none)
  for (size_t s : sizes) plan.push_back({s, SIZE_MAX});
  for (size_t s : sizes)
    for (size_t r : reply_sizes) plan.push_back({s, r});
  auto fill = [](uint8_t *b, size_t n, uint64_t salt) {
    for (size_t k = 0; k < n; ++k) b[k] = static_cast<uint8_t>(k * 29 + (k >> 8) * 3 + salt);
  };
  for (int me = 0; me < 2; ++me)
    net[me].handler = [&, me](int from, const uint8_t *msg, size_t len, Reply &reply) {
      const uint32_t i = static_cast<uint32_t>(net[me].handled - 1);
      ASSERT_LT(i, plan.size());
      ASSERT_EQ(len, plan[i].first);
      std::vector<uint8_t> want(len);
      fill(want.data(), len, i + from);
      ASSERT_EQ(0, std::memcmp(msg, want.data(), len)) << "message " << i;
      if (plan[i].second == SIZE_MAX) return;
      reply.len = plan[i].second;
      fill(reply.data, reply.len, i * 3 + me);
    };
  std::vector<uint32_t> sent(2, 0);
  net.each_step = [&] {
    for (int me = 0; me < 2; ++me)
      while (sent[me] < plan.size()) {
        const uint32_t i = sent[me];
        std::vector<uint8_t> msg(plan[i].first);
        fill(msg.data(), msg.size(), i + me);
        const Kind kind = plan[i].second == SIZE_MAX ? Kind::kAcked : Kind::kFetch;
        if (net[me].ep.send(1 - me, msg.data(), msg.size(), kind, i) != SendResult::kOk) break;
        ++sent[me];
      }
  };
  net.each_step();
  ASSERT_TRUE(net.run([&] {
    return net[0].acked.size() + net[0].replies.size() == plan.size() &&
           net[1].acked.size() + net[1].replies.size() == plan.size();
  }));
  for (int me = 0; me < 2; ++me)
    for (uint32_t i = 0; i < plan.size(); ++i) {
      if (plan[i].second == SIZE_MAX) {
        EXPECT_EQ(net[me].acked[i], 1);
        continue;
      }
      ASSERT_EQ(net[me].replies[i].size(), 1u);
      const std::vector<uint8_t> &r = net[me].replies[i][0];
      std::vector<uint8_t> want(plan[i].second);
      fill(want.data(), want.size(), i * 3 + (1 - me));
      EXPECT_EQ(r, want) << "reply " << i << " to PE " << me;
    }
  net.quiesce();
  EXPECT_EQ(net[0].ep.memory_bytes() + net[1].ep.memory_bytes(), 0u);
}

// --- Acknowledgements ---------------------------------------------------------------------------

// One put, no traffic back: the target's delayed standalone ack completes it after ack_delay,
// with no retransmission. Fails without the delayed ack (the put completes only after a
// timeout, through the duplicate's immediate ack).
TEST(UdReliable, DelayedStandaloneAckCompletesPuts) {
  Net net(2);
  net[1].handler = [](int, const uint8_t *, size_t, Reply &) {};
  const uint64_t t0 = 3 * kUs;
  net.now = t0;
  ASSERT_EQ(net[0].ep.send(1, "abc", 3, Kind::kAcked, 9), SendResult::kOk);
  ASSERT_TRUE(net.run([&] { return net[0].acked.count(9) > 0; }));
  const Config c = test_config(2);
  EXPECT_GE(net.now, t0 + c.ack_delay_ns);
  EXPECT_LT(net.now, t0 + c.rto_ns);
  EXPECT_EQ(net[1].ep.stats().standalone_acks, 1u);
  EXPECT_EQ(net[0].ep.stats().retransmits, 0u);
  EXPECT_EQ(net[0].ep.stats().timeouts, 0u);
  net.quiesce();
  EXPECT_EQ(net[0].ep.memory_bytes() + net[1].ep.memory_bytes(), 0u);
}

// Acks ride on traffic: a reply carries the ack of its request (the target sends no standalone
// ack; the requester owes one, its rack, so the target can drop the cached reply), and in a
// ping-pong of puts each put carries the ack of the one before. Fails when headers carry no ack
// or sending does not cancel the delayed ack (standalone acks for everything).
TEST(UdReliable, AcksRideOnRepliesAndTraffic) {
  Net net(2);
  uint64_t counter = 0;
  fetch_add_target(net[0], counter);
  const uint64_t add = 1;
  ASSERT_EQ(net[1].ep.send(0, &add, 8, Kind::kFetch, 1), SendResult::kOk);
  net.quiesce();
  ASSERT_EQ(net[1].replies.count(1), 1u);
  EXPECT_EQ(net[0].ep.stats().standalone_acks, 0u);
  EXPECT_EQ(net[1].ep.stats().standalone_acks, 1u);
  EXPECT_EQ(net[0].ep.memory_bytes() + net[1].ep.memory_bytes(), 0u);

  // Ping-pong: each PE answers a put with a put, at once (outside the callback).
  Net pp(2);
  int owed[2] = {1, 0}, sent = 0;
  for (int me = 0; me < 2; ++me)
    pp[me].handler = [&owed, me](int, const uint8_t *, size_t, Reply &) { ++owed[me]; };
  pp.each_step = [&] {
    for (int me = 0; me < 2; ++me)
      for (; owed[me] > 0 && sent < 100; --owed[me], ++sent)
        ASSERT_EQ(pp[me].ep.send(1 - me, "p", 1, Kind::kAcked, sent), SendResult::kOk);
  };
  pp.each_step();
  pp.quiesce();
  EXPECT_EQ(pp[0].acked.size() + pp[1].acked.size(), 100u);
  EXPECT_EQ(pp[0].ep.stats().standalone_acks + pp[1].ep.stats().standalone_acks, 1u);  // the last
}

// --- Window and congestion control --------------------------------------------------------------

// The send buffer holds max_window segments; beyond it send() says busy until acks free room.
// Only initial_window segments go on the wire at first. Fails without the congestion window (all
// 16 go out at once).
TEST(UdReliable, FullWindowPushesBack) {
  Net net(2);
  net[1].handler = [](int, const uint8_t *, size_t, Reply &) {};
  const Config c = test_config(2);
  uint32_t accepted = 0;
  while (net[0].ep.send(1, &accepted, 4, Kind::kAcked, accepted) == SendResult::kOk) ++accepted;
  EXPECT_EQ(accepted, c.max_window);
  EXPECT_EQ(net.log.size(), c.initial_window);
  // A message of 2 segments does not fit either.
  std::vector<uint8_t> two(net[0].ep.payload_per_segment() + 1);
  EXPECT_EQ(net[0].ep.send(1, two.data(), two.size(), Kind::kAcked, 100), SendResult::kBusy);
  ASSERT_TRUE(net.run([&] { return !net[0].acked.empty(); }));
  EXPECT_EQ(net[0].ep.send(1, &accepted, 4, Kind::kAcked, accepted), SendResult::kOk);
  net.quiesce();
  EXPECT_EQ(net[0].acked.size(), c.max_window + 1);
  EXPECT_EQ(net[1].handled, c.max_window + 1);
}

// A fetch holds its room in the window until its reply arrives (so the target's reply cache is
// bounded by the window), not only until its request is acked. Replies are lost for a while;
// PE 0's own puts to PE 1 carry the acks meanwhile. Fails when the window counts from the oldest
// unacked segment instead of the oldest incomplete message.
TEST(UdReliable, FetchHoldsTheWindowUntilItsReply) {
  Net net(2);
  uint64_t counter = 0;
  fetch_add_target(net[0], counter);
  net[1].handler = [](int, const uint8_t *, size_t, Reply &) {};
  net.script = [](int from, int, const Header &h) {
    return from == 0 && h.type == Type::kReply ? Fate::kDrop : Fate::kPass;
  };
  uint32_t puts = 0;
  net.each_step = [&] {
    if (net.now >= puts * 10 * kUs && puts < 20) {
      ASSERT_EQ(net[0].ep.send(1, "p", 1, Kind::kAcked, puts++), SendResult::kOk);
    }
  };
  const uint64_t add = 1;
  uint32_t accepted = 0;
  while (net[1].ep.send(0, &add, 8, Kind::kFetch, accepted) == SendResult::kOk) ++accepted;
  EXPECT_EQ(accepted, test_config(2).max_window);
  net.run([&] { return net.now > 200 * kUs; });
  EXPECT_EQ(net[0].handled, accepted);  // every request arrived and was acked ...
  EXPECT_EQ(net[1].ep.stats().retransmits, 0u);
  EXPECT_EQ(net[1].ep.send(0, &add, 8, Kind::kFetch, 99), SendResult::kBusy);  // ... still busy
  net.script = nullptr;
  ASSERT_TRUE(net.run([&] { return net[1].replies.size() == accepted; }));
  EXPECT_EQ(net[1].ep.send(0, &add, 8, Kind::kFetch, 99), SendResult::kOk);
}

// AIMD: cwnd grows from initial_window to max_window as acks come, halves at each timeout, and
// grows again. Fails without growth on ack or without the halving (and without the early-segment
// buffer: the wire's jitter reorders a little, and each reordering then costs a timeout).
TEST(UdReliable, CongestionWindowGrowsOnAckAndHalvesOnTimeout) {
  Net net(2);
  net[1].handler = [](int, const uint8_t *, size_t, Reply &) {};
  const Config c = test_config(2);
  uint32_t sent = 0;
  bool blackout = false;
  net.script = [&](int from, int, const Header &) {
    return blackout && from == 0 ? Fate::kDrop : Fate::kPass;
  };
  net.each_step = [&] {
    while (net[0].ep.send(1, &sent, 4, Kind::kAcked, sent) == SendResult::kOk) ++sent;
  };
  EXPECT_EQ(net[0].ep.cwnd(1), c.initial_window);
  net.each_step();
  ASSERT_TRUE(net.run([&] { return net[0].acked.size() >= 200; }));
  EXPECT_EQ(net[0].ep.cwnd(1), c.max_window);
  blackout = true;
  const uint64_t timeouts = net[0].ep.stats().timeouts;
  ASSERT_TRUE(net.run([&] { return net[0].ep.stats().timeouts == timeouts + 1; }));
  EXPECT_EQ(net[0].ep.cwnd(1), c.max_window / 2);
  ASSERT_TRUE(net.run([&] { return net[0].ep.stats().timeouts == timeouts + 3; }));
  EXPECT_EQ(net[0].ep.cwnd(1), c.max_window / 8);
  blackout = false;
  const size_t acked = net[0].acked.size();
  ASSERT_TRUE(net.run([&] { return net[0].acked.size() >= acked + 300; }));
  EXPECT_EQ(net[0].ep.cwnd(1), c.max_window);
  EXPECT_TRUE(net[0].failed_peers.empty());
}

// --- A peer that stops answering ----------------------------------------------------------------

// PE 1 dies with puts and fetches to it in flight. PE 0 retransmits with doubling intervals capped
// at rto_max (not a loop at rto), reports the peer once within give_up_ns of its last answer,
// fails every pending token once, then sends nothing more to it and refuses new sends. Fails
// without the give-up (runs forever), without the backoff (hundreds of retransmissions), or when
// pending tokens are dropped silently.
TEST(UdReliable, SilentPeerFailsOnceWithinGiveUp) {
  Net net(3);
  uint64_t counter = 0;
  fetch_add_target(net[1], counter);
  const Config c = test_config(3);
  uint32_t sent = 0;
  net.each_step = [&] {
    for (; sent < 40; ++sent) {
      const uint64_t add = 1;
      if (net[0].ep.send(1, &add, 8, sent % 2 ? Kind::kFetch : Kind::kAcked, sent) !=
          SendResult::kOk)
        break;
    }
  };
  net.each_step();
  ASSERT_TRUE(net.run([&] { return net[0].acked.size() + net[0].replies.size() >= 10; }));
  const uint64_t t_dead = net.now;
  net[1].silent = true;
  const size_t log_from = net.log.size();
  ASSERT_TRUE(net.run([&] { return !net[0].failed_peers.empty(); }));
  ASSERT_EQ(net[0].failed_peers.size(), 1u);
  EXPECT_EQ(net[0].failed_peers[0].first, 1);
  const uint64_t t_failed = net[0].failed_peers[0].second;
  EXPECT_LE(t_failed, t_dead + c.give_up_ns);
  EXPECT_GE(t_failed, t_dead + c.give_up_ns - 10 * kUs);  // last answer: a few us before
  EXPECT_TRUE(net[0].ep.failed(1));
  // Every token completed or failed, exactly once.
  for (uint32_t t = 0; t < sent; ++t) {
    const int done = net[0].acked.count(t) + static_cast<int>(net[0].replies.count(t)) +
                     net[0].failed_tokens.count(t);
    EXPECT_EQ(done, 1) << t;
    EXPECT_LE(net[0].failed_tokens[t], 1);
  }
  EXPECT_GE(net[0].failed_tokens.size(), 1u);
  // Retransmission rounds to PE 1: intervals never shrink, are capped, and are few.
  std::vector<uint64_t> rounds;
  for (size_t i = log_from; i < net.log.size(); ++i)
    if (net.log[i].from == 0 && net.log[i].to == 1 && net.log[i].h.type == Type::kRequest &&
        (rounds.empty() || net.log[i].at != rounds.back()))
      rounds.push_back(net.log[i].at);
  ASSERT_GE(rounds.size(), 3u);
  for (size_t i = 2; i < rounds.size(); ++i) {
    EXPECT_GE(rounds[i] - rounds[i - 1], rounds[i - 1] - rounds[i - 2]);
    EXPECT_LE(rounds[i] - rounds[i - 1], c.rto_max_ns);
  }
  EXPECT_LT(rounds.size(), 70u);  // 6 doublings, then give_up / rto_max
  // Then nothing: no datagram to PE 1, no deadline, no new sends.
  const size_t after = net.log.size();
  const uint64_t add = 1;
  EXPECT_EQ(net[0].ep.send(1, &add, 8, Kind::kAcked, 1000), SendResult::kFailed);
  EXPECT_EQ(net[0].ep.poll(), kNever);
  net.quiesce();
  EXPECT_EQ(net.log.size(), after);
  EXPECT_EQ(net[0].failed_peers.size(), 1u);
  EXPECT_EQ(net[0].ep.memory_bytes(), 0u);
  // Another peer is unaffected.
  net[2].handler = [](int, const uint8_t *, size_t, Reply &) {};
  ASSERT_EQ(net[0].ep.send(2, &add, 8, Kind::kAcked, 2000), SendResult::kOk);
  net.quiesce();
  EXPECT_EQ(net[0].acked.count(2000), 1u);
}

// The target side: PE 0's requester dies after its fetch was executed and before the reply
// arrived; PE 1 keeps resending the cached reply, then reports PE 0 within give_up_ns and frees
// the cache. Fails when a reply never released is kept forever.
TEST(UdReliable, TargetGivesUpOnSilentRequester) {
  Net net(2);
  uint64_t counter = 0;
  fetch_add_target(net[1], counter);
  const Config c = test_config(2);
  net.script = [&](int from, int, const Header &h) {
    if (from == 1 && h.type == Type::kReply) net[0].silent = true;  // dies as the reply flies
    return Fate::kPass;
  };
  const uint64_t add = 1;
  ASSERT_EQ(net[0].ep.send(1, &add, 8, Kind::kFetch, 5), SendResult::kOk);
  ASSERT_TRUE(net.run([&] { return !net[1].failed_peers.empty(); }));
  EXPECT_EQ(net[1].failed_peers[0].first, 0);
  EXPECT_LE(net.now, c.give_up_ns + 10 * kUs);
  EXPECT_GT(net[1].ep.stats().replays, 5u);
  EXPECT_EQ(net[1].ep.memory_bytes(), 0u);
  EXPECT_EQ(net[1].handled, 1u);
}

// --- Memory -------------------------------------------------------------------------------------

// An idle peer costs a small fixed record; buffers come and go with traffic. Prints the sizes
// for the default configuration (mtu 4096, window 32).
TEST(UdReliable, IdlePeersHoldNothing) {
  EXPECT_LE(Endpoint::idle_peer_bytes(), 56u);  // with its round-trip estimate
  Net net(4);
  uint64_t counter = 0;
  fetch_add_target(net[1], counter);
  for (int me = 2; me < 4; ++me) net[me].handler = [](int, const uint8_t *, size_t, Reply &) {};
  const uint64_t add = 1;
  ASSERT_EQ(net[0].ep.send(1, &add, 8, Kind::kFetch, 1), SendResult::kOk);
  const size_t one_amo = net[0].ep.memory_bytes();
  for (int to = 2; to < 4; ++to)
    ASSERT_EQ(net[0].ep.send(to, &add, 8, Kind::kAcked, to), SendResult::kOk);
  EXPECT_EQ(net[0].ep.memory_bytes(), 3 * one_amo);
  EXPECT_LE(net[0].ep.memory_bytes(), 3 * net[0].ep.memory_bound_per_peer());
  ASSERT_TRUE(net.run([&] { return net[1].handled == 1; }));
  EXPECT_GT(net[1].ep.memory_bytes(), 0u);  // the cached reply
  net.quiesce();
  for (int me = 0; me < 4; ++me) EXPECT_EQ(net[me].ep.memory_bytes(), 0u);
  // What they gave back is kept for reuse, within a bound that does not grow with the peers.
  EXPECT_GT(net[0].ep.spare_bytes(), 0u);
  for (int me = 0; me < 4; ++me) EXPECT_LE(net[me].ep.spare_bytes(), net[me].ep.spare_bound());

  struct Quiet : Callbacks {
    uint64_t now_ns() override { return 0; }
    void send_datagram(int, const iovec *, int) override {}
    void handle(int, const void *, size_t, Reply &) override {}
    void on_acked(uint64_t) override {}
    void on_reply(uint64_t, const void *, size_t) override {}
    void on_peer_failed(int) override {}
    void on_failed(uint64_t) override {}
  } quiet;
  Config defaults;
  defaults.npes = 2;
  Endpoint ep(defaults, quiet);
  ASSERT_EQ(ep.send(1, &add, 8, Kind::kFetch, 1), SendResult::kOk);
  printf(
      "idle peer %zu bytes; one 8-byte AMO in flight %zu bytes; bound per active peer %zu "
      "bytes (defaults)\n",
      Endpoint::idle_peer_bytes(), ep.memory_bytes(), ep.memory_bound_per_peer());
}

// --- Contract -----------------------------------------------------------------------------------

TEST(UdReliableDeathTest, MessageLargerThanTheWindowIsFatal) {
  Net net(2);
  std::vector<uint8_t> big(16 * net[0].ep.payload_per_segment() + 1);
  EXPECT_EXIT(net[0].ep.send(1, big.data(), big.size(), Kind::kAcked, 0),
              testing::ExitedWithCode(1), "more than the window");
}

TEST(UdReliableDeathTest, CallingBackFromACallbackIsFatal) {
  Net net(2);
  net[1].handler = [&](int, const uint8_t *, size_t, Reply &) {
    net[1].ep.send(0, "y", 1, Kind::kAcked, 0);
  };
  ASSERT_EQ(net[0].ep.send(1, "x", 1, Kind::kAcked, 0), SendResult::kOk);
  EXPECT_EXIT(net.quiesce(), testing::ExitedWithCode(1), "own callbacks");
}

}  // namespace
}  // namespace hoshmem::ud
