#pragma once

/// \file
/// One entry point: remat::solve(graph, options) runs any method and returns a
/// remat::solution (status, plan, the simulator's figures, bounds, stats).
///
/// | method     | plan family | what it guarantees |
/// | ---------- | ----------- | ------------------ |
/// | `exact`    | lower-set chains | optimal when the graph has at most `max_lower_sets` lower sets; else the best plan of the chain and approximate families: `optimal` (least peak, recompute not minimised) when a search bounded by its peak proves no stage plan lower, else `feasible` with a lower bound from a subgraph (subgraph_bound.hpp) |
/// | `dp`       | lower-set chains | the exact programme alone (its own cap and time limit) |
/// | `chain`    | id-interval stages | optimal over them (all plans on a linear graph) |
/// | `approx`   | Kusumoto's principal lower sets | optimal over them |
/// | `mincut`   | stages cut at minimum-kept boundaries (cut_plans.hpp) | none; the per-op floor as bound |
/// | `ogc`      | kept sets | Feng & Huang's division search for their objective (ogc.hpp) |
/// | `ogc-exact`| kept sets | Feng & Huang's objective, optimal over all kept sets (segment_dp.hpp) |
/// | `kept-search` | kept sets | none: a local search for the least peak (or recompute within the budget) from `ogc-exact`'s kept set (kept_search.hpp); can go below `exact`'s stage optimum |
/// | `sqrt`, `every-k`, `none` | baselines | none; `none` is regular training |
///
/// `ogc` and `ogc-exact` optimise Feng & Huang's model (kept bytes + the
/// largest re-run segment; `solution::objective`), not the simulated peak;
/// their plans are measured like any other.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "baselines.hpp"
#include "bounds.hpp"
#include "cut_plans.hpp"
#include "dp.hpp"
#include "execution_order.hpp"
#include "kept_search.hpp"
#include "lower_sets.hpp"
#include "ogc.hpp"
#include "segment_dp.hpp"
#include "segments.hpp"
#include "solution.hpp"
#include "subgraph_bound.hpp"

