#pragma once

/// \file
/// remat::cpu::executor: runs one training step of a model by any schedule
/// (the plan form, plan/schedule.hpp), then an SGD step, with every value,
/// gradient, parameter gradient and workspace in one arena laid out by the
/// core (runtime/layout.hpp), and measures what it holds at every step.
///
/// What it guarantees (docs/cpu-runtime.md):
/// - the schedule's semantics: a backward reads only the values the graph's
///   `reads` names (batch-norm statistics and max-pool argmaxes are recomputed
///   from its input, dropout masks regenerated from their key);
/// - gradient contributions to an operand's gradient buffer in schedule order:
///   the first writes, later ones add (each computed in full first);
/// - batch-norm running statistics updated once, by the node's `compute`
///   step; recomputes normalize with the batch's statistics and never touch
///   them;
/// - dropout masks keyed by (model seed, step_options::step, node, element),
///   identical in the compute, every recompute and the backward;
/// - the live bytes it records at each step (parameters and inputs as stored,
///   plus the arena buffers it holds) equal the simulator's timeline for f32
///   graphs run in float.

#include <remat/config.hpp>

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include <remat/graph/graph.hpp>
#include <remat/ops/step.hpp>
#include <remat/plan/schedule.hpp>
#include <remat/plan/simulate.hpp>
#include <remat/runtime/layout.hpp>

#include "model.hpp"

namespace remat::cpu {

/// Options of one training step (the step index keys the dropout masks, SGD's
/// learning rate, whether to keep the timeline) and its report: the ones both
/// runtimes share.
using step_options = ops::step_options;
using step_report = ops::step_report;

/// Runs schedules of one model. T is float or double.
template <class T>
class executor {
 public:
  /// Called after each compute and recompute step with the value it produced.
  using value_observer = std::function<void(std::size_t step_index, const step& s, std::span<const T> value)>;

  /// Checks `steps` with the simulator and lays out its arena.
  /// \throws invalid_schedule (a remat::error naming the step and node) for a
  /// schedule the simulator rejects. O(steps + m) plus assign_offsets.
  executor(model<T>& m, schedule steps);

  /// Runs the schedule once and the SGD step. \throws remat::error naming the
  /// node when a loss reads a label outside its classes.
  step_report run(const step_options& options = {}, const value_observer& observe = {});

  const schedule& steps() const noexcept { return steps_; }
  /// The simulator's figures for the schedule.
  const simulation& simulated() const noexcept { return simulated_; }
  /// The arena layout (bytes at sizeof(T) per element).
  const arena_layout& layout() const noexcept { return layout_; }
  /// Node v's parameter gradient from the last run (weights then bias; empty
  /// before the first run or for nodes without parameters).
  std::span<const T> parameter_gradient(node_id v) const noexcept;

 private:
  T* slot(std::size_t buffer) noexcept;

  model<T>* model_;
  schedule steps_;
  simulation simulated_;
  arena_layout layout_;
  std::vector<T> arena_;
  std::vector<T> scratch_;
  std::size_t scratch_elements_ = 0;  // most any step needs
  std::vector<std::size_t> parameter_gradient_buffer_;
  bool ran_ = false;
};

extern template class executor<float>;
extern template class executor<double>;

}  // namespace remat::cpu
