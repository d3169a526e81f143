#pragma once

/// \file
/// `exact`'s first step past 16 computed nodes (exact.hpp): a general plan
/// from a local search with a fixed work count, and the bounded search that
/// shows every stage plan peaks above it.

#include <remat/config.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <remat/analysis/orders.hpp>
#include <remat/graph/graph.hpp>
#include <remat/plan/solution.hpp>
#include <remat/solvers/common.hpp>
#include <remat/solvers/dp.hpp>
#include <remat/solvers/exact_options.hpp>
#include <remat/solvers/general_local_search.hpp>
#include <remat/solvers/mincut.hpp>
#include <remat/solvers/orders.hpp>

namespace remat::detail {

// How many computed nodes g has.
inline std::size_t computed_nodes(const graph& g) {
  std::size_t computed = 0;
  for (node_id v = 0; v < g.size(); ++v) computed += g.is_input(v) ? 0 : 1;
  return computed;
}

// Past the general programme's size: a general plan from a local search
// (general_local_search.hpp) by options.goal and options.budget, started at
// min-cut stages' kept values with a stage per node. Min-cut stages cost
// little and lead as low as the stage optimum's boundary does, or lower
// (docs/results-solvers.md). The search stops at `general_search_work`
// units whatever the clock says. Nothing when min-cut has no plan.
inline std::optional<solution> general_local_plan(const graph& g, const exact_options& options, std::uint64_t floor) {
  mincut_options cut;
  cut.preserve_gradient_order = options.preserve_gradient_order;
  cut.time = options.time.share(1, 8);
  cut.per_op_floor = floor;
  const solution stages =
      options.order == order_choice::consumers_first
          ? solve_in_order(g, consumers_first(g, options.preserve_gradient_order),
                           [&](const graph& h) { return solve_mincut(h, cut); })
          : solve_mincut(g, cut);
  if (!has_plan(stages)) return std::nullopt;
  improve_general_options search;
  search.goal = options.goal;
  search.budget = options.budget;
  search.time = options.time.share(1, 4);
  search.max_work = options.general_search_work;
  search.max_recompute = options.general_max_recompute * g.forward_time();
  const general_search_result r = improve_general_plan(g, with_node_stages(g, as_general_plan(g, stages.best)), search);
  if (r.figures.recompute_time > search.max_recompute) return std::nullopt;
  plan p;
  p.method = "exact";
  p.steps = r.best.steps(g);
  p.kept = r.best.kept;
  p.stage_of = r.best.stage_of;
  p.stage_modes = r.best.modes;
  p.order = r.best.order;
  solution s = solution_of_plan(g, std::move(p), options.budget, floor);
  s.produced_by = "general local search";
  s.stats.counts = {{"general plans simulated", r.tries}, {"general moves taken", r.moves}};
  options.time.found_plan(s.claimed_peak);
  return s;
}

// Whether every stage plan in g's order peaks above `peak`: the exact
// programme bounded by it, capped like prove_least_peak. Says what it
// searched; nothing when it did not complete or found a plan. (A stage plan
// at the same peak may recompute less: then the stage programme must run.)
inline std::optional<std::string> no_stage_plan_as_low(const graph& g, const exact_options& options,
                                                      std::uint64_t peak) {
  if (options.time.expired()) return std::nullopt;
  dp_options below;
  below.budget = peak;
  below.peak_only = true;
  below.max_states = options.max_lower_sets;
  below.max_transitions = options.max_lower_sets;
  below.time = options.time.share(1, 4);
  below.preserve_gradient_order = options.preserve_gradient_order;
  const dp_result r = solve_dp(g, dp_family::exact, below);
  if (!r.complete || r.result.status != solve_status::infeasible) return std::nullopt;
  return std::to_string(r.stats.lower_sets) + " lower sets and " + std::to_string(r.stats.transitions) + " stages";
}

// The same in every order `exact` searches stage plans in (`automatic` past
// the cap also tries consumers first, but a search past the cap stops here).
inline std::optional<std::string> no_stage_plan_as_low_in_orders(const graph& g, const exact_options& options,
                                                                std::uint64_t peak) {
  std::optional<std::string> searched;
  if (options.order != order_choice::consumers_first && !(searched = no_stage_plan_as_low(g, options, peak)))
    return std::nullopt;
  if (options.order != order_choice::best && options.order != order_choice::consumers_first) return searched;
  const std::vector<node_id> order = consumers_first(g, options.preserve_gradient_order);
  const std::optional<std::string> there = no_stage_plan_as_low(reorder_graph(g, order), options, peak);
  if (!there) return std::nullopt;
  return searched ? *searched + " in the graph's order, " + *there + " consumers first" : *there;
}

// A general plan's message and status, given what is known of stage plans.
inline void say_general(const graph& g, solution& s, objective goal, const std::string& against_stages) {
  s.best.method = "exact";
  // Its bound, the per-op floor, holds for every schedule.
  s.proof_family = goal == objective::memory ? "every schedule" : "general plans";
  s.message = "a general plan (" + std::to_string(s.best.stage_modes.size()) + " stages, " +
              std::to_string(s.best.kept.count()) +
              " values kept) from a local search started at min-cut stages' kept values with a stage per node; " +
              against_stages;
  if (goal == objective::memory && s.claimed_peak == s.peak_lower_bound) {
    s.status = solve_status::optimal;
    s.message += "; least peak proven: it equals the per-op floor, which no schedule goes below (recompute not "
                 "minimised among least-peak plans)";
  } else {
    s.message += std::string(goal == objective::memory ? "; recompute not minimised" : "; not proven") +
                 "; the lower bound is the per-op floor, the one known to hold for general plans";
  }
  // Lazy recompute can redo a value for every backward that reads it: say
  // when that passes a forward pass, which no stage plan does.
  if (g.forward_time() > 0 && s.claimed_recompute > g.forward_time())
    s.message += "; it recomputes " + std::to_string(static_cast<int>(s.claimed_recompute / g.forward_time())) + "." +
                 std::to_string(static_cast<int>(10 * s.claimed_recompute / g.forward_time()) % 10) +
                 " forward passes (--max-recompute holds it to fewer; --general-work 0 gives the stage optimum)";
}

}  // namespace remat::detail
