#pragma once

/// \file
/// A local search over general plans (schedule_from_kept_stages: stages and
/// a kept set chosen independently, each stage recomputing lazily or
/// eagerly): the plan form, the starts the searches use (a plan as a general
/// plan; its kept values with a stage per node) and first-improvement passes
/// by the plan ranking over four moves — a stage's recompute mode flipped, a
/// value added to or taken from the kept set, two adjacent stages merged,
/// and, while the plan peaks above the budget, the stage holding its peak
/// split in two.
/// Each try builds and simulates a plan: O(n log n + m + recomputes).
/// `exact` (past its general programme's size) and `general-search` use it.

#include <remat/config.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <remat/graph/graph.hpp>
#include <remat/graph/node_set.hpp>
#include <remat/plan/plan.hpp>
#include <remat/plan/schedule.hpp>
#include <remat/plan/simulate.hpp>
#include <remat/solvers/common.hpp>
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

/// `p` as a plan of `method`: its steps (p.steps(g), which the caller may
/// have built already), with the decision that makes them.
inline plan as_plan(const general_plan& p, std::string method, schedule steps) {
  plan out;
  out.method = std::move(method);
  out.steps = std::move(steps);
  out.kept = p.kept;
  out.stage_of = p.stage_of;
  out.stage_modes = p.modes;
  out.order = p.order;
  return out;
}

inline plan as_plan(const graph& g, const general_plan& p, std::string method) {
  return as_plan(p, std::move(method), p.steps(g));
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
  /// The most work (units, as `time` charges them) the search may do
  /// itself, whatever `time` allows: a limit that does not depend on the
  /// machine or on a work meter being attached.
  std::uint64_t max_work = time_budget::no_work_limit();
  /// Plans recomputing more than this many seconds rank after every plan
  /// that does not, and among themselves by their recompute.
  double max_recompute = std::numeric_limits<double>::infinity();
};

struct general_search_result {
  general_plan best;
  simulation figures;
  std::size_t tries = 0, moves = 0, passes = 0;
  bool time_limit_reached = false;
};

namespace detail {

// The nodes in the order a plan runs them (`order`, or the id order).
inline std::vector<node_id> run_order(const graph& g, const std::vector<node_id>& order) {
  if (!order.empty()) return order;
  std::vector<node_id> ids(g.size());
  for (node_id v = 0; v < g.size(); ++v) ids[v] = v;
  return ids;
}

// The stage whose backward phase holds step `at` of `p`'s steps (its
// recomputes come before its backwards), or none for a forward step.
inline std::optional<std::uint32_t> stage_at_peak(const graph& g, const general_plan& p, const schedule& steps,
                                                  std::size_t at) {
  bool backward_phase = false;
  for (std::size_t i = 0; i <= at && i < steps.size() && !backward_phase; ++i)
    backward_phase = steps[i].kind == step_kind::backward || steps[i].kind == step_kind::recompute;
  if (!backward_phase) return std::nullopt;
  for (std::size_t i = at; i < steps.size(); ++i)
    if (steps[i].kind == step_kind::backward && !g.is_input(steps[i].node)) return p.stage_of[steps[i].node];
  return std::nullopt;
}

}  // namespace detail

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
  std::vector<double> recompute_of(g.size(), 0.0);  // time spent recomputing each value
  std::vector<std::vector<node_id>> recomputed_in;  // per stage, ascending
  auto note_plan = [&] {
    alive_at_peak = node_set(g.size());
    recomputed = node_set(g.size());
    std::fill(recompute_of.begin(), recompute_of.end(), 0.0);
    recomputed_in.assign(out.best.modes.size(), {});
    std::vector<node_id> pending;  // recomputed for the next backward's stage
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const step s = steps[i];
      if (s.kind == step_kind::recompute) {
        recomputed.insert(s.node);
        recompute_of[s.node] += g.time(s.node);
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
  auto score = [&](const simulation& s) {
    return std::pair{s.recompute_time > options.max_recompute ? s.recompute_time : 0.0,
                     rank_plan(s, options.goal, options.budget)};
  };
  // Tries `candidate`; keeps it when it ranks better.
  std::uint64_t work = 0;
  auto attempt = [&](general_plan& candidate) {
    const std::uint64_t units = pass_work(g, 40) + out.figures.recompute_steps * 90;
    work += units;
    if (options.time.charge(units) || work > options.max_work) {
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
    // Splitting the stage whose backward holds the peak: the values it
    // recomputes for its later nodes' backwards are freed before its earlier
    // nodes' run. Within the budget a split only adds recompute.
    // Above the budget only a lower peak ranks better: keeping a value the
    // plan recomputes, or merging stages, rarely gives one, and is tried
    // once the plan fits.
    const bool over_budget = out.figures.peak_bytes > options.budget;
    if (over_budget && !out.time_limit_reached)
      if (const std::optional<std::uint32_t> k = detail::stage_at_peak(g, out.best, steps, out.figures.peak_step)) {
        std::vector<node_id> members;  // in the order the stage runs them
        for (node_id v : detail::run_order(g, out.best.order))
          if (!g.is_input(v) && out.best.stage_of[v] == *k) members.push_back(v);
        for (std::size_t cut = 1; cut < members.size() && !out.time_limit_reached; ++cut) {
          general_plan c = out.best;
          for (node_id v = 0; v < g.size(); ++v)
            if (!g.is_input(v) && c.stage_of[v] > *k) ++c.stage_of[v];
          for (std::size_t i = cut; i < members.size(); ++i) c.stage_of[members[i]] = *k + 1;
          c.modes.insert(c.modes.begin() + static_cast<std::ptrdiff_t>(*k) + 1, c.modes[*k]);
          if (attempt(c)) {
            improved = true;
            break;  // the peak moved: the next pass looks where it is now
          }
        }
      }
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
    // Kept values alive at the peak first, largest first (dropping one can
    // lower the peak), then the values the plan recomputes most: a search
    // cut short by its work limit has then tried what gains most.
    std::vector<node_id> toggles;
    for (node_id v = 0; v < g.size(); ++v)
      if (!g.is_input(v)) toggles.push_back(v);
    auto gain = [&](node_id v) {
      return out.best.kept.contains(v) ? std::pair{1, static_cast<double>(g.bytes(v))} : std::pair{0, recompute_of[v]};
    };
    std::stable_sort(toggles.begin(), toggles.end(), [&](node_id a, node_id b) { return gain(a) > gain(b); });
    for (const node_id v : toggles) {
      if (out.time_limit_reached) break;
      const bool kept = out.best.kept.contains(v);
      if (kept ? !alive_at_peak.contains(v) : (over_budget || !recomputed.contains(v))) continue;
      general_plan c = out.best;
      c.kept.set(v, !kept);
      improved = attempt(c) || improved;
    }
    // Merging stages k and k + 1 (numbered 0..modes.size() - 1): the union is a lower set.
    for (std::size_t k = 0; k + 1 < out.best.modes.size() && !over_budget && !out.time_limit_reached; ++k) {
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

}  // namespace remat
