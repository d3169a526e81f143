#pragma once

/// \file
/// The best stages for a general plan's kept set and execution order, among
/// stages that are runs of consecutive nodes of that order: a dynamic
/// programme over where the runs end.
///
/// When every stage is a run of the execution order, the backward phase runs
/// the nodes in reverse execution order whatever the split, so the gradients,
/// parameter gradients and kept values alive at each backward do not depend
/// on it, and a stage frees everything it recomputed before the next begins
/// (schedule_from_kept_stages). A stage's peak and recompute then depend on
/// its own nodes and mode alone, and the plan's peak is the larger of the
/// forward's and the largest stage's: the least peak is a bottleneck path
/// over the run ends, the least recompute within a peak a shortest path.
/// Both modes are tried for every run of up to `max_stage_nodes` nodes.
///
/// `exact` calls it on the empty set, in the order where keeping nothing
/// with a stage per node peaks lowest, and on its best general plan's kept
/// set, in that plan's order: on NAS cells, PSPNet and the ResNets the runs
/// it finds hold less than a stage per node or min-cut's stages
/// (docs/results-solvers.md, "Stages split over the execution order").
/// Complexity: O(N · W) stage evaluations for N computed nodes and runs of
/// up to W nodes, each O(its steps) — a stage recomputes what its backwards
/// read from the kept values, so keeping nothing makes them long — plus
/// O(n log n + m) to set up.

#include <remat/config.hpp>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include <remat/graph/graph.hpp>
#include <remat/graph/node_set.hpp>
#include <remat/plan/schedule.hpp>
#include <remat/plan/simulate.hpp>
#include <remat/solvers/common.hpp>
#include <remat/solvers/general_local_search.hpp>
#include <remat/time_budget.hpp>

namespace remat {

struct stage_split_options {
  objective goal = objective::memory;
  std::uint64_t budget = no_budget;  ///< the time objective's byte budget
  /// The longest run a stage may be: the search evaluates about
  /// 2 · max_stage_nodes stages per node.
  std::size_t max_stage_nodes = 8;
  /// Splits peaking above this are not wanted: the search gives up on any
  /// stage past it (none found when no split stays within it).
  std::uint64_t ceiling = no_budget;
  /// Charged for every stage evaluated; the search stops, with no plan, when
  /// it expires.
  time_budget time;
};

struct stage_split_result {
  /// The split, with the kept set and order asked for; none when the time
  /// budget ran out or no split stays within the ceiling.
  std::optional<general_plan> plan;
  simulation figures;  ///< the simulator's figures for `plan`
  std::size_t stages_evaluated = 0;
  bool stopped = false;  ///< the time budget ran out
};

namespace detail {

// Walks the backward phase of a general plan whose stages are runs of the
// execution order, keeping the state between stages (kept values alive,
// gradient buffers, consumers whose backward is still to run), and prices a
// stage from any such state by the rules of schedule_from_kept_stages and
// free_recomputed_at_last_use, undoing what it changed.
class run_stage_pricer {
 public:
  run_stage_pricer(const graph& g, const node_set& kept, std::span<const node_id> order)
      : g_(g),
        position_(execution_positions(g, order)),
        operands_(g, position_, order.empty()),
        live_(g.size(), 0),
        gradient_(g.size(), 0),
        consumers_left_(g.size(), 0),
        fresh_(g.size(), 0),
        last_use_(g.size(), 0),
        at_position_(g.size()),
        positions_((g.size() + 63) / 64, 0),
        freed_next_(g.size(), 0) {
    const std::size_t n = g.size();
    for (node_id v = 0; v < n; ++v) at_position_[position_[v]] = v;
    for (node_id v : execution_sequence(g, order))
      if (!g.is_input(v)) sequence_.push_back(v);
    // The forward keeps exactly `kept`, whatever the stages.
    schedule forward;
    forward_phase(g, execution_sequence(g, order), operands_, last_consumers(g, position_),
                  [&](node_id v) { return kept.contains(v); }, live_, forward);
    memory_ = g.param_bytes() + g.input_bytes();
    forward_peak_ = memory_;
    for (const step& s : forward) {
      if (s.kind == step_kind::compute) {
        forward_peak_ = std::max(forward_peak_, memory_ + g.bytes(s.node) + g.workspace(s.node));
        memory_ += g.bytes(s.node);
      } else {
        memory_ -= g.bytes(s.node);
      }
    }
    for (node_id v = 0; v < n; ++v) consumers_left_[v] = static_cast<std::uint32_t>(g.successors(v).size());
    at_ = sequence_.size();
  }

