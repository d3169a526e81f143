#pragma once

/// \file
/// Byte sizes for people: "1.50 MiB" out, "3GiB" / "1.5 GB" / "4096" in.

#include <remat/config.hpp>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace remat {

/// Binary units, three significant decimals: 512 B, 1.50 KiB, 3.07 GiB.
inline std::string format_bytes(std::uint64_t bytes) {
  constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 6) {
    value /= 1024.0;
    ++unit;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, value >= 100 ? "%.1f %s" : "%.2f %s", value, units[unit]);
  return buffer;
}

/// Parses a byte count: a number (fractions allowed) with an optional unit,
/// B, KB/MB/GB/TB (powers of 1000) or KiB/MiB/GiB/TiB (powers of 1024); K/M/G/T
/// alone mean the binary units. Case-insensitive. Nothing on error or overflow.
inline std::optional<std::uint64_t> parse_bytes(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  std::size_t i = 0;
  bool digits = false;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    digits = digits || text[i] != '.';
    ++i;
  }
  if (!digits) return std::nullopt;
  const std::string number(text.substr(0, i));
  std::string unit;
  for (char c : text.substr(i))
    if (!std::isspace(static_cast<unsigned char>(c))) unit += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double scale = 1;
  if (unit.empty() || unit == "b") scale = 1;
  else if (unit == "k" || unit == "kib") scale = 1024.0;
  else if (unit == "m" || unit == "mib") scale = 1024.0 * 1024;
  else if (unit == "g" || unit == "gib") scale = 1024.0 * 1024 * 1024;
  else if (unit == "t" || unit == "tib") scale = 1024.0 * 1024 * 1024 * 1024;
  else if (unit == "kb") scale = 1e3;
  else if (unit == "mb") scale = 1e6;
  else if (unit == "gb") scale = 1e9;
  else if (unit == "tb") scale = 1e12;
  else return std::nullopt;
  if (unit.empty() && number.find('.') == std::string::npos) {
    // Whole numbers of bytes are parsed exactly: doubles cannot hold 2^64 - 1.
    std::uint64_t exact = 0;
    for (char c : number) {
      const std::uint64_t digit = static_cast<std::uint64_t>(c - '0');
      if (exact > (UINT64_MAX - digit) / 10) return std::nullopt;
      exact = exact * 10 + digit;
    }
    return exact;
  }
  char* end = nullptr;
  const double value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(value)) return std::nullopt;
  const double bytes = std::round(value * scale);
  if (bytes < 0 || bytes >= 18446744073709551616.0) return std::nullopt;
  return static_cast<std::uint64_t>(bytes);
}

}  // namespace remat
