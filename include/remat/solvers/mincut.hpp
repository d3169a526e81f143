#pragma once

/// \file
/// The `mincut` method: stage plans whose stage boundaries are minimum cuts.
///
/// A stage plan keeps, across each boundary L_j of its lower-set chain, the
/// nodes of L_j with a consumer outside it. For k stages the boundaries are
/// placed near the j/k points of the forward pass (by bytes computed): each is
/// the lower set, between "everything computed before the window" and
/// "everything computed after it", whose kept bytes are least — a minimum
/// s–t cut on a node-split network (analysis/max_flow.hpp):
///
///     S → u (unbounded)          u computed before the window
///     u → p (unbounded)          p an operand of u (lower sets are closed)
///     v_in → v_out (bytes(v))    paying for v when it is in L and a consumer is not
///     v_out → c (unbounded)      c a consumer of v in the window
///     v_out → T (unbounded)      v has a consumer after the window
///
/// Windows are a quarter of the spacing wide on each side, so the boundaries
/// nest. Every k from 1 up to `max_stages` is tried and measured by the
/// simulator: the memory objective keeps the least peak, the time objective
/// the least recompute within the budget. The result carries the per-op floor
/// as its lower bound.
///
/// Complexity: O(Σ_k k · flow(window)) — Dinic on a window of w nodes and e
/// edges is O(w² · e) in the worst case, near linear on these networks — plus
/// one schedule build and simulation per k.

#include <remat/config.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <remat/analysis/bounds.hpp>
#include <remat/analysis/lower_sets.hpp>
#include <remat/analysis/max_flow.hpp>
#include <remat/graph/graph.hpp>
#include <remat/plan/plan.hpp>
#include <remat/plan/schedule.hpp>
#include <remat/plan/simulate.hpp>
#include <remat/plan/solution.hpp>
#include <remat/solvers/common.hpp>
#include <remat/time_budget.hpp>

