#pragma once

/// \file
/// The vocabulary every solver shares: what a plan is optimised for
/// (`objective`), the one ranking of plans by it (`plan_rank`), the time
/// budget (<remat/time_budget.hpp>, defined below the analyses, which take
/// it too), and a solution made from a plan by the simulator
/// (`solution_of_plan`).

#include <remat/config.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>

#include <remat/analysis/backward_order_floor.hpp>
#include <remat/analysis/bounds.hpp>
#include <remat/analysis/cut_floor.hpp>
#include <remat/analysis/window_floor.hpp>
#include <remat/graph/graph.hpp>
#include <remat/plan/plan.hpp>
#include <remat/plan/simulate.hpp>
#include <remat/plan/solution.hpp>
#include <remat/time_budget.hpp>

namespace remat {

/// memory: the least peak, then the least recompute among least-peak plans.
/// time: the least recompute among plans whose every step stays within a
/// byte budget, then the least peak.
enum class objective { memory, time };

/// A budget no plan exceeds: no budget.
inline constexpr std::uint64_t no_budget = std::numeric_limits<std::uint64_t>::max();

/// The rank of a plan peaking at `peak` and recomputing for `recompute`
/// seconds, smaller first: plans within `budget` before those over it, and
/// among those over it the lower peak; then by the objective (memory: peak,
/// then recompute; time: recompute, then peak).
using plan_rank = std::tuple<bool, std::uint64_t, double, std::uint64_t>;

inline plan_rank rank_plan(std::uint64_t peak, double recompute, objective goal,
                           std::uint64_t budget = no_budget) noexcept {
  const bool over = peak > budget;
  if (goal == objective::memory) return {over, peak, recompute, 0};
  return {over, over ? peak : 0, recompute, peak};
}

inline plan_rank rank_plan(const simulation& figures, objective goal, std::uint64_t budget = no_budget) noexcept {
  return rank_plan(figures.peak_bytes, figures.recompute_time, goal, budget);
}

/// The per-op floor of g: `known` when a caller worked it out already (it
/// costs O((n + m) · n / 64) on graphs without series separators, and a
/// portfolio's members all need it), else computed.
/// Work units of one pass over g costing `per_element` units a node and an
/// edge, for time_budget::charge.
inline std::uint64_t pass_work(const graph& g, std::uint64_t per_element) noexcept {
  return (g.size() + g.num_edges()) * per_element;
}

inline std::uint64_t per_op_floor_of(const graph& g, const std::optional<std::uint64_t>& known) {
  return known ? *known : per_op_floor(g).bytes;
}

/// The best lower bound known for a plan's peak over every schedule, and its
/// name for messages: the per-op floor or, where the plan peaks above it, the
/// highest of the cut floor (analysis/cut_floor.hpp), the backward-order
/// floor (analysis/backward_order_floor.hpp) and the window floor
/// (analysis/window_floor.hpp) where they pass it.
struct schedule_bound {
  std::uint64_t bytes = 0;
  std::string name;
};

/// `floors` is backward_floors(g), `per_op` its per-op floor, `peak` the
/// plan's and `near` the nodes where the window floor looks: the node of the
/// plan's step that reaches it, and any others the solver found plans
/// peaking at. The time objective keeps the per-op floor: its
/// plans are ranked by recompute within a budget, where a closer bound on
/// the peak proves nothing and its searches would only cost time.
inline schedule_bound schedule_bound_for(const graph& g, const backward_floor& floors, std::uint64_t per_op,
                                         std::uint64_t peak, std::span<const node_id> near,
                                         objective goal = objective::memory) {
  schedule_bound best{per_op, "the per-op floor"};
  if (goal != objective::memory || peak <= per_op) return best;
  if (const cut_floor cut = cut_floor_of(g, floors, per_op); cut.bytes > best.bytes)
    best = {cut.bytes,
            "the cut floor (what the values the backward of '" + g.node_name(cut.node) + "' reads cost, held or recomputed)"};
  if (best.bytes >= peak) return best;
  if (const backward_order_floor order = backward_order_floor_of(g); order.bytes > best.bytes)
    best = {order.bytes, "the backward-order floor (" + describe_order_floor(g, order) + ")"};
  if (best.bytes >= peak) return best;
  if (const window_floor window = window_floor_of(g, near); window.bytes > best.bytes)
    best = {window.bytes, "the window floor (" + describe_window_floor(g, window) + ")"};
  return best;
}

/// The same, the window floor looking around `peak_node` alone.
inline schedule_bound schedule_bound_for(const graph& g, const backward_floor& floors, std::uint64_t per_op,
                                         std::uint64_t peak, node_id peak_node, objective goal = objective::memory) {
  return schedule_bound_for(g, floors, per_op, peak, std::span<const node_id>(&peak_node, 1), goal);
}

/// The node of the step where s's plan peaks (the first node when it has no
/// steps): where schedule_bound_for's window floor looks.
inline node_id peak_node_of(const solution& s) noexcept {
  return s.figures.peak_step < s.best.steps.size() ? s.best.steps[s.figures.peak_step].node : 0;
}

/// Whether a solution holds a plan that meets its budget.
inline bool has_plan(const solution& s) noexcept {
  return !s.best.steps.empty() && (s.status == solve_status::optimal || s.status == solve_status::feasible);
}

/// Whether b's plan ranks before a's by `goal` (rank_plan on the claimed
/// figures); a plan beats no plan.
inline bool beats(const solution& b, const solution& a, objective goal) noexcept {
  if (!has_plan(b)) return false;
  if (!has_plan(a)) return true;
  return rank_plan(b.claimed_peak, b.claimed_recompute, goal) < rank_plan(a.claimed_peak, a.claimed_recompute, goal);
}

/// A solution for a plan the method does not bound: the simulator's figures,
/// `floor` (the graph's per-op floor, which a method works out before its
/// search: on graphs without series separators it costs O((n + m) · n / 64))
/// as the peak bound, and `feasible` or `infeasible` by `budget`. `figures`
/// is p's simulation.
inline solution solution_of_plan(plan p, simulation figures, std::uint64_t budget, std::uint64_t floor) {
  solution s;
  s.best = std::move(p);
  s.figures = std::move(figures);
  s.claimed_peak = s.figures.peak_bytes;
  s.claimed_recompute = s.figures.recompute_time;
  s.peak_lower_bound = floor;
  s.status = s.figures.peak_bytes <= budget ? solve_status::feasible : solve_status::infeasible;
  if (s.status == solve_status::infeasible)
    s.message = "the " + s.best.method + " plan peaks at " + std::to_string(s.figures.peak_bytes) +
                " bytes, above the budget";
  return s;
}

inline solution solution_of_plan(const graph& g, plan p, std::uint64_t budget, std::uint64_t floor) {
  simulation figures = simulate(g, p.steps);
  return solution_of_plan(std::move(p), std::move(figures), budget, floor);
}

}  // namespace remat
