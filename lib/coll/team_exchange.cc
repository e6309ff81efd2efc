#include "lib/coll/team_exchange.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "lib/coll/collectives.h"

namespace hoshmem::coll {
namespace {

// One message: written by the sender into the receiver's buffer with peer::write, then the flag
// with peer::store, which publishes the words. Each buffer has one writer: the receiver's partner
// in that round.
struct alignas(shm::kCacheLine) MgmtBuffer {
  std::atomic<uint64_t> flag;  // epoch of the exchange whose data is here
  uint64_t words[16];
};
constexpr int kMgmtWords = 16;
// Round 0: fold-in from a rank above the largest power of two; rounds 1..32: recursive doubling;
// round 33: fold-out of the result.
constexpr int kMgmtRounds = 34;
struct MgmtArea {
  MgmtBuffer buf[2][kMgmtRounds];  // by epoch parity: a sender can be at most one exchange ahead
};
static_assert(sizeof(MgmtArea) <= kMgmtReserveBytes);

// My area; it also names every other member's.
MgmtArea &my_area(const TeamView &t) {
  return *reinterpret_cast<MgmtArea *>(t.my_scratch() + shm::kTeamSlotBytes - kMgmtReserveBytes);
}

void mgmt_send(const TeamView &t, int member, int parity, int round, uint64_t epoch,
               const uint64_t *words, int n) {
  MgmtBuffer &b = my_area(t).buf[parity][round];
  const int pe = t.world_pe(member);
  if (n) peer::write(pe, b.words, words, n * sizeof(uint64_t));
  peer::store(pe, &b.flag, epoch);
  peer::ring(pe);
}

const MgmtBuffer &mgmt_receive(const TeamView &t, int parity, int round, uint64_t epoch) {
  MgmtBuffer &b = my_area(t).buf[parity][round];
  wait_until_ready(*t.wait, t.my_control(), shm::kSleepForSync,
                   [&] { return b.flag.load(std::memory_order_acquire) >= epoch; });
  return b;
}

void mgmt_receive_or(const TeamView &t, int parity, int round, uint64_t epoch, uint64_t *acc,
                     int n) {
  const MgmtBuffer &b = mgmt_receive(t, parity, round, epoch);
  for (int i = 0; i < n; ++i) acc[i] |= b.words[i];
}

// One exchange of up to kMgmtWords words. Ranks at or above the largest power of two p fold into
// rank - p first and get the result back last; the others do log2(p) pairwise rounds.
void allreduce_or_chunk(const TeamView &t, uint64_t &epoch_counter, uint64_t *acc, int n) {
  const int size = t.size, rank = t.rank;
  const uint64_t epoch = ++epoch_counter;
  const int parity = static_cast<int>(epoch & 1);
  int pow2 = 1, log2 = 0;
  while (pow2 * 2 <= size) pow2 *= 2, ++log2;
  if (rank >= pow2) {
    mgmt_send(t, rank - pow2, parity, 0, epoch, acc, n);
    const MgmtBuffer &b = mgmt_receive(t, parity, kMgmtRounds - 1, epoch);
    memcpy(acc, b.words, n * sizeof(uint64_t));
    return;
  }
  if (rank + pow2 < size) mgmt_receive_or(t, parity, 0, epoch, acc, n);
  for (int k = 0; k < log2; ++k) {
    mgmt_send(t, rank ^ (1 << k), parity, 1 + k, epoch, acc, n);
    mgmt_receive_or(t, parity, 1 + k, epoch, acc, n);
  }
  if (rank + pow2 < size) mgmt_send(t, rank + pow2, parity, kMgmtRounds - 1, epoch, acc, n);
}

}  // namespace

void allreduce_or(const TeamView &t, uint64_t &epoch, uint64_t *words, size_t n) {
  if (t.size == 1) return;
  if (n == 0) return allreduce_or_chunk(t, epoch, words, 0);
  for (size_t at = 0; at < n; at += kMgmtWords)
    allreduce_or_chunk(t, epoch, words + at, static_cast<int>(std::min<size_t>(kMgmtWords, n - at)));
}

void retire_slot(const TeamView &t, uint64_t &epoch) {
  // A cell's consumed count stored into a member's slot is not waited for by anyone, so it could
  // still be on its way: flush first. Everything else written into a slot was waited for.
  flush_writes();
  allreduce_or(t, epoch, nullptr, 0);
  memset(t.my_scratch(), 0, shm::kTeamSlotBytes);
}

}  // namespace hoshmem::coll
