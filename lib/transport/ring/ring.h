// lib/transport/ring: one shared receive ring per PE, managed with remote atomics (the Fujitsu
// post-K design): O(1) receive memory per PE whatever the job size, and no receiver CPU in the
// sender's part.
//
// The ring is `bytes` (a power of two) of registered memory, with two monotonic 64-bit
// counters beside it:
//  * producer: advanced only by senders' fetch-adds (HCA atomics over the network; nothing else
//    touches it), each reserving the bytes of one message;
//  * consumer: written only by the ring's owner, read by senders (RDMA reads), never the target
//    of an atomic the owner's CPU could race.
// A message is an 8-byte header followed by its payload, rounded up to 8 bytes; it starts at
// the reserved position (modulo the ring) and may straddle the end (the header never does: every
// position is a multiple of 8). The sender writes the payload, then the header, in that order
// (RC and a DC initiator keep RDMA writes to one peer in order), so a non-zero header means the
// whole message is there. The owner takes messages in order at the consumer position, hands
// each to its handler, zeroes its bytes (header last) and only then advances the consumer: a
// sender that sees the consumer past a region may write into it.
//
// A sender keeps the last consumer value it read as its credit and reads the counter again only
// when that does not prove room for the message it reserved.
//
// This file holds the protocol over an abstract view of the network (RemoteRing), so that the
// same code runs over RC, DC, and local memory in the unit tests.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "lib/transport/ib/barriers.h"

namespace hoshmem::ring {

constexpr size_t kHeaderBytes = 8;
constexpr size_t kAlign = 8;

// The bytes one message of `payload` bytes takes in the ring.
constexpr uint64_t footprint(size_t payload) {
  return kHeaderBytes + ((payload + kAlign - 1) & ~(kAlign - 1));
}

// A message's header, as one 64-bit word: payload length in the low half, the sender's PE + 1 in
// the high half (never zero: a zeroed ring has no message).
constexpr uint64_t header(uint32_t length, uint32_t sender) {
  return uint64_t{sender + 1} << 32 | length;
}
constexpr uint32_t header_length(uint64_t h) { return static_cast<uint32_t>(h); }
constexpr uint32_t header_sender(uint64_t h) { return static_cast<uint32_t>(h >> 32) - 1; }

// What a sender does to a peer's ring: the network operations of the protocol.
class RemoteRing {
 public:
  virtual ~RemoteRing() = default;
  // Adds `bytes` to `pe`'s producer counter; its value before.
  virtual uint64_t fetch_add_producer(int pe, uint64_t bytes) = 0;
  // `pe`'s consumer counter, as a read of its memory sees it now.
  virtual uint64_t read_consumer(int pe) = 0;
  // Writes `len` bytes at `offset` of `pe`'s ring (never past its end). Writes to one PE become
  // visible in the order they were issued.
  virtual void write(int pe, uint64_t offset, const void *data, size_t len) = 0;
  // The message's header, its last write (a transport may make it the one that wakes the owner).
  virtual void write_header(int pe, uint64_t offset, uint64_t header) {
    write(pe, offset, &header, sizeof header);
  }
  // Called while waiting for room (backs off, makes progress); false: give up (the caller then
  // reports the ring as full past the give-up time).
  virtual bool wait_for_room(int pe, uint64_t waited_ns) = 0;
};

// The sending side: one per PE, for every peer's ring (each `bytes` long).
class Sender {
 public:
  Sender(RemoteRing *remote, size_t ring_bytes, int npes)
      : remote_(remote), bytes_(ring_bytes),
        credit_(std::make_unique<std::atomic<uint64_t>[]>(static_cast<size_t>(npes))) {}
  // The largest payload a ring takes.
  size_t max_payload() const { return bytes_ - kHeaderBytes; }
  // Sends `len` bytes (at most max_payload()) from `sender` to `pe`'s ring. False: the ring
  // stayed full until wait_for_room gave up (the bytes are reserved and never filled: the ring
  // is unusable, the job must end).
  bool send(int pe, uint32_t sender, const void *data, size_t len);
  // How often send() had to read the consumer counter (for SHMEM_INFO and the tests).
  uint64_t consumer_reads() const { return consumer_reads_.load(std::memory_order_relaxed); }

 private:
  void write_wrapped(int pe, uint64_t position, const void *data, size_t len);

  RemoteRing *remote_;
  size_t bytes_;
  // Per peer: the largest consumer value read (threads may send at once: atomics, raised only).
  std::unique_ptr<std::atomic<uint64_t>[]> credit_;
  std::atomic<uint64_t> consumer_reads_{0};
};

// The receiving side: the owner's view of its own ring.
class Receiver {
 public:
  // `ring`: `bytes` (a power of two) zeroed bytes; `consumer`: the counter senders read.
  Receiver(uint8_t *ring, size_t bytes, std::atomic<uint64_t> *consumer)
      : ring_(ring), bytes_(bytes), consumer_(consumer) {}
  // Hands every message that has arrived, in ring order, to `handle(sender, data, len)` (data is
  // valid during the call only); at most `limit` of them. The number handled.
  template <class Handler>
  size_t poll(Handler &&handle, size_t limit = SIZE_MAX);
  // Whether a message is waiting at the consumer position.
  bool ready() const { return load_header(consumer_->load(std::memory_order_relaxed)) != 0; }

 private:
  // Acquire orders the payload after the header between CPUs; poll() adds the device-read
  // ordering an HCA's writes need (aarch64: dmb oshld, ib::cqe_owner_before_body).
  uint64_t load_header(uint64_t position) const {
    return reinterpret_cast<std::atomic<uint64_t> *>(ring_ + (position & (bytes_ - 1)))
        ->load(std::memory_order_acquire);
  }
  // The payload at `position` (after the header), copied into scratch_ when it straddles the end.
  const uint8_t *payload(uint64_t position, size_t len);
  void zero(uint64_t position, uint64_t bytes);

  uint8_t *ring_;
  size_t bytes_;
  std::atomic<uint64_t> *consumer_;
  std::vector<uint8_t> scratch_;
};

template <class Handler>
size_t Receiver::poll(Handler &&handle, size_t limit) {
  size_t n = 0;
  uint64_t position = consumer_->load(std::memory_order_relaxed);
  for (; n < limit; ++n) {
    const uint64_t h = load_header(position);
    if (h == 0) break;
    ib::cqe_owner_before_body();  // the payload an HCA wrote before this header, as for a CQE
    const size_t len = header_length(h);
    handle(header_sender(h), payload(position + kHeaderBytes, len), len);
    const uint64_t size = footprint(len);
    zero(position, size);
    position += size;
    // The zeroes before the counter: a sender that reads it may write into those bytes at once.
    consumer_->store(position, std::memory_order_release);
  }
  return n;
}

}  // namespace hoshmem::ring
