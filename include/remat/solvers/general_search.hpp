#pragma once

/// \file
/// The method `general-search`: a local search over general plans
/// (schedule_from_kept_stages: stages and a kept set chosen independently,
/// each stage recomputing lazily or eagerly). It starts from three plans the
/// family holds — `exact`'s stage plan (its boundary kept, every stage
/// eager), the same kept values with a stage per node (each backward then
/// recomputes only what it reads), and `kept-search`'s kept-set plan (one
/// lazy stage; not run once a plan meets the per-op floor) — and from each
/// takes first improvements by the plan ranking:
/// a stage's recompute mode flipped, a value added to or taken from the kept
/// set, two adjacent stages merged. Each try builds and simulates a plan:
/// O(n log n + m + recomputes). Its plan is never above either first or
/// third start (a stage optimum and a kept-set local optimum); the second
/// start leads it far below both on most models (docs/results-solvers.md).
/// The bound is the per-op floor, or for the least peak the cut floor where
/// it is higher, both known to hold for every schedule; a plan that meets it
/// is `optimal` in peak.

#include <remat/config.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <remat/graph/graph.hpp>
#include <remat/graph/node_set.hpp>
#include <remat/plan/plan.hpp>
#include <remat/plan/schedule.hpp>
#include <remat/plan/simulate.hpp>
#include <remat/solvers/common.hpp>
#include <remat/solvers/exact.hpp>
#include <remat/solvers/general_local_search.hpp>
#include <remat/solvers/kept_search.hpp>
#include <remat/time_budget.hpp>

