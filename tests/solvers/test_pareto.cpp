// remat::pareto_frontier: the exact frontier where its labels fit, a sampled
// one (each point optimal for its budget, status feasible) where they do not.

#include <doctest/doctest.h>

#include <remat/pareto.hpp>
#include <remat/zoo/models.hpp>

using namespace remat;

TEST_SUITE("pareto") {

TEST_CASE("past the label cap the frontier is sampled: never empty, never called optimal, every point optimal for its budget") {
  const graph g = zoo::build("resnet18");
  const pareto_result exact = pareto_frontier(g);
  REQUIRE(exact.status == solve_status::optimal);
  REQUIRE(exact.points.size() > 3);

  pareto_options capped;
  capped.max_labels = 64;
  const pareto_result sampled = pareto_frontier(g, capped);
  CHECK(sampled.status == solve_status::feasible);
  CHECK(sampled.message.find("sampled") != std::string::npos);
  REQUIRE(sampled.points.size() >= 2);
  CHECK(sampled.points.front().peak == exact.points.front().peak);
  CHECK(sampled.points.back().recompute == doctest::Approx(exact.points.back().recompute).epsilon(1e-12));
  for (std::size_t i = 0; i < sampled.points.size(); ++i) {
    const frontier_point& p = sampled.points[i];
    if (i > 0) {
      CHECK(p.peak > sampled.points[i - 1].peak);
      CHECK(p.recompute < sampled.points[i - 1].recompute);
    }
    const simulation sim = simulate(g, schedule_from_stages(g, p.stage_of));
    CHECK(sim.peak_bytes == p.peak);
    // the DP and the simulator add the same times in different orders
    CHECK(sim.recompute_time == doctest::Approx(p.recompute).epsilon(1e-12));
    // On the exact frontier: the least recompute of any plan within this peak.
    double least = -1;
    for (const frontier_point& e : exact.points)
      if (e.peak <= p.peak) least = e.recompute;
    CHECK(least == doctest::Approx(p.recompute).epsilon(1e-12));
  }
}

}  // TEST_SUITE
