// Throughput of the core pieces every solver leans on: building a graph,
// building a schedule, simulating it; and of the NAS stack generator behind
// `remat gen nas` (10^5 nodes at 1900 cells). Run with a release build:
//   meson setup build-release --buildtype=release && meson test -C build-release --benchmark

#include <benchmark/benchmark.h>

#include <remat/analysis/bounds.hpp>
#include <remat/solvers/baselines.hpp>
#include <remat/zoo/generators.hpp>

#include "tests/support/random_graphs.hpp"

namespace {

void BM_make_graph(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(remat::test::random_dag(n, 42, 8, 3));
  state.SetComplexityN(state.range(0));
  state.counters["nodes"] = static_cast<double>(n);
}
BENCHMARK(BM_make_graph)->RangeMultiplier(10)->Range(1000, 100000)->Complexity(benchmark::oNLogN);

void BM_schedule_and_simulate_none(benchmark::State& state) {
  const remat::graph g = remat::test::random_dag(static_cast<std::size_t>(state.range(0)), 42, 8, 3);
  for (auto _ : state) {
    const remat::plan p = remat::plan_none(g);
    benchmark::DoNotOptimize(remat::simulate(g, p.steps).peak_bytes);
  }
  state.SetComplexityN(state.range(0));
  state.counters["nodes"] = static_cast<double>(g.size());
  state.counters["edges"] = static_cast<double>(g.num_edges());
}
BENCHMARK(BM_schedule_and_simulate_none)->RangeMultiplier(10)->Range(1000, 1000000)->Complexity(benchmark::oN);

void BM_per_op_floor(benchmark::State& state) {
  const remat::graph g = remat::test::random_dag(static_cast<std::size_t>(state.range(0)), 42, 8, 3);
  for (auto _ : state) benchmark::DoNotOptimize(remat::per_op_floor(g).bytes);
  state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_per_op_floor)->RangeMultiplier(10)->Range(1000, 100000)->Complexity(benchmark::oNSquared);

void BM_nas_stack(benchmark::State& state) {
  remat::zoo::nas_stack_options o;
  o.network.cells = state.range(0);
  std::size_t nodes = 0;
  for (auto _ : state) {
    const remat::graph g = remat::zoo::nas_stack(o);
    nodes = g.size();
    benchmark::DoNotOptimize(nodes);
  }
  state.SetComplexityN(static_cast<std::int64_t>(nodes));
  state.counters["nodes"] = static_cast<double>(nodes);
}
BENCHMARK(BM_nas_stack)->Arg(100)->Arg(400)->Arg(1900)->Unit(benchmark::kMillisecond)->Complexity(benchmark::oN);

}  // namespace

BENCHMARK_MAIN();
