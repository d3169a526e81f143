#pragma once

// The least peak over every single-level schedule of a small graph: every
// order of compute, recompute, free and backward steps the simulator accepts
// (each node computed at least once, any number of recomputations), not only
// those of a plan family. A bottleneck shortest path (Dijkstra on the running
// peak) over the states (ever computed, held, backward done); the step
// memories are the simulator's rules (plan/simulate.hpp), and the schedule it
// returns is checked against the simulator by its callers. Exponential: for
// graphs of up to ~8 computed nodes.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <optional>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include <remat/graph/graph.hpp>
#include <remat/plan/schedule.hpp>

#include "random_graphs.hpp"

namespace remat::test {

struct all_schedules_optimum {
  std::uint64_t peak = 0;
  schedule steps;
  std::size_t states = 0;  // states settled
};

// Nothing when g has more than 20 computed nodes or the search settles more
// than `max_states` states.
inline std::optional<all_schedules_optimum> least_peak_over_all_schedules(const graph& g, std::size_t max_states) {
  std::vector<node_id> computed;
  std::vector<int> index(g.size(), -1);
  for (node_id v = 0; v < g.size(); ++v)
    if (!g.is_input(v)) {
      index[v] = static_cast<int>(computed.size());
      computed.push_back(v);
    }
  const std::size_t c = computed.size();
  if (c > 20) return std::nullopt;
  using mask = std::uint64_t;
  const mask all = (mask{1} << c) - 1;
  std::vector<mask> operands(c, 0), consumers(c, 0);
  for (std::size_t i = 0; i < c; ++i) {
    for (node_id p : g.predecessors(computed[i]))
      if (index[p] >= 0) operands[i] |= mask{1} << index[p];
    for (node_id s : g.successors(computed[i])) consumers[i] |= mask{1} << index[s];
  }
  auto bit = [](std::size_t i) { return mask{1} << i; };

  // Bytes held between steps: values held, gradients opened by a consumer's
  // backward and not yet consumed, parameter gradients of finished backwards.
  auto resting = [&](mask held, mask done) {
    std::uint64_t bytes = g.param_bytes() + g.input_bytes();
    for (std::size_t i = 0; i < c; ++i) {
      const node_id v = computed[i];
      if (held & bit(i)) bytes += g.bytes(v);
      if (!(done & bit(i)) && (consumers[i] & done)) bytes += g.bytes(v);
      if (done & bit(i)) bytes += g.params(v);
    }
    return bytes;
  };

  // A state packs (ever computed, held, done) into one key.
  auto key = [&](mask ever, mask held, mask done) { return ever | held << c | done << 2 * c; };
  struct entry {
    std::uint64_t peak;
    mask parent;
    step via;
  };
  std::unordered_map<mask, entry> best;
  using item = std::pair<std::uint64_t, mask>;
  std::priority_queue<item, std::vector<item>, std::greater<>> frontier;
  const mask start = key(0, 0, 0);
  best[start] = {0, start, {}};
  frontier.push({0, start});
  std::size_t settled = 0;

  while (!frontier.empty()) {
    const auto [peak, at] = frontier.top();
    frontier.pop();
    if (best.at(at).peak != peak) continue;
    if (++settled > max_states) return std::nullopt;
    const mask ever = at & all, held = at >> c & all, done = at >> 2 * c & all;
    if (done == all && ever == all) {
      all_schedules_optimum out;
      out.peak = peak;
      out.states = settled;
      for (mask k = at; k != start; k = best.at(k).parent) out.steps.push_back(best.at(k).via);
      std::reverse(out.steps.begin(), out.steps.end());
      return out;
    }
    auto relax = [&](mask next, std::uint64_t during, step via) {
      const std::uint64_t p = std::max(peak, during);
      const auto it = best.find(next);
      if (it != best.end() && it->second.peak <= p) return;
      best[next] = {p, at, via};
      frontier.push({p, next});
    };
    const std::uint64_t rest = resting(held, done);
    for (std::size_t i = 0; i < c; ++i) {
      const node_id v = computed[i];
      if (held & bit(i)) {
        relax(key(ever, held & ~bit(i), done), rest - g.bytes(v), {step_kind::free, v});
        continue;
      }
      if ((operands[i] & held) == operands[i])
        relax(key(ever | bit(i), held | bit(i), done), rest + g.bytes(v) + g.workspace(v),
              {ever & bit(i) ? step_kind::recompute : step_kind::compute, v});
    }
    for (std::size_t i = 0; i < c; ++i) {
      const node_id v = computed[i];
      if ((done & bit(i)) || (consumers[i] & done) != consumers[i]) continue;
      const backward_reads r = g.reads(v);
      if (reads_inputs(r) && (operands[i] & held) != operands[i]) continue;
      if (reads_output(r) && !(held & bit(i))) continue;
      std::uint64_t during = rest + g.params(v) + g.backward_workspace(v);
      if (consumers[i] == 0) during += g.bytes(v);  // a sink's seed
      mask opened = 0;
      for (std::size_t j = 0; j < c; ++j)
        if ((operands[i] & bit(j)) && !(done & bit(j)) && !(consumers[j] & done) && !(opened & bit(j))) {
          opened |= bit(j);
          during += g.bytes(computed[j]);
        }
      relax(key(ever, held, done | bit(i)), during, {step_kind::backward, v});
    }
  }
  return std::nullopt;
}

// Calls check(g, least) for `count` random DAGs of 3–7 computed nodes
// (seeds 0, 1, …; more with the environment variable `more`, for the
// figures in the docs), `least` the least peak over every schedule of g.
template <class Check>
void for_small_random_dags(const char* more, std::uint64_t count, Check&& check) {
  if (const char* asked = std::getenv(more)) count = std::strtoull(asked, nullptr, 10);
  for (std::uint64_t seed = 0; seed < count; ++seed) {
    const graph g = random_dag(3 + seed % 5, seed, 2 + seed % 4, 1 + seed % 3);
    CAPTURE(seed);
    const std::optional<all_schedules_optimum> any = least_peak_over_all_schedules(g, 2'000'000);
    REQUIRE(any.has_value());
    check(g, any->peak);
  }
}

}  // namespace remat::test
