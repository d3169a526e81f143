#pragma once

/// \file
/// What a CUDA executor allocates for a schedule, decided on the host before
/// any device memory is touched (and testable without a device): the arena
/// layout, the same buffers and lifetimes as the CPU runtime's (core
/// runtime/layout.hpp through ops::element_buffers) at 256-byte offsets, and the
/// scratch its kernels need, sized as the largest any step takes. Nothing is
/// allocated while a step runs. Host-only C++.

#include <remat/config.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include <remat/graph/graph.hpp>
#include <remat/ops/op.hpp>
#include <remat/plan/schedule.hpp>
#include <remat/runtime/layout.hpp>

namespace remat::cuda {

/// Every device buffer and arena offset is a multiple of this: cudaMalloc's
/// own alignment, so cuBLAS and cuDNN see equally aligned pointers wherever a
/// plan puts a value (their kernel choice may depend on alignment).
inline constexpr std::uint64_t device_alignment = 256;

constexpr std::uint64_t aligned(std::uint64_t bytes) noexcept {
  return (bytes + device_alignment - 1) / device_alignment * device_alignment;
}

/// Blocks per channel of a reduction over `count` values per channel: one per
/// 8192 values, 1 to 1024. A function of the shape only, so a reduction sums
/// in the same order in every run (plans cannot change a bit).
constexpr std::int64_t reduction_chunks(std::int64_t count) noexcept {
  return std::clamp<std::int64_t>((count + 8191) / 8192, 1, 1024);
}

/// Doubles of reduction scratch node v's kernels need, forward or backward:
/// per-channel partial sums and statistics (batch norm; the bias gradients of
/// conv2d and linear; mse_loss's sum) or per-row softmax statistics and
/// losses (softmax_cross_entropy). O(1).
std::uint64_t reduction_doubles(const graph& g, std::span<const ops::op_info> ops, node_id v);

/// An executor's device memory beyond parameters and inputs.
struct device_plan {
  arena_layout layout;  ///< every value, gradient and parameter gradient; offsets multiples of device_alignment
  /// Gradient contributions a backward computes aside before adding them:
  /// the most any backward needs, counting each of its operand positions
  /// whose operand is consumed at two or more positions (aligned).
  std::uint64_t gradient_scratch_bytes = 0;
  std::uint64_t reduction_scratch_bytes = 0;  ///< 8 × the most reduction_doubles of any node, aligned
  std::uint64_t scratch_bytes() const noexcept { return gradient_scratch_bytes + reduction_scratch_bytes; }
};

/// Plans `steps` on g whose parsed ops are `ops` (ops::parse_op), at
/// `element_size` bytes per element. \throws invalid_schedule for a schedule
/// the simulator rejects. O(steps + m) plus assign_offsets.
device_plan plan_device(const graph& g, std::span<const ops::op_info> ops, const schedule& steps,
                        std::size_t element_size = 4);

}  // namespace remat::cuda
