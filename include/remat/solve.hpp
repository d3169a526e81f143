#pragma once

/// \file
/// One entry point: remat::solve(graph, options) runs any method and returns a
/// remat::solution (status, plan, the simulator's figures, bounds, stats).
/// The method table and dispatch: each method is a function of its own,
/// `solve_<method>(graph, <method>_options)` in solvers/<method>.hpp.
///
/// | method     | plan family | what it guarantees |
/// | ---------- | ----------- | ------------------ |
/// | `exact`    | lower-set chains; general plans (exactly up to 16 computed nodes; past that, from a local search with a fixed work count, or keeping nothing) | past 16 computed nodes (memory objective) first a general plan (solvers/exact_general.hpp: a local search's or the one keeping nothing), the answer when a search bounded by its peak, or a subgraph bound, shows every stage plan higher (`feasible` over the per-op floor; `optimal` at it); otherwise optimal (over general plans when its general programme, solvers/general_dp.hpp, completes) when the graph has at most `max_lower_sets` lower sets; else the best plan of the chain and approximate families: `optimal` (least peak, recompute not minimised) when a search bounded by its peak proves no stage plan lower, else `feasible` with a lower bound from a subgraph (solvers/subgraph_bound.hpp) |
/// | `dp`       | lower-set chains | the exact programme alone (its own cap and time limit) |
/// | `chain`    | id-interval stages | optimal over them (all plans on a linear graph) |
/// | `approx`   | Kusumoto's principal lower sets | optimal over them |
/// | `mincut`   | stages cut at minimum-kept boundaries (solvers/mincut.hpp) | none; the per-op floor as bound |
/// | `ogc`      | kept sets | Feng & Huang's division search for their objective (solvers/ogc.hpp) |
/// | `ogc-exact`| kept sets | Feng & Huang's objective, optimal over all kept sets (solvers/ogc_exact.hpp) |
/// | `kept-search` | kept sets | none: a local search for the least peak (or recompute within the budget) from `ogc-exact`'s kept set (solvers/kept_search.hpp); can go below `exact`'s stage optimum |
/// | `general-search` | general plans: stages and a kept set, lazy or eager recompute per stage | a local search from `exact`'s plan, its kept values with a stage per node, and `kept-search`'s plan (run only while no plan meets the per-op floor), never above `exact` nor `kept-search`; `optimal` in peak over every schedule when its plan meets the per-op floor, else none (solvers/general_search.hpp) |
/// | `sqrt`, `every-k`, `none` | baselines | none; `none` is regular training |
///
/// `ogc` and `ogc-exact` optimise Feng & Huang's model (kept bytes + the
/// largest re-run segment; `solution::objective`), not the simulated peak;
/// their plans are measured like any other.

#include <remat/config.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <remat/analysis/orders.hpp>
#include <remat/error.hpp>
#include <remat/graph/graph.hpp>
#include <remat/memory_ceiling.hpp>
#include <remat/plan/solution.hpp>
#include <remat/solvers/approx.hpp>
#include <remat/solvers/baselines.hpp>
#include <remat/solvers/chain.hpp>
#include <remat/solvers/common.hpp>
#include <remat/solvers/dp.hpp>
#include <remat/solvers/exact.hpp>
#include <remat/solvers/general_search.hpp>
#include <remat/solvers/kept_search.hpp>
#include <remat/solvers/mincut.hpp>
#include <remat/solvers/ogc.hpp>
#include <remat/solvers/ogc_exact.hpp>
#include <remat/solvers/orders.hpp>
#include <remat/time_budget.hpp>
#include <remat/units.hpp>

