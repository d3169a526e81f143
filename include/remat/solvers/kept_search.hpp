#pragma once

/// \file
/// A local search over kept-set plans, scored by the simulator. A kept-set
/// plan (schedule_from_kept) recomputes each missing value just before the
/// backward that reads it, so it can peak below every stage plan, and from
/// Feng & Huang's optimal kept set this search does so on the zoo's ResNets
/// (docs/algorithms.md, "Stage plans and kept-set plans"; figures in
/// docs/results-solvers.md).
///
/// From a start set it toggles one value's "kept" at a time, in id order, and
/// takes every toggle that improves the plan, until a pass takes none or the
/// time limit ends it. Each try builds and simulates a schedule: O(n log n + m)
/// a try, O(n · (n log n + m)) a pass. No optimality is claimed.

#include <remat/config.hpp>

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>
#include <span>
#include <tuple>

#include <remat/analysis/orders.hpp>
#include <remat/graph/graph.hpp>
#include <remat/graph/node_set.hpp>
#include <remat/plan/plan.hpp>
#include <remat/plan/schedule.hpp>
#include <remat/plan/simulate.hpp>
#include <remat/solvers/common.hpp>
#include <remat/solvers/ogc_exact.hpp>
#include <remat/solvers/orders.hpp>
#include <remat/time_budget.hpp>

namespace remat {

struct improve_kept_options {
  /// memory: least peak, then least recompute; time: least recompute among
  /// plans within `budget` (least peak while none is).
  objective goal = objective::memory;
  std::uint64_t budget = std::numeric_limits<std::uint64_t>::max();
  /// The execution order the plans run in (a topological order of every
  /// node); empty: the graph's.
  std::span<const node_id> order = {};
  time_budget time;
};

struct kept_search_result {
  node_set kept;
  simulation figures;        ///< the simulator's figures for `kept`
  std::size_t passes = 0;    ///< passes over the values
  std::size_t tries = 0;     ///< plans built and simulated
  std::size_t toggles = 0;   ///< toggles taken
  bool time_limit_reached = false;
};

/// The kept set the search ends at, started from `start` (graph inputs are
/// ignored: they are always present).
inline kept_search_result improve_kept_set(const graph& g, node_set start, const improve_kept_options& options = {}) {
  for (node_id v = 0; v < g.size(); ++v)
    if (g.is_input(v)) start.erase(v);
  auto measure = [&](const node_set& kept) { return simulate(g, schedule_from_kept(g, kept, options.order)); };
  kept_search_result out;
  out.kept = std::move(start);
  out.figures = measure(out.kept);
  // First the peak alone, then the recompute too: taking moves that only
  // save recompute from the start leads to higher peaks.
  for (const bool with_recompute : {false, true}) {
    // The first pass ranks by rank_plan's first two terms: within the
    // budget, then the peak (the memory objective; over the budget). Within
    // the budget the time objective compares recompute alone, without the
    // peak as a tie-break: the search's results stay those measured so far
    // (the tie-break lowers both figures; docs/results-solvers.md).
    auto score = [&](const simulation& s) {
      plan_rank rank = rank_plan(s, options.goal, options.budget);
      if (!with_recompute) std::get<2>(rank) = 0;
      if (!with_recompute || (options.goal == objective::time && !std::get<0>(rank))) std::get<3>(rank) = 0;
      return rank;
    };
    for (bool improved = true; improved && !out.time_limit_reached;) {
      improved = false;
      ++out.passes;
      for (node_id v = 0; v < g.size(); ++v) {
        if (g.is_input(v)) continue;
        // Each try builds and simulates a plan: its steps and edges.
        if (options.time.charge(pass_work(g, 60) + out.figures.recompute_steps * 200)) {
          out.time_limit_reached = true;
          break;
        }
        out.kept.set(v, !out.kept.contains(v));
        simulation figures = measure(out.kept);
        ++out.tries;
        if (score(figures) < score(out.figures)) {
          out.figures = std::move(figures);
          ++out.toggles;
          improved = true;
        } else {
          out.kept.set(v, !out.kept.contains(v));  // undo
        }
      }
    }
  }
  return out;
}

struct kept_search_options {
  objective goal = objective::memory;
  std::uint64_t budget = no_budget;  ///< the time objective's byte budget
  /// `graph` or `consumers_first`: that order; `best` and `automatic`: both,
  /// the better plan wins (the graph's order on a tie).
  order_choice order = order_choice::automatic;
  bool preserve_gradient_order = true;
  time_budget time;
  /// The labels of the `ogc-exact` search it starts from.
  std::uint64_t max_segment_labels = 4'000'000;
};

/// The method `kept-search`: from `ogc-exact`'s kept set (a quarter of the
/// time), improve_kept_set in each order asked for, the rest of the time
/// shared between them. `feasible`, with the per-op floor as the bound, or
/// for the least peak the cut floor where it is higher.
inline solution solve_kept_search(const graph& g, const kept_search_options& options = {}) {
  const auto start = std::chrono::steady_clock::now();
  const backward_floor floors = backward_floors(g);
  const std::uint64_t floor = per_op_floor(g, floors).bytes;
  ogc_exact_options seed;
  seed.time = options.time.share(1, 4);
  seed.max_labels = options.max_segment_labels;
  seed.per_op_floor = floor;
  const solution found = solve_ogc_exact(g, seed);
  std::vector<std::vector<node_id>> orders = orders_to_try(g, options.order, options.preserve_gradient_order);
  std::optional<kept_search_result> best;
  std::vector<node_id> best_order;
  bool stopped = false;
  for (std::size_t i = 0; i < orders.size(); ++i) {
    improve_kept_options search;
    search.goal = options.goal;
    search.budget = options.budget;
    search.order = orders[i];
    search.time = options.time.share(1, static_cast<std::int64_t>(orders.size() - i));
    kept_search_result r = improve_kept_set(g, found.best.kept, search);
    stopped = stopped || r.time_limit_reached;
    if (!best || rank_plan(r.figures, options.goal, options.budget) <
                     rank_plan(best->figures, options.goal, options.budget)) {
      best = std::move(r);
      best_order = std::move(orders[i]);
    }
  }
  solution s = solution_of_plan(g, plan::from_kept(g, best->kept, "kept-search", best_order), options.budget, floor);
  s.stats.counts = {{"plans simulated", best->tries}, {"toggles taken", best->toggles}};
  s.stats.time_limit_reached = stopped || found.stats.time_limit_reached;
  s.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (s.status == solve_status::infeasible) return s;
  s.message = "a kept-set plan from a local search (" + std::to_string(best->toggles) + " toggles in " +
              std::to_string(best->passes) + " passes) started at the kept set " +
              (found.status == solve_status::optimal ? "optimal" : "best found") +
              " for Feng & Huang's objective" + (stopped ? ", stopped by " + std::string(options.time.spent_on()) : "");
  const schedule_bound bound = schedule_bound_for(g, floors, floor, s.figures.peak_bytes, peak_node_of(s), options.goal);
  s.peak_lower_bound = bound.bytes;
  s.peak_bound_name = bound.name;
  s.message += "; not proven: the lower bound is " + bound.name;
  return s;
}

}  // namespace remat
