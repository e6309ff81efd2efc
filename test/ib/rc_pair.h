// Two processes with an RC transport each over the software HCA (test/ib): a registered buffer per
// side, and the address of the peer's buffer exchanged over a pipe as one text line.
#pragma once

#include <infiniband/verbs.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "lib/transport/ib/device.h"
#include "lib/transport/rc/rc_transport.h"

namespace hoshmem::rc {

[[noreturn]] inline void report_and_exit(int pe, const char *cause) {
  fprintf(stderr, "rc error with PE %d: %s\n", pe, cause);
  fflush(stderr);
  _exit(42);
}

struct Side {
  ib::Device dev;
  Transport rc;
  uint8_t *buf = nullptr;
  size_t bytes = 0;
  ibv_mr *mr = nullptr;
  uint64_t peer_addr = 0;
  uint32_t peer_rkey = 0;

  ib::RemoteAddr remote(size_t off) const { return {peer_addr + off, peer_rkey}; }
  ib::LocalBuf local(size_t off) const {
    return {reinterpret_cast<uint64_t>(buf + off), mr->lkey};
  }
};

// Opens the device, registers `bytes` of zeroed memory and starts the transport as PE `me` of 2.
inline bool setup(Side &s, int me, size_t bytes) {
  std::string why;
  if (!s.dev.open({}, &why)) {
    fprintf(stderr, "device: %s\n", why.c_str());
    return false;
  }
  s.bytes = bytes;
  s.buf = static_cast<uint8_t *>(aligned_alloc(4096, bytes));
  memset(s.buf, 0, bytes);
  s.mr = ibv_reg_mr(s.dev.pd(), s.buf, bytes,
                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                        IBV_ACCESS_REMOTE_ATOMIC);
  if (!s.mr) return false;
  if (!s.rc.init(&s.dev, me, 2, report_and_exit, &why)) {
    fprintf(stderr, "rc: %s\n", why.c_str());
    return false;
  }
  return true;
}

// "lid cm_qpn gid(32 hex) rkey addr"
inline void write_address(FILE *to, const Side &s) {
  const PeerAddress a = s.rc.address();
  fprintf(to, "%u %u ", a.lid, a.cm_qpn);
  for (uint8_t b : a.gid.raw) fprintf(to, "%02x", b);
  fprintf(to, " %u %" PRIu64 "\n", s.mr->rkey, reinterpret_cast<uint64_t>(s.buf));
  fflush(to);
}

inline bool read_address(FILE *from, Side &s, int peer) {
  unsigned lid, qpn, rkey;
  char gid[33];
  uint64_t addr;
  if (fscanf(from, "%u %u %32s %u %" SCNu64, &lid, &qpn, gid, &rkey, &addr) != 5) return false;
  PeerAddress a{};
  a.lid = static_cast<uint16_t>(lid);
  a.cm_qpn = qpn;
  for (int i = 0; i < 16; ++i) sscanf(gid + 2 * i, "%2hhx", &a.gid.raw[i]);
  s.rc.set_peer(peer, a);
  s.peer_rkey = rkey;
  s.peer_addr = addr;
  return true;
}

}  // namespace hoshmem::rc