namespace remat {

struct mincut_options {
  objective goal = objective::memory;
  std::uint64_t budget = std::numeric_limits<std::uint64_t>::max();  ///< time objective only
  std::size_t max_stages = 64;
  /// Close every lower set under gradient_order_constraints (analysis/lower_sets.hpp),
  /// so plans never reorder a gradient sum.
  bool preserve_gradient_order = true;
  /// Past it no further stage count is tried (one stage always is).
  time_budget time;
  std::optional<std::uint64_t> per_op_floor = std::nullopt;  ///< the graph's, when the caller knows it
};

namespace detail {

// The least-kept lower set L with {computed before `lo`} ⊆ L ⊆ {computed
// before `hi`}: marks L in `in_set` (ids below lo are always members).
inline void min_boundary_lower_set(const graph& g, const precedence& order, node_id lo, node_id hi,
                                   std::vector<char>& in_set) {
  const std::size_t n = g.size();
  // Network nodes: 0 = S, 1 = T, then v_in / v_out for every node that can
  // pay: window nodes and nodes before the window with a consumer at lo or later.
  std::vector<std::size_t> split(n, SIZE_MAX);
  flow_network net(2);
  constexpr std::size_t source = 0, sink = 1;
  auto split_node = [&](node_id v) {
    if (split[v] == SIZE_MAX) {
      split[v] = net.add_node();
      net.add_node();
      net.add_edge(split[v], split[v] + 1, g.bytes(v));
    }
    return split[v];
  };
  for (node_id v = 0; v < hi; ++v) {
    if (g.is_input(v)) continue;
    const bool before = v < lo;
    if (before && (g.successors(v).empty() || g.successors(v).back() < lo)) continue;
    const std::size_t in = split_node(v);
    if (before) net.add_edge(source, in, unbounded_capacity);
    for (node_id c : g.successors(v)) {
      if (c >= hi) net.add_edge(in + 1, sink, unbounded_capacity);
      else if (c >= lo) net.add_edge(in + 1, split_node(c), unbounded_capacity);
    }
    if (!before) {
      for (node_id p : g.predecessors(v))
        if (!g.is_input(p) && p >= lo) net.add_edge(in, split_node(p), unbounded_capacity);
      // Gradient-order constraints point to smaller ids, like operands.
      if (!order.empty())
        for (node_id p : order.before[v])
          if (p >= lo) net.add_edge(in, split_node(p), unbounded_capacity);
    }
  }
  const min_cut_result cut = min_cut(net, source, sink);
  for (node_id v = 0; v < n; ++v)
    in_set[v] = v < lo || (v < hi && split[v] != SIZE_MAX && cut.source_side[split[v]]);
}

}  // namespace detail

/// Stage plans cut at minimum-kept boundaries (see the file comment). Status
/// `feasible` with the per-op floor as `peak_lower_bound`, or `infeasible`
/// (time objective) when no k meets the budget; then
/// `smallest_feasible_budget` is the least peak among the plans tried.
inline solution solve_mincut(const graph& g, const mincut_options& options = {}) {
  const auto start = std::chrono::steady_clock::now();
  const std::size_t n = g.size();
  const precedence order = options.preserve_gradient_order ? gradient_order_constraints(g) : precedence{};
  const std::uint64_t floor = per_op_floor_of(g, options.per_op_floor);  // before the search: it may cost as much as a cut
  // cumulative[v]: bytes computed before v in id order.
  std::vector<std::uint64_t> cumulative(n + 1, 0);
  for (node_id v = 0; v < n; ++v) cumulative[v + 1] = cumulative[v] + (g.is_input(v) ? 0 : g.bytes(v));
  const double total = static_cast<double>(cumulative[n]);
  auto position = [&](double bytes) {
    const auto it = std::upper_bound(cumulative.begin(), cumulative.end(), static_cast<std::uint64_t>(bytes));
    return static_cast<node_id>(std::min<std::size_t>(n, static_cast<std::size_t>(it - cumulative.begin()) - 1));
  };

  solution best;
  std::uint64_t least_peak = std::numeric_limits<std::uint64_t>::max();
  std::vector<char> in_set(n, 0);
  std::map<std::pair<node_id, node_id>, std::vector<node_id>> cut_windows;  // window -> its members in L
  std::uint64_t plans = 0, cuts = 0;
  std::size_t computed = 0;
  for (node_id v = 0; v < n; ++v) computed += g.is_input(v) ? 0 : 1;
  const std::size_t max_stages = std::max<std::size_t>(1, std::min(options.max_stages, computed));
  for (std::size_t k = 1; k <= max_stages; ++k) {
    // The previous k cut the graph into k − 1 windows and simulated its plan.
    if (k > 1 && options.time.charge(pass_work(g, 600))) {
      best.stats.time_limit_reached = true;
      break;
    }
    std::vector<std::uint32_t> stage_of(n, static_cast<std::uint32_t>(k - 1));
    for (std::size_t j = k - 1; j >= 1; --j) {
      const double spacing = total / static_cast<double>(k);
      const node_id lo = position(spacing * (static_cast<double>(j) - 0.25));
      const node_id hi = std::max<node_id>(lo, position(spacing * (static_cast<double>(j) + 0.25)));
      // An empty window is the nodes before it; a window already cut (the
      // k's share most of them) is looked up.
      const std::vector<node_id>* members = nullptr;
      if (lo < hi) {
        auto [at, fresh] = cut_windows.try_emplace({lo, hi});
        if (fresh) {
          detail::min_boundary_lower_set(g, order, lo, hi, in_set);
          ++cuts;
          for (node_id v = lo; v < hi; ++v)
            if (in_set[v]) at->second.push_back(v);
        }
        members = &at->second;
      }
      for (node_id v = 0; v < lo; ++v) stage_of[v] = static_cast<std::uint32_t>(j - 1);
      if (members)
        for (node_id v : *members) stage_of[v] = static_cast<std::uint32_t>(j - 1);
    }
    plan candidate = plan::from_stages(g, std::move(stage_of), "mincut");
    const simulation sim = simulate(g, candidate.steps);
    ++plans;
    least_peak = std::min(least_peak, sim.peak_bytes);
    const bool fits = sim.peak_bytes <= options.budget;
    // The time objective keeps the first plan over the budget until one fits.
    const std::uint64_t budget = options.goal == objective::time ? options.budget : no_budget;
    const bool better = best.best.steps.empty() || ((fits || options.goal == objective::memory) &&
                                                    rank_plan(sim, options.goal, budget) <
                                                        rank_plan(best.figures, options.goal, budget));
    if (better) {
      best.best = std::move(candidate);
      best.figures = sim;
      best.status = fits ? solve_status::feasible : solve_status::infeasible;
    }
  }
  best.stats.counts = {{"plans simulated", plans}, {"minimum cuts", cuts}};
  best.claimed_peak = best.figures.peak_bytes;
  best.claimed_recompute = best.figures.recompute_time;
  best.peak_lower_bound = floor;
  if (best.status == solve_status::infeasible) {
    best.smallest_feasible_budget = least_peak;
    best.message = "no mincut plan peaks within the budget; the least peak among them is " +
                   std::to_string(least_peak) + " bytes";
  }
  best.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return best;
}

}  // namespace remat
