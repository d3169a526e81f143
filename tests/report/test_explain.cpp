// remat explain: the forum thread's second network to the byte (the thread's
// arithmetic, the user's per-op checkpoints, the optimal plan), tensors at a
// step adding up to the simulator's memory, budgets, the frontier.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <remat/io/load.hpp>
#include <remat/report/explain.hpp>
#include <remat/solve.hpp>
#include <remat/zoo/generators.hpp>

#include "../support/random_graphs.hpp"
#include "../support/shaped_graphs.hpp"

using namespace remat;

namespace {

// examples/graphs/forum-cnn-full.json: my_model_full from the thread at batch
// 100, float32, input 20 × 45 × 43 (channels, height, width).
graph forum_full() { return io::load_graph(std::string(REMAT_SOURCE_ROOT) + "/examples/graphs/forum-cnn-full.json"); }

const std::vector<std::string> per_op_checkpoints{"conv1", "relu1",  "conv2",  "relu2",  "conv3",  "relu3",
                                                  "flatten", "param1", "sigmoid", "param2", "param3", "cat"};

std::uint64_t total(const std::vector<live_tensor>& tensors) {
  std::uint64_t sum = 0;
  for (const live_tensor& t : tensors) sum += t.bytes;
  return sum;
}

}  // namespace

