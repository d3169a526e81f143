#pragma once

/// \file
/// remat::cuda::executor: runs one training step of a model by any schedule
/// on the model's CUDA stream, then an SGD step, and measures what it holds.
/// It is the CPU executor's semantics on a device (docs/cuda-runtime.md):
/// the same schedule walk (core runtime/execution.hpp), so the same buffers, the same
/// gradient accumulation order, the same ledger; batch-norm running statistics
/// updated by compute steps only; dropout masks from the counter-based
/// generator the CPU runtime's come from too, identical in every recompute
/// and in the backward.
///
/// Memory: every value, gradient and parameter gradient lives in one device
/// arena laid out by the core (storage::arena, the layout of device_plan), or,
/// with storage::pool, in stream-ordered allocations (cudaMallocAsync) made
/// and freed as the steps run. Kernel scratch is allocated once, at
/// construction. Nothing else is allocated on the step path.
///
/// Synchronisation: enqueue() issues a whole step, recomputations included,
/// without waiting for the device; wait() waits once, at the end, for the
/// losses and the timing.
///
/// Host-only C++: no CUDA header is included.

#include <remat/config.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <remat/graph/graph.hpp>
#include <remat/ops/step.hpp>
#include <remat/plan/schedule.hpp>
#include <remat/plan/simulate.hpp>
#include <remat/runtime/layout.hpp>

#include "model.hpp"
#include "plan.hpp"
#include "storage.hpp"

namespace remat::cuda {

struct executor_options {
  cuda::storage storage = storage::arena;
};

/// Options of one training step: both runtimes' (the step index keys the
/// dropout masks, SGD's learning rate, whether to keep the timeline).
using step_options = ops::step_options;

/// What one training step did and held: both runtimes' report, where
/// peak_bytes, peak_step, at_peak and timeline are the ledger of live bytes
/// (parameters and inputs as stored plus the arena buffers held, by the
/// simulator's categories; for f32 graphs equal to simulate(g, steps)'s),
/// scratch_bytes is the kernel scratch allocated and seconds is the step's
/// device time (CUDA events, SGD included); plus what only a device has.
struct step_report : ops::step_report {
  /// The model's convolution and GEMM workspaces: device memory held for the
  /// whole step, outside the simulator's categories.
  std::uint64_t workspace_bytes = 0;
  /// storage::pool: the pool's used and reserved high-water marks over the
  /// step (cudaMemPoolAttrUsedMemHigh, ReservedMemHigh); 0 for an arena.
  std::uint64_t pool_used_high = 0, pool_reserved_high = 0;
  /// run() only: cudaMemGetInfo's free bytes before the step and after it,
  /// equal when nothing was allocated on the step path.
  std::uint64_t free_before = 0, free_after = 0;
};

/// Runs schedules of one model. T is float.
template <class T>
class executor {
 public:
  /// Checks `steps` with the simulator, plans device memory (plan_device)
  /// and allocates the arena (storage::arena) and the scratch.
  /// \throws invalid_schedule for a schedule the simulator rejects;
  /// cuda::out_of_memory naming the bytes and the step where the schedule
  /// peaks when the arena does not fit.
  executor(model<T>& m, schedule steps, const executor_options& options = {});
  ~executor();
  executor(const executor&) = delete;
  executor& operator=(const executor&) = delete;

  /// enqueue(options), then wait().
  step_report run(const step_options& options = {});
  /// Issues one training step and the SGD update on the model's stream and
  /// returns without synchronising with the device. \throws remat::error
  /// naming the node when a loss reads a label outside its classes;
  /// cuda::out_of_memory naming the node, step and bytes when a pool
  /// allocation fails.
  void enqueue(const step_options& options = {});
  /// Waits for the step enqueue() issued and reports it. \pre enqueue() ran.
  step_report wait();
  /// Records one step, as enqueue() issues it, into a CUDA graph under
  /// global-mode stream capture, which refuses every call that would
  /// synchronise with the device or allocate outside stream order, then
  /// discards the graph and returns its node count: the proof that a step,
  /// recomputations included, runs without host–device synchronisation.
  /// Parameters are not updated. \throws cuda::error naming a refused call;
  /// remat::error with storage::pool (captured pool allocations are not real).
  std::size_t capture_step(const step_options& options = {});

  const schedule& steps() const noexcept;
  const simulation& simulated() const noexcept;
  const device_plan& plan() const noexcept;
  const arena_layout& layout() const noexcept { return plan().layout; }
  /// Outside check: cudaMemGetInfo's free bytes before construction minus after.
  std::uint64_t device_taken() const noexcept;
  /// Node v's parameter gradient from the last step, copied from the device
  /// (empty before the first step or for nodes without parameters).
  std::vector<T> parameter_gradient(node_id v) const;

  struct device_state;

 private:
  std::unique_ptr<device_state> state_;
};

extern template class executor<float>;

}  // namespace remat::cuda
