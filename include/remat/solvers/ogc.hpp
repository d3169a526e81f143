#pragma once

/// \file
/// Feng & Huang's division-based checkpoint search (CVPR 2021, "OGC"), as
/// their reference solver works (../shared/docs/seed-algorithms.md), for
/// their objective (analysis/segments.hpp). It is the `ogc` method: fast, and optimal
/// only among the plans its division of the graph allows. ogc_exact.hpp
/// solves the same objective over all kept sets.
///
/// 1. **Division tree.** The graph between a virtual source (before every
///    node without a computed operand) and a virtual target (after every
///    output) is split recursively into single-entry single-exit *pieces*:
///    - `linear`: the piece has splitting vertices (on every entry→exit path:
///      no edge jumps over them in topological order, one O(n + m) pass); it
///      is cut at all of them into a chain of sub-pieces;
///    - `branch`: otherwise, when it falls apart into several parallel
///      components once its entry and exit are removed (a direct entry→exit
///      edge is one more);
///    - `complicate`: one component without splitting vertices (NAS cells).
///      For every pair (u, w) of candidate endpoints (entry, exit and every
///      vertex of degree above 2), the largest segment between them is the
///      set of vertices on u→w paths, shrunk until no inner vertex has an edge
///      leaving it; the segments, largest first, are picked when they share no
///      edge with those picked. Edges no segment covers become single-edge
///      pieces (the seed's solver stops with an error there).
///    A piece's cost is the bytes strictly inside it.
/// 2. **Candidate maxima**: every piece's cost and, inside each linear piece,
///    the bytes between every pair of its chain vertices.
/// 3. **For each candidate m**, F(piece, m) is the least checkpoint bytes
///    inside the piece such that everything re-run as a whole holds at most m
///    bytes: a sub-piece above m has both ends checkpointed and is solved
///    recursively; a run of small sub-pieces of a linear piece picks its
///    checkpoints by a shortest path over "accessibility" edges (i → j when
///    the bytes between chain vertices i and j are at most m), here in O(k)
///    with a sliding-window minimum; every inner endpoint of a branch or
///    complicate piece is a checkpoint.
/// 4. The answer is the kept set of the candidate with the least F + m.
///
/// Complexity: building the tree is O(C² · p) per complicate piece of p
/// vertices and C candidates, O(n + m) per level otherwise; the search is
/// O(|M| · tree size) for |M| candidate maxima (up to quadratic in the length
/// of a linear piece). A linear piece with more than 2·10⁵ pairs contributes
/// a geometric grid over its range (1% apart) instead of every pair, which
/// may miss the best pair by up to 1% of m; `division_stats::grid_terms`
/// says so.

#include <remat/config.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <numeric>
#include <utility>
#include <vector>

#include <remat/analysis/segments.hpp>
#include <remat/graph/graph.hpp>
#include <remat/graph/node_set.hpp>
#include <remat/plan/plan.hpp>
#include <remat/plan/solution.hpp>
#include <remat/solvers/common.hpp>
#include <remat/time_budget.hpp>

namespace remat {

/// The division tree's shape, for reports.
struct division_stats {
  std::uint64_t pieces = 0, linear = 0, branch = 0, complicate = 0;
  std::uint64_t max_terms = 0;        ///< candidate maxima listed
  std::uint64_t terms_tried = 0;      ///< of them, tried before the time limit (all without one)
  std::uint64_t uncovered_edges = 0;  ///< complicate edges no segment covered
  bool grid_terms = false;            ///< a linear piece was too long to list its pairs
  bool time_limit_reached = false;    ///< the time limit cut the division or the candidates short
  bool division_incomplete = false;   ///< the time limit stopped the segment search of a complicate piece
};

namespace detail {

class ogc_division {
 public:
  /// Once `time` is spent the division stops looking for segments: the edges
  /// no segment found so far covers become pieces of their own (a valid
  /// division, and so a valid plan, only a poorer one).
  explicit ogc_division(const graph& g, const time_budget& time = {}) : g_(g), time_(time) {
    const std::size_t n = g.size();
    source_ = static_cast<std::uint32_t>(n);
    target_ = static_cast<std::uint32_t>(n + 1);
    weight_.assign(n + 2, 0);
    local_.assign(n + 2, 0);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
    for (node_id v = 0; v < n; ++v) {
      if (g.is_input(v)) continue;
      if (!is_segment_endpoint(g, v)) weight_[v] = g.bytes(v);
      bool has_operand = false;
      for (node_id p : g.predecessors(v))
        if (!g.is_input(p)) {
          edges.emplace_back(p, v);
          has_operand = true;
        }
      if (!has_operand) edges.emplace_back(source_, v);
      if (g.successors(v).empty()) edges.emplace_back(v, target_);
    }
    root_ = build(source_, target_, std::move(edges));
  }

