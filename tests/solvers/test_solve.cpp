// remat::solve: every method gives a valid plan whose claims are the
// simulator's, exact is never beaten by the scalable families, and hard
// instances end with a status and a bound instead of an exception.

#include <doctest/doctest.h>

#include <chrono>
#include <limits>
#include <vector>

#include <remat/solve.hpp>
#include <remat/zoo/generators.hpp>
#include <remat/zoo/models.hpp>

#include "../support/oracle.hpp"
#include "../support/random_graphs.hpp"
#include "../support/shaped_graphs.hpp"

using namespace remat;

namespace {

// exact over stage plans alone: no general plan first (test_exact_general.cpp tests that step).
solve_options stage_plans() {
  solve_options o;
  o.general_search_work = 0;
  return o;
}

}  // namespace

TEST_SUITE("solve") {

TEST_CASE("every method: valid plan, figures are the plan's, the stage programmes' claims are the simulator's, "
          "exact never beaten") {
  // Up to 22 nodes: wider random DAGs reach 10⁴–10⁵ lower sets and take the
  // exact programme tens of seconds each (bench/ measures those).
  for (std::uint64_t seed = 1; seed <= 150; ++seed) {
    const graph g = test::random_dag(5 + seed % 18, seed, 2 + seed % 5, 1 + seed % 3);
    std::uint64_t exact_peak = 0;
    bool exact_proven = false;
    for (method m : all_methods) {
      solve_options o;
      o.method = m;
      const solution s = solve(g, o);
      REQUIRE(s.status != solve_status::infeasible);
      // The figures are the returned plan's own, not another candidate's.
      const simulation again = simulate(g, s.best.steps);
      CHECK(again.peak_bytes == s.figures.peak_bytes);
      CHECK(again.recompute_time == s.figures.recompute_time);
      // The lower-set programmes work out peak and recompute themselves (the
      // other methods take theirs from the simulator): the two must agree.
      if (m == method::dp || m == method::chain || m == method::approx) {
        CHECK(s.claimed_peak == again.peak_bytes);
        CHECK(s.claimed_recompute == doctest::Approx(again.recompute_time).epsilon(1e-9));
      }
      CHECK(s.peak_lower_bound <= s.claimed_peak);
      CHECK(s.best.method == to_string(m));
      if (m == method::exact) {
        exact_proven = s.status == solve_status::optimal;
        if (!exact_proven) CHECK(s.message.find("lower sets") != std::string::npos);
        exact_peak = s.claimed_peak;
      } else if (m == method::chain || m == method::approx || m == method::mincut ||
                 (exact_proven && (m == method::dp || m == method::sqrt || m == method::every_k))) {
        // Stage plans: never below the exact optimum (a fallback exact is the
        // best of them). none, ogc, ogc-exact and kept-search are kept-set
        // plans, another family (docs/algorithms.md compares the two).
        CHECK(s.claimed_peak >= exact_peak);
      }
    }
  }
}

TEST_CASE("exact over stage plans on the zoo's ResNets and DenseNets is optimal; on Inception v3 it proves the "
          "fallback's peak least, on DARTS it gives a bound") {
  for (const char* name : {"resnet50", "densenet121"}) {
    const solution s = solve(zoo::build(name), stage_plans());
    CHECK(s.status == solve_status::optimal);
    CHECK(s.peak_lower_bound == s.claimed_peak);
  }
  const solution inception = solve(zoo::build("inception-v3"), stage_plans());
  CHECK(inception.status == solve_status::optimal);
  CHECK(inception.message.find("least peak proven") != std::string::npos);
  CHECK(inception.message.find("recompute is not minimised") != std::string::npos);
  CHECK(inception.peak_lower_bound == inception.claimed_peak);
  CHECK(inception.figures.peak_bytes == inception.claimed_peak);
  const solution darts = solve(zoo::build("darts-cifar10"), stage_plans());
  CHECK(darts.status == solve_status::feasible);
  CHECK(darts.message.find("lower sets") != std::string::npos);
  // The message names what was tried: no principal lower sets on 1,047 nodes,
  // the bounded search and where it stopped, and what the bound is (a
  // subgraph's, or the per-op floor if the machine left it no time:
  // test_subgraph_bound.cpp checks both).
  CHECK(darts.message.find("principal lower sets only up to 600 nodes") != std::string::npos);
  CHECK(darts.message.find("a search for a plan below its peak stopped at its cap") != std::string::npos);
  CHECK(darts.message.find("the lower bound") != std::string::npos);
  CHECK(darts.peak_lower_bound >= per_op_floor(zoo::build("darts-cifar10")).bytes);
  CHECK(darts.peak_lower_bound > 0);
  CHECK(darts.peak_lower_bound < darts.claimed_peak);
  CHECK(darts.figures.peak_bytes == darts.claimed_peak);
}

TEST_CASE("exact in the best order: the better of both orders' brute-force optima, proven over both") {
  std::size_t checked = 0, other_won = 0, graph_won = 0;
  for (std::uint64_t seed = 1; seed <= 1500 && checked < 300; ++seed) {
    const graph g = test::random_dag(4 + seed % 9, seed, 2 + seed % 4, 1 + seed % 3);
    const precedence constraints = gradient_order_constraints(g);
    const std::vector<node_id> order = consumers_first_order(g, constraints);
    if (is_id_order(order)) continue;
    const graph h = reorder_graph(g, order);
    const precedence constraints_h = gradient_order_constraints(h);
    const auto in_g = test::all_chain_plans(g, 3000, &constraints);
    const auto in_h = test::all_chain_plans(h, 3000, &constraints_h);
    if (!in_g || !in_h) continue;
    ++checked;
    const test::oracle_point best_g = test::best_memory(*in_g), best_h = test::best_memory(*in_h);
    const bool h_better = best_h.peak < best_g.peak || (best_h.peak == best_g.peak && best_h.recompute < best_g.recompute);
    const test::oracle_point expect = h_better ? best_h : best_g;
    solve_options both;
    both.order = order_choice::best;
    both.general_time_limit = std::chrono::milliseconds(0);  // stage plans, as the brute force
    const solution s = solve(g, both);
    REQUIRE(s.status == solve_status::optimal);
    CHECK(s.claimed_peak == expect.peak);
    CHECK(s.claimed_recompute == expect.recompute);
    CHECK(s.peak_lower_bound == s.claimed_peak);
    CHECK(s.best.order.empty() == !h_better);
    CHECK(s.figures.peak_bytes == simulate(g, s.best.steps).peak_bytes);
    if (s.best.stage_of.empty()) {
      // Regular training already at the per-op floor: no order does better, and only one was solved.
      CHECK(s.message.find("regular training already peaks at the per-op floor") != std::string::npos);
    } else {
      CHECK(s.best.steps == schedule_from_stages(g, s.best.stage_of, s.best.order));
      // At the per-op floor the graph's order is not compared with another: none goes lower.
      if (s.claimed_peak > per_op_floor(g).bytes)
        CHECK(s.message.find(h_better ? "run in the consumers-first order" : "run in the graph's order") !=
              std::string::npos);
    }
    (h_better ? other_won : graph_won) += 1;

    // The time objective at the lower of the two least peaks: the least
    // recompute within it over both orders, and just below it, infeasible in
    // both, naming that peak.
    solve_options timed = both;
    timed.goal = objective::time;
    timed.budget = expect.peak;
    const auto time_g = test::best_time(*in_g, expect.peak), time_h = test::best_time(*in_h, expect.peak);
    double least = std::numeric_limits<double>::infinity();
    if (time_g) least = std::min(least, time_g->recompute);
    if (time_h) least = std::min(least, time_h->recompute);
    const solution t = solve(g, timed);
    CHECK(t.status == solve_status::optimal);
    CHECK(t.claimed_recompute == least);
    CHECK(t.claimed_peak <= expect.peak);
    timed.budget = expect.peak - 1;
    const solution below = solve(g, timed);
    CHECK(below.status == solve_status::infeasible);
    CHECK(below.smallest_feasible_budget == expect.peak);

    // Each order alone is its own optimum.
    solve_options one = both;
    one.order = order_choice::graph;
    CHECK(solve(g, one).claimed_peak == best_g.peak);
    one.order = order_choice::consumers_first;
    const solution in_other = solve(g, one);
    CHECK(in_other.claimed_peak == best_h.peak);
    CHECK(in_other.best.order == order);
  }
  MESSAGE(checked << " graphs whose orders differ: the consumers-first order won " << other_won
                  << ", the graph's order " << graph_won);
  CHECK(checked >= 200);
  CHECK(other_won > 0);
  CHECK(graph_won > 0);
}

TEST_CASE("on the zoo's NAS networks and ResNets the consumers-first order lowers exact's plan; by default only "
          "past the lower-set cap") {
  const graph resnet = zoo::build("resnet50");
  CHECK(solve(resnet, stage_plans()).best.order.empty());  // 241 lower sets: the graph's order, proven optimal there
  for (const char* name : {"resnet50", "darts-cifar10"}) {
    const graph g = zoo::build(name);
    solve_options graph_order = stage_plans(), both = stage_plans();
    graph_order.order = order_choice::graph;
    both.order = order_choice::best;
    const solution in_graph = solve(g, graph_order);
    const solution best = solve(g, both);
    CAPTURE(name);
    CHECK(best.claimed_peak < in_graph.claimed_peak);
    CHECK(!best.best.order.empty());
    CHECK(best.figures.peak_bytes == best.claimed_peak);
    CHECK(best.peak_lower_bound <= best.claimed_peak);
    CHECK(best.message.find("run in the consumers-first order (the graph's order peaks at") != std::string::npos);
  }
  // Past the cap (DARTS: over 10⁸ lower sets) the default tries both orders.
  CHECK(!solve(zoo::build("darts-cifar10"), stage_plans()).best.order.empty());
}

TEST_CASE("past the lower-set cap, the bounded search below a plan proves or finds the exact programme's least peak") {
  std::size_t proven = 0, graphs = 0, above = 0, found = 0;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    const graph g = test::random_dag(6 + seed % 14, seed, 2 + seed % 4, 1 + seed % 3);
    solve_options graph_order = stage_plans();  // one order: the search below a plan works in the order it is given
    graph_order.order = order_choice::graph;
    graph_order.general_time_limit = std::chrono::milliseconds(0);  // the stage optimum
    const solution full = solve(g, graph_order);
    if (full.status != solve_status::optimal || full.stats.count("lower sets") <= 24) continue;
    ++graphs;
    solve_options capped = graph_order;  // just below the graph's count: exact falls back, and may prove the fallback's peak
    capped.max_lower_sets = full.stats.count("lower sets") - 1;
    const solution s = solve(g, capped);
    CHECK(s.figures.peak_bytes == s.claimed_peak);
    CHECK(s.claimed_peak >= full.claimed_peak);
    CHECK(s.peak_lower_bound <= full.claimed_peak);
    if (s.status == solve_status::optimal) {
      ++proven;
      CHECK(s.claimed_peak == full.claimed_peak);
      CHECK(s.peak_lower_bound == s.claimed_peak);
    }
    // Handed a plan above the optimum (regular training), the search below it
    // stops at the caps that made exact fall back, and says so; with room to
    // complete it returns the optimum in the plan's place.
    solve_options none;
    none.method = method::none;
    const solution regular = solve(g, none);
    if (regular.claimed_peak > full.claimed_peak) {
      ++above;
      const time_budget minute = time_budget::within(std::chrono::seconds(60));
      exact_options capped_exact;
      capped_exact.max_lower_sets = capped.max_lower_sets;
      solution stopped = regular;
      const std::string why = detail::prove_least_peak(g, capped_exact, minute, stopped);
      if (stopped.status != solve_status::optimal) {
        CHECK(stopped.status == solve_status::feasible);
        CHECK(why.find("stopped at its cap") != std::string::npos);
        CHECK(stopped.claimed_peak == regular.claimed_peak);
      } else {
        CHECK(stopped.claimed_peak == full.claimed_peak);
      }
      exact_options roomy;  // the search's caps count stages too, which outnumber lower sets
      roomy.max_lower_sets = 10'000'000;
      solution replaced = regular;
      CHECK(detail::prove_least_peak(g, roomy, minute, replaced).empty());
      CHECK(replaced.status == solve_status::optimal);
      CHECK(replaced.claimed_peak == full.claimed_peak);
      CHECK(replaced.peak_lower_bound == full.claimed_peak);
      CHECK(replaced.figures.peak_bytes == full.claimed_peak);
      CHECK(simulate(g, schedule_from_stages(g, replaced.best.stage_of)).peak_bytes == full.claimed_peak);
      found += replaced.status == solve_status::optimal;
    }
  }
  MESSAGE(proven << " of " << graphs << " capped solves proven least-peak; of " << above
               << " plans above the optimum, the search with room replaced " << found << " by the optimum");
  CHECK(graphs >= 100);
  CHECK(proven >= 10);
  CHECK(above >= 50);
  CHECK(found == above);
}

