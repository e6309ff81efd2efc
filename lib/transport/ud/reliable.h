// lib/transport/ud: the reliability engine of the UD transport. Pure C++: no verbs, no threads, no
// clock of its own. The transport gives it datagrams that arrived (on_datagram) and puts on the
// wire the ones it makes (Callbacks::send_datagram); this file turns them into messages delivered
// exactly once, in order, per peer, over a network that drops, duplicates and reorders.
//
// Two kinds of message (Kind): a request that is only acknowledged (put, non-fetching AMO) and one
// that wants a reply (fetching AMO, get). The target executes each request once, in the order its
// sender sent them (a put is never applied after a later one), by calling Callbacks::handle; a
// fetching request's handler writes the reply, which is cached and sent back. The sender learns
// of completion through on_acked(token) or on_reply(token, bytes).
//
// Per peer and direction there is one stream of segments numbered by a sequence number (64 bits
// here, the low 32 on the wire). A message of more than one segment's payload (mtu - 16 bytes)
// takes consecutive numbers, the first and last marked.
//   Requester: keeps a copy of every message until it completes (acked; or replied, for a fetch);
//     puts at most cwnd segments past the oldest unacknowledged one on the wire; on a timer
//     (RTO, doubling at each timeout up to rto_max, reset on progress) halves cwnd and sends again
//     from the oldest unacknowledged segment (go-back-N). The RTO of a peer follows its round
//     trips (twice the smoothed time, at least rto), measured from a message's first sending to
//     its ack (or reply) and from a reply's first sending to its release by a rack, resends
//     included (an upper bound: see sample_rtt). Every header carries its rack: all its
//     messages before that number are complete, so the target may drop their cached replies (a
//     requester whose rack passes a reply it received owes the target a standalone ack, after
//     rack_delay unless a request carried the rack first).
//   Target: keeps segments that arrive early (at most max_window), delivers each message when all
//     of it arrived in order, and acknowledges cumulatively: the ack field of every datagram it
//     sends to that peer (requests, replies), or a standalone ack ack_delay after a request when
//     nothing else went out. A segment that arrives again after delivery is never executed again:
//     it is acked at once and, when it is the last segment of a fetching request whose reply is
//     still cached, the cached reply is sent again. The target also resends its cached replies on
//     a timer of their own (RTO as above) until the requester's rack passes them: a requester whose
//     request was acked only waits for the reply. Replies are not held back by cwnd; the
//     requester's window (a fetch holds its room until its reply arrives) bounds them.
//   Congestion control: AIMD per peer, in segments: slow start up to ssthresh (grows by one per
//     segment acked), then one per window acked; halved at each timeout; never above max_window.
//   Give-up: when a peer with something outstanding (a message not complete, a reply not
//     released) has made no progress for give_up_ns, on_peer_failed(peer) is called once, then
//     on_failed(token) for each of its pending messages in send order; the peer stays failed
//     (send returns kFailed, its datagrams are ignored).
//
// Back-pressure: send() copies the message and returns kOk when the peer's send buffer, counted
// in segments from the first segment of the oldest incomplete message, stays within max_window,
// and when the replies awaited from the peer (each fetch's reply_len, in segments) stay within
// max_window too (a fetch alone may always go); else kBusy (the caller polls and retries; nothing
// is queued). cwnd decides how much of the send buffer is on the wire. The second bound is the
// receiver's: replies are not paced by cwnd, so without it 32 gets of 32 segments each had 1024
// reply datagrams on their way to a receive queue of a few hundred, and what overflowed a
// receive queue is lost (on soft-RoCE 16% of a test's datagrams), resent, lost again.
//
// Memory: an idle peer (nothing outstanding, no ack owed) holds idle_peer_bytes() (56 bytes) plus
// its slot in the table of npes pointers; its buffers are freed when it becomes idle. A peer with
// traffic holds at most memory_bound_per_peer(): max_window segments of copies, max_window early
// segments, max_window cached replies and max_window replies being reassembled (with the
// defaults 533480 bytes; one 8-byte AMO in flight holds 344). memory_bytes() measures what all
// peers hold now (payload, map entries, per-peer state of active peers).
//
// Wire: every datagram is a 16-byte header, little-endian, then the payload:
//   byte  0      bits 0-1 type (0 ack, 1 request, 2 reply); bit 2 fetch (the request wants a
//                reply); bit 3 first, bit 4 last (segment of its message); bit 5 resent (a
//                request segment sent again, a reply replayed); bit 6 ack echo: the segment
//                that moved this ack was a first sending (the requester may time its message);
//                bit 7 rack echo: the reply that moved this rack was a first sending (the
//                target may time it); each echo rides only the first datagram with its value
//   byte  1      protocol version (2)
//   bytes 2-3    reply: index of this segment in the reply; else 0
//   bytes 4-7    request: this segment's number; reply: number of the request's last segment
//                (the request's id); ack: 0
//   bytes 8-11   ack: the next segment number the sender expects from the receiver (cumulative)
//   bytes 12-15  rack: every message the sender sent before this number is complete
//
// Not here (yet): selective acks
// and fast retransmit (a loss costs a timeout and a go-back-N), resending only the missing
// segments of a multi-segment reply, detection of a peer that dies while nothing is outstanding
// to it, and recovery from a failure (a failed peer stays failed: the job is expected to abort).
//
// Threads: an Endpoint is not thread-safe. One thread at a time calls it (the owner holds a lock,
// or is the only one that polls); callbacks run on that thread, inside the call, and must not call
// the Endpoint back (queue the follow-up and do it after the call returns; a nested call is
// fatal).
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lib/transport/net/message_port.h"

