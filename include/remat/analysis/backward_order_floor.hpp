#pragma once

/// \file
/// The backward-order floor: a lower bound on the peak of every schedule
/// that prices the backward steps of one whole backward order at once, where
/// the per-op floor (bounds.hpp) lets each backward pick its own.
///
/// While v's backward runs, the backwards done form an upper set B (a
/// backward waits for its consumers'). Every schedule then holds, besides the
/// resident bytes: the parameter gradients of B and of v, v's output gradient
/// (or its seed), a gradient buffer for each operand of v, the gradient of
/// every other node outside B with a consumer in B, the values v's backward
/// reads and its workspace. The per-op floor takes, for each v, the B that
/// holds least. A schedule runs every backward in one order, so its done sets
/// are one chain ∅ ⊂ B₁ ⊂ … ⊂ V: the least over such chains of the largest
/// step along it is a bound too, never below a backward step of the per-op
/// floor. On a NAS cell
/// the cheapest done set of one branch's backward leaves another branch
/// pending, and no order gives every backward its own cheapest.
///
/// It is a bottleneck shortest path over the upper sets of done backwards,
/// searched cheapest first. A search stopped at its work limit still gives a
/// bound: every chain passes a state not yet settled, priced at least as the
/// state being expanded (`complete` false). Deterministic: the limit counts
/// work, not time.
///
/// Complexity: O(S · (n + r · n / 64)) for S upper sets reached, r backwards
/// ready in each, every set stored as two bitsets of n bits. S is exponential
/// in the graph's width (two branches of a and b nodes give (a + 1)(b + 1)),
/// so on wide graphs the work limit stops it early and the other floors stand.

#include <remat/config.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <remat/graph/graph.hpp>

