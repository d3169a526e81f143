#pragma once

/// \file
/// The one plan form: an explicit schedule of steps over node ids, and the
/// builders that turn a plan into one: kept-set plans, stage plans, and the
/// general plans holding both (stages and a kept set chosen independently).
///
/// The builders run the nodes in an execution order: the graph's id order by
/// default, or any topological order the caller gives (forward in that order,
/// backward in its reverse). Which order a plan runs in changes what it holds
/// at each step, not what it computes; an order that keeps the consumers of
/// every value read by three or more nodes in id order also keeps every
/// gradient sum bit for bit (gradient_order_constraints in analysis/lower_sets.hpp).
///
/// Steps: `compute v` (first forward evaluation), `recompute v` (any later
/// evaluation), `free v` (drop v's value), `backward v` (run v's backward:
/// consumes v's output gradient, accumulates its operands' gradients and its
/// parameter gradient). Gradient buffers are not steps: a gradient appears at
/// the first backward that writes it and dies right after its owner's backward.
///
/// The builders free values by the same rules (docs/cost-model.md):
/// - forward: a value the plan does not keep is freed right after its last
///   consumer is computed (right after itself when it has none);
/// - a value kept from the forward is freed right after the last backward
///   among its consumers and, when its own backward reads its output, itself;
/// - a recomputed value is freed right after its last use (an operand of a
///   later recompute, or read by a backward); in a general plan, its last use
///   within the stage that recomputed it.

#include <remat/config.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <remat/error.hpp>
#include <remat/graph/graph.hpp>
#include <remat/graph/node_set.hpp>

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

/// Each node's distinct operands by execution position: what the builders
/// walk, so that a schedule run in some order is, step for step, the schedule
/// of the graph renumbered to that order. In the id order they are the
/// graph's own lists.
class operands_in_order {
 public:
  operands_in_order(const graph& g, std::span<const std::uint32_t> position, bool id_order) : g_(g) {
    if (id_order) return;
    offset_.reserve(g.size() + 1);
    offset_.push_back(0);
    for (std::size_t v = 0; v < g.size(); ++v) {
      const auto ops = g.predecessors(v);
      flat_.insert(flat_.end(), ops.begin(), ops.end());
      std::sort(flat_.end() - static_cast<std::ptrdiff_t>(ops.size()), flat_.end(),
                [&](node_id a, node_id b) { return position[a] < position[b]; });
      offset_.push_back(flat_.size());
    }
  }
  std::span<const node_id> operator()(std::size_t v) const noexcept {
    if (offset_.empty()) return g_.predecessors(v);
    return {flat_.data() + offset_[v], flat_.data() + offset_[v + 1]};
  }

 private:
  const graph& g_;
  std::vector<node_id> flat_;
  std::vector<std::size_t> offset_;
};

/// The backward-phase freeing rule shared by both builders.
class backward_release {
 public:
  backward_release(const graph& g, const operands_in_order& operands)
      : g_(g), operands_(operands), pending_(g.size()) {
    for (std::size_t v = 0; v < g.size(); ++v) pending_[v] = g.successors(v).size();
  }

  /// Sets how many of v's consumers have their backward still to run (for a
  /// backward that starts part way, as the exact general programme's stages do).
  void set_pending(node_id v, std::size_t consumers_left) noexcept { pending_[v] = consumers_left; }

  /// Emits the frees that become due once `backward v` has run.
  void after_backward(node_id v, std::vector<char>& live, schedule& out) {
    if (live[v]) {
      live[v] = 0;
      out.push_back({step_kind::free, v});
    }
    for (node_id p : operands_(v)) {
      if (g_.is_input(p)) continue;
      if (--pending_[p] == 0 && !reads_output(g_.reads(p)) && live[p]) {
        live[p] = 0;
        out.push_back({step_kind::free, p});
      }
    }
  }

 private:
  const graph& g_;
  const operands_in_order& operands_;
  std::vector<std::size_t> pending_;  // consumers whose backward has not run yet
};

/// Recomputes whatever of `roots` and their ancestors is not alive, in
/// execution order (`position` of each node in it).
inline void recompute_all_missing(const graph& g, std::span<const node_id> roots, std::vector<char>& live,
                                  schedule& out, std::vector<node_id>& stack, std::vector<node_id>& missing,
                                  std::span<const std::uint32_t> position) {
  missing.clear();
  stack.clear();
  for (node_id x : roots)
    if (!live[x]) {
      live[x] = 2;  // 2 marks "collected, not yet recomputed"
      stack.push_back(x);
    }
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
  std::sort(missing.begin(), missing.end(), [&](node_id a, node_id b) { return position[a] < position[b]; });
  for (node_id v : missing) {
    live[v] = 1;
    out.push_back({step_kind::recompute, v});
  }
}

