// The put copy (lib/transport/shm/put_copy.cc): every variant this CPU runs copies every size
// exactly, at every alignment, and writes nothing outside the destination; and, counted by
// hardware write watchpoints, stores each of the last 64 bytes exactly once (a receiver polls the
// last element of a put; a second store of it, even one that writes the same value or nothing,
// can land after the receiver reset it, and some CPUs count an empty masked store as a write).
#include "lib/transport/shm/put_copy.h"

#include <gtest/gtest.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace hoshmem::shm {
namespace {

constexpr size_t kGuard = 128;

void check_variant(const PutCopyVariant &v, size_t bytes, size_t to_misalign,
                   size_t from_misalign) {
  std::vector<char> src(bytes + 64), dst(bytes + 2 * kGuard + 64);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<char>(i * 131 + bytes);
  memset(dst.data(), 0x5a, dst.size());
  char *to = dst.data() + kGuard + to_misalign;
  const char *from = src.data() + from_misalign;
  v.copy(to, from, bytes);
  ASSERT_EQ(memcmp(to, from, bytes), 0) << v.name << ": " << bytes << " bytes, misaligned by "
                                        << to_misalign << "/" << from_misalign;
  for (char *p = dst.data(); p < to; ++p) ASSERT_EQ(*p, 0x5a) << v.name << ": wrote before dest";
  for (char *p = to + bytes; p < dst.data() + dst.size(); ++p)
    ASSERT_EQ(*p, 0x5a) << v.name << ": wrote past dest, " << bytes << " bytes";
}

TEST(PutCopy, EveryVariantCopiesEverySizeExactly) {
  size_t n = 0;
  const PutCopyVariant *variants = put_copy_variants(&n);
#if defined(__x86_64__)
  ASSERT_EQ(n, 3u);  // avx512, avx2, sse2
#elif defined(__aarch64__)
  ASSERT_EQ(n, 1u);  // generic
#endif
  int ran = 0;
  for (size_t k = 0; k < n; ++k) {
    if (!variants[k].runs_here) continue;
    ++ran;
    for (size_t bytes = 0; bytes <= 2200; ++bytes)
      for (size_t mis : {0, 1, 8, 17}) check_variant(variants[k], bytes, mis, (mis * 3) % 64);
    // Longer heads: the aligned-destination loop (every destination offset in a line, first and
    // last sizes it takes) and memcpy beyond it (a head of more than 1 MiB).
    for (size_t bytes : {2048 + 65, 4096, 8192 + 64, 65536 + 13, (1 << 20) + 64, (1 << 20) + 65,
                         (1 << 20) + 200})
      for (size_t mis : {0, 1, 16, 31, 32, 48, 63})
        check_variant(variants[k], bytes, mis, (mis * 5) % 64);
  }
  EXPECT_GE(ran, 1);  // sse2 runs on every x86-64, generic on every aarch64
}

// The variant the library's puts use (the ifunc's choice): the one HOSHMEM_PUT_COPY names when it
// is set (scripts/test-aarch64.sh runs this test with each variant forced), else the widest this
// CPU runs.
TEST(PutCopy, InUseIsTheForcedOrTheWidestVariant) {
  size_t n = 0;
  const PutCopyVariant *variants = put_copy_variants(&n);
  bool forced = false;
  const std::string in_use = put_copy_in_use(&forced);
  const char *want = getenv("HOSHMEM_PUT_COPY");
  if (want && *want) {
    EXPECT_TRUE(forced) << "HOSHMEM_PUT_COPY=" << want << " not taken: " << in_use << " in use";
    EXPECT_EQ(in_use, want);
    return;
  }
  EXPECT_FALSE(forced);
  size_t widest = 0;
  while (widest < n && !variants[widest].runs_here) ++widest;
  ASSERT_LT(widest, n);
  EXPECT_EQ(in_use, variants[widest].name);
}

// A counting write watchpoint on one byte for this thread, or -1 where perf events are refused.
int watch_byte_writes(const char *addr) {
  perf_event_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.type = PERF_TYPE_BREAKPOINT;
  attr.size = sizeof attr;
  attr.bp_type = HW_BREAKPOINT_W;
  attr.bp_addr = reinterpret_cast<uintptr_t>(addr);
  attr.bp_len = HW_BREAKPOINT_LEN_1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  return static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0));
}

// How many times copying `bytes` with `v` to `to` writes the byte at `watched`.
long long stores_to(const PutCopyVariant &v, char *to, const char *from, size_t bytes,
                    const char *watched) {
  const int fd = watch_byte_writes(watched);
  if (fd < 0) return -1;
  v.copy(to, from, bytes);
  long long hits = -1;
  if (read(fd, &hits, sizeof hits) != static_cast<ssize_t>(sizeof hits)) hits = -1;
  close(fd);
  return hits;
}

TEST(PutCopy, EveryVariantStoresEachOfTheLast64BytesOnce) {
  size_t n = 0;
  const PutCopyVariant *variants = put_copy_variants(&n);
  alignas(64) static char dst[512];
  alignas(64) static char src[512];
  for (size_t i = 0; i < sizeof src; ++i) src[i] = static_cast<char>(i + 1);
  {  // A watchpoint that opens may still count nothing (seen in KVM guests): calibrate first.
    const int probe = watch_byte_writes(dst);
    if (probe < 0) GTEST_SKIP() << "perf_event_open refused here: no watchpoints";
    *reinterpret_cast<volatile char *>(dst) = 1;
    long long hits = -1;
    if (read(probe, &hits, sizeof hits) != static_cast<ssize_t>(sizeof hits)) hits = -1;
    close(probe);
    if (hits != 1)
      GTEST_SKIP() << "write watchpoints do not count on this machine (one store counted "
                   << hits << " times): store counts not checked";
  }
  for (size_t k = 0; k < n; ++k) {
    const PutCopyVariant &v = variants[k];
    if (!v.runs_here) continue;
    for (size_t bytes = 0; bytes <= 300; ++bytes) {
      for (size_t misalign : {0, 8, 13}) {
        char *to = dst + 64 + misalign;
        // Each of the last min(64, bytes) bytes: one store exactly.
        const size_t tail = bytes < 64 ? bytes : 64;
        for (size_t b = bytes - tail; b < bytes; ++b)
          ASSERT_EQ(stores_to(v, to, src, bytes, to + b), 1)
              << v.name << ": " << bytes << "-byte copy (destination misaligned by " << misalign
              << ") stored byte " << b << " other than once";
        // An empty copy stores nothing where its destination starts.
        if (bytes == 0)
          ASSERT_EQ(stores_to(v, to, src, 0, to), 0) << v.name << ": an empty copy stored";
      }
    }
  }
}

}  // namespace
}  // namespace hoshmem::shm
