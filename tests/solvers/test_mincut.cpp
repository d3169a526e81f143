// The max-flow / min-cut primitive against hand-worked networks and a
// brute-force minimum over every source–sink partition; the closure problem
// on it against every choice.

#include <doctest/doctest.h>

#include <optional>
#include <random>
#include <utility>
#include <vector>

#include <remat/analysis/max_flow.hpp>
#include <remat/error.hpp>

using namespace remat;

TEST_SUITE("min_cut") {

TEST_CASE("a hand-worked network: value, cut edges, flows within capacity and conserved") {
  // s=0, a=1, b=2, t=3. Paths s-a-t (2), s-b-t (2) and s-a-b-t (1 more via a-b):
  // the cut {s,a} | {b,t} crosses s-b (2), a-t (2), a-b (5) = 9; the least is
  // {s} | rest = 3 + 2 = 5.
  flow_network net(4);
  const std::size_t sa = net.add_edge(0, 1, 3), sb = net.add_edge(0, 2, 2);
  net.add_edge(1, 2, 5);
  net.add_edge(1, 3, 2);
  net.add_edge(2, 3, 3);
  const min_cut_result cut = min_cut(net, 0, 3);
  REQUIRE(cut.bounded());
  CHECK(cut.value == 5);
  CHECK(cut.cut_edges == std::vector<std::size_t>{sa, sb});
  CHECK(cut.source_side == std::vector<char>{1, 0, 0, 0});
  std::vector<long long> balance(4, 0);
  for (std::size_t e = 0; e < net.num_edges(); ++e) {
    CHECK(cut.flow[e] <= net.edge_capacity(e));
    balance[net.edge_from(e)] -= static_cast<long long>(cut.flow[e]);
    balance[net.edge_to(e)] += static_cast<long long>(cut.flow[e]);
  }
  CHECK(balance[1] == 0);
  CHECK(balance[2] == 0);
  CHECK(balance[3] == 5);
}

TEST_CASE("unbounded edges are never cut; a path of them means no finite cut") {
  flow_network net(3);
  net.add_edge(0, 1, unbounded_capacity);
  net.add_edge(1, 2, 7);
  CHECK(min_cut(net, 0, 2).value == 7);
  net.add_edge(0, 2, unbounded_capacity);
  CHECK_FALSE(min_cut(net, 0, 2).bounded());
}

TEST_CASE("bad endpoints are errors, not crashes") {
  flow_network net(2);
  CHECK_THROWS_AS(net.add_edge(0, 2, 1), error);
  CHECK_THROWS_AS((void)min_cut(net, 0, 0), error);
  CHECK_THROWS_AS((void)min_cut(net, 0, 5), error);
  CHECK(min_cut(net, 0, 1).value == 0);  // nothing connects them
}

TEST_CASE("random networks: the flow value equals the cheapest partition, and the cut found has that capacity") {
  std::mt19937_64 rng(42);
  for (int round = 0; round < 500; ++round) {
    const std::size_t n = 2 + rng() % 8;
    flow_network net(n);
    const std::size_t edges = rng() % (n * n);
    for (std::size_t e = 0; e < edges; ++e) {
      const std::size_t u = rng() % n, v = rng() % n;
      if (u != v) net.add_edge(u, v, rng() % 4 == 0 ? unbounded_capacity : rng() % 20);
    }
    capacity best = unbounded_capacity;
    for (std::uint64_t mask = 0; mask < (1ULL << n); ++mask) {
      if (!(mask & 1) || (mask >> (n - 1) & 1)) continue;  // source 0 in, sink n-1 out
      capacity c = 0;
      for (std::size_t e = 0; e < net.num_edges() && c != unbounded_capacity; ++e)
        if ((mask >> net.edge_from(e) & 1) && !(mask >> net.edge_to(e) & 1))
          c = net.edge_capacity(e) == unbounded_capacity ? unbounded_capacity : c + net.edge_capacity(e);
      best = std::min(best, c);
    }
    const min_cut_result cut = min_cut(net, 0, n - 1);
    REQUIRE(cut.value == best);
    if (!cut.bounded()) continue;
    capacity across = 0;
    for (std::size_t e : cut.cut_edges) across += net.edge_capacity(e);
    CHECK(across == best);
    CHECK(cut.source_side[0] == 1);
    CHECK(cut.source_side[n - 1] == 0);
  }
}

TEST_CASE("closure_network: the least weight of a closed choice, against every choice") {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 500; ++round) {
    const std::size_t n = 1 + rng() % 8;
    closure_network closure;
    std::vector<std::int64_t> weight(n);
    std::vector<std::pair<std::size_t, std::size_t>> implies;  // chosen x ⇒ chosen y
    std::uint64_t forced = 0, barred = 0;
    for (std::size_t x = 0; x < n; ++x) {
      const std::size_t node = closure.net.add_node();
      weight[x] = static_cast<std::int64_t>(rng() % 21) - 10;
      closure.weigh(node, weight[x]);
      if (rng() % 8 == 0) forced |= 1ULL << x;
      else if (rng() % 8 == 0) barred |= 1ULL << x;
    }
    const std::int64_t offset = static_cast<std::int64_t>(rng() % 5);
    closure.constant += offset;
    for (std::size_t e = rng() % (2 * n + 1); e > 0; --e) {
      const std::size_t x = rng() % n, y = rng() % n;
      if (x == y) continue;
      implies.emplace_back(x, y);
      closure.net.add_edge(x + 2, y + 2, unbounded_capacity);
    }
    for (std::size_t x = 0; x < n; ++x) {
      if (forced >> x & 1) closure.net.add_edge(closure_network::source, x + 2, unbounded_capacity);
      if (barred >> x & 1) closure.net.add_edge(x + 2, closure_network::sink, unbounded_capacity);
    }
    std::optional<std::int64_t> best;
    for (std::uint64_t mask = 0; mask < (1ULL << n); ++mask) {
      if ((mask & forced) != forced || (mask & barred) != 0) continue;
      bool closed = true;
      for (auto [x, y] : implies) closed = closed && (!(mask >> x & 1) || (mask >> y & 1));
      if (!closed) continue;
      std::int64_t sum = offset;
      for (std::size_t x = 0; x < n; ++x)
        if (mask >> x & 1) sum += weight[x];
      best = best ? std::min(*best, sum) : sum;
    }
    if (!best) continue;  // no closed choice: the cut is unbounded
    CAPTURE(round);
    CHECK(closure.least() == *best);
  }
}

}  // TEST_SUITE
