#pragma once

/// \file
/// Feng & Huang's objective (CVPR 2021) for a set of kept tensors: the bytes
/// kept plus the bytes of the largest segment re-run during backward, where a
/// segment is a connected group (edges taken in either direction) of tensors
/// that are not kept. Graph inputs and outputs (nodes without a consumer) are
/// always checkpoints and never charged, as in the seed.
///
/// The objective is a model, not a measurement: it ignores gradients,
/// parameters, workspace and what each backward reads. remat solves it
/// (solvers/ogc.hpp: the seed's division search; solvers/ogc_exact.hpp: exactly) because the
/// seed's plans are defined by it; every plan is then measured by the
/// simulator like any other.

#include <remat/config.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include <remat/graph/graph.hpp>
#include <remat/graph/node_set.hpp>
#include <remat/plan/solution.hpp>
#include <remat/time_budget.hpp>

namespace remat {

/// Feng & Huang's objective for one kept set.
struct segment_cost {
  std::uint64_t kept_bytes = 0;       ///< bytes of kept nodes that are neither inputs nor outputs
  std::uint64_t largest_segment = 0;  ///< bytes of the largest connected group of non-kept nodes
  /// The objective. Cannot overflow: a remat::graph's bytes sum to below 2⁶⁴.
  std::uint64_t total() const noexcept { return kept_bytes + largest_segment; }
  friend bool operator==(const segment_cost&, const segment_cost&) = default;
};

/// What the exact segment search counted (solvers/ogc_exact.hpp).
struct segment_stats {
  std::uint64_t states = 0;  ///< search states over all sweeps
  std::uint64_t sweeps = 0;  ///< sweeps run
  std::uint64_t labels = 0;  ///< labels created
  std::uint64_t pruned = 0;  ///< labels cut by the threshold
  double seconds = 0;
  bool cap_reached = false;
  bool time_limit_reached = false;
};

/// What the segment solvers (solvers/ogc.hpp, solvers/ogc_exact.hpp) return: a kept set and
/// its objective. solve() turns it into a plan the simulator measures.
struct segment_solution {
  node_set kept;           ///< the checkpoints (endpoints excluded)
  segment_cost cost;       ///< evaluate_segments(g, kept)
  std::uint64_t lower_bound = 0;  ///< no kept set scores below this
  bool optimal = false;    ///< cost.total() == lower_bound, proven
  segment_stats stats;
};

/// True for the nodes the objective treats as free checkpoints: graph inputs
/// and outputs (nodes without a consumer).
inline bool is_segment_endpoint(const graph& g, std::size_t v) noexcept {
  return g.is_input(v) || g.successors(v).empty();
}

/// No kept set scores below this: every node that is not an endpoint is kept
/// (paying its bytes) or lies in a segment (of at least its bytes). O(n).
inline std::uint64_t largest_segment_node(const graph& g) noexcept {
  std::uint64_t largest = 0;
  for (std::size_t v = 0; v < g.size(); ++v)
    if (!is_segment_endpoint(g, v)) largest = std::max(largest, g.bytes(v));
  return largest;
}

/// A lower bound on the objective that sees more than one node. If a kept
/// set's largest segment weighs at most T, every connected group of
/// non-endpoint nodes weighing more than T holds a kept node, so disjoint such
/// groups make the kept bytes at least the sum of their lightest nodes. The
/// groups are carved, for each of up to 64 floors θ (node weights that occur),
/// from the nodes of at least θ bytes: a depth-first forest cut bottom-up each
/// time a subtree passes T, every piece connected, heavier than T and worth θ;
/// LB(T) is the best θ · pieces. With T on a geometric grid T₀ < T₁ < … from
/// the lightest node, a kept set whose largest segment lies in (T_a, T_{a+1}]
/// scores at least T_a + LB(T_{a+1}), and one at most T₀ at least LB(T₀); the
/// bound is the least of these (or the largest node, if higher). A coarse
/// grid (×2) runs first, then a fine one (×1.03) unless `time` runs out,
/// which keeps the coarse result. O(grid · floors · (n + m)).
inline std::uint64_t segment_packing_bound(const graph& g, const time_budget& time = {}) {
  const std::uint64_t largest = largest_segment_node(g);
  std::vector<std::uint64_t> weights;
  std::uint64_t total = 0;
  for (node_id v = 0; v < g.size(); ++v)
    if (!is_segment_endpoint(g, v) && g.bytes(v) > 0) {
      weights.push_back(g.bytes(v));
      total += g.bytes(v);
    }
  std::sort(weights.begin(), weights.end());
  weights.erase(std::unique(weights.begin(), weights.end()), weights.end());
  if (weights.empty()) return largest;

  // Per floor, its nodes in depth-first preorder with their parents in the forest.
  struct forest {
    std::uint64_t floor = 0;
    std::vector<node_id> order;
    std::vector<node_id> parent;  // parent[k] of order[k]; a root is its own parent
  };
  std::vector<forest> forests;
  const std::size_t stride = (weights.size() + 63) / 64;
  std::vector<char> seen(g.size(), 0);
  std::vector<std::pair<node_id, node_id>> stack;  // (node, parent)
  for (std::size_t i = 0; i < weights.size(); i += stride) {
    forest f;
    f.floor = weights[i];
    auto member = [&](node_id v) { return !is_segment_endpoint(g, v) && g.bytes(v) >= f.floor; };
    std::fill(seen.begin(), seen.end(), 0);
    for (node_id root = 0; root < g.size(); ++root) {
      if (!member(root) || seen[root]) continue;
      seen[root] = 1;
      stack.assign(1, {root, root});
      while (!stack.empty()) {
        const node_id u = stack.back().first, up = stack.back().second;
        stack.pop_back();
        f.order.push_back(u);
        f.parent.push_back(up);
        auto visit = [&](node_id x) {
          if (member(x) && !seen[x]) {
            seen[x] = 1;
            stack.push_back({x, u});
          }
        };
        for (node_id x : g.successors(u)) visit(x);
        for (node_id x : g.predecessors(u)) visit(x);
      }
    }
    forests.push_back(std::move(f));
  }

  std::vector<std::uint64_t> carried(g.size(), 0);
  auto packing = [&](std::uint64_t t) {  // LB(t)
    std::uint64_t best = 0;
    for (const forest& f : forests) {
      for (node_id u : f.order) carried[u] = 0;
      std::uint64_t pieces = 0;
      for (std::size_t k = f.order.size(); k-- > 0;) {
        const node_id u = f.order[k];
        carried[u] += g.bytes(u);
        if (carried[u] > t) {
          ++pieces;
        } else if (f.parent[k] != u) {
          carried[f.parent[k]] += carried[u];
        }
      }
      best = std::max(best, f.floor * pieces);
    }
    return best;
  };
  auto over_grid = [&](double ratio, bool timed) -> std::optional<std::uint64_t> {
    std::uint64_t t = weights.front(), bound = packing(t);
    while (t < total) {
      if (timed && time.charge((g.size() + g.num_edges()) * 20)) return std::nullopt;
      // t < total, and bytes sum to below 2⁶⁴: neither the step nor the sum overflows
      const double grown = static_cast<double>(t) * ratio;
      const std::uint64_t next =
          grown >= static_cast<double>(total) ? total : std::max(t + 1, static_cast<std::uint64_t>(grown));
      bound = std::min(bound, t + std::min(packing(next), total - t));
      t = next;
    }
    return bound;
  };
  std::uint64_t bound = *over_grid(2.0, false);
  if (const auto fine = over_grid(1.03, true)) bound = std::max(bound, *fine);
  return std::max(largest, bound);
}

/// Evaluates the objective for `kept` (endpoints count as kept whether or not
/// they are members). O(n + m).
inline segment_cost evaluate_segments(const graph& g, const node_set& kept) {
  segment_cost cost;
  const std::size_t n = g.size();
  std::vector<char> seen(n, 0);
  std::vector<node_id> stack;
  for (node_id v = 0; v < n; ++v) {
    if (is_segment_endpoint(g, v)) continue;
    if (kept.contains(v)) {
      cost.kept_bytes += g.bytes(v);
      continue;
    }
    if (seen[v]) continue;
    std::uint64_t segment = 0;
    seen[v] = 1;
    stack.assign(1, v);
    while (!stack.empty()) {
      const node_id x = stack.back();
      stack.pop_back();
      segment += g.bytes(x);
      auto visit = [&](node_id y) {
        if (!seen[y] && !is_segment_endpoint(g, y) && !kept.contains(y)) {
          seen[y] = 1;
          stack.push_back(y);
        }
      };
      for (node_id y : g.successors(x)) visit(y);
      for (node_id y : g.predecessors(x)) visit(y);
    }
    cost.largest_segment = std::max(cost.largest_segment, segment);
  }
  return cost;
}

}  // namespace remat
