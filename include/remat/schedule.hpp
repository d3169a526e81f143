#pragma once

/// \file
/// The one plan form: an explicit schedule of steps over node ids, and the two
/// builders every solver uses to turn a plan into one.
///
/// Steps: `compute v` (first forward evaluation), `recompute v` (any later
/// evaluation), `free v` (drop v's value), `backward v` (run v's backward:
/// consumes v's output gradient, accumulates its operands' gradients and its
/// parameter gradient). Gradient buffers are not steps: a gradient appears at
/// the first backward that writes it and dies right after its owner's backward.
///
/// Both builders free values by the same rules (docs/cost-model.md):
/// - forward: a value the plan does not keep is freed right after its last
///   consumer is computed (right after itself when it has none);
/// - a value kept from the forward is freed right after the last backward
///   among its consumers and, when its own backward reads its output, itself;
/// - a recomputed value is freed right after its last use (an operand of a
///   later recompute, or read by a backward).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config.hpp"
#include "error.hpp"
#include "graph.hpp"
#include "node_set.hpp"

namespace remat {

enum class step_kind : std::uint8_t { compute, recompute, free, backward };

inline constexpr std::string_view to_string(step_kind k) noexcept {
  switch (k) {
    case step_kind::compute: return "compute";
    case step_kind::recompute: return "recompute";
    case step_kind::free: return "free";
    case step_kind::backward: return "backward";
  }
  return "?";
}

struct step {
  step_kind kind;
  node_id node;
  friend bool operator==(const step&, const step&) = default;
};

using schedule = std::vector<step>;

namespace detail {

/// The backward-phase freeing rule shared by both builders.
class backward_release {
 public:
  explicit backward_release(const graph& g) : g_(g), pending_(g.size()) {
    for (std::size_t v = 0; v < g.size(); ++v) pending_[v] = g.successors(v).size();
  }

  /// Emits the frees that become due once `backward v` has run.
  void after_backward(node_id v, std::vector<char>& live, schedule& out) {
    if (live[v]) {
      live[v] = 0;
      out.push_back({step_kind::free, v});
    }
    for (node_id p : g_.predecessors(v)) {
      if (g_.is_input(p)) continue;
      if (--pending_[p] == 0 && !reads_output(g_.reads(p)) && live[p]) {
        live[p] = 0;
        out.push_back({step_kind::free, p});
      }
    }
  }

 private:
  const graph& g_;
  std::vector<std::size_t> pending_;  // consumers whose backward has not run yet
};

/// Recomputes x and whatever of its ancestors is not alive, in id order.
inline void recompute_missing(const graph& g, node_id x, std::vector<char>& live, schedule& out,
                              std::vector<node_id>& stack, std::vector<node_id>& missing) {
  if (live[x]) return;
  missing.clear();
  stack.assign(1, x);
  live[x] = 2;  // 2 marks "collected, not yet recomputed"
  while (!stack.empty()) {
    node_id v = stack.back();
    stack.pop_back();
    missing.push_back(v);
    for (node_id p : g.predecessors(v))
      if (!g.is_input(p) && !live[p]) {
        live[p] = 2;
        stack.push_back(p);
      }
  }
  std::sort(missing.begin(), missing.end());
  for (node_id v : missing) {
    live[v] = 1;
    out.push_back({step_kind::recompute, v});
  }
}

/// Moves the free of every recomputed value to right after its last use, so
/// that a value recomputed only to rebuild others does not wait for their
/// backward. Keeps the schedule valid; never raises any step's memory.
inline void free_recomputed_at_last_use(const graph& g, schedule& steps) {
  constexpr std::size_t none = SIZE_MAX;
  const std::size_t n = g.size();
  std::vector<std::size_t> born(n, none), last_use(n, none);
  std::vector<std::size_t> free_after(steps.size(), none);  // free step i -> emit after step j
  auto touch = [&](node_id x, std::size_t i) {
    if (born[x] != none) last_use[x] = i;
  };
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const step s = steps[i];
    switch (s.kind) {
      case step_kind::compute:
      case step_kind::recompute:
        for (node_id p : g.predecessors(s.node))
          if (!g.is_input(p)) touch(p, i);
        if (s.kind == step_kind::recompute) born[s.node] = last_use[s.node] = i;
        break;
      case step_kind::backward:
        if (reads_inputs(g.reads(s.node)))
          for (node_id p : g.predecessors(s.node))
            if (!g.is_input(p)) touch(p, i);
        if (reads_output(g.reads(s.node))) touch(s.node, i);
        break;
      case step_kind::free:
        if (born[s.node] != none) {
          free_after[i] = last_use[s.node];
          born[s.node] = none;
        }
        break;
    }
  }
  std::vector<std::vector<step>> moved(steps.size());
  for (std::size_t i = 0; i < steps.size(); ++i)
    if (free_after[i] != none) moved[free_after[i]].push_back(steps[i]);
  schedule out;
  out.reserve(steps.size());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (free_after[i] == none) out.push_back(steps[i]);
    out.insert(out.end(), moved[i].begin(), moved[i].end());
  }
  steps = std::move(out);
}

