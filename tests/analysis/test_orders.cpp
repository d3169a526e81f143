// Execution orders: the builders run any topological order exactly as the
// graph renumbered to that order runs its id order; the consumers-first order
// is a valid order that keeps the gradient-order constraints; bad orders are
// refused by name.

#include <doctest/doctest.h>

#include <random>

#include <remat/analysis/orders.hpp>
#include <remat/plan/schedule.hpp>
#include <remat/plan/simulate.hpp>

#include "../support/random_graphs.hpp"
#include "../support/small_graphs.hpp"

using namespace remat;

namespace {

// A random topological order: Kahn's algorithm taking a random ready node.
std::vector<node_id> random_order(const graph& g, std::mt19937_64& rng) {
  std::vector<std::size_t> waiting(g.size());
  std::vector<node_id> ready, order;
  for (node_id v = 0; v < g.size(); ++v)
    if ((waiting[v] = g.predecessors(v).size()) == 0) ready.push_back(v);
  while (!ready.empty()) {
    const std::size_t pick = rng() % ready.size();
    const node_id v = ready[pick];
    ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(pick));
    order.push_back(v);
    for (node_id s : g.successors(v))
      if (--waiting[s] == 0) ready.push_back(s);
  }
  return order;
}

schedule mapped(schedule steps, const std::vector<node_id>& order) {
  for (step& s : steps) s.node = order[s.node];
  return steps;
}

bool keeps_constraints(const graph& g, const std::vector<node_id>& order, const precedence& constraints) {
  std::vector<std::size_t> position(g.size());
  for (std::size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  for (node_id v = 0; v < g.size(); ++v) {
    for (node_id s : g.successors(v))
      if (position[s] < position[v]) return false;
    for (node_id s : constraints.after[v])
      if (position[s] < position[v]) return false;
  }
  return true;
}

// w feeds three readers; r1 -> s1 shrinks it, r2 -> s2 does too, r3 never
// does. u is unrelated, between w and its readers in id order.
graph fan() {
  return test::build("fan", {{"x", "input", {}, 10},
                             {"w", "conv2d", {"x"}, 100, backward_reads::inputs},
                             {"u", "conv2d", {"x"}, 10, backward_reads::inputs},
                             {"r1", "relu", {"w"}, 100, backward_reads::output},
                             {"r2", "relu", {"w"}, 100, backward_reads::output},
                             {"r3", "relu", {"w"}, 100, backward_reads::output},
                             {"s1", "conv2d", {"r1"}, 20, backward_reads::inputs},
                             {"s2", "conv2d", {"r2"}, 20, backward_reads::inputs},
                             {"s3", "conv2d", {"r3"}, 100, backward_reads::inputs},
                             {"y", "add", {"s1", "s2", "s3", "u"}, 100}});
}

// On 300 random DAGs, `order_of` gives as many nodes as the graph has, each after its operands
// and within the gradient-order constraints, and the same order every time.
template <class OrderOf>
void check_on_random_dags(OrderOf order_of) {
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    const graph r = test::random_dag(3 + seed % 40, seed, 2 + seed % 6, 1 + seed % 3);
    const precedence constraints = gradient_order_constraints(r);
    const std::vector<node_id> o = order_of(r, constraints);
    REQUIRE(o.size() == r.size());
    CHECK(keeps_constraints(r, o, constraints));
    CHECK(o == order_of(r, constraints));
  }
}

}  // namespace

