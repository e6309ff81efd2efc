#include "lib/transport/ud/reliable.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>

#include "lib/base/error.h"

namespace hoshmem::ud {
namespace {

constexpr uint8_t kVersion = 2;  // 2: the echo bits
constexpr uint8_t kTypeMask = 0x3;
constexpr uint8_t kFlagsMask =
    kFlagFetch | kFlagFirst | kFlagLast | kFlagResent | kFlagAckEcho | kFlagRackEcho;
constexpr uint8_t kWhole = kFlagFirst | kFlagLast;
// Sequence numbers are 64 bits here and start at 2^32 (+ initial_seq), so that unwrapping one
// from the wire's low 32 bits never goes below zero.
constexpr uint64_t kSeqStart = uint64_t{1} << 32;
// What a std::map node costs beside its value (links, color, allocator rounding), for
// memory_bytes().
constexpr size_t kNodeBytes = 48;

void put16(uint8_t *p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint16_t get16(const uint8_t *p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }
uint32_t get32(const uint8_t *p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// The 64-bit number whose low 32 bits are `wire` and that is nearest to `ref`.
uint64_t unwrap(uint32_t wire, uint64_t ref) {
  return ref + static_cast<uint64_t>(
                   static_cast<int64_t>(static_cast<int32_t>(wire - static_cast<uint32_t>(ref))));
}

size_t segments(size_t len, size_t payload) { return len == 0 ? 1 : (len + payload - 1) / payload; }

}  // namespace

void encode_header(const Header &h, uint8_t out[kHeaderBytes]) {
  out[0] = static_cast<uint8_t>(static_cast<uint8_t>(h.type) | (h.flags & kFlagsMask));
  out[1] = kVersion;
  put16(out + 2, h.index);
  put32(out + 4, h.seq);
  put32(out + 8, h.ack);
  put32(out + 12, h.rack);
}

bool decode_header(const void *bytes, size_t len, Header *h) {
  const auto *b = static_cast<const uint8_t *>(bytes);
  if (len < kHeaderBytes || b[1] != kVersion) return false;
  const uint8_t type = b[0] & kTypeMask, flags = b[0] & ~kTypeMask;
  if (type > static_cast<uint8_t>(Type::kReply) || (flags & ~kFlagsMask)) return false;
  h->type = static_cast<Type>(type);
  h->flags = flags;
  h->index = get16(b + 2);
  h->seq = get32(b + 4);
  h->ack = get32(b + 8);
  h->rack = get32(b + 12);
  return true;
}

// A message this PE sent, until it completes. Keyed in Active::out by its last segment's number,
// which is its id on the wire.
struct Endpoint::OutMsg {
  uint64_t token = 0;
  uint64_t first = 0;  // its first segment's number
  bool fetch = false;
  uint32_t reply_segs = 0;  // a fetch's room in Active::reply_room until its reply completes
  // When its last segment first went out, for a round-trip sample when it is acked (kNever once
  // sampled). Kept when segments are sent again: see sample_rtt.
  uint64_t sent_at = kNever;
  std::vector<uint8_t> data;          // the copy, freed once every segment is acked
  std::unique_ptr<Reassembly> reply;  // a reply of several segments, as it arrives
};

struct Endpoint::Reassembly {
  std::vector<uint8_t> bytes;  // segment i at i * payload
  std::vector<bool> have;
  uint32_t got = 0;   // distinct segments received
  uint32_t segs = 0;  // 0 until the last one arrived
  size_t len = 0;
};

// A request segment that arrived early, or part of a message not complete yet.
struct Endpoint::Segment {
  uint8_t flags = 0;
  std::vector<uint8_t> bytes;
};

// What a peer with traffic needs beyond Peer; freed when the peer is idle again.
struct Endpoint::Active {
  // This PE's stream to the peer.
  uint64_t una;                    // oldest segment not acked
  uint64_t next_send;              // next segment to put on the wire (moves back at a timeout)
  uint64_t high;                   // one past the highest segment ever sent
  uint64_t rack_sent;              // the rack the peer was told last
  uint64_t replied_max = 0;        // id of the newest fetch whose reply completed
  std::map<uint64_t, OutMsg> out;  // incomplete messages by id
  uint32_t reply_room = 0;         // reply segments the fetches in `out` await
  // The peer's stream to this PE.
  uint64_t msg_start;                 // first segment of the message being received
  std::map<uint64_t, Segment> early;  // segments kept until their message is complete
  std::map<uint64_t, std::vector<uint8_t>> replies;  // by request id, until the peer's rack
  // Timers: one for this PE's messages, one for its cached replies (progress on one must not
  // postpone the other), each doubling from the peer's RTO at each timeout and reset to it by its
  // own progress.
  uint64_t rto, reply_rto;
  // The one reply being timed for a round-trip sample (first sent, then released by the peer's
  // rack; replays do not restart it), kNever when none.
  uint64_t timed_reply = kNever, timed_reply_at = 0;
  uint64_t retx_at = kNever;    // while out is not empty
  uint64_t replay_at = kNever;  // while replies is not empty
  uint64_t progress_at = 0;     // last progress (or when something became outstanding)

  bool outstanding() const { return !out.empty() || !replies.empty(); }
};

// What the engine keeps for reuse instead of freeing (see new_out). Bounded: kSpareActives
// Actives, max_window message nodes and as many reply nodes, copies of at most one segment.
struct Endpoint::Spares {
  std::vector<std::unique_ptr<Active>> actives;
  std::vector<decltype(Active::out)::node_type> out;
  std::vector<decltype(Active::replies)::node_type> replies;
};
constexpr size_t kSpareActives = 16;

struct Endpoint::Peer {
  uint64_t next_seq;  // number of this PE's next new segment to the peer
  uint64_t expected;  // next segment number expected from the peer: the cumulative ack
  uint64_t ack_due = kNever;
  float cwnd, ssthresh;
  // Round trips to this peer (ns, saturated; srtt 0: no sample yet) and the timeout they give,
  // kept while the peer is idle: a round trip longer than rto_ns (a loaded host, a slow target)
  // must not cost a spurious resend per message.
  uint32_t srtt = 0, rto;
  // Echoes owed to the peer for its round trips: `expected` (our ack) was last moved by a first
  // sending, replied_max (our rack) by a reply's first sending. Each goes out once, on the next
  // datagram: a later one with the same value may answer a resend.
  bool ack_echo = false, rack_echo = false;
  bool failed = false;
  bool listed = false;        // in listed_
  std::unique_ptr<Active> a;  // null while idle
};

// Marks a call into the Endpoint; a callback calling back in is a bug.
class Endpoint::Call {
 public:
  Call(Endpoint &e, const char *routine) : e_(e) {
    if (e_.in_call_) fatal(routine, "called from one of the Endpoint's own callbacks");
    e_.in_call_ = true;
  }
  ~Call() { e_.in_call_ = false; }

 private:
  Endpoint &e_;
};

Endpoint::Endpoint(const Config &config, Callbacks &callbacks)
    : config_(config), cb_(callbacks), payload_(config.mtu - kHeaderBytes) {
  const char *bad = nullptr;
  if (config.npes <= 0)
    bad = "npes";
  else if (config.mtu <= kHeaderBytes)
    bad = "mtu";
  else if (config.max_window == 0 || config.max_window > (1u << 30))
    bad = "max_window";
  else if (config.initial_window == 0 || config.initial_window > config.max_window)
    bad = "initial_window";
  else if (config.max_reply > payload_ * 65536)
    bad = "max_reply";
  else if (config.rto_ns == 0 || config.rto_max_ns < config.rto_ns)
    bad = "rto_ns/rto_max_ns";
  if (bad) fatal("ud::Endpoint", "bad configuration: %s", bad);
  peers_.resize(static_cast<size_t>(config.npes));
  scratch_reply_.resize(config.max_reply);
  spares_ = std::make_unique<Spares>();
}

Endpoint::~Endpoint() = default;

size_t Endpoint::idle_peer_bytes() { return sizeof(Peer); }

Endpoint::Peer &Endpoint::peer_at(int peer, const char *routine) {
  if (peer < 0 || peer >= config_.npes) fatal(routine, "peer %d out of range", peer);
  std::unique_ptr<Peer> &slot = peers_[static_cast<size_t>(peer)];
  if (!slot) {
    slot = std::make_unique<Peer>();
    slot->next_seq = slot->expected = kSeqStart + config_.initial_seq;
    slot->cwnd = static_cast<float>(config_.initial_window);
    slot->rto = static_cast<uint32_t>(std::min<uint64_t>(config_.rto_ns, UINT32_MAX));
    slot->ssthresh = static_cast<float>(config_.max_window);
  }
  return *slot;
}

Endpoint::Active &Endpoint::activate(int peer, Peer &p, uint64_t now) {
  if (!p.a) {
    if (spares_->actives.empty()) {
      p.a = std::make_unique<Active>();
    } else {  // its maps are empty (settle)
      p.a = std::move(spares_->actives.back());
      spares_->actives.pop_back();
      *p.a = Active{};
    }
    Active &a = *p.a;
    a.una = a.next_send = a.high = a.rack_sent = p.next_seq;
    a.msg_start = p.expected;
    a.rto = a.reply_rto = peer_rto(p);
    a.progress_at = now;
  }
  if (!p.listed) {
    p.listed = true;
    listed_.push_back(peer);
  }
  return *p.a;
}

// End of a call's work on a peer: owe the peer our rack if it releases a reply, arm or disarm the
// timers, free the buffers of a peer that became idle.
void Endpoint::settle(Peer &p, uint64_t now) {
  if (!p.a) return;
  Active &a = *p.a;
  // The rack owed for a reply waits rack_delay_ns: the next request usually carries it (a loop
  // of fetching AMOs then costs two datagrams each, not three).
  if (a.replied_max >= a.rack_sent && rack(p) > a.rack_sent)
    p.ack_due = std::min(p.ack_due, now + config_.rack_delay_ns);  // p is listed: it has an Active
  if (a.retx_at == kNever && a.replay_at == kNever) a.progress_at = now;  // was not waiting
  if (a.out.empty())
    a.retx_at = kNever;
  else if (a.retx_at == kNever)
    a.retx_at = now + a.rto;
  if (a.replies.empty())
    a.replay_at = kNever;
  else if (a.replay_at == kNever)
    a.replay_at = now + a.reply_rto + config_.rack_delay_ns;  // the rack may wait that long
  if (!a.outstanding() && a.early.empty()) {
    if (spares_->actives.size() < kSpareActives)
      spares_->actives.push_back(std::move(p.a));
    else
      p.a.reset();
  }
}

Endpoint::OutMsg &Endpoint::new_out(Active &a, uint64_t id) {
  if (spares_->out.empty()) return a.out[id];
  auto node = std::move(spares_->out.back());
  spares_->out.pop_back();
  node.key() = id;
  OutMsg &m = node.mapped();
  m.sent_at = kNever;  // the caller sets the rest; `data` keeps its capacity
  return a.out.insert(a.out.end(), std::move(node))->second;  // ids grow: the newest is last
}

template <class It>
It Endpoint::erase_out(Active &a, It it) {
  if (spares_->out.size() >= config_.max_window || it->second.data.capacity() > payload_)
    return a.out.erase(it);
  It next = std::next(it);
  auto node = a.out.extract(it);
  node.mapped().reply.reset();
  spares_->out.push_back(std::move(node));
  return next;
}

std::vector<uint8_t> &Endpoint::new_reply(Active &a, uint64_t id) {
  if (spares_->replies.empty()) return a.replies[id];
  auto node = std::move(spares_->replies.back());
  spares_->replies.pop_back();
  node.key() = id;
  return a.replies.insert(a.replies.end(), std::move(node))->second;  // ids grow
}

uint64_t Endpoint::rack(const Peer &p) const {
  return p.a && !p.a->out.empty() ? p.a->out.begin()->second.first : p.next_seq;
}

void Endpoint::transmit(int peer, Peer &p, Header h, const void *payload, size_t len) {
  h.ack = static_cast<uint32_t>(p.expected);
  const uint64_t r = rack(p);
  h.rack = static_cast<uint32_t>(r);
  if (p.ack_echo && !(h.flags & kFlagResent)) h.flags |= kFlagAckEcho;  // not on a replay
  if (p.rack_echo) h.flags |= kFlagRackEcho;
  p.ack_echo = p.rack_echo = false;
  uint8_t header[kHeaderBytes];
  encode_header(h, header);
  iovec iov[2] = {{header, kHeaderBytes}, {const_cast<void *>(payload), len}};
  cb_.send_datagram(peer, iov, len ? 2 : 1);
  ++stats_.datagrams;
  p.ack_due = kNever;  // this header carried the ack
  if (p.a) p.a->rack_sent = r;
}

void Endpoint::send_ack(int peer, Peer &p) {
  ++stats_.standalone_acks;
  transmit(peer, p, Header{}, nullptr, 0);
}

void Endpoint::schedule_ack(int peer, Peer &p, uint64_t now) {
  p.ack_due = std::min(p.ack_due, now + config_.ack_delay_ns);  // a rack owed may wait longer
  if (!p.listed) {
    p.listed = true;
    listed_.push_back(peer);
  }
}

void Endpoint::send_reply(int peer, Peer &p, uint64_t id, const std::vector<uint8_t> &reply,
                          bool replay) {
  const size_t n = segments(reply.size(), payload_);
  for (size_t i = 0; i < n; ++i) {
    Header h;
    h.type = Type::kReply;
    h.flags = static_cast<uint8_t>((i == 0 ? kFlagFirst : 0) | (i == n - 1 ? kFlagLast : 0) |
                                   (replay ? kFlagResent : 0));
    h.index = static_cast<uint16_t>(i);
    h.seq = static_cast<uint32_t>(id);
    const size_t off = i * payload_;
    transmit(peer, p, h, reply.data() + off, std::min(payload_, reply.size() - off));
  }
}

// Puts on the wire the segments that the congestion window allows.
void Endpoint::pump(int peer, Peer &p, uint64_t now) {
  Active &a = *p.a;
  const uint64_t limit = std::min(p.next_seq, a.una + static_cast<uint64_t>(p.cwnd));
  auto it = a.out.lower_bound(a.next_send);
  for (; a.next_send < limit; ++a.next_send) {
    while (it->first < a.next_send) ++it;
    const uint64_t seq = a.next_send;
    OutMsg &m = it->second;
    Header h;
    h.type = Type::kRequest;
    h.flags = static_cast<uint8_t>((m.fetch ? kFlagFetch : 0) | (seq == m.first ? kFlagFirst : 0) |
                                   (seq == it->first ? kFlagLast : 0));
    h.seq = static_cast<uint32_t>(seq);
    const size_t off = (seq - m.first) * payload_;
    if (seq < a.high) {
      ++stats_.retransmits;
      h.flags |= kFlagResent;
    } else if (seq == it->first) {
      m.sent_at = now;
    }
    transmit(peer, p, h, m.data.data() + off, std::min(payload_, m.data.size() - off));
  }
  a.high = std::max(a.high, a.next_send);
}

SendResult Endpoint::send(int peer, const void *msg, size_t len, Kind kind, uint64_t token,
                          size_t reply_len) {
  Call call(*this, "ud::Endpoint::send");
  Peer &p = peer_at(peer, "ud::Endpoint::send");
  if (p.failed) return SendResult::kFailed;
  const size_t n = segments(len, payload_);
  if (n > config_.max_window)
    fatal("ud::Endpoint::send", "%zu bytes: more than the window of %u segments", len,
          config_.max_window);
  if (p.next_seq + n - rack(p) > config_.max_window) return SendResult::kBusy;
  // The peer sends a reply at once, whole, whatever its cwnd: what this PE may receive at a time
  // is bounded here (a reply of the largest size, alone, always goes).
  const uint32_t reply_segs =
      kind == Kind::kFetch
          ? static_cast<uint32_t>(segments(std::min(reply_len, config_.max_reply), payload_))
          : 0;
  if (reply_segs && p.a && p.a->reply_room && p.a->reply_room + reply_segs > config_.max_window) {
    ++stats_.reply_waits;
    return SendResult::kBusy;
  }
  const uint64_t now = cb_.now_ns();
  Active &a = activate(peer, p, now);
  const uint64_t first = p.next_seq;
  p.next_seq += n;
  OutMsg &m = new_out(a, p.next_seq - 1);
  m.token = token;
  m.first = first;
  m.fetch = kind == Kind::kFetch;
  m.reply_segs = reply_segs;
  a.reply_room += reply_segs;
  const auto *bytes = static_cast<const uint8_t *>(msg);
  m.data.assign(bytes, bytes + len);
  pump(peer, p, now);
  settle(p, now);
  return SendResult::kOk;
}

void Endpoint::on_datagram(int peer, const void *bytes, size_t len) {
  Call call(*this, "ud::Endpoint::on_datagram");
  Peer &p = peer_at(peer, "ud::Endpoint::on_datagram");
  Header h;
  if (!decode_header(bytes, len, &h)) {
    ++stats_.dropped;
    return;
  }
  if (p.failed) return;
  const uint64_t now = cb_.now_ns();
  const uint8_t *payload = static_cast<const uint8_t *>(bytes) + kHeaderBytes;
  const size_t n = len - kHeaderBytes;
  // The header first: what the peer received of ours, and which replies it no longer needs
  // (before a request is delivered, which bounds the replies kept to the window).
  on_ack(peer, p, unwrap(h.ack, p.next_seq), now, h.flags & kFlagAckEcho);
  on_rack(p, unwrap(h.rack, p.expected), now, h.flags & kFlagRackEcho);
  if (h.type == Type::kRequest) on_request(peer, p, h, payload, n, now);
  if (h.type == Type::kReply) on_reply_segment(peer, p, h, payload, n, now);
  settle(p, now);
}

// echo: the peer says the segment that moved this ack was a first sending, so the time since
// the newest completed message first went out is a round trip (see sample_rtt).
void Endpoint::on_ack(int peer, Peer &p, uint64_t ack, uint64_t now, bool echo) {
  if (!p.a) return;
  Active &a = *p.a;
  if (ack <= a.una || ack > a.high) return;  // old, or for segments never sent
  const float acked = static_cast<float>(ack - a.una);
  a.una = ack;
  a.next_send = std::max(a.next_send, ack);
  p.cwnd += p.cwnd < p.ssthresh ? acked : acked / p.cwnd;
  p.cwnd = std::min(p.cwnd, static_cast<float>(config_.max_window));
  uint64_t sent_at = kNever;  // the newest message this ack completes, if it can be timed
  for (auto it = a.out.begin(); it != a.out.end() && it->first < ack; ++it) {
    if (it->second.sent_at != kNever) sent_at = it->second.sent_at;
    it->second.sent_at = kNever;
  }
  if (sent_at != kNever && echo) sample_rtt(p, now - sent_at);
  progress(p, a, now);
  for (auto it = a.out.begin(); it != a.out.end() && it->first < ack;) {
    OutMsg &m = it->second;
    if (m.fetch) {
      // Delivered: only its reply is awaited (a copy of one segment stays for reuse).
      if (m.data.capacity() > payload_) std::vector<uint8_t>().swap(m.data);
      ++it;
    } else {
      const uint64_t token = m.token;
      it = erase_out(a, it);
      cb_.on_acked(token);
    }
  }
  pump(peer, p, now);
}

void Endpoint::on_rack(Peer &p, uint64_t rack, uint64_t now, bool echo) {
  if (!p.a) return;
  Active &a = *p.a;
  const auto end = a.replies.lower_bound(rack);
  if (end == a.replies.begin()) return;
  for (auto it = a.replies.begin(); it != end;) {
    if (spares_->replies.size() >= config_.max_window || it->second.capacity() > payload_) {
      it = a.replies.erase(it);
      continue;
    }
    auto next = std::next(it);
    spares_->replies.push_back(a.replies.extract(it));
    it = next;
  }
  if (a.timed_reply < rack) {  // its first sending, received as such, and its release
    if (echo) sample_rtt(p, now - a.timed_reply_at);
    a.timed_reply = kNever;
  }
  a.reply_rto = peer_rto(p);
  a.replay_at = kNever;  // settle() arms it again from now
  a.progress_at = now;
}

void Endpoint::on_request(int peer, Peer &p, const Header &h, const uint8_t *payload, size_t len,
                          uint64_t now) {
  const uint64_t seq = unwrap(h.seq, p.expected);
  if (seq < p.expected) {  // delivered already: never again
    ++stats_.duplicates;
    if ((h.flags & (kFlagFetch | kFlagLast)) == (kFlagFetch | kFlagLast) && p.a) {
      if (auto it = p.a->replies.find(seq); it != p.a->replies.end()) {
        ++stats_.replays;
        send_reply(peer, p, seq, it->second, true);  // its header acks too
        return;
      }
    }
    send_ack(peer, p);  // the peer did not see our ack
    return;
  }
  const uint64_t start = p.a ? p.a->msg_start : p.expected;
  if (seq >= start + config_.max_window) {
    ++stats_.dropped;
    return;
  }
  schedule_ack(peer, p, now);  // a reply sent below carries it instead
  const bool fetch = h.flags & kFlagFetch;
  p.ack_echo = !(h.flags & kFlagResent);  // this segment moves the ack (below) or will
  if (seq == p.expected && (h.flags & kWhole) == kWhole && (!p.a || p.a->early.empty())) {
    ++p.expected;  // the common case: a whole message, in order
    if (p.a) p.a->msg_start = p.expected;
    deliver(peer, p, seq, fetch, payload, len, now);
    return;
  }
  Active &a = activate(peer, p, now);
  auto [slot, fresh] = a.early.try_emplace(seq);
  if (!fresh) {
    ++stats_.duplicates;
    return;
  }
  slot->second.flags = h.flags;
  slot->second.bytes.assign(payload, payload + len);
  // Move the cumulative ack over the segments now in order; deliver each message they complete.
  for (auto it = a.early.find(p.expected); it != a.early.end(); it = a.early.find(p.expected)) {
    ++p.expected;
    if (!(it->second.flags & kFlagLast)) continue;
    const uint64_t id = it->first;
    const auto begin = a.early.find(a.msg_start), end = std::next(it);
    scratch_msg_.clear();
    for (auto s = begin; s != end; ++s)
      scratch_msg_.insert(scratch_msg_.end(), s->second.bytes.begin(), s->second.bytes.end());
    const bool fetch_msg = it->second.flags & kFlagFetch;
    a.early.erase(begin, end);
    a.msg_start = p.expected;
    deliver(peer, p, id, fetch_msg, scratch_msg_.data(), scratch_msg_.size(), now);
  }
}

void Endpoint::deliver(int peer, Peer &p, uint64_t id, bool fetch, const uint8_t *msg, size_t len,
                       uint64_t now) {
  ++stats_.delivered;
  Reply reply{fetch ? scratch_reply_.data() : nullptr, fetch ? scratch_reply_.size() : 0, 0};
  cb_.handle(peer, msg, len, reply);
  if (!fetch) return;
  if (reply.len > reply.capacity)
    fatal("ud::Endpoint", "handler wrote a reply of %zu bytes, capacity %zu", reply.len,
          reply.capacity);
  Active &a = activate(peer, p, now);
  std::vector<uint8_t> &cached = new_reply(a, id);
  cached.assign(reply.data, reply.data + reply.len);
  if (a.timed_reply == kNever) {
    a.timed_reply = id;
    a.timed_reply_at = now;
  }
  send_reply(peer, p, id, cached, false);
}

void Endpoint::on_reply_segment(int peer, Peer &p, const Header &h, const uint8_t *payload,
                                size_t len, uint64_t now) {
  const uint64_t id = unwrap(h.seq, p.next_seq);
  auto it = p.a ? p.a->out.find(id) : std::map<uint64_t, OutMsg>::iterator{};
  if (!p.a || it == p.a->out.end() || !it->second.fetch) {
    ++stats_.duplicates;
    send_ack(peer, p);  // the peer resends a reply we have: our rack did not reach it
    return;
  }
  Active &a = *p.a;
  OutMsg &m = it->second;
  const void *bytes = payload;
  if ((h.flags & kWhole) != kWhole) {  // one segment of several
    const bool last = h.flags & kFlagLast;
    const size_t off = size_t{h.index} * payload_;
    if (!m.reply) m.reply = std::make_unique<Reassembly>();
    Reassembly &r = *m.reply;
    if (off + len > config_.max_reply || (!last && len != payload_) ||
        (r.segs && h.index >= r.segs)) {
      ++stats_.dropped;
      return;
    }
    if (r.have.size() <= h.index) r.have.resize(size_t{h.index} + 1);
    if (r.have[h.index]) {
      ++stats_.duplicates;
      return;
    }
    r.have[h.index] = true;
    ++r.got;
    if (r.bytes.size() < off + len) {
      if (r.bytes.capacity() < off + len)
        r.bytes.reserve(std::min(config_.max_reply, std::max(off + len, 2 * r.bytes.capacity())));
      r.bytes.resize(off + len);
    }
    std::memcpy(r.bytes.data() + off, payload, len);
    if (last) {
      r.segs = h.index + 1u;
      r.len = off + len;
    }
    if (!r.segs || r.got < r.segs) return;
    bytes = r.bytes.data();
    len = r.len;
  }
  on_ack(peer, p, id + 1, now, false);  // a reply says its request arrived (its header's ack did)
  cb_.on_reply(m.token, bytes, len);
  a.reply_room -= m.reply_segs;
  erase_out(a, it);
  if (id > a.replied_max) p.rack_echo = !(h.flags & kFlagResent);
  a.replied_max = std::max(a.replied_max, id);
  progress(p, a, now);
  pump(peer, p, now);  // the window counts from the oldest incomplete message
}

// Progress on this PE's messages (acked, or replied).
void Endpoint::progress(const Peer &p, Active &a, uint64_t now) {
  a.rto = peer_rto(p);
  a.retx_at = kNever;  // settle() arms it again from now
  a.progress_at = now;
}

// The timeout a timer of the peer starts with (the stored value saturates at 2^32 ns, which a
// configured rto_ns may exceed).
uint64_t Endpoint::peer_rto(const Peer &p) const {
  return std::max<uint64_t>(p.rto, config_.rto_ns);
}

// A round trip measured to the peer: the timeout becomes twice the smoothed time (gain 1/8),
// within [rto_ns, rto_max_ns]. Not RFC 6298's four deviations: here every lost datagram costs
// a whole timeout (no fast retransmit), and on a jittery path (20% loss and reordering in the
// model, a loaded host) the deviations made it several times rto_ns and loss recovery as much
// slower, where a resend too early costs only a duplicate. What must not happen is a timeout
// below the usual round trip, which resent every message.
//
// Samples come only from first sendings the peer says it received as such (the echo bits of
// the header), so they are exact even when the message was also sent again: a round trip longer
// than the timeout is learned from the first message (its first copy is answered; with Karn's
// rule it never would be), and a resend never inflates one. So no timeout's doubling needs to be
// kept between messages: keeping it until an unambiguous sample (Karn) left it doubled under
// steady loss, where few messages of many segments go without a resend, and made loss recovery
// 5-10 times slower.
void Endpoint::sample_rtt(Peer &p, uint64_t rtt) {
  ++stats_.rtt_samples;
  const uint64_t r = std::clamp<uint64_t>(rtt, 1, UINT32_MAX);
  p.srtt = static_cast<uint32_t>(p.srtt == 0 ? r : (7 * uint64_t{p.srtt} + r) / 8);
  const uint64_t rto = 2 * uint64_t{p.srtt};
  p.rto = static_cast<uint32_t>(
      std::min<uint64_t>(std::clamp(rto, config_.rto_ns, config_.rto_max_ns), UINT32_MAX));
}

void Endpoint::retransmit(int peer, Peer &p, uint64_t now) {
  Active &a = *p.a;
  ++stats_.timeouts;
  if (a.una < a.next_send) {  // requests in flight: go back to the oldest, with half the window
    ++stats_.window_shrinks;
    p.ssthresh = std::max(p.cwnd / 2, 1.0f);
    p.cwnd = p.ssthresh;
    a.next_send = a.una;
    pump(peer, p, now);
  }  // else only replies are awaited: the targets resend them
  a.rto = std::min(a.rto * 2, config_.rto_max_ns);
  a.retx_at = now + a.rto;
}

void Endpoint::replay(int peer, Peer &p, uint64_t now) {
  Active &a = *p.a;
  ++stats_.timeouts;
  for (const auto &[id, reply] : a.replies) {
    ++stats_.replays;
    send_reply(peer, p, id, reply, true);
  }
  a.reply_rto = std::min(a.reply_rto * 2, config_.rto_max_ns);
  a.replay_at = now + a.reply_rto + config_.rack_delay_ns;
}

void Endpoint::fail(int peer, Peer &p) {
  p.failed = true;
  p.ack_due = kNever;
  const std::unique_ptr<Active> a = std::move(p.a);
  cb_.on_peer_failed(peer);
  for (const auto &[id, m] : a->out) cb_.on_failed(m.token);
}

uint64_t Endpoint::poll() {
  Call call(*this, "ud::Endpoint::poll");
  const uint64_t now = cb_.now_ns();
  uint64_t next = kNever;
  for (size_t i = 0; i < listed_.size();) {
    const int peer = listed_[i];
    Peer &p = *peers_[static_cast<size_t>(peer)];
    if (p.a && p.a->outstanding() && now - p.a->progress_at >= config_.give_up_ns) {
      fail(peer, p);
    } else if (!p.failed) {
      if (p.a && now >= p.a->retx_at) retransmit(peer, p, now);
      if (p.a && now >= p.a->replay_at) replay(peer, p, now);
      if (p.ack_due != kNever && now >= p.ack_due) send_ack(peer, p);
      settle(p, now);
    }
    if (p.failed || (!p.a && p.ack_due == kNever)) {
      p.listed = false;
      listed_[i] = listed_.back();
      listed_.pop_back();
      continue;
    }
    next = std::min(next, p.ack_due);
    if (p.a) {
      next = std::min({next, p.a->retx_at, p.a->replay_at});
      if (p.a->outstanding()) next = std::min(next, p.a->progress_at + config_.give_up_ns);
    }
    ++i;
  }
  return next;
}

size_t Endpoint::memory_bytes() const {
  size_t total = 0;
  for (int peer : listed_) {
    const Active *a = peers_[static_cast<size_t>(peer)]->a.get();
    if (!a) continue;
    total += sizeof(Active);
    for (const auto &[id, m] : a->out) {
      total += kNodeBytes + sizeof(OutMsg) + m.data.capacity();
      if (m.reply)
        total += sizeof(Reassembly) + m.reply->bytes.capacity() + m.reply->have.capacity() / 8;
    }
    for (const auto &[seq, s] : a->early)
      total += kNodeBytes + sizeof(Segment) + s.bytes.capacity();
    for (const auto &[id, r] : a->replies) total += kNodeBytes + sizeof(r) + r.capacity();
  }
  return total;
}

size_t Endpoint::spare_bytes() const {
  size_t total = spares_->actives.size() * sizeof(Active);
  for (const auto &n : spares_->out)
    total += kNodeBytes + sizeof(OutMsg) + n.mapped().data.capacity();
  for (const auto &n : spares_->replies)
    total += kNodeBytes + sizeof(std::vector<uint8_t>) + n.mapped().capacity();
  return total;
}

size_t Endpoint::spare_bound() const {
  return kSpareActives * sizeof(Active) +
         config_.max_window * (2 * kNodeBytes + sizeof(OutMsg) + sizeof(std::vector<uint8_t>) +
                               2 * payload_);
}

size_t Endpoint::memory_bound_per_peer() const {
  const size_t w = config_.max_window, reply_segs = segments(config_.max_reply, payload_);
  const size_t out = kNodeBytes + sizeof(OutMsg) + sizeof(Reassembly) + config_.max_reply +
                     (reply_segs + 63) / 64 * 8;
  const size_t early = kNodeBytes + sizeof(Segment);
  const size_t replies = kNodeBytes + sizeof(std::vector<uint8_t>) + config_.max_reply;
  // Copies and early segments are at most w segments of payload in all.
  return sizeof(Active) + w * (out + early + replies) + 2 * w * payload_;
}

double Endpoint::cwnd(int peer) const {
  const Peer *p = peers_.at(static_cast<size_t>(peer)).get();
  return p ? p->cwnd : config_.initial_window;
}

uint64_t Endpoint::rto_ns(int peer) const {
  const Peer *p = peers_.at(static_cast<size_t>(peer)).get();
  return p ? peer_rto(*p) : config_.rto_ns;
}

bool Endpoint::failed(int peer) const {
  const Peer *p = peers_.at(static_cast<size_t>(peer)).get();
  return p && p->failed;
}

std::string Endpoint::describe(uint64_t now) const {
  std::string text;
  const auto ms = [now](uint64_t at) {
    return at == kNever ? -1.0 : (static_cast<double>(at) - static_cast<double>(now)) / 1e6;
  };
  for (int peer : listed_) {
    const Peer &p = *peers_[static_cast<size_t>(peer)];
    char line[512];
    if (!p.a) {
      snprintf(line, sizeof line, "  peer %d: idle, ack due in %.1f ms\n", peer, ms(p.ack_due));
      text += line;
      continue;
    }
    const Active &a = *p.a;
    size_t reply_segs = 0;
    for (const auto &[id, r] : a.replies) reply_segs += segments(r.size(), payload_);
    snprintf(line, sizeof line,
             "  peer %d: cwnd %.1f ssthresh %.1f srtt %.2f ms rto %.2f/%.2f ms; out %zu msgs "
             "(segments una+%llu sent, +%llu high, +%llu new), %u reply segments awaited; "
             "in: %zu early, %zu replies cached (%zu segments); resend in %.1f ms, replay in "
             "%.1f ms, ack in %.1f ms; no progress for %.1f ms\n",
             peer, static_cast<double>(p.cwnd), static_cast<double>(p.ssthresh), p.srtt / 1e6,
             static_cast<double>(a.rto) / 1e6, static_cast<double>(a.reply_rto) / 1e6,
             a.out.size(), static_cast<unsigned long long>(a.next_send - a.una),
             static_cast<unsigned long long>(a.high - a.una),
             static_cast<unsigned long long>(p.next_seq - a.una), a.reply_room, a.early.size(),
             a.replies.size(), reply_segs, ms(a.retx_at), ms(a.replay_at), ms(p.ack_due),
             static_cast<double>(now - a.progress_at) / 1e6);
    text += line;
  }
  return text;
}

}  // namespace hoshmem::ud
