// The lower-set programmes against a brute-force optimum over every chain of
// lower sets, and their claimed figures against the simulator.

#include <doctest/doctest.h>

#include <limits>

#include <remat/analysis/bounds.hpp>
#include <remat/analysis/lower_sets.hpp>
#include <remat/solvers/dp.hpp>
#include <remat/solvers/orders.hpp>
#include <remat/zoo/models.hpp>

#include "../support/oracle.hpp"
#include "../support/random_graphs.hpp"
#include "../support/shaped_graphs.hpp"
#include "../support/small_graphs.hpp"

using namespace remat;

namespace {

// Seeded graphs of every shape the acceptance names: chains, diamonds,
// residual and concat blocks, random layered DAGs.
std::vector<graph> oracle_graphs(std::size_t count) {
  std::vector<graph> out{test::chain(), test::diamond(), test::residual(), test::concat_block()};
  for (std::uint64_t seed = 1; out.size() < count; ++seed) {
    const std::size_t n = 3 + seed % 11;
    switch (seed % 4) {
      case 0: out.push_back(test::random_dag(n, seed, 1, 1)); break;            // chains
      case 1: out.push_back(test::random_dag(n, seed, 2, 2)); break;            // narrow
      case 2: out.push_back(test::random_dag(n, seed, 3 + seed % 3, 3)); break; // layered, wide
      default: out.push_back(test::random_dag(n, seed, 4, 2)); break;
    }
  }
  return out;
}

void check_against_oracle(bool preserve_order) {
  std::size_t checked = 0, budgets = 0;
  for (const graph& g : oracle_graphs(3600)) {
    const precedence order = gradient_order_constraints(g);
    const auto plans = test::all_chain_plans(g, 3000, preserve_order ? &order : nullptr);
    if (!plans) continue;
    ++checked;
    dp_options base;
    base.preserve_gradient_order = preserve_order;
    const test::oracle_point mem = test::best_memory(*plans);
    const dp_result exact = solve_dp(g, dp_family::exact, base);
    REQUIRE(exact.result.status == solve_status::optimal);
    CHECK(exact.result.claimed_peak == mem.peak);
    CHECK(exact.result.claimed_recompute == mem.recompute);
    CHECK(exact.result.figures.peak_bytes == exact.result.claimed_peak);
    CHECK(exact.result.figures.recompute_time == exact.result.claimed_recompute);

    const auto frontier = test::frontier(*plans);
    dp_options all = base;
    all.keep_frontier = true;
    const dp_result pareto = solve_dp(g, dp_family::exact, all);
    REQUIRE(pareto.frontier.size() == frontier.size());
    for (std::size_t i = 0; i < frontier.size(); ++i) {
      CHECK(pareto.frontier[i].peak == frontier[i].peak);
      CHECK(pareto.frontier[i].recompute == frontier[i].recompute);
      const simulation sim = simulate(g, schedule_from_stages(g, pareto.frontier[i].stage_of));
      CHECK(sim.peak_bytes == frontier[i].peak);
      CHECK(sim.recompute_time == frontier[i].recompute);
    }
    for (const auto& point : frontier) {
      dp_options time = base;
      time.goal = objective::time;
      time.budget = point.peak;
      const dp_result t = solve_dp(g, dp_family::exact, time);
      const auto expect = test::best_time(*plans, point.peak);
      ++budgets;
      CHECK(t.result.claimed_recompute == expect->recompute);
      CHECK(t.result.claimed_peak <= point.peak);
      CHECK(t.result.figures.peak_bytes == t.result.claimed_peak);
      // The floor under the recompute left, and the beam's plan, from the first label.
      time.recompute_floor_after = 0;
      const dp_result floored = solve_dp(g, dp_family::exact, time);
      CHECK(floored.result.claimed_recompute == expect->recompute);
      CHECK(floored.result.claimed_peak == t.result.claimed_peak);
    }
    // The time objective at the memory optimum is feasible.
    dp_options at_optimum = base;
    at_optimum.goal = objective::time;
    at_optimum.budget = mem.peak;
    CHECK(solve_dp(g, dp_family::exact, at_optimum).result.status == solve_status::optimal);
  }
  MESSAGE(checked << " graphs and " << budgets << " budgets checked against the oracle");
  CHECK(checked >= 2000);
}

}  // namespace

