// softhca link personalities (SOFTHCA_LINK, hca.h): the addresses a port presents and what a
// requester puts on the wire for an address vector.
//
// The model routes every packet by the destination port's LID, its key in the fabric's QPN
// directory. On InfiniBand that is the address itself. RoCE has no LIDs (the port reports 0):
// its addresses are GIDs and MACs, so both are derived from the model LID, and a GID or MAC
// names exactly one port of the fabric. A vector that names no port goes nowhere, as a frame to
// an unknown MAC does: connected requesters run into their retry limit, datagrams are lost.
#include <infiniband/mlx5dv.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>

#include "hca.h"

namespace softhca {
namespace {

// RoCE addresses of the port with model LID `lid`: MAC 02:5e:48:43:<lid>, IPv4 10.77.<lid>.
constexpr uint8_t kMacPrefix[4] = {0x02, 0x5e, 0x48, 0x43};  // locally administered

void ipv4_mapped(uint16_t lid, uint8_t out[16]) {
  memset(out, 0, 16);
  out[10] = out[11] = 0xff;
  out[12] = 10;
  out[13] = 77;
  out[14] = uint8_t(lid >> 8);
  out[15] = uint8_t(lid);
}

// fe80::/64 with the modified EUI-64 of the MAC (universal/local bit flipped, ff:fe inserted),
// as the kernel makes a netdev's link-local address.
void link_local(uint16_t lid, uint8_t out[16]) {
  uint8_t mac[6];
  port_mac(lid, mac);
  memset(out, 0, 16);
  out[0] = 0xfe;
  out[1] = 0x80;
  out[8] = mac[0] ^ 0x02;
  out[9] = mac[1];
  out[10] = mac[2];
  out[11] = 0xff;
  out[12] = 0xfe;
  out[13] = mac[3];
  out[14] = mac[4];
  out[15] = mac[5];
}

// Traffic class and service level counts of the packets this process sent.
std::array<std::atomic<uint64_t>, 256 * 16> g_wire{};

}  // namespace

int gid_table_len() { return roce() ? kRoceGids : 1; }

void port_mac(uint16_t lid, uint8_t mac[6]) {
  memcpy(mac, kMacPrefix, 4);
  mac[4] = uint8_t(lid >> 8);
  mac[5] = uint8_t(lid);
}

// The kernel lists each IP address of the netdev twice, RoCE v1 then v2: the link-local one
// first, then the IPv4 one (as an IPv4-mapped GID). With `out` null only the type is given:
// that needs no LID (nor the fabric joined).
bool port_gid_at(int dev, int port, int index, uint8_t out[16], int* type) {
  if (index < 0 || index >= gid_table_len()) return false;
  if (type) *type = !roce() ? IBV_GID_TYPE_IB : index % 2 ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_ROCE_V1;
  if (!out) return true;
  if (!roce()) {
    port_gid(dev, port, out);
    return true;
  }
  const uint16_t lid = port_lid(dev, port);
  if (index < 2) link_local(lid, out);
  else ipv4_mapped(lid, out);
  return true;
}

uint16_t lid_of_gid(const uint8_t gid[16]) {
  const uint16_t lid = uint16_t(gid[14] << 8 | gid[15]);
  return lid && port_owns_gid(lid, gid) ? lid : 0;
}

bool port_owns_gid(uint16_t lid, const uint8_t gid[16]) {
  uint8_t mine[16];
  ipv4_mapped(lid, mine);
  if (memcmp(mine, gid, 16) == 0) return true;
  link_local(lid, mine);
  return memcmp(mine, gid, 16) == 0;
}

bool port_owns_gid(int dev, int port, const uint8_t gid[16]) {
  if (roce()) return port_owns_gid(port_lid(dev, port), gid);
  uint8_t mine[16];
  port_gid(dev, port, mine);
  return memcmp(mine, gid, 16) == 0;
}

WireAddress wire_address(const mlx5_wqe_av& av, bool extended) {
  WireAddress w;
  const uint32_t grh_gid_fl = be32(av.grh_gid_fl);
  if (!extended) {  // the compact vector: a LID, nothing else
    if (grh_required()) w.syndrome = MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
    w.lid = be16(av.rlid);
    w.sl = av.stat_rate_sl & 0xf;
    return w;
  }
  if (roce()) {
    // rdma-core's RoCE vector: GRH implied (bit 30 is reserved), rlid the UDP source port, the
    // priority in bits 1-3 of stat_rate_sl, the destination known by its GID and MAC.
    w.grh = true;
    w.tclass = av.tclass;
    w.sl = (av.stat_rate_sl >> 1) & 7;
    const uint16_t lid = lid_of_gid(av.rgid);
    uint8_t mac[6];
    port_mac(lid, mac);
    w.lid = lid && memcmp(mac, av.rmac, 6) == 0 ? lid : 0;
    memcpy(w.dgid, av.rgid, 16);
    return w;
  }
  w.grh = (grh_gid_fl >> 30) & 1;
  w.lid = be16(av.rlid);
  w.sl = av.stat_rate_sl & 0xf;
  if (w.grh) w.tclass = av.tclass;
  else if (grh_required()) w.syndrome = MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
  if (w.grh) memcpy(w.dgid, av.rgid, 16);
  return w;
}

WireAddress wire_address(const ibv_ah_attr& ah) {
  WireAddress w;
  w.grh = ah.is_global || roce();
  w.tclass = w.grh ? ah.grh.traffic_class : 0;
  w.sl = roce() ? ah.sl & 7 : ah.sl & 0xf;
  w.lid = roce() ? lid_of_gid(ah.grh.dgid.raw) : ah.dlid;
  if (w.grh) memcpy(w.dgid, ah.grh.dgid.raw, 16);
  return w;
}

bool reaches(const WireAddress& w, const QpnEntry& e) {
  if (!w.lid || e.lid != w.lid) return false;
  if (!w.grh) return true;
  return roce() ? port_owns_gid(w.lid, w.dgid) : memcmp(e.gid, w.dgid, 16) == 0;
}

void count_wire(const WireAddress& w, uint32_t packets) {
  g_wire[size_t(w.tclass) * 16 + w.sl].fetch_add(packets, std::memory_order_relaxed);
}

std::string wire_stats() {
  std::string s;
  for (size_t i = 0; i < g_wire.size(); ++i)
    if (uint64_t n = g_wire[i].load(std::memory_order_relaxed)) {
      char one[48];
      snprintf(one, sizeof one, " tc %zu sl %zu: %lu;", i / 16, i % 16, (unsigned long)n);
      s += one;
    }
  return s.empty() ? " none" : s;
}

}  // namespace softhca
