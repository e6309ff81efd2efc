// lib/transport/shm: how a put's bytes move into a peer's memory mapped here. Exported as
// hoshmem_fast_put_copy: the library's puts and the inline puts of <shmem.h> (for sizes not
// known small at compile time) both call it, so every put keeps the same rule, stated at
// hoshmem_fast_put_small in include/shmem/shmem_inline.h: the last 64 bytes are stored once
// each, by stores in address order (AVX-512: one store), after everything before them.
//
// It is picked once at load time (GNU ifunc) for the widest moves the CPU has: a put of a few
// hundred bytes is as many moves as memcpy would make, and costs a call, as memcpy would. x86-64
// has three variants (AVX-512, AVX2, SSE2); aarch64 has one, `generic`: the same 16-byte moves as
// SSE2's, written in GCC's portable vector extension, which compiles to Advanced SIMD (q register)
// loads and stores there, part of every aarch64 core.
#include "lib/transport/shm/put_copy.h"

#include <shmem.h>
#include <sys/syscall.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace {

// Up to kMemcpyHead the vector loop below is as fast as memcpy on the machine measured
// (perf/HISTORY.md). A longer head, up to kAlignedHead, takes the same loop with the destination
// aligned to the move: memcpy (glibc 2.36, AVX-512, AMD EPYC) stores across cache lines when the
// destination is 16 bytes off the source's alignment, which doubles a copy of 4-256 KiB (8 KiB:
// 169 ns against 85; a get into malloc'ed memory is such a copy). Longer still: memcpy (its
// large-copy strategies, non-temporal stores, are not worth repeating here).
constexpr size_t kMemcpyHead = 2048;
constexpr size_t kAlignedHead = 1024 * 1024;

// The cases off the main path, out of line so that the main path needs no stack frame.
// Fewer than 64 bytes: 8-byte words, then 4, 2, 1 bytes, in address order (few branches for a
// size known only now; the inline path's hoshmem_fast_put_small suits sizes known at compile time).
__attribute__((noinline)) void put_small(char *to, const char *from, size_t bytes) {
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8)
    *(volatile hoshmem_u64_any *)(to + i) = *(const hoshmem_u64_any *)(from + i);
  if (bytes & 4) {
    *(volatile hoshmem_u32_any *)(to + i) = *(const hoshmem_u32_any *)(from + i);
    i += 4;
  }
  if (bytes & 2) {
    *(volatile hoshmem_u16_any *)(to + i) = *(const hoshmem_u16_any *)(from + i);
    i += 2;
  }
  if (bytes & 1) *(volatile char *)(to + i) = from[i];
}

// A head of more than kMemcpyHead bytes: memcpy, then the last 64 bytes in order.
__attribute__((noinline)) void put_long(char *to, const char *from, size_t bytes) {
  const size_t head = bytes - 64;
  memcpy(to, from, head);
  hoshmem_v16_any t[4];
  for (int k = 0; k < 4; ++k) t[k] = *(const hoshmem_v16_any *)(from + head + 16 * k);
  for (int k = 0; k < 4; ++k) *(volatile hoshmem_v16_any *)(to + head + 16 * k) = t[k];
}

// A head shorter than one W-byte move, for the variants without masked moves: two overlapping
// moves of 16 or 8 bytes (two moves of s bytes cover any head in [s, 2s]), or pieces.
inline void put_head_pieces(char *to, const char *from, size_t head) {
  if (head >= 16) {
    hoshmem_v16_any a = *(const hoshmem_v16_any *)from;
    hoshmem_v16_any b = *(const hoshmem_v16_any *)(from + head - 16);
    *(hoshmem_v16_any *)to = a;
    *(hoshmem_v16_any *)(to + head - 16) = b;
  } else if (head >= 8) {
    uint64_t a = *(const hoshmem_u64_any *)from;
    uint64_t b = *(const hoshmem_u64_any *)(from + head - 8);
    *(hoshmem_u64_any *)to = a;
    *(hoshmem_u64_any *)(to + head - 8) = b;
  } else if (head != 0) {
    put_small(to, from, head);
  }
}

// The head's moves of W bytes from byte `start` on (the bytes before it are written already).
#define HOSHMEM_PUT_COPY_HEAD(W, start)                                                            \
  {                                                                                                \
    size_t i = (start);                                                                            \
    for (; i + 4 * W <= head; i += 4 * W) {                                                        \
      const Wide a = *(const Wide *)(from + i), b = *(const Wide *)(from + i + W);                 \
      const Wide c = *(const Wide *)(from + i + 2 * W), d = *(const Wide *)(from + i + 3 * W);     \
      *(Wide *)(to + i) = a;                                                                       \
      *(Wide *)(to + i + W) = b;                                                                   \
      *(Wide *)(to + i + 2 * W) = c;                                                               \
      *(Wide *)(to + i + 3 * W) = d;                                                               \
    }                                                                                              \
    for (; i + W < head; i += W) *(Wide *)(to + i) = *(const Wide *)(from + i);                    \
    *(Wide *)(to + head - W) = *(const Wide *)(from + head - W);                                   \
  }

