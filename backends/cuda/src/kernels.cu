// The runtime's own kernels: grid-stride loops over the per-element bodies of
// elements.hpp, and two-phase per-channel reductions in double with a fixed
// summation order (block partials, then one thread per channel adding them in
// chunk order).

#include "kernels.cuh"

#include <algorithm>

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

// Phase 1: block (chunk, channel) sums value(channel, offset) over its share
// of the channel's n·spatial elements of a [n, channels, spatial] tensor.
template <class F>
__global__ void channel_partials(int64_t n, int64_t channels, int64_t spatial, int64_t chunks, F value,
                                 double* partials) {
  __shared__ double shared[threads];
  const int64_t channel = blockIdx.y, chunk = blockIdx.x;
  const int64_t count = n * spatial, per_chunk = (count + chunks - 1) / chunks;
  const int64_t begin = chunk * per_chunk, end = begin + per_chunk < count ? begin + per_chunk : count;
  double sum = 0;
  for (int64_t e = begin + threadIdx.x; e < end; e += threads) {
    const int64_t i = e / spatial, s = e - i * spatial;
    sum += value(channel, (i * channels + channel) * spatial + s);
  }
  shared[threadIdx.x] = sum;
  __syncthreads();
  for (int stride = threads / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) shared[threadIdx.x] += shared[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[channel * chunks + chunk] = shared[0];
}

// Phase 2: one thread per channel adds the chunks in order, then finish(channel, total).
template <class F>
__global__ void channel_totals(int64_t channels, int64_t chunks, const double* partials, F finish) {
  for (int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; c < channels;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    double total = 0;
    for (int64_t k = 0; k < chunks; ++k) total += partials[c * chunks + k];
    finish(c, total);
  }
}

// finish(channel, Σ value(channel, offset)) for every channel; partials: the
// first channels × reduction_chunks(n·spatial) doubles of `scratch`.
template <class Value, class Finish>
void reduce_channels(cudaStream_t stream, int64_t n, int64_t channels, int64_t spatial, double* partials, Value value,
                     Finish finish) {
  const int64_t chunks = reduction_chunks(n * spatial);
  channel_partials<<<dim3(static_cast<unsigned>(chunks), static_cast<unsigned>(channels)), threads, 0, stream>>>(
      n, channels, spatial, chunks, value, partials);
  REMAT_CUDA_TRY(cudaGetLastError());
  channel_totals<<<blocks_for(static_cast<std::size_t>(channels)), threads, 0, stream>>>(channels, chunks, partials,
                                                                                         finish);
  REMAT_CUDA_TRY(cudaGetLastError());
}

std::size_t elements_of(const ops::pool_geometry& g, bool output) {
  return static_cast<std::size_t>(g.n * g.c * (output ? g.oh * g.ow : g.h * g.w));
}

}  // namespace

// Extended lambdas may not be defined in functions with internal linkage.
namespace detail {

// Where reduction scratch keeps per-channel statistics: after the partials.
struct channel_statistics {
  double *mean, *var, *inv_std, *sum_dy, *sum_dy_xhat;
  channel_statistics(double* scratch, int64_t channels, int64_t count) {
    double* at = scratch + channels * reduction_chunks(count);
    mean = at, var = at + channels, inv_std = at + 2 * channels, sum_dy = at + 3 * channels,
    sum_dy_xhat = at + 4 * channels;
  }
};

// The batch mean and 1/√(var + eps) of every channel, as cpu::stats_of computes them (two passes).
template <class T>
void batch_statistics(cudaStream_t stream, const ops::batch_norm_geometry& g, double eps, const T* x,
                      double* scratch, const channel_statistics& st) {
  const double count = static_cast<double>(g.n * g.spatial);
  double* mean = st.mean;
  double* var = st.var;
  double* inv_std = st.inv_std;
  reduce_channels(
      stream, g.n, g.c, g.spatial, scratch, [=] __device__(int64_t, int64_t at) { return static_cast<double>(x[at]); },
      [=] __device__(int64_t c, double total) { mean[c] = total / count; });
  reduce_channels(
      stream, g.n, g.c, g.spatial, scratch,
      [=] __device__(int64_t c, int64_t at) {
        const double d = static_cast<double>(x[at]) - mean[c];
        return d * d;
      },
      [=] __device__(int64_t c, double total) {
        var[c] = total / count;
        inv_std[c] = 1.0 / ::sqrt(var[c] + eps);
      });
}

}  // namespace detail

template <class T>
void fill(cudaStream_t stream, std::size_t count, T value, T* y) {
  for_each(stream, count, [=] __device__(int64_t i) { y[i] = value; });
}

template <class T>
void relu_forward(cudaStream_t stream, std::size_t count, const T* x, T* y) {
  for_each(stream, count, [=] __device__(int64_t i) { y[i] = elements::relu(x[i]); });
}

template <class T>
void relu_backward(cudaStream_t stream, std::size_t count, const T* y, const T* dy, T* dx) {
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
  for_each(stream, count, [=] __device__(int64_t i) { y[i] = a[i] + b[i]; });
}

