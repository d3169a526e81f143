#pragma once

/// \file
/// One training step's options and report, as both runtimes' executors take
/// and return them.

#include <remat/config.hpp>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include <remat/graph/graph.hpp>
#include <remat/plan/simulate.hpp>

namespace remat::ops {

/// Options of one training step.
struct step_options {
  std::uint64_t step = 0;        ///< training step index: keys the dropout masks
  double learning_rate = 0.01;   ///< SGD: p −= learning_rate · ∂loss/∂p (0: no update)
  bool record_timeline = false;  ///< keep the live bytes of every step
};

/// What one training step did and held.
struct step_report {
  double loss = 0;                ///< Σ loss_weight · loss over the losses computed
  std::vector<std::pair<node_id, double>> losses;  ///< each loss node's own value
  std::uint64_t peak_bytes = 0;   ///< most live bytes at one step, every category
  std::size_t peak_step = 0;      ///< the first step reaching it
  memory_breakdown at_peak;       ///< its categories
  std::vector<memory_breakdown> timeline;  ///< per step, when record_timeline
  std::uint64_t scratch_bytes = 0;  ///< kernel scratch used outside the arena (not a simulator category)
  double seconds = 0;             ///< wall time of the step, optimizer included
};

}  // namespace remat::ops