  // Least F + m over the candidate maxima; returns the kept set. Once `time`
  // is spent it stops with the best candidate tried: they are tried coarse
  // to fine (every 2^k-th of the sorted list, k falling), so a stopped search
  // has sampled the whole range evenly.
  node_set solve(const time_budget& time = {}) {
    std::vector<std::uint64_t> terms;
    std::uint64_t smallest = std::numeric_limits<std::uint64_t>::max(), largest = 0;
    for (const piece& p : pieces_) {
      terms.push_back(p.cost);
      if (p.kind != piece_kind::linear) continue;
      const std::size_t k = p.chain.size();
      if (k * (k - 1) / 2 > max_pair_terms) {
        // Too many pairs to list: their range, covered by a grid below.
        stats.grid_terms = true;
        std::uint64_t inner = 0;
        for (std::size_t j = 1; j < k; ++j) {
          const std::uint64_t piece_bytes = pieces_[p.children[j - 1]].cost;
          const std::uint64_t vertex_bytes = j + 1 < k ? weight_[p.chain[j]] : 0;
          for (std::uint64_t b : {piece_bytes, vertex_bytes})
            if (b > 0) smallest = std::min(smallest, b);
          inner += piece_bytes + vertex_bytes;
        }
        largest = std::max(largest, inner);
        continue;
      }
      for (std::size_t i = 0; i + 1 < k; ++i) {
        std::uint64_t inner = 0;
        for (std::size_t j = i + 1; j < k; ++j) {
          inner += pieces_[p.children[j - 1]].cost;
          terms.push_back(inner);
          inner += weight_[p.chain[j]];
        }
      }
    }
    if (stats.grid_terms)
      for (double m = static_cast<double>(std::max<std::uint64_t>(smallest, 1)); m < static_cast<double>(largest) * grid_ratio;
           m *= grid_ratio)
        terms.push_back(static_cast<std::uint64_t>(m));
    std::sort(terms.begin(), terms.end());
    terms.erase(std::unique(terms.begin(), terms.end()), terms.end());
    if (terms.size() > 1 && terms.front() == 0) terms.erase(terms.begin());
    stats.max_terms = terms.size();

    std::uint64_t best_total = std::numeric_limits<std::uint64_t>::max(), best_m = 0;
    std::size_t stride = 1;
    while (stride * 2 <= terms.size()) stride *= 2;
    bool stopped = false;
    for (std::size_t step = stride; step >= 1 && !stopped; step /= 2) {
      for (std::size_t i = step - 1; i < terms.size(); i += step) {
        if (step < stride && (i + 1) % (2 * step) == 0) continue;  // tried at a coarser step
        if (stats.terms_tried > 0 && time.charge(pieces_.size() * 20)) {
          stopped = stats.time_limit_reached = true;
          break;
        }
        ++stats.terms_tried;
        const std::uint64_t total = checkpoint_bytes(root_, terms[i], nullptr) + terms[i];
        if (total < best_total || (total == best_total && terms[i] < best_m)) {  // ties: the least m, as in order
          best_total = total;
          best_m = terms[i];
        }
      }
    }
    node_set kept(g_.size());
    checkpoint_bytes(root_, best_m, &kept);
    return kept;
  }

  division_stats stats;

 private:
  // A linear piece of k chain vertices has k(k−1)/2 candidate maxima; past
  // this many the search tries a geometric grid over their range instead
  // (1% apart), so a 10⁴-node chain is not a 5·10⁷-candidate loop.
  static constexpr std::size_t max_pair_terms = 200'000;
  static constexpr double grid_ratio = 1.01;

  enum class piece_kind { leaf, linear, branch, complicate };
  using edge_list = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