TEST_CASE("mincut: nested min-cut stages, the per-op floor as bound, and an impossible budget named") {
  const graph g = test::densenet_like(3, 6);
  solve_options o;
  o.method = method::mincut;
  const solution s = solve(g, o);
  CHECK(s.status == solve_status::feasible);
  CHECK(s.peak_lower_bound == per_op_floor(g).bytes);
  const simulation measured = simulate(g, schedule_from_stages(g, s.best.stage_of));
  CHECK(s.figures.peak_bytes == measured.peak_bytes);
  CHECK(s.figures.recompute_time == measured.recompute_time);
  CHECK(s.claimed_peak < simulate(g, plan_none(g).steps).peak_bytes);
  o.goal = objective::time;
  o.budget = s.peak_lower_bound - 1;
  const solution below = solve(g, o);
  CHECK(below.status == solve_status::infeasible);
  CHECK(below.smallest_feasible_budget >= s.claimed_peak);
  CHECK(below.message.find("least peak") != std::string::npos);
}

TEST_CASE("time objective: within the budget, infeasible budgets name the smallest feasible one") {
  const graph g = test::resnet_like(12);
  const solution least = solve(g, stage_plans());
  solve_options o = stage_plans();
  o.goal = objective::time;
  o.budget = least.claimed_peak;
  const solution at = solve(g, o);
  CHECK(at.status == solve_status::optimal);
  CHECK(at.claimed_peak <= least.claimed_peak);
  o.budget = least.claimed_peak - 1;
  const solution below = solve(g, o);
  CHECK(below.status == solve_status::infeasible);
  CHECK(below.smallest_feasible_budget == least.claimed_peak);
  o.budget = simulate(g, plan_none(g).steps).peak_bytes * 2;
  CHECK(solve(g, o).claimed_recompute <= at.claimed_recompute);
}