namespace remat {

/// solve_options::work_limit's default: 10¹⁰ units, about ten seconds of
/// search on the 2-core development machine (docs/algorithms.md).
inline constexpr std::uint64_t default_work_limit = 10'000'000'000;

enum class method { exact, dp, chain, approx, mincut, ogc, ogc_exact, kept_search, general_search, sqrt, every_k, none };

/// Every method, in the order the CLI lists them.
inline constexpr method all_methods[] = {method::exact,     method::dp,          method::chain,  method::approx,
                                         method::mincut,    method::ogc,         method::ogc_exact,
                                         method::kept_search, method::general_search, method::sqrt,
                                         method::every_k,   method::none};

inline constexpr std::string_view to_string(method m) noexcept {
  switch (m) {
    case method::exact: return "exact";
    case method::dp: return "dp";
    case method::chain: return "chain";
    case method::approx: return "approx";
    case method::mincut: return "mincut";
    case method::ogc: return "ogc";
    case method::ogc_exact: return "ogc-exact";
    case method::kept_search: return "kept-search";
    case method::general_search: return "general-search";
    case method::sqrt: return "sqrt";
    case method::every_k: return "every-k";
    case method::none: return "none";
  }
  return "?";
}

/// What a method's `optimal` speaks of: the plans its proof covers (empty
/// for the methods that prove nothing). A status is only ever read with it:
/// `chain` can be optimal over id-interval stages far above the least peak.
inline constexpr std::string_view proof_family(method m) noexcept {
  switch (m) {
    case method::exact:  // "general plans" where its general programme completes (solution::proof_family)
    case method::dp: return "stage plans";
    case method::chain: return "id-interval stage plans";
    case method::approx: return "stage plans of principal lower sets";
    case method::ogc_exact: return "kept sets, on Feng & Huang's objective";
    case method::general_search: return "every schedule, in peak";  // only when its plan meets the per-op floor
    default: return "";
  }
}

inline std::optional<method> parse_method(std::string_view name) noexcept {
  for (method m : all_methods)
    if (to_string(m) == name) return m;
  return std::nullopt;
}

struct solve_options {
  remat::method method = method::exact;
  objective goal = objective::memory;
  /// Time objective: the byte budget every step must stay within. Ignored
  /// (no budget) when left at no_budget.
  std::uint64_t budget = no_budget;
  /// Above this many lower sets `exact` falls back (branchy graphs beyond ~2·10⁴
  /// lower sets take the exact programme from seconds to minutes).
  std::uint64_t max_lower_sets = 20000;
  /// Wall time for the whole call; zero or less leaves none.
  std::chrono::milliseconds time_limit{60000};
  /// Work units the search may do (time_budget.hpp: a unit is a nominal
  /// nanosecond, counted by the searches' inner loops). The work limit, not
  /// the time limit, ends a search on any machine fast enough to do this
  /// much work within a third of `time_limit`, so its plan depends only on
  /// the input. 0: no work limit; the time limit alone then ends searches,
  /// and their plans depend on the machine's speed and load.
  std::uint64_t work_limit = default_work_limit;
  /// Called with the elapsed time, work, best peak and bound so far, at most
  /// every `progress_every` while a search runs (`exact` reports its plans
  /// and bounds as it finds them). Empty: no reports.
  work_meter::progress_callback progress;
  std::chrono::milliseconds progress_every{250};
  /// Bytes the process's memory may grow by during the search (0: no
  /// ceiling). Past it the method stops as at its time limit, with its best
  /// plan and the reason (memory_ceiling.hpp says how memory is measured).
  /// \throws remat::error from solve() where memory cannot be measured.
  std::uint64_t max_memory = 0;
  std::size_t every_k = 4;
  bool preserve_gradient_order = true;
  /// `ogc-exact` (and `kept-search`'s start): labels its sweeps may create
  /// before it returns its best kept set with a lower bound.
  std::uint64_t max_segment_labels = 4'000'000;
  /// `exact` when its plan is not proven: time for a lower bound above the
  /// per-op floor from a subgraph's least peak (solvers/subgraph_bound.hpp), within
  /// the time limit; 0 keeps the floor.
  std::chrono::milliseconds bound_time_limit{250};
  /// `exact` on graphs of up to 16 computed nodes: the most its search over
  /// general plans below the stage optimum may take (solvers/general_dp.hpp;
  /// of work, under a work limit); 0 skips it, leaving a stage optimum.
  std::chrono::milliseconds general_time_limit{250};
  /// `exact` on larger graphs (memory objective): the work units a local
  /// search over general plans may do before the stage programme
  /// (solvers/exact.hpp); 0 skips it, leaving stage plans.
  std::uint64_t general_search_work = exact_options{}.general_search_work;
  /// The most those general plans may recompute, in forward passes.
  double general_max_recompute = exact_options{}.general_max_recompute;
  /// The order the plan runs its nodes in. With `best`, `exact` solves in the
  /// graph's order, then (when they differ, and the time limit leaves at least
  /// as long as the first took) in the consumers-first order, and keeps the
  /// better plan; its status, bounds and "infeasible" then speak of stage
  /// plans in either order (solution::both_orders). `automatic`
  /// does so past `max_lower_sets`, where the plan comes from the fallbacks,
  /// and keeps the graph's order within it, where the exact programme costs
  /// the most and proves its optimum in that order. `kept-search` searches in
  /// both orders with `best` and `automatic`.
  order_choice order = order_choice::automatic;
};

namespace detail {

// A search that stops at its deadline still builds its plan and simulates it
// (kept-search one more try), which on a large graph takes a while: the
// searches get the limit less twice what building and simulating regular
// training's plan takes on this graph, so the whole call ends within the
// limit. The baselines search nothing and keep the whole limit.
inline time_budget search_budget(const graph& g, const solve_options& options) {
  const time_budget limit = time_budget::within(options.time_limit);
  const bool searches = options.method != method::none && options.method != method::sqrt &&
                        options.method != method::every_k;
  if (!searches || !limit.limited() || limit.expired()) return limit;
  const auto before = time_budget::clock::now();
  (void)simulate(g, plan_none(g).steps);
  return limit.less_time(2 * (time_budget::clock::now() - before));
}

}  // namespace detail

/// Runs `options.method` in the execution order `options.order` asks for
/// (see each method's function for what it guarantees). Never throws for a
/// hard instance: caps and time limits give status `feasible` with the best
/// plan found and a bound; an impossible budget gives `infeasible` with the
/// smallest feasible budget (or, beyond `exact`'s cap, a bound that refutes
/// it); a budget no plan found meets and no bound refutes gives `stopped`. A
/// plan run in another order than the graph's says so in `best.order`.
/// \throws remat::error only for invalid options (every-k with k = 0).
inline solution solve(const graph& g, const solve_options& options = {}) {
  const auto start = std::chrono::steady_clock::now();
  if (options.max_memory > 0 && !memory_ceiling::supported())
    throw error("max_memory: this platform does not say how much memory the process holds (remat reads /proc/self/statm)");
  std::optional<memory_ceiling> ceiling;
  work_meter work(options.progress, options.progress_every);
  time_budget time = detail::search_budget(g, options);
  if (options.max_memory > 0) time = time.with_memory(ceiling.emplace(options.max_memory));
  time = time.with_work(work, options.work_limit > 0 ? options.work_limit : time_budget::no_work_limit());
  const stage_dp_options stages{options.goal, options.budget, options.max_lower_sets, time,
                                options.preserve_gradient_order};
  // The stage programmes and mincut plan in the graph's id order: other
  // orders renumber the graph (`best` and `automatic` are exact's and
  // kept-search's own choices; the others keep the graph's order).
  auto in_order = [&](auto&& solve_in_id_order) {
    if (options.order != order_choice::consumers_first) return solve_in_id_order(g);
    return solve_in_order(g, consumers_first(g, options.preserve_gradient_order), solve_in_id_order);
  };
  solution s;
  switch (options.method) {
    case method::exact:
      s = solve_exact(g, {options.goal, options.budget, options.max_lower_sets, time, options.preserve_gradient_order,
                          options.bound_time_limit, options.order, options.general_time_limit,
                          options.general_search_work, options.general_max_recompute});
      break;
    case method::kept_search:
      s = solve_kept_search(g, {options.goal, options.budget, options.order, options.preserve_gradient_order, time,
                                options.max_segment_labels});
      break;
    case method::general_search:
      s = solve_general_search(g, {options.goal, options.budget, options.max_lower_sets, time,
                                   options.preserve_gradient_order, options.order, options.bound_time_limit,
                                   options.general_time_limit, options.general_search_work,
                                   options.general_max_recompute});
      break;
    case method::dp: s = in_order([&](const graph& h) { return solve_dp(h, stages); }); break;
    case method::chain: s = in_order([&](const graph& h) { return solve_chain(h, stages); }); break;
    case method::approx: s = in_order([&](const graph& h) { return solve_approx(h, stages); }); break;
    case method::mincut:
      s = in_order([&](const graph& h) {
        return solve_mincut(h, {options.goal, options.budget, 64, options.preserve_gradient_order, time});
      });
      break;
    case method::ogc: s = in_order([&](const graph& h) { return solve_ogc(h, {options.budget, time}); }); break;
    case method::ogc_exact:
      s = in_order([&](const graph& h) { return solve_ogc_exact(h, {options.budget, time, options.max_segment_labels}); });
      break;
    case method::sqrt: s = in_order([&](const graph& h) { return solve_sqrt(h, {options.budget}); }); break;
    case method::every_k:
      s = in_order([&](const graph& h) { return solve_every_k(h, {options.budget, options.every_k}); });
      break;
    case method::none: s = in_order([&](const graph& h) { return solve_none(h, {options.budget}); }); break;
  }
  if (options.method != method::exact) s.best.method = std::string(to_string(options.method));
  if (s.produced_by.empty() && !s.best.steps.empty()) s.produced_by = s.best.method;
  s.stats.work = work.done();
  if (ceiling && ceiling->reached()) {
    // The methods read a spent budget as the time limit; say which it was.
    s.stats.memory_limit_reached = true;
    s.stats.time_limit_reached = time.past_deadline();
    s.message = "stopped at the memory ceiling (" + format_bytes(options.max_memory) + " above the " +
                format_bytes(ceiling->start()) + " the process held)" + (s.message.empty() ? "" : "; " + s.message);
  } else if (options.work_limit > 0 && s.stats.time_limit_reached) {
    // The methods' flag says "time limit" for either clock; the meter knows which.
    s.stats.work_limit_reached = work.ended_by_work();
    s.stats.time_limit_reached = work.ended_by_time();
  }
  if (s.proof_family.empty()) s.proof_family = std::string(proof_family(options.method));
  s.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return s;
}

}  // namespace remat