  struct piece {
    piece_kind kind = piece_kind::leaf;
    std::uint32_t entry = 0, exit = 0;
    std::uint64_t cost = 0;                 // bytes strictly inside
    std::vector<std::uint32_t> chain;       // linear: entry, splitting vertices, exit
    std::vector<std::size_t> children;      // sub-pieces (linear: in chain order)
  };

  std::uint64_t position(std::uint32_t v) const noexcept {
    return v == source_ ? 0 : v == target_ ? g_.size() + 1 : std::uint64_t{v} + 1;
  }

  std::size_t add(piece p) {
    pieces_.push_back(std::move(p));
    ++stats.pieces;
    return pieces_.size() - 1;
  }

  std::size_t build(std::uint32_t entry, std::uint32_t exit, edge_list edges) {
    std::vector<std::uint32_t> vertices;
    for (auto [u, v] : edges) {
      vertices.push_back(u);
      vertices.push_back(v);
    }
    std::sort(vertices.begin(), vertices.end(),
              [&](std::uint32_t a, std::uint32_t b) { return position(a) < position(b); });
    vertices.erase(std::unique(vertices.begin(), vertices.end()), vertices.end());
    piece p;
    p.entry = entry;
    p.exit = exit;
    for (std::uint32_t v : vertices)
      if (v != entry && v != exit) p.cost += weight_[v];
    if (vertices.size() <= 2) return add(std::move(p));

    // Splitting vertices: no edge of the piece jumps over them.
    std::vector<std::uint64_t> furthest(vertices.size(), 0);
    std::vector<std::size_t>& local = local_;  // used only before recursing
    for (std::size_t i = 0; i < vertices.size(); ++i) local[vertices[i]] = i;
    for (auto [u, v] : edges) furthest[local[u]] = std::max<std::uint64_t>(furthest[local[u]], local[v]);
    std::vector<std::uint32_t> chain{entry};
    std::uint64_t reach = furthest[0];
    for (std::size_t i = 1; i + 1 < vertices.size(); ++i) {
      if (reach <= i) chain.push_back(vertices[i]);
      reach = std::max(reach, furthest[i]);
    }
    chain.push_back(exit);
    if (chain.size() > 2) {
      p.kind = piece_kind::linear;
      ++stats.linear;
      std::vector<edge_list> parts(chain.size() - 1);
      std::size_t at = 0;
      // Edges sorted by their tail's position fall into consecutive parts.
      std::sort(edges.begin(), edges.end(), [&](const auto& a, const auto& b) { return local[a.first] < local[b.first]; });
      for (const auto& e : edges) {
        while (at + 1 < chain.size() - 1 && local[chain[at + 1]] <= local[e.first]) ++at;
        parts[at].push_back(e);
      }
      for (std::size_t i = 0; i < parts.size(); ++i) p.children.push_back(build(chain[i], chain[i + 1], std::move(parts[i])));
      p.chain = std::move(chain);
      return add(std::move(p));
    }

    // Components of the interior.
    std::vector<std::size_t> component(vertices.size());
    std::iota(component.begin(), component.end(), 0);
    auto find = [&](std::size_t x) {
      while (component[x] != x) x = component[x] = component[component[x]];
      return x;
    };
    for (auto [u, v] : edges)
      if (u != entry && v != exit) component[find(local[u])] = find(local[v]);
    std::vector<edge_list> groups;
    std::vector<std::size_t> group_of(vertices.size(), SIZE_MAX);
    edge_list direct;
    for (const auto& e : edges) {
      if (e.first == entry && e.second == exit) {
        direct.push_back(e);
        continue;
      }
      const std::size_t root = find(local[e.first == entry ? e.second : e.first]);
      if (group_of[root] == SIZE_MAX) {
        group_of[root] = groups.size();
        groups.emplace_back();
      }
      groups[group_of[root]].push_back(e);
    }
    if (!direct.empty()) groups.push_back(std::move(direct));
    if (groups.size() > 1) {
      p.kind = piece_kind::branch;
      ++stats.branch;
      for (edge_list& part : groups) p.children.push_back(build(entry, exit, std::move(part)));
      return add(std::move(p));
    }

    p.kind = piece_kind::complicate;
    ++stats.complicate;
    for (auto& [from, to, part] : largest_segments(entry, exit, vertices, local, edges))
      p.children.push_back(build(from, to, std::move(part)));
    return add(std::move(p));
  }

