// A program outside remat that links the CUDA runtime as installed, with the
// host compiler alone. Exits 0 when it reads the CUDA runtime's version; no
// device is needed.

#include <cstdio>

#include <remat/cuda/device.hpp>

int main() {
  const int devices = remat::cuda::device_count();
  std::printf("consumer: CUDA runtime %d, %d device(s)%s%s\n", remat::cuda::runtime_version(), devices,
              devices > 0 ? "" : ": ", devices > 0 ? "" : remat::cuda::no_device_reason().c_str());
  return remat::cuda::runtime_version() > 0 ? 0 : 1;
}
