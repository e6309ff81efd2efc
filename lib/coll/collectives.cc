#include "lib/coll/collectives.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "lib/base/error.h"

namespace hoshmem::coll {
namespace {

// --- channels -------------------------------------------------------------------------------

std::atomic<uint64_t> &channel(char *slot, int sender_world_pe) {
  return *reinterpret_cast<std::atomic<uint64_t> *>(slot + static_cast<size_t>(sender_world_pe) *
                                                               kChannelStride);
}

// One message to member `to`. seq_cst: publishes every store made before it (data the receiver
// will read) and orders against the doorbell check.
void send(const TeamView &t, int to) {
  channel(t.scratch(to), t.world[t.rank]).fetch_add(1, std::memory_order_seq_cst);
  shm::ring_doorbell(t.control[t.world[to]]);
}

// Waits until ready(); with t.watch, also fails if member `peer` cannot come any more (TeamView).
template <class Ready>
void wait_for(const TeamView &t, int peer, Ready &&ready) {
  if (!t.watch) return wait_until_ready(*t.wait, t.my_control(), shm::kSleepForSync, ready);
  const auto &theirs = t.control[t.world[peer]]->barriers_entered.value;
  const uint64_t mine = t.my_control()->barriers_entered.value.load(std::memory_order_relaxed);
  wait_until_ready(*t.wait, t.my_control(), shm::kSleepForSync, [&] {
    if (ready()) return true;
    if (theirs.load(std::memory_order_acquire) > mine) [[unlikely]]
      fatal(t.watch,
            "PE %d went on to a barrier_all without calling this collective with the same "
            "team or (PE_start, logPE_stride, PE_size)",
            t.world[peer]);
    return false;
  });
}

// Takes one message from member `from`, waiting (and yielding) until there is one.
void receive(const TeamView &t, int from) {
  std::atomic<uint64_t> &c = channel(t.my_scratch(), t.world[from]);
  if (c.load(std::memory_order_acquire) == 0)
    wait_for(t, from, [&] { return c.load(std::memory_order_acquire) != 0; });
  c.fetch_sub(1, std::memory_order_acq_rel);
}

// Binomial tree over relative ranks v = (rank - root) mod n: parent of v > 0 is v without its
// highest bit; children are v + m for powers of two m above v's highest bit.
int high_bit(int v) { return v ? 1 << (31 - __builtin_clz(static_cast<unsigned>(v))) : 0; }
int first_child_step(int v) { return v ? high_bit(v) << 1 : 1; }

// Values a member shows the others in its slot, written before the sync that lets them read it.
// Line 0: collect's sizes; line 1: the arguments compared under SHMEM_DEBUG.
struct Shown {
  alignas(64) std::atomic<uint64_t> a, b;
};
Shown &shown(const TeamView &t, int member, int line) {
  return reinterpret_cast<Shown *>(t.scratch(member) + kPublishOffset)[line];
}
void show(const TeamView &t, int line, uint64_t a, uint64_t b) {
  Shown &s = shown(t, t.rank, line);
  s.a.store(a, std::memory_order_relaxed);
  s.b.store(b, std::memory_order_relaxed);
}

// SHMEM_DEBUG: every member must pass the same (a, b); a mismatch is fatal on the PE that sees
// it. Costs two syncs (the second keeps a fast member from overwriting its values while a slow one
// still compares), so it runs only when `check` names the routine.
void agree(const TeamView &t, uint64_t a, uint64_t b, const char *names, const char *check) {
  if (!check || t.size == 1) return;
  show(t, 1, a, b);
  sync(t);
  for (int m = 0; m < t.size; ++m) {
    Shown &s = shown(t, m, 1);
    const uint64_t ma = s.a.load(std::memory_order_relaxed), mb = s.b.load(std::memory_order_relaxed);
    if (ma != a || mb != b) [[unlikely]]
      fatal(check, "arguments differ across the team: (%s) is (%llu, %llu) here, (%llu, %llu) on PE %d",
            names, static_cast<unsigned long long>(a), static_cast<unsigned long long>(b),
            static_cast<unsigned long long>(ma), static_cast<unsigned long long>(mb), t.world[m]);
  }
  sync(t);
}

char *staging(const TeamView &t, int member) { return t.scratch(member) + kStagingOffset; }

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

// My cell in member `to`'s slot, once `to` has consumed everything I wrote there before.
char *claim_cell(const TeamView &t, int to) {
  const int me = t.world[t.rank];
  const uint64_t sent =
      cell_counter(t.my_scratch(), kCellSentOffset, t.world[to]).load(std::memory_order_relaxed);
  std::atomic<uint64_t> &consumed = cell_counter(t.scratch(to), kCellConsumedOffset, me);
  if (consumed.load(std::memory_order_acquire) != sent)
    wait_for(t, to, [&] { return consumed.load(std::memory_order_acquire) == sent; });
  return t.scratch(to) + kCellsOffset + static_cast<size_t>(me) * kCellBytes;
}

// The cell claimed from `to` is written: count it and tell `to`.
void post_cell(const TeamView &t, int to) {
  cell_counter(t.my_scratch(), kCellSentOffset, t.world[to]).fetch_add(1, std::memory_order_relaxed);
  send(t, to);
}

void push_cell(const TeamView &t, int to, const void *data, size_t bytes) {
  memcpy(claim_cell(t, to), data, bytes);
  post_cell(t, to);
}

// Waits for member `from`'s next cell write and returns the cell (valid until release_cell).
const char *arrived_cell(const TeamView &t, int from) {
  receive(t, from);
  return t.my_scratch() + kCellsOffset + static_cast<size_t>(t.world[from]) * kCellBytes;
}

// Done with `from`'s cell: it may write again (wake it if it waits for that).
void release_cell(const TeamView &t, int from) {
  cell_counter(t.my_scratch(), kCellConsumedOffset, t.world[from])
      .fetch_add(1, std::memory_order_seq_cst);
  shm::ring_doorbell(t.control[t.world[from]]);
}

// One round of cells with every other member: produce(member, cell) fills the cell this member
// sends to `member`, consume(member, cell) reads the one it received from `member`. Sends and
// receives proceed in whatever order they become possible (a receiver still holding my previous
// cell, a sender that is late) and the member waits only when neither can: on shared cores each
// wait can cost a context switch, so nobody waits for one peer while another is ready.
template <class Produce, class Consume>
void exchange_cells(const TeamView &t, Produce &&produce, Consume &&consume) {
  const int n = t.size, me = t.rank;
  char *mine = t.my_scratch();
  const uint64_t others =
      (n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1) & ~(uint64_t{1} << me);
  uint64_t to_send = others, to_take = others;
  auto can_send = [&](int m) {
    const uint64_t sent =
        cell_counter(mine, kCellSentOffset, t.world[m]).load(std::memory_order_relaxed);
    return cell_counter(t.scratch(m), kCellConsumedOffset, t.world[me])
               .load(std::memory_order_acquire) == sent;
  };
  auto can_take = [&](int m) {
    return channel(mine, t.world[m]).load(std::memory_order_acquire) != 0;
  };
  auto any_ready = [&] {
    for (uint64_t p = to_send; p; p &= p - 1)
      if (can_send(__builtin_ctzll(p))) return true;
    for (uint64_t p = to_take; p; p &= p - 1)
      if (can_take(__builtin_ctzll(p))) return true;
    return false;
  };
  while (to_send | to_take) {
    bool progressed = false;
    for (int s = 1; s < n; ++s) {  // from the right neighbour on, so senders spread out
      const int m = (me + s) % n;
      const uint64_t bit = uint64_t{1} << m;
      if ((to_send & bit) && can_send(m)) {
        produce(m, t.scratch(m) + kCellsOffset + static_cast<size_t>(t.world[me]) * kCellBytes);
        post_cell(t, m);
        to_send &= ~bit;
        progressed = true;
      }
    }
    for (int s = 1; s < n; ++s) {
      const int m = (me - s + n) % n;
      const uint64_t bit = uint64_t{1} << m;
      if ((to_take & bit) && can_take(m)) {
        channel(mine, t.world[m]).fetch_sub(1, std::memory_order_acq_rel);
        consume(m, mine + kCellsOffset + static_cast<size_t>(t.world[m]) * kCellBytes);
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
// "copied" (the parent's staging may be reused only after that).
void reduce_tree(const TeamView &t, void *dest, const void *source, size_t nelems,
                 size_t elem_size, Combine combine) {
  const int n = t.size, v = t.rank;
  const size_t bytes = nelems * elem_size;
  char *mine = staging(t, v);
  memcpy(mine, source, bytes);
  const int first = first_child_step(v);
  for (int m = first; v + m < n; m <<= 1) {
    receive(t, v + m);
    combine(mine, staging(t, v + m), nelems);
  }
  if (v > 0) {
    const int parent = v - high_bit(v);
    send(t, parent);
    receive(t, parent);
    memcpy(mine, staging(t, parent), bytes);
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

// Reduce-scatter then allgather, directly on the symmetric buffers. Member m owns share m: it
// combines that share of every source into its own dest. In place is safe: a member writes only
// its own share of dest while the others read other shares of its source.
void reduce_scatter_allgather(const TeamView &t, PeerAddress peer, void *dest, const void *source,
                              size_t nelems, size_t elem_size, Combine combine) {
  const int n = t.size, me = t.rank;
  alignas(64) char block[8192];
  const size_t per_block = sizeof block / elem_size;
  std::vector<const char *> sources(n);
  for (int m = 0; m < n; ++m) sources[m] = peer(source, t.world[m]);

  sync(t);  // every source is ready
  size_t lo, hi;
  share(nelems, n, me, &lo, &hi);
  for (size_t at = lo; at < hi; at += per_block) {
    const size_t count = std::min(per_block, hi - at);
    memcpy(block, static_cast<const char *>(source) + at * elem_size, count * elem_size);
    for (int s = 1; s < n; ++s)
      combine(block, sources[(me + s) % n] + at * elem_size, count);
    memcpy(static_cast<char *>(dest) + at * elem_size, block, count * elem_size);
  }
  sync(t);  // every share is final
  for (int s = 1; s < n; ++s) {
    const int m = (me + s) % n;
    share(nelems, n, m, &lo, &hi);
    memcpy(static_cast<char *>(dest) + lo * elem_size, peer(dest, t.world[m]) + lo * elem_size,
           (hi - lo) * elem_size);
  }
  sync(t);  // nobody reads my dest any more
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

void sync(const TeamView &t) {
  const int n = t.size;
  if (n > 2) {
    // Gather to member 0 and release: each member waits once (dissemination waits log n times,
    // and every wait is a possible context switch when members share cores).
    if (t.rank == 0) {
      for (int m = 1; m < n; ++m) receive(t, m);
      for (int m = 1; m < n; ++m) send(t, m);
    } else {
      send(t, 0);
      receive(t, 0);
    }
  } else if (n > 1) {
    for (int d = 1; d < n; d <<= 1) {
      send(t, (t.rank + d) % n);
      receive(t, (t.rank - d + n) % n);
    }
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void broadcast(const TeamView &t, PeerAddress peer, void *dest, const void *source, size_t bytes,
               int root, bool root_copies, const char *check) {
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

  const char *from = nullptr;  // the parent's copy
  int parent = -1;
  if (v > 0) {
    const int prel = v - high_bit(v);
    parent = member(prel);
    from = prel == 0 ? peer(source, t.world[parent]) : peer(dest, t.world[parent]);
  }
  const size_t chunk = std::min(bytes, kBroadcastChunkBytes);
  for (size_t at = 0; at < bytes; at += chunk) {
    const size_t len = std::min(chunk, bytes - at);
    if (v > 0) {
      receive(t, parent);
      if (len) memcpy(static_cast<char *>(dest) + at, from + at, len);
    }
    // Largest subtree first: it has the longest way to go.
    for (int m = last; m >= first; m >>= 1) send(t, member(v + m));
  }
  if (v > 0) send(t, parent);  // done reading the parent's copy
  for (int m = last; m >= first; m >>= 1) receive(t, member(v + m));
}

namespace {
// Reads every peer's block of `bytes` straight from its source, starting at the right neighbour.
void gather_blocks(const TeamView &t, PeerAddress peer, void *dest, const void *source,
                   size_t bytes) {
  const int n = t.size, me = t.rank;
  char *out = static_cast<char *>(dest);
  memcpy(out + me * bytes, source, bytes);
  for (int s = 1; s < n; ++s) {
    const int m = (me + s) % n;
    memcpy(out + m * bytes, peer(source, t.world[m]), bytes);
  }
}
}  // namespace

void fcollect(const TeamView &t, PeerAddress peer, void *dest, const void *source, size_t bytes,
              const char *check) {
  agree(t, bytes, 0, "bytes, 0", check);
  if (bytes == 0) return;
  if (cells_fit(t, bytes)) {
    // One round: my block to every member's cell, theirs from mine (exchange_cells).
    char *out = static_cast<char *>(dest);
    memcpy(out + t.rank * bytes, source, bytes);
    exchange_cells(
        t, [&](int, char *cell) { memcpy(cell, source, bytes); },
        [&](int m, const char *cell) { memcpy(out + m * bytes, cell, bytes); });
    return;
  }
  sync(t);
  gather_blocks(t, peer, dest, source, bytes);
  sync(t);
}

void collect(const TeamView &t, TokenAddress peer, void *dest, const void *source,
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
    for (int s = 1; s < n; ++s) {
      char *cell = claim_cell(t, (me + s) % n);
      const Header h{bytes, source_token};
      memcpy(cell, &h, sizeof h);
      if (bytes <= room) memcpy(cell + sizeof h, source, bytes);
      post_cell(t, (me + s) % n);
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
        memcpy(out + offset[m], peer(tokens[m], t.world[m]), sizes[m]);
      release_cell(t, m);
    }
    if (!all_fit) sync(t);
    return;
  }
  // Each member shows its size and token in its own slot; read after the first sync, rewritten
  // only by the next collect, which nobody can start before everyone passed the second sync.
  show(t, 0, bytes, source_token);
  sync(t);
  for (int m = 0; m < n; ++m) {
    sizes[m] = shown(t, m, 0).a.load(std::memory_order_relaxed);
    tokens[m] = shown(t, m, 0).b.load(std::memory_order_relaxed);
    offset[m + 1] = offset[m] + sizes[m];
  }
  for (int s = 0; s < n; ++s) {
    const int m = (me + s) % n;
    if (sizes[m])
      memcpy(out + offset[m], m == me ? source : peer(tokens[m], t.world[m]), sizes[m]);
  }
  sync(t);
}

uint64_t pending_active_set_messages(shm::ControlBlock *mine, int sender) {
  return channel(shm::team_slot(mine, kActiveSetSlot), sender).load(std::memory_order_acquire);
}

int unmatched_active_set_peer(const TeamView &t) {
  for (int m = 0; m < t.size; ++m)
    if (pending_active_set_messages(t.my_control(), t.world[m]) != 0) return t.world[m];
  return -1;
}

void alltoall(const TeamView &t, PeerAddress peer, void *dest, const void *source, ptrdiff_t dst,
              ptrdiff_t sst, size_t nelems, size_t elem_size, const char *check) {
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
        [&](int m, char *cell) {
          copy_strided(cell, 1, in + m * src_block, sst, nelems, elem_size);
        },
        [&](int m, const char *cell) {
          copy_strided(out + m * dst_block, dst, cell, 1, nelems, elem_size);
        });
    return;
  }
  sync(t);
  for (int s = 0; s < n; ++s) {
    const int m = (me + s) % n;
    const char *from = (s == 0 ? static_cast<const char *>(source) : peer(source, t.world[m])) +
                       me * src_block;
    copy_strided(static_cast<char *>(dest) + m * dst_block, dst, from, sst, nelems, elem_size);
  }
  sync(t);
}

void reduce(const TeamView &t, PeerAddress peer, void *dest, const void *source, size_t nelems,
            size_t elem_size, Combine combine, const char *check) {
  const size_t bytes = nelems * elem_size;
  agree(t, nelems, elem_size, "nelems, element size", check);
  if (bytes == 0) return;
  if (t.size == 1) {
    if (dest != source) memmove(dest, source, bytes);
    return;
  }
  if (cells_fit(t, bytes) && t.size > 2 && t.wait->spin_iterations == 0)
    reduce_gather(t, dest, source, nelems, elem_size, combine);
  else if (cells_fit(t, bytes))
    reduce_cells(t, dest, source, nelems, elem_size, combine);
  else if (bytes <= kSmallReduceBytes)
    reduce_tree(t, dest, source, nelems, elem_size, combine);
  else
    reduce_scatter_allgather(t, peer, dest, source, nelems, elem_size, combine);
}

// Member m owns share m of the elements: it reads that share of every member's source in member
// order, keeps the running sum, and writes each member's prefix into that member's dest (a put).
// Only the owner touches share m of any source or dest, so in place is safe as long as each block
// is read before it is written. O(nelems) reads and writes per member, two syncs.
void scan(const TeamView &t, PeerAddress peer, void *dest, const void *source, size_t nelems,
          size_t elem_size, Combine combine, bool inclusive, const void *identity,
          const char *check) {
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
      memcpy(value, peer(source, t.world[m]) + off, count * elem_size);
      char *out = peer(dest, t.world[m]) + off;
      if (inclusive) {
        combine(running, value, count);
        memcpy(out, running, count * elem_size);
      } else {
        memcpy(out, running, count * elem_size);
        combine(running, value, count);
      }
    }
  }
  sync(t);  // every share of my dest is written
}

}  // namespace hoshmem::coll
