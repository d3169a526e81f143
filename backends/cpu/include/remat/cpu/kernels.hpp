#pragma once

/// \file
/// Reference kernels, forward and backward, for every op of the zoo (docs/zoo.md,
/// "Op reference") plus sigmoid and mse_loss. Tensors are dense, row-major
/// NCHW (or N×F). T is float or double (the library instantiates both; double
/// is the checking mode).
///
/// Contracts shared by every kernel:
/// - pointers are to the element counts the geometry implies; outputs never
///   alias inputs;
/// - a backward kernel *writes* each gradient it is given (it never reads the
///   destination), so a runtime accumulates several contributions by writing
///   the first in place and adding the others itself; a null gradient pointer
///   means "not needed" (e.g. a graph input's);
/// - results depend only on the inputs and the geometry, never on addresses or
///   on earlier calls: a recompute reproduces the first forward bit for bit;
/// - reductions (batch-norm statistics, pooling windows, losses) accumulate in
///   double in a fixed order;
/// - kernels never throw: the runtime validates shapes and labels first.
///
/// Convolution and linear layers lower to a packed, cache-blocked GEMM
/// (convolutions through im2col / col2im over a caller-provided scratch
/// span of conv2d_scratch(g) elements).

#include <remat/config.hpp>

#include <cstddef>
#include <cstdint>
#include <span>

#include <remat/ops/batch_norm.hpp>
#include <remat/ops/convolution.hpp>
#include <remat/ops/dropout.hpp>
#include <remat/ops/pooling.hpp>
#include <remat/ops/upsample.hpp>

