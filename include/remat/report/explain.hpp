#pragma once

/// \file
/// What checkpointing can and cannot save, in bytes: training memory by what
/// it is for (parameters, optimizer state, parameter gradients, inputs, kept
/// activations and the transient rest) for regular training, for a plan of the
/// user's and for the optimal plan; the per-op floor no plan goes below; the
/// tensors that make a peak and when they live.
///
/// Every figure comes from the simulator (plan/simulate.hpp) and the buffer
/// lifetimes it agrees with (runtime/layout.hpp). The optimizer's state is the one
/// thing the simulator does not see: frameworks allocate it at the first
/// update and keep it, so it is resident through every step. It adds the same
/// bytes to every step of every plan and so changes no plan; it only moves
/// every figure, and decides whether a budget can be met.

#include <remat/config.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <remat/analysis/backward_order_floor.hpp>
#include <remat/analysis/bounds.hpp>
#include <remat/detail/checked.hpp>
#include <remat/error.hpp>
#include <remat/graph/graph.hpp>
#include <remat/graph/node_set.hpp>
#include <remat/plan/plan.hpp>
#include <remat/plan/schedule.hpp>
#include <remat/plan/simulate.hpp>
#include <remat/runtime/layout.hpp>
#include <remat/solve.hpp>
#include <remat/solvers/baselines.hpp>
#include <remat/solvers/pareto.hpp>

namespace remat {

/// The optimizer whose state a training step keeps.
enum class optimizer : std::uint8_t { sgd, momentum, adam };

inline constexpr std::string_view to_string(optimizer o) noexcept {
  switch (o) {
    case optimizer::sgd: return "sgd";
    case optimizer::momentum: return "momentum";
    case optimizer::adam: return "adam";
  }
  return "?";
}

inline std::optional<optimizer> parse_optimizer(std::string_view name) noexcept {
  for (optimizer o : {optimizer::sgd, optimizer::momentum, optimizer::adam})
    if (to_string(o) == name) return o;
  return std::nullopt;
}

/// State buffers per parameter tensor, each the parameter's size: plain SGD
/// keeps none, SGD with momentum its velocity, Adam (and AdamW) the first and
/// second moments.
inline constexpr std::uint64_t state_buffers(optimizer o) noexcept {
  switch (o) {
    case optimizer::sgd: return 0;
    case optimizer::momentum: return 1;
    case optimizer::adam: return 2;
  }
  return 0;
}

/// What training memory is for: the simulator's categories and the
/// optimizer's state.
enum class memory_part : std::uint8_t {
  parameters,
  optimizer_state,
  parameter_gradients,
  inputs,
  activations,  ///< values from forward compute steps, alive (at a backward peak: kept for it)
  recomputed,   ///< values recomputed in the backward
  gradients,    ///< activation gradients
  workspace,
};

inline constexpr memory_part memory_parts[] = {
    memory_part::parameters, memory_part::optimizer_state, memory_part::parameter_gradients,
    memory_part::inputs,     memory_part::activations,     memory_part::recomputed,
    memory_part::gradients,  memory_part::workspace};

inline constexpr std::string_view to_string(memory_part p) noexcept {
  switch (p) {
    case memory_part::parameters: return "parameters";
    case memory_part::optimizer_state: return "optimizer state";
    case memory_part::parameter_gradients: return "parameter gradients";
    case memory_part::inputs: return "inputs";
    case memory_part::activations: return "activations";
    case memory_part::recomputed: return "recomputed values";
    case memory_part::gradients: return "activation gradients";
    case memory_part::workspace: return "workspace";
  }
  return "?";
}

/// True for the parts a checkpointing plan decides: which values stay alive,
/// which are recomputed, and with them when gradients and workspaces meet.
/// Parameters, their gradients, optimizer state and inputs are the model's.
inline constexpr bool plan_dependent(memory_part p) noexcept {
  return p == memory_part::activations || p == memory_part::recomputed || p == memory_part::gradients ||
         p == memory_part::workspace;
}

/// Training memory while one step runs: the simulator's breakdown and the
/// optimizer's state.
struct training_memory {
  memory_breakdown simulated;
  std::uint64_t optimizer_state = 0;