inline void append_backward_reads(const graph& g, node_id v, std::vector<node_id>& reads) {
  reads.clear();
  if (reads_inputs(g.reads(v)))
    for (node_id p : g.predecessors(v))
      if (!g.is_input(p)) reads.push_back(p);
  if (reads_output(g.reads(v))) reads.push_back(v);
}

}  // namespace detail

/// Single-level schedule for a set of kept tensors (OGC style). Forward
/// computes every node in id order and keeps exactly the members of `keep`
/// (inputs are ignored; a kept sink whose backward does not read its output is
/// freed at once, since nothing could use it). Backward runs in reverse id
/// order and recomputes a missing value just before the backward that reads
/// it, with its missing ancestors. Every node is recomputed at most once.
/// Frees follow the rules at the top of this file.
/// Complexity: O(n + m) time and steps.
inline schedule schedule_from_kept(const graph& g, const node_set& keep) {
  const std::size_t n = g.size();
  REMAT_ASSERT(keep.universe() == n);
  schedule out;
  out.reserve(4 * n);
  std::vector<char> live(n, 0);

  for (node_id v = 0; v < n; ++v) {
    if (g.is_input(v)) continue;
    out.push_back({step_kind::compute, v});
    live[v] = 1;
    for (node_id p : g.predecessors(v))
      if (!g.is_input(p) && !keep.contains(p) && g.successors(p).back() == v) {
        live[p] = 0;
        out.push_back({step_kind::free, p});
      }
    if (g.successors(v).empty() && !(keep.contains(v) && reads_output(g.reads(v)))) {
      live[v] = 0;
      out.push_back({step_kind::free, v});
    }
  }

  detail::backward_release release(g);
  std::vector<node_id> reads, stack, missing;
  for (std::size_t i = n; i-- > 0;) {
    const auto v = static_cast<node_id>(i);
    if (g.is_input(v)) continue;
    detail::append_backward_reads(g, v, reads);
    for (node_id x : reads) detail::recompute_missing(g, x, live, out, stack, missing);
    out.push_back({step_kind::backward, v});
    release.after_backward(v, live, out);
  }
  detail::free_recomputed_at_last_use(g, out);
  return out;
}

/// Checks that `stage_of` assigns every non-input node a stage no earlier than
/// any of its operands', i.e. that the stages form an increasing sequence of
/// lower sets L_i = {v : stage_of[v] <= i}. \throws remat::error otherwise.
inline void validate_stages(const graph& g, std::span<const std::uint32_t> stage_of) {
  if (stage_of.size() != g.size())
    throw error("stage assignment has " + std::to_string(stage_of.size()) +
                " entries; the graph has " + std::to_string(g.size()) + " nodes");
  for (std::size_t v = 0; v < g.size(); ++v) {
    if (g.is_input(v)) continue;
    for (node_id p : g.predecessors(v))
      if (!g.is_input(p) && stage_of[p] > stage_of[v])
        throw error("stages are not lower sets: '" + g.node_name(p) + "' (stage " +
                    std::to_string(stage_of[p]) + ") feeds '" + g.node_name(v) + "' (stage " +
                    std::to_string(stage_of[v]) + ")");
  }
}

