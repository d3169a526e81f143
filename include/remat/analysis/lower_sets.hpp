#pragma once

/// \file
/// Lower sets (downward-closed node sets) of a computation graph, the states of
/// the exact dynamic programmes.
///
/// A lower set L contains, with every node, all of its non-input operands.
/// Graph inputs belong to no lower set (they are always present). Enumeration
/// is a reverse search: the parent of a non-empty lower set W is W minus its
/// largest id (always a maximal element), so every lower set is produced
/// exactly once by adding "addable" nodes in increasing id order — O(n) memory
/// and O(deg) work per lower set.
///
/// Series decomposition. A *separator* is a node s such that every other
/// computed node is an ancestor or a descendant of s (no edge jumps over s, no
/// sink before it, no source after it). Separators cut the id order into
/// pieces, and every lower set is "all pieces before t, plus a lower set of
/// piece t". So the lower sets of series-composed pieces add up instead of
/// multiplying: count = 1 + Σ_t (count(piece t) − 1). Enumeration per piece
/// costs O(Σ_t count(piece t) · deg).

#include <remat/config.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <remat/graph/graph.hpp>
#include <remat/graph/node_set.hpp>
#include <remat/time_budget.hpp>

namespace remat {

/// Pieces between separators, as inclusive id ranges over the computed nodes.
struct series_decomposition {
  std::vector<node_id> separators;  ///< ascending; each is the last node of its piece
  struct piece {
    node_id first = 0, last = 0;  ///< inclusive id range (may contain graph inputs)
  };
  std::vector<piece> pieces;        ///< consecutive, covering every computed node
  std::vector<std::uint32_t> piece_of;  ///< piece index of each node (inputs: the piece of the next node)
};

/// Finds every separator in O(n + m).
inline series_decomposition decompose_series(const graph& g) {
  const std::size_t n = g.size();
  series_decomposition out;
  out.piece_of.assign(n, 0);
  if (n == 0) return out;
  // prefix: largest consumer of any computed node before v, and whether a sink came before.
  std::vector<char> ok(n, 0);
  node_id reach = 0;
  bool sink_before = false;
  for (node_id v = 0; v < n; ++v) {
    if (g.is_input(v)) continue;
    ok[v] = reach <= v && !sink_before;
    if (g.successors(v).empty()) sink_before = true;
    else reach = std::max(reach, g.successors(v).back());
  }
  // suffix: no source (a computed node with no computed operand) after v.
  bool source_after = false;
  for (std::size_t i = n; i-- > 0;) {
    const auto v = static_cast<node_id>(i);
    if (g.is_input(v)) continue;
    if (source_after) ok[v] = 0;
    bool source = true;
    for (node_id p : g.predecessors(v)) source = source && g.is_input(p);
    if (source) source_after = true;
  }
  node_id first = 0;
  node_id last_computed = 0;
  for (node_id v = 0; v < n; ++v)
    if (!g.is_input(v)) last_computed = v;
  for (node_id v = 0; v < n; ++v) {
    if (g.is_input(v) || !ok[v] || v == last_computed) continue;
    out.separators.push_back(v);
    out.pieces.push_back({first, v});
    first = v + 1;
  }
  out.pieces.push_back({first, static_cast<node_id>(n - 1)});
  for (std::uint32_t t = 0; t < out.pieces.size(); ++t)
    for (node_id v = out.pieces[t].first; v <= out.pieces[t].last; ++v) out.piece_of[v] = t;
  return out;
}

/// Extra "no later than" constraints between computed nodes. Order edges only:
/// no data flows along them.
struct precedence {
  std::vector<std::vector<node_id>> before;  ///< before[v]: nodes that must be in v's lower set
  std::vector<std::vector<node_id>> after;   ///< the reverse
  bool empty() const noexcept { return before.empty(); }
};

/// Constraints that keep gradient sums bit-for-bit: a value consumed by three
/// or more nodes accumulates their gradient contributions in the order their
/// backwards run, and float addition is not associative. Requiring each of
/// those consumers to be no later (in a lower-set chain) than the next one in
/// id order makes every stage plan run them in the same order as regular
/// training (reverse id order). Two consumers need nothing: a + b == b + a.
inline precedence gradient_order_constraints(const graph& g) {
  precedence out;
  out.before.resize(g.size());
  out.after.resize(g.size());
  for (node_id u = 0; u < g.size(); ++u) {
    const auto consumers = g.successors(u);
    if (g.is_input(u) || consumers.size() < 3) continue;
    for (std::size_t i = 0; i + 1 < consumers.size(); ++i) {
      out.before[consumers[i + 1]].push_back(consumers[i]);
      out.after[consumers[i]].push_back(consumers[i + 1]);
    }
  }
  for (auto& list : out.before) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
  for (auto& list : out.after) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
  return out;
}

struct lower_set_options {
  std::uint64_t max_count = std::uint64_t{1} << 24;  ///< stop after this many
  time_budget time;                                   ///< stop when it is spent
  /// Also close lower sets under these constraints (see gradient_order_constraints).
  const precedence* constraints = nullptr;
};

enum class enumeration_status { complete, cap_reached, time_limit_reached, stopped };

/// Work units 1,024 lower sets visited cost, charged to the budget as they
/// are (time_budget::charge).
inline constexpr std::uint64_t visit_work = 1024 * 30;

namespace detail {

/// Reverse search over the lower sets that extend a base lower set. The base
/// is given by a membership test; nodes above `limit` are never added. Hooks:
///   bool enter(node_id a)  — a was added (a is larger than every node added
///                            before it); return false to skip a's subtree;
///   void leave(node_id a)  — a is being removed.
/// The walk stops early when `stop()` returns true (checked at each enter).
class ideal_walker {
 public:
  explicit ideal_walker(const graph& g, const precedence* constraints = nullptr)
      : g_(g), constraints_(constraints && !constraints->empty() ? constraints : nullptr),
        missing_(g.size(), 0), stamp_(g.size(), 0) {}

