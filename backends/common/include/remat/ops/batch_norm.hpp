#pragma once

/// \file
/// The geometry of a batch norm, as both runtimes' kernels take it.

#include <remat/config.hpp>

#include <cstdint>

namespace remat::ops {

/// Batch norm over channel dim 1 of x [n, c, spatial...] with `spatial`
/// elements per (sample, channel).
struct batch_norm_geometry {
  std::int64_t n = 1, c = 1, spatial = 1;
};

}  // namespace remat::ops
