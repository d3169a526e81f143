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
/// The bound is the per-op floor, the one bound known to hold for every
/// schedule; a plan that meets it is `optimal` in peak.

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
#include <remat/solvers/kept_search.hpp>
#include <remat/time_budget.hpp>

namespace remat {

/// A general plan's decision: stages (a stage number per node, as
/// schedule_from_stages takes), the kept set, each stage's recompute mode
/// (k-th stage in forward order) and the execution order (empty: the id order).
struct general_plan {
  std::vector<std::uint32_t> stage_of;
  node_set kept;
  std::vector<stage_recompute> modes;
  std::vector<node_id> order;

  schedule steps(const graph& g) const { return schedule_from_kept_stages(g, stage_of, kept, modes, order); }
};

/// The general plan with `s`'s schedule: a stage plan keeps its boundary and
/// recomputes eagerly; a kept-set plan is one lazy stage.
inline general_plan as_general_plan(const graph& g, const plan& s) {
  general_plan out;
  out.order = s.order;
  out.kept = node_set(g.size());
  if (!s.stage_modes.empty()) {  // a general plan already (exact's on small graphs)
    out.stage_of = s.stage_of;
    out.kept = s.kept;
  } else if (!s.stage_of.empty()) {
    out.stage_of = s.stage_of;
    const std::vector<char> boundary = detail::stage_boundary(g, s.stage_of);
    for (node_id v = 0; v < g.size(); ++v)
      if (boundary[v]) out.kept.insert(v);
  } else {
    out.stage_of.assign(g.size(), 0);
    out.kept = s.kept;
  }
  // Stage numbers need not be contiguous: rank them so modes[k] is the k-th.
  std::vector<std::uint32_t> used;
  for (node_id v = 0; v < g.size(); ++v)
    if (!g.is_input(v)) used.push_back(out.stage_of[v]);
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  for (node_id v = 0; v < g.size(); ++v)
    out.stage_of[v] = g.is_input(v) ? 0 : static_cast<std::uint32_t>(
                                              std::lower_bound(used.begin(), used.end(), out.stage_of[v]) - used.begin());
  if (!s.stage_modes.empty()) out.modes = s.stage_modes;
  else out.modes.assign(used.size(), s.stage_of.empty() ? stage_recompute::lazy : stage_recompute::eager);
  return out;
}

/// `start`'s kept values with every computed node its own stage (in
/// `start`'s order). Each backward then recomputes only what it reads, and
/// frees it at once, so the plan holds little beyond the kept values; kept
/// nothing, it peaks near the per-op floor at up to O(n²) recompute steps.
/// From a stage plan's boundary the recompute stays near the stage plan's,
/// and improve_general_plan then trades kept values for recompute where the
/// peak allows.
inline general_plan with_node_stages(const graph& g, const general_plan& start) {
  general_plan out;
  out.order = start.order;
  out.kept = start.kept;
  out.stage_of.assign(g.size(), 0);
  std::uint32_t stage = 0;
  auto place = [&](node_id v) {
    if (!g.is_input(v)) out.stage_of[v] = stage++;
  };
  if (out.order.empty())
    for (node_id v = 0; v < g.size(); ++v) place(v);
  else
    for (node_id v : out.order) place(v);
  out.modes.assign(stage, stage_recompute::eager);
  return out;
}

struct improve_general_options {
  objective goal = objective::memory;
  std::uint64_t budget = no_budget;
  time_budget time;
};

struct general_search_result {
  general_plan best;
  simulation figures;
  std::size_t tries = 0, moves = 0, passes = 0;
  bool time_limit_reached = false;
};

/// First-improvement passes over `start`'s moves (see the file comment)
/// until a pass improves nothing or the budget is spent.
inline general_search_result improve_general_plan(const graph& g, general_plan start,
                                                  const improve_general_options& options = {}) {
  general_search_result out;
  for (node_id v = 0; v < g.size(); ++v)
    if (g.is_input(v)) start.kept.erase(v);
  out.best = std::move(start);
  schedule steps = out.best.steps(g);
  out.figures = simulate(g, steps);
  // Which kept-set toggles can improve the plan. Dropping a kept value never
  // lowers the recompute, nor the memory of the peak step unless the value
  // is alive there; keeping a value the plan never recomputes changes no
  // recompute and only adds memory. So only those toggles are tried: the
  // others cannot rank better, by either objective.
  // Likewise merging two stages that recompute no value in common recomputes
  // as much as before and holds at least as much.
  node_set alive_at_peak(g.size()), recomputed(g.size());
  std::vector<std::vector<node_id>> recomputed_in;  // per stage, ascending
  auto note_plan = [&] {
    alive_at_peak = node_set(g.size());
    recomputed = node_set(g.size());
    recomputed_in.assign(out.best.modes.size(), {});
    std::vector<node_id> pending;  // recomputed for the next backward's stage
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const step s = steps[i];
      if (s.kind == step_kind::recompute) {
        recomputed.insert(s.node);
        pending.push_back(s.node);
      }
      if (s.kind == step_kind::backward && !pending.empty()) {
        std::vector<node_id>& mine = recomputed_in[out.best.stage_of[s.node]];
        mine.insert(mine.end(), pending.begin(), pending.end());
        pending.clear();
      }
      if (i > out.figures.peak_step) continue;
      if (s.kind == step_kind::compute || s.kind == step_kind::recompute) alive_at_peak.insert(s.node);
      if (s.kind == step_kind::free) alive_at_peak.erase(s.node);
    }
    for (std::vector<node_id>& in : recomputed_in) std::sort(in.begin(), in.end());
  };
  auto share_recompute = [&](std::size_t k) {
    const std::vector<node_id>& a = recomputed_in[k];
    const std::vector<node_id>& b = recomputed_in[k + 1];
    for (auto i = a.begin(), j = b.begin(); i != a.end() && j != b.end();) {
      if (*i == *j) return true;
      if (*i < *j) ++i;
      else ++j;
    }
    return false;
  };
  note_plan();
  auto score = [&](const simulation& s) { return rank_plan(s, options.goal, options.budget); };
  // Tries `candidate`; keeps it when it ranks better.
  auto attempt = [&](general_plan& candidate) {
    if (options.time.charge(pass_work(g, 40) + out.figures.recompute_steps * 90)) {
      out.time_limit_reached = true;
      return false;
    }
    ++out.tries;
    schedule tried = candidate.steps(g);
    simulation figures = simulate(g, tried);
    if (!(score(figures) < score(out.figures))) return false;
    out.best = std::move(candidate);
    out.figures = std::move(figures);
    steps = std::move(tried);
    note_plan();
    ++out.moves;
    return true;
  };
  for (bool improved = true; improved && !out.time_limit_reached;) {
    improved = false;
    ++out.passes;
    // A stage of one node runs one backward: both modes recompute the same.
    std::vector<std::uint32_t> members(out.best.modes.size(), 0);
    for (node_id v = 0; v < g.size(); ++v)
      if (!g.is_input(v)) ++members[out.best.stage_of[v]];
    for (std::size_t k = 0; k < out.best.modes.size() && !out.time_limit_reached; ++k) {
      if (members[k] < 2) continue;
      general_plan c = out.best;
      c.modes[k] = c.modes[k] == stage_recompute::lazy ? stage_recompute::eager : stage_recompute::lazy;
      improved = attempt(c) || improved;
    }
    for (node_id v = 0; v < g.size() && !out.time_limit_reached; ++v) {
      if (g.is_input(v)) continue;
      const bool kept = out.best.kept.contains(v);
      if (kept ? !alive_at_peak.contains(v) : !recomputed.contains(v)) continue;
      general_plan c = out.best;
      c.kept.set(v, !kept);
      improved = attempt(c) || improved;
    }
    // Merging stages k and k + 1 (numbered 0..modes.size() - 1): the union is a lower set.
    for (std::size_t k = 0; k + 1 < out.best.modes.size() && !out.time_limit_reached; ++k) {
      if (!share_recompute(k)) continue;
      general_plan c = out.best;
      for (node_id v = 0; v < g.size(); ++v)
        if (c.stage_of[v] > k) --c.stage_of[v];
      c.modes.erase(c.modes.begin() + static_cast<std::ptrdiff_t>(k) + 1);
      improved = attempt(c) || improved;
    }
  }
  return out;
}

