// The runtime's own kernels: grid-stride loops over the per-element bodies of
// elements.hpp, and two-phase per-channel reductions in double with a fixed
// summation order (block partials, then one thread per channel adding them in
// chunk order).

#include "kernels.cuh"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "check.cuh"
#include "remat/cuda/plan.hpp"

namespace remat::cuda::kernels {
namespace {

using std::int64_t;

constexpr int threads = 256;  // every kernel's block size; the reduction tree depends on it

unsigned blocks_for(std::size_t count) {
  return static_cast<unsigned>(std::clamp<std::size_t>((count + threads - 1) / threads, 1, 16384));
}

template <class F>
__global__ void each_index(int64_t count, F f) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    f(i);
}

// Calls f(i) for every i in [0, count) on the device.
template <class F>
void for_each(cudaStream_t stream, std::size_t count, F f) {
  if (count == 0) return;
  each_index<<<blocks_for(count), threads, 0, stream>>>(static_cast<int64_t>(count), f);
  REMAT_CUDA_TRY(cudaGetLastError());
}

std::size_t elements_of(const ops::pool_geometry& g, bool output) {
  return static_cast<std::size_t>(g.n * g.c * (output ? g.oh * g.ow : g.h * g.w));
}

}  // namespace

// Extended lambdas may not be defined in functions with internal linkage.
namespace detail {

// K double sums carried together through one reduction.
template <int K>
struct sums {
  double v[K] = {};
};

// Phase 1: block (chunk, channel) sums value(channel, offset), K sums at
// once, over its share of the channel's n·spatial elements of a [n,
// channels, spatial] tensor: each thread strides by the block size in
// element order, then a fixed tree (warp shuffles, then the warps in order)
// adds the threads. Index is uint32_t when every offset fits, which makes
// the per-element division cheap.
template <int K, class Index, class F>
__global__ void channel_partials(Index n, Index channels, Index spatial, Index chunks, F value, double* partials) {
  __shared__ double warp_sums[K][threads / 32];
  const Index channel = blockIdx.y, chunk = blockIdx.x;
  const Index count = n * spatial, per_chunk = (count + chunks - 1) / chunks;
  const Index begin = chunk * per_chunk, end = begin + per_chunk < count ? begin + per_chunk : count;
  sums<K> sum;
#pragma unroll 4
  for (Index e = begin + threadIdx.x; e < end; e += threads) {
    const Index i = e / spatial, s = e - i * spatial;
    const sums<K> add = value(channel, static_cast<int64_t>((i * channels + channel) * spatial + s));
#pragma unroll
    for (int k = 0; k < K; ++k) sum.v[k] += add.v[k];
  }
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    double x = sum.v[k];
    for (int offset = 16; offset > 0; offset /= 2) x += __shfl_down_sync(0xffffffffu, x, offset);
    if (lane == 0) warp_sums[k][warp] = x;
  }
  __syncthreads();
  if (threadIdx.x < K) {
    double total = 0;
    for (int w = 0; w < threads / 32; ++w) total += warp_sums[threadIdx.x][w];
    partials[(static_cast<int64_t>(threadIdx.x) * gridDim.y + channel) * chunks + chunk] = total;
  }
}

// Phase 2: one thread per channel adds the chunks in order, then finish(channel, totals).
template <int K, class F>
__global__ void channel_totals(int64_t channels, int64_t chunks, const double* partials, F finish) {
  for (int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; c < channels;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    sums<K> total;
    for (int k = 0; k < K; ++k)
      for (int64_t j = 0; j < chunks; ++j) total.v[k] += partials[(k * channels + c) * chunks + j];
    finish(c, total);
  }
}

// 32-bit indices, with room for a grid stride past the end without wrapping.
bool fits_32_bits(int64_t elements) { return elements < (int64_t{1} << 31); }

