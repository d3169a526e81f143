// The seed table on a GPU: for each of the 18 zoo models at the OGC
// benchmark's batch and input sizes, one training step (forward, recompute,
// backward, SGD) under regular training (`none`) and under the optimal plan
// (remat::solve, method exact), on the CUDA runtime:
// - `peak_measured`: the executor's ledger of live bytes (parameters, inputs
//   and arena buffers), and `peak_simulated`, the simulator's figure for the
//   same schedule (equal for f32 graphs);
// - `device_bytes`: everything the model and executor hold on the device
//   (parameters, inputs, running statistics, convolution and GEMM workspaces,
//   the arena, kernel scratch), and `device_taken`, cudaMemGetInfo's view of it;
// - `median_ms`: the median over the timed steps of each step's device time
//   (CUDA events), after warm-up steps; the benchmark's own time is their mean.
// Convolutions run as PyTorch's defaults do (cuDNN heuristics, TF32 allowed,
// not deterministic), so the times compare with bench/pytorch_baseline.py.
// bench/gpu-results runs this and the PyTorch baseline and writes
// docs/results-gpu.md. Without a device it prints why and exits 77 (SKIP).
//
//   build-release/bench/bench_cuda [--steps=20] [--warmup=3] [--algorithms=heuristic|measured]
//                                  [--benchmark_filter=gpu_step/resnet50/]

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <remat/cuda/device.hpp>
#include <remat/cuda/executor.hpp>
#include <remat/cuda/model.hpp>
#include <remat/solve.hpp>
#include <remat/solvers/baselines.hpp>
#include <remat/zoo/models.hpp>

namespace {

int timed_steps = 20;
int warmup_steps = 3;
// --algorithms=measured: cuDNN times its candidates (torch.backends.cudnn.benchmark).
auto algorithm_search = remat::cuda::model_options::search::heuristic;

// The plan and what the solver says of it.
std::pair<remat::plan, std::string> plan_for(const remat::graph& g, const std::string& method) {
  if (method == "none") return {remat::plan_none(g), "regular training"};
  remat::solve_options o;
  o.method = remat::method::exact;
  remat::solution s = remat::solve(g, o);
  return {std::move(s.best), std::string(to_string(s.status)) + " exact plan"};
}

void gpu_step(benchmark::State& state, const std::string& model, const std::string& method) {
  const remat::graph g = remat::zoo::build(model);
  const auto [p, what] = plan_for(g, method);
  remat::cuda::model_options options;
  options.tf32 = true;  // torch.backends.cudnn.allow_tf32's default
  options.algorithm_search = algorithm_search;
  remat::cuda::model<float> m(g, 1, options);
  m.randomize_inputs(1);
  remat::cuda::executor<float> e(m, p.steps);
  remat::cuda::step_options step;
  for (int i = 0; i < warmup_steps; ++i) {
    step.step = static_cast<std::uint64_t>(i);
    (void)e.run(step);
  }
  std::vector<double> seconds;
  remat::cuda::step_report last;
  for (auto _ : state) {
    step.step = static_cast<std::uint64_t>(warmup_steps) + seconds.size();
    last = e.run(step);
    state.SetIterationTime(last.seconds);
    seconds.push_back(last.seconds);
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds.size() % 2 ? seconds[seconds.size() / 2]
                                           : (seconds[seconds.size() / 2 - 1] + seconds[seconds.size() / 2]) / 2;
  const remat::cuda::model_memory& mm = m.memory();
  auto bytes = [](std::uint64_t b) { return benchmark::Counter(static_cast<double>(b)); };
  state.counters["median_ms"] = median * 1e3;
  state.counters["peak_measured"] = bytes(last.peak_bytes);
  state.counters["peak_simulated"] = bytes(e.simulated().peak_bytes);
  state.counters["parameters"] = bytes(last.at_peak.parameters);
  state.counters["parameter_gradients"] = bytes(last.at_peak.parameter_gradients);
  state.counters["arena"] = bytes(e.layout().arena_bytes);
  state.counters["workspace"] = bytes(mm.convolution_workspace + mm.gemm_workspace);
  state.counters["device_bytes"] = bytes(mm.total() + e.layout().arena_bytes + e.plan().scratch_bytes());
  state.counters["device_taken"] = bytes(mm.device_taken + e.device_taken());
  state.counters["recompute_steps"] = static_cast<double>(e.simulated().recompute_steps);
  state.counters["overhead_simulated"] = e.simulated().overhead();
  state.counters["loss"] = last.loss;
  // cudaMemGetInfo: bytes the last step took from the device (0: nothing allocated on the step path).
  state.counters["grew_in_step"] =
      static_cast<double>(last.free_before) - static_cast<double>(last.free_after);
  state.SetLabel(what + ", " + std::to_string(p.steps.size()) + " steps");
}

// Takes --steps=N, --warmup=N and --algorithms=heuristic|measured out of argv, leaving Google Benchmark's flags.
void take_own_flags(int& argc, char** argv) {
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with("--steps=")) timed_steps = std::max(1, std::atoi(argv[i] + 8));
    else if (arg.starts_with("--warmup=")) warmup_steps = std::max(0, std::atoi(argv[i] + 9));
    else if (arg == "--algorithms=measured") algorithm_search = remat::cuda::model_options::search::measured;
    else if (arg == "--algorithms=heuristic") algorithm_search = remat::cuda::model_options::search::heuristic;
    else argv[kept++] = argv[i];
  }
  argc = kept;
}

}  // namespace

int main(int argc, char** argv) {
  take_own_flags(argc, argv);
  if (remat::cuda::device_count() == 0) {
    std::printf("bench_cuda: no CUDA device (%s): nothing to measure, skipped\n",
                remat::cuda::no_device_reason().c_str());
    return 77;
  }
  const remat::cuda::device_properties device = remat::cuda::properties(0);
  benchmark::AddCustomContext("device", device.name);
  benchmark::AddCustomContext("device_memory", std::to_string(device.total_memory));
  benchmark::AddCustomContext("cuda_runtime", std::to_string(remat::cuda::runtime_version()));
  benchmark::AddCustomContext("cudnn", std::to_string(remat::cuda::cudnn_version()));
  benchmark::AddCustomContext("cublas", std::to_string(remat::cuda::cublas_version()));
  benchmark::AddCustomContext("steps", std::to_string(timed_steps) + " timed after " + std::to_string(warmup_steps));
  benchmark::AddCustomContext("algorithms", algorithm_search == remat::cuda::model_options::search::measured
                                                ? "measured"
                                                : "heuristic");
  for (const remat::zoo::model_info& info : remat::zoo::models())
    for (const char* method : {"none", "exact"})
      benchmark::RegisterBenchmark(("gpu_step/" + info.name + "/" + method).c_str(), gpu_step, info.name,
                                   std::string(method))
          ->UseManualTime()
          ->Iterations(timed_steps)
          ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
