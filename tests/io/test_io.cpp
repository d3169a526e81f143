// Graph and plan files: round trips, and one clear located error per malformed input.

#include <doctest/doctest.h>

#include <remat/analysis/orders.hpp>
#include <remat/io/dot.hpp>
#include <remat/io/json.hpp>
#include <remat/io/kusumoto.hpp>
#include <remat/io/plan_json.hpp>
#include <remat/solvers/baselines.hpp>

#include "../support/random_graphs.hpp"
#include "../support/small_graphs.hpp"

using namespace remat;

namespace {

struct located {
  std::size_t line;
  std::string message;
};

template <class F>
located parse_failure(F&& read) {
  try {
    read();
  } catch (const parse_error& e) {
    return {e.line(), e.what()};
  }
  return {0, "no error"};
}

located json_failure(const std::string& text) {
  return parse_failure([&] { (void)io::read_graph_json(text, "g.json"); });
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

void check_same_graph(const graph& a, const graph& b, bool compare_times) {
  REQUIRE(a.size() == b.size());
  for (node_id v = 0; v < a.size(); ++v) {
    CHECK(a.node_name(v) == b.node_name(v));
    CHECK(a.op(v) == b.op(v));
    CHECK(a.bytes(v) == b.bytes(v));
    CHECK(a.params(v) == b.params(v));
    CHECK(a.reads(v) == b.reads(v));
    CHECK(a.is_input(v) == b.is_input(v));
    CHECK(std::ranges::equal(a.inputs(v), b.inputs(v)));
    if (compare_times) {
      CHECK(a.time(v) == b.time(v));
      CHECK(a.backward_time(v) == b.backward_time(v));
      CHECK(a.workspace(v) == b.workspace(v));
      CHECK(a.attrs(v) == b.attrs(v));
    }
  }
}

const std::string valid = R"({
  "format": "remat-graph",
  "version": 1,
  "name": "tiny",
  "nodes": [
    {"name": "x", "op": "input", "bytes": 16},
    {"name": "conv", "op": "conv2d", "inputs": ["x"], "bytes": 64, "time": 0.5, "params": 32,
     "workspace": 8, "attrs": {"kernel": [3, 3], "dtype": "f32", "scale": 0.25, "groups": 1}},
    {"name": "relu", "op": "relu", "inputs": ["conv"], "bytes": 64, "time": 0.125, "backward_time": 0.1},
    {"name": "loss", "op": "loss", "inputs": ["relu"], "bytes": 4, "time": 1e-3, "backward_reads": "inputs"}
  ]
}
)";

}  // namespace

TEST_SUITE("io") {

TEST_CASE("remat JSON: reads every field, and a write-read-write round trip is byte-identical") {
  const graph g = io::read_graph_json(valid, "tiny.json");
  CHECK(g.name() == "tiny");
  CHECK(g.size() == 4);
  const node_id conv = *g.find("conv");
  CHECK(g.params(conv) == 32);
  CHECK(g.workspace(conv) == 8);
  CHECK(g.backward_workspace(conv) == 8);
  CHECK(g.reads(conv) == backward_reads::inputs);
  CHECK(std::get<std::vector<std::int64_t>>(g.attrs(conv).at("kernel")) == std::vector<std::int64_t>{3, 3});
  CHECK(std::get<double>(g.attrs(conv).at("scale")) == 0.25);
  CHECK(g.backward_time(*g.find("relu")) == 0.1);
  CHECK(g.reads(*g.find("relu")) == backward_reads::output);

  const std::string once = io::write_graph_json(g);
  const graph back = io::read_graph_json(once, "once.json");
  check_same_graph(g, back, true);
  CHECK(io::write_graph_json(back) == once);
}

TEST_CASE("remat JSON round trip on random graphs") {
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    const graph g = test::random_dag(50, seed, 6, 3);
    const std::string text = io::write_graph_json(g);
    const graph back = io::read_graph_json(text);
    check_same_graph(g, back, true);
    CHECK(io::write_graph_json(back) == text);
  }
}

