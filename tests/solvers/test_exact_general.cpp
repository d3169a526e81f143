// exact past 16 computed nodes: a general plan first (a work-limited local
// search's, or the one keeping nothing), kept when every stage plan peaks
// higher (or when it ranks before the stage portfolio's plan). Its plan is never above the stage
// optimum nor kept-search's, the same on every run, within a byte budget
// where no stage plan is, and held to a recompute ceiling when asked.

#include <doctest/doctest.h>

#include <optional>
#include <string>

#include <remat/solve.hpp>
#include <remat/solvers/exact_general.hpp>
#include <remat/zoo/models.hpp>

#include "../support/random_graphs.hpp"

using namespace remat;

namespace {

solution run(const graph& g, method m, std::uint64_t general_work = exact_options{}.general_search_work) {
  solve_options o;
  o.method = m;
  o.time_limit = std::chrono::minutes(10);
  o.general_search_work = general_work;
  return solve(g, o);
}

}  // namespace

TEST_CASE("exact on the zoo's ResNets, DenseNet-121 and VGG-16: never above the stage optimum nor kept-search") {
  for (const std::string name : {"resnet18", "resnet50", "resnet101", "densenet121", "vgg16"}) {
    CAPTURE(name);
    const graph g = zoo::build(name);
    const solution exact = run(g, method::exact), stages = run(g, method::exact, 0),
                   kept = run(g, method::kept_search);
    REQUIRE(stages.status == solve_status::optimal);
    CHECK(exact.claimed_peak <= stages.claimed_peak);
    CHECK(exact.claimed_peak <= kept.claimed_peak);
    CHECK(simulate(g, exact.best.steps).peak_bytes == exact.claimed_peak);
    CHECK(exact.best.method == "exact");
    if (!exact.best.stage_modes.empty()) {
      // A general plan: proven only at its bound, the per-op or cut floor,
      // which hold for every schedule.
      const backward_floor floors = backward_floors(g);
      CHECK(exact.peak_lower_bound ==
            schedule_bound_for(g, floors, per_op_floor(g, floors).bytes, exact.claimed_peak, peak_node_of(exact)).bytes);
      CHECK(exact.peak_lower_bound >= per_op_floor(g, floors).bytes);
      CHECK(exact.status == (exact.claimed_peak == exact.peak_lower_bound ? solve_status::optimal
                                                                          : solve_status::feasible));
      CHECK(!exact.best.stage_modes.empty());
    }
  }
  // On ResNet-50 it is strictly lower than both (1.27 GB against 1.70 and 1.60 GB, 2026-11-28).
  const graph g = zoo::build("resnet50");
  const solution exact = run(g, method::exact);
  CHECK(exact.produced_by == "general local search");
  CHECK(exact.claimed_peak < run(g, method::exact, 0).claimed_peak);
  CHECK(exact.claimed_peak < run(g, method::kept_search).claimed_peak);
  CHECK(exact.message.find("every stage plan peaks higher") != std::string::npos);
}

TEST_CASE("exact's general plan is the same on every run, whatever the time limit, and 0 work leaves stage plans") {
  const graph g = zoo::build("densenet121");
  solve_options o;
  o.time_limit = std::chrono::minutes(10);
  const solution a = solve(g, o);
  o.time_limit = std::chrono::minutes(1);
  const solution b = solve(g, o);
  CHECK(a.produced_by == "stage split");
  CHECK(a.best.steps == b.best.steps);
  o.general_search_work = 0;
  const solution stages = solve(g, o);
  CHECK(stages.best.stage_modes.empty());
  CHECK(stages.proof_family != "every schedule");
  CHECK(stages.status == solve_status::optimal);
}

