// lib/transport/ring: the job's active messages over RDMA through one shared receive ring per PE
// (ring.h's protocol), for HOSHMEM_AM=ring: requests to other nodes' CPUs without UD, in O(1)
// memory per PE whatever the job's size.
//
// Each PE's ring area (in its registered control file, at the same offset on every PE) holds:
//  * the producer counter (advanced only by senders' HCA fetch-adds) and the consumer counter
//    (stored only by the owner, read by senders with RDMA reads), each on its own line;
//  * kReplySlots reply slots for this PE's own requests: a request names one, the target writes
//    its reply there with RDMA writes, data first, then the slot's word (length + 1), so the
//    requester polls its own memory and the target never waits for the requester's CPU;
//  * the ring, kRingBytes.
// A request in the ring is a RequestHeader (the reply slot) and the message. The sender writes
// the message header last as an RDMA write with immediate: the target's progress thread sleeps
// on the receive CQ those complete on (Link::arrivals_fd) and wakes when a request arrives.
//
// Every request takes a reply slot, even one that wants no reply (post): an empty reply says it
// was executed, which is what quiet waits for. So at most kReplySlots requests are in flight per
// PE; one more first collects replies (and serves this PE's own ring while it waits).
//
// Threads: one lock around the receiving side and the slots; the handler runs under it and must
// not call the transport. Sending takes it only to claim a slot.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lib/base/spin_lock.h"
#include "lib/progress/progress_thread.h"
#include "lib/transport/net/message_port.h"
#include "lib/transport/ring/ring.h"

namespace hoshmem::ring {

// The ring area's layout, in bytes from its start.
constexpr size_t kProducerOffset = 0;
constexpr size_t kConsumerOffset = 64;
constexpr size_t kReplySlotsOffset = 4096;
constexpr unsigned kReplySlots = 32;
constexpr size_t kMaxMessage = 2048;  // a request's or reply's bytes, at most
constexpr size_t kReplySlotBytes = 64 + kMaxMessage;  // the slot's word, then the reply's bytes
constexpr size_t kRingOffset = 128 * 1024;
constexpr size_t kRingBytes = 64 * 1024;
constexpr size_t kAreaBytes = kRingOffset + kRingBytes;
static_assert(kReplySlotsOffset + kReplySlots * kReplySlotBytes <= kRingOffset);

// The network as the ring needs it: RDMA on another PE's ring area, by offset in it, and this
// PE's arrivals (writes with immediate).
class Link {
 public:
  virtual ~Link() = default;
  // An HCA fetch-add on PE `pe`'s 8-byte word; waits for the old value.
  virtual uint64_t fetch_add(int pe, uint64_t offset, uint64_t add) = 0;
  // An RDMA read of PE `pe`'s 8-byte word.
  virtual uint64_t read_word(int pe, uint64_t offset) = 0;
  // RDMA writes: those to one PE land in the order they were issued; `src` is reusable on return.
  virtual void write(int pe, uint64_t offset, const void *src, size_t len) = 0;
  // The same as a write with immediate (at most 8 bytes): an arrival at `pe`.
  virtual void write_notify(int pe, uint64_t offset, const void *src, size_t len) = 0;
  // This PE's arrivals: a descriptor that is readable once armed and a write with immediate came
  // (-1: none) until the event is taken, arming it, taking its events, and reading the arrivals
  // (the number read).
  virtual int arrivals_fd() = 0;
  virtual void arm_arrivals() = 0;
  virtual void take_arrival_events() = 0;
  virtual unsigned drain_arrivals() = 0;
};

class Transport final : public net::MessagePort, private RemoteRing {
 public:
  struct Options {
    uint64_t give_up_ns = 30'000'000'000;  // a ring full, or a reserved message missing, this long
    bool progress_thread = true;
  };
  // `area`: this PE's ring area (kAreaBytes, zeroed, registered). `link`, `handler` outlive this.
  Transport(int me, int npes, uint8_t *area, Link *link, net::RequestHandler *handler,
            net::ErrorHandler on_error, const Options &options);
  ~Transport() override;
  void start();  // the progress thread, if the options ask for one

  // net::MessagePort
  size_t max_message() const override { return kMaxMessage; }
  void post(int pe, const void *msg, size_t len) override;
  size_t call(int pe, const void *msg, size_t len, void *reply, size_t capacity) override;
  void call_nbi(int pe, const void *msg, size_t len, void *reply, size_t capacity) override;
  void quiet() override;
  progress::Thread *thread() override { return thread_.running() ? &thread_ : nullptr; }
  void closing() override {}
  void shutdown() override;

  // progress::Source
  bool serve() override;
  bool serve_if_free(bool &busy) override;
  void arm() override;
  void sleep(long timeout_ns) override;
  void interrupt() override;
  long next_deadline_ns() override;

  struct Stats {
    uint64_t sent = 0, received = 0;      // requests
    uint64_t consumer_reads = 0;          // room checks that read a peer's consumer counter
    uint64_t slot_waits = 0;              // requests that waited for a free reply slot
    uint64_t wakeups = 0, productive_wakeups = 0;  // of the progress thread
    uint64_t arrivals = 0;                // writes with immediate read
  };
  Stats stats();
  const Options &options() const { return options_; }

 private:
  struct Slot {
    bool busy = false;
    int pe = -1;           // the request's target
    uint64_t sent_ns = 0;  // when it was sent (a target silent past the give-up time is dead)
    void *reply = nullptr;
    size_t capacity = 0;
    size_t *len_out = nullptr;  // call(): where the length goes
    std::atomic<bool> *done = nullptr;  // call(): set when the reply is in
  };
  struct RequestHeader {
    uint32_t slot;      // the requester's reply slot
    uint32_t capacity;  // the reply it takes, bytes (0: none, only that it was executed)
  };

  // RemoteRing, over the link
  uint64_t fetch_add_producer(int pe, uint64_t bytes) override;
  uint64_t read_consumer(int pe) override;
  void write(int pe, uint64_t offset, const void *data, size_t len) override;
  void write_header(int pe, uint64_t offset, uint64_t header) override;
  bool wait_for_room(int pe, uint64_t waited_ns) override;

  void send(int pe, const void *msg, size_t len, void *reply, size_t capacity,
            size_t *len_out, std::atomic<bool> *done);
  bool serve_locked();
  bool collect_locked();  // replies that arrived in this PE's slots
  void check_stalled_locked();
  void check_overdue_locked(uint64_t now);
  std::atomic<uint64_t> *slot_word(unsigned slot) const {
    return reinterpret_cast<std::atomic<uint64_t> *>(area_ + kReplySlotsOffset +
                                                     size_t{slot} * kReplySlotBytes);
  }

  int me_, npes_;
  uint8_t *area_;
  Link *link_;
  net::RequestHandler *handler_;
  net::ErrorHandler on_error_;
  Options options_;
  Sender sender_;
  Receiver receiver_;
  SpinLock lock_;
  Slot slots_[kReplySlots];
  std::vector<unsigned> free_slots_;
  std::atomic<uint64_t> outstanding_{0};
  std::vector<uint8_t> reply_scratch_;
  uint64_t stalled_since_ns_ = 0, stalled_at_ = ~uint64_t{0};
  int stop_fd_ = -1;
  std::atomic<uint64_t> sent_{0};
  uint64_t received_ = 0, slot_waits_ = 0, arrivals_ = 0, idle_passes_ = 0;
  progress::Thread thread_;
};

}  // namespace hoshmem::ring
