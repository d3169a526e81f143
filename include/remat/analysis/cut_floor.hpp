#pragma once

/// \file
/// The cut floor: a lower bound on the peak of every schedule that looks at
/// where the values a backward reads come from, above the per-op floor
/// (bounds.hpp), which looks at one step at a time.
///
/// Take a node v whose backward reads the values N(v), and c, the consumer
/// of v whose backward runs last. From the end of c's backward until v's,
/// every step holds at least H(v): the resident bytes, the parameter
/// gradients of v's descendants, v's gradient and the gradients pending
/// beside v (pending_gradients). Let A be the values alive when c's backward
/// ends and R those computed after it, before v's backward. Every value of
/// N(v) is in A or R, and every operand of a value in R is in A, in R or an
/// input. So:
///   - c's backward holds H(v), c's gradient and workspace, the values c
///     reads, N(c), and A: at least base(c) + |A \ N(c)|;
///   - computing r in R holds at least H(v) + fwd(r) (r, its workspace and
///     its operands).
/// For a threshold T, the values with H(v) + fwd(r) > T cannot be in R; then
/// A must cut every path from such a value to N(v) (a value may be cut
/// itself), which costs at least a minimum vertex cut with weights bytes
/// (zero on N(c), counted already). The peak is at least
/// min over T of max(T, base(c) + cut(T)), and cut(T) falls as T rises, so
/// the minimum is found by bisection over the thresholds H(v) + fwd(r) of
/// v's ancestors. As c is not known, the floor for v is the least over v's
/// consumers; the cut floor is the largest over v.
///
/// It is what lifts the bound of residual networks: in a bottleneck block,
/// a convolution's backward reads a value that is either held across the
/// batch normalisation's backward, beside the skip connection's pending
/// gradient, or recomputed under it from the block's input.
///
/// Complexity: a node's bound needs a maximum flow over its ancestors per
/// threshold tried (Dinic on O(n + m) nodes and edges). Nodes are taken by a
/// cheap upper bound, highest first, and a node whose consumers cannot all
/// pass the best bound so far at one threshold is settled with one flow per
/// consumer, so most nodes cost no flow; O(n · (n + m) · flows) at worst.

#include <remat/config.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include <remat/analysis/bounds.hpp>
#include <remat/analysis/max_flow.hpp>
#include <remat/graph/graph.hpp>

namespace remat {

/// The cut floor of a graph, and where it is set.
struct cut_floor {
  std::uint64_t bytes = 0;  ///< no schedule's peak is below this (0: no node's bound passed `at_least`)
  node_id node = 0;         ///< the backward whose read values set it
  std::size_t flows = 0;    ///< maximum flows computed
};

namespace detail {

// The values v's backward reads, ascending.
inline std::vector<node_id> read_values(const graph& g, node_id v) {
  std::vector<node_id> out;
  if (reads_inputs(g.reads(v)))
    for (node_id p : g.predecessors(v))
      if (!g.is_input(p)) out.push_back(p);
  if (reads_output(g.reads(v))) out.push_back(v);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// What computing r holds beyond the resident bytes: its value, its
// workspace and its computed operands.
inline std::uint64_t forward_bytes(const graph& g, node_id r) {
  std::uint64_t bytes = g.bytes(r) + g.workspace(r);
  for (node_id p : g.predecessors(r))
    if (!g.is_input(p)) bytes += g.bytes(p);
  return bytes;
}

}  // namespace detail

/// The cut floor (see the file comment), searched only where it can pass
/// `at_least` (the per-op floor, say): bytes is 0 when nothing does.
/// `at_backward` is backward_floors(g).
inline cut_floor cut_floor_of(const graph& g, const backward_floor& at_backward, std::uint64_t at_least) {
  const std::size_t n = g.size();
  const std::uint64_t resident = g.param_bytes() + g.input_bytes();
  const std::vector<std::uint64_t> later_params = descendant_sums(g, [&](std::size_t u) { return g.params(u); });
  cut_floor out;
  std::uint64_t best = at_least;

  struct consumer_side {
    node_id consumer;
    std::uint64_t base;          // what its backward holds besides A \ N(c)
    std::vector<node_id> reads;  // N(c)
  };
  struct candidate {
    node_id v;
    std::vector<node_id> need;  // N(v)
    std::uint64_t held;         // H(v)
    std::uint64_t upper;
  };
  // Upper bounds first: with T below every threshold the cut can be N(v)
  // itself, less what c reads.
  auto consumers_of = [&](node_id v, std::uint64_t held) {
    std::vector<consumer_side> sides;
    for (node_id c : g.successors(v)) {
      consumer_side side{c, held + g.bytes(c) + g.backward_workspace(c), detail::read_values(g, c)};
      for (node_id y : side.reads) side.base += g.bytes(y);
      sides.push_back(std::move(side));
    }
    return sides;
  };
  auto uncounted = [&](const std::vector<node_id>& values, const std::vector<node_id>& counted) {
    std::uint64_t bytes = 0;
    for (node_id x : values)
      if (!std::binary_search(counted.begin(), counted.end(), x)) bytes += g.bytes(x);
    return bytes;
  };
  std::vector<candidate> candidates;
  for (node_id v = 0; v < n; ++v) {
    if (g.is_input(v) || g.successors(v).empty()) continue;
    const std::vector<node_id> need = detail::read_values(g, v);
    if (need.empty()) continue;
    const std::uint64_t held = resident + later_params[v] + g.bytes(v) + at_backward.pending[v];
    std::uint64_t upper = std::numeric_limits<std::uint64_t>::max();
    for (const consumer_side& side : consumers_of(v, held))
      upper = std::min(upper, side.base + uncounted(need, side.reads));
    if (upper > best) candidates.push_back({v, need, held, upper});
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const candidate& a, const candidate& b) { return a.upper > b.upper; });