  std::uint64_t total() const noexcept { return simulated.total() + optimizer_state; }

  std::uint64_t operator[](memory_part p) const noexcept {
    switch (p) {
      case memory_part::parameters: return simulated.parameters;
      case memory_part::optimizer_state: return optimizer_state;
      case memory_part::parameter_gradients: return simulated.parameter_gradients;
      case memory_part::inputs: return simulated.inputs;
      case memory_part::activations: return simulated.activations;
      case memory_part::recomputed: return simulated.recomputed;
      case memory_part::gradients: return simulated.gradients;
      case memory_part::workspace: return simulated.workspace;
    }
    return 0;
  }

  /// The part holding the most bytes (the first such in memory_parts).
  memory_part largest() const noexcept {
    memory_part best = memory_parts[0];
    for (memory_part p : memory_parts)
      if ((*this)[p] > (*this)[best]) best = p;
    return best;
  }
};

/// What a tensor alive at some step is.
enum class tensor_role : std::uint8_t {
  parameters,          ///< a node's parameters (resident)
  optimizer_state,     ///< the optimizer's buffers for a node's parameters (resident)
  input,               ///< a graph input (resident)
  parameter_gradient,  ///< from the node's backward to the end of the step
  value,               ///< a node's output from its forward compute
  recomputed_value,    ///< a node's output from a recompute step
  gradient,            ///< a node's activation gradient
  workspace,           ///< a step's workspace
};

inline constexpr std::string_view to_string(tensor_role r) noexcept {
  switch (r) {
    case tensor_role::parameters: return "parameters";
    case tensor_role::optimizer_state: return "optimizer state";
    case tensor_role::input: return "input";
    case tensor_role::parameter_gradient: return "parameter gradient";
    case tensor_role::value: return "value";
    case tensor_role::recomputed_value: return "recomputed value";
    case tensor_role::gradient: return "gradient";
    case tensor_role::workspace: return "workspace";
  }
  return "?";
}

/// One tensor alive at a step.
struct live_tensor {
  tensor_role role = tensor_role::value;
  node_id node = 0;
  std::uint64_t bytes = 0;
  bool resident = false;       ///< alive through the whole step
  std::size_t first_step = 0;  ///< when not resident: alive over [first_step, last_step]
  std::size_t last_step = 0;
};

/// Every tensor alive while step `at` of `steps` runs, largest first (ties by
/// node id, then role): parameters, optimizer state and inputs, which are
/// resident, and the buffers of buffer_lifetimes alive at that step. Their
/// bytes sum to the simulator's memory of the step plus the optimizer's state.
/// Zero-byte tensors are left out. \pre simulate(g, steps) accepts `steps`.
/// Complexity: O(steps + m + k log k) for k tensors alive.
inline std::vector<live_tensor> tensors_alive_at(const graph& g, const schedule& steps, std::size_t at,
                                                 optimizer opt = optimizer::sgd) {
  std::vector<live_tensor> out;
  for (node_id v = 0; v < g.size(); ++v) {
    if (g.is_input(v) && g.bytes(v) > 0) out.push_back({tensor_role::input, v, g.bytes(v), true});
    if (g.params(v) == 0) continue;
    out.push_back({tensor_role::parameters, v, g.params(v), true});
    if (state_buffers(opt) > 0)
      out.push_back({tensor_role::optimizer_state, v, state_buffers(opt) * g.params(v), true});
  }
  auto role_of = [](memory_category c) {
    switch (c) {
      case memory_category::activations: return tensor_role::value;
      case memory_category::recomputed: return tensor_role::recomputed_value;
      case memory_category::gradients: return tensor_role::gradient;
      case memory_category::parameter_gradients: return tensor_role::parameter_gradient;
      case memory_category::workspace: break;
    }
    return tensor_role::workspace;
  };
  for (const buffer_lifetime& b : buffer_lifetimes(g, steps))
    if (b.first_step <= at && at <= b.last_step && b.bytes > 0)
      out.push_back({role_of(b.category), b.node, b.bytes, false, b.first_step, b.last_step});
  std::sort(out.begin(), out.end(), [](const live_tensor& x, const live_tensor& y) {
    return std::tuple(y.bytes, x.node, x.role) < std::tuple(x.bytes, y.node, y.role);
  });
  return out;
}

/// A kept-set plan from node names, the way a framework's checkpoints are
/// given: the named values stay alive from the forward into the backward;
/// every other value is freed after its last forward use and, when a backward
/// reads it, recomputed just before from the nearest values alive
/// (schedule_from_kept). Graph inputs may be named; they are resident anyway.
/// \throws remat::error naming the first name that is not a node.
inline plan plan_from_checkpoints(const graph& g, std::span<const std::string> names,
                                  std::string method = "your checkpoints") {
  node_set kept(g.size());
  for (const std::string& name : names) {
    const std::optional<node_id> v = g.find(name);
    if (!v) throw error("'" + name + "' is not a node of graph '" + g.name() + "'");
    kept.insert(*v);
  }
  return plan::from_kept(g, std::move(kept), std::move(method));
}

/// What a schedule does with the values of a graph, counted.
struct fate_summary {
  std::size_t kept = 0;        ///< alive from the forward into the backward
  std::size_t recomputed = 0;  ///< freed in the forward, recomputed in the backward
  std::size_t freed = 0;       ///< freed in the forward, never needed again
  std::uint64_t kept_bytes = 0;
};

/// Counts node_fates(g, steps). Complexity: O(steps + n).
inline fate_summary summarize_fates(const graph& g, const schedule& steps) {
  fate_summary out;
  const std::vector<node_fate> fates = node_fates(g, steps);
  for (node_id v = 0; v < g.size(); ++v) {
    out.kept += fates[v] == node_fate::kept;
    out.kept_bytes += fates[v] == node_fate::kept ? g.bytes(v) : 0;
    out.recomputed += fates[v] == node_fate::recomputed;
    out.freed += fates[v] == node_fate::dropped;
  }
  return out;
}

/// One plan's training memory.
struct plan_memory {
  plan p;
  simulation figures;                 ///< the simulator's, with the timeline
  std::uint64_t optimizer_state = 0;  ///< resident through every step
  std::vector<live_tensor> at_peak;   ///< every tensor alive at the peak step, largest first

