// General plans: stages and a kept set chosen independently, each stage
// recomputing lazily or eagerly. The family holds the other two forms step for
// step, and every plan of it is a valid schedule.

#include <doctest/doctest.h>

#include <random>

#include <remat/analysis/bounds.hpp>
#include <remat/analysis/orders.hpp>
#include <remat/plan/schedule.hpp>
#include <remat/plan/simulate.hpp>

#include "../support/random_graphs.hpp"

using namespace remat;

namespace {

node_set random_kept(const graph& g, std::mt19937_64& rng) {
  node_set keep(g.size());
  for (node_id v = 0; v < g.size(); ++v)
    if (!g.is_input(v) && rng() % 2 == 0) keep.insert(v);
  return keep;
}

// What schedule_from_stages keeps: values read by a later stage, and sinks
// whose backward reads their output.
node_set boundary_of(const graph& g, const std::vector<std::uint32_t>& stage_of) {
  node_set keep(g.size());
  for (node_id v = 0; v < g.size(); ++v) {
    if (g.is_input(v)) continue;
    if (g.successors(v).empty() && reads_output(g.reads(v))) keep.insert(v);
    for (node_id s : g.successors(v))
      if (stage_of[s] > stage_of[v]) keep.insert(v);
  }
  return keep;
}

std::size_t stage_count(const graph& g, const std::vector<std::uint32_t>& stage_of) {
  std::vector<std::uint32_t> seen;
  for (node_id v = 0; v < g.size(); ++v)
    if (!g.is_input(v)) seen.push_back(stage_of[v]);
  std::sort(seen.begin(), seen.end());
  return static_cast<std::size_t>(std::unique(seen.begin(), seen.end()) - seen.begin());
}

}  // namespace

TEST_CASE("one lazy stage is schedule_from_kept, step for step, in any order") {
  std::mt19937_64 rng(7);
  for (std::uint64_t seed = 0; seed < 400; ++seed) {
    const graph g = test::random_dag(4 + seed % 20, seed, 2 + seed % 4, 1 + seed % 3);
    const node_set keep = random_kept(g, rng);
    const std::vector<std::uint32_t> one(g.size(), 0);
    CAPTURE(seed);
    CHECK(schedule_from_kept_stages(g, one, keep) == schedule_from_kept(g, keep));
    const std::vector<node_id> order = consumers_first_order(g);
    CHECK(schedule_from_kept_stages(g, one, keep, {}, order) == schedule_from_kept(g, keep, order));
  }
}

TEST_CASE("a stage plan's boundary kept, every stage eager, is schedule_from_stages, step for step") {
  std::mt19937_64 rng(11);
  for (std::uint64_t seed = 0; seed < 400; ++seed) {
    const graph g = test::random_dag(4 + seed % 20, seed, 2 + seed % 4, 1 + seed % 3);
    const std::vector<std::uint32_t> stage_of = test::random_stages(g, rng);
    const std::vector<stage_recompute> eager(stage_count(g, stage_of), stage_recompute::eager);
    CAPTURE(seed);
    CHECK(schedule_from_kept_stages(g, stage_of, boundary_of(g, stage_of), eager) == schedule_from_stages(g, stage_of));
    const std::vector<node_id> order = consumers_first_order(g);
    CHECK(schedule_from_kept_stages(g, stage_of, boundary_of(g, stage_of), eager, order) ==
          schedule_from_stages(g, stage_of, order));
  }
}

TEST_CASE("every general plan is a valid schedule; its recomputed values never outlive their stage") {
  std::mt19937_64 rng(13);
  for (std::uint64_t seed = 0; seed < 600; ++seed) {
    const graph g = test::random_dag(3 + seed % 25, seed, 2 + seed % 5, 1 + seed % 3);
    const std::vector<std::uint32_t> stage_of = test::random_stages(g, rng);
    const node_set keep = random_kept(g, rng);
    std::vector<stage_recompute> modes(stage_count(g, stage_of));
    for (auto& m : modes) m = rng() % 2 ? stage_recompute::eager : stage_recompute::lazy;
    CAPTURE(seed);
    const schedule steps = schedule_from_kept_stages(g, stage_of, keep, modes);
    simulation s;
    REQUIRE_NOTHROW(s = simulate(g, steps));
    CHECK(s.peak_bytes >= per_op_floor(g).bytes);
    // A value recomputed for one stage is freed before the next stage's
    // first backward: whatever recomputed value is alive then was recomputed
    // after the previous stage's last backward.
    constexpr std::size_t dead = SIZE_MAX;
    std::vector<std::size_t> recomputed_at(g.size(), dead);
    std::size_t last_backward = 0;
    std::uint32_t current = UINT32_MAX;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const step& st = steps[i];
      if (st.kind == step_kind::recompute) recomputed_at[st.node] = i;
      if (st.kind == step_kind::free) recomputed_at[st.node] = dead;
      if (st.kind != step_kind::backward) continue;
      if (stage_of[st.node] != current && current != UINT32_MAX)
        for (node_id v = 0; v < g.size(); ++v)
          if (recomputed_at[v] != dead) CHECK(recomputed_at[v] > last_backward);
      current = stage_of[st.node];
      last_backward = i;
    }
    // A kept value is never recomputed.
    for (node_id v = 0; v < g.size(); ++v)
      if (keep.contains(v) && !g.is_input(v)) {
        bool recomputed_kept = false;
        for (const step& st : steps) recomputed_kept = recomputed_kept || (st.kind == step_kind::recompute && st.node == v);
        CHECK_FALSE(recomputed_kept);
      }
  }
}

TEST_CASE("general plans: bad stages and modes are named") {
  const graph g = test::random_dag(6, 3);
  const node_set keep(g.size());
  std::vector<std::uint32_t> stage_of(g.size(), 0);
  const std::vector<stage_recompute> two(2, stage_recompute::lazy);
  CHECK_THROWS_WITH_AS(schedule_from_kept_stages(g, stage_of, keep, two), "stage modes: 2 given for 1 stages", error);
  stage_of[1] = 1;  // v1 in a later stage than v2 that reads it... only when v2 reads v1
  for (node_id s : g.successors(1)) stage_of[s] = 0;
  if (!g.successors(1).empty()) CHECK_THROWS_AS(schedule_from_kept_stages(g, stage_of, keep), error);
}
