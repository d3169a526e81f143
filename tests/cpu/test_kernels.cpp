// Every kernel against an independent float64 reference (direct loops, no
// im2col, no GEMM) on random inputs of odd shapes, and every backward kernel,
// in float64, against central differences of Σ r·forward(x).

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <remat/cpu/kernels.hpp>
#include <remat/ops/random.hpp>

using namespace remat::cpu;
using namespace remat::ops;
using std::int64_t;

namespace {

using vec = std::vector<double>;

vec random_vec(std::size_t n, std::uint64_t seed, double lo = -1, double hi = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  vec v(n);
  for (double& x : v) x = u(rng);
  return v;
}

std::vector<float> to_float(const vec& v) { return {v.begin(), v.end()}; }

// max |a − b| / max |b|: the error relative to the reference's scale.
template <class A>
double relative_error(const A& a, const vec& b) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return scale == 0 ? diff : diff / scale;
}

// The worst error seen per kernel, printed at the end of each test case.
std::map<std::string, double>& worst() {
  static std::map<std::string, double> w;
  return w;
}

void record(const std::string& kernel, double error, double limit) {
  worst()[kernel] = std::max(worst()[kernel], error);
  CHECK_MESSAGE(error <= limit, kernel << ": relative error " << error << " above " << limit);
}

void print_worst(const char* what) {
  for (const auto& [kernel, e] : worst()) std::printf("%s %-34s max relative error %.2e\n", what, kernel.c_str(), e);
  worst().clear();
}

// Central differences of L(x) = Σ r · f(x) with respect to every element of
// *x (f reads the inputs by reference), h = 1e-6.
vec numeric_gradient(vec* x, const vec& r, const std::function<vec()>& f) {
  vec grad(x->size());
  const double h = 1e-6;
  auto loss = [&] {
    const vec y = f();
    double l = 0;
    for (std::size_t i = 0; i < y.size(); ++i) l += r[i] * y[i];
    return l;
  };
  for (std::size_t i = 0; i < x->size(); ++i) {
    const double saved = (*x)[i];
    (*x)[i] = saved + h;
    const double up = loss();
    (*x)[i] = saved - h;
    const double down = loss();
    (*x)[i] = saved;
    grad[i] = (up - down) / (2 * h);
  }
  return grad;
}

constexpr double f32_limit = 1e-5;      // float32 kernels vs the float64 reference
constexpr double f64_limit = 1e-12;     // float64 kernels vs the float64 reference
constexpr double numeric_limit = 1e-6;  // float64 backward vs central differences

// ---- conv2d -------------------------------------------------------------

vec conv_reference(const conv2d_geometry& g, const vec& x, const vec& w, const vec* bias) {
  const int64_t oh = g.oh(), ow = g.ow(), cg = g.c / g.groups, kg = g.k / g.groups;
  vec y(static_cast<std::size_t>(g.n * g.k * oh * ow));
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t k = 0; k < g.k; ++k)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double sum = bias ? (*bias)[static_cast<std::size_t>(k)] : 0.0;
          const int64_t grp = k / kg;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ki = 0; ki < g.kh; ++ki)
              for (int64_t kj = 0; kj < g.kw; ++kj) {
                const int64_t iy = oy * g.sh - g.ph + ki * g.dh, ix = ox * g.sw - g.pw + kj * g.dw;
                if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                sum += x[static_cast<std::size_t>(((n * g.c + grp * cg + ci) * g.h + iy) * g.w + ix)] *
                       w[static_cast<std::size_t>(((k * cg + ci) * g.kh + ki) * g.kw + kj)];
              }
          y[static_cast<std::size_t>(((n * g.k + k) * oh + oy) * ow + ox)] = sum;
        }
  return y;
}

conv2d_geometry conv(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t kh, int64_t kw, int64_t s,
                     int64_t p, int64_t d = 1, int64_t groups = 1) {
  conv2d_geometry g;
  g.n = n, g.c = c, g.h = h, g.w = w, g.k = k, g.kh = kh, g.kw = kw;
  g.sh = g.sw = s, g.ph = g.pw = p, g.dh = g.dw = d, g.groups = groups;
  return g;
}

std::vector<std::pair<std::string, conv2d_geometry>> conv_cases() {
  std::vector<std::pair<std::string, conv2d_geometry>> c{
      {"3x3 s1 p1", conv(2, 3, 8, 8, 5, 3, 3, 1, 1)},
      {"3x3 s2 p1 odd 7x9", conv(2, 3, 7, 9, 4, 3, 3, 2, 1)},
      {"1x1 s1 p0 (no im2col)", conv(2, 6, 5, 5, 7, 1, 1, 1, 0)},
      {"1x1 s2 odd 9x9", conv(1, 4, 9, 9, 3, 1, 1, 2, 0)},
      {"7x7 s2 p3 odd 11x13", conv(2, 3, 11, 13, 4, 7, 7, 2, 3)},
      {"3x3 dilation 2 p2", conv(1, 4, 9, 8, 4, 3, 3, 1, 2, 2)},
      {"5x5 dilation 2 p4 s2", conv(1, 2, 13, 11, 3, 5, 5, 2, 4, 2)},
      {"groups 2", conv(2, 4, 6, 6, 6, 3, 3, 1, 1, 1, 2)},
      {"depthwise 3x3 s2", conv(2, 5, 9, 7, 5, 3, 3, 2, 1, 1, 5)},
      {"depthwise x2 5x5 dil 2", conv(1, 3, 11, 11, 6, 5, 5, 1, 4, 2, 3)},
  };
  conv2d_geometry asym = conv(2, 3, 9, 10, 4, 1, 7, 1, 0);
  asym.pw = 3;
  c.emplace_back("1x7 p(0,3)", asym);
  conv2d_geometry strides = conv(1, 2, 10, 11, 3, 7, 1, 1, 0);
  strides.ph = 3, strides.sh = 2, strides.sw = 3;
  c.emplace_back("7x1 stride (2,3)", strides);
  return c;
}