TEST_CASE("exact: where regular training already peaks at the per-op floor, it is proven optimal at once") {
  // Weights dwarf activations (the forum user's situation): the parameter
  // gradients at the first layer's backward set the peak of every plan.
  zoo::chain_options c;
  c.length = 20000;
  c.batch = 4;
  const graph g = zoo::chain(c);
  const solution s = solve(g);
  CHECK(s.status == solve_status::optimal);
  CHECK(s.best.method == "exact");
  CHECK(s.claimed_recompute == 0);
  CHECK(s.claimed_peak == per_op_floor(g).bytes);
  CHECK(s.figures.peak_bytes == s.claimed_peak);
  CHECK(s.stats.seconds < 60);  // a guard against the quadratic search, not a speed target

  solve_options tight;
  tight.budget = s.claimed_peak - 1;
  const solution below = solve(g, tight);
  CHECK(below.status == solve_status::infeasible);
}

TEST_CASE("caps and time limits end with the best plan found, never an exception or hang") {
  const graph g = test::inception_like(4);
  solve_options o;
  o.max_lower_sets = 10;
  const solution capped = solve(g, o);
  CHECK(capped.status == solve_status::feasible);
  CHECK(capped.figures.peak_bytes == capped.claimed_peak);
  o.max_lower_sets = 1u << 20;
  o.time_limit = std::chrono::milliseconds(50);
  const solution timed = solve(g, o);
  CHECK(timed.status != solve_status::optimal);
  CHECK(!timed.best.steps.empty());
  for (method m : all_methods) {  // a 1 ms limit still ends with a plan or a reason
    solve_options quick;
    quick.method = m;
    quick.time_limit = std::chrono::milliseconds(1);
    const solution s = solve(g, quick);
    CHECK_MESSAGE((!s.best.steps.empty() || !s.message.empty()), to_string(m));
    // Without a plan the status says why: a proven impossibility or a stop, never "feasible".
    if (s.best.steps.empty())
      CHECK_MESSAGE((s.status == solve_status::stopped || s.status == solve_status::infeasible), to_string(m));
  }
  // Kusumoto's principal family lists ↓v for every node first, O(n·(n + m))
  // time and up to n²/2 ids: on a 3,456-node NAS stack the list itself stops
  // at a 1 ms limit.
  zoo::nas_stack_options stack;
  stack.network.cells = 64;
  solve_options principal;
  principal.method = method::approx;
  principal.time_limit = std::chrono::milliseconds(1);
  const solution listed = solve(zoo::nas_stack(stack), principal);
  CHECK(listed.status == solve_status::stopped);
  CHECK(listed.stats.time_limit_reached);
  // The lower-set programme alone, stopped before any complete plan, says it
  // stopped: nothing is proven, so the budget is not called infeasible.
  solve_options dp_only;
  dp_only.method = method::dp;
  dp_only.max_lower_sets = 1u << 20;
  dp_only.time_limit = std::chrono::milliseconds(20);
  const solution stopped = solve(zoo::build("inception-v3"), dp_only);
  CHECK(stopped.status == solve_status::stopped);
  CHECK(to_string(stopped.status) == "stopped");
  CHECK(stopped.best.steps.empty());
  CHECK(stopped.stats.time_limit_reached);
  CHECK(stopped.message.find("stopped by the time limit before any complete plan was found") != std::string::npos);
  // Whichever phase the limit ends (stages, or the labels after them), the
  // status and the message say what was proven. DenseNet-201: about 0.3 s in all.
  const graph dense = zoo::build("densenet201");
  for (int ms : {20, 60, 150, 300}) {
    dp_only.time_limit = std::chrono::milliseconds(ms);
    const solution s = solve(dense, dp_only);
    if (s.best.steps.empty()) {
      CHECK(s.status == solve_status::stopped);
      continue;
    }
    CHECK(s.figures.peak_bytes == s.claimed_peak);
    if (s.status == solve_status::feasible) CHECK(s.message.find("not proven") != std::string::npos);
    if (s.status == solve_status::optimal && s.stats.time_limit_reached)
      CHECK(s.message.find("least peak proven; recompute not minimised") != std::string::npos);
  }
  CHECK_THROWS_AS((void)solve(g, [] {
    solve_options k;
    k.method = method::every_k;
    k.every_k = 0;
    return k;
  }()), error);
}

