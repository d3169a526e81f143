// The CUDA kernels' per-element bodies (backends/cuda/src/elements.hpp),
// compiled by g++ and run over every element on the host, against the CPU
// runtime's kernels: the index arithmetic of every custom kernel is checked
// without a device. Pooling, dropout, slicing, concatenation, activations,
// batch-norm formulas and the softmax loss agree bit for bit, because they
// compute the same expressions in the same order (gradients gathered in
// increasing output order, which is the order the CPU adds them in).

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <remat/cpu/kernels.hpp>
#include <remat/cpu/model.hpp>

#include "../support/reduced_zoo.hpp"
#include "elements.hpp"

using namespace remat;
namespace el = remat::cuda::elements;

namespace {

std::vector<float> random_values(std::size_t n, std::uint64_t seed, bool ties = false) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  // Ties: values from a handful of levels, so windows often hold equal maxima.
  for (float& x : v) x = ties ? static_cast<float>(static_cast<int>(u(rng) * 3)) : u(rng);
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::size_t input_elements(const ops::pool_geometry& g) { return static_cast<std::size_t>(g.n * g.c * g.h * g.w); }
std::size_t output_elements(const ops::pool_geometry& g) { return static_cast<std::size_t>(g.n * g.c * g.oh * g.ow); }

// Every pooling node of the reduced zoo, and geometries that stress the rules.
std::vector<std::pair<std::string, ops::op_info>> pooling_ops() {
  std::vector<std::pair<std::string, ops::op_info>> out;
  for (const std::string& family : test::reduced_families()) {
    const graph g = test::reduced_model(family);
    const cpu::model<float> m(g);
    for (node_id v = 0; v < g.size(); ++v) {
      const ops::op_kind k = m.op(v).kind;
      if (k == ops::op_kind::max_pool || k == ops::op_kind::avg_pool || k == ops::op_kind::adaptive_avg_pool)
        out.emplace_back(g.name() + "/" + g.node_name(v), m.op(v));
    }
  }
  auto made = [&](const std::string& name, ops::op_kind kind, ops::pool_geometry p) {
    ops::op_info o;
    o.kind = kind;
    o.pool = p;
    out.emplace_back(name, o);
  };
  // 7×9 maps: ceil mode, padding, dilation, both divisor rules; adaptive up and down.
  made("max 3/2 pad 1 ceil", ops::op_kind::max_pool, {2, 3, 7, 9, 4, 5, 3, 3, 2, 2, 1, 1, 1, 1, true});
  made("max 3/1 dilation 2", ops::op_kind::max_pool, {1, 2, 7, 9, 3, 5, 3, 3, 1, 1, 0, 0, 2, 2, true});
  made("max 2x3 stride (2,3) pad (1,1)", ops::op_kind::max_pool, {1, 2, 7, 9, 4, 4, 2, 3, 2, 3, 1, 1, 1, 1, true});
  // Maps larger than one tile of the tiled max-pool backward (at most 32 wide, 512 inputs).
  made("max 3/2 pad 1, 37x70", ops::op_kind::max_pool, {1, 2, 37, 70, 19, 35, 3, 3, 2, 2, 1, 1, 1, 1, true});
  made("max 3/1 dilation 2, 33x41", ops::op_kind::max_pool, {1, 2, 33, 41, 29, 37, 3, 3, 1, 1, 0, 0, 2, 2, true});
  made("max 2/2, 64x66", ops::op_kind::max_pool, {2, 1, 64, 66, 32, 33, 2, 2, 2, 2, 0, 0, 1, 1, true});
  made("max 2x3 stride (2,3) pad (1,1), 20x50", ops::op_kind::max_pool,
       {1, 2, 20, 50, 11, 17, 2, 3, 2, 3, 1, 1, 1, 1, true});
  made("avg 3/2 pad 1 include pad", ops::op_kind::avg_pool, {2, 3, 7, 9, 4, 5, 3, 3, 2, 2, 1, 1, 1, 1, true});
  made("avg 3/2 pad 1 exclude pad ceil", ops::op_kind::avg_pool, {2, 3, 7, 9, 4, 5, 3, 3, 2, 2, 1, 1, 1, 1, false});
  made("avg 5/3 ceil", ops::op_kind::avg_pool, {1, 2, 7, 9, 2, 3, 5, 5, 3, 3, 0, 0, 1, 1, true});
  made("adaptive 7x9 -> 3x4", ops::op_kind::adaptive_avg_pool, {2, 3, 7, 9, 3, 4});
  made("adaptive 7x9 -> 10x13", ops::op_kind::adaptive_avg_pool, {1, 2, 7, 9, 10, 13});
  made("adaptive 5x5 -> 1x1", ops::op_kind::adaptive_avg_pool, {1, 4, 5, 5, 1, 1});
  return out;
}

// C = op(A) · op(B), column-major, as cuBLAS defines cublasSgemm.
std::vector<float> column_major_gemm(const el::gemm_shape& g, const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> c(static_cast<std::size_t>(g.ldc * g.n));
  for (std::int64_t j = 0; j < g.n; ++j)
    for (std::int64_t i = 0; i < g.m; ++i) {
      double sum = 0;
      for (std::int64_t l = 0; l < g.k; ++l)
        sum += static_cast<double>(a[static_cast<std::size_t>(g.transpose_a ? l + i * g.lda : i + l * g.lda)]) *
               b[static_cast<std::size_t>(g.transpose_b ? j + l * g.ldb : l + j * g.ldb)];
      c[static_cast<std::size_t>(i + j * g.ldc)] = static_cast<float>(sum);
    }
  return c;
}

void check_close(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  float scale = 0, diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, std::abs(b[i]));
    diff = std::max(diff, std::abs(a[i] - b[i]));
  }
  CHECK(diff <= 1e-5f * scale);
}

}  // namespace

