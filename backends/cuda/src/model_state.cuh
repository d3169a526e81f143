#pragma once

// Private to backends/cuda/src: what a model holds on the device, and the
// library calls (cuDNN convolutions, cuBLAS GEMMs) its executor makes.

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <remat/ops/convolution.hpp>
#include <remat/ops/host_model.hpp>

#include "check.cuh"
#include "remat/cuda/model.hpp"

namespace remat::cuda::detail {

using tensor_descriptor = owned<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>;
using filter_descriptor = owned<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor>;
using convolution_descriptor = owned<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor>;

/// cuDNN's view of one conv2d node: descriptors (one convolution descriptor
/// per direction, each with the math type its algorithm was chosen under) and
/// the algorithms. Descriptors need no device.
struct convolution {
  tensor_descriptor x, y;
  filter_descriptor w;
  convolution_descriptor forward, backward_data, backward_filter;
  cudnnConvolutionFwdAlgo_t forward_algorithm{};
  cudnnConvolutionBwdDataAlgo_t backward_data_algorithm{};
  cudnnConvolutionBwdFilterAlgo_t backward_filter_algorithm{};
  convolution_algorithms chosen;
};

/// Descriptors for g (float, NCHW), each convolution descriptor under `math`.
/// \throws remat::error naming `context` when cuDNN refuses the geometry.
convolution describe(const ops::conv2d_geometry& g, cudnnMathType_t math, const std::string& context);

}  // namespace remat::cuda::detail

namespace remat::cuda {

template <class T>
struct model<T>::device_state {
  device_state(graph g, std::uint64_t seed, const model_options& o);
  ~device_state();

  std::string where(node_id v) const;  // "node 'name' (op)", for messages

  // Copies on the model's stream, then waits for it (never on the step path).
  void upload(void* device, const void* host, std::uint64_t bytes) const;
  void download(void* host, const void* device, std::uint64_t bytes) const;
  void upload_inputs();

  // y = conv(x, w) (bias added by the caller); dx (may be null) and dw.
  // Node v's convolution (for a conv_transpose2d, the one it is the adjoint
  // of): y = conv(x), its adjoint dx = convᵀ(dy), and the filter gradient.
  void convolve(node_id v, const T* x, const T* w, T* y);
  void convolve_adjoint(node_id v, const T* w, const T* dy, T* dx);
  void convolution_filter_gradient(node_id v, const T* x, const T* dy, T* dw);
  // y = x · wᵀ (bias added by the caller); dx (may be null) and dw.
  void linear_forward(node_id v, const T* x, const T* w, T* y);
  void linear_backward(node_id v, const T* x, const T* w, const T* dy, T* dx, T* dw);

  ops::host_model<T> host;  // op infos, initial parameters, the inputs and labels last set
  model_options options;
  detail::owned<cudaStream_t, cudaStreamDestroy> stream;
  detail::owned<cudnnHandle_t, cudnnDestroy> cudnn;
  detail::owned<cublasHandle_t, cublasDestroy> cublas;
  detail::device_buffer parameter_storage, statistics_storage, input_storage;
  detail::device_buffer convolution_workspace, gemm_workspace;
  std::vector<T*> parameters, running_mean, running_var, inputs;
  std::vector<std::int64_t*> labels;
  std::vector<std::unique_ptr<detail::convolution>> convolutions;  // by node; null for other ops
  model_memory memory;
};

}  // namespace remat::cuda
