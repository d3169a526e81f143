// The engine binding on the CPU (runtime/engine.hpp, cpu/engine_executor.hpp),
// run with the example engine (examples/engine/mini_engine.hpp): under every
// plan method the engine's own kernels give its plain training step's
// gradients and, bit for bit, the no-checkpoint run's; the bytes remat's
// buffers really take (one heap allocation each) equal the simulator's peak;
// the engine is handed only what its backward may read; bad input is refused
// before anything runs and an engine's exception frees what the run held.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <remat/cpu/engine_executor.hpp>
#include <remat/solvers/baselines.hpp>

#include "../../examples/engine/mini_engine.hpp"
#include "../support/plan_methods.hpp"

using namespace remat;

namespace {

struct fixture {
  mini::network net = mini::residual_mlp(64, 12, 16, 4, 5);
  mini::batch data = mini::make_batch(64, 12, 5, 3);
  graph g;
  std::vector<const void*> by_layer;
  std::vector<const void*> inputs;

  fixture() {
    net.initialise(11);
    g = mini::to_remat(net, "mini-mlp");
    by_layer.assign(net.size(), nullptr);
    by_layer[0] = data.x.data();
    by_layer[1] = data.labels.data();
    inputs = mini::input_values(g, by_layer);
  }

  // Parameter gradients by remat id, copied out of the executor.
  std::vector<std::vector<float>> gradients(const cpu::engine_executor& run) const {
    std::vector<std::vector<float>> out(g.size());
    for (node_id v = 0; v < g.size(); ++v)
      if (const auto* p = static_cast<const float*>(run.parameter_gradient(v)))
        out[v].assign(p, p + g.params(v) / sizeof(float));
    return out;
  }
};

std::string message_of(const auto& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

// Wraps an engine and checks every call against the graph's contract.
struct contract_checker {
  mini::host_engine& inner;
  const graph& g;
  std::uint64_t alignment;
  std::size_t forwards = 0, recomputes = 0, backwards = 0, seeds = 0, workspaces = 0;

  bool aligned(const void* p) const { return reinterpret_cast<std::uintptr_t>(p) % alignment == 0; }

  void forward(const forward_call& f) {
    ++forwards;
    recomputes += f.recompute;
    CHECK(f.original == g.original_index(f.node));
    CHECK(f.inputs.size() == g.inputs(f.node).size());
    CHECK(aligned(f.output));
    CHECK(f.stream == nullptr);
    CHECK(f.workspace_bytes == g.workspace(f.node));
    CHECK((f.workspace != nullptr) == (f.workspace_bytes > 0));
    workspaces += f.workspace != nullptr;
    for (const void* p : f.inputs) CHECK(p != nullptr);
    inner.forward(f);
  }
  void backward(const backward_call& c) {
    ++backwards;
    seeds += c.seed;
    CHECK(c.seed == g.successors(c.node).empty());
    const backward_reads r = g.reads(c.node);
    for (const void* p : c.inputs) CHECK((p != nullptr) == reads_inputs(r));
    CHECK((c.output != nullptr) == reads_output(r));
    CHECK((c.parameter_gradient != nullptr) == (g.params(c.node) > 0));
    CHECK(c.input_gradients.size() == c.how.size());
    for (std::size_t k = 0; k < c.how.size(); ++k) {
      CHECK((c.how[k] == contribution::none) == g.is_input(g.inputs(c.node)[k]));
      CHECK((c.input_gradients[k] != nullptr) == (c.how[k] != contribution::none));
    }
    CHECK(aligned(c.output_gradient));
    inner.backward(c);
  }
};

std::size_t count_steps(const schedule& steps, step_kind kind) {
  return static_cast<std::size_t>(std::count_if(steps.begin(), steps.end(), [&](const step& s) { return s.kind == kind; }));
}

}  // namespace

TEST_CASE("engine binding: every plan method gives mini's gradients and the simulator's bytes") {
  fixture f;
  const mini::step_result plain = mini::reference_step(f.net, f.by_layer);

  cpu::engine_executor regular(f.g, plan_none(f.g).steps, {.storage = cpu::engine_storage::heap});
  mini::host_engine engine(f.net);
  (void)regular.run(engine, f.inputs);
  const auto want = f.gradients(regular);
  CHECK(engine.loss() == doctest::Approx(plain.loss).epsilon(1e-6));
  for (node_id v = 0; v < f.g.size(); ++v) {
    const std::vector<float>& mine = plain.parameter_gradients[f.g.original_index(v)];
    REQUIRE(want[v].size() == mine.size());
    for (std::size_t k = 0; k < mine.size(); ++k)
      CHECK(want[v][k] == doctest::Approx(mine[k]).epsilon(1e-5).scale(1e-6));
  }

  std::size_t with_recomputation = 0;
  for (const test::plan_method& m : test::plan_methods()) {
    const plan p = m.make(f.g);
    if (p.steps.empty()) continue;
    for (const cpu::engine_storage storage : {cpu::engine_storage::heap, cpu::engine_storage::arena}) {
      CAPTURE(m.name);
      CAPTURE(static_cast<int>(storage));
      cpu::engine_executor run(f.g, p.steps, {.storage = storage, .record_timeline = true});
      mini::host_engine inner(f.net);
      contract_checker checked{inner, f.g, 64};
      const cpu::engine_report report = run.run(checked, f.inputs);

      const simulation& sim = run.simulated();
      CHECK(report.peak_bytes == sim.peak_bytes);
      CHECK(report.peak_step == sim.peak_step);
      REQUIRE(report.timeline.size() == sim.timeline.size());
      for (std::size_t i = 0; i < sim.timeline.size(); ++i) CHECK(report.timeline[i].total() == sim.timeline[i].total());
      if (storage == cpu::engine_storage::heap)
        CHECK(f.g.param_bytes() + f.g.input_bytes() + report.allocated_high == sim.peak_bytes);
      else
        CHECK(report.allocated_high == run.layout().arena_bytes);

      CHECK(checked.recomputes == count_steps(p.steps, step_kind::recompute));
      CHECK(checked.forwards == count_steps(p.steps, step_kind::compute) + checked.recomputes);
      CHECK(checked.backwards == count_steps(p.steps, step_kind::backward));
      CHECK(checked.seeds == 1);
      CHECK(checked.workspaces == static_cast<std::size_t>(std::count_if(p.steps.begin(), p.steps.end(), [&](const step& s) {
              return s.kind != step_kind::free && s.kind != step_kind::backward && f.g.workspace(s.node) > 0;
            })));
      with_recomputation += checked.recomputes > 0;
      CHECK(inner.loss() == engine.loss());

      const auto got = f.gradients(run);
      for (node_id v = 0; v < f.g.size(); ++v) {
        CAPTURE(f.g.node_name(v));
        REQUIRE(got[v].size() == want[v].size());
        CHECK(std::memcmp(got[v].data(), want[v].data(), want[v].size() * sizeof(float)) == 0);
      }
    }
  }
  CHECK(with_recomputation >= 8);  // the comparison covers plans that recompute, not only keep-all ones
}

TEST_CASE("engine binding: training under a least-peak plan takes the same steps as training without one") {
  fixture a, b;
  solve_options o;
  o.method = method::exact;
  const solution least = solve(a.g, o);
  REQUIRE(least.figures.peak_bytes < simulate(a.g, plan_none(a.g).steps).peak_bytes);
  cpu::engine_executor planned(a.g, least.best.steps, {.storage = cpu::engine_storage::heap});
  cpu::engine_executor regular(b.g, plan_none(b.g).steps);
  mini::host_engine ea(a.net), eb(b.net);
  auto gradient_of = [](const graph& g, const cpu::engine_executor& run) {
    return [&g, &run](std::size_t layer) {
      for (node_id v = 0; v < g.size(); ++v)
        if (g.original_index(v) == layer) return static_cast<const float*>(run.parameter_gradient(v));
      return static_cast<const float*>(nullptr);
    };
  };
  std::vector<float> losses;
  for (int step = 0; step < 5; ++step) {
    (void)planned.run(ea, a.inputs);
    (void)regular.run(eb, b.inputs);
    CHECK(ea.loss() == eb.loss());
    losses.push_back(ea.loss());
    mini::sgd(a.net, 0.1f, gradient_of(a.g, planned));
    mini::sgd(b.net, 0.1f, gradient_of(b.g, regular));
  }
  CHECK(losses.back() < losses.front());  // it learns
  for (std::size_t i = 0; i < a.net.size(); ++i) CHECK(a.net.parameters(i) == b.net.parameters(i));
}

TEST_CASE("engine binding: bad input is refused before any step runs") {
  fixture f;
  mini::host_engine engine(f.net);
  cpu::engine_executor run(f.g, plan_none(f.g).steps);

  std::vector<const void*> short_list(f.inputs.begin(), f.inputs.end() - 1);
  CHECK(message_of([&] { run.run(engine, short_list); }).find("input addresses for a graph of") != std::string::npos);

  std::vector<const void*> no_labels = f.inputs;
  no_labels[*f.g.find("labels")] = nullptr;
  const std::string missing = message_of([&] { run.run(engine, no_labels); });
  CHECK(missing.find("graph input 'labels'") != std::string::npos);
  CHECK(engine.loss() == 0);  // nothing ran

  schedule broken = plan_none(f.g).steps;  // a backward before anything is computed
  std::rotate(broken.begin(), std::find_if(broken.begin(), broken.end(), [](const step& s) { return s.kind == step_kind::backward; }), broken.end());
  CHECK_THROWS_AS(cpu::engine_executor(f.g, broken), invalid_schedule);
  CHECK(message_of([&] { cpu::engine_executor(f.g, plan_none(f.g).steps, {.alignment = 48}); })
            .find("power of two") != std::string::npos);
}

TEST_CASE("engine binding: an engine's exception leaves the executor whole") {
  fixture f;
  struct failing {
    mini::host_engine inner;
    std::size_t fail_at;
    std::size_t calls = 0;
    void forward(const forward_call& c) {
      if (calls++ == fail_at) throw std::runtime_error("kernel failed");
      inner.forward(c);
    }
    void backward(const backward_call& c) {
      if (calls++ == fail_at) throw std::runtime_error("kernel failed");
      inner.backward(c);
    }
  };
  const plan p = plan_sqrt(f.g);
  cpu::engine_executor run(f.g, p.steps, {.storage = cpu::engine_storage::heap});
  failing bad{mini::host_engine(f.net), 20};
  CHECK(message_of([&] { run.run(bad, f.inputs); }) == "kernel failed");
  CHECK(run.parameter_gradient(2) == nullptr);

  mini::host_engine good(f.net);
  const cpu::engine_report report = run.run(good, f.inputs);
  CHECK(f.g.param_bytes() + f.g.input_bytes() + report.allocated_high == run.simulated().peak_bytes);
  CHECK(run.parameter_gradient(*f.g.find("stem")) != nullptr);
}
