#pragma once

/// \file
/// Dropout's mask: its key and the decision for each element, one function
/// that the CPU and CUDA kernels both call, so their masks are identical.

#include <remat/config.hpp>

#include <cstdint>

#include "random.hpp"

namespace remat::ops {

/// The dropout mask's key: the mask of element e is random_bits(seed, step,
/// node, e) (random.hpp), kept when its unit_interval value is at least p.
struct dropout_key {
  std::uint64_t seed = 0, step = 0, node = 0;
};

/// Whether dropout with probability p keeps `element` of the stream (seed,
/// step, node): its unit_interval value is at least p.
constexpr bool keeps(double p, std::uint64_t seed, std::uint64_t step, std::uint64_t node,
                     std::uint64_t element) noexcept {
  return unit_interval(random_bits(seed, step, node, element)) >= p;
}

}  // namespace remat::ops
