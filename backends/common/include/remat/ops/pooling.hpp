#pragma once

/// \file
/// Pooling as torch defines it: the geometry both runtimes' kernels take, and
/// the windows, which input elements each output element of an average,
/// adaptive average or max pool covers and which one a max pool picks. Every
/// function is constexpr and allocation-free so that the CUDA backend's
/// kernels (compiled with --expt-relaxed-constexpr) run the very same
/// arithmetic as the CPU kernels and pick the same argmax.

#include <remat/config.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>

namespace remat::ops {

/// A pooling window over x [n, c, h, w] giving y [n, c, oh, ow]; oh and ow
/// follow torch's rule (ceil_mode included) and are given, not derived.
struct pool_geometry {
  std::int64_t n = 1, c = 1, h = 1, w = 1, oh = 1, ow = 1;
  std::int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  bool count_include_pad = true;  ///< avg_pool only
};

/// One output element's window along one axis: the input range [begin, end)
/// it covers, clipped to the input, and `padded`, its extent with the padding
/// inside the padded input (torch's count_include_pad divisor).
struct window {
  std::int64_t begin = 0, end = 0, padded = 0;
};

/// Average pooling's window of output index o along an axis of `size`
/// elements: starts at o·stride − pad, spans `kernel`, never beyond size + pad.
constexpr window avg_window(std::int64_t o, std::int64_t size, std::int64_t kernel, std::int64_t stride,
                            std::int64_t pad) noexcept {
  const std::int64_t start = o * stride - pad;
  const std::int64_t stop = std::min(start + kernel, size + pad);
  return {std::max<std::int64_t>(start, 0), std::min(stop, size), stop - start};
}

/// torch.nn.AdaptiveAvgPool2d's window of output index o: [⌊o·size/out⌋,
/// ⌈(o+1)·size/out⌉).
constexpr window adaptive_window(std::int64_t o, std::int64_t size, std::int64_t out) noexcept {
  const std::int64_t begin = o * size / out;
  const std::int64_t end = ((o + 1) * size + out - 1) / out;
  return {begin, end, end - begin};
}

/// The divisor of an average-pooling window pair.
constexpr std::int64_t avg_divisor(const pool_geometry& g, const window& wy, const window& wx) noexcept {
  return g.count_include_pad ? wy.padded * wx.padded : (wy.end - wy.begin) * (wx.end - wx.begin);
}

/// The offset in `plane` (h × w) of the maximum of max pooling's window at
/// output (oy, ox): the first maximum in row-major window order, padding never
/// winning; −1 when the window holds no input element. Geometry is
/// pool_geometry, or any type with its extents as fields in a narrower
/// signed index type (the CUDA runtime's 32-bit tiles), which the arithmetic
/// then uses.
template <class Geometry, class T>
constexpr auto argmax_in_window(const Geometry& g, const T* plane, decltype(Geometry::h) oy,
                                decltype(Geometry::h) ox) noexcept -> decltype(Geometry::h) {
  using index = decltype(Geometry::h);
  index best = -1;
  T value = -std::numeric_limits<T>::infinity();
  for (index ki = 0; ki < g.kh; ++ki) {
    const index iy = oy * g.sh - g.ph + ki * g.dh;
    if (iy < 0 || iy >= g.h) continue;
    for (index kj = 0; kj < g.kw; ++kj) {
      const index ix = ox * g.sw - g.pw + kj * g.dw;
      if (ix < 0 || ix >= g.w) continue;
      const T v = plane[iy * g.w + ix];
      if (best < 0 || v > value) {
        best = iy * g.w + ix;
        value = v;
      }
    }
  }
  return best;
}

}  // namespace remat::ops
