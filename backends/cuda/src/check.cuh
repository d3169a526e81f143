#pragma once

// Private to backends/cuda/src; never installed.

#include <cuda_runtime.h>

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
