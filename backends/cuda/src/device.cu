#include <cublas_v2.h>
#include <cuda_runtime.h>
#if REMAT_WITH_CUDNN
#include <cudnn.h>
#endif

#include <string>

#include "check.cuh"
#include "remat/cuda/device.hpp"

namespace remat::cuda {

namespace {

class cuda_category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "cuda"; }
  std::string message(int code) const override {
    return cudaGetErrorString(static_cast<cudaError_t>(code));
  }
};

}  // namespace

const std::error_category& category() noexcept {
  static const cuda_category instance;
  return instance;
}

out_of_memory::out_of_memory(const std::string& what, std::uint64_t bytes, std::uint64_t free, std::uint64_t total)
    : remat::error("out of device memory: " + what + " needs " + std::to_string(bytes) + " bytes; the device has " +
                   std::to_string(free) + " of " + std::to_string(total) + " bytes free"),
      bytes_(bytes) {}

int device_count() noexcept {
  // Without a driver cudaGetDeviceCount returns cudaErrorInsufficientDriver and
  // leaves the count untouched, so start from 0 and treat any error as none.
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

std::string no_device_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  (void)cudaGetLastError();
  if (status == cudaSuccess && count > 0) return {};
  if (status == cudaSuccess) return "the CUDA driver reports no device";
  return std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
}

device_properties properties(int ordinal) {
  cudaDeviceProp prop{};
  REMAT_CUDA_TRY(cudaGetDeviceProperties(&prop, ordinal));
  return {prop.name, prop.major, prop.minor, prop.totalGlobalMem, prop.multiProcessorCount};
}

int runtime_version() noexcept {
  int version = 0;
  (void)cudaRuntimeGetVersion(&version);
  return version;
}

int cublas_version() noexcept {
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS) return 0;
  (void)cublasGetProperty(MINOR_VERSION, &minor);
  (void)cublasGetProperty(PATCH_LEVEL, &patch);
  return major * 10000 + minor * 100 + patch;
}

std::size_t cudnn_version() noexcept {
#if REMAT_WITH_CUDNN
  return cudnnGetVersion();
#else
  return 0;
#endif
}

}  // namespace remat::cuda
