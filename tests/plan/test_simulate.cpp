// Simulator tests whose expected figures were worked out by hand, step by step,
// from the cost model in docs/cost-model.md. "R" is the resident memory
// (parameters + inputs) present at every step.

#include <doctest/doctest.h>

#include <remat/analysis/bounds.hpp>
#include <remat/plan/simulate.hpp>
#include <remat/solvers/baselines.hpp>

#include "../support/small_graphs.hpp"

using namespace remat;
using remat::test::chain;
using remat::test::concat_block;
using remat::test::diamond;
using remat::test::residual;

namespace {

node_id id(const graph& g, const char* name) { return *g.find(name); }

schedule steps(const graph& g, std::initializer_list<std::pair<step_kind, const char*>> list) {
  schedule out;
  for (auto [kind, name] : list) out.push_back({kind, id(g, name)});
  return out;
}

std::vector<std::uint64_t> totals(const simulation& sim) {
  std::vector<std::uint64_t> out;
  for (const auto& m : sim.timeline) out.push_back(m.total());
  return out;
}

node_set keep(const graph& g, std::initializer_list<const char*> names) {
  node_set s(g.size());
  for (const char* n : names) s.insert(id(g, n));
  return s;
}

constexpr auto C = step_kind::compute;
constexpr auto RC = step_kind::recompute;
constexpr auto F = step_kind::free;
constexpr auto B = step_kind::backward;

}  // namespace

