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
/// (ogc.hpp: the seed's division search; segment_dp.hpp: exactly) because the
/// seed's plans are defined by it; every plan is then measured by the
/// simulator like any other.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "graph.hpp"
#include "node_set.hpp"
#include "solution.hpp"

namespace remat {

/// Feng & Huang's objective for one kept set.
struct segment_cost {
  std::uint64_t kept_bytes = 0;       ///< bytes of kept nodes that are neither inputs nor outputs
  std::uint64_t largest_segment = 0;  ///< bytes of the largest connected group of non-kept nodes
  /// The objective. Cannot overflow: a remat::graph's bytes sum to below 2⁶⁴.
  std::uint64_t total() const noexcept { return kept_bytes + largest_segment; }
  friend bool operator==(const segment_cost&, const segment_cost&) = default;
};

/// What the segment solvers (ogc.hpp, segment_dp.hpp) return: a kept set and
/// its objective. solve() turns it into a plan the simulator measures.
struct segment_solution {
  node_set kept;           ///< the checkpoints (endpoints excluded)
  segment_cost cost;       ///< evaluate_segments(g, kept)
  std::uint64_t lower_bound = 0;  ///< no kept set scores below this
  bool optimal = false;    ///< cost.total() == lower_bound, proven
  solve_stats stats;       ///< lower_sets: search states; labels: labels created
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