struct general_search_options {
  objective goal = objective::memory;
  std::uint64_t budget = no_budget;
  std::uint64_t max_lower_sets = 20000;  ///< `exact`'s, for its starting plan
  time_budget time;
  bool preserve_gradient_order = true;
  order_choice order = order_choice::automatic;
  std::chrono::milliseconds bound_time_limit{250};
  std::chrono::milliseconds general_time_limit{250};  ///< `exact`'s, for its starting plan
};

/// The method `general-search`: `exact` (a third of the budget) gives the
/// first starting plans, each searched from with half of what is left;
/// `kept-search` (a quarter of what is then left) gives the others, which share
/// the rest. A plan at the per-op floor (or, for the memory objective, at
/// `exact`'s proven least peak over general plans) ends the search there:
/// no schedule peaks lower, so `kept-search` is not run. `feasible`, with the
/// per-op floor as the bound (the stage optimum bounds stage plans only).
inline solution solve_general_search(const graph& g, const general_search_options& options = {}) {
  const auto start = std::chrono::steady_clock::now();
  const std::uint64_t floor = per_op_floor(g).bytes;
  exact_options e;
  e.goal = options.goal;
  e.budget = options.budget;
  e.max_lower_sets = options.max_lower_sets;
  e.time = options.time.share(1, 3);
  e.preserve_gradient_order = options.preserve_gradient_order;
  e.bound_time_limit = options.bound_time_limit;
  e.order = options.order;
  e.general_time_limit = options.general_time_limit;
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
  plan p;
  p.method = "general-search";
  p.steps = best->best.steps(g);
  p.kept = best->best.kept;
  p.stage_of = best->best.stage_of;
  p.stage_modes = best->best.modes;
  p.order = best->best.order;
  solution s = solution_of_plan(g, std::move(p), options.budget, floor);
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
  // The floor holds for every schedule, so a plan peaking at it has the least peak of all.
  if (options.goal == objective::memory && s.figures.peak_bytes == floor) {
    s.status = solve_status::optimal;
    s.message += "; least peak proven: it equals the per-op floor, which no schedule goes below (recompute not "
                 "minimised among least-peak plans)";
  } else if (options.goal == objective::memory && stages.status == solve_status::optimal &&
             stages.proof_family == "general plans" && s.figures.peak_bytes == stages.figures.peak_bytes) {
    s.status = solve_status::optimal;
    s.proof_family = "general plans";
    s.peak_lower_bound = s.figures.peak_bytes;
    s.message += "; least peak over general plans, as exact proved (recompute not minimised among them)";
  } else {
    s.message += "; not proven: the lower bound is the per-op floor";
  }
  return s;
}

}  // namespace remat
