#pragma once

/// \file
/// The cut floor: a lower bound on the peak of every schedule that looks at
/// where the values a backward reads come from, above the per-op floor
/// (bounds.hpp), which looks at one step at a time.
///
/// Take a node v whose backward reads the values N(v), and a backward w that
/// runs before v's in every schedule. From the end of w's backward until
/// v's, every step holds at least H: the resident bytes and the gradients
/// and parameter gradients those steps must hold. Let A be the values alive
/// when w's backward ends and R those computed after it, before v's
/// backward. Every value of N(v) is in A or R, and every operand of a value
/// in R is in A, in R or an input. So:
///   - w's backward holds base(w) (its own floor) and A \ N(w);
///   - computing r in R holds at least H + fwd(r) (r, its workspace and its
///     operands).
/// For a threshold T, the values with H + fwd(r) > T cannot be in R; then A
/// must cut every path from such a value to N(v) (a value may be cut
/// itself), which costs at least a minimum vertex cut with weights bytes
/// (zero on N(w), counted already). The peak is at least
/// min over T of max(T, base(w) + cut(T)), and cut(T) falls as T rises, so
/// the minimum is found by bisection over the thresholds H + fwd(r) of v's
/// ancestors. Two kinds of w:
///   - c, the consumer of v whose backward runs last: then H(v) holds the
///     parameter gradients of v's descendants, v's gradient and the
///     gradients pending beside v (pending_gradients); as c is not known,
///     the bound for v is the least over its consumers;
///   - any strict descendant u of v in its series piece: H is the least
///     over the sets of done backwards between u's and v's of their
///     parameter gradients and pending gradients (held_between, a minimum
///     cut), u's per-op floor its base.
/// The cut floor is the largest over v and w.
///
/// It is what lifts the bound of residual networks: in a bottleneck block,
/// conv1's backward reads the block's input, which cannot be held across
/// bn3's backward, beside the skip connection's pending gradient, and is
/// recomputed after it under the gradient of the chain between.
///
/// Complexity: a (v, w) pair needs a maximum flow over v's ancestors per
/// threshold tried (Dinic on O(n + m) nodes and edges), and a descendant one
/// more over the piece. Nodes are taken by a cheap upper bound, highest
/// first, and a pair that cannot pass the best bound so far at one threshold
/// is settled with one flow, so most nodes cost no flow; per node at most
/// cut_floor_descendants descendants, in all cut_floor_descendant_tries
/// pairs of them, the most promising first. O(n · (n + m) · flows) at worst.

#include <remat/config.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include <remat/analysis/bounds.hpp>
#include <remat/analysis/lower_sets.hpp>
#include <remat/analysis/max_flow.hpp>
#include <remat/graph/graph.hpp>

