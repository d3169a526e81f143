// remat::pareto_frontier: the exact frontier where its labels fit, a sampled
// one (each point optimal for its budget, status feasible) where they do not,
// and the least-peak plan alone when the time limit ends the labels.

#include <doctest/doctest.h>

#include <algorithm>

#include <remat/solvers/pareto.hpp>
#include <remat/zoo/models.hpp>

using namespace remat;

namespace {

pareto_options in_graph_order() {
  pareto_options options;
  options.order = order_choice::graph;
  return options;
}

// Checks that p's stages simulate to its figures, and returns the least
// recompute of `exact` (g's exact frontier) within p's peak.
double least_recompute_within(const graph& g, const frontier_point& p, const pareto_result& exact) {
  const simulation sim = simulate(g, schedule_from_stages(g, p.stage_of));
  CHECK(sim.peak_bytes == p.peak);
  // the DP and the simulator add the same times in different orders
  CHECK(sim.recompute_time == doctest::Approx(p.recompute).epsilon(1e-12));
  const auto on_frontier = std::find_if(exact.points.rbegin(), exact.points.rend(),
                                        [&](const frontier_point& q) { return q.peak <= p.peak; });
  REQUIRE(on_frontier != exact.points.rend());
  return on_frontier->recompute;
}

// The frontier of g in the graph's order with at most `max_labels` labels is
// sampled: at least `min_points` points from the least peak to the least
// recompute of `exact` (g's exact frontier), by rising peak and falling
// recompute, each what its stages simulate to and the least recompute
// `exact` has within its peak.
void check_sampled(const graph& g, std::uint64_t max_labels, const pareto_result& exact, std::size_t min_points) {
  pareto_options capped = in_graph_order();
  capped.max_labels = max_labels;
  const pareto_result r = pareto_frontier(g, capped);
  CHECK(r.status == solve_status::feasible);
  CHECK(r.message.find("sampled at 24 budgets") != std::string::npos);
  const std::vector<frontier_point>& sampled = r.points;
  REQUIRE(sampled.size() >= min_points);
  CHECK(sampled.front().peak == exact.points.front().peak);
  CHECK(sampled.back().recompute == doctest::Approx(exact.points.back().recompute).epsilon(1e-12));
  for (std::size_t i = 0; i < sampled.size(); ++i) {
    const frontier_point& p = sampled[i];
    if (i > 0) {
      CHECK(p.peak > sampled[i - 1].peak);
      CHECK(p.recompute < sampled[i - 1].recompute);
    }
    CHECK(least_recompute_within(g, p, exact) == doctest::Approx(p.recompute).epsilon(1e-12));
  }
}

}  // namespace

