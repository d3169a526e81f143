#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <remat/io/json.hpp>
#include <remat/plan/simulate.hpp>
#include <remat/solvers/baselines.hpp>
#include <remat/zoo/generators.hpp>

namespace zoo = remat::zoo;

TEST_CASE("a uniform chain is input plus `length` ops of equal size") {
  zoo::chain_options o;
  o.length = 7;
  o.batch = 3;
  o.features = 5;
  const remat::graph g = zoo::chain(o);
  REQUIRE(g.size() == 8);
  for (remat::node_id v = 1; v < g.size(); ++v) {
    CHECK(g.bytes(v) == 3 * 5 * 4);
    REQUIRE(g.predecessors(v).size() == 1);
    CHECK(g.predecessors(v)[0] == v - 1);
    CHECK(g.op(v) == (v % 2 == 1 ? "linear" : "relu"));
  }
  CHECK(g.node_name(7) == "layers.3.fc");
  CHECK(g.param_bytes() == 4 * (5 * 5 + 5) * 4);
}

TEST_CASE("a heterogeneous chain draws its widths from the seed") {
  zoo::chain_options o;
  o.length = 40;
  o.features = 16;
  o.max_features = 4096;
  o.seed = 7;
  const std::string first = remat::io::write_graph_json(zoo::chain(o));
  CHECK(remat::io::write_graph_json(zoo::chain(o)) == first);
  const remat::graph g = zoo::chain(o);
  std::set<std::uint64_t> sizes;
  for (remat::node_id v = 1; v < g.size(); ++v) {
    CHECK(g.bytes(v) >= 64 * 16 * 4);
    CHECK(g.bytes(v) <= 64 * 4096 * 4);
    sizes.insert(g.bytes(v));
  }
  CHECK(sizes.size() > 10);
  o.seed = 8;
  CHECK(remat::io::write_graph_json(zoo::chain(o)) != first);
  o.max_features = 8;
  CHECK_THROWS_WITH_AS(zoo::chain(o), "max_features (8) is below features (16)", remat::error);
}

TEST_CASE("random layered DAGs are deterministic and layered") {
  zoo::random_dag_options o;
  o.layers = 12;
  o.width = 5;
  o.density = 0.4;
  o.seed = 3;
  const remat::graph g = zoo::random_dag(o);
  CHECK(remat::io::write_graph_json(zoo::random_dag(o)) == remat::io::write_graph_json(g));
  std::size_t losses = 0;
  std::set<std::string> ops;
  for (remat::node_id v = 0; v < g.size(); ++v) {
    const std::string& name = g.node_name(v);
    if (name.rfind("nodes.", 0) == 0) {
      // Every node takes at least one operand from the layer right before it.
      const int layer = std::stoi(name.substr(6));
      bool previous = false;
      for (remat::node_id p : g.predecessors(v)) {
        const std::string& from = g.node_name(p);
        previous = previous || (layer == 1 ? from == "input" : from.rfind("nodes." + std::to_string(layer - 1) + ".", 0) == 0);
      }
      CHECK_MESSAGE(previous, name);
      // Several operands are summed; one goes through a linear layer or a relu.
      if (g.predecessors(v).size() > 1) CHECK(g.op(v) == "add");
      else CHECK_MESSAGE((g.op(v) == "linear" || g.op(v) == "relu"), name, " is ", g.op(v));
      ops.insert(g.op(v));
    }
    if (!g.is_input(v) && g.successors(v).empty()) {
      ++losses;
      CHECK(g.op(v) == "softmax_cross_entropy");
    }
  }
  CHECK(losses == 1);
  CHECK(ops == std::set<std::string>{"add", "linear", "relu"});
  CHECK(g.size() >= 12 * 5 + 3);
  o.seed = 4;
  CHECK(remat::io::write_graph_json(zoo::random_dag(o)) != remat::io::write_graph_json(g));
  o.density = 0;
  CHECK_THROWS_AS(zoo::random_dag(o), remat::error);
}