TEST_CASE("remat JSON: each malformed input gives one located error") {
  // Cut just before the relu node: the text ends on line 9, mid-array.
  auto e = json_failure(valid.substr(0, valid.find("{\"name\": \"relu\"")));
  CHECK(e.line == 9);
  CHECK(contains(e.message, "g.json:9:"));
  CHECK(contains(e.message, "truncated JSON"));

  e = json_failure("");
  CHECK(e.message == "g.json:1: empty file: expected a JSON document");
  e = json_failure("  \n \n");
  CHECK(contains(e.message, "empty file"));

  const std::string wrong_type = R"({"version": 1, "nodes": [
  {"name": "x", "op": "input", "bytes": 16},
  {"name": "y", "op": "relu", "inputs": ["x"], "bytes": "64", "time": 1}
]})";
  e = json_failure(wrong_type);
  CHECK(e.line == 3);
  CHECK(contains(e.message, "node 'y': bytes must be an integer, got a string"));

  const std::string negative = R"({"version": 1, "nodes": [
  {"name": "x", "op": "input", "bytes": 16},
  {"name": "y", "op": "relu", "inputs": ["x"],
   "bytes": -64, "time": 1}
]})";
  e = json_failure(negative);
  CHECK(e.line == 4);
  CHECK(contains(e.message, "node 'y': bytes must be a non-negative integer, got -64"));

  const std::string unknown_input = R"({"version": 1, "nodes": [
  {"name": "x", "op": "input", "bytes": 16},
  {"name": "y", "op": "relu", "inputs": ["x", "w"], "bytes": 64, "time": 1}
]})";
  e = json_failure(unknown_input);
  CHECK(e.line == 3);
  CHECK(contains(e.message, "node 'y': input 'w' does not name a node"));

  const std::string cycle = R"({"version": 1, "nodes": [
  {"name": "x", "op": "input", "bytes": 16},
  {"name": "p", "op": "relu", "inputs": ["x", "r"], "bytes": 64, "time": 1},
  {"name": "q", "op": "relu", "inputs": ["p"], "bytes": 64, "time": 1},
  {"name": "r", "op": "relu", "inputs": ["q"], "bytes": 64, "time": 1}
]})";
  e = json_failure(cycle);
  CHECK(e.line >= 3);
  CHECK(contains(e.message, "the graph has a cycle"));
  CHECK(contains(e.message, "'p'"));
  CHECK(contains(e.message, "'q'"));
  CHECK(contains(e.message, "'r'"));

  const std::string overflow = R"({"version": 1, "nodes": [
  {"name": "x", "op": "input", "bytes": 16},
  {"name": "big1", "op": "relu", "inputs": ["x"], "bytes": 9223372036854775807, "time": 1},
  {"name": "big2", "op": "relu", "inputs": ["big1"], "bytes": 9223372036854775807, "time": 1}
]})";
  e = json_failure(overflow);
  CHECK(e.line == 3);  // the running total overflows at the first 2^63-1 (value + gradient)
  CHECK(contains(e.message, "sizes overflow 64 bits"));

  const std::string too_big = R"({"version": 1, "nodes": [
  {"name": "x", "op": "input", "bytes": 18446744073709551616}
]})";
  e = json_failure(too_big);
  CHECK(e.line == 2);
  CHECK(contains(e.message, "does not fit in 64 bits"));

  e = json_failure(R"({"version": 1, "nodes": [{"name": "x", "op": "input", "bytes": 1, "byts": 2}]})");
  CHECK(contains(e.message, "unknown field 'byts'"));
  e = json_failure(R"({"nodes": []})");
  CHECK(contains(e.message, "missing field 'version'"));
  e = json_failure(R"({"version": 2, "nodes": []})");
  CHECK(contains(e.message, "unsupported version 2"));
  e = json_failure(R"({"version": 1, "nodes": []})");
  CHECK(contains(e.message, "the graph has no nodes"));
  e = json_failure(R"([1, 2])");
  CHECK(contains(e.message, "must be a JSON object"));
  e = json_failure(R"({"version": 1, "nodes": [
  {"name": "a", "op": "input", "bytes": 1},
  {"name": "a", "op": "input", "bytes": 1}]})");
  CHECK(e.line == 3);
  CHECK(contains(e.message, "duplicate node name 'a'"));
  e = json_failure(R"({"version": 1, "nodes": [{"name": "a", "op": "relu", "bytes": 1, "time": 1.5.3}]})");
  CHECK(e.line == 1);
  CHECK(contains(e.message, "g.json:1:"));
  e = json_failure(R"({"version": 1, "nodes": [{"name": "a", "op": "relu", "bytes": 1}]})");
  CHECK(contains(e.message, "missing field 'time'"));
  e = json_failure(R"({"version": 1, "nodes": [{"name": "a", "op": "relu", "bytes": 1, "time": 1, "backward_reads": "all"}]})");
  CHECK(contains(e.message, "backward_reads must be"));
}

