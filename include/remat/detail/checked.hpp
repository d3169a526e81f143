#pragma once

#include <cstdint>
#include <limits>
#include <optional>

namespace remat::detail {

/// a + b, or nothing when the sum does not fit 64 bits.
inline std::optional<std::uint64_t> checked_add(std::uint64_t a, std::uint64_t b) noexcept {
  if (a > std::numeric_limits<std::uint64_t>::max() - b) return std::nullopt;
  return a + b;
}

/// a * b, or nothing when the product does not fit 64 bits.
inline std::optional<std::uint64_t> checked_mul(std::uint64_t a, std::uint64_t b) noexcept {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) return std::nullopt;
  return a * b;
}

}  // namespace remat::detail
