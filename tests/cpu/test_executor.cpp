// The CPU runtime end to end: every plan method on a reduced network of every
// zoo family gives the no-checkpoint training step bit for bit and holds, step
// by step, exactly the bytes the simulator predicts; batch-norm statistics and
// dropout masks survive recomputation; bad input is refused with the node named.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <remat/cpu/executor.hpp>
#include <remat/runtime/layout.hpp>
#include <remat/solvers/baselines.hpp>
#include <remat/zoo/models.hpp>

#include "../support/plan_methods.hpp"
#include "../support/reduced_zoo.hpp"

using namespace remat;

namespace {

constexpr std::uint64_t model_seed = 42;

template <class T>
bool same_bits(std::span<const T> a, std::span<const T> b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// Everything a training step leaves behind, copied out of a model and executor.
struct outcome {
  double loss = 0;
  std::vector<std::vector<float>> gradients, parameters, running_mean, running_var;
};

outcome capture(const cpu::model<float>& m, const cpu::executor<float>& e, double loss) {
  outcome o;
  o.loss = loss;
  const std::size_t n = m.network().size();
  for (node_id v = 0; v < n; ++v) {
    const auto g = e.parameter_gradient(v);
    o.gradients.emplace_back(g.begin(), g.end());
    o.parameters.emplace_back(m.parameters(v).begin(), m.parameters(v).end());
    o.running_mean.emplace_back(m.running_mean(v).begin(), m.running_mean(v).end());
    o.running_var.emplace_back(m.running_var(v).begin(), m.running_var(v).end());
  }
  return o;
}

// The first node whose parameter gradient, updated parameters or running
// statistics differ in any bit, or "" when none does.
std::string first_difference(const graph& g, const outcome& a, const outcome& b) {
  for (node_id v = 0; v < g.size(); ++v) {
    if (!same_bits<float>(a.gradients[v], b.gradients[v])) return g.node_name(v) + " (parameter gradient)";
    if (!same_bits<float>(a.parameters[v], b.parameters[v])) return g.node_name(v) + " (parameters)";
    if (!same_bits<float>(a.running_mean[v], b.running_mean[v]) || !same_bits<float>(a.running_var[v], b.running_var[v]))
      return g.node_name(v) + " (running statistics)";
  }
  return {};
}

// Nodes whose consumers' backwards run in a different relative order under
// `steps` than under `reference`: where gradient sums may be reassociated.
std::vector<std::string> reordered_consumers(const graph& g, const schedule& reference, const schedule& steps) {
  auto positions = [&](const schedule& s) {
    std::vector<std::size_t> at(g.size(), 0);
    for (std::size_t i = 0; i < s.size(); ++i)
      if (s[i].kind == step_kind::backward) at[s[i].node] = i;
    return at;
  };
  const auto ref = positions(reference), mine = positions(steps);
  std::vector<std::string> out;
  for (node_id p = 0; p < g.size(); ++p) {
    const auto consumers = g.successors(p);
    if (g.is_input(p) || consumers.size() < 3) continue;  // two addends commute exactly
    for (std::size_t a = 0; a < consumers.size(); ++a)
      for (std::size_t b = a + 1; b < consumers.size(); ++b)
        if ((ref[consumers[a]] < ref[consumers[b]]) != (mine[consumers[a]] < mine[consumers[b]])) {
          out.push_back(g.node_name(p));
          a = b = consumers.size();
        }
  }
  return out;
}

struct step_run {
  outcome result;
  cpu::step_report report;
  simulation sim;
  arena_layout layout;
};

step_run train_once(const graph& g, const schedule& steps, double learning_rate = 0.1) {
  cpu::model<float> m(g, model_seed);
  m.randomize_inputs(7);
  cpu::executor<float> e(m, steps);
  cpu::step_options o;
  o.learning_rate = learning_rate;
  o.record_timeline = true;
  step_run r;
  r.report = e.run(o);
  r.result = capture(m, e, r.report.loss);
  simulate_options so;
  so.record_timeline = true;
  r.sim = simulate(g, steps, so);
  r.layout = e.layout();
  return r;
}

}  // namespace

TEST_SUITE("cpu runtime") {

TEST_CASE("every plan method gives the no-checkpoint step bit for bit and the simulated bytes to the byte" *
          doctest::timeout(300)) {
  std::printf("%-10s %-14s %6s %9s %12s %12s %8s\n", "model", "method", "steps", "recompute", "peak meas.",
              "peak sim.", "arena/lb");
  for (const std::string& family : test::reduced_families()) {
    const graph g = test::reduced_model(family);
    const plan reference_plan = plan_none(g);
    const step_run reference = train_once(g, reference_plan.steps);
    for (const test::plan_method& method : test::plan_methods()) {
      CAPTURE(family);
      CAPTURE(method.name);
      const plan p = method.make(g);
      if (p.steps.empty()) {  // the method found no plan (the exact DP's time limit): nothing to run
        std::printf("%-10s %-14s no plan\n", family.c_str(), method.name.c_str());
        continue;
      }
      const step_run run = train_once(g, p.steps);
      std::printf("%-10s %-14s %6zu %9zu %12llu %12llu %8.4f\n", family.c_str(), method.name.c_str(), p.steps.size(),
                  run.sim.recompute_steps, static_cast<unsigned long long>(run.report.peak_bytes),
                  static_cast<unsigned long long>(run.sim.peak_bytes), run.layout.ratio());

      // Memory: the measured live bytes equal the simulator's, step by step.
      CHECK(run.report.peak_bytes == run.sim.peak_bytes);
      CHECK(run.report.peak_step == run.sim.peak_step);
      CHECK(run.report.at_peak == run.sim.at_peak);
      CHECK(run.report.timeline == run.sim.timeline);
      CHECK(run.layout.live_peak + run.sim.at_peak.parameters + run.sim.at_peak.inputs == run.sim.peak_bytes);
      CHECK(run.layout.arena_bytes >= run.layout.live_peak);

      // Numbers: the loss, every parameter gradient, the updated parameters and
      // the running statistics, bit for bit.
      CHECK(std::memcmp(&run.result.loss, &reference.result.loss, sizeof(double)) == 0);
      const std::string differs = first_difference(g, reference.result, run.result);
      if (!differs.empty()) {
        std::string reordered;
        for (const std::string& name : reordered_consumers(g, reference_plan.steps, p.steps)) reordered += " '" + name + "'";
        FAIL_CHECK("graph " << g.name() << ", plan " << method.name << ": first difference at " << differs
                            << "; values whose ≥3 consumers' backwards run in another order than plan_none's:"
                            << (reordered.empty() ? std::string(" none") : reordered));
      }
    }
  }
}

TEST_CASE("the runtime runs every method remat::solve offers") {
  for (method m : all_methods) {
    CAPTURE(to_string(m));
    CHECK(parse_method(to_string(m)) == m);
    CHECK(std::ranges::any_of(test::plan_methods(), [&](const test::plan_method& p) { return p.name == to_string(m); }));
  }
  CHECK(std::size(all_methods) == 12);
}

TEST_CASE("a stage chain that breaks the gradient order reassociates gradient sums and nothing else") {
  // Without the gradient-order constraints (plan_methods.hpp) a chain of lower
  // sets may run the backwards of a value's three or more consumers in another
  // order than regular training; the runtime adds contributions in schedule
  // order, so sums reassociate. Memory is unaffected and the gradients agree
  // to rounding.
  const graph g = test::reduced_inception();
  const plan none = plan_none(g);
  const plan unordered = test::random_stage_plan(g, 11, false);
  const std::vector<std::string> reordered = reordered_consumers(g, none.steps, unordered.steps);
  REQUIRE_FALSE(reordered.empty());
  const step_run a = train_once(g, none.steps), b = train_once(g, unordered.steps);
  CHECK(b.report.peak_bytes == b.sim.peak_bytes);
  CHECK(b.report.timeline == b.sim.timeline);
  double worst = 0, scale = 0;
  std::size_t differing = 0;
  for (node_id v = 0; v < g.size(); ++v)
    for (std::size_t k = 0; k < a.result.gradients[v].size(); ++k) {
      const double x = a.result.gradients[v][k], y = b.result.gradients[v][k];
      worst = std::max(worst, std::abs(x - y));
      scale = std::max(scale, std::abs(x));
      differing += x != y;
    }
  CHECK(worst <= 1e-5 * scale);
  std::printf("unordered stage chain on %s: %zu values reordered (first '%s'), %zu parameter-gradient elements differ, "
              "max difference %.2e of max |gradient| %.2e\n",
              g.name().c_str(), reordered.size(), reordered[0].c_str(), differing, worst, scale);
}

TEST_CASE("batch-norm running statistics are updated once per step whatever the plan recomputes") {
  const graph g = test::reduced_resnet();
  auto train = [&](const schedule& steps, int count) {
    cpu::model<float> m(g, model_seed);
    cpu::executor<float> e(m, steps);
    for (int step = 0; step < count; ++step) {
      m.randomize_inputs(100 + static_cast<std::uint64_t>(step));
      cpu::step_options o;
      o.step = static_cast<std::uint64_t>(step);
      (void)e.run(o);
    }
    return capture(m, e, 0);
  };
  const plan none = plan_none(g);
  const plan everything = plan::from_kept(g, node_set(g.size()), "kept-nothing");
  std::size_t recomputed_norms = 0;
  for (const step& s : everything.steps)
    if (s.kind == step_kind::recompute && g.op(s.node) == "batch_norm") ++recomputed_norms;
  REQUIRE(recomputed_norms > 0);
  const outcome a = train(none.steps, 4), b = train(everything.steps, 4);
  CHECK(first_difference(g, a, b).empty());

  // After one step from mean 0 / variance 1, running = momentum · batch
  // statistics (unbiased variance): the update ran exactly once.
  cpu::model<float> m(g, model_seed);
  m.randomize_inputs(5);
  cpu::executor<float> e(m, everything.steps);
  const node_id bn = *g.find("bn1");
  std::vector<float> input_of_bn;
  (void)e.run({}, [&](std::size_t, const step& s, std::span<const float> value) {
    if (s.node == g.predecessors(bn)[0] && input_of_bn.empty()) input_of_bn.assign(value.begin(), value.end());
  });
  const ops::op_info& o = m.op(bn);
  const auto count = static_cast<double>(o.norm.n * o.norm.spatial);
  for (std::int64_t ch = 0; ch < o.norm.c; ++ch) {
    double sum = 0, squares = 0;
    for (std::int64_t i = 0; i < o.norm.n; ++i)
      for (std::int64_t k = 0; k < o.norm.spatial; ++k) sum += input_of_bn[static_cast<std::size_t>((i * o.norm.c + ch) * o.norm.spatial + k)];
    const double mean = sum / count;
    for (std::int64_t i = 0; i < o.norm.n; ++i)
      for (std::int64_t k = 0; k < o.norm.spatial; ++k) {
        const double d = input_of_bn[static_cast<std::size_t>((i * o.norm.c + ch) * o.norm.spatial + k)] - mean;
        squares += d * d;
      }
    const auto c = static_cast<std::size_t>(ch);
    CHECK(m.running_mean(bn)[c] == doctest::Approx(o.momentum * mean).epsilon(1e-5));
    CHECK(m.running_var(bn)[c] == doctest::Approx(1 - o.momentum + o.momentum * squares / (count - 1)).epsilon(1e-5));
  }
}

TEST_CASE("dropout masks are identical in the first forward and every recompute, and change with the step") {
  const graph g = test::reduced_vgg();
  const plan everything = plan::from_kept(g, node_set(g.size()), "kept-nothing");
  cpu::model<float> m(g, model_seed);
  m.randomize_inputs(3);
  cpu::executor<float> e(m, everything.steps);
  std::map<node_id, std::vector<float>> first, step_one;
  std::size_t recomputes_checked = 0;
  cpu::step_options o;
  o.learning_rate = 0;  // the same parameters in both steps: only the mask may change
  (void)e.run(o, [&](std::size_t, const step& s, std::span<const float> value) {
    if (g.op(s.node) != "dropout") return;
    if (s.kind == step_kind::compute) {
      first[s.node].assign(value.begin(), value.end());
    } else {
      CHECK(same_bits<float>(first[s.node], value));
      ++recomputes_checked;
    }
  });
  CHECK(recomputes_checked >= 2);
  o.step = 1;
  (void)e.run(o, [&](std::size_t, const step& s, std::span<const float> value) {
    if (g.op(s.node) == "dropout" && s.kind == step_kind::compute) step_one[s.node].assign(value.begin(), value.end());
  });
  for (const auto& [v, values] : first) {
    CHECK_FALSE(same_bits<float>(values, step_one[v]));
    std::size_t zeros = 0;
    for (float x : values) zeros += x == 0.0f;
    CHECK(zeros > 0);
    CHECK(zeros < values.size());
  }
}

TEST_CASE("float64 gradients of whole networks match central differences of the loss") {
  for (const char* family : {"resnet", "darts", "inception"}) {
    CAPTURE(family);
    const graph g = test::reduced_model(family, {2, 3});
    cpu::model<double> m(g, model_seed);
    m.randomize_inputs(9);
    cpu::executor<double> e(m, plan_every_k(g, 3).steps);
    cpu::step_options o;
    o.learning_rate = 0;
    (void)e.run(o);
    // A handful of weights spread over the network, with their gradients
    // (read before any probe reruns the step and overwrites them).
    std::vector<std::pair<node_id, std::size_t>> probes;
    std::vector<double> analytic;
    for (node_id v = 0; v < g.size(); v += static_cast<node_id>(g.size() / 7 + 1))
      for (node_id w = v; w < g.size(); ++w)
        if (!m.parameters(w).empty()) {
          probes.emplace_back(w, m.parameters(w).size() / 2);
          analytic.push_back(e.parameter_gradient(w)[probes.back().second]);
          break;
        }
    double worst = 0;
    for (std::size_t i = 0; i < probes.size(); ++i) {
      const auto [v, k] = probes[i];
      // Small h: batch norm over two values per channel makes the loss very curved.
      const double h = 1e-6, saved = m.parameters(v)[k];
      m.parameters(v)[k] = saved + h;
      const double up = e.run(o).loss;
      m.parameters(v)[k] = saved - h;
      const double down = e.run(o).loss;
      m.parameters(v)[k] = saved;
      const double numeric = (up - down) / (2 * h);
      worst = std::max(worst, std::abs(analytic[i] - numeric) / std::max(1e-3, std::abs(numeric)));
      CHECK(analytic[i] == doctest::Approx(numeric).epsilon(1e-5).scale(1e-3));
    }
    std::printf("%s float64 gradient vs central difference: %zu weights, worst relative error %.2e\n", family,
                probes.size(), worst);
  }
}

TEST_CASE("sigmoid and mse_loss run through the executor, with a computed target") {
  graph_builder b("sigmoid-mse");
  auto spec = [&](std::string name, std::string op, std::vector<std::size_t> in, std::vector<std::int64_t> shape,
                  std::uint64_t params, attributes a = {}) {
    node_spec s;
    s.name = std::move(name);
    s.op = std::move(op);
    s.inputs = std::move(in);
    std::uint64_t elements = 1;
    for (auto d : shape) elements *= static_cast<std::uint64_t>(d);
    s.bytes = elements * 4;
    s.params = params * 4;
    a["shape"] = shape;
    a["dtype"] = std::string("f32");
    s.attrs = std::move(a);
    return b.add(std::move(s));
  };
  attributes fc;
  fc["out_features"] = std::int64_t{6};
  attributes fc2 = fc;
  fc2["out_features"] = std::int64_t{6};
  const auto x = spec("x", "input", {}, {3, 4}, 0);
  const auto l1 = spec("fc1", "linear", {x}, {3, 6}, 4 * 6 + 6, fc);
  const auto s1 = spec("sig", "sigmoid", {l1}, {3, 6}, 0);
  const auto l2 = spec("fc2", "linear", {s1}, {3, 6}, 6 * 6 + 6, fc2);
  const auto r2 = spec("relu", "relu", {l1}, {3, 6}, 0);
  spec("mse", "mse_loss", {l2, r2}, {1}, 0);  // both operands computed: both get gradients
  const graph g = std::move(b).build();

  cpu::model<double> m(g, 1);
  m.randomize_inputs(2);
  cpu::executor<double> e(m, plan::from_kept(g, node_set(g.size()), "kept-nothing").steps);
  cpu::step_options o;
  o.learning_rate = 0;
  (void)e.run(o);
  std::vector<std::tuple<node_id, std::size_t, double>> probes;
  for (const char* name : {"fc1", "fc2"}) {
    const node_id v = *g.find(name);
    for (std::size_t k = 0; k < m.parameters(v).size(); k += 5) probes.emplace_back(v, k, e.parameter_gradient(v)[k]);
  }
  for (const auto& [v, k, analytic] : probes) {
    const double h = 1e-6, saved = m.parameters(v)[k];
    m.parameters(v)[k] = saved + h;
    const double up = e.run(o).loss;
    m.parameters(v)[k] = saved - h;
    const double down = e.run(o).loss;
    m.parameters(v)[k] = saved;
    CHECK(analytic == doctest::Approx((up - down) / (2 * h)).epsilon(1e-6).scale(1e-4));
  }
  // And in float the plan changes no bit.
  const step_run a = train_once(g, plan_none(g).steps), c = train_once(g, plan_every_k(g, 2).steps);
  CHECK(first_difference(g, a.result, c.result).empty());
  CHECK(c.report.peak_bytes == c.sim.peak_bytes);
}

TEST_CASE("bad input is refused with a remat::error naming the node") {
  auto message = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const error& e) {
      return e.what();
    }
    return "(no error)";
  };

