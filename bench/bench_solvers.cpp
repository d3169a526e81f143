// Solver speed targets (issue: Solvers). Release build, one core:
//   meson setup build-release --buildtype=release
//   ./build-release/bench/bench_solvers --benchmark_filter=zoo
// Counters: nodes, lower sets, plan peak bytes, recompute seconds, and whether
// the plan is proven optimal (1) or a bounded fallback (0).

#include <benchmark/benchmark.h>

#include <remat/solve.hpp>
#include <remat/zoo/models.hpp>

#include "tests/support/shaped_graphs.hpp"

namespace {

void report(benchmark::State& state, const remat::graph& g, const remat::solution& s) {
  state.counters["nodes"] = static_cast<double>(g.size());
  state.counters["lower_sets"] = static_cast<double>(s.stats.lower_sets);
  state.counters["stages"] = static_cast<double>(s.stats.transitions);
  state.counters["peak_bytes"] = static_cast<double>(s.claimed_peak);
  state.counters["recompute_s"] = s.claimed_recompute;
  state.counters["optimal"] = s.status == remat::solve_status::optimal ? 1 : 0;
}

void solve_graph(benchmark::State& state, const remat::graph& g, remat::method m) {
  remat::solve_options options;
  options.method = m;
  remat::solution s;
  for (auto _ : state) {
    s = remat::solve(g, options);
    benchmark::DoNotOptimize(s.claimed_peak);
  }
  report(state, g, s);
}

void register_zoo() {
  for (const auto& model : remat::zoo::models()) {
    for (remat::method m : {remat::method::exact, remat::method::chain}) {
      const std::string name = "zoo/" + std::string(remat::to_string(m)) + "/" + model.name;
      benchmark::RegisterBenchmark(name.c_str(), [model, m](benchmark::State& state) {
        const remat::graph g = remat::zoo::build(model.name);
        solve_graph(state, g, m);
      })->Unit(benchmark::kMillisecond);
    }
  }
}

void BM_exact_resnet_like(benchmark::State& state) {
  solve_graph(state, remat::test::resnet_like(static_cast<std::size_t>(state.range(0))), remat::method::exact);
}
BENCHMARK(BM_exact_resnet_like)->Arg(100)->Arg(150)->Arg(200)->Unit(benchmark::kMillisecond);

void BM_exact_densenet_like(benchmark::State& state) {
  solve_graph(state, remat::test::densenet_like(4, static_cast<std::size_t>(state.range(0))), remat::method::exact);
}
BENCHMARK(BM_exact_densenet_like)->Arg(36)->Arg(54)->Arg(72)->Unit(benchmark::kMillisecond);

void BM_exact_pspnet_like(benchmark::State& state) {
  solve_graph(state, remat::test::pspnet_like(static_cast<std::size_t>(state.range(0))), remat::method::exact);
}
BENCHMARK(BM_exact_pspnet_like)->Arg(100)->Arg(150)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  register_zoo();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