/// Recomputes x and whatever of its ancestors is not alive, in execution order.
inline void recompute_missing(const graph& g, node_id x, std::vector<char>& live, schedule& out,
                              std::vector<node_id>& stack, std::vector<node_id>& missing,
                              std::span<const std::uint32_t> position) {
  recompute_all_missing(g, std::span<const node_id>(&x, 1), live, out, stack, missing, position);
}

/// Scratch for free_recomputed_at_last_use, reused from call to call.
struct last_use_scratch {
  std::vector<std::size_t> born, last_use;  // per node: where its recompute is (none: not alive from one)
  std::vector<std::size_t> after, next;     // per step: the step a moved free follows; the next moved there
  std::vector<std::size_t> head;            // per step: the first free moved after it
  schedule fragment;
};

/// Moves the free of every recomputed value in steps[from, end) to right
/// after its last use there, so that a value recomputed only to rebuild
/// others does not wait for their backward; a value recomputed there must be
/// freed there too. Keeps the schedule valid; never raises any step's
/// memory. O(end − from) time with `scratch` reused (O(n) once).
inline void free_recomputed_at_last_use(const graph& g, schedule& steps, std::size_t from, last_use_scratch& scratch) {
  constexpr std::size_t none = SIZE_MAX;
  const std::size_t n = g.size();
  if (scratch.born.size() != n) {
    scratch.born.assign(n, none);
    scratch.last_use.assign(n, none);
  }
  std::vector<std::size_t>& born = scratch.born;
  std::vector<std::size_t>& last_use = scratch.last_use;
  const std::size_t count = steps.size() - from;
  std::vector<std::size_t>& after = scratch.after;
  after.assign(count, none);
  bool moved_any = false;
  auto touch = [&](node_id x, std::size_t i) {
    if (born[x] != none) last_use[x] = i;
  };
  for (std::size_t i = 0; i < count; ++i) {
    const step s = steps[from + i];
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
          after[i] = last_use[s.node];
          born[s.node] = none;
          moved_any = true;
        }
        break;
    }
  }
  // A value still alive from a recompute at the end is left as it is.
  for (std::size_t i = 0; i < count; ++i)
    if (steps[from + i].kind == step_kind::recompute) born[steps[from + i].node] = none;
  if (!moved_any) return;
  // The frees moved after each step, in schedule order: lists built from the back.
  std::vector<std::size_t>& head = scratch.head;
  std::vector<std::size_t>& next = scratch.next;
  head.assign(count, none);
  next.resize(count);
  for (std::size_t i = count; i-- > 0;)
    if (after[i] != none) {
      next[i] = head[after[i]];
      head[after[i]] = i;
    }
  schedule& fragment = scratch.fragment;
  fragment.assign(steps.begin() + static_cast<std::ptrdiff_t>(from), steps.end());
  steps.resize(from);
  for (std::size_t i = 0; i < count; ++i) {
    if (after[i] == none) steps.push_back(fragment[i]);
    for (std::size_t k = head[i]; k != none; k = next[k]) steps.push_back(fragment[k]);
  }
}

/// Moves the free of every recomputed value to right after its last use (see
/// above), over the whole schedule.
inline void free_recomputed_at_last_use(const graph& g, schedule& steps) {
  last_use_scratch scratch;
  free_recomputed_at_last_use(g, steps, 0, scratch);
}

/// The forward phase every builder shares: computes `sequence` (inputs
/// skipped), freeing a value the plan does not keep (`kept(v)` false) right
/// after its last consumer, and a sink at once unless it is kept and its
/// backward reads its output.
template <class Kept>
void forward_phase(const graph& g, std::span<const node_id> sequence, const operands_in_order& operands,
                   std::span<const node_id> last, Kept&& kept, std::vector<char>& live, schedule& out) {
  for (node_id v : sequence) {
    if (g.is_input(v)) continue;
    out.push_back({step_kind::compute, v});
    live[v] = 1;
    for (node_id p : operands(v))
      if (!g.is_input(p) && !kept(p) && last[p] == v) {
        live[p] = 0;
        out.push_back({step_kind::free, p});
      }
    if (g.successors(v).empty() && !(kept(v) && reads_output(g.reads(v)))) {
      live[v] = 0;
      out.push_back({step_kind::free, v});
    }
  }
}

