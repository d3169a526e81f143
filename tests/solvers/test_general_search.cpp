// general-search: a local search over general plans from exact's plan, its
// kept values with a stage per node, and kept-search's plan. Its plan is
// valid, never above exact's or kept-search's (which it skips only once a
// plan meets the per-op floor), `optimal` where it meets the floor, and the
// same on every run under a work limit. The search splits a stage only to
// bring a plan within its budget.

#include <doctest/doctest.h>

#include <string>

#include <remat/solve.hpp>
#include <remat/solvers/general_local_search.hpp>
#include <remat/zoo/generators.hpp>
#include <remat/zoo/models.hpp>

#include "../support/random_graphs.hpp"

using namespace remat;

namespace {

// general_work 0: exact over stage plans alone, and general-search's starts from it.
solution run(const graph& g, method m, std::uint64_t work = 2'000'000'000,
             std::uint64_t general_work = exact_options{}.general_search_work) {
  solve_options o;
  o.method = m;
  o.work_limit = work;
  o.time_limit = std::chrono::minutes(10);
  o.general_search_work = general_work;
  return solve(g, o);
}

}  // namespace

TEST_CASE("general-search is never above exact nor kept-search, and its figures are the simulator's") {
  std::size_t at_floor_count = 0, cut_floor_count = 0;
  for (std::uint64_t seed = 0; seed < 60; ++seed) {
    const graph g = test::random_dag(8 + seed % 30, seed, 2 + seed % 4, 1 + seed % 3);
    CAPTURE(seed);
    const solution general = run(g, method::general_search), exact = run(g, method::exact);
    const backward_floor floors = backward_floors(g);
    const std::uint64_t per_op = per_op_floor(g, floors).bytes;
    // `optimal` exactly when the plan meets the per-op or cut floor, which
    // bound every schedule, or exact's least peak over general plans (on
    // small graphs).
    const schedule_bound bound = schedule_bound_for(g, floors, per_op, general.figures.peak_bytes, peak_node_of(general));
    const std::uint64_t floor = bound.bytes;
    const bool at_floor = general.figures.peak_bytes == floor;
    const bool at_general_optimum = exact.proof_family == "general plans" &&
                                    general.figures.peak_bytes == exact.figures.peak_bytes;
    REQUIRE(general.status == (at_floor || at_general_optimum ? solve_status::optimal : solve_status::feasible));
    at_floor_count += at_floor;
    CHECK(general.figures.peak_bytes <= exact.figures.peak_bytes);
    CHECK(general.figures.peak_bytes <= run(g, method::kept_search).figures.peak_bytes);
    CHECK(simulate(g, general.best.steps).peak_bytes == general.figures.peak_bytes);
    CHECK(general.peak_lower_bound == (at_floor || !at_general_optimum ? floor : exact.figures.peak_bytes));
    CHECK(general.unproven() == (at_floor || at_general_optimum ? unproven_reason::none : unproven_reason::no_proof));
    CHECK((general.message.find("least peak proven: it equals " + bound.name) != std::string::npos) == at_floor);
    cut_floor_count += bound.bytes > per_op;
    CHECK(general.best.stage_modes.size() >= 1);
    // kept-search is skipped only once no schedule can peak lower
    if (general.message.find("kept-search not run") != std::string::npos) CHECK((at_floor || at_general_optimum));
  }
  MESSAGE(at_floor_count << " of 60 plans meet their bound; the cut floor is the bound of " << cut_floor_count);
  CHECK(at_floor_count > 0);
  CHECK(at_floor_count < 60);
}

