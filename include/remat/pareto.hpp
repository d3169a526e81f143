#pragma once

/// \file
/// The exact Pareto frontier of (peak bytes, recompute time) over stage plans:
/// every plan no other plan beats on both. One enumeration of the lower sets
/// and one pass of three-dimensional labels (kept, peak, recompute) give the
/// whole frontier (dp.hpp), instead of one solve per budget.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
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
  /// Past this many (kept, peak, recompute) labels the frontier is sampled
  /// per budget instead (see `detail::sampled_frontier`).
  std::uint64_t max_labels = std::uint64_t{1} << 23;
};

struct pareto_result {
  solve_status status = solve_status::infeasible;  ///< optimal: the exact frontier of all stage plans
  dp_family family = dp_family::exact;             ///< the family the frontier is exact over
  std::vector<frontier_point> points;              ///< by increasing peak, decreasing recompute
  std::string message;
  solve_stats stats;
};

namespace detail {

/// When the three-dimensional labels outgrow their cap, the frontier is
/// sampled instead: the least peak, then the least recompute at evenly spaced
/// budgets up to the peak of the least-recompute plan. Each point is optimal
/// for its budget (two-dimensional labels stay far smaller), but points between
/// the samples may be missing, so the status is `feasible`.
inline pareto_result sampled_frontier(const graph& g, dp_family family, const pareto_options& options, bool small) {
  constexpr int samples = 24;
  pareto_result out;
  out.family = family;
  dp_options base;
  base.time_limit = options.time_limit;
  base.preserve_gradient_order = options.preserve_gradient_order;
  std::vector<frontier_point> candidates;
  auto add = [&](const dp_result& r) {
    out.stats.lower_sets += r.result.stats.lower_sets;
    out.stats.transitions += r.result.stats.transitions;
    out.stats.labels += r.result.stats.labels;
    out.stats.seconds += r.result.stats.seconds;
    out.stats.time_limit_reached = out.stats.time_limit_reached || r.result.stats.time_limit_reached;
    if (r.result.status != solve_status::infeasible && r.result.claimed_peak <= options.max_peak)
      candidates.push_back({r.result.claimed_peak, r.result.claimed_recompute, r.result.best.stage_of});
  };
  dp_options least_peak = base;
  least_peak.goal = objective::memory;
  const dp_result lowest = solve_dp(g, family, least_peak);
  add(lowest);
  dp_options least_recompute = base;
  least_recompute.goal = objective::time;
  const dp_result fastest = solve_dp(g, family, least_recompute);
  add(fastest);
  if (lowest.result.status != solve_status::infeasible && fastest.result.status != solve_status::infeasible) {
    const std::uint64_t low = lowest.result.claimed_peak;
    const std::uint64_t high = std::min(fastest.result.claimed_peak, options.max_peak);
    for (int i = 1; i < samples && high > low; ++i) {
      dp_options at = base;
      at.goal = objective::time;
      at.budget = low + (high - low) / samples * static_cast<std::uint64_t>(i);
      add(solve_dp(g, family, at));
    }
  }
  std::sort(candidates.begin(), candidates.end(), [](const auto& x, const auto& y) {
    return x.peak != y.peak ? x.peak < y.peak : x.recompute < y.recompute;
  });
  double best_recompute = std::numeric_limits<double>::infinity();
  for (frontier_point& p : candidates)
    if (p.recompute < best_recompute) {
      best_recompute = p.recompute;
      out.points.push_back(std::move(p));
    }
  out.status = out.points.empty() ? solve_status::infeasible : solve_status::feasible;
  out.message = std::string(small ? "all lower-set chains" : "the prefix family") +
                ": too many Pareto labels for the exact frontier; sampled at " + std::to_string(samples) +
                " budgets, each point optimal for its budget, points between them may be missing";
  return out;
}

}  // namespace detail

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
  dp.max_labels = options.max_labels;
  dp.budget = options.max_peak;
  dp.time_limit = options.time_limit;
  dp.preserve_gradient_order = options.preserve_gradient_order;
  dp_result r = solve_dp(g, out.family, dp);
  if (r.labels_capped && r.result.status != solve_status::infeasible)
    return detail::sampled_frontier(g, out.family, options, small);
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
