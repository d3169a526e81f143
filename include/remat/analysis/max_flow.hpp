#pragma once

/// \file
/// Maximum flow and minimum s–t cut on a small directed flow network: the
/// primitive behind the `mincut` plans (solvers/mincut.hpp) and any other solver
/// that needs a cheapest separator. A cut of vertices is an edge cut of the
/// node-split network: v becomes v_in → v_out, that edge carries v's weight
/// and every other edge is unbounded.
///
/// Algorithm: Dinic's blocking flows (BFS levels, then augmenting paths found
/// depth first along level edges, with a per-node edge cursor). Complexity
/// O(V²·E) in general, O(E·√V) on unit-capacity networks; the searches are
/// iterative, so a 10⁶-node chain does not touch the call stack.

#include <remat/config.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include <remat/error.hpp>

namespace remat {

namespace detail {
struct min_cut_search;
}

using capacity = std::uint64_t;

/// An edge no cut may use (a precedence, a "must be on this side").
inline constexpr capacity unbounded_capacity = std::numeric_limits<capacity>::max();

/// A directed network with capacities on edges. Node ids are dense from 0;
/// every edge gets a residual twin, so edge ids are stable and even.
class flow_network {
 public:
  explicit flow_network(std::size_t nodes = 0) : first_(nodes, none) {}

  std::size_t num_nodes() const noexcept { return first_.size(); }
  /// Edges added by add_edge (residual twins are not counted).
  std::size_t num_edges() const noexcept { return to_.size() / 2; }

  std::size_t add_node() {
    first_.push_back(none);
    return first_.size() - 1;
  }

  /// Adds from → to with capacity `cap` (unbounded_capacity: never cut) and
  /// returns its id for flow_of / the cut. \throws remat::error for an
  /// endpoint that is not a node.
  std::size_t add_edge(std::size_t from, std::size_t to, capacity cap) {
    if (from >= num_nodes() || to >= num_nodes())
      throw error("flow_network::add_edge: endpoint " + std::to_string(std::max(from, to)) +
                  " is not a node (the network has " + std::to_string(num_nodes()) + ")");
    const std::size_t id = to_.size() / 2;
    push(from, to, cap);
    push(to, from, 0);
    return id;
  }

  std::size_t edge_from(std::size_t edge) const noexcept { return to_[2 * edge + 1]; }
  std::size_t edge_to(std::size_t edge) const noexcept { return to_[2 * edge]; }
  capacity edge_capacity(std::size_t edge) const noexcept { return cap_[2 * edge]; }

 private:
  friend struct detail::min_cut_search;
  static constexpr std::size_t none = std::numeric_limits<std::size_t>::max();

  void push(std::size_t from, std::size_t to, capacity cap) {
    to_.push_back(to);
    cap_.push_back(cap);
    next_.push_back(first_[from]);
    first_[from] = to_.size() - 1;
  }

  // Arc k (2·edge for the edge, 2·edge + 1 for its twin) goes to to_[k]; the
  // arcs leaving a node form a list through first_ and next_.
  std::vector<std::size_t> first_, next_, to_;
  std::vector<capacity> cap_;
};

/// A maximum flow and the minimum cut it certifies.
struct min_cut_result {
  /// The flow value, which equals the cut's capacity; unbounded_capacity when
  /// every source–sink cut crosses an unbounded edge (then nothing else is set).
  capacity value = 0;
  bool bounded() const noexcept { return value != unbounded_capacity; }
  /// Nodes on the source side: reachable from the source in the residual
  /// network. This is the cut closest to the source among all minimum cuts.
  std::vector<char> source_side;
  /// Flow on each edge, by edge id.
  std::vector<capacity> flow;
  /// Ids of the edges from the source side to the sink side (all saturated).
  std::vector<std::size_t> cut_edges;
};

namespace detail {

struct min_cut_search {
  const flow_network& net;
  std::vector<capacity> residual;
  std::vector<std::size_t> level, cursor;

  explicit min_cut_search(const flow_network& n) : net(n), residual(n.cap_) {}

  bool build_levels(std::size_t s, std::size_t t) {
    level.assign(net.num_nodes(), flow_network::none);
    std::vector<std::size_t> queue{s};
    level[s] = 0;
    for (std::size_t head = 0; head < queue.size(); ++head) {
      const std::size_t u = queue[head];
      for (std::size_t a = net.first_[u]; a != flow_network::none; a = net.next_[a])
        if (residual[a] > 0 && level[net.to_[a]] == flow_network::none) {
          level[net.to_[a]] = level[u] + 1;
          queue.push_back(net.to_[a]);
        }
    }
    return level[t] != flow_network::none;
  }