// torch.nn.ConvTranspose2d by its definition: every input element scatters
// x · w[ci, co] into the output window it touches. g is the convolution the
// op is the adjoint of (g's input is the op's output).
vec conv_transpose_reference(const conv2d_geometry& g, const vec& x, const vec& w, const vec* bias) {
  const int64_t ih = g.oh(), iw = g.ow();
  vec y(static_cast<std::size_t>(g.n * g.c * g.h * g.w), 0.0);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t co = 0; co < g.c; ++co)
      for (int64_t s = 0; s < g.h * g.w; ++s)
        y[static_cast<std::size_t>((n * g.c + co) * g.h * g.w + s)] = bias ? (*bias)[static_cast<std::size_t>(co)] : 0.0;
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t ci = 0; ci < g.k; ++ci)
      for (int64_t iy = 0; iy < ih; ++iy)
        for (int64_t ix = 0; ix < iw; ++ix)
          for (int64_t co = 0; co < g.c; ++co)
            for (int64_t ki = 0; ki < g.kh; ++ki)
              for (int64_t kj = 0; kj < g.kw; ++kj) {
                const int64_t oy = iy * g.sh - g.ph + ki, ox = ix * g.sw - g.pw + kj;
                if (oy < 0 || oy >= g.h || ox < 0 || ox >= g.w) continue;
                y[static_cast<std::size_t>(((n * g.c + co) * g.h + oy) * g.w + ox)] +=
                    x[static_cast<std::size_t>(((n * g.k + ci) * ih + iy) * iw + ix)] *
                    w[static_cast<std::size_t>(((ci * g.c + co) * g.kh + ki) * g.kw + kj)];
              }
  return y;
}

// A transposed convolution from [n, in, ih, iw] to `out` channels, as the op parser builds its geometry.
conv2d_geometry transposed(int64_t n, int64_t in, int64_t ih, int64_t iw, int64_t out, int64_t k, int64_t s, int64_t p,
                           int64_t extra = 0) {
  conv2d_geometry g = conv(n, out, (ih - 1) * s - 2 * p + k + extra, (iw - 1) * s - 2 * p + k + extra, in, k, k, s, p);
  REQUIRE(g.oh() == ih);
  REQUIRE(g.ow() == iw);
  return g;
}

// torch's bilinear interpolation written out along one axis: the two source
// indices and the weight of the second.
std::tuple<int64_t, int64_t, double> bilinear_reference(int64_t o, int64_t in, int64_t out, bool align_corners) {
  double source = align_corners ? (out > 1 ? static_cast<double>(o) * static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0)
                                : std::max(0.0, (static_cast<double>(o) + 0.5) * static_cast<double>(in) / static_cast<double>(out) - 0.5);
  const auto first = static_cast<int64_t>(std::floor(source));
  return {first, std::min(first + 1, in - 1), source - static_cast<double>(first)};
}

vec upsample_reference(const upsample_geometry& g, const vec& x) {
  vec y(static_cast<std::size_t>(g.n * g.c * g.oh * g.ow));
  for (int64_t plane = 0; plane < g.n * g.c; ++plane)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        const auto [y0, y1, ly] = bilinear_reference(oy, g.h, g.oh, g.align_corners);
        const auto [x0, x1, lx] = bilinear_reference(ox, g.w, g.ow, g.align_corners);
        auto at = [&](int64_t iy, int64_t ix) { return x[static_cast<std::size_t>((plane * g.h + iy) * g.w + ix)]; };
        y[static_cast<std::size_t>((plane * g.oh + oy) * g.ow + ox)] =
            (1 - ly) * ((1 - lx) * at(y0, x0) + lx * at(y0, x1)) + ly * ((1 - lx) * at(y1, x0) + lx * at(y1, x1));
      }
  return y;
}

}  // namespace