  /// Walks the extensions of the base. Initially addable nodes are searched in
  /// [scan_from, limit]: the caller knows none lies below scan_from.
  template <class InBase, class Enter, class Leave, class Stop>
  void walk(InBase&& in_base, node_id scan_from, node_id limit, Enter&& enter, Leave&& leave, Stop&& stop) {
    ++generation_;
    // The candidate lists of the open frames lie end to end in pool_, deepest
    // last, so a step allocates nothing.
    pool_.clear();
    frames_.clear();
    for (node_id v = scan_from; v <= limit && v < g_.size(); ++v) {
      if (g_.is_input(v) || in_base(v)) continue;
      if (missing(v, in_base) == 0) pool_.push_back(v);
    }
    frames_.push_back({0, pool_.size(), 0, 0});
    while (!frames_.empty()) {
      frame& top = frames_.back();
      if (top.next == top.end) {
        if (frames_.size() > 1) undo(top.added, leave, in_base);
        pool_.resize(top.begin);
        frames_.pop_back();
        continue;
      }
      const node_id a = pool_[top.next++];
      if (stop()) return;
      // Add a: successors whose last missing operand was a become addable (they are > a).
      const std::size_t begin = pool_.size();
      for (std::size_t k = top.next; k < top.end; ++k) pool_.push_back(pool_[k]);
      auto release = [&](node_id s) {
        if (s <= limit && --missing(s, in_base) == 0)
          pool_.insert(std::lower_bound(pool_.begin() + static_cast<std::ptrdiff_t>(begin), pool_.end(), s), s);
      };
      for (node_id s : g_.successors(a)) release(s);
      if (constraints_)
        for (node_id s : constraints_->after[a]) release(s);
      if (!enter(a)) {
        undo(a, leave, in_base);
        pool_.resize(begin);
        continue;
      }
      frames_.push_back({begin, pool_.size(), begin, a});
    }
  }