// finish(channel, K sums of value(channel, offset)) for every channel;
// partials: the first K × channels × reduction_chunks(n·spatial) doubles of
// `scratch`.
template <int K, class Value, class Finish>
void reduce_channels(cudaStream_t stream, int64_t n, int64_t channels, int64_t spatial, double* partials, Value value,
                     Finish finish) {
  const int64_t chunks = reduction_chunks(n * spatial);
  const dim3 grid(static_cast<unsigned>(chunks), static_cast<unsigned>(channels));
  if (fits_32_bits(n * channels * spatial))
    channel_partials<K, std::uint32_t><<<grid, threads, 0, stream>>>(
        static_cast<std::uint32_t>(n), static_cast<std::uint32_t>(channels), static_cast<std::uint32_t>(spatial),
        static_cast<std::uint32_t>(chunks), value, partials);
  else
    channel_partials<K, int64_t><<<grid, threads, 0, stream>>>(n, channels, spatial, chunks, value, partials);
  REMAT_CUDA_TRY(cudaGetLastError());
  channel_totals<K><<<blocks_for(static_cast<std::size_t>(channels)), threads, 0, stream>>>(channels, chunks, partials,
                                                                                            finish);
  REMAT_CUDA_TRY(cudaGetLastError());
}

// One sum of value(channel, offset) per channel, as reduce_channels<1>.
template <class Value, class Finish>
void sum_channels(cudaStream_t stream, int64_t n, int64_t channels, int64_t spatial, double* partials, Value value,
                     Finish finish) {
  reduce_channels<1>(
      stream, n, channels, spatial, partials,
      [=] __device__(int64_t c, int64_t at) {
        sums<1> s;
        s.v[0] = value(c, at);
        return s;
      },
      [=] __device__(int64_t c, const sums<1>& total) { finish(c, total.v[0]); });
}

template <class F>
__global__ void each_channel_index_32(std::uint32_t count, elements::fast_divider spatial,
                                      elements::fast_divider channels, F f) {
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
    f(static_cast<int64_t>(i), static_cast<int64_t>(channels.remainder(spatial.quotient(i))));
}

template <class F>
__global__ void each_channel_index_64(int64_t count, int64_t spatial, int64_t channels, F f) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    f(i, i / spatial % channels);
}

// Calls f(i, channel of i) for every element i of a [n, channels, spatial] tensor.
template <class F>
void for_each_in_channels(cudaStream_t stream, int64_t n, int64_t channels, int64_t spatial, F f) {
  const int64_t count = n * channels * spatial;
  if (count == 0) return;
  const unsigned blocks = blocks_for(static_cast<std::size_t>(count));
  if (fits_32_bits(count))
    each_channel_index_32<<<blocks, threads, 0, stream>>>(
        static_cast<std::uint32_t>(count), elements::fast_divider(static_cast<std::uint32_t>(spatial)),
        elements::fast_divider(static_cast<std::uint32_t>(channels)), f);
  else
    each_channel_index_64<<<blocks, threads, 0, stream>>>(count, spatial, channels, f);
  REMAT_CUDA_TRY(cudaGetLastError());
}

// Calls f(i) for every group i of four elements, [4i, 4i + 4), of `count`
// elements, when every pointer is 16-byte aligned and count a multiple of
// four (then kernels load and store float4), and returns whether it did.
template <class F, class... P>
bool for_each_four(cudaStream_t stream, std::size_t count, F f, const P*... pointers) {
  const bool aligned = ((reinterpret_cast<std::uintptr_t>(pointers) % 16 == 0) && ...);
  if (!aligned || count % 4 != 0 || !fits_32_bits(static_cast<int64_t>(count))) return false;
  for_each(stream, count / 4, f);
  return true;
}

// Where reduction scratch keeps per-channel statistics: after the partials
// of the widest reduction (batch norm's backward, four sums per channel).
struct channel_statistics {
  double *mean, *var, *inv_std, *sum_dy, *sum_dy_xhat;
  channel_statistics(double* scratch, int64_t channels, int64_t count) {
    double* at = scratch + 4 * channels * reduction_chunks(count);
    mean = at, var = at + channels, inv_std = at + 2 * channels, sum_dy = at + 3 * channels,
    sum_dy_xhat = at + 4 * channels;
  }
};

