// Two processes with an RC transport each over the software HCA (test/ib): a registered buffer per
// side, and the address of the peer's buffer exchanged over a pipe as one text line.
#pragma once

#include <fcntl.h>
#include <infiniband/verbs.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

extern char **environ;

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
  fprintf(to, " %u %" PRIu64 " %u\n", s.mr->rkey, reinterpret_cast<uint64_t>(s.buf),
          unsigned{a.mtu});
  fflush(to);
}

// `mtu`: the port MTU to record for the peer instead of the one it published (0: as published).
inline bool read_address(FILE *from, Side &s, int peer, ibv_mtu mtu = ibv_mtu{}) {
  unsigned lid, qpn, rkey, peer_mtu;
  char gid[33];
  uint64_t addr;
  if (fscanf(from, "%u %u %32s %u %" SCNu64 " %u", &lid, &qpn, gid, &rkey, &addr, &peer_mtu) !=
      6)
    return false;
  PeerAddress a{};
  a.lid = static_cast<uint16_t>(lid);
  a.cm_qpn = qpn;
  a.mtu = static_cast<uint8_t>(mtu ? mtu : peer_mtu);
  for (int i = 0; i < 16; ++i) sscanf(gid + 2 * i, "%2hhx", &a.gid.raw[i]);
  s.rc.set_peer(peer, a);
  s.peer_rkey = rkey;
  s.peer_addr = addr;
  return true;
}

// PE 1: this test binary run again as `SELF --peer [mode]`, its stdin and stdout piped to us.
struct PeerProcess {
  pid_t pid = -1;
  FILE *in = nullptr, *out = nullptr;
  explicit PeerProcess(const char *mode = nullptr) {
    int to[2], from[2];
    // close-on-exec: the peer keeps only its dup2'ed ends, so closing ours gives it EOF (a test
    // that fails part way then ends instead of waiting for its timeout)
    if (pipe2(to, O_CLOEXEC) || pipe2(from, O_CLOEXEC)) return;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, to[0], 0);
    posix_spawn_file_actions_adddup2(&fa, from[1], 1);
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    const char *argv[] = {self, "--peer", mode, nullptr};
    posix_spawn(&pid, self, &fa, nullptr, const_cast<char **>(argv), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(to[0]);
    close(from[1]);
    in = fdopen(to[1], "w");
    out = fdopen(from[0], "r");
  }
  PeerProcess(const PeerProcess &) = delete;
  PeerProcess &operator=(const PeerProcess &) = delete;
  // Sends `last` (if any) as a final line, closes the peer's stdin and returns its exit status.
  int wait(const char *last = nullptr) {
    if (in) {
      if (last) fprintf(in, "%s\n", last);
      fclose(in);
      in = nullptr;
    }
    int st = 0;
    if (pid > 0) waitpid(pid, &st, 0);
    pid = -1;
    if (out) fclose(out), out = nullptr;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  }
  ~PeerProcess() {
    if (pid > 0) wait();
  }
};

}  // namespace hoshmem::rc
