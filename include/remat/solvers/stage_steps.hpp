#pragma once

/// \file
/// The steps schedule_from_stages takes for one stage's nodes (forward,
/// recompute, backward) on stamped per-node flags, each adding to a running
/// memory figure (stage_steps), and what a run of them does to that figure
/// (phase_effect). stage_evaluator composes them into stage costs.

#include <remat/config.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include <remat/graph/graph.hpp>

namespace remat::detail {

// A run of steps seen from the memory it starts at: the highest it reaches
// above it, and where it ends (modulo 2⁶⁴, so a fall wraps and adds back;
// comparisons between rises are signed for the same reason).
struct phase_effect {
  std::uint64_t rise = 0, net = 0;
  bool any = false;
  void apply(std::uint64_t& memory, std::uint64_t& peak) const {
    if (any) peak = std::max(peak, memory + rise);
    memory += net;
  }
  // this run, then `next`
  phase_effect then(const phase_effect& next) const {
    if (!next.any) return {rise, net + next.net, any};
    const std::uint64_t later = net + next.rise;
    const bool higher = !any || static_cast<std::int64_t>(later) > static_cast<std::int64_t>(rise);
    return {higher ? later : rise, net + next.net, true};
  }
};

class stage_steps {
 public:
  /// Stage and frontier nodes walked so far, a measure of the work done
  /// (time_budget::charge).
  std::uint64_t nodes_walked() const noexcept { return nodes_walked_; }

 protected:
  explicit stage_steps(const graph& g)
      : g_(g), mark_(g.size(), 0), pending_(g.size(), 0), release_(g.size(), 0), last_consumer_(g.size(), 0) {
    first_reader_.assign(g.size(), no_reader);
    read_by_backward_.assign(g.size(), 0);
    for (node_id v = 0; v < g.size(); ++v) {
      if (!g.successors(v).empty()) last_consumer_[v] = g.successors(v).back();
      for (node_id s : g.successors(v))
        if (reads_inputs(g.reads(s))) {
          first_reader_[v] = s;
          break;
        }
      read_by_backward_[v] = g.read_by_backward(v) ? 1 : 0;
    }
  }

  enum : std::uint8_t { in_stage = 1, kept = 2, alive = 4, grad = 8, recomputed = 16 };
  static constexpr std::uint64_t never = std::numeric_limits<std::uint64_t>::max();
  // Effects are measured from a high base so that falls below the start stay representable.
  static constexpr std::uint64_t base = std::uint64_t{1} << 62;

  // Consumers of a stage node outside L ∪ V (none can be in L).
  std::uint32_t consumers_outside(node_id v) const {
    std::uint32_t outside = 0;
    for (node_id s : g_.successors(v)) outside += in_v(s) ? 0 : 1;
    return outside;
  }

  // Stage nodes (all already marked in_stage): which are kept for later
  // stages, their parameter bytes, and what they hold when the backward starts.
  template <class Outside>
  void enter_nodes(std::span<const node_id> nodes, Outside&& outside_of, std::uint64_t& kept_added,
                   std::uint64_t& params, std::uint64_t& start) {
    for (node_id v : nodes) {
      params += g_.params(v);
      const std::uint32_t outside = outside_of(v);
      if ((g_.successors(v).empty() && reads_output(g_.reads(v))) || outside > 0) {
        mark(v, kept);
        kept_added += g_.bytes(v);
      }
      stage_node_start(v, static_cast<std::uint32_t>(g_.successors(v).size()) - outside, start);
    }
  }

  // Recomputes the marked nodes among `nodes`, in order; whether there were any.
  bool recompute_phase(std::span<const node_id> nodes, std::uint64_t& cur, std::uint64_t& peak, double& time) {
    bool any = false;
    for (node_id x : nodes)
      if (has(x, recomputed)) {
        recompute_step(x, cur, peak);
        time += g_.time(x);
        any = true;
      }
    return any;
  }

  static phase_effect effect(std::uint64_t end, std::uint64_t peak, bool any) {
    return phase_effect{any ? peak - base : 0, end - base, any};
  }

  // A node of L read by the stage (`waiting`: its consumers in L ∪ V): its
  // gradient buffer if a consumer is already done, and whether it stays alive.
  void frontier_start(node_id u, std::uint32_t waiting, std::uint64_t& cur, std::uint64_t& released) {
    if (waiting < g_.successors(u).size()) {
      cur += g_.bytes(u);
      mark(u, grad);
    }
    if (waiting == 0 && !reads_output(g_.reads(u))) {
      released += g_.bytes(u);
    } else {
      mark(u, alive);
      pending_[u] = waiting;
    }
  }

  // A stage node (`waiting`: its consumers in V) at the start of the backward.
  void stage_node_start(node_id v, std::uint32_t waiting, std::uint64_t& cur) {
    pending_[v] = waiting;
    if (waiting < g_.successors(v).size()) {
      cur += g_.bytes(v);
      mark(v, grad);
    }
    if (has(v, kept) && (reads_output(g_.reads(v)) || waiting > 0)) {
      cur += g_.bytes(v);
      mark(v, alive);
    }
  }

  void decide(node_id x) {
    if (!has(x, kept) && needed(x)) mark(x, recomputed);
  }

  bool in_v(node_id u) const {
    return has(u, in_stage) || (middle_lo_ <= u && u <= middle_hi_ && !g_.is_input(u));
  }

