#pragma once

/// \file
/// Lower bounds that hold for every schedule of a graph.

#include <remat/config.hpp>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <remat/analysis/lower_sets.hpp>
#include <remat/analysis/max_flow.hpp>
#include <remat/graph/graph.hpp>

namespace remat {

namespace detail {

/// Reachability inside the id range [first, last] as bitsets: row v - first,
/// `words` words long, holds v's strict descendants in the range
/// (`descendants`) or its strict ancestors (else); edges leaving the range
/// are ignored. O((range + edges) · range / 64) time, range² / 8 bytes.
inline std::vector<std::uint64_t> reach_in_range(const graph& g, std::size_t first, std::size_t last, bool descendants) {
  const std::size_t range = last - first + 1;
  const std::size_t words = (range + 63) / 64;
  std::vector<std::uint64_t> reach(range * words, 0);
  auto add = [&](std::size_t v, node_id u) {
    std::uint64_t* mine = &reach[(v - first) * words];
    mine[(u - first) / 64] |= std::uint64_t{1} << ((u - first) % 64);
    const std::uint64_t* theirs = &reach[(u - first) * words];
    for (std::size_t w = 0; w < words; ++w) mine[w] |= theirs[w];
  };
  if (descendants) {
    for (std::size_t v = last + 1; v-- > first;)
      for (node_id s : g.successors(v))
        if (s <= last) add(v, s);
  } else {
    for (std::size_t v = first; v <= last; ++v)
      for (node_id p : g.predecessors(v))
        if (p >= first) add(v, p);
  }
  return reach;
}

/// Adds to sums[v], for every v in [first, last], the weight of its strict
/// descendants with ids in [first, last] (edges leaving the range are
/// ignored). Reachability is propagated in reverse id order over blocks of
/// 4096 candidate descendants (memory O(range · 512 bytes)); a reachable
/// block's weight is summed with per-byte lookup tables, and words that are
/// empty or full cost one test. O((range + edges) · range / 64); ranges of
/// up to 512 nodes skip the tables.
template <class Weight>
void add_descendant_sums_in_range(const graph& g, Weight&& weight, std::size_t first, std::size_t last,
                                  std::vector<std::uint64_t>& sums) {
  const std::size_t range = last - first + 1;
  if (range <= 512) {
    // Small pieces (every node of a chain is one): plain bitsets, set bits
    // summed one by one, so no table is built per piece. O(range²).
    const std::size_t words = (range + 63) / 64;
    const std::vector<std::uint64_t> reach = reach_in_range(g, first, last, true);
    for (std::size_t v = first; v <= last; ++v) {
      const std::uint64_t* mine = &reach[(v - first) * words];
      for (std::size_t w = 0; w < words; ++w)
        for (std::uint64_t word = mine[w]; word != 0; word &= word - 1)
          sums[v] += weight(first + w * 64 + static_cast<std::size_t>(std::countr_zero(word)));
    }
    return;
  }
  constexpr std::size_t block_words = 64;
  constexpr std::size_t block = block_words * 64;
  std::vector<std::uint64_t> bits;
  std::vector<std::uint64_t> byte_sum(block_words * 8 * 256);  // [word][byte][pattern]
  std::vector<std::uint64_t> word_sum(block_words);
  for (std::size_t lo = first; lo <= last; lo += block) {
    const std::size_t hi = std::min(last + 1, lo + block);
    for (std::size_t w = 0; w < block_words; ++w) {
      word_sum[w] = 0;
      for (std::size_t b = 0; b < 8; ++b) {
        std::uint64_t* table = &byte_sum[(w * 8 + b) * 256];
        for (std::size_t pattern = 0; pattern < 256; ++pattern) {
          std::uint64_t total = 0;
          for (std::size_t k = 0; k < 8; ++k) {
            const std::size_t u = lo + w * 64 + b * 8 + k;
            if ((pattern >> k) & 1U && u < hi) total += weight(u);
          }
          table[pattern] = total;
        }
        word_sum[w] += table[255];
      }
    }
    bits.assign((hi - first) * block_words, 0);  // only ids below hi can reach [lo, hi)
    for (std::size_t v = hi; v-- > first;) {
      std::uint64_t* mine = &bits[(v - first) * block_words];
      for (node_id s : g.successors(v)) {
        if (s >= hi) continue;
        if (s >= lo) mine[(s - lo) / 64] |= std::uint64_t{1} << ((s - lo) % 64);
        const std::uint64_t* theirs = &bits[(s - first) * block_words];
        for (std::size_t w = 0; w < block_words; ++w) mine[w] |= theirs[w];
      }
      std::uint64_t total = 0;
      for (std::size_t w = 0; w < block_words; ++w) {
        const std::uint64_t word = mine[w];
        if (word == 0) continue;
        if (word == ~std::uint64_t{0}) {
          total += word_sum[w];
          continue;
        }
        for (std::size_t b = 0; b < 8; ++b)
          total += byte_sum[(w * 8 + b) * 256 + ((word >> (8 * b)) & 0xFFU)];
      }
      sums[v] += total;
    }
  }
}

}  // namespace detail

/// For every node, the sum of `weight(u)` over its strict descendants u, each
/// counted once. Series separators (decompose_series) do most of the work:
/// every computed node after a separator descends from every computed node
/// before it, so a computed node's sum is the descendants within its own
/// piece plus everything computed after the piece; only reachability inside a
/// piece needs bitsets. A graph input adds the nodes it reaches in the first
/// piece it feeds, walked directly. Complexity: O(Σ_pieces (p + e_p) · p / 64)
/// for pieces of p nodes and e_p edges, plus O(p) per input — linear on a
/// chain, O((n + m) · n / 64) when nothing separates.
template <class Weight>
std::vector<std::uint64_t> descendant_sums(const graph& g, Weight&& weight) {
  const std::size_t n = g.size();
  std::vector<std::uint64_t> sums(n, 0);
  const series_decomposition series = decompose_series(g);
  std::vector<std::uint64_t> computed_from(n + 1, 0);  // weight of computed nodes with id ≥ i
  for (std::size_t i = n; i-- > 0;) computed_from[i] = computed_from[i + 1] + (g.is_input(i) ? 0 : weight(i));
  for (std::size_t t = 0; t < series.pieces.size(); ++t) {
    const auto [first, last] = series.pieces[t];
    detail::add_descendant_sums_in_range(g, weight, first, last, sums);
    for (std::size_t v = first; v <= last; ++v)
      if (!g.is_input(v)) sums[v] += computed_from[last + 1];
  }
  std::vector<char> seen(n, 0);
  std::vector<node_id> stack;
  for (node_id x = 0; x < n; ++x) {
    if (!g.is_input(x) || g.successors(x).empty()) continue;
    sums[x] = 0;
    const std::uint32_t piece = series.piece_of[g.successors(x).front()];
    const node_id last = series.pieces[piece].last;
    std::vector<node_id> visited;
    for (node_id c : g.successors(x))
      if (c <= last && !seen[c]) {
        seen[c] = 1;
        stack.push_back(c);
      }
    while (!stack.empty()) {
      const node_id u = stack.back();
      stack.pop_back();
      visited.push_back(u);
      sums[x] += weight(u);
      for (node_id s : g.successors(u))
        if (s <= last && !seen[s]) {
          seen[s] = 1;
          stack.push_back(s);
        }
    }
    for (node_id u : visited) seen[u] = 0;
    sums[x] += computed_from[last + 1];
  }
  return sums;
}

namespace detail {

/// Pieces larger than this get no pending gradients (their bitsets would
/// take O(p²/8) bytes); the floor stays valid, only weaker there.
inline constexpr std::size_t max_pending_piece = 8192;

/// The network size (nodes plus edges, summed over the minimum cuts of
/// pending_gradients) past which the nodes left count only the ancestors'
/// part: bounds the work on wide pieces.
inline constexpr std::size_t max_pending_work = std::size_t{1} << 26;

/// Per node v, the least bytes of gradient buffers other than its operands',
/// and of parameter gradients other than its descendants', that any schedule
/// holds while v's backward runs. The backwards done by then form an upper
/// set B (a node's backward waits for its consumers') holding v's
/// descendants and none of its ancestors. Every node outside B with a
/// consumer in B holds its gradient buffer, which that consumer's backward
/// allocated, and every node of B its parameter gradient. Ancestors of v
/// with a consumer among v's descendants hold theirs whatever B is (a
/// block's input, whose skip connection's backward ran first). Which of the
/// other nodes, beside v (neither ancestors nor descendants: a parallel
/// branch), are done is a choice, and the cheapest one is a minimum cut: a
/// closure problem over `done` and `allocated` per node, linked by
/// implications. No edge jumps a separator, so the cut is taken over v's
/// piece and the separator before it; leaving out the rest only lowers the
/// minimum, and the floor stays a bound. Complexity: O(Σ_pieces p · (p +
/// e_p) / 64 + Σ_v Σ_{u ∈ anc(v)} deg u) for pieces of p nodes and e_p edges,
/// O(p²/32) bytes per piece, plus a maximum flow per node over the nodes
/// beside it (Dinic; none on chains and residual networks).
inline std::vector<std::uint64_t> pending_gradients(const graph& g) {
  const std::size_t n = g.size();
  std::vector<std::uint64_t> out(n, 0);
  const series_decomposition series = decompose_series(g);
  std::vector<char> operand(n, 0);
  std::vector<std::size_t> done_at(n, 0), allocated_at(n, 0);  // network node + 1; 0: none
  std::vector<node_id> beside;
  std::size_t work_left = max_pending_work;
  for (std::size_t t = 0; t < series.pieces.size(); ++t) {
    const node_id first = t > 0 ? series.pieces[t - 1].last : series.pieces[t].first;
    const node_id last = series.pieces[t].last;
    const std::size_t range = last - first + 1;
    if (range > max_pending_piece) continue;
    const std::size_t words = (range + 63) / 64;
    const std::vector<std::uint64_t> ancestors = reach_in_range(g, first, last, false);
    const std::vector<std::uint64_t> descendants = reach_in_range(g, first, last, true);
    for (std::size_t v = series.pieces[t].first; v <= last; ++v) {
      if (g.is_input(v)) continue;
      const std::uint64_t* anc = &ancestors[(v - first) * words];
      const std::uint64_t* desc = &descendants[(v - first) * words];
      auto in = [&](const std::uint64_t* set, node_id u) { return (set[(u - first) / 64] >> ((u - first) % 64)) & 1U; };
      auto done = [&](node_id c) { return c <= last && (c == v || in(desc, c)); };
      auto allocated = [&](node_id u) {
        const auto consumers = g.successors(u);
        return std::any_of(consumers.begin(), consumers.end(), done);
      };
      for (node_id p : g.predecessors(v)) operand[p] = 1;
      std::uint64_t forced = 0;
      for (std::size_t w = 0; w < words; ++w)
        for (std::uint64_t word = anc[w]; word != 0; word &= word - 1) {
          const node_id u = static_cast<node_id>(first + w * 64 + static_cast<std::size_t>(std::countr_zero(word)));
          if (!operand[u] && !g.is_input(u) && allocated(u)) forced += g.bytes(u);  // inputs have no gradient
        }
      beside.clear();
      std::size_t size = 0;
      for (std::size_t w = 0; w < words; ++w) {
        std::uint64_t word = ~(anc[w] | desc[w]);
        if (w + 1 == words && range % 64 != 0) word &= (std::uint64_t{1} << (range % 64)) - 1;
        for (; word != 0; word &= word - 1) {
          const node_id u = static_cast<node_id>(first + w * 64 + static_cast<std::size_t>(std::countr_zero(word)));
          if (u == v || g.is_input(u)) continue;
          beside.push_back(u);
          size += 2 + g.successors(u).size() + g.predecessors(u).size();
        }
      }
      out[v] = forced;
      if (beside.empty() || size > work_left) {
        for (node_id p : g.predecessors(v)) operand[p] = 0;
        continue;
      }
      work_left -= size;
      // Minimise Σ bytes(u)·(allocated(u) − done(u)) + params(u)·done(u)
      // over the nodes beside v (and allocated(u) for ancestors not yet
      // counted), subject to done(u) ⇒ done(c) and done(c) ⇒ allocated(u)
      // for each consumer c, done(u) ⇒ allocated(u). Source side: 1.
      closure_network closure;
      flow_network& net = closure.net;
      auto bytes = [&](node_id u) { return static_cast<std::int64_t>(g.bytes(u)); };
      for (node_id u : beside) done_at[u] = net.add_node() + 1;
      auto allocated_node = [&](node_id u) {
        if (allocated_at[u] == 0) {
          allocated_at[u] = net.add_node() + 1;
          closure.weigh(allocated_at[u] - 1, bytes(u));
        }
        return allocated_at[u] - 1;
      };
      for (node_id u : beside) {
        const std::size_t x = done_at[u] - 1;
        const bool surely_allocated = allocated(u);
        closure.weigh(x, static_cast<std::int64_t>(g.params(u)) - bytes(u));
        if (surely_allocated) closure.constant += bytes(u);
        else net.add_edge(x, allocated_node(u), unbounded_capacity);
        for (node_id c : g.successors(u))
          if (c <= last && done_at[c] != 0) {
            net.add_edge(x, done_at[c] - 1, unbounded_capacity);
            if (!surely_allocated) net.add_edge(done_at[c] - 1, allocated_node(u), unbounded_capacity);
          }
        for (node_id p : g.predecessors(u))
          if (p >= first && in(anc, p) && !operand[p] && !g.is_input(p) && !allocated(p))
            net.add_edge(x, allocated_node(p), unbounded_capacity);
      }
      out[v] += static_cast<std::uint64_t>(closure.least());
      for (node_id u : beside) {
        done_at[u] = allocated_at[u] = 0;
        for (node_id p : g.predecessors(u)) allocated_at[p] = 0;
      }
      for (node_id p : g.predecessors(v)) operand[p] = 0;
    }
  }
  return out;
}

}  // namespace detail

/// The per-op floor: the memory some single step needs under any schedule.
struct op_floor {
  std::uint64_t bytes = 0;              ///< no schedule's peak is below this
  node_id node = 0;                     ///< the op that sets it
  bool backward = false;                ///< in its backward (else its forward)
  /// Gradients beside v's own, its operands' and its descendants' that every
  /// schedule holds at that step, at least (other values' gradient buffers,
  /// other nodes' parameter gradients: pending_gradients)
  std::uint64_t pending_gradients = 0;
};

/// What every schedule holds at each node's backward, above the resident
/// bytes (see per_op_floor), in two parts: `operand_values`, the values of
/// v's operands its backward reads, and `beside_operands`, the rest
/// (parameter, output and operand gradients, pending gradients, the backward
/// workspace and v's own output when its backward reads it). A caller that
/// counts kept values of earlier nodes adds only the second part.
struct backward_floor {
  std::vector<std::uint64_t> beside_operands;
  std::vector<std::uint64_t> operand_values;
  std::vector<std::uint64_t> pending;  ///< the part of `beside_operands` that pending_gradients holds
};

/// Complexity: that of descendant_sums plus pending_gradients'.
inline backward_floor backward_floors(const graph& g) {
  const auto later_params = descendant_sums(g, [&](std::size_t u) { return g.params(u); });
  backward_floor out;
  out.pending = detail::pending_gradients(g);
  const std::vector<std::uint64_t>& pending = out.pending;
  out.beside_operands.assign(g.size(), 0);
  out.operand_values.assign(g.size(), 0);
  for (node_id v = 0; v < g.size(); ++v) {
    if (g.is_input(v)) continue;
    std::uint64_t held = later_params[v] + g.params(v) + g.bytes(v) + g.backward_workspace(v) + pending[v];
    if (reads_output(g.reads(v))) held += g.bytes(v);
    for (node_id p : g.predecessors(v)) {
      if (g.is_input(p)) continue;
      held += g.bytes(p);  // its gradient buffer
      if (reads_inputs(g.reads(v))) out.operand_values[v] += g.bytes(p);
    }
    out.beside_operands[v] = held;
  }
  return out;
}

/// Computes the per-op floor. Every schedule runs each node's forward at least
/// once (operands, output and workspace alive, parameters and inputs resident)
/// and its backward once, after the backwards of all its descendants, whose
/// parameter gradients then exist; that step also holds v's own parameter
/// gradient, v's output gradient, the values v's backward reads, a gradient
/// buffer per operand, the backward workspace, and the least of the other
/// gradients that any order of the backwards leaves pending there
/// (pending_gradients: a block's input, whose skip connection's backward
/// already ran, during the block's backward; a parallel branch's gradient,
/// or its parameter gradients once its backward ran). The floor is the
/// largest of these over all nodes.
/// `at_backward` is backward_floors(g), for callers that have it already.
/// Complexity: O(n + m).
inline op_floor per_op_floor(const graph& g, const backward_floor& at_backward) {
  const std::uint64_t resident = g.param_bytes() + g.input_bytes();
  op_floor best;
  best.bytes = resident;  // what every step holds, even when nothing is computed
  for (node_id v = 0; v < g.size(); ++v) {
    if (g.is_input(v)) continue;
    std::uint64_t forward = resident + g.bytes(v) + g.workspace(v);
    for (node_id p : g.predecessors(v))
      if (!g.is_input(p)) forward += g.bytes(p);
    const std::uint64_t backward = resident + at_backward.beside_operands[v] + at_backward.operand_values[v];
    if (forward > best.bytes) best = {forward, v, false, 0};
    if (backward > best.bytes) best = {backward, v, true, at_backward.pending[v]};
  }
  return best;
}

/// Complexity: that of backward_floors.
inline op_floor per_op_floor(const graph& g) { return per_op_floor(g, backward_floors(g)); }

}  // namespace remat
