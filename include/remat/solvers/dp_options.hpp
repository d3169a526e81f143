#pragma once

/// \file
/// The lower-set programme's options and frontier points (dp.hpp).

#include <remat/config.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <remat/graph/graph.hpp>
#include <remat/plan/solution.hpp>
#include <remat/solvers/common.hpp>
#include <remat/time_budget.hpp>

namespace remat {

struct backward_floor;

/// The lower-set programme's counts: states (lower sets) created, stages
/// evaluated, labels created, extensions cut by a bound.
struct dp_stats {
  std::uint64_t lower_sets = 0;
  std::uint64_t transitions = 0;
  std::uint64_t labels = 0;
  std::uint64_t pruned = 0;
  std::uint64_t skipped = 0;  ///< stages whose backward's start already exceeded the bound, not evaluated
  double seconds = 0;
  bool cap_reached = false;
  bool time_limit_reached = false;

  /// What stopped an incomplete search, for messages (`time`: the budget it ran on).
  std::string stopped_by(const time_budget& time) const {
    return time_limit_reached ? std::string(time.spent_on()) : std::string("a cap on states, stages or labels");
  }

  /// As a solution reports them.
  solve_stats named() const {
    solve_stats s;
    s.seconds = seconds;
    s.cap_reached = cap_reached;
    s.time_limit_reached = time_limit_reached;
    s.counts = {{"lower sets", lower_sets}, {"stages evaluated", transitions}, {"stages skipped", skipped}, {"labels", labels}};
    return s;
  }
};

enum class dp_family { exact, prefix, principal };

struct dp_options {
  objective goal = objective::memory;
  /// Time objective: no step may exceed this many bytes. Memory objective:
  /// plans above it are not explored (an upper bound speeds the search).
  std::uint64_t budget = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t max_states = std::uint64_t{1} << 22;
  std::uint64_t max_transitions = std::uint64_t{1} << 32;  ///< stages evaluated or skipped
  time_budget time;
  /// Keep the whole Pareto front of (peak, recompute) at the end (pareto.hpp).
  bool keep_frontier = false;
  /// Memory objective: return a least-peak plan without minimising its
  /// recompute (skips the label phase; used to bound other searches).
  bool peak_only = false;
  /// The label phase stops past this many labels and falls back to a
  /// stand-in plan (dp_engine::stand_in_chain).
  std::uint64_t max_labels = std::uint64_t{1} << 23;
  /// Two-dimensional labels (the memory and time objectives): past this many,
  /// a floor under the recompute left by kept bytes, and a plan found by a
  /// beam along it, drop labels that cannot win (dp_engine::labels_within).
  /// Exact either way; 0 bounds from the start, the maximum never.
  std::uint64_t recompute_floor_after = std::uint64_t{1} << 16;
  /// Only chains that keep gradient sums bit-for-bit (gradient_order_constraints):
  /// then a plan never changes a single bit of the gradients.
  bool preserve_gradient_order = true;
  /// backward_floors(g) of the graph solved, when the caller has it: rounds
  /// over one graph then work it out once (a cut per node on wide graphs).
  const backward_floor* floors = nullptr;
  /// Time objective, no plan within the budget: also find the least budget
  /// one meets (solution::smallest_feasible_budget), a least-peak programme
  /// as costly as the memory objective's.
  bool least_budget_if_infeasible = true;
};

/// One point of the Pareto frontier with the stage assignment that reaches it
/// and the execution order it runs in (empty: the graph's id order).
struct frontier_point {
  std::uint64_t peak = 0;
  double recompute = 0;
  std::vector<std::uint32_t> stage_of;
  std::vector<node_id> order;
  /// False for a sampled point whose budget's labels outgrew their cap or the
  /// time limit: a stand-in plan within the budget (dp_engine::stand_in_chain),
  /// its recompute not proven the least (pareto.hpp).
  bool least_recompute = true;
};

/// How many budgets a frontier is sampled at, from the least peak to the peak
/// of the least-recompute plan (dp_result::sampled, pareto.hpp).
inline constexpr std::uint64_t frontier_sample_count = 24;

}  // namespace remat