namespace remat {

enum class method { exact, dp, chain, approx, mincut, ogc, ogc_exact, kept_search, sqrt, every_k, none };

/// Every method, in the order the CLI lists them.
inline constexpr method all_methods[] = {method::exact,     method::dp,          method::chain,  method::approx,
                                         method::mincut,    method::ogc,         method::ogc_exact,
                                         method::kept_search, method::sqrt,      method::every_k, method::none};

inline constexpr std::string_view to_string(method m) noexcept {
  switch (m) {
    case method::exact: return "exact";
    case method::dp: return "dp";
    case method::chain: return "chain";
    case method::approx: return "approx";
    case method::mincut: return "mincut";
    case method::ogc: return "ogc";
    case method::ogc_exact: return "ogc-exact";
    case method::kept_search: return "kept-search";
    case method::sqrt: return "sqrt";
    case method::every_k: return "every-k";
    case method::none: return "none";
  }
  return "?";
}

inline std::optional<method> parse_method(std::string_view name) noexcept {
  for (method m : all_methods)
    if (to_string(m) == name) return m;
  return std::nullopt;
}

struct solve_options {
  remat::method method = method::exact;
  objective goal = objective::memory;
  /// Time objective: the byte budget every step must stay within. Ignored
  /// (no budget) when left at the maximum.
  std::uint64_t budget = std::numeric_limits<std::uint64_t>::max();
  /// Above this many lower sets `exact` falls back (branchy graphs beyond ~2·10⁴
  /// lower sets take the exact programme from seconds to minutes).
  std::uint64_t max_lower_sets = 20000;
  std::chrono::milliseconds time_limit{60000};
  std::size_t every_k = 4;
  bool preserve_gradient_order = true;
  /// `ogc-exact`: labels its sweeps may create before it returns its best
  /// kept set with a lower bound. Inception v3's proof needs 3.3·10⁶ (8.6 s);
  /// on the NAS networks 4·10⁶ take 20–50 s without a proof.
  std::uint64_t max_segment_labels = 4'000'000;
  /// `exact` when its plan is not proven: time for a lower bound above the
  /// per-op floor from a subgraph's least peak (subgraph_bound.hpp), within
  /// the time limit. On the zoo's NAS networks 250 ms lift the bound
  /// 1.8–2.1× above the floor; 0 keeps the floor.
  std::chrono::milliseconds bound_time_limit{250};
  /// The order the plan runs its nodes in. With `best`, `exact` solves in the
  /// graph's order, then (when they differ, and the time limit leaves at least
  /// as long as the first took) in the consumers-first order, and keeps the
  /// better plan; its status, bounds and "infeasible" then speak of stage
  /// plans in either order (solution::both_orders). `automatic`
  /// does so past `max_lower_sets`, where the plan comes from the fallbacks,
  /// and keeps the graph's order within it, where the exact programme costs
  /// the most and proves its optimum in that order. `kept-search` searches in
  /// both orders with `best` and `automatic`.
  order_choice order = order_choice::automatic;
};

namespace detail {

inline solution baseline_solution(const graph& g, plan p, const solve_options& options) {
  solution s;
  s.best = std::move(p);
  s.figures = simulate(g, s.best.steps);
  s.claimed_peak = s.figures.peak_bytes;
  s.claimed_recompute = s.figures.recompute_time;
  s.peak_lower_bound = per_op_floor(g).bytes;
  s.status = s.figures.peak_bytes <= options.budget ? solve_status::feasible : solve_status::infeasible;
  if (s.status == solve_status::infeasible)
    s.message = "the " + s.best.method + " plan peaks at " + std::to_string(s.figures.peak_bytes) +
                " bytes, above the budget";
  return s;
}

inline solution run_dp(const graph& g, dp_family family, const solve_options& options) {
  dp_options dp;
  dp.goal = options.goal;
  dp.budget = options.budget;
  dp.time_limit = options.time_limit;
  dp.preserve_gradient_order = options.preserve_gradient_order;
  dp.max_states = std::max<std::uint64_t>(options.max_lower_sets, 1024) * 4;
  solution s = solve_dp(g, family, dp).result;
  if (options.goal == objective::memory) {
    const std::uint64_t floor = per_op_floor(g).bytes;
    // Only the exact family's optimum bounds every plan.
    s.peak_lower_bound = family == dp_family::exact && s.status == solve_status::optimal ? s.claimed_peak : floor;
  }
  return s;
}

// Too many lower sets for the exact programme, but the search for a plan
// below the best one found is bounded by that plan's peak, and the bound can
// cut it short: on Inception v3 the first layers alone need nearly all of it,
// so the search ends after nine lower sets. When it is complete and finds
// nothing, the best plan's peak is the least; when it finds a plan, that plan
// has the least peak and replaces it (either way the recompute is not minimised).
// It may visit as many lower sets and stages as `max_lower_sets`. Returns why
// the peak was not proven (empty when it was).
inline std::string prove_least_peak(const graph& g, const solve_options& options,
                                    std::chrono::steady_clock::time_point deadline, solution& s) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  if (s.claimed_peak == 0) return "no plan to search below";
  if (left.count() <= 0) return "no time was left to search for a plan below its peak";
  dp_options below;
  below.goal = objective::memory;
  below.budget = s.claimed_peak - 1;
  below.peak_only = true;
  below.max_states = options.max_lower_sets;
  below.max_transitions = options.max_lower_sets;
  below.time_limit = left;
  below.preserve_gradient_order = options.preserve_gradient_order;
  const dp_result search = solve_dp(g, dp_family::exact, below);
  const std::string searched = std::to_string(search.result.stats.lower_sets) + " lower sets and " +
                               std::to_string(search.result.stats.transitions) + " stages";
  if (!search.complete)
    return "a search for a plan below its peak stopped at " +
           (search.result.stats.time_limit_reached ? std::string("the time limit")
                                                   : "its cap of " + std::to_string(options.max_lower_sets) +
                                                         " lower sets and stages") +
           " after " + searched;
  // The search is the exact programme below the bound: a plan it finds has
  // the least peak of all stage plans, and finding none proves s's peak least.
  const bool found = search.result.status != solve_status::infeasible;
  if (found) s = search.result;
  s.status = solve_status::optimal;
  s.peak_lower_bound = s.claimed_peak;
  s.message = (found ? "least peak found by a search below the best fallback plan (" + searched + ")"
                     : "least peak proven: no stage plan peaks below this one (a search bounded by its peak "
                       "ended after " + searched + ")") +
              "; its recompute is not minimised among least-peak plans, the graph having more than " +
              std::to_string(options.max_lower_sets) + " lower sets";
  return {};
}

// Lifts s's peak bound above the per-op floor with a subgraph's least peak
// when a plan is not proven (the memory objective only: the bound is on the
// peak). A bound that meets the plan's peak proves it least. Returns what the
// bound is, for the message.
inline std::string raise_peak_bound(const graph& g, const solve_options& options,
                                    std::chrono::steady_clock::time_point deadline, solution& s) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  const std::string floor_said = "the lower bound is the per-op floor";
  if (options.goal != objective::memory || options.bound_time_limit.count() <= 0 || left.count() <= 0)
    return floor_said;
  subgraph_bound_options within;
  within.time_limit = std::min(options.bound_time_limit, left);
  const subgraph_bound bound = subgraph_peak_bound(g, within);
  if (bound.nodes == 0 || bound.bytes <= s.peak_lower_bound) return floor_said + " (no subgraph tried bound it higher)";
  const std::string subgraph = "a subgraph of " + std::to_string(bound.nodes) + " nodes and " +
                               std::to_string(bound.lower_sets) + " lower sets";
  // The bound never exceeds the least peak, so it cannot pass the plan's.
  s.peak_lower_bound = std::min(bound.bytes, s.claimed_peak);
  if (s.peak_lower_bound == s.claimed_peak) {
    s.status = solve_status::optimal;
    return "least peak proven: the least peak of " + subgraph +
           " equals it (recompute not minimised among least-peak plans)";
  }
  return "the lower bound " + format_bytes(bound.bytes) +
         (bound.subgraph_optimum ? " is the least peak of " + subgraph
                                 : ": no stage plan of " + subgraph + " peaks below it") +
         (bound.stopped ? " (the bound's search stopped at its time limit)" : "");
}

