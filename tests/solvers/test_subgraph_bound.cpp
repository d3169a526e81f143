// The subgraph bound: restrict_graph by hand, a subgraph's least peak never
// above the graph's (both by brute force over every stage plan, for path
// unions and arbitrary node subsets), subgraph_peak_bound between the per-op
// floor and the optimum, and what it gives on a NAS network.

#include <doctest/doctest.h>

#include <optional>
#include <random>

#include <remat/solve.hpp>
#include <remat/solvers/subgraph_bound.hpp>
#include <remat/zoo/models.hpp>

#include "../support/oracle.hpp"
#include "../support/random_graphs.hpp"
#include "../support/small_graphs.hpp"

using namespace remat;

namespace {

// Nothing when the graph has too many stage plans to list.
std::optional<std::uint64_t> oracle_least_peak(const graph& g, const precedence* constraints = nullptr) {
  const auto plans = test::all_chain_plans(g, 3000, constraints);
  if (!plans) return std::nullopt;
  return test::best_memory(*plans).peak;
}

// Half the subsets are unions of random sink-to-input paths (what
// subgraph_peak_bound builds), half arbitrary node subsets with the sink.
std::vector<char> random_subset(const graph& g, std::mt19937_64& rng) {
  std::vector<char> keep(g.size(), 0);
  const node_id sink = static_cast<node_id>(g.size() - 1);
  if (rng() % 2 == 0) {
    for (std::uint64_t paths = 1 + rng() % 3; paths > 0; --paths)
      for (node_id v = sink;;) {
        keep[v] = 1;
        const auto operands = g.inputs(v);
        if (operands.empty()) break;
        v = operands[rng() % operands.size()];
      }
  } else {
    for (node_id v = 0; v < g.size(); ++v) keep[v] = static_cast<char>(rng() % 2);
    keep[sink] = 1;
  }
  if (rng() % 2 == 0)
    for (node_id v = 0; v < g.size(); ++v)
      if (g.is_input(v)) keep[v] = 0;
  return keep;
}

}  // namespace

