#pragma once

// Every way the project can make a plan, by name: what runtime tests run each
// network with. Every method remat::solve offers joins by itself (see
// solve_methods()); other plan shapes are one line each in plan_methods().

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <remat/analysis/orders.hpp>
#include <remat/graph/graph.hpp>
#include <remat/graph/node_set.hpp>
#include <remat/plan/plan.hpp>
#include <remat/plan/schedule.hpp>
#include <remat/solve.hpp>
#include <remat/solvers/baselines.hpp>

namespace remat::test {

struct plan_method {
  std::string name;
  std::function<plan(const graph&)> make;
};

// A kept set drawn with probability `density` per computed node.
inline plan random_kept_plan(const graph& g, std::uint64_t seed, double density) {
  std::mt19937_64 rng(seed);
  node_set kept(g.size());
  for (std::size_t v = 0; v < g.size(); ++v)
    if (!g.is_input(v) && static_cast<double>(rng() % 1000) < density * 1000) kept.insert(v);
  return plan::from_kept(g, std::move(kept), "random-kept");
}

// For every value with three or more consumers, each consumer in id order
// must be no later than the next: then every stage plan runs their backwards
// in regular training's order and gradient sums are never reassociated (two
// addends commute exactly). The same rule as the DP's gradient-order
// constraints. before[v]: the consumers that must be in v's lower set.
inline std::vector<std::vector<node_id>> gradient_order_before(const graph& g) {
  std::vector<std::vector<node_id>> before(g.size());
  for (node_id u = 0; u < g.size(); ++u) {
    const auto consumers = g.successors(u);
    if (g.is_input(u) || consumers.size() < 3) continue;
    for (std::size_t i = 0; i + 1 < consumers.size(); ++i) before[consumers[i + 1]].push_back(consumers[i]);
  }
  return before;
}

// A random increasing chain of lower sets: a node starts a new stage after
// the latest of its operands (and, when `keep_gradient_order`, of the
// consumers gradient_order_before puts ahead of it) with probability 1/4.
// Unrelated branches land in different stages, so stages are not id
// intervals. Without keep_gradient_order the chain may reorder gradient sums.
inline plan random_stage_plan(const graph& g, std::uint64_t seed, bool keep_gradient_order = true) {
  std::mt19937_64 rng(seed);
  const auto before = keep_gradient_order ? gradient_order_before(g) : std::vector<std::vector<node_id>>(g.size());
  std::vector<std::uint32_t> stage_of(g.size(), 0);
  for (std::size_t v = 0; v < g.size(); ++v) {
    if (g.is_input(v)) continue;
    std::uint32_t s = 0;
    for (node_id p : g.predecessors(v))
      if (!g.is_input(p)) s = std::max(s, stage_of[p]);
    for (node_id c : before[v]) s = std::max(s, stage_of[c]);
    stage_of[v] = s + (rng() % 4 == 0 ? 1 : 0);
  }
  return plan::from_stages(g, std::move(stage_of), keep_gradient_order ? "random-stages" : "random-stages-unordered");
}

// remat::solve's plan by `m` with default options but a 3 s limit, or an empty
// plan when it found none in that time (the exact programme on wide graphs).
inline plan solve_plan(const graph& g, method m) {
  solve_options o;
  o.method = m;
  o.time_limit = std::chrono::milliseconds(3000);
  return solve(g, o).best;
}

// Every method of remat::solve under its own name, then plan shapes solve does
// not make: other k for every-k, kept-set plans, random stage chains.
inline const std::vector<plan_method>& plan_methods() {
  static const std::vector<plan_method> all = [] {
    std::vector<plan_method> methods;
    for (method m : all_methods)
      methods.push_back({std::string(to_string(m)), [m](const graph& g) { return solve_plan(g, m); }});
    methods.push_back({"every-2", [](const graph& g) { return plan_every_k(g, 2); }});
    methods.push_back({"every-5", [](const graph& g) { return plan_every_k(g, 5); }});
    methods.push_back({"kept-nothing", [](const graph& g) { return plan::from_kept(g, node_set(g.size()), "kept-nothing"); }});
    methods.push_back({"kept-random", [](const graph& g) { return random_kept_plan(g, 7, 0.3); }});
    methods.push_back({"stages-random", [](const graph& g) { return random_stage_plan(g, 11); }});
    // The same shapes run in the consumers-first order (execution_order.hpp).
    methods.push_back({"exact-consumers-first", [](const graph& g) {
                         solve_options o;
                         o.order = order_choice::consumers_first;
                         o.time_limit = std::chrono::milliseconds(3000);
                         return solve(g, o).best;
                       }});
    methods.push_back({"stages-random-consumers-first", [](const graph& g) {
                         const plan p = random_stage_plan(g, 11);
                         return plan::from_stages(g, p.stage_of, "stages-random-consumers-first",
                                                  consumers_first_order(g, gradient_order_constraints(g)));
                       }});
    methods.push_back({"kept-random-consumers-first", [](const graph& g) {
                         const plan p = random_kept_plan(g, 7, 0.3);
                         return plan::from_kept(g, p.kept, "kept-random-consumers-first",
                                                consumers_first_order(g, gradient_order_constraints(g)));
                       }});
    return methods;
  }();
  return all;
}

}  // namespace remat::test
