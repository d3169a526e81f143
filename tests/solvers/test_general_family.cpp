// Ground truth for the general plan family (schedule_from_kept_stages): an
// exhaustive search over every chain of lower sets, every kept set and every
// stage's recompute mode on small random DAGs. It measures how far the stage
// optimum (`exact`) and the kept-set optimum are from the family's best, and
// how far the family's best is from the best of every single-level schedule
// (support/all_schedules.hpp); the figures are in docs/algorithms.md.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <limits>
#include <vector>

#include <remat/solve.hpp>

#include "../support/all_schedules.hpp"
#include "../support/random_graphs.hpp"

using namespace remat;

namespace {

constexpr std::uint64_t none = std::numeric_limits<std::uint64_t>::max();

// Calls f(stage_of) for every chain of lower sets covering g's computed nodes
// (stage k = the k-th set's new nodes).
void for_each_chain(const graph& g, const std::function<void(const std::vector<std::uint32_t>&)>& f) {
  std::vector<node_id> computed;
  for (node_id v = 0; v < g.size(); ++v)
    if (!g.is_input(v)) computed.push_back(v);
  const std::size_t c = computed.size();
  std::vector<std::uint32_t> preds(c, 0);  // computed operands, as a mask over `computed`
  for (std::size_t i = 0; i < c; ++i)
    for (node_id p : g.predecessors(computed[i]))
      if (!g.is_input(p)) preds[i] |= 1U << (std::find(computed.begin(), computed.end(), p) - computed.begin());
  std::vector<std::uint32_t> stage_of(g.size(), 0);
  const std::uint32_t all = (1U << c) - 1;
  std::function<void(std::uint32_t, std::uint32_t)> grow = [&](std::uint32_t placed, std::uint32_t stage) {
    if (placed == all) {
      f(stage_of);
      return;
    }
    const std::uint32_t rest = all & ~placed;
    for (std::uint32_t sub = rest; sub != 0; sub = (sub - 1) & rest) {
      bool lower = true;
      for (std::size_t i = 0; i < c && lower; ++i)
        if (sub >> i & 1) lower = (preds[i] & ~(placed | sub)) == 0;
      if (!lower) continue;
      for (std::size_t i = 0; i < c; ++i)
        if (sub >> i & 1) stage_of[computed[i]] = stage;
      grow(placed | sub, stage + 1);
    }
  };
  grow(0, 0);
}

// The peak of the forward phase and of each stage's backward (by stage
// number), from a schedule's timeline. A stage's backward runs from the
// previous stage's last backward to its own; the state between two stages
// does not depend on how either recomputes (both free what they recomputed).
struct stage_peaks {
  std::uint64_t forward = 0;
  std::vector<std::uint64_t> stage;
};

stage_peaks peaks_by_stage(const graph& g, const schedule& steps, const std::vector<std::uint32_t>& stage_of,
                           std::size_t stages) {
  const simulation s = simulate(g, steps, {.record_timeline = true});
  stage_peaks out;
  out.stage.assign(stages, 0);
  std::size_t first = 0;
  while (first < steps.size() && steps[first].kind != step_kind::recompute && steps[first].kind != step_kind::backward)
    out.forward = std::max(out.forward, s.timeline[first++].total());
  std::uint32_t next = 0;
  for (std::size_t i = steps.size(); i-- > first;) {
    if (steps[i].kind == step_kind::backward) next = stage_of[steps[i].node];
    if (steps[i].kind != step_kind::free) out.stage[next] = std::max(out.stage[next], s.timeline[i].total());
  }
  return out;
}

struct family_optima {
  std::uint64_t general = none, stages = none, kept = none;
};

family_optima exhaustive(const graph& g, bool brute_force_modes) {
  family_optima best;
  std::vector<node_id> computed;
  for (node_id v = 0; v < g.size(); ++v)
    if (!g.is_input(v)) computed.push_back(v);
  for (std::uint32_t mask = 0; mask < (1U << computed.size()); ++mask) {
    node_set keep(g.size());
    for (std::size_t i = 0; i < computed.size(); ++i)
      if (mask >> i & 1) keep.insert(computed[i]);
    best.kept = std::min(best.kept, simulate(g, schedule_from_kept(g, keep)).peak_bytes);
  }
  for_each_chain(g, [&](const std::vector<std::uint32_t>& stage_of) {
    best.stages = std::min(best.stages, simulate(g, schedule_from_stages(g, stage_of)).peak_bytes);
    const std::size_t stages = *std::max_element(stage_of.begin(), stage_of.end()) + 1;
    const std::vector<stage_recompute> lazy(stages, stage_recompute::lazy), eager(stages, stage_recompute::eager);
    for (std::uint32_t mask = 0; mask < (1U << computed.size()); ++mask) {
      node_set keep(g.size());
      for (std::size_t i = 0; i < computed.size(); ++i)
        if (mask >> i & 1) keep.insert(computed[i]);
      const stage_peaks l = peaks_by_stage(g, schedule_from_kept_stages(g, stage_of, keep, lazy), stage_of, stages);
      const stage_peaks e = peaks_by_stage(g, schedule_from_kept_stages(g, stage_of, keep, eager), stage_of, stages);
      REQUIRE(l.forward == e.forward);
      std::uint64_t peak = l.forward;
      for (std::size_t k = 0; k < stages; ++k) peak = std::max(peak, std::min(l.stage[k], e.stage[k]));
      best.general = std::min(best.general, peak);
      if (brute_force_modes && stages <= 4) {
        // The per-stage choice is what trying every combination finds.
        std::uint64_t tried = none;
        for (std::uint32_t m = 0; m < (1U << stages); ++m) {
          std::vector<stage_recompute> modes(stages);
          for (std::size_t k = 0; k < stages; ++k) modes[k] = m >> k & 1 ? stage_recompute::eager : stage_recompute::lazy;
          tried = std::min(tried, simulate(g, schedule_from_kept_stages(g, stage_of, keep, modes)).peak_bytes);
        }
        CHECK(tried == peak);
      }
    }
  });
  return best;
}

}  // namespace