TEST_CASE("max_memory: past the ceiling every search ends with its best plan and says the memory stopped it") {
  if (!memory_ceiling::supported()) {
    MESSAGE("skipped: this platform does not report the process's memory");
    return;
  }
  // A ceiling sees memory the process touches after it is set.
  memory_ceiling ceiling(1 << 20);
  CHECK(!ceiling.reached());
  std::vector<char> touched(64 << 20, 1);
  const auto later = memory_ceiling::clock::now() + std::chrono::milliseconds(2);
  CHECK(ceiling.exceeded(later));
  CHECK(ceiling.reached());
  CHECK(ceiling.most_seen() >= (32u << 20));
  CHECK(time_budget::unlimited().with_memory(ceiling).expired());
  CHECK(time_budget::unlimited().with_memory(ceiling).share(1, 2).expired());
  touched = {};

  // Each search on a 3,456-node NAS stack allocates more than one byte long
  // before its 60 s: every method stops there, with a plan or a stated stop.
  zoo::nas_stack_options stack;
  stack.network.cells = 64;
  const graph g = zoo::nas_stack(stack);
  for (method m : all_methods) {
    if (m == method::none || m == method::sqrt || m == method::every_k) continue;  // they search nothing
    solve_options o;
    o.method = m;
    o.max_lower_sets = 1u << 30;
    o.max_memory = 1;
    const solution s = solve(g, o);
    INFO(to_string(m), ": ", s.message);
    CHECK(s.stats.memory_limit_reached);
    CHECK(!s.stats.time_limit_reached);
    CHECK(s.unproven() == unproven_reason::memory_limit);
    CHECK(s.message.rfind("stopped at the memory ceiling", 0) == 0);
    CHECK(s.message.find("time limit") == std::string::npos);  // the ceiling stopped it, not the clock
    CHECK(s.stats.seconds < 30);
    if (!s.best.steps.empty()) CHECK(simulate(g, s.best.steps).peak_bytes == s.figures.peak_bytes);
    else CHECK(s.status == solve_status::stopped);
  }
}

