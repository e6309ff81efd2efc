// softhca memory keys as a responder resolves them: an MR's key, or an indirect mkey created with
// DevX CREATE_MKEY in KSM mode (registration.cc). A KSM mkey maps [start, start + len): the
// address's offset from start, divided by the entity size (1 << log_entity_size), picks entry i,
// and the access goes to entry i's address plus the remainder through entry i's memory key, an
// MR of this process, whose own range and access flags apply as well.
#pragma once
#include <infiniband/verbs.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace softhca {

class Hca;

struct IndirectMkey {
  uint32_t key = 0;
  ibv_pd* pd = nullptr;
  int access = 0;  // IBV_ACCESS_* from the mkc's lr/lw/rr/rw/a bits
  uint64_t start = 0, len = 0;
  uint32_t log_entity_size = 0;
  std::vector<std::pair<uint32_t, uint64_t>> entries;  // (memory key, address)
};

// The table of indirect mkeys, guarded by Hca::tables (unique lock to change it).
void add_indirect_mkey(const IndirectMkey& m);
bool remove_indirect_mkey(uint32_t key);
bool indirect_mkey_exists(uint32_t key);

// Where a remote access lands in this process's memory.
struct MemSpan {
  uint8_t* p;
  uint32_t n;
};

// Resolves a remote access of `len` (> 0) bytes at `addr` through `key` for a responder QP of
// protection domain `pd` needing `need` (IBV_ACCESS_REMOTE_*): true with the pieces of memory it
// covers, in order, when the key exists in that PD, the range lies within it (and, for an
// indirect mkey, every piece within its entry's MR) and every key involved grants `need`; false
// is a remote access error. Hca::tables held (shared).
bool resolve_remote(Hca& h, uint32_t key, const ibv_pd* pd, uint64_t addr, uint32_t len, int need,
                    std::vector<MemSpan>* out);

}  // namespace softhca