TEST_SUITE("cpu kernels") {

TEST_CASE("transposed convolution matches its definition; backward matches central differences") {
  std::uint64_t seed = 200;
  const std::vector<std::pair<std::string, conv2d_geometry>> cases{
      {"2x2 s2 (U-Net's up-convolution)", transposed(2, 4, 3, 5, 3, 2, 2, 0)},
      {"3x3 s2 p1 output_padding 1", transposed(1, 3, 4, 4, 2, 3, 2, 1, 1)},
      {"4x4 s2 p1", transposed(2, 2, 3, 4, 3, 4, 2, 1)},
      {"3x3 s1 p1", transposed(1, 3, 5, 6, 4, 3, 1, 1)},
  };
  for (const auto& [name, g] : cases) {
    CAPTURE(name);
    const auto xs = static_cast<std::size_t>(g.n * g.k * g.oh() * g.ow());
    const auto ws = static_cast<std::size_t>(g.k * g.c * g.kh * g.kw);
    const auto ys = static_cast<std::size_t>(g.n * g.c * g.h * g.w);
    vec x = random_vec(xs, ++seed), w = random_vec(ws, ++seed), b = random_vec(static_cast<std::size_t>(g.c), ++seed);
    const vec ref = conv_transpose_reference(g, x, w, &b);
    vec y(ys), scratch(conv2d_scratch(g));
    conv_transpose2d_forward<double>(g, x.data(), w.data(), b.data(), y.data(), scratch);
    record("conv_transpose2d forward f64", relative_error(y, ref), f64_limit);
    std::vector<float> yf(ys), sf(conv2d_scratch(g));
    const auto xf = to_float(x), wf = to_float(w), bf = to_float(b);
    conv_transpose2d_forward<float>(g, xf.data(), wf.data(), bf.data(), yf.data(), sf);
    record("conv_transpose2d forward f32", relative_error(yf, ref), f32_limit);

    const vec r = random_vec(ys, ++seed);
    vec dx(xs), dw(ws), db(static_cast<std::size_t>(g.c));
    conv_transpose2d_backward<double>(g, x.data(), w.data(), r.data(), dx.data(), dw.data(), db.data(), scratch);
    auto forward = [&] { return conv_transpose_reference(g, x, w, &b); };
    record("conv_transpose2d backward dx vs numeric", relative_error(dx, numeric_gradient(&x, r, forward)), numeric_limit);
    record("conv_transpose2d backward dweight vs numeric", relative_error(dw, numeric_gradient(&w, r, forward)),
           numeric_limit);
    record("conv_transpose2d backward dbias vs numeric", relative_error(db, numeric_gradient(&b, r, forward)),
           numeric_limit);
    // Null outputs are skipped: dx alone equals dx of the full call.
    vec dx_only(xs);
    conv_transpose2d_backward<double>(g, x.data(), w.data(), r.data(), dx_only.data(), nullptr, nullptr, scratch);
    CHECK(dx_only == dx);
  }
  print_worst("kernels");
}

TEST_CASE("bilinear upsampling takes torch's taps in both corner modes; backward matches central differences") {
  std::uint64_t seed = 300;
  const std::vector<upsample_geometry> cases{
      {2, 3, 3, 4, 7, 9, false}, {2, 3, 3, 4, 7, 9, true},   // up, both modes
      {1, 2, 5, 5, 17, 17, true}, {1, 2, 5, 5, 17, 17, false},  // PSPNet's ratio
      {1, 2, 7, 9, 3, 4, false}, {1, 2, 7, 9, 3, 4, true},    // down
      {1, 3, 1, 1, 4, 4, true}, {1, 3, 1, 1, 4, 4, false},    // from a 1×1 bin
      {1, 1, 4, 6, 4, 6, false},                              // the identity
  };
  for (const upsample_geometry& g : cases) {
    CAPTURE(g.h);
    CAPTURE(g.oh);
    CAPTURE(g.align_corners);
    const auto xs = static_cast<std::size_t>(g.n * g.c * g.h * g.w), ys = static_cast<std::size_t>(g.n * g.c * g.oh * g.ow);
    vec x = random_vec(xs, ++seed);
    const vec ref = upsample_reference(g, x);
    vec y(ys);
    upsample_bilinear_forward<double>(g, x.data(), y.data());
    record("upsample_bilinear forward f64", relative_error(y, ref), f64_limit);
    std::vector<float> yf(ys);
    const auto xf = to_float(x);
    upsample_bilinear_forward<float>(g, xf.data(), yf.data());
    record("upsample_bilinear forward f32", relative_error(yf, ref), f32_limit);
    if (g.h == g.oh && g.w == g.ow) CHECK(y == x);
    const vec r = random_vec(ys, ++seed);
    vec dx(xs, 7.0);  // overwritten, not added to
    upsample_bilinear_backward<double>(g, r.data(), dx.data());
    record("upsample_bilinear backward vs numeric",
           relative_error(dx, numeric_gradient(&x, r, [&] { return upsample_reference(g, x); })), numeric_limit);
  }
  print_worst("kernels");
}

TEST_CASE("per-pixel softmax cross-entropy: classes along dim 1, the mean over every pixel") {
  const int64_t n = 2, classes = 4, inner = 6;
  vec logits = random_vec(static_cast<std::size_t>(n * classes * inner), 91, -3, 3);
  std::vector<int64_t> labels(static_cast<std::size_t>(n * inner));
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>((i * 7 + 1) % classes);
  auto reference = [&] {
    double total = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t s = 0; s < inner; ++s) {
        auto at = [&](int64_t j) { return logits[static_cast<std::size_t>((i * classes + j) * inner + s)]; };
        double z = 0;
        for (int64_t j = 0; j < classes; ++j) z += std::exp(at(j));
        total += std::log(z) - at(labels[static_cast<std::size_t>(i * inner + s)]);
      }
    return vec{total / static_cast<double>(n * inner)};
  };
  CHECK(softmax_cross_entropy_forward<double>(n, classes, inner, logits.data(), labels.data()) ==
        doctest::Approx(reference()[0]).epsilon(1e-14));
  vec d(logits.size());
  softmax_cross_entropy_backward<double>(n, classes, inner, logits.data(), labels.data(), 0.4, d.data());
  record("per-pixel cross-entropy backward vs numeric", relative_error(d, numeric_gradient(&logits, {0.4}, reference)),
         numeric_limit);
  print_worst("kernels");
}