TEST_SUITE("explain") {

TEST_CASE("the forum's second network: the thread's arithmetic, exactly") {
  const graph g = forum_full();
  constexpr std::uint64_t batch = 100, f32 = 4, map = 45 * 43;
  constexpr std::uint64_t in_features = map * 10;  // flatten of conv3's 10 channels
  static_assert(in_features == 19350);
  constexpr std::uint64_t out_features = 29913;
  // "each will take 800MB just to store the weights + 800MB for their
  // gradients": in fact 578,816,550 weights and 29,913 biases per layer.
  constexpr std::uint64_t linear_params = (in_features * out_features + out_features) * f32;
  static_assert(in_features * out_features == 578816550);
  static_assert(linear_params == 2315385852);  // 2.32 GB, 2.16 GiB: 2.9 times the thread's 800 MB
  constexpr std::uint64_t conv_params = ((20 * 9 * 50 + 50) + (50 * 9 * 25 + 25) + (25 * 9 * 10 + 10)) * f32;
  static_assert(conv_params == 36200 + 45100 + 9040);
  constexpr std::uint64_t params = 3 * linear_params + conv_params;
  static_assert(params == 6946247896);

  for (const char* linear : {"param1", "param2", "param3"}) CHECK(g.params(*g.find(linear)) == linear_params);
  CHECK(g.params(*g.find("conv1")) == 36200);
  CHECK(g.param_bytes() == params);
  CHECK(g.bytes(*g.find("x")) == batch * 20 * map * f32);
  CHECK(g.bytes(*g.find("conv1")) == batch * 50 * map * f32);
  CHECK(g.bytes(*g.find("relu1")) == 38700000);
  CHECK(g.bytes(*g.find("conv2")) == batch * 25 * map * f32);
  CHECK(g.bytes(*g.find("conv3")) == batch * 10 * map * f32);
  CHECK(g.bytes(*g.find("flatten")) == batch * in_features * f32);
  CHECK(g.bytes(*g.find("param1")) == batch * out_features * f32);
  CHECK(g.bytes(*g.find("cat")) == batch * 3 * out_features * f32);
  CHECK(g.bytes(*g.find("target")) == batch * 3 * out_features * f32);
  CHECK(g.predecessors(*g.find("cat")).size() == 3);

  explain_options o;
  o.optimizer = optimizer::adam;
  const explanation e = explain(g, plan_from_checkpoints(g, per_op_checkpoints), o);
  CHECK(e.optimizer_state == 2 * params);

  // Regular training peaks in relu1's backward: every parameter gradient but
  // conv1's, relu1's value (its backward reads it), relu1's gradient and the
  // gradient buffer it opens for conv1, and the inputs x and target.
  const std::uint64_t inputs = 15480000 + 35895600;
  const std::uint64_t regular_peak = params + (params - 36200) + inputs + 38700000 + 2 * 38700000;
  CHECK(regular_peak == 14059935192);
  CHECK(e.regular.figures.peak_bytes == regular_peak);
  CHECK(e.regular.peak_bytes() == regular_peak + 2 * params);
  CHECK(g.node_name(e.regular.p.steps[e.regular.figures.peak_step].node) == "relu1");
  const training_memory at_peak = e.regular.peak();
  CHECK(at_peak[memory_part::parameters] == params);
  CHECK(at_peak[memory_part::parameter_gradients] == params - 36200);
  CHECK(at_peak[memory_part::optimizer_state] == 2 * params);
  CHECK(at_peak[memory_part::activations] == 38700000);
  CHECK(at_peak.largest() == memory_part::optimizer_state);
  const fate_summary regular_fates = summarize_fates(g, e.regular.p.steps);
  CHECK(regular_fates.kept == 6);  // relu1, relu2, relu3, flatten, sigmoid, cat: what backwards read
  CHECK(regular_fates.kept_bytes == 38700000 + 19350000 + 7740000 + 7740000 + 11965200 + 35895600);
  CHECK(regular_fates.recomputed == 0);
  CHECK(regular_fates.freed == 7);

  // No plan can save a byte: that is the per-op floor.
  CHECK(e.floor.bytes == regular_peak);
  CHECK(e.most_any_plan_saves() == 0);
  CHECK(e.optimal_is_regular());
  CHECK(e.saving(e.optimal) == 0);
  CHECK(e.activation_share() < 0.0014);

  // The user's checkpoints around every single op keep every output: their
  // peak moves to param1's backward, holding conv1 ... flatten (the sigmoid,
  // param2 and param3 outputs are freed by then), the three linear layers'
  // parameter gradients, flatten's gradient and param1's.
  const std::uint64_t values = 2 * 38700000 + 2 * 19350000 + 3 * 7740000;
  const std::uint64_t per_op_peak = params + 3 * linear_params + inputs + values + 7740000 + 11965200;
  CHECK(per_op_peak == 14102806252);
  REQUIRE(e.chosen);
  CHECK(e.chosen->figures.peak_bytes == per_op_peak);
  CHECK(e.saving(*e.chosen) == -42871060);
  CHECK(e.chosen->figures.recompute_steps == 0);
  CHECK(summarize_fates(g, e.chosen->p.steps).kept == 12);

  // The thread's advice, one segment from param1 to cat, saves nothing either.
  const std::vector<std::string> segment{"relu1", "relu2", "relu3", "flatten", "cat"};
  const explanation advised = explain(g, plan_from_checkpoints(g, segment), o);
  CHECK(advised.saving(*advised.chosen) == 0);
  CHECK(advised.chosen->figures.recompute_time > 0);

  // An RTX 2080 Super (8 GiB) cannot hold any plan with Adam; a 32 GiB V100
  // holds regular training by this count.
  o.budget = std::uint64_t{8} << 30;
  const explanation small = explain(g, std::nullopt, o);
  CHECK(small.budget_below_floor());
  CHECK_FALSE(small.fits(small.optimal));
  o.budget = std::uint64_t{32} << 30;
  CHECK(explain(g, std::nullopt, o).fits(e.regular));
}

TEST_CASE("tensors alive at a step add up to the simulator's memory of that step") {
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const graph g = test::random_dag(6 + seed % 15, seed, 3, 3);
    for (optimizer opt : {optimizer::sgd, optimizer::momentum, optimizer::adam}) {
      for (const plan& p : {plan_none(g), plan_sqrt(g), plan_every_k(g, 2)}) {
        const simulation sim = simulate(g, p.steps, {.record_timeline = true});
        for (std::size_t i = 0; i < p.steps.size(); ++i) {
          const std::vector<live_tensor> alive = tensors_alive_at(g, p.steps, i, opt);
          REQUIRE(total(alive) == sim.timeline[i].total() + state_buffers(opt) * g.param_bytes());
          for (std::size_t k = 1; k < alive.size(); ++k) CHECK(alive[k - 1].bytes >= alive[k].bytes);
          for (const live_tensor& t : alive)
            if (!t.resident) CHECK((t.first_step <= i && i <= t.last_step));
        }
      }
    }
  }
}