  std::vector<char> in_region(n, 0);
  std::vector<std::size_t> split(n, 0);  // u_in's network id; u_out is the next
  std::vector<node_id> region, stack;
  for (const candidate& cand : candidates) {
    if (cand.upper <= best) break;
    const node_id v = cand.v;
    const std::vector<node_id>& need = cand.need;
    // The computed ancestors of N(v), N(v) included.
    region.clear();
    for (node_id x : need) {
      in_region[x] = 1;
      stack.push_back(x);
    }
    while (!stack.empty()) {
      const node_id u = stack.back();
      stack.pop_back();
      region.push_back(u);
      for (node_id p : g.predecessors(u))
        if (!g.is_input(p) && !in_region[p]) {
          in_region[p] = 1;
          stack.push_back(p);
        }
    }
    std::vector<std::uint64_t> thresholds;
    for (node_id r : region) thresholds.push_back(cand.held + detail::forward_bytes(g, r));
    std::sort(thresholds.begin(), thresholds.end());
    thresholds.erase(std::unique(thresholds.begin(), thresholds.end()), thresholds.end());

    const std::vector<consumer_side> sides = consumers_of(v, cand.held);
    // cut(T): the least bytes outside N(c) that separate the values too
    // costly to compute at T from N(v).
    auto cut = [&](const consumer_side& side, std::uint64_t threshold) -> std::uint64_t {
      if (threshold >= thresholds.back()) return 0;  // nothing is too costly
      ++out.flows;
      flow_network net(2);
      constexpr std::size_t source = 0, sink = 1;
      for (node_id u : region) {
        split[u] = net.add_node();
        net.add_node();
        const bool counted = std::binary_search(side.reads.begin(), side.reads.end(), u);
        net.add_edge(split[u], split[u] + 1, counted ? 0 : g.bytes(u));
      }
      for (node_id u : region) {
        for (node_id p : g.predecessors(u))
          if (!g.is_input(p)) net.add_edge(split[p] + 1, split[u], unbounded_capacity);
        if (cand.held + detail::forward_bytes(g, u) > threshold) net.add_edge(source, split[u], unbounded_capacity);
      }
      for (node_id x : need) net.add_edge(split[x] + 1, sink, unbounded_capacity);
      return min_cut(net, source, sink).value;
    };
    auto at = [&](const consumer_side& side, std::uint64_t threshold) {
      return std::max(threshold, side.base + cut(side, threshold));
    };
    // One flow per consumer at T = best shows most nodes cannot pass it.
    bool passes = true;
    for (const consumer_side& side : sides)
      if (at(side, best) <= best) {
        passes = false;
        break;
      }
    if (!passes) {
      for (node_id u : region) in_region[u] = 0;
      continue;
    }
    std::uint64_t bound = std::numeric_limits<std::uint64_t>::max();
    for (const consumer_side& side : sides) {
      // Every value too costly: the cut is N(v) less N(c).
      std::uint64_t least = side.base + uncounted(need, side.reads);
      // The least threshold at which base + cut fits under it, and the one below.
      std::size_t lo = 0, hi = thresholds.size() - 1;
      while (lo < hi) {
        const std::size_t mid = (lo + hi) / 2;
        if (side.base + cut(side, thresholds[mid]) <= thresholds[mid]) hi = mid;
        else lo = mid + 1;
      }
      least = std::min(least, at(side, thresholds[lo]));
      if (lo > 0) least = std::min(least, at(side, thresholds[lo - 1]));
      bound = std::min(bound, least);
    }
    for (node_id u : region) in_region[u] = 0;
    if (bound > best) {
      best = bound;
      out.bytes = bound;
      out.node = v;
    }
  }
  return out;
}

}  // namespace remat