TEST_CASE("conv2d forward matches direct convolution; backward matches central differences") {
  std::uint64_t seed = 1;
  for (const auto& [name, g] : conv_cases()) {
    CAPTURE(name);
    const auto xs = static_cast<std::size_t>(g.n * g.c * g.h * g.w);
    const auto ws = static_cast<std::size_t>(g.k * (g.c / g.groups) * g.kh * g.kw);
    const auto ys = static_cast<std::size_t>(g.n * g.k * g.oh() * g.ow());
    vec x = random_vec(xs, ++seed), w = random_vec(ws, ++seed), b = random_vec(static_cast<std::size_t>(g.k), ++seed);
    const vec ref = conv_reference(g, x, w, &b);

    vec y(ys), scratch(conv2d_scratch(g));
    conv2d_forward<double>(g, x.data(), w.data(), b.data(), y.data(), scratch);
    record("conv2d forward f64", relative_error(y, ref), f64_limit);
    std::vector<float> yf(ys), sf(conv2d_scratch(g));
    const auto xf = to_float(x), wf = to_float(w), bf = to_float(b);
    conv2d_forward<float>(g, xf.data(), wf.data(), bf.data(), yf.data(), sf);
    record("conv2d forward f32", relative_error(yf, ref), f32_limit);

    const vec r = random_vec(ys, ++seed);
    vec dx(xs), dw(ws), db(static_cast<std::size_t>(g.k));
    conv2d_backward<double>(g, x.data(), w.data(), r.data(), dx.data(), dw.data(), db.data(), scratch);
    auto forward = [&] {
      return conv_reference(g, x, w, &b);
    };
    record("conv2d backward dx vs numeric", relative_error(dx, numeric_gradient(&x, r, forward)), numeric_limit);
    record("conv2d backward dweight vs numeric", relative_error(dw, numeric_gradient(&w, r, forward)), numeric_limit);
    record("conv2d backward dbias vs numeric", relative_error(db, numeric_gradient(&b, r, forward)), numeric_limit);

    std::vector<float> dxf(xs), dwf(ws), dbf(static_cast<std::size_t>(g.k));
    const auto rf = to_float(r);
    conv2d_backward<float>(g, xf.data(), wf.data(), rf.data(), dxf.data(), dwf.data(), dbf.data(), sf);
    record("conv2d backward f32 vs f64", std::max({relative_error(dxf, dx), relative_error(dwf, dw), relative_error(dbf, db)}),
           f32_limit);
  }
  print_worst("kernels");
}

TEST_CASE("linear forward and backward") {
  for (const auto& [n, in, out] : std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {3, 5, 7}, {17, 300, 13}, {64, 37, 100}}) {
    const auto xs = static_cast<std::size_t>(n * in), ws = static_cast<std::size_t>(in * out);
    const auto ys = static_cast<std::size_t>(n * out);
    vec x = random_vec(xs, 11), w = random_vec(ws, 12), b = random_vec(static_cast<std::size_t>(out), 13);
    auto reference = [&] {
      vec y(ys);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t o = 0; o < out; ++o) {
          double s = b[static_cast<std::size_t>(o)];
          for (int64_t k = 0; k < in; ++k) s += x[static_cast<std::size_t>(i * in + k)] * w[static_cast<std::size_t>(o * in + k)];
          y[static_cast<std::size_t>(i * out + o)] = s;
        }
      return y;
    };
    const vec ref = reference();
    vec y(ys);
    linear_forward<double>(n, in, out, x.data(), w.data(), b.data(), y.data());
    record("linear forward f64", relative_error(y, ref), f64_limit);
    std::vector<float> yf(ys);
    const auto xf = to_float(x), wf = to_float(w), bf = to_float(b);
    linear_forward<float>(n, in, out, xf.data(), wf.data(), bf.data(), yf.data());
    record("linear forward f32", relative_error(yf, ref), f32_limit);

    if (xs * ws > 40000) continue;  // numerical gradients on the small cases
    const vec r = random_vec(ys, 14);
    vec dx(xs), dw(ws), db(static_cast<std::size_t>(out));
    linear_backward<double>(n, in, out, x.data(), w.data(), r.data(), dx.data(), dw.data(), db.data());
    record("linear backward vs numeric", std::max({relative_error(dx, numeric_gradient(&x, r, reference)),
                                                   relative_error(dw, numeric_gradient(&w, r, reference)),
                                                   relative_error(db, numeric_gradient(&b, r, reference))}),
           numeric_limit);
    std::vector<float> dxf(xs), dwf(ws), dbf(static_cast<std::size_t>(out));
    const auto rf = to_float(r);
    linear_backward<float>(n, in, out, xf.data(), wf.data(), rf.data(), dxf.data(), dwf.data(), dbf.data());
    record("linear backward f32 vs f64", std::max({relative_error(dxf, dx), relative_error(dwf, dw), relative_error(dbf, db)}),
           f32_limit);
  }
  print_worst("kernels");
}

