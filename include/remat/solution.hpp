#pragma once

/// \file
/// What every solver returns: a status, the plan, the figures the method itself
/// claims, the simulator's figures for the same plan, bounds and statistics.

#include <cstdint>
#include <string>
#include <string_view>

#include "schedule.hpp"
#include "simulate.hpp"

namespace remat {

enum class solve_status {
  optimal,     ///< proven optimal within the method's plan family and objective
  feasible,    ///< a valid plan; a cap or time limit stopped the proof (see the bounds)
  infeasible,  ///< no plan meets the budget (see smallest_feasible_budget)
  stopped,     ///< no plan: a cap or the time limit stopped the method before it completed one; nothing is proven
};

inline constexpr std::string_view to_string(solve_status s) noexcept {
  switch (s) {
    case solve_status::optimal: return "optimal";
    case solve_status::feasible: return "feasible";
    case solve_status::infeasible: return "infeasible";
    case solve_status::stopped: return "stopped";
  }
  return "?";
}

struct solve_stats {
  std::uint64_t lower_sets = 0;     ///< states the method created (lower sets for DPs)
  std::uint64_t transitions = 0;    ///< stages evaluated
  std::uint64_t labels = 0;         ///< Pareto labels created
  std::uint64_t pruned = 0;         ///< extensions cut by a bound
  double seconds = 0;               ///< wall time of the solve
  bool cap_reached = false;
  bool time_limit_reached = false;

  /// Adds another search's counts (the seconds are left to the caller).
  solve_stats& operator+=(const solve_stats& other) noexcept {
    lower_sets += other.lower_sets;
    transitions += other.transitions;
    labels += other.labels;
    pruned += other.pruned;
    cap_reached = cap_reached || other.cap_reached;
    time_limit_reached = time_limit_reached || other.time_limit_reached;
    return *this;
  }
};

struct solution {
  solve_status status = solve_status::infeasible;
  plan best;                          ///< empty when infeasible
  simulation figures;                 ///< the simulator's figures for `best`
  std::uint64_t claimed_peak = 0;     ///< the method's own peak (equals figures.peak_bytes)
  double claimed_recompute = 0;       ///< the method's own recompute time
  std::uint64_t peak_lower_bound = 0; ///< no plan of the family peaks lower (memory objective)
  double recompute_lower_bound = 0;   ///< no plan within the budget recomputes less (time objective)
  std::uint64_t smallest_feasible_budget = 0;  ///< when infeasible: the least budget that works
  /// When no plan meets the budget and the least that works is not known: the
  /// least peak of a plan found, a budget known to work (0: none found).
  std::uint64_t known_feasible_budget = 0;
  double objective = 0;               ///< the method's own objective value (e.g. Feng & Huang's bytes)
  double objective_lower_bound = 0;   ///< no plan scores below this on `objective` (ogc-exact; 0: none known)
  /// The plan, bounds and status cover stage plans run in the graph's order
  /// and in the consumers-first order (solve_options::order), not only the
  /// order `best.order` names.
  bool both_orders = false;
  std::string message;                ///< a sentence for people
  solve_stats stats;
};

}  // namespace remat
