// Trains a zoo network on synthetic data for a few steps on the CPU, once
// without checkpointing and once with a plan, and prints per step the loss,
// the peak bytes the runtime measured and the peak the simulator predicted.
//
//   build/examples/cpu_train --model densenet121 --batch 16 --image 64 --steps 3 --plan sqrt
//
// Exits 0 when both runs end with bit-for-bit the same losses and parameters.

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <utility>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <remat/cpu/executor.hpp>
#include <remat/solve.hpp>
#include <remat/solvers/baselines.hpp>
#include <remat/units.hpp>
#include <remat/zoo.hpp>

namespace {

remat::plan make_plan(const remat::graph& g, remat::method method, std::size_t k) {
  remat::solve_options o;
  o.method = method;
  o.every_k = k;
  remat::solution s = remat::solve(g, o);
  if (s.best.steps.empty()) throw remat::error(std::string(remat::to_string(method)) + " found no plan: " + s.message);
  return std::move(s.best);
}

struct run_result {
  std::vector<double> losses;
  std::vector<std::vector<float>> parameters;
};

run_result train(const remat::graph& g, const remat::plan& p, int steps, double learning_rate, std::uint64_t seed) {
  remat::cpu::model<float> m(g, seed);
  remat::cpu::executor<float> e(m, p.steps);
  const remat::simulation& sim = e.simulated();
  fmt::print("plan {:<13} {} steps, {} recomputes; simulated peak {} bytes ({}), overhead {:.1f}%; arena {} bytes, "
             "{:.4f} × the live peak\n",
             p.method, p.steps.size(), sim.recompute_steps, sim.peak_bytes, remat::format_bytes(sim.peak_bytes),
             100 * sim.overhead(), e.layout().arena_bytes, e.layout().ratio());
  run_result out;
  for (int step = 0; step < steps; ++step) {
    m.randomize_inputs(seed);  // the same synthetic batch every step: the loss must fall
    remat::cpu::step_options o;
    o.step = static_cast<std::uint64_t>(step);
    o.learning_rate = learning_rate;
    const remat::cpu::step_report r = e.run(o);
    out.losses.push_back(r.loss);
    fmt::print("  step {}  loss {:.6f}  peak measured {} bytes  simulated {} bytes  {}  {:.2f} s\n", step, r.loss,
               r.peak_bytes, sim.peak_bytes, r.peak_bytes == sim.peak_bytes ? "equal" : "DIFFERENT", r.seconds);
  }
  for (remat::node_id v = 0; v < g.size(); ++v) out.parameters.emplace_back(m.parameters(v).begin(), m.parameters(v).end());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train a zoo network on synthetic data on the CPU, with and without a checkpointing plan"};
  std::string model = "densenet121", method = "sqrt";
  std::int64_t batch = 16, image = 64;
  int steps = 3;
  std::size_t k = 4;
  double learning_rate = 0.01;
  std::uint64_t seed = 1;
  app.add_option("--model", model, "zoo model (remat zoo list)")->capture_default_str();
  app.add_option("--batch", batch, "batch size")->capture_default_str();
  app.add_option("--image", image, "image height and width")->capture_default_str();
  app.add_option("--steps", steps, "training steps")->capture_default_str();
  app.add_option("--plan", method, "any method of remat plan --method (exact, dp, chain, approx, sqrt, every-k, none)")
      ->capture_default_str();
  app.add_option("--k", k, "k for every-k")->capture_default_str();
  app.add_option("--lr", learning_rate, "SGD learning rate")->capture_default_str();
  app.add_option("--seed", seed, "parameter and data seed")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  const std::optional<remat::method> plan_method = remat::parse_method(method);
  if (!plan_method) {
    std::fprintf(stderr, "cpu_train: unknown plan method '%s'\n", method.c_str());
    return 2;
  }
  try {
    remat::zoo::build_options o;
    o.batch = batch;
    o.height = o.width = image;
    const remat::graph g = remat::zoo::build(model, o);
    fmt::print("{}: {} nodes, batch {}, {}×{} images, {} parameter bytes\n", model, g.size(), batch, image, image,
               g.param_bytes());
    const run_result plain = train(g, remat::plan_none(g), steps, learning_rate, seed);
    const run_result planned = train(g, make_plan(g, *plan_method, k), steps, learning_rate, seed);
    bool same = plain.losses == planned.losses;
    for (std::size_t v = 0; v < plain.parameters.size() && same; ++v)
      same = plain.parameters[v].size() == planned.parameters[v].size() &&
             (plain.parameters[v].empty() ||
              std::memcmp(plain.parameters[v].data(), planned.parameters[v].data(),
                          plain.parameters[v].size() * sizeof(float)) == 0);
    fmt::print("losses and parameters after {} steps: {}\n", steps,
               same ? "bit-for-bit identical with and without the plan" : "DIFFERENT");
    return same ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cpu_train: %s\n", e.what());
    return 2;
  }
}