/// Stage-wise schedule for an increasing sequence of lower sets (Kusumoto
/// style), given as a stage index per node (see validate_stages; stage numbers
/// need not be contiguous). A node is kept when a consumer lies in a later
/// stage (it is on the boundary of its lower set), and so is a sink whose
/// backward reads its own output (nothing could be gained by dropping it). Forward runs the stages in
/// order, freeing the other nodes after their last consumer. Backward runs the
/// stages in reverse: it first recomputes the stage's dropped nodes that some
/// backward of the stage reads (with the dropped nodes they need), then runs
/// the stage's backwards in reverse id order. Complexity: O(n log n + m).
inline schedule schedule_from_stages(const graph& g, std::span<const std::uint32_t> stage_of) {
  validate_stages(g, stage_of);
  const std::size_t n = g.size();
  std::vector<node_id> order;
  order.reserve(n);
  for (node_id v = 0; v < n; ++v)
    if (!g.is_input(v)) order.push_back(v);
  std::stable_sort(order.begin(), order.end(),
                   [&](node_id a, node_id b) { return stage_of[a] < stage_of[b]; });

  std::vector<char> boundary(n, 0);
  for (node_id v : order) {
    if (g.successors(v).empty() && reads_output(g.reads(v))) boundary[v] = 1;
    for (node_id s : g.successors(v))
      if (stage_of[s] > stage_of[v]) boundary[v] = 1;
  }

  schedule out;
  out.reserve(4 * n);
  std::vector<char> live(n, 0);
  for (node_id v : order) {
    out.push_back({step_kind::compute, v});
    live[v] = 1;
    for (node_id p : g.predecessors(v))
      if (!g.is_input(p) && !boundary[p] && g.successors(p).back() == v) {
        live[p] = 0;
        out.push_back({step_kind::free, p});
      }
    if (g.successors(v).empty() && !boundary[v]) {
      live[v] = 0;
      out.push_back({step_kind::free, v});
    }
  }

  detail::backward_release release(g);
  std::vector<char> needed(n, 0);
  std::size_t end = order.size();
  while (end > 0) {
    std::size_t begin = end;
    while (begin > 0 && stage_of[order[begin - 1]] == stage_of[order[end - 1]]) --begin;
    const std::span<const node_id> stage(order.data() + begin, end - begin);

    for (std::size_t k = stage.size(); k-- > 0;) {
      const node_id x = stage[k];
      if (boundary[x]) continue;
      bool need = reads_output(g.reads(x));
      for (node_id s : g.successors(x)) need = need || reads_inputs(g.reads(s)) || needed[s];
      needed[x] = need ? 1 : 0;
    }
    for (node_id x : stage)
      if (needed[x]) {
        live[x] = 1;
        out.push_back({step_kind::recompute, x});
      }
    for (std::size_t k = stage.size(); k-- > 0;) {
      out.push_back({step_kind::backward, stage[k]});
      release.after_backward(stage[k], live, out);
    }
    end = begin;
  }
  detail::free_recomputed_at_last_use(g, out);
  return out;
}

/// A checkpointing plan: its schedule (the one plan form) and the decision it
/// was built from (a kept set or a stage assignment; the other is left empty).
struct plan {
  std::string method;
  schedule steps;
  node_set kept;
  std::vector<std::uint32_t> stage_of;

  static plan from_kept(const graph& g, node_set kept, std::string method) {
    plan p;
    p.method = std::move(method);
    p.steps = schedule_from_kept(g, kept);
    p.kept = std::move(kept);
    return p;
  }
  static plan from_stages(const graph& g, std::vector<std::uint32_t> stage_of, std::string method) {
    plan p;
    p.method = std::move(method);
    p.steps = schedule_from_stages(g, stage_of);
    p.stage_of = std::move(stage_of);
    return p;
  }
};

/// What a schedule does with a node's value between forward and backward.
enum class node_fate : std::uint8_t {
  input,       ///< a resident graph input
  kept,        ///< alive from the forward into the backward phase
  recomputed,  ///< dropped in the forward, recomputed in the backward
  dropped,     ///< dropped in the forward, never needed again
};

inline constexpr std::string_view to_string(node_fate f) noexcept {
  switch (f) {
    case node_fate::input: return "input";
    case node_fate::kept: return "kept";
    case node_fate::recomputed: return "recomputed";
    case node_fate::dropped: return "dropped";
  }
  return "?";
}

/// Classifies every node by what `steps` does with it. The forward phase ends
/// at the first recompute or backward step.
inline std::vector<node_fate> node_fates(const graph& g, const schedule& steps) {
  std::vector<node_fate> fate(g.size(), node_fate::dropped);
  std::vector<char> alive(g.size(), 0);
  bool backward_phase = false;
  for (const step& s : steps) {
    if ((s.kind == step_kind::backward || s.kind == step_kind::recompute) && !backward_phase) {
      backward_phase = true;
      for (std::size_t v = 0; v < g.size(); ++v)
        if (alive[v]) fate[v] = node_fate::kept;
    }
    if (s.kind == step_kind::compute || s.kind == step_kind::recompute) alive[s.node] = 1;
    if (s.kind == step_kind::free) alive[s.node] = 0;
    if (s.kind == step_kind::recompute && fate[s.node] != node_fate::kept)
      fate[s.node] = node_fate::recomputed;
  }
  for (std::size_t v = 0; v < g.size(); ++v)
    if (g.is_input(v)) fate[v] = node_fate::input;
  return fate;
}

}  // namespace remat