  // The steps below run for every node of every stage evaluated; called out of
  // line they cost the exact programme about a sixth of its time on graphs
  // without whole pieces, hence always_inline.
  // Only nodes up to walked_last_ (the largest node walked one by one) can be
  // marked in this evaluation, and successors are sorted.
  [[gnu::always_inline]] bool needed(node_id x) const {
    if (read_by_backward_[x]) return true;
    for (node_id s : g_.successors(x)) {
      if (s > walked_last_) break;
      if (has(s, recomputed)) return true;
    }
    return false;
  }

  // release_[x]: the backward after which x dies, or (as x + n) the recompute
  // after which it dies.
  [[gnu::always_inline]] void set_release(node_id x) {
    if (reads_output(g_.reads(x))) {
      release_[x] = x;
      return;
    }
    if (first_reader_[x] != no_reader) {
      release_[x] = first_reader_[x];
      return;
    }
    node_id last_recompute = 0;
    const auto consumers = g_.successors(x);
    for (auto s = consumers.rbegin(); s != consumers.rend(); ++s)
      if (*s <= walked_last_ && has(*s, recomputed)) {
        last_recompute = *s;
        break;
      }
    release_[x] = static_cast<std::uint64_t>(last_recompute) + g_.size();
  }

  [[gnu::always_inline]] void forward_step(node_id v, std::uint64_t& live, std::uint64_t& forward) const {
    forward = std::max(forward, live + g_.bytes(v) + g_.workspace(v));
    live += g_.bytes(v);
    for (node_id p : g_.predecessors(v))
      if (last_consumer_[p] == v && in_v(p) && !has(p, kept)) live -= g_.bytes(p);
    if (g_.successors(v).empty() && !has(v, kept)) live -= g_.bytes(v);
  }

  // The forward phase of a stage whose nodes are marked: the highest it holds.
  std::uint64_t forward_peak(const std::vector<node_id>& stage) const {
    std::uint64_t live = 0, forward = 0;
    for (node_id v : stage) forward_step(v, live, forward);
    return forward;
  }

  [[gnu::always_inline]] void recompute_step(node_id x, std::uint64_t& cur, std::uint64_t& peak) {
    peak = std::max(peak, cur + g_.bytes(x) + g_.workspace(x));
    cur += g_.bytes(x);
    mark(x, alive);
    for (node_id p : g_.predecessors(x))
      if (has(p, recomputed) && release_[p] == static_cast<std::uint64_t>(x) + g_.size()) {
        cur -= g_.bytes(p);
        unmark(p, alive);
      }
  }

  [[gnu::always_inline]] void backward_step(node_id v, std::uint64_t& cur, std::uint64_t& peak) {
    std::uint64_t allocated = g_.params(v) + (g_.successors(v).empty() ? g_.bytes(v) : 0);
    for (node_id p : g_.predecessors(v))
      if (!g_.is_input(p) && !has(p, grad)) {
        mark(p, grad);
        allocated += g_.bytes(p);
      }
    peak = std::max(peak, cur + allocated + g_.backward_workspace(v));
    cur += allocated;
    cur -= g_.bytes(v);  // v's gradient dies with its backward
    if (has(v, alive)) {
      cur -= g_.bytes(v);
      unmark(v, alive);
    }
    for (node_id p : g_.predecessors(v)) {
      if (g_.is_input(p)) continue;
      --pending_[p];
      if (!has(p, alive)) continue;
      const bool dies = has(p, recomputed) ? release_[p] == v : pending_[p] == 0 && !reads_output(g_.reads(p));
      if (dies) {
        cur -= g_.bytes(p);
        unmark(p, alive);
      }
    }
  }

  // A new evaluation over `nodes`, all stage nodes of it, ending at `last`,
  // with no whole pieces in its middle.
  void begin_walk(std::span<const node_id> nodes, node_id last) {
    ++stamp_;
    middle_lo_ = 1;
    middle_hi_ = 0;
    walked_last_ = last;
    for (node_id v : nodes) mark(v, in_stage);
  }

  // mark_[v]: the stamp of the evaluation that last marked v, shifted, over
  // its flags: one load tells whether a flag is set in this evaluation.
  void mark(node_id v, std::uint8_t f) {
    ++nodes_walked_;
    if ((mark_[v] >> 8) != stamp_) mark_[v] = stamp_ << 8;
    mark_[v] |= f;
  }
  void unmark(node_id v, std::uint8_t f) {
    if ((mark_[v] >> 8) == stamp_) mark_[v] &= ~std::uint64_t{f};
  }
  bool has(node_id v, std::uint8_t f) const {
    const std::uint64_t m = mark_[v];
    return (m >> 8) == stamp_ && (m & f) != 0;
  }

  const graph& g_;
  std::vector<std::uint64_t> mark_;
  std::vector<std::uint32_t> pending_;
  std::vector<std::uint64_t> release_;
  std::vector<node_id> last_consumer_;  // the largest consumer (0 for none)
  static constexpr node_id no_reader = std::numeric_limits<node_id>::max();
  std::vector<node_id> first_reader_;   // the least consumer whose backward reads its inputs
  std::vector<std::uint8_t> read_by_backward_;
  node_id walked_last_ = 0;
  std::uint64_t stamp_ = 0;
  std::uint64_t nodes_walked_ = 0;
  node_id middle_lo_ = 1, middle_hi_ = 0;
};

}  // namespace remat::detail