namespace hoshmem::ud {

inline constexpr size_t kHeaderBytes = 16;
inline constexpr uint64_t kNever = UINT64_MAX;  // poll(): no deadline

enum class Type : uint8_t { kAck = 0, kRequest = 1, kReply = 2 };
inline constexpr uint8_t kFlagFetch = 1 << 2;
inline constexpr uint8_t kFlagFirst = 1 << 3;
inline constexpr uint8_t kFlagLast = 1 << 4;
inline constexpr uint8_t kFlagResent = 1 << 5;
inline constexpr uint8_t kFlagAckEcho = 1 << 6;
inline constexpr uint8_t kFlagRackEcho = 1 << 7;

struct Header {
  Type type = Type::kAck;
  uint8_t flags = 0;  // kFlag*
  uint16_t index = 0;
  uint32_t seq = 0, ack = 0, rack = 0;
};
void encode_header(const Header &h, uint8_t out[kHeaderBytes]);
// False when `len` is too short, the version is not 1 or the type or flags are unknown.
bool decode_header(const void *bytes, size_t len, Header *h);

enum class Kind : uint8_t { kAcked, kFetch };
enum class SendResult : uint8_t { kOk, kBusy, kFailed };

// Where a fetching request's handler writes its reply (a non-fetching one's gets capacity 0).
using net::Reply;

class Callbacks {
 public:
  virtual ~Callbacks() = default;
  virtual uint64_t now_ns() = 0;  // monotonic
  // One datagram to `peer`: iov[0] is the header, iov[1] (when iovcnt is 2) the payload. The
  // bytes may be reused when the call returns.
  virtual void send_datagram(int peer, const iovec *iov, int iovcnt) = 0;
  // Executes a request from `peer` (once, in order). `msg` is valid during the call only.
  virtual void handle(int peer, const void *msg, size_t len, Reply &reply) = 0;
  virtual void on_acked(uint64_t token) = 0;  // a kAcked message was delivered
  // A kFetch message's reply, valid during the call only.
  virtual void on_reply(uint64_t token, const void *reply, size_t len) = 0;
  virtual void on_peer_failed(int peer) = 0;   // once per peer, before its on_failed calls
  virtual void on_failed(uint64_t token) = 0;  // a message whose peer failed
};

struct Config {
  int npes = 0;                            // peers are 0..npes-1
  size_t mtu = 4096;                       // bytes of one datagram, header included
  uint32_t max_window = 32;                // segments (send buffer, early segments, cached replies)
  uint32_t initial_window = 4;             // cwnd of a new peer, segments
  size_t max_reply = 4096 - kHeaderBytes;  // a reply's maximum, bytes
  uint64_t rto_ns = 1'000'000;             // first retransmission timeout, and the least
  uint64_t rto_max_ns = 100'000'000;       // cap of the doubling
  uint64_t give_up_ns = 4'000'000'000;     // no progress for this long: the peer failed
  uint64_t ack_delay_ns = 50'000;          // a standalone ack waits this long for traffic to ride
  uint64_t rack_delay_ns = 50'000;         // the same for an ack owed only for a rack (the
                                           // target's replay timer allows for it)
  uint32_t initial_seq = 0;                // first sequence number on the wire (tests: wrap-around)
};

struct Stats {
  uint64_t datagrams = 0;        // sent, of every type
  uint64_t standalone_acks = 0;  // of those, acks (delayed or for a duplicate)
  uint64_t retransmits = 0;      // request segments sent again
  uint64_t replays = 0;          // replies sent again (timer or duplicate request)
  uint64_t duplicates = 0;       // request or reply segments received again, not acted on
  uint64_t timeouts = 0;         // of either timer (messages, cached replies)
  uint64_t window_shrinks = 0;   // timeouts that halved cwnd (requests were in flight)
  uint64_t rtt_samples = 0;      // round trips measured (acks of messages never resent)
  uint64_t delivered = 0;        // requests given to the handler
  uint64_t dropped = 0;          // malformed or outside the window
  uint64_t reply_waits = 0;      // sends refused (kBusy) for the room of replies awaited
};

class Endpoint {
 public:
  Endpoint(const Config &config, Callbacks &callbacks);  // a bad config is fatal
  ~Endpoint();
  Endpoint(const Endpoint &) = delete;
  Endpoint &operator=(const Endpoint &) = delete;