// Max-pool backward by input tiles (elements::pool_tiles): one block a tile.
template <class T>
__global__ void max_pool_backward_tiles(elements::pool_dims<int> g, elements::pool_tiles tiles, const T* x,
                                        const T* dy, T* dx) {
  extern __shared__ int shared[];
  const elements::pool_tile t(g, tiles, blockIdx.x);
  int* argmax = shared;
  auto* row_spans = reinterpret_cast<elements::window_span<int>*>(shared + tiles.wy * tiles.wx);
  auto* column_spans = row_spans + tiles.th;
  for (int k = threadIdx.x; k < t.windows(); k += blockDim.x) argmax[k] = t.argmax(g, x, k);
  for (int r = threadIdx.x; r < t.height(); r += blockDim.x) row_spans[r] = t.row_span(g, r);
  for (int c = threadIdx.x; c < t.width(); c += blockDim.x) column_spans[c] = t.column_span(g, c);
  __syncthreads();
  const int width = t.width();
  for (int k = threadIdx.x; k < t.height() * width; k += blockDim.x) {
    const int r = k / width, c = k - r * width;
    dx[t.input(g, r, c)] = t.gather(g, dy, r, c, row_spans[r], column_spans[c], argmax);
  }
}

// Max-pool forward, one thread per output, in 32-bit index arithmetic.
template <class T>
__global__ void max_pool_forward_32(elements::pool_dims<int> g, std::uint32_t outputs, const T* x, T* y) {
  const std::uint32_t plane_outputs = static_cast<std::uint32_t>(g.oh * g.ow);
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < outputs; i += gridDim.x * blockDim.x) {
    const std::uint32_t plane = i / plane_outputs, at = i - plane * plane_outputs;
    const int oy = static_cast<int>(at / static_cast<std::uint32_t>(g.ow)), ox = static_cast<int>(at) - oy * g.ow;
    const T* xp = x + static_cast<int64_t>(plane) * g.h * g.w;
    const int best = ops::argmax_in_window(g, xp, oy, ox);
    y[i] = best < 0 ? -std::numeric_limits<T>::infinity() : xp[best];
  }
}

}  // namespace detail

template <class T>
void fill(cudaStream_t stream, std::size_t count, T value, T* y) {
  for_each(stream, count, [=] __device__(int64_t i) { y[i] = value; });
}

template <class T>
void relu_forward(cudaStream_t stream, std::size_t count, const T* x, T* y) {
  if constexpr (std::is_same_v<T, float>)
    if (detail::for_each_four(
            stream, count,
            [=] __device__(int64_t i) {
              const float4 v = reinterpret_cast<const float4*>(x)[i];
              reinterpret_cast<float4*>(y)[i] =
                  float4{elements::relu(v.x), elements::relu(v.y), elements::relu(v.z), elements::relu(v.w)};
            },
            x, y))
      return;
  for_each(stream, count, [=] __device__(int64_t i) { y[i] = elements::relu(x[i]); });
}

template <class T>
void relu_backward(cudaStream_t stream, std::size_t count, const T* y, const T* dy, T* dx) {
  if constexpr (std::is_same_v<T, float>)
    if (detail::for_each_four(
            stream, count,
            [=] __device__(int64_t i) {
              const float4 v = reinterpret_cast<const float4*>(y)[i], d = reinterpret_cast<const float4*>(dy)[i];
              reinterpret_cast<float4*>(dx)[i] =
                  float4{elements::relu_gradient(v.x, d.x), elements::relu_gradient(v.y, d.y),
                         elements::relu_gradient(v.z, d.z), elements::relu_gradient(v.w, d.w)};
            },
            y, dy, dx))
      return;
  for_each(stream, count, [=] __device__(int64_t i) { dx[i] = elements::relu_gradient(y[i], dy[i]); });
}

template <class T>
void sigmoid_forward(cudaStream_t stream, std::size_t count, const T* x, T* y) {
  for_each(stream, count, [=] __device__(int64_t i) { y[i] = elements::sigmoid(x[i]); });
}

template <class T>
void sigmoid_backward(cudaStream_t stream, std::size_t count, const T* y, const T* dy, T* dx) {
  for_each(stream, count, [=] __device__(int64_t i) { dx[i] = elements::sigmoid_gradient(y[i], dy[i]); });
}

template <class T>
void dropout(cudaStream_t stream, std::size_t count, double p, const ops::dropout_key& key, const T* in, T* out) {
  for_each(stream, count, [=] __device__(int64_t i) {
    out[i] = elements::dropout(p, key, static_cast<std::uint64_t>(i), in[i]);
  });
}

template <class T>
void add(cudaStream_t stream, std::size_t count, const T* a, const T* b, T* y) {
  if constexpr (std::is_same_v<T, float>)
    if (detail::for_each_four(
            stream, count,
            [=] __device__(int64_t i) {
              const float4 u = reinterpret_cast<const float4*>(a)[i], v = reinterpret_cast<const float4*>(b)[i];
              reinterpret_cast<float4*>(y)[i] = float4{u.x + v.x, u.y + v.y, u.z + v.z, u.w + v.w};
            },
            a, b, y))
      return;
  for_each(stream, count, [=] __device__(int64_t i) { y[i] = a[i] + b[i]; });
}