  std::size_t nodes() const noexcept { return sequence_.size(); }
  const std::vector<node_id>& sequence() const noexcept { return sequence_; }
  std::uint64_t forward_peak() const noexcept { return forward_peak_; }

  // The run end the state stands at: the backwards from it on are done.
  std::size_t at() const noexcept { return at_; }

  // Runs the backward before run end at(), recomputing nothing, noting how
  // to go back: the state moves down one end.
  void fall() {
    const node_id v = sequence_[--at_];
    steps_back_.push_back({memory_, base_log_.size()});
    const std::uint64_t added =
        gradients_allocated(v, [&](node_id p) { base_log_.push_back({p, change::gradient_added}); });
    memory_ += added + g_.params(v);
    memory_ -= g_.bytes(v);
    if (gradient_[v]) base_log_.push_back({v, change::gradient_freed});
    gradient_[v] = 0;
    release(v, false);
  }

  // Undoes the last fall(): the state moves up one end.
  void rise() {
    const auto [memory, from] = steps_back_.back();
    steps_back_.pop_back();
    for (std::size_t k = base_log_.size(); k-- > from;) {
      const auto [x, what] = base_log_[k];
      switch (what) {
        case change::gradient_added: gradient_[x] = 0; break;
        case change::gradient_freed: gradient_[x] = 1; break;
        case change::released: live_[x] = 1; break;
        case change::counted: ++consumers_left_[x]; break;
      }
    }
    base_log_.resize(from);
    memory_ = memory;
    ++at_;
  }

  struct price {
    std::uint64_t peak = 0;
    double recompute = 0;
    bool over = false;  ///< passed the cap; `peak` is then only known to exceed it
  };

  // The stage of sequence()[first, end) from the state after the backwards
  // from `end` on, recomputing lazily or eagerly; stops past `cap`.
  price evaluate(std::size_t first, std::size_t end, bool eager, std::uint64_t cap) {
    steps_.clear();
    recomputed_.clear();
    // A step's memory is known only once the last uses are, after the
    // stage's steps are all built; while they are, a recompute's operands
    // and value above what the stage has surely freed so far are a floor
    // under it, and past the cap the rest is not built.
    cap_ = cap;
    surely_held_ = memory_;
    passed_ = 0;
    if (eager) {
      wanted_.clear();
      for (std::size_t k = end; k-- > first;) {
        append_backward_reads(g_, operands_, sequence_[k], reads_);
        wanted_.insert(wanted_.end(), reads_.begin(), reads_.end());
      }
      recompute_missing(wanted_);
    }
    for (std::size_t k = end; k-- > first && passed_ == 0;) {
      const node_id v = sequence_[k];
      if (!eager) {
        append_backward_reads(g_, operands_, v, reads_);
        for (node_id x : reads_)
          if (passed_ == 0) recompute_missing(std::span<const node_id>(&x, 1));
        if (passed_ != 0) break;
      }
      steps_.push_back({step_kind::backward, v});
      surely_held_ -= std::min(surely_held_, g_.bytes(v));  // its gradient goes
      release(v, true);
    }
    if (passed_ != 0) {
      undo();
      return {passed_, 0.0, true};
    }
    // Each recomputed value lives to its last use in the stage (all its
    // uses follow its recompute).
    for (std::size_t i = 0; i < steps_.size(); ++i) {
      const step s = steps_[i];
      if (s.kind == step_kind::recompute) {
        for (node_id p : g_.predecessors(s.node))
          if (fresh_[p]) last_use_[p] = i;
        last_use_[s.node] = i;
      } else if (s.kind == step_kind::backward) {
        append_backward_reads(g_, operands_, s.node, reads_);
        for (node_id x : reads_)
          if (fresh_[x]) last_use_[x] = i;
      }
    }
    // The values freed after each step, as lists threaded through `freed_next_`.
    first_freed_.assign(steps_.size(), nobody);
    for (node_id x : recomputed_) {
      freed_next_[x] = first_freed_[last_use_[x]];
      first_freed_[last_use_[x]] = x;
    }
    price out;
    std::uint64_t memory = memory_;
    const std::size_t gradients_before = gradient_log_.size();
    for (std::size_t i = 0; i < steps_.size() && !out.over; ++i) {
      const node_id v = steps_[i].node;
      switch (steps_[i].kind) {
        case step_kind::recompute:
          out.peak = std::max(out.peak, memory + g_.bytes(v) + g_.workspace(v));
          memory += g_.bytes(v);
          out.recompute += g_.time(v);
          break;
        case step_kind::free:
          if (!fresh_[v]) memory -= g_.bytes(v);  // a kept value; recomputed ones go at their last use
          break;
        case step_kind::backward: {
          const std::uint64_t added = gradients_allocated(v, [&](node_id p) { gradient_log_.push_back(p); });
          out.peak = std::max(out.peak, memory + added + g_.params(v) + g_.backward_workspace(v));
          memory += added + g_.params(v);
          memory -= g_.bytes(v);
          break;
        }
        case step_kind::compute: break;
      }
      for (node_id x = first_freed_[i]; x != nobody; x = freed_next_[x]) memory -= g_.bytes(x);
      out.over = out.peak > cap;
    }
    for (std::size_t k = gradient_log_.size(); k-- > gradients_before;) gradient_[gradient_log_[k]] = 0;
    gradient_log_.resize(gradients_before);
    undo();
    return out;
  }

