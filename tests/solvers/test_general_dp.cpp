// The exact programme over general plans (solvers/general_dp.hpp) beyond the
// exhaustive search's sizes: its plans peak where it says, no general plan
// the other methods find goes below them, its bound and caps say what they
// cut, and `exact` names the family its proof covers.

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include <remat/solve.hpp>
#include <remat/solvers/general_dp.hpp>

#include "../support/random_graphs.hpp"

using namespace remat;

namespace {

solve_options in_id_order(method m) {
  solve_options o;
  o.method = m;
  o.order = order_choice::graph;
  o.preserve_gradient_order = false;
  o.work_limit = 4'000'000'000;
  o.time_limit = std::chrono::minutes(10);
  return o;
}

general_dp_options below(std::uint64_t bound, bool gradient_order = false) {
  general_dp_options o;
  o.below = bound;
  o.preserve_gradient_order = gradient_order;
  return o;
}

}  // namespace

TEST_CASE("general-dp on random DAGs of 7-10 nodes: no stage, kept-set or general-search plan below it") {
  std::size_t proven = 0, below_stages = 0;
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    const graph g = test::random_dag(7 + seed % 4, seed, 2 + seed % 3, 1 + seed % 3);
    CAPTURE(seed);
    solve_options o = in_id_order(method::exact);
    const solution exact = solve(g, o);
    REQUIRE(exact.status == solve_status::optimal);
    CHECK(simulate(g, exact.best.steps).peak_bytes == exact.claimed_peak);
    if (exact.proof_family != "general plans") continue;
    ++proven;
    o.method = method::dp;
    const solution stages = solve(g, o);
    CHECK(exact.figures.peak_bytes <= stages.figures.peak_bytes);
    below_stages += exact.figures.peak_bytes < stages.figures.peak_bytes;
    CHECK((exact.produced_by == "general-dp") == (exact.figures.peak_bytes < stages.figures.peak_bytes));
    o.method = method::kept_search;
    CHECK(exact.figures.peak_bytes <= solve(g, o).figures.peak_bytes);
    o.method = method::general_search;
    const solution general = solve(g, o);
    CHECK(exact.figures.peak_bytes <= general.figures.peak_bytes);
    // general-search then knows its plan is least when it meets exact's.
    CHECK((general.status == solve_status::optimal) ==
          (general.figures.peak_bytes == exact.figures.peak_bytes || general.figures.peak_bytes == per_op_floor(g).bytes));
  }
  MESSAGE(proven << " of 40 proven over general plans; " << below_stages << " below the stage optimum");
  CHECK(proven == 40);
  CHECK(below_stages > 0);
}

TEST_CASE("general-dp searches strictly below its bound: the optimum as bound finds nothing, one byte more finds it") {
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    const graph g = test::random_dag(5 + seed % 4, seed, 3, 2);
    CAPTURE(seed);
    const general_dp_result free = solve_general_dp(g, below(no_budget));
    REQUIRE(free.complete);
    REQUIRE(free.best.has_value());
    CHECK(simulate(g, free.best->steps).peak_bytes == free.peak);
    CHECK(free.best->stage_modes.size() == static_cast<std::size_t>(*std::max_element(free.best->stage_of.begin(),
                                                                                     free.best->stage_of.end()) + 1));
    const general_dp_result at = solve_general_dp(g, below(free.peak));
    CHECK(at.complete);
    CHECK(!at.best.has_value());
    const general_dp_result above = solve_general_dp(g, below(free.peak + 1));
    REQUIRE(above.best.has_value());
    CHECK(above.peak == free.peak);
  }
}

