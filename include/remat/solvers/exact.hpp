#pragma once

/// \file
/// The `exact` method: the least-peak (or least-recompute) plan, proven
/// optimal wherever the proof is affordable, and the best plan with a lower
/// bound elsewhere. A portfolio:
///
/// 0. Past 16 computed nodes, the memory objective: a general plan
///    (schedule_from_kept_stages), the best of one from a local search
///    started at min-cut stages' kept values with a stage per node, within
///    `general_search_work` units (general_local_search.hpp), and the best
///    split into stages of an order keeping nothing (up to
///    exact_keep_nothing_max_nodes computed nodes; stage_split.hpp), values
///    then kept within their peak (exact_general.hpp). When a search bounded
///    by its peak, or past its cap a subgraph bound, shows that every stage
///    plan peaks higher, it is the answer (the per-op or cut floor its bound,
///    `optimal` at it). Otherwise steps 1–4 run and it stands where it still
///    ranks first; for a budget (the time objective), only where no stage
///    plan meets it. Its recompute is not minimised and can pass a forward pass (the message says so).
/// 1. Regular training already at the per-op floor: nothing can do better.
/// 2. At most `max_lower_sets` lower sets: the lower-set programme over all
///    of them (solve_dp, three quarters of the time); `optimal` when it
///    completes. On graphs of up to 16 computed nodes (memory objective), a
///    search below the stage optimum over general plans follows
///    (general_dp.hpp, within `general_time_limit`); when it completes,
///    `optimal` covers general plans (solution::proof_family).
/// 3. Otherwise (or when it stopped): the best plan of `mincut`, `ogc`,
///    `chain` and (up to 600 nodes) `approx`, called directly in that order
///    (cheapest first), each with all that is left. The best plan then gets
///    a search below its peak bounded by that peak (prove_least_peak): when
///    it completes the peak is proven least (recompute not minimised).
/// 4. An unproven plan gets a lower bound above the per-op floor from a
///    subgraph's least peak (subgraph_bound.hpp), within `bound_time_limit`.
///
/// With order `best` (and `automatic` past the cap) the whole portfolio runs
/// in the graph's order and, with the time left, in the consumers-first order
/// (solvers/orders.hpp); the better plan wins and the bounds hold for both.
/// Where steps 1–4 answer, their `optimal` covers stage plans only
/// (solution::proof_family says which family).

#include <remat/config.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <remat/analysis/bounds.hpp>
#include <remat/analysis/lower_sets.hpp>
#include <remat/analysis/orders.hpp>
#include <remat/graph/graph.hpp>
#include <remat/plan/solution.hpp>
#include <remat/solvers/approx.hpp>
#include <remat/solvers/baselines.hpp>
#include <remat/solvers/chain.hpp>
#include <remat/solvers/common.hpp>
#include <remat/solvers/dp.hpp>
#include <remat/solvers/exact_general.hpp>
#include <remat/solvers/exact_options.hpp>
#include <remat/solvers/general_dp.hpp>
#include <remat/solvers/mincut.hpp>
#include <remat/solvers/ogc.hpp>
#include <remat/solvers/orders.hpp>
#include <remat/solvers/subgraph_bound.hpp>
#include <remat/time_budget.hpp>
#include <remat/units.hpp>