template <class T>
void accumulate(cudaStream_t stream, std::size_t count, const T* b, T* y) {
  if constexpr (std::is_same_v<T, float>)
    if (detail::for_each_four(
            stream, count,
            [=] __device__(int64_t i) {
              const float4 v = reinterpret_cast<const float4*>(b)[i];
              float4& u = reinterpret_cast<float4*>(y)[i];
              u = float4{u.x + v.x, u.y + v.y, u.z + v.z, u.w + v.w};
            },
            b, y))
      return;
  for_each(stream, count, [=] __device__(int64_t i) { y[i] += b[i]; });
}

template <class T>
void sgd(cudaStream_t stream, std::size_t count, T rate, const T* gradient, T* p) {
  if constexpr (std::is_same_v<T, float>)
    if (detail::for_each_four(
            stream, count,
            [=] __device__(int64_t i) {
              const float4 g = reinterpret_cast<const float4*>(gradient)[i];
              float4& u = reinterpret_cast<float4*>(p)[i];
              u = float4{u.x - rate * g.x, u.y - rate * g.y, u.z - rate * g.z, u.w - rate * g.w};
            },
            gradient, p))
      return;
  for_each(stream, count, [=] __device__(int64_t i) { p[i] -= rate * gradient[i]; });
}

template <class T>
void max_pool_forward(cudaStream_t stream, const ops::pool_geometry& g, const T* x, T* y) {
  const std::size_t outputs = elements_of(g, true);
  if (outputs == 0) return;
  if (!detail::fits_32_bits(static_cast<int64_t>(outputs)) || !elements::pool_tiles::fits(g)) {
    for_each(stream, outputs, [=] __device__(int64_t i) { y[i] = elements::max_pool_forward(g, x, i); });
    return;
  }
  detail::max_pool_forward_32<<<blocks_for(outputs), threads, 0, stream>>>(
      elements::pool_dims<int>(g), static_cast<std::uint32_t>(outputs), x, y);
  REMAT_CUDA_TRY(cudaGetLastError());
}

template <class T>
void max_pool_backward(cudaStream_t stream, const ops::pool_geometry& g, const T* x, const T* dy, T* dx) {
  if (elements_of(g, false) == 0) return;
  if (!elements::pool_tiles::fits(g) || !detail::fits_32_bits(g.n * g.c * elements::pool_tiles(g).per_plane())) {
    for_each(stream, elements_of(g, false),
             [=] __device__(int64_t i) { dx[i] = elements::max_pool_backward(g, x, dy, i); });
    return;
  }
  const elements::pool_tiles tiles(g);
  detail::max_pool_backward_tiles<<<static_cast<unsigned>(g.n * g.c * tiles.per_plane()), threads,
                                    tiles.shared_bytes(), stream>>>(elements::pool_dims<int>(g), tiles, x, dy, dx);
  REMAT_CUDA_TRY(cudaGetLastError());
}

template <class T>
void avg_pool_forward(cudaStream_t stream, const ops::pool_geometry& g, const T* x, T* y) {
  for_each(stream, elements_of(g, true), [=] __device__(int64_t i) { y[i] = elements::avg_pool_forward(g, x, i); });
}

template <class T>
void avg_pool_backward(cudaStream_t stream, const ops::pool_geometry& g, const T* dy, T* dx) {
  for_each(stream, elements_of(g, false),
           [=] __device__(int64_t i) { dx[i] = elements::avg_pool_backward(g, dy, i); });
}

template <class T>
void adaptive_avg_pool_forward(cudaStream_t stream, const ops::pool_geometry& g, const T* x, T* y) {
  for_each(stream, elements_of(g, true),
           [=] __device__(int64_t i) { y[i] = elements::adaptive_avg_pool_forward(g, x, i); });
}

template <class T>
void adaptive_avg_pool_backward(cudaStream_t stream, const ops::pool_geometry& g, const T* dy, T* dx) {
  for_each(stream, elements_of(g, false),
           [=] __device__(int64_t i) { dx[i] = elements::adaptive_avg_pool_backward(g, dy, i); });
}

