#pragma once

/// \file
/// Device discovery for the CUDA backend. Host-only C++: include it from any
/// translation unit, link remat_cuda.

#include <remat/config.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <system_error>

#include <remat/error.hpp>

namespace remat::cuda {

/// The std::error_category of CUDA runtime codes (cudaError_t values).
const std::error_category& category() noexcept;

/// Thrown for a failed CUDA runtime call; code().value() is the cudaError_t.
class error : public std::system_error {
 public:
  error(int cuda_status, const std::string& where) : std::system_error(cuda_status, category(), where) {}
};

/// The device had too little memory for an allocation. The message names
/// what was being allocated (a node and step, or the arena and where its
/// schedule peaks), the bytes asked for and the device's free and total bytes.
class out_of_memory : public remat::error {
 public:
  out_of_memory(const std::string& what, std::uint64_t bytes, std::uint64_t free, std::uint64_t total);
  std::uint64_t bytes() const noexcept { return bytes_; }

 private:
  std::uint64_t bytes_;
};

/// Number of usable CUDA devices: 0 when there is no device, no driver, or the
/// driver is older than the runtime (any error counts as "no device").
int device_count() noexcept;

/// Why there is no device, in words ("no CUDA driver is loaded (...)"), or
/// empty when device_count() > 0.
std::string no_device_reason();

struct device_properties {
  std::string name;
  int compute_major = 0;
  int compute_minor = 0;
  std::size_t total_memory = 0;
  int multiprocessors = 0;
};

/// Properties of device `ordinal`. \throws remat::cuda::error.
device_properties properties(int ordinal = 0);

/// Runtime and library versions, readable without a device.
int runtime_version() noexcept;    ///< e.g. 13000
int cublas_version() noexcept;     ///< e.g. 130100; 0 if unknown
std::size_t cudnn_version() noexcept;  ///< e.g. 91900; 0 when built without cuDNN

/// Sum of `bytes` computed on the device with Thrust (copy) and CUB
/// (DeviceReduce::Sum, two-phase temporary storage): proves the toolchain end
/// to end. \throws remat::cuda::error (e.g. without a device).
unsigned long long device_sum(const unsigned long long* bytes, std::size_t count);

}  // namespace remat::cuda
