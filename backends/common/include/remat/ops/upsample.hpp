#pragma once

/// \file
/// Bilinear upsampling as torch.nn.functional.interpolate(mode="bilinear")
/// defines it: the geometry both runtimes' kernels take and the two source
/// taps of each output row or column. constexpr and allocation-free, so the
/// CUDA kernels run the very same arithmetic as the CPU kernels.

#include <remat/config.hpp>

#include <cstdint>

namespace remat::ops {

/// x [n, c, h, w] resampled to y [n, c, oh, ow].
struct upsample_geometry {
  std::int64_t n = 1, c = 1, h = 1, w = 1, oh = 1, ow = 1;
  bool align_corners = false;
};

/// Output index o's two source indices along an axis and the weight of the
/// second: y = (1 − weight)·x[first] + weight·x[second].
template <class T>
struct bilinear_taps {
  std::int64_t first = 0, second = 0;
  T weight = 0;
};

/// torch's area_pixel_compute_source_index, with the scale computed in T as
/// torch computes it for an explicit output size.
template <class T>
constexpr bilinear_taps<T> bilinear_source(std::int64_t o, std::int64_t in, std::int64_t out,
                                           bool align_corners) noexcept {
  T source = 0;
  if (align_corners) {
    const T scale = out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0);
    source = scale * static_cast<T>(o);
  } else {
    const T scale = static_cast<T>(in) / static_cast<T>(out);
    source = scale * (static_cast<T>(o) + T(0.5)) - T(0.5);
    if (source < T(0)) source = T(0);
  }
  bilinear_taps<T> t;
  t.first = static_cast<std::int64_t>(source);
  t.second = t.first + (t.first < in - 1 ? 1 : 0);
  t.weight = source - static_cast<T>(t.first);
  return t;
}

}  // namespace remat::ops