namespace remat {

/// Work before the backward-order floor stops with the state it is
/// expanding as its bound: a unit per node scanned for ready backwards, and
/// 64 plus 4 per bitset word for each upper set stored (hashed, kept,
/// queued). Enough to complete on one NASNet or AmoebaNet cell, and a small
/// share of a solve where whole NAS networks or wide graphs stop it early
/// (measured in docs/results-solvers.md, "The backward-order floor").
inline constexpr std::uint64_t backward_order_floor_work = std::uint64_t{1} << 24;

/// The backward-order floor of a graph.
struct backward_order_floor {
  std::uint64_t bytes = 0;  ///< no schedule's peak is below this
  node_id node = 0;         ///< the backward at the largest step of the best order (when complete)
  bool complete = false;    ///< every order priced; else the work limit stopped the search and `bytes` is where it stood
  std::size_t states = 0;   ///< upper sets reached
  std::uint64_t work = 0;   ///< work units spent (see backward_order_floor_work)
};

namespace detail {

// A set of nodes as n bits, hashed for the table of states.
struct node_bits_hash {
  std::size_t operator()(const std::vector<std::uint64_t>& bits) const noexcept {
    std::uint64_t h = 0x9E3779B97F4A7C15ULL;
    for (std::uint64_t w : bits) h = (h ^ w) * 0xBF58476D1CE4E5B9ULL + (h >> 29);
    return static_cast<std::size_t>(h);
  }
};

}  // namespace detail

/// What the floor says, for messages: with the backward at the best order's
/// largest step when the search completed.
inline std::string describe_order_floor(const graph& g, const backward_order_floor& floor) {
  std::string out = "every order of the backwards has a step this large";
  if (floor.complete) out += "; the best at the backward of '" + g.node_name(floor.node) + "'";
  return out;
}

/// Computes the backward-order floor of g within `max_work` work units.
/// Complexity: see the file comment.
inline backward_order_floor backward_order_floor_of(const graph& g,
                                                    std::uint64_t max_work = backward_order_floor_work) {
  const std::size_t n = g.size();
  const std::size_t words = (n + 63) / 64;
  const std::uint64_t resident = g.param_bytes() + g.input_bytes();
  auto has = [](const std::uint64_t* bits, node_id u) { return (bits[u / 64] >> (u % 64)) & 1U; };

  // What v's backward holds beyond the done set's gradients: its parameter
  // gradient, the values it reads, its workspace, and its seed when nothing
  // consumes it.
  std::vector<std::uint64_t> own(n, 0);
  std::size_t computed = 0;
  for (node_id v = 0; v < n; ++v) {
    if (g.is_input(v)) continue;
    ++computed;
    own[v] = g.params(v) + g.backward_workspace(v) + (g.successors(v).empty() ? g.bytes(v) : 0);
    if (reads_output(g.reads(v))) own[v] += g.bytes(v);
    if (reads_inputs(g.reads(v)))
      for (node_id p : g.predecessors(v))
        if (!g.is_input(p)) own[v] += g.bytes(p);
  }

  // A state: the done set, the nodes with a gradient buffer (outside it,
  // with a consumer in it), and their bytes with the done parameter gradients.
  struct state {
    std::uint64_t cost;      // the least largest step of a chain reaching it
    std::uint64_t held;      // gradient buffers and parameter gradients between backwards
    std::size_t done_count;
    node_id last;            // the backward that reached it at `cost`'s label
    std::size_t from;        // the state it came from
  };
  std::vector<std::uint64_t> done_bits, pending_bits;  // state i at [i · words, (i + 1) · words)
  std::vector<state> states;
  std::unordered_map<std::vector<std::uint64_t>, std::size_t, detail::node_bits_hash> index;
  using entry = std::pair<std::uint64_t, std::size_t>;
  std::priority_queue<entry, std::vector<entry>, std::greater<>> open;
  std::vector<char> settled;

  backward_order_floor out;
  auto add_state = [&](const std::vector<std::uint64_t>& done, const std::vector<std::uint64_t>& pending,
                       const state& s) {
    const auto [it, fresh] = index.try_emplace(done, states.size());
    if (fresh) {
      done_bits.insert(done_bits.end(), done.begin(), done.end());
      pending_bits.insert(pending_bits.end(), pending.begin(), pending.end());
      states.push_back(s);
      settled.push_back(0);
      out.states = states.size();
      out.work += 64 + 4 * words;
    } else if (settled[it->second] || states[it->second].cost <= s.cost) {
      return;
    } else {
      states[it->second] = s;
    }
    open.emplace(s.cost, it->second);
  };
  const std::vector<std::uint64_t> none(words, 0);
  add_state(none, none, {0, 0, 0, 0, 0});

  std::vector<std::uint64_t> done(words), pending(words), done_now(words), pending_now(words);
  while (!open.empty()) {
    const auto [cost, i] = open.top();
    open.pop();
    if (settled[i] || cost != states[i].cost) continue;
    settled[i] = 1;
    out.bytes = cost;
    out.work += n;
    if (states[i].done_count == computed) {
      // The best chain's largest step is where its label last rose.
      std::size_t at = i;
      while (at != 0 && states[states[at].from].cost == cost) at = states[at].from;
      out.complete = true;
      out.node = states[at].last;
      return out;
    }
    // Copies: new states may move the bitsets.
    std::copy(done_bits.begin() + i * words, done_bits.begin() + (i + 1) * words, done_now.begin());
    std::copy(pending_bits.begin() + i * words, pending_bits.begin() + (i + 1) * words, pending_now.begin());
    const std::uint64_t* done_i = done_now.data();
    const std::uint64_t* pending_i = pending_now.data();
    const state from = states[i];
    // A backward is ready when its consumers are all done: a pending node
    // whose consumers are, or a node nothing consumes.
    for (node_id v = 0; v < n; ++v) {
      if (g.is_input(v) || has(done_i, v)) continue;
      if (!g.successors(v).empty() && !has(pending_i, v)) continue;
      bool ready = true;
      for (node_id c : g.successors(v)) ready = ready && has(done_i, c);
      if (!ready) continue;
      std::uint64_t fresh_buffers = 0;
      for (node_id p : g.predecessors(v))
        if (!g.is_input(p) && !has(pending_i, p)) fresh_buffers += g.bytes(p);
      const std::uint64_t step = resident + from.held + fresh_buffers + own[v];
      std::copy(done_i, done_i + words, done.begin());
      std::copy(pending_i, pending_i + words, pending.begin());
      done[v / 64] |= std::uint64_t{1} << (v % 64);
      pending[v / 64] &= ~(std::uint64_t{1} << (v % 64));
      for (node_id p : g.predecessors(v))
        if (!g.is_input(p)) pending[p / 64] |= std::uint64_t{1} << (p % 64);
      const std::uint64_t held = from.held + fresh_buffers + g.params(v) - (has(pending_i, v) ? g.bytes(v) : 0);
      add_state(done, pending, {std::max(cost, step), held, from.done_count + 1, v, i});
      if (out.work > max_work) return out;  // `cost` still bounds: see the file comment
    }
  }
  return out;  // unreachable on a graph: the full set is an upper set
}

}  // namespace remat
