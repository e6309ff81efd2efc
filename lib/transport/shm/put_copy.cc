// lib/transport/shm: how a put's bytes move into a peer's memory mapped here. Exported as
// hoshmem_fast_put_copy: the library's puts and the inline puts of <shmem.h> (for sizes not
// known small at compile time) both call it, so every put keeps the same rule, stated at
// hoshmem_fast_put_small in include/shmem/shmem_inline.h: the last 64 bytes are stored once
// each, by stores in address order (AVX-512: one store), after everything before them.
//
// It is picked once at load time (GNU ifunc) for the widest moves the CPU has: a put of a few
// hundred bytes is as many moves as memcpy would make, and costs a call, as memcpy would.
#include "lib/transport/shm/put_copy.h"

#include <shmem.h>

#include <cstddef>
#include <cstring>

namespace {

// A longer head goes to memcpy (its large-copy strategies are not worth repeating here); up to
// here the vector loop below is as fast as memcpy on the machine measured (perf/RESULTS.md).
constexpr size_t kMemcpyHead = 2048;

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

// One copy routine per CPU level, compiled for that level (TARGET) with moves of W bytes; SMALL
// copies fewer than 64 bytes, SHORT_HEAD a head shorter than W. First the bytes before the last
// 64 (the head), possibly more than once: blocks of four W-byte moves (four loads, then four
// stores), then single moves, the last ending at the head's end and overlapping the one before
// it. Then the last 64 bytes as TAIL_MOVES stores, in address order. After the small sizes, the
// common case (a head of W to kMemcpyHead bytes) is tested first and alone: at 64-512 bytes
// every branch before the first move costs about as much as a move. Each routine starts on a
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
      size_t i = 0;                                                                          \
      for (; i + 4 * W <= head; i += 4 * W) {                                                \
        const Wide a = *(const Wide *)(from + i), b = *(const Wide *)(from + i + W);         \
        const Wide c = *(const Wide *)(from + i + 2 * W), d = *(const Wide *)(from + i + 3 * W); \
        *(Wide *)(to + i) = a;                                                               \
        *(Wide *)(to + i + W) = b;                                                           \
        *(Wide *)(to + i + 2 * W) = c;                                                       \
        *(Wide *)(to + i + 3 * W) = d;                                                       \
      }                                                                                      \
      for (; i + W < head; i += W) *(Wide *)(to + i) = *(const Wide *)(from + i);            \
      *(Wide *)(to + head - W) = *(const Wide *)(from + head - W);                           \
    } else if (head < W) {                                                                   \
      SHORT_HEAD(to, from, head);                                                            \
    } else {                                                                                 \
      return put_long(to, from, bytes);                                                      \
    }                                                                                        \
    Piece tail[TAIL_MOVES];                                                                  \
    for (int k = 0; k < TAIL_MOVES; ++k)                                                     \
      tail[k] = *(const Piece *)(from + head + 64 / TAIL_MOVES * k);                         \
    for (int k = 0; k < TAIL_MOVES; ++k)                                                     \
      *(volatile Piece *)(to + head + 64 / TAIL_MOVES * k) = tail[k];                        \
  }

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

}  // namespace

namespace hoshmem::shm {

const PutCopyVariant *put_copy_variants(size_t *count) {
  __builtin_cpu_init();  // the CPU-feature tests below may run before constructors
  static const PutCopyVariant variants[] = {
      {"avx512", put_copy_avx512, cpu_runs_avx512()},
      {"avx2", put_copy_avx2, cpu_runs_avx2()},
      {"sse2", put_copy_sse2, true},
  };
  *count = sizeof variants / sizeof *variants;
  return variants;
}

}  // namespace hoshmem::shm

extern "C" {

using PutCopy = void (*)(char *, const void *, size_t);

// Runs at load time, before constructors: only the CPU-feature builtins may be used here.
PutCopy hoshmem_resolve_put_copy() {
  __builtin_cpu_init();
  if (cpu_runs_avx512()) return put_copy_avx512;
  if (cpu_runs_avx2()) return put_copy_avx2;
  return put_copy_sse2;
}

void hoshmem_fast_put_copy(char *to, const void *from, size_t bytes)
    __attribute__((ifunc("hoshmem_resolve_put_copy")));

}  // extern "C"
