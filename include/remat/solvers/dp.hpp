#pragma once

/// \file
/// Dynamic programmes over increasing sequences of lower sets (Kusumoto et al.,
/// NeurIPS 2019), with a cost model that knows what each backward reads, and
/// figures equal to the simulator's to the byte.
///
/// A plan is a chain ∅ = L₀ ⊂ L₁ ⊂ … ⊂ L_k = V of lower sets; stage i holds
/// V_i = L_i \ L_{i-1} and the schedule is schedule_from_stages (see
/// plan/schedule.hpp for what is kept, recomputed and freed). Design note: the
/// builder frees a value kept from the forward only after the backwards of all
/// its consumers (and its own when it reads its output), so the memory while
/// stage i runs is exactly M_{i-1} + c(L_{i-1}, L_i), where M is the bytes kept
/// by earlier stages and c depends on the two lower sets only. A label
/// (kept bytes M, peak so far P, recompute time R) per lower set, pruned to its
/// Pareto front, then makes the programme exact:
///
/// * memory objective: least peak, then least recompute;
/// * time objective: least recompute with every stage within a byte budget;
/// * frontier: every (peak, recompute) pair no other plan beats on both. Its
///   three-dimensional labels are settled per state in batches (a sort and a
///   staircase, O(N log N) for N labels), after plans sampled along the
///   frontier with two-dimensional labels have pruned those that cannot
///   reach it.
///
/// Families of lower sets:
/// * `exact`: all lower sets, generated on demand by reverse search from each
///   state, pruned by bounds that only grow as a stage grows (the bytes of
///   recomputed values read by a backward, the kept bytes not yet released,
///   the forward peak); a
///   stage whose backward already starts above the bound is not evaluated,
///   and a state no plan can finish from within it is not expanded
///   (stage_graph.hpp). States are keyed by (piece, lower set of the piece)
///   using decompose_series.
///   A stage across whole pieces costs O(1) once the head of its source and
///   the tail of its target are known (stage_evaluator), a stage within a few
///   pieces O(|stage| + edges at it), and its target state is found by a
///   running XOR of node keys; so the work is O(Σ_L |supersets(L)| · deg)
///   plus the labels: the number of lower sets is the driver (see
///   analysis/lower_sets.hpp).
/// * `prefix`: the prefixes of the id order (stages are id intervals): exact on
///   linear graphs, an approximation elsewhere. O(n · |stage| · (|stage| + deg)).
/// * `principal`: Kusumoto's approximate family {∅} ∪ {↓v} ∪ {V}, all
///   comparable pairs. O(n² · (n + m)).

#include <remat/config.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <remat/analysis/bounds.hpp>
#include <remat/graph/graph.hpp>
#include <remat/plan/plan.hpp>
#include <remat/plan/simulate.hpp>
#include <remat/plan/solution.hpp>
#include <remat/solvers/common.hpp>
#include <remat/solvers/dp_engine.hpp>
#include <remat/solvers/dp_options.hpp>
#include <remat/units.hpp>

