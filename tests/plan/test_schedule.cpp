// Schedule builders, baselines and bounds on many seeded random graphs.

#include <doctest/doctest.h>

#include <random>

#include <remat/analysis/bounds.hpp>
#include <remat/plan/plan.hpp>
#include <remat/plan/schedule.hpp>
#include <remat/plan/simulate.hpp>
#include <remat/solvers/baselines.hpp>

#include "../support/random_graphs.hpp"
#include "../support/shaped_graphs.hpp"
#include "../support/small_graphs.hpp"

using namespace remat;

namespace {

node_set random_kept(const graph& g, std::mt19937_64& rng) {
  node_set keep(g.size());
  for (node_id v = 0; v < g.size(); ++v)
    if (rng() % 2) keep.insert(v);
  return keep;
}

}  // namespace

TEST_SUITE("schedule") {

TEST_CASE("every builder gives a valid schedule that never beats the per-op floor (500 random graphs)") {
  std::mt19937_64 rng(7);
  for (std::uint64_t seed = 1; seed <= 500; ++seed) {
    const graph g = test::random_dag(3 + seed % 20, seed, 2 + seed % 5, 1 + seed % 3);
    const op_floor floor = per_op_floor(g);
    const auto check = [&](const plan& p) {
      const simulation sim = simulate(g, p.steps);
      CHECK(sim.peak_bytes >= floor.bytes);
      // Every node is computed once and backwarded once.
      std::size_t computes = 0, backwards = 0;
      for (const step& s : p.steps) {
        computes += s.kind == step_kind::compute;
        backwards += s.kind == step_kind::backward;
      }
      CHECK(computes == g.size() - 1);
      CHECK(backwards == g.size() - 1);
      return sim;
    };
    const simulation regular = check(plan_none(g));
    CHECK(regular.recompute_time == 0);
    check(plan::from_kept(g, random_kept(g, rng), "kept"));
    check(plan::from_kept(g, node_set(g.size()), "kept"));
    check(plan::from_stages(g, test::random_stages(g, rng), "stages"));
    check(plan_every_k(g, 1 + seed % 4));
    check(plan_sqrt(g));
    // One stage per node keeps every value that has a consumer: no recompute.
    std::vector<std::uint32_t> each(g.size());
    for (node_id v = 0; v < g.size(); ++v) each[v] = v;
    CHECK(check(plan::from_stages(g, each, "stages")).recompute_time == 0);
  }
}

TEST_CASE("no node is recomputed twice by either builder") {
  std::mt19937_64 rng(11);
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    const graph g = test::random_dag(12, seed, 5, 3);
    for (const plan& p : {plan::from_kept(g, random_kept(g, rng), "kept"),
                          plan::from_stages(g, test::random_stages(g, rng), "stages")}) {
      std::vector<int> count(g.size(), 0);
      for (const step& s : p.steps)
        if (s.kind == step_kind::recompute) ++count[s.node];
      for (int c : count) CHECK(c <= 1);
    }
  }
}

TEST_CASE("node fates follow the plan") {
  const graph g = test::concat_block();
  std::vector<std::uint32_t> stage(g.size(), 0);
  for (const char* n : {"c", "k", "e"}) stage[*g.find(n)] = 1;
  const auto fate = node_fates(g, plan::from_stages(g, stage, "stages").steps);
  CHECK(fate[*g.find("x")] == node_fate::input);
  CHECK(fate[*g.find("a")] == node_fate::dropped);
  CHECK(fate[*g.find("b")] == node_fate::kept);
  CHECK(fate[*g.find("c")] == node_fate::recomputed);
  CHECK(fate[*g.find("k")] == node_fate::recomputed);
  CHECK(fate[*g.find("e")] == node_fate::dropped);
}

TEST_CASE("stage assignments that are not lower sets are refused") {
  const graph g = test::chain();
  std::vector<std::uint32_t> stage{0, 1, 0, 2};  // b before its operand a
  CHECK_THROWS_WITH_AS((void)schedule_from_stages(g, stage),
                       "stages are not lower sets: 'a' (stage 1) feeds 'b' (stage 0)", error);
  CHECK_THROWS_AS((void)schedule_from_stages(g, std::vector<std::uint32_t>{0, 0}), error);
}

TEST_CASE("baselines") {
  const graph g = test::chain();
  CHECK(plan_every_k(g, 1).stage_of == std::vector<std::uint32_t>{0, 0, 1, 2});
  CHECK(simulate(g, plan_every_k(g, 1).steps).recompute_time == 0);
  CHECK(plan_every_k(g, 2).stage_of == std::vector<std::uint32_t>{0, 0, 0, 1});
  CHECK_THROWS_AS((void)plan_every_k(g, 0), error);
  CHECK(articulation_candidates(g) == std::vector<node_id>{1, 2});
  CHECK(plan_sqrt(g).method == "sqrt");
}

TEST_CASE("descendant sums agree with a direct walk") {
  std::vector<graph> graphs;
  for (std::uint64_t seed = 1; seed <= 50; ++seed) graphs.push_back(test::random_dag(40 + seed * 3, seed, 6, 3));
  for (std::uint64_t seed = 1; seed <= 20; ++seed) graphs.push_back(test::random_dag(30 + seed, seed, 1, 1));
  // Series pieces of several sizes, and inputs that feed late pieces.
  graphs.push_back(test::resnet_like(6));
  graphs.push_back(test::densenet_like(3, 5));
  graphs.push_back(test::pspnet_like(4));
  graphs.push_back(test::densenet_like(1, 90));  // a dense block over 512 nodes takes the table path
  {
    // A second input feeding the last node, as class labels feed a loss.
    graph_builder b("labels-late");
    auto node = [&](std::string name, std::string op, std::vector<std::size_t> inputs, std::uint64_t params) {
      node_spec n;
      n.name = std::move(name);
      n.op = std::move(op);
      n.inputs = std::move(inputs);
      n.bytes = 4;
      n.time = n.op == "input" ? 0 : 1;
      n.params = params;
      return b.add(std::move(n));
    };
    node("x", "input", {}, 0);
    node("labels", "input", {}, 0);
    std::size_t prev = 0;
    for (int i = 0; i < 12; ++i) prev = node("v" + std::to_string(i), "op", {prev}, static_cast<std::uint64_t>(i));
    node("loss", "loss", {prev, 1}, 100);
    graphs.push_back(std::move(b).build());
  }
  for (const graph& g : graphs) {
    const auto sums = descendant_sums(g, [&](std::size_t u) { return g.params(u) + 1; });
    for (node_id v = 0; v < g.size(); ++v) {
      std::vector<char> seen(g.size(), 0);
      std::vector<node_id> stack{v};
      std::uint64_t expect = 0;
      while (!stack.empty()) {
        const node_id u = stack.back();
        stack.pop_back();
        for (node_id s : g.successors(u))
          if (!seen[s]) {
            seen[s] = 1;
            expect += g.params(s) + 1;
            stack.push_back(s);
          }
      }
      CHECK(sums[v] == expect);
    }
  }
}

}  // TEST_SUITE
