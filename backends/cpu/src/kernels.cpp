#include "remat/cpu/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "gemm.hpp"

namespace remat::cpu {

using ops::batch_norm_geometry;
using ops::conv2d_geometry;
using ops::dropout_key;
using ops::pool_geometry;
using ops::bilinear_source;
using ops::upsample_geometry;

namespace {

using std::int64_t;
using std::size_t;

size_t to_size(int64_t v) noexcept { return static_cast<size_t>(v); }

// out[ch] = Σ over images and positions of v [n, channels, spatial], in double.
template <class T>
void channel_sum(int64_t n, int64_t channels, int64_t spatial, const T* v, T* out) {
  for (int64_t ch = 0; ch < channels; ++ch) {
    double sum = 0;
    for (int64_t img = 0; img < n; ++img) {
      const T* p = v + (img * channels + ch) * spatial;
      for (int64_t s = 0; s < spatial; ++s) sum += static_cast<double>(p[s]);
    }
    out[ch] = static_cast<T>(sum);
  }
}

bool is_pointwise(const conv2d_geometry& g) noexcept {
  return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;
}

// col[(ci·kh + ki)·kw + kj][oy·ow + ox] = x[ci][oy·sh − ph + ki·dh][ox·sw − pw + kj·dw], 0 in the padding.
template <class T>
void im2col(const conv2d_geometry& g, int64_t channels, const T* x, T* col) {
  const int64_t oh = g.oh(), ow = g.ow();
  for (int64_t ci = 0; ci < channels; ++ci)
    for (int64_t ki = 0; ki < g.kh; ++ki)
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        const T* plane = x + ci * g.h * g.w;
        for (int64_t oy = 0; oy < oh; ++oy) {
          const int64_t iy = oy * g.sh - g.ph + ki * g.dh;
          if (iy < 0 || iy >= g.h) {
            std::fill(col, col + ow, T(0));
          } else {
            const T* line = plane + iy * g.w;
            for (int64_t ox = 0; ox < ow; ++ox) {
              const int64_t ix = ox * g.sw - g.pw + kj * g.dw;
              col[ox] = ix >= 0 && ix < g.w ? line[ix] : T(0);
            }
          }
          col += ow;
        }
      }
}

// The adjoint of im2col: x (zeroed first) accumulates every column entry.
template <class T>
void col2im(const conv2d_geometry& g, int64_t channels, const T* col, T* x) {
  const int64_t oh = g.oh(), ow = g.ow();
  std::fill(x, x + channels * g.h * g.w, T(0));
  for (int64_t ci = 0; ci < channels; ++ci)
    for (int64_t ki = 0; ki < g.kh; ++ki)
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        T* plane = x + ci * g.h * g.w;
        for (int64_t oy = 0; oy < oh; ++oy) {
          const int64_t iy = oy * g.sh - g.ph + ki * g.dh;
          if (iy >= 0 && iy < g.h) {
            T* line = plane + iy * g.w;
            for (int64_t ox = 0; ox < ow; ++ox) {
              const int64_t ix = ox * g.sw - g.pw + kj * g.dw;
              if (ix >= 0 && ix < g.w) line[ix] += col[ox];
            }
          }
          col += ow;
        }
      }
}

// The statistics batch_norm_forward normalizes with, computed once per call in
// a fixed order so that the backward's recomputation matches bit for bit.
struct channel_stats {
  double mean = 0, var = 0, inv_std = 0;
};

template <class T>
channel_stats stats_of(const batch_norm_geometry& g, const T* x, int64_t ch, double eps) {
  const int64_t count = g.n * g.spatial;
  double sum = 0;
  for (int64_t i = 0; i < g.n; ++i) {
    const T* p = x + (i * g.c + ch) * g.spatial;
    for (int64_t s = 0; s < g.spatial; ++s) sum += static_cast<double>(p[s]);
  }
  channel_stats st;
  st.mean = sum / static_cast<double>(count);
  double squares = 0;
  for (int64_t i = 0; i < g.n; ++i) {
    const T* p = x + (i * g.c + ch) * g.spatial;
    for (int64_t s = 0; s < g.spatial; ++s) {
      const double d = static_cast<double>(p[s]) - st.mean;
      squares += d * d;
    }
  }
  st.var = squares / static_cast<double>(count);
  st.inv_std = 1.0 / std::sqrt(st.var + eps);
  return st;
}