TEST_SUITE("cuda elements") {

TEST_CASE("the linear layer's cuBLAS GEMM shapes compute the CPU kernels' products") {
  const std::int64_t rows = 5, in = 7, out = 3;
  const auto x = random_values(static_cast<std::size_t>(rows * in), 20);
  const auto w = random_values(static_cast<std::size_t>(out * in), 21);
  const auto dy = random_values(static_cast<std::size_t>(rows * out), 22);
  std::vector<float> y(static_cast<std::size_t>(rows * out)), dx(x.size()), dw(w.size());
  cpu::linear_forward<float>(rows, in, out, x.data(), w.data(), nullptr, y.data());
  cpu::linear_backward<float>(rows, in, out, x.data(), w.data(), dy.data(), dx.data(), dw.data(), nullptr);
  check_close(column_major_gemm(el::linear_output(rows, in, out), w, x), y);
  check_close(column_major_gemm(el::linear_weight_gradient(rows, in, out), x, dy), dw);
  check_close(column_major_gemm(el::linear_input_gradient(rows, in, out), w, dy), dx);
}

TEST_CASE("the fast divider's quotients and remainders are exact below 2^31") {
  std::mt19937_64 random(7);
  std::vector<std::uint32_t> divisors{1, 2, 3, 7, 49, 64, 196, 784, 3136, 12544, 50176, 1000003, (1u << 31) - 1, 1u << 30};
  for (int k = 0; k < 200; ++k) divisors.push_back(static_cast<std::uint32_t>(random() % ((1u << 31) - 1)) + 1);
  for (const std::uint32_t d : divisors) {
    CAPTURE(d);
    const el::fast_divider f(d);
    std::vector<std::uint32_t> numerators{0, 1, d - 1, d, (1u << 31) - 1, (1u << 31) - 2};
    if (d < (1u << 30)) numerators.push_back(2 * d - 1), numerators.push_back(2 * d);
    for (int k = 0; k < 2000; ++k) numerators.push_back(static_cast<std::uint32_t>(random() % (1u << 31)));
    for (const std::uint32_t n : numerators) {
      if (n >= (1u << 31)) continue;
      REQUIRE(f.quotient(n) == n / d);
      REQUIRE(f.remainder(n) == n % d);
    }
  }
}

TEST_CASE("pooling bodies give the CPU kernels' values and gradients bit for bit") {
  int checked = 0;
  for (const auto& [name, o] : pooling_ops()) {
    CAPTURE(name);
    const ops::pool_geometry& g = o.pool;
    for (const bool ties : {false, true}) {
      const auto x = random_values(input_elements(g), 1, ties);
      const auto dy = random_values(output_elements(g), 2);
      std::vector<float> y_cpu(output_elements(g)), dx_cpu(input_elements(g));
      std::vector<float> y_gpu(y_cpu.size()), dx_gpu(dx_cpu.size());
      switch (o.kind) {
        case ops::op_kind::max_pool:
          cpu::max_pool_forward(g, x.data(), y_cpu.data());
          cpu::max_pool_backward(g, x.data(), dy.data(), dx_cpu.data());
          for (std::size_t i = 0; i < y_gpu.size(); ++i) y_gpu[i] = el::max_pool_forward(g, x.data(), static_cast<std::int64_t>(i));
          for (std::size_t i = 0; i < dx_gpu.size(); ++i)
            dx_gpu[i] = el::max_pool_backward(g, x.data(), dy.data(), static_cast<std::int64_t>(i));
          {  // The tiled kernels' two phases, a tile at a time: every input written once, the same bits.
            REQUIRE(el::pool_tiles::fits(g));
            const el::pool_tiles tiles(g);
            const el::pool_dims<int> d(g);
            std::vector<float> dx_tiled(dx_cpu.size(), std::numeric_limits<float>::quiet_NaN());
            std::vector<int> writes(dx_cpu.size(), 0);
            for (std::int64_t b = 0; b < g.n * g.c * tiles.per_plane(); ++b) {
              const el::pool_tile t(d, tiles, b);
              REQUIRE(t.windows() <= tiles.wy * tiles.wx);
              REQUIRE(t.height() <= tiles.th);
              REQUIRE(t.width() <= tiles.tw);
              std::vector<int> argmax(static_cast<std::size_t>(t.windows()));
              for (int k = 0; k < t.windows(); ++k) argmax[static_cast<std::size_t>(k)] = t.argmax(d, x.data(), k);
              for (int r = 0; r < t.height(); ++r)
                for (int c = 0; c < t.width(); ++c) {
                  const auto in = static_cast<std::size_t>(t.input(d, r, c));
                  dx_tiled[in] = t.gather(d, dy.data(), r, c, t.row_span(d, r), t.column_span(d, c), argmax.data());
                  ++writes[in];
                }
            }
            CHECK(std::all_of(writes.begin(), writes.end(), [](int w) { return w == 1; }));
            CHECK(same_bits(dx_tiled, dx_cpu));
            // The 32-bit forward's argmax is the CPU's too.
            std::vector<float> y_32(y_cpu.size());
            for (std::int64_t i = 0; i < static_cast<std::int64_t>(y_32.size()); ++i) {
              const std::int64_t plane = i / (g.oh * g.ow), at = i % (g.oh * g.ow);
              const float* xp = x.data() + plane * g.h * g.w;
              const int best = ops::argmax_in_window(d, xp, static_cast<int>(at / g.ow), static_cast<int>(at % g.ow));
              y_32[static_cast<std::size_t>(i)] = best < 0 ? -std::numeric_limits<float>::infinity() : xp[best];
            }
            CHECK(same_bits(y_32, y_cpu));
          }
          break;
        case ops::op_kind::avg_pool:
          cpu::avg_pool_forward(g, x.data(), y_cpu.data());
          cpu::avg_pool_backward(g, dy.data(), dx_cpu.data());
          for (std::size_t i = 0; i < y_gpu.size(); ++i) y_gpu[i] = el::avg_pool_forward(g, x.data(), static_cast<std::int64_t>(i));
          for (std::size_t i = 0; i < dx_gpu.size(); ++i) dx_gpu[i] = el::avg_pool_backward(g, dy.data(), static_cast<std::int64_t>(i));
          break;
        default:
          cpu::adaptive_avg_pool_forward(g, x.data(), y_cpu.data());
          cpu::adaptive_avg_pool_backward(g, dy.data(), dx_cpu.data());
          for (std::size_t i = 0; i < y_gpu.size(); ++i)
            y_gpu[i] = el::adaptive_avg_pool_forward(g, x.data(), static_cast<std::int64_t>(i));
          for (std::size_t i = 0; i < dx_gpu.size(); ++i)
            dx_gpu[i] = el::adaptive_avg_pool_backward(g, dy.data(), static_cast<std::int64_t>(i));
          break;
      }
      CHECK(same_bits(y_gpu, y_cpu));
      CHECK(same_bits(dx_gpu, dx_cpu));
      ++checked;
    }
  }
  CHECK(checked >= 30);
}

TEST_CASE("dropout bodies keep the CPU runtime's mask and scale, forward and backward") {
  const std::size_t n = 20000;
  const auto x = random_values(n, 3);
  for (const double p : {0.1, 0.5, 0.9}) {
    const ops::dropout_key key{42, 3, 17};
    std::vector<float> cpu_y(n), cpu_dx(n), gpu_y(n);
    cpu::dropout_forward(n, p, key, x.data(), cpu_y.data());
    cpu::dropout_backward(n, p, key, x.data(), cpu_dx.data());
    for (std::size_t i = 0; i < n; ++i) gpu_y[i] = el::dropout(p, key, i, x[i]);
    CHECK(same_bits(gpu_y, cpu_y));
    CHECK(same_bits(gpu_y, cpu_dx));
    std::size_t kept = 0;
    for (float v : gpu_y) kept += v != 0.0f;
    CHECK(static_cast<double>(kept) / n == doctest::Approx(1 - p).epsilon(0.05));
  }
}

TEST_CASE("slice and concat index maps move the CPU kernels' elements") {
  // FactorizedReduce's slice of the DARTS network, and a rank-3 and a rank-1 slice.
  const std::vector<std::vector<std::vector<std::int64_t>>> slices{
      {{2, 3, 8, 8}, {0, 0, 1, 1}, {2, 3, 8, 8}}, {{4, 5, 6}, {1, 2, 0}, {3, 5, 4}}, {{10}, {3}, {9}}};
  for (const auto& s : slices) {
    ops::op_info o;
    o.in_dims = s[0], o.begin = s[1], o.end = s[2];
    std::size_t in_count = 1, out_count = 1;
    for (std::size_t d = 0; d < o.in_dims.size(); ++d) {
      in_count *= static_cast<std::size_t>(o.in_dims[d]);
      out_count *= static_cast<std::size_t>(o.end[d] - o.begin[d]);
    }
    const el::slice_geometry geometry = el::slice_geometry_of(o);
    const auto x = random_values(in_count, 4);
    std::vector<float> cpu_y(out_count), gpu_y(out_count);
    cpu::slice_forward<float>(o.in_dims, o.begin, o.end, x.data(), cpu_y.data());
    for (std::size_t i = 0; i < out_count; ++i) gpu_y[i] = x[static_cast<std::size_t>(el::slice_source(geometry, static_cast<std::int64_t>(i)))];
    CHECK(same_bits(gpu_y, cpu_y));
  }

  const std::int64_t outer = 3, inner = 5;
  const std::vector<std::int64_t> channels{2, 4, 1};
  std::vector<std::vector<float>> operands;
  std::vector<const float*> pointers;
  std::int64_t total = 0;
  for (std::size_t k = 0; k < channels.size(); ++k) {
    operands.push_back(random_values(static_cast<std::size_t>(outer * channels[k] * inner), 10 + k));
    pointers.push_back(operands.back().data());
    total += channels[k];
  }
  std::vector<float> cpu_y(static_cast<std::size_t>(outer * total * inner)), gpu_y(cpu_y.size());
  cpu::concat_forward<float>(outer, inner, channels, pointers, cpu_y.data());
  // What cudaMemcpy2DAsync does with each block, forward and back.
  for (std::size_t k = 0; k < channels.size(); ++k) {
    const el::concat_block b = el::concat_operand(outer, inner, channels, k);
    for (std::int64_t r = 0; r < b.rows; ++r)
      for (std::int64_t e = 0; e < b.width; ++e)
        gpu_y[static_cast<std::size_t>(b.offset + r * b.pitch + e)] = operands[k][static_cast<std::size_t>(r * b.width + e)];
  }
  CHECK(same_bits(gpu_y, cpu_y));
  for (std::size_t k = 0; k < channels.size(); ++k) {
    std::vector<float> back(operands[k].size());
    const el::concat_block b = el::concat_operand(outer, inner, channels, k);
    for (std::int64_t r = 0; r < b.rows; ++r)
      for (std::int64_t e = 0; e < b.width; ++e)
        back[static_cast<std::size_t>(r * b.width + e)] = gpu_y[static_cast<std::size_t>(b.offset + r * b.pitch + e)];
    CHECK(same_bits(back, operands[k]));
  }
}

TEST_CASE("activation, batch-norm and softmax-loss bodies compute the CPU kernels' expressions") {
  const std::size_t n = 4096;
  const auto x = random_values(n, 5), dy = random_values(n, 6);
  std::vector<float> cpu_out(n), gpu_out(n);
  cpu::relu_forward(n, x.data(), cpu_out.data());
  for (std::size_t i = 0; i < n; ++i) gpu_out[i] = el::relu(x[i]);
  CHECK(same_bits(gpu_out, cpu_out));
  cpu::relu_backward(n, x.data(), dy.data(), cpu_out.data());
  for (std::size_t i = 0; i < n; ++i) gpu_out[i] = el::relu_gradient(x[i], dy[i]);
  CHECK(same_bits(gpu_out, cpu_out));
  cpu::sigmoid_forward(n, x.data(), cpu_out.data());
  for (std::size_t i = 0; i < n; ++i) gpu_out[i] = el::sigmoid(x[i]);
  CHECK(same_bits(gpu_out, cpu_out));
  cpu::sigmoid_backward(n, x.data(), dy.data(), cpu_out.data());
  for (std::size_t i = 0; i < n; ++i) gpu_out[i] = el::sigmoid_gradient(x[i], dy[i]);
  CHECK(same_bits(gpu_out, cpu_out));

  // Batch norm [4, 8, 128]: the statistics as the CPU computes them (two
  // passes in double), then the bodies per element.
  const ops::batch_norm_geometry g{4, 8, 128};
  const auto gamma = random_values(8, 7), beta = random_values(8, 8);
  cpu::batch_norm_forward(g, x.data(), gamma.data(), beta.data(), 1e-5, cpu_out.data(), nullptr, nullptr);
  std::vector<float> cpu_dx(n), cpu_dgamma(8), cpu_dbeta(8), gpu_dx(n);
  cpu::batch_norm_backward(g, x.data(), gamma.data(), 1e-5, dy.data(), cpu_dx.data(), cpu_dgamma.data(), cpu_dbeta.data());
  const double count = static_cast<double>(g.n * g.spatial);
  for (std::int64_t c = 0; c < g.c; ++c) {
    auto each = [&](auto&& f) {
      for (std::int64_t i = 0; i < g.n; ++i)
        for (std::int64_t s = 0; s < g.spatial; ++s) f(static_cast<std::size_t>((i * g.c + c) * g.spatial + s));
    };
    double sum = 0, squares = 0, sum_dy = 0, sum_dy_xhat = 0;
    each([&](std::size_t at) { sum += x[at]; });
    const double mean = sum / count;
    each([&](std::size_t at) { squares += (x[at] - mean) * (x[at] - mean); });
    const double inv_std = 1.0 / std::sqrt(squares / count + 1e-5);
    each([&](std::size_t at) {
      sum_dy += dy[at];
      sum_dy_xhat += static_cast<double>(dy[at]) * (static_cast<double>(x[at]) - mean) * inv_std;
    });
    const auto k = static_cast<std::size_t>(c);
    CHECK(static_cast<float>(sum_dy) == cpu_dbeta[k]);
    CHECK(static_cast<float>(sum_dy_xhat) == cpu_dgamma[k]);
    each([&](std::size_t at) {
      gpu_out[at] = el::batch_norm_output(x[at], mean, inv_std, gamma[k], beta[k]);
      gpu_dx[at] = el::batch_norm_input_gradient(x[at], dy[at], mean, inv_std, gamma[k], count, sum_dy, sum_dy_xhat);
    });
  }
  CHECK(same_bits(gpu_out, cpu_out));
  CHECK(same_bits(gpu_dx, cpu_dx));

  // Softmax cross-entropy over [16, 100] logits.
  const std::int64_t rows = 16, classes = 100;
  const auto logits = random_values(static_cast<std::size_t>(rows * classes), 9);
  std::vector<std::int64_t> labels(static_cast<std::size_t>(rows));
  for (std::int64_t i = 0; i < rows; ++i) labels[static_cast<std::size_t>(i)] = (i * 37) % classes;
  double total = 0;
  std::vector<float> gpu_grad(logits.size()), cpu_grad(logits.size());
  const float dloss = 0.4f;
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* row = logits.data() + i * classes;
    const el::softmax_row r = el::softmax_of(row, classes);
    total += el::cross_entropy(row, r, labels[static_cast<std::size_t>(i)]);
    for (std::int64_t j = 0; j < classes; ++j)
      gpu_grad[static_cast<std::size_t>(i * classes + j)] =
          el::cross_entropy_gradient(row[j], r, j == labels[static_cast<std::size_t>(i)], static_cast<double>(dloss) / rows);
  }
  CHECK(total / rows == cpu::softmax_cross_entropy_forward(rows, classes, 1, logits.data(), labels.data()));
  cpu::softmax_cross_entropy_backward(rows, classes, 1, logits.data(), labels.data(), dloss, cpu_grad.data());
  CHECK(same_bits(gpu_grad, cpu_grad));

  // Per pixel: logits [2, 5, 3·4], each position's classes 12 apart.
  const std::int64_t images = 2, kinds = 5, inner = 12;
  const auto pixels = random_values(static_cast<std::size_t>(images * kinds * inner), 10);
  std::vector<std::int64_t> pixel_labels(static_cast<std::size_t>(images * inner));
  for (std::size_t p = 0; p < pixel_labels.size(); ++p) pixel_labels[p] = static_cast<std::int64_t>(p * 3 % kinds);
  std::vector<float> gpu_pixel_grad(pixels.size()), cpu_pixel_grad(pixels.size());
  double pixel_total = 0;
  const double pixel_scale = static_cast<double>(dloss) / static_cast<double>(images * inner);
  for (std::int64_t p = 0; p < images * inner; ++p) {
    const float* first = pixels.data() + p / inner * kinds * inner + p % inner;
    const el::softmax_row r = el::softmax_of(first, kinds, inner);
    const std::int64_t label = pixel_labels[static_cast<std::size_t>(p)];
    pixel_total += el::cross_entropy(first, r, label, inner);
    for (std::int64_t j = 0; j < kinds; ++j)
      gpu_pixel_grad[static_cast<std::size_t>(first - pixels.data() + j * inner)] =
          el::cross_entropy_gradient(first[j * inner], r, j == label, pixel_scale);
  }
  CHECK(pixel_total / static_cast<double>(images * inner) ==
        doctest::Approx(cpu::softmax_cross_entropy_forward(images, kinds, inner, pixels.data(), pixel_labels.data()))
            .epsilon(1e-15));
  cpu::softmax_cross_entropy_backward(images, kinds, inner, pixels.data(), pixel_labels.data(), dloss,
                                      cpu_pixel_grad.data());
  CHECK(same_bits(gpu_pixel_grad, cpu_pixel_grad));
}