namespace remat {

namespace detail {

// Too many lower sets for the exact programme, but the search for a plan
// below the best one found is bounded by that plan's peak, and the bound can
// cut it short (on Inception v3 the first layers alone need nearly all of
// it). When it is complete and finds nothing, the best plan's peak is the
// least; when it finds a plan, that plan has the least peak and replaces it
// (either way the recompute is not minimised). It may visit as many lower
// sets and stages as `max_lower_sets`. Returns why the peak was not proven
// (empty when it was).
inline std::string prove_least_peak(const graph& g, const exact_options& options, const time_budget& time,
                                    solution& s) {
  if (s.claimed_peak == 0) return "no plan to search below";
  if (time.expired()) return "no time was left to search for a plan below its peak";
  dp_options below;
  below.goal = objective::memory;
  below.budget = s.claimed_peak - 1;
  below.peak_only = true;
  below.max_states = options.max_lower_sets;
  below.max_transitions = options.max_lower_sets;
  below.time = time;
  below.preserve_gradient_order = options.preserve_gradient_order;
  const dp_result search = solve_dp(g, dp_family::exact, below);
  const std::string searched = std::to_string(search.stats.lower_sets) + " lower sets and " +
                               std::to_string(search.stats.transitions) + " stages";
  if (!search.complete) {
    s.stats.cap_reached = s.stats.cap_reached || search.stats.cap_reached;
    s.stats.time_limit_reached = s.stats.time_limit_reached || search.stats.time_limit_reached;
    return "a search for a plan below its peak stopped at " +
           (search.stats.time_limit_reached ? std::string(time.spent_on())
                                                   : "its cap of " + std::to_string(options.max_lower_sets) +
                                                         " lower sets and stages") +
           " after " + searched;
  }
  // The search is the exact programme below the bound: a plan it finds has
  // the least peak of all stage plans, and finding none proves s's peak least.
  const bool found = search.result.status != solve_status::infeasible;
  if (found) {
    const std::string below_of = s.produced_by;
    s = search.result;
    s.produced_by = "dp below " + below_of;
  }
  s.status = solve_status::optimal;
  s.peak_lower_bound = s.claimed_peak;
  time.found_plan(s.claimed_peak);
  s.message = (found ? "least peak found by a search below the best fallback plan (" + searched + ")"
                     : "least peak proven: no stage plan peaks below this one (a search bounded by its peak "
                       "ended after " + searched + ")") +
              "; its recompute is not minimised among least-peak plans, the graph having more than " +
              std::to_string(options.max_lower_sets) + " lower sets";
  return {};
}

// Adds a clause to a solution's message.
inline void say_also(solution& s, const std::string& clause) {
  s.message += (s.message.empty() ? "" : "; ") + clause;
}

// Whether `exact` searches general plans on g (see exact_general_max_nodes).
inline bool general_plans_searched(const graph& g, const exact_options& options, const time_budget& time) {
  if (options.general_time_limit.count() <= 0 || time.expired()) return false;
  const std::size_t computed = computed_nodes(g);
  return computed > 0 && computed <= exact_general_max_nodes;
}

inline general_dp_result search_general_plans(const graph& g, const exact_options& options, const time_budget& time,
                                              std::uint64_t below_peak, solution& s) {
  general_dp_options below;
  below.below = below_peak;
  below.preserve_gradient_order = options.preserve_gradient_order;
  below.time = time.next(options.general_time_limit);
  general_dp_result r = solve_general_dp(g, below);
  s.stats.set("general states", s.stats.count("general states") + r.labels);
  s.stats.set("general transitions", s.stats.count("general transitions") + r.transitions);
  return r;
}

// The time objective: no stage plan meets the budget. On a small graph a
// general plan may: the least-peak one is returned, `feasible` (its
// recompute is not minimised). When none fits, the budget is proven out of
// reach of general plans too, and the least budget that works is theirs. One
// search below the stage least peak answers both: its least peak is within
// the budget or it is the least budget.
inline void widen_infeasible_to_general_plans(const graph& g, const exact_options& options, const time_budget& time,
                                              std::uint64_t floor, solution& s) {
  if (options.goal != objective::time || options.budget == no_budget || !general_plans_searched(g, options, time))
    return;
  const std::uint64_t stage_least = s.smallest_feasible_budget;
  general_dp_result r = search_general_plans(g, options, time, stage_least > 0 ? stage_least : options.budget + 1, s);
  if (!r.complete) {
    say_also(s, "a search over general plans stopped at " + r.stopped_by);
    return;
  }
  if (r.best && r.peak <= options.budget) {
    const solve_stats stats = s.stats;
    r.best->method = "exact";
    s = solution_of_plan(g, std::move(*r.best), options.budget, floor);
    REMAT_ASSERT(s.claimed_peak == r.peak);
    s.stats = stats;
    s.produced_by = "general-dp";
    time.found_plan(s.claimed_peak);
    s.message = "no stage plan peaks within the budget; this general plan does (the least peak of every general "
                "plan; its recompute is not minimised)";
    return;
  }
  // Found none below the stage least peak: that is the least of general plans too.
  if (r.best) s.smallest_feasible_budget = r.peak;
  if (s.smallest_feasible_budget > 0)
    s.message = "no general plan peaks within the budget; the smallest feasible budget for one is " +
                format_bytes(s.smallest_feasible_budget) + " (" + std::to_string(s.smallest_feasible_budget) + " bytes)";
  s.proof_family = "general plans";
}

// A proven stage optimum on a graph of at most exact_general_max_nodes
// computed nodes gets a search below its peak over general plans (general_dp.hpp),
// within `general_time_limit`: a plan it finds replaces it, and either way
// the peak is then the least of every general plan (the memory objective:
// recompute is not minimised among general plans).
inline void widen_to_general_plans(const graph& g, const exact_options& options, const time_budget& time,
                                   solution& s) {
  if (options.goal != objective::memory || !general_plans_searched(g, options, time)) return;
  const general_dp_result r = search_general_plans(g, options, time, s.claimed_peak, s);
  if (!r.complete) {
    say_also(s, "a search below it over general plans stopped at " + r.stopped_by);
    return;
  }
  s.proof_family = "general plans";
  if (!r.best) {
    say_also(s, "no general plan peaks lower (a search over " + std::to_string(r.labels) +
                    " states of lower and kept sets)");
    return;
  }
  solve_stats stats = s.stats;
  const std::uint64_t stage_peak = s.claimed_peak;
  s = solution_of_plan(g, std::move(*r.best), options.budget, r.peak);
  REMAT_ASSERT(s.claimed_peak == r.peak);
  s.status = solve_status::optimal;
  s.stats = std::move(stats);
  s.best.method = "exact";
  s.produced_by = "general-dp";
  s.proof_family = "general plans";
  time.found_plan(s.claimed_peak);
  s.message = "least peak over general plans (" + std::to_string(r.labels) + " states of lower and kept sets), " +
              format_bytes(stage_peak - s.claimed_peak) + " below the stage optimum; its recompute is not minimised "
              "among least-peak general plans";
}

// The budget of a lower bound: `bound_time_limit` (of work, under a work
// limit), within `time`.
inline time_budget bound_budget(const exact_options& options, const time_budget& time) {
  return time.next(options.bound_time_limit);
}

// Lifts s's peak bound above the per-op floor with a subgraph's least peak
// when a plan is not proven (the memory objective only: the bound is on the
// peak). A bound that meets the plan's peak proves it least. Returns what the
// bound is, for the message.
inline std::string raise_peak_bound(const graph& g, const exact_options& options, const time_budget& time,
                                    std::uint64_t floor, solution& s) {
  const std::string floor_said = "the lower bound is the per-op floor";
  if (options.goal != objective::memory || options.bound_time_limit.count() <= 0 || time.expired()) return floor_said;
  subgraph_bound_options within;
  within.time = bound_budget(options, time);
  within.per_op_floor = floor;
  const subgraph_bound bound = subgraph_peak_bound(g, within);
  if (bound.nodes == 0 || bound.bytes <= s.peak_lower_bound) return floor_said + " (no subgraph tried bound it higher)";
  const std::string subgraph = "a subgraph of " + std::to_string(bound.nodes) + " nodes and " +
                               std::to_string(bound.lower_sets) + " lower sets";
  // The bound never exceeds the least peak, so it cannot pass the plan's.
  s.peak_lower_bound = std::min(bound.bytes, s.claimed_peak);
  time.found_bound(s.peak_lower_bound);
  if (s.peak_lower_bound == s.claimed_peak) {
    s.status = solve_status::optimal;
    return "least peak proven: the least peak of " + subgraph +
           " equals it (recompute not minimised among least-peak plans)";
  }
  return "the lower bound " + format_bytes(bound.bytes) +
         (bound.subgraph_optimum ? " is the least peak of " + subgraph
                                 : ": no stage plan of " + subgraph + " peaks below it") +
         (bound.stopped ? " (the bound's search stopped at " + std::string(within.time.spent_on()) + ")" : std::string());
}

// No fallback plan meets the budget, and beyond the cap nothing says whether
// another plan would. A lower bound above the budget (the per-op floor, or a
// subgraph's least peak: subgraph_bound.hpp) proves it infeasible; otherwise
// the answer is `stopped`, with what is known either side of the budget.
inline solution budget_out_of_reach(const graph& g, const exact_options& options, const time_budget& time,
                                    std::uint64_t floor, std::uint64_t known_feasible,
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
  bound.bytes = floor;
  if (bound.bytes <= options.budget && options.bound_time_limit.count() > 0 && !time.expired()) {
    subgraph_bound_options refute;
    refute.stop_above = options.budget;
    refute.time = bound_budget(options, time);
    refute.per_op_floor = floor;
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

// What `exact` tried before it found no proof, for the message the subgraph
// bound completes (finish_unproven).
struct unproven_exact {
  std::string tried;     // what limited it and which fallbacks ran
  std::string searched;  // why the search below the best plan did not prove it
  bool over_cap = false; // the graph has more lower sets than max_lower_sets (or counting them ran out of time)
};

// The last step of `exact` on an unproven plan: a subgraph's bound
// (raise_peak_bound) and the message saying what was tried.
inline void finish_unproven(const graph& g, const exact_options& options, const time_budget& time,
                            std::uint64_t floor, solution& s, const unproven_exact& why) {
  const std::string bound = raise_peak_bound(g, options, time, floor, s);
  s.message = why.tried + (s.status == solve_status::optimal ? "" : ", none proven optimal") +
              (why.searched.empty() ? "" : "; " + why.searched) + "; " + bound;
}

// One fallback method within `time`, called directly.
inline solution run_fallback(const graph& g, std::string_view method, const exact_options& options,
                             const time_budget& time, std::uint64_t floor) {
  solution s;
  if (method == "mincut") {
    mincut_options m;
    m.goal = options.goal;
    m.budget = options.budget;
    m.preserve_gradient_order = options.preserve_gradient_order;
    m.time = time;
    m.per_op_floor = floor;
    s = solve_mincut(g, m);
  } else if (method == "ogc") {
    ogc_options o;
    o.budget = options.budget;
    o.time = time;
    o.per_op_floor = floor;
    s = solve_ogc(g, o);
  } else {
    stage_dp_options d;
    d.goal = options.goal;
    d.budget = options.budget;
    d.max_lower_sets = options.max_lower_sets;
    d.time = time;
    d.per_op_floor = floor;
    d.preserve_gradient_order = options.preserve_gradient_order;
    s = method == "chain" ? solve_chain(g, d) : solve_approx(g, d);
  }
  s.best.method = std::string(method);
  s.produced_by = std::string(method);
  return s;
}

// `exact` on g as numbered (options.order is not looked at); `floor` is g's
// per-op floor (the same in every order). With `defer`, an unproven plan is
// returned before its subgraph bound, what it tried in *defer (left empty
// otherwise), for the caller to finish; it also says there whether the graph
// is past the lower-set cap.
inline solution exact_in_id_order(const graph& g, const exact_options& options, std::uint64_t floor,
                                  unproven_exact* defer = nullptr) {
  const auto start = std::chrono::steady_clock::now();
  const time_budget& time = options.time;
  solution s;
  auto done = [&] {
    s.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return s;
  };
  // Regular training recomputes nothing. When its peak already meets the
  // per-op floor, no plan is lower or recomputes less, on any graph size.
  if (solution regular = solution_of_plan(g, plan_none(g), options.budget, floor);
      regular.status == solve_status::feasible && regular.claimed_peak == regular.peak_lower_bound) {
    s = std::move(regular);
    s.status = solve_status::optimal;
    s.recompute_lower_bound = 0;
    s.produced_by = "none";
    s.message = "regular training already peaks at the per-op floor; nothing to recompute";
    s.proof_family = "every schedule";
    s.best.method = "exact";
    return done();
  }
  time.found_bound(floor);
  const precedence order = options.preserve_gradient_order ? gradient_order_constraints(g) : precedence{};
  lower_set_options count;
  count.max_count = options.max_lower_sets + 1;
  count.constraints = &order;
  count.time = time;
  const lower_set_count lower_sets = count_lower_sets(g, count);
  std::string exact_stopped_by;  // what stopped the exact programme, when it ran and stopped
  solve_stats exact_stats;       // its flags, which a fallback's plan would otherwise drop
  if (defer) defer->over_cap = lower_sets.status != enumeration_status::complete;
  if (lower_sets.status == enumeration_status::complete) {
    // The exact programme gets three quarters of the time; the fallbacks
    // share what is left, so the whole call keeps to the budget.
    stage_dp_options exact_part;
    exact_part.goal = options.goal;
    exact_part.budget = options.budget;
    exact_part.max_lower_sets = options.max_lower_sets;
    exact_part.time = time.share(3, 4);
    exact_part.preserve_gradient_order = options.preserve_gradient_order;
    exact_part.least_budget_if_infeasible = options.least_budget_if_infeasible;
    s = solve_dp(g, exact_part);
    s.produced_by = "dp";
    if (!s.best.steps.empty()) time.found_plan(s.claimed_peak);
    s.stats.set("lower sets", lower_sets.count);
    const bool stopped = s.stats.cap_reached || s.stats.time_limit_reached;
    exact_stats = s.stats;
    exact_stopped_by = s.stats.time_limit_reached ? std::string(exact_part.time.spent_on())
                                                  : std::string("its cap on states or stages");
    if (s.status == solve_status::optimal) widen_to_general_plans(g, options, time, s);
    else if (s.status == solve_status::infeasible && !stopped) widen_infeasible_to_general_plans(g, options, time, floor, s);
    if (s.status == solve_status::optimal || s.produced_by == "general-dp" ||
        (s.status == solve_status::infeasible && !stopped))
      return done();
  }
  // Too many lower sets (or stopped): the best of the restricted families
  // (the principal family costs O(n²·(n + m)), so only on moderate graphs),
  // the min-cut stages and Feng & Huang's division search.
  // Each new best plan gets a bounded search below its peak (see
  // prove_least_peak); once its peak is proven least no fallback can beat it.
  const bool provable = lower_sets.status != enumeration_status::complete && options.goal == objective::memory;
  bool proven = false;
  std::string unproven;
  std::uint64_t known_feasible = std::numeric_limits<std::uint64_t>::max();  // a budget some fallback plan meets
  // Members that cost little run first; each may use all that is left, so
  // the one that needs most (chain's O(n²·(n + m)) family) gets nearly the
  // whole budget, as it would alone, and finishes wherever it would alone
  // with what the cheap ones leave.
  std::vector<std::string_view> fallbacks{"mincut", "ogc", "chain"};
  // The lower bound after the fallbacks (raise_peak_bound,
  // budget_out_of_reach) keeps its share: `bound_time_limit`, at most a quarter.
  const time_budget fallback_time = time.less(options.bound_time_limit, 1, 4);
  if (g.size() <= 600) fallbacks.push_back("approx");
  solve_stats members_stopped;  // the limit flags of members cut short, whose plans may be dropped
  for (const std::string_view member : fallbacks) {
    solution other = run_fallback(g, member, options, fallback_time, floor);
    members_stopped.time_limit_reached = members_stopped.time_limit_reached || other.stats.time_limit_reached;
    members_stopped.work_limit_reached = members_stopped.work_limit_reached || other.stats.work_limit_reached;
    if (other.status == solve_status::infeasible || other.status == solve_status::stopped) {
      if (other.smallest_feasible_budget) known_feasible = std::min(known_feasible, other.smallest_feasible_budget);
      if (!other.best.steps.empty()) known_feasible = std::min(known_feasible, other.figures.peak_bytes);
      continue;
    }
    const bool better = s.best.steps.empty() || s.status == solve_status::infeasible ||
                        rank_plan(other.claimed_peak, other.claimed_recompute, options.goal) <
                            rank_plan(s.claimed_peak, s.claimed_recompute, options.goal);
    if (!better) continue;
    s = std::move(other);
    s.peak_lower_bound = floor;
    time.found_plan(s.claimed_peak);
  }
  // One search below the best plan's peak, with what the members left: it
  // either finds the least peak, proves this one least, or stops.
  if (provable && !s.best.steps.empty() && s.status != solve_status::infeasible) {
    s.status = solve_status::feasible;
    unproven = detail::prove_least_peak(g, options, fallback_time, s);
    proven = s.status == solve_status::optimal;
  }
  const std::string why_not_exact =
      lower_sets.status == enumeration_status::complete
          ? "the exact search stopped at " + exact_stopped_by
          : "the graph has more than " + std::to_string(options.max_lower_sets) + " lower sets";
  if (s.best.steps.empty() || s.status == solve_status::infeasible) {
    const solve_stats searched = s.stats;
    s = detail::budget_out_of_reach(g, options, time, floor, known_feasible, why_not_exact);
    s.stats = searched;
    return done();
  }
  s.best.method = "exact";
  if (!proven) {
    if (s.status == solve_status::optimal) s.status = solve_status::feasible;
    s.stats.cap_reached = s.stats.cap_reached || exact_stats.cap_reached ||
                          lower_sets.status == enumeration_status::cap_reached;
    s.stats.time_limit_reached = s.stats.time_limit_reached || exact_stats.time_limit_reached ||
                                 members_stopped.time_limit_reached ||
                                 lower_sets.status == enumeration_status::time_limit_reached || time.expired();
    s.stats.work_limit_reached = s.stats.work_limit_reached || members_stopped.work_limit_reached;
    const unproven_exact why{why_not_exact + "; best plan of id-interval stages, min-cut stages, Feng & Huang's division search" +
                                 (g.size() <= 600 ? " and principal lower sets" : " (principal lower sets only up to 600 nodes)"),
                             unproven, lower_sets.status != enumeration_status::complete};
    if (defer) *defer = why;
    else finish_unproven(g, options, time, floor, s, why);
  }
  return done();
}

// `exact` over stage plans alone, in the orders options.order names (see
// the file comment).
inline solution exact_over_stage_plans(const graph& g, const exact_options& options, std::uint64_t floor) {
  if (options.order == order_choice::graph) return exact_in_id_order(g, options, floor);
  if (options.order == order_choice::consumers_first) {
    const std::vector<node_id> order = consumers_first(g, options.preserve_gradient_order);
    return solve_in_order(g, order, [&](const graph& h) { return exact_in_id_order(h, options, floor); });
  }
  // The graph's order first, with the whole budget; the other order
  // (`automatic`: only past the lower-set cap, which the first solve counted)
  // with what is left, when that is at least what the first took (else the
  // graph's order alone: on a very large NAS stack with a small limit, halving
  // the time left both orders' fallbacks too little to find a plan). An
  // unproven plan's subgraph bound waits until the better plan is known,
  // which gets the whole bound time.
  const time_budget& time = options.time;
  unproven_exact why_graph, why_other;
  const budget_mark before_first = time.mark();
  solution first = exact_in_id_order(g, options, floor, &why_graph);
  // No order goes below the per-op floor, and none recomputes less than nothing.
  const bool unbeatable = first.status == solve_status::optimal &&
                          (options.goal == objective::memory ? first.claimed_peak == floor
                                                             : first.claimed_recompute == 0);
  std::vector<node_id> order;
  if (!unbeatable && time.has_left(before_first) && (options.order == order_choice::best || why_graph.over_cap))
    order = consumers_first(g, options.preserve_gradient_order);
  if (order.empty() || is_id_order(order)) {
    if (!why_graph.tried.empty()) finish_unproven(g, options, time, floor, first, why_graph);
    return first;
  }
  const graph h = reorder_graph(g, order);
  solution second = map_back(exact_in_id_order(h, options, floor, &why_other), g, order);
  const bool other_wins = beats(second, first, options.goal);
  solution& winner = other_wins ? second : first;
  solution& loser = other_wins ? first : second;
  const graph& winner_graph = other_wins ? h : g;
  const graph& loser_graph = other_wins ? g : h;
  const unproven_exact& why_winner = other_wins ? why_other : why_graph;
  if (!why_winner.tried.empty()) finish_unproven(winner_graph, options, time, floor, winner, why_winner);
  // The other order's plans need a bound too, but only as high as the winner's.
  const unproven_exact& why_loser = other_wins ? why_graph : why_other;
  if (!why_loser.tried.empty() && options.goal == objective::memory && options.bound_time_limit.count() > 0 &&
      !time.expired() && winner.peak_lower_bound > loser.peak_lower_bound) {
    subgraph_bound_options up_to;
    up_to.stop_above = winner.peak_lower_bound - 1;
    up_to.time = bound_budget(options, time);
    up_to.per_op_floor = floor;
    loser.peak_lower_bound =
        std::max(loser.peak_lower_bound, std::min(subgraph_peak_bound(loser_graph, up_to).bytes, loser.claimed_peak));
  }
  return best_of_orders(std::move(first), std::move(second), options.goal);
}

}  // namespace detail

/// The `exact` method (see the file comment). Never throws for a hard
/// instance: caps and the time budget give `feasible` with the best plan and
/// a bound; an impossible budget gives `infeasible` with the smallest
/// feasible budget (or, past the cap, a bound that refutes it); a budget no
/// plan found meets and no bound refutes gives `stopped`.
inline solution solve_exact(const graph& g, const exact_options& options = {}) {
  const auto start = std::chrono::steady_clock::now();
  auto finished = [&](solution s) {
    s.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return s;
  };
  const backward_floor floors = backward_floors(g);
  const std::uint64_t floor = per_op_floor(g, floors).bytes;
  // Past the general programme's size, general plans first for the least
  // peak; for a budget, only where no stage plan meets it.
  const bool large = options.general_search_work > 0 && detail::computed_nodes(g) > exact_general_max_nodes;
  std::optional<solution> general;
  std::vector<node_id> peaks_set_aside;  // where the window floor also looks
  if (large && options.goal == objective::memory && !options.time.expired()) {
    general = detail::general_local_plan(g, options, floor, &peaks_set_aside);
    // When every stage plan peaks above the general plan, the stage
    // programme has nothing to add; the search bounded by its peak that
    // shows it is cheap where the general plan is far below the stage optimum.
    const std::optional<std::string> searched =
        general ? detail::no_stage_plan_as_low_in_orders(g, options, general->claimed_peak, floor) : std::nullopt;
    if (searched) {
      detail::say_general(g, *general, options.goal, "every stage plan peaks higher (" + *searched + ")", floors,
                          peaks_set_aside);
      return finished(std::move(*general));
    }
  }
  // A general plan may meet a budget no stage plan meets: the least budget
  // a stage plan meets (a least-peak programme) waits until none does.
  const bool general_may_fit = large && options.goal == objective::time && options.budget != no_budget;
  exact_options stage_options = options;
  if (general_may_fit) stage_options.least_budget_if_infeasible = false;
  solution stages = detail::exact_over_stage_plans(g, stage_options, floor);
  if (general_may_fit && !options.time.expired() &&
      (stages.status == solve_status::infeasible || stages.status == solve_status::stopped)) {
    general = detail::general_local_plan(g, options, floor);
    if (general && general->status == solve_status::feasible) {
      general->stats += stages.stats;
      detail::say_general(g, *general, options.goal,
                          "it peaks within the budget, which no stage plan found does (" + stages.message + ")", floors);
      return finished(std::move(*general));
    }
    if (stages.status == solve_status::infeasible && stages.produced_by == "dp" &&
        stages.smallest_feasible_budget == 0 && !options.time.expired()) {
      const solve_stats before = stages.stats;
      stages = detail::exact_over_stage_plans(g, options, floor);
      stages.stats += before;
    }
    // Over the budget, but perhaps under every stage plan: then its peak is
    // a budget known to work, below the stage plans' least.
    const std::uint64_t stage_least =
        stages.smallest_feasible_budget != 0 ? stages.smallest_feasible_budget : stages.known_feasible_budget;
    if (general && (stage_least == 0 || general->claimed_peak < stage_least)) {
      stages.known_feasible_budget = general->claimed_peak;
      detail::say_also(stages, "a general plan (exact's local search) peaks at " + format_bytes(general->claimed_peak) +
                                   " (" + std::to_string(general->claimed_peak) + " bytes)");
    }
    return finished(std::move(stages));
  }
  if (!general || !beats(*general, stages, options.goal)) return finished(std::move(stages));
  general->stats += stages.stats;
  detail::say_general(g, *general, options.goal,
                      (has_plan(stages) ? format_bytes(stages.claimed_peak - general->claimed_peak) +
                                              " below the best stage plan ("
                                        : std::string("no stage plan found (")) +
                          std::string(to_string(stages.status)) + " over stage plans" +
                          (stages.message.empty() ? "" : ": " + stages.message) + ")",
                      floors, peaks_set_aside);
  return finished(std::move(*general));
}

}  // namespace remat
