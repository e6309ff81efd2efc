// lib/transport/net: how library code (collectives, team setup, the world barrier, locks) reaches
// another PE's memory, whatever node that PE is on.
//
// A place in a peer's memory is named by the address of the same place in *this* PE's memory: a
// symmetric object of the heap or the globals, or a byte of this PE's own control area (team
// scratch slots, control block). On this node the peer's copy is mapped here and the access is a
// load or store; on another node it goes through the network (RDMA), set up by lib/core at init.
//
// The rule that makes both work the same way: write remote, poll local. A word another PE writes
// has exactly one writer (no CPU atomic ever races an HCA write or atomic on it), and a PE waits
// only for words in its own memory. Writes from one PE to one peer become visible in the order
// they were issued (store() after write() publishes the data: RC keeps RDMA writes in order). A
// remote write does not wake a sleeping PE: waiters on a job that spans nodes poll with backoff.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "lib/transport/shm/control_block.h"

namespace hoshmem::peer {

// One of several writes to a peer (write_all).
struct Write {
  void *mine;
  const void *src;
  size_t len;
};

// The inter-node half, implemented by lib/core over the job's transport.
class Network {
 public:
  virtual ~Network() = default;
  // `len` bytes from local `src` (any memory; reusable on return) to PE `pe`'s copy of `mine`.
  virtual void write(int pe, void *mine, const void *src, size_t len) = 0;
  // write() of each, in order; a transport that can hands the small ones to the device at once.
  virtual void write_all(int pe, const Write *writes, size_t n) {
    for (size_t i = 0; i < n; ++i) write(pe, writes[i].mine, writes[i].src, writes[i].len);
  }
  // PE `pe`'s copy of `mine` into local `dst` (any memory); complete on return.
  virtual void read(int pe, void *dst, const void *mine, size_t len) = 0;
  // Every write issued so far is visible at its target.
  virtual void flush() = 0;
};

struct Routes {
  shm::ControlBlock *const *control = nullptr;  // per PE, as mapped here (null: another node)
  char *own_control = nullptr;                  // this PE's control area
  size_t control_bytes = 0;                     // its size (control block + team slots)
  uintptr_t heap_base = 0, data_base = 0;       // this PE's segments
  size_t heap_size = 0, data_size = 0;
  char **heap_mapped = nullptr, **data_mapped = nullptr;  // per PE, as mapped here
  Network *network = nullptr;                   // null while every PE is on this node
};
extern Routes routes;  // set by lib/core at init

// Where PE `pe`'s copy of `mine` is mapped here; nullptr when `pe` is on another node.
inline char *mapped(int pe, const void *mine) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(mine);
  if (!routes.control[pe]) return nullptr;
  if (uintptr_t off = a - reinterpret_cast<uintptr_t>(routes.own_control);
      off < routes.control_bytes)
    return reinterpret_cast<char *>(routes.control[pe]) + off;
  if (uintptr_t off = a - routes.heap_base; off < routes.heap_size)
    return routes.heap_mapped[pe] + off;
  return routes.data_mapped[pe] + (a - routes.data_base);
}

inline bool on_node(int pe) { return routes.control[pe] != nullptr; }

// Copies `len` bytes to PE `pe`'s copy of `mine`.
inline void write(int pe, void *mine, const void *src, size_t len) {
  if (char *there = mapped(pe, mine)) {
    memcpy(there, src, len);
    return;
  }
  routes.network->write(pe, mine, src, len);
}

// Stores `value` into PE `pe`'s copy of the word `mine` (this PE is its only writer), after
// everything written to `pe` before: a peer that sees the value also sees those writes.
inline void store(int pe, std::atomic<uint64_t> *mine, uint64_t value) {
  if (char *there = mapped(pe, mine)) {
    reinterpret_cast<std::atomic<uint64_t> *>(there)->store(value, std::memory_order_seq_cst);
    return;
  }
  routes.network->write(pe, mine, &value, sizeof value);
}

// write() of each to PE `pe` of another node, in order: a payload and the word that publishes it
// (store's rule) for one doorbell.
inline void write_all(int pe, const Write *writes, size_t n) {
  routes.network->write_all(pe, writes, n);
}

// Reads PE `pe`'s copy of `mine` into `dst`.
inline void read(int pe, void *dst, const void *mine, size_t len) {
  if (const char *there = mapped(pe, mine)) {
    memcpy(dst, there, len);
    return;
  }
  routes.network->read(pe, dst, mine, len);
}

// Wakes PE `pe` if it sleeps (this node only; a PE of another node polls).
inline void ring(int pe) {
  if (shm::ControlBlock *cb = routes.control[pe]) shm::ring_doorbell(cb);
}

}  // namespace hoshmem::peer