TEST_CASE("batch norm: forward, running statistics, backward") {
  for (const batch_norm_geometry& g : {batch_norm_geometry{2, 3, 1}, batch_norm_geometry{3, 4, 7}, batch_norm_geometry{2, 2, 25}}) {
    const auto xs = static_cast<std::size_t>(g.n * g.c * g.spatial), cs = static_cast<std::size_t>(g.c);
    vec x = random_vec(xs, 21, -2, 3), gamma = random_vec(cs, 22, 0.5, 1.5), beta = random_vec(cs, 23);
    const double eps = 1e-3;
    auto reference = [&] {
      vec y(xs);
      for (int64_t c = 0; c < g.c; ++c) {
        double mean = 0, var = 0;
        const double count = static_cast<double>(g.n * g.spatial);
        for (int64_t i = 0; i < g.n; ++i)
          for (int64_t s = 0; s < g.spatial; ++s) mean += x[static_cast<std::size_t>((i * g.c + c) * g.spatial + s)] / count;
        for (int64_t i = 0; i < g.n; ++i)
          for (int64_t s = 0; s < g.spatial; ++s) {
            const double d = x[static_cast<std::size_t>((i * g.c + c) * g.spatial + s)] - mean;
            var += d * d / count;
          }
        for (int64_t i = 0; i < g.n; ++i)
          for (int64_t s = 0; s < g.spatial; ++s) {
            const auto at = static_cast<std::size_t>((i * g.c + c) * g.spatial + s);
            y[at] = (x[at] - mean) / std::sqrt(var + eps) * gamma[static_cast<std::size_t>(c)] + beta[static_cast<std::size_t>(c)];
          }
      }
      return y;
    };
    const vec ref = reference();
    vec y(xs), mean(cs), var(cs);
    batch_norm_forward<double>(g, x.data(), gamma.data(), beta.data(), eps, y.data(), mean.data(), var.data());
    record("batch_norm forward f64", relative_error(y, ref), f64_limit);
    std::vector<float> yf(xs);
    const auto xf = to_float(x), gf = to_float(gamma), bf = to_float(beta);
    batch_norm_forward<float>(g, xf.data(), gf.data(), bf.data(), eps, yf.data(), nullptr, nullptr);
    record("batch_norm forward f32", relative_error(yf, ref), f32_limit);

    std::vector<float> running_mean(cs, 0.5f), running_var(cs, 2.0f);
    batch_norm_update_running<float>(g.c, g.n * g.spatial, mean.data(), var.data(), 0.1, running_mean.data(), running_var.data());
    const double count = static_cast<double>(g.n * g.spatial);
    for (std::size_t c = 0; c < cs; ++c) {
      CHECK(running_mean[c] == doctest::Approx(0.9 * 0.5 + 0.1 * mean[c]));
      CHECK(running_var[c] == doctest::Approx(0.9 * 2.0 + 0.1 * var[c] * count / (count - 1)));
    }

    const vec r = random_vec(xs, 24);
    vec dx(xs), dgamma(cs), dbeta(cs);
    batch_norm_backward<double>(g, x.data(), gamma.data(), eps, r.data(), dx.data(), dgamma.data(), dbeta.data());
    record("batch_norm backward vs numeric", std::max({relative_error(dx, numeric_gradient(&x, r, reference)),
                                                       relative_error(dgamma, numeric_gradient(&gamma, r, reference)),
                                                       relative_error(dbeta, numeric_gradient(&beta, r, reference))}),
           numeric_limit);
    std::vector<float> dxf(xs), dgf(cs), dbf(cs);
    const auto rf = to_float(r);
    batch_norm_backward<float>(g, xf.data(), gf.data(), eps, rf.data(), dxf.data(), dgf.data(), dbf.data());
    record("batch_norm backward f32 vs f64",
           std::max({relative_error(dxf, dx), relative_error(dgf, dgamma), relative_error(dbf, dbeta)}), f32_limit);
  }
  print_worst("kernels");
}

TEST_CASE("relu and sigmoid") {
  const std::size_t n = 257;
  vec x = random_vec(n, 31, -3, 3);
  for (const bool relu : {true, false}) {
    const std::string name = relu ? "relu" : "sigmoid";
    auto reference = [&] {
      vec y(n);
      for (std::size_t i = 0; i < n; ++i) y[i] = relu ? std::max(x[i], 0.0) : 1 / (1 + std::exp(-x[i]));
      return y;
    };
    vec y(n);
    std::vector<float> yf(n);
    const auto xf = to_float(x);
    if (relu) {
      relu_forward<double>(n, x.data(), y.data());
      relu_forward<float>(n, xf.data(), yf.data());
    } else {
      sigmoid_forward<double>(n, x.data(), y.data());
      sigmoid_forward<float>(n, xf.data(), yf.data());
    }
    record(name + " forward f64", relative_error(y, reference()), f64_limit);
    record(name + " forward f32", relative_error(yf, reference()), f32_limit);
    const vec r = random_vec(n, 32);
    vec dx(n);
    std::vector<float> dxf(n);
    const auto rf = to_float(r);
    if (relu) {
      relu_backward<double>(n, y.data(), r.data(), dx.data());
      relu_backward<float>(n, yf.data(), rf.data(), dxf.data());
    } else {
      sigmoid_backward<double>(n, y.data(), r.data(), dx.data());
      sigmoid_backward<float>(n, yf.data(), rf.data(), dxf.data());
    }
    record(name + " backward vs numeric", relative_error(dx, numeric_gradient(&x, r, reference)), numeric_limit);
    record(name + " backward f32 vs f64", relative_error(dxf, dx), f32_limit);
  }
  print_worst("kernels");
}

