// Lower bounds (analysis/bounds.hpp): the gradients pending at each node's
// backward, the least over every order the backwards can run in.

#include <doctest/doctest.h>

#include <remat/analysis/bounds.hpp>
#include <remat/zoo/models.hpp>

#include "../support/random_graphs.hpp"
#include "../support/small_graphs.hpp"

using namespace remat;

namespace {

// The least, over every set of done backwards B (an upper set holding v and
// its descendants, none of its ancestors), of the gradient buffers of nodes
// outside B with a consumer in B, v's operands aside, plus the parameter
// gradients of B's nodes other than v and its descendants. Exponential in
// the nodes beside v.
std::uint64_t least_pending_by_enumeration(const graph& g, node_id v) {
  const std::size_t n = g.size();
  std::vector<char> ancestor(n, 0), descendant(n, 0), operand(n, 0);
  for (node_id u = v + 1; u < n; ++u)
    for (node_id p : g.predecessors(u)) descendant[u] |= p == v || descendant[p];
  ancestor[v] = 1;
  for (node_id u = v + 1; u-- > 0;)
    if (ancestor[u])
      for (node_id p : g.predecessors(u)) ancestor[p] = 1;
  ancestor[v] = 0;
  for (node_id p : g.predecessors(v)) operand[p] = 1;
  std::vector<node_id> beside;
  for (node_id u = 0; u < n; ++u)
    if (u != v && !ancestor[u] && !descendant[u] && !g.is_input(u)) beside.push_back(u);
  REQUIRE(beside.size() < 20);
  std::uint64_t least = std::numeric_limits<std::uint64_t>::max();
  for (std::uint64_t mask = 0; mask < (std::uint64_t{1} << beside.size()); ++mask) {
    std::vector<char> done(descendant);
    done[v] = 1;
    for (std::size_t i = 0; i < beside.size(); ++i) done[beside[i]] = (mask >> i) & 1U;
    bool upper = true;
    for (node_id u = 0; u < n; ++u)
      for (node_id c : g.successors(u)) upper = upper && (!done[u] || done[c]);
    if (!upper) continue;
    std::uint64_t held = 0;
    for (node_id u = 0; u < n; ++u) {
      if (g.is_input(u)) continue;
      const auto consumers = g.successors(u);
      const bool allocated = std::any_of(consumers.begin(), consumers.end(), [&](node_id c) { return done[c] != 0; });
      if (!done[u] && allocated && !operand[u]) held += g.bytes(u);
      if (done[u] && u != v && !descendant[u]) held += g.params(u);
    }
    least = std::min(least, held);
  }
  return least;
}

// x feeds two branches, a → b and p → q, that meet at d.
graph two_branches(std::uint64_t p_params) {
  return test::build("two branches", {{"x", "input", {}, 10},
                                      {"a", "conv2d", {"x"}, 100, backward_reads::inputs, 4},
                                      {"b", "relu", {"a"}, 100, backward_reads::output},
                                      {"p", "conv2d", {"x"}, 60, backward_reads::inputs, p_params},
                                      {"q", "relu", {"p"}, 30, backward_reads::output},
                                      {"d", "add", {"b", "q"}, 100},
                                      {"e", "loss", {"d"}, 8, backward_reads::inputs}});
}

}  // namespace

TEST_CASE("pending gradients beside a branch: the cheapest state of the other branch") {
  // At b's backward, d's is done. Either q's is not (q's gradient, 30 bytes,
  // is pending), or q's is and p's is not (p's gradient, 60), or both are
  // (p's parameter gradient).
  SUBCASE("p's parameter gradient is the least") {
    const graph g = two_branches(4);
    const backward_floor floors = backward_floors(g);
    CHECK(floors.pending[*g.find("b")] == 4);
    CHECK(floors.pending[*g.find("a")] == 4);
    // At q's backward: a's parameter gradient (4) beats b's gradient (100).
    CHECK(floors.pending[*g.find("q")] == 4);
  }
  SUBCASE("q's gradient is the least") {
    const graph g = two_branches(40);
    const backward_floor floors = backward_floors(g);
    CHECK(floors.pending[*g.find("b")] == 30);
    CHECK(floors.pending[*g.find("a")] == 30);
  }
}

TEST_CASE("pending gradients on random DAGs: the least over every order of the backwards") {
  std::size_t nodes = 0, beside_counted = 0;
  for (std::uint64_t seed = 0; seed < 1000; ++seed) {
    const graph g = test::random_dag(3 + seed % 12, seed, 2 + seed % 5, 1 + seed % 3);
    CAPTURE(seed);
    const backward_floor floors = backward_floors(g);
    for (node_id v = 0; v < g.size(); ++v) {
      if (g.is_input(v)) continue;
      CAPTURE(v);
      CHECK(floors.pending[v] == least_pending_by_enumeration(g, v));
      ++nodes;
      beside_counted += floors.pending[v] > 0;
    }
  }
  MESSAGE(beside_counted << " of " << nodes << " backwards hold pending gradients");
  CHECK(beside_counted > nodes / 4);
}

TEST_CASE("pending gradients lift the NAS networks' per-op floor") {
  // Figures of 2026-11-28; before, counting only ancestors' gradients, the
  // floors were 171,947,888, 114,715,376 and 144,429,632 bytes.
  CHECK(per_op_floor(zoo::build("nasnet-cifar10")).bytes == 185'348'816);
  CHECK(per_op_floor(zoo::build("amoebanet-cifar10")).bytes == 132'924'176);
  CHECK(per_op_floor(zoo::build("darts-cifar10")).bytes == 153'941'984);
}
