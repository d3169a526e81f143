// A program outside remat that trains with the CPU runtime as installed. Exits
// 0 when one step of ResNet-18 under remat's exact plan gives a finite loss and
// measures the peak the simulator predicted.

#include <cmath>
#include <cstdio>

#include <remat/cpu/executor.hpp>
#include <remat/remat.hpp>
#include <remat/zoo.hpp>

int main() {
  remat::zoo::build_options options;
  options.batch = 2;  // training-mode batch norm needs two values per channel
  options.height = options.width = 32;
  const remat::graph g = remat::zoo::build("resnet18", options);
  const remat::solution plan = remat::solve(g);
  remat::cpu::model<float> model(g, 1);
  model.randomize_inputs(1);
  remat::cpu::executor<float> executor(model, plan.best.steps);
  const remat::cpu::step_report step = executor.run({});
  std::printf("consumer: %s one step, loss %.4f, peak measured %llu bytes, simulated %llu bytes\n", g.name().c_str(),
              step.loss, static_cast<unsigned long long>(step.peak_bytes),
              static_cast<unsigned long long>(executor.simulated().peak_bytes));
  return std::isfinite(step.loss) && step.peak_bytes == executor.simulated().peak_bytes ? 0 : 1;
}