  SUBCASE("an op the runtime does not run") {
    zoo::network_builder b("gelu-net");
    const zoo::tensor x = b.input("input", {2, 4});
    b.gelu("act", b.linear("fc", x, 3));
    const graph g = std::move(b).build();
    const std::string m = message([&] { cpu::model<float>{g}; });
    CHECK(m.find("'act'") != std::string::npos);
    CHECK(m.find("not supported") != std::string::npos);
  }
  SUBCASE("f16 values") {
    zoo::build_options o;
    o.type = zoo::dtype::f16;
    o.batch = 1;
    o.height = o.width = 32;
    const graph g = zoo::build("resnet18", o);
    const std::string m = message([&] { cpu::model<float>{g}; });
    CHECK(m.find("'input'") != std::string::npos);
    CHECK(m.find("f16") != std::string::npos);
  }
  SUBCASE("bytes that disagree with the shape") {
    graph_builder b("bad-bytes");
    node_spec x;
    x.name = "x";
    x.op = "input";
    x.bytes = 32;
    x.attrs["shape"] = std::vector<std::int64_t>{2, 4};
    x.attrs["dtype"] = std::string("f32");
    b.add(x);
    node_spec r;
    r.name = "act";
    r.op = "relu";
    r.inputs = {0};
    r.bytes = 4;  // the shape says 32
    r.attrs = x.attrs;
    b.add(r);
    const graph g = std::move(b).build();
    const std::string m = message([&] { cpu::model<float>{g}; });
    CHECK(m.find("'act'") != std::string::npos);
    CHECK(m.find("32") != std::string::npos);
  }
  SUBCASE("an attribute missing or unsupported") {
    zoo::network_builder b("concat-net");
    const zoo::tensor x = b.input("input", {2, 3, 4, 4});
    b.concat("cat", {x, x});
    graph_builder copy("concat-axis-2");
    const graph g0 = std::move(b).build();
    for (node_id v = 0; v < g0.size(); ++v) {
      node_spec s = node_spec_of(g0, v);
      for (node_id p : g0.inputs(v)) s.inputs.push_back(p);
      if (s.op == "concat") s.attrs["axis"] = std::int64_t{2};
      copy.add(std::move(s));
    }
    const graph g = std::move(copy).build();
    const std::string m = message([&] { cpu::model<float>{g}; });
    CHECK(m.find("'cat'") != std::string::npos);
    CHECK(m.find("axis") != std::string::npos);
  }
  SUBCASE("transposed convolution, upsampling and per-pixel loss attributes out of range") {
    zoo::network_builder b("segmenter");
    const zoo::tensor x = b.input("input", {2, 3, 4, 4});
    zoo::conv_transpose2d_options up;
    up.out_channels = 2;
    up.kernel = {2, 2};
    up.stride = {2, 2};
    const zoo::tensor y = b.upsample_bilinear("resize", b.conv_transpose2d("up", x, up), 9, 9);
    b.softmax_cross_entropy("loss", y, b.labels("labels", zoo::shape{2, 9, 9}));
    const graph g0 = std::move(b).build();
    CHECK_NOTHROW(cpu::model<float>{g0});
    // g0 with one node's attribute (or the labels' shape) replaced.
    auto with = [&](const std::string& node, const std::string& key, attribute_value value) {
      graph_builder copy("segmenter-changed");
      for (node_id v = 0; v < g0.size(); ++v) {
        node_spec s = node_spec_of(g0, v);
        for (node_id p : g0.inputs(v)) s.inputs.push_back(p);
        if (s.name == node) s.attrs[key] = value;
        if (s.name == "labels" && key == "shape") s.bytes = 8 * 2 * 9 * 8;
        copy.add(std::move(s));
      }
      return std::move(copy).build();
    };
    const std::vector<std::tuple<graph, std::string, std::string>> bad{
        {with("up", "output_padding", std::vector<std::int64_t>{2, 0}), "'up'", "output_padding"},
        {with("up", "groups", std::int64_t{2}), "'up'", "groups 1"},
        {with("up", "stride", std::vector<std::int64_t>{std::int64_t{1} << 62, 2}), "'up'", "64 bits"},
        {with("up", "padding", std::vector<std::int64_t>{4, 0}), "'up'", "too small for the padding"},
        {with("resize", "size", std::vector<std::int64_t>{9, 8}), "'resize'", "disagrees"},
        {with("labels", "shape", std::vector<std::int64_t>{2, 9, 8}), "'loss'", "[2, 9, 9]"},
    };
    for (const auto& [g, node, what] : bad) {
      const std::string m = message([&] { cpu::model<float>{g}; });
      CAPTURE(m);
      CHECK(m.find(node) != std::string::npos);
      CHECK(m.find(what) != std::string::npos);
    }
  }
  SUBCASE("a backward the graph does not keep enough for") {
    graph_builder b("weak-reads");
    node_spec x;
    x.name = "x";
    x.op = "input";
    x.bytes = 32;
    x.attrs["shape"] = std::vector<std::int64_t>{2, 4};
    x.attrs["dtype"] = std::string("f32");
    b.add(x);
    node_spec r = x;
    r.name = "act";
    r.op = "relu";
    r.inputs = {0};
    r.reads = backward_reads::none;
    b.add(r);
    const graph g = std::move(b).build();
    const std::string m = message([&] { cpu::model<float>{g}; });
    CHECK(m.find("'act'") != std::string::npos);
    CHECK(m.find("reads") != std::string::npos);
  }
  SUBCASE("a schedule the simulator rejects") {
    const graph g = test::reduced_vgg();
    cpu::model<float> m(g);
    schedule steps = plan_none(g).steps;
    steps.erase(steps.begin());  // the first compute is gone: its consumer has no operand
    const std::string text = message([&] { cpu::executor<float>{m, steps}; });
    CHECK(text.find("'features.0'") != std::string::npos);
    CHECK_THROWS_AS(cpu::executor<float>(m, steps), invalid_schedule);
  }
  SUBCASE("a label outside the classes, and input data of the wrong size") {
    const graph g = test::reduced_vgg();
    cpu::model<float> m(g);
    cpu::executor<float> e(m, plan_none(g).steps);
    const std::vector<std::int64_t> labels{0, 5};
    m.set_labels("labels", labels);
    const std::string text = message([&] { (void)e.run(); });
    CHECK(text.find("'loss'") != std::string::npos);
    CHECK(text.find("label 5") != std::string::npos);
    const std::vector<float> few(3, 0.0f);
    CHECK(message([&] { m.set_input("input", few); }).find("'input'") != std::string::npos);
    CHECK(message([&] { m.set_input("nope", few); }).find("'nope'") != std::string::npos);
  }
}

}  // TEST_SUITE