TEST_CASE("a network checkpointing helps: the plan remat plan gives, bounded by the per-op and cut floors") {
  const graph g = test::resnet_like(10);
  const explanation e = explain(g, std::nullopt);
  const solution s = solve(g, {});
  CHECK(e.optimal.figures.peak_bytes == s.figures.peak_bytes);
  CHECK(e.optimal.p.steps == s.best.steps);
  CHECK(e.optimal_status == s.status);
  CHECK(e.optimal_family == s.proof_family);
  CHECK_FALSE(e.optimal_is_regular());
  CHECK(e.saving(e.optimal) > 0);
  CHECK(static_cast<std::uint64_t>(e.saving(e.optimal)) <= e.most_any_plan_saves());
  CHECK(e.optimal.peak_bytes() >= e.floor_bytes());
  // The cut floor passes the per-op floor here, and bounds what any plan saves.
  CHECK(e.cut.bytes > e.floor.bytes);
  CHECK(e.least_bytes() == e.cut.bytes + e.optimizer_state);
  CHECK(e.optimal.peak_bytes() >= e.least_bytes());
  CHECK(e.most_any_plan_saves() == e.regular.peak_bytes() - e.least_bytes());
  CHECK(e.activation_share() > 0.5);
  CHECK(e.regular.peak().largest() == memory_part::activations);
  CHECK(e.optimal.figures.peak_bytes == simulate(g, e.optimal.p.steps).peak_bytes);
  CHECK(total(e.optimal.at_peak) == e.optimal.peak_bytes());
  CHECK(e.optimizer_state == 0);

  // Stage plans alone: their proven optimum, the frontier's first point.
  explain_options stages_only;
  stages_only.general_search_work = 0;
  const explanation stage = explain(g, std::nullopt, stages_only);
  CHECK(stage.optimal_status == solve_status::optimal);
  CHECK(stage.optimal_family == "stage plans");
  CHECK(e.optimal.peak_bytes() < stage.optimal.peak_bytes());
  const explained_frontier f = simulated_frontier(g, e);
  REQUIRE(!f.points.empty());
  CHECK(f.points.front().peak_bytes == stage.optimal.peak_bytes());
  for (std::size_t i = 1; i < f.points.size(); ++i) {
    CHECK(f.points[i - 1].peak_bytes < f.points[i].peak_bytes);
    CHECK(f.points[i - 1].recompute_time > f.points[i].recompute_time);
  }
  CHECK(f.points.back().peak_bytes <= e.regular.peak_bytes());
}

TEST_CASE("three DARTS cells: the window floor the plan search found bounds what any plan saves") {
  // Its window floor, 143,127,568 bytes, passes the per-op, cut and
  // backward-order floors; exact's plan meets it (tests/analysis/test_window_floor.cpp).
  zoo::nas_stack_options cells;
  cells.network.cell = "darts";
  cells.network.cells = 3;
  const graph g = zoo::nas_stack(cells);
  explain_options o;
  o.optimizer = optimizer::momentum;
  const explanation e = explain(g, std::nullopt, o);
  CHECK(e.search_floor == 143'127'568);
  CHECK(e.search_floor > std::max({e.floor.bytes, e.cut.bytes, e.order.bytes}));
  CHECK(e.search_floor_name.starts_with("the window floor (every schedule"));
  CHECK(e.least_bytes() == e.search_floor + e.optimizer_state);
  CHECK(e.optimal.peak_bytes() == e.least_bytes());
  CHECK(e.optimal_status == solve_status::optimal);
  CHECK(e.most_any_plan_saves() == e.regular.peak_bytes() - e.least_bytes());
  // A budget asks for the least recompute, whose bound is the per-op floor:
  // no search floor then.
  o.budget = e.regular.peak_bytes();
  CHECK(explain(g, std::nullopt, o).search_floor == 0);
}