inline void append_backward_reads(const graph& g, const operands_in_order& operands, node_id v,
                                  std::vector<node_id>& reads) {
  reads.clear();
  if (reads_inputs(g.reads(v)))
    for (node_id p : operands(v))
      if (!g.is_input(p)) reads.push_back(p);
  if (reads_output(g.reads(v))) reads.push_back(v);
}

/// The position of every node in `order`, or in the id order when `order` is
/// empty. \throws remat::error naming the node when `order` is not a
/// topological order of all of g's nodes.
inline std::vector<std::uint32_t> execution_positions(const graph& g, std::span<const node_id> order) {
  const std::size_t n = g.size();
  std::vector<std::uint32_t> position(n);
  if (order.empty()) {
    for (std::size_t v = 0; v < n; ++v) position[v] = static_cast<std::uint32_t>(v);
    return position;
  }
  if (order.size() != n)
    throw error("execution order has " + std::to_string(order.size()) + " nodes; the graph has " +
                std::to_string(n));
  constexpr std::uint32_t unplaced = UINT32_MAX;
  std::fill(position.begin(), position.end(), unplaced);
  for (std::size_t i = 0; i < n; ++i) {
    if (order[i] >= n)
      throw error("execution order names node id " + std::to_string(order[i]) + "; the graph has " +
                  std::to_string(n) + " nodes");
    if (position[order[i]] != unplaced)
      throw error("execution order runs '" + g.node_name(order[i]) + "' twice");
    position[order[i]] = static_cast<std::uint32_t>(i);
  }
  for (std::size_t v = 0; v < n; ++v)
    for (node_id p : g.predecessors(v))
      if (position[p] > position[v])
        throw error("execution order runs '" + g.node_name(v) + "' before its operand '" + g.node_name(p) + "'");
  return position;
}

/// The nodes of g in execution order (`order`, or the id order when empty).
inline std::vector<node_id> execution_sequence(const graph& g, std::span<const node_id> order) {
  if (!order.empty()) return {order.begin(), order.end()};
  std::vector<node_id> ids(g.size());
  for (std::size_t v = 0; v < g.size(); ++v) ids[v] = static_cast<node_id>(v);
  return ids;
}

/// For each node with a consumer, the consumer that runs last in the execution order.
inline std::vector<node_id> last_consumers(const graph& g, std::span<const std::uint32_t> position) {
  std::vector<node_id> last(g.size(), 0);
  for (std::size_t v = 0; v < g.size(); ++v) {
    const auto consumers = g.successors(v);
    if (consumers.empty()) continue;
    last[v] = consumers.front();
    for (node_id s : consumers)
      if (position[s] > position[last[v]]) last[v] = s;
  }
  return last;
}

}  // namespace detail

/// Single-level schedule for a set of kept tensors (OGC style). Forward
/// computes every node in execution order (`order`: a topological order of all
/// nodes; empty: the id order) and keeps exactly the members of `keep` (inputs
/// are ignored; a kept sink whose backward does not read its output is freed
/// at once, since nothing could use it). Backward runs in reverse execution
/// order and recomputes a missing value just before the backward that reads
/// it, with its missing ancestors. Every node is recomputed at most once.
/// Frees follow the rules at the top of this file. \throws remat::error when
/// `order` is not a topological order of g. Complexity: O(n log n + m) time,
/// O(n + m) steps.
inline schedule schedule_from_kept(const graph& g, const node_set& keep, std::span<const node_id> order = {}) {
  const std::size_t n = g.size();
  REMAT_ASSERT(keep.universe() == n);
  const std::vector<std::uint32_t> position = detail::execution_positions(g, order);
  const std::vector<node_id> sequence = detail::execution_sequence(g, order);
  const std::vector<node_id> last = detail::last_consumers(g, position);
  const detail::operands_in_order operands(g, position, order.empty());
  schedule out;
  out.reserve(4 * n);
  std::vector<char> live(n, 0);
  detail::forward_phase(g, sequence, operands, last, [&](node_id v) { return keep.contains(v); }, live, out);

  detail::backward_release release(g, operands);
  std::vector<node_id> reads, stack, missing;
  for (std::size_t i = n; i-- > 0;) {
    const node_id v = sequence[i];
    if (g.is_input(v)) continue;
    detail::append_backward_reads(g, operands, v, reads);
    for (node_id x : reads) detail::recompute_missing(g, x, live, out, stack, missing, position);
    out.push_back({step_kind::backward, v});
    release.after_backward(v, live, out);
  }
  detail::free_recomputed_at_last_use(g, out);
  return out;
}