TEST_CASE("exact with a budget no stage plan meets: a general plan within it, else the stage answer") {
  const graph g = zoo::build("resnet50");
  const solution least = run(g, method::exact), stages = run(g, method::exact, 0);
  REQUIRE(least.claimed_peak < stages.claimed_peak);
  solve_options o;
  o.goal = objective::time;
  o.time_limit = std::chrono::minutes(10);
  o.budget = (least.claimed_peak + stages.claimed_peak) / 2;
  const solution within = solve(g, o);
  CHECK(within.status == solve_status::feasible);
  CHECK(within.claimed_peak <= o.budget);
  CHECK(within.produced_by == "stage split");
  CHECK(within.message.find("for the least recompute within") != std::string::npos);
  CHECK(within.message.find("which no stage plan found does") != std::string::npos);
  // The stage plans' least budget, a least-peak programme, is not sought once
  // the general plan fits: the stages evaluated are those the budget reaches.
  CHECK(within.message.find("smallest feasible budget") == std::string::npos);
  CHECK(within.stats.count("stages evaluated") < stages.stats.count("stages evaluated"));
  o.general_search_work = 0;
  const solution stages_only = solve(g, o);
  CHECK(stages_only.status == solve_status::infeasible);
  CHECK(stages_only.smallest_feasible_budget == stages.claimed_peak);
  // Below every plan too (the per-op floor): the stage answer, with the
  // least budget of stage plans and the general plan's peak as a budget
  // that works.
  o.general_search_work = exact_options{}.general_search_work;
  o.budget = per_op_floor(g).bytes - 1;
  const solution below = solve(g, o);
  CHECK(below.status == solve_status::infeasible);
  CHECK(below.smallest_feasible_budget == stages.claimed_peak);
  CHECK(below.known_feasible_budget > o.budget);
  CHECK(below.known_feasible_budget < stages.claimed_peak);
  CHECK(below.message.find("the smallest feasible budget for one is") != std::string::npos);
  // A budget stage plans meet is answered over stage plans, as before.
  o.general_search_work = exact_options{}.general_search_work;
  o.budget = stages.claimed_peak;
  const solution staged = solve(g, o);
  CHECK(staged.status == solve_status::optimal);
  CHECK(staged.best.stage_modes.empty());
}

TEST_CASE("exact's general step also searches the last-written-first order: U-Net proven at the floor, PSPNet lower") {
  // U-Net (the seed's size): every plan found in the graph's order peaks
  // above the per-op floor; one in the last-written-first order meets it,
  // which proves it least of every schedule (in the consumers-first order
  // only the search from min-cut's stages with a budget below its first peak
  // does).
  const graph unet = zoo::build("unet");
  const solution s = solve(unet, {});
  CHECK(s.status == solve_status::optimal);
  CHECK(s.proof_family == "every schedule");
  CHECK(s.claimed_peak == per_op_floor(unet).bytes);
  CHECK(simulate(unet, s.best.steps).peak_bytes == s.claimed_peak);
  CHECK(order_name(unet, s.best.order) == "last-written-first");
  CHECK(s.message.find("in last-written-first order") != std::string::npos);
  solve_options in_graph_order;
  in_graph_order.order = order_choice::graph;
  CHECK(solve(unet, in_graph_order).claimed_peak > s.claimed_peak);
  const graph pspnet = zoo::build("pspnet");
  solve_options graph_order;
  graph_order.order = order_choice::graph;
  const solution both = solve(pspnet, {}), graph_only = solve(pspnet, graph_order);
  CHECK(both.claimed_peak < graph_only.claimed_peak);
  CHECK(order_name(pspnet, both.best.order) == "last-written-first");
}

TEST_CASE("exact's least peak proven above a memory-objective budget: infeasible, with the least budget") {
  // Found by fuzz_solve (corpus: exact-least-peak-above-memory-budget.bin):
  // a general plan at the per-op floor was called optimal although it
  // peaked above the budget.
  const graph unet = zoo::build("unet");
  const std::uint64_t floor = per_op_floor(unet).bytes;
  solve_options below;
  below.budget = floor - 1;
  const solution s = solve(unet, below);
  CHECK(s.status == solve_status::infeasible);
  CHECK(s.smallest_feasible_budget == floor);
  CHECK(s.claimed_peak == floor);
  solve_options at;
  at.budget = floor;
  const solution fits = solve(unet, at);
  CHECK(fits.status == solve_status::optimal);
  CHECK(fits.claimed_peak == floor);
}

TEST_CASE("exact's recompute ceiling holds its general plans to a forward pass") {
  const graph g = zoo::build("resnet50");
  exact_options free, held;
  held.general_max_recompute = 1.0;
  const solution lowest = solve_exact(g, free), ceiling = solve_exact(g, held);
  // Unheld, ResNet-50's plan recomputes several forward passes.
  CHECK(lowest.claimed_recompute > g.forward_time());
  CHECK(lowest.message.find("forward passes") != std::string::npos);
  CHECK(ceiling.claimed_recompute <= g.forward_time());
  CHECK(ceiling.claimed_peak >= lowest.claimed_peak);
  CHECK(ceiling.claimed_peak <= solve_exact(g, [] { exact_options e; e.general_search_work = 0; return e; }()).claimed_peak);
}

