// lib/transport/net: what the library's active messages (lib/core/messages.h) need from a
// transport that reaches the CPUs of other nodes' PEs: requests executed by the target's CPU,
// once each and in the order each sender sent them, with an optional reply. Two transports have
// it: UD datagrams made reliable (lib/transport/ud) and the shared receive ring over RDMA
// (lib/transport/ring/transport.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "lib/progress/progress_thread.h"

namespace hoshmem::net {

// Where a request's handler writes its reply: at most `capacity` bytes at `data`, `len` says how
// many. A request that wants none gets capacity 0.
struct Reply {
  uint8_t *data;
  size_t capacity;
  size_t len;
};

// Executes a request from PE `pe` on this PE; it runs under the transport's lock and must not
// call the transport.
class RequestHandler {
 public:
  virtual ~RequestHandler() = default;
  virtual void handle(int pe, const void *msg, size_t len, Reply &reply) = 0;
};

// Called with the peer and a one-line cause when it stops answering; must not return.
using ErrorHandler = void (*)(int pe, const char *cause);

// Served by the PE's progress thread (thread()) and by its waits (progress::Source).
class MessagePort : public progress::Source {
 public:
  // The largest request or reply, in bytes.
  virtual size_t max_message() const = 0;
  // A request that needs no reply: complete (executed by the target) at quiet().
  virtual void post(int pe, const void *msg, size_t len) = 0;
  // A request whose reply (at most `capacity` bytes) is copied to `reply`: call() waits for it
  // and returns its length; call_nbi() returns at once, the reply is there by quiet().
  virtual size_t call(int pe, const void *msg, size_t len, void *reply, size_t capacity) = 0;
  virtual void call_nbi(int pe, const void *msg, size_t len, void *reply, size_t capacity) = 0;
  // Every request sent so far (by any thread) is complete.
  virtual void quiet() = 0;
  // The progress thread, for waits that serve this transport while they poll; nullptr: none.
  virtual progress::Thread *thread() = 0;
  // Finalize, after its quiet and barrier: a peer that stops answering is closing, not dead.
  virtual void closing() = 0;
  // Stops the thread and releases everything.
  virtual void shutdown() = 0;
};

}  // namespace hoshmem::net