  struct segment {
    std::uint32_t from, to;
    edge_list edges;
  };

  // The seed's "largest independent segments" of a complicate piece, picked
  // largest first without sharing an edge; uncovered edges become segments
  // of their own.
  std::vector<segment> largest_segments(std::uint32_t entry, std::uint32_t exit,
                                        const std::vector<std::uint32_t>& vertices,
                                        const std::vector<std::size_t>& local, const edge_list& edges) {
    const std::size_t p = vertices.size();
    std::vector<std::vector<std::uint32_t>> out(p), in(p);
    for (auto [u, v] : edges) {
      out[local[u]].push_back(static_cast<std::uint32_t>(local[v]));
      in[local[v]].push_back(static_cast<std::uint32_t>(local[u]));
    }
    std::vector<std::uint32_t> candidates;
    for (std::uint32_t i = 0; i < p; ++i) {
      std::vector<std::uint32_t> neighbours = out[i];
      neighbours.insert(neighbours.end(), in[i].begin(), in[i].end());
      std::sort(neighbours.begin(), neighbours.end());
      const auto degree = std::unique(neighbours.begin(), neighbours.end()) - neighbours.begin();
      if (vertices[i] == entry || vertices[i] == exit || degree > 2) candidates.push_back(i);
    }
    // Descendants and ancestors of every candidate (local ids are topological).
    auto closure = [&](std::uint32_t start, const std::vector<std::vector<std::uint32_t>>& next) {
      node_set reached(p);
      std::vector<std::uint32_t> stack{start};
      reached.insert(start);
      while (!stack.empty()) {
        const std::uint32_t x = stack.back();
        stack.pop_back();
        for (std::uint32_t y : next[x])
          if (!reached.contains(y)) {
            reached.insert(y);
            stack.push_back(y);
          }
      }
      return reached;
    };
    std::vector<node_set> below, above;
    for (std::uint32_t c : candidates) {
      if (time_.charge((p + edges.size()) * 20)) break;
      below.push_back(closure(c, out));
      above.push_back(closure(c, in));
    }

    std::vector<segment> found;
    const auto entry_local = static_cast<std::uint32_t>(local[entry]);
    const auto exit_local = static_cast<std::uint32_t>(local[exit]);
    for (std::size_t a = 0; a < candidates.size(); ++a) {
      if (below.size() < candidates.size() || time_.charge(candidates.size() * (p / 64 + 1) * 20)) {
        stats.division_incomplete = stats.time_limit_reached = true;
        break;
      }
      for (std::size_t b = 0; b < candidates.size(); ++b) {
        const std::uint32_t u = candidates[a], w = candidates[b];
        if (u == w || (u == entry_local && w == exit_local) || !below[a].contains(w)) continue;
        node_set inside = below[a] & above[b];
        while (true) {
          bool shrunk = false;
          inside.for_each([&](std::size_t x) {
            if (x == u || x == w) return;
            auto leaves = [&](std::uint32_t y) { return !inside.contains(y); };
            if (std::any_of(out[x].begin(), out[x].end(), leaves) || std::any_of(in[x].begin(), in[x].end(), leaves)) {
              inside.erase(x);
              shrunk = true;
            }
          });
          if (!shrunk) break;
          // Keep only what still lies on a u→w path.
          node_set forward(p), backward(p);
          forward.insert(u);
          inside.for_each([&](std::size_t x) {
            if (x != u && std::any_of(in[x].begin(), in[x].end(), [&](std::uint32_t y) { return forward.contains(y); }))
              forward.insert(x);
          });
          backward.insert(w);
          const std::vector<std::size_t> members = inside.members();
          for (auto it = members.rbegin(); it != members.rend(); ++it)
            if (*it != w && std::any_of(out[*it].begin(), out[*it].end(),
                                        [&](std::uint32_t y) { return backward.contains(y); }))
              backward.insert(*it);
          inside &= forward;
          inside &= backward;
          if (!inside.contains(u) || !inside.contains(w)) break;
        }
        if (!inside.contains(u) || !inside.contains(w)) continue;
        segment s{vertices[u], vertices[w], {}};
        inside.for_each([&](std::size_t x) {
          for (std::uint32_t y : out[x])
            if (inside.contains(y)) s.edges.emplace_back(vertices[x], vertices[y]);
        });
        if (!s.edges.empty()) found.push_back(std::move(s));
      }
    }
    std::stable_sort(found.begin(), found.end(),
                     [](const segment& x, const segment& y) { return x.edges.size() > y.edges.size(); });
    std::vector<segment> picked;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> covered;
    auto is_covered = [&](const std::pair<std::uint32_t, std::uint32_t>& e) {
      return std::binary_search(covered.begin(), covered.end(), e);
    };
    for (segment& s : found) {
      if (std::any_of(s.edges.begin(), s.edges.end(), is_covered)) continue;
      covered.insert(covered.end(), s.edges.begin(), s.edges.end());
      std::sort(covered.begin(), covered.end());
      picked.push_back(std::move(s));
    }
    for (const auto& e : edges)
      if (!is_covered(e)) {
        ++stats.uncovered_edges;
        picked.push_back({e.first, e.second, {e}});
      }
    return picked;
  }

