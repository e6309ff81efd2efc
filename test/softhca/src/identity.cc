// softhca identity: what tells one emulated machine, and one process, from another. Real HCAs in
// different machines have different GUIDs, GIDs and LIDs, and the kernel hands out memory keys
// that differ between processes; programs that use their own value where the peer's belongs must
// fail here as they would there.
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "hca.h"

namespace softhca {

namespace {

uint64_t random64() {
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, 0) != ssize_t(sizeof v))
    v = uint64_t(time(nullptr)) * 0x9e3779b97f4a7c15ull ^ uint64_t(getpid()) << 32;
  return v;
}

// 32 bits of the GUID: from SOFTHCA_NODE's name (processes naming the same node share it), else
// random per process.
uint32_t host_bits() {
  static const uint32_t bits = [] {
    const char* name = getenv("SOFTHCA_NODE");
    if (!name || !*name) return uint32_t(random64());
    uint32_t h = 2166136261u;  // FNV-1a
    for (const char* p = name; *p; ++p) h = (h ^ uint8_t(*p)) * 16777619u;
    return h;
  }();
  return bits;
}

}  // namespace

// LIDs come from the fabric's host table (Fabric::join_host): one range of kLidsPerHost per host.
uint16_t port_lid(int dev, int port) {
  return uint16_t(Hca::get().fab().lid_base() + uint32_t(dev) * 2 + uint32_t(port - 1));
}

// Mellanox OUI, the host's 32 bits, the device in the low byte's upper nibble.
uint64_t node_guid(int dev) {
  return 0x98039b0000000000ull | uint64_t(host_bits()) << 8 | uint64_t(dev & 0xf) << 4;
}

void port_gid(int dev, int port, uint8_t out[16]) {
  memset(out, 0, 16);
  out[0] = 0xfe;
  out[1] = 0x80;
  uint64_t g = be64(node_guid(dev) + uint64_t(port - 1));
  memcpy(out + 8, &g, 8);
}

// mlx5 keys are {24-bit mkey index, 8-bit variant}. Each process starts at a random index with a
// random variant, so keys of different processes differ; within a process they never repeat
// until 2^24 registrations.
uint32_t next_mr_key() {
  static const uint64_t seed = random64();
  static std::atomic<uint32_t> next{uint32_t(seed) & 0xffffff};
  const uint32_t variant = uint32_t(seed >> 32) & 0xff;
  for (;;) {
    uint32_t index = next.fetch_add(1) & 0xffffff;
    uint32_t key = index << 8 | variant;
    if (index > 1) return key;  // index 0 and the invalid lkey (0x100) are never handed out
  }
}

}  // namespace softhca
