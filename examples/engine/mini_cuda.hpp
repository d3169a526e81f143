#pragma once

// mini's device kernels behind remat's engine binding (mini_cuda.cu): the same
// ops as host_engine, on a CUDA stream, with parameters mini keeps on the
// device. Host-only C++: no CUDA header is included.

#include <cstddef>
#include <memory>
#include <vector>

#include <remat/runtime/engine.hpp>

#include "mini_engine.hpp"

namespace mini {

// A batch copied to the device.
class device_batch {
 public:
  explicit device_batch(const batch& b);
  ~device_batch();
  device_batch(const device_batch&) = delete;
  device_batch& operator=(const device_batch&) = delete;
  const void* x() const noexcept { return x_; }
  const void* labels() const noexcept { return labels_; }

 private:
  void* x_ = nullptr;
  void* labels_ = nullptr;
};

// remat's forward and backward calls, answered with mini's device kernels on
// the call's stream. Never synchronises with the device.
class device_engine {
 public:
  // Copies the network's parameters to the device.
  explicit device_engine(const network& net);
  ~device_engine();
  device_engine(const device_engine&) = delete;
  device_engine& operator=(const device_engine&) = delete;

  void forward(const remat::forward_call& f);
  void backward(const remat::backward_call& c);

  // The loss of the last training step, once its stream has finished.
  float loss() const noexcept;
  // SGD on every dense layer on `stream`, from device gradients found by
  // `gradient_of(layer)`.
  template <class GradientOf>
  void sgd(float rate, GradientOf gradient_of, void* stream) {
    for (std::size_t i = 0; i < net_->size(); ++i)
      if (net_->at(i).op == op::dense) sgd_layer(i, rate, gradient_of(i), stream);
  }
  // Layer i's parameters, copied from the device (waits for the device).
  std::vector<float> parameters(std::size_t i) const;
  // `elements` floats at device address `p`, copied to the host (waits).
  static std::vector<float> download(const void* p, std::size_t elements);

 private:
  void sgd_layer(std::size_t i, float rate, const void* gradient, void* stream);

  const network* net_;
  std::vector<float*> parameters_;  // by layer, device
  float* loss_ = nullptr;           // pinned host
};

static_assert(remat::engine<device_engine>);

}  // namespace mini
