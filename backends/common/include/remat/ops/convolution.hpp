#pragma once

/// \file
/// The geometry of a 2-D convolution, as both runtimes' kernels take it.

#include <remat/config.hpp>

#include <cstdint>

namespace remat::ops {

/// A 2-D convolution as torch.nn.Conv2d runs it: x [n, c, h, w], weight
/// [k, c/groups, kh, kw], bias [k], y [n, k, oh, ow].
struct conv2d_geometry {
  std::int64_t n = 1, c = 1, h = 1, w = 1;  ///< input
  std::int64_t k = 1;                        ///< output channels
  std::int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  std::int64_t groups = 1;
  /// Output height and width: ⌊(h + 2p − d(k − 1) − 1) / s⌋ + 1.
  std::int64_t oh() const noexcept { return (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1; }
  std::int64_t ow() const noexcept { return (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1; }
};

}  // namespace remat::ops