TEST_CASE("bilinear upsampling bodies give the CPU kernels' values and gathered gradients bit for bit") {
  // Up, down, PSPNet's 90 → 713 ratio in small, from a 1×1 bin; both corner modes.
  const std::vector<ops::upsample_geometry> cases{
      {2, 3, 3, 4, 7, 9, false}, {2, 3, 3, 4, 7, 9, true}, {1, 2, 6, 6, 47, 47, true}, {1, 2, 6, 6, 47, 47, false},
      {1, 2, 7, 9, 3, 4, false}, {1, 2, 7, 9, 3, 4, true}, {1, 3, 1, 1, 5, 4, true},   {1, 3, 1, 1, 5, 4, false},
  };
  std::uint64_t seed = 40;
  for (const ops::upsample_geometry& g : cases) {
    CAPTURE(g.h);
    CAPTURE(g.oh);
    CAPTURE(g.align_corners);
    const auto in = static_cast<std::size_t>(g.n * g.c * g.h * g.w), out = static_cast<std::size_t>(g.n * g.c * g.oh * g.ow);
    const auto x = random_values(in, ++seed), dy = random_values(out, ++seed);
    std::vector<float> y_cpu(out), y_gpu(out), dx_cpu(in), dx_gpu(in);
    cpu::upsample_bilinear_forward(g, x.data(), y_cpu.data());
    cpu::upsample_bilinear_backward(g, dy.data(), dx_cpu.data());
    for (std::size_t i = 0; i < out; ++i) y_gpu[i] = el::upsample_bilinear_forward(g, x.data(), static_cast<std::int64_t>(i));
    for (std::size_t i = 0; i < in; ++i) dx_gpu[i] = el::upsample_bilinear_backward(g, dy.data(), static_cast<std::int64_t>(i));
    CHECK(same_bits(y_gpu, y_cpu));
    CHECK(same_bits(dx_gpu, dx_cpu));
  }
}

}