namespace detail {

/// The computed nodes stage by stage, each stage in execution order, and
/// every node's position in that run (inputs first), so that a schedule
/// depends only on the stages and each stage's own order.
struct stage_run {
  std::vector<node_id> sequence;
  std::vector<std::uint32_t> position;
  stage_run(const graph& g, std::span<const std::uint32_t> stage_of, std::span<const node_id> order) {
    (void)execution_positions(g, order);  // validates it
    sequence.reserve(g.size());
    for (node_id v : execution_sequence(g, order))
      if (!g.is_input(v)) sequence.push_back(v);
    std::stable_sort(sequence.begin(), sequence.end(), [&](node_id a, node_id b) { return stage_of[a] < stage_of[b]; });
    position.resize(g.size());
    std::uint32_t next = 0;
    for (std::size_t v = 0; v < g.size(); ++v)
      if (g.is_input(v)) position[v] = next++;
    for (node_id v : sequence) position[v] = next++;
  }
};

/// What a stage plan keeps from the forward: each computed value a later
/// stage reads, and each sink whose backward reads its output.
inline std::vector<char> stage_boundary(const graph& g, std::span<const std::uint32_t> stage_of) {
  std::vector<char> boundary(g.size(), 0);
  for (std::size_t v = 0; v < g.size(); ++v) {
    if (g.is_input(v)) continue;
    if (g.successors(v).empty() && reads_output(g.reads(v))) boundary[v] = 1;
    for (node_id s : g.successors(v))
      if (stage_of[s] > stage_of[v]) boundary[v] = 1;
  }
  return boundary;
}

}  // namespace detail

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
/// order, each in execution order (`order`: a topological order of all nodes;
/// empty: the id order; only the order within each stage matters), freeing
/// the other nodes after their last consumer.
/// Backward runs the stages in reverse: it first recomputes the stage's dropped
/// nodes that some backward of the stage reads (with the dropped nodes they
/// need), then runs the stage's backwards in reverse execution order.
/// \throws remat::error for stages that are not lower sets or an order that is
/// not topological. Complexity: O(n log n + m).
inline schedule schedule_from_stages(const graph& g, std::span<const std::uint32_t> stage_of,
                                     std::span<const node_id> order = {}) {
  validate_stages(g, stage_of);
  const std::size_t n = g.size();
  const detail::stage_run run(g, stage_of, order);
  const std::vector<node_id>& sequence = run.sequence;
  const std::vector<std::uint32_t>& position = run.position;
  const std::vector<node_id> last = detail::last_consumers(g, position);
  const detail::operands_in_order operands(g, position, false);

  const std::vector<char> boundary = detail::stage_boundary(g, stage_of);

  schedule out;
  out.reserve(4 * n);
  std::vector<char> live(n, 0);
  detail::forward_phase(g, sequence, operands, last, [&](node_id v) { return boundary[v] != 0; }, live, out);

  detail::backward_release release(g, operands);
  std::vector<char> needed(n, 0);
  std::size_t end = sequence.size();
  while (end > 0) {
    std::size_t begin = end;
    while (begin > 0 && stage_of[sequence[begin - 1]] == stage_of[sequence[end - 1]]) --begin;
    const std::span<const node_id> stage(sequence.data() + begin, end - begin);

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

/// How a stage of a general plan (schedule_from_kept_stages) recomputes the
/// missing values its backwards read.
enum class stage_recompute : std::uint8_t {
  lazy,   ///< each right before the backward that reads it, with its missing ancestors (kept-set plans' way)
  eager,  ///< all of them, in execution order, before the stage's first backward (stage plans' way)
};

namespace detail {

struct stage_scratch {
  std::vector<node_id> reads, wanted, stack, missing, recomputed;
};

/// The backward of one stage of a general plan (`stage`: its nodes in run
/// order): recomputes the missing values its backwards read, with their
/// missing ancestors, lazily or eagerly; runs the backwards in reverse, each
/// followed by the frees `after_backward(v)` makes due; then frees what it
/// recomputed and still holds. The exact programme over the family
/// (solvers/general_dp.hpp) walks the same steps one stage at a time.
template <class AfterBackward>
void stage_backward(const graph& g, std::span<const node_id> stage, bool eager, const operands_in_order& operands,
                    std::span<const std::uint32_t> position, std::vector<char>& live, schedule& out,
                    AfterBackward&& after_backward, stage_scratch& scratch) {
  scratch.recomputed.clear();
  auto recompute = [&](std::span<const node_id> roots) {
    const std::size_t before = out.size();
    recompute_all_missing(g, roots, live, out, scratch.stack, scratch.missing, position);
    for (std::size_t i = before; i < out.size(); ++i) scratch.recomputed.push_back(out[i].node);
  };
  if (eager) {
    scratch.wanted.clear();
    for (std::size_t k = stage.size(); k-- > 0;) {
      append_backward_reads(g, operands, stage[k], scratch.reads);
      scratch.wanted.insert(scratch.wanted.end(), scratch.reads.begin(), scratch.reads.end());
    }
    recompute(scratch.wanted);
  }
  for (std::size_t k = stage.size(); k-- > 0;) {
    const node_id v = stage[k];
    if (!eager) {
      append_backward_reads(g, operands, v, scratch.reads);
      for (node_id x : scratch.reads) recompute(std::span<const node_id>(&x, 1));
    }
    out.push_back({step_kind::backward, v});
    after_backward(v);
  }
  for (node_id x : scratch.recomputed)
    if (live[x]) {
      live[x] = 0;
      out.push_back({step_kind::free, x});
    }
}

}  // namespace detail

/// The general single-level plan: stages (an increasing sequence of lower
/// sets, given as for schedule_from_stages) and a kept set (as for
/// schedule_from_kept), chosen independently. Forward runs the stages in
/// order, each in execution order, and keeps exactly `keep` (inputs are
/// ignored; a kept sink whose backward does not read its output is freed at
/// once). Backward runs the stages in reverse; each recomputes the missing
/// values its backwards read, with their missing ancestors, in execution
/// order, as `modes[k]` says for the k-th stage in forward order (all lazy
/// when `modes` is empty),
/// and a value recomputed in a stage lives until its last use in that stage,
/// never into the next (a later stage recomputes it again).
///
/// The family holds both other forms, step for step: one lazy stage is
/// schedule_from_kept(keep); a stage plan's boundary as `keep`, every stage
/// eager, is schedule_from_stages (tests/plan/test_general_plans.cpp).
/// \throws remat::error for stages that are not lower sets, `modes` of the
/// wrong length, or an order that is not topological. Complexity:
/// O(n log n + m) time plus the recomputes, O(n + m) steps per stage.
inline schedule schedule_from_kept_stages(const graph& g, std::span<const std::uint32_t> stage_of, const node_set& keep,
                                          std::span<const stage_recompute> modes = {},
                                          std::span<const node_id> order = {}) {
  validate_stages(g, stage_of);
  const std::size_t n = g.size();
  REMAT_ASSERT(keep.universe() == n);
  const detail::stage_run run(g, stage_of, order);
  const std::vector<node_id>& sequence = run.sequence;
  // Recomputes and a backward's reads follow the execution order, not the
  // stage run's: then what a stage holds depends on which values are missing,
  // never on how the earlier stages split them, and the exact programme over
  // this family (solvers/general_dp.hpp) can take a lower set and a kept set
  // as its state.
  const std::vector<std::uint32_t> position = detail::execution_positions(g, order);
  std::size_t stages = 0;
  for (std::size_t k = 0; k < sequence.size(); ++k)
    if (k == 0 || stage_of[sequence[k]] != stage_of[sequence[k - 1]]) ++stages;
  if (!modes.empty() && modes.size() != stages)
    throw error("stage modes: " + std::to_string(modes.size()) + " given for " + std::to_string(stages) + " stages");
  const std::vector<node_id> last = detail::last_consumers(g, run.position);
  // Frees follow the stage run, as schedule_from_stages's do; which order a
  // step's frees come in never changes a peak.
  const detail::operands_in_order run_operands(g, run.position, false);
  const detail::operands_in_order operands(g, position, order.empty());

  schedule out;
  out.reserve(4 * n);
  std::vector<char> live(n, 0);
  detail::forward_phase(g, sequence, run_operands, last, [&](node_id v) { return keep.contains(v); }, live, out);

  detail::backward_release release(g, run_operands);
  detail::stage_scratch scratch;
  detail::last_use_scratch last_uses;
  std::size_t end = sequence.size(), stage = stages;
  while (end > 0) {
    std::size_t begin = end;
    while (begin > 0 && stage_of[sequence[begin - 1]] == stage_of[sequence[end - 1]]) --begin;
    --stage;
    const bool eager = !modes.empty() && modes[stage] == stage_recompute::eager;
    const std::size_t before = out.size();
    detail::stage_backward(g, std::span<const node_id>(sequence.data() + begin, end - begin), eager, operands,
                           position, live, out, [&](node_id v) { release.after_backward(v, live, out); }, scratch);
    // What a stage recomputes it frees before the next begins: the frees
    // move within it.
    detail::free_recomputed_at_last_use(g, out, before, last_uses);
    end = begin;
  }
  return out;
}

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