namespace remat::cpu {

/// Scratch elements conv2d_forward and conv2d_backward need (im2col columns
/// of one image and group; 0 for a 1×1, stride-1, unpadded convolution).
std::size_t conv2d_scratch(const ops::conv2d_geometry& g) noexcept;

/// y = conv(x, weight) + bias (bias may be null). O(n·k·oh·ow·c/groups·kh·kw).
template <class T>
void conv2d_forward(const ops::conv2d_geometry& g, const T* x, const T* weight, const T* bias, T* y,
                    std::span<T> scratch);

/// Gradients of conv2d_forward: dx, dweight, dbias, each skipped when null (x
/// is read only for dweight). Same complexity as the forward, twice over.
template <class T>
void conv2d_backward(const ops::conv2d_geometry& g, const T* x, const T* weight, const T* dy, T* dx, T* dweight,
                     T* dbias, std::span<T> scratch);

/// torch.nn.ConvTranspose2d: y = the adjoint of the convolution g applied to
/// x (g's output shape; y has g's input shape), + bias per y channel. Its
/// scratch is conv2d_scratch(g).
template <class T>
void conv_transpose2d_forward(const ops::conv2d_geometry& g, const T* x, const T* weight, const T* bias, T* y,
                              std::span<T> scratch);
/// Gradients of conv_transpose2d_forward: dx, dweight, dbias, each skipped when null.
template <class T>
void conv_transpose2d_backward(const ops::conv2d_geometry& g, const T* x, const T* weight, const T* dy, T* dx,
                               T* dweight, T* dbias, std::span<T> scratch);

/// y [n, out] = x [n, in] · weightᵀ + bias, weight [out, in] (torch.nn.Linear).
template <class T>
void linear_forward(std::int64_t n, std::int64_t in, std::int64_t out, const T* x, const T* weight, const T* bias,
                    T* y);

/// Gradients of linear_forward: dx (may be null), dweight, dbias (may be null).
template <class T>
void linear_backward(std::int64_t n, std::int64_t in, std::int64_t out, const T* x, const T* weight, const T* dy,
                     T* dx, T* dweight, T* dbias);

/// Training-mode batch norm: y = (x − mean) / √(var + eps) · gamma + beta with
/// the batch's mean and biased variance per channel, which it also writes to
/// batch_mean and batch_var (c entries each, may be null). Two passes over x.
template <class T>
void batch_norm_forward(const ops::batch_norm_geometry& g, const T* x, const T* gamma, const T* beta, double eps, T* y,
                        double* batch_mean, double* batch_var);

/// running = (1 − momentum) · running + momentum · batch, with the unbiased
/// variance (× count / (count − 1)) for running_var, as torch does.
template <class T>
void batch_norm_update_running(std::int64_t c, std::int64_t count, const double* batch_mean, const double* batch_var,
                               double momentum, T* running_mean, T* running_var);

/// Gradients of batch_norm_forward, the batch statistics recomputed from x
/// exactly as the forward computed them: dx (may be null), dgamma, dbeta.
template <class T>
void batch_norm_backward(const ops::batch_norm_geometry& g, const T* x, const T* gamma, double eps, const T* dy, T* dx,
                         T* dgamma, T* dbeta);

/// y = max(x, 0).
template <class T>
void relu_forward(std::size_t count, const T* x, T* y);
/// dx = dy where y > 0, else 0 (reads the output, as the graph's reads say).
template <class T>
void relu_backward(std::size_t count, const T* y, const T* dy, T* dx);

/// y = 1 / (1 + e^−x).
template <class T>
void sigmoid_forward(std::size_t count, const T* x, T* y);
/// dx = dy · y · (1 − y).
template <class T>
void sigmoid_backward(std::size_t count, const T* y, const T* dy, T* dx);

/// Max over each (dilated) window; padding never wins. The first maximum in
/// row-major window order is the argmax.
template <class T>
void max_pool_forward(const ops::pool_geometry& g, const T* x, T* y);
/// dx: dy routed to each window's argmax, recomputed from x as the forward
/// found it; overlapping windows add up in output order.
template <class T>
void max_pool_backward(const ops::pool_geometry& g, const T* x, const T* dy, T* dx);

/// Average over each window, with torch's divisor (count_include_pad counts the
/// padding inside the padded input, never beyond it).
template <class T>
void avg_pool_forward(const ops::pool_geometry& g, const T* x, T* y);
template <class T>
void avg_pool_backward(const ops::pool_geometry& g, const T* dy, T* dx);

/// torch.nn.AdaptiveAvgPool2d: window i covers [⌊i·h/oh⌋, ⌈(i+1)·h/oh⌉).
/// Uses n, c, h, w, oh, ow of the geometry.
template <class T>
void adaptive_avg_pool_forward(const ops::pool_geometry& g, const T* x, T* y);
template <class T>
void adaptive_avg_pool_backward(const ops::pool_geometry& g, const T* dy, T* dx);

/// Bilinear resampling (torch's interpolate, mode "bilinear").
template <class T>
void upsample_bilinear_forward(const ops::upsample_geometry& g, const T* x, T* y);
/// dx (overwritten) accumulates each output gradient into its four taps.
template <class T>
void upsample_bilinear_backward(const ops::upsample_geometry& g, const T* dy, T* dx);

/// y = Σ operands, summed left to right.
template <class T>
void add_forward(std::size_t count, std::span<const T* const> operands, T* y);

/// Concatenation along dim 1 of operands [outer, channels[i], inner].
template <class T>
void concat_forward(std::int64_t outer, std::int64_t inner, std::span<const std::int64_t> channels,
                    std::span<const T* const> operands, T* y);
/// Splits dy back into each operand's gradient (null entries are skipped).
template <class T>
void concat_backward(std::int64_t outer, std::int64_t inner, std::span<const std::int64_t> channels, const T* dy,
                     std::span<T* const> dx);

/// y = x · mask / (1 − p). \pre 0 ≤ p < 1.
template <class T>
void dropout_forward(std::size_t count, double p, const ops::dropout_key& key, const T* x, T* y);
/// dx = dy · mask / (1 − p), the mask regenerated from its key.
template <class T>
void dropout_backward(std::size_t count, double p, const ops::dropout_key& key, const T* dy, T* dx);

/// x[begin:end] of a tensor of `dims` (any rank, one bound per dimension).
template <class T>
void slice_forward(std::span<const std::int64_t> dims, std::span<const std::int64_t> begin,
                   std::span<const std::int64_t> end, const T* x, T* y);
/// dx: dy inside the slice, zero elsewhere.
template <class T>
void slice_backward(std::span<const std::int64_t> dims, std::span<const std::int64_t> begin,
                    std::span<const std::int64_t> end, const T* dy, T* dx);

/// Mean over every position of −log softmax(logits)[label], logits [n,
/// classes, inner] (inner = 1 per sample, H·W per pixel), labels [n, inner].
/// \pre every label is in [0, classes).
template <class T>
double softmax_cross_entropy_forward(std::int64_t n, std::int64_t classes, std::int64_t inner, const T* logits,
                                     const std::int64_t* labels);
/// dlogits = (softmax(logits) − onehot(label)) · dloss / (n · inner).
template <class T>
void softmax_cross_entropy_backward(std::int64_t n, std::int64_t classes, std::int64_t inner, const T* logits,
                                    const std::int64_t* labels, T dloss, T* dlogits);

/// Mean over all elements of (a − b)².
template <class T>
double mse_loss_forward(std::size_t count, const T* a, const T* b);
/// da = 2(a − b) · dloss / count, db = −da (either may be null).
template <class T>
void mse_loss_backward(std::size_t count, const T* a, const T* b, T dloss, T* da, T* db);

}  // namespace remat::cpu