TEST_CASE("the general family on 10,000 small random DAGs: it holds both other families' optima, beats them, and exact proves its best") {
  std::size_t graphs = 0, below_both = 0, below_stages = 0, below_kept = 0, general_plans_found = 0;
  double worst_exact = 0, worst_kept = 0, sum_exact = 0;
  for (std::uint64_t seed = 0; seed < 10000; ++seed) {
    const graph g = test::random_dag(2 + seed % 4, seed, 2 + seed % 3, 1 + seed % 3);
    CAPTURE(seed);
    const family_optima best = exhaustive(g, seed % 50 == 0);
    ++graphs;
    REQUIRE(best.general <= best.stages);
    REQUIRE(best.general <= best.kept);
    // In id order, without gradient-order constraints, as the enumeration:
    // the stage programme alone gives the stage optimum, and `exact` the
    // general family's, proven over it, with a plan that peaks there.
    solve_options o;
    o.order = order_choice::graph;
    o.preserve_gradient_order = false;
    o.method = method::dp;
    const solution stage = solve(g, o);
    REQUIRE(stage.status == solve_status::optimal);
    CHECK(stage.figures.peak_bytes == best.stages);
    o.method = method::exact;
    const solution s = solve(g, o);
    REQUIRE(s.status == solve_status::optimal);
    // Regular training at the per-op floor is proven over every schedule.
    CHECK(s.proof_family == (s.produced_by == "none" ? "every schedule" : "general plans"));
    CHECK(s.figures.peak_bytes == best.general);
    CHECK(s.claimed_peak == s.figures.peak_bytes);
    CHECK(s.peak_lower_bound == s.figures.peak_bytes);
    CHECK(s.figures.peak_bytes <= stage.figures.peak_bytes);
    general_plans_found += s.produced_by == "general-dp";
    below_stages += best.general < best.stages;
    below_kept += best.general < best.kept;
    below_both += best.general < std::min(best.stages, best.kept);
    const double gap_exact = static_cast<double>(best.stages) / static_cast<double>(best.general) - 1;
    worst_exact = std::max(worst_exact, gap_exact);
    sum_exact += gap_exact;
    worst_kept = std::max(worst_kept, static_cast<double>(best.kept) / static_cast<double>(best.general) - 1);
  }
  MESSAGE(graphs << " graphs of 3-6 computed nodes: the general family peaks below the stage optimum on "
                 << below_stages << " (mean gap " << 100 * sum_exact / static_cast<double>(graphs) << "%, largest "
                 << 100 * worst_exact << "%), below the kept-set optimum on " << below_kept << " (largest "
                 << 100 * worst_kept << "%), below both on " << below_both << "; exact returned a general plan on "
                 << general_plans_found);
  CHECK(graphs == 10000);
  CHECK(general_plans_found == below_stages);  // exactly where the stage optimum is not the family's
  CHECK(below_both > 0);  // the family is more than the union of the other two
}

// REMAT_ALL_SCHEDULES_GRAPHS raises the count for the figures in docs/algorithms.md.
TEST_CASE("every single-level schedule on 1,000 small random DAGs: how far below the general family they reach") {
  const char* asked = std::getenv("REMAT_ALL_SCHEDULES_GRAPHS");
  const std::uint64_t count = asked ? std::strtoull(asked, nullptr, 10) : 1000;
  std::size_t graphs = 0, below = 0, with_pending = 0, floor_reached = 0;
  double worst = 0, sum = 0;
  std::size_t most_states = 0;
  std::uint64_t worst_seed = 0;
  for (std::uint64_t seed = 0; seed < count; ++seed) {
    const graph g = test::random_dag(2 + seed % 4, seed, 2 + seed % 3, 1 + seed % 3);
    CAPTURE(seed);
    const family_optima family = exhaustive(g, false);
    const std::optional<test::all_schedules_optimum> any = test::least_peak_over_all_schedules(g, 2'000'000);
    REQUIRE(any.has_value());
    // The search's step rules are the simulator's: its schedule peaks where it says.
    REQUIRE(simulate(g, any->steps).peak_bytes == any->peak);
    REQUIRE(any->peak <= family.general);
    // The per-op floor, pending gradients included, holds for every schedule.
    const op_floor floor = per_op_floor(g);
    REQUIRE(floor.bytes <= any->peak);
    with_pending += floor.pending_gradients > 0;
    floor_reached += floor.bytes == any->peak;
    ++graphs;
    most_states = std::max(most_states, any->states);
    below += any->peak < family.general;
    const double gap = static_cast<double>(family.general) / static_cast<double>(any->peak) - 1;
    if (gap > worst) worst_seed = seed;
    worst = std::max(worst, gap);
    sum += gap;
  }
  MESSAGE(graphs << " graphs of 3-6 computed nodes: some single-level schedule peaks below the general family's best on "
                 << below << " (mean gap " << 100 * sum / static_cast<double>(graphs) << "%, largest " << 100 * worst
                 << "% on seed " << worst_seed << "); the search settled at most " << most_states
                 << " states; the per-op floor counts pending gradients on " << with_pending << " and is reached on "
                 << floor_reached);
  CHECK(graphs == count);
  CHECK(with_pending > 0);
}
