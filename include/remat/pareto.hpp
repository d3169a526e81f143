#pragma once

/// \file
/// The exact Pareto frontier of (peak bytes, recompute time) over stage plans:
/// every plan no other plan beats on both. One enumeration of the lower sets
/// and one pass of three-dimensional labels (kept, peak, recompute) give the
/// whole frontier (dp.hpp), instead of one solve per budget.

#include <chrono>
#include <cstdint>
#include <limits>
#include <vector>

#include "dp.hpp"
#include "lower_sets.hpp"
#include "solution.hpp"

namespace remat {

struct pareto_options {
  std::uint64_t max_peak = std::numeric_limits<std::uint64_t>::max();  ///< ignore plans above this peak
  std::uint64_t max_lower_sets = 20000;  ///< above this, the prefix family is used
  std::chrono::milliseconds time_limit{0};
  bool preserve_gradient_order = true;
};

struct pareto_result {
  solve_status status = solve_status::infeasible;  ///< optimal: the exact frontier of all stage plans
  dp_family family = dp_family::exact;             ///< the family the frontier is exact over
  std::vector<frontier_point> points;              ///< by increasing peak, decreasing recompute
  std::string message;
  solve_stats stats;
};

/// Computes the frontier over all lower-set chains when the graph has at most
/// `max_lower_sets` of them, else over the prefix family (stages = id
/// intervals), and says which. Complexity: that of solve_dp with three-
/// dimensional fronts.
inline pareto_result pareto_frontier(const graph& g, const pareto_options& options = {}) {
  pareto_result out;
  const precedence order = options.preserve_gradient_order ? gradient_order_constraints(g) : precedence{};
  lower_set_options count_options;
  count_options.max_count = options.max_lower_sets + 1;
  count_options.constraints = &order;
  const bool small = count_lower_sets(g, count_options).status == enumeration_status::complete;
  out.family = small ? dp_family::exact : dp_family::prefix;
  dp_options dp;
  dp.keep_frontier = true;
  dp.budget = options.max_peak;
  dp.time_limit = options.time_limit;
  dp.preserve_gradient_order = options.preserve_gradient_order;
  dp_result r = solve_dp(g, out.family, dp);
  out.points = std::move(r.frontier);
  out.stats = r.result.stats;
  if (r.result.status == solve_status::infeasible) {
    out.status = solve_status::infeasible;
    out.message = r.complete ? "no plan peaks within the limit" : "stopped by the time limit before any plan";
    return out;
  }
  out.status = r.complete ? solve_status::optimal : solve_status::feasible;
  out.message = small ? "exact frontier over all lower-set chains"
                      : "the graph has more than " + std::to_string(options.max_lower_sets) +
                            " lower sets: frontier of the prefix family (stages are id intervals)";
  if (!r.complete) out.message += "; stopped by the time limit, so points may be missing";
  return out;
}

}  // namespace remat
