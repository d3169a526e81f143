#pragma once

/// \file
/// A lower bound on the least peak of any stage plan, from the exact optimum
/// of a subgraph whose lower sets are few enough to enumerate.
///
/// Why it holds. Take any stage plan of g (a chain of lower sets) and a node
/// subset H. Intersecting each lower set with H gives a chain of lower sets
/// of restrict_graph(g, H), so a stage plan of the subgraph. Its schedule runs
/// g's steps on H's nodes in the same order, and every step holds a subset of
/// what g's step holds: a value is kept only if a consumer in H lies in a
/// later stage, freed after the backwards of fewer consumers, recomputed only
/// if H's backward reads it, and operands from outside H are free inputs of
/// 0 bytes. So the subgraph's least peak bounds g's from below, with or
/// without gradient-order constraints on g (the subgraph is solved without
/// them). The tests check it against the brute-force optimum on 2,000
/// random subgraphs of random graphs.
///
/// Which subgraph. The heaviest input-to-sink path (a chain: few lower sets),
/// then "ears": the heaviest path through nodes not yet taken that leaves and
/// rejoins the subgraph, added greedily while the subgraph keeps at most a
/// cap of lower sets. The cap doubles from 64 to max_lower_sets, and each
/// subgraph's least peak is found by the exact programme (dp.hpp) in rounds
/// of growing bounds; every round that finds no plan already proves its
/// bound, and a subgraph's optimum is never below that of a subgraph of it,
/// so a time limit only stops the bound rising, never leaves it invalid. It
/// matters where the per-op floor lies far below any plan, as on NAS
/// networks (docs/results-solvers.md).
///
/// Complexity: per ear O(n + m) for the paths plus a lower-set count capped
/// at the cap; per subgraph the exact programme over its lower sets (its
/// stages are pairs of them: up to their number squared).

#include <remat/config.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include <remat/analysis/bounds.hpp>
#include <remat/analysis/lower_sets.hpp>
#include <remat/graph/graph.hpp>
#include <remat/solvers/common.hpp>
#include <remat/solvers/dp.hpp>