  /// \pre the sum fits 64 bits (explain checks it)
  std::uint64_t peak_bytes() const noexcept { return figures.peak_bytes + optimizer_state; }
  training_memory peak() const noexcept { return {figures.at_peak, optimizer_state}; }
  /// \pre step < figures.timeline.size()
  training_memory at(std::size_t step) const noexcept { return {figures.timeline[step], optimizer_state}; }
};

/// Simulates `p` with its timeline and lists the tensors alive at its peak.
/// \throws invalid_schedule when the simulator rejects the plan's schedule.
inline plan_memory measure(const graph& g, plan p, optimizer opt = optimizer::sgd) {
  plan_memory m;
  m.figures = simulate(g, p.steps, {.record_timeline = true});
  m.optimizer_state = state_buffers(opt) * g.param_bytes();
  m.at_peak = tensors_alive_at(g, p.steps, m.figures.peak_step, opt);
  m.p = std::move(p);
  return m;
}

struct explain_options {
  remat::optimizer optimizer = optimizer::sgd;
  /// Training memory to fit, optimizer state included. With one, the optimal
  /// plan is the least recompute within it (the least peak when none fits);
  /// without, the least peak (then the least recompute).
  std::optional<std::uint64_t> budget;
  std::chrono::milliseconds time_limit{60000};
  std::uint64_t max_lower_sets = 20000;
  /// Work units of `exact`'s search over general plans
  /// (solve_options::general_search_work); 0: stage plans only.
  std::uint64_t general_search_work = solve_options{}.general_search_work;
  /// Forward passes those general plans may recompute
  /// (solve_options::general_max_recompute).
  double general_max_recompute = solve_options{}.general_max_recompute;
};

/// Regular training, a plan of the user's and the optimal plan, side by side.
struct explanation {
  remat::optimizer optimizer = optimizer::sgd;
  std::uint64_t optimizer_state = 0;  ///< resident through every step
  op_floor floor;                     ///< the per-op floor of the simulator's model
  remat::cut_floor cut;               ///< the cut floor, where it passes the per-op floor (else bytes 0)
  /// The backward-order floor, where it passes both other floors (else bytes 0).
  remat::backward_order_floor order;
  /// A floor over every schedule the plan search found beyond those three
  /// (the window floor around the plan's peak), where it passes them (else 0),
  /// and its name (solution::peak_bound_name).
  std::uint64_t search_floor = 0;
  std::string search_floor_name;
  plan_memory regular;                ///< keep what backward reads, recompute nothing
  std::optional<plan_memory> chosen;  ///< the user's plan, when given
  plan_memory optimal;                ///< remat::solve's plan, or regular training when that is no worse
  solve_status optimal_status = solve_status::optimal;  ///< of remat::solve, over `optimal_family`
  std::string optimal_family;  ///< the plans `optimal_status` speaks of (solution::proof_family)
  std::string optimal_message;
  /// No plan of `bound_family` has training memory below this: solve's peak
  /// bound, at least the per-op floor, plus optimizer state. Above the floor
  /// it is the cut floor, which holds for every plan, or a stage or general
  /// optimum, or a subgraph's least peak where exact could not prove its
  /// plan, which hold for that family alone (stage plans in the graph's
  /// order, and the consumers-first order when `bound_both_orders`); regular
  /// training, a kept-set plan, may lie below those.
  std::uint64_t plan_bound = 0;
  std::string bound_family;  ///< "every plan" for a bound over every schedule, else solution::proof_family
  bool bound_both_orders = false;
  std::optional<std::uint64_t> budget;

