// kept-search: a local search over kept-set plans, scored by the simulator.
// Its plans are what they claim, a local optimum, never below the brute force
// over every kept set; on ResNet-50 it goes below exact's stage optimum.

#include <doctest/doctest.h>

#include <limits>

#include <remat/solve.hpp>
#include <remat/solvers/kept_search.hpp>
#include <remat/solvers/ogc_exact.hpp>
#include <remat/zoo/models.hpp>

#include "../support/random_graphs.hpp"

using namespace remat;

namespace {

// The least peak over every kept set of the computed nodes.
std::uint64_t least_kept_set_peak(const graph& g) {
  std::vector<node_id> computed;
  for (node_id v = 0; v < g.size(); ++v)
    if (!g.is_input(v)) computed.push_back(v);
  std::uint64_t best = std::numeric_limits<std::uint64_t>::max();
  for (std::uint64_t mask = 0; mask < (std::uint64_t{1} << computed.size()); ++mask) {
    node_set kept(g.size());
    for (std::size_t i = 0; i < computed.size(); ++i)
      if (mask >> i & 1) kept.insert(computed[i]);
    best = std::min(best, simulate(g, schedule_from_kept(g, kept)).peak_bytes);
  }
  return best;
}

}  // namespace

TEST_SUITE("kept-search") {

TEST_CASE("a local optimum no single toggle improves, never below the best kept set, never above its start") {
  std::size_t below_start = 0;
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    const graph g = test::random_dag(3 + seed % 10, seed, 1 + seed % 4, 1 + seed % 3);
    const node_set start = solve_segments_exact(g).kept;
    const std::uint64_t start_peak = simulate(g, schedule_from_kept(g, start)).peak_bytes;
    const kept_search_result r = improve_kept_set(g, start);
    const simulation sim = simulate(g, schedule_from_kept(g, r.kept));
    CHECK(sim.peak_bytes == r.figures.peak_bytes);
    CHECK(sim.recompute_time == r.figures.recompute_time);
    CHECK(r.figures.peak_bytes <= start_peak);
    CHECK(r.figures.peak_bytes >= least_kept_set_peak(g));
    below_start += r.figures.peak_bytes < start_peak;
    for (node_id v = 0; v < g.size(); ++v) {
      if (g.is_input(v)) continue;
      node_set toggled = r.kept;
      toggled.set(v, !toggled.contains(v));
      const simulation t = simulate(g, schedule_from_kept(g, toggled));
      CHECK((rank_plan(t, objective::memory) >= rank_plan(r.figures, objective::memory)));
    }
  }
  MESSAGE(below_start << " of 300 searches end below their start");
  CHECK(below_start > 0);
}

TEST_CASE("the time objective: within the budget, recompute no more than a start within it") {
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    const graph g = test::random_dag(4 + seed % 12, seed, 2 + seed % 3, 1 + seed % 3);
    const node_set start = solve_segments_exact(g).kept;
    const simulation from = simulate(g, schedule_from_kept(g, start));
    improve_kept_options options;
    options.goal = objective::time;
    options.budget = from.peak_bytes + seed % 3 * from.peak_bytes / 8;
    const kept_search_result r = improve_kept_set(g, start, options);
    CHECK(r.figures.peak_bytes <= options.budget);
    CHECK(r.figures.recompute_time <= from.recompute_time);
  }
}

TEST_CASE("solve: on ResNet-50 kept-search goes below exact's proven stage optimum; claims are the simulator's") {
  const graph g = zoo::build("resnet50");
  solve_options exact;
  exact.order = order_choice::best;
  exact.general_search_work = 0;  // stage plans alone
  const solution stages = solve(g, exact);
  REQUIRE(stages.status == solve_status::optimal);
  solve_options search;
  search.method = method::kept_search;
  const solution s = solve(g, search);
  CHECK(s.status == solve_status::feasible);
  CHECK(s.best.method == "kept-search");
  // A kept-set plan: what it keeps stays alive into the backward, every
  // other value a backward reads is recomputed.
  std::size_t kept = 0;
  const std::vector<node_fate> fates = node_fates(g, s.best.steps);
  for (node_id v = 0; v < g.size(); ++v) {
    if (g.is_input(v)) continue;
    kept += s.best.kept.contains(v);
    if (s.best.kept.contains(v)) CHECK(fates[v] == node_fate::kept);
    else CHECK(fates[v] != node_fate::kept);
  }
  CHECK(kept > 0);
  CHECK(s.peak_lower_bound <= s.claimed_peak);
  CHECK(s.message.find("not proven") != std::string::npos);
  MESSAGE("kept-search " << s.claimed_peak << " bytes against exact's " << stages.claimed_peak);
  CHECK(s.claimed_peak < stages.claimed_peak);
}

TEST_CASE("a time limit ends the search with a plan, saying so") {
  const graph g = zoo::build("resnet152");
  solve_options quick;
  quick.method = method::kept_search;
  quick.time_limit = std::chrono::milliseconds(1);
  const solution s = solve(g, quick);
  CHECK(s.status == solve_status::feasible);
  CHECK(s.stats.time_limit_reached);
  CHECK(s.message.find("stopped by the time limit") != std::string::npos);
  CHECK(s.claimed_peak == s.figures.peak_bytes);
}

}  // TEST_SUITE