// One copy routine per CPU level, compiled for that level (TARGET) with moves of W bytes; SMALL
// copies fewer than 64 bytes, SHORT_HEAD a head shorter than W. First the bytes before the last 64
// (the head), possibly more than once: blocks of four W-byte moves (four loads, then four stores),
// then single moves, the last ending at the head's end and overlapping the one before it. Then the
// last 64 bytes as TAIL_MOVES stores, in address order. After the small sizes, the common case (a
// head of W to kMemcpyHead bytes) is tested first and alone: at 64-512 bytes every branch before
// the first move costs about as much as a move. With 32- or 64-byte moves, a head up to
// kAlignedHead moves its first W bytes, then goes on from the first W-aligned destination (16-byte
// moves there take twice memcpy's time: SSE2 and aarch64 keep memcpy). Each routine starts on a
// 64-byte line: where the linker happened to put it moved a 128-byte put by 25% (2.3 or 2.9 ns).
#define HOSHMEM_DEFINE_PUT_COPY(NAME, TARGET, W, TAIL_MOVES, SMALL, SHORT_HEAD)                \
  TARGET __attribute__((aligned(64))) void NAME(char *to, const void *source, size_t bytes) { \
    typedef long long Wide __attribute__((__vector_size__(W), __aligned__(1), __may_alias__)); \
    typedef long long Piece                                                                  \
        __attribute__((__vector_size__(64 / TAIL_MOVES), __aligned__(1), __may_alias__));    \
    const char *from = static_cast<const char *>(source);                                    \
    if (bytes < 64) return SMALL(to, from, bytes);                                           \
    const size_t head = bytes - 64;                                                          \
    if (__builtin_expect(head - W <= kMemcpyHead - W, 1)) { /* W <= head <= kMemcpyHead */   \
      HOSHMEM_PUT_COPY_HEAD(W, 0)                                                            \
    } else if (head < W) {                                                                   \
      SHORT_HEAD(to, from, head);                                                            \
    } else if (W >= 32 && head <= kAlignedHead) { /* a move, then aligned destinations */    \
      *(Wide *)to = *(const Wide *)from;                                                     \
      HOSHMEM_PUT_COPY_HEAD(W, W - (reinterpret_cast<uintptr_t>(to) & (W - 1)))              \
    } else {                                                                                 \
      return put_long(to, from, bytes);                                                      \
    }                                                                                        \
    Piece tail[TAIL_MOVES];                                                                  \
    for (int k = 0; k < TAIL_MOVES; ++k)                                                     \
      tail[k] = *(const Piece *)(from + head + 64 / TAIL_MOVES * k);                         \
    for (int k = 0; k < TAIL_MOVES; ++k)                                                     \
      *(volatile Piece *)(to + head + 64 / TAIL_MOVES * k) = tail[k];                        \
  }

#if defined(__x86_64__)

// The instructions each variant may use, and exactly what its CPU test checks: a variant is
// compiled for these features alone (not for a whole -march, which would let the compiler use
// instructions the run-time test never looked at).
#define HOSHMEM_AVX512_FEATURES "avx512f,avx512bw,bmi2"
#define HOSHMEM_AVX2_FEATURES "avx2"

bool cpu_runs_avx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("bmi2");
}
bool cpu_runs_avx2() { return __builtin_cpu_supports("avx2"); }

// AVX-512BW: 1 to 63 bytes (a whole put, or a head) are one masked load and one masked store,
// each byte once; bzhi makes the mask without a branch. Nothing at all for 0 bytes: a masked
// store with an empty mask writes no byte, but AMD CPUs still count it as a write access to the
// whole 64 bytes (a watchpoint there fires, and so would any hardware that tracks the line).
// (GCC builtins: the intrinsics' headers do not inline into a function compiled with target=.)
typedef char Bytes64 __attribute__((__vector_size__(64)));
__attribute__((target(HOSHMEM_AVX512_FEATURES))) inline void put_masked(char *to, const char *from,
                                                                      size_t bytes) {
  if (bytes == 0) return;
  const unsigned long long mask = __builtin_ia32_bzhi_di(~0ull, bytes);
  const Bytes64 zero = {};
  __builtin_ia32_storedquqi512_mask(to, __builtin_ia32_loaddquqi512_mask(from, zero, mask), mask);
}

HOSHMEM_DEFINE_PUT_COPY(put_copy_avx512, __attribute__((target(HOSHMEM_AVX512_FEATURES))), 64, 1,
                        put_masked, put_masked)
HOSHMEM_DEFINE_PUT_COPY(put_copy_avx2, __attribute__((target(HOSHMEM_AVX2_FEATURES))), 32, 2,
                        put_small, put_head_pieces)
HOSHMEM_DEFINE_PUT_COPY(put_copy_sse2, , 16, 4, put_small, put_head_pieces)

#elif defined(__aarch64__)

HOSHMEM_DEFINE_PUT_COPY(put_copy_generic, , 16, 4, put_small, put_head_pieces)

#else
#error "put_copy.cc: no put copy for this architecture (x86-64 and aarch64 have one)"
#endif