// No fallback plan meets the budget, and beyond the cap nothing says whether
// another plan would. A lower bound above the budget (the per-op floor, or a
// subgraph's least peak: subgraph_bound.hpp) proves it infeasible; otherwise
// the answer is `stopped`, with what is known either side of the budget.
inline solution budget_out_of_reach(const graph& g, const solve_options& options,
                                    std::chrono::steady_clock::time_point deadline, std::uint64_t known_feasible,
                                    const std::string& why_not_exact) {
  solution s;
  const std::string budget = "the budget of " + format_bytes(options.budget);
  const std::string known =
      known_feasible == std::numeric_limits<std::uint64_t>::max()
          ? std::string()
          : "; the least feasible budget is at most " + format_bytes(known_feasible) + " (" +
                std::to_string(known_feasible) + " bytes), where a fallback plan peaks";
  if (known_feasible != std::numeric_limits<std::uint64_t>::max()) s.known_feasible_budget = known_feasible;
  subgraph_bound bound;
  bound.bytes = per_op_floor(g).bytes;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  if (bound.bytes <= options.budget && options.bound_time_limit.count() > 0 && left.count() > 0) {
    subgraph_bound_options refute;
    refute.stop_above = options.budget;
    refute.time_limit = std::min(options.bound_time_limit, left);
    bound = subgraph_peak_bound(g, refute);
  }
  s.peak_lower_bound = bound.bytes;
  const std::string subgraph = "a subgraph of " + std::to_string(bound.nodes) + " nodes and " +
                               std::to_string(bound.lower_sets) + " lower sets";
  if (bound.bytes > options.budget) {
    s.status = solve_status::infeasible;
    s.message = "no stage plan peaks within " + budget + ": " +
                (bound.nodes == 0 ? "the per-op floor is " + format_bytes(bound.bytes)
                                  : "no plan of " + subgraph + " does, so none of the graph") +
                known;
    return s;
  }
  s.status = solve_status::stopped;
  s.message = "no plan within " + budget + " found, and none ruled out: " + why_not_exact +
              ", no fallback plan fits, and every plan peaks at " +
              format_bytes(bound.bytes) + " or more (" +
              (bound.nodes == 0 ? std::string("the per-op floor")
                                : (bound.subgraph_optimum ? "the least peak of " : "no plan of ") + subgraph +
                                      (bound.subgraph_optimum ? "" : " peaks lower")) +
              ")" + known;
  return s;
}

