// Thrust and CUB together, built by nvcc and linked into host-compiled code.

#include <cub/device/device_reduce.cuh>
#include <thrust/device_vector.h>

#include "check.cuh"
#include "remat/cuda/device.hpp"

namespace remat::cuda {

unsigned long long device_sum(const unsigned long long* bytes, std::size_t count) {
  if (device_count() == 0) throw error(static_cast<int>(cudaErrorNoDevice), "device_sum: " + no_device_reason());
  thrust::device_vector<unsigned long long> values(bytes, bytes + count);
  thrust::device_vector<unsigned long long> total(1);
  std::size_t temp_bytes = 0;
  REMAT_CUDA_TRY(cub::DeviceReduce::Sum(nullptr, temp_bytes, values.data().get(), total.data().get(),
                                        static_cast<int>(count)));
  thrust::device_vector<unsigned char> temp(temp_bytes);
  REMAT_CUDA_TRY(cub::DeviceReduce::Sum(temp.data().get(), temp_bytes, values.data().get(),
                                        total.data().get(), static_cast<int>(count)));
  return total[0];
}

}  // namespace remat::cuda
