#pragma once

// Brute-force optima over every single-level plan (every chain of lower sets),
// each built with schedule_from_stages and measured by the simulator. Used to
// check the solvers; exponential, for graphs of up to ~14 nodes.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include <remat/analysis/lower_sets.hpp>
#include <remat/plan/plan.hpp>
#include <remat/plan/schedule.hpp>
#include <remat/plan/simulate.hpp>

namespace remat::test {

struct oracle_point {
  std::uint64_t peak;
  double recompute;
};

// Every (peak, recompute) over all chains (of lower sets closed under
// `constraints` when given), or nothing when there are more than max_chains.
inline std::optional<std::vector<oracle_point>> all_chain_plans(const graph& g, std::size_t max_chains,
                                                                const precedence* constraints = nullptr) {
  std::vector<node_set> sets;
  lower_set_options options;
  options.constraints = constraints;
  enumerate_lower_sets(
      g,
      [&](const node_set& s) {
        sets.push_back(s);
        return true;
      },
      options);
  std::sort(sets.begin(), sets.end(), [](const node_set& a, const node_set& b) { return a.count() < b.count(); });
  const std::size_t full = sets.size() - 1;
  std::vector<oracle_point> out;
  std::vector<std::uint32_t> stage_of(g.size(), 0);
  std::size_t chains = 0;
  bool overflow = false;
  // depth-first over chains: `at` is the current lower set, `depth` the stage number
  auto walk = [&](auto&& self, std::size_t at, std::uint32_t depth) -> void {
    if (overflow) return;
    if (at == full) {
      if (++chains > max_chains) {
        overflow = true;
        return;
      }
      const simulation sim = simulate(g, schedule_from_stages(g, stage_of));
      out.push_back({sim.peak_bytes, sim.recompute_time});
      return;
    }
    for (std::size_t next = at + 1; next < sets.size(); ++next) {
      if (sets[next].count() <= sets[at].count() || !sets[at].is_subset_of(sets[next])) continue;
      const node_set stage = sets[next] - sets[at];
      stage.for_each([&](std::size_t v) { stage_of[v] = depth; });
      self(self, next, depth + 1);
    }
  };
  walk(walk, 0, 0);
  if (overflow) return std::nullopt;
  return out;
}

inline oracle_point best_memory(const std::vector<oracle_point>& plans) {
  return *std::min_element(plans.begin(), plans.end(), [](const oracle_point& a, const oracle_point& b) {
    return a.peak != b.peak ? a.peak < b.peak : a.recompute < b.recompute;
  });
}

// Least recompute within the budget, then least peak; nothing when none fits.
inline std::optional<oracle_point> best_time(const std::vector<oracle_point>& plans, std::uint64_t budget) {
  std::optional<oracle_point> best;
  for (const oracle_point& p : plans)
    if (p.peak <= budget && (!best || p.recompute < best->recompute ||
                             (p.recompute == best->recompute && p.peak < best->peak)))
      best = p;
  return best;
}

// The Pareto frontier by increasing peak (strictly decreasing recompute).
inline std::vector<oracle_point> frontier(std::vector<oracle_point> plans) {
  std::sort(plans.begin(), plans.end(), [](const oracle_point& a, const oracle_point& b) {
    return a.peak != b.peak ? a.peak < b.peak : a.recompute < b.recompute;
  });
  std::vector<oracle_point> out;
  for (const oracle_point& p : plans)
    if (out.empty() || p.recompute < out.back().recompute) out.push_back(p);
  return out;
}

}  // namespace remat::test
