// Graph concepts, adapters, remat::graph construction and validation.

#include <doctest/doctest.h>

#include <list>
#include <map>
#include <memory>
#include <ranges>

#include <remat/graph/concepts.hpp>
#include <remat/graph/graph.hpp>
#include <remat/graph/make_graph.hpp>

using namespace remat;

namespace archetype {

// Models remat::dag through ADL free functions only, with single-pass successors.
struct single_pass_iterator {
  using value_type = int;
  using difference_type = std::ptrdiff_t;
  const int* at;
  int operator*() const { return *at; }
  single_pass_iterator& operator++() {
    ++at;
    return *this;
  }
  void operator++(int) { ++at; }
  friend bool operator==(const single_pass_iterator& a, const single_pass_iterator& b) { return a.at == b.at; }
};
struct graph {
  std::vector<std::vector<int>> rows;
};
inline std::size_t num_nodes(const graph& g) { return g.rows.size(); }
inline auto successors(const graph& g, std::size_t v) {
  const auto& row = g.rows[v];
  return std::ranges::subrange(single_pass_iterator{row.data()}, single_pass_iterator{row.data() + row.size()});
}

// A type adapted only through a remat::graph_traits specialization.
struct sealed {
  std::map<int, std::list<int>> edges;
  int count;
};

}  // namespace archetype

template <>
struct remat::graph_traits<archetype::sealed> {
  static std::size_t num_nodes(const archetype::sealed& g) { return static_cast<std::size_t>(g.count); }
  static const std::list<int>& successors(const archetype::sealed& g, std::size_t v) {
    static const std::list<int> empty;
    auto it = g.edges.find(static_cast<int>(v));
    return it == g.edges.end() ? empty : it->second;
  }
};

// Provides operands in call order (a concat(b, a) must keep b first).
struct with_operands {
  std::vector<std::vector<unsigned>> succ, pred;
  std::size_t num_nodes() const { return succ.size(); }
  const std::vector<unsigned>& successors(std::size_t v) const { return succ[v]; }
  const std::vector<unsigned>& predecessors(std::size_t v) const { return pred[v]; }
};

static_assert(dag<std::vector<std::vector<int>>>);
static_assert(dag<std::vector<std::vector<std::uint32_t>>>);
static_assert(dag<archetype::graph>);
static_assert(!std::ranges::forward_range<successor_range_t<archetype::graph>>);
static_assert(dag<archetype::sealed>);
static_assert(bidirectional_dag<with_operands>);
static_assert(!bidirectional_dag<std::vector<std::vector<int>>>);
static_assert(dag<remat::graph>);
static_assert(bidirectional_dag<remat::graph>);
static_assert(!dag<int>);
static_assert(!dag<std::vector<double>>);
static_assert(cost_model<cost_arrays>);
static_assert(!cost_model<int>);

namespace {
auto unit_costs() {
  return node_costs{[](std::size_t) { return std::uint64_t{8}; }, [](std::size_t) { return 1.0; }};
}
}  // namespace