  // One augmenting path along level edges, found depth first without
  // recursion; dead ends advance the node's cursor for good. Returns the
  // amount pushed (0 when the level graph is blocked).
  capacity augment(std::size_t s, std::size_t t) {
    std::vector<std::size_t> path;  // arcs from s
    std::size_t u = s;
    while (true) {
      if (u == t) {
        capacity push = unbounded_capacity;
        for (std::size_t a : path) push = std::min(push, residual[a]);
        if (push == unbounded_capacity) return push;  // an all-unbounded path: no finite cut
        for (std::size_t a : path) {
          if (residual[a] != unbounded_capacity) residual[a] -= push;
          if (residual[a ^ 1] != unbounded_capacity) residual[a ^ 1] += push;
        }
        return push;
      }
      std::size_t& a = cursor[u];
      while (a != flow_network::none &&
             !(residual[a] > 0 && level[net.to_[a]] == level[u] + 1))
        a = net.next_[a];
      if (a != flow_network::none) {
        path.push_back(a);
        u = net.to_[a];
        continue;
      }
      if (path.empty()) return 0;
      level[u] = flow_network::none;  // dead end: never enter it again this phase
      path.pop_back();
      u = path.empty() ? s : net.to_[path.back()];
      cursor[u] = net.next_[cursor[u]];
    }
  }

  min_cut_result run(std::size_t s, std::size_t t) {
    min_cut_result result;
    capacity total = 0;
    while (build_levels(s, t)) {
      cursor = net.first_;
      while (const capacity pushed = augment(s, t)) {
        if (pushed == unbounded_capacity || total > unbounded_capacity - 1 - pushed) {
          result.value = unbounded_capacity;
          return result;
        }
        total += pushed;
      }
    }
    result.value = total;
    result.source_side.assign(net.num_nodes(), 0);
    std::vector<std::size_t> queue{s};
    result.source_side[s] = 1;
    for (std::size_t head = 0; head < queue.size(); ++head)
      for (std::size_t a = net.first_[queue[head]]; a != flow_network::none; a = net.next_[a])
        if (residual[a] > 0 && !result.source_side[net.to_[a]]) {
          result.source_side[net.to_[a]] = 1;
          queue.push_back(net.to_[a]);
        }
    result.flow.resize(net.num_edges());
    for (std::size_t e = 0; e < net.num_edges(); ++e) {
      const capacity cap = net.edge_capacity(e);
      result.flow[e] = cap == unbounded_capacity ? residual[2 * e + 1] : cap - residual[2 * e];
      if (result.source_side[net.edge_from(e)] && !result.source_side[net.edge_to(e)]) result.cut_edges.push_back(e);
    }
    return result;
  }
};

}  // namespace detail

/// Maximum flow from `source` to `sink` and the minimum cut closest to the
/// source. \throws remat::error when source or sink is not a node or they
/// are the same node. O(V²·E) (Dinic).
inline min_cut_result min_cut(const flow_network& net, std::size_t source, std::size_t sink) {
  if (source >= net.num_nodes() || sink >= net.num_nodes())
    throw error("min_cut: source or sink is not a node of the network");
  if (source == sink) throw error("min_cut: source and sink are the same node");
  return detail::min_cut_search(net).run(source, sink);
}

/// A least-weight closure as a minimum cut (Picard): choose nodes of `net`,
/// where an unbounded edge x → y means "x chosen ⇒ y chosen", an unbounded
/// edge from `source` "chosen" and to `sink` "not chosen", minimising the
/// weights of the chosen nodes plus `constant`. Chosen nodes end on the
/// source side. The per-op floor's pending gradients and the cut floor's
/// gradients held between two backwards are such problems.
struct closure_network {
  static constexpr std::size_t source = 0, sink = 1;
  flow_network net = flow_network(2);
  std::int64_t constant = 0;

  /// Adds `w` (of either sign) to the objective when `node` is chosen.
  void weigh(std::size_t node, std::int64_t w) {
    if (w > 0) net.add_edge(node, sink, static_cast<capacity>(w));
    if (w < 0) {
      constant += w;
      net.add_edge(source, node, static_cast<capacity>(-w));
    }
  }
  /// The least objective over closed choices.
  std::int64_t least() const { return static_cast<std::int64_t>(min_cut(net, source, sink).value) + constant; }
};

}  // namespace remat