TEST_SUITE("dp") {

TEST_CASE("exact DP equals the brute-force optimum for both objectives and the whole frontier" *
          doctest::timeout(600)) {
  check_against_oracle(true);
}

TEST_CASE("... and so does it without the gradient-order constraint" * doctest::timeout(600)) {
  check_against_oracle(false);
}

TEST_CASE("with fractional times and bytes of real networks' size, the optimum and the frontier are the brute force's, "
          "up to the last bits of summed times") {
  // Plans that recompute the same nodes sum their times in different orders;
  // the frontier keeps one of such a pair (detail::saves_recompute), and so
  // must the brute force it is compared with.
  auto same = [](double a, double b) { return a == doctest::Approx(b).epsilon(1e-12); };
  std::size_t checked = 0;
  for (std::uint64_t seed = 1; checked < 600; ++seed) {
    const graph g = test::with_real_costs(test::random_dag(4 + seed % 10, seed, 2 + seed % 3, 1 + seed % 3), seed);
    const precedence order = gradient_order_constraints(g);
    const auto plans = test::all_chain_plans(g, 3000, &order);
    if (!plans) continue;
    ++checked;
    CAPTURE(seed);
    std::vector<test::oracle_point> sorted = *plans;
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
      return a.peak != b.peak ? a.peak < b.peak : a.recompute < b.recompute;
    });
    std::vector<test::oracle_point> frontier;
    for (const test::oracle_point& p : sorted)
      if (frontier.empty() || detail::saves_recompute(p.recompute, frontier.back().recompute)) frontier.push_back(p);

    const dp_result exact = solve_dp(g, dp_family::exact);
    CHECK(exact.result.claimed_peak == frontier.front().peak);
    CHECK(same(exact.result.claimed_recompute, frontier.front().recompute));
    CHECK(exact.result.figures.peak_bytes == exact.result.claimed_peak);
    dp_options all;
    all.keep_frontier = true;
    const dp_result pareto = solve_dp(g, dp_family::exact, all);
    REQUIRE(pareto.frontier.size() == frontier.size());
    for (std::size_t i = 0; i < frontier.size(); ++i) {
      CHECK(pareto.frontier[i].peak == frontier[i].peak);
      CHECK(same(pareto.frontier[i].recompute, frontier[i].recompute));
      dp_options time;
      time.goal = objective::time;
      time.budget = i + 1 < frontier.size() ? (frontier[i].peak + frontier[i + 1].peak) / 2 : frontier[i].peak;
      const dp_result t = solve_dp(g, dp_family::exact, time);
      CHECK(same(t.result.claimed_recompute, test::best_time(*plans, time.budget)->recompute));
      CHECK(t.result.figures.peak_bytes <= time.budget);
      time.recompute_floor_after = 0;  // its sums run in another order than the labels'
      const dp_result floored = solve_dp(g, dp_family::exact, time);
      CHECK(same(floored.result.claimed_recompute, test::best_time(*plans, time.budget)->recompute));
      CHECK(floored.result.figures.peak_bytes <= time.budget);
    }
  }
}

TEST_CASE("on GoogLeNet the floor under the recompute left drops most of chain's time-objective labels, not its plan") {
  // 1.25× the least peak: chain's labels there outnumbered its stages a
  // hundredfold, and dominated the time objective that exact answers from
  // its fallbacks (docs/results-solvers.md).
  const graph g = zoo::build("googlenet");
  dp_options least;
  least.peak_only = true;
  const std::uint64_t low = solve_dp(g, dp_family::prefix, least).result.claimed_peak;
  dp_options time;
  time.goal = objective::time;
  time.budget = low + low / 4;
  dp_options unbounded = time;
  unbounded.recompute_floor_after = std::numeric_limits<std::uint64_t>::max();
  const dp_result with = solve_dp(g, dp_family::prefix, time), without = solve_dp(g, dp_family::prefix, unbounded);
  REQUIRE(with.result.status == solve_status::optimal);
  REQUIRE(without.result.status == solve_status::optimal);
  CHECK(with.result.claimed_recompute == without.result.claimed_recompute);
  CHECK(with.result.claimed_peak == without.result.claimed_peak);
  CHECK(with.result.best.stage_of == without.result.best.stage_of);
  MESSAGE("labels: " << with.stats.labels << " with the floor, " << without.stats.labels << " without");
  CHECK(with.stats.labels * 5 < without.stats.labels);
}