template <class T>
void upsample_bilinear_forward(cudaStream_t stream, const ops::upsample_geometry& g, const T* x, T* y) {
  for_each(stream, static_cast<std::size_t>(g.n * g.c * g.oh * g.ow),
           [=] __device__(int64_t i) { y[i] = elements::upsample_bilinear_forward(g, x, i); });
}

template <class T>
void upsample_bilinear_backward(cudaStream_t stream, const ops::upsample_geometry& g, const T* dy, T* dx) {
  for_each(stream, static_cast<std::size_t>(g.n * g.c * g.h * g.w),
           [=] __device__(int64_t i) { dx[i] = elements::upsample_bilinear_backward(g, dy, i); });
}

template <class T>
void slice_forward(cudaStream_t stream, const elements::slice_geometry& s, std::size_t out_count, const T* x, T* y) {
  for_each(stream, out_count, [=] __device__(int64_t i) { y[i] = x[elements::slice_source(s, i)]; });
}

template <class T>
void slice_backward(cudaStream_t stream, const elements::slice_geometry& s, std::size_t out_count,
                    std::size_t in_count, const T* dy, T* dx) {
  REMAT_CUDA_TRY(cudaMemsetAsync(dx, 0, in_count * sizeof(T), stream));
  for_each(stream, out_count, [=] __device__(int64_t i) { dx[elements::slice_source(s, i)] = dy[i]; });
}

template <class T>
void add_channel_bias(cudaStream_t stream, int64_t n, int64_t channels, int64_t spatial, const T* bias, T* y) {
  detail::for_each_in_channels(stream, n, channels, spatial,
                               [=] __device__(int64_t i, int64_t ch) { y[i] += bias[ch]; });
}

template <class T>
void channel_sum(cudaStream_t stream, int64_t n, int64_t channels, int64_t spatial, const T* values, double* scratch,
                 T* out) {
  detail::sum_channels(
      stream, n, channels, spatial, scratch,
      [=] __device__(int64_t, int64_t at) { return static_cast<double>(values[at]); },
      [=] __device__(int64_t c, double total) { out[c] = static_cast<T>(total); });
}

template <class T>
void batch_norm_forward(cudaStream_t stream, const ops::batch_norm_geometry& g, double eps, double momentum,
                        const T* x, const T* gamma, const T* beta, T* y, T* running_mean, T* running_var,
                        double* scratch) {
  const detail::channel_statistics st(scratch, g.c, g.n * g.spatial);
  double* mean = st.mean;
  double* var = st.var;
  double* inv_std = st.inv_std;
  const int64_t count = g.n * g.spatial;
  const double n = static_cast<double>(count);
  // torch's running update uses the unbiased variance (cpu::batch_norm_update_running).
  const double unbias = count > 1 ? n / static_cast<double>(count - 1) : 1.0;
  // Σx and Σx² in one pass; in double, E[x²] − mean² loses nothing float data can tell.
  detail::reduce_channels<2>(
      stream, g.n, g.c, g.spatial, scratch,
      [=] __device__(int64_t, int64_t at) {
        const double v = static_cast<double>(x[at]);
        return detail::sums<2>{{v, v * v}};
      },
      [=] __device__(int64_t c, const detail::sums<2>& total) {
        const double m = total.v[0] / n, v = ::fmax(total.v[1] / n - m * m, 0.0);
        mean[c] = m, var[c] = v, inv_std[c] = 1.0 / ::sqrt(v + eps);
        if (running_mean) {
          running_mean[c] = static_cast<T>((1 - momentum) * static_cast<double>(running_mean[c]) + momentum * m);
          running_var[c] = static_cast<T>((1 - momentum) * static_cast<double>(running_var[c]) + momentum * v * unbias);
        }
      });
  detail::for_each_in_channels(stream, g.n, g.c, g.spatial, [=] __device__(int64_t i, int64_t ch) {
    y[i] = elements::batch_norm_output(x[i], mean[ch], inv_std[ch], gamma[ch], beta[ch]);
  });
}

