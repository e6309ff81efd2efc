#include "tools/oshrun/peer_check.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace oshrun {
namespace {

// An endpoint as /proc/net/tcp6 writes it: IPv4 addresses as IPv4-mapped IPv6 ones.
struct Endpoint {
  std::array<uint8_t, 16> address{};
  unsigned port = 0;
  bool operator==(const Endpoint&) const = default;
};

bool endpoint_of(const sockaddr_storage& ss, Endpoint& ep) {
  if (ss.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(ss);
    ep.address = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    std::memcpy(&ep.address[12], &in.sin_addr, 4);
    ep.port = ntohs(in.sin_port);
    return true;
  }
  if (ss.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(ss);
    std::memcpy(ep.address.data(), &in6.sin6_addr, 16);
    ep.port = ntohs(in6.sin6_port);
    return true;
  }
  return false;
}

// "0100007F:9D0F": the kernel prints each 32-bit word of the address as a number in host byte
// order, so parsing a word and storing it in host order gives back the address's bytes.
bool parse_endpoint(const char* text, Endpoint& ep) {
  const char* colon = std::strchr(text, ':');
  if (!colon) return false;
  const size_t hex = static_cast<size_t>(colon - text);
  if (hex != 8 && hex != 32) return false;
  std::array<uint8_t, 16> bytes{};
  for (size_t word = 0; word < hex / 8; ++word) {
    char digits[9] = {};
    std::memcpy(digits, text + 8 * word, 8);
    char* end;
    uint32_t value = static_cast<uint32_t>(std::strtoul(digits, &end, 16));
    if (*end) return false;
    std::memcpy(&bytes[4 * word], &value, 4);
  }
  if (hex == 8) {
    ep.address = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    std::memcpy(&ep.address[12], bytes.data(), 4);
  } else {
    ep.address = bytes;
  }
  char* end;
  ep.port = static_cast<unsigned>(std::strtoul(colon + 1, &end, 16));
  return *end == '\0';
}

constexpr unsigned kEstablished = 1;  // TCP_ESTABLISHED in /proc/net/tcp's "st" column

// Looks for the socket whose local end is `local` and remote end `remote`.
bool find_owner(const char* table, const Endpoint& local, const Endpoint& remote, uid_t& uid) {
  FILE* f = std::fopen(table, "re");
  if (!f) return false;
  char line[512];
  bool found = false;
  if (!std::fgets(line, sizeof line, f)) line[0] = '\0';  // the header
  while (!found && std::fgets(line, sizeof line, f)) {
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid ...
    char local_text[64], remote_text[64];
    unsigned state, owner;
    if (std::sscanf(line, " %*s %63s %63s %x %*s %*s %*s %u", local_text, remote_text, &state, &owner) != 4)
      continue;
    Endpoint l, r;
    if (state == kEstablished && parse_endpoint(local_text, l) && parse_endpoint(remote_text, r) && l == local &&
        r == remote) {
      uid = owner;
      found = true;
    }
  }
  std::fclose(f);
  return found;
}

bool is_inet_stream(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  int type = 0;
  socklen_t type_len = sizeof type;
  return getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0 &&
         (ss.ss_family == AF_INET || ss.ss_family == AF_INET6) &&
         getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_len) == 0 && type == SOCK_STREAM;
}

// One line per refused uid: an intruder must not be able to flood the job's stderr.
void report_refusal(bool known, uid_t uid) {
  static std::mutex mutex;
  static std::vector<long> reported;
  const long key = known ? static_cast<long>(uid) : -1;
  std::lock_guard lock(mutex);
  if (std::find(reported.begin(), reported.end(), key) != reported.end()) return;
  reported.push_back(key);
  if (known)
    std::fprintf(stderr, "oshrun: refused a PMIx connection from uid %ld (not the job's owner)\n", key);
  else
    std::fprintf(stderr, "oshrun: refused a PMIx connection whose owner the kernel does not show\n");
  std::fflush(stderr);
}

}  // namespace

bool peer_socket_uid(int fd, uid_t& uid) {
  sockaddr_storage ours{}, theirs{};
  socklen_t len = sizeof ours;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ours), &len) != 0) return false;
  len = sizeof theirs;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&theirs), &len) != 0) return false;
  Endpoint local, remote;
  if (!endpoint_of(ours, local) || !endpoint_of(theirs, remote)) return false;
  // The client's socket: its local end is our peer, its remote end us.
  return find_owner("/proc/net/tcp", remote, local, uid) || find_owner("/proc/net/tcp6", remote, local, uid);
}

}  // namespace oshrun

// libpmix's listener thread accepts every client through this (the executable's definition
// comes first in symbol lookup). A refused connection is closed and reported to libpmix as
// ECONNABORTED, on which its listener simply waits for the next one.
extern "C" int accept(int fd, struct sockaddr* __restrict addr, socklen_t* __restrict addr_len) {
  const int conn = accept4(fd, addr, addr_len, 0);
  if (conn < 0 || !oshrun::is_inet_stream(conn)) return conn;
  uid_t uid = 0;
  const bool known = oshrun::peer_socket_uid(conn, uid);
  if (known && uid == geteuid()) return conn;
  oshrun::report_refusal(known, uid);
  close(conn);
  errno = ECONNABORTED;
  return -1;
}
