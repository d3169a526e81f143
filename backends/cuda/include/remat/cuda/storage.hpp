#pragma once

/// \file
/// Where the CUDA executors keep values, gradients and parameter gradients.
/// Host-only C++.

#include <remat/config.hpp>

#include <cstdint>

namespace remat::cuda {

enum class storage : std::uint8_t {
  arena,  ///< one allocation laid out ahead by the core (sizes known: the default)
  pool,   ///< cudaMallocAsync / cudaFreeAsync from the executor's own pool, per buffer, in stream order
};

}  // namespace remat::cuda
