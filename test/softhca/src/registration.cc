// softhca memory registration checks, as the kernel's ib_umem_get makes them when it pins pages:
// every page of the range must be mapped and readable, and writable when the access asks for
// any write (local write, remote write, remote atomic), else EFAULT; the pinned pages count
// against RLIMIT_MEMLOCK unless the process has CAP_IPC_LOCK, else ENOMEM.
// Also how a responder resolves a remote key: an MR, or an indirect (KSM) mkey made with DevX
// CREATE_MKEY whose entries lead to MRs (mkey.h).
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "hca.h"
#include "mkey.h"

namespace softhca {

namespace {

std::atomic<uint64_t> g_pinned_pages{0};

uint64_t page_size() {
  static const uint64_t p = uint64_t(sysconf(_SC_PAGESIZE));
  return p;
}

uint64_t pages_of(uint64_t addr, uint64_t len) {
  uint64_t p = page_size();
  return ((addr + len + p - 1) / p) - addr / p;
}

// True when [lo, hi) is covered by mappings with read (and write, if asked) permission.
bool mapped(uint64_t lo, uint64_t hi, bool write) {
  FILE* f = fopen("/proc/self/maps", "re");
  if (!f) return true;  // cannot tell: do not refuse
  char line[512];
  uint64_t covered = lo;
  while (covered < hi && fgets(line, sizeof line, f)) {
    unsigned long a, b;
    char perms[8];
    if (sscanf(line, "%lx-%lx %7s", &a, &b, perms) != 3) continue;
    if (b <= covered) continue;
    if (a > covered) break;  // a hole
    if (perms[0] != 'r' || (write && perms[1] != 'w')) break;
    covered = b;
  }
  fclose(f);
  return covered >= hi;
}

bool has_ipc_lock() {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capget, &hdr, data) != 0) return false;
  return data[CAP_IPC_LOCK / 32].effective & (1u << (CAP_IPC_LOCK % 32));
}

}  // namespace

int pin_for_registration(const void* addr, size_t len, unsigned access) {
  uint64_t a = uint64_t(uintptr_t(addr));
  if (len == 0 || a + len < a) return EINVAL;
  bool write = access & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC |
                         IBV_ACCESS_MW_BIND);
  uint64_t p = page_size();
  if (!mapped(a / p * p, (a + len + p - 1) / p * p, write)) return EFAULT;
  uint64_t n = pages_of(a, len);
  uint64_t total = g_pinned_pages.fetch_add(n) + n;
  rlimit rl{};
  if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      total > rl.rlim_cur / p && !has_ipc_lock()) {
    g_pinned_pages.fetch_sub(n);
    return ENOMEM;
  }
  return 0;
}

void unpin_registration(const void* addr, size_t len) {
  g_pinned_pages.fetch_sub(pages_of(uint64_t(uintptr_t(addr)), len));
}

namespace {

std::unordered_map<uint32_t, IndirectMkey>& indirect_mkeys() {
  static auto* m = new std::unordered_map<uint32_t, IndirectMkey>;
  return *m;
}

bool mr_covers(const Mr* mr, const ibv_pd* pd, uint64_t addr, uint64_t len, int need) {
  uint64_t base = uint64_t(uintptr_t(mr->mr.addr));
  return mr->mr.pd == pd && addr >= base && addr + len <= base + mr->mr.length &&
         addr + len > addr && (mr->access & need);
}

}  // namespace

void add_indirect_mkey(const IndirectMkey& m) {
  indirect_mkeys()[m.key] = m;
  // A KSM mkey whose entries map one MR contiguously (UCX's atomic key: the MR at an offset) and
  // whose window holds the whole MR is published for direct execution as an alias: the slot's
  // range is the MR's seen through the mkey, `pad` the MR's key (fabric.h, Hca::try_direct).
  if (m.entries.empty()) return;
  const uint32_t k = m.entries[0].first;
  const uint64_t a0 = m.entries[0].second;
  for (size_t i = 0; i < m.entries.size(); ++i)
    if (m.entries[i].first != k || m.entries[i].second != a0 + (uint64_t(i) << m.log_entity_size))
      return;
  Hca& h = Hca::get();
  Mr* mr = h.find_mr(k);
  if (!mr || mr->mr.pd != m.pd) return;
  const uint64_t base = uint64_t(uintptr_t(mr->mr.addr));
  const uint64_t covered = uint64_t(m.entries.size()) << m.log_entity_size;
  if (base < a0 || base + mr->mr.length > a0 + covered) return;
  const uint64_t va = m.start + (base - a0);  // where the MR starts in the mkey's window
  if (va + mr->mr.length > m.start + m.len || va + mr->mr.length < va) return;
  Fabric& f = h.fab();
  f.lock_direct(f.node());
  MrSlot& s = f.mr_slot(f.node(), m.key);
  if (s.key == 0) {  // a taken slot: this mkey uses messages only
    s.key = m.key;
    s.access = uint32_t(m.access);
    s.pdn = reinterpret_cast<Pd*>(m.pd)->pdn;
    s.pad = k;
    s.addr = va;
    s.len = mr->mr.length;
  }
  f.unlock_direct(f.node());
}

bool remove_indirect_mkey(uint32_t key) {
  Hca& h = Hca::get();
  Fabric& f = h.fab();
  f.lock_direct(f.node());  // waits for direct accesses in progress
  MrSlot& s = f.mr_slot(f.node(), key);
  if (s.key == key) s = MrSlot{};
  f.unlock_direct(f.node());
  return indirect_mkeys().erase(key) != 0;
}
bool indirect_mkey_exists(uint32_t key) { return indirect_mkeys().count(key) != 0; }

bool resolve_remote(Hca& h, uint32_t key, const ibv_pd* pd, uint64_t addr, uint32_t len, int need,
                    std::vector<MemSpan>* out) {
  out->clear();
  if (Mr* mr = h.find_mr(key)) {
    if (!mr_covers(mr, pd, addr, len, need)) return false;
    out->push_back(MemSpan{reinterpret_cast<uint8_t*>(uintptr_t(addr)), len});
    return true;
  }
  auto it = indirect_mkeys().find(key);
  if (it == indirect_mkeys().end()) return false;
  const IndirectMkey& k = it->second;
  if (k.pd != pd || !(k.access & need) || addr < k.start || addr + len > k.start + k.len ||
      addr + len <= addr)
    return false;
  const uint64_t entity = uint64_t(1) << k.log_entity_size;
  uint64_t off = addr - k.start;
  uint64_t left = len;
  while (left) {
    uint64_t i = off >> k.log_entity_size, in = off & (entity - 1);
    if (i >= k.entries.size()) return false;
    uint64_t n = std::min(left, entity - in);
    uint64_t target = k.entries[i].second + in;
    Mr* mr = h.find_mr(k.entries[i].first);  // entries name MRs (max_indirection 1)
    if (!mr || !mr_covers(mr, pd, target, n, need)) return false;
    out->push_back(MemSpan{reinterpret_cast<uint8_t*>(uintptr_t(target)), uint32_t(n)});
    off += n, left -= n;
  }
  return true;
}

}  // namespace softhca

// For libmlx5's DevX umem registration (devx.cc): the same pinning rules.
extern "C" int softhca_pin_umem(const void* addr, size_t len, unsigned access) {
  return softhca::pin_for_registration(addr, len, access);
}
extern "C" void softhca_unpin_umem(const void* addr, size_t len) {
  softhca::unpin_registration(addr, len);
}
