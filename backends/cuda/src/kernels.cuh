#pragma once

// Private to backends/cuda/src: the runtime's own kernels (everything but
// convolutions, which are cuDNN's, and GEMMs, which are cuBLAS's). Every
// launcher enqueues on `stream` and returns at once; none allocates,
// synchronises or reads device memory from the host. Reductions take a
// caller-provided `scratch` of reduction_doubles(...) doubles (plan.hpp) and
// sum in an order fixed by the shapes alone, so every kernel is
// deterministic: same inputs, same bits, whatever ran before.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include <remat/ops/batch_norm.hpp>
#include <remat/ops/dropout.hpp>
#include <remat/ops/pooling.hpp>

#include "elements.hpp"

namespace remat::cuda::kernels {

template <class T>
void fill(cudaStream_t stream, std::size_t count, T value, T* y);
template <class T>
void relu_forward(cudaStream_t stream, std::size_t count, const T* x, T* y);
template <class T>
void relu_backward(cudaStream_t stream, std::size_t count, const T* y, const T* dy, T* dx);
template <class T>
void sigmoid_forward(cudaStream_t stream, std::size_t count, const T* x, T* y);
template <class T>
void sigmoid_backward(cudaStream_t stream, std::size_t count, const T* y, const T* dy, T* dx);
/// out = in · mask / (1 − p): the forward (in = x) and the backward (in = dy) alike.
template <class T>
void dropout(cudaStream_t stream, std::size_t count, double p, const ops::dropout_key& key, const T* in, T* out);
/// y = a + b.
template <class T>
void add(cudaStream_t stream, std::size_t count, const T* a, const T* b, T* y);
/// y += b.
template <class T>
void accumulate(cudaStream_t stream, std::size_t count, const T* b, T* y);
/// p −= rate · gradient.
template <class T>
void sgd(cudaStream_t stream, std::size_t count, T rate, const T* gradient, T* p);

template <class T>
void max_pool_forward(cudaStream_t stream, const ops::pool_geometry& g, const T* x, T* y);
template <class T>
void max_pool_backward(cudaStream_t stream, const ops::pool_geometry& g, const T* x, const T* dy, T* dx);
template <class T>
void avg_pool_forward(cudaStream_t stream, const ops::pool_geometry& g, const T* x, T* y);
template <class T>
void avg_pool_backward(cudaStream_t stream, const ops::pool_geometry& g, const T* dy, T* dx);
template <class T>
void adaptive_avg_pool_forward(cudaStream_t stream, const ops::pool_geometry& g, const T* x, T* y);
template <class T>
void adaptive_avg_pool_backward(cudaStream_t stream, const ops::pool_geometry& g, const T* dy, T* dx);

template <class T>
void slice_forward(cudaStream_t stream, const elements::slice_geometry& s, std::size_t out_count, const T* x, T* y);
/// dx (in_count elements) zero outside the slice, dy inside.
template <class T>
void slice_backward(cudaStream_t stream, const elements::slice_geometry& s, std::size_t out_count,
                    std::size_t in_count, const T* dy, T* dx);

/// Bilinear resampling as cpu::upsample_bilinear_forward; the backward
/// gathers each input element's gradient (no atomics).
template <class T>
void upsample_bilinear_forward(cudaStream_t stream, const ops::upsample_geometry& g, const T* x, T* y);
template <class T>
void upsample_bilinear_backward(cudaStream_t stream, const ops::upsample_geometry& g, const T* dy, T* dx);

/// y[i, c, s] += bias[c] for y [n, channels, spatial].
template <class T>
void add_channel_bias(cudaStream_t stream, std::int64_t n, std::int64_t channels, std::int64_t spatial,
                      const T* bias, T* y);
/// out[c] = Σ over (i, s) of values[i, c, s], in double (bias gradients).
template <class T>
void channel_sum(cudaStream_t stream, std::int64_t n, std::int64_t channels, std::int64_t spatial, const T* values,
                 double* scratch, T* out);

/// Training-mode batch norm as cpu::batch_norm_forward computes it, the batch
/// statistics in double; updates the running statistics (as
/// cpu::batch_norm_update_running) when running_mean is not null.
template <class T>
void batch_norm_forward(cudaStream_t stream, const ops::batch_norm_geometry& g, double eps, double momentum,
                        const T* x, const T* gamma, const T* beta, T* y, T* running_mean, T* running_var,
                        double* scratch);
/// cpu::batch_norm_backward: statistics recomputed from x; dx may be null.
template <class T>
void batch_norm_backward(cudaStream_t stream, const ops::batch_norm_geometry& g, double eps, const T* x,
                         const T* gamma, const T* dy, T* dx, T* dgamma, T* dbeta, double* scratch);

/// loss[0] = mean over positions of −log softmax(logits)[label], logits [rows,
/// classes, inner], labels [rows, inner].
template <class T>
void softmax_cross_entropy_forward(cudaStream_t stream, std::int64_t rows, std::int64_t classes, std::int64_t inner,
                                   const T* logits, const std::int64_t* labels, double* scratch, T* loss);
/// dlogits = (softmax − onehot) · dloss[0] / (rows · inner) (dloss read on the device).
template <class T>
void softmax_cross_entropy_backward(cudaStream_t stream, std::int64_t rows, std::int64_t classes, std::int64_t inner,
                                    const T* logits, const std::int64_t* labels, const T* dloss, double* scratch,
                                    T* dlogits);
/// loss[0] = mean of (a − b)².
template <class T>
void mse_loss_forward(cudaStream_t stream, std::size_t count, const T* a, const T* b, double* scratch, T* loss);
/// da = 2(a − b) · dloss[0] / count, db = −da (either may be null).
template <class T>
void mse_loss_backward(cudaStream_t stream, std::size_t count, const T* a, const T* b, const T* dloss, T* da,
                       T* db);

}  // namespace remat::cuda::kernels
