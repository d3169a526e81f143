#pragma once

/// \file
/// remat::make_graph: a validated remat::graph from any graph type modelling
/// remat::dag (graph/concepts.hpp) and any remat::cost_model — the adapter's
/// entry point (docs/adapting-your-graph.md).

#include <remat/config.hpp>

#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <remat/error.hpp>
#include <remat/graph/concepts.hpp>
#include <remat/graph/costs.hpp>
#include <remat/graph/graph.hpp>

namespace remat {

namespace detail {

template <class C>
concept has_params = requires(const C& c, std::size_t v) { c.params(v); };
template <class C>
concept has_workspace = requires(const C& c, std::size_t v) { c.workspace(v); };
template <class C>
concept has_backward_workspace = requires(const C& c, std::size_t v) { c.backward_workspace(v); };
template <class C>
concept has_backward_time = requires(const C& c, std::size_t v) { c.backward_time(v); };
template <class C>
concept has_reads = requires(const C& c, std::size_t v) {
  { c.reads(v) } -> std::convertible_to<backward_reads>;
};
template <class C>
concept has_name = requires(const C& c, std::size_t v) { std::string(c.name(v)); };
template <class C>
concept has_op = requires(const C& c, std::size_t v) { std::string(c.op(v)); };

template <std::integral T>
constexpr bool id_in_range(T id, std::size_t n) noexcept {
  if constexpr (std::is_signed_v<T>)
    if (id < 0) return false;
  return static_cast<std::uint64_t>(id) < n;
}

// Sizes arrive in whatever type the cost model uses; reject what is not a
// non-negative whole number of bytes instead of wrapping it.
template <class T>
std::uint64_t to_bytes(T value, const char* what, const std::string& node) {
  if constexpr (std::is_floating_point_v<T>) {
    if (!(value >= 0) || value != std::floor(value) || value >= 18446744073709551616.0)
      throw invalid_graph("node '" + node + "': " + what + " must be a whole number of bytes in [0, 2^64)",
                          node);
    return static_cast<std::uint64_t>(value);
  } else {
    if constexpr (std::is_signed_v<T>)
      if (value < 0)
        throw invalid_graph("node '" + node + "': " + what + " is negative (" +
                                std::to_string(value) + ")",
                            node);
    return static_cast<std::uint64_t>(value);
  }
}

}  // namespace detail

/// Options for make_graph.
struct make_graph_options {
  std::string name;  ///< the graph's name
};

/// Snapshots any graph type and its costs into a validated remat::graph.
/// Node i of `g` keeps its index as `original_index`; ids are renumbered
/// topologically when needed. Operand order is taken from
/// `remat::predecessors(g, v)` when the graph provides it, else ascending id.
/// \throws invalid_graph (a cycle, an out-of-range successor, a negative or
/// overflowing size, no nodes). Complexity: O((n + m) log n).
template <dag G, cost_model C>
graph make_graph(const G& g, const C& costs, const make_graph_options& options = {}) {
  const std::size_t n = remat::num_nodes(g);
  graph_builder builder(options.name);
  for (std::size_t v = 0; v < n; ++v) {
    node_spec s;
    if constexpr (detail::has_name<C>) s.name = std::string(costs.name(v));
    if (s.name.empty()) s.name = "n" + std::to_string(v);
    if constexpr (detail::has_op<C>) s.op = std::string(costs.op(v));
    else s.op = "op";
    s.bytes = detail::to_bytes(costs.bytes(v), "output bytes", s.name);
    s.time = static_cast<double>(costs.time(v));
    if constexpr (detail::has_params<C>) s.params = detail::to_bytes(costs.params(v), "parameter bytes", s.name);
    if constexpr (detail::has_workspace<C>) s.workspace = detail::to_bytes(costs.workspace(v), "workspace bytes", s.name);
    if constexpr (detail::has_backward_workspace<C>)
      s.backward_workspace = detail::to_bytes(costs.backward_workspace(v), "backward workspace bytes", s.name);
    if constexpr (detail::has_backward_time<C>) s.backward_time = static_cast<double>(costs.backward_time(v));
    if constexpr (detail::has_reads<C>) s.reads = static_cast<backward_reads>(costs.reads(v));
    builder.add(std::move(s));
  }
  for (std::size_t v = 0; v < n; ++v) {
    for (auto s : remat::successors(g, v)) {
      if (!detail::id_in_range(s, n))
        throw invalid_graph("node '" + builder[v].name + "': successor " + std::to_string(s) +
                                " does not name a node (the graph has " + std::to_string(n) + " nodes)",
                            builder[v].name);
      if constexpr (!bidirectional_dag<G>) builder[static_cast<std::size_t>(s)].inputs.push_back(v);
    }
    if constexpr (bidirectional_dag<G>)
      for (auto p : remat::predecessors(g, v)) {
        if (!detail::id_in_range(p, n))
          throw invalid_graph("node '" + builder[v].name + "': operand " + std::to_string(p) +
                                  " does not name a node",
                              builder[v].name);
        builder[v].inputs.push_back(static_cast<std::size_t>(p));
      }
  }
  return std::move(builder).build();
}

}  // namespace remat