TEST_CASE("a graph of inputs alone: the empty plan holds the resident bytes, and a budget below them is infeasible") {
  // The stage programmes claimed a peak of 0 and met any budget (found by
  // tests/fuzz/fuzz_solve.cpp).
  graph_builder b;
  b.add({.name = "x", .op = "input", .bytes = 60});
  b.add({.name = "y", .op = "input", .bytes = 40});
  const graph g = std::move(b).build();
  for (method m : all_methods)
    for (objective goal : {objective::memory, objective::time}) {
      CAPTURE(to_string(m));
      CAPTURE(goal == objective::time);
      solve_options o;
      o.method = m;
      o.goal = goal;
      o.budget = 100;
      const solution fits = solve(g, o);
      CHECK(fits.status != solve_status::infeasible);
      CHECK(fits.claimed_peak == 100);
      CHECK(fits.figures.peak_bytes == 100);
      o.budget = 99;
      const solution below = solve(g, o);
      CHECK(below.status == solve_status::infeasible);
      CHECK((below.smallest_feasible_budget == 0 || below.smallest_feasible_budget == 100));
    }
}

}  // TEST_SUITE

TEST_CASE("each method counts in its own words and says why its plan is not proven") {
  const graph g = zoo::build("resnet18");
  auto run = [&](method m) {
    solve_options o;
    o.method = m;
    return solve(g, o);
  };
  const solution exact = run(method::exact);  // a general plan at the per-op floor
  CHECK(exact.status == solve_status::optimal);
  CHECK(exact.unproven() == unproven_reason::none);
  CHECK(exact.stats.count("general plans simulated") > 0);
  const solution stages = solve(g, stage_plans());
  CHECK(stages.status == solve_status::optimal);
  CHECK(stages.stats.count("lower sets") > 0);
  CHECK(stages.stats.count("stages evaluated") > 0);

  const solution mincut = run(method::mincut);
  CHECK(mincut.unproven() == unproven_reason::no_proof);
  CHECK(mincut.stats.count("plans simulated") > 0);
  CHECK(mincut.stats.count("minimum cuts") > 0);
  CHECK(mincut.stats.count("lower sets") == 0);

  const solution kept = run(method::kept_search);
  CHECK(kept.unproven() == unproven_reason::no_proof);
  CHECK(kept.stats.count("plans simulated") >= kept.stats.count("toggles taken"));
  CHECK(kept.stats.count("plans simulated") > 0);

  const solution ogc = run(method::ogc);
  CHECK(ogc.stats.count("division pieces") > 0);
  CHECK(ogc.stats.count("candidate maxima") > 0);

  const solution ogc_exact = run(method::ogc_exact);
  CHECK(ogc_exact.stats.count("sweeps") > 0);
  CHECK(ogc_exact.stats.count("labels") > 0);

  CHECK(run(method::none).stats.counts.empty());

  // A limit that leaves no time: the plan is unproven for want of time.
  const graph big = zoo::build("darts-cifar10");
  solve_options rushed;
  rushed.time_limit = std::chrono::milliseconds(1);
  const solution s = solve(big, rushed);
  CHECK(s.status != solve_status::optimal);
  CHECK(s.unproven() == unproven_reason::time_limit);
}