namespace remat {

/// How many of a node's descendants the cut floor starts from at most (see
/// cut_floor_of): those whose backward could pass the bound holding what
/// the node reads, highest first.
inline constexpr std::size_t cut_floor_descendants = 4;

/// How many (node, descendant) pairs the cut floor tries in all, the most
/// promising first: each costs a few maximum flows over the node's
/// ancestors; more pairs gained little for several times the flows, and
/// only on wide layered graphs (docs/algorithms.md,
/// "The cut floor").
inline constexpr std::size_t cut_floor_descendant_tries = 64;

/// The cut floor of a graph, and where it is set.
struct cut_floor {
  std::uint64_t bytes = 0;  ///< no schedule's peak is below this (0: no node's bound passed `at_least`)
  node_id node = 0;         ///< the backward whose read values set it
  /// The descendant of `node` from whose backward's end the argument starts;
  /// none: from the last of `node`'s consumers' backwards, whichever it is.
  std::optional<node_id> after;
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

// The least that every step between the end of u's backward and the start
// of v's holds in gradient buffers and parameter gradients, for u a strict
// descendant of v: the backwards done then form an upper set D with u and
// its descendants in it and none of v and its ancestors; each node of D
// holds its parameter gradient, each node outside D with a consumer in D its
// gradient buffer. The least over such D is a closure problem, a minimum cut
// (as pending_gradients's), taken over the id range [first, last] that holds
// both, a series piece with the separator before it: no edge jumps a
// separator, so leaving the rest out only lowers the least (the parameter
// gradients of u's descendants outside the range are added whole).
// `below_u`, `above_v`: u's descendants and v's ancestors in the range as
// reach_in_range rows. O(flow over the range).
inline std::uint64_t held_between(const graph& g, std::size_t first, std::size_t last, node_id u, node_id v,
                                  const std::uint64_t* below_u, const std::uint64_t* above_v,
                                  std::uint64_t descendant_params) {
  auto in = [&](const std::uint64_t* set, std::size_t x) {
    return x >= first && x <= last && ((set[(x - first) / 64] >> ((x - first) % 64)) & 1U);
  };
  auto fixed = [&](std::size_t x) { return x == u || in(below_u, x); };
  auto excluded = [&](std::size_t x) { return x == v || in(above_v, x); };
  closure_network closure;
  flow_network& net = closure.net;
  constexpr std::size_t source = closure_network::source, sink = closure_network::sink;
  constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
  std::vector<std::size_t> done(last - first + 1, none), allocated(last - first + 1, none);
  for (std::size_t x = first; x <= last; ++x) {
    if (g.is_input(x) || fixed(x)) continue;
    if (!excluded(x)) done[x - first] = net.add_node();
    allocated[x - first] = net.add_node();
    closure.weigh(allocated[x - first], static_cast<std::int64_t>(g.bytes(x)));
  }
  for (std::size_t x = first; x <= last; ++x) {
    if (g.is_input(x) || fixed(x)) continue;
    const std::size_t a = allocated[x - first], d = done[x - first];
    if (d != none) {
      closure.weigh(d, static_cast<std::int64_t>(g.params(x)) - static_cast<std::int64_t>(g.bytes(x)));
      net.add_edge(d, a, unbounded_capacity);
    }
    for (node_id c : g.successors(x)) {
      if (c > last) continue;
      if (fixed(c)) {
        net.add_edge(source, a, unbounded_capacity);  // its buffer is surely allocated
      } else if (excluded(c)) {
        if (d != none) net.add_edge(d, sink, unbounded_capacity);  // x cannot be done before c
      } else {
        if (d != none) net.add_edge(d, done[c - first], unbounded_capacity);
        net.add_edge(done[c - first], a, unbounded_capacity);
      }
    }
  }
  return descendant_params + static_cast<std::uint64_t>(closure.least());
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

  // A backward w before v's whose end the argument starts from: what its
  // step holds besides A \ N(w), and N(w) (zero in the cut).
  struct hold_step {
    std::uint64_t base;
    std::vector<node_id> reads;
  };
  struct candidate {
    node_id v;
    std::vector<node_id> need;  // N(v)
    std::uint64_t held;         // H(v)
    std::uint64_t upper;
  };
  // Upper bounds first: with T below every threshold the cut can be N(v)
  // itself, less what the hold step reads.
  auto consumers_of = [&](node_id v, std::uint64_t held) {
    std::vector<hold_step> sides;
    for (node_id c : g.successors(v)) {
      hold_step side{held + g.bytes(c) + g.backward_workspace(c), detail::read_values(g, c)};
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
    for (const hold_step& side : consumers_of(v, held))
      upper = std::min(upper, side.base + uncounted(need, side.reads));
    if (upper > best) candidates.push_back({v, need, held, upper});
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const candidate& a, const candidate& b) { return a.upper > b.upper; });

  std::vector<char> in_region(n, 0);
  std::vector<std::size_t> split(n, 0);  // u_in's network id; u_out is the next
  std::vector<node_id> region, stack;
  // The computed ancestors of N(v), N(v) included, into `region`.
  auto collect_region = [&](const std::vector<node_id>& need) {
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
  };
  auto clear_region = [&] {
    for (node_id u : region) in_region[u] = 0;
  };
  // The bound from `side`'s end for v's reads `need` (region collected),
  // every later step holding `held`: the least over thresholds T of
  // max(T, base + cut(T)), where cut(T) is the least bytes outside N(w)
  // that separate the values too costly to compute at T from N(v). None
  // when it cannot pass `best` (one flow at T = best shows most).
  auto bound_from = [&](const std::vector<node_id>& need, std::uint64_t held,
                        const hold_step& side) -> std::optional<std::uint64_t> {
    std::vector<std::uint64_t> thresholds;
    for (node_id r : region) thresholds.push_back(held + detail::forward_bytes(g, r));
    std::sort(thresholds.begin(), thresholds.end());
    thresholds.erase(std::unique(thresholds.begin(), thresholds.end()), thresholds.end());
    auto cut = [&](std::uint64_t threshold) -> std::uint64_t {
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
        if (held + detail::forward_bytes(g, u) > threshold) net.add_edge(source, split[u], unbounded_capacity);
      }
      for (node_id x : need) net.add_edge(split[x] + 1, sink, unbounded_capacity);
      return min_cut(net, source, sink).value;
    };
    auto at = [&](std::uint64_t threshold) { return std::max(threshold, side.base + cut(threshold)); };
    if (at(best) <= best) return std::nullopt;
    // Every value too costly: the cut is N(v) less N(w).
    std::uint64_t least = side.base + uncounted(need, side.reads);
    // The least threshold at which base + cut fits under it, and the one below.
    std::size_t lo = 0, hi = thresholds.size() - 1;
    while (lo < hi) {
      const std::size_t mid = (lo + hi) / 2;
      if (side.base + cut(thresholds[mid]) <= thresholds[mid]) hi = mid;
      else lo = mid + 1;
    }
    least = std::min(least, at(thresholds[lo]));
    if (lo > 0) least = std::min(least, at(thresholds[lo - 1]));
    return least;
  };
  auto raise = [&](std::uint64_t bound, node_id v, std::optional<node_id> after) {
    if (bound > best) {
      best = bound;
      out.bytes = bound;
      out.node = v;
      out.after = after;
    }
  };