bool dropout_keeps(double p, const dropout_key& key, size_t element) noexcept {
  return ops::keeps(p, key.seed, key.step, key.node, element);
}

// Calls f(input offset, output offset) for every element of x[begin:end], in
// row-major output order (an odometer over the outer dimensions, runs along the
// innermost one).
template <class F>
void for_each_sliced(std::span<const int64_t> dims, std::span<const int64_t> begin, std::span<const int64_t> end,
                     F&& f) {
  const size_t rank = dims.size();
  if (rank == 0) return;
  std::vector<int64_t> stride(rank, 1), index(begin.begin(), begin.end());
  for (size_t d = rank - 1; d > 0; --d) stride[d - 1] = stride[d] * dims[d];
  const int64_t run = end[rank - 1] - begin[rank - 1];
  size_t out = 0;
  while (true) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d) offset += index[d] * stride[d];
    for (int64_t k = 0; k < run; ++k) f(to_size(offset + k), out++);
    size_t d = rank - 1;
    for (; d > 0; --d) {
      if (++index[d - 1] < end[d - 1]) break;
      index[d - 1] = begin[d - 1];
    }
    if (d == 0) return;
  }
}

}  // namespace

size_t conv2d_scratch(const conv2d_geometry& g) noexcept {
  if (is_pointwise(g)) return 0;
  return to_size(g.c / g.groups * g.kh * g.kw * g.oh() * g.ow());
}

template <class T>
void conv2d_forward(const conv2d_geometry& g, const T* x, const T* weight, const T* bias, T* y,
                    std::span<T> scratch) {
  const int64_t cg = g.c / g.groups, kg = g.k / g.groups, taps = cg * g.kh * g.kw;
  const int64_t ohw = g.oh() * g.ow();
  const bool pointwise = is_pointwise(g);
  for (int64_t img = 0; img < g.n; ++img)
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      const T* xg = x + (img * g.c + grp * cg) * g.h * g.w;
      const T* col = xg;
      if (!pointwise) {
        im2col(g, cg, xg, scratch.data());
        col = scratch.data();
      }
      T* yg = y + (img * g.k + grp * kg) * ohw;
      detail::gemm(false, false, to_size(kg), to_size(ohw), to_size(taps), weight + grp * kg * taps, to_size(taps),
                   col, to_size(ohw), yg, to_size(ohw), false);
      if (bias)
        for (int64_t o = 0; o < kg; ++o) {
          const T b = bias[grp * kg + o];
          for (int64_t s = 0; s < ohw; ++s) yg[o * ohw + s] += b;
        }
    }
}

template <class T>
void conv2d_backward(const conv2d_geometry& g, const T* x, const T* weight, const T* dy, T* dx, T* dweight,
                     T* dbias, std::span<T> scratch) {
  const int64_t cg = g.c / g.groups, kg = g.k / g.groups, taps = cg * g.kh * g.kw;
  const int64_t ohw = g.oh() * g.ow();
  const bool pointwise = is_pointwise(g);
  for (int64_t img = 0; img < g.n; ++img)
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      const T* dyg = dy + (img * g.k + grp * kg) * ohw;
      const T* wg = weight + grp * kg * taps;
      if (dweight) {
        const T* xg = x + (img * g.c + grp * cg) * g.h * g.w;
        const T* col = xg;
        if (!pointwise) {
          im2col(g, cg, xg, scratch.data());
          col = scratch.data();
        }
        // dW_g (+)= dy_g · colᵀ, images summed in order.
        detail::gemm(false, true, to_size(kg), to_size(taps), to_size(ohw), dyg, to_size(ohw), col, to_size(ohw),
                     dweight + grp * kg * taps, to_size(taps), img > 0);
      }
      if (!dx) continue;
      T* dxg = dx + (img * g.c + grp * cg) * g.h * g.w;
      if (pointwise) {
        detail::gemm(true, false, to_size(taps), to_size(ohw), to_size(kg), wg, to_size(taps), dyg, to_size(ohw), dxg,
                     to_size(ohw), false);
      } else {
        detail::gemm(true, false, to_size(taps), to_size(ohw), to_size(kg), wg, to_size(taps), dyg, to_size(ohw),
                     scratch.data(), to_size(ohw), false);
        col2im(g, cg, scratch.data(), dxg);
      }
    }
  if (dbias) channel_sum(g.n, g.k, ohw, dy, dbias);
}

