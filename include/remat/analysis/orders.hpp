#pragma once

/// \file
/// Execution orders: which topological order a plan runs the nodes of each
/// stage in, and a graph renumbered to follow one.
///
/// A stage plan fixes which nodes each stage computes, keeps and recomputes;
/// the order they run in within a stage still moves the peak, because it
/// decides how long each value and each gradient buffer lives. The graph's id
/// order (how it was written down) is one choice. consumers_first_order is
/// another: after a value that several nodes read, it runs each reader's
/// chain at once until the chain's output is smaller than that value, so the
/// large value dies early, and a stage boundary placed there keeps the smaller
/// outputs instead (a NAS cell's large output read by chains that shrink
/// it). fewest_gradients_order and last_written_first_order are others.
/// docs/results-solvers.md has what they change on the zoo; no order is
/// better on every graph.
///
/// Every solver works in the graph's id order. To solve in another order, run
/// it on reorder_graph(g, order), whose ids follow that order, and map the
/// plan back (solvers/orders.hpp does this).

#include <remat/config.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <queue>
#include <span>
#include <string_view>
#include <vector>

#include <remat/analysis/lower_sets.hpp>
#include <remat/graph/graph.hpp>
#include <remat/plan/schedule.hpp>

namespace remat {

/// Which execution order a solver's plan runs its nodes in.
enum class order_choice {
  graph,            ///< the graph's id order
  consumers_first,  ///< consumers_first_order: a value's readers run right after it until they shrink it
  best,             ///< both, keeping the better plan (solve: `exact` only; see solve_options::order)
  /// `best` where the graph has more lower sets than the exact programme's cap
  /// (its plan then comes from the fallbacks, which cost far less than it),
  /// else `graph`
  automatic,
};

inline constexpr std::string_view to_string(order_choice o) noexcept {
  switch (o) {
    case order_choice::graph: return "graph";
    case order_choice::consumers_first: return "consumers-first";
    case order_choice::best: return "best";
    case order_choice::automatic: return "auto";
  }
  return "?";
}

inline std::optional<order_choice> parse_order_choice(std::string_view name) noexcept {
  for (order_choice o :
       {order_choice::graph, order_choice::consumers_first, order_choice::best, order_choice::automatic})
    if (to_string(o) == name) return o;
  return std::nullopt;
}

/// Kahn's algorithm over g's edges and `constraints` (so the order keeps the
/// gradient-order constraints when given them), taking the smallest ready id,
/// except after a computed node v that two or more nodes read: then each of
/// v's readers in id order starts a chain that runs next, as long as the ready
/// nodes allow. A chain follows nodes with one computed operand (the node
/// before it) and one consumer, and ends at the first node whose output is
/// smaller than v's (a reader whose chain never gets smaller is not pulled).
/// Chains pulled later run first, so pulls nest depth first. Deterministic.
/// Complexity: O((n + m) log n).
inline std::vector<node_id> consumers_first_order(const graph& g, const precedence& constraints = {}) {
  const std::size_t n = g.size();
  std::vector<std::size_t> waiting(n, 0);
  for (std::size_t v = 0; v < n; ++v)
    waiting[v] = g.predecessors(v).size() + (constraints.empty() ? 0 : constraints.before[v].size());
  std::priority_queue<node_id, std::vector<node_id>, std::greater<>> ready;
  std::vector<char> is_ready(n, 0), placed(n, 0);
  for (std::size_t v = 0; v < n; ++v)
    if (waiting[v] == 0) {
      ready.push(static_cast<node_id>(v));
      is_ready[v] = 1;
    }
  auto computed_operands = [&](node_id v) {
    std::size_t count = 0;
    for (node_id p : g.predecessors(v)) count += g.is_input(p) ? 0 : 1;
    return count;
  };
  std::deque<node_id> pulled;  // chains to run next, front first
  std::vector<node_id> order, chain, chains;
  order.reserve(n);
  while (order.size() < n) {
    node_id v = 0;
    while (!pulled.empty() && !is_ready[pulled.front()]) pulled.pop_front();  // blocked: its chain waits its turn
    if (!pulled.empty()) {
      v = pulled.front();
      pulled.pop_front();
    } else {
      while (!ready.empty() && placed[ready.top()]) ready.pop();  // already run from a chain
      REMAT_ASSERT(!ready.empty());  // the edges and the constraints (id-ascending) form no cycle
      v = ready.top();
      ready.pop();
    }
    placed[v] = 1;
    is_ready[v] = 0;
    order.push_back(v);
    auto release = [&](node_id s) {
      if (--waiting[s] == 0) {
        ready.push(s);
        is_ready[s] = 1;
      }
    };
    for (node_id s : g.successors(v)) release(s);
    if (!constraints.empty())
      for (node_id s : constraints.after[v]) release(s);
    if (g.is_input(v) || g.successors(v).size() < 2) continue;
    chains.clear();
    for (node_id reader : g.successors(v)) {
      chain.clear();
      for (node_id c = reader; computed_operands(c) == 1;) {
        chain.push_back(c);
        if (g.bytes(c) < g.bytes(v) || g.successors(c).size() != 1) break;
        c = g.successors(c).front();
      }
      if (!chain.empty() && g.bytes(chain.back()) < g.bytes(v)) chains.insert(chains.end(), chain.begin(), chain.end());
    }
    pulled.insert(pulled.begin(), chains.begin(), chains.end());
  }
  return order;
}

/// Kahn's algorithm over g's edges and `constraints`, taking the largest
/// ready id: of the nodes ready, the one written last runs first. Where ids
/// follow the order a network is written in, a reader written long after the
/// value it reads runs right after that value, and its backward right before
/// the value's: a U-Net's skip crop, written with the decoder, then holds its
/// own gradient through the encoder's backward rather than the gradient of the
/// larger value it crops. Deterministic. Complexity: O((n + m) log n).
inline std::vector<node_id> last_written_first_order(const graph& g, const precedence& constraints = {}) {
  const std::size_t n = g.size();
  std::vector<std::size_t> waiting(n, 0);
  std::priority_queue<node_id> ready;
  for (std::size_t v = 0; v < n; ++v) {
    waiting[v] = g.predecessors(v).size() + (constraints.empty() ? 0 : constraints.before[v].size());
    if (waiting[v] == 0) ready.push(static_cast<node_id>(v));
  }
  std::vector<node_id> order;
  order.reserve(n);
  auto release = [&](node_id s) {
    if (--waiting[s] == 0) ready.push(s);
  };
  while (!ready.empty()) {
    const node_id v = ready.top();
    ready.pop();
    order.push_back(v);
    for (node_id s : g.successors(v)) release(s);
    if (!constraints.empty())
      for (node_id s : constraints.after[v]) release(s);
  }
  REMAT_ASSERT(order.size() == n);  // the edges and the constraints (id-ascending) form no cycle
  return order;
}

/// The reverse of a backward order built greedily to hold few gradient
/// bytes. Kahn's algorithm from the sinks over g's edges and `constraints`
/// takes next, of the nodes whose consumers' backwards have all run, the one
/// whose backward adds the fewest bytes of gradients (the buffers it creates
/// for computed operands that have none, less its own gradient, which it
/// ends), the largest id on a tie. Gradient buffers are what every plan
/// holds at its backwards whatever it recomputes, and on layered graphs,
/// where many values wait for several consumers' backwards, the graph's
/// order can hold a few more of them at once (docs/results-solvers.md,
/// "Single-level schedules of one order, by MILP"). Deterministic.
/// Complexity: O((n + m) log n + Σ_v indegree(v)²): a node's figure is
/// recounted each time one of its operands gains a buffer.
inline std::vector<node_id> fewest_gradients_order(const graph& g, const precedence& constraints = {}) {
  const std::size_t n = g.size();
  std::vector<std::size_t> waiting(n, 0);  // consumers (and constrained later nodes) not yet run backward
  std::vector<char> buffered(n, 0), placed(n, 0);
  auto added = [&](node_id v) {
    std::int64_t bytes = buffered[v] ? -static_cast<std::int64_t>(g.bytes(v)) : 0;
    for (node_id p : g.predecessors(v))
      if (!g.is_input(p) && !buffered[p]) bytes += static_cast<std::int64_t>(g.bytes(p));
    return bytes;
  };
  // Fewest bytes first, then the largest id. A node's figure only falls (its
  // operands gain buffers), and each fall pushes a fresh entry, so an entry
  // whose figure is stale is skipped.
  using entry = std::pair<std::int64_t, node_id>;
  auto later = [](const entry& a, const entry& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; };
  std::priority_queue<entry, std::vector<entry>, decltype(later)> ready(later);
  for (std::size_t v = 0; v < n; ++v) {
    waiting[v] = g.successors(v).size() + (constraints.empty() ? 0 : constraints.after[v].size());
    if (waiting[v] == 0) ready.emplace(added(static_cast<node_id>(v)), static_cast<node_id>(v));
  }
  auto release = [&](node_id u) {
    if (--waiting[u] == 0) ready.emplace(added(u), u);
  };
  std::vector<node_id> backward;
  backward.reserve(n);
  while (!ready.empty()) {
    const auto [bytes, v] = ready.top();
    ready.pop();
    if (placed[v] || bytes != added(v)) continue;
    placed[v] = 1;
    backward.push_back(v);
    for (node_id p : g.predecessors(v)) {
      if (g.is_input(p) || buffered[p]) continue;
      buffered[p] = 1;
      for (node_id s : g.successors(p))
        if (waiting[s] == 0 && !placed[s]) ready.emplace(added(s), s);
    }
    for (node_id p : g.predecessors(v)) release(p);
    if (!constraints.empty())
      for (node_id u : constraints.before[v]) release(u);
  }
  REMAT_ASSERT(backward.size() == n);  // the edges and the constraints (id-ascending) form no cycle
  return {backward.rbegin(), backward.rend()};
}

/// True when `order` is g's id order (or empty, which means the same).
inline bool is_id_order(std::span<const node_id> order) noexcept {
  for (std::size_t i = 0; i < order.size(); ++i)
    if (order[i] != i) return false;
  return true;
}

/// g with node k of the result being node order[k] of g: same names, ops,
/// sizes, times, reads, attributes and operands (in call order). A plan of the
/// result is a plan of g run in `order` once its node ids are mapped back
/// through `order`. \throws remat::error naming the node when `order` is not a
/// topological order of all of g's nodes. Complexity: O((n + m) log n).
inline graph reorder_graph(const graph& g, std::span<const node_id> order) {
  const std::vector<std::uint32_t> position = detail::execution_positions(g, order);
  graph_builder b(g.name());
  for (std::size_t k = 0; k < g.size(); ++k) {
    const node_id v = order.empty() ? static_cast<node_id>(k) : order[k];
    node_spec s = node_spec_of(g, v);
    for (node_id p : g.inputs(v)) s.inputs.push_back(position[p]);
    b.add(std::move(s));
  }
  return std::move(b).build();
}

}  // namespace remat