TEST_CASE("exact on random DAGs past 16 computed nodes: general plans only below every stage plan") {
  std::size_t general = 0;
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    const graph g = test::random_dag(20 + seed % 20, seed, 2 + seed % 4, 1 + seed % 3);
    CAPTURE(seed);
    const solution exact = run(g, method::exact), stages = run(g, method::exact, 0);
    CHECK(exact.claimed_peak <= stages.claimed_peak);
    CHECK(simulate(g, exact.best.steps).peak_bytes == exact.claimed_peak);
    if (exact.best.stage_modes.empty()) continue;  // a stage plan
    ++general;
    // Kept when strictly lower, or equal in peak and recomputing less.
    CHECK((exact.claimed_peak < stages.claimed_peak || exact.claimed_recompute < stages.claimed_recompute));
  }
  MESSAGE(general << " of 40 plans are general");
  CHECK(general > 0);
}

TEST_CASE("exact on AmoebaNet: keeping nothing splits best in the consumers-first order over fewest-gradients") {
  // Keeping nothing peaks lowest in that order of the five tried, and the
  // stages split there give the lowest plan exact finds on AmoebaNet
  // (docs/results-solvers.md, "Single-level schedules of one order, by MILP").
  const graph g = zoo::build("amoebanet-cifar10");
  const solution exact = run(g, method::exact);
  CHECK(exact.produced_by == "stage split");
  CHECK(order_name(g, exact.best.order) == "consumers-first over fewest-gradients");
  CHECK(exact.message.find("the consumers-first over fewest-gradients order") != std::string::npos);
  CHECK(exact.claimed_peak == 170'642'384);
  CHECK(simulate(g, exact.best.steps).peak_bytes == exact.claimed_peak);
  CHECK(exact.claimed_peak >= exact.peak_lower_bound);
}

TEST_CASE("exact on DARTS: keeping nothing, the stages split where they hold least") {
  const graph g = zoo::build("darts-cifar10");
  const solution exact = run(g, method::exact);
  CHECK(exact.produced_by == "stage split");
  // Keeping nothing peaks lower in consumers-first order than in the
  // graph's; split there it peaks 8.6% lower again (200,482,928 bytes, at
  // the backward of 'cells.6._ops.4'), and 4.7% lower still over the
  // consumers-first order with the window around that backward reordered
  // as the window floor's best path runs it; with values then kept and the
  // stages split anew it recomputes far less.
  const std::vector<node_id> order = consumers_first(g, true);
  const simulation none = simulate(g, detail::keep_nothing(g, order).steps(g));
  CHECK(none.peak_bytes < simulate(g, detail::keep_nothing(g, {}).steps(g)).peak_bytes);
  CHECK(exact.message.find("nothing kept, on runs of up to 16 nodes, the stages split at the best places of the "
                           "consumers-first order over the window floor's around 'cells.6._ops.4'") != std::string::npos);
  const std::optional<node_id> served = g.find("cells.6._ops.4");
  REQUIRE(served);
  CHECK(exact.best.order ==
        consumers_first_over(g, window_floor_order(g, window_floor_around(g, *served, exact_window_order_nodes, true)),
                             true));
  CHECK(exact.claimed_peak == 191'045'168);
  CHECK(exact.claimed_peak * 100 < none.peak_bytes * 92);
  CHECK(exact.best.kept.count() > 0);
  CHECK(exact.claimed_recompute * 3 < none.recompute_time);
  CHECK(exact.message.find("then, keeping those values, the stages split at the best places") != std::string::npos);
  const solution stages = run(g, method::exact, 0), kept = run(g, method::kept_search);
  CHECK(exact.claimed_peak < stages.claimed_peak);
  CHECK(exact.claimed_peak < kept.claimed_peak);
  CHECK(exact.claimed_peak >= exact.peak_lower_bound);
}

TEST_CASE("exact on DARTS: a subgraph bound shows every stage plan higher, and the plan is the same without it") {
  const graph g = zoo::build("darts-cifar10");
  solve_options o;
  o.method = method::exact;
  o.time_limit = std::chrono::minutes(10);
  const solution bounded = solve(g, o);
  // Past the programme's cap, in both orders.
  CHECK(bounded.message.find("bounds them above it in the graph's order") != std::string::npos);
  CHECK(bounded.message.find("above it consumers first") != std::string::npos);
  CHECK(bounded.message.find("every stage plan peaks higher") != std::string::npos);
  o.bound_time_limit = std::chrono::milliseconds(0);  // no bound: the stage portfolio runs, and loses
  const solution full = solve(g, o);
  CHECK(full.message.find("below the best stage plan") != std::string::npos);
  CHECK(full.best.steps == bounded.best.steps);
}