// The roles swap: the op's input is the adjoint convolution's output gradient,
// its output that convolution's input.
template <class T>
void conv_transpose2d_forward(const conv2d_geometry& g, const T* x, const T* weight, const T* bias, T* y,
                              std::span<T> scratch) {
  conv2d_backward<T>(g, nullptr, weight, x, y, nullptr, nullptr, scratch);
  if (bias) {
    const int64_t hw = g.h * g.w;
    for (int64_t img = 0; img < g.n; ++img)
      for (int64_t ch = 0; ch < g.c; ++ch) {
        T* plane = y + (img * g.c + ch) * hw;
        for (int64_t s = 0; s < hw; ++s) plane[s] += bias[ch];
      }
  }
}

template <class T>
void conv_transpose2d_backward(const conv2d_geometry& g, const T* x, const T* weight, const T* dy, T* dx,
                               T* dweight, T* dbias, std::span<T> scratch) {
  if (dx) conv2d_forward<T>(g, dy, weight, nullptr, dx, scratch);
  if (dweight) conv2d_backward<T>(g, dy, weight, x, nullptr, dweight, nullptr, scratch);
  if (dbias) channel_sum(g.n, g.c, g.h * g.w, dy, dbias);
}

template <class T>
void linear_forward(int64_t n, int64_t in, int64_t out, const T* x, const T* weight, const T* bias, T* y) {
  detail::gemm(false, true, to_size(n), to_size(out), to_size(in), x, to_size(in), weight, to_size(in), y,
               to_size(out), false);
  if (bias)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t o = 0; o < out; ++o) y[i * out + o] += bias[o];
}

template <class T>
void linear_backward(int64_t n, int64_t in, int64_t out, const T* x, const T* weight, const T* dy, T* dx,
                     T* dweight, T* dbias) {
  if (dx)
    detail::gemm(false, false, to_size(n), to_size(in), to_size(out), dy, to_size(out), weight, to_size(in), dx,
                 to_size(in), false);
  detail::gemm(true, false, to_size(out), to_size(in), to_size(n), dy, to_size(out), x, to_size(in), dweight,
               to_size(in), false);
  if (dbias)
    for (int64_t o = 0; o < out; ++o) {
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(dy[i * out + o]);
      dbias[o] = static_cast<T>(sum);
    }
}

template <class T>
void batch_norm_forward(const batch_norm_geometry& g, const T* x, const T* gamma, const T* beta, double eps, T* y,
                        double* batch_mean, double* batch_var) {
  for (int64_t ch = 0; ch < g.c; ++ch) {
    const channel_stats st = stats_of(g, x, ch, eps);
    if (batch_mean) batch_mean[ch] = st.mean;
    if (batch_var) batch_var[ch] = st.var;
    const double scale = st.inv_std * static_cast<double>(gamma[ch]);
    const double shift = static_cast<double>(beta[ch]);
    for (int64_t i = 0; i < g.n; ++i) {
      const int64_t at = (i * g.c + ch) * g.spatial;
      for (int64_t s = 0; s < g.spatial; ++s)
        y[at + s] = static_cast<T>((static_cast<double>(x[at + s]) - st.mean) * scale + shift);
    }
  }
}

template <class T>
void batch_norm_update_running(int64_t c, int64_t count, const double* batch_mean, const double* batch_var,
                               double momentum, T* running_mean, T* running_var) {
  const double unbias = count > 1 ? static_cast<double>(count) / static_cast<double>(count - 1) : 1.0;
  for (int64_t ch = 0; ch < c; ++ch) {
    running_mean[ch] =
        static_cast<T>((1 - momentum) * static_cast<double>(running_mean[ch]) + momentum * batch_mean[ch]);
    running_var[ch] =
        static_cast<T>((1 - momentum) * static_cast<double>(running_var[ch]) + momentum * batch_var[ch] * unbias);
  }
}

