// Arena layouts: buffer lifetimes add up to the simulator's timeline step by
// step, offsets never overlap while alive, and the ledger's accounting.

#include <doctest/doctest.h>

#include <random>

#include <remat/runtime/layout.hpp>
#include <remat/solvers/baselines.hpp>

#include "../support/random_graphs.hpp"
#include "../support/small_graphs.hpp"

using namespace remat;

namespace {

// Random graphs with parameters and forward and backward workspaces.
graph random_graph_with_workspaces(std::size_t n, std::uint64_t seed) {
  const graph base = test::random_dag(n, seed, 4, 3);
  graph_builder b(base.name());
  std::mt19937_64 rng(seed);
  for (node_id v = 0; v < base.size(); ++v) {
    node_spec s;
    s.name = base.node_name(v);
    s.op = base.op(v);
    for (node_id p : base.inputs(v)) s.inputs.push_back(p);
    s.bytes = base.bytes(v);
    s.params = base.params(v);
    s.reads = base.reads(v);
    if (!base.is_input(v) && rng() % 3 == 0) s.workspace = rng() % 40;
    if (!base.is_input(v) && rng() % 3 == 0) s.backward_workspace = rng() % 40;
    b.add(std::move(s));
  }
  return std::move(b).build();
}

std::vector<schedule> schedules_of(const graph& g, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  node_set kept(g.size());
  for (std::size_t v = 0; v < g.size(); ++v)
    if (rng() % 3 == 0) kept.insert(v);
  return {plan_none(g).steps, plan_every_k(g, 3).steps, plan_sqrt(g).steps, schedule_from_kept(g, kept),
          schedule_from_kept(g, node_set(g.size()))};
}

}  // namespace

TEST_SUITE("layout") {

TEST_CASE("buffers alive at a step sum to the simulator's memory of that step, by category") {
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    const graph g = random_graph_with_workspaces(5 + seed % 30, seed);
    for (const schedule& steps : schedules_of(g, seed)) {
      simulate_options o;
      o.record_timeline = true;
      const simulation sim = simulate(g, steps, o);
      const std::vector<buffer_lifetime> buffers = buffer_lifetimes(g, steps);
      // A ledger driven by the lifetimes reproduces the timeline exactly.
      memory_ledger ledger(g.param_bytes(), g.input_bytes(), true);
      for (std::size_t i = 0; i < steps.size(); ++i) {
        for (const buffer_lifetime& b : buffers)
          if (b.first_step == i) ledger.acquire(b.category, b.bytes);
        ledger.record();
        for (const buffer_lifetime& b : buffers)
          if (b.last_step == i) ledger.release(b.category, b.bytes);
      }
      REQUIRE(ledger.timeline().size() == sim.timeline.size());
      CHECK(ledger.timeline() == sim.timeline);
      CHECK(ledger.peak_bytes() == sim.peak_bytes);
      CHECK(ledger.peak_step() == sim.peak_step);
      CHECK(ledger.at_peak() == sim.at_peak);
    }
  }
}

TEST_CASE("offsets never overlap while both buffers are alive; the arena is at least the live peak") {
  double worst = 1;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    const graph g = random_graph_with_workspaces(5 + seed % 40, seed);
    for (const schedule& steps : schedules_of(g, seed)) {
      for (const std::uint64_t alignment : {1, 64}) {
        const arena_layout layout = plan_arena(g, steps, alignment);
        const simulation sim = simulate(g, steps);
        CHECK(layout.live_peak + g.param_bytes() + g.input_bytes() == sim.peak_bytes);
        CHECK(layout.arena_bytes >= layout.live_peak);
        for (std::size_t a = 0; a < layout.buffers.size(); ++a) {
          const buffer_lifetime& x = layout.buffers[a];
          CHECK(x.offset % alignment == 0);
          CHECK(x.offset + x.bytes <= layout.arena_bytes);
          for (std::size_t b = a + 1; b < layout.buffers.size(); ++b) {
            const buffer_lifetime& y = layout.buffers[b];
            const bool together = x.first_step <= y.last_step && y.first_step <= x.last_step;
            const bool apart = x.bytes == 0 || y.bytes == 0 || x.offset + x.bytes <= y.offset || y.offset + y.bytes <= x.offset;
            CHECK((!together || apart));
          }
          const auto found = layout.find(x.first_step, x.category, x.node);
          REQUIRE(found.has_value());
          CHECK(*found == a);
        }
        if (alignment == 1) worst = std::max(worst, layout.ratio());
      }
    }
  }
  MESSAGE("worst arena / live peak on random graphs (alignment 1): " << worst);
}

TEST_CASE("a chain reuses memory: the arena is the live peak") {
  const graph g = test::chain();
  const arena_layout layout = plan_arena(g, plan_none(g).steps, 1);
  CHECK(layout.arena_bytes == layout.live_peak);
  CHECK(layout.ratio() == 1.0);
}

TEST_CASE("bad layouts and schedules are refused") {
  std::vector<buffer_lifetime> one(1);
  one[0].bytes = 8;
  one[0].last_step = 3;
  CHECK_THROWS_AS(assign_offsets(one, 2), error);  // ends past the schedule
  CHECK_THROWS_AS(assign_offsets(one, 4, 48), error);  // not a power of two
  const graph g = test::chain();
  schedule steps = plan_none(g).steps;
  steps.pop_back();
  CHECK_THROWS_AS(plan_arena(g, steps), invalid_schedule);
}

}  // TEST_SUITE
