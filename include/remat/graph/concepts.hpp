#pragma once

/// \file
/// How any graph type becomes a remat graph: two customization points and the
/// concepts that check them.
///
/// A graph must provide, for dense node ids 0..n-1:
///
/// | expression                    | type                            | meaning                          |
/// | ----------------------------- | ------------------------------- | -------------------------------- |
/// | `remat::num_nodes(g)`         | convertible to `std::size_t`    | the number of nodes n            |
/// | `remat::successors(g, v)`     | input range of an integral type | the consumers of v's output      |
/// | `remat::predecessors(g, v)`   | (optional) same                 | the operands of v, in order      |
///
/// Each customization point is found, in this order, through a specialization of
/// `remat::graph_traits<G>` (static functions), a member function (`g.num_nodes()`,
/// `g.successors(v)`), a free function found by argument-dependent lookup, or the
/// built-in default for a random-access range of ranges of integers
/// (`std::vector<std::vector<int>>` needs nothing at all). Predecessors are
/// derived by the library when a graph does not provide them.
///
/// Costs are kept apart from topology (an exterior property, as in Boost.Graph):
/// see costs.hpp.

#include <remat/config.hpp>

#include <concepts>
#include <cstddef>
#include <iterator>
#include <ranges>
#include <type_traits>
#include <utility>

namespace remat {

/// Specialize for a graph type you cannot change: provide static
/// `num_nodes(const G&)`, `successors(const G&, std::size_t)` and optionally
/// `predecessors(const G&, std::size_t)`.
template <class G>
struct graph_traits {};

namespace cpo_impl {

// Poison pills: ordinary lookup stops here, so only ADL finds user functions.
void num_nodes() = delete;
void successors() = delete;
void predecessors() = delete;

template <class G>
concept range_of_integer_ranges =
    std::ranges::random_access_range<const G> && std::ranges::sized_range<const G> &&
    std::ranges::input_range<std::ranges::range_reference_t<const G>> &&
    std::integral<std::ranges::range_value_t<std::ranges::range_reference_t<const G>>>;

template <class G>
concept traits_num_nodes = requires(const G& g) { graph_traits<G>::num_nodes(g); };
template <class G>
concept member_num_nodes = requires(const G& g) { g.num_nodes(); };
template <class G>
concept adl_num_nodes = requires(const G& g) { num_nodes(g); };

template <class G>
concept traits_successors = requires(const G& g, std::size_t v) { graph_traits<G>::successors(g, v); };
template <class G>
concept member_successors = requires(const G& g, std::size_t v) { g.successors(v); };
template <class G>
concept adl_successors = requires(const G& g, std::size_t v) { successors(g, v); };

template <class G>
concept traits_predecessors =
    requires(const G& g, std::size_t v) { graph_traits<G>::predecessors(g, v); };
template <class G>
concept member_predecessors = requires(const G& g, std::size_t v) { g.predecessors(v); };
template <class G>
concept adl_predecessors = requires(const G& g, std::size_t v) { predecessors(g, v); };

struct num_nodes_fn {
  template <class G>
    requires traits_num_nodes<G> || member_num_nodes<G> || adl_num_nodes<G> ||
             range_of_integer_ranges<G>
  constexpr std::size_t operator()(const G& g) const {
    if constexpr (traits_num_nodes<G>)
      return static_cast<std::size_t>(graph_traits<G>::num_nodes(g));
    else if constexpr (member_num_nodes<G>)
      return static_cast<std::size_t>(g.num_nodes());
    else if constexpr (adl_num_nodes<G>)
      return static_cast<std::size_t>(num_nodes(g));
    else
      return static_cast<std::size_t>(std::ranges::size(g));
  }
};

struct successors_fn {
  template <class G>
    requires traits_successors<G> || member_successors<G> || adl_successors<G> ||
             range_of_integer_ranges<G>
  constexpr decltype(auto) operator()(const G& g, std::size_t v) const {
    if constexpr (traits_successors<G>)
      return graph_traits<G>::successors(g, v);
    else if constexpr (member_successors<G>)
      return g.successors(v);
    else if constexpr (adl_successors<G>)
      return successors(g, v);
    else
      return g[static_cast<std::ranges::range_difference_t<const G>>(v)];
  }
};

struct predecessors_fn {
  template <class G>
    requires traits_predecessors<G> || member_predecessors<G> || adl_predecessors<G>
  constexpr decltype(auto) operator()(const G& g, std::size_t v) const {
    if constexpr (traits_predecessors<G>)
      return graph_traits<G>::predecessors(g, v);
    else if constexpr (member_predecessors<G>)
      return g.predecessors(v);
    else
      return predecessors(g, v);
  }
};

}  // namespace cpo_impl

inline constexpr cpo_impl::num_nodes_fn num_nodes{};
inline constexpr cpo_impl::successors_fn successors{};
inline constexpr cpo_impl::predecessors_fn predecessors{};

/// The range type `remat::successors(g, v)` returns for G.
template <class G>
using successor_range_t = decltype(remat::successors(std::declval<const G&>(), std::size_t{}));

/// A directed graph with dense ids whose successors can be listed. (Acyclicity is
/// a precondition checked at run time, when the graph is snapshotted.)
template <class G>
concept dag = requires(const G& g, std::size_t v) {
  { remat::num_nodes(g) } -> std::convertible_to<std::size_t>;
  remat::successors(g, v);
} && std::ranges::input_range<successor_range_t<G>> &&
              std::integral<std::ranges::range_value_t<successor_range_t<G>>>;

/// A dag that also lists each node's operands (used as given, skipping the
/// derivation pass, and keeping the operand order an executor needs).
template <class G>
concept bidirectional_dag = dag<G> && requires(const G& g, std::size_t v) {
  remat::predecessors(g, v);
} && std::ranges::input_range<decltype(remat::predecessors(std::declval<const G&>(), std::size_t{}))>;

}  // namespace remat
