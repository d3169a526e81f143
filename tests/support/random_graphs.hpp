#pragma once

// Seeded random graphs shared by tests and benchmarks.

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <remat/graph/graph.hpp>
#include <remat/zoo/generators.hpp>

namespace remat::test {

// A random DAG with one input, `n` computed nodes and one sink: each node takes
// 1..max_fan_in operands among the `window` nodes before it, sizes and times are
// random, backward reads are drawn from all four kinds, and every node without a
// consumer feeds the final sink so the graph has a single output.
inline graph random_dag(std::size_t n, std::uint64_t seed, std::size_t window = 4, std::size_t max_fan_in = 2,
                        bool with_params = true) {
  std::mt19937_64 rng(seed);
  graph_builder b("random-" + std::to_string(seed));
  node_spec input;
  input.name = "x";
  input.op = "input";
  input.bytes = 1 + rng() % 64;
  b.add(input);
  std::vector<char> consumed(n + 1, 0);
  for (std::size_t i = 1; i <= n; ++i) {
    node_spec s;
    s.name = "v" + std::to_string(i);
    s.op = "op";
    s.bytes = 1 + rng() % 100;
    s.time = static_cast<double>(1 + rng() % 9);
    s.params = with_params && rng() % 3 == 0 ? rng() % 50 : 0;
    s.reads = static_cast<backward_reads>(rng() % 4);
    const std::size_t fan = 1 + rng() % max_fan_in;
    for (std::size_t k = 0; k < fan; ++k) {
      const std::size_t lo = i > window ? i - window : 0;
      const std::size_t pick = lo + rng() % (i - lo);
      if (std::find(s.inputs.begin(), s.inputs.end(), pick) == s.inputs.end()) s.inputs.push_back(pick);
      consumed[pick] = 1;
    }
    b.add(std::move(s));
  }
  node_spec sink;
  sink.name = "loss";
  sink.op = "loss";
  sink.bytes = 4;
  sink.time = 1;
  sink.reads = backward_reads::inputs;
  for (std::size_t i = 1; i <= n; ++i)
    if (!consumed[i]) sink.inputs.push_back(i);
  b.add(std::move(sink));
  return std::move(b).build();
}

// g with costs of a real network's kind: bytes scaled to hundreds of
// megabytes by odd factors, times by random fractions, so that sums of times
// round and the DP and the simulator may differ in their last bits.
inline graph with_real_costs(const graph& g, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  graph_builder b(g.name() + "-real");
  for (node_id v = 0; v < g.size(); ++v) {
    node_spec s;
    s.name = g.node_name(v);
    s.op = g.op(v);
    s.bytes = g.bytes(v) * (1 + rng() % 3) * 1000003;
    s.params = g.params(v) * 999983;
    s.time = g.time(v) * (0.1 + static_cast<double>(rng() % 1000) / 997.0);
    s.reads = g.reads(v);
    s.inputs.assign(g.inputs(v).begin(), g.inputs(v).end());
    b.add(std::move(s));
  }
  return std::move(b).build();
}

// A random monotone stage assignment: walk ids in order, bump the stage with
// probability 1/3, and never place a node before its operands.
inline std::vector<std::uint32_t> random_stages(const graph& g, std::mt19937_64& rng) {
  std::vector<std::uint32_t> stage(g.size(), 0);
  std::uint32_t current = 0;
  for (node_id v = 0; v < g.size(); ++v) {
    if (rng() % 3 == 0) ++current;
    stage[v] = current;
    for (node_id p : g.predecessors(v)) stage[v] = std::max(stage[v], stage[p]);
  }
  return stage;
}

// The random layered DAG Moccasin's benchmarks use, `layers` × 5 wide
// (docs/benchmarks.md; `remat gen random --layers N --width 5 --density 0.3
// --seed 1 --batch 4096 --features 256`).
inline graph layered_dag(std::size_t layers) {
  zoo::random_dag_options o;
  o.layers = static_cast<std::int64_t>(layers);
  o.width = 5;
  o.density = 0.3;
  o.seed = 1;
  o.batch = 4096;
  o.features = 256;
  return zoo::random_dag(o);
}

}  // namespace remat::test