TEST_CASE("stage plans run the backwards of a value's consumers in regular training's order") {
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    const graph g = test::random_dag(6 + seed % 14, seed, 3 + seed % 4, 3);
    for (dp_family family : {dp_family::exact, dp_family::principal}) {
      const dp_result r = solve_dp(g, family);
      std::vector<std::size_t> position(g.size(), 0);
      for (std::size_t i = 0; i < r.result.best.steps.size(); ++i)
        if (r.result.best.steps[i].kind == step_kind::backward) position[r.result.best.steps[i].node] = i;
      for (node_id u = 0; u < g.size(); ++u) {
        const auto consumers = g.successors(u);
        if (g.is_input(u) || consumers.size() < 3) continue;  // inputs have no gradient
        for (std::size_t k = 0; k + 1 < consumers.size(); ++k)
          CHECK(position[consumers[k + 1]] < position[consumers[k]]);
      }
    }
  }
}

TEST_CASE("restricted families never beat the exact optimum and report the simulator's figures") {
  for (std::uint64_t seed = 1; seed <= 400; ++seed) {
    const graph g = test::random_dag(4 + seed % 16, seed, 2 + seed % 5, 1 + seed % 3);
    const dp_result exact = solve_dp(g, dp_family::exact);
    for (dp_family family : {dp_family::prefix, dp_family::principal}) {
      const dp_result r = solve_dp(g, family);
      REQUIRE(r.result.status == solve_status::optimal);
      CHECK(r.result.claimed_peak >= exact.result.claimed_peak);
      CHECK(r.result.figures.peak_bytes == r.result.claimed_peak);
      CHECK(r.result.figures.recompute_time == r.result.claimed_recompute);
    }
  }
}

TEST_CASE("stage plans and kept-set plans: neither family contains the other") {
  // The exact programme is optimal over chains of lower sets (stage plans);
  // kept-set plans (schedule_from_kept: recompute just before each backward
  // that reads a value) are another family. docs/results-solvers.md quotes these
  // counts.
  std::size_t graphs = 0, kept_lower = 0, stage_lower = 0;
  for (std::uint64_t seed = 1; seed <= 600; ++seed) {
    const graph g = test::random_dag(3 + seed % 10, seed, 1 + seed % 5, 1 + seed % 3);
    const dp_result stages = solve_dp(g, dp_family::exact);
    REQUIRE(stages.result.status == solve_status::optimal);
    std::vector<node_id> computed;
    for (node_id v = 0; v < g.size(); ++v)
      if (!g.is_input(v)) computed.push_back(v);
    std::uint64_t best_kept = std::numeric_limits<std::uint64_t>::max();
    for (std::uint64_t mask = 0; mask < (1ULL << computed.size()); ++mask) {
      node_set kept(g.size());
      for (std::size_t i = 0; i < computed.size(); ++i)
        if (mask >> i & 1) kept.insert(computed[i]);
      best_kept = std::min(best_kept, simulate(g, schedule_from_kept(g, kept)).peak_bytes);
    }
    CHECK(best_kept >= per_op_floor(g).bytes);
    ++graphs;
    kept_lower += best_kept < stages.result.claimed_peak;
    stage_lower += stages.result.claimed_peak < best_kept;
  }
  MESSAGE(graphs << " graphs: the best kept-set plan peaks lower in " << kept_lower
                 << ", the best stage plan in " << stage_lower);
  CHECK(kept_lower > 0);
  CHECK(stage_lower > 0);
}

