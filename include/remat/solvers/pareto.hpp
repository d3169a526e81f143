#pragma once

/// \file
/// The exact Pareto frontier of (peak bytes, recompute time) over stage plans:
/// every plan no other plan beats on both. One enumeration of the lower sets
/// and one pass of three-dimensional labels (kept, peak, recompute) give the
/// whole frontier (solvers/dp.hpp), instead of one solve per budget. With
/// order_choice::best (and by default past the lower-set cap) it is the
/// frontier over stage plans run in the graph's order or in the
/// consumers-first order (analysis/orders.hpp): both frontiers, merged.

#include <remat/config.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <remat/analysis/lower_sets.hpp>
#include <remat/analysis/orders.hpp>
#include <remat/plan/solution.hpp>
#include <remat/solvers/dp.hpp>
#include <remat/solvers/orders.hpp>
#include <remat/time_budget.hpp>

namespace remat {

struct pareto_options {
  std::uint64_t max_peak = std::numeric_limits<std::uint64_t>::max();  ///< ignore plans above this peak
  std::uint64_t max_lower_sets = 20000;  ///< above this, the prefix family is used
  time_budget time;
  bool preserve_gradient_order = true;
  /// Past this many (kept, peak, recompute) labels the frontier is sampled
  /// per budget instead (see `detail::sampled_frontier`; each budget's
  /// two-dimensional labels have dp_options' default cap).
  std::uint64_t max_labels = std::uint64_t{1} << 23;
  /// The execution orders the plans run in; `best`: both, each with half the
  /// time; `automatic`: both past `max_lower_sets`, the graph's order within it.
  order_choice order = order_choice::automatic;
};

struct pareto_result {
  solve_status status = solve_status::infeasible;  ///< optimal: the exact frontier of all stage plans (in the orders asked for)
  dp_family family = dp_family::exact;             ///< the family the frontier is exact over
  std::vector<frontier_point> points;              ///< by increasing peak, decreasing recompute
  std::string message;
  solve_stats stats;
};

namespace detail {

// What a sampled frontier says of itself. `small`: over all lower-set chains
// (else the prefix family); `complete`: every stage was enumerated;
// `timed_out`: the time or work limit ended the sampling; `stand_ins`: the points that
// stand in for their budgets' labels, which outgrew the cap or the time or work limit.
inline std::string sampled_message(bool small, bool complete, bool timed_out, std::size_t stand_ins) {
  std::string message = std::string(small ? "all lower-set chains" : "the prefix family") +
                        ": too many Pareto labels for the exact frontier; sampled at " +
                        std::to_string(frontier_sample_count) + " budgets, each point optimal for its budget";
  if (stand_ins > 0)
    message += " except " + std::to_string(stand_ins) +
               (stand_ins == 1 ? " stand-in plan within its budget" : " stand-in plans within theirs") +
               " (a least-kept or beam plan, marked; its recompute is not proven the least: the labels for that "
               "budget outgrew the cap or the time or work limit)";
  message += ", points between them may be missing";
  if (!complete) message += "; stopped by a cap or the time or work limit, so the samples are over the stages found";
  if (timed_out) message += "; the time or work limit ended the sampling";
  return message;
}

// The points no point of the other frontier beats, by increasing peak; ties go
// to the first frontier (the graph's order).
inline std::vector<frontier_point> merge_frontiers(std::vector<frontier_point> first, std::vector<frontier_point> second) {
  for (frontier_point& p : second) first.push_back(std::move(p));
  std::stable_sort(first.begin(), first.end(), [](const auto& x, const auto& y) {
    return x.peak != y.peak ? x.peak < y.peak : x.recompute < y.recompute;
  });
  std::vector<frontier_point> out;
  double best_recompute = std::numeric_limits<double>::infinity();
  for (frontier_point& p : first)
    if (saves_recompute(p.recompute, best_recompute)) {
      best_recompute = p.recompute;
      out.push_back(std::move(p));
    }
  return out;
}

/// When the three-dimensional labels outgrow their cap, the frontier is
/// sampled instead, on the same stages: enumerated once within
/// `options.max_peak`, then the least peak (one backward pass) and the least
/// recompute (two-dimensional labels, far fewer) at evenly spaced budgets up
/// to the peak of the least-recompute plan (dp_engine::sample_frontier). Each
/// point is optimal for its budget unless marked, but points between the
/// samples may be missing: status `feasible`.
inline pareto_result sampled_frontier(const graph& g, dp_family family, const pareto_options& options, bool small) {
  pareto_result out;
  out.family = family;
  dp_options stage_options;
  stage_options.goal = objective::time;
  stage_options.budget = options.max_peak;
  stage_options.time = options.time;
  stage_options.preserve_gradient_order = options.preserve_gradient_order;
  dp_engine engine(g, stage_options);
  const bool complete = engine.enumerate(family, options.max_peak);
  const std::optional<std::uint32_t> final = engine.final_state();
  frontier_sampling samples;
  if (final) samples = engine.sample_frontier(*final, options.max_peak, frontier_sample_count, true);
  out.points = merge_frontiers(std::move(samples.plans), {});
  out.stats = engine.stats().named();
  out.status = !out.points.empty() ? solve_status::feasible
               : complete          ? solve_status::infeasible
                                   : solve_status::stopped;
  const auto stand_ins = static_cast<std::size_t>(
      std::count_if(out.points.begin(), out.points.end(), [](const frontier_point& p) { return !p.least_recompute; }));
  out.message = sampled_message(small, complete, samples.timed_out, stand_ins);
  return out;
}

}  // namespace detail

namespace detail {

// The frontier of g as numbered (options.order is not looked at).
inline pareto_result frontier_in_id_order(const graph& g, const pareto_options& options) {
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
  dp.time = options.time;
  dp.preserve_gradient_order = options.preserve_gradient_order;
  dp_result r = solve_dp(g, out.family, dp);
  if (r.labels_capped && r.result.stats.time_limit_reached && r.result.status != solve_status::infeasible &&
      r.result.status != solve_status::stopped) {
    // Out of time in the labels: the one plan known, the least peak over the stages found.
    out.points.push_back({r.result.claimed_peak, r.result.claimed_recompute, r.result.best.stage_of, {}});
    out.stats = r.result.stats;
    out.status = solve_status::feasible;
    out.message = "stopped by " + std::string(options.time.spent_on()) + " before the frontier: one point, the least peak of " +
                  (small ? "all lower-set chains" : "the prefix family (more than " +
                                                        std::to_string(options.max_lower_sets) + " lower sets)") +
                  (r.complete ? "" : " over the stages found, not proven") + ", with a least-kept plan";
    return out;
  }
  if (r.labels_capped && r.result.status != solve_status::infeasible && r.sampled_all) {
    // Past the label cap, the plans sampled to prune the labels are the frontier shown.
    out.points = merge_frontiers(std::move(r.sampled), {});
    out.stats = r.result.stats;
    out.status = solve_status::feasible;
    out.message = sampled_message(small, r.complete, false, 0);
    return out;
  }
  if (r.labels_capped && r.result.status != solve_status::infeasible) {
    return detail::sampled_frontier(g, out.family, options, small);  // with what is left of the time
  }
  out.points = std::move(r.frontier);
  out.stats = r.result.stats;
  if (r.result.status == solve_status::infeasible || r.result.status == solve_status::stopped) {
    out.status = r.result.status;
    out.message = r.complete ? "no plan peaks within the limit" : "stopped by " + std::string(options.time.spent_on()) + " before any plan";
    return out;
  }
  out.status = r.complete ? solve_status::optimal : solve_status::feasible;
  out.message = small ? "exact frontier over all lower-set chains"
                      : "the graph has more than " + std::to_string(options.max_lower_sets) +
                            " lower sets: frontier of the prefix family (stages are id intervals)";
  if (!r.complete) out.message += "; stopped by " + std::string(options.time.spent_on()) + ", so points may be missing";
  return out;
}

inline pareto_result frontier_in_orders(const graph& g, const pareto_options& options) {
  if (options.order == order_choice::graph) return detail::frontier_in_id_order(g, options);
  // `automatic` decides before the first frontier, which it gives the whole
  // time limit within the cap and half of it past the cap.
  if (options.order == order_choice::automatic) {
    const precedence constraints = options.preserve_gradient_order ? gradient_order_constraints(g) : precedence{};
    lower_set_options count;
    count.max_count = options.max_lower_sets + 1;
    count.constraints = &constraints;
    if (count_lower_sets(g, count).status == enumeration_status::complete) return detail::frontier_in_id_order(g, options);
  }
  const std::vector<node_id> order = consumers_first(g, options.preserve_gradient_order);
  if (is_id_order(order)) return detail::frontier_in_id_order(g, options);
  auto in_order = [&](const pareto_options& o) {
    pareto_result r = detail::frontier_in_id_order(reorder_graph(g, order), o);
    for (frontier_point& p : r.points) {
      std::vector<std::uint32_t> stage_of(g.size());
      for (std::size_t k = 0; k < order.size(); ++k) stage_of[order[k]] = p.stage_of[k];
      p.stage_of = std::move(stage_of);
      p.order = order;
    }
    return r;
  };
  if (options.order == order_choice::consumers_first) return in_order(options);
  pareto_options half = options;
  half.time = options.time.share(1, 2);
  pareto_result first = detail::frontier_in_id_order(g, half);
  pareto_result second = in_order(options);
  pareto_result out;
  out.family = first.family;
  out.points = detail::merge_frontiers(std::move(first.points), std::move(second.points));
  auto weaker = [](solve_status a, solve_status b) {
    auto rank = [](solve_status s) {
      switch (s) {
        case solve_status::optimal: return 0;
        case solve_status::feasible: return 1;
        case solve_status::infeasible: return 2;
        case solve_status::stopped: return 3;
      }
      return 3;
    };
    return rank(a) >= rank(b) ? a : b;
  };
  out.status = weaker(first.status, second.status);
  if (!out.points.empty() && out.status != solve_status::optimal) out.status = solve_status::feasible;
  out.message = first.message == second.message ? first.message
                                                : "the graph's order: " + first.message +
                                                      "; the consumers-first order: " + second.message;
  out.message += "; stage plans run in the graph's order or the consumers-first order";
  out.stats = first.stats;
  out.stats += second.stats;
  return out;
}

}  // namespace detail

/// Computes the frontier over all lower-set chains when the graph has at most
/// `max_lower_sets` of them, else over the prefix family (stages = id
/// intervals), and says which; in the orders `options.order` names. Status
/// `optimal` only when every order's frontier is exact. Complexity: that of
/// solve_dp with three-dimensional fronts, once per order. `stats.seconds`
/// is the wall time of the whole call, counting and both orders included.
inline pareto_result pareto_frontier(const graph& g, const pareto_options& options = {}) {
  const auto start = std::chrono::steady_clock::now();
  pareto_result out = detail::frontier_in_orders(g, options);
  out.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace remat
