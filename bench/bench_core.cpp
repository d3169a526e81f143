// Throughput of the core pieces every solver leans on: building a graph,
// building a schedule, simulating it. Run with a release build:
//   meson setup build-release --buildtype=release && meson test -C build-release --benchmark

#include <benchmark/benchmark.h>

#include <remat/baselines.hpp>
#include <remat/bounds.hpp>

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

}  // namespace

BENCHMARK_MAIN();