namespace {

pool_geometry pool(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t s, int64_t p, bool ceil, int64_t d = 1,
                   bool include_pad = true) {
  pool_geometry g;
  g.n = n, g.c = c, g.h = h, g.w = w, g.kh = g.kw = k, g.sh = g.sw = s, g.ph = g.pw = p, g.dh = g.dw = d;
  g.count_include_pad = include_pad;
  auto extent = [&](int64_t in) {
    const int64_t span = in + 2 * p - d * (k - 1) - 1;
    int64_t out = (ceil ? (span + s - 1) / s : span / s) + 1;
    if (ceil && (out - 1) * s >= in + p) --out;
    return out;
  };
  g.oh = extent(h);
  g.ow = extent(w);
  return g;
}

// Direct, torch-documented pooling: max over the in-bounds window; average
// with the divisor of count_include_pad (window clipped to the padded input).
vec pool_reference(const pool_geometry& g, const vec& x, bool max) {
  vec y(static_cast<std::size_t>(g.n * g.c * g.oh * g.ow));
  for (int64_t plane = 0; plane < g.n * g.c; ++plane)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        double best = -std::numeric_limits<double>::infinity(), sum = 0;
        int64_t inside = 0, padded = 0;
        for (int64_t ki = 0; ki < g.kh; ++ki)
          for (int64_t kj = 0; kj < g.kw; ++kj) {
            const int64_t iy = oy * g.sh - g.ph + ki * g.dh, ix = ox * g.sw - g.pw + kj * g.dw;
            if (iy < g.h + g.ph && ix < g.w + g.pw) ++padded;
            if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
            const double v = x[static_cast<std::size_t>((plane * g.h + iy) * g.w + ix)];
            best = std::max(best, v);
            sum += v;
            ++inside;
          }
        y[static_cast<std::size_t>((plane * g.oh + oy) * g.ow + ox)] =
            max ? best : sum / static_cast<double>(g.count_include_pad ? padded : inside);
      }
  return y;
}

}  // namespace

TEST_CASE("max and average pooling, torch's windows and divisors") {
  const std::vector<std::pair<std::string, pool_geometry>> cases{
      {"3x3 s2 p1 odd 9x7", pool(2, 3, 9, 7, 3, 2, 1, false)},
      {"3x3 s2 ceil 8x8", pool(1, 2, 8, 8, 3, 2, 0, true)},
      {"2x2 s2 odd 5x5", pool(2, 2, 5, 5, 2, 2, 0, false)},
      {"3x3 s1 p1", pool(1, 3, 6, 6, 3, 1, 1, false)},
      {"3x3 s2 p1 ceil 10x10", pool(1, 1, 10, 10, 3, 2, 1, true)},
      {"5x5 s3 no pad counted", pool(2, 2, 8, 8, 5, 3, 2, true, 1, false)},
      {"3x3 s1 p1 no pad counted", pool(1, 3, 6, 5, 3, 1, 1, false, 1, false)},
  };
  for (const auto& [name, g] : cases) {
    CAPTURE(name);
    const auto xs = static_cast<std::size_t>(g.n * g.c * g.h * g.w), ys = static_cast<std::size_t>(g.n * g.c * g.oh * g.ow);
    vec x = random_vec(xs, 41);
    const auto xf = to_float(x);
    const vec r = random_vec(ys, 42);
    const auto rf = to_float(r);
    for (const bool max : {true, false}) {
      const std::string kind = max ? "max_pool" : "avg_pool";
      vec y(ys), dx(xs);
      std::vector<float> yf(ys), dxf(xs);
      if (max) {
        max_pool_forward<double>(g, x.data(), y.data());
        max_pool_forward<float>(g, xf.data(), yf.data());
        max_pool_backward<double>(g, x.data(), r.data(), dx.data());
        max_pool_backward<float>(g, xf.data(), rf.data(), dxf.data());
      } else {
        avg_pool_forward<double>(g, x.data(), y.data());
        avg_pool_forward<float>(g, xf.data(), yf.data());
        avg_pool_backward<double>(g, r.data(), dx.data());
        avg_pool_backward<float>(g, rf.data(), dxf.data());
      }
      const vec ref = pool_reference(g, x, max);
      record(kind + " forward f64", relative_error(y, ref), f64_limit);
      record(kind + " forward f32", relative_error(yf, ref), f32_limit);
      record(kind + " backward vs numeric",
             relative_error(dx, numeric_gradient(&x, r, [&] { return pool_reference(g, x, max); })), numeric_limit);
      record(kind + " backward f32 vs f64", relative_error(dxf, dx), f32_limit);
    }
  }
  // Dilated max pooling (avg_pool has no dilation).
  const pool_geometry g = pool(1, 2, 11, 9, 3, 2, 1, false, 2);
  vec x = random_vec(static_cast<std::size_t>(g.n * g.c * g.h * g.w), 43);
  vec y(static_cast<std::size_t>(g.n * g.c * g.oh * g.ow)), dx(x.size());
  max_pool_forward<double>(g, x.data(), y.data());
  record("max_pool forward f64", relative_error(y, pool_reference(g, x, true)), f64_limit);
  const auto xf = to_float(x);
  std::vector<float> yf(y.size()), dxf(x.size());
  max_pool_forward<float>(g, xf.data(), yf.data());
  record("max_pool forward f32", relative_error(yf, pool_reference(g, x, true)), f32_limit);
  const vec r = random_vec(y.size(), 44);
  max_pool_backward<double>(g, x.data(), r.data(), dx.data());
  record("max_pool backward vs numeric",
         relative_error(dx, numeric_gradient(&x, r, [&] { return pool_reference(g, x, true); })), numeric_limit);
  const auto rf = to_float(r);
  max_pool_backward<float>(g, xf.data(), rf.data(), dxf.data());
  record("max_pool backward f32 vs f64", relative_error(dxf, dx), f32_limit);
  print_worst("kernels");
}