namespace remat {

/// g restricted to the nodes with keep[v] set, in g's id order. An operand
/// outside them becomes a graph input of 0 bytes (one per outside node). With
/// `keep_resident`, the parameters and graph inputs left out stay as one
/// resident input of their bytes: g holds them at every step, so every step
/// of the subgraph still holds no more than g's. The new inputs are named
/// "outside:" and the outside node's name ("outside:" alone for the resident
/// one), with more colons if some name of g already starts so.
inline graph restrict_graph(const graph& g, const std::vector<char>& keep, bool keep_resident = false) {
  graph_builder b(g.name() + " (subgraph)");
  constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
  std::vector<std::size_t> index(g.size(), none), outside(g.size(), none);
  std::size_t next = 0;
  // Names of the new inputs: a prefix no name of g starts with, then the
  // outside node's name (the resident input is the prefix alone).
  std::string prefix = "outside:";
  auto clashes = [&] {
    for (node_id v = 0; v < g.size(); ++v)
      if (g.node_name(v).starts_with(prefix)) return true;
    return false;
  };
  while (clashes()) prefix += ':';
  if (keep_resident) {
    node_spec resident;
    resident.name = prefix;
    resident.op = "input";
    for (node_id v = 0; v < g.size(); ++v)
      if (!keep[v]) resident.bytes += g.params(v) + (g.is_input(v) ? g.bytes(v) : 0);
    if (resident.bytes > 0) {
      b.add(std::move(resident));
      ++next;
    }
  }
  for (node_id v = 0; v < g.size(); ++v) {
    if (!keep[v]) continue;
    for (node_id p : g.inputs(v))
      if (!keep[p] && outside[p] == none) {
        node_spec free;
        free.name = prefix + g.node_name(p);
        free.op = "input";
        b.add(std::move(free));
        outside[p] = next++;
      }
    node_spec s = node_spec_of(g, v);
    for (node_id p : g.inputs(v)) s.inputs.push_back(keep[p] ? index[p] : outside[p]);
    b.add(std::move(s));
    index[v] = next++;
  }
  return std::move(b).build();
}

struct subgraph_bound_options {
  /// The most lower sets a subgraph may have (the exact programme over them
  /// costs up to their number squared).
  std::uint64_t max_lower_sets = 16384;
  /// Give it a limit: on graphs with many lower sets the bound keeps rising
  /// for as long as it is allowed to.
  time_budget time;
  /// Stop as soon as the bound exceeds this (a budget to refute): each
  /// subgraph is then asked only whether it has a plan within it.
  std::uint64_t stop_above = std::numeric_limits<std::uint64_t>::max();
  std::optional<std::uint64_t> per_op_floor = std::nullopt;  ///< g's, when the caller knows it
};

struct subgraph_bound {
  std::uint64_t bytes = 0;         ///< no stage plan of the graph peaks below this
  std::size_t nodes = 0;           ///< nodes of the subgraph that gave it (0: the per-op floor did)
  std::uint64_t lower_sets = 0;    ///< that subgraph's lower sets
  bool subgraph_optimum = false;   ///< bytes is that subgraph's least peak (else a peak it cannot reach, plus one)
  bool stopped = false;            ///< the time limit (or the programme's state cap) ended the search
};

namespace detail {

/// The lower sets of restrict_graph(g, keep), counted on g itself (nodes not
/// kept count as present), or cap + 1 as soon as there are more than cap.
/// O(min(count, cap) · deg) plus O(n) per series piece of g.
inline std::uint64_t subgraph_lower_sets(const graph& g, const series_decomposition& pieces,
                                         const std::vector<char>& keep, std::uint64_t cap) {
  ideal_walker walker(g);
  std::uint64_t count = 1;
  for (const auto& piece : pieces.pieces) {
    auto in_base = [&](node_id v) { return v < piece.first || !keep[v]; };
    // The walker offers successors of added nodes without asking in_base
    // (a lower set's successors lie outside it); those not kept are refused.
    auto enter = [&](node_id v) { return keep[v] ? (++count, true) : false; };
    walker.walk(in_base, piece.first, piece.last, enter, [](node_id) {}, [&] { return count > cap; });
    if (count > cap) return cap + 1;
  }
  return count;
}

/// Grows `keep` by ears: repeatedly the heaviest path (by bytes) through
/// nodes not kept whose ends attach to kept nodes, taken when the restricted
/// graph keeps at most cap lower sets; an ear that does not fit is not tried
/// again.
inline void grow_by_ears(const graph& g, const series_decomposition& pieces, std::vector<char>& keep,
                         std::uint64_t cap, const time_budget& time) {
  const std::size_t n = g.size();
  constexpr node_id none = std::numeric_limits<node_id>::max();
  auto weight = [&](node_id v) { return g.is_input(v) ? std::uint64_t{0} : g.bytes(v); };
  std::vector<char> rejected(n, 0);
  std::vector<std::uint64_t> up(n), down(n);
  std::vector<node_id> up_from(n), down_to(n);
  for (;;) {
    if (time.charge(pass_work(g, 30))) break;
    // up[v]: heaviest path ending at v that leaves a kept node; down[v] the same to a kept node.
    for (node_id v = 0; v < n; ++v) {
      up[v] = 0;
      up_from[v] = none;
      if (keep[v]) continue;
      for (node_id p : g.inputs(v)) {
        if (!keep[p] && up_from[p] == none) continue;
        const std::uint64_t w = (keep[p] ? 0 : up[p]) + weight(v);
        if (up_from[v] == none || w > up[v]) up[v] = w, up_from[v] = p;
      }
    }
    for (node_id v = n; v-- > 0;) {
      down[v] = 0;
      down_to[v] = none;
      if (keep[v]) continue;
      for (node_id s : g.successors(v)) {
        if (!keep[s] && down_to[s] == none) continue;
        const std::uint64_t w = (keep[s] ? 0 : down[s]) + weight(v);
        if (down_to[v] == none || w > down[v]) down[v] = w, down_to[v] = s;
      }
    }
    node_id best = none;
    std::uint64_t best_weight = 0;
    for (node_id v = 0; v < n; ++v)
      if (!keep[v] && !rejected[v] && up_from[v] != none && down_to[v] != none) {
        const std::uint64_t w = up[v] + down[v] - weight(v);
        if (best == none || w > best_weight) best = v, best_weight = w;
      }
    if (best == none) break;
    std::vector<node_id> ear;
    for (node_id v = best; !keep[v]; v = up_from[v]) ear.push_back(v);
    for (node_id v = down_to[best]; !keep[v]; v = down_to[v]) ear.push_back(v);
    for (node_id v : ear) keep[v] = 1;
    if (subgraph_lower_sets(g, pieces, keep, cap) > cap)
      for (node_id v : ear) keep[v] = 0, rejected[v] = 1;
  }
}

/// The input-to-sink path of most bytes.
inline std::vector<char> heaviest_path(const graph& g) {
  const std::size_t n = g.size();
  constexpr node_id none = std::numeric_limits<node_id>::max();
  std::vector<std::uint64_t> best(n, 0);
  std::vector<node_id> from(n, none);
  node_id end = none;
  for (node_id v = 0; v < n; ++v) {
    best[v] = g.is_input(v) ? 0 : g.bytes(v);
    const std::uint64_t own = best[v];
    for (node_id p : g.inputs(v))
      if (from[v] == none || best[p] + own > best[v]) best[v] = best[p] + own, from[v] = p;
    if (g.successors(v).empty() && (end == none || best[v] > best[end])) end = v;
  }
  std::vector<char> keep(n, 0);
  for (node_id v = end; v != none; v = from[v]) keep[v] = 1;
  return keep;
}

}  // namespace detail

/// A lower bound on the peak of every stage plan of g: the per-op floor, or
/// the least peak of a subgraph when that is higher (see the file comment).
/// Never exceeds the least peak of g's stage plans; returns within its time
/// budget (give it more for a tighter bound on graphs with many lower sets).
inline subgraph_bound subgraph_peak_bound(const graph& g, const subgraph_bound_options& options = {}) {
  subgraph_bound out;
  out.bytes = per_op_floor_of(g, options.per_op_floor);
  if (g.size() == 0 || out.bytes > options.stop_above) return out;
  std::vector<char> keep = detail::heaviest_path(g);
  const series_decomposition pieces = decompose_series(g);
  std::vector<std::uint64_t> caps{0};  // 0: the path alone
  for (std::uint64_t cap = 64; cap < options.max_lower_sets; cap *= 2) caps.push_back(cap);
  caps.push_back(options.max_lower_sets);
  for (const std::uint64_t cap : caps) {
    const auto taken = [&] { return static_cast<std::size_t>(std::count(keep.begin(), keep.end(), 1)); };
    const std::size_t before = taken();
    if (cap > 0) detail::grow_by_ears(g, pieces, keep, cap, options.time);
    if (cap > 0 && taken() == before) continue;
    if (options.time.charge(pass_work(g, 30))) {  // a subgraph of a large graph takes a while to build
      out.stopped = true;
      return out;
    }
    const graph h = restrict_graph(g, keep, true);
    // Rounds of growing bounds from the best bound so far (or the one bound
    // to refute): a round that completes without a plan proves its bound;
    // one that finds a plan gives the subgraph's least peak.
    const std::uint64_t lower_sets = count_lower_sets(h).count;
    const backward_floor floors = backward_floors(h);  // shared by the rounds below
    std::uint64_t bound = std::max(out.bytes, per_op_floor(h, floors).bytes);
    if (options.stop_above != std::numeric_limits<std::uint64_t>::max()) bound = std::max(bound, options.stop_above);
    for (;;) {
      if (options.time.expired()) {
        out.stopped = true;
        return out;
      }
      dp_options round;
      round.peak_only = true;
      round.preserve_gradient_order = false;
      round.budget = bound;
      round.time = options.time;
      round.floors = &floors;
      const dp_result r = solve_dp(h, dp_family::exact, round);
      if (!r.complete) {
        out.stopped = true;
        return out;
      }
      if (r.result.status != solve_status::infeasible) {
        if (r.result.claimed_peak > out.bytes) out = {r.result.claimed_peak, taken(), lower_sets, true, false};
        break;
      }
      if (bound + 1 > out.bytes) out = {bound + 1, taken(), lower_sets, false, false};
      if (out.bytes > options.stop_above) return out;
      bound += bound / 8 + 1;
    }
  }
  return out;
}

}  // namespace remat