TEST_CASE("an infeasible budget says which budget would work") {
  const graph g = test::diamond();
  const dp_result best = solve_dp(g, dp_family::exact);
  dp_options tight;
  tight.goal = objective::time;
  tight.budget = best.result.claimed_peak - 1;
  const dp_result r = solve_dp(g, dp_family::exact, tight);
  CHECK(r.result.status == solve_status::infeasible);
  CHECK(r.result.smallest_feasible_budget == best.result.claimed_peak);
  CHECK(r.result.message.find(std::to_string(best.result.claimed_peak)) != std::string::npos);
}

TEST_CASE("a cap stops the search with the best plan found, never an exception") {
  const graph g = test::inception_like(2);
  dp_options capped;
  capped.max_states = 50;
  const dp_result r = solve_dp(g, dp_family::exact, capped);
  CHECK(r.result.status != solve_status::optimal);
  CHECK(!r.complete);
}

TEST_CASE("past the label cap the plan is the labels' beam plan where it recomputes less than the least-kept chain") {
  // With the beam started early and the cap low, the labels stop before the
  // end; the least-kept chain recomputes 12 and 63 times the optimum here,
  // the beam's plan meets it.
  const graph g = zoo::build("resnet34");
  const dp_result least = solve_dp(g, dp_family::exact, {});
  for (const double times : {1.5, 2.0}) {
    CAPTURE(times);
    dp_options within;
    within.goal = objective::time;
    within.budget = static_cast<std::uint64_t>(static_cast<double>(least.result.claimed_peak) * times);
    const dp_result full = solve_dp(g, dp_family::exact, within);
    REQUIRE(full.result.status == solve_status::optimal);
    dp_options capped = within;
    capped.max_labels = 200;
    capped.recompute_floor_after = 64;
    const dp_result r = solve_dp(g, dp_family::exact, capped);
    REQUIRE(r.labels_capped);
    detail::dp_engine engine(g, capped);
    REQUIRE(engine.enumerate(dp_family::exact, capped.budget));
    const double least_kept = engine.chain_figures(engine.least_kept_path(capped.budget, *engine.final_state())).second;
    CHECK(r.result.status == solve_status::feasible);
    CHECK(r.result.message.find("label cap") != std::string::npos);
    CHECK(r.result.figures.peak_bytes <= within.budget);
    CHECK(r.result.figures.peak_bytes == r.result.claimed_peak);
    CHECK(r.result.figures.recompute_time == doctest::Approx(r.result.claimed_recompute).epsilon(1e-12));
    CHECK(r.result.claimed_recompute >= full.result.claimed_recompute * (1 - 1e-12));
    CHECK(r.result.claimed_recompute < least_kept / 2);
  }
}

TEST_CASE("where the labels outgrow a coarse floor under the recompute left, a finer one keeps them under the cap") {
  // GoogLeNet's interval stages in the consumers-first order at twice their
  // least peak: with the floor built once, about 300,000 labels; built again
  // with finer levels as they grow, about 50,000.
  const graph g0 = zoo::build("googlenet");
  const graph g = reorder_graph(g0, consumers_first(g0, true));
  const dp_result least = solve_dp(g, dp_family::prefix, {});
  dp_options within;
  within.goal = objective::time;
  within.budget = 2 * least.result.claimed_peak;
  const dp_result full = solve_dp(g, dp_family::prefix, within);
  REQUIRE(full.result.status == solve_status::optimal);
  dp_options early = within;
  early.recompute_floor_after = 16;
  early.max_labels = 100'000;
  const dp_result r = solve_dp(g, dp_family::prefix, early);
  CHECK_FALSE(r.labels_capped);
  CHECK(r.stats.labels < early.max_labels);
  CHECK(r.result.status == solve_status::optimal);
  CHECK(r.result.claimed_recompute == doctest::Approx(full.result.claimed_recompute).epsilon(1e-12));
  CHECK(r.result.figures.peak_bytes <= within.budget);
}

