// lib/base: parsers for environment values. Pure functions (unit-tested in test/unit).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace hoshmem {

// A byte count as the OpenSHMEM spec writes it: a non-negative number, optionally with a
// fraction, followed by an optional scaling character K, M, G or T (powers of 1024, either case)
// and an optional 'B'. "512M", "1g", "1.5K", "4096". Anything else, or an overflow, is nullopt.
std::optional<uint64_t> parse_size(std::string_view text);

// 1/0, yes/no, true/false, on/off, y/n (any case). Anything else is nullopt.
std::optional<bool> parse_bool(std::string_view text);

// A non-negative integer (decimal, or hex with 0x). Anything else is nullopt.
std::optional<uint64_t> parse_uint(std::string_view text);

// Prints a byte count the short way: 1073741824 -> "1G", 1536 -> "1536".
const char *format_size(uint64_t bytes, char *buf, size_t cap);

}  // namespace hoshmem
