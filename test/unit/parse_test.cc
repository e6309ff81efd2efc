// Parsing of environment values (SHMEM_SYMMETRIC_SIZE and friends).
#include "lib/base/parse.h"

#include <gtest/gtest.h>

namespace hoshmem {
namespace {

TEST(ParseSize, PlainAndScaled) {
  EXPECT_EQ(parse_size("0"), 0u);
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("1K"), 1024u);
  EXPECT_EQ(parse_size("1k"), 1024u);
  EXPECT_EQ(parse_size("512M"), 512ull << 20);
  EXPECT_EQ(parse_size("2g"), 2ull << 30);
  EXPECT_EQ(parse_size("1T"), 1ull << 40);
  EXPECT_EQ(parse_size("64MB"), 64ull << 20);
  EXPECT_EQ(parse_size(" 8M "), 8ull << 20);
}

TEST(ParseSize, Fractions) {
  EXPECT_EQ(parse_size("1.5K"), 1536u);
  EXPECT_EQ(parse_size("0.5G"), 512ull << 20);
  EXPECT_EQ(parse_size(".25M"), 256ull << 10);
}

TEST(ParseSize, Rejects) {
  for (const char *bad : {"", "M", "abc", "1Q", "-1", "1MM", "1.2.3", "12 M x", "0x10", "1e6"})
    EXPECT_FALSE(parse_size(bad)) << bad;
  EXPECT_FALSE(parse_size("99999999999999999999"));
  EXPECT_FALSE(parse_size("20000000T"));  // overflows 64 bits
}

TEST(ParseBool, AcceptsCommonSpellings) {
  for (const char *yes : {"1", "yes", "Y", "true", "ON"}) EXPECT_EQ(parse_bool(yes), true) << yes;
  for (const char *no : {"0", "no", "n", "False", "off"}) EXPECT_EQ(parse_bool(no), false) << no;
  for (const char *bad : {"", "2", "maybe", "yess"}) EXPECT_FALSE(parse_bool(bad)) << bad;
}

TEST(ParseUint, DecimalAndHex) {
  EXPECT_EQ(parse_uint("0"), 0u);
  EXPECT_EQ(parse_uint("123"), 123u);
  EXPECT_EQ(parse_uint("0x500000000000"), 0x500000000000u);
  EXPECT_FALSE(parse_uint("0x"));
  EXPECT_FALSE(parse_uint("12a"));
  EXPECT_FALSE(parse_uint("0x1ffffffffffffffff"));
}

TEST(FormatSize, ShortestExactUnit) {
  char buf[32];
  EXPECT_STREQ(format_size(1ull << 30, buf, sizeof buf), "1G");
  EXPECT_STREQ(format_size(1536, buf, sizeof buf), "1536");
  EXPECT_STREQ(format_size(3ull << 20, buf, sizeof buf), "3M");
}

}  // namespace
}  // namespace hoshmem