TEST_CASE("adaptive average pooling") {
  for (const auto& [h, w, oh, ow] : std::vector<std::array<int64_t, 4>>{{7, 7, 3, 3}, {5, 6, 2, 4}, {4, 4, 1, 1}, {3, 3, 6, 5}}) {
    pool_geometry g;
    g.n = 2, g.c = 3, g.h = h, g.w = w, g.oh = oh, g.ow = ow;
    const auto xs = static_cast<std::size_t>(g.n * g.c * h * w), ys = static_cast<std::size_t>(g.n * g.c * oh * ow);
    vec x = random_vec(xs, 51);
    auto reference = [&] {
      vec y(ys);
      for (int64_t plane = 0; plane < g.n * g.c; ++plane)
        for (int64_t i = 0; i < oh; ++i)
          for (int64_t j = 0; j < ow; ++j) {
            const int64_t y0 = static_cast<int64_t>(std::floor(static_cast<double>(i * h) / static_cast<double>(oh)));
            const int64_t y1 = static_cast<int64_t>(std::ceil(static_cast<double>((i + 1) * h) / static_cast<double>(oh)));
            const int64_t x0 = static_cast<int64_t>(std::floor(static_cast<double>(j * w) / static_cast<double>(ow)));
            const int64_t x1 = static_cast<int64_t>(std::ceil(static_cast<double>((j + 1) * w) / static_cast<double>(ow)));
            double s = 0;
            for (int64_t a = y0; a < y1; ++a)
              for (int64_t b = x0; b < x1; ++b) s += x[static_cast<std::size_t>((plane * h + a) * w + b)];
            y[static_cast<std::size_t>((plane * oh + i) * ow + j)] = s / static_cast<double>((y1 - y0) * (x1 - x0));
          }
      return y;
    };
    vec y(ys), dx(xs);
    std::vector<float> yf(ys);
    const auto xf = to_float(x);
    adaptive_avg_pool_forward<double>(g, x.data(), y.data());
    adaptive_avg_pool_forward<float>(g, xf.data(), yf.data());
    record("adaptive_avg_pool forward f64", relative_error(y, reference()), f64_limit);
    record("adaptive_avg_pool forward f32", relative_error(yf, reference()), f32_limit);
    const vec r = random_vec(ys, 52);
    adaptive_avg_pool_backward<double>(g, r.data(), dx.data());
    record("adaptive_avg_pool backward vs numeric", relative_error(dx, numeric_gradient(&x, r, reference)), numeric_limit);
    std::vector<float> dxf(xs);
    const auto rf = to_float(r);
    adaptive_avg_pool_backward<float>(g, rf.data(), dxf.data());
    record("adaptive_avg_pool backward f32 vs f64", relative_error(dxf, dx), f32_limit);
  }
  print_worst("kernels");
}

TEST_CASE("add, concat, slice") {
  const vec a = random_vec(60, 61), b = random_vec(60, 62), c = random_vec(60, 63);
  vec y(60);
  const double* ops[] = {a.data(), b.data(), c.data()};
  add_forward<double>(60, ops, y.data());
  for (std::size_t i = 0; i < 60; ++i) CHECK(y[i] == (a[i] + b[i]) + c[i]);
  const auto af = to_float(a), bf = to_float(b), cf = to_float(c);
  std::vector<float> yf(60);
  const float* ops_f[] = {af.data(), bf.data(), cf.data()};
  add_forward<float>(60, ops_f, yf.data());
  record("add forward f32", relative_error(yf, y), f32_limit);

  // concat of [2, 1, 3], [2, 2, 3], [2, 3, 3] along axis 1
  const std::vector<int64_t> channels{1, 2, 3};
  const vec p = random_vec(6, 64), q = random_vec(12, 65), s = random_vec(18, 66);
  vec out(36);
  const double* parts[] = {p.data(), q.data(), s.data()};
  concat_forward<double>(2, 3, channels, parts, out.data());
  CHECK(out[0] == p[0]);
  CHECK(out[3] == q[0]);
  CHECK(out[9] == s[0]);
  CHECK(out[18] == p[3]);
  CHECK(out[21] == q[6]);
  vec dp(6), dq(12), ds(18);
  double* grads[] = {dp.data(), nullptr, ds.data()};
  concat_backward<double>(2, 3, channels, out.data(), grads);
  CHECK(dp == p);
  CHECK(ds == s);
  const auto pf = to_float(p), qf = to_float(q), sf = to_float(s);
  std::vector<float> outf(36), dpf(6), dsf(18);
  const float* parts_f[] = {pf.data(), qf.data(), sf.data()};
  concat_forward<float>(2, 3, channels, parts_f, outf.data());
  record("concat forward f32", relative_error(outf, out), f32_limit);
  float* grads_f[] = {dpf.data(), nullptr, dsf.data()};
  concat_backward<float>(2, 3, channels, outf.data(), grads_f);
  record("concat backward f32", std::max(relative_error(dpf, p), relative_error(dsf, s)), f32_limit);

  // A rank-4 slice, every dimension cut (FactorizedReduce's x[:, :, 1:, 1:] and more).
  const std::vector<int64_t> dims{2, 3, 5, 4}, begin{1, 0, 1, 1}, end{2, 2, 5, 3};
  vec x = random_vec(120, 67);
  auto reference = [&] {
    vec r;
    for (int64_t i = begin[0]; i < end[0]; ++i)
      for (int64_t j = begin[1]; j < end[1]; ++j)
        for (int64_t k = begin[2]; k < end[2]; ++k)
          for (int64_t l = begin[3]; l < end[3]; ++l) r.push_back(x[static_cast<std::size_t>(((i * 3 + j) * 5 + k) * 4 + l)]);
    return r;
  };
  vec sliced(16);
  slice_forward<double>(dims, begin, end, x.data(), sliced.data());
  CHECK(sliced == reference());
  const vec r = random_vec(16, 68);
  vec dx(120);
  slice_backward<double>(dims, begin, end, r.data(), dx.data());
  CHECK(relative_error(dx, numeric_gradient(&x, r, reference)) <= numeric_limit);
  const auto xf = to_float(x), rf = to_float(r);
  std::vector<float> slicedf(16), dxf(120);
  slice_forward<float>(dims, begin, end, xf.data(), slicedf.data());
  record("slice forward f32", relative_error(slicedf, reference()), f32_limit);
  slice_backward<float>(dims, begin, end, rf.data(), dxf.data());
  record("slice backward f32 vs f64", relative_error(dxf, dx), f32_limit);
  print_worst("kernels");
}