TEST_CASE("a NAS stack of ~1900 DARTS cells has 10^5 nodes") {
  // Its build time is measured in bench/bench_core.cpp (BM_nas_stack).
  zoo::nas_stack_options o;
  o.network.cells = 1900;
  const remat::graph g = zoo::nas_stack(o);
  CHECK(g.size() == 104436);
  CHECK(g.name() == "nas-darts-1900");

  // The file a user writes must describe the very graph that was generated.
  const remat::graph back = remat::io::read_graph_json(remat::io::write_graph_json(g), "nas-darts-1900.json");
  REQUIRE(back.size() == g.size());
  CHECK(back.num_edges() == g.num_edges());
  std::size_t mismatched = 0;
  for (std::size_t v = 0; v < g.size(); ++v) {
    const auto a = g.successors(v), b = back.successors(v);
    const bool same = g.node_name(v) == back.node_name(v) && g.op(v) == back.op(v) && g.bytes(v) == back.bytes(v) &&
                      g.time(v) == back.time(v) && g.params(v) == back.params(v) && g.reads(v) == back.reads(v) &&
                      g.backward_time(v) == back.backward_time(v) && g.workspace(v) == back.workspace(v) &&
                      g.attrs(v) == back.attrs(v) && std::equal(a.begin(), a.end(), b.begin(), b.end());
    mismatched += same ? 0 : 1;
  }
  CHECK(mismatched == 0);
}

TEST_CASE("NAS stacks of every genotype, with and without the auxiliary head") {
  for (const char* cell : {"nasnet", "amoebanet", "darts"}) {
    CAPTURE(cell);
    zoo::nas_stack_options o;
    o.network.cell = cell;
    o.network.cells = 8;
    o.network.batch = 2;
    o.type = zoo::dtype::f16;
    const remat::graph plain = zoo::nas_stack(o);
    o.network.auxiliary = true;
    const remat::graph aux = zoo::nas_stack(o);
    CHECK(aux.size() > plain.size());
    CHECK(aux.find("aux_loss"));
    CHECK(!plain.find("aux_loss"));
    const remat::simulation s = remat::simulate(plain, remat::plan_none(plain).steps);
    CHECK(s.peak_bytes > 0);
  }
  zoo::nas_stack_options bad;
  bad.network.cell = "enas";
  CHECK_THROWS_WITH_AS(zoo::nas_stack(bad), "unknown cell genotype 'enas' (known: nasnet, amoebanet, darts)", remat::error);
}

TEST_CASE("a Transformer stack has the expected shapes and parameters") {
  zoo::transformer_options o;
  o.layers = 3;
  o.batch = 2;
  o.sequence = 16;
  o.hidden = 64;
  o.heads = 4;
  o.classes = 10;
  const remat::graph g = zoo::transformer(o);
  const std::int64_t d = 64;
  // Per block: q, k, v, proj (d² + d each), fc (4d² + 4d), proj (4d² + d), two layer norms (2d each).
  const std::int64_t block = 4 * (d * d + d) + (4 * d * d + 4 * d) + (4 * d * d + d) + 4 * d;
  CHECK(g.param_bytes() == static_cast<std::uint64_t>(4 * (3 * block + 2 * d + d * 10 + 10)));
  const auto scores = g.find("blocks.2.attn.scores");
  REQUIRE(scores);
  CHECK(std::get<std::vector<std::int64_t>>(g.attrs(*scores).at("shape")) == std::vector<std::int64_t>{2, 4, 16, 16});
  CHECK(g.find("blocks.0.attn.attn_dropout"));
  o.dropout = 0;
  const remat::graph lean = zoo::transformer(o);
  CHECK(!lean.find("blocks.0.attn.attn_dropout"));
  CHECK(lean.size() + 3 * 3 == g.size());
  o.heads = 5;
  CHECK_THROWS_WITH_AS(zoo::transformer(o), "heads (5) must divide hidden (64)", remat::error);
}