template <class T>
void batch_norm_backward(cudaStream_t stream, const ops::batch_norm_geometry& g, double eps, const T* x,
                         const T* gamma, const T* dy, T* dx, T* dgamma, T* dbeta, double* scratch) {
  const detail::channel_statistics st(scratch, g.c, g.n * g.spatial);
  double* mean = st.mean;
  double* inv_std = st.inv_std;
  double* sum_dy = st.sum_dy;
  double* sum_dy_xhat = st.sum_dy_xhat;
  const double n = static_cast<double>(g.n * g.spatial);
  // The statistics again (nothing is kept from the forward) and the two
  // gradient sums, in one pass over x and dy: Σ dy·x̂ = (Σ dy·x − mean·Σ dy)/σ.
  detail::reduce_channels<4>(
      stream, g.n, g.c, g.spatial, scratch,
      [=] __device__(int64_t, int64_t at) {
        const double v = static_cast<double>(x[at]), d = static_cast<double>(dy[at]);
        return detail::sums<4>{{v, v * v, d, d * v}};
      },
      [=] __device__(int64_t c, const detail::sums<4>& total) {
        const double m = total.v[0] / n, v = ::fmax(total.v[1] / n - m * m, 0.0), is = 1.0 / ::sqrt(v + eps);
        mean[c] = m, inv_std[c] = is;
        sum_dy[c] = total.v[2];
        sum_dy_xhat[c] = (total.v[3] - m * total.v[2]) * is;
        dbeta[c] = static_cast<T>(total.v[2]);
        dgamma[c] = static_cast<T>(sum_dy_xhat[c]);
      });
  if (!dx) return;
  detail::for_each_in_channels(stream, g.n, g.c, g.spatial, [=] __device__(int64_t i, int64_t ch) {
    dx[i] = elements::batch_norm_input_gradient(x[i], dy[i], mean[ch], inv_std[ch], gamma[ch], n, sum_dy[ch],
                                                sum_dy_xhat[ch]);
  });
}

// Position p = i·inner + s of logits [rows, classes, inner] starts at
// i·classes·inner + s, its classes `inner` apart.
template <class T>
void softmax_cross_entropy_forward(cudaStream_t stream, int64_t rows, int64_t classes, int64_t inner, const T* logits,
                                   const std::int64_t* labels, double* scratch, T* loss) {
  const double positions = static_cast<double>(rows * inner);
  auto loss_at = [=] __device__(int64_t p) {
    const T* row = logits + p / inner * classes * inner + p % inner;
    return elements::cross_entropy(row, elements::softmax_of(row, classes, inner), labels[p], inner);
  };
  if (inner > 1) {  // a per-pixel loss: hundreds of thousands of positions, a chunked reduction
    detail::sum_channels(
        stream, 1, 1, rows * inner, scratch, [=] __device__(int64_t, int64_t p) { return loss_at(p); },
        [=] __device__(int64_t, double total) { loss[0] = static_cast<T>(total / positions); });
    return;
  }
  for_each(stream, static_cast<std::size_t>(rows), [=] __device__(int64_t i) { scratch[i] = loss_at(i); });
  // The mean in row order, as the CPU sums it.
  for_each(stream, 1, [=] __device__(int64_t) {
    double total = 0;
    for (int64_t i = 0; i < rows; ++i) total += scratch[i];
    loss[0] = static_cast<T>(total / positions);
  });
}

template <class T>
void softmax_cross_entropy_backward(cudaStream_t stream, int64_t rows, int64_t classes, int64_t inner, const T* logits,
                                    const std::int64_t* labels, const T* dloss, double* scratch, T* dlogits) {
  elements::softmax_row* stats = reinterpret_cast<elements::softmax_row*>(scratch);
  for_each(stream, static_cast<std::size_t>(rows * inner), [=] __device__(int64_t p) {
    stats[p] = elements::softmax_of(logits + p / inner * classes * inner + p % inner, classes, inner);
  });
  for_each(stream, static_cast<std::size_t>(rows * classes * inner), [=] __device__(int64_t e) {
    const int64_t i = e / (classes * inner), j = e / inner % classes, p = i * inner + e % inner;
    const double scale = static_cast<double>(dloss[0]) / static_cast<double>(rows * inner);
    dlogits[e] = elements::cross_entropy_gradient(logits[e], stats[p], j == labels[p], scale);
  });
}

template <class T>
void mse_loss_forward(cudaStream_t stream, std::size_t count, const T* a, const T* b, double* scratch, T* loss) {
  const double n = static_cast<double>(count);
  detail::sum_channels(
      stream, 1, 1, static_cast<int64_t>(count), scratch,
      [=] __device__(int64_t, int64_t at) {
        const double d = static_cast<double>(a[at]) - static_cast<double>(b[at]);
        return d * d;
      },
      [=] __device__(int64_t, double total) { loss[0] = static_cast<T>(total / n); });
}