TEST_CASE("dropout: keyed masks, inverted scaling, the backward regenerates the mask") {
  const std::size_t n = 20000;
  const vec x = random_vec(n, 71, 0.5, 1.5);
  const dropout_key key{3, 5, 17};
  vec y(n), again(n), other(n), dx(n);
  dropout_forward<double>(n, 0.3, key, x.data(), y.data());
  dropout_forward<double>(n, 0.3, key, x.data(), again.data());
  dropout_forward<double>(n, 0.3, dropout_key{3, 6, 17}, x.data(), other.data());
  CHECK(y == again);
  CHECK(y != other);
  std::size_t kept = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (y[i] != 0) {
      ++kept;
      CHECK(y[i] == doctest::Approx(x[i] / 0.7));
    }
  }
  CHECK(static_cast<double>(kept) / n == doctest::Approx(0.7).epsilon(0.02));
  const vec ones(n, 1.0);
  dropout_backward<double>(n, 0.3, key, ones.data(), dx.data());
  for (std::size_t i = 0; i < n; ++i) CHECK((dx[i] != 0) == (y[i] != 0));
  // float draws the same mask from the same key.
  const auto xf = to_float(x), onesf = to_float(ones);
  std::vector<float> yf(n), dxf(n);
  dropout_forward<float>(n, 0.3, key, xf.data(), yf.data());
  dropout_backward<float>(n, 0.3, key, onesf.data(), dxf.data());
  std::size_t same_mask = 0;
  for (std::size_t i = 0; i < n; ++i) same_mask += (yf[i] != 0) == (y[i] != 0) && (dxf[i] != 0) == (dx[i] != 0);
  CHECK(same_mask == n);
  record("dropout forward f32", relative_error(yf, y), f32_limit);
  record("dropout backward f32 vs f64", relative_error(dxf, dx), f32_limit);
  // The key is the whole state: element 123's draw is a pure function.
  CHECK(random_bits(3, 5, 17, 123) == random_bits(3, 5, 17, 123));
  CHECK(random_bits(3, 5, 17, 123) != random_bits(3, 5, 18, 123));
  print_worst("kernels");
}

TEST_CASE("softmax cross-entropy and mse loss") {
  const int64_t n = 5, classes = 7;
  vec logits = random_vec(static_cast<std::size_t>(n * classes), 81, -4, 4);
  const std::vector<int64_t> labels{0, 6, 3, 3, 1};
  auto reference = [&] {
    double total = 0;
    for (int64_t i = 0; i < n; ++i) {
      double z = 0;
      for (int64_t j = 0; j < classes; ++j) z += std::exp(logits[static_cast<std::size_t>(i * classes + j)]);
      total += -std::log(std::exp(logits[static_cast<std::size_t>(i * classes + labels[static_cast<std::size_t>(i)])]) / z);
    }
    return vec{total / n};
  };
  CHECK(softmax_cross_entropy_forward<double>(n, classes, 1, logits.data(), labels.data()) == doctest::Approx(reference()[0]).epsilon(1e-14));
  const auto lf = to_float(logits);
  record("softmax_cross_entropy forward f32",
         relative_error(vec{softmax_cross_entropy_forward<float>(n, classes, 1, lf.data(), labels.data())}, reference()), f32_limit);
  vec d(logits.size());
  softmax_cross_entropy_backward<double>(n, classes, 1, logits.data(), labels.data(), 0.4, d.data());
  record("softmax_cross_entropy backward vs numeric", relative_error(d, numeric_gradient(&logits, {0.4}, reference)),
         numeric_limit);
  std::vector<float> df(logits.size());
  softmax_cross_entropy_backward<float>(n, classes, 1, lf.data(), labels.data(), 0.4, df.data());
  record("softmax_cross_entropy backward f32 vs f64", relative_error(df, d), f32_limit);

  vec a = random_vec(30, 82), b = random_vec(30, 83);
  auto mse = [&] {
    double s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
    return vec{s / static_cast<double>(a.size())};
  };
  CHECK(mse_loss_forward<double>(30, a.data(), b.data()) == doctest::Approx(mse()[0]).epsilon(1e-14));
  vec da(30), db(30);
  mse_loss_backward<double>(30, a.data(), b.data(), 1.5, da.data(), db.data());
  record("mse_loss backward vs numeric",
         std::max(relative_error(da, numeric_gradient(&a, {1.5}, mse)), relative_error(db, numeric_gradient(&b, {1.5}, mse))),
         numeric_limit);
  const auto af = to_float(a), bf = to_float(b);
  record("mse_loss forward f32", relative_error(vec{mse_loss_forward<float>(30, af.data(), bf.data())}, mse()), f32_limit);
  std::vector<float> daf(30), dbf(30);
  mse_loss_backward<float>(30, af.data(), bf.data(), 1.5f, daf.data(), dbf.data());
  record("mse_loss backward f32 vs f64", std::max(relative_error(daf, da), relative_error(dbf, db)), f32_limit);
  print_worst("kernels");
}

}  // TEST_SUITE
