// lib/transport/ring: the shared receive ring's protocol (ring.h).
#include "lib/transport/ring/ring.h"

#include <time.h>

#include <algorithm>
#include <cstring>

namespace hoshmem::ring {
namespace {

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

bool Sender::send(int pe, uint32_t sender, const void *data, size_t len) {
  const uint64_t size = footprint(len);
  const uint64_t position = remote_->fetch_add_producer(pe, size);
  // Room: the message's end no more than a ring ahead of what the owner has consumed.
  std::atomic<uint64_t> &credit = credit_[static_cast<size_t>(pe)];
  uint64_t seen = credit.load(std::memory_order_relaxed);
  if (position + size - seen > bytes_) {
    const uint64_t start = now_ns();
    for (;;) {
      const uint64_t read = remote_->read_consumer(pe);
      consumer_reads_.fetch_add(1, std::memory_order_relaxed);
      seen = std::max(seen, read);
      for (uint64_t old = credit.load(std::memory_order_relaxed);
           old < seen && !credit.compare_exchange_weak(old, seen, std::memory_order_relaxed);) {
      }
      if (position + size - seen <= bytes_) break;
      if (!remote_->wait_for_room(pe, now_ns() - start)) return false;
    }
  }
  write_wrapped(pe, position + kHeaderBytes, data, len);
  remote_->write_header(pe, position & (bytes_ - 1), header(static_cast<uint32_t>(len), sender));
  return true;
}

void Sender::write_wrapped(int pe, uint64_t position, const void *data, size_t len) {
  const uint64_t offset = position & (bytes_ - 1);
  const size_t first = std::min<size_t>(len, bytes_ - offset);
  if (first) remote_->write(pe, offset, data, first);
  if (len > first) remote_->write(pe, 0, static_cast<const uint8_t *>(data) + first, len - first);
}

const uint8_t *Receiver::payload(uint64_t position, size_t len) {
  const uint64_t offset = position & (bytes_ - 1);
  if (offset + len <= bytes_) return ring_ + offset;
  scratch_.resize(len);
  const size_t first = bytes_ - offset;
  memcpy(scratch_.data(), ring_ + offset, first);
  memcpy(scratch_.data() + first, ring_, len - first);
  return scratch_.data();
}

void Receiver::zero(uint64_t position, uint64_t bytes) {
  // The payload first, the header last: a half-zeroed message never looks like a new one.
  const uint64_t header_offset = position & (bytes_ - 1);
  const uint64_t body = (position + kHeaderBytes) & (bytes_ - 1);
  const uint64_t body_bytes = bytes - kHeaderBytes;
  const uint64_t first = std::min<uint64_t>(body_bytes, bytes_ - body);
  memset(ring_ + body, 0, first);
  memset(ring_, 0, body_bytes - first);
  reinterpret_cast<std::atomic<uint64_t> *>(ring_ + header_offset)
      ->store(0, std::memory_order_release);
}

}  // namespace hoshmem::ring