TEST_CASE("general-dp keeps gradient sums in order: its stages respect gradient_order_constraints") {
  std::size_t constrained = 0;
  for (std::uint64_t seed = 0; seed < 30; ++seed) {
    const graph g = test::random_dag(8, seed, 3, 3);
    const precedence order = gradient_order_constraints(g);
    const general_dp_result r = solve_general_dp(g, below(no_budget, true));
    REQUIRE(r.complete);
    REQUIRE(r.best.has_value());
    for (node_id v = 0; v < g.size(); ++v)
      for (node_id u : order.before[v]) {
        ++constrained;
        CHECK(r.best->stage_of[u] <= r.best->stage_of[v]);
      }
    // Without the constraints it can only do as well or better.
    CHECK(solve_general_dp(g, below(no_budget)).peak <= r.peak);
  }
  CHECK(constrained > 0);
}

TEST_CASE("general-dp and exact say what stopped the general search, and exact keeps its stage proof") {
  const graph g = test::random_dag(14, 7, 4, 3);
  general_dp_options o;
  o.max_labels = 10;
  const general_dp_result capped = solve_general_dp(g, o);
  CHECK(!capped.complete);
  CHECK(capped.stopped_by == "its cap of 10 states");
  o = {};
  o.max_lower_sets = 3;
  const general_dp_result few = solve_general_dp(g, o);
  CHECK(!few.complete);
  CHECK(few.stopped_by == "more than 3 lower sets");
  CHECK(solve_general_dp(test::random_dag(70, 1, 3, 2)).stopped_by == "more than 64 computed nodes");

  exact_options skip;
  skip.general_time_limit = std::chrono::milliseconds(0);
  skip.order = order_choice::graph;
  const solution stages = solve_exact(g, skip);
  CHECK(stages.status == solve_status::optimal);
  CHECK(stages.proof_family.empty());  // solve() names it: stage plans
  solve_options tight;
  tight.work_limit = 1'000'000;  // the general search's share stops it
  const solution limited = solve(g, tight);
  CHECK(limited.status == solve_status::optimal);
  CHECK(limited.proof_family == "stage plans");
  CHECK(limited.message.find("a search below it over general plans stopped at the work limit") != std::string::npos);
  CHECK(limited.message.rfind("; ", 0) != 0);  // a clause, not a dangling separator
}

TEST_CASE("exact on a small graph: the same general plan on every run under a work limit") {
  const graph g = test::random_dag(11, 3, 3, 2);
  solve_options o;
  o.order = order_choice::graph;
  const solution a = solve(g, o), b = solve(g, o);
  CHECK(a.best.steps == b.best.steps);
  CHECK(a.stats.work == b.stats.work);
  CHECK(a.proof_family == b.proof_family);
}

TEST_CASE("exact, time objective, a budget below every stage plan: the least-peak general plan, or the least budget") {
  std::size_t widened = 0;
  for (std::uint64_t seed = 0; seed < 40 && widened < 10; ++seed) {
    const graph g = test::random_dag(6 + seed % 4, seed, 2 + seed % 3, 1 + seed % 3);
    CAPTURE(seed);
    solve_options o = in_id_order(method::exact);
    const solution least = solve(g, o);
    o.method = method::dp;
    const solution stages = solve(g, o);
    if (least.claimed_peak >= stages.claimed_peak) continue;
    ++widened;
    o.method = method::exact;
    o.goal = objective::time;
    o.budget = least.claimed_peak;
    const solution fits = solve(g, o);
    CHECK(fits.status == solve_status::feasible);
    CHECK(fits.produced_by == "general-dp");
    CHECK(fits.figures.peak_bytes == least.claimed_peak);
    CHECK(fits.message.find("no stage plan peaks within the budget") != std::string::npos);
    o.budget = least.claimed_peak - 1;
    const solution none = solve(g, o);
    CHECK(none.status == solve_status::infeasible);
    CHECK(none.proof_family == "general plans");
    CHECK(none.smallest_feasible_budget == least.claimed_peak);
    CHECK(none.message.find("no general plan peaks within the budget; the smallest feasible budget for one is") !=
          std::string::npos);
  }
  CHECK(widened == 10);
}