TEST_CASE("Kusumoto IR: the sample from the spec loads with the counts it implies") {
  const std::string sample = R"(4 4
0 602112 _
1 6912 /net/conv1/W
2 3211264 _
3 3211264 _
forward
2 1
0 _
1 _
2
Convolution2DFunction
{"sy": 1, "sx": 1, "ph": 1, "pw": 1}
forward
1 1
2 _
3
ReLU
{}
backward
3 2
2 gradient
0 input
1 input
0
1
Convolution2DFunction
{"sy": 1, "sx": 1, "ph": 1, "pw": 1}
backward
2 1
3 gradient
3 output
2
ReLU
{}
)";
  io::kusumoto_stats stats;
  const graph g = io::read_kusumoto(sample, "sample.txt", {}, &stats);
  CHECK(stats.variables == 4);
  CHECK(stats.functions == 2);
  CHECK(stats.edges == 3);
  CHECK(stats.parameters == 1);
  CHECK(stats.inputs == 1);
  // The parameter folds into the convolution: 3 nodes, 2 edges.
  CHECK(g.size() == 3);
  CHECK(g.num_edges() == 2);
  CHECK(g.is_input(0));
  CHECK(g.op(1) == "conv2d");
  CHECK(g.params(1) == 6912);
  CHECK(g.reads(1) == backward_reads::inputs);
  CHECK(g.time(1) == 10);
  CHECK(g.op(2) == "relu");
  CHECK(g.reads(2) == backward_reads::output);
  CHECK(g.time(2) == 1);
  CHECK(g.bytes(2) == 3211264);
}

TEST_CASE("Kusumoto IR: what remat writes reads back to the same graph") {
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    const graph g = test::random_dag(40, seed, 5, 3);
    const graph back = io::read_kusumoto(io::write_kusumoto(g));
    check_same_graph(g, back, false);
    CHECK(io::write_kusumoto(back) == io::write_kusumoto(g));
  }
  const graph diamond = test::diamond();
  check_same_graph(diamond, io::read_kusumoto(io::write_kusumoto(diamond)), false);
}

TEST_CASE("Kusumoto IR: malformed files name the line") {
  auto fail = [](const std::string& text) {
    return parse_failure([&] { (void)io::read_kusumoto(text, "cg.txt"); });
  };
  auto e = fail("");
  CHECK(contains(e.message, "empty file"));
  e = fail("2 3\n0 1 _\n1 1 _\n");
  CHECK(contains(e.message, "must be even"));
  e = fail("2 2\n0 10 _\n");
  CHECK(contains(e.message, "truncated file"));
  e = fail("2 2\n0 10 _\n1 -5 _\n");
  CHECK(e.line == 3);
  CHECK(contains(e.message, "must not be negative"));
  e = fail("2 2\n0 10 _\n1 5 _\nforward\n1 1\n0 _\n7\nReLU\n{}\n");
  CHECK(e.line == 7);
  CHECK(contains(e.message, "output variable 7 is not a variable"));
  e = fail("2 2\n0 10 _\n1 5 _\nbackward\n");
  CHECK(e.line == 4);
  CHECK(contains(e.message, "must be 'forward'"));
  e = fail("2 2\n0 10 _\n2 5 _\n");
  CHECK(contains(e.message, "id order"));
  e = fail("2 2\n0 99999999999999999999 _\n");
  CHECK(contains(e.message, "does not fit in 64 bits"));
}