TEST_CASE("stage costs from piece summaries (and from the heads and tails they reuse) equal those walked node by node") {
  // Series graphs with many pieces: narrow random DAGs (integer times, so
  // recompute sums are exact), chains, and ResNet-like blocks.
  std::vector<graph> graphs;
  for (std::uint64_t seed = 1; seed <= 160; ++seed)
    graphs.push_back(test::random_dag(8 + seed % 12, seed, 1 + seed % 2, 1 + seed % 2));
  graphs.push_back(test::resnet_like(5, 2));
  graphs.push_back(test::pspnet_like(4));
  graphs.push_back(test::densenet_like(3, 3));
  std::size_t stages = 0, summarised = 0;
  for (const graph& g : graphs) {
    const series_decomposition pieces = decompose_series(g);
    detail::stage_evaluator by_pieces(g, pieces), reusing(g, pieces), by_nodes(g, pieces, false);
    std::vector<node_set> sets;
    enumerate_lower_sets(g, [&](const node_set& s) {
      sets.push_back(s);
      return sets.size() < 300;
    });
    for (std::uint32_t base_id = 0; base_id < sets.size(); ++base_id) {
      const node_set& base = sets[base_id];
      std::vector<node_id> frontier;
      std::uint64_t params_in_base = 0;
      for (node_id u = 0; u < g.size(); ++u) {
        if (!base.contains(u)) continue;
        params_in_base += g.params(u);
        for (node_id c : g.successors(u))
          if (!base.contains(c)) {
            frontier.push_back(u);
            break;
          }
      }
      const auto in_base = [&](node_id u) { return base.contains(u); };
      for (std::uint32_t top_id = 0; top_id < sets.size(); ++top_id) {
        const node_set& top = sets[top_id];
        std::vector<node_id> stage;
        bool superset = true;
        for (node_id u = 0; u < g.size() && superset; ++u) {
          if (base.contains(u) && !top.contains(u)) superset = false;
          if (top.contains(u) && !base.contains(u)) stage.push_back(u);
        }
        if (!superset || stage.empty()) continue;
        const detail::stage_cost a = by_pieces.evaluate(in_base, stage, frontier, params_in_base);
        const detail::stage_cost b = by_nodes.evaluate(in_base, stage, frontier, params_in_base);
        const detail::stage_cost c = reusing.evaluate(in_base, stage, frontier, params_in_base, nullptr, base_id, top_id);
        ++stages;
        summarised += pieces.piece_of[stage.back()] >= pieces.piece_of[stage.front()] + 3 ? 1 : 0;
        REQUIRE(a.kept_added == b.kept_added);
        REQUIRE(a.peak == b.peak);
        REQUIRE(a.recompute == doctest::Approx(b.recompute).epsilon(1e-12));
        REQUIRE(c.kept_added == a.kept_added);
        REQUIRE(c.peak == a.peak);
        REQUIRE(c.recompute == doctest::Approx(a.recompute).epsilon(1e-12));
      }
    }
  }
  MESSAGE(stages << " stages, " << summarised << " of them across whole pieces");
  CHECK(summarised > 10000);
}

TEST_CASE("lower sets: counting per piece equals full enumeration") {
  for (std::uint64_t seed = 1; seed <= 100; ++seed) {
    const graph g = test::random_dag(5 + seed % 15, seed, 1 + seed % 4, 1 + seed % 3);
    std::uint64_t enumerated = 0;
    enumerate_lower_sets(g, [&](const node_set& s) {
      for (std::size_t v = 0; v < g.size(); ++v)
        if (s.contains(v))
          for (node_id p : g.predecessors(v)) CHECK((g.is_input(p) || s.contains(p)));
      ++enumerated;
      return true;
    });
    CHECK(count_lower_sets(g).count == enumerated);
  }
  const graph r = test::resnet_like(10);
  const lower_set_count c = count_lower_sets(r);
  CHECK(decompose_series(r).pieces.size() > 10);
  std::uint64_t all = 0;
  enumerate_lower_sets(r, [&](const node_set&) { return ++all, true; });
  CHECK(c.count == all);
}

}  // TEST_SUITE