namespace remat {

struct general_search_options {
  objective goal = objective::memory;
  std::uint64_t budget = no_budget;
  std::uint64_t max_lower_sets = 20000;  ///< `exact`'s, for its starting plan
  time_budget time;
  bool preserve_gradient_order = true;
  order_choice order = order_choice::automatic;
  std::chrono::milliseconds bound_time_limit{250};
  std::chrono::milliseconds general_time_limit{250};  ///< `exact`'s, for its starting plan
  std::uint64_t general_search_work = exact_options{}.general_search_work;  ///< `exact`'s, for its starting plan
  double general_max_recompute = exact_options{}.general_max_recompute;     ///< `exact`'s, for its starting plan
};

/// The method `general-search`: `exact` (a third of the budget) gives the
/// first starting plans, each searched from with half of what is left;
/// `kept-search` (a quarter of what is then left) gives the others, which share
/// the rest. A plan at the per-op floor (or, for the memory objective, at
/// `exact`'s proven least peak over general plans) ends the search there:
/// no schedule peaks lower, so `kept-search` is not run. `feasible`, with the
/// per-op floor as the bound, or for the least peak the cut floor where it is
/// higher (the stage optimum bounds stage plans only).
inline solution solve_general_search(const graph& g, const general_search_options& options = {}) {
  const auto start = std::chrono::steady_clock::now();
  const backward_floor floors = backward_floors(g);
  const std::uint64_t floor = per_op_floor(g, floors).bytes;
  exact_options e;
  e.goal = options.goal;
  e.budget = options.budget;
  e.max_lower_sets = options.max_lower_sets;
  e.time = options.time.share(1, 3);
  e.preserve_gradient_order = options.preserve_gradient_order;
  e.bound_time_limit = options.bound_time_limit;
  e.order = options.order;
  e.general_time_limit = options.general_time_limit;
  e.general_search_work = options.general_search_work;
  e.general_max_recompute = options.general_max_recompute;
  const solution stages = solve_exact(g, e);
  std::optional<general_search_result> best;
  std::string from;
  std::size_t tries = 0, moves = 0;
  bool stopped = false;
  auto search_from = [&](general_plan start_plan, const char* name, const time_budget& time) {
    improve_general_options search;
    search.goal = options.goal;
    search.budget = options.budget;
    search.time = time;
    general_search_result r = improve_general_plan(g, std::move(start_plan), search);
    tries += r.tries;
    moves += r.moves;
    stopped = stopped || r.time_limit_reached;
    if (!best || rank_plan(r.figures, options.goal, options.budget) < rank_plan(best->figures, options.goal, options.budget)) {
      best = std::move(r);
      from = name;
    }
  };
  const bool general_optimum_known = stages.status == solve_status::optimal && stages.proof_family == "general plans";
  auto least_peak_reached = [&] {
    return options.goal == objective::memory && best &&
           (best->figures.peak_bytes == floor ||
            (general_optimum_known && best->figures.peak_bytes == stages.figures.peak_bytes));
  };
  // The stage per node first: it leads lowest on most models.
  if (!stages.best.steps.empty()) {
    general_plan plan = as_general_plan(g, stages.best);
    search_from(with_node_stages(g, plan), "exact's kept values with a stage per node", options.time.share(1, 2));
    if (!least_peak_reached()) search_from(std::move(plan), "exact's stage plan", options.time.share(1, 2));
  }
  // Where no stage plan meets the budget, kept-search's values start it.
  bool kept_run = false;
  if (!least_peak_reached()) {
    kept_search_options k;
    k.goal = options.goal;
    k.budget = options.budget;
    k.order = options.order;
    k.preserve_gradient_order = options.preserve_gradient_order;
    k.time = options.time.share(1, 4);
    const solution kept = solve_kept_search(g, k);
    kept_run = true;
    if (!kept.best.steps.empty()) {
      general_plan plan = as_general_plan(g, kept.best);
      if (!best)
        search_from(with_node_stages(g, plan), "kept-search's kept values with a stage per node", options.time.share(1, 2));
      search_from(std::move(plan), "kept-search's kept-set plan", options.time);
    }
  }
  if (!best) return stages;  // no plan to start from: exact's answer says why
  solution s = solution_of_plan(g, as_plan(g, best->best, "general-search"), options.budget, floor);
  s.stats.counts = {{"plans simulated", tries}, {"moves taken", moves}};
  s.stats.time_limit_reached = stopped;
  s.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (s.status == solve_status::infeasible) return s;
  const std::string exact_family = stages.proof_family.empty() ? "stage plans" : stages.proof_family;
  // How far below exact's peak, in tenths of a percent rounded down.
  const std::uint64_t tenths =
      s.figures.peak_bytes < stages.figures.peak_bytes
          ? static_cast<std::uint64_t>(1000.0 * (1.0 - static_cast<double>(s.figures.peak_bytes) /
                                                           static_cast<double>(stages.figures.peak_bytes)))
          : 0;
  s.message = "a general plan (" + std::to_string(best->best.modes.size()) + " stages, " +
              std::to_string(best->best.kept.count()) + " values kept) from a local search started at " + from +
              (stages.best.steps.empty() ? "; exact has no stage plan (" + std::string(to_string(stages.status)) + ")"
               : s.figures.peak_bytes < stages.figures.peak_bytes
                   ? "; " + std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + "% below exact's plan (" +
                         std::string(to_string(stages.status)) + " over " + exact_family + ")"
                   : "; no lower than exact's plan (" + std::string(to_string(stages.status)) + " over " + exact_family + ")") +
              (stopped ? ", stopped by " + std::string(options.time.spent_on()) : "") +
              (kept_run ? "" : "; kept-search not run: no plan peaks lower");
  // The bound holds for every schedule, so a plan peaking at it has the least peak of all.
  const schedule_bound bound = schedule_bound_for(g, floors, floor, s.figures.peak_bytes, peak_node_of(s), options.goal);
  s.peak_lower_bound = bound.bytes;
  s.peak_bound_name = bound.name;
  if (options.goal == objective::memory && s.figures.peak_bytes == bound.bytes) {
    s.status = solve_status::optimal;
    s.message += "; least peak proven: it equals " + bound.name +
                 ", which no schedule goes below (recompute not minimised among least-peak plans)";
  } else if (options.goal == objective::memory && stages.status == solve_status::optimal &&
             stages.proof_family == "general plans" && s.figures.peak_bytes == stages.figures.peak_bytes) {
    s.status = solve_status::optimal;
    s.proof_family = "general plans";
    s.peak_lower_bound = s.figures.peak_bytes;
    s.peak_bound_name.clear();
    s.message += "; least peak over general plans, as exact proved (recompute not minimised among them)";
  } else {
    s.message += "; not proven: the lower bound is " + bound.name;
  }
  return s;
}

}  // namespace remat
