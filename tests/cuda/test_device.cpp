#include <doctest/doctest.h>

#include <numeric>
#include <vector>

#include <remat/cuda/device.hpp>

TEST_CASE("library versions are readable without a device") {
  CHECK(remat::cuda::runtime_version() >= 12000);
  CHECK(remat::cuda::cublas_version() >= 120000);
  const std::size_t cudnn = remat::cuda::cudnn_version();
  CHECK((cudnn == 0 || cudnn >= 90000));
}

TEST_CASE("no device is reported as a count of 0 with a reason, never a crash") {
  if (remat::cuda::device_count() == 0) {
    CHECK(!remat::cuda::no_device_reason().empty());
    const unsigned long long one = 1;
    CHECK_THROWS_AS(remat::cuda::device_sum(&one, 1), remat::cuda::error);
  } else {
    CHECK(remat::cuda::no_device_reason().empty());
  }
}

TEST_SUITE("gpu") {
TEST_CASE("Thrust + CUB reduction on the device") {
  std::vector<unsigned long long> values(100000);
  std::iota(values.begin(), values.end(), 1ULL);
  CHECK(remat::cuda::device_sum(values.data(), values.size()) == 100000ULL * 100001ULL / 2);
  const auto props = remat::cuda::properties(0);
  CHECK(props.total_memory > 0);
  MESSAGE("device: " << props.name << ", sm_" << props.compute_major << props.compute_minor);
}
}
