// Trains mini's residual MLP (mini_engine.hpp) with mini's own kernels under a
// remat plan: remat plans the least peak, walks the schedule and owns every
// activation and gradient; mini computes, on the CPU or (--device cuda, in a
// CUDA build) on the GPU. Prints, per step, the loss and the bytes remat's
// buffers really took (one allocation per buffer: the heap on the CPU, a
// stream-ordered pool on the GPU) against the simulator's peak, and exits 0
// when they agree and the first step's gradients match mini's own plain
// training step on the CPU.
//
//   build/examples/mini_train --rows 1024 --width 128 --blocks 8 --steps 5

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <remat/cpu/engine_executor.hpp>
#include <remat/solve.hpp>
#include <remat/solvers/baselines.hpp>
#include <remat/units.hpp>

#include "mini_engine.hpp"
#if MINI_WITH_CUDA
#include <remat/cuda/engine_executor.hpp>

#include "mini_cuda.hpp"
#endif

namespace {

struct settings {
  int rows = 1024, features = 64, width = 128, blocks = 8, classes = 10, steps = 5;
  float rate = 0.02f;
  std::string method = "exact", device = "cpu";
};

// What one training step measured.
struct step_figures {
  std::uint64_t ledger = 0;     // the executor's ledger peak
  std::uint64_t allocated = 0;  // most bytes of remat's buffers allocated at once
  float loss = 0;
  double seconds = 0;
};

step_figures figures_of(const remat::engine_report& r, float loss) { return {r.peak_bytes, r.allocated_high, loss, r.seconds}; }

// Training on some device: run(batch) runs one step; gradient(v, elements)
// copies node v's parameter gradient to the host; sgd(rate) updates the
// engine's parameters.
struct device_steps {
  std::function<step_figures(const mini::batch&)> run;
  std::function<std::vector<float>(remat::node_id, std::size_t)> gradient;
  std::function<void(float)> sgd;
};

// The layer-indexed inputs mini's network reads: the batch, then its labels.
std::vector<const void*> by_layer(const mini::network& net, const void* x, const void* labels) {
  std::vector<const void*> data(net.size(), nullptr);
  data[0] = x;
  data[1] = labels;
  return data;
}

// remat's id of mini's layer.
remat::node_id node_of(const remat::graph& g, std::size_t layer) {
  for (remat::node_id v = 0; v < g.size(); ++v)
    if (g.original_index(v) == layer) return v;
  throw remat::error("mini_train: layer " + std::to_string(layer) + " is not in the graph");
}

device_steps on_cpu(mini::network& net, const remat::graph& g, const remat::schedule& steps) {
  auto run = std::make_shared<remat::cpu::engine_executor>(
      g, steps, remat::cpu::engine_executor_options{.storage = remat::cpu::engine_storage::heap});
  auto engine = std::make_shared<mini::host_engine>(net);
  device_steps d;
  d.run = [&g, &net, run, engine](const mini::batch& b) {
    const remat::cpu::engine_report r = run->run(*engine, mini::input_values(g, by_layer(net, b.x.data(), b.labels.data())));
    return figures_of(r, engine->loss());
  };
  d.gradient = [run](remat::node_id v, std::size_t elements) {
    const auto* p = static_cast<const float*>(run->parameter_gradient(v));
    return std::vector<float>(p, p + elements);
  };
  d.sgd = [&g, &net, run](float rate) {
    mini::sgd(net, rate, [&](std::size_t layer) { return static_cast<const float*>(run->parameter_gradient(node_of(g, layer))); });
  };
  return d;
}

#if MINI_WITH_CUDA
device_steps on_gpu(mini::network& net, const remat::graph& g, const remat::schedule& steps) {
  auto run = std::make_shared<remat::cuda::engine_executor>(
      g, steps, remat::cuda::engine_executor_options{.storage = remat::cuda::storage::pool});
  auto engine = std::make_shared<mini::device_engine>(net);
  device_steps d;
  d.run = [&g, &net, run, engine](const mini::batch& b) {
    const mini::device_batch on_device(b);
    const remat::cuda::engine_report r = run->run(*engine, mini::input_values(g, by_layer(net, on_device.x(), on_device.labels())));
    return figures_of(r, engine->loss());
  };
  d.gradient = [run](remat::node_id v, std::size_t elements) {
    return mini::device_engine::download(run->parameter_gradient(v), elements);
  };
  d.sgd = [&g, run, engine](float rate) {
    engine->sgd(rate, [&](std::size_t layer) -> const void* { return run->parameter_gradient(node_of(g, layer)); }, run->stream());
  };
  return d;
}
#endif

int train(const settings& o) {
  mini::network net = mini::residual_mlp(o.rows, o.features, o.width, o.blocks, o.classes);
  net.initialise(7);
  const remat::graph g = mini::to_remat(net, "mini-mlp");

  remat::solve_options options;
  const std::optional<remat::method> m = remat::parse_method(o.method);
  if (!m) throw remat::error("unknown method '" + o.method + "'");
  options.method = *m;
  const remat::solution planned = remat::solve(g, options);
  if (planned.best.steps.empty()) throw remat::error("no plan: " + planned.message);
  const remat::simulation regular = remat::simulate(g, remat::plan_none(g).steps);
  const std::uint64_t simulated = planned.figures.peak_bytes;
  fmt::print("{}: {} nodes; regular training peaks at {}, remat's {} plan at {} ({:.1f}% less, {} recomputes)\n",
             g.name(), g.size(), remat::format_bytes(regular.peak_bytes), o.method, remat::format_bytes(simulated),
             100.0 * (1.0 - static_cast<double>(simulated) / static_cast<double>(regular.peak_bytes)),
             std::count_if(planned.best.steps.begin(), planned.best.steps.end(),
                           [](const remat::step& s) { return s.kind == remat::step_kind::recompute; }));

  device_steps device;
  if (o.device == "cpu") {
    device = on_cpu(net, g, planned.best.steps);
  } else {
#if MINI_WITH_CUDA
    device = on_gpu(net, g, planned.best.steps);
#else
    throw remat::error("--device cuda: this build has no CUDA backend");
#endif
  }

  bool agree = true;
  for (int step = 0; step < o.steps; ++step) {
    const mini::batch b = mini::make_batch(o.rows, o.features, o.classes, 1000 + static_cast<std::uint64_t>(step));
    const step_figures f = device.run(b);
    const std::uint64_t measured = g.param_bytes() + g.input_bytes() + f.allocated;
    agree = agree && measured == simulated && f.ledger == simulated;
    fmt::print("step {}: loss {:.4f}, peak measured {} (simulated {}), {:.4f} s\n", step, f.loss, measured, simulated,
               f.seconds);
    if (step == 0) {
      const mini::step_result plain = mini::reference_step(net, by_layer(net, b.x.data(), b.labels.data()));
      double worst = 0;
      for (remat::node_id v = 0; v < g.size(); ++v) {
        const std::vector<float>& want = plain.parameter_gradients[g.original_index(v)];
        if (want.empty()) continue;
        const std::vector<float> got = device.gradient(v, want.size());
        for (std::size_t k = 0; k < want.size(); ++k)
          worst = std::max(worst, std::abs(static_cast<double>(got[k]) - want[k]) / (1e-3 + std::abs(want[k])));
      }
      fmt::print("step 0 gradients against mini's plain step on the CPU: largest relative difference {:.2e}\n", worst);
      agree = agree && worst < (o.device == "cpu" ? 1e-4 : 1e-2);
    }
    device.sgd(o.rate);
  }
  return agree ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train mini's residual MLP with its own kernels under a remat plan"};
  settings o;
  app.add_option("--rows", o.rows, "batch rows")->check(CLI::Range(1, 1 << 16));
  app.add_option("--features", o.features, "input features")->check(CLI::Range(1, 1 << 16));
  app.add_option("--width", o.width, "hidden width")->check(CLI::Range(1, 1 << 14));
  app.add_option("--blocks", o.blocks, "residual blocks")->check(CLI::Range(0, 1000));
  app.add_option("--classes", o.classes, "classes")->check(CLI::Range(2, 1 << 14));
  app.add_option("--steps", o.steps, "training steps")->check(CLI::Range(1, 100000));
  app.add_option("--rate", o.rate, "SGD learning rate")->check(CLI::PositiveNumber);
  app.add_option("--method", o.method, "remat's solve method (least peak)");
  app.add_option("--device", o.device, "where mini's kernels run")->check(CLI::IsMember({"cpu", "cuda"}));
  CLI11_PARSE(app, argc, argv);
  try {
    return train(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mini_train: %s\n", e.what());
    return 2;
  }
}