 private:
  template <class InBase>
  std::uint32_t& missing(node_id v, InBase&& in_base) {
    if (stamp_[v] != generation_) {
      stamp_[v] = generation_;
      std::uint32_t count = 0;
      for (node_id p : g_.predecessors(v))
        if (!g_.is_input(p) && !in_base(p)) ++count;
      if (constraints_)
        for (node_id p : constraints_->before[v])
          if (!in_base(p)) ++count;
      missing_[v] = count;
    }
    return missing_[v];
  }
  template <class Leave, class InBase>
  void undo(node_id a, Leave&& leave, InBase&& in_base) {
    for (node_id s : g_.successors(a)) ++missing(s, in_base);
    if (constraints_)
      for (node_id s : constraints_->after[a]) ++missing(s, in_base);
    leave(a);
  }

  struct frame {
    std::size_t begin, end, next;  // candidates pool_[begin, end), the next to try
    node_id added;
  };

  const graph& g_;
  const precedence* constraints_;
  std::vector<std::uint32_t> missing_;
  std::vector<std::uint64_t> stamp_;
  std::uint64_t generation_ = 0;
  std::vector<node_id> pool_;
  std::vector<frame> frames_;
};

}  // namespace detail

/// Result of counting lower sets.
struct lower_set_count {
  std::uint64_t count = 0;                 ///< lower sets of the whole graph (∅ and all included)
  std::vector<std::uint64_t> per_piece;    ///< lower sets of each piece (∅ and the full piece included)
  enumeration_status status = enumeration_status::complete;
};

/// Counts the lower sets of `g` piece by piece (see decompose_series).
/// Complexity: O(Σ_t count(piece t) · deg). Stops at the cap or time limit.
inline lower_set_count count_lower_sets(const graph& g, const lower_set_options& options = {}) {
  const series_decomposition d = decompose_series(g);
  lower_set_count out;
  out.count = 1;
  detail::ideal_walker walker(g, options.constraints);
  std::uint64_t visited = 0;
  for (const auto& piece : d.pieces) {
    std::uint64_t here = 1;  // the empty extension
    auto in_base = [&](node_id v) { return v < piece.first; };
    auto stop = [&] {
      if (visited >= options.max_count) {
        out.status = enumeration_status::cap_reached;
        return true;
      }
      if ((visited & 1023) == 0 && options.time.charge(visit_work)) {
        out.status = enumeration_status::time_limit_reached;
        return true;
      }
      return false;
    };
    walker.walk(in_base, piece.first, piece.last, [&](node_id) { ++here, ++visited; return true; }, [](node_id) {}, stop);
    out.per_piece.push_back(here);
    out.count += here - 1;
    if (out.status != enumeration_status::complete) break;
  }
  return out;
}

/// Calls visit(const node_set&) for every lower set of `g` (∅ first), in an
/// order where every set comes after its parent. visit may return false to
/// stop. Complexity: O(count · (deg + n/64)) with the node_set maintained in place.
template <class Visit>
enumeration_status enumerate_lower_sets(const graph& g, Visit&& visit, const lower_set_options& options = {}) {
  node_set current(g.size());
  std::uint64_t visited = 1;
  if (!visit(static_cast<const node_set&>(current))) return enumeration_status::stopped;
  enumeration_status status = enumeration_status::complete;
  detail::ideal_walker walker(g, options.constraints);
  const node_id limit = static_cast<node_id>(g.size() - 1);
  walker.walk([](node_id) { return false; }, 0, limit,
              [&](node_id a) {
                current.insert(a);
                ++visited;
                if (!visit(static_cast<const node_set&>(current))) status = enumeration_status::stopped;
                return true;
              },
              [&](node_id a) { current.erase(a); },
              [&] {
                if (status != enumeration_status::complete) return true;
                if (visited >= options.max_count) {
                  status = enumeration_status::cap_reached;
                  return true;
                }
                if ((visited & 1023) == 0 && options.time.charge(visit_work)) {
                  status = enumeration_status::time_limit_reached;
                  return true;
                }
                return false;
              });
  return status;
}

}  // namespace remat
