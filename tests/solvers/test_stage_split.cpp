// split_stages: the best stages of consecutive nodes of an execution order
// for a kept set. Against every split and every choice of modes on small
// random DAGs, for the least peak and for the least recompute within a
// budget; its figures are the simulator's; a ceiling no split meets and a
// spent time budget give no plan; the zoo figures it reaches; and where
// `exact` widens its runs.

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include <remat/solve.hpp>
#include <remat/solvers/exact_general.hpp>
#include <remat/solvers/orders.hpp>
#include <remat/solvers/stage_split.hpp>
#include <remat/zoo/models.hpp>

#include "../support/random_graphs.hpp"

using namespace remat;

namespace {

struct brute_force {
  std::uint64_t least_peak = std::numeric_limits<std::uint64_t>::max();
  double recompute_at_least_peak = std::numeric_limits<double>::infinity();
  double least_recompute_within = std::numeric_limits<double>::infinity();  // within `budget`
};

// Every split of the computed nodes (in `order`) into runs, every run lazy or
// eager, simulated.
brute_force every_split(const graph& g, const node_set& kept, const std::vector<node_id>& order, std::uint64_t budget) {
  std::vector<node_id> sequence;
  for (node_id v : detail::execution_sequence(g, order))
    if (!g.is_input(v)) sequence.push_back(v);
  const std::size_t nodes = sequence.size();
  brute_force out;
  for (std::uint64_t cuts = 0; cuts < (std::uint64_t{1} << (nodes - 1)); ++cuts) {
    general_plan p;
    p.kept = kept;
    p.order = order;
    p.stage_of.assign(g.size(), 0);
    std::uint32_t stage = 0;
    for (std::size_t k = 0; k < nodes; ++k) {
      if (k > 0 && ((cuts >> (k - 1)) & 1U)) ++stage;
      p.stage_of[sequence[k]] = stage;
    }
    const std::size_t stages = stage + 1;
    for (std::uint64_t modes = 0; modes < (std::uint64_t{1} << stages); ++modes) {
      p.modes.clear();
      for (std::size_t k = 0; k < stages; ++k)
        p.modes.push_back((modes >> k) & 1U ? stage_recompute::eager : stage_recompute::lazy);
      const simulation s = simulate(g, p.steps(g));
      if (s.peak_bytes < out.least_peak ||
          (s.peak_bytes == out.least_peak && s.recompute_time < out.recompute_at_least_peak)) {
        out.least_peak = s.peak_bytes;
        out.recompute_at_least_peak = s.recompute_time;
      }
      if (s.peak_bytes <= budget) out.least_recompute_within = std::min(out.least_recompute_within, s.recompute_time);
    }
  }
  return out;
}

bool close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); }

}  // namespace

TEST_CASE("split_stages: the least peak of every split into runs, and the least recompute within a budget") {
  std::size_t budgets_met = 0, kept_sets = 0;
  for (std::uint64_t seed = 0; seed < 300; ++seed) {
    const graph g = test::random_dag(3 + seed % 6, seed, 2 + seed % 4, 1 + seed % 3);
    CAPTURE(seed);
    const std::vector<node_id> order = seed % 2 ? consumers_first(g, true) : std::vector<node_id>{};
    node_set kept(g.size());
    if (seed % 3 != 0)
      for (node_id v = 0; v < g.size(); ++v)
        if (!g.is_input(v) && (v * 7 + seed) % 3 == 0) kept.insert(v);
    kept_sets += kept.count() > 0;
    const brute_force best = every_split(g, kept, order, no_budget);
    stage_split_options options;
    options.max_stage_nodes = 16;  // every run
    const stage_split_result least = split_stages(g, kept, order, options);
    REQUIRE(least.plan);
    CHECK(least.figures.peak_bytes == best.least_peak);
    CHECK(simulate(g, least.plan->steps(g)).peak_bytes == least.figures.peak_bytes);
    CHECK(least.plan->kept == kept);
    CHECK(least.plan->order == order);
    // A budget an eighth above the least peak: the least recompute within it.
    const std::uint64_t budget = best.least_peak + best.least_peak / 8;
    const brute_force within = every_split(g, kept, order, budget);
    options.goal = objective::time;
    options.budget = budget;
    const stage_split_result cheapest = split_stages(g, kept, order, options);
    REQUIRE(cheapest.plan);
    CHECK(cheapest.figures.peak_bytes <= budget);
    CHECK(close(cheapest.figures.recompute_time, within.least_recompute_within));
    budgets_met += cheapest.figures.recompute_time < least.figures.recompute_time;
  }
  MESSAGE(budgets_met << " of 300 budgets let the split recompute less than at the least peak; " << kept_sets
                      << " kept sets were not empty");
  CHECK(budgets_met > 0);
}