template <class T>
void batch_norm_backward(const batch_norm_geometry& g, const T* x, const T* gamma, double eps, const T* dy, T* dx,
                         T* dgamma, T* dbeta) {
  const double count = static_cast<double>(g.n * g.spatial);
  for (int64_t ch = 0; ch < g.c; ++ch) {
    const channel_stats st = stats_of(g, x, ch, eps);
    double sum_dy = 0, sum_dy_xhat = 0;
    for (int64_t i = 0; i < g.n; ++i) {
      const int64_t at = (i * g.c + ch) * g.spatial;
      for (int64_t s = 0; s < g.spatial; ++s) {
        const double d = static_cast<double>(dy[at + s]);
        sum_dy += d;
        sum_dy_xhat += d * (static_cast<double>(x[at + s]) - st.mean) * st.inv_std;
      }
    }
    dgamma[ch] = static_cast<T>(sum_dy_xhat);
    dbeta[ch] = static_cast<T>(sum_dy);
    if (!dx) continue;
    const double k = static_cast<double>(gamma[ch]) * st.inv_std / count;
    for (int64_t i = 0; i < g.n; ++i) {
      const int64_t at = (i * g.c + ch) * g.spatial;
      for (int64_t s = 0; s < g.spatial; ++s) {
        const double xhat = (static_cast<double>(x[at + s]) - st.mean) * st.inv_std;
        dx[at + s] = static_cast<T>(k * (count * static_cast<double>(dy[at + s]) - sum_dy - xhat * sum_dy_xhat));
      }
    }
  }
}

template <class T>
void relu_forward(size_t count, const T* x, T* y) {
  for (size_t i = 0; i < count; ++i) y[i] = x[i] > T(0) ? x[i] : T(0);
}

template <class T>
void relu_backward(size_t count, const T* y, const T* dy, T* dx) {
  for (size_t i = 0; i < count; ++i) dx[i] = y[i] > T(0) ? dy[i] : T(0);
}

template <class T>
void sigmoid_forward(size_t count, const T* x, T* y) {
  for (size_t i = 0; i < count; ++i) y[i] = static_cast<T>(1.0 / (1.0 + std::exp(-static_cast<double>(x[i]))));
}

template <class T>
void sigmoid_backward(size_t count, const T* y, const T* dy, T* dx) {
  for (size_t i = 0; i < count; ++i) dx[i] = dy[i] * y[i] * (T(1) - y[i]);
}

template <class T>
void max_pool_forward(const pool_geometry& g, const T* x, T* y) {
  for (int64_t plane = 0; plane < g.n * g.c; ++plane) {
    const T* xp = x + plane * g.h * g.w;
    T* yp = y + plane * g.oh * g.ow;
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        const int64_t at = ops::argmax_in_window(g, xp, oy, ox);
        yp[oy * g.ow + ox] = at < 0 ? -std::numeric_limits<T>::infinity() : xp[at];
      }
  }
}

template <class T>
void max_pool_backward(const pool_geometry& g, const T* x, const T* dy, T* dx) {
  std::fill(dx, dx + g.n * g.c * g.h * g.w, T(0));
  for (int64_t plane = 0; plane < g.n * g.c; ++plane) {
    const T* xp = x + plane * g.h * g.w;
    const T* dyp = dy + plane * g.oh * g.ow;
    T* dxp = dx + plane * g.h * g.w;
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        const int64_t at = ops::argmax_in_window(g, xp, oy, ox);
        if (at >= 0) dxp[at] += dyp[oy * g.ow + ox];
      }
  }
}

template <class T>
void avg_pool_forward(const pool_geometry& g, const T* x, T* y) {
  for (int64_t plane = 0; plane < g.n * g.c; ++plane) {
    const T* xp = x + plane * g.h * g.w;
    T* yp = y + plane * g.oh * g.ow;
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      const ops::window wy = ops::avg_window(oy, g.h, g.kh, g.sh, g.ph);
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        const ops::window wx = ops::avg_window(ox, g.w, g.kw, g.sw, g.pw);
        if (wy.begin >= wy.end || wx.begin >= wx.end) {
          yp[oy * g.ow + ox] = T(0);
          continue;
        }
        double sum = 0;
        for (int64_t iy = wy.begin; iy < wy.end; ++iy)
          for (int64_t ix = wx.begin; ix < wx.end; ++ix) sum += static_cast<double>(xp[iy * g.w + ix]);
        const int64_t divisor = ops::avg_divisor(g, wy, wx);
        yp[oy * g.ow + ox] = static_cast<T>(sum / static_cast<double>(divisor));
      }
    }
  }
}

