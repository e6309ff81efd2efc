#include "lib/base/parse.h"

#include <cctype>
#include <cstdio>

namespace hoshmem {
namespace {
std::string_view trim(std::string_view s) {
  while (!s.empty() && isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (tolower(static_cast<unsigned char>(a[i])) != tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}
}  // namespace

std::optional<uint64_t> parse_size(std::string_view text) {
  std::string_view s = trim(text);
  size_t i = 0;
  unsigned __int128 whole = 0;
  size_t digits = 0;
  while (i < s.size() && isdigit(static_cast<unsigned char>(s[i]))) {
    whole = whole * 10 + (s[i++] - '0');
    if (whole > UINT64_MAX) return std::nullopt;
    ++digits;
  }
  // Fraction kept as numerator/denominator so "1.5K" is exact.
  unsigned __int128 frac = 0, denom = 1;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && isdigit(static_cast<unsigned char>(s[i]))) {
      if (denom < 1000000000000000000ULL) {
        frac = frac * 10 + (s[i] - '0');
        denom *= 10;
      }
      ++i;
      ++digits;
    }
  }
  if (digits == 0) return std::nullopt;
  unsigned shift = 0;
  if (i < s.size()) {
    switch (toupper(static_cast<unsigned char>(s[i]))) {
      case 'K': shift = 10; ++i; break;
      case 'M': shift = 20; ++i; break;
      case 'G': shift = 30; ++i; break;
      case 'T': shift = 40; ++i; break;
      default: break;
    }
  }
  if (i < s.size() && toupper(static_cast<unsigned char>(s[i])) == 'B') ++i;
  if (i != s.size()) return std::nullopt;
  unsigned __int128 bytes = (whole << shift) + ((frac << shift) / denom);
  if (bytes > UINT64_MAX) return std::nullopt;
  return static_cast<uint64_t>(bytes);
}

std::optional<bool> parse_bool(std::string_view text) {
  std::string_view s = trim(text);
  for (auto yes : {"1", "yes", "y", "true", "on"})
    if (iequals(s, yes)) return true;
  for (auto no : {"0", "no", "n", "false", "off"})
    if (iequals(s, no)) return false;
  return std::nullopt;
}

std::optional<uint64_t> parse_uint(std::string_view text) {
  std::string_view s = trim(text);
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  if (s.empty()) return std::nullopt;
  unsigned __int128 v = 0;
  for (char c : s) {
    int d;
    if (isdigit(static_cast<unsigned char>(c))) d = c - '0';
    else if (base == 16 && isxdigit(static_cast<unsigned char>(c))) d = tolower(c) - 'a' + 10;
    else return std::nullopt;
    v = v * base + d;
    if (v > UINT64_MAX) return std::nullopt;
  }
  return static_cast<uint64_t>(v);
}

const char *format_size(uint64_t bytes, char *buf, size_t cap) {
  static const char units[] = {'T', 'G', 'M', 'K'};
  for (int i = 0; i < 4; ++i) {
    unsigned shift = 40 - 10 * i;
    uint64_t unit = uint64_t{1} << shift;
    if (bytes >= unit && bytes % unit == 0) {
      snprintf(buf, cap, "%llu%c", static_cast<unsigned long long>(bytes >> shift), units[i]);
      return buf;
    }
  }
  snprintf(buf, cap, "%llu", static_cast<unsigned long long>(bytes));
  return buf;
}

}  // namespace hoshmem