TEST_CASE("a budget: the least recompute within it; below every plan found, the least peak and a bound naming its plans") {
  const graph g = test::resnet_like(10);
  explain_options stages_only;
  stages_only.general_search_work = 0;
  const explanation least = explain(g, std::nullopt);
  const explanation stage = explain(g, std::nullopt, stages_only);
  REQUIRE(least.optimal.peak_bytes() < stage.optimal.peak_bytes());
  explain_options o;
  o.optimizer = optimizer::momentum;
  const std::uint64_t state = g.param_bytes();
  o.budget = (least.regular.figures.peak_bytes + stage.optimal.figures.peak_bytes) / 2 + state;
  const explanation within = explain(g, std::nullopt, o);
  CHECK(within.fits(within.optimal));
  CHECK_FALSE(within.fits(within.regular));
  CHECK(within.optimal.figures.recompute_time <= stage.optimal.figures.recompute_time);
  CHECK(within.optimal.peak_bytes() <= *o.budget);

  // Between the general plan and the stage optimum: the general plan fits,
  // which the stage plans' proven optimum rules out for them alone.
  o.budget = (least.optimal.figures.peak_bytes + stage.optimal.figures.peak_bytes) / 2 + state;
  const explanation between = explain(g, std::nullopt, o);
  CHECK(between.fits(between.optimal));
  CHECK(between.optimal.peak_bytes() <= *o.budget);
  explain_options o_stages = o;
  o_stages.general_search_work = 0;
  const explanation between_stages = explain(g, std::nullopt, o_stages);
  CHECK_FALSE(between_stages.fits(between_stages.optimal));
  CHECK(between_stages.optimal_status == solve_status::optimal);
  CHECK(between_stages.plan_bound == stage.optimal.figures.peak_bytes + state);
  CHECK(between_stages.bound_family == "stage plans");
  CHECK(between_stages.plan_bound > *o.budget);
  CHECK_FALSE(between_stages.budget_below_floor());

  // Below the general plan nothing found fits, and only the floors bound
  // it: the cut floor, above the per-op floor here, holds for every plan.
  o.budget = least.optimal.figures.peak_bytes + state - 1;
  const explanation below = explain(g, std::nullopt, o);
  CHECK_FALSE(below.fits(below.optimal));
  CHECK(below.optimal.figures.peak_bytes == least.optimal.figures.peak_bytes);
  const backward_floor floors = backward_floors(g);
  const std::uint64_t cut = cut_floor_of(g, floors, per_op_floor(g, floors).bytes).bytes;
  CHECK(below.plan_bound == cut + state);
  CHECK(below.plan_bound > below.floor_bytes());
  CHECK(below.bound_family == "every plan");
  CHECK_FALSE(below.budget_below_floor());

  o.budget = state / 2;  // not even the optimizer state fits
  CHECK(explain(g, std::nullopt, o).budget_below_floor());

  o.budget = least.regular.figures.peak_bytes + state;
  const explanation roomy = explain(g, std::nullopt, o);
  CHECK(roomy.optimal_is_regular());
  CHECK(roomy.optimal.figures.recompute_time == 0);
}

TEST_CASE("checkpoints by name: kept exactly, the rest recomputed; unknown names refused") {
  const graph g = test::resnet_like(4);
  const std::vector<std::string> names{g.node_name(1), g.node_name(g.size() / 2), g.node_name(0)};
  const plan p = plan_from_checkpoints(g, names);
  CHECK(p.method == "your checkpoints");
  CHECK(p.kept.count() == 3);
  const std::vector<node_fate> fates = node_fates(g, p.steps);
  for (node_id v = 0; v < g.size(); ++v)
    if (!g.is_input(v) && fates[v] == node_fate::kept) CHECK(p.kept.contains(v));
  CHECK_NOTHROW((void)simulate(g, p.steps));
  const std::vector<std::string> wrong{"conv9000"};
  CHECK_THROWS_WITH_AS((void)plan_from_checkpoints(g, wrong),
                       ("'conv9000' is not a node of graph '" + g.name() + "'").c_str(), error);
}

TEST_CASE("optimizers: names and state buffers") {
  CHECK(parse_optimizer("adam") == optimizer::adam);
  CHECK(parse_optimizer("momentum") == optimizer::momentum);
  CHECK(parse_optimizer("sgd") == optimizer::sgd);
  CHECK_FALSE(parse_optimizer("adagrad"));
  CHECK(state_buffers(optimizer::sgd) == 0);
  CHECK(state_buffers(optimizer::momentum) == 1);
  CHECK(state_buffers(optimizer::adam) == 2);
  // 2^61 parameter bytes and their gradient peak at 2^62 and some bytes;
  // Adam's two buffers take training memory past 2^63.
  graph_builder b("huge");
  node_spec x;
  x.name = "x";
  x.op = "input";
  x.bytes = 8;
  b.add(std::move(x));
  node_spec w;
  w.name = "w";
  w.op = "linear";
  w.inputs = {0};
  w.bytes = 8;
  w.params = std::uint64_t{1} << 61;
  b.add(std::move(w));
  const graph huge = std::move(b).build();
  explain_options o;
  CHECK_NOTHROW((void)explain(huge, std::nullopt, o));
  o.optimizer = optimizer::adam;
  CHECK_THROWS_WITH_AS((void)explain(huge, std::nullopt, o),
                       "graph 'huge': training memory with the adam optimizer's state reaches 2^63 bytes", error);
  for (memory_part p : memory_parts)
    CHECK(plan_dependent(p) == (p == memory_part::activations || p == memory_part::recomputed ||
                                p == memory_part::gradients || p == memory_part::workspace));
}

}  // TEST_SUITE
