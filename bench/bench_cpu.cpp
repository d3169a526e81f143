// The CPU runtime's kernels and training steps, reported as ratios:
// - each kernel's backward time over its forward time (`bwd/fwd`), next to the
//   cost model's default of 2 (docs/cost-model.md), and its GFLOP/s;
// - the arena a layout needs over the most bytes alive at one step
//   (`arena/live`, 1 is perfect), for full-size zoo graphs, timing the layout;
// - one training step under a plan over the same step under plan_none
//   (`measured`), next to the simulator's (forward + recompute + backward) /
//   (forward + backward) for the same plans (`simulated`).
// Run with a release build:
//   meson setup build-release --buildtype=release && build-release/bench/bench_cpu

#include <benchmark/benchmark.h>

#include <chrono>
#include <functional>
#include <random>
#include <vector>

#include <remat/cpu/executor.hpp>
#include <remat/cpu/kernels.hpp>
#include <remat/runtime/layout.hpp>
#include <remat/solvers/baselines.hpp>
#include <remat/zoo/models.hpp>

#include "tests/support/reduced_zoo.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

std::vector<float> random_floats(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// Times forward and backward separately in every iteration.
void forward_backward(benchmark::State& state, double forward_flops, const std::function<void()>& forward,
                      const std::function<void()>& backward) {
  double fwd = 0, bwd = 0;
  for (auto _ : state) {
    const auto t0 = clock_type::now();
    forward();
    const auto t1 = clock_type::now();
    backward();
    const auto t2 = clock_type::now();
    fwd += std::chrono::duration<double>(t1 - t0).count();
    bwd += std::chrono::duration<double>(t2 - t1).count();
  }
  state.counters["bwd/fwd"] = bwd / fwd;
  state.counters["fwd GFLOP/s"] = forward_flops * static_cast<double>(state.iterations()) / fwd * 1e-9;
}

void BM_conv2d(benchmark::State& state) {
  remat::ops::conv2d_geometry g;
  g.n = 8, g.c = state.range(0), g.h = g.w = 32, g.k = state.range(1);
  g.kh = g.kw = state.range(2), g.ph = g.pw = state.range(2) / 2, g.groups = state.range(3);
  const auto x = random_floats(static_cast<std::size_t>(g.n * g.c * g.h * g.w), 1);
  const auto w = random_floats(static_cast<std::size_t>(g.k * g.c / g.groups * g.kh * g.kw), 2);
  std::vector<float> y(static_cast<std::size_t>(g.n * g.k * g.oh() * g.ow())), dx(x.size()), dw(w.size());
  std::vector<float> scratch(remat::cpu::conv2d_scratch(g));
  const auto dy = random_floats(y.size(), 3);
  const double flops = 2.0 * static_cast<double>(y.size()) * static_cast<double>(g.c / g.groups * g.kh * g.kw);
  forward_backward(
      state, flops, [&] { remat::cpu::conv2d_forward<float>(g, x.data(), w.data(), nullptr, y.data(), scratch); },
      [&] {
        remat::cpu::conv2d_backward<float>(g, x.data(), w.data(), dy.data(), dx.data(), dw.data(), nullptr, scratch);
      });
}
// in channels, out channels, kernel, groups: a 3×3, a 1×1 and a depthwise 3×3.
BENCHMARK(BM_conv2d)->Args({64, 64, 3, 1})->Args({128, 128, 1, 1})->Args({64, 64, 3, 64})->Unit(benchmark::kMillisecond);

void BM_batch_norm(benchmark::State& state) {
  const remat::ops::batch_norm_geometry g{8, 64, 32 * 32};
  const std::size_t n = static_cast<std::size_t>(g.n * g.c * g.spatial);
  const auto x = random_floats(n, 4), dy = random_floats(n, 5);
  const std::vector<float> gamma(64, 1.0f), beta(64, 0.0f);
  std::vector<float> y(n), dx(n), dgamma(64), dbeta(64);
  forward_backward(
      state, 8.0 * static_cast<double>(n),
      [&] { remat::cpu::batch_norm_forward<float>(g, x.data(), gamma.data(), beta.data(), 1e-5, y.data(), nullptr, nullptr); },
      [&] {
        remat::cpu::batch_norm_backward<float>(g, x.data(), gamma.data(), 1e-5, dy.data(), dx.data(), dgamma.data(),
                                               dbeta.data());
      });
}
BENCHMARK(BM_batch_norm)->Unit(benchmark::kMillisecond);

void BM_max_pool(benchmark::State& state) {
  remat::ops::pool_geometry g;
  g.n = 8, g.c = 64, g.h = g.w = 32, g.kh = g.kw = 3, g.sh = g.sw = 2, g.ph = g.pw = 1, g.oh = g.ow = 16;
  const auto x = random_floats(static_cast<std::size_t>(g.n * g.c * g.h * g.w), 6);
  const auto dy = random_floats(static_cast<std::size_t>(g.n * g.c * g.oh * g.ow), 7);
  std::vector<float> y(dy.size()), dx(x.size());
  forward_backward(
      state, 9.0 * static_cast<double>(y.size()), [&] { remat::cpu::max_pool_forward<float>(g, x.data(), y.data()); },
      [&] { remat::cpu::max_pool_backward<float>(g, x.data(), dy.data(), dx.data()); });
}
BENCHMARK(BM_max_pool)->Unit(benchmark::kMillisecond);

// Lays out a full-size zoo model's schedule (f32, default sizes).
void plan_arena(benchmark::State& state, const char* model, bool sqrt) {
  const remat::graph g = remat::zoo::build(model);
  const remat::schedule steps = sqrt ? remat::plan_sqrt(g).steps : remat::plan_none(g).steps;
  remat::arena_layout layout;
  for (auto _ : state) layout = remat::plan_arena(g, steps);
  state.counters["arena/live"] = layout.ratio();
  state.counters["buffers"] = static_cast<double>(layout.buffers.size());
}
BENCHMARK_CAPTURE(plan_arena, resnet50_none, "resnet50", false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(plan_arena, resnet50_sqrt, "resnet50", true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(plan_arena, densenet121_none, "densenet121", false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(plan_arena, densenet121_sqrt, "densenet121", true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(plan_arena, inception_v3_none, "inception-v3", false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(plan_arena, inception_v3_sqrt, "inception-v3", true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(plan_arena, darts_none, "darts-cifar10", false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(plan_arena, darts_sqrt, "darts-cifar10", true)->Unit(benchmark::kMillisecond);

// One training step of a reduced network under a plan, relative to plan_none.
void train_step(benchmark::State& state, const char* family, const char* method) {
  const remat::graph g = remat::test::reduced_model(family, {8, 10});
  const remat::plan p = std::string(method) == "sqrt" ? remat::plan_sqrt(g) : remat::plan_every_k(g, 3);
  const remat::plan none = remat::plan_none(g);
  remat::cpu::model<float> m(g, 1);
  m.randomize_inputs(1);
  remat::cpu::executor<float> reference(m, none.steps), planned(m, p.steps);
  remat::cpu::step_options o;
  o.learning_rate = 0;
  double none_seconds = 0, plan_seconds = 0;
  for (auto _ : state) {
    none_seconds += reference.run(o).seconds;
    plan_seconds += planned.run(o).seconds;
  }
  const remat::simulation& s = planned.simulated();
  state.counters["measured"] = plan_seconds / none_seconds;
  state.counters["simulated"] = s.total_time() / reference.simulated().total_time();
  state.counters["recomputes"] = static_cast<double>(s.recompute_steps);
}
BENCHMARK_CAPTURE(train_step, resnet_sqrt, "resnet", "sqrt")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(train_step, densenet_sqrt, "densenet", "sqrt")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(train_step, inception_every3, "inception", "every-3")->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
