// general-search: a local search over general plans from exact's and
// kept-search's plans. Its plan is valid, never above either start, and the
// same on every run under a work limit.

#include <doctest/doctest.h>

#include <remat/solve.hpp>
#include <remat/zoo/models.hpp>

#include "../support/random_graphs.hpp"

using namespace remat;

namespace {

solution run(const graph& g, method m, std::uint64_t work = 2'000'000'000) {
  solve_options o;
  o.method = m;
  o.work_limit = work;
  o.time_limit = std::chrono::minutes(10);
  return solve(g, o);
}

}  // namespace

TEST_CASE("general-search is never above exact nor kept-search, and its figures are the simulator's") {
  for (std::uint64_t seed = 0; seed < 60; ++seed) {
    const graph g = test::random_dag(8 + seed % 30, seed, 2 + seed % 4, 1 + seed % 3);
    CAPTURE(seed);
    const solution general = run(g, method::general_search);
    REQUIRE(general.status == solve_status::feasible);
    CHECK(general.figures.peak_bytes <= run(g, method::exact).figures.peak_bytes);
    CHECK(general.figures.peak_bytes <= run(g, method::kept_search).figures.peak_bytes);
    CHECK(simulate(g, general.best.steps).peak_bytes == general.figures.peak_bytes);
    CHECK(general.peak_lower_bound == per_op_floor(g).bytes);
    CHECK(general.unproven() == unproven_reason::no_proof);
    CHECK(general.best.stage_modes.size() >= 1);
  }
}

TEST_CASE("general-search on ResNet-50: below exact's stage optimum, the same plan every run") {
  const graph g = zoo::build("resnet50");
  const solution exact = run(g, method::exact);
  REQUIRE(exact.status == solve_status::optimal);
  const solution a = run(g, method::general_search), b = run(g, method::general_search);
  MESSAGE("ResNet-50: exact " << exact.figures.peak_bytes << " bytes, general-search " << a.figures.peak_bytes);
  CHECK(a.figures.peak_bytes < exact.figures.peak_bytes);
  CHECK(a.best.steps == b.best.steps);
  CHECK(a.stats.work == b.stats.work);
  CHECK(a.message.find("below exact's plan (optimal over stage plans)") != std::string::npos);
}

TEST_CASE("general-search, time objective: within the budget, recomputing no more than exact") {
  const graph g = zoo::build("resnet50");
  solve_options o;
  o.goal = objective::time;
  o.budget = run(g, method::exact).figures.peak_bytes * 5 / 4;
  o.work_limit = 2'000'000'000;
  const solution exact = solve(g, o);
  o.method = method::general_search;
  const solution general = solve(g, o);
  REQUIRE(general.status == solve_status::feasible);
  CHECK(general.figures.peak_bytes <= o.budget);
  CHECK(general.figures.recompute_time <= exact.figures.recompute_time * (1 + 1e-12));
}