  std::size_t steps_priced() const noexcept { return steps_.size(); }

 private:
  static constexpr node_id nobody = std::numeric_limits<node_id>::max();

  // The bytes v's backward allocates: its own gradient when nothing reads
  // v, and a gradient buffer for each computed operand without one yet
  // (each passed to `noted`, for the undo).
  template <class Noted>
  std::uint64_t gradients_allocated(node_id v, Noted&& noted) {
    std::uint64_t added = g_.successors(v).empty() ? g_.bytes(v) : 0;
    for (node_id p : g_.predecessors(v))
      if (!g_.is_input(p) && !gradient_[p]) {
        gradient_[p] = 1;
        noted(p);
        added += g_.bytes(p);
      }
    return added;
  }

  // recompute_all_missing's steps (the missing values among `roots` and
  // their ancestors, in execution order), with the positions marked in a
  // bitset and read back in order rather than sorted: walks from the inputs
  // are long when little is kept.
  void recompute_missing(std::span<const node_id> roots) {
    std::size_t low = positions_.size(), high = 0;
    auto mark = [&](node_id x) {
      live_[x] = 2;
      stack_.push_back(x);
      const std::size_t at = position_[x];
      positions_[at / 64] |= std::uint64_t{1} << (at % 64);
      low = std::min(low, at / 64);
      high = std::max(high, at / 64);
    };
    for (node_id x : roots)
      if (!live_[x]) mark(x);
    while (!stack_.empty()) {
      const node_id v = stack_.back();
      stack_.pop_back();
      for (node_id p : g_.predecessors(v))
        if (!g_.is_input(p) && !live_[p]) mark(p);
    }
    for (std::size_t w = low; w <= high && w < positions_.size(); ++w) {
      for (std::uint64_t word = positions_[w]; word != 0; word &= word - 1) {
        const node_id v = at_position_[w * 64 + static_cast<std::size_t>(std::countr_zero(word))];
        if (passed_ != 0) {  // past the cap: unmark the rest
          live_[v] = 0;
          continue;
        }
        live_[v] = 1;
        fresh_[v] = 1;
        recomputed_.push_back(v);
        steps_.push_back({step_kind::recompute, v});
        std::uint64_t held = surely_held_ + g_.bytes(v) + g_.workspace(v);
        for (node_id p : g_.predecessors(v))
          if (fresh_[p] && p != v) held += g_.bytes(p);
        if (held > cap_) passed_ = held;
      }
      positions_[w] = 0;
    }
  }

  // Restores the state evaluate started from: released values, recomputed
  // values and consumer counts (gradient buffers are undone where set).
  void undo() {
    for (node_id x : recomputed_) live_[x] = fresh_[x] = 0;
    for (node_id x : released_) live_[x] = 1;
    released_.clear();
    for (node_id p : counted_) ++consumers_left_[p];
    counted_.clear();
  }

