// lib/base: memory-release events through patched libc entry points (memory_events.h).
#include "lib/base/memory_events.h"

#include <dlfcn.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <mutex>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif
#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif

namespace hoshmem::memory_events {
namespace {

constexpr uintptr_t kPage = 4096;

// --- subscribers and delivery (the hook path: no allocation, no blocking) ------------------

struct Slot {
  std::atomic<Callback> callback{nullptr};
  std::atomic<void *> arg{nullptr};
  std::atomic<unsigned> running{0};  // deliveries inside the callback now
};
constexpr int kSlots = 16;
Slot g_slots[kSlots];
std::atomic<int> g_subscribers{0};
std::mutex g_admin;  // subscribe, unsubscribe, installation

// The installation's self-test: a page it unmaps must be reported.
std::atomic<uintptr_t> g_probe{0};
std::atomic<bool> g_probe_seen{false};

// Releases made on this thread while it is inside a callback (a signal handler, or a callback
// that releases memory itself): reported when the callback returns. Static TLS: a dynamically
// allocated TLS block could call malloc on first use, and this runs inside malloc.
struct Range {
  uintptr_t start, end;
};
constexpr unsigned kMissed = 4;
[[gnu::tls_model("initial-exec")]] thread_local bool t_inside = false;
[[gnu::tls_model("initial-exec")]] thread_local Range t_missed[kMissed];
[[gnu::tls_model("initial-exec")]] thread_local std::atomic<unsigned> t_nmissed{0};
[[gnu::tls_model("initial-exec")]] thread_local std::atomic<bool> t_missed_all{false};

void deliver(uintptr_t start, uintptr_t end) {
  for (Slot &s : g_slots) {
    if (!s.callback.load(std::memory_order_acquire)) continue;
    // running before the second look: unsubscribe() clears the callback, then waits for running
    s.running.fetch_add(1);
    if (Callback cb = s.callback.load())
      cb(s.arg.load(std::memory_order_relaxed), reinterpret_cast<const void *>(start),
         end - start);
    s.running.fetch_sub(1, std::memory_order_release);
  }
}

void report(const void *base, size_t length) {
  if (length == 0) return;
  const uintptr_t start = reinterpret_cast<uintptr_t>(base) & ~(kPage - 1);
  uintptr_t end = reinterpret_cast<uintptr_t>(base) + length;
  end = end < start || end > UINTPTR_MAX - kPage ? UINTPTR_MAX : (end + kPage - 1) & ~(kPage - 1);
  if (const uintptr_t probe = g_probe.load(std::memory_order_relaxed);
      probe && start <= probe && probe < end)
    g_probe_seen.store(true, std::memory_order_relaxed);
  if (g_subscribers.load(std::memory_order_relaxed) == 0) return;
  if (t_inside) {  // nested: keep it for the outer report (which cannot be running now)
    const unsigned n = t_nmissed.load(std::memory_order_relaxed);
    if (n < kMissed) {
      t_missed[n] = {start, end};
      std::atomic_signal_fence(std::memory_order_release);
      t_nmissed.store(n + 1, std::memory_order_relaxed);
    } else {
      t_missed_all.store(true, std::memory_order_relaxed);  // too many: report everything
    }
    return;
  }
  t_inside = true;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  deliver(start, end);
  for (;;) {
    // What nested releases left, newest first; a signal handler may add more meanwhile (at
    // the top, so a failed exchange just looks again).
    if (t_missed_all.exchange(false, std::memory_order_relaxed)) {
      t_nmissed.store(0, std::memory_order_relaxed);
      deliver(0, UINTPTR_MAX);
      continue;
    }
    unsigned n = t_nmissed.load(std::memory_order_relaxed);
    if (n) {
      std::atomic_signal_fence(std::memory_order_acquire);
      const Range r = t_missed[n - 1];
      if (t_nmissed.compare_exchange_strong(n, n - 1, std::memory_order_relaxed))
        deliver(r.start, r.end);
      continue;
    }
    t_inside = false;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    // one that came between the last look and here: take it on
    if (!t_nmissed.load(std::memory_order_relaxed) && !t_missed_all.load(std::memory_order_relaxed))
      break;
    t_inside = true;
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
}

// --- the replacements: report, then make the system call (as the glibc wrapper would) ------
// Only x86-64's patches jump to them (installation, below): elsewhere they are unused.

void **g_curbrk = nullptr;  // glibc's __curbrk, which sbrk reads and brk keeps up to date

[[maybe_unused]] int hooked_munmap(void *addr, size_t length) {
  report(addr, length);
  return static_cast<int>(syscall(SYS_munmap, addr, length));
}

[[maybe_unused]] void *hooked_mremap(void *old_address, size_t old_size, size_t new_size,
                                     int flags, void *new_address) {
  // variadic in libc: the fifth argument is in %r8 anyway
  report(old_address, old_size);
  if (flags & MREMAP_FIXED) report(new_address, new_size);
  const bool fifth = flags & (MREMAP_FIXED | MREMAP_DONTUNMAP);
  return reinterpret_cast<void *>(syscall(SYS_mremap, old_address, old_size, new_size,
                                          long{flags}, fifth ? new_address : nullptr));
}

[[maybe_unused]] int hooked_madvise(void *addr, size_t length, int advice) {
  if (advice == MADV_DONTNEED || advice == MADV_FREE || advice == MADV_REMOVE ||
      advice == MADV_DONTNEED_LOCKED)
    report(addr, length);
  return static_cast<int>(syscall(SYS_madvise, addr, length, long{advice}));
}

[[maybe_unused]] void *hooked_mmap(void *addr, size_t length, int prot, int flags, int fd,
                                   off_t offset) {
  if ((flags & MAP_FIXED) && !(flags & MAP_FIXED_NOREPLACE)) report(addr, length);
  // ints widened as glibc's wrapper does (syscall(2) passes whole registers on)
  return reinterpret_cast<void *>(
      syscall(SYS_mmap, addr, length, long{prot}, long{flags}, long{fd}, long{offset}));
}

[[maybe_unused]] int hooked_brk(void *addr) {
  auto current = reinterpret_cast<uintptr_t>(*g_curbrk);
  if (!current) current = static_cast<uintptr_t>(syscall(SYS_brk, 0));
  const auto want = reinterpret_cast<uintptr_t>(addr);
  if (want && want < current) report(addr, current - want);  // brk(0) only asks
  void *now = reinterpret_cast<void *>(syscall(SYS_brk, addr));
  *g_curbrk = now;
  if (reinterpret_cast<uintptr_t>(now) < want) {
    errno = ENOMEM;
    return -1;
  }
  return 0;
}

// --- installation ---------------------------------------------------------------------------

#if defined(__x86_64__)

struct Target {
  const char *symbol;
  long nr;          // the system call it wraps
  void *hook;
  bool frame_entry;  // may be patched at an entry that sets up a stack frame (a C wrapper)
  uint8_t *at;       // where the jump was written
  uint8_t jump[5];
};

Target g_targets[] = {
    {"munmap", SYS_munmap, reinterpret_cast<void *>(&hooked_munmap), false, nullptr, {}},
    {"mremap", SYS_mremap, reinterpret_cast<void *>(&hooked_mremap), true, nullptr, {}},
    {"madvise", SYS_madvise, reinterpret_cast<void *>(&hooked_madvise), false, nullptr, {}},
    {"mmap", SYS_mmap, reinterpret_cast<void *>(&hooked_mmap), false, nullptr, {}},
    {"brk", SYS_brk, reinterpret_cast<void *>(&hooked_brk), false, nullptr, {}},
};

enum class State { kNotTried, kInstalled, kFailed };
State g_state = State::kNotTried;  // g_admin
std::atomic<bool> g_installed{false};
std::string g_method;

int32_t le32(const uint8_t *p) {
  int32_t v;
  memcpy(&v, p, 4);
  return v;
}

// `mov $nr, %eax; syscall`
bool is_syscall(const uint8_t *p, long nr) {
  return p[0] == 0xb8 && le32(p + 1) == nr && p[5] == 0x0f && p[6] == 0x05;
}

bool contains_syscall(const uint8_t *f, size_t span, long nr) {
  for (size_t i = 0; i + 7 <= span; ++i)
    if (is_syscall(f + i, nr)) return true;
  return false;
}

// Register-only instructions glibc's wrappers run before loading the system-call number (no
// stack change, no memory access): their length, or 0.
size_t preamble_length(const uint8_t *p) {
  if (p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa) return 4;  // endbr64
  if ((p[0] == 0x41 || p[0] == 0x49) && p[1] == 0x89 && p[2] == 0xca) return 3;  // mov %rcx,%r10
  if ((p[0] == 0x41 || p[0] == 0x49) && p[1] == 0xf7 && p[2] == 0xc1) return 7;  // test $i,%r9
  if (p[0] == 0x75 && p[1] < 0x80) return 2;  // jne forward (mmap's misaligned-offset check)
  return 0;
}

// Where to write the 5-byte jump. Preferred: the `mov $nr, %eax` (5 bytes: exactly one
// instruction replaced, a thread is before it or past it) after a register-only preamble; the
// hook then runs with the caller's arguments and stack. Else, for C wrappers (frame_entry), the
// entry itself when it is the `sub $n, %rsp` of a function that makes this system call.
uint8_t *find_site(Target &t, uint8_t *f, std::string *why) {
  uint8_t *p = f;
  uint8_t *forward[4];
  unsigned nforward = 0;
  while (p < f + 32) {
    if (is_syscall(p, t.nr)) {
      for (unsigned i = 0; i < nforward; ++i)
        if (forward[i] > p && forward[i] < p + 5) p = nullptr;  // a jump into the patched bytes
      if (p) return p;
      break;
    }
    const size_t n = preamble_length(p);
    if (!n || nforward == 4) break;
    if (p[0] == 0x75) forward[nforward++] = p + 2 + p[1];
    p += n;
  }
  if (t.frame_entry) {
    uint8_t *e = f + (preamble_length(f) == 4 && f[0] == 0xf3 ? 4 : 0);
    if (e[0] == 0x48 && e[1] == 0x83 && e[2] == 0xec && contains_syscall(f, 192, t.nr)) return e;
  }
  const bool foreign = f[0] == 0xe9 || (f[0] == 0xff && f[1] == 0x25) ||
                       (f[0] == 0x49 && f[1] == 0xbb);
  *why = std::string("libc's ") + t.symbol + " is not the code hoshmem knows how to hook" +
         (foreign ? " (already patched by another library?)" : "");
  return nullptr;
}

// brk must be the wrapper that stores the new break into __curbrk (our replacement does that).
bool brk_stores_curbrk(const uint8_t *site, void **curbrk) {
  const uint8_t *p = site + 7;  // past `mov $12, %eax; syscall`
  if (p[0] == 0x48 && p[1] == 0x8b && p[2] == 0x15 && p[7] == 0x48 && p[8] == 0x89 &&
      p[9] == 0x02) {  // mov __curbrk@GOTPCREL(%rip), %rdx; mov %rax, (%rdx)
    void **slot;
    memcpy(&slot, p + 7 + le32(p + 3), sizeof slot);
    return slot == curbrk;
  }
  if (p[0] == 0x48 && p[1] == 0x89 && p[2] == 0x05)  // mov %rax, __curbrk(%rip)
    return reinterpret_cast<const void *>(p + 7 + le32(p + 3)) == curbrk;
  return false;
}

// sbrk must lower the break through brk (a call), not by a system call of its own.
bool sbrk_calls_brk(const uint8_t *sbrk, const uint8_t *brk) {
  if (contains_syscall(sbrk, 256, SYS_brk)) return false;
  for (size_t i = 0; i + 5 <= 256; ++i)
    if (sbrk[i] == 0xe8 && sbrk + i + 5 + le32(sbrk + i + 1) == brk) return true;
  return false;
}

// A page for the absolute jumps to our functions, within a rel32 jump of `near` (libc).
uint8_t *page_near(uintptr_t near) {
  near &= ~(kPage - 1);
  for (uintptr_t d = 1u << 20; d < (1u << 31) - (2u << 20); d += 1u << 20) {
    for (const uintptr_t hint : {near - d, near + d}) {
      void *p = mmap(reinterpret_cast<void *>(hint), kPage, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
      if (p == MAP_FAILED) continue;
      const auto a = reinterpret_cast<uintptr_t>(p);
      if ((a > near ? a - near : near - a) < (1u << 31) - (2u << 20))
        return static_cast<uint8_t *>(p);
      munmap(p, kPage);  // an old kernel took the flag as a hint and put it far away
    }
  }
  return nullptr;
}

void store16(uint8_t *at, uint16_t v) {  // one store: atomic within a cache line on x86
  asm volatile("movw %1, %0" : "=m"(*reinterpret_cast<uint16_t *>(at)) : "r"(v) : "memory");
}

// Replaces the 5 bytes at `at` with `jump` while other threads may be running them: first a
// jump to itself (2 bytes, one store: a thread arriving waits there), then the last 3 bytes,
// then the first 2 (one store). No thread ever decodes a mix of old and new bytes.
bool write_jump(uint8_t *at, const uint8_t jump[5], std::string *why) {
  if ((reinterpret_cast<uintptr_t>(at) & 63) == 63) {
    *why = "a patch site straddles a cache line";
    return false;
  }
  const uintptr_t first = reinterpret_cast<uintptr_t>(at) & ~(kPage - 1);
  const size_t span = ((reinterpret_cast<uintptr_t>(at) + 4) & ~(kPage - 1)) - first + kPage;
  // Writable and still executable: other threads may be running code on these pages.
  if (mprotect(reinterpret_cast<void *>(first), span, PROT_READ | PROT_WRITE | PROT_EXEC)) {
    *why = std::string("cannot make libc's code writable (") + strerror(errno) + ")";
    return false;
  }
  store16(at, 0xfeeb);  // jmp .
  for (int i = 2; i < 5; ++i) reinterpret_cast<volatile uint8_t *>(at)[i] = jump[i];
  store16(at, static_cast<uint16_t>(jump[0] | jump[1] << 8));
  mprotect(reinterpret_cast<void *>(first), span, PROT_READ | PROT_EXEC);
  return true;
}

bool install(std::string *why) {
  void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  if (!libc) {
    *why = "no dynamically loaded glibc (libc.so.6) to hook";
    return false;
  }
  Dl_info libc_info{};
  if (!dladdr(dlsym(libc, "syscall"), &libc_info)) {
    *why = "cannot locate libc's code";
    return false;
  }
  g_curbrk = static_cast<void **>(dlsym(libc, "__curbrk"));
  auto *sbrk_code = static_cast<const uint8_t *>(dlsym(libc, "sbrk"));
  if (!g_curbrk || !sbrk_code) {
    *why = "libc has no __curbrk or sbrk to check brk against";
    return false;
  }
  // Verify everything before changing anything.
  for (Target &t : g_targets) {
    auto *f = static_cast<uint8_t *>(dlsym(libc, t.symbol));
    Dl_info info{};
    if (!f || !dladdr(f, &info) || info.dli_fbase != libc_info.dli_fbase) {
      *why = std::string("libc's ") + t.symbol + " is not in libc";
      return false;
    }
    if (!(t.at = find_site(t, f, why))) return false;
    if (t.nr == SYS_brk && !brk_stores_curbrk(t.at, g_curbrk)) {
      *why = "libc's brk does not keep __curbrk as hoshmem expects";
      return false;
    }
    if (t.nr == SYS_brk && !sbrk_calls_brk(sbrk_code, f)) {
      *why = "libc's sbrk does not go through brk";
      return false;
    }
  }
  uint8_t *page = page_near(reinterpret_cast<uintptr_t>(g_targets[0].at));
  if (!page) {
    *why = "no free page within 2 GiB of libc for the hook trampolines";
    return false;
  }
  // One 16-byte trampoline per target: jmp *0(%rip); .quad hook
  for (size_t i = 0; i < std::size(g_targets); ++i) {
    uint8_t *tr = page + 16 * i;
    const uint8_t head[6] = {0xff, 0x25, 0, 0, 0, 0};
    memcpy(tr, head, 6);
    memcpy(tr + 6, &g_targets[i].hook, 8);
    const intptr_t rel = reinterpret_cast<intptr_t>(tr) -
                         reinterpret_cast<intptr_t>(g_targets[i].at + 5);
    if (rel != static_cast<int32_t>(rel)) {
      munmap(page, kPage);
      *why = "no free page within 2 GiB of libc for the hook trampolines";
      return false;
    }
    const auto rel32 = static_cast<int32_t>(rel);
    g_targets[i].jump[0] = 0xe9;
    memcpy(g_targets[i].jump + 1, &rel32, 4);
  }
  if (mprotect(page, kPage, PROT_READ | PROT_EXEC)) {
    munmap(page, kPage);
    *why = std::string("cannot make the hook trampolines executable (") + strerror(errno) + ")";
    return false;
  }
  for (Target &t : g_targets) {
    // A failure part way leaves the earlier ones patched, which is harmless: each replacement
    // does what libc's function did.
    if (!write_jump(t.at, t.jump, why)) return false;
  }
  // Self-test: a page unmapped through the PLT must be reported (e.g. a tool that translates
  // code may not notice the patch).
  void *p = mmap(nullptr, kPage, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    *why = "cannot map a page to test the hooks";
    return false;
  }
  g_probe.store(reinterpret_cast<uintptr_t>(p));
  munmap(p, kPage);
  g_probe.store(0);
  if (!g_probe_seen.load()) {
    *why = "libc's patched munmap did not report (code translated by a tool?)";
    return false;
  }
  g_method = "libc's munmap, mremap, madvise, mmap and brk patched";
  return true;
}

#else  // not x86-64

bool install(std::string *why) {
  *why = "memory-release hooks exist for x86-64 only";
  return false;
}
enum class State { kNotTried, kInstalled, kFailed };
State g_state = State::kNotTried;
std::atomic<bool> g_installed{false};
std::string g_method;

#endif

}  // namespace

bool subscribe(Callback callback, void *arg, std::string *why) {
  std::lock_guard<std::mutex> lock(g_admin);
  if (g_state == State::kNotTried) {
    std::string reason;
    g_state = install(&reason) ? State::kInstalled : State::kFailed;
    if (g_state == State::kFailed) g_method = reason;
    g_installed.store(g_state == State::kInstalled, std::memory_order_release);
  }
  if (g_state != State::kInstalled) {
    *why = g_method;
    return false;
  }
  for (Slot &s : g_slots) {
    if (s.callback.load()) continue;
    s.arg.store(arg, std::memory_order_relaxed);
    s.callback.store(callback, std::memory_order_release);
    g_subscribers.fetch_add(1);
    return true;
  }
  *why = "too many subscribers to memory-release events";
  return false;
}

void unsubscribe(Callback callback, void *arg) {
  std::lock_guard<std::mutex> lock(g_admin);
  for (Slot &s : g_slots) {
    if (s.callback.load() != callback || s.arg.load() != arg) continue;
    s.callback.store(nullptr);
    g_subscribers.fetch_sub(1);
    while (s.running.load()) sched_yield();  // a delivery that saw the callback still runs
    return;
  }
}

bool intact() {
  if (!g_installed.load(std::memory_order_acquire)) return false;
#if defined(__x86_64__)
  for (const Target &t : g_targets)
    if (memcmp(t.at, t.jump, 5) != 0) return false;
#endif
  return true;
}

std::string method() {
  std::lock_guard<std::mutex> lock(g_admin);
  if (g_state == State::kNotTried) return "not hooked (nothing subscribed)";
  return g_state == State::kInstalled ? g_method : "not hooked: " + g_method;
}

}  // namespace hoshmem::memory_events