// HOSHMEM_PUT_COPY=avx512|avx2|sse2 (aarch64: generic) forces a variant, so that tests run the
// library with each one this CPU has. The resolver runs while the dynamic linker relocates the
// library (static programs: before libc is set up), when neither getenv nor errno can be used
// yet: it reads the environment the process started with from /proc/self/environ through raw
// system calls.
long raw_syscall3(long nr, long a, long b, long c) {
#if defined(__x86_64__)
  long ret;
  asm volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return ret;
#else  // aarch64: the number in x8, the arguments and the result in x0-x2
  register long x8 asm("x8") = nr;
  register long x0 asm("x0") = a;
  register long x1 asm("x1") = b;
  register long x2 asm("x2") = c;
  asm volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
  return x0;
#endif
}

// Copies the value of HOSHMEM_PUT_COPY (at most cap - 1 bytes) into `value`; false if not set.
bool forced_variant_name(char *value, size_t cap) {
  static const char kKey[] = "HOSHMEM_PUT_COPY=";
  const long fd = raw_syscall3(SYS_openat, -100 /* AT_FDCWD */,
                               reinterpret_cast<long>("/proc/self/environ"), 0 /* O_RDONLY */);
  if (fd < 0) return false;
  size_t matched = 0, len = 0;  // key bytes matched in this entry (kNoMatch: none can be)
  constexpr size_t kNoMatch = ~size_t{0};
  bool in_value = false, done = false;
  char buf[512];
  long n;
  while (!done && (n = raw_syscall3(SYS_read, fd, reinterpret_cast<long>(buf), sizeof buf)) > 0) {
    for (long i = 0; i < n && !done; ++i) {
      const char c = buf[i];
      if (in_value) {
        if (c == '\0') done = true;
        else if (len + 1 < cap) value[len++] = c;
        continue;
      }
      if (c == '\0') matched = 0;
      else if (matched != kNoMatch)
        matched = c == kKey[matched] ? matched + 1 : kNoMatch;
      if (matched == sizeof kKey - 1) in_value = true;
    }
  }
  raw_syscall3(SYS_close, fd, 0, 0);
  value[len] = '\0';
  return in_value;
}

bool same_name(const char *a, const char *b) {
  while (*a && *a == *b) ++a, ++b;
  return *a == *b;
}

using PutCopy = void (*)(char *, const void *, size_t);
// Zero-initialized (no relocation to apply, which could come after the resolver ran).
const char *g_in_use;  // the variant the resolver picked
bool g_forced;         // picked because HOSHMEM_PUT_COPY named it

}  // namespace

extern "C" PutCopy hoshmem_resolve_put_copy();

namespace hoshmem::shm {

const PutCopyVariant *put_copy_variants(size_t *count) {
#if defined(__x86_64__)
  __builtin_cpu_init();  // the CPU-feature tests below may run before constructors
  static const PutCopyVariant variants[] = {
      {"avx512", put_copy_avx512, cpu_runs_avx512()},
      {"avx2", put_copy_avx2, cpu_runs_avx2()},
      {"sse2", put_copy_sse2, true},
  };
#else
  static const PutCopyVariant variants[] = {{"generic", put_copy_generic, true}};
#endif
  *count = sizeof variants / sizeof *variants;
  return variants;
}

const char *put_copy_in_use(bool *forced) {
  // The ifunc may be bound lazily, at the first put: resolve now (the same choice) if not yet.
  if (!g_in_use) hoshmem_resolve_put_copy();
  if (forced) *forced = g_forced;
  return g_in_use ? g_in_use : "none";
}

}  // namespace hoshmem::shm

extern "C" {

// Runs at load time, before constructors: only the CPU-feature builtins, our own statics and raw
// system calls may be used here. A forced variant this CPU cannot run is not taken (shmem_init
// then reports it); otherwise the widest one the CPU runs.
PutCopy hoshmem_resolve_put_copy() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  const PutCopy widest = cpu_runs_avx512() ? put_copy_avx512
                         : cpu_runs_avx2() ? put_copy_avx2
                                           : put_copy_sse2;
  g_in_use = widest == put_copy_avx512 ? "avx512" : widest == put_copy_avx2 ? "avx2" : "sse2";
  char name[16];
  if (forced_variant_name(name, sizeof name)) {
    const struct { const char *name; PutCopy copy; bool runs; } choices[] = {
        {"avx512", put_copy_avx512, cpu_runs_avx512()},
        {"avx2", put_copy_avx2, cpu_runs_avx2()},
        {"sse2", put_copy_sse2, true},
    };
    for (const auto &c : choices) {
      if (c.runs && same_name(c.name, name)) {
        g_in_use = c.name;
        g_forced = true;
        return c.copy;
      }
    }
  }
  return widest;
#else  // aarch64: the one variant; forced when named
  g_in_use = "generic";
  char name[16];
  if (forced_variant_name(name, sizeof name) && same_name("generic", name)) g_forced = true;
  return put_copy_generic;
#endif
}

void hoshmem_fast_put_copy(char *to, const void *from, size_t bytes)
    __attribute__((ifunc("hoshmem_resolve_put_copy")));

}  // extern "C"