template <class T>
void avg_pool_backward(const pool_geometry& g, const T* dy, T* dx) {
  std::fill(dx, dx + g.n * g.c * g.h * g.w, T(0));
  for (int64_t plane = 0; plane < g.n * g.c; ++plane) {
    const T* dyp = dy + plane * g.oh * g.ow;
    T* dxp = dx + plane * g.h * g.w;
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      const ops::window wy = ops::avg_window(oy, g.h, g.kh, g.sh, g.ph);
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        const ops::window wx = ops::avg_window(ox, g.w, g.kw, g.sw, g.pw);
        if (wy.begin >= wy.end || wx.begin >= wx.end) continue;
        const int64_t divisor = ops::avg_divisor(g, wy, wx);
        const T share = static_cast<T>(static_cast<double>(dyp[oy * g.ow + ox]) / static_cast<double>(divisor));
        for (int64_t iy = wy.begin; iy < wy.end; ++iy)
          for (int64_t ix = wx.begin; ix < wx.end; ++ix) dxp[iy * g.w + ix] += share;
      }
    }
  }
}

template <class T>
void adaptive_avg_pool_forward(const pool_geometry& g, const T* x, T* y) {
  for (int64_t plane = 0; plane < g.n * g.c; ++plane) {
    const T* xp = x + plane * g.h * g.w;
    T* yp = y + plane * g.oh * g.ow;
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      const ops::window wy = ops::adaptive_window(oy, g.h, g.oh);
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        const ops::window wx = ops::adaptive_window(ox, g.w, g.ow);
        double sum = 0;
        for (int64_t iy = wy.begin; iy < wy.end; ++iy)
          for (int64_t ix = wx.begin; ix < wx.end; ++ix) sum += static_cast<double>(xp[iy * g.w + ix]);
        yp[oy * g.ow + ox] = static_cast<T>(sum / static_cast<double>(wy.padded * wx.padded));
      }
    }
  }
}

template <class T>
void adaptive_avg_pool_backward(const pool_geometry& g, const T* dy, T* dx) {
  std::fill(dx, dx + g.n * g.c * g.h * g.w, T(0));
  for (int64_t plane = 0; plane < g.n * g.c; ++plane) {
    const T* dyp = dy + plane * g.oh * g.ow;
    T* dxp = dx + plane * g.h * g.w;
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      const ops::window wy = ops::adaptive_window(oy, g.h, g.oh);
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        const ops::window wx = ops::adaptive_window(ox, g.w, g.ow);
        const T share = static_cast<T>(static_cast<double>(dyp[oy * g.ow + ox]) /
                                       static_cast<double>(wy.padded * wx.padded));
        for (int64_t iy = wy.begin; iy < wy.end; ++iy)
          for (int64_t ix = wx.begin; ix < wx.end; ++ix) dxp[iy * g.w + ix] += share;
      }
    }
  }
}

template <class T>
void add_forward(size_t count, std::span<const T* const> operands, T* y) {
  std::copy(operands[0], operands[0] + count, y);
  for (size_t k = 1; k < operands.size(); ++k)
    for (size_t i = 0; i < count; ++i) y[i] += operands[k][i];
}

template <class T>
void concat_forward(int64_t outer, int64_t inner, std::span<const int64_t> channels,
                    std::span<const T* const> operands, T* y) {
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < operands.size(); ++k) {
      const int64_t len = channels[k] * inner;
      const T* src = operands[k] + o * len;
      y = std::copy(src, src + len, y);
    }
}

template <class T>
void concat_backward(int64_t outer, int64_t inner, std::span<const int64_t> channels, const T* dy,
                     std::span<T* const> dx) {
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < dx.size(); ++k) {
      const int64_t len = channels[k] * inner;
      if (dx[k]) std::copy(dy, dy + len, dx[k] + o * len);
      dy += len;
    }
}

template <class T>
void dropout_forward(size_t count, double p, const dropout_key& key, const T* x, T* y) {
  const T scale = static_cast<T>(1.0 / (1.0 - p));
  for (size_t i = 0; i < count; ++i) y[i] = dropout_keeps(p, key, i) ? x[i] * scale : T(0);
}

template <class T>
void dropout_backward(size_t count, double p, const dropout_key& key, const T* dy, T* dx) {
  const T scale = static_cast<T>(1.0 / (1.0 - p));
  for (size_t i = 0; i < count; ++i) dx[i] = dropout_keeps(p, key, i) ? dy[i] * scale : T(0);
}

template <class T>
void slice_forward(std::span<const int64_t> dims, std::span<const int64_t> begin, std::span<const int64_t> end,
                   const T* x, T* y) {
  for_each_sliced(dims, begin, end, [&](size_t in, size_t out) { y[out] = x[in]; });
}