TEST_SUITE("subgraph bound") {

TEST_CASE("restrict_graph keeps the chosen nodes in id order and makes outside operands free inputs") {
  const graph g = test::diamond();  // x -> a -> {b, c} -> d -> e
  std::vector<char> keep(g.size(), 0);
  for (const char* name : {"a", "c", "d", "e"}) keep[*g.find(name)] = 1;
  const graph h = restrict_graph(g, keep);
  REQUIRE(h.size() == 6);  // x and b become free inputs
  const node_id a = *h.find("a"), c = *h.find("c"), d = *h.find("d");
  CHECK(h.is_input(*h.find("outside:x")));
  CHECK(h.is_input(*h.find("outside:b")));
  CHECK(h.bytes(*h.find("outside:b")) == 0);
  CHECK(h.input_bytes() == 0);
  CHECK(h.bytes(c) == g.bytes(*g.find("c")));
  CHECK(h.params(c) == g.params(*g.find("c")));
  CHECK(h.reads(c) == g.reads(*g.find("c")));
  CHECK(a < c);
  CHECK(c < d);
  CHECK(h.inputs(d).size() == 2);
}

TEST_CASE("restrict_graph can keep the resident bytes left out, and never reuses a name of the graph") {
  const graph g = test::diamond();  // a has 16 parameter bytes, c 32; x is a 10-byte input
  std::vector<char> keep(g.size(), 0);
  for (const char* name : {"b", "d", "e"}) keep[*g.find(name)] = 1;
  const graph h = restrict_graph(g, keep, true);
  REQUIRE(h.find("outside:"));
  CHECK(h.is_input(*h.find("outside:")));
  CHECK(h.bytes(*h.find("outside:")) == 10 + 16 + 32);
  CHECK(h.input_bytes() == 10 + 16 + 32);
  CHECK(h.bytes(*h.find("outside:a")) == 0);

  graph_builder b("names");
  for (const char* name : {"x", "outside:x", "y"}) {
    node_spec s;
    s.name = name;
    s.op = std::string_view(name) == "y" ? "relu" : "input";
    if (s.op == "relu") s.inputs = {0, 1};
    s.bytes = 8;
    b.add(std::move(s));
  }
  const graph tricky = std::move(b).build();
  std::vector<char> only_y{0, 0, 1};
  const graph r = restrict_graph(tricky, only_y, true);
  CHECK(r.find("outside::x"));
  CHECK(r.find("outside::outside:x"));
  CHECK(r.bytes(*r.find("outside::")) == 16);
}

TEST_CASE("a subgraph's least peak never exceeds the graph's (brute force on both)" * doctest::timeout(600)) {
  std::size_t checked = 0, equal = 0;
  std::mt19937_64 rng(2026);
  for (std::uint64_t seed = 1; checked < 2000; ++seed) {
    const graph g = test::random_dag(4 + seed % 10, seed, 2 + seed % 3, 1 + seed % 3);
    const auto whole = oracle_least_peak(g);
    if (!whole) continue;
    for (int trial = 0; trial < 2; ++trial) {
      const graph h = restrict_graph(g, random_subset(g, rng), trial == 1);
      const auto part = oracle_least_peak(h);  // cutting a node can free others: more plans
      if (!part) continue;
      CHECK(*part <= *whole);
      equal += *part == *whole;
      ++checked;
    }
  }
  MESSAGE(checked << " subgraphs checked, " << equal << " with the graph's least peak");
}

TEST_CASE("subgraph_peak_bound lies between the per-op floor and the least peak, with or without gradient order") {
  std::size_t above_floor = 0, exact = 0, graphs = 0;
  for (std::uint64_t seed = 1; seed <= 900; ++seed) {
    const graph g = test::random_dag(5 + seed % 7, seed, 2 + seed % 4, 1 + seed % 3);
    const precedence order = gradient_order_constraints(g);
    const auto least = oracle_least_peak(g);
    const auto least_in_order = oracle_least_peak(g, &order);
    if (!least || !least_in_order) continue;
    subgraph_bound_options small;
    small.max_lower_sets = 8 + seed % 64;
    small.time = time_budget::within(std::chrono::minutes(1));
    const subgraph_bound bound = subgraph_peak_bound(g, small);
    const std::uint64_t floor = per_op_floor(g).bytes;
    CHECK(bound.bytes >= floor);
    CHECK(bound.bytes <= *least);
    CHECK(bound.bytes <= *least_in_order);
    CHECK_FALSE(bound.stopped);
    above_floor += bound.bytes > floor;
    exact += bound.bytes == *least;
    ++graphs;
  }
  MESSAGE(graphs << " graphs: the bound beat the floor on " << above_floor << " and met the optimum on " << exact);
  CHECK(graphs >= 400);
  CHECK(above_floor > 0);
}

TEST_CASE("on DARTS a subgraph of a thousand lower sets lifts the bound far above the per-op floor") {
  const graph g = zoo::build("darts-cifar10");
  subgraph_bound_options o;
  o.max_lower_sets = 1024;
  o.time = time_budget::within(std::chrono::minutes(5));  // complete, so the figures do not depend on the machine
  const subgraph_bound bound = subgraph_peak_bound(g, o);
  const std::uint64_t floor = per_op_floor(g).bytes;
  MESSAGE("DARTS: bound " << bound.bytes << " bytes from " << bound.nodes << " nodes and " << bound.lower_sets
                          << " lower sets; per-op floor " << floor);
  CHECK_FALSE(bound.stopped);
  CHECK(bound.subgraph_optimum);
  CHECK(bound.lower_sets <= 1024);
  CHECK(bound.bytes * 10 >= floor * 14);
  solve_options chain;
  chain.method = method::chain;
  CHECK(bound.bytes < solve(g, chain).claimed_peak);
}

TEST_CASE("exact reports the subgraph bound when it cannot prove its plan, and the floor when given no time for it") {
  const graph g = zoo::build("darts-cifar10");
  const std::uint64_t floor = per_op_floor(g).bytes;
  solve_options none;
  none.bound_time_limit = std::chrono::milliseconds(0);
  none.general_search_work = 0;  // stage plans, which the subgraph bound speaks of
  const solution at_floor = solve(g, none);
  CHECK(at_floor.peak_lower_bound == floor);
  CHECK(at_floor.message.find("the lower bound is the per-op floor") != std::string::npos);
  solve_options generous;
  generous.bound_time_limit = std::chrono::seconds(2);
  generous.general_search_work = 0;
  const solution lifted = solve(g, generous);
  CHECK(lifted.status == solve_status::feasible);
  CHECK(lifted.peak_lower_bound > floor);
  CHECK(lifted.peak_lower_bound < lifted.claimed_peak);
  CHECK(lifted.message.find("a subgraph of") != std::string::npos);
}

TEST_CASE("beyond the cap a budget under a bound is infeasible; one no fallback meets but no bound refutes is stopped") {
  const graph g = zoo::build("darts-cifar10");
  const std::uint64_t floor = per_op_floor(g).bytes;
  subgraph_bound_options path_only;
  path_only.max_lower_sets = 1;  // no ear fits: the heaviest path alone
  path_only.time = time_budget::within(std::chrono::minutes(1));
  const std::uint64_t path_bound = subgraph_peak_bound(g, path_only).bytes;
  REQUIRE(path_bound > floor + 2);

  solve_options time;
  time.goal = objective::time;
  time.bound_time_limit = std::chrono::seconds(30);  // it returns once the budget is refuted
  time.budget = floor - 1;
  const solution below_floor = solve(g, time);
  CHECK(below_floor.status == solve_status::infeasible);
  CHECK(below_floor.message.find("the per-op floor is") != std::string::npos);
  CHECK(below_floor.best.steps.empty());

  time.budget = floor + (path_bound - floor) / 2;
  const solution below_path = solve(g, time);
  CHECK(below_path.status == solve_status::infeasible);
  CHECK(below_path.peak_lower_bound > time.budget);
  CHECK(below_path.message.find("no plan of a subgraph of") != std::string::npos);
  CHECK(below_path.message.find("the least feasible budget is at most") != std::string::npos);

  // Every fallback plan peaks above 580 MiB; nothing refutes 400 MiB, and
  // no stage plan shows a plan within it: not infeasible, stopped.
  time.budget = std::uint64_t{400} << 20;
  time.bound_time_limit = std::chrono::milliseconds(300);
  time.general_search_work = 0;
  const solution between = solve(g, time);
  CHECK(between.status == solve_status::stopped);
  CHECK(between.best.steps.empty());
  CHECK(between.peak_lower_bound <= time.budget);
  CHECK(between.message.find("none ruled out") != std::string::npos);
  // A general plan meets it: keeping nothing, the stages split for the
  // least recompute within the budget, then the values kept anew.
  time.general_search_work = exact_options{}.general_search_work;
  const solution general = solve(g, time);
  CHECK(general.status == solve_status::feasible);
  CHECK(general.figures.peak_bytes <= time.budget);
  CHECK(general.produced_by == "stage split");
  CHECK(general.message.find("for the least recompute within 400.0 MiB") != std::string::npos);
}

}  // TEST_SUITE
