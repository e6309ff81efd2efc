// lib/coll: the collective algorithms over a TeamView (team collectives and the deprecated
// active-set forms alike). The API layer checks arguments and picks element types; this layer
// moves bytes and synchronizes.
//
// Synchronization: every member's scratch slot starts with one channel per sender (indexed by
// the sender's world PE). Each channel has one writer, the sender, and follows the rule of
// lib/transport/net/peer.h (write remote, poll local): the sender stores its running count of
// messages sent to this receiver into the receiver's channel (peer::store) and rings; the receiver
// keeps in its own memory how many it has taken and waits until sent > taken. Both ends of a pair
// run the same deterministic algorithm, so for every ordered pair (sender, receiver) the receiver
// consumes exactly the messages the sender produced, in the order produced: a sender already one
// collective ahead only leaves counts that the next collective consumes. At quiescence sent ==
// taken on every pair, so a slot zeroed by its owner on team destroy restarts all three counts
// at zero together, and a slot shared by many active sets works (channels are per world PE).
//
// Data: source and dest of every collective are symmetric. A member's buffers are read by the
// others only after it has entered (its "ready" message or a sync proves it), and it returns only
// once nobody reads them any more. A member on this node is read through its mapping; one on
// another node with peer::read (an RDMA read), which each place says. Small payloads instead go
// into the receiver's scratch slot (push cells, below) with peer::write, so small collectives need
// neither a "ready" round nor a wait for readers to finish.
//
// Shapes: where every member is on this node, syncs and small reductions gather to member 0 and
// release (each member waits once: what counts when PEs share cores). A team that spans nodes
// (TeamView::spans_nodes) uses dissemination and recursive doubling instead: O(log n) rounds.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lib/coll/team_view.h"

