// lib/transport/ud: requests and replies between PEs over one UD queue pair per PE, made reliable
// by the engine of reliable.h, served on the target by its progress thread (lib/progress) or by
// its application thread while that one polls.
//
// What a PE publishes at startup is O(1): its port's LID and GID and its QP number. Address
// handles are created on first use, one per peer. Every datagram starts with the sender's PE
// number (the receiver needs it before anything else, and on RoCE a QP number alone does not
// name a PE) followed by the engine's header and payload; a datagram is at most the port's MTU.
//
// Sends copy into pre-registered slots (one datagram each) and ask for a completion; the
// datagrams one call makes go out in one post at its end (flush_sends); receives
// land in pre-registered slots after the 40 bytes every UD receive keeps for a GRH. Arrivals
// complete on a CQ with a completion channel: the progress thread sleeps on it.
//
// Threads: one lock (a spin lock) around the engine, taken by every call; the request handler
// runs under it and must not call the transport.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lib/base/spin_lock.h"
#include "lib/progress/progress_thread.h"
#include "lib/transport/ib/device.h"
#include "lib/transport/ud/reliable.h"

namespace hoshmem::ud {

struct PeerAddress {
  uint16_t lid;
  ibv_gid gid;
  uint32_t qpn;
  uint8_t mtu;  // its port's active MTU (enum ibv_mtu): the largest datagram it can receive
};

using net::ErrorHandler;
using net::RequestHandler;

class Transport final : public net::MessagePort, private Callbacks {
 public:
  Transport() = default;
  Transport(const Transport &) = delete;
  Transport &operator=(const Transport &) = delete;
  ~Transport() override;

  struct Options {
    uint32_t window = 32;                    // datagrams in flight per peer
    uint64_t rto_ns = 1'000'000;             // first retransmission timeout
    uint64_t give_up_ns = 30'000'000'000;    // a silent peer is dead after this
    // A standalone ack goes out this long after a request when nothing carried it. 0: at the end
    // of the pass that received the request (one cumulative ack for everything that pass read),
    // so a quiet waits a round trip, not a round trip plus a delay and a timer's wake-up.
    uint64_t ack_delay_ns = 0;
    bool progress_thread = true;             // else served only inside the library's calls
    unsigned receive_slots = 256;            // receives posted (datagrams that can wait unread)
  };
  // Creates the QP, its CQs and buffers. `device` and `handler` outlive this.
  bool init(ib::Device *device, int me, int npes, const Options &options,
            RequestHandler *handler, ErrorHandler on_error, std::string *why);
  PeerAddress address() const;
  void set_peer(int pe, const PeerAddress &address);
  // Starts the progress thread, if the options ask for one (after every set_peer).
  void start();
  // The thread, for waits that serve this transport while they poll (lib/progress/wait.h);
  // nullptr when there is none.
  progress::Thread *thread() override { return thread_.running() ? &thread_ : nullptr; }
  const Options &options() const { return options_; }
  // Every PE's requests are complete (finalize's quiet and barrier): peers may now close their
  // queue pairs at any time, so one that stops answering is no longer an error (a reply still
  // cached for it would otherwise be resent until the give-up time and stop the job).
  void closing() override { closing_.store(true, std::memory_order_release); }
  // Stops the thread and releases everything; outstanding requests are dropped.
  void shutdown() override;

  // The largest request or reply, in bytes.
  size_t max_message() const override { return max_message_; }

  // A request that needs only acknowledging: complete at quiet().
  void post(int pe, const void *msg, size_t len) override;
  // A request whose reply (at most `capacity` bytes) is copied to `reply`: call() waits for it
  // and returns its length; call_nbi() returns at once, the reply is there by quiet().
  size_t call(int pe, const void *msg, size_t len, void *reply, size_t capacity) override;
  void call_nbi(int pe, const void *msg, size_t len, void *reply, size_t capacity) override;
  // Every request sent so far (by any thread) is complete.
  void quiet() override;

  // progress::Source
  bool serve() override;
  bool serve_if_free(bool &busy) override;
  void arm() override;
  void sleep(long timeout_ns) override;
  void interrupt() override;
  long next_deadline_ns() override;

  struct Stats {
    Stats() {}
    ud::Stats engine;
    uint64_t wakeups = 0, productive_wakeups = 0;  // of the progress thread
    uint64_t received = 0;              // datagrams taken from the receive queue
    uint64_t received_by_thread = 0;    // of those, by the progress thread
    uint64_t full_polls = 0;            // receive polls that found a whole batch (a backlog)
    uint64_t busy = 0;                  // sends that found the peer's window full and waited
    uint64_t posts = 0;                 // ibv_post_send calls (each of one or more datagrams)
    size_t memory_bytes = 0;            // the engine's buffers now
    size_t registered_bytes = 0;        // the send and receive slots (fixed at init)
  };
  Stats stats();

 private:
  struct Pending;

  // Callbacks of the engine (the lock held)
  uint64_t now_ns() override;
  void send_datagram(int peer, const iovec *iov, int iovcnt) override;
  void handle(int peer, const void *msg, size_t len, Reply &reply) override;
  void on_acked(uint64_t token) override;
  void on_reply(uint64_t token, const void *reply, size_t len) override;
  void on_peer_failed(int peer) override;
  void on_failed(uint64_t token) override;

  void send(int pe, const void *msg, size_t len, Kind kind, Pending *pending);
  // Serves until done(), in one Polling scope.
  template <class Done>
  void wait_for(const Done &done);
  bool serve_locked();
  void dump(const char *why);
  void flush_sends();
  void reap_sends();
  void post_receive(unsigned slot);
  ibv_ah *ah_for(int pe);

  ib::Device *dev_ = nullptr;
  int me_ = -1, npes_ = 0;
  RequestHandler *handler_ = nullptr;
  ErrorHandler on_error_ = nullptr;
  size_t datagram_bytes_ = 0;  // the port's MTU
  size_t max_message_ = 0;
  Options options_;

  ibv_comp_channel *channel_ = nullptr;
  ibv_cq *send_cq_ = nullptr, *recv_cq_ = nullptr;
  ibv_qp *qp_ = nullptr;
  uint8_t *buffers_ = nullptr;  // send slots, then receive slots
  ibv_mr *mr_ = nullptr;
  std::vector<unsigned> free_sends_;
  // Datagrams made during one call into the engine (a burst of replies, a request and its acks),
  // posted together at its end: one ibv_post_send, one doorbell (on soft-RoCE, one system call).
  std::vector<ibv_send_wr> batch_wrs_;
  std::vector<ibv_sge> batch_sges_;
  size_t batched_ = 0;
  int stop_fd_ = -1;  // eventfd: interrupt()

  std::vector<PeerAddress> peers_;
  ib::AddressHandles ahs_;

  SpinLock lock_;
  std::unique_ptr<Endpoint> engine_;
  long deadline_ns_ = -1;                // from the engine's last poll
  std::atomic<uint64_t> outstanding_{0};  // requests sent and not complete
  std::atomic<uint32_t> completions_{0};  // requests completed so far (a full window waits)
  std::atomic<bool> closing_{false};
  uint64_t received_ = 0, received_by_thread_ = 0, full_polls_ = 0, busy_ = 0,
           posts_ = 0, idle_passes_ = 0;  // under lock_
  std::vector<Pending *> pool_;          // free call_nbi records
  uint64_t debug_ns_ = 0;                // HOSHMEM_UD_DEBUG_MS: dump a wait this long
  progress::Thread thread_;
};

}  // namespace hoshmem::ud