namespace remat {

struct dp_result {
  solution result;
  std::vector<frontier_point> frontier;  ///< when options.keep_frontier, by increasing peak
  bool complete = false;                 ///< the family was fully explored
  bool labels_capped = false;            ///< the label phase stopped at max_labels or the time limit (no frontier)
  /// When options.keep_frontier: the least recompute at evenly spaced budgets
  /// (sample_frontier), each point optimal for its budget; what a caller
  /// can show when the labels are capped. Unsorted, may repeat a point.
  std::vector<frontier_point> sampled;
  bool sampled_all = false;  ///< every budget got its plan (the two-dimensional labels fit)
  dp_stats stats;            ///< the programme's counts (result.stats names them)
};

/// Runs the lower-set programme over `family` for `options.goal`. The plan is a
/// stage plan whose claimed peak and recompute equal the simulator's. Phases:
/// every stage reachable within `options.budget` is evaluated once; for the
/// memory objective the least peak comes from one backward pass over those
/// stages; the least recompute within the peak (or the
/// budget) comes from Pareto labels. Status: optimal (the family was fully
/// explored), feasible (a cap or the time limit stopped it; the plan is the
/// best among the stages evaluated), infeasible (no plan within the budget; for
/// the time objective `smallest_feasible_budget` says what would work).
/// solve_dp's memory-objective rounds look for chain's plan as an upper
/// bound once a failed round has evaluated this many stages.
inline constexpr std::uint64_t chain_after_stages = 10'000;

inline dp_result solve_dp(const graph& g, dp_family family, const dp_options& options = {}) {
  // For the memory objective the search is bounded: runs with bounds growing
  // from the per-op floor by a quarter each time until one reaches a plan,
  // the last at most at the peak of chain's plan. Tight bounds prune most
  // stages, so the failed runs are cheap and the last one explores little
  // more than the optimum needs.
  if (options.goal == objective::memory && !options.keep_frontier &&
      options.budget == std::numeric_limits<std::uint64_t>::max()) {
    // Every round (and chain's) works on g: its floors are worked out once.
    std::optional<backward_floor> own_floors;
    if (!options.floors) own_floors = backward_floors(g);
    const backward_floor& floors = options.floors ? *options.floors : *own_floors;
    std::uint64_t bound = per_op_floor(g, floors).bytes;
    dp_stats spent;
    // A plan of id-interval stages (chain's family, which this one holds)
    // bounds the least peak from above. Once a failed round has evaluated
    // many stages (a branchy graph, where rounds just below the optimum cost
    // nearly as much as one above it), chain's plan is found, and a next
    // bound past four fifths of its peak U becomes U itself: that round
    // always finds a plan.
    std::uint64_t upper = std::numeric_limits<std::uint64_t>::max();
    bool upper_tried = family != dp_family::exact;
    auto find_upper = [&] {
      upper_tried = true;
      dp_options chain = options;
      chain.peak_only = true;
      chain.floors = &floors;
      const dp_result c = solve_dp(g, dp_family::prefix, chain);
      spent.lower_sets += c.stats.lower_sets;
      spent.transitions += c.stats.transitions;
      spent.pruned += c.stats.pruned;
      spent.skipped += c.stats.skipped;
      spent.seconds += c.stats.seconds;
      if (c.complete && c.result.status == solve_status::optimal) upper = c.result.claimed_peak;
    };
    auto capped = [&](std::uint64_t b) { return b > upper / 5 * 4 ? upper : b; };
    for (;;) {
      dp_options bounded = options;  // the rounds share one time budget
      bounded.budget = bound;
      bounded.floors = &floors;
      dp_result r = solve_dp(g, family, bounded);
      spent.lower_sets += r.stats.lower_sets;
      spent.transitions += r.stats.transitions;
      spent.pruned += r.stats.pruned;
      spent.skipped += r.stats.skipped;
      if (r.result.status != solve_status::infeasible || !r.complete) {
        const double seconds = spent.seconds + r.stats.seconds;
        r.stats.lower_sets = spent.lower_sets;
        r.stats.transitions = spent.transitions;
        r.stats.pruned = spent.pruned;
        r.stats.skipped = spent.skipped;
        r.stats.seconds = seconds;
        r.result.stats = r.stats.named();
        return r;
      }
      spent.seconds += r.stats.seconds;
      if (bound >= upper) upper = std::numeric_limits<std::uint64_t>::max();  // cannot fail; never loop on it
      else if (!upper_tried && r.stats.transitions >= chain_after_stages) find_upper();
      const std::uint64_t grown = bound + bound / 4 + 1;
      bound = grown < bound ? std::numeric_limits<std::uint64_t>::max() : capped(grown);
    }
  }
  detail::dp_engine engine(g, options);
  dp_result out;
  solution& sol = out.result;
  out.complete = engine.enumerate(family, options.budget);
  const std::optional<std::uint32_t> final = engine.final_state();
  if (!final) {
    sol.status = out.complete ? solve_status::infeasible : solve_status::stopped;
    out.stats = engine.stats();
    sol.stats = out.stats.named();
    // What is infeasible is the family's plans: a kept-set plan may still fit.
    const std::string none = family == dp_family::exact    ? "no stage plan"
                             : family == dp_family::prefix ? "no plan of id-interval stages"
                                                           : "no plan of principal lower sets";
    if (out.complete && options.goal == objective::time && options.least_budget_if_infeasible &&
        options.budget != std::numeric_limits<std::uint64_t>::max()) {
      dp_options loose = options;
      loose.goal = objective::memory;
      loose.budget = std::numeric_limits<std::uint64_t>::max();
      const dp_result least = solve_dp(g, family, loose);
      sol.smallest_feasible_budget = least.result.claimed_peak;
      sol.message = none + " peaks within the budget; the smallest feasible budget for one is " +
                    format_bytes(least.result.claimed_peak) + " (" + std::to_string(least.result.claimed_peak) +
                    " bytes)";
    } else if (!out.complete) {
      sol.message = "stopped by " + out.stats.stopped_by(options.time) + " before any complete plan was found";
    } else {
      sol.message = none + " peaks within the budget";
    }
    return out;
  }
  std::uint64_t budget = options.budget;
  if (options.goal == objective::memory) budget = engine.least_peak(*final);
  const std::string method_name = family == dp_family::exact    ? "exact"
                                  : family == dp_family::prefix ? "chain"
                                                                : "approx";
  const bool frontier = options.keep_frontier;
  std::vector<detail::dp_label> front;
  if (frontier) {
    detail::frontier_sampling samples = engine.sample_frontier(*final, options.budget, frontier_sample_count, false);
    out.sampled = std::move(samples.plans);
    out.sampled_all = samples.all;
    front = engine.labels_within(options.budget, *final, false, samples.staircase);
  } else if (!(options.peak_only && options.goal == objective::memory)) {
    front = engine.labels_within(budget, *final, true);
  }
  if (front.empty()) {
    // No labels (peak only, or the label cap): a least-kept plan within the
    // budget, or the label phase's beam plan where it recomputes less.
    const std::vector<std::uint32_t> chain = engine.stand_in_chain(budget, *final);
    const auto [peak, recompute] = engine.chain_figures(chain);
    sol.claimed_peak = peak;
    sol.claimed_recompute = recompute;
    sol.best = plan::from_stages(g, engine.stages_of_chain(chain), method_name);
    if (engine.labels_capped()) {
      const std::string why =
          (engine.stats().time_limit_reached ? std::string(options.time.spent_on()) : std::string("the label cap")) +
          " reached";
      if (options.goal == objective::time)
        sol.message = why + ": a plan within the budget, recompute not minimised";
      else if (out.complete)
        sol.message = "least peak proven; recompute not minimised among least-peak plans (" + why + ")";
      else
        sol.message = why + ": the least peak over the stages found, not proven; recompute not minimised";
    }
  } else {
    auto better = [&](const detail::dp_label& x, const detail::dp_label& y) {
      return rank_plan(x.peak, x.recompute, options.goal) < rank_plan(y.peak, y.recompute, options.goal);
    };
    const detail::dp_label best = *std::min_element(front.begin(), front.end(), better);
    sol.claimed_peak = best.peak;
    sol.claimed_recompute = best.recompute;
    sol.best = plan::from_stages(g, engine.stages_of(best), method_name);
  }
  sol.figures = simulate(g, sol.best.steps);
  sol.status = out.complete ? solve_status::optimal : solve_status::feasible;
  if (!out.complete && sol.message.empty())
    sol.message = "stopped by " + engine.stats().stopped_by(options.time) +
                  ": the best plan over the stages found, not proven";
  if (engine.labels_capped() && options.goal == objective::time) sol.status = solve_status::feasible;
  if (options.keep_frontier) {
    std::vector<detail::dp_label> sorted = front;
    std::sort(sorted.begin(), sorted.end(), [](const auto& x, const auto& y) {
      return x.peak != y.peak ? x.peak < y.peak : x.recompute < y.recompute;
    });
    double best_recompute = std::numeric_limits<double>::infinity();
    for (const auto& l : sorted)
      if (detail::saves_recompute(l.recompute, best_recompute)) {
        best_recompute = l.recompute;
        out.frontier.push_back({l.peak, l.recompute, engine.stages_of(l), {}});
      }
  }
  out.labels_capped = engine.labels_capped();
  out.stats = engine.stats();
  sol.stats = out.stats.named();
  return out;
}

/// Options of the methods that run one family's programme alone: `dp` (all
/// lower sets), `chain` (chain.hpp) and `approx` (approx.hpp).
struct stage_dp_options {
  objective goal = objective::memory;
  std::uint64_t budget = no_budget;  ///< the time objective's byte budget
  /// The programme stops past four times this many states (at least 4,096).
  std::uint64_t max_lower_sets = 20000;
  time_budget time;
  bool preserve_gradient_order = true;
  std::optional<std::uint64_t> per_op_floor = std::nullopt;  ///< the graph's, when the caller knows it
  bool least_budget_if_infeasible = true;  ///< dp_options::least_budget_if_infeasible
};

/// One family's programme as a method: `optimal` over that family when it
/// completes; the peak's lower bound is the optimum for the exact family,
/// else the per-op floor.
inline solution solve_stage_family(const graph& g, dp_family family, const stage_dp_options& options) {
  dp_options dp;
  dp.goal = options.goal;
  dp.budget = options.budget;
  dp.time = options.time;
  dp.preserve_gradient_order = options.preserve_gradient_order;
  dp.least_budget_if_infeasible = options.least_budget_if_infeasible;
  dp.max_states = std::max<std::uint64_t>(options.max_lower_sets, 1024) * 4;
  const std::uint64_t floor = per_op_floor_of(g, options.per_op_floor);  // before the search, which the time budget bounds
  solution s = solve_dp(g, family, dp).result;
  if (options.goal == objective::memory) {
    // Only the exact family's optimum bounds every plan.
    s.peak_lower_bound = family == dp_family::exact && s.status == solve_status::optimal ? s.claimed_peak : floor;
  }
  return s;
}

/// The method `dp`: the exact family's programme alone (no fallback).
inline solution solve_dp(const graph& g, const stage_dp_options& options) {
  return solve_stage_family(g, dp_family::exact, options);
}

}  // namespace remat