TEST_CASE("exact held to a forward pass of recompute never keeps nothing") {
  const graph g = zoo::build("unet");
  solve_options o;
  o.method = method::exact;
  o.general_max_recompute = 1.0;
  const solution held = solve(g, o);
  CHECK(held.produced_by != "keep nothing");
  CHECK(held.claimed_recompute <= g.forward_time());
}

TEST_CASE("exact's general step from min-cut's own stages: U-Net's floor at less recompute, ResNet-50 lower") {
  // A local search from min-cut's stages, recomputing lazily, with the least
  // peak found as its budget: U-Net's plan at the floor recomputes 1.0
  // forward passes instead of 2.3. With budgets below it the search splits
  // stages at their peaks: ResNet-50 from 19.3% above the floor to under 6%.
  const graph unet = zoo::build("unet");
  const solution u = solve(unet, {});
  MESSAGE("U-Net: " << u.claimed_peak << " bytes, " << u.claimed_recompute / unet.forward_time() << " forward passes");
  CHECK(u.claimed_peak == per_op_floor(unet).bytes);
  CHECK(u.message.find("each recomputing lazily, in last-written-first order, held to the peak of a local search "
                       "started at min-cut stages' kept values") != std::string::npos);
  CHECK(u.claimed_recompute < 1.5 * unet.forward_time());
  const graph resnet = zoo::build("resnet50");
  const solution r = solve(resnet, {});
  const std::uint64_t floor = per_op_floor(resnet).bytes;
  MESSAGE("ResNet-50: " << r.claimed_peak << " bytes, floor " << floor);
  CHECK(r.claimed_peak < floor + floor / 100 * 6);
  CHECK(r.message.find("each recomputing lazily") != std::string::npos);
  CHECK(r.message.find("with a budget below the peak of") != std::string::npos);
  // Its bound is the cut floor, 4.8% above the per-op floor, and the plan
  // meets it: the least peak of every schedule.
  const backward_floor floors = backward_floors(resnet);
  CHECK(r.peak_lower_bound == cut_floor_of(resnet, floors, floor).bytes);
  CHECK(r.peak_lower_bound > floor + floor / 100 * 4);
  CHECK(r.claimed_peak == r.peak_lower_bound);
  CHECK(r.status == solve_status::optimal);
  CHECK(r.proof_family == "every schedule");
  CHECK(r.message.find("least peak proven: it equals the cut floor (what the values the backward of "
                       "'layer1.1.conv1' reads cost, held or recomputed), which no schedule goes below") !=
        std::string::npos);
  for (const auto& [g, s] : {std::pair{&unet, &u}, std::pair{&resnet, &r}}) {
    const simulation figures = simulate(*g, s->best.steps);
    CHECK(figures.peak_bytes == s->claimed_peak);
    CHECK(figures.recompute_time == doctest::Approx(s->claimed_recompute));
  }
}

TEST_CASE("exact with a budget a little below the stage plans' least peak: min-cut's stages, split where they peak") {
  // 2.5% below PSPNet's least peak over stage plans (1.5 times its least
  // peak) a stage per node recomputes many forward passes, min-cut's stages
  // split at their peaks under 2.
  const graph g = zoo::build("pspnet");
  solve_options o;
  o.general_search_work = 0;
  const std::uint64_t stage_least = solve(g, o).claimed_peak;
  o = {};
  o.goal = objective::time;
  o.budget = stage_least / 40 * 39;
  const solution s = solve(g, o);
  MESSAGE("PSPNet within " << o.budget << " bytes: " << s.claimed_peak << " bytes, "
                           << s.claimed_recompute / g.forward_time() << " forward passes");
  CHECK(s.status == solve_status::feasible);
  CHECK(s.claimed_peak <= o.budget);
  CHECK(s.message.find("a local search started at min-cut stages, each recomputing lazily") != std::string::npos);
  CHECK(s.claimed_recompute < 2 * g.forward_time());
  CHECK(simulate(g, s.best.steps).peak_bytes == s.claimed_peak);
}
