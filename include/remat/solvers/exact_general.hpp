#pragma once

/// \file
/// `exact`'s first step past 16 computed nodes (exact.hpp): a general plan
/// (from a local search with a fixed work count, or keeping nothing), and
/// what shows every stage plan peaks above it.

#include <remat/config.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <remat/analysis/lower_sets.hpp>
#include <remat/analysis/orders.hpp>
#include <remat/analysis/window_floor.hpp>
#include <remat/graph/graph.hpp>
#include <remat/plan/solution.hpp>
#include <remat/solvers/common.hpp>
#include <remat/solvers/dp.hpp>
#include <remat/solvers/exact_options.hpp>
#include <remat/solvers/general_local_search.hpp>
#include <remat/solvers/keep_within.hpp>
#include <remat/solvers/mincut.hpp>
#include <remat/solvers/orders.hpp>
#include <remat/solvers/stage_split.hpp>
#include <remat/solvers/subgraph_bound.hpp>
#include <remat/units.hpp>

namespace remat::detail {

// How many computed nodes g has.
inline std::size_t computed_nodes(const graph& g) {
  std::size_t computed = 0;
  for (node_id v = 0; v < g.size(); ++v) computed += g.is_input(v) ? 0 : 1;
  return computed;
}

// The general plan that keeps nothing, in `order`: each backward recomputes
// what it reads from the inputs and frees it at once. It holds little beyond
// the per-op floor, where kept values would stay alive through the backward,
// at up to n²/2 recomputes.
inline general_plan keep_nothing(const graph& g, std::vector<node_id> order) {
  general_plan none;
  none.kept = node_set(g.size());
  none.order = std::move(order);
  return with_node_stages(g, none);
}

// The orders `exact` keeps nothing in and splits stages over: the one asked
// for, or for `best` and `automatic` the graph's, consumers-first,
// last-written-first, fewest-gradients and consumers-first over
// fewest-gradients orders (each where it differs from those before it).
inline std::vector<std::vector<node_id>> split_orders(const graph& g, const exact_options& options) {
  std::vector<std::vector<node_id>> orders;
  if (options.order == order_choice::consumers_first) {
    orders.push_back(consumers_first(g, options.preserve_gradient_order));
    return orders;
  }
  orders.emplace_back();
  if (options.order == order_choice::graph) return orders;
  const bool preserve = options.preserve_gradient_order;
  std::vector<node_id> fewest = fewest_gradients(g, preserve);
  std::vector<node_id> over_fewest = consumers_first_over(g, fewest, preserve);
  for (std::vector<node_id> other : {consumers_first(g, preserve), last_written_first(g, preserve),
                                     std::move(fewest), std::move(over_fewest)}) {
    const bool known = is_id_order(other) || std::ranges::find(orders, other) != orders.end();
    if (!known) orders.push_back(std::move(other));
  }
  return orders;
}

// Past the general programme's size: the best, by options.goal and
// options.budget, of these general plans, each with values then kept where
// its peak (or the budget it meets) allows (keep_within.hpp). One comes from
// a local search (general_local_search.hpp) started at min-cut stages' kept
// values with a stage per node; min-cut stages cost little and lead as low
// as the stage optimum's boundary does, or lower (docs/results-solvers.md).
// The search stops at `general_search_work` units whatever the clock says.
// For a budget, a search from min-cut's own stages, recomputing lazily,
// runs beside the first: it splits the stage at its peak until the plan
// fits, which costs far less recompute where the budget is a little below
// the stage plans' least peak. For the least peak, that search, held to the
// best plan's peak, then looks for the same peak with less recompute, and,
// given budgets below it (exact_budget_descent_rounds), for lower peaks;
// where one of those gave the best plan, a search for the least peak goes
// on from it. Then the stages split best over an order (split_stages):
// keeping nothing, in the order where that peaks lowest (up to
// exact_keep_nothing_max_nodes) — on the NAS cells, PSPNet and the deeper
// ResNets below any plan the searches reach, which cannot drop one kept
// value at a time without first raising the peak — and with the best plan's
// kept values, for the least recompute within its peak; between the two,
// the first split again over an order with the window around the backward
// the best plan peaks for reordered as its window floor's best path runs it
// (window_floor_order). Plans over `general_max_recompute` rank after the
// others; nothing when no plan is left within it. `peaks_set_aside` gets the
// node where a plan set aside for one in such an order peaked, and the
// backward it peaked for: the window floor may bound best there.
inline std::optional<solution> general_local_plan(const graph& g, const exact_options& options, std::uint64_t floor,
                                                  std::vector<node_id>* peaks_set_aside = nullptr) {
  const double max_recompute = options.general_max_recompute * g.forward_time();
  auto score = [&](std::uint64_t peak, double recompute) {
    return std::pair{recompute > max_recompute, rank_plan(peak, recompute, options.goal, options.budget)};
  };
  struct candidate {
    keep_within_result kept;
    std::string from, produced_by;
  };
  std::optional<candidate> best;
  std::size_t tries = 0, moves = 0;
  simulate_options timeline;  // keep_within reads the plan's bytes at every step
  timeline.record_timeline = true;
  auto weigh = [&](general_plan plan, schedule steps, simulation figures, std::string from, std::string produced_by) {
    // Kept values lower only the recompute: a plan that ranks after the best
    // even recomputing nothing cannot win.
    auto best_score = [&] { return score(best->kept.figures.peak_bytes, best->kept.figures.recompute_time); };
    if (best && !(score(figures.peak_bytes, 0.0) < best_score())) return;
    const bool within_budget = options.budget != no_budget && figures.peak_bytes <= options.budget;
    const std::uint64_t ceiling = within_budget ? options.budget : figures.peak_bytes;
    const std::size_t recompute_steps = figures.recompute_steps;
    keep_within_result kept = keep_within(g, std::move(plan), std::move(steps), std::move(figures), ceiling);
    options.time.charge(kept.rounds * (pass_work(g, 40) + recompute_steps * 90));  // as a search's tries
    if (best && !(score(kept.figures.peak_bytes, kept.figures.recompute_time) < best_score())) return;
    best = candidate{std::move(kept), std::move(from), std::move(produced_by)};
  };
  // The local search from min-cut's kept values, in the order asked for;
  // given a choice, also in the last-written-first order, whose plans are the
  // lowest found on U-Net and PSPNet and higher on the NAS networks.
  std::vector<std::pair<std::vector<node_id>, std::string_view>> starts;
  if (options.order == order_choice::consumers_first) {
    starts.emplace_back(consumers_first(g, options.preserve_gradient_order), "consumers-first");
  } else {
    starts.emplace_back(std::vector<node_id>{}, "graph");
    if (options.order != order_choice::graph)
      if (std::vector<node_id> last = last_written_first(g, options.preserve_gradient_order); !is_id_order(last))
        starts.emplace_back(std::move(last), "last-written-first");
    // On a graph one window of the window floor holds, the order its best
    // path runs the backwards in: where that floor is the least peak, a plan
    // in this order can meet it (measured in docs/results-solvers.md, "The
    // window floor").
    if (options.order != order_choice::graph && options.goal == objective::memory)
      if (std::vector<node_id> window = window_floor_order(g, options.preserve_gradient_order);
          !window.empty() && !is_id_order(window))
        starts.emplace_back(std::move(window), "the window floor's");
  }
  // Min-cut's stages in `order` as a general plan (none if min-cut found
  // none), each order's solved once.
  std::vector<std::pair<std::vector<node_id>, std::optional<general_plan>>> cut_plans;
  auto cut_plan_in = [&](const std::vector<node_id>& order) -> std::optional<general_plan> {
    for (const auto& [known, plan] : cut_plans)
      if (known == order) return plan;
    mincut_options cut;
    cut.preserve_gradient_order = options.preserve_gradient_order;
    cut.time = options.time.share(1, 8);
    cut.per_op_floor = floor;
    const solution stages = order.empty() ? solve_mincut(g, cut)
                                          : solve_in_order(g, order, [&](const graph& h) { return solve_mincut(h, cut); });
    cut_plans.emplace_back(order, has_plan(stages) ? std::optional(as_general_plan(g, stages.best)) : std::nullopt);
    return cut_plans.back().second;
  };
  auto lazily = [](general_plan p) {
    std::fill(p.modes.begin(), p.modes.end(), stage_recompute::lazy);
    return p;
  };
  // A local search from `start`, with general_search_work / `divisor` units;
  // whether its plan peaks within `budget`.
  auto search_from = [&](general_plan start, objective goal, std::uint64_t budget, std::string from,
                         std::uint64_t divisor = 1) {
    improve_general_options search;
    search.goal = goal;
    search.budget = budget;
    search.time = options.time.share(1, 4);
    search.max_work = options.general_search_work / divisor;
    search.max_recompute = max_recompute;
    general_search_result r = improve_general_plan(g, std::move(start), search);
    tries += r.tries;
    moves += r.moves;
    schedule steps = r.best.steps(g);
    simulation figures = simulate(g, steps, timeline);
    const bool fits = figures.peak_bytes <= budget;
    weigh(std::move(r.best), std::move(steps), std::move(figures), std::move(from), "general local search");
    return fits;
  };
  // The stages split best over `order` for the kept set `kept`
  // (split_stages), on runs of up to `longest` nodes, peaking within
  // `ceiling`, as a candidate: the least peak, or with `budget` the least
  // recompute within it. `from` says what it started from.
  std::size_t split_stages_priced = 0;
  // An order found around the best plan's peak (below), and its words.
  std::vector<node_id> window_order;
  std::string window_order_words;
  auto order_words = [&](const std::vector<node_id>& order) {
    if (!window_order.empty() && order == window_order) return window_order_words;
    return order.empty() ? std::string("the graph's order") : "the " + order_name(g, order) + " order";
  };
  auto split_from = [&](const node_set& kept, const std::vector<node_id>& order, std::uint64_t budget,
                        std::size_t longest, std::uint64_t ceiling, const std::string& from,
                        const time_budget& time) {
    stage_split_options split;
    split.goal = budget == no_budget ? objective::memory : objective::time;
    split.budget = budget;
    split.max_stage_nodes = longest;
    split.ceiling = ceiling;
    split.time = time;
    stage_split_result r = split_stages(g, kept, order, split);
    split_stages_priced += r.stages_evaluated;
    if (!r.plan) return false;
    schedule steps = r.plan->steps(g);
    simulation figures = simulate(g, steps, timeline);
    weigh(std::move(*r.plan), std::move(steps), std::move(figures),
          from + " the stages split at the best places of " + order_words(order) +
              (budget == no_budget ? std::string() : ", for the least recompute within " + format_bytes(budget)) +
              " (" + std::to_string(r.stages_evaluated) + " stages priced)",
          "stage split");
    return true;
  };
  for (const auto& [order, order_label] : starts) {
    // A plan at the per-op floor can only tie with it, recomputing more.
    if (options.time.expired() || (best && best->kept.figures.peak_bytes <= floor)) break;
    const std::optional<general_plan> cut = cut_plan_in(order);
    if (!cut) continue;
    const std::string in_order = order.empty() ? std::string() : ", in " + std::string(order_label) + " order";
    search_from(with_node_stages(g, *cut), options.goal, options.budget,
                "a local search started at min-cut stages' kept values with a stage per node" + in_order);
    // For a budget, min-cut's own stages too, recomputing lazily: splitting
    // the stage at the peak costs far less recompute than a stage per node
    // where the budget lies a little below the stage plans' least peak.
    if (options.goal == objective::time && options.budget != no_budget)
      search_from(lazily(*cut), options.goal, options.budget,
                  "a local search started at min-cut stages, each recomputing lazily" + in_order);
  }
  // The order in which keeping nothing peaks lowest, for the split below
  // (split_stages): a split there holds no more than keeping nothing, so
  // that plan itself need not be weighed.
  std::optional<std::pair<std::uint64_t, std::vector<node_id>>> lowest_of_none;
  if (computed_nodes(g) <= exact_keep_nothing_max_nodes && !(best && best->kept.figures.peak_bytes <= floor))
    for (std::vector<node_id>& order : split_orders(g, options)) {
      if (options.time.expired()) break;
      const simulation figures = simulate(g, keep_nothing(g, order).steps(g));
      options.time.charge(pass_work(g, 40) + figures.recompute_steps * 90);  // as a search's try
      ++tries;
      if (!lowest_of_none || figures.peak_bytes < lowest_of_none->first) lowest_of_none.emplace(figures.peak_bytes, order);
    }
  // The least peak found, as a budget: the same search from min-cut's own
  // stages, recomputing lazily, in that plan's order, often reaches the same
  // peak with far less recompute, with a quarter of the work. Then, with half
  // the work, budgets halfway between the per-op floor and the lowest peak
  // found, until one is missed (none when the first misses its own):
  // splitting the stages at their peaks it fits budgets the first search
  // never reaches (docs/results-solvers.md, "Splitting stages to meet a
  // budget").
  if (options.goal == objective::memory && best && !options.time.expired()) {
    const std::vector<node_id> order = best->kept.plan.order;
    if (const std::optional<general_plan> cut = cut_plan_in(order)) {
      const std::string from = "a local search started at min-cut stages, each recomputing lazily" +
                               (order.empty() ? std::string() : ", in " + order_name(g, order) + " order");
      const std::string first = best->from;
      const bool reached = search_from(lazily(*cut), objective::time, best->kept.figures.peak_bytes,
                                       from + ", held to the peak of " + first, 4);
      for (int round = 0; reached && round < exact_budget_descent_rounds && !options.time.expired(); ++round) {
        const std::uint64_t high = best->kept.figures.peak_bytes;
        if (high <= floor + 1) break;
        const std::uint64_t budget = floor + (high - floor) / 2;
        search_from(lazily(*cut), objective::time, budget, from + ", with a budget below the peak of " + first, 2);
        if (best->kept.figures.peak_bytes > budget) break;  // where it misses, nearer budgets rarely fit
      }
      // Searches under a budget stop lowering the peak once they meet it:
      // where one of them gave the best plan, a search for the least peak
      // goes on from it, the values kept within its peak included.
      if (best->from.starts_with(from))
        search_from(best->kept.plan, objective::memory, no_budget,
                    best->from + (best->kept.added > 0 ? "; then values kept where its peak allows" : "") +
                        "; then a local search for the least peak from that plan");
    }
  }
  // The stages split best over an order (split_stages): keeping nothing, in
  // the order where that peaks lowest, for a lower peak than any plan found
  // (for a budget, the least recompute within it); then, with the values
  // the best plan keeps, in its order, on longer runs, for the least
  // recompute within its peak (or the budget): the first split's stages are
  // short and recompute much (docs/results-solvers.md, "Stages split over the
  // execution order").
  const std::uint64_t to_meet = options.goal == objective::time ? options.budget : no_budget;
  // For the least peak, while that split gives the best plan, again on runs
  // twice as long, each below the best peak, until two in a row find none,
  // the runs pass exact_split_widest_nodes or a quarter of what is left is
  // spent (the rest of `exact` still needs it): on wide layered graphs
  // longer runs peak lower, on NAS cells they do not, and a split that does
  // not win is not widened at all.
  auto split_keeping_nothing = [&](const std::vector<node_id>& order) {
    const bool won = split_from(node_set(g.size()), order, to_meet, exact_split_stage_nodes,
                                to_meet == no_budget ? best->kept.figures.peak_bytes - 1 : no_budget, "nothing kept,",
                                options.time);
    if (won && to_meet == no_budget) {
      const time_budget widening = options.time.share(1, 4);
      std::size_t misses = 0;
      for (std::size_t longest = 2 * exact_split_stage_nodes; misses < 2 && longest <= exact_split_widest_nodes &&
                                                              best->kept.figures.peak_bytes > floor && !widening.expired();
           longest *= 2) {
        const bool lower = split_from(node_set(g.size()), order, no_budget, longest, best->kept.figures.peak_bytes - 1,
                                      "nothing kept, on runs of up to " + std::to_string(longest) + " nodes,", widening);
        misses = lower ? 0 : misses + 1;
      }
    }
    return won;
  };
  if (best && best->kept.figures.peak_bytes > floor && lowest_of_none && !options.time.expired())
    split_keeping_nothing(lowest_of_none->second);
  // Around the backward the best plan peaks for (at that step or, in a
  // recompute, the next), the window floor's best path may run the
  // backwards in an order that peaks lower (on DARTS and NASNet, beside
  // their first reduction cells): the same split over the consumers-first
  // order of the graph with that window so reordered. On a graph one window
  // holds, the local search started in that order already. Where it wins,
  // the window floor also looks there.
  if (options.goal == objective::memory && options.order != order_choice::graph && best && lowest_of_none &&
      best->kept.figures.peak_bytes > floor && best->kept.figures.peak_step < best->kept.steps.size() &&
      computed_nodes(g) > 64 && !options.time.expired()) {
    const schedule& steps = best->kept.steps;
    std::size_t at = best->kept.figures.peak_step;
    const node_id peak_node = steps[at].node;
    while (at + 1 < steps.size() && steps[at].kind != step_kind::backward) ++at;
    const node_id served = steps[at].node;
    const window_floor window =
        window_floor_around(g, served, exact_window_order_nodes, options.preserve_gradient_order);
    if (const std::vector<node_id> reordered = window_floor_order(g, window); !reordered.empty()) {
      window_order = consumers_first_over(g, reordered, options.preserve_gradient_order);
      window_order_words = "the consumers-first order over the window floor's around '" + g.node_name(served) + "'";
      // Kept to the gradient order, this window's floor is no lower than
      // every schedule's there; where even it stays at the per-op floor,
      // the bound's wider window there is not worth its search (NASNet).
      if (split_keeping_nothing(window_order) && window.bytes > floor && peaks_set_aside != nullptr)
        peaks_set_aside->insert(peaks_set_aside->end(), {peak_node, served});  // window_floor_of skips repeats
    }
  }
  if (best && !options.time.expired()) {
    const std::uint64_t within = to_meet == no_budget ? best->kept.figures.peak_bytes : to_meet;
    split_from(best->kept.plan.kept, best->kept.plan.order, within, exact_split_recompute_nodes, no_budget,
               best->from + (best->kept.added > 0 ? "; then values kept where its peak allows" : "") +
                   "; then, keeping those values,",
               options.time);
  }
  if (!best || best->kept.figures.recompute_time > max_recompute) return std::nullopt;
  keep_within_result& kept = best->kept;
  solution s = solution_of_plan(as_plan(kept.plan, "exact", std::move(kept.steps)), std::move(kept.figures),
                                options.budget, floor);
  s.produced_by = best->produced_by;
  s.message = best->from;
  if (kept.added > 0)
    s.message += "; then " + std::to_string(kept.added) + (kept.added == 1 ? " value" : " values") + " kept where " +
                 (options.budget != no_budget && s.claimed_peak <= options.budget ? "the budget" : "its peak") +
                 " allows";
  s.stats.counts = {{"general plans simulated", tries},
                    {"general moves taken", moves},
                    {"values kept within the peak", kept.added},
                    {"stages priced", split_stages_priced}};
  options.time.found_plan(s.claimed_peak);
  options.time.found_bound(floor);
  return s;
}

// Whether every stage plan in g's order peaks above `peak`, and how that was
// shown (empty: it was not).
struct stages_above {
  std::string shown_by;
  bool past_cap = false;  ///< g has more lower sets than the programme's cap: `automatic` tries both orders
};

// The exact programme bounded by `peak`, capped like prove_least_peak; where
// it stops and g has more lower sets than the stage programme's cap, the
// subgraph bound asked whether it exceeds `peak` (within the cap the stage
// programme runs in full, and the bound would only take its time). A stage
// plan at the same peak may recompute less: then the stage programme must
// run. The bound's reach depends on the clock, but only the message does:
// where it shows every stage plan higher, the stage programme cannot change
// the answer. `floor`: g's per-op floor.
inline stages_above no_stage_plan_as_low(const graph& g, const exact_options& options, std::uint64_t peak,
                                         std::uint64_t floor) {
  stages_above out;
  if (options.time.expired()) return out;
  dp_options below;
  below.budget = peak;
  below.peak_only = true;
  below.max_states = options.max_lower_sets;
  below.max_transitions = options.max_lower_sets;
  below.time = options.time.share(1, 4);
  below.preserve_gradient_order = options.preserve_gradient_order;
  const dp_result r = solve_dp(g, dp_family::exact, below);
  if (r.complete) {
    if (r.result.status == solve_status::infeasible)
      out.shown_by = "a search bounded by its peak ended after " + std::to_string(r.stats.lower_sets) +
                     " lower sets and " + std::to_string(r.stats.transitions) + " stages";
    return out;
  }
  const precedence constraints = options.preserve_gradient_order ? gradient_order_constraints(g) : precedence{};
  lower_set_options count;
  count.max_count = options.max_lower_sets + 1;
  count.constraints = &constraints;
  count.time = options.time;
  out.past_cap = count_lower_sets(g, count).status != enumeration_status::complete;
  if (!out.past_cap || options.bound_time_limit.count() <= 0 || options.time.expired()) return out;
  subgraph_bound_options above;
  above.stop_above = peak;
  above.per_op_floor = floor;
  above.time = options.time.next(options.bound_time_limit);
  const subgraph_bound bound = subgraph_peak_bound(g, above);
  if (bound.bytes > peak)
    out.shown_by = "a subgraph of " + std::to_string(bound.nodes) + " nodes bounds them above it";
  return out;
}

// The same in every order `exact` searches stage plans in (`automatic`:
// consumers first too past the cap).
inline std::optional<std::string> no_stage_plan_as_low_in_orders(const graph& g, const exact_options& options,
                                                                std::uint64_t peak, std::uint64_t floor) {
  stages_above here;
  if (options.order != order_choice::consumers_first &&
      (here = no_stage_plan_as_low(g, options, peak, floor)).shown_by.empty())
    return std::nullopt;
  if (options.order == order_choice::graph || (options.order == order_choice::automatic && !here.past_cap))
    return here.shown_by;
  const std::vector<node_id> order = consumers_first(g, options.preserve_gradient_order);
  const stages_above there = no_stage_plan_as_low(reorder_graph(g, order), options, peak, floor);
  if (there.shown_by.empty()) return std::nullopt;
  return here.shown_by.empty() ? there.shown_by
                               : here.shown_by + " in the graph's order; " + there.shown_by + " consumers first";
}

// A general plan's message and status, given what is known of stage plans.
// `floors` is backward_floors(g); s's bound is the per-op floor, raised to
// the cut floor for the least peak, and the window floor looks around s's
// peak and `peaks_set_aside` (general_local_plan).
inline void say_general(const graph& g, solution& s, objective goal, const std::string& against_stages,
                        const backward_floor& floors, std::span<const node_id> peaks_set_aside = {}) {
  s.best.method = "exact";
  // Its bound holds for every schedule.
  s.proof_family = goal == objective::memory ? "every schedule" : "general plans";
  s.message = "a general plan (" + std::to_string(s.best.stage_modes.size()) + " stages, " +
              std::to_string(s.best.kept.count()) + " values kept): " + s.message + "; " + against_stages;
  std::vector<node_id> near{peak_node_of(s)};
  near.insert(near.end(), peaks_set_aside.begin(), peaks_set_aside.end());
  const schedule_bound bound = schedule_bound_for(g, floors, s.peak_lower_bound, s.claimed_peak, near, goal);
  s.peak_lower_bound = bound.bytes;
  s.peak_bound_name = bound.name;
  if (goal == objective::memory && s.claimed_peak == s.peak_lower_bound) {
    // The least peak of every schedule: optimal, or the least budget any plan meets.
    if (s.status == solve_status::infeasible) s.smallest_feasible_budget = s.claimed_peak;
    else s.status = solve_status::optimal;
    s.message += "; least peak proven: it equals " + bound.name +
                 ", which no schedule goes below (recompute not minimised among least-peak plans)";
  } else {
    s.message += std::string(goal == objective::memory ? "; recompute not minimised" : "; not proven") +
                 "; the lower bound is " + bound.name + ", which holds for every schedule";
  }
  // Lazy recompute can redo a value for every backward that reads it: say
  // when that passes a forward pass, which no stage plan does.
  if (g.forward_time() > 0 && s.claimed_recompute > g.forward_time())
    s.message += "; it recomputes " + std::to_string(static_cast<int>(s.claimed_recompute / g.forward_time())) + "." +
                 std::to_string(static_cast<int>(10 * s.claimed_recompute / g.forward_time()) % 10) +
                 " forward passes (--max-recompute holds it to fewer; --general-work 0 gives the stage optimum)";
}

}  // namespace remat::detail