TEST_SUITE("execution order") {

TEST_CASE("a schedule in any order is the reordered graph's schedule, step for step (400 random graphs)") {
  std::mt19937_64 rng(3);
  for (std::uint64_t seed = 1; seed <= 400; ++seed) {
    const graph g = test::random_dag(3 + seed % 25, seed, 2 + seed % 6, 1 + seed % 3);
    const std::vector<node_id> order = random_order(g, rng);
    const graph h = reorder_graph(g, order);
    REQUIRE(h.size() == g.size());
    for (std::size_t k = 0; k < order.size(); ++k) {
      CHECK(h.node_name(k) == g.node_name(order[k]));
      CHECK(h.bytes(k) == g.bytes(order[k]));
      CHECK(h.reads(k) == g.reads(order[k]));
      CHECK(h.params(k) == g.params(order[k]));
      CHECK(h.inputs(k).size() == g.inputs(order[k]).size());
      for (std::size_t i = 0; i < h.inputs(k).size(); ++i) CHECK(order[h.inputs(k)[i]] == g.inputs(order[k])[i]);
    }
    const std::vector<std::uint32_t> stage = test::random_stages(g, rng);
    std::vector<std::uint32_t> stage_in_h(g.size());
    node_set keep(g.size()), keep_in_h(g.size());
    for (std::size_t k = 0; k < order.size(); ++k) {
      stage_in_h[k] = stage[order[k]];
      if (rng() % 2) {
        keep.insert(order[k]);
        keep_in_h.insert(k);
      }
    }
    const schedule staged = schedule_from_stages(g, stage, order);
    CHECK(staged == mapped(schedule_from_stages(h, stage_in_h), order));
    const schedule kept = schedule_from_kept(g, keep, order);
    CHECK(kept == mapped(schedule_from_kept(h, keep_in_h), order));
    CHECK(simulate(g, staged).peak_bytes == simulate(h, schedule_from_stages(h, stage_in_h)).peak_bytes);
    // No order and the id order are the same thing.
    std::vector<node_id> ids(g.size());
    for (node_id v = 0; v < g.size(); ++v) ids[v] = v;
    CHECK(schedule_from_stages(g, stage) == schedule_from_stages(g, stage, ids));
    CHECK(schedule_from_kept(g, keep) == schedule_from_kept(g, keep, ids));
  }
}

TEST_CASE("an order that is not a topological order of every node is refused, naming the node") {
  const graph g = test::chain();  // x -> a -> b -> c
  const std::vector<std::uint32_t> stage(g.size(), 0);
  const node_id x = *g.find("x"), a = *g.find("a"), b = *g.find("b"), c = *g.find("c");
  CHECK_THROWS_WITH_AS((void)schedule_from_stages(g, stage, std::vector<node_id>{x, b, a, c}),
                       "execution order runs 'b' before its operand 'a'", error);
  CHECK_THROWS_WITH_AS((void)schedule_from_stages(g, stage, std::vector<node_id>{x, a, a, c}),
                       "execution order runs 'a' twice", error);
  CHECK_THROWS_WITH_AS((void)schedule_from_kept(g, node_set(g.size()), std::vector<node_id>{x, a}),
                       "execution order has 2 nodes; the graph has 4", error);
  CHECK_THROWS_WITH_AS((void)reorder_graph(g, std::vector<node_id>{x, a, b, 9}),
                       "execution order names node id 9; the graph has 4 nodes", error);
}

TEST_CASE("the consumers-first order runs a value's readers until they shrink it, and keeps the gradient order") {
  const graph g = fan();
  const std::vector<node_id> order = consumers_first_order(g, gradient_order_constraints(g));
  std::vector<std::string> names;
  for (node_id v : order) names.push_back(g.node_name(v));
  CHECK(names == std::vector<std::string>{"x", "w", "r1", "s1", "r2", "s2", "u", "r3", "s3", "y"});
  CHECK(keeps_constraints(g, order, gradient_order_constraints(g)));

  // A chain has nothing to pull: its order is the id order.
  CHECK(is_id_order(consumers_first_order(test::chain())));

  check_on_random_dags([](const graph& r, const precedence& c) { return consumers_first_order(r, c); });
}

TEST_CASE("the last-written-first order runs the ready node the file lists last, and keeps the gradient order") {
  // A U-Net's skip: `crop` reads `a` but is written after the deeper branch.
  const graph skip = test::build("skip", {{"x", "input", {}, 10},
                                          {"a", "conv2d", {"x"}, 100, backward_reads::inputs},
                                          {"pool", "maxpool", {"a"}, 25, backward_reads::inputs},
                                          {"deep", "conv2d", {"pool"}, 25, backward_reads::inputs},
                                          {"crop", "crop", {"a"}, 50},
                                          {"y", "concat", {"crop", "deep"}, 75}});
  auto names = [](const graph& g, const std::vector<node_id>& order) {
    std::vector<std::string> out;
    for (node_id v : order) out.push_back(g.node_name(v));
    return out;
  };
  CHECK(names(skip, last_written_first_order(skip)) ==
        std::vector<std::string>{"x", "a", "crop", "pool", "deep", "y"});

  // w's three readers keep their id order (gradient_order_constraints), each
  // followed by what it makes ready; u, written after w, runs before it.
  const graph readers = fan();
  const precedence fan_constraints = gradient_order_constraints(readers);
  CHECK(names(readers, last_written_first_order(readers, fan_constraints)) ==
        std::vector<std::string>{"x", "u", "w", "r1", "s1", "r2", "s2", "r3", "s3", "y"});
  CHECK(names(readers, last_written_first_order(readers)) ==
        std::vector<std::string>{"x", "u", "w", "r3", "s3", "r2", "s2", "r1", "s1", "y"});

  CHECK(is_id_order(last_written_first_order(test::chain())));
  check_on_random_dags([](const graph& r, const precedence& c) { return last_written_first_order(r, c); });
}

TEST_CASE("the fewest-gradients order runs backward first what adds the fewest gradient bytes") {
  // Two branches from x, p (large) and q (small), each shrunk before y. In
  // the graph's order the backward reaches p2 before q, holding q's gradient
  // beside p's (120 bytes); backward first where it adds least, q's backward
  // runs before p2's, which then holds p's gradient alone beside its own (110).
  const graph g = test::build("branches", {{"x", "input", {}, 10},
                                           {"p", "conv2d", {"x"}, 100, backward_reads::inputs},
                                           {"q", "conv2d", {"x"}, 10, backward_reads::inputs},
                                           {"p2", "conv2d", {"p"}, 10, backward_reads::inputs},
                                           {"q2", "conv2d", {"q"}, 10, backward_reads::inputs},
                                           {"y", "add", {"p2", "q2"}, 10}});
  std::vector<std::string> names;
  for (node_id v : fewest_gradients_order(g)) names.push_back(g.node_name(v));
  CHECK(names == std::vector<std::string>{"x", "p", "p2", "q", "q2", "y"});
  CHECK(is_id_order(fewest_gradients_order(test::chain())));
  check_on_random_dags([](const graph& r, const precedence& c) { return fewest_gradients_order(r, c); });
}

}  // TEST_SUITE
