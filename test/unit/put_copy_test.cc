// The put copy (lib/transport/shm/put_copy.cc): every variant this CPU runs copies every size
// exactly, at every alignment, and writes nothing outside the destination.
#include "lib/transport/shm/put_copy.h"

#include <gtest/gtest.h>

#include <cstring>
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
  ASSERT_EQ(n, 3u);
  int ran = 0;
  for (size_t k = 0; k < n; ++k) {
    if (!variants[k].runs_here) continue;
    ++ran;
    for (size_t bytes = 0; bytes <= 2200; ++bytes)
      for (size_t mis : {0, 1, 8, 17}) check_variant(variants[k], bytes, mis, (mis * 3) % 64);
    for (size_t bytes : {4096, 65536 + 13}) check_variant(variants[k], bytes, 5, 3);
  }
  EXPECT_GE(ran, 1);  // sse2 runs on every x86-64
}

}  // namespace
}  // namespace hoshmem::shm
