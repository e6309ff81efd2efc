#include "fabric.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace softhca {

namespace {
constexpr uint32_t kMagic = 0x53484341;  // "SHCA"
constexpr uint32_t kVersion = 9;

void init_robust(pthread_mutex_t* m) {
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_init(m, &a);
  pthread_mutexattr_destroy(&a);
}

void lock_robust(pthread_mutex_t* m) {
  if (pthread_mutex_lock(m) == EOWNERDEAD) pthread_mutex_consistent(m);
}

// Proves to a requester that the pid it is about to write to is this process (PID namespaces).
volatile uint64_t g_token;

// Segments are named with this prefix so that a later start can find the ones whose every user
// died (killed processes never run their cleanup) and remove them.
constexpr char kPrefix[] = "softhca.";

std::string fabric_name() {
  const char* e = getenv("SOFTHCA_FABRIC");
  if (e && *e) return std::string("/") + kPrefix + e;
  return std::string("/") + kPrefix + "softhca-" + std::to_string(getuid());
}
}  // namespace

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

void futex_wait(std::atomic<uint32_t>* word, uint32_t val, int timeout_ms) {
  timespec ts{timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, val,
          timeout_ms < 0 ? nullptr : &ts, nullptr, 0);
}

void futex_wait_ns(std::atomic<uint32_t>* word, uint32_t val, uint64_t timeout_ns) {
  timespec ts{time_t(timeout_ns / 1000000000), long(timeout_ns % 1000000000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, val, &ts, nullptr, 0);
}

void futex_wake(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

void Fabric::lock_shared() { lock_robust(&shm_->lock); }
void Fabric::unlock_shared() { pthread_mutex_unlock(&shm_->lock); }

bool Fabric::attach() {
  name_ = fabric_name();
  reap_abandoned_fabrics();
  for (int attempt = 0; attempt < 1000; ++attempt) {
    bool creator = true;
    int fd = shm_open(name_.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 && errno == EEXIST) {
      creator = false;
      fd = shm_open(name_.c_str(), O_RDWR, 0600);
      if (fd < 0) continue;  // unlinked between the two opens
    }
    if (fd < 0) {
      fprintf(stderr, "softhca: shm_open(%s): %s\n", name_.c_str(), strerror(errno));
      return false;
    }
    if (creator && ftruncate(fd, sizeof(Shared)) != 0) {
      fprintf(stderr, "softhca: ftruncate: %s\n", strerror(errno));
      close(fd);
      shm_unlink(name_.c_str());
      return false;
    }
    if (!creator) {  // wait until the creator has sized it
      struct stat st;
      for (int i = 0; i < 2000 && fstat(fd, &st) == 0 && size_t(st.st_size) < sizeof(Shared); ++i)
        usleep(1000);
    }
    void* p = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return false;
    shm_ = static_cast<Shared*>(p);
    auto* magic = reinterpret_cast<std::atomic<uint32_t>*>(&shm_->magic);
    if (creator) {
      init_robust(&shm_->lock);
      shm_->next_qpn = 0x100;
      for (uint32_t i = 0; i < kMaxNodes; ++i) {
        init_robust(&shm_->nodes[i].alive);
        init_robust(&shm_->nodes[i].direct);
        init_robust(&shm_->rings[i].producer_lock);
      }
      shm_->version = kVersion;
      magic->store(kMagic, std::memory_order_release);
    } else {
      for (int i = 0; i < 2000 && magic->load(std::memory_order_acquire) != kMagic; ++i) usleep(1000);
      if (magic->load() != kMagic || shm_->version != kVersion) {
        fprintf(stderr, "softhca: fabric %s is not a compatible softhca segment\n", name_.c_str());
        munmap(shm_, sizeof(Shared));
        shm_ = nullptr;
        return false;
      }
    }
    lock_shared();
    if (shm_->dead) {  // last member left and unlinked it while we opened it
      unlock_shared();
      munmap(shm_, sizeof(Shared));
      shm_ = nullptr;
      continue;
    }
    int slot = -1;
    for (uint32_t i = 0; i < kMaxNodes && slot < 0; ++i) {
      Node& n = shm_->nodes[i];
      if (!n.in_use) {
        slot = int(i);
      } else {
        int r = pthread_mutex_trylock(&n.alive);
        if (r == EOWNERDEAD) pthread_mutex_consistent(&n.alive);
        if (r == 0 || r == EOWNERDEAD) {  // owner died without detaching: reclaim
          pthread_mutex_unlock(&n.alive);
          for (uint32_t q = 0; q < kQpnSlots; ++q)
            if (shm_->qpns[q].used && shm_->qpns[q].node == i) shm_->qpns[q].used = 0;
          slot = int(i);
        }
      }
    }
    if (slot < 0) {
      unlock_shared();
      fprintf(stderr, "softhca: fabric %s is full (%u processes)\n", name_.c_str(), kMaxNodes);
      munmap(shm_, sizeof(Shared));
      shm_ = nullptr;
      return false;
    }
    Node& n = shm_->nodes[slot];
    lock_robust(&n.alive);  // held by this (model) thread for the node's lifetime
    Ring& r = shm_->rings[slot];
    lock_robust(&r.producer_lock);
    r.head.store(0);
    r.tail.store(0);
    r.last_poll_ns.store(0);
    pthread_mutex_unlock(&r.producer_lock);
    if (!g_token) g_token = now_ns() ^ (uint64_t(getpid()) << 40) ^ uint64_t(uintptr_t(&n));
    n.pid = getpid();
    n.token = g_token;
    n.token_addr = uint64_t(uintptr_t(&g_token));
    lock_robust(&n.direct);  // nothing of a previous owner stays published
    memset(shm_->mrs[slot], 0, sizeof shm_->mrs[slot]);
    memset(shm_->cqs[slot], 0, sizeof shm_->cqs[slot]);
    memset(shm_->srqs[slot], 0, sizeof shm_->srqs[slot]);
    n.owner_waiting.store(0);  // a previous owner may have died waiting
    pthread_mutex_unlock(&n.direct);
    join_host(uint32_t(slot));
    n.gen++;
    n.in_use = 1;
    node_ = uint32_t(slot);
    gen_ = n.gen;
    unlock_shared();
    return true;
  }
  return false;
}

// Processes naming the same SOFTHCA_NODE share a host (its LIDs); every other process gets a
// host of its own. LID ranges are handed out round-robin, so a departed host's LIDs are not
// reused at once.
void Fabric::join_host(uint32_t slot) {
  const char* want = getenv("SOFTHCA_NODE");
  if (!want) want = "";
  auto used = [&](uint32_t h) {
    for (uint32_t i = 0; i < kMaxNodes; ++i)
      if (i != slot && shm_->nodes[i].in_use && shm_->nodes[i].host == h) return true;
    return false;
  };
  int host = -1;
  if (*want)
    for (uint32_t h = 0; h < kMaxNodes && host < 0; ++h)
      if (used(h) && strncmp(shm_->hosts[h].name, want, sizeof shm_->hosts[h].name) == 0)
        host = int(h);
  if (host < 0) {
    for (uint32_t h = 0; h < kMaxNodes && host < 0; ++h)
      if (!used(h)) host = int(h);
    Host& x = shm_->hosts[host];
    snprintf(x.name, sizeof x.name, "%s", want);
    constexpr uint32_t kRanges = 0xbfff / kLidsPerHost - 1;  // unicast LIDs end at 0xbfff
    for (uint32_t tries = 0; tries < kRanges; ++tries) {
      uint32_t base = 1 + (shm_->next_lid_base++ % kRanges) * kLidsPerHost;
      bool taken = false;
      for (uint32_t h = 0; h < kMaxNodes; ++h)
        if (int(h) != host && used(h) && shm_->hosts[h].lid_base == base) taken = true;
      if (taken) continue;
      x.lid_base = base;
      break;
    }
  }
  shm_->nodes[slot].host = uint32_t(host);
  lid_base_ = shm_->hosts[host].lid_base;
}

void Fabric::detach(bool unmap) {
  if (!shm_) return;
  lock_shared();
  Node& me = shm_->nodes[node_];
  for (uint32_t q = 0; q < kQpnSlots; ++q)
    if (shm_->qpns[q].used && shm_->qpns[q].node == node_) shm_->qpns[q].used = 0;
  me.in_use = 0;
  me.gen++;
  pthread_mutex_unlock(&me.alive);
  bool others = false;
  for (uint32_t i = 0; i < kMaxNodes; ++i) {
    if (i == node_ || !shm_->nodes[i].in_use) continue;
    int r = pthread_mutex_trylock(&shm_->nodes[i].alive);
    if (r == EBUSY) {
      others = true;
      continue;
    }
    if (r == EOWNERDEAD) pthread_mutex_consistent(&shm_->nodes[i].alive);
    pthread_mutex_unlock(&shm_->nodes[i].alive);
  }
  if (!others) {
    shm_->dead = 1;
    shm_unlink(name_.c_str());
  }
  unlock_shared();
  if (!unmap) return;
  munmap(shm_, sizeof(Shared));
  shm_ = nullptr;
}

bool Fabric::node_alive(uint32_t node, uint32_t gen) {
  if (node >= kMaxNodes) return false;
  Node& n = shm_->nodes[node];
  if (n.gen != gen || !n.in_use) return false;
  if (node == node_) return true;
  int r = pthread_mutex_trylock(&n.alive);
  if (r == EBUSY) return true;
  if (r == EOWNERDEAD) pthread_mutex_consistent(&n.alive);
  if (r == 0 || r == EOWNERDEAD) pthread_mutex_unlock(&n.alive);
  return false;
}

void Fabric::wake(uint32_t node) {
  Ring& r = shm_->rings[node];
  r.doorbell.fetch_add(1);
  if (r.sleeping.load()) futex_wake(&r.doorbell);
}

int Fabric::send(uint32_t node, uint32_t gen, MsgType type, const void* a, size_t alen,
                 const void* b, size_t blen, bool wait,
                 const std::function<void()>& while_waiting) {
  if (node >= kMaxNodes) return -1;
  Ring& r = shm_->rings[node];
  const uint64_t size = (sizeof(MsgHdr) + alen + blen + 7) & ~uint64_t(7);
  lock_robust(&r.producer_lock);
  uint64_t pos, pad;
  for (;;) {
    if (shm_->nodes[node].gen != gen || !shm_->nodes[node].in_use) {
      pthread_mutex_unlock(&r.producer_lock);
      return -1;
    }
    pos = r.tail.load(std::memory_order_relaxed);
    uint64_t off = pos % kRingBytes;
    pad = off + size > kRingBytes ? kRingBytes - off : 0;
    if (pos + pad + size - r.head.load(std::memory_order_acquire) <= kRingBytes) break;
    pthread_mutex_unlock(&r.producer_lock);
    if (!node_alive(node, gen)) return -1;
    if (!wait) return 0;
    if (while_waiting) while_waiting();
    usleep(20);
    lock_robust(&r.producer_lock);
  }
  if (pad) {
    MsgHdr w{uint32_t(pad), kWrap};
    memcpy(&r.data[pos % kRingBytes], &w, sizeof w);
  }
  uint8_t* dst = &r.data[(pos + pad) % kRingBytes];
  MsgHdr h{uint32_t(size), type};
  memcpy(dst, &h, sizeof h);
  if (alen) memcpy(dst + sizeof h, a, alen);
  if (blen) memcpy(dst + sizeof h + alen, b, blen);
  r.tail.store(pos + pad + size, std::memory_order_release);
  pthread_mutex_unlock(&r.producer_lock);
  r.doorbell.fetch_add(1);
  if (r.sleeping.load() == 2) futex_wake(&r.doorbell);  // a timed sleeper looks by itself
  return 1;
}

void Fabric::lock_direct(uint32_t node) {
  if (node != node_) return lock_robust(&shm_->nodes[node].direct);
  // The owner announces itself only when it has to wait: its uncontended takes (every CQE it
  // writes) must not turn requesters away to the message path.
  int r = pthread_mutex_trylock(&shm_->nodes[node].direct);
  if (r == EOWNERDEAD) pthread_mutex_consistent(&shm_->nodes[node].direct);
  if (r == 0 || r == EOWNERDEAD) return;
  shm_->nodes[node].owner_waiting.fetch_add(1);
  lock_robust(&shm_->nodes[node].direct);
  shm_->nodes[node].owner_waiting.fetch_sub(1);
}
void Fabric::unlock_direct(uint32_t node) { pthread_mutex_unlock(&shm_->nodes[node].direct); }

bool Fabric::direct_usable(uint32_t node, uint32_t gen) {
  if (node >= kMaxNodes) return false;
  if (node == node_) return true;
  int64_t seen = direct_checked_[node].load(std::memory_order_relaxed);
  if (seen == int64_t(gen) + 1) return true;
  if (seen == -(int64_t(gen) + 1)) return false;
  const Node& n = shm_->nodes[node];
  uint64_t token = 0;
  iovec l{&token, sizeof token}, r{reinterpret_cast<void*>(uintptr_t(n.token_addr)), sizeof token};
  bool ok = n.gen == gen && process_vm_readv(n.pid, &l, 1, &r, 1, 0) == ssize_t(sizeof token) &&
            token == n.token && n.gen == gen;
  direct_checked_[node].store(ok ? int64_t(gen) + 1 : -(int64_t(gen) + 1));
  return ok;
}

bool Fabric::direct_write(uint32_t node, uint64_t addr, const void* src, size_t len) {
  if (!len) return true;
  if (node == node_) {
    memcpy(reinterpret_cast<void*>(uintptr_t(addr)), src, len);
    return true;
  }
  iovec l{const_cast<void*>(src), len}, r{reinterpret_cast<void*>(uintptr_t(addr)), len};
  return process_vm_writev(shm_->nodes[node].pid, &l, 1, &r, 1, 0) == ssize_t(len);
}

bool Fabric::direct_read(uint32_t node, uint64_t addr, void* dst, size_t len) {
  if (!len) return true;
  if (node == node_) {
    memcpy(dst, reinterpret_cast<const void*>(uintptr_t(addr)), len);
    return true;
  }
  iovec l{dst, len}, r{reinterpret_cast<void*>(uintptr_t(addr)), len};
  return process_vm_readv(shm_->nodes[node].pid, &l, 1, &r, 1, 0) == ssize_t(len);
}

namespace {
// process_vm_readv/writev of up to 16 copies at a time, in order.
bool vm_copy(pid_t pid, const Fabric::Copy* c, int n, bool write) {
  while (n > 0) {
    int k = std::min(n, 16);
    iovec l[16], r[16];
    size_t total = 0;
    for (int i = 0; i < k; ++i) {
      l[i] = iovec{c[i].local, c[i].len};
      r[i] = iovec{reinterpret_cast<void*>(uintptr_t(c[i].remote)), c[i].len};
      total += c[i].len;
    }
    ssize_t done = write ? process_vm_writev(pid, l, k, r, k, 0) : process_vm_readv(pid, l, k, r, k, 0);
    if (done != ssize_t(total)) return false;
    c += k, n -= k;
  }
  return true;
}
}  // namespace

bool Fabric::direct_readv(uint32_t node, const Copy* c, int n) {
  if (node != node_) return vm_copy(shm_->nodes[node].pid, c, n, false);
  for (int i = 0; i < n; ++i)
    memcpy(c[i].local, reinterpret_cast<const void*>(uintptr_t(c[i].remote)), c[i].len);
  return true;
}

bool Fabric::direct_writev(uint32_t node, const Copy* c, int n) {
  if (node != node_) return vm_copy(shm_->nodes[node].pid, c, n, true);
  for (int i = 0; i < n; ++i) {
    std::atomic_signal_fence(std::memory_order_seq_cst);  // in order, as the system call copies
    memcpy(reinterpret_cast<void*>(uintptr_t(c[i].remote)), c[i].local, c[i].len);
  }
  return true;
}

uint32_t Fabric::alloc_qpn(uint16_t lid, uint8_t type) {
  lock_shared();
  uint32_t qpn = 0;
  for (uint32_t i = 0; i < kQpnSlots; ++i) {
    uint32_t c = shm_->next_qpn;
    shm_->next_qpn = c + 1 >= kQpnSlots ? 0x100 : c + 1;
    if (c < 0x100 || shm_->qpns[c].used) continue;
    QpnEntry& e = shm_->qpns[c];
    e.node = node_;
    e.gen = gen_;
    e.lid = lid;
    e.type = type;
    e.accepting = 0;
    e.rq_hw_ci = 0;
    e.rcqn = e.srqn = 0;
    e.used.store(1, std::memory_order_release);
    qpn = c;
    break;
  }
  unlock_shared();
  return qpn;
}

void Fabric::free_qpn(uint32_t qpn) {
  if (qpn < kQpnSlots) shm_->qpns[qpn].used.store(0, std::memory_order_release);
}

bool Fabric::lookup_qpn(uint32_t qpn, QpnEntry* out) {
  if (qpn >= kQpnSlots) return false;
  QpnEntry& e = shm_->qpns[qpn];
  if (!e.used.load(std::memory_order_acquire)) return false;
  out->node = e.node;
  out->gen = e.gen;
  out->lid = e.lid;
  out->type = e.type;
  memcpy(out->gid, e.gid, 16);  // the port's: fixed for the QP's life (a GRH must name it)
  out->path_mtu = e.path_mtu;
  return true;
}

// A process killed with SIGKILL never detaches; if it was the last of its fabric, the segment
// would stay in /dev/shm forever. Every start therefore looks at all softhca segments and removes
// those in which no node is alive (robust mutexes tell, across PID namespaces too), under the
// segment's own lock, marking it dead so that a process attaching at that moment starts afresh.
void Fabric::reap_abandoned_fabrics() {
  DIR* dir = opendir("/dev/shm");
  if (!dir) return;
  while (dirent* de = readdir(dir)) {
    if (strncmp(de->d_name, kPrefix, sizeof kPrefix - 1) != 0) continue;
    std::string name = std::string("/") + de->d_name;
    int fd = shm_open(name.c_str(), O_RDWR, 0600);
    if (fd < 0) continue;
    struct stat st;
    if (fstat(fd, &st) != 0 || size_t(st.st_size) < sizeof(Shared)) {
      // Still being created, or of another layout: only a creator that died long ago is removed.
      if (fstat(fd, &st) == 0 && st.st_size == 0 && time(nullptr) - st.st_mtime > 60)
        shm_unlink(name.c_str());
      close(fd);
      continue;
    }
    void* p = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) continue;
    auto* shm = static_cast<Shared*>(p);
    auto* magic = reinterpret_cast<std::atomic<uint32_t>*>(&shm->magic);
    if (magic->load(std::memory_order_acquire) == kMagic && shm->version == kVersion) {
      lock_robust(&shm->lock);
      bool alive = false;
      for (uint32_t i = 0; i < kMaxNodes && !alive; ++i) {
        if (!shm->nodes[i].in_use) continue;
        int r = pthread_mutex_trylock(&shm->nodes[i].alive);
        if (r == EBUSY) {
          alive = true;
          continue;
        }
        if (r == EOWNERDEAD) pthread_mutex_consistent(&shm->nodes[i].alive);
        if (r == 0 || r == EOWNERDEAD) pthread_mutex_unlock(&shm->nodes[i].alive);
      }
      // A segment nobody has joined yet (its creator is between init and claiming a node) has
      // no node in use either: leave young ones alone.
      bool young = time(nullptr) - st.st_mtime < 10;
      bool any_used = false;
      for (uint32_t i = 0; i < kMaxNodes; ++i) any_used |= shm->nodes[i].in_use != 0;
      if (!alive && !shm->dead && (any_used || !young)) {
        shm->dead = 1;
        shm_unlink(name.c_str());
      }
      pthread_mutex_unlock(&shm->lock);
    }
    munmap(p, sizeof(Shared));
  }
  closedir(dir);
}

}  // namespace softhca