  // backward_release's rule after v's backward; within a stage (`logged`)
  // every change is noted for the undo, and kept values' frees become steps.
  void release(node_id v, bool logged) {
    auto drop = [&](node_id x) {
      live_[x] = 0;
      if (!logged) {
        memory_ -= g_.bytes(x);
        base_log_.push_back({x, change::released});
        return;
      }
      if (!fresh_[x]) {  // a kept value
        released_.push_back(x);
        surely_held_ -= std::min(surely_held_, g_.bytes(x));
      }
      steps_.push_back({step_kind::free, x});
    };
    if (live_[v]) drop(v);
    for (node_id p : operands_(v)) {
      if (g_.is_input(p)) continue;
      --consumers_left_[p];
      if (logged) counted_.push_back(p);
      else base_log_.push_back({p, change::counted});
      if (consumers_left_[p] == 0 && !reads_output(g_.reads(p)) && live_[p]) drop(p);
    }
  }

  const graph& g_;
  std::vector<std::uint32_t> position_;
  operands_in_order operands_;
  std::vector<node_id> sequence_;
  std::vector<char> live_, gradient_;
  std::vector<std::uint32_t> consumers_left_;
  std::uint64_t memory_ = 0, forward_peak_ = 0;
  // evaluate's cap, the memory the stage surely holds besides its recomputed
  // values so far, and a floor that passed the cap (0: none yet).
  std::uint64_t cap_ = 0, surely_held_ = 0, passed_ = 0;
  // Scratch for evaluate, and what it changed.
  std::vector<char> fresh_;            // recomputed in the stage being priced
  std::vector<std::size_t> last_use_;  // of a fresh value: the last step that uses it
  schedule steps_;
  std::vector<node_id> at_position_;     // the node at each execution position
  std::vector<std::uint64_t> positions_;  // recompute_missing's marks, cleared as read
  std::vector<node_id> recomputed_, reads_, wanted_, stack_;
  std::vector<node_id> first_freed_, freed_next_;
  std::vector<node_id> gradient_log_, released_, counted_;
  // run_all_backwards' log, for rise: each backward's memory before it and
  // where its changes start.
  enum class change : std::uint8_t { gradient_added, gradient_freed, released, counted };
  std::vector<std::pair<node_id, change>> base_log_;
  std::vector<std::pair<std::uint64_t, std::size_t>> steps_back_;
  std::size_t at_ = 0;
};

}  // namespace detail

/// The best split of `order` (empty: the id order) into stages of
/// consecutive nodes, each lazy or eager, for the kept set `kept`, by
/// `options.goal` (see the file comment); the plan's figures are the
/// simulator's.
inline stage_split_result split_stages(const graph& g, const node_set& kept, std::span<const node_id> order,
                                       const stage_split_options& options = {}) {
  stage_split_result out;
  node_set keep = kept;
  for (node_id v = 0; v < g.size(); ++v)
    if (g.is_input(v)) keep.erase(v);
  const std::size_t longest = std::max<std::size_t>(1, options.max_stage_nodes);
  constexpr std::uint64_t unreached = std::numeric_limits<std::uint64_t>::max();
  // The best split of the nodes from a run end on: its largest stage (or
  // the forward), its recompute, where its first stage ends and how it
  // recomputes.
  struct path {
    std::uint64_t peak = unreached;
    double recompute = 0;
    std::size_t end = 0;
    bool eager = false;
  };
  auto before = [](bool least_recompute, const path& a, const path& b) {
    return least_recompute ? std::pair{a.recompute, a.peak} < std::pair{b.recompute, b.peak}
                           : std::pair{a.peak, a.recompute} < std::pair{b.peak, b.recompute};
  };
  // Prices a stage; false when the time budget ran out.
  auto price = [&](detail::run_stage_pricer& pricer, std::size_t first, std::size_t end, bool eager,
                   std::uint64_t cap, detail::run_stage_pricer::price& p) {
    p = pricer.evaluate(first, end, eager, cap);
    ++out.stages_evaluated;
    out.stopped = options.time.charge(60 + 25 * pricer.steps_priced());
    return !out.stopped;
  };
  // A walk down the run ends, ranking splits of the nodes from each end on
  // by (peak, recompute) or, with `least_recompute`, (recompute, peak),
  // stages above `limit` left out: best[e] is the split of the nodes from e
  // on, final once the walk reaches e, where the pricer's state is that
  // after the backwards from e on. A split through an end that cannot rank
  // first is not priced (a stage costs at least nothing); for the least peak
  // only a lower one is looked for, since pricing the ties for their
  // recompute takes about four times the stages (on DARTS) for a recompute
  // that keep_within lowers anyway.
  auto walk_down = [&](bool least_recompute, std::uint64_t limit) -> std::optional<std::vector<path>> {
    detail::run_stage_pricer pricer(g, keep, order);
    const std::size_t nodes = pricer.nodes();
    std::vector<path> best(nodes + 1);
    if (pricer.forward_peak() <= limit) best[nodes].peak = pricer.forward_peak();
    for (std::size_t end = nodes; end > 0; --end) {
      if (best[end].peak != unreached)
        for (std::size_t first = end; first-- > 0 && end - first <= longest;)
          for (int eager = 0; eager < (end - first == 1 ? 1 : 2); ++eager) {  // one node: one mode
            path& mine = best[first];
            path through = best[end];
            through.end = end;
            through.eager = eager == 1;
            if (mine.peak != unreached &&
                (least_recompute ? !before(true, through, mine) : through.peak >= mine.peak))
              break;
            std::uint64_t cap = limit;
            if (!least_recompute && mine.peak != unreached) cap = std::min(cap, mine.peak - 1);
            detail::run_stage_pricer::price p;
            if (!price(pricer, first, end, eager == 1, cap, p)) return std::nullopt;
            if (p.over) continue;
            through.peak = std::max(through.peak, p.peak);
            through.recompute += p.recompute;
            if (mine.peak == unreached || before(least_recompute, through, mine)) mine = through;
          }
      pricer.fall();
    }
    if (best[0].peak == unreached) return std::nullopt;
    return best;
  };
  // The least peak alone, walking up: best[e] is the least peak of a split
  // of the nodes before e. Upward, a limit no split meets shows in the first
  // layers (the costliest on the zoo's networks), before the long walks back
  // to the inputs of the last ones are priced.
  auto least_peak_up = [&](std::uint64_t limit) -> std::optional<std::uint64_t> {
    detail::run_stage_pricer pricer(g, keep, order);
    const std::size_t nodes = pricer.nodes();
    while (pricer.at() > 0) pricer.fall();
    std::vector<std::uint64_t> best(nodes + 1, unreached);
    if (pricer.forward_peak() <= limit) best[0] = pricer.forward_peak();
    std::size_t unreached_run = 0;  // run ends in a row no split reaches
    for (std::size_t end = 1; end <= nodes; ++end) {
      pricer.rise();
      for (std::size_t first = end; first-- > 0 && end - first <= longest;)
        for (int eager = 0; eager < (end - first == 1 ? 1 : 2) && best[first] < best[end]; ++eager) {
          const std::uint64_t cap = std::min(limit, best[end] - 1);
          detail::run_stage_pricer::price p;
          if (!price(pricer, first, end, eager == 1, cap, p)) return std::nullopt;
          if (!p.over) best[end] = std::max(best[first], p.peak);
        }
      unreached_run = best[end] == unreached ? unreached_run + 1 : 0;
      if (unreached_run >= longest) return std::nullopt;  // no stage spans the gap
    }
    if (best[nodes] == unreached) return std::nullopt;
    return best[nodes];
  };
  // For a budget, the least recompute within it, else (or when none fits) the least peak.
  std::optional<std::vector<path>> best;
  if (options.goal == objective::time && options.budget != no_budget)
    best = walk_down(true, std::min(options.budget, options.ceiling));
  if (!best && !out.stopped)
    if (const std::optional<std::uint64_t> least = least_peak_up(options.ceiling); least && !out.stopped)
      best = walk_down(false, *least);
  if (!best) return out;
  general_plan plan;
  plan.kept = std::move(keep);
  plan.order.assign(order.begin(), order.end());
  plan.stage_of.assign(g.size(), 0);
  std::vector<node_id> sequence;
  for (node_id v : detail::execution_sequence(g, order))
    if (!g.is_input(v)) sequence.push_back(v);
  std::uint32_t stage = 0;
  for (std::size_t first = 0; first < sequence.size(); first = (*best)[first].end, ++stage) {
    for (std::size_t k = first; k < (*best)[first].end; ++k) plan.stage_of[sequence[k]] = stage;
    plan.modes.push_back((*best)[first].eager ? stage_recompute::eager : stage_recompute::lazy);
  }
  out.figures = simulate(g, plan.steps(g));
  REMAT_ASSERT(out.figures.peak_bytes == (*best)[0].peak);
  out.plan = std::move(plan);
  return out;
}

}  // namespace remat