  // From the end of v's last consumer's backward, which one not known: the
  // least over v's consumers, each with H(v).
  for (const candidate& cand : candidates) {
    if (cand.upper <= best) break;
    collect_region(cand.need);
    std::uint64_t bound = std::numeric_limits<std::uint64_t>::max();
    for (const hold_step& side : consumers_of(cand.v, cand.held)) {
      const std::optional<std::uint64_t> from = bound_from(cand.need, cand.held, side);
      if (!from) {
        bound = 0;
        break;
      }
      bound = std::min(bound, *from);
    }
    clear_region();
    raise(bound, cand.v, std::nullopt);
  }

  // From the end of any strict descendant u's backward, which runs before
  // v's whatever the order: every later step holds at least held_between,
  // and u's own step its per-op floor. Where u's backward holds the most —
  // a residual block's last batch normalisation, beside the skip
  // gradient — the values v reads must come from after it, under the
  // gradients of the chain between. Per node, the descendants in its series
  // piece whose step could pass the bound holding all of N(v), up to
  // cut_floor_descendants, highest first; over all nodes, highest first,
  // until cut_floor_descendant_tries have been tried.
  const series_decomposition series = decompose_series(g);
  struct reach {
    std::size_t first = 0, last = 0, words = 0;
    std::vector<std::uint64_t> ancestors, descendants;  // reach_in_range rows
    bool in(const std::vector<std::uint64_t>& set, std::size_t row, std::size_t x) const {
      return (set[(row - first) * words + (x - first) / 64] >> ((x - first) % 64)) & 1U;
    }
  };
  std::vector<reach> reaches;
  struct option {
    std::uint64_t upper;
    node_id v, u;
    std::size_t piece;  // into reaches
  };
  std::vector<option> options, mine;
  for (std::size_t t = 0; t < series.pieces.size(); ++t) {
    const std::size_t first = t > 0 ? series.pieces[t - 1].last : series.pieces[t].first;
    const std::size_t last = series.pieces[t].last;
    const std::size_t range = last - first + 1;
    if (range > detail::max_pending_piece || range < 2) continue;
    bool made = false;
    for (std::size_t v = series.pieces[t].first; v <= last; ++v) {
      if (g.is_input(v) || g.successors(v).empty()) continue;
      const std::vector<node_id> need = detail::read_values(g, v);
      if (need.empty()) continue;
      if (!made) {
        made = true;
        reaches.push_back({first, last, (range + 63) / 64, detail::reach_in_range(g, first, last, false),
                           detail::reach_in_range(g, first, last, true)});
      }
      const reach& r = reaches.back();
      mine.clear();
      for (std::size_t u = v + 1; u <= last; ++u) {
        if (g.is_input(u) || !r.in(r.descendants, v, u)) continue;
        const std::uint64_t upper = resident + at_backward.beside_operands[u] + at_backward.operand_values[u] +
                                    uncounted(need, detail::read_values(g, u));
        if (upper > best) mine.push_back({upper, static_cast<node_id>(v), static_cast<node_id>(u), reaches.size() - 1});
      }
      auto higher = [](const option& a, const option& b) { return a.upper != b.upper ? a.upper > b.upper : a.u < b.u; };
      const std::size_t keep = std::min(mine.size(), cut_floor_descendants);
      std::partial_sort(mine.begin(), mine.begin() + static_cast<std::ptrdiff_t>(keep), mine.end(), higher);
      options.insert(options.end(), mine.begin(), mine.begin() + static_cast<std::ptrdiff_t>(keep));
    }
  }
  std::sort(options.begin(), options.end(), [](const option& a, const option& b) {
    return a.upper != b.upper ? a.upper > b.upper : std::pair{a.v, a.u} < std::pair{b.v, b.u};
  });
  std::size_t tries = 0;
  for (const option& o : options) {
    if (o.upper <= best || tries == cut_floor_descendant_tries) break;
    ++tries;
    const reach& r = reaches[o.piece];
    const std::vector<node_id> need = detail::read_values(g, o.v);
    ++out.flows;
    const std::uint64_t held =
        resident + detail::held_between(g, r.first, r.last, o.u, o.v, &r.descendants[(o.u - r.first) * r.words],
                                        &r.ancestors[(o.v - r.first) * r.words], later_params[o.u] + g.params(o.u));
    const hold_step at_u{resident + at_backward.beside_operands[o.u] + at_backward.operand_values[o.u],
                         detail::read_values(g, o.u)};
    collect_region(need);
    if (const std::optional<std::uint64_t> bound = bound_from(need, held, at_u)) raise(*bound, o.v, o.u);
    clear_region();
  }
  return out;
}

}  // namespace remat