namespace hoshmem::coll {

// Scratch slot layout (the last kMgmtReserveBytes belong to team management, lib/core/team.h).
constexpr size_t kChannelStride = 16;
constexpr size_t kChannelBytes = 64 * 1024;
constexpr int kMaxChannelPes = static_cast<int>(kChannelBytes / kChannelStride);  // 4096
constexpr size_t kPublishOffset = kChannelBytes;            // one line of values a member shows
constexpr size_t kStagingOffset = kChannelBytes + 4096;
constexpr size_t kMgmtReserveBytes = 16 * 1024;
constexpr size_t kStagingBytes = shm::kTeamSlotBytes - kMgmtReserveBytes - kStagingOffset;

// Push cells: small payloads are written straight into the receiver's slot, kCellDepth cells per
// sender (indexed by the sender's world PE, like the channels; the n-th cell of a pair goes to
// cell n mod kCellDepth), so a sender never waits for the receiver to enter the call. Credits per
// ordered pair, each word with one writer: the sender counts its writes into the receiver's cells
// (kCellSentOffset, its own), the receiver counts the cells it has consumed (kCellTakenOffset,
// its own) and stores that count into the sender's slot (kCellConsumedOffset), where the sender
// polls it; the sender writes again only while fewer than kCellDepth are unconsumed. Two deep,
// a pair that exchanges cells call after call (a reduction's recursive doubling) sends the next
// one at once: the receiver's release of the one before last is long there, so a call costs one
// crossing, not two (the release and then the cell). The counters are equal at quiescence, so
// slot reuse (zeroed on team destroy) and the shared active-set slot stay consistent. Used only
// when every member's world PE is below kCellPes and the payload fits one cell.
constexpr int kCellPes = 64;
constexpr int kCellDepth = 2;
constexpr size_t kCellBytes = 1024;
constexpr size_t kCellConsumedOffset = kPublishOffset + 1024;  // uint64 per receiver world PE
constexpr size_t kCellSentOffset = kPublishOffset + 2048;      // uint64 per receiver world PE
constexpr size_t kCellTakenOffset = kPublishOffset + 3072;     // uint64 per sender world PE
// The taken count I last stored into the sender's slot (release_cell: off node it may lag one).
constexpr size_t kCellAnnouncedOffset = kPublishOffset + 3584;  // uint64 per sender world PE
static_assert(kCellAnnouncedOffset + kCellPes * 8 <= kStagingOffset);

// Reductions up to this many bytes go up and down a binomial tree through the scratch slots
// (2 log n message latency); larger ones use reduce-scatter + allgather on the user buffers.
constexpr size_t kSmallReduceBytes = 16 * 1024;
constexpr size_t kCellsOffset = kStagingOffset + kSmallReduceBytes;
static_assert(kSmallReduceBytes + kCellPes * kCellDepth * kCellBytes <= kStagingBytes);
// The world barrier's arrival words (lib/coll/barrier.h), in slot 0 only: one per PE, stored by
// that PE into PE 0's copy, when all PEs are on one node and at most kWorldArrivalPes.
constexpr size_t kWorldArrivalOffset = kCellsOffset + kCellPes * kCellDepth * kCellBytes;
constexpr int kWorldArrivalPes = 2048;
static_assert(kWorldArrivalOffset + kWorldArrivalPes * 8 <= kStagingOffset + kStagingBytes);
// Broadcasts above this size are pipelined down the tree in chunks of this size.
constexpr size_t kBroadcastChunkBytes = 64 * 1024;

// acc[i] = acc[i] op in[i] for i < nelems.
using Combine = void (*)(void *acc, const void *in, size_t nelems);

// Every operation below takes `check`: when not null (SHMEM_DEBUG), members compare the arguments
// that must agree across the team (sizes, root, strides) wherever one member already reads
// another's scratch, and a mismatch is fatal with `check` as the routine name.

// Barrier over the members' channels (on one node with more than 2 members: gather to member 0,
// then release; otherwise dissemination): orders memory, completes nothing remote.
void sync(const TeamView &team);

// Binomial-tree broadcast from member `root`; the root's dest is written only when `root_copies`
// (team form). Payloads that fit a cell are pushed down the tree (nobody waits for its children);
// larger ones are pipelined: non-roots read their parent's copy after the parent announced it.
void broadcast(const TeamView &team, void *dest, const void *source,
               size_t bytes, int root, bool root_copies, const char *check);

// Concatenation in member order of `bytes` (same on all: fcollect) or of each member's own count
// (collect). Blocks that fit a cell are pushed to every member in one round; otherwise every
// member reads each peer's source directly (peer::read from an off-node one), starting from its
// right neighbour so that no source has all readers at once, and a sync ends the call. On one
// node this is the bandwidth-optimal exchange (every block crosses memory once per reader, as in
// a ring, with no forwarding latency).
void fcollect(const TeamView &team, void *dest, const void *source, size_t bytes,
              const char *check);
// A collect source may be NULL where its count is 0, so members name their sources to each other
// by symmetric token (SymmetricSpace::token), never by the reader's own source address. This
// returns this PE's address of the object a token names: peer.h's name for every PE's copy.
using TokenAddress = const char *(*)(uint64_t token);
void collect(const TeamView &team, TokenAddress peer, void *dest, const void *source,
             uint64_t source_token, size_t bytes);

// SHMEM_DEBUG, on entry to a collective over `team` before it sends anything: the world PE of a
// member that left me a message in the active-set slot that I never took, or -1. Nobody can be
// past a collective I have not entered, so such a message comes from an active-set collective
// that member called before this one and I did not call with it: their active sets differ.
int unmatched_active_set_peer(const TeamView &team);
// Messages from world PE `sender` not yet taken in the active-set slot of `mine` (this PE's).
uint64_t pending_active_set_messages(shm::ControlBlock *mine, int sender);

// SHMEM_DEBUG's view of how many world barriers PE `pe` has entered: a load on this node, an RDMA
// read of its control block otherwise, at most once per millisecond per caller (`last_read`
// keeps the time and `cached` the value in between), so a waiting PE does not flood the network.
uint64_t barriers_entered(int pe, uint64_t *cached, int64_t *last_read_ns);

// Makes every peer::write this PE issued so far visible at its target. Needed before a sync that
// lets a member use data this PE wrote into its memory (the sync's messages may reach it through
// other members, and writes are ordered per target only).
void flush_writes();

// Block j of member i's source (nelems elements of elem_size, element stride sst) lands as block i
// of member j's dest (stride dst). Blocks that fit a cell are pushed in one round; larger ones are
// read pairwise between two syncs: at step s member i reads from member i + s.
void alltoall(const TeamView &team, void *dest, const void *source,
              ptrdiff_t dst, ptrdiff_t sst, size_t nelems, size_t elem_size, const char *check);

// dest = source combined over all members (dest == source allowed). Cell-sized: recursive doubling
// through the cells (when more than 2 members share the cores of one node: gather to member 0
// and push the result back, so that each member waits once); up to kSmallReduceBytes: a tree
// through the staging areas; larger: reduce-scatter + allgather on the user buffers.
void reduce(const TeamView &team, void *dest, const void *source, size_t nelems,
            size_t elem_size, Combine combine, const char *check);

// Prefix reductions (1.6 scans): member i gets members 0..i (inclusive) or 0..i-1 (exclusive;
// member 0 gets `identity` repeated).
void scan(const TeamView &team, void *dest, const void *source, size_t nelems,
          size_t elem_size, Combine combine, bool inclusive, const void *identity,
          const char *check);

}  // namespace hoshmem::coll
