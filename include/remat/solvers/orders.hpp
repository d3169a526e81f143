#pragma once

/// \file
/// Running a method in one execution order or in both (analysis/orders.hpp):
/// which orders an order_choice asks for, a stage method run on the graph
/// renumbered in an order with its plan mapped back, and two solutions (one
/// per order) taken as one. Used by solve, exact, kept-search and pareto.

#include <remat/config.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <remat/analysis/lower_sets.hpp>
#include <remat/analysis/orders.hpp>
#include <remat/graph/graph.hpp>
#include <remat/graph/node_set.hpp>
#include <remat/plan/solution.hpp>
#include <remat/solvers/common.hpp>
#include <remat/units.hpp>

namespace remat {

/// The consumers-first order of g, kept within the gradient-order
/// constraints when `preserve_gradient_order`.
inline std::vector<node_id> consumers_first(const graph& g, bool preserve_gradient_order) {
  return consumers_first_order(g, preserve_gradient_order ? gradient_order_constraints(g) : precedence{});
}

/// The last-written-first order of g, kept within the gradient-order
/// constraints when `preserve_gradient_order`.
inline std::vector<node_id> last_written_first(const graph& g, bool preserve_gradient_order) {
  return last_written_first_order(g, preserve_gradient_order ? gradient_order_constraints(g) : precedence{});
}

/// The fewest-gradients order of g, kept within the gradient-order
/// constraints when `preserve_gradient_order`.
inline std::vector<node_id> fewest_gradients(const graph& g, bool preserve_gradient_order) {
  return fewest_gradients_order(g, preserve_gradient_order ? gradient_order_constraints(g) : precedence{});
}

/// The consumers-first order of g renumbered in `base` (its fewest-gradients
/// order), as an order of g. That order keeps the consumers of every
/// constrained value in id order, so the renumbered graph's constraints are
/// g's.
inline std::vector<node_id> consumers_first_over(const graph& g, const std::vector<node_id>& base,
                                                 bool preserve_gradient_order) {
  std::vector<node_id> order = consumers_first(reorder_graph(g, base), preserve_gradient_order);
  for (node_id& v : order) v = base[v];
  return order;
}

/// What the orders of this file call `order` on g: "graph" (empty or the id
/// order), "consumers-first", "last-written-first", "fewest-gradients",
/// "consumers-first over fewest-gradients" (with or without the
/// gradient-order constraints), else "other".
inline std::string order_name(const graph& g, std::span<const node_id> order) {
  if (is_id_order(order)) return "graph";
  for (bool preserve : {true, false}) {
    if (std::ranges::equal(order, consumers_first(g, preserve))) return "consumers-first";
    if (std::ranges::equal(order, last_written_first(g, preserve))) return "last-written-first";
    const std::vector<node_id> fewest = fewest_gradients(g, preserve);
    if (std::ranges::equal(order, fewest)) return "fewest-gradients";
    if (std::ranges::equal(order, consumers_first_over(g, fewest, preserve)))
      return "consumers-first over fewest-gradients";
  }
  return "other";
}

/// The orders `choice` asks a method to run in, the graph's first (an empty
/// order); the consumers-first order only where it differs from the graph's
/// (or is the only one asked for). `automatic` asks for both.
inline std::vector<std::vector<node_id>> orders_to_try(const graph& g, order_choice choice,
                                                       bool preserve_gradient_order) {
  std::vector<std::vector<node_id>> orders;
  if (choice != order_choice::consumers_first) orders.emplace_back();
  if (choice != order_choice::graph) {
    std::vector<node_id> other = consumers_first(g, preserve_gradient_order);
    if (!is_id_order(other) || orders.empty()) orders.push_back(std::move(other));
  }
  return orders;
}

/// A solution for reorder_graph(g, order), its node ids mapped back to g's:
/// the same schedule, run in `order`.
inline solution map_back(solution s, const graph& g, const std::vector<node_id>& order) {
  plan& p = s.best;
  for (step& x : p.steps) x.node = order[x.node];
  if (p.kept.universe() == g.size()) {
    node_set kept(g.size());
    p.kept.for_each([&](std::size_t v) { kept.insert(order[v]); });
    p.kept = std::move(kept);
  }
  if (p.stage_of.size() == g.size()) {
    std::vector<std::uint32_t> stage_of(g.size());
    for (std::size_t k = 0; k < order.size(); ++k) stage_of[order[k]] = p.stage_of[k];
    p.stage_of = std::move(stage_of);
  }
  if (!p.steps.empty() || !p.stage_of.empty() || p.kept.universe() != 0) p.order = order;
  return s;
}

/// A method that plans in the graph's id order (the stage programmes), run
/// in `order`: `solve_in_id_order(h)` on h = g renumbered in `order`.
template <class Solve>
solution solve_in_order(const graph& g, const std::vector<node_id>& order, Solve&& solve_in_id_order) {
  if (order.empty() || is_id_order(order)) return solve_in_id_order(g);
  return map_back(solve_in_id_order(reorder_graph(g, order)), g, order);
}

namespace detail {

// What a plan in one order gives, for the message about the other.
inline std::string order_outcome(const solution& s, objective goal) {
  if (!has_plan(s)) return std::string(to_string(s.status));
  if (goal == objective::memory) return "peaks at " + format_bytes(s.claimed_peak);
  return "recomputes " + std::to_string(s.claimed_recompute) + " s";
}

// Two solves, one in each order, as one.
inline solution add_stats(solution out, const solution& other) {
  out.both_orders = true;
  out.stats += other.stats;
  return out;
}

// Neither order has a plan within the budget: `infeasible` only when both
// proved it, and the message of the order that knows the lower budget that
// works (the least one, or one a fallback plan meets).
inline solution no_plan_in_either(solution in_graph_order, solution in_other_order) {
  auto known = [](const solution& s) {
    if (s.smallest_feasible_budget != 0) return s.smallest_feasible_budget;
    return s.known_feasible_budget != 0 ? s.known_feasible_budget : std::numeric_limits<std::uint64_t>::max();
  };
  const bool both_infeasible =
      in_graph_order.status == solve_status::infeasible && in_other_order.status == solve_status::infeasible;
  const bool other_knows_more = known(in_other_order) < known(in_graph_order);
  solution out = std::move(other_knows_more ? in_other_order : in_graph_order);
  const solution& other = other_knows_more ? in_graph_order : in_other_order;
  out.status = both_infeasible ? solve_status::infeasible : solve_status::stopped;
  out.peak_lower_bound = std::min(out.peak_lower_bound, other.peak_lower_bound);
  out.message += std::string(out.message.empty() ? "" : "; ") + "in " +
                 (other_knows_more ? "the consumers-first order; the graph's order " : "the graph's order; the consumers-first order ") +
                 std::string(to_string(other.status)) + " too";
  return add_stats(std::move(out), other);
}

}  // namespace detail

/// One method's solutions in the graph's order and in the consumers-first
/// order as one: the better plan (beats; ties go to the graph's order), and
/// bounds that hold for both (the lower of the two), so `optimal` and
/// `infeasible` speak of every plan of the family in either order.
inline solution best_of_orders(solution in_graph_order, solution in_other_order, objective goal) {
  if (!has_plan(in_graph_order) && !has_plan(in_other_order))
    return detail::no_plan_in_either(std::move(in_graph_order), std::move(in_other_order));
  const bool memory = goal == objective::memory;
  const bool other_wins = beats(in_other_order, in_graph_order, goal);
  const std::uint64_t own_bound = (other_wins ? in_other_order : in_graph_order).peak_lower_bound;
  solution out = std::move(other_wins ? in_other_order : in_graph_order);
  const solution& loser = other_wins ? in_graph_order : in_other_order;

  out.peak_lower_bound = std::min(out.peak_lower_bound, loser.peak_lower_bound);
  // Proven over both orders only when the other order's proof reaches as far.
  bool other_refuted = loser.status == solve_status::infeasible;
  if (has_plan(loser))
    other_refuted = memory ? loser.peak_lower_bound > out.claimed_peak ||
                                 (loser.peak_lower_bound == out.claimed_peak && loser.status == solve_status::optimal)
                           : loser.status == solve_status::optimal;
  if (out.status == solve_status::optimal && !other_refuted) out.status = solve_status::feasible;
  // A proof over a wider family in one order says nothing of the other's.
  if (out.proof_family != loser.proof_family) out.proof_family.clear();
  std::string other = detail::order_outcome(loser, goal);
  if (memory && has_plan(loser) && loser.peak_lower_bound < own_bound)
    other += ", and no plan of it is proven to peak above " + format_bytes(loser.peak_lower_bound);
  out.message += std::string(out.message.empty() ? "" : "; ") + "run in " +
                 (other_wins ? "the consumers-first order (the graph's order " : "the graph's order (the consumers-first order ") +
                 other + ")";
  return detail::add_stats(std::move(out), loser);
}

}  // namespace remat
