// The engine binding on the GPU (cuda/engine_executor.hpp) with the example
// engine's device kernels (examples/engine/mini_cuda.cu): under every plan
// method the same gradients as the CPU twin (float tolerance) and, bit for
// bit, as the no-checkpoint run on the device; the ledger equal to the
// simulator; with pool storage the bytes allocated at once equal the
// simulated peak, and the arena allocates nothing on the step path. Without
// a device, constructing an executor is a clear error.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <remat/cpu/engine_executor.hpp>
#include <remat/cuda/device.hpp>
#include <remat/cuda/engine_executor.hpp>
#include <remat/solvers/baselines.hpp>

#include "../../examples/engine/mini_cuda.hpp"
#include "../../examples/engine/mini_engine.hpp"
#include "../support/plan_methods.hpp"

using namespace remat;

namespace {

struct fixture {
  mini::network net = mini::residual_mlp(96, 12, 40, 4, 7);
  mini::batch data = mini::make_batch(96, 12, 7, 5);
  graph g;
  std::vector<const void*> host_inputs;

  fixture() {
    net.initialise(13);
    g = mini::to_remat(net, "mini-mlp");
    std::vector<const void*> by_layer(net.size(), nullptr);
    by_layer[0] = data.x.data();
    by_layer[1] = data.labels.data();
    host_inputs = mini::input_values(g, by_layer);
  }
};

std::vector<const void*> device_inputs(const fixture& f, const mini::device_batch& b) {
  std::vector<const void*> by_layer(f.net.size(), nullptr);
  by_layer[0] = b.x();
  by_layer[1] = b.labels();
  return mini::input_values(f.g, by_layer);
}

}  // namespace

TEST_CASE("engine binding on CUDA: without a device, an executor is a clear error") {
  if (cuda::device_count() > 0) return;  // the gpu suite covers construction with one
  fixture f;
  CHECK_THROWS_AS(cuda::engine_executor(f.g, plan_none(f.g).steps), cuda::error);
}

TEST_SUITE("gpu") {
  TEST_CASE("engine binding on CUDA: every plan method, the CPU twin's gradients and the simulator's bytes") {
    fixture f;
    cpu::engine_executor host(f.g, plan_none(f.g).steps);
    mini::host_engine host_engine(f.net);
    (void)host.run(host_engine, f.host_inputs);

    const mini::device_batch batch(f.data);
    const std::vector<const void*> inputs = device_inputs(f, batch);
    cuda::engine_executor regular(f.g, plan_none(f.g).steps);
    mini::device_engine regular_engine(f.net);
    (void)regular.run(regular_engine, inputs);
    CHECK(regular_engine.loss() == doctest::Approx(host_engine.loss()).epsilon(1e-5));
    std::vector<std::vector<float>> want(f.g.size());
    for (node_id v = 0; v < f.g.size(); ++v) {
      if (f.g.params(v) == 0) continue;
      want[v] = mini::device_engine::download(regular.parameter_gradient(v), f.g.params(v) / sizeof(float));
      const auto* cpu = static_cast<const float*>(host.parameter_gradient(v));
      for (std::size_t k = 0; k < want[v].size(); ++k)
        CHECK(want[v][k] == doctest::Approx(cpu[k]).epsilon(1e-3).scale(1e-4));
    }

    const bool under_sanitizer = std::getenv("REMAT_UNDER_SANITIZER") != nullptr;
    std::size_t with_recomputation = 0;
    for (const test::plan_method& m : test::plan_methods()) {
      const plan p = m.make(f.g);
      if (p.steps.empty()) continue;
      for (const cuda::storage where : {cuda::storage::arena, cuda::storage::pool}) {
        CAPTURE(m.name);
        CAPTURE(static_cast<int>(where));
        cuda::engine_executor run(f.g, p.steps, {.storage = where, .record_timeline = true});
        mini::device_engine engine(f.net);
        const cuda::engine_report report = run.run(engine, inputs);
        const simulation& sim = run.simulated();
        CHECK(report.peak_bytes == sim.peak_bytes);
        REQUIRE(report.timeline.size() == sim.timeline.size());
        for (std::size_t i = 0; i < sim.timeline.size(); ++i) CHECK(report.timeline[i].total() == sim.timeline[i].total());
        if (where == cuda::storage::pool) {
          CHECK(f.g.param_bytes() + f.g.input_bytes() + report.allocated_high == sim.peak_bytes);
          CHECK(report.pool_used_high >= report.allocated_high);
        } else if (!under_sanitizer) {
          CHECK(report.free_before == report.free_after);  // the sanitizer's own allocations move the count
        }
        CHECK(report.seconds > 0);
        CHECK(engine.loss() == regular_engine.loss());
        with_recomputation += std::any_of(p.steps.begin(), p.steps.end(),
                                          [](const step& s) { return s.kind == step_kind::recompute; });
        for (node_id v = 0; v < f.g.size(); ++v) {
          if (want[v].empty()) continue;
          CAPTURE(f.g.node_name(v));
          const std::vector<float> got = mini::device_engine::download(run.parameter_gradient(v), want[v].size());
          CHECK(std::memcmp(got.data(), want[v].data(), got.size() * sizeof(float)) == 0);
        }
      }
    }
    CHECK(with_recomputation >= 8);
  }

  TEST_CASE("engine binding on CUDA: missing inputs are refused before anything runs") {
    fixture f;
    const mini::device_batch batch(f.data);
    std::vector<const void*> inputs = device_inputs(f, batch);
    inputs[*f.g.find("labels")] = nullptr;
    cuda::engine_executor run(f.g, plan_sqrt(f.g).steps, {.storage = cuda::storage::pool});
    mini::device_engine engine(f.net);
    std::string message;
    try {
      (void)run.run(engine, inputs);
    } catch (const error& e) {
      message = e.what();
    }
    CHECK(message.find("graph input 'labels'") != std::string::npos);
    CHECK(run.parameter_gradient(*f.g.find("stem")) == nullptr);
  }
}
