#pragma once

// Private to backends/cuda: what one GPU thread computes for one element,
// written once for both compilers. nvcc compiles these bodies into the
// kernels of kernels.cu; g++ compiles them into tests/cuda, which runs them
// over every element on the host and compares them with the CPU runtime's
// kernels, so the index arithmetic of every custom kernel is checked without
// a device. The pooling windows, argmax rule and dropout decision are the
// constexpr functions the CPU kernels call too (remat/ops/pooling.hpp,
// dropout.hpp).
//
// Gradients are gathered, one input element per thread, never scattered with
// atomics: each input element sums its contributions in increasing output
// order, which is the order the CPU kernels add them in, so results are
// deterministic and, for pooling, bit-identical to the CPU's.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include <remat/ops/dropout.hpp>
#include <remat/ops/op.hpp>
#include <remat/ops/pooling.hpp>
#include <remat/ops/upsample.hpp>

#if defined(__CUDACC__)
#define REMAT_HOST_DEVICE __host__ __device__
#else
#define REMAT_HOST_DEVICE
#endif

namespace remat::cuda::elements {

using std::int64_t;

// Ceiling division for a possibly negative numerator and a positive divisor.
template <class I>
REMAT_HOST_DEVICE constexpr I ceil_div(I a, I b) noexcept {
  return a <= 0 ? -((-a) / b) : (a + b - 1) / b;
}

/// floor(n / d) for 0 ≤ n < 2^31 by a multiply-high, an add and a shift
/// (round-up magic numbers: m = ⌊2^32·(2^s − d)/d⌋ + 1, s = ⌈log2 d⌉), so
/// per-element channel arithmetic costs a few instructions, not a division.
struct fast_divider {
  std::uint32_t d = 1, magic = 1, shift = 0;
  explicit fast_divider(std::uint32_t divisor) noexcept : d(divisor) {  // divisor ≥ 1
    while ((std::uint64_t{1} << shift) < d) ++shift;
    magic = static_cast<std::uint32_t>(((std::uint64_t{1} << 32) * ((std::uint64_t{1} << shift) - d)) / d + 1);
  }
  REMAT_HOST_DEVICE std::uint32_t quotient(std::uint32_t n) const noexcept {
#ifdef __CUDA_ARCH__
    const std::uint32_t high = __umulhi(n, magic);
#else
    const auto high = static_cast<std::uint32_t>((static_cast<std::uint64_t>(n) * magic) >> 32);
#endif
    return (high + n) >> shift;
  }
  REMAT_HOST_DEVICE std::uint32_t remainder(std::uint32_t n) const noexcept { return n - quotient(n) * d; }
};

// ---- elementwise --------------------------------------------------------------

template <class T>
REMAT_HOST_DEVICE T relu(T x) noexcept {
  return x > T(0) ? x : T(0);
}
template <class T>
REMAT_HOST_DEVICE T relu_gradient(T y, T dy) noexcept {
  return y > T(0) ? dy : T(0);
}
template <class T>
REMAT_HOST_DEVICE T sigmoid(T x) noexcept {
  return static_cast<T>(1.0 / (1.0 + ::exp(-static_cast<double>(x))));
}
template <class T>
REMAT_HOST_DEVICE T sigmoid_gradient(T y, T dy) noexcept {
  return dy * y * (T(1) - y);
}

/// Dropout of element e, forward (value = x) or backward (value = dy): the
/// CPU kernels' mask (ops::keeps) and scale.
template <class T>
REMAT_HOST_DEVICE T dropout(double p, const ops::dropout_key& key, std::uint64_t e, T value) noexcept {
  const T scale = static_cast<T>(1.0 / (1.0 - p));
  return ops::keeps(p, key.seed, key.step, key.node, e) ? value * scale : T(0);
}

// ---- pooling (x, y, dx, dy: whole NCHW tensors; index: flat) ----------------------

template <class T>
REMAT_HOST_DEVICE T max_pool_forward(const ops::pool_geometry& g, const T* x, int64_t out) noexcept {
  const int64_t plane = out / (g.oh * g.ow), oy = out / g.ow % g.oh, ox = out % g.ow;
  const T* xp = x + plane * g.h * g.w;
  const int64_t at = ops::argmax_in_window(g, xp, oy, ox);
  return at < 0 ? -std::numeric_limits<T>::infinity() : xp[at];
}

/// A pooling geometry's plane extents in index type I: int64_t in general,
/// int where a plane fits (the tiled max-pool backward), so that index
/// arithmetic stays 32-bit.
template <class I>
struct pool_dims {
  I h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
  REMAT_HOST_DEVICE explicit pool_dims(const ops::pool_geometry& g) noexcept
      : h(I(g.h)), w(I(g.w)), oh(I(g.oh)), ow(I(g.ow)), kh(I(g.kh)), kw(I(g.kw)), sh(I(g.sh)), sw(I(g.sw)),
        ph(I(g.ph)), pw(I(g.pw)), dh(I(g.dh)), dw(I(g.dw)) {}
};

/// Windows [first, first + count) along one axis.
template <class I>
struct window_span {
  I first = 0, count = 0;
};

/// The windows along one axis of `out` whose taps (kernel k, stride s,
/// padding p, dilation d) can reach an input in [lo, hi].
template <class I>
REMAT_HOST_DEVICE window_span<I> windows_reaching(I lo, I hi, I k, I s, I p, I d, I out) noexcept {
  I first = ceil_div(lo + p - (k - 1) * d, s), last = (hi + p) / s;
  first = first < 0 ? 0 : first;
  last = last < out ? last : out - 1;
  return {first, last < first ? I(0) : last - first + 1};
}

/// dx at (iy, ix) of a plane whose dy is `dyp`: dy of every window of ry ×
/// rx (the windows reaching it, windows_reaching) whose argmax it is, in
/// increasing output order. `argmax(oy, ox)`: a window's argmax in the plane.
template <class I, class T, class Argmax>
REMAT_HOST_DEVICE T max_pool_gather_at(const pool_dims<I>& g, const T* dyp, I iy, I ix, window_span<I> ry,
                                       window_span<I> rx, Argmax argmax) noexcept {
  T sum = T(0);
  for (I oy = ry.first; oy < ry.first + ry.count; ++oy) {
    // Without dilation every window of the span has a tap on the input; with it, some step over it.
    if (g.dh != 1) {
      const I ty = iy + g.ph - oy * g.sh;
      if (ty % g.dh != 0 || ty / g.dh >= g.kh) continue;
    }
    for (I ox = rx.first; ox < rx.first + rx.count; ++ox) {
      if (g.dw != 1) {
        const I tx = ix + g.pw - ox * g.sw;
        if (tx % g.dw != 0 || tx / g.dw >= g.kw) continue;
      }
      if (argmax(oy, ox) == iy * g.w + ix) sum += dyp[oy * g.ow + ox];
    }
  }
  return sum;
}

/// dx of input element `in` (flat), every argmax recomputed from x.
template <class T>
REMAT_HOST_DEVICE T max_pool_backward(const ops::pool_geometry& geometry, const T* x, const T* dy,
                                      int64_t in) noexcept {
  const pool_dims<int64_t> g(geometry);
  const int64_t plane = in / (g.h * g.w), iy = in / g.w % g.h, ix = in % g.w;
  const T* xp = x + plane * g.h * g.w;
  return max_pool_gather_at(g, dy + plane * g.oh * g.ow, iy, ix,
                            windows_reaching(iy, iy, g.kh, g.sh, g.ph, g.dh, g.oh),
                            windows_reaching(ix, ix, g.kw, g.sw, g.pw, g.dw, g.ow),
                            [&](int64_t oy, int64_t ox) { return ops::argmax_in_window(g, xp, oy, ox); });
}

/// Max-pool backward by input tiles of one plane, a tile per block. The
/// block finds, once each, the argmax of every window that reaches its tile
/// and the window spans of its rows and columns (into shared memory); then
/// each input element gathers as max_pool_backward does, looking them up.
/// Same windows, same order, same bits, in 32-bit index arithmetic.
struct pool_tiles {
  int th = 1, tw = 1, rows = 1, cols = 1;  // tile extent; tiles per plane down and across
  int wy = 0, wx = 0;                      // most windows a tile's rows, columns can reach
  /// Whether the tiled kernel takes g: planes and shared memory small enough.
  static bool fits(const ops::pool_geometry& g) noexcept {
    if (g.h <= 0 || g.w <= 0 || g.h * g.w >= (int64_t{1} << 30) || g.oh * g.ow >= (int64_t{1} << 30)) return false;
    if (g.kh * g.dh >= 4096 || g.kw * g.dw >= 4096) return false;
    return pool_tiles(g).shared_bytes() <= 48 * 1024;
  }
  explicit pool_tiles(const ops::pool_geometry& g) noexcept {  // g.h, g.w > 0
    tw = static_cast<int>(g.w < 32 ? g.w : 32);
    th = static_cast<int>(g.h < 512 / tw ? g.h : 512 / tw);
    rows = static_cast<int>((g.h + th - 1) / th), cols = static_cast<int>((g.w + tw - 1) / tw);
    // windows_reaching's count over th rows: at most ⌊(th − 1 + (kh − 1)·dh)/sh⌋ + 1.
    wy = static_cast<int>((th - 1 + (g.kh - 1) * g.dh) / g.sh + 1);
    wx = static_cast<int>((tw - 1 + (g.kw - 1) * g.dw) / g.sw + 1);
  }
  REMAT_HOST_DEVICE int per_plane() const noexcept { return rows * cols; }
  /// The argmaxes, then the window spans of th rows and tw columns.
  std::size_t shared_bytes() const noexcept {
    return static_cast<std::size_t>(wy) * static_cast<std::size_t>(wx) * sizeof(int) +
           static_cast<std::size_t>(th + tw) * sizeof(window_span<int>);
  }
};

/// One tile: inputs [y0, y1) × [x0, x1) of `plane`, reached by windows ry × rx.
struct pool_tile {
  int64_t plane = 0;
  int y0 = 0, y1 = 0, x0 = 0, x1 = 0;
  window_span<int> ry, rx;
  REMAT_HOST_DEVICE pool_tile(const pool_dims<int>& g, const pool_tiles& t, int64_t block) noexcept
      : plane(block / t.per_plane()) {
    const int tile = static_cast<int>(block % t.per_plane());
    y0 = tile / t.cols * t.th, x0 = tile % t.cols * t.tw;
    y1 = y0 + t.th < g.h ? y0 + t.th : g.h, x1 = x0 + t.tw < g.w ? x0 + t.tw : g.w;
    ry = windows_reaching(y0, y1 - 1, g.kh, g.sh, g.ph, g.dh, g.oh);
    rx = windows_reaching(x0, x1 - 1, g.kw, g.sw, g.pw, g.dw, g.ow);
  }
  REMAT_HOST_DEVICE int windows() const noexcept { return ry.count * rx.count; }
  REMAT_HOST_DEVICE int height() const noexcept { return y1 - y0; }
  REMAT_HOST_DEVICE int width() const noexcept { return x1 - x0; }
  /// The argmax of window k of the tile (row-major over ry × rx), in the plane of x.
  template <class T>
  REMAT_HOST_DEVICE int argmax(const pool_dims<int>& g, const T* x, int k) const noexcept {
    return ops::argmax_in_window(g, x + plane * g.h * g.w, ry.first + k / rx.count, rx.first + k % rx.count);
  }
  /// The windows reaching the tile's row r, column c.
  REMAT_HOST_DEVICE window_span<int> row_span(const pool_dims<int>& g, int r) const noexcept {
    return windows_reaching(y0 + r, y0 + r, g.kh, g.sh, g.ph, g.dh, g.oh);
  }
  REMAT_HOST_DEVICE window_span<int> column_span(const pool_dims<int>& g, int c) const noexcept {
    return windows_reaching(x0 + c, x0 + c, g.kw, g.sw, g.pw, g.dw, g.ow);
  }
  /// The flat index of the tile's input at row r, column c.
  REMAT_HOST_DEVICE int64_t input(const pool_dims<int>& g, int r, int c) const noexcept {
    return (plane * g.h + y0 + r) * g.w + x0 + c;
  }
  /// dx of the tile's input at row r, column c, from the tile's argmaxes and spans.
  template <class T>
  REMAT_HOST_DEVICE T gather(const pool_dims<int>& g, const T* dy, int r, int c, window_span<int> row,
                             window_span<int> column, const int* argmaxes) const noexcept {
    return max_pool_gather_at(g, dy + plane * g.oh * g.ow, y0 + r, x0 + c, row, column, [&](int oy, int ox) {
      return argmaxes[(oy - ry.first) * rx.count + (ox - rx.first)];
    });
  }
};

template <class T>
REMAT_HOST_DEVICE T avg_pool_forward(const ops::pool_geometry& g, const T* x, int64_t out) noexcept {
  const int64_t plane = out / (g.oh * g.ow), oy = out / g.ow % g.oh, ox = out % g.ow;
  const T* xp = x + plane * g.h * g.w;
  const ops::window wy = ops::avg_window(oy, g.h, g.kh, g.sh, g.ph);
  const ops::window wx = ops::avg_window(ox, g.w, g.kw, g.sw, g.pw);
  if (wy.begin >= wy.end || wx.begin >= wx.end) return T(0);
  double sum = 0;
  for (int64_t iy = wy.begin; iy < wy.end; ++iy)
    for (int64_t ix = wx.begin; ix < wx.end; ++ix) sum += static_cast<double>(xp[iy * g.w + ix]);
  return static_cast<T>(sum / static_cast<double>(ops::avg_divisor(g, wy, wx)));
}

template <class T>
REMAT_HOST_DEVICE T avg_pool_backward(const ops::pool_geometry& g, const T* dy, int64_t in) noexcept {
  const int64_t plane = in / (g.h * g.w), iy = in / g.w % g.h, ix = in % g.w;
  const T* dyp = dy + plane * g.oh * g.ow;
  // Windows starting at o·s − p with o·s − p ≤ i < o·s − p + k.
  const int64_t oy_lo = ceil_div(iy + g.ph - g.kh + 1, g.sh), oy_hi = (iy + g.ph) / g.sh;
  const int64_t ox_lo = ceil_div(ix + g.pw - g.kw + 1, g.sw), ox_hi = (ix + g.pw) / g.sw;
  T sum = T(0);
  for (int64_t oy = oy_lo < 0 ? 0 : oy_lo; oy <= oy_hi && oy < g.oh; ++oy) {
    const ops::window wy = ops::avg_window(oy, g.h, g.kh, g.sh, g.ph);
    if (iy < wy.begin || iy >= wy.end) continue;
    for (int64_t ox = ox_lo < 0 ? 0 : ox_lo; ox <= ox_hi && ox < g.ow; ++ox) {
      const ops::window wx = ops::avg_window(ox, g.w, g.kw, g.sw, g.pw);
      if (ix < wx.begin || ix >= wx.end) continue;
      sum += static_cast<T>(static_cast<double>(dyp[oy * g.ow + ox]) /
                            static_cast<double>(ops::avg_divisor(g, wy, wx)));
    }
  }
  return sum;
}

template <class T>
REMAT_HOST_DEVICE T adaptive_avg_pool_forward(const ops::pool_geometry& g, const T* x, int64_t out) noexcept {
  const int64_t plane = out / (g.oh * g.ow), oy = out / g.ow % g.oh, ox = out % g.ow;
  const T* xp = x + plane * g.h * g.w;
  const ops::window wy = ops::adaptive_window(oy, g.h, g.oh), wx = ops::adaptive_window(ox, g.w, g.ow);
  double sum = 0;
  for (int64_t iy = wy.begin; iy < wy.end; ++iy)
    for (int64_t ix = wx.begin; ix < wx.end; ++ix) sum += static_cast<double>(xp[iy * g.w + ix]);
  return static_cast<T>(sum / static_cast<double>(wy.padded * wx.padded));
}

template <class T>
REMAT_HOST_DEVICE T adaptive_avg_pool_backward(const ops::pool_geometry& g, const T* dy, int64_t in) noexcept {
  const int64_t plane = in / (g.h * g.w), iy = in / g.w % g.h, ix = in % g.w;
  const T* dyp = dy + plane * g.oh * g.ow;
  // Window o covers i when ⌊o·h/oh⌋ ≤ i < ⌈(o+1)·h/oh⌉: o from ⌊i·oh/h⌋ to ⌈(i+1)·oh/h⌉ − 1.
  const int64_t oy_lo = iy * g.oh / g.h, oy_hi = ceil_div((iy + 1) * g.oh, g.h) - 1;
  const int64_t ox_lo = ix * g.ow / g.w, ox_hi = ceil_div((ix + 1) * g.ow, g.w) - 1;
  T sum = T(0);
  for (int64_t oy = oy_lo; oy <= oy_hi && oy < g.oh; ++oy) {
    const ops::window wy = ops::adaptive_window(oy, g.h, g.oh);
    if (iy < wy.begin || iy >= wy.end) continue;
    for (int64_t ox = ox_lo; ox <= ox_hi && ox < g.ow; ++ox) {
      const ops::window wx = ops::adaptive_window(ox, g.w, g.ow);
      if (ix < wx.begin || ix >= wx.end) continue;
      sum += static_cast<T>(static_cast<double>(dyp[oy * g.ow + ox]) / static_cast<double>(wy.padded * wx.padded));
    }
  }
  return sum;
}

// ---- bilinear upsampling ------------------------------------------------------------

template <class T>
REMAT_HOST_DEVICE T upsample_bilinear_forward(const ops::upsample_geometry& g, const T* x, int64_t out) noexcept {
  const int64_t plane = out / (g.oh * g.ow), oy = out / g.ow % g.oh, ox = out % g.ow;
  const auto ty = ops::bilinear_source<T>(oy, g.h, g.oh, g.align_corners);
  const auto tx = ops::bilinear_source<T>(ox, g.w, g.ow, g.align_corners);
  const T* p = x + plane * g.h * g.w;
  const T top = (1 - tx.weight) * p[ty.first * g.w + tx.first] + tx.weight * p[ty.first * g.w + tx.second];
  const T bottom = (1 - tx.weight) * p[ty.second * g.w + tx.first] + tx.weight * p[ty.second * g.w + tx.second];
  return (1 - ty.weight) * top + ty.weight * bottom;
}

/// The first output index along an axis whose first tap is at least `index`
/// (`out` when none is): the taps never decrease along the output.
template <class T>
REMAT_HOST_DEVICE int64_t first_output_from(int64_t index, int64_t in, int64_t out, bool align_corners) noexcept {
  int64_t lo = 0, hi = out;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (ops::bilinear_source<T>(mid, in, out, align_corners).first < index) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/// Input element `in`'s gradient: the outputs whose first tap is its index
/// or the one before, each tap pair added in the CPU kernel's order.
template <class T>
REMAT_HOST_DEVICE T upsample_bilinear_backward(const ops::upsample_geometry& g, const T* dy, int64_t in) noexcept {
  const int64_t plane = in / (g.h * g.w), iy = in / g.w % g.h, ix = in % g.w;
  const T* dyp = dy + plane * g.oh * g.ow;
  const int64_t oy_end = first_output_from<T>(iy + 1, g.h, g.oh, g.align_corners);
  const int64_t ox_begin = first_output_from<T>(ix - 1, g.w, g.ow, g.align_corners);
  const int64_t ox_end = first_output_from<T>(ix + 1, g.w, g.ow, g.align_corners);
  T sum = T(0);
  for (int64_t oy = first_output_from<T>(iy - 1, g.h, g.oh, g.align_corners); oy < oy_end; ++oy) {
    const auto ty = ops::bilinear_source<T>(oy, g.h, g.oh, g.align_corners);
    if (ty.first != iy && ty.second != iy) continue;
    for (int64_t ox = ox_begin; ox < ox_end; ++ox) {
      const auto tx = ops::bilinear_source<T>(ox, g.w, g.ow, g.align_corners);
      if (tx.first != ix && tx.second != ix) continue;
      const T d = dyp[oy * g.ow + ox];
      if (ty.first == iy && tx.first == ix) sum += (1 - ty.weight) * (1 - tx.weight) * d;
      if (ty.first == iy && tx.second == ix) sum += (1 - ty.weight) * tx.weight * d;
      if (ty.second == iy && tx.first == ix) sum += ty.weight * (1 - tx.weight) * d;
      if (ty.second == iy && tx.second == ix) sum += ty.weight * tx.weight * d;
    }
  }
  return sum;
}

// ---- concat and slice -------------------------------------------------------------

/// Where operand k of a concat along dim 1 sits in the output, as a strided
/// 2-D copy of `rows` rows of `width` elements: source pitch `width`,
/// destination pitch `pitch`, starting `offset` elements into the output.
struct concat_block {
  int64_t offset = 0, width = 0, pitch = 0, rows = 0;
};

template <class Channels>
constexpr concat_block concat_operand(int64_t outer, int64_t inner, const Channels& channels, std::size_t k) noexcept {
  int64_t before = 0, total = 0;
  for (std::size_t i = 0; i < channels.size(); ++i) {
    if (i < k) before += channels[i];
    total += channels[i];
  }
  return {before * inner, channels[k] * inner, total * inner, outer};
}

/// A slice's geometry in a fixed-size form a kernel can take by value.
struct slice_geometry {
  static constexpr int max_rank = 8;
  int rank = 0;
  int64_t in_stride[max_rank] = {};  ///< input strides
  int64_t begin[max_rank] = {};
  int64_t extent[max_rank] = {};     ///< output dimensions
};

/// The slice node `o` (ops::parse_op's in_dims, begin, end; rank ≤ max_rank).
inline slice_geometry slice_geometry_of(const ops::op_info& o) noexcept {
  slice_geometry s;
  s.rank = static_cast<int>(o.in_dims.size());
  int64_t stride = 1;
  for (int d = s.rank - 1; d >= 0; --d) {
    const auto k = static_cast<std::size_t>(d);
    s.in_stride[d] = stride;
    s.begin[d] = o.begin[k];
    s.extent[d] = o.end[k] - o.begin[k];
    stride *= o.in_dims[k];
  }
  return s;
}

/// The input offset of output element `out`.
REMAT_HOST_DEVICE inline int64_t slice_source(const slice_geometry& s, int64_t out) noexcept {
  int64_t offset = 0;
  for (int d = s.rank - 1; d >= 0; --d) {
    offset += (s.begin[d] + out % s.extent[d]) * s.in_stride[d];
    out /= s.extent[d];
  }
  return offset;
}

// ---- linear layers as column-major GEMMs --------------------------------------------

/// One cuBLAS GEMM, C = op(A) · op(B) with column-major m × n C, k the inner
/// extent, op = transpose where `transpose_*`, leading dimensions as stored.
struct gemm_shape {
  bool transpose_a = false, transpose_b = false;
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
};

// Row-major x [rows, in], W [out, in], y [rows, out] read column-major are
// xᵀ, Wᵀ and yᵀ. y = x·Wᵀ is yᵀ = op_T(Wᵀ) · xᵀ: A = W, B = x, C = y.
constexpr gemm_shape linear_output(int64_t rows, int64_t in, int64_t out) noexcept {
  return {true, false, out, rows, in, in, in, out};
}
// dW = dyᵀ·x is dWᵀ = xᵀ · op_T(dyᵀ): A = x, B = dy, C = dW.
constexpr gemm_shape linear_weight_gradient(int64_t rows, int64_t in, int64_t out) noexcept {
  return {false, true, in, out, rows, in, out, in};
}
// dx = dy·W is dxᵀ = Wᵀ · dyᵀ: A = W, B = dy, C = dx.
constexpr gemm_shape linear_input_gradient(int64_t rows, int64_t in, int64_t out) noexcept {
  return {false, false, in, rows, out, in, out, in};
}

// ---- batch norm (statistics per channel, in double) -------------------------------

/// The forward's output: (x − mean) · (inv_std · gamma) + beta, in double.
template <class T>
REMAT_HOST_DEVICE T batch_norm_output(T x, double mean, double inv_std, T gamma, T beta) noexcept {
  return static_cast<T>((static_cast<double>(x) - mean) * (inv_std * static_cast<double>(gamma)) +
                        static_cast<double>(beta));
}

/// dx from the recomputed statistics and the two sums over the channel.
template <class T>
REMAT_HOST_DEVICE T batch_norm_input_gradient(T x, T dy, double mean, double inv_std, T gamma, double count,
                                              double sum_dy, double sum_dy_xhat) noexcept {
  const double k = static_cast<double>(gamma) * inv_std / count;
  const double xhat = (static_cast<double>(x) - mean) * inv_std;
  return static_cast<T>(k * (count * static_cast<double>(dy) - sum_dy - xhat * sum_dy_xhat));
}

// ---- losses -----------------------------------------------------------------------

/// A softmax row's maximum and Σ exp(x − max), in double, in column order.
struct softmax_row {
  double top = 0, sum = 0;
};

/// The softmax statistics of one position's logits, `stride` apart (1 for a
/// row of N×K logits, H·W for a pixel of N×K×H×W logits).
template <class T>
REMAT_HOST_DEVICE softmax_row softmax_of(const T* row, int64_t classes, int64_t stride = 1) noexcept {
  softmax_row r;
  r.top = static_cast<double>(row[0]);
  for (int64_t j = 1; j < classes; ++j) {
    const double v = static_cast<double>(row[j * stride]);
    r.top = v > r.top ? v : r.top;
  }
  for (int64_t j = 0; j < classes; ++j) r.sum += ::exp(static_cast<double>(row[j * stride]) - r.top);
  return r;
}

/// −log softmax(row)[label].
template <class T>
REMAT_HOST_DEVICE double cross_entropy(const T* row, const softmax_row& r, std::int64_t label,
                                       int64_t stride = 1) noexcept {
  return ::log(r.sum) + r.top - static_cast<double>(row[label * stride]);
}

/// dlogits of one element: (softmax − onehot) · scale, scale = dloss / rows.
template <class T>
REMAT_HOST_DEVICE T cross_entropy_gradient(T logit, const softmax_row& r, bool is_label, double scale) noexcept {
  const double softmax = ::exp(static_cast<double>(logit) - r.top) / r.sum;
  return static_cast<T>((softmax - (is_label ? 1.0 : 0.0)) * scale);
}

}  // namespace remat::cuda::elements