template <class T>
void mse_loss_backward(cudaStream_t stream, std::size_t count, const T* a, const T* b, const T* dloss, T* da, T* db) {
  const double n = static_cast<double>(count);
  for_each(stream, count, [=] __device__(int64_t i) {
    const double g = (static_cast<double>(a[i]) - static_cast<double>(b[i])) * (2.0 * static_cast<double>(dloss[0]) / n);
    if (da) da[i] = static_cast<T>(g);
    if (db) db[i] = static_cast<T>(-g);
  });
}

#define REMAT_CUDA_KERNELS(T)                                                                                        \
  template void fill<T>(cudaStream_t, std::size_t, T, T*);                                                           \
  template void relu_forward<T>(cudaStream_t, std::size_t, const T*, T*);                                            \
  template void relu_backward<T>(cudaStream_t, std::size_t, const T*, const T*, T*);                                 \
  template void sigmoid_forward<T>(cudaStream_t, std::size_t, const T*, T*);                                         \
  template void sigmoid_backward<T>(cudaStream_t, std::size_t, const T*, const T*, T*);                              \
  template void dropout<T>(cudaStream_t, std::size_t, double, const ops::dropout_key&, const T*, T*);                \
  template void add<T>(cudaStream_t, std::size_t, const T*, const T*, T*);                                           \
  template void accumulate<T>(cudaStream_t, std::size_t, const T*, T*);                                              \
  template void sgd<T>(cudaStream_t, std::size_t, T, const T*, T*);                                                  \
  template void max_pool_forward<T>(cudaStream_t, const ops::pool_geometry&, const T*, T*);                          \
  template void max_pool_backward<T>(cudaStream_t, const ops::pool_geometry&, const T*, const T*, T*);               \
  template void avg_pool_forward<T>(cudaStream_t, const ops::pool_geometry&, const T*, T*);                          \
  template void avg_pool_backward<T>(cudaStream_t, const ops::pool_geometry&, const T*, T*);                         \
  template void adaptive_avg_pool_forward<T>(cudaStream_t, const ops::pool_geometry&, const T*, T*);                 \
  template void adaptive_avg_pool_backward<T>(cudaStream_t, const ops::pool_geometry&, const T*, T*);                \
  template void upsample_bilinear_forward<T>(cudaStream_t, const ops::upsample_geometry&, const T*, T*);            \
  template void upsample_bilinear_backward<T>(cudaStream_t, const ops::upsample_geometry&, const T*, T*);           \
  template void slice_forward<T>(cudaStream_t, const elements::slice_geometry&, std::size_t, const T*, T*);          \
  template void slice_backward<T>(cudaStream_t, const elements::slice_geometry&, std::size_t, std::size_t, const T*, \
                                  T*);                                                                               \
  template void add_channel_bias<T>(cudaStream_t, int64_t, int64_t, int64_t, const T*, T*);                          \
  template void channel_sum<T>(cudaStream_t, int64_t, int64_t, int64_t, const T*, double*, T*);                      \
  template void batch_norm_forward<T>(cudaStream_t, const ops::batch_norm_geometry&, double, double, const T*,       \
                                      const T*, const T*, T*, T*, T*, double*);                                      \
  template void batch_norm_backward<T>(cudaStream_t, const ops::batch_norm_geometry&, double, const T*, const T*,    \
                                       const T*, T*, T*, T*, double*);                                               \
  template void softmax_cross_entropy_forward<T>(cudaStream_t, int64_t, int64_t, int64_t, const T*,                \
                                                 const std::int64_t*, double*, T*);                                  \
  template void softmax_cross_entropy_backward<T>(cudaStream_t, int64_t, int64_t, int64_t, const T*,               \
                                                  const std::int64_t*, const T*, double*, T*);                       \
  template void mse_loss_forward<T>(cudaStream_t, std::size_t, const T*, const T*, double*, T*);                     \
  template void mse_loss_backward<T>(cudaStream_t, std::size_t, const T*, const T*, const T*, T*, T*);

REMAT_CUDA_KERNELS(float)
#undef REMAT_CUDA_KERNELS

}  // namespace remat::cuda::kernels