  /// No plan's training memory is below this.
  std::uint64_t floor_bytes() const noexcept { return floor.bytes + optimizer_state; }
  /// No plan's training memory is below this either: the highest of the floors.
  std::uint64_t least_bytes() const noexcept {
    return std::max({floor.bytes, cut.bytes, order.bytes, search_floor}) + optimizer_state;
  }
  /// The most any plan could save against regular training.
  std::uint64_t most_any_plan_saves() const noexcept {
    return regular.peak_bytes() > least_bytes() ? regular.peak_bytes() - least_bytes() : 0;
  }
  /// Bytes `m` saves against regular training; negative when it needs more.
  std::int64_t saving(const plan_memory& m) const noexcept {
    return static_cast<std::int64_t>(regular.peak_bytes()) - static_cast<std::int64_t>(m.peak_bytes());
  }
  /// The share of regular training's peak that is values (kept or recomputed).
  double activation_share() const noexcept {
    const training_memory peak = regular.peak();
    const auto values = static_cast<double>(peak[memory_part::activations] + peak[memory_part::recomputed]);
    return peak.total() > 0 ? values / static_cast<double>(peak.total()) : 0.0;
  }
  /// Whether `m` fits the budget (true without one).
  bool fits(const plan_memory& m) const noexcept { return !budget || m.peak_bytes() <= *budget; }
  /// Whether the optimal plan is regular training's schedule.
  bool optimal_is_regular() const noexcept { return optimal.p.steps == regular.p.steps; }
  /// Whether the per-op floor rules out every plan within the budget.
  bool budget_below_floor() const noexcept { return budget && *budget < floor_bytes(); }
};

/// Explains `g`'s training memory: regular training, `chosen` (if any) and the
/// plan of remat::solve (method exact, the plan `remat plan` gives), each
/// simulated; the per-op floor. \throws invalid_schedule when the simulator rejects `chosen`;
/// remat::error when a figure with the optimizer's state reaches 2⁶³ bytes
/// (savings are signed 64-bit numbers).
inline explanation explain(const graph& g, std::optional<plan> chosen, const explain_options& options = {}) {
  explanation e;
  e.optimizer = options.optimizer;
  const backward_floor floors = backward_floors(g);
  e.floor = per_op_floor(g, floors);
  e.cut = cut_floor_of(g, floors, e.floor.bytes);
  if (const backward_order_floor order = backward_order_floor_of(g); order.bytes > std::max(e.floor.bytes, e.cut.bytes))
    e.order = order;
  e.budget = options.budget;
  e.regular = measure(g, plan_none(g), options.optimizer);
  if (chosen) e.chosen = measure(g, std::move(*chosen), options.optimizer);
  // Every other figure is at most the larger of these two peaks.
  const std::uint64_t highest = std::max(e.regular.figures.peak_bytes, e.chosen ? e.chosen->figures.peak_bytes : 0);
  const auto state = detail::checked_mul(state_buffers(options.optimizer), g.param_bytes());
  const auto total = state ? detail::checked_add(highest, *state) : std::nullopt;
  if (!total || *total >= std::uint64_t{1} << 63)
    throw error("graph '" + g.name() + "': training memory with the " + std::string(to_string(options.optimizer)) +
                " optimizer's state reaches 2^63 bytes");
  e.optimizer_state = *state;

  solve_options so;
  so.method = method::exact;
  so.time_limit = options.time_limit;
  so.max_lower_sets = options.max_lower_sets;
  so.general_search_work = options.general_search_work;
  so.general_max_recompute = options.general_max_recompute;
  solution s;
  if (options.budget && *options.budget >= e.optimizer_state) {
    so.goal = objective::time;
    so.budget = *options.budget - e.optimizer_state;
    s = solve(g, so);
  }
  const bool least_recompute = !s.best.steps.empty();
  if (!least_recompute) {
    so.goal = objective::memory;
    so.budget = std::numeric_limits<std::uint64_t>::max();
    s = solve(g, so);
  }
  e.optimal_status = s.status;
  e.optimal_family = s.proof_family;
  e.optimal_message = s.message;
  e.plan_bound = std::max(s.peak_lower_bound, e.floor.bytes) + e.optimizer_state;
  e.bound_family = s.peak_lower_bound > e.floor.bytes && !s.proof_family.starts_with("every schedule")
                       ? s.proof_family
                       : "every plan";
  e.bound_both_orders = s.both_orders;
  if (!s.peak_bound_name.empty() && s.peak_lower_bound > std::max({e.floor.bytes, e.cut.bytes, e.order.bytes})) {
    e.search_floor = s.peak_lower_bound;
    e.search_floor_name = s.peak_bound_name;
  }
  // Regular training lies outside the lower-set chains the solver searches;
  // where it is better by the same objective, it is the plan to run.
  const auto by_peak = [](const simulation& x) { return std::tuple(x.peak_bytes, x.recompute_time); };
  const auto by_recompute = [](const simulation& x) { return std::tuple(x.recompute_time, x.peak_bytes); };
  const simulation& found = s.figures;
  const simulation& regular = e.regular.figures;
  const bool regular_no_worse =
      s.best.steps.empty() || (least_recompute ? e.fits(e.regular) && by_recompute(regular) <= by_recompute(found)
                                               : by_peak(regular) <= by_peak(found));
  e.optimal = regular_no_worse ? e.regular : measure(g, std::move(s.best), options.optimizer);
  return e;
}

/// One point of the trade-off between training memory and recomputation.
struct tradeoff {
  std::uint64_t peak_bytes = 0;  ///< the simulator's peak plus optimizer state
  double recompute_time = 0;     ///< seconds
  double overhead = 0;           ///< recompute time / (forward + backward time)
};

struct explained_frontier {
  solve_status status = solve_status::infeasible;  ///< of pareto_frontier
  std::string message;
  std::vector<tradeoff> points;  ///< by increasing peak
};

/// The Pareto frontier of `g` up to regular training's peak (solvers/pareto.hpp), each
/// point's plan simulated and its optimizer state added; points by increasing
/// peak and strictly decreasing recompute.
inline explained_frontier simulated_frontier(const graph& g, const explanation& e,
                                             std::chrono::milliseconds time_limit = std::chrono::milliseconds{60000}) {
  pareto_options po;
  po.max_peak = e.regular.figures.peak_bytes;
  po.time = time_budget::within(time_limit);
  const pareto_result r = pareto_frontier(g, po);
  explained_frontier out;
  out.status = r.status;
  out.message = r.message;
  for (const frontier_point& point : r.points) {
    const simulation sim = simulate(g, schedule_from_stages(g, point.stage_of, point.order));
    if (!out.points.empty() && !detail::saves_recompute(sim.recompute_time, out.points.back().recompute_time))
      continue;
    out.points.push_back({sim.peak_bytes + e.optimizer_state, sim.recompute_time, sim.overhead()});
  }
  return out;
}

}  // namespace remat
