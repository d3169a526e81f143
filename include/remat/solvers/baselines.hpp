#pragma once

/// \file
/// Baseline plans: regular training, every k-th tensor, and Chen et al.'s
/// sqrt(n) segmentation. They need no solver and give the reference points the
/// optimal methods are measured against: the methods `none`, `every-k` and
/// `sqrt` (solve_none, solve_every_k, solve_sqrt), each `feasible` or
/// `infeasible` by the budget, with the per-op floor as the bound.

#include <remat/config.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <remat/error.hpp>
#include <remat/graph/graph.hpp>
#include <remat/graph/node_set.hpp>
#include <remat/plan/plan.hpp>
#include <remat/plan/schedule.hpp>
#include <remat/plan/simulate.hpp>
#include <remat/solvers/common.hpp>

namespace remat {

/// Every value that some backward reads: what regular training keeps.
inline node_set values_read_by_backward(const graph& g) {
  node_set keep(g.size());
  for (std::size_t v = 0; v < g.size(); ++v)
    if (!g.is_input(v) && g.read_by_backward(v)) keep.insert(v);
  return keep;
}

/// Regular training: keep every value a backward reads, recompute nothing.
inline plan plan_none(const graph& g) { return plan::from_kept(g, values_read_by_backward(g), "none"); }

/// Stages of k consecutive computed nodes in id order: each stage keeps what
/// later stages use and recomputes its dropped nodes in the backward. k = 1
/// recomputes nothing. \throws remat::error if k == 0.
inline plan plan_every_k(const graph& g, std::size_t k) {
  if (k == 0) throw error("every-k needs k >= 1");
  std::vector<std::uint32_t> stage_of(g.size(), 0);
  std::size_t position = 0;
  for (std::size_t v = 0; v < g.size(); ++v)
    if (!g.is_input(v)) stage_of[v] = static_cast<std::uint32_t>(position++ / k);
  return plan::from_stages(g, std::move(stage_of), "every-k");
}

/// The nodes where Chen et al. may cut: v such that no edge jumps over it in id
/// order (every value computed before v is consumed by v at the latest).
inline std::vector<node_id> articulation_candidates(const graph& g) {
  std::vector<node_id> out;
  node_id reach = 0;  // largest consumer id of any node before the current one
  for (node_id v = 0; v < g.size(); ++v) {
    if (!g.is_input(v) && reach <= v && !g.successors(v).empty()) out.push_back(v);
    if (!g.is_input(v) && !g.successors(v).empty()) reach = std::max(reach, g.successors(v).back());
  }
  return out;
}

/// Chen et al. (2016), "Training deep nets with sublinear memory cost": walk the
/// nodes in order, summing output bytes, and end a segment at a candidate node
/// (an articulation point; every node when there is none) whenever the sum
/// since the last segment end exceeds a budget b. As in the paper, b is searched
/// around sqrt(x·y), where x and y are the kept bytes and the largest segment
/// with every candidate kept; the b whose plan simulates lowest wins. Segments
/// become stages (id intervals), so the plan is in the same family as the
/// lower-set programmes.
inline plan plan_sqrt(const graph& g) {
  std::vector<node_id> candidates = articulation_candidates(g);
  if (candidates.size() < 2) {
    candidates.clear();
    for (node_id v = 0; v < g.size(); ++v)
      if (!g.is_input(v) && !g.successors(v).empty()) candidates.push_back(v);
  }
  std::vector<char> candidate(g.size(), 0);
  for (node_id v : candidates) candidate[v] = 1;

  auto greedy = [&](double budget, double* kept_bytes, double* widest) {
    std::vector<std::uint32_t> stage_of(g.size(), 0);
    std::uint32_t stage = 0;
    double since = 0;
    *kept_bytes = 0;
    *widest = 0;
    for (node_id v = 0; v < g.size(); ++v) {
      if (g.is_input(v)) continue;
      stage_of[v] = stage;
      since += static_cast<double>(g.bytes(v));
      if (candidate[v] && since > budget) {
        *kept_bytes += static_cast<double>(g.bytes(v));
        *widest = std::max(*widest, since);
        since = 0;
        ++stage;
      }
    }
    *widest = std::max(*widest, since);
    return stage_of;
  };

  double x = 0, y = 0;
  (void)greedy(0, &x, &y);
  const double center = std::sqrt(std::max(1.0, x * y));
  plan best;
  std::uint64_t best_peak = 0;
  for (double factor : {0.25, 0.5, 0.71, 1.0, 1.41, 2.0, 4.0}) {
    double kept = 0, widest = 0;
    plan p = plan::from_stages(g, greedy(center * factor, &kept, &widest), "sqrt");
    const std::uint64_t peak = simulate(g, p.steps).peak_bytes;
    if (best.steps.empty() || peak < best_peak) {
      best = std::move(p);
      best_peak = peak;
    }
  }
  return best;
}

/// Options of the baseline methods.
struct baseline_options {
  std::uint64_t budget = no_budget;  ///< above it the plan is `infeasible`
};

struct every_k_options {
  std::uint64_t budget = no_budget;
  std::size_t k = 4;
};

/// The method `none`: regular training.
inline solution solve_none(const graph& g, const baseline_options& options = {}) {
  return solution_of_plan(g, plan_none(g), options.budget, per_op_floor(g).bytes);
}

/// The method `sqrt`: Chen et al.'s segmentation.
inline solution solve_sqrt(const graph& g, const baseline_options& options = {}) {
  return solution_of_plan(g, plan_sqrt(g), options.budget, per_op_floor(g).bytes);
}

/// The method `every-k`. \throws remat::error if k == 0.
inline solution solve_every_k(const graph& g, const every_k_options& options = {}) {
  return solution_of_plan(g, plan_every_k(g, options.k), options.budget, per_op_floor(g).bytes);
}

}  // namespace remat