template <class T>
void slice_backward(std::span<const int64_t> dims, std::span<const int64_t> begin, std::span<const int64_t> end,
                    const T* dy, T* dx) {
  size_t total = 1;
  for (int64_t d : dims) total *= to_size(d);
  std::fill(dx, dx + total, T(0));
  for_each_sliced(dims, begin, end, [&](size_t in, size_t out) { dx[in] = dy[out]; });
}

template <class T>
void upsample_bilinear_forward(const upsample_geometry& g, const T* x, T* y) {
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    const auto ty = bilinear_source<T>(oy, g.h, g.oh, g.align_corners);
    for (int64_t ox = 0; ox < g.ow; ++ox) {
      const auto tx = bilinear_source<T>(ox, g.w, g.ow, g.align_corners);
      for (int64_t plane = 0; plane < g.n * g.c; ++plane) {
        const T* p = x + plane * g.h * g.w;
        const T top = (1 - tx.weight) * p[ty.first * g.w + tx.first] + tx.weight * p[ty.first * g.w + tx.second];
        const T bottom = (1 - tx.weight) * p[ty.second * g.w + tx.first] + tx.weight * p[ty.second * g.w + tx.second];
        y[(plane * g.oh + oy) * g.ow + ox] = (1 - ty.weight) * top + ty.weight * bottom;
      }
    }
  }
}

template <class T>
void upsample_bilinear_backward(const upsample_geometry& g, const T* dy, T* dx) {
  std::fill(dx, dx + g.n * g.c * g.h * g.w, T(0));
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    const auto ty = bilinear_source<T>(oy, g.h, g.oh, g.align_corners);
    for (int64_t ox = 0; ox < g.ow; ++ox) {
      const auto tx = bilinear_source<T>(ox, g.w, g.ow, g.align_corners);
      for (int64_t plane = 0; plane < g.n * g.c; ++plane) {
        T* p = dx + plane * g.h * g.w;
        const T d = dy[(plane * g.oh + oy) * g.ow + ox];
        p[ty.first * g.w + tx.first] += (1 - ty.weight) * (1 - tx.weight) * d;
        p[ty.first * g.w + tx.second] += (1 - ty.weight) * tx.weight * d;
        p[ty.second * g.w + tx.first] += ty.weight * (1 - tx.weight) * d;
        p[ty.second * g.w + tx.second] += ty.weight * tx.weight * d;
      }
    }
  }
}

// One position's classes lie `inner` apart: logits [n, classes, inner].
template <class T>
double softmax_cross_entropy_forward(int64_t n, int64_t classes, int64_t inner, const T* logits,
                                     const int64_t* labels) {
  double total = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t s = 0; s < inner; ++s) {
      const T* row = logits + i * classes * inner + s;
      double top = static_cast<double>(row[0]);
      for (int64_t j = 1; j < classes; ++j) top = std::max(top, static_cast<double>(row[j * inner]));
      double sum = 0;
      for (int64_t j = 0; j < classes; ++j) sum += std::exp(static_cast<double>(row[j * inner]) - top);
      total += std::log(sum) + top - static_cast<double>(row[labels[i * inner + s] * inner]);
    }
  return total / static_cast<double>(n * inner);
}

template <class T>
void softmax_cross_entropy_backward(int64_t n, int64_t classes, int64_t inner, const T* logits,
                                    const int64_t* labels, T dloss, T* dlogits) {
  const double scale = static_cast<double>(dloss) / static_cast<double>(n * inner);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t s = 0; s < inner; ++s) {
      const int64_t first = i * classes * inner + s;
      const T* row = logits + first;
      double top = static_cast<double>(row[0]);
      for (int64_t j = 1; j < classes; ++j) top = std::max(top, static_cast<double>(row[j * inner]));
      double sum = 0;
      for (int64_t j = 0; j < classes; ++j) sum += std::exp(static_cast<double>(row[j * inner]) - top);
      const int64_t label = labels[i * inner + s];
      for (int64_t j = 0; j < classes; ++j) {
        const double softmax = std::exp(static_cast<double>(row[j * inner]) - top) / sum;
        dlogits[first + j * inner] = static_cast<T>((softmax - (j == label ? 1.0 : 0.0)) * scale);
      }
    }
}

template <class T>
double mse_loss_forward(size_t count, const T* a, const T* b) {
  double sum = 0;
  for (size_t i = 0; i < count; ++i) {
    const double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
    sum += d * d;
  }
  return sum / static_cast<double>(count);
}

