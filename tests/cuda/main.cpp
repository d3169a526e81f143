// CUDA test main: host-only cases always run; the "gpu" suite runs only with a
// device. Without one it says why and exits 77, which meson reports as SKIP.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include <remat/cuda/device.hpp>

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const bool have_gpu = remat::cuda::device_count() > 0;
  if (!have_gpu) {
    std::printf("no CUDA device (%s): skipping the gpu suite\n", remat::cuda::no_device_reason().c_str());
    context.addFilter("test-suite-exclude", "gpu");
  }
  const int rc = context.run();
  if (context.shouldExit() || rc != 0) return rc;
  return have_gpu ? 0 : 77;
}
