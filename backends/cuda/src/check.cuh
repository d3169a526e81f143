#pragma once

// Private to backends/cuda/src; never installed.

#include <cublas_v2.h>
#include <cuda_runtime.h>
#if REMAT_WITH_CUDNN
#include <cudnn.h>
#endif

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include <remat/runtime/layout.hpp>

#include "remat/cuda/device.hpp"

#define REMAT_CUDA_STRINGIFY_(x) #x
#define REMAT_CUDA_STRINGIFY(x) REMAT_CUDA_STRINGIFY_(x)
#define REMAT_CUDA_TRY(call)                                                            \
  do {                                                                                  \
    if (const cudaError_t remat_status_ = (call); remat_status_ != cudaSuccess) {       \
      (void)cudaGetLastError();                                                         \
      throw ::remat::cuda::error(static_cast<int>(remat_status_),                       \
                                 #call " at " __FILE__ ":" REMAT_CUDA_STRINGIFY(__LINE__)); \
    }                                                                                   \
  } while (false)

namespace remat::cuda::detail {

template <class Handle, auto destroy>
struct destroyer {
  void operator()(Handle h) const noexcept { (void)destroy(h); }
};

/// A CUDA, cuDNN or cuBLAS handle or descriptor, destroyed with its owner.
template <class Handle, auto destroy>
using owned = std::unique_ptr<std::remove_pointer_t<Handle>, destroyer<Handle, destroy>>;

// What a buffer of category c holds, for out-of-memory messages.
inline std::string what_it_holds(memory_category c) {
  switch (c) {
    case memory_category::activations:
    case memory_category::recomputed: return "its value";
    case memory_category::gradients: return "a gradient";
    case memory_category::parameter_gradients: return "its parameter gradient";
    case memory_category::workspace: return "its workspace";
  }
  return "a buffer";
}

// cuDNN and cuBLAS failures: what failed, for which node.
#if REMAT_WITH_CUDNN
inline void check(cudnnStatus_t status, const char* call, const std::string& context) {
  if (status != CUDNN_STATUS_SUCCESS)
    throw remat::error(context + ": " + call + " failed: " + cudnnGetErrorString(status));
}
#endif
inline void check(cublasStatus_t status, const char* call, const std::string& context) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw remat::error(context + ": " + call + " failed: " + cublasGetStatusString(status));
}

inline std::pair<std::uint64_t, std::uint64_t> free_and_total() {
  std::size_t free = 0, total = 0;
  REMAT_CUDA_TRY(cudaMemGetInfo(&free, &total));
  return {free, total};
}

// Bytes cudaMemGetInfo says were taken since it reported `free_before` free
// (0 if others freed more meanwhile).
inline std::uint64_t taken_since(std::uint64_t free_before) {
  const std::uint64_t free_now = free_and_total().first;
  return free_before > free_now ? free_before - free_now : 0;
}

// One device allocation, freed on destruction. An allocation that does not
// fit throws out_of_memory naming `what`.
class device_buffer {
 public:
  device_buffer() = default;
  device_buffer(std::uint64_t bytes, const std::string& what) : bytes_(bytes) {
    if (bytes == 0) return;
    if (const cudaError_t status = cudaMalloc(&data_, bytes); status != cudaSuccess) {
      (void)cudaGetLastError();
      data_ = nullptr;
      if (status != cudaErrorMemoryAllocation) throw error(static_cast<int>(status), "cudaMalloc for " + what);
      const auto [free, total] = free_and_total();
      throw out_of_memory(what, bytes, free, total);
    }
  }
  ~device_buffer() {
    if (data_) (void)cudaFree(data_);
  }
  device_buffer(device_buffer&& o) noexcept : data_(std::exchange(o.data_, nullptr)), bytes_(o.bytes_) {}
  device_buffer& operator=(device_buffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }

  template <class T = void>
  T* get(std::uint64_t offset = 0) const noexcept {
    return reinterpret_cast<T*>(static_cast<unsigned char*>(data_) + offset);
  }
  std::uint64_t bytes() const noexcept { return bytes_; }

 private:
  void* data_ = nullptr;
  std::uint64_t bytes_ = 0;
};

}  // namespace remat::cuda::detail