template <class T>
void accumulate(cudaStream_t stream, std::size_t count, const T* b, T* y) {
  for_each(stream, count, [=] __device__(int64_t i) { y[i] += b[i]; });
}

template <class T>
void sgd(cudaStream_t stream, std::size_t count, T rate, const T* gradient, T* p) {
  for_each(stream, count, [=] __device__(int64_t i) { p[i] -= rate * gradient[i]; });
}

template <class T>
void max_pool_forward(cudaStream_t stream, const ops::pool_geometry& g, const T* x, T* y) {
  for_each(stream, elements_of(g, true), [=] __device__(int64_t i) { y[i] = elements::max_pool_forward(g, x, i); });
}

template <class T>
void max_pool_backward(cudaStream_t stream, const ops::pool_geometry& g, const T* x, const T* dy, T* dx) {
  for_each(stream, elements_of(g, false),
           [=] __device__(int64_t i) { dx[i] = elements::max_pool_backward(g, x, dy, i); });
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
  for_each(stream, static_cast<std::size_t>(n * channels * spatial),
           [=] __device__(int64_t i) { y[i] += bias[i / spatial % channels]; });
}

template <class T>
void channel_sum(cudaStream_t stream, int64_t n, int64_t channels, int64_t spatial, const T* values, double* scratch,
                 T* out) {
  reduce_channels(
      stream, n, channels, spatial, scratch,
      [=] __device__(int64_t, int64_t at) { return static_cast<double>(values[at]); },
      [=] __device__(int64_t c, double total) { out[c] = static_cast<T>(total); });
}

template <class T>
void batch_norm_forward(cudaStream_t stream, const ops::batch_norm_geometry& g, double eps, double momentum,
                        const T* x, const T* gamma, const T* beta, T* y, T* running_mean, T* running_var,
                        double* scratch) {
  const detail::channel_statistics st(scratch, g.c, g.n * g.spatial);
  detail::batch_statistics(stream, g, eps, x, scratch, st);
  const double* mean = st.mean;
  const double* var = st.var;
  const double* inv_std = st.inv_std;
  const int64_t c = g.c, spatial = g.spatial, count = g.n * g.spatial;
  if (running_mean) {
    // torch's update, with the unbiased variance (cpu::batch_norm_update_running).
    const double unbias = count > 1 ? static_cast<double>(count) / static_cast<double>(count - 1) : 1.0;
    for_each(stream, static_cast<std::size_t>(c), [=] __device__(int64_t ch) {
      running_mean[ch] = static_cast<T>((1 - momentum) * static_cast<double>(running_mean[ch]) + momentum * mean[ch]);
      running_var[ch] =
          static_cast<T>((1 - momentum) * static_cast<double>(running_var[ch]) + momentum * var[ch] * unbias);
    });
  }
  for_each(stream, static_cast<std::size_t>(g.n * c * spatial), [=] __device__(int64_t i) {
    const int64_t ch = i / spatial % c;
    y[i] = elements::batch_norm_output(x[i], mean[ch], inv_std[ch], gamma[ch], beta[ch]);
  });
}

template <class T>
void batch_norm_backward(cudaStream_t stream, const ops::batch_norm_geometry& g, double eps, const T* x,
                         const T* gamma, const T* dy, T* dx, T* dgamma, T* dbeta, double* scratch) {
  const detail::channel_statistics st(scratch, g.c, g.n * g.spatial);
  detail::batch_statistics(stream, g, eps, x, scratch, st);
  const double* mean = st.mean;
  const double* inv_std = st.inv_std;
  double* sum_dy = st.sum_dy;
  double* sum_dy_xhat = st.sum_dy_xhat;
  reduce_channels(
      stream, g.n, g.c, g.spatial, scratch, [=] __device__(int64_t, int64_t at) { return static_cast<double>(dy[at]); },
      [=] __device__(int64_t c, double total) {
        sum_dy[c] = total;
        dbeta[c] = static_cast<T>(total);
      });
  reduce_channels(
      stream, g.n, g.c, g.spatial, scratch,
      [=] __device__(int64_t c, int64_t at) {
        return static_cast<double>(dy[at]) * (static_cast<double>(x[at]) - mean[c]) * inv_std[c];
      },
      [=] __device__(int64_t c, double total) {
        sum_dy_xhat[c] = total;
        dgamma[c] = static_cast<T>(total);
      });
  if (!dx) return;
  const int64_t c = g.c, spatial = g.spatial;
  const double count = static_cast<double>(g.n * g.spatial);
  for_each(stream, static_cast<std::size_t>(g.n * c * spatial), [=] __device__(int64_t i) {
    const int64_t ch = i / spatial % c;
    dx[i] = elements::batch_norm_input_gradient(x[i], dy[i], mean[ch], inv_std[ch], gamma[ch], count, sum_dy[ch],
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
    reduce_channels(
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
  reduce_channels(
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