inline solution segment_plan_solution(const graph& g, const segment_solution& found, method m,
                                      const solve_options& options) {
  solution s = baseline_solution(g, plan::from_kept(g, found.kept, std::string(to_string(m))), options);
  s.objective = static_cast<double>(found.cost.total());
  s.objective_lower_bound = static_cast<double>(found.lower_bound);
  s.stats.lower_sets = found.stats.lower_sets;
  s.stats.transitions = found.stats.transitions;
  s.stats.labels = found.stats.labels;
  s.stats.pruned = found.stats.pruned;
  s.stats.cap_reached = found.stats.cap_reached;
  s.stats.time_limit_reached = found.stats.time_limit_reached;
  if (s.status == solve_status::infeasible) return s;
  const std::string figure = std::to_string(found.cost.total()) + " bytes (kept " +
                             std::to_string(found.cost.kept_bytes) + " + largest segment " +
                             std::to_string(found.cost.largest_segment) + ")";
  if (m == method::ogc) {
    s.message = "Feng & Huang's objective " + figure + ", optimal only among plans that follow their division tree";
  } else if (found.optimal) {
    s.status = solve_status::optimal;
    s.message = "optimal for Feng & Huang's objective: " + figure;
  } else {
    s.message = "Feng & Huang's objective " + figure + "; no kept set scores below " +
                std::to_string(found.lower_bound) + " bytes (" +
                (found.stats.time_limit_reached ? "time limit" : "label cap") + " reached)";
  }
  return s;
}

inline solution run_ogc_exact(const graph& g, const solve_options& options) {
  const ogc_solution division = solve_ogc(g, options.time_limit / 4);  // the sweeps get the rest
  segment_dp_options dp;
  dp.time_limit = options.time_limit;
  dp.max_labels = options.max_segment_labels;
  return segment_plan_solution(g, solve_segments_exact(g, dp, &division.kept), method::ogc_exact, options);
}

// `kept-search`: from `ogc-exact`'s kept set (a quarter of the time limit),
// a local search in the graph's order, the consumers-first order, or both
// (order `best` and `automatic`; the better plan wins, the graph's on a tie).
inline solution run_kept_search(const graph& g, const solve_options& options) {
  const auto start = std::chrono::steady_clock::now();
  solve_options seed = options;
  seed.time_limit = std::max(std::chrono::milliseconds(1), options.time_limit / 4);  // 0 would mean no limit
  const solution found = run_ogc_exact(g, seed);
  std::vector<std::vector<node_id>> orders;
  if (options.order != order_choice::consumers_first) orders.emplace_back();
  if (options.order != order_choice::graph) {
    const precedence constraints = options.preserve_gradient_order ? gradient_order_constraints(g) : precedence{};
    std::vector<node_id> other = consumers_first_order(g, constraints);
    if (!is_id_order(other) || orders.empty()) orders.push_back(std::move(other));
  }
  const auto left = options.time_limit - std::chrono::duration_cast<std::chrono::milliseconds>(
                                             std::chrono::steady_clock::now() - start);
  std::optional<kept_search_result> best;
  std::vector<node_id> best_order;
  bool stopped = false;
  for (std::vector<node_id>& order : orders) {
    kept_search_options search;
    search.goal = options.goal;
    search.budget = options.budget;
    search.order = order;
    search.time_limit = std::max(std::chrono::milliseconds(1), left / static_cast<long>(orders.size()));
    kept_search_result r = improve_kept_set(g, found.best.kept, search);
    stopped = stopped || r.time_limit_reached;
    if (!best || kept_plan_rank(r.figures, options.goal, options.budget) <
                     kept_plan_rank(best->figures, options.goal, options.budget)) {
      best = std::move(r);
      best_order = std::move(order);
    }
  }
  solution s = baseline_solution(
      g, plan::from_kept(g, best->kept, std::string(to_string(method::kept_search)), best_order), options);
  s.stats.lower_sets = best->toggles;
  s.stats.transitions = best->tries;
  s.stats.time_limit_reached = stopped || found.stats.time_limit_reached;
  s.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (s.status == solve_status::infeasible) return s;
  s.message = "a kept-set plan from a local search (" + std::to_string(best->toggles) + " toggles in " +
              std::to_string(best->passes) + " passes) started at the kept set " +
              (found.status == solve_status::optimal ? "optimal" : "best found") +
              " for Feng & Huang's objective" + (stopped ? ", stopped by the time limit" : "") +
              "; not proven: the lower bound is the per-op floor";
  return s;
}

}  // namespace detail

