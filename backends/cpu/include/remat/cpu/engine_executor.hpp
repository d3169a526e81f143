#pragma once

/// \file
/// remat::cpu::engine_executor: runs an engine's own kernels (runtime/engine.hpp)
/// under any schedule, in host memory that remat owns. The twin of
/// remat::cuda::engine_executor: the same walk, calls and ledger, so an
/// engine's host build checks the binding where there is no GPU.
///
/// Memory: every activation, gradient, parameter gradient and workspace lives
/// either in one arena laid out ahead (storage::arena) or in its own heap
/// allocation made when the walk acquires it and freed when the walk releases
/// it (storage::heap). The heap's high-water mark is a measurement made apart
/// from the ledger: with it, the peak an engine run really allocated can be
/// held to the simulator's.

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

namespace remat::cpu {

/// Where an engine_executor keeps remat's buffers.
enum class engine_storage : std::uint8_t {
  arena,  ///< one allocation laid out ahead (the default)
  heap,   ///< one aligned allocation per buffer while it is alive
};

struct engine_executor_options {
  engine_storage storage = engine_storage::arena;
  /// Every buffer's address is a multiple of it (a power of two).
  std::uint64_t alignment = 64;
  /// Keep the ledger's live bytes at every step in the report, and the
  /// simulator's in simulated().
  bool record_timeline = false;
};

/// What one run held (runtime/engine.hpp): the ledger; allocated_high, with
/// engine_storage::heap, the bytes of buffers allocated at once (an arena: its
/// size); seconds, the run's wall time.
using engine_report = remat::engine_report;

/// Runs schedules of one graph through engines. Not thread-safe; one run at a time.
class engine_executor {
 public:
  /// Checks `steps` with the simulator and lays out its buffers.
  /// \throws invalid_schedule naming the step and node for a schedule the
  /// simulator rejects; remat::error for an alignment that is not a power of two.
  engine_executor(graph g, schedule steps, const engine_executor_options& options = {});
  ~engine_executor();
  engine_executor(engine_executor&&) noexcept;
  engine_executor& operator=(engine_executor&&) noexcept;

  /// Runs the schedule once, calling `e` for every compute, recompute and
  /// backward step. `input_values[v]` is graph input v's value (one entry per
  /// node; others are not read). Buffers from a previous run are dropped
  /// first. \throws remat::error for missing input addresses (before any
  /// step runs); whatever the engine throws, after freeing what the run held.
  engine_report run(engine_ref e, std::span<const void* const> input_values);

  /// Node v's parameter gradient from the last run (g.params(v) bytes), valid
  /// until the next run; null before a run or for nodes without parameters.
  void* parameter_gradient(node_id v) const noexcept;
  /// The value of node v if the last run kept it to the end (a value the
  /// schedule never frees), else null; valid until the next run.
  const void* kept_value(node_id v) const noexcept;

  const graph& network() const noexcept;
  const schedule& steps() const noexcept;
  const simulation& simulated() const noexcept;
  const arena_layout& layout() const noexcept;

 private:
  struct state;
  std::unique_ptr<state> state_;
};

}  // namespace remat::cpu