TEST_CASE("split_stages: runs of at most max_stage_nodes, a ceiling, and a spent time budget") {
  const graph g = test::random_dag(24, 7, 4, 2);
  const node_set nothing(g.size());
  stage_split_options options;
  options.max_stage_nodes = 3;
  const stage_split_result r = split_stages(g, nothing, {}, options);
  REQUIRE(r.plan);
  std::vector<std::size_t> members(r.plan->modes.size(), 0);
  for (node_id v = 0; v < g.size(); ++v)
    if (!g.is_input(v)) ++members[r.plan->stage_of[v]];
  for (std::size_t count : members) CHECK(count <= 3);
  // Longer runs never peak higher: the shorter splits are among them.
  options.max_stage_nodes = 8;
  const stage_split_result longer = split_stages(g, nothing, {}, options);
  REQUIRE(longer.plan);
  CHECK(longer.figures.peak_bytes <= r.figures.peak_bytes);
  // A ceiling at the least peak finds it; one byte below, nothing.
  options.ceiling = longer.figures.peak_bytes;
  CHECK(split_stages(g, nothing, {}, options).figures.peak_bytes == longer.figures.peak_bytes);
  options.ceiling = longer.figures.peak_bytes - 1;
  const stage_split_result below = split_stages(g, nothing, {}, options);
  CHECK_FALSE(below.plan);
  CHECK_FALSE(below.stopped);
  // No time: no plan, and it says so.
  options.ceiling = no_budget;
  options.time = time_budget::within(std::chrono::milliseconds(0));
  const stage_split_result none = split_stages(g, nothing, {}, options);
  CHECK_FALSE(none.plan);
  CHECK(none.stopped);
}

TEST_CASE("split_stages on the zoo: keeping nothing, PSPNet and ResNet-152 reach their least peaks") {
  // Each equals the cut floor, which holds for every schedule (test_cut_floor.cpp).
  struct expected {
    const char* model;
    bool last_written_first;
    std::uint64_t peak;
  };
  for (const expected& e : {expected{"pspnet", true, 692'640'644}, expected{"resnet152", false, 708'990'144},
                            expected{"resnet101", false, 811'840'832}}) {
    CAPTURE(e.model);
    const graph g = zoo::build(e.model);
    const std::vector<node_id> order = e.last_written_first ? last_written_first(g, true) : std::vector<node_id>{};
    const stage_split_result r = split_stages(g, node_set(g.size()), order, {});
    REQUIRE(r.plan);
    CHECK(r.figures.peak_bytes == e.peak);
    // Keeping nothing with a stage per node is one of the splits.
    CHECK(r.figures.peak_bytes <= simulate(g, detail::keep_nothing(g, order).steps(g)).peak_bytes);
  }
}

TEST_CASE("exact widens the split keeping nothing while longer runs peak lower: the 254-node layered graph") {
  const graph g = test::layered_dag(50);
  REQUIRE(g.size() == 254);
  auto split_peak = [&](std::size_t longest) {
    stage_split_options o;
    o.max_stage_nodes = longest;
    const stage_split_result r = split_stages(g, node_set(g.size()), {}, o);
    REQUIRE(r.plan);
    return r.figures.peak_bytes;
  };
  const std::uint64_t short_runs = split_peak(exact_split_stage_nodes), long_runs = split_peak(64);
  CHECK(short_runs == 173'101'056);
  CHECK(long_runs == 161'044'480);
  solve_options o;  // the default work limit
  o.time_limit = std::chrono::minutes(10);  // far: the plan must not depend on the clock
  const solution s = solve(g, o);
  CHECK(s.produced_by == "stage split");
  CHECK(s.figures.peak_bytes <= long_runs);
  CHECK(s.message.find("on runs of up to 64 nodes") != std::string::npos);
  // The work limit did not end it: the widening and the steps after it fit.
  CHECK_FALSE(s.stats.work_limit_reached);
}