TEST_SUITE("graph") {

TEST_CASE("a vector of vectors needs no adapter; predecessors are derived") {
  const std::vector<std::vector<int>> adjacency{{1, 2}, {3}, {3}, {}};
  const graph g = make_graph(adjacency, unit_costs(), {.name = "diamond"});
  CHECK(g.name() == "diamond");
  CHECK(g.num_nodes() == 4);
  CHECK(g.num_edges() == 4);
  CHECK(std::ranges::equal(g.predecessors(3), std::vector<node_id>{1, 2}));
  CHECK(std::ranges::equal(g.successors(0), std::vector<node_id>{1, 2}));
  CHECK(g.node_name(3) == "n3");
  CHECK(g.activation_bytes() == 32);
}

TEST_CASE("ADL free functions with single-pass successor ranges") {
  const archetype::graph a{{{1}, {2}, {}}};
  const graph g = make_graph(a, unit_costs());
  CHECK(g.num_edges() == 2);
}

TEST_CASE("a graph_traits specialization adapts a type that cannot be changed") {
  archetype::sealed s{{{0, {1, 2}}, {2, {1}}}, 3};
  const graph g = make_graph(s, unit_costs());
  // 0 -> 2 -> 1: ids are renumbered topologically and the old index is kept.
  CHECK(g.original_index(0) == 0);
  CHECK(g.original_index(1) == 2);
  CHECK(g.original_index(2) == 1);
  CHECK(std::ranges::equal(g.successors(1), std::vector<node_id>{2}));
}

TEST_CASE("operands keep the order the graph gives them") {
  with_operands w;
  w.succ = {{2}, {2}, {}};
  w.pred = {{}, {}, {1, 0}};
  const graph g = make_graph(w, unit_costs());
  CHECK(std::ranges::equal(g.inputs(2), std::vector<node_id>{1, 0}));
  CHECK(std::ranges::equal(g.predecessors(2), std::vector<node_id>{0, 1}));
}

TEST_CASE("cost arrays give every optional field") {
  cost_arrays c;
  c.bytes_per_node = {4, 8, 16};
  c.time_per_node = {0, 1, 2};
  c.params_per_node = {0, 100, 0};
  c.names = {"x", "conv", "relu"};
  c.ops = {"input", "conv2d", "relu"};
  const graph g = make_graph(std::vector<std::vector<int>>{{1}, {2}, {}}, c);
  CHECK(g.is_input(0));
  CHECK(g.input_bytes() == 4);
  CHECK(g.activation_bytes() == 24);
  CHECK(g.param_bytes() == 100);
  CHECK(g.reads(1) == backward_reads::inputs);
  CHECK(g.reads(2) == backward_reads::output);
  CHECK(g.backward_time(2) == 4);
  CHECK(*g.find("relu") == 2);
  CHECK(!g.find("nope"));
}

TEST_CASE("validation names the problem and the node") {
  auto message = [](auto&& make) -> std::string {
    try {
      make();
    } catch (const invalid_graph& e) {
      return e.what();
    }
    return "no error";
  };
  CHECK(message([] { (void)graph_builder().build(); }) == "graph has no nodes");
  CHECK(message([] { (void)make_graph(std::vector<std::vector<int>>{{1}, {7}}, unit_costs()); }) ==
        "node 'n1': successor 7 does not name a node (the graph has 2 nodes)");
  CHECK(message([] { (void)make_graph(std::vector<std::vector<int>>{{-1}}, unit_costs()); }) ==
        "node 'n0': successor -1 does not name a node (the graph has 1 nodes)");
  CHECK(message([] {
          cost_arrays c{{1, 1}, {1, 1}, {}, {"a", "a"}, {}, {}};
          (void)make_graph(std::vector<std::vector<int>>{{1}, {}}, c);
        }) == "duplicate node name 'a' (nodes 0 and 1)");
  const std::string cycle = message([] {
    cost_arrays c{{1, 1, 1, 1}, {1, 1, 1, 1}, {}, {"in", "p", "q", "r"}, {}, {}};
    (void)make_graph(std::vector<std::vector<int>>{{1}, {2}, {3}, {1}}, c);
  });
  CHECK(cycle.find("the graph has a cycle:") == 0);
  for (const char* name : {"'p'", "'q'", "'r'"}) CHECK(cycle.find(name) != std::string::npos);
  CHECK(cycle.find("'in'") == std::string::npos);
  CHECK(message([] {
          (void)make_graph(std::vector<std::vector<int>>{{}},
                           node_costs{[](std::size_t) { return -5; }, [](std::size_t) { return 1.0; }});
        }) == "node 'n0': output bytes is negative (-5)");
  CHECK(message([] {
          (void)make_graph(std::vector<std::vector<int>>{{}},
                           node_costs{[](std::size_t) { return 1.5; }, [](std::size_t) { return 1.0; }});
        }) == "node 'n0': output bytes must be a whole number of bytes in [0, 2^64)");
  CHECK(message([] {
          (void)make_graph(std::vector<std::vector<int>>{{1}, {}},
                           node_costs{[](std::size_t) { return std::uint64_t{1} << 62; },
                                      [](std::size_t) { return 1.0; }});
        }).find("node 'n1': sizes overflow 64 bits") == 0);
  CHECK(message([] {
          (void)make_graph(std::vector<std::vector<int>>{{}},
                           node_costs{[](std::size_t) { return 1; }, [](std::size_t) { return -1.0; }});
        }) == "node 'n0': time must be a finite non-negative number");
  CHECK(message([] {
          graph_builder b;
          node_spec x, y;
          x.name = "x";
          x.op = y.op = "input";
          y.name = "y";
          y.inputs = {0};
          b.add(x);
          b.add(y);
          (void)std::move(b).build();
        }) == "node 'y': a graph input cannot have inputs");
}

TEST_CASE("an order that is already topological is kept; otherwise smallest index first") {
  auto spec = [](const char* name, const char* op, std::vector<std::size_t> inputs) {
    node_spec s;
    s.name = name;
    s.op = op;
    s.inputs = std::move(inputs);
    return s;
  };
  graph_builder b;
  b.add(spec("late", "relu", {1}));
  b.add(spec("early", "conv2d", {2}));
  b.add(spec("x", "input", {}));
  const graph g = std::move(b).build();
  CHECK(g.node_name(0) == "x");
  CHECK(g.node_name(1) == "early");
  CHECK(g.node_name(2) == "late");
  CHECK(std::ranges::equal(g.inputs(2), std::vector<node_id>{1}));
}

}  // TEST_SUITE