TEST_SUITE("simulate") {

TEST_CASE("chain, regular training: every step's memory and the peak, to the byte") {
  const graph g = chain();  // R = 10 (x) + 10 (a's params) = 20
  const plan p = plan_none(g);
  // a and b are read by the next backward, c by nobody: keep {a, b}.
  CHECK(p.steps == steps(g, {{C, "a"}, {C, "b"}, {C, "c"}, {F, "c"}, {B, "c"}, {F, "b"},
                             {B, "b"}, {F, "a"}, {B, "a"}}));
  const simulation sim = simulate(g, p.steps, {.record_timeline = true});
  // compute a: 20+100; b: +200; c: +50; free c; backward c: seed 50 + grad b 200;
  // free b; backward b: grad a 100 (grad b dies after); free a; backward a: +10 param grad.
  CHECK(totals(sim) == std::vector<std::uint64_t>{120, 320, 370, 320, 570, 320, 420, 120, 130});
  CHECK(sim.peak_bytes == 570);
  CHECK(sim.peak_step == 4);
  CHECK(sim.at_peak.activations == 300);
  CHECK(sim.at_peak.gradients == 250);
  CHECK(sim.at_peak.parameters == 10);
  CHECK(sim.at_peak.inputs == 10);
  CHECK(sim.forward_time == 6);
  CHECK(sim.backward_time == 12);
  CHECK(sim.recompute_time == 0);
  CHECK(sim.overhead() == 0);
}

TEST_CASE("chain, nothing kept: a and b are recomputed for c's backward; same peak") {
  const graph g = chain();
  const plan p = plan::from_kept(g, node_set(g.size()), "kept");
  CHECK(p.steps == steps(g, {{C, "a"}, {C, "b"}, {F, "a"}, {C, "c"}, {F, "b"}, {F, "c"},
                             {RC, "a"}, {RC, "b"}, {B, "c"}, {F, "b"}, {B, "b"}, {F, "a"}, {B, "a"}}));
  const simulation sim = simulate(g, p.steps, {.record_timeline = true});
  CHECK(totals(sim) ==
        std::vector<std::uint64_t>{120, 320, 220, 270, 70, 20, 120, 320, 570, 320, 420, 120, 130});
  CHECK(sim.peak_bytes == 570);
  CHECK(sim.peak_step == 8);
  CHECK(sim.at_peak.recomputed == 300);
  CHECK(sim.recompute_time == 3);  // a (1) + b (2)
  CHECK(sim.recompute_steps == 2);
  CHECK(sim.overhead() == doctest::Approx(3.0 / 18.0));
}

TEST_CASE("chain, only a kept: b is rebuilt from a for c's backward and freed right after it") {
  const graph g = chain();
  const plan p = plan::from_kept(g, keep(g, {"a"}), "kept");
  CHECK(p.steps == steps(g, {{C, "a"}, {C, "b"}, {C, "c"}, {F, "b"}, {F, "c"}, {RC, "b"}, {B, "c"}, {F, "b"},
                             {B, "b"}, {F, "a"}, {B, "a"}}));
  const simulation sim = simulate(g, p.steps, {.record_timeline = true});
  // forward 120, 320, 370; free b 170, free c 120; rebuild b 320; backward c: seed 50 + grad b 200 = 570;
  // free b 320 (a, grad b); backward b: grad a 100 = 420; free a 120; backward a: +10 param grad = 130.
  CHECK(totals(sim) == std::vector<std::uint64_t>{120, 320, 370, 170, 120, 320, 570, 320, 420, 120, 130});
  CHECK(sim.peak_bytes == 570);
  CHECK(sim.peak_step == 6);
  CHECK(sim.at_peak.activations == 100);
  CHECK(sim.at_peak.recomputed == 200);
  CHECK(sim.at_peak.gradients == 250);
  CHECK(sim.recompute_time == 2);
  CHECK(sim.recompute_steps == 1);
}

TEST_CASE("chain, per-op floor equals the regular peak's backward of c") {
  const graph g = chain();
  // backward c: R 20 + grad c 50 + value b 200 + grad b 200 = 470.
  const op_floor floor = per_op_floor(g);
  CHECK(floor.bytes == 470);
  CHECK(g.node_name(floor.node) == "c");
  CHECK(floor.backward);
}

TEST_CASE("diamond, regular training") {
  const graph g = diamond();  // R = 10 + 16 + 32 = 58
  const plan p = plan_none(g);  // keeps a (read by c), b (reads itself), d (read by e)
  CHECK(p.kept == keep(g, {"a", "b", "d"}));
  const simulation sim = simulate(g, p.steps, {.record_timeline = true});
  // forward: a 158, b 358, c 658, d 698, free c 398, e 406, free e 398;
  // backward e: +8 seed +40 grad d = 446; free d 398; backward d: +200 grad b +300 grad c = 898;
  // backward c: +100 grad a +32 param grad = 990 (peak); backward b 690 (grad b dies after: 490);
  // free b 290; free a 190; backward a: +16 param grad = 206.
  CHECK(totals(sim) == std::vector<std::uint64_t>{158, 358, 658, 698, 398, 406, 398, 446, 398, 898,
                                                  990, 690, 290, 190, 206});
  CHECK(sim.peak_bytes == 990);
  CHECK(g.node_name(p.steps[sim.peak_step].node) == "c");
  CHECK(sim.at_peak.gradients == 600);  // grads of b, c and a
  CHECK(sim.at_peak.parameter_gradients == 32);
}

TEST_CASE("diamond, one stage holding everything: recomputes a, b, c, d; c dies right after d is rebuilt") {
  const graph g = diamond();
  const plan p = plan::from_stages(g, std::vector<std::uint32_t>(g.size(), 0), "stages");
  CHECK(p.steps == steps(g, {{C, "a"}, {C, "b"}, {C, "c"}, {F, "a"}, {C, "d"}, {F, "b"}, {F, "c"},
                             {C, "e"}, {F, "d"}, {F, "e"},
                             {RC, "a"}, {RC, "b"}, {RC, "c"}, {RC, "d"}, {F, "c"},
                             {B, "e"}, {F, "d"}, {B, "d"}, {B, "c"}, {F, "a"}, {B, "b"}, {F, "b"}, {B, "a"}}));
  const simulation sim = simulate(g, p.steps, {.record_timeline = true});
  CHECK(totals(sim) == std::vector<std::uint64_t>{158, 358, 658, 558, 598, 398, 98, 106, 66, 58,
                                                  158, 358, 658, 698, 398, 446, 398, 898, 990, 590,
                                                  590, 190, 206});
  CHECK(sim.peak_bytes == 990);
  CHECK(sim.recompute_time == 4);
}

TEST_CASE("diamond, only d kept: a and b are rebuilt late, and the peak falls from 990 to 790") {
  const graph g = diamond();
  const plan p = plan::from_kept(g, keep(g, {"d"}), "kept");
  // a is rebuilt for c's backward and, still alive, feeds b's rebuild; it is freed right after that.
  CHECK(p.steps == steps(g, {{C, "a"}, {C, "b"}, {C, "c"}, {F, "a"}, {C, "d"}, {F, "b"}, {F, "c"},
                             {C, "e"}, {F, "e"}, {B, "e"}, {F, "d"}, {B, "d"},
                             {RC, "a"}, {B, "c"}, {RC, "b"}, {F, "a"}, {B, "b"}, {F, "b"}, {B, "a"}}));
  const simulation sim = simulate(g, p.steps, {.record_timeline = true});
  // forward: a 158, b 358, c 658, free a 558, d 598, free b 398, free c 98, e 106, free e 98;
  // backward e: +8 seed +40 grad d = 146; free d 98; backward d: +200 grad b +300 grad c = 598;
  // rebuild a 658; backward c: +100 grad a +32 param grad = 790 (peak); grad c dies: 490;
  // rebuild b 690; free a 590; backward b 590 (grad b dies after: 390); free b 190; backward a: +16 = 206.
  CHECK(totals(sim) == std::vector<std::uint64_t>{158, 358, 658, 558, 598, 398, 98, 106, 98, 146, 98, 598,
                                                  658, 790, 690, 590, 590, 190, 206});
  CHECK(sim.peak_bytes == 790);
  CHECK(sim.peak_step == 13);
  CHECK(sim.at_peak.recomputed == 100);
  CHECK(sim.at_peak.gradients == 600);
  CHECK(sim.at_peak.parameter_gradients == 32);
  CHECK(sim.recompute_time == 2);
  CHECK(sim.recompute_steps == 2);
}

TEST_CASE("diamond, per-op floor: the forward of d (b, c and d alive)") {
  const graph g = diamond();
  const op_floor floor = per_op_floor(g);
  CHECK(floor.bytes == 598);  // 58 + 200 + 300 + 40; backward d also needs 598
  CHECK(g.node_name(floor.node) == "d");
  CHECK(!floor.backward);
}

TEST_CASE("per-op floor: a skip connection's gradient is pending during the backwards it jumps over") {
  using enum backward_reads;
  // d = add(c, a) jumps over b and c: d's backward allocates a's gradient, and
  // a's backward waits for c's, so c's backward holds it in every schedule.
  const graph g = test::build("skip", {{"x", "input", {}, 10},
                                       {"a", "conv2d", {"x"}, 100, inputs, 4, 1},
                                       {"b", "relu", {"a"}, 100, output, 0, 1},
                                       {"c", "conv2d", {"b"}, 100, inputs, 4, 1},
                                       {"d", "add", {"c", "a"}, 100, none, 0, 1},
                                       {"e", "loss", {"d"}, 8, inputs, 0, 1}});
  const op_floor floor = per_op_floor(g);
  // R 18 + c's param grad 4 + grad c 100 + value b 100 + grad b 100 + grad a 100.
  CHECK(floor.bytes == 422);
  CHECK(g.node_name(floor.node) == "c");
  CHECK(floor.backward);
  CHECK(floor.pending_gradients == 100);
  // Regular training reaches it, there: the floor is its least peak.
  const simulation sim = simulate(g, plan_none(g).steps);
  CHECK(sim.peak_bytes == 422);
  CHECK(g.node_name(plan_none(g).steps[sim.peak_step].node) == "c");
}

TEST_CASE("per-op floor of a graph with nothing to compute: its resident inputs") {
  graph_builder b("inputs-only");
  for (auto [name, bytes] : {std::pair{"x", 10}, std::pair{"y", 6}}) {
    node_spec s;
    s.name = name;
    s.op = "input";
    s.bytes = static_cast<std::uint64_t>(bytes);
    b.add(std::move(s));
  }
  const graph g = std::move(b).build();
  CHECK(per_op_floor(g).bytes == 16);
  CHECK(simulate(g, {}).peak_bytes == 16);
}

TEST_CASE("residual block under three plans") {
  const graph g = residual();  // R = 10 + 4 + 4 = 18
  SUBCASE("regular: keeps b (relu reads itself) and d (the loss reads it)") {
    const plan p = plan_none(g);
    CHECK(p.kept == keep(g, {"b", "d"}));
    const simulation sim = simulate(g, p.steps, {.record_timeline = true});
    CHECK(totals(sim) == std::vector<std::uint64_t>{118, 218, 118, 218, 318, 218, 226, 218, 326, 218,
                                                    418, 322, 322, 122, 126});
    CHECK(sim.peak_bytes == 418);  // backward d: b, grad d, grads of c and b
    CHECK(sim.recompute_time == 0);
  }
  SUBCASE("nothing kept: rebuild a, b, c, d for the loss; same peak, 4 recomputes") {
    const plan p = plan::from_kept(g, node_set(g.size()), "kept");
    const simulation sim = simulate(g, p.steps, {.record_timeline = true});
    CHECK(totals(sim) == std::vector<std::uint64_t>{118, 218, 118, 218, 318, 218, 118, 126, 26, 18,
                                                    118, 218, 118, 218, 318, 218, 326, 218, 418, 322,
                                                    322, 122, 126});
    CHECK(sim.peak_bytes == 418);
    CHECK(sim.recompute_steps == 4);
  }
  SUBCASE("keep only the loss input d: nothing is rebuilt before the loss backward") {
    const plan p = plan::from_kept(g, keep(g, {"d"}), "kept");
    CHECK(p.steps == steps(g, {{C, "a"}, {C, "b"}, {F, "a"}, {C, "c"}, {C, "d"}, {F, "b"}, {F, "c"}, {C, "e"},
                               {F, "e"}, {B, "e"}, {F, "d"}, {B, "d"}, {RC, "a"}, {RC, "b"}, {F, "a"}, {B, "c"},
                               {B, "b"}, {F, "b"}, {B, "a"}}));
    const simulation sim = simulate(g, p.steps, {.record_timeline = true});
    // b is rebuilt (from a) for c's backward, c is not needed: a, b recomputed.
    // forward 118, 218, 118, 218, 318, 218, 118, 126, 118; backward e: +8 seed +100 grad d = 226;
    // free d 118; backward d: grads of c and b = 318; rebuild a 318, b 418 (peak), free a 318;
    // backward c: +4 param grad = 322 (grad c dies: 222); backward b: +100 grad a = 322; free b 122; backward a 126.
    CHECK(totals(sim) == std::vector<std::uint64_t>{118, 218, 118, 218, 318, 218, 118, 126, 118, 226, 118, 318,
                                                    318, 418, 318, 322, 322, 122, 126});
    CHECK(sim.recompute_steps == 2);
    CHECK(sim.peak_bytes == 418);
    CHECK(sim.peak_step == 13);
  }
}

TEST_CASE("concat block under three plans") {
  const graph g = concat_block();  // R = 10 + 4 + 2 = 16
  SUBCASE("regular") {
    const plan p = plan_none(g);
    CHECK(p.kept == keep(g, {"b", "k"}));
    const simulation sim = simulate(g, p.steps, {.record_timeline = true});
    CHECK(totals(sim) == std::vector<std::uint64_t>{116, 216, 116, 166, 316, 266, 274, 266, 424, 266,
                                                    416, 268, 318, 118, 122});
    CHECK(sim.peak_bytes == 424);  // the loss backward: b, k, seed 8, grad k 150
  }
  SUBCASE("stages {a, b} then {c, k, e}: b is kept, c and k rebuilt for the loss") {
    std::vector<std::uint32_t> stage(g.size(), 0);
    for (const char* n : {"c", "k", "e"}) stage[id(g, n)] = 1;
    const plan p = plan::from_stages(g, stage, "stages");
    CHECK(p.steps == steps(g, {{C, "a"}, {C, "b"}, {F, "a"}, {C, "c"}, {C, "k"}, {F, "c"}, {C, "e"},
                               {F, "k"}, {F, "e"}, {RC, "c"}, {RC, "k"}, {F, "c"}, {B, "e"}, {F, "k"},
                               {B, "k"}, {B, "c"}, {B, "b"}, {F, "b"}, {B, "a"}}));
    const simulation sim = simulate(g, p.steps, {.record_timeline = true});
    CHECK(totals(sim) == std::vector<std::uint64_t>{116, 216, 116, 166, 316, 266, 274, 124, 116, 166,
                                                    316, 266, 424, 266, 416, 268, 318, 118, 122});
    CHECK(sim.peak_bytes == 424);
    CHECK(sim.recompute_time == 2);
  }
  SUBCASE("only k kept: a and b are rebuilt for c's backward; the peak falls from 424 to 366") {
    const plan p = plan::from_kept(g, keep(g, {"k"}), "kept");
    CHECK(p.steps == steps(g, {{C, "a"}, {C, "b"}, {F, "a"}, {C, "c"}, {C, "k"}, {F, "b"}, {F, "c"}, {C, "e"},
                               {F, "e"}, {B, "e"}, {F, "k"}, {B, "k"}, {RC, "a"}, {RC, "b"}, {F, "a"}, {B, "c"},
                               {B, "b"}, {F, "b"}, {B, "a"}}));
    const simulation sim = simulate(g, p.steps, {.record_timeline = true});
    // forward 116, 216, 116, 166, 316, 216, 166, 174, 166; backward e: +8 seed +150 grad k = 324;
    // free k 166; backward k: grads of b and c = 316; rebuild a 266, b 366 (peak), free a 266;
    // backward c: +2 param grad = 268 (grad c dies: 218); backward b: +100 grad a = 318; free b 118;
    // backward a: +4 = 122.
    CHECK(totals(sim) == std::vector<std::uint64_t>{116, 216, 116, 166, 316, 216, 166, 174, 166, 324, 166, 316,
                                                    266, 366, 266, 268, 318, 118, 122});
    CHECK(sim.peak_bytes == 366);
    CHECK(sim.peak_step == 13);
    CHECK(sim.at_peak.recomputed == 200);
    CHECK(sim.at_peak.gradients == 150);
    CHECK(sim.recompute_time == 2);
  }
  SUBCASE("per-op floor: the loss backward") {
    const op_floor floor = per_op_floor(g);
    CHECK(floor.bytes == 324);  // 16 + seed 8 + value k 150 + grad k 150
    CHECK(g.node_name(floor.node) == "e");
  }
}

TEST_CASE("invalid schedules are rejected at the first offending step") {
  const graph g = chain();
  auto fails_at = [&](const schedule& s, std::size_t step, const std::string& fragment) {
    try {
      (void)simulate(g, s);
      FAIL("accepted an invalid schedule");
    } catch (const invalid_schedule& e) {
      CHECK(e.step() == step);
      CHECK_MESSAGE(std::string(e.what()).find(fragment) != std::string::npos, e.what());
    }
  };
  fails_at(steps(g, {{C, "b"}}), 0, "operand 'a' is not alive (never computed)");
  fails_at(steps(g, {{C, "a"}, {F, "a"}, {C, "a"}}), 2, "computed a second time");
  fails_at(steps(g, {{RC, "a"}}), 0, "recompute before the first compute");
  fails_at(steps(g, {{C, "a"}, {F, "a"}, {F, "a"}}), 2, "freed while not alive (freed at step 1)");
  fails_at(steps(g, {{C, "a"}, {RC, "a"}}), 1, "still alive");
  fails_at(steps(g, {{C, "a"}, {C, "b"}, {C, "c"}, {B, "b"}}), 3,
           "gradient is complete: consumer 'c'");
  fails_at(steps(g, {{C, "a"}, {C, "b"}, {C, "c"}, {F, "b"}, {B, "c"}}), 4,
           "backward reads operand 'b' is not alive (freed at step 3)");
  fails_at(steps(g, {{C, "a"}, {C, "b"}, {C, "c"}, {B, "c"}, {B, "c"}}), 4, "second time");
  fails_at(steps(g, {{C, "a"}, {C, "b"}, {C, "c"}, {B, "c"}}), 4, "ends before");
  fails_at(steps(g, {{C, "x"}}), 0, "graph input");
  fails_at(schedule{{C, 99}}, 0, "does not exist");
}

TEST_CASE("a schedule that never computes a node is rejected, naming it") {
  // The loss's backward reads only its operand, so nothing else would notice.
  graph_builder b("skipped-loss");
  auto add = [&](std::string name, std::string op, std::vector<std::size_t> inputs, std::uint64_t bytes,
                 backward_reads reads) {
    node_spec s;
    s.name = std::move(name);
    s.op = std::move(op);
    s.inputs = std::move(inputs);
    s.bytes = bytes;
    s.time = s.op == "input" ? 0 : 1;
    s.reads = reads;
    b.add(std::move(s));
  };
  add("x", "input", {}, 8, backward_reads::none);
  add("a", "op", {0}, 8, backward_reads::none);
  add("loss", "op", {1}, 4, backward_reads::inputs);
  const graph g = std::move(b).build();
  try {
    (void)simulate(g, schedule{{step_kind::compute, 1}, {step_kind::backward, 2}, {step_kind::backward, 1}});
    FAIL("accepted a schedule that never computes the loss");
  } catch (const invalid_schedule& e) {
    CHECK(e.step() == 3);
    CHECK(e.node() == "loss");
    CHECK(std::string(e.what()).find("never computes") != std::string::npos);
  }
}

TEST_CASE("a schedule that never ends names the node whose backward is missing") {
  const graph g = chain();
  try {
    (void)simulate(g, steps(g, {{C, "a"}, {C, "b"}, {C, "c"}, {B, "c"}}));
    FAIL("accepted");
  } catch (const invalid_schedule& e) {
    CHECK(e.node() == "b");
  }
}

}  // TEST_SUITE