namespace detail {

// What `exact` tried before it found no proof, for the message the subgraph
// bound completes (finish_unproven).
struct unproven_exact {
  std::string tried;     // what limited it and which fallbacks ran
  std::string searched;  // why the search below the best plan did not prove it
  bool over_cap = false; // the graph has more lower sets than max_lower_sets (or counting them ran out of time)
};

// The last step of `exact` on an unproven plan: a subgraph's bound
// (raise_peak_bound) and the message saying what was tried.
inline void finish_unproven(const graph& g, const solve_options& options,
                            std::chrono::steady_clock::time_point deadline, solution& s, const unproven_exact& why) {
  const std::string bound = raise_peak_bound(g, options, deadline, s);
  s.message = why.tried + (s.status == solve_status::optimal ? "" : ", none proven optimal") +
              (why.searched.empty() ? "" : "; " + why.searched) + "; " + bound;
}

// `options.method` on g as numbered (options.order is not looked at). With
// `defer`, an unproven `exact` plan is returned before its subgraph bound,
// what it tried in *defer (left empty otherwise), for the caller to finish;
// `exact` also says there whether the graph is past its lower-set cap.
inline solution solve_in_id_order(const graph& g, const solve_options& options, unproven_exact* defer = nullptr) {
  const auto start = std::chrono::steady_clock::now();
  solution s;
  switch (options.method) {
    case method::none: s = detail::baseline_solution(g, plan_none(g), options); break;
    case method::sqrt: s = detail::baseline_solution(g, plan_sqrt(g), options); break;
    case method::every_k: s = detail::baseline_solution(g, plan_every_k(g, options.every_k), options); break;
    case method::chain: s = detail::run_dp(g, dp_family::prefix, options); break;
    case method::approx: s = detail::run_dp(g, dp_family::principal, options); break;
    case method::dp: s = detail::run_dp(g, dp_family::exact, options); break;
    case method::mincut: {
      mincut_options m;
      m.goal = options.goal;
      m.budget = options.budget;
      m.preserve_gradient_order = options.preserve_gradient_order;
      m.time_limit = options.time_limit;
      s = solve_mincut(g, m);
      break;
    }
    case method::ogc: {
      const ogc_solution division = solve_ogc(g, options.time_limit);
      s = detail::segment_plan_solution(g, division, method::ogc, options);
      if (division.division.time_limit_reached && s.status != solve_status::infeasible)
        s.message += division.division.division_incomplete
                         ? " (time limit reached while dividing the graph: the plan follows an incomplete division)"
                         : " (time limit reached: the best of the candidate maxima tried, spread evenly over their range)";
      break;
    }
    case method::ogc_exact: s = detail::run_ogc_exact(g, options); break;
    case method::kept_search: s = detail::run_kept_search(g, options); break;
    case method::exact: {
      // Regular training recomputes nothing. When its peak already meets the
      // per-op floor, no plan is lower or recomputes less, on any graph size.
      if (solution regular = detail::baseline_solution(g, plan_none(g), options);
          regular.status == solve_status::feasible && regular.claimed_peak == regular.peak_lower_bound) {
        s = std::move(regular);
        s.status = solve_status::optimal;
        s.recompute_lower_bound = 0;
        s.message = "regular training already peaks at the per-op floor; nothing to recompute";
        s.best.method = "exact";
        break;
      }
      const precedence order = options.preserve_gradient_order ? gradient_order_constraints(g) : precedence{};
      lower_set_options count;
      count.max_count = options.max_lower_sets + 1;
      count.constraints = &order;
      count.time_limit = options.time_limit;
      const lower_set_count lower_sets = count_lower_sets(g, count);
      if (defer) defer->over_cap = lower_sets.status != enumeration_status::complete;
      // The exact programme gets three quarters of the time limit; the
      // fallbacks share what is left, so the whole call keeps to the limit.
      const auto deadline = start + options.time_limit;
      if (lower_sets.status == enumeration_status::complete) {
        solve_options exact_part = options;
        exact_part.time_limit = options.time_limit * 3 / 4;
        s = detail::run_dp(g, dp_family::exact, exact_part);
        s.stats.lower_sets = lower_sets.count;
        const bool stopped = s.stats.cap_reached || s.stats.time_limit_reached;
        if (s.status == solve_status::optimal || (s.status == solve_status::infeasible && !stopped)) break;
      }
      // Too many lower sets (or stopped): the best of the restricted families
      // (the principal family costs O(n²·(n + m)), so only on moderate
      // graphs), the min-cut stages and Feng & Huang's division search; each
      // takes well under a second on the zoo's NAS networks.
      const std::uint64_t floor = per_op_floor(g).bytes;
      // Each new best plan gets a bounded search below its peak (see
      // prove_least_peak); once its peak is proven least no fallback can beat it.
      const bool provable = lower_sets.status != enumeration_status::complete && options.goal == objective::memory;
      bool proven = false;
      std::string unproven;
      std::uint64_t known_feasible = std::numeric_limits<std::uint64_t>::max();  // a budget some fallback plan meets
      std::vector<method> fallbacks{method::chain, method::mincut, method::ogc};
      // The lower bound after them (raise_peak_bound, budget_out_of_reach)
      // keeps its share of the limit.
      const auto fallback_deadline = deadline - std::min(options.bound_time_limit, options.time_limit / 4);
      if (g.size() <= 600) fallbacks.push_back(method::approx);
      for (std::size_t i = 0; i < fallbacks.size() && !proven; ++i) {
        solve_options narrower = options;
        narrower.method = fallbacks[i];
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(fallback_deadline - std::chrono::steady_clock::now());
        narrower.time_limit = std::max(std::chrono::milliseconds(1), left / static_cast<long>(fallbacks.size() - i));
        solution other = solve_in_id_order(g, narrower);
        if (other.status == solve_status::infeasible || other.status == solve_status::stopped) {
          if (other.smallest_feasible_budget) known_feasible = std::min(known_feasible, other.smallest_feasible_budget);
          if (!other.best.steps.empty()) known_feasible = std::min(known_feasible, other.figures.peak_bytes);
          continue;
        }
        const bool better = s.best.steps.empty() || s.status == solve_status::infeasible ||
                            (options.goal == objective::memory ? other.claimed_peak < s.claimed_peak
                                                               : other.claimed_recompute < s.claimed_recompute);
        if (!better) continue;
        s = std::move(other);
        s.peak_lower_bound = floor;
        if (provable) {
          s.status = solve_status::feasible;
          unproven = detail::prove_least_peak(g, options, fallback_deadline, s);
          proven = s.status == solve_status::optimal;
        }
      }
      const std::string why_not_exact =
          lower_sets.status == enumeration_status::complete
              ? std::string("the exact search stopped at its cap or time limit")
              : "the graph has more than " + std::to_string(options.max_lower_sets) + " lower sets";
      if (s.best.steps.empty() || s.status == solve_status::infeasible) {
        const solve_stats searched = s.stats;
        s = detail::budget_out_of_reach(g, options, deadline, known_feasible, why_not_exact);
        s.stats = searched;
        break;
      }
      s.best.method = "exact";
      if (!proven) {
        if (s.status == solve_status::optimal) s.status = solve_status::feasible;
        const unproven_exact why{why_not_exact + "; best plan of id-interval stages, min-cut stages, Feng & Huang's division search" +
                                     (g.size() <= 600 ? " and principal lower sets" : " (principal lower sets only up to 600 nodes)"),
                                 unproven, lower_sets.status != enumeration_status::complete};
        if (defer) *defer = why;
        else finish_unproven(g, options, deadline, s, why);
      }
      break;
    }
  }
  if (options.method != method::exact) s.best.method = std::string(to_string(options.method));
  s.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return s;
}

// A solution for reorder_graph(g, order), with its node ids mapped back to g's:
// the same schedule, run in `order`.
inline solution map_back(solution s, const graph& g, const std::vector<node_id>& order) {
  plan& p = s.best;
  for (step& x : p.steps) x.node = order[x.node];
  if (p.kept.universe() == g.size()) {
    node_set kept(g.size());
    p.kept.for_each([&](std::size_t v) { kept.insert(order[v]); });
    p.kept = std::move(kept);
  }
  if (p.stage_of.size() == g.size()) {
    std::vector<std::uint32_t> stage_of(g.size());
    for (std::size_t k = 0; k < order.size(); ++k) stage_of[order[k]] = p.stage_of[k];
    p.stage_of = std::move(stage_of);
  }
  if (!p.steps.empty() || !p.stage_of.empty() || p.kept.universe() != 0) p.order = order;
  return s;
}

inline bool has_plan(const solution& s) {
  return !s.best.steps.empty() && (s.status == solve_status::optimal || s.status == solve_status::feasible);
}

// What a plan in one order gives, for the message about the other.
inline std::string order_outcome(const solution& s, objective goal) {
  if (!has_plan(s)) return std::string(to_string(s.status));
  if (goal == objective::memory) return "peaks at " + format_bytes(s.claimed_peak);
  return "recomputes " + std::to_string(s.claimed_recompute) + " s";
}

// Two solves, one in each order, as one.
inline solution add_stats(solution out, const solution& other) {
  out.both_orders = true;
  out.stats += other.stats;
  return out;
}

// Whether b's plan beats a's by the objective (memory: peak, then recompute;
// time: recompute, then peak); a plan beats no plan.
inline bool beats(const solution& b, const solution& a, objective goal) {
  if (!has_plan(b)) return false;
  if (!has_plan(a)) return true;
  return goal == objective::memory ? std::tuple(b.claimed_peak, b.claimed_recompute) < std::tuple(a.claimed_peak, a.claimed_recompute)
                                   : std::tuple(b.claimed_recompute, b.claimed_peak) < std::tuple(a.claimed_recompute, a.claimed_peak);
}

// Neither order has a plan within the budget: `infeasible` only when both
// proved it, and the message of the order that knows the lower budget that
// works (the least one, or one a fallback plan meets).
inline solution no_plan_in_either(solution in_graph_order, solution in_other_order) {
  auto known = [](const solution& s) {
    if (s.smallest_feasible_budget != 0) return s.smallest_feasible_budget;
    return s.known_feasible_budget != 0 ? s.known_feasible_budget : std::numeric_limits<std::uint64_t>::max();
  };
  const bool both_infeasible =
      in_graph_order.status == solve_status::infeasible && in_other_order.status == solve_status::infeasible;
  const bool other_knows_more = known(in_other_order) < known(in_graph_order);
  solution out = std::move(other_knows_more ? in_other_order : in_graph_order);
  const solution& other = other_knows_more ? in_graph_order : in_other_order;
  out.status = both_infeasible ? solve_status::infeasible : solve_status::stopped;
  out.peak_lower_bound = std::min(out.peak_lower_bound, other.peak_lower_bound);
  out.message += std::string(out.message.empty() ? "" : "; ") + "in " +
                 (other_knows_more ? "the consumers-first order; the graph's order " : "the graph's order; the consumers-first order ") +
                 std::string(to_string(other.status)) + " too";
  return add_stats(std::move(out), other);
}

// `exact` over stage plans in either of two orders: the better plan, and bounds
// that hold for both (the lower of the two), so `optimal` and `infeasible`
// speak of every stage plan in either order. Ties go to the graph's order.
inline solution best_of_orders(solution in_graph_order, solution in_other_order, const solve_options& options) {
  if (!has_plan(in_graph_order) && !has_plan(in_other_order))
    return no_plan_in_either(std::move(in_graph_order), std::move(in_other_order));
  const bool memory = options.goal == objective::memory;
  const bool other_wins = beats(in_other_order, in_graph_order, options.goal);
  const std::uint64_t own_bound = (other_wins ? in_other_order : in_graph_order).peak_lower_bound;
  solution out = std::move(other_wins ? in_other_order : in_graph_order);
  const solution& loser = other_wins ? in_graph_order : in_other_order;

  out.peak_lower_bound = std::min(out.peak_lower_bound, loser.peak_lower_bound);
  // Proven over both orders only when the other order's proof reaches as far.
  bool other_refuted = loser.status == solve_status::infeasible;
  if (has_plan(loser))
    other_refuted = memory ? loser.peak_lower_bound > out.claimed_peak ||
                                 (loser.peak_lower_bound == out.claimed_peak && loser.status == solve_status::optimal)
                           : loser.status == solve_status::optimal;
  if (out.status == solve_status::optimal && !other_refuted) out.status = solve_status::feasible;
  std::string other = order_outcome(loser, options.goal);
  if (memory && has_plan(loser) && loser.peak_lower_bound < own_bound)
    other += ", and no plan of it is proven to peak above " + format_bytes(loser.peak_lower_bound);
  out.message += std::string(out.message.empty() ? "" : "; ") + "run in " +
                 (other_wins ? "the consumers-first order (the graph's order " : "the graph's order (the consumers-first order ") +
                 other + ")";
  return add_stats(std::move(out), loser);
}

}  // namespace detail