TEST_SUITE("pareto") {

TEST_CASE("past the label cap the frontier is sampled: never empty, never called optimal, every point optimal for its budget") {
  // In the graph's order: a frontier merged from two orders keeps each sampled
  // point optimal for its budget among the plans of its own order only.
  const graph g = zoo::build("resnet18");
  const pareto_result exact = pareto_frontier(g, in_graph_order());
  REQUIRE(exact.status == solve_status::optimal);
  REQUIRE(exact.points.size() > 3);

  check_sampled(g, 64, exact, 2);
}

TEST_CASE("a sample whose labels outgrow the cap gets a least-kept plan within its budget, marked, and said") {
  const graph g = zoo::build("resnet18");
  const pareto_result exact = pareto_frontier(g, in_graph_order());
  REQUIRE(exact.status == solve_status::optimal);
  // Every budget's labels number about the same on ResNet-18: raise the cap
  // in small steps until some budgets fit under it and others do not.
  auto sample = [&](std::uint64_t max_labels, bool stand_in) {
    dp_options capped;
    capped.goal = objective::time;
    capped.max_labels = max_labels;
    detail::dp_engine engine(g, capped);
    engine.enumerate(dp_family::exact, capped.budget);
    return engine.sample_frontier(*engine.final_state(), capped.budget, frontier_sample_count, stand_in);
  };
  auto mixed = [](const detail::frontier_sampling& s) {
    return std::any_of(s.plans.begin(), s.plans.end(), [](const frontier_point& p) { return p.least_recompute; }) &&
           std::any_of(s.plans.begin(), s.plans.end(), [](const frontier_point& p) { return !p.least_recompute; });
  };
  std::uint64_t cap = 64;
  detail::frontier_sampling with = sample(cap, true);
  while (!with.all && !mixed(with)) with = sample(cap += cap / 32 + 1, true);
  CAPTURE(cap);
  REQUIRE(mixed(with));
  const detail::frontier_sampling without = sample(cap, false);
  CHECK_FALSE(with.all);
  CHECK_FALSE(without.all);
  std::size_t stand_ins = 0;
  for (const frontier_point& p : with.plans) {
    const double least = least_recompute_within(g, p, exact);
    if (p.least_recompute) {
      CHECK(least == doctest::Approx(p.recompute).epsilon(1e-12));
    } else {
      ++stand_ins;
      CHECK(p.recompute >= least * (1 - 1e-12));
    }
  }
  MESSAGE("cap " << cap << ": " << with.plans.size() << " samples, " << stand_ins << " of them least-kept plans");
  // Without stand-ins the sampling ends at the first budget whose labels do
  // not fit: what it has is a prefix of the samples, each the least recompute.
  REQUIRE(without.plans.size() < with.plans.size());
  for (std::size_t i = 0; i < without.plans.size(); ++i) {
    CHECK(without.plans[i].least_recompute);
    CHECK(without.plans[i].peak == with.plans[i].peak);
  }
  CHECK(detail::sampled_message(true, true, false, 2).find("except 2 stand-in plans") != std::string::npos);
}

TEST_CASE("in both orders the frontier merges the two: each point is its order's plan, and neither frontier beats it") {
  const graph g = zoo::build("resnet50");
  pareto_options in_both;
  in_both.order = order_choice::best;
  const pareto_result both = pareto_frontier(g, in_both);
  pareto_options one;
  one.order = order_choice::graph;
  const pareto_result in_graph = pareto_frontier(g, one);
  one.order = order_choice::consumers_first;
  const pareto_result in_other = pareto_frontier(g, one);
  REQUIRE(both.status == solve_status::optimal);
  REQUIRE(!both.points.empty());
  CHECK(both.message.find("the graph's order or the consumers-first order") != std::string::npos);
  CHECK(both.points.front().peak == std::min(in_graph.points.front().peak, in_other.points.front().peak));
  bool some_other = false;
  for (std::size_t i = 0; i < both.points.size(); ++i) {
    const frontier_point& p = both.points[i];
    if (i > 0) {
      CHECK(p.peak > both.points[i - 1].peak);
      CHECK(p.recompute < both.points[i - 1].recompute);
    }
    some_other = some_other || !p.order.empty();
    const simulation sim = simulate(g, schedule_from_stages(g, p.stage_of, p.order));
    CHECK(sim.peak_bytes == p.peak);
    CHECK(sim.recompute_time == doctest::Approx(p.recompute).epsilon(1e-12));
    for (const pareto_result* r : {&in_graph, &in_other})
      for (const frontier_point& q : r->points)
        CHECK_FALSE((q.peak <= p.peak && detail::saves_recompute(q.recompute, p.recompute)));
  }
  CHECK(some_other);
}

TEST_CASE("the time limit holds in the label phase: the frontier stops with the least-peak plan, saying so") {
  // Inception v3's prefix-family labels take seconds (17 s in the CLI); within
  // 50 ms only the stages and the least peak are done.
  const graph g = zoo::build("inception-v3");
  pareto_options quick = in_graph_order();
  quick.time = time_budget::within(std::chrono::milliseconds(50));
  const pareto_result r = pareto_frontier(g, quick);
  CHECK(r.status == solve_status::feasible);
  CHECK(r.stats.time_limit_reached);
  CHECK(r.message.find("stopped by the time limit before the frontier") != std::string::npos);
  REQUIRE(r.points.size() == 1);
  const simulation sim = simulate(g, schedule_from_stages(g, r.points.front().stage_of));
  CHECK(sim.peak_bytes == r.points.front().peak);
  CHECK(sim.recompute_time == doctest::Approx(r.points.front().recompute).epsilon(1e-12));
  // Without a limit the prefix family's least peak is the frontier's first point.
  dp_options least;
  least.peak_only = true;
  CHECK(solve_dp(g, dp_family::prefix, least).result.claimed_peak <= r.points.front().peak);
}

TEST_CASE("a deep network's frontier is exact, the least recompute at each budget lies on it, and so do its samples") {
  // ResNet-50: 528 points in the graph's order. The three-dimensional labels
  // are pruned by plans sampled along the frontier first; an optimum found
  // on its own at any budget must still be one of its points.
  const graph g = zoo::build("resnet50");
  const pareto_result r = pareto_frontier(g, in_graph_order());
  REQUIRE(r.status == solve_status::optimal);
  REQUIRE(r.points.size() > 500);
  const std::uint64_t low = r.points.front().peak, high = r.points.back().peak;
  for (std::uint64_t i = 0; i <= 40; ++i) {
    dp_options within;
    within.goal = objective::time;
    within.budget = low + (high - low) / 40 * i;
    const dp_result alone = solve_dp(g, dp_family::exact, within);
    REQUIRE(alone.result.status == solve_status::optimal);
    CAPTURE(within.budget);
    const auto on_frontier = std::find_if(r.points.rbegin(), r.points.rend(),
                                          [&](const frontier_point& p) { return p.peak <= within.budget; });
    REQUIRE(on_frontier != r.points.rend());
    CHECK(on_frontier->recompute == doctest::Approx(alone.result.claimed_recompute).epsilon(1e-12));
  }
  for (const frontier_point& p : {r.points.front(), r.points[r.points.size() / 2], r.points.back()}) {
    const simulation sim = simulate(g, schedule_from_stages(g, p.stage_of));
    CHECK(sim.peak_bytes == p.peak);
    CHECK(sim.recompute_time == doctest::Approx(p.recompute).epsilon(1e-12));
  }

  // A cap the two-dimensional samples fit under and the three-dimensional
  // labels do not (10⁵ here): the samples taken to prune the labels are the
  // frontier shown, each the least recompute within its peak.
  check_sampled(g, 100000, r, 10);
}

}  // TEST_SUITE