  // Copies `len` bytes (at most max_window segments' payload, else fatal) for `peer`. kOk: it is
  // on its way and will complete through on_acked/on_reply/on_failed with `token`. kBusy: the
  // send buffer is full, or (kFetch) the replies awaited would exceed the window with this one's
  // `reply_len` bytes; poll and retry. kFailed: the peer failed earlier.
  SendResult send(int peer, const void *msg, size_t len, Kind kind, uint64_t token,
                  size_t reply_len = 0);
  // A datagram that arrived from `peer` (its header included); valid during the call only.
  void on_datagram(int peer, const void *bytes, size_t len);
  // Does what is due (retransmissions, delayed acks, give-ups); returns the next time (ns of
  // now_ns()) at which poll has something to do, or kNever.
  uint64_t poll();

  size_t payload_per_segment() const { return payload_; }
  size_t memory_bytes() const;  // buffers held by all peers now (not the fixed per-peer state)
  // What the engine keeps for reuse, whatever the number of peers: at most spare_bound().
  size_t spare_bytes() const;
  size_t spare_bound() const;
  size_t memory_bound_per_peer() const;
  static size_t idle_peer_bytes();
  const Stats &stats() const { return stats_; }
  double cwnd(int peer) const;  // congestion window, segments
  uint64_t rto_ns(int peer) const;  // the retransmission timeout a new message to it starts with
  bool failed(int peer) const;
  // One line per peer with traffic (window, timers, what is outstanding, how long without
  // progress), for a stall's diagnosis (HOSHMEM_UD_DEBUG_MS).
  std::string describe(uint64_t now) const;

 private:
  struct OutMsg;
  struct Reassembly;
  struct Segment;
  struct Active;
  struct Peer;
  struct Spares;
  class Call;

  Peer &peer_at(int peer, const char *routine);
  Active &activate(int peer, Peer &p, uint64_t now);
  void settle(Peer &p, uint64_t now);
  // The steady state allocates nothing: a peer's Active, a message's map node and copy, a
  // cached reply's node go back to spares_ (bounded) and are taken from there.
  OutMsg &new_out(Active &a, uint64_t id);
  template <class It>
  It erase_out(Active &a, It it);
  std::vector<uint8_t> &new_reply(Active &a, uint64_t id);
  uint64_t rack(const Peer &p) const;
  void transmit(int peer, Peer &p, Header h, const void *payload, size_t len);
  void send_ack(int peer, Peer &p);
  void schedule_ack(int peer, Peer &p, uint64_t now);
  void send_reply(int peer, Peer &p, uint64_t id, const std::vector<uint8_t> &reply, bool replay);
  void pump(int peer, Peer &p, uint64_t now);
  void progress(const Peer &p, Active &a, uint64_t now);
  void sample_rtt(Peer &p, uint64_t rtt);
  uint64_t peer_rto(const Peer &p) const;
  void on_ack(int peer, Peer &p, uint64_t ack, uint64_t now, bool echo);
  void on_rack(Peer &p, uint64_t rack, uint64_t now, bool echo);
  void on_request(int peer, Peer &p, const Header &h, const uint8_t *payload, size_t len,
                  uint64_t now);
  void deliver(int peer, Peer &p, uint64_t id, bool fetch, const uint8_t *msg, size_t len,
               uint64_t now);
  void on_reply_segment(int peer, Peer &p, const Header &h, const uint8_t *payload, size_t len,
                        uint64_t now);
  void retransmit(int peer, Peer &p, uint64_t now);
  void replay(int peer, Peer &p, uint64_t now);
  void fail(int peer, Peer &p);

  const Config config_;
  Callbacks &cb_;
  const size_t payload_;                      // mtu - kHeaderBytes
  std::vector<std::unique_ptr<Peer>> peers_;  // created on first use
  std::vector<int> listed_;  // peers with buffers or an ack owed: what poll looks at
  std::vector<uint8_t> scratch_msg_, scratch_reply_;  // a reassembled request, a handler's reply
  std::unique_ptr<Spares> spares_;
  Stats stats_;
  bool in_call_ = false;
};

}  // namespace hoshmem::ud