/// Runs `options.method` in the execution order `options.order` asks for.
/// Never throws for a hard instance: caps and time limits give status
/// `feasible` with the best plan found and a bound; an impossible budget gives
/// `infeasible` with the smallest feasible budget (or, beyond `exact`'s cap, a
/// bound that refutes it); a budget no plan found meets and no bound refutes
/// gives `stopped`. A plan run in another order than the graph's says so in
/// `best.order`.
/// \throws remat::error only for invalid options (every-k with k = 0).
inline solution solve(const graph& g, const solve_options& options = {}) {
  const auto start = std::chrono::steady_clock::now();
  const bool may_try_both = options.method == method::exact &&
                            (options.order == order_choice::best || options.order == order_choice::automatic);
  // kept-search runs its plans in the orders asked for itself, from one
  // ogc-exact start: a kept-set schedule takes its order directly, where the
  // stage programmes need the graph renumbered.
  if (options.method == method::kept_search || (options.order != order_choice::consumers_first && !may_try_both))
    return detail::solve_in_id_order(g, options);
  auto other_order = [&] {
    return consumers_first_order(g, options.preserve_gradient_order ? gradient_order_constraints(g) : precedence{});
  };
  if (!may_try_both) {
    const std::vector<node_id> order = other_order();
    if (is_id_order(order)) return detail::solve_in_id_order(g, options);
    solution s = detail::map_back(detail::solve_in_id_order(reorder_graph(g, order), options), g, order);
    s.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return s;
  }
  // The graph's order first, with the whole time limit; the other order
  // (`automatic`: only past the lower-set cap, which the first solve counted)
  // with what is left, when that is at least what the first took (else the
  // graph's order alone, as without this: on a 104,436-node NAS stack with a
  // 3 s limit, halving the time left both orders' fallbacks too little to
  // find a plan). An unproven plan's subgraph bound waits until the better
  // plan is known, which gets the whole bound time.
  const auto deadline = start + options.time_limit;
  detail::unproven_exact why_graph, why_other;
  solution first = detail::solve_in_id_order(g, options, &why_graph);
  const auto first_took = std::chrono::steady_clock::now() - start;
  // No order goes below the per-op floor, and none recomputes less than nothing.
  const bool unbeatable = first.status == solve_status::optimal &&
                          (options.goal == objective::memory ? first.claimed_peak == per_op_floor(g).bytes
                                                             : first.claimed_recompute == 0);
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  std::vector<node_id> order;
  if (!unbeatable && left >= first_took && (options.order == order_choice::best || why_graph.over_cap))
    order = other_order();
  if (order.empty() || is_id_order(order)) {
    if (!why_graph.tried.empty()) detail::finish_unproven(g, options, deadline, first, why_graph);
    first.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return first;
  }
  solve_options rest = options;
  rest.time_limit = left;
  const graph h = reorder_graph(g, order);
  solution second = detail::map_back(detail::solve_in_id_order(h, rest, &why_other), g, order);
  const bool other_wins = detail::beats(second, first, options.goal);
  solution& winner = other_wins ? second : first;
  solution& loser = other_wins ? first : second;
  const graph& winner_graph = other_wins ? h : g;
  const graph& loser_graph = other_wins ? g : h;
  const detail::unproven_exact& why_winner = other_wins ? why_other : why_graph;
  if (!why_winner.tried.empty()) detail::finish_unproven(winner_graph, options, deadline, winner, why_winner);
  // The other order's plans need a bound too, but only as high as the winner's.
  const detail::unproven_exact& why_loser = other_wins ? why_graph : why_other;
  if (!why_loser.tried.empty() && options.goal == objective::memory && options.bound_time_limit.count() > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() > 0 && winner.peak_lower_bound > loser.peak_lower_bound) {
      subgraph_bound_options up_to;
      up_to.stop_above = winner.peak_lower_bound - 1;
      up_to.time_limit = std::min(options.bound_time_limit, left);
      loser.peak_lower_bound = std::max(loser.peak_lower_bound,
                                        std::min(subgraph_peak_bound(loser_graph, up_to).bytes, loser.claimed_peak));
    }
  }
  solution s = detail::best_of_orders(std::move(first), std::move(second), options);
  s.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return s;
}

}  // namespace remat
