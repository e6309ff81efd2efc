#include "lib/coll/collectives.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <vector>

#include "lib/base/error.h"

namespace hoshmem::coll {
namespace {

// --- channels (see collectives.h) ---------------------------------------------------------------

// My channel for world PE `pe`, in my slot. Counts are kept mod 2^32: a pair never has 2^32
// messages outstanding, so the difference sent - taken is exact.
struct Channel {
  std::atomic<uint64_t> arrived;  // messages `pe` has sent me; stored by `pe` only
  uint32_t taken;                 // messages from `pe` I have taken (mine only)
  uint32_t sent;                  // messages I have sent to `pe` (mine only)
};
static_assert(sizeof(Channel) == kChannelStride);

Channel &channel(char *slot, int world_pe) { return reinterpret_cast<Channel *>(slot)[world_pe]; }

uint32_t pending(const Channel &c) {
  return static_cast<uint32_t>(c.arrived.load(std::memory_order_acquire)) - c.taken;
}

// One message to member `to`: my new count into my channel in its slot (named by my own channel
// for myself). On this node a seq_cst store, which publishes every store made before it (data the
// receiver will read) and orders against the doorbell check; off node an RDMA write that follows
// every earlier write to `to`.
void send(const TeamView &t, int to) {
  const int pe = t.world[to];
  char *slot = t.my_scratch();
  const uint32_t count = ++channel(slot, pe).sent;
  peer::store(pe, &channel(slot, t.world[t.rank]).arrived, count);
  peer::ring(pe);
}

// Waits until ready(); with t.watch, also fails if member `peer` cannot come any more (TeamView).
template <class Ready>
void wait_for(const TeamView &t, int peer, Ready &&ready) {
  if (!t.watch) return wait_until_ready(*t.wait, t.my_control(), shm::kSleepForSync, ready);
  const uint64_t mine = t.my_control()->barriers_entered.value.load(std::memory_order_relaxed);
  uint64_t theirs = 0;
  int64_t last_read = 0;
  wait_until_ready(*t.wait, t.my_control(), shm::kSleepForSync, [&] {
    if (ready()) return true;
    // Ready again after the count: the peer's message may have landed while the count was read
    // (it completes its writes before it enters a barrier, so a count that shows it there
    // proves the message is here if it was ever sent).
    if (barriers_entered(t.world[peer], &theirs, &last_read) > mine && !ready()) [[unlikely]]
      fatal(t.watch,
            "PE %d went on to a barrier_all without calling this collective with the same "
            "team or (PE_start, logPE_stride, PE_size)",
            t.world[peer]);
    return false;
  });
}

// Takes one message from member `from`, waiting (and yielding) until there is one.
void receive(const TeamView &t, int from) {
  Channel &c = channel(t.my_scratch(), t.world[from]);
  if (pending(c) == 0) wait_for(t, from, [&] { return pending(c) != 0; });
  ++c.taken;
}

// Member 0 takes one message from every other member, in one wait (each wait is a possible
// context switch when members share cores).
void receive_from_all_others(const TeamView &t) {
  char *slot = t.my_scratch();
  int missing = 1;  // members below it have a message waiting
  auto all_there = [&] {
    for (; missing < t.size; ++missing)
      if (pending(channel(slot, t.world[missing])) == 0) return false;
    return true;
  };
  if (!all_there()) wait_for(t, missing, all_there);
  for (int m = 1; m < t.size; ++m) ++channel(slot, t.world[m]).taken;
}

// Binomial tree over relative ranks v = (rank - root) mod n: parent of v > 0 is v without its
// highest bit; children are v + m for powers of two m above v's highest bit.
int high_bit(int v) { return v ? 1 << (31 - __builtin_clz(static_cast<unsigned>(v))) : 0; }
int first_child_step(int v) { return v ? high_bit(v) << 1 : 1; }

// Member m's copy of my `bytes` at `mine` (a symmetric object, or a place in my slot): read in
// place through the mapping on this node, else copied with peer::read (an RDMA read) into `copy`.
const char *peer_bytes(const TeamView &t, int member, const void *mine, size_t bytes, char *copy) {
  if (const char *there = peer::mapped(t.world[member], mine)) return there;
  peer::read(t.world[member], copy, mine, bytes);
  return copy;
}

// Member m's copy of `bytes` at `mine` into `out` (mapped: memcpy; off node: peer::read).
void copy_from(const TeamView &t, int member, void *out, const void *mine, size_t bytes) {
  if (const char *there = peer::mapped(t.world[member], mine)) memcpy(out, there, bytes);
  else peer::read(t.world[member], out, mine, bytes);
}

// Values a member shows the others in its slot, written before the sync that lets them read it.
// Line 0: collect's sizes; line 1: the arguments compared under SHMEM_DEBUG.
struct Shown {
  alignas(64) std::atomic<uint64_t> a, b;
};
Shown &my_shown(const TeamView &t, int line) {
  return reinterpret_cast<Shown *>(t.my_scratch() + kPublishOffset)[line];
}
void show(const TeamView &t, int line, uint64_t a, uint64_t b) {
  Shown &s = my_shown(t, line);
  s.a.store(a, std::memory_order_relaxed);
  s.b.store(b, std::memory_order_relaxed);
}
// What member m shows on `line`: loads from its mapping, or one RDMA read of both words.
void shown_by(const TeamView &t, int member, int line, uint64_t *a, uint64_t *b) {
  Shown &mine = my_shown(t, line);
  if (char *there = peer::mapped(t.world[member], &mine)) {
    const Shown &s = *reinterpret_cast<const Shown *>(there);
    *a = s.a.load(std::memory_order_relaxed);
    *b = s.b.load(std::memory_order_relaxed);
    return;
  }
  uint64_t line_copy[sizeof(Shown) / sizeof(uint64_t)];
  peer::read(t.world[member], line_copy, &mine, sizeof line_copy);
  *a = line_copy[offsetof(Shown, a) / sizeof(uint64_t)];
  *b = line_copy[offsetof(Shown, b) / sizeof(uint64_t)];
}

// SHMEM_DEBUG: every member must pass the same (a, b); a mismatch is fatal on the PE that sees
// it. Costs two syncs (the second keeps a fast member from overwriting its values while a slow one
// still compares), so it runs only when `check` names the routine.
void agree(const TeamView &t, uint64_t a, uint64_t b, const char *names, const char *check) {
  if (!check || t.size == 1) return;
  show(t, 1, a, b);
  sync(t);
  for (int m = 0; m < t.size; ++m) {
    uint64_t ma, mb;
    shown_by(t, m, 1, &ma, &mb);
    if (ma != a || mb != b) [[unlikely]]
      fatal(check, "arguments differ across the team: (%s) is (%llu, %llu) here, (%llu, %llu) on PE %d",
            names, static_cast<unsigned long long>(a), static_cast<unsigned long long>(b),
            static_cast<unsigned long long>(ma), static_cast<unsigned long long>(mb), t.world[m]);
  }
  sync(t);
}

char *my_staging(const TeamView &t) { return t.my_scratch() + kStagingOffset; }

// --- push cells (see kCellPes in collectives.h) -------------------------------------------------

bool cells_fit(const TeamView &t, size_t bytes) {
  if (bytes > kCellBytes || t.size > kCellPes) return false;
  for (int m = 0; m < t.size; ++m)
    if (t.world[m] >= kCellPes) return false;
  return true;
}

std::atomic<uint64_t> &cell_counter(char *slot, size_t offset, int world_pe) {
  return reinterpret_cast<std::atomic<uint64_t> *>(slot + offset)[world_pe];
}

// The cell of world PE `sender` in my slot that carries its `count`-th cell (counting from 0);
// for sender == me it names that cell of mine in every receiver's slot.
char *cell(char *slot, int sender_world_pe, uint64_t count) {
  return slot + kCellsOffset +
         (static_cast<size_t>(sender_world_pe) * kCellDepth + count % kCellDepth) * kCellBytes;
}

// Cells I wrote to `to` so far.
uint64_t cells_sent(const TeamView &t, int to) {
  return cell_counter(t.my_scratch(), kCellSentOffset, t.world[to]).load(std::memory_order_relaxed);
}

// `to` has room for my next cell: fewer than kCellDepth of mine unconsumed (a load of my own
// memory: `to` stores the count).
bool cell_free(const TeamView &t, int to) {
  const uint64_t consumed = cell_counter(t.my_scratch(), kCellConsumedOffset, t.world[to])
                                .load(std::memory_order_acquire);
  return cells_sent(t, to) - consumed < kCellDepth;
}

// Where to produce my next cell for `to`: that cell in its slot when it is mapped here (written
// in place), else `bounce` (sent by post_cell). Waits until `to` has room for it.
char *claim_cell(const TeamView &t, int to, char *bounce) {
  if (!cell_free(t, to)) wait_for(t, to, [&] { return cell_free(t, to); });
  char *there =
      peer::mapped(t.world[to], cell(t.my_scratch(), t.world[t.rank], cells_sent(t, to)));
  return there ? there : bounce;
}

// The cell claimed from `to` holds `bytes`: count it and tell `to`. Off node, one batch of
// writes (one doorbell): the bytes, the message that publishes them (send's count, after
// them), and my release of `to`'s cells if one is owed (release_cell).
void post_cell(const TeamView &t, int to, const char *claimed, size_t bytes) {
  char *mine = t.my_scratch();
  const int pe = t.world[to], me = t.world[t.rank];
  char *name = cell(mine, me, cells_sent(t, to));
  cell_counter(mine, kCellSentOffset, pe).fetch_add(1, std::memory_order_relaxed);
  if (peer::on_node(pe)) return send(t, to);
  const uint64_t count = ++channel(mine, pe).sent;
  const uint64_t taken = cell_counter(mine, kCellTakenOffset, pe).load(std::memory_order_relaxed);
  auto &announced = cell_counter(mine, kCellAnnouncedOffset, pe);
  peer::Write writes[3] = {{name, claimed, bytes},
                           {&channel(mine, me).arrived, &count, sizeof count},
                           {&cell_counter(mine, kCellConsumedOffset, me), &taken, sizeof taken}};
  const bool owed = announced.load(std::memory_order_relaxed) != taken;
  peer::write_all(pe, writes, owed ? 3 : 2);
  if (owed) announced.store(taken, std::memory_order_relaxed);
}

void push_cell(const TeamView &t, int to, const void *data, size_t bytes) {
  alignas(64) char bounce[kCellBytes];
  char *c = claim_cell(t, to, bounce);
  memcpy(c, data, bytes);
  post_cell(t, to, c, bytes);
}

// Member `from`'s next cell in my slot (the one after those I have consumed).
const char *next_cell(const TeamView &t, int from) {
  char *mine = t.my_scratch();
  const int pe = t.world[from];
  return cell(mine, pe, cell_counter(mine, kCellTakenOffset, pe).load(std::memory_order_relaxed));
}

// Waits for member `from`'s next cell write and returns the cell (valid until release_cell).
const char *arrived_cell(const TeamView &t, int from) {
  receive(t, from);
  return next_cell(t, from);
}

// Done with `from`'s cell: my count of consumed cells into its slot, where it polls (wake it if
// it waits for that). Off node the count may wait, one cell behind, for my next cell to `from`
// to carry it (post_cell): `from` can always write one more cell while all it sent are consumed
// (kCellDepth 2), so the release of the last one is owed, never needed, and a pair exchanging
// cells call after call pays one doorbell per cell.
void release_cell(const TeamView &t, int from) {
  char *mine = t.my_scratch();
  const int pe = t.world[from];
  auto &taken = cell_counter(mine, kCellTakenOffset, pe);
  const uint64_t count = taken.load(std::memory_order_relaxed) + 1;
  taken.store(count, std::memory_order_relaxed);
  auto &announced = cell_counter(mine, kCellAnnouncedOffset, pe);
  static_assert(kCellDepth == 2, "a sender needs releases at most kCellDepth - 1 behind");
  if (!peer::on_node(pe) && count - announced.load(std::memory_order_relaxed) < kCellDepth) return;
  announced.store(count, std::memory_order_relaxed);
  peer::store(pe, &cell_counter(mine, kCellConsumedOffset, t.world[t.rank]), count);
  peer::ring(pe);
}

// One round of cells with every other member: produce(member, cell) fills the cell this member
// sends to `member`, consume(member, cell) reads the one it received from `member`. Sends and
// receives proceed in whatever order they become possible (a receiver still holding my previous
// cell, a sender that is late) and the member waits only when neither can: on shared cores each
// wait can cost a context switch, so nobody waits for one peer while another is ready. Every
// wait is on my own memory (consumed counts and channels in my slot).
template <class Produce, class Consume>
void exchange_cells(const TeamView &t, Produce &&produce, Consume &&consume) {
  const int n = t.size, me = t.rank;
  char *mine = t.my_scratch();
  const uint64_t others =
      (n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1) & ~(uint64_t{1} << me);
  uint64_t to_send = others, to_take = others;
  alignas(64) char bounce[kCellBytes];
  auto can_take = [&](int m) { return pending(channel(mine, t.world[m])) != 0; };
  auto any_ready = [&] {
    for (uint64_t p = to_send; p; p &= p - 1)
      if (cell_free(t, __builtin_ctzll(p))) return true;
    for (uint64_t p = to_take; p; p &= p - 1)
      if (can_take(__builtin_ctzll(p))) return true;
    return false;
  };
  while (to_send | to_take) {
    bool progressed = false;
    for (int s = 1; s < n; ++s) {  // from the right neighbour on, so senders spread out
      const int m = (me + s) % n;
      const uint64_t bit = uint64_t{1} << m;
      if ((to_send & bit) && cell_free(t, m)) {
        char *c = claim_cell(t, m, bounce);
        post_cell(t, m, c, produce(m, c));
        to_send &= ~bit;
        progressed = true;
      }
    }
    for (int s = 1; s < n; ++s) {
      const int m = (me - s + n) % n;
      const uint64_t bit = uint64_t{1} << m;
      if ((to_take & bit) && can_take(m)) {
        ++channel(mine, t.world[m]).taken;
        consume(m, next_cell(t, m));
        release_cell(t, m);
        to_take &= ~bit;
        progressed = true;
      }
    }
    if (!progressed) wait_for(t, __builtin_ctzll(to_send | to_take), any_ready);
  }
}

// Element range of member m when nelems are split in n nearly equal parts.
void share(size_t nelems, int n, int m, size_t *lo, size_t *hi) {
  const size_t base = nelems / n, extra = nelems % n;
  const size_t um = static_cast<size_t>(m);
  *lo = um * base + std::min(um, extra);
  *hi = *lo + base + (um < extra ? 1 : 0);
}

// --- reductions -----------------------------------------------------------------------------

// Up a binomial tree rooted at member 0 through the staging areas, then the result back down.
// Messages per pair: child->parent "partial ready", parent->child "result ready", child->parent
// "copied" (the parent's staging may be reused only after that). A parent reads its children's
// staging and a child its parent's: in place on this node, with peer::read off node.
void reduce_tree(const TeamView &t, void *dest, const void *source, size_t nelems,
                 size_t elem_size, Combine combine) {
  const int n = t.size, v = t.rank;
  const size_t bytes = nelems * elem_size;
  char *mine = my_staging(t);
  alignas(64) char copy[kSmallReduceBytes];
  memcpy(mine, source, bytes);
  const int first = first_child_step(v);
  for (int m = first; v + m < n; m <<= 1) {
    receive(t, v + m);
    combine(mine, peer_bytes(t, v + m, mine, bytes, copy), nelems);
  }
  if (v > 0) {
    const int parent = v - high_bit(v);
    send(t, parent);
    receive(t, parent);
    copy_from(t, parent, mine, mine, bytes);
    send(t, parent);
  }
  for (int m = first; v + m < n; m <<= 1) send(t, v + m);
  for (int m = first; v + m < n; m <<= 1) receive(t, v + m);
  memcpy(dest, mine, bytes);
}

// Small reductions through the cells: recursive doubling among the largest power of two p of
// members (log p rounds, one push each way per round); members p.. first hand their value to
// member (v - p) and get the result back from it. Partners combine the same two values in
// opposite order, which gives identical bits for the (commutative) operations.
void reduce_cells(const TeamView &t, void *dest, const void *source, size_t nelems,
                  size_t elem_size, Combine combine) {
  const int n = t.size, v = t.rank;
  const size_t bytes = nelems * elem_size;
  int p = 1;
  while (p * 2 <= n) p *= 2;
  if (v >= p) {
    push_cell(t, v - p, source, bytes);
    memcpy(dest, arrived_cell(t, v - p), bytes);
    release_cell(t, v - p);
    return;
  }
  alignas(64) char acc[kCellBytes];
  memcpy(acc, source, bytes);
  if (v + p < n) {
    combine(acc, arrived_cell(t, v + p), nelems);
    release_cell(t, v + p);
  }
  for (int mask = 1; mask < p; mask <<= 1) {
    const int partner = v ^ mask;
    push_cell(t, partner, acc, bytes);
    combine(acc, arrived_cell(t, partner), nelems);
    release_cell(t, partner);
  }
  if (v + p < n) push_cell(t, v + p, acc, bytes);
  memcpy(dest, acc, bytes);
}

// Small reductions when PEs share cores: every member pushes its value to member 0, which
// combines them in member order and pushes the result back. Each member waits once (recursive
// doubling waits log n times, and on shared cores every wait can cost a context switch).
void reduce_gather(const TeamView &t, void *dest, const void *source, size_t nelems,
                   size_t elem_size, Combine combine) {
  const int n = t.size;
  const size_t bytes = nelems * elem_size;
  if (t.rank != 0) {
    push_cell(t, 0, source, bytes);
    memcpy(dest, arrived_cell(t, 0), bytes);
    release_cell(t, 0);
    return;
  }
  alignas(64) char acc[kCellBytes];
  memcpy(acc, source, bytes);
  for (int m = 1; m < n; ++m) {
    combine(acc, arrived_cell(t, m), nelems);
    release_cell(t, m);
  }
  for (int m = 1; m < n; ++m) push_cell(t, m, acc, bytes);
  memcpy(dest, acc, bytes);
}

// Reduce-scatter then allgather, directly on the symmetric buffers, between two syncs. Member m
// owns share m: it combines that share of every source into its own dest (off-node sources are
// fetched with peer::read, a block at a time), then writes it into every other member's dest
// (peer::write, flushed before the closing sync). In place is safe: share m of a member's source
// is read by m alone, which writes it over only after reading it, and a member writes only its
// own share of its own dest.
void reduce_scatter_allgather(const TeamView &t, void *dest, const void *source, size_t nelems,
                              size_t elem_size, Combine combine) {
  const int n = t.size, me = t.rank;
  // A peer's block is read into my staging area: registered (the control area), so an RDMA read
  // lands there with no bounce copy. Nobody reads my staging during this call (reduce_tree's
  // readers are done when it returns).
  alignas(64) char block[kSmallReduceBytes];
  char *fetched = my_staging(t);
  const size_t per_block = sizeof block / elem_size;
  const char *src = static_cast<const char *>(source);

  sync(t);  // every source is ready
  size_t lo, hi;
  share(nelems, n, me, &lo, &hi);
  for (size_t at = lo; at < hi; at += per_block) {
    const size_t count = std::min(per_block, hi - at), off = at * elem_size;
    memcpy(block, src + off, count * elem_size);
    for (int s = 1; s < n; ++s)
      combine(block, peer_bytes(t, (me + s) % n, src + off, count * elem_size, fetched), count);
    memcpy(static_cast<char *>(dest) + off, block, count * elem_size);
  }
  char *mine = static_cast<char *>(dest) + lo * elem_size;
  for (int s = 1; s < n; ++s) peer::write(t.world[(me + s) % n], mine, mine, (hi - lo) * elem_size);
  flush_writes();
  sync(t);  // every share is in every dest
}

void copy_strided(char *to, ptrdiff_t to_stride, const char *from, ptrdiff_t from_stride,
                  size_t nelems, size_t elem_size) {
  if (to_stride == 1 && from_stride == 1) {
    memcpy(to, from, nelems * elem_size);
    return;
  }
  for (size_t i = 0; i < nelems; ++i)
    memcpy(to + i * to_stride * elem_size, from + i * from_stride * elem_size, elem_size);
}

}  // namespace

void flush_writes() {
  if (peer::routes.network) peer::routes.network->flush();
}

void sync(const TeamView &t) {
  const int n = t.size;
  if (n > 2 && !t.spans_nodes) {
    // Gather to member 0 and release: each member waits once (dissemination waits log n times,
    // and every wait is a possible context switch when members share cores).
    if (t.rank == 0) {
      receive_from_all_others(t);
      for (int m = 1; m < n; ++m) send(t, m);
    } else {
      send(t, 0);
      receive(t, 0);
    }
  } else if (n > 1) {
    // Dissemination: ceil(log2 n) rounds, in round k a message to member +2^k and one from -2^k.
    // Each ordered pair meets in one round only, so consecutive syncs cannot mix their messages.
    for (int d = 1; d < n; d <<= 1) {
      send(t, (t.rank + d) % n);
      receive(t, (t.rank - d + n) % n);
    }
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void broadcast(const TeamView &t, void *dest, const void *source, size_t bytes, int root,
               bool root_copies, const char *check) {
  const int n = t.size;
  const int v = (t.rank - root + n) % n;
  agree(t, bytes, root, "bytes, PE_root", check);
  if (bytes == 0) return;
  if (v == 0 && root_copies && dest != source) memmove(dest, source, bytes);
  if (n == 1) return;
  auto member = [&](int rel) { return (rel + root) % n; };
  const int first = first_child_step(v);
  int last = 0;  // largest child step
  for (int m = first; v + m < n; m <<= 1) last = m;

  if (cells_fit(t, bytes)) {
    // Pushed down the tree: nobody waits for its children, the root returns at once.
    const void *data = source;
    if (v > 0) {
      const int parent = member(v - high_bit(v));
      memcpy(dest, arrived_cell(t, parent), bytes);
      release_cell(t, parent);
      data = dest;
    }
    for (int m = last; m >= first; m >>= 1) push_cell(t, member(v + m), data, bytes);
    return;
  }

  // Pipelined: a child reads each chunk of its parent's copy once the parent announced it: in
  // place on this node, with peer::read off node.
  const char *from = nullptr;  // the parent's copy, named by mine
  int parent = -1;
  if (v > 0) {
    const int prel = v - high_bit(v);
    parent = member(prel);
    from = static_cast<const char *>(prel == 0 ? source : dest);
  }
  const size_t chunk = std::min(bytes, kBroadcastChunkBytes);
  for (size_t at = 0; at < bytes; at += chunk) {
    const size_t len = std::min(chunk, bytes - at);
    if (v > 0) {
      receive(t, parent);
      if (len) copy_from(t, parent, static_cast<char *>(dest) + at, from + at, len);
    }
    // Largest subtree first: it has the longest way to go.
    for (int m = last; m >= first; m >>= 1) send(t, member(v + m));
  }
  if (v > 0) send(t, parent);  // done reading the parent's copy
  for (int m = last; m >= first; m >>= 1) receive(t, member(v + m));
}

namespace {
// Reads every peer's block of `bytes` from its source (mapped, or peer::read off node), starting
// at the right neighbour.
void gather_blocks(const TeamView &t, void *dest, const void *source, size_t bytes) {
  const int n = t.size, me = t.rank;
  char *out = static_cast<char *>(dest);
  memcpy(out + me * bytes, source, bytes);
  for (int s = 1; s < n; ++s) {
    const int m = (me + s) % n;
    copy_from(t, m, out + m * bytes, source, bytes);
  }
}
}  // namespace

void fcollect(const TeamView &t, void *dest, const void *source, size_t bytes,
              const char *check) {
  agree(t, bytes, 0, "bytes, 0", check);
  if (bytes == 0) return;
  if (cells_fit(t, bytes)) {
    // One round: my block to every member's cell, theirs from mine (exchange_cells).
    char *out = static_cast<char *>(dest);
    memcpy(out + t.rank * bytes, source, bytes);
    exchange_cells(
        t,
        [&](int, char *c) {
          memcpy(c, source, bytes);
          return bytes;
        },
        [&](int m, const char *c) { memcpy(out + m * bytes, c, bytes); });
    return;
  }
  sync(t);
  gather_blocks(t, dest, source, bytes);
  sync(t);
}

void collect(const TeamView &t, TokenAddress named, void *dest, const void *source,
             uint64_t source_token, size_t bytes) {
  const int n = t.size, me = t.rank;
  char *out = static_cast<char *>(dest);
  std::vector<size_t> sizes(n), offset(n + 1, 0);
  std::vector<uint64_t> tokens(n);
  if (cells_fit(t, 0)) {
    // One round of cells carrying (size, token, block if it fits). When every block fitted, that
    // was the whole exchange; otherwise the large blocks are read from their owners' sources
    // (ready: the owner pushed its cell from inside the call) and a sync keeps them there.
    struct Header {
      uint64_t bytes, token;
    };
    constexpr size_t room = kCellBytes - sizeof(Header);
    alignas(64) char bounce[kCellBytes];
    for (int s = 1; s < n; ++s) {
      const int to = (me + s) % n;
      char *c = claim_cell(t, to, bounce);
      const Header h{bytes, source_token};
      memcpy(c, &h, sizeof h);
      if (bytes <= room) memcpy(c + sizeof h, source, bytes);
      post_cell(t, to, c, sizeof h + (bytes <= room ? bytes : 0));
    }
    std::vector<const char *> cells(n, nullptr);
    bool all_fit = bytes <= room;
    for (int s = 1; s < n; ++s) {
      const int m = (me - s + n) % n;
      cells[m] = arrived_cell(t, m);
      Header h;
      memcpy(&h, cells[m], sizeof h);
      sizes[m] = h.bytes;
      tokens[m] = h.token;
      all_fit &= h.bytes <= room;
    }
    sizes[me] = bytes;
    for (int m = 0; m < n; ++m) offset[m + 1] = offset[m] + sizes[m];
    if (bytes) memcpy(out + offset[me], source, bytes);
    for (int s = 1; s < n; ++s) {
      const int m = (me + s) % n;
      if (sizes[m] && sizes[m] <= room)
        memcpy(out + offset[m], cells[m] + sizeof(Header), sizes[m]);
      else if (sizes[m])
        copy_from(t, m, out + offset[m], named(tokens[m]), sizes[m]);
      release_cell(t, m);
    }
    if (!all_fit) sync(t);
    return;
  }
  // Each member shows its size and token in its own slot; read after the first sync (an RDMA
  // read per off-node member), rewritten only by the next collect, which nobody can start before
  // everyone passed the second sync.
  show(t, 0, bytes, source_token);
  sync(t);
  for (int m = 0; m < n; ++m) {
    uint64_t size;
    shown_by(t, m, 0, &size, &tokens[m]);
    sizes[m] = size;
    offset[m + 1] = offset[m] + sizes[m];
  }
  for (int s = 0; s < n; ++s) {
    const int m = (me + s) % n;
    if (!sizes[m]) continue;
    if (m == me) memcpy(out + offset[m], source, sizes[m]);
    else copy_from(t, m, out + offset[m], named(tokens[m]), sizes[m]);
  }
  sync(t);
}

uint64_t barriers_entered(int pe, uint64_t *cached, int64_t *last_read_ns) {
  const auto &mine = reinterpret_cast<shm::ControlBlock *>(peer::routes.own_control)
                         ->barriers_entered.value;
  if (const char *there = peer::mapped(pe, &mine))
    return reinterpret_cast<const std::atomic<uint64_t> *>(there)->load(std::memory_order_acquire);
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  if (now - *last_read_ns >= 1000 * 1000) {
    peer::read(pe, cached, &mine, sizeof *cached);
    *last_read_ns = now;
  }
  return *cached;
}

uint64_t pending_active_set_messages(shm::ControlBlock *mine, int sender) {
  return pending(channel(shm::team_slot(mine, kActiveSetSlot), sender));
}

int unmatched_active_set_peer(const TeamView &t) {
  for (int m = 0; m < t.size; ++m)
    if (pending_active_set_messages(t.my_control(), t.world[m]) != 0) return t.world[m];
  return -1;
}

void alltoall(const TeamView &t, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,
              size_t nelems, size_t elem_size, const char *check) {
  const uint64_t strides = static_cast<uint64_t>(dst) << 32 | static_cast<uint32_t>(sst);
  agree(t, nelems * elem_size, strides, "bytes, dst << 32 | sst", check);
  if (nelems == 0) return;
  const int n = t.size, me = t.rank;
  const size_t src_block = nelems * sst * elem_size, dst_block = nelems * dst * elem_size;
  char *out = static_cast<char *>(dest);
  const char *in = static_cast<const char *>(source);
  if (cells_fit(t, nelems * elem_size)) {
    // One round: block m goes straight into m's cell for me, packed.
    copy_strided(out + me * dst_block, dst, in + me * src_block, sst, nelems, elem_size);
    exchange_cells(
        t,
        [&](int m, char *c) {
          copy_strided(c, 1, in + m * src_block, sst, nelems, elem_size);
          return nelems * elem_size;
        },
        [&](int m, const char *c) {
          copy_strided(out + m * dst_block, dst, c, 1, nelems, elem_size);
        });
    return;
  }
  // Block `me` of every member's source: read in place on this node; off node the span it covers
  // comes with one peer::read (into dest directly when both strides are 1).
  const size_t span = ((nelems - 1) * sst + 1) * elem_size;
  std::vector<char> fetched;
  sync(t);
  for (int s = 0; s < n; ++s) {
    const int m = (me + s) % n;
    const char *name = in + me * src_block;
    char *to = out + m * dst_block;
    const char *from = s == 0 ? name : peer::mapped(t.world[m], name);
    if (!from && dst == 1 && sst == 1) {
      peer::read(t.world[m], to, name, span);
      continue;
    }
    if (!from) {
      fetched.resize(span);
      peer::read(t.world[m], fetched.data(), name, span);
      from = fetched.data();
    }
    copy_strided(to, dst, from, sst, nelems, elem_size);
  }
  sync(t);
}

void reduce(const TeamView &t, void *dest, const void *source, size_t nelems, size_t elem_size,
            Combine combine, const char *check) {
  const size_t bytes = nelems * elem_size;
  agree(t, nelems, elem_size, "nelems, element size", check);
  if (bytes == 0) return;
  if (t.size == 1) {
    if (dest != source) memmove(dest, source, bytes);
    return;
  }
  if (cells_fit(t, bytes) && t.size > 2 && t.wait->spin_iterations == 0 && !t.spans_nodes)
    reduce_gather(t, dest, source, nelems, elem_size, combine);
  else if (cells_fit(t, bytes))
    reduce_cells(t, dest, source, nelems, elem_size, combine);
  else if (bytes <= kSmallReduceBytes)
    reduce_tree(t, dest, source, nelems, elem_size, combine);
  else
    reduce_scatter_allgather(t, dest, source, nelems, elem_size, combine);
}

// Member m owns share m of the elements: it reads that share of every member's source in member
// order, keeps the running sum, and writes each member's prefix into that member's dest (a put).
// Only the owner touches share m of any source or dest, so in place is safe as long as each block
// is read before it is written. O(nelems) reads and writes per member, two syncs. Off node the
// reads are peer::read and the writes peer::write, flushed before the closing sync (its messages
// may reach a member before my writes to it would).
void scan(const TeamView &t, void *dest, const void *source, size_t nelems, size_t elem_size,
          Combine combine, bool inclusive, const void *identity, const char *check) {
  const size_t bytes = nelems * elem_size;
  agree(t, nelems, elem_size, "nelems, element size", check);
  if (bytes == 0) return;
  const int n = t.size;
  alignas(64) char running[4096], value[4096];
  const size_t per_block = sizeof running / elem_size;
  size_t lo, hi;
  share(nelems, n, t.rank, &lo, &hi);
  sync(t);  // every member entered: sources ready, dests writable
  for (size_t at = lo; at < hi; at += per_block) {
    const size_t count = std::min(per_block, hi - at), off = at * elem_size;
    for (size_t i = 0; i < count; ++i) memcpy(running + i * elem_size, identity, elem_size);
    for (int m = 0; m < n; ++m) {
      copy_from(t, m, value, static_cast<const char *>(source) + off, count * elem_size);
      char *out = static_cast<char *>(dest) + off;  // names member m's
      if (inclusive) combine(running, value, count);
      peer::write(t.world[m], out, running, count * elem_size);
      if (!inclusive) combine(running, value, count);
    }
  }
  flush_writes();
  sync(t);  // every share of my dest is written
}

}  // namespace hoshmem::coll