TEST_CASE("general-search proves the least peak of every schedule where its plan meets the floor: ResNet-18, VGG-16") {
  for (const std::string name : {"resnet18", "vgg16"}) {
    const graph g = zoo::build(name);
    CAPTURE(name);
    const solution exact = run(g, method::exact, 2'000'000'000, 0),
                   general = run(g, method::general_search, 2'000'000'000, 0);
    CHECK(run(g, method::exact).figures.peak_bytes == per_op_floor(g).bytes);  // exact's own general plan meets it too
    MESSAGE(name << ": exact " << exact.figures.peak_bytes << " bytes, general-search " << general.figures.peak_bytes
                 << ", floor " << per_op_floor(g).bytes);
    CHECK(general.status == solve_status::optimal);
    CHECK(general.figures.peak_bytes == per_op_floor(g).bytes);
    CHECK(general.figures.peak_bytes < exact.figures.peak_bytes);
    // the plan that leads there keeps exact's values with a stage per node
    CHECK(general.message.find("started at exact's kept values with a stage per node") != std::string::npos);
    // at the floor nothing can beat it, so kept-search is not run
    CHECK(general.message.find("kept-search not run: no plan peaks lower") != std::string::npos);
  }
}

TEST_CASE("general-search on ResNet-50: below exact's stage optimum, the same plan every run") {
  const graph g = zoo::build("resnet50");
  const solution exact = run(g, method::exact, 2'000'000'000, 0);
  REQUIRE(exact.status == solve_status::optimal);
  const solution a = run(g, method::general_search, 2'000'000'000, 0),
                 b = run(g, method::general_search, 2'000'000'000, 0);
  // With exact's general plan first, never above exact's.
  CHECK(run(g, method::general_search).figures.peak_bytes <= run(g, method::exact).figures.peak_bytes);
  MESSAGE("ResNet-50: exact " << exact.figures.peak_bytes << " bytes, general-search " << a.figures.peak_bytes);
  CHECK(a.figures.peak_bytes < exact.figures.peak_bytes);
  CHECK(a.best.steps == b.best.steps);
  CHECK(a.stats.work == b.stats.work);
  CHECK(a.message.find("below exact's plan (optimal over stage plans)") != std::string::npos);
  CHECK(a.message.find("kept-search not run") == std::string::npos);  // above the floor: every start is searched
}

TEST_CASE("general-search, time objective: a budget below every stage plan is met from kept-search's values") {
  const graph g = zoo::build("resnet50");
  solve_options o;
  o.goal = objective::time;
  o.budget = 1'300'000'000;  // exact's least peak over stage plans is 1,703,793,216 bytes
  o.work_limit = 2'000'000'000;
  o.general_search_work = 0;
  const solution exact = solve(g, o);
  CHECK(exact.status == solve_status::infeasible);
  o.method = method::general_search;
  const solution general = solve(g, o);
  MESSAGE("ResNet-50 within 1.3 GB: general-search peaks at " << general.figures.peak_bytes << " bytes, overhead "
                                                              << general.figures.overhead());
  REQUIRE(general.status == solve_status::feasible);
  CHECK(general.figures.peak_bytes <= o.budget);
  CHECK(simulate(g, general.best.steps).peak_bytes == general.figures.peak_bytes);
  CHECK(general.message.find("started at kept-search's kept values with a stage per node") != std::string::npos);
  CHECK(general.message.find("exact has no stage plan (infeasible)") != std::string::npos);
}

TEST_CASE("general-search, time objective: within the budget, recomputing no more than exact") {
  const graph g = zoo::build("resnet50");
  solve_options o;
  o.goal = objective::time;
  o.budget = run(g, method::exact, 2'000'000'000, 0).figures.peak_bytes * 5 / 4;
  o.work_limit = 2'000'000'000;
  const solution exact = solve(g, o);
  o.method = method::general_search;
  const solution general = solve(g, o);
  REQUIRE(general.status == solve_status::feasible);
  CHECK(general.figures.peak_bytes <= o.budget);
  CHECK(general.figures.recompute_time <= exact.figures.recompute_time * (1 + 1e-12));
}

TEST_CASE("the local search splits the stage at its peak while the plan peaks above the budget, never within it") {
  // One lazy stage keeping nothing: the first backward recomputes every
  // value, and each lives until the backward that reads it. No kept value is
  // alive at the peak and either mode holds most of them at once, so only
  // splitting the stage brings it to half its peak.
  zoo::chain_options c;
  c.length = 16;
  c.batch = 4096;  // activations far above the parameters, which every step holds
  c.features = 64;
  const graph g = zoo::chain(c);
  general_plan one;
  one.stage_of.assign(g.size(), 0);
  one.kept = node_set(g.size());
  one.modes = {stage_recompute::lazy};
  const simulation start = simulate(g, one.steps(g));
  improve_general_options o;
  o.goal = objective::time;
  o.budget = start.peak_bytes / 2;
  const general_search_result split = improve_general_plan(g, one, o);
  MESSAGE("one lazy stage peaks at " << start.peak_bytes << " bytes; the search ends at " << split.figures.peak_bytes
                                     << " in " << split.best.modes.size() << " stages");
  CHECK(split.best.modes.size() > 1);
  CHECK(split.figures.peak_bytes <= o.budget);
  CHECK(simulate(g, split.best.steps(g)).peak_bytes == split.figures.peak_bytes);
  // Within the budget a split only adds recompute: the stage stays whole.
  o.budget = start.peak_bytes;
  const general_search_result within = improve_general_plan(g, one, o);
  CHECK(within.best.modes.size() == 1);
  CHECK(within.figures.recompute_time <= start.recompute_time);
}
