#pragma once

/// \file
/// remat::cuda::engine_executor: runs an engine's own device kernels
/// (runtime/engine.hpp) under any schedule, with every activation, gradient,
/// parameter gradient and workspace in device memory that remat owns. The
/// twin of remat::cpu::engine_executor: the same walk, calls and ledger; the
/// calls carry device addresses and the stream to issue kernels on.
///
/// Synchronisation: run() issues the whole schedule (the engine's kernels,
/// recomputations included, and with storage::pool the stream-ordered
/// allocations) on the stream and waits once, at the end. An engine that
/// never synchronises keeps the step free of host-device round trips.
///
/// Host-only C++: no CUDA header is included; needs no cuDNN.

#include <remat/config.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include <remat/graph/graph.hpp>
#include <remat/plan/schedule.hpp>
#include <remat/plan/simulate.hpp>
#include <remat/runtime/engine.hpp>
#include <remat/runtime/layout.hpp>

#include "storage.hpp"

namespace remat::cuda {

struct engine_executor_options {
  cuda::storage storage = storage::arena;
  /// Every buffer's address is a multiple of it (a power of two).
  std::uint64_t alignment = 256;
  /// The cudaStream_t the engine's kernels go on; null: the executor's own
  /// (non-blocking) stream.
  void* stream = nullptr;
  /// Keep the ledger's live bytes at every step in the report, and the
  /// simulator's in simulated().
  bool record_timeline = false;
};

/// What one run held (runtime/engine.hpp): the ledger; allocated_high, with
/// storage::pool, the bytes of buffers allocated from the pool at once (an
/// arena: its size); seconds, the run's device time (CUDA events on the
/// stream); plus what only a device has.
struct engine_report : remat::engine_report {
  /// storage::pool: the pool's own used and reserved high-water marks over the
  /// run (cudaMemPoolAttrUsedMemHigh, ReservedMemHigh; allocations rounded
  /// up by the driver); 0 for an arena.
  std::uint64_t pool_used_high = 0, pool_reserved_high = 0;
  /// cudaMemGetInfo's free bytes before the run and after it.
  std::uint64_t free_before = 0, free_after = 0;
};

/// Runs schedules of one graph through engines on one device. One run at a time.
class engine_executor {
 public:
  /// Checks `steps` with the simulator, lays out its buffers and allocates
  /// the arena (storage::arena) or creates the pool (storage::pool).
  /// \throws invalid_schedule for a schedule the simulator rejects;
  /// cuda::out_of_memory naming the arena's bytes and where the schedule
  /// peaks when it does not fit; cuda::error saying why without a device.
  engine_executor(graph g, schedule steps, const engine_executor_options& options = {});
  ~engine_executor();
  engine_executor(const engine_executor&) = delete;
  engine_executor& operator=(const engine_executor&) = delete;

  /// Runs the schedule once, calling `e` for every compute, recompute and
  /// backward step, and waits for the stream. `input_values[v]` is graph
  /// input v's device address (one entry per node; others are not read).
  /// Buffers held from a previous run are dropped first. \throws remat::error
  /// for missing input addresses (before any step runs); cuda::out_of_memory
  /// naming the node, step and bytes when a pool allocation fails; whatever
  /// the engine throws. After a throw the executor waits for the stream,
  /// frees what the run held and can run again.
  engine_report run(engine_ref e, std::span<const void* const> input_values);

  /// Node v's parameter gradient from the last run (a device address,
  /// g.params(v) bytes), valid until the next run; null before a run or for
  /// nodes without parameters.
  void* parameter_gradient(node_id v) const noexcept;
  /// The device address of node v's value if the last run kept it to the
  /// end, else null; valid until the next run.
  const void* kept_value(node_id v) const noexcept;
  /// The cudaStream_t the engine's kernels go on.
  void* stream() const noexcept;

  const graph& network() const noexcept;
  const schedule& steps() const noexcept;
  const simulation& simulated() const noexcept;
  const arena_layout& layout() const noexcept;

  struct device_state;

 private:
  std::unique_ptr<device_state> state_;
};

}  // namespace remat::cuda