  // F(piece, m) + nothing: the checkpoint bytes strictly inside the piece;
  // adds the checkpoints to `kept` when given.
  std::uint64_t checkpoint_bytes(std::size_t at, std::uint64_t m, node_set* kept) const {
    const piece& p = pieces_[at];
    std::uint64_t total = 0;
    auto checkpoint = [&](std::uint32_t v) {
      if (v >= g_.size()) return;
      total += weight_[v];
      if (kept != nullptr && !is_segment_endpoint(g_, v)) kept->insert(v);
    };
    switch (p.kind) {
      case piece_kind::leaf: return 0;
      case piece_kind::branch:
      case piece_kind::complicate: {
        std::vector<std::uint32_t> ends;
        for (std::size_t c : p.children) {
          const piece& child = pieces_[c];
          for (std::uint32_t v : {child.entry, child.exit})
            if (v != p.entry && v != p.exit) ends.push_back(v);
          if (child.cost > m) total += checkpoint_bytes(c, m, kept);
        }
        std::sort(ends.begin(), ends.end());
        ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
        for (std::uint32_t v : ends) checkpoint(v);
        return total;
      }
      case piece_kind::linear: break;
    }
    const std::size_t k = p.chain.size();  // chain[0] = entry, chain[k-1] = exit
    std::vector<char> forced(k, 0);
    forced[0] = forced[k - 1] = 1;
    for (std::size_t i = 1; i < k; ++i)
      if (pieces_[p.children[i - 1]].cost > m) {
        forced[i - 1] = forced[i] = 1;
        total += checkpoint_bytes(p.children[i - 1], m, kept);
      }
    for (std::size_t i = 1; i + 1 < k; ++i)
      if (forced[i]) checkpoint(p.chain[i]);
    // Each run of small sub-pieces between forced chain vertices s and e.
    for (std::size_t s = 0; s + 1 < k;) {
      std::size_t e = s + 1;
      while (!forced[e]) ++e;
      if (e > s + 1) total += run_checkpoints(p, s, e, m, kept);
      s = e;
    }
    return total;
  }

  // Cheapest chain vertices strictly between s and e such that the bytes
  // between consecutive checkpoints stay within m: a shortest path over the
  // accessibility edges, with a sliding-window minimum (bytes between i and j
  // grow with j, so the i that reach j form a window).
  std::uint64_t run_checkpoints(const piece& p, std::size_t s, std::size_t e, std::uint64_t m, node_set* kept) const {
    const std::size_t len = e - s + 1;
    // before[j]: bytes from chain[s] (exclusive) to chain[s+j] (exclusive);
    // through[i]: the same up to and including chain[s+i].
    std::vector<std::uint64_t> before(len, 0), through(len, 0), dist(len, 0);
    std::vector<std::size_t> from(len, 0);
    for (std::size_t j = 1; j < len; ++j) {
      before[j] = through[j - 1] + pieces_[p.children[s + j - 1]].cost;
      through[j] = before[j] + weight_[p.chain[s + j]];
    }
    std::deque<std::size_t> window;  // indices with increasing dist
    std::size_t next_in = 0;
    for (std::size_t j = 1; j < len; ++j) {
      while (next_in < j) {
        while (!window.empty() && dist[window.back()] >= dist[next_in]) window.pop_back();
        window.push_back(next_in++);
      }
      while (before[j] - through[window.front()] > m) window.pop_front();
      from[j] = window.front();
      dist[j] = dist[window.front()] + (j + 1 < len ? weight_[p.chain[s + j]] : 0);
    }
    if (kept != nullptr)
      for (std::size_t j = from[len - 1]; j > 0; j = from[j])
        if (!is_segment_endpoint(g_, p.chain[s + j])) kept->insert(p.chain[s + j]);
    return dist[len - 1];
  }