TEST_CASE("DOT output draws kept, recomputed and dropped tensors differently") {
  const graph g = test::concat_block();
  const std::string plain = io::write_dot(g);
  CHECK(contains(plain, "digraph \"concat\""));
  CHECK(contains(plain, "n1 -> n2;"));
  std::vector<std::uint32_t> stage(g.size(), 0);
  for (const char* n : {"c", "k", "e"}) stage[*g.find(n)] = 1;
  const std::string drawn = io::write_dot(g, plan::from_stages(g, stage, "stages").steps);
  CHECK(contains(drawn, "n2 [label=\"b\\nrelu 100 B\", style=filled, fillcolor=\"#93c47d\"]"));
  CHECK(contains(drawn, "n3 [label=\"c\\nconv2d 50 B\", style=\"filled,dashed\""));
  CHECK(contains(drawn, "n1 [label=\"a\\nconv2d 100 B\", style=dotted"));
  CHECK(contains(drawn, "legend_recomputed"));
}

TEST_CASE("plan files: steps round trip; kept sets and stages are rebuilt") {
  const graph g = test::diamond();
  const plan p = plan_none(g);
  const std::string text = io::write_plan_json(g, p, simulate(g, p.steps));
  const plan back = io::read_plan_json(text, g, "plan.json");
  CHECK(back.steps == p.steps);
  CHECK(back.method == "none");
  CHECK(back.kept == p.kept);

  const plan from_kept = io::read_plan_json(R"({"kept": ["a", "b", "d"]})", g);
  CHECK(from_kept.steps == p.steps);
  const plan from_stages = io::read_plan_json(R"({"stages": [["a", "b", "c", "d", "e"]]})", g);
  CHECK(simulate(g, from_stages.steps).recompute_time == 4);

  auto fail = [&](const std::string& text) {
    return parse_failure([&] { (void)io::read_plan_json(text, g, "plan.json"); });
  };
  CHECK(contains(fail(R"({"kept": ["a", "zz"]})").message, "'zz' is not a node"));
  CHECK(contains(fail(R"({"steps": [["compute", "a"], ["jump", "b"]]})").message, "step kind must be"));
  CHECK(contains(fail(R"({"stages": [["b"], ["a", "c", "d", "e"]]})").message, "not lower sets"));
  CHECK(contains(fail(R"({"stages": [["a", "b"]]})").message, "is in no stage"));
  CHECK(contains(fail(R"({})").message, "needs \"steps\", \"kept\" or \"stages\""));
  CHECK(fail("{\n\"kept\": [\n\"a\",\n7]}").line == 4);
}

TEST_CASE("plan files: stages list their nodes in execution order, and stages alone rebuild the same schedule") {
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    const graph g = test::random_dag(6 + seed % 20, seed, 2 + seed % 5, 1 + seed % 3);
    const std::vector<node_id> order = consumers_first_order(g, gradient_order_constraints(g));
    std::vector<std::uint32_t> stage(g.size(), 0);
    for (node_id v = 0; v < g.size(); ++v) {
      stage[v] = v / 3;
      for (node_id p : g.predecessors(v)) stage[v] = std::max(stage[v], stage[p]);
    }
    const plan p = plan::from_stages(g, stage, "stages", order);
    nlohmann::json doc = nlohmann::json::parse(io::write_plan_json(g, p, simulate(g, p.steps)));
    doc.erase("steps");
    const plan back = io::read_plan_json(doc.dump(), g, "plan.json");
    CHECK(back.steps == p.steps);
  }
  // A stage listed against its edges still runs: in the topological order nearest the listing.
  const graph g = test::diamond();  // x -> a -> {b, c} -> d -> e
  const plan listed = io::read_plan_json(R"({"stages": [["a", "c", "b"], ["d", "e"]]})", g);
  const plan reversed = io::read_plan_json(R"({"stages": [["c", "b", "a"], ["e", "d"]]})", g);
  CHECK(listed.order.size() == g.size());
  CHECK(reversed.steps == listed.steps);  // a before its readers, then c before b as listed; d before e
  CHECK(io::read_plan_json(R"({"stages": [["a", "b", "c"], ["d", "e"]]})", g).order.empty());
}

}  // TEST_SUITE