template <class T>
void mse_loss_backward(size_t count, const T* a, const T* b, T dloss, T* da, T* db) {
  const double scale = 2.0 * static_cast<double>(dloss) / static_cast<double>(count);
  for (size_t i = 0; i < count; ++i) {
    const double g = (static_cast<double>(a[i]) - static_cast<double>(b[i])) * scale;
    if (da) da[i] = static_cast<T>(g);
    if (db) db[i] = static_cast<T>(-g);
  }
}

#define REMAT_CPU_KERNELS(T)                                                                                          \
  template void conv2d_forward<T>(const conv2d_geometry&, const T*, const T*, const T*, T*, std::span<T>);           \
  template void conv2d_backward<T>(const conv2d_geometry&, const T*, const T*, const T*, T*, T*, T*, std::span<T>); \
  template void conv_transpose2d_forward<T>(const conv2d_geometry&, const T*, const T*, const T*, T*, std::span<T>); \
  template void conv_transpose2d_backward<T>(const conv2d_geometry&, const T*, const T*, const T*, T*, T*, T*,      \
                                             std::span<T>);                                                         \
  template void linear_forward<T>(int64_t, int64_t, int64_t, const T*, const T*, const T*, T*);                      \
  template void linear_backward<T>(int64_t, int64_t, int64_t, const T*, const T*, const T*, T*, T*, T*);             \
  template void batch_norm_forward<T>(const batch_norm_geometry&, const T*, const T*, const T*, double, T*, double*, \
                                      double*);                                                                      \
  template void batch_norm_update_running<T>(int64_t, int64_t, const double*, const double*, double, T*, T*);        \
  template void batch_norm_backward<T>(const batch_norm_geometry&, const T*, const T*, double, const T*, T*, T*, T*); \
  template void relu_forward<T>(size_t, const T*, T*);                                                               \
  template void relu_backward<T>(size_t, const T*, const T*, T*);                                                    \
  template void sigmoid_forward<T>(size_t, const T*, T*);                                                            \
  template void sigmoid_backward<T>(size_t, const T*, const T*, T*);                                                 \
  template void max_pool_forward<T>(const pool_geometry&, const T*, T*);                                             \
  template void max_pool_backward<T>(const pool_geometry&, const T*, const T*, T*);                                  \
  template void avg_pool_forward<T>(const pool_geometry&, const T*, T*);                                             \
  template void avg_pool_backward<T>(const pool_geometry&, const T*, T*);                                            \
  template void adaptive_avg_pool_forward<T>(const pool_geometry&, const T*, T*);                                    \
  template void adaptive_avg_pool_backward<T>(const pool_geometry&, const T*, T*);                                   \
  template void upsample_bilinear_forward<T>(const upsample_geometry&, const T*, T*);                               \
  template void upsample_bilinear_backward<T>(const upsample_geometry&, const T*, T*);                              \
  template void add_forward<T>(size_t, std::span<const T* const>, T*);                                               \
  template void concat_forward<T>(int64_t, int64_t, std::span<const int64_t>, std::span<const T* const>, T*);        \
  template void concat_backward<T>(int64_t, int64_t, std::span<const int64_t>, const T*, std::span<T* const>);       \
  template void dropout_forward<T>(size_t, double, const dropout_key&, const T*, T*);                                \
  template void dropout_backward<T>(size_t, double, const dropout_key&, const T*, T*);                               \
  template void slice_forward<T>(std::span<const int64_t>, std::span<const int64_t>, std::span<const int64_t>,       \
                                 const T*, T*);                                                                      \
  template void slice_backward<T>(std::span<const int64_t>, std::span<const int64_t>, std::span<const int64_t>,      \
                                  const T*, T*);                                                                     \
  template double softmax_cross_entropy_forward<T>(int64_t, int64_t, int64_t, const T*, const int64_t*);             \
  template void softmax_cross_entropy_backward<T>(int64_t, int64_t, int64_t, const T*, const int64_t*, T, T*);       \
  template double mse_loss_forward<T>(size_t, const T*, const T*);                                                   \
  template void mse_loss_backward<T>(size_t, const T*, const T*, T, T*, T*);

REMAT_CPU_KERNELS(float)
REMAT_CPU_KERNELS(double)
#undef REMAT_CPU_KERNELS

}  // namespace remat::cpu