  const graph& g_;
  time_budget time_;
  std::uint32_t source_ = 0, target_ = 0;
  std::vector<std::uint64_t> weight_;
  std::vector<std::size_t> local_;  // position within the piece being divided
  std::vector<piece> pieces_;
  std::size_t root_ = 0;
};

}  // namespace detail

/// What ogc_kept_set returns: the kept set and its objective, and the division.
struct ogc_solution : segment_solution {
  division_stats division;
};

/// Feng & Huang's division-based search for a kept set. Optimal among the
/// kept sets that follow its division tree (not in general: ogc_exact.hpp);
/// `optimal` is false and `lower_bound` is the trivial one (the largest
/// node). Once `time` is spent it stops the segment search of complicate
/// pieces (the edges not yet covered become pieces of their own) and then the
/// search over candidate maxima (the best one tried; at least one is), so a
/// kept set always comes back. Never throws for a valid graph.
inline ogc_solution ogc_kept_set(const graph& g, const time_budget& time = {}) {
  const auto start = std::chrono::steady_clock::now();
  detail::ogc_division search(g, time);
  ogc_solution out;
  out.kept = search.solve(time);
  out.stats.time_limit_reached = search.stats.time_limit_reached;
  out.cost = evaluate_segments(g, out.kept);
  out.lower_bound = largest_segment_node(g);
  out.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.division = search.stats;
  return out;
}

namespace detail {

// A kept set found for Feng & Huang's objective as a solution: the plan the
// simulator measures, with the objective and its bound.
inline solution segment_plan_solution(const graph& g, const segment_solution& found, std::string method,
                                      std::uint64_t budget, std::uint64_t floor,
                                      std::vector<search_count> counts) {
  solution s = solution_of_plan(g, plan::from_kept(g, found.kept, std::move(method)), budget, floor);
  s.objective = static_cast<double>(found.cost.total());
  s.objective_lower_bound = static_cast<double>(found.lower_bound);
  s.stats.counts = std::move(counts);
  return s;
}

// Feng & Huang's objective and its parts, for messages.
inline std::string segment_figure(const segment_cost& cost) {
  return std::to_string(cost.total()) + " bytes (kept " + std::to_string(cost.kept_bytes) + " + largest segment " +
         std::to_string(cost.largest_segment) + ")";
}

}  // namespace detail

struct ogc_options {
  std::uint64_t budget = no_budget;  ///< above it the plan is `infeasible`
  time_budget time;
  std::optional<std::uint64_t> per_op_floor = std::nullopt;  ///< the graph's, when the caller knows it
};

/// The method `ogc`: the plan of ogc_kept_set's kept set, `feasible` (its
/// guarantee is over plans that follow the division tree, for Feng & Huang's
/// objective, not the simulated peak).
inline solution solve_ogc(const graph& g, const ogc_options& options = {}) {
  const std::uint64_t floor = per_op_floor_of(g, options.per_op_floor);
  const ogc_solution division = ogc_kept_set(g, options.time);
  solution s = detail::segment_plan_solution(
      g, division, "ogc", options.budget, floor,
      {{"division pieces", division.division.pieces}, {"candidate maxima", division.division.max_terms}});
  s.stats.time_limit_reached = division.stats.time_limit_reached;
  if (s.status == solve_status::infeasible) return s;
  s.message = "Feng & Huang's objective " + detail::segment_figure(division.cost) +
              ", optimal only among plans that follow their division tree";
  if (division.division.time_limit_reached)
    s.message += " (" + std::string(options.time.spent_on()) + " reached" +
                 (division.division.division_incomplete
                      ? " while dividing the graph: the plan follows an incomplete division)"
                      : ": the best of the candidate maxima tried, spread evenly over their range)");
  return s;
}

}  // namespace remat
