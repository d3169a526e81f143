#pragma once

/// \file
/// What one stage of a lower-set plan costs (stage_cost), computed exactly as
/// schedule_from_stages runs it, in O(1) for long stages over series graphs
/// (stage_evaluator).

#include <remat/config.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <remat/analysis/lower_sets.hpp>
#include <remat/graph/graph.hpp>
#include <remat/graph/node_set.hpp>
#include <remat/solvers/stage_steps.hpp>

namespace remat::detail {

/// What running one stage costs, independent of the bytes kept before it.
struct stage_cost {
  std::uint64_t kept_added = 0;  ///< bytes of the stage's nodes kept for later stages
  std::uint64_t peak = 0;        ///< largest memory of any of its steps, minus earlier kept bytes
  double recompute = 0;          ///< recompute time of its backward
};

/// Computes stage costs exactly as schedule_from_stages runs them. Scratch
/// arrays are stamped.
///
/// Long stages on series graphs. A stage that spans pieces i..j of
/// decompose_series holds every piece between them whole, and a piece k with
/// whole pieces on both sides (i < k < j − 1) always runs the same steps: none
/// of its nodes is kept, and which of them the backward recomputes depends only
/// on whether the stage recomputes the separator closing it (the separator
/// opening it is then decided by the piece too). So each such piece is run once
/// per case up front, giving its effect on the memory in each phase (rise above
/// the memory it starts from, net change). Effects compose, so runs of 2^l
/// consecutive pieces are composed too (binary lifting: the upper half's case
/// picks the lower half's), and any run is O(log) blocks, or O(1) when the
/// caller names the source (its runs grow one piece at a time). The stage's
/// nodes in piece i (its head) and in pieces j − 1 and j (its tail) are run
/// the same way, on their own: the head depends only on L and on the case the
/// whole pieces pass down, the tail only on L ∪ V. Given ids for L and L ∪ V
/// both are kept, so an evaluation composes three summaries instead of
/// walking O(|V| + edges at V).
class stage_evaluator : public stage_steps {
 public:
  stage_evaluator(const graph& g, const series_decomposition& pieces, bool summarize_pieces = true)
      : stage_steps(g), pieces_(pieces) {
    resident_ = g.param_bytes() + g.input_bytes();
    total_params_ = g.param_bytes();
    params_before_piece_.assign(pieces.pieces.size() + 1, 0);
    for (std::size_t k = 0; k < pieces.pieces.size(); ++k) {
      std::uint64_t params = 0;
      for (node_id v = pieces.pieces[k].first; v <= pieces.pieces[k].last; ++v) params += g.params(v);
      params_before_piece_[k + 1] = params_before_piece_[k] + params;
    }
    if (summarize_pieces && pieces.pieces.size() >= 3) {
      std::vector<std::array<piece_run, 2>> single(pieces.pieces.size());
      for (std::size_t k = 1; k + 1 < pieces.pieces.size(); ++k)
        for (bool closing : {false, true}) single[k][closing] = summarize(static_cast<std::uint32_t>(k), closing);
      runs_.push_back(std::move(single));
      // runs_[l][k]: pieces k − 2^l + 1 .. k, the upper half's case deciding the lower's
      for (std::size_t half = 1; 2 * half <= pieces.pieces.size() - 2; half *= 2) {
        const auto& below = runs_.back();
        std::vector<std::array<piece_run, 2>> doubled(pieces.pieces.size());
        for (std::size_t k = 2 * half; k + 1 < pieces.pieces.size(); ++k)
          for (bool closing : {false, true}) {
            const piece_run& upper = below[k][closing];
            doubled[k][closing] = upper.above(below[k - half][upper.opening_recomputed]);
          }
        runs_.push_back(std::move(doubled));
      }
    }
  }

  /// What a caller that grows stages node by node keeps up to date anyway;
  /// given it, evaluate() does not walk the consumers of every stage and
  /// frontier node again (on DenseNet blocks that walk was half its time),
  /// nor run the forward phase again.
  struct consumer_counts {
    std::span<const std::uint32_t> outside;   ///< per stage node: consumers outside L ∪ V
    std::span<const std::uint32_t> in_base;   ///< per frontier node: consumers in L
    std::span<const std::uint32_t> in_stage;  ///< per frontier node: consumers in V
    /// The highest the forward phase holds above the resident bytes, as
    /// forward_step computes it: adding the largest node last, each step frees
    /// the operands it was the last consumer of, so the walk's running figure
    /// is exact.
    std::uint64_t forward = 0;
    /// Per stage node, in the walk's order: an id for the stage ending there
    /// (unique over the walk), and its least predecessor in the stage (or
    /// no_node). Given them, a stage that extends an evaluated one by a
    /// branch reading nothing of it is evaluated from that one's summary.
    std::span<const std::uint64_t> prefix_ids;
    std::span<const node_id> least_stage_read;
  };
  static constexpr node_id no_node = std::numeric_limits<node_id>::max();
  static constexpr std::uint32_t no_state = std::numeric_limits<std::uint32_t>::max();

  /// `in_base(u)`: u ∈ L. `stage`: V ascending. `frontier`: the nodes of L
  /// with a consumer outside L. `params_in_base`: parameter bytes of L.
  /// `counts`: optional, see consumer_counts. `source`, `target`: ids the
  /// caller gives L and L ∪ V (or no_state); a long stage's head is then
  /// reused while L stays the same, and its tail for every stage into L ∪ V.
  template <class InBase>
  stage_cost evaluate(InBase&& in_base, const std::vector<node_id>& stage, const std::vector<node_id>& frontier,
                      std::uint64_t params_in_base, const consumer_counts* counts = nullptr,
                      std::uint32_t source = no_state, std::uint32_t target = no_state) {
    if (!runs_.empty()) {
      const std::uint32_t i = pieces_.piece_of[stage.front()], j = pieces_.piece_of[stage.back()];
      if (j >= i + 3) return evaluate_long(in_base, stage, frontier, params_in_base, i, j, source, target);
    }
    if (counts && !counts->prefix_ids.empty()) {
      if (const std::size_t k = branch_start(stage, *counts); k != 0) {
        const stage_cost out = evaluate_branch(stage, k, *counts);
        // The check walks the stage again; it is not charged, so work units
        // are the same with asserts as without.
        const std::uint64_t walked = nodes_walked_;
        REMAT_ASSERT(same_cost(out, evaluate_whole(in_base, stage, frontier, params_in_base, counts, false)));
        nodes_walked_ = walked;
        return out;
      }
    }
    return evaluate_whole(in_base, stage, frontier, params_in_base, counts, true);
  }

 private:
  static bool same_cost(const stage_cost& x, const stage_cost& y) {
    return x.kept_added == y.kept_added && x.peak == y.peak && x.recompute == y.recompute;
  }

  // Walks every node of the stage. `remember`: keep its summary for the
  // stages that extend it by a branch (walked stages only).
  template <class InBase>
  stage_cost evaluate_whole(InBase&& in_base, const std::vector<node_id>& stage, const std::vector<node_id>& frontier,
                            std::uint64_t params_in_base, const consumer_counts* counts, bool remember) {
    begin_walk(stage, stage.back());
    stage_cost out;

    // Backward start: later parameter gradients, gradient buffers of nodes with
    // a consumer already done, kept values not yet released.
    std::uint64_t params_in_stage = 0;
    std::uint64_t cur = resident_ + (total_params_ - params_in_base);
    if (counts) {
      enter_nodes(stage, [&](node_id v) { return counts->outside[v]; }, out.kept_added, params_in_stage, cur);
    } else {
      enter_nodes(stage, [&](node_id v) { return consumers_outside(v); }, out.kept_added, params_in_stage, cur);
    }
    cur -= params_in_stage;
    std::uint64_t released = 0;
    nodes_walked_ += frontier.size();
    for (node_id u : frontier) {
      std::uint32_t waiting = 0;  // consumers in L ∪ V
      if (counts) {
        waiting = counts->in_base[u] + counts->in_stage[u];
      } else {
        for (node_id s : g_.successors(u)) waiting += (in_base(s) || in_v(s)) ? 1 : 0;
      }
      frontier_start(u, waiting, cur, released);
    }
    // The kept bytes M include `released`; the caller adds M, and this stage's
    // peak is max(forward, backward − released) above it.

    // Which dropped nodes the stage's backward needs, and when each dies.
    for (std::size_t k = stage.size(); k-- > 0;) decide(stage[k]);
    const std::uint64_t forward = counts ? counts->forward : forward_peak(stage);
    REMAT_ASSERT(!counts || forward == forward_peak(stage));
    for (node_id x : stage)
      if (has(x, recomputed)) set_release(x);

    const std::uint64_t start = cur;
    std::uint64_t recompute_peak = 0, backward_peak = 0;
    const bool any = recompute_phase(stage, cur, recompute_peak, out.recompute);
    const std::uint64_t recomputed_at = cur;
    for (std::size_t k = stage.size(); k-- > 0;) backward_step(stage[k], cur, backward_peak);
    const std::uint64_t backward = std::max(recompute_peak, backward_peak);
    out.peak = std::max(resident_ + forward, backward > released ? backward - released : 0);
    if (remember && counts && !counts->prefix_ids.empty())
      remember_walked(stage.size(), {counts->prefix_ids[stage.size() - 1], start, released,
                                     phase_effect{any ? recompute_peak - start : 0, recomputed_at - start, any},
                                     phase_effect{backward_peak - recomputed_at, cur - recomputed_at, true},
                                     out.recompute, out.kept_added});
    return out;
  }

  // A walked stage as the stages extending it see it: its backward's start
  // (as evaluate's cur then), the kept bytes of L it releases, its recompute
  // and backward phases from that start.
  struct walked_run {
    std::uint64_t prefix_id = 0;  // 0: none
    std::uint64_t start = 0, released = 0;
    phase_effect recompute, backward;
    double recompute_time = 0;
    std::uint64_t kept_added = 0;
  };
  void remember_walked(std::size_t size, const walked_run& run) {
    if (walked_.size() <= size) walked_.resize(size + 1);
    walked_[size] = run;
  }

  // The longest prefix stage[0..k) (k ≥ 1) with a summary whose remaining
  // nodes, at most max_branch of them, read none of its nodes; 0 if none.
  // Such a branch (PSPNet's auxiliary head beside layer4) runs its phases
  // apart from the prefix's: nodes are numbered in a topological order, so
  // nothing in the prefix reads it either.
  static constexpr std::size_t max_branch = 16;
  std::size_t branch_start(const std::vector<node_id>& stage, const consumer_counts& counts) const {
    node_id least = no_node;
    for (std::size_t k = stage.size() - 1; k >= 1 && stage.size() - k <= max_branch; --k) {
      least = std::min(least, counts.least_stage_read[k]);
      if (least >= stage[k] && k < walked_.size() && walked_[k].prefix_id == counts.prefix_ids[k - 1]) return k;
    }
    return 0;
  }

  // The stage stage[0..k) summarised, then its branch stage[k..) walked on
  // its own. The two share only nodes of L that both read (the branch's run
  // starts where the prefix's would, their phases interleave in the same
  // order as evaluate's steps): a value of L read by both has its gradient
  // buffer by the prefix's backward either way, and the same consumers left
  // there, so the prefix's phases are unchanged; the branch moves only the
  // figures at the start of the values of L it reads.
  stage_cost evaluate_branch(const std::vector<node_id>& stage, std::size_t k, const consumer_counts& counts) {
    const walked_run prefix = walked_[k];
    const std::span<const node_id> branch(stage.begin() + static_cast<std::ptrdiff_t>(k), stage.end());
    begin_walk(branch, stage.back());
    stage_cost out;
    std::uint64_t params = 0, start = prefix.start;
    enter_nodes(branch, [&](node_id v) { return counts.outside[v]; }, out.kept_added, params, start);
    start -= params;
    std::uint64_t released = prefix.released;
    for (node_id v : branch)
      for (node_id u : g_.predecessors(v)) {
        if (g_.is_input(u) || has(u, in_stage) || has(u, alive)) continue;
        // u ∈ L: without the branch, its consumers in the branch were outside L ∪ V
        const std::uint32_t waiting = counts.in_base[u] + counts.in_stage[u];
        std::uint32_t in_branch = 0;
        for (node_id s : g_.successors(u)) in_branch += has(s, in_stage) ? 1 : 0;
        const std::uint32_t without = waiting - in_branch;
        const std::size_t consumers = g_.successors(u).size();
        start -= without < consumers ? g_.bytes(u) : 0;
        if (without == 0 && !reads_output(g_.reads(u))) released -= g_.bytes(u);
        std::uint64_t ignored = 0;
        frontier_start(u, waiting, start, ignored);  // waiting > 0: marks u alive
        ++nodes_walked_;
      }
    for (std::size_t i = branch.size(); i-- > 0;) decide(branch[i]);
    for (node_id x : branch)
      if (has(x, recomputed)) set_release(x);
    out.recompute = prefix.recompute_time;
    std::uint64_t cur = base, peak = 0;
    const bool any = recompute_phase(branch, cur, peak, out.recompute);
    const phase_effect recompute = effect(cur, peak, any);
    cur = base;
    peak = 0;
    for (std::size_t i = branch.size(); i-- > 0;) backward_step(branch[i], cur, peak);
    const phase_effect backward = effect(cur, peak, true);
    out.kept_added += prefix.kept_added;

    std::uint64_t memory = start, highest = 0;
    prefix.recompute.apply(memory, highest);
    recompute.apply(memory, highest);
    backward.apply(memory, highest);
    prefix.backward.apply(memory, highest);
    out.peak = std::max(resident_ + counts.forward, highest > released ? highest - released : 0);
    remember_walked(stage.size(), {counts.prefix_ids[stage.size() - 1], start, released,
                                   prefix.recompute.then(recompute), backward.then(prefix.backward), out.recompute,
                                   out.kept_added});
    return out;
  }

  // Whole pieces between whole pieces, run by a stage that recomputes (or not)
  // the separator closing the highest of them.
  struct piece_run {
    phase_effect forward, recompute, backward;
    double recompute_time = 0;
    bool opening_recomputed = false;  // the separator opening the lowest piece
    // this run on top of the run just below it (which starts in the case this one passes down)
    piece_run above(const piece_run& lower) const {
      return {lower.forward.then(forward), lower.recompute.then(recompute), backward.then(lower.backward),
              lower.recompute_time + recompute_time, lower.opening_recomputed};
    }
  };

  // Pieces first..last composed from the blocks of runs_, highest first.
  piece_run run_of(std::uint32_t first, std::uint32_t last, bool closing) const {
    std::uint32_t top = last;
    std::size_t remaining = last - first + 1;
    piece_run out;  // the empty run: composing with it changes nothing
    // the largest block is over half of any run, so each size is taken at most once
    for (std::size_t level = runs_.size(); level-- > 0;) {
      const std::size_t size = std::size_t{1} << level;
      if (remaining < size) continue;
      const piece_run& block = runs_[level][top][closing];
      out = out.above(block);
      closing = block.opening_recomputed;
      top -= static_cast<std::uint32_t>(size);
      remaining -= size;
    }
    return out;
  }

  // The two ends of a long stage (pieces i..j, j ≥ i + 3), each run on its own
  // as summarize() runs a whole piece. A stage's costs are then its head, the
  // run of whole pieces i + 1..j − 2 and its tail composed, phase by phase.
  // The head (the stage's nodes in piece i) depends only on L and on whether
  // the whole pieces recompute the separator closing piece i; the tail (pieces
  // j − 1 and j) only on L ∪ V.
  struct end_run {
    phase_effect forward, recompute, backward;
    double recompute_time = 0;
    std::uint64_t kept_added = 0;  // bytes of its nodes kept for later stages
    std::uint64_t start = 0;       // gradient buffers and kept values alive when the backward starts
    std::uint64_t released = 0;    // kept bytes of L that die before the backward
    std::uint64_t params = 0;      // parameter bytes of its nodes
    bool closing_recomputed = false;  // tail: the separator closing the whole pieces below it
  };

  template <class InBase>
  stage_cost evaluate_long(InBase&& in_base, const std::vector<node_id>& stage, const std::vector<node_id>& frontier,
                           std::uint64_t params_in_base, std::uint32_t i, std::uint32_t j, std::uint32_t source,
                           std::uint32_t target) {
    const std::uint32_t first_middle = i + 1, last_middle = j - 2;
    const node_id head_closing = pieces_.pieces[i].last, middle_closing = pieces_.pieces[last_middle].last;
    const auto head_end = std::lower_bound(stage.begin(), stage.end(), pieces_.pieces[first_middle].first);
    const auto tail_begin = std::upper_bound(head_end, stage.end(), middle_closing);
    const std::span<const node_id> head(stage.begin(), head_end), tail(tail_begin, stage.end());

    end_run fresh_tail;
    const end_run* t = &fresh_tail;
    if (target != no_state && target < tails_.size() && tails_[target].second) {
      t = &tails_[target].first;
    } else {
      fresh_tail = tail_part(tail, middle_closing);
      if (target != no_state) {
        if (tails_.size() <= target) tails_.resize(target + 1);
        tails_[target] = {fresh_tail, true};
      }
    }
    const piece_run middle = source == no_state ? run_of(first_middle, last_middle, t->closing_recomputed)
                                                : run_from(source, first_middle, last_middle, t->closing_recomputed);
    const bool closing = middle.opening_recomputed;
    // Every head of one source has the same nodes (all of piece i not in L):
    // the stage holds the separator closing piece i, hence all of piece i.
    head_memo& memo = heads_[closing];
    if (source == no_state || memo.source != source || memo.piece != i || memo.size != head.size()) {
      memo.run = head_part(in_base, head, frontier, closing, head_closing);
      memo.source = source;
      memo.piece = i;
      memo.size = head.size();
    }
    const end_run& h = memo.run;

    const std::uint64_t params_in_stage =
        h.params + (params_before_piece_[last_middle + 1] - params_before_piece_[first_middle]) + t->params;
    std::uint64_t cur = resident_ + (total_params_ - params_in_base - params_in_stage) + h.start + t->start;
    std::uint64_t live = 0, forward = 0, backward = 0;
    h.forward.apply(live, forward);
    middle.forward.apply(live, forward);
    t->forward.apply(live, forward);
    h.recompute.apply(cur, backward);
    middle.recompute.apply(cur, backward);
    t->recompute.apply(cur, backward);
    t->backward.apply(cur, backward);
    middle.backward.apply(cur, backward);
    h.backward.apply(cur, backward);
    stage_cost out;
    out.kept_added = h.kept_added + t->kept_added;
    out.recompute = h.recompute_time + middle.recompute_time + t->recompute_time;
    out.peak = std::max(resident_ + forward, backward > h.released ? backward - h.released : 0);
    return out;
  }

  // The head: the stage's nodes in piece i, above L, below whole pieces whose
  // run recomputes (or not) `head_closing`, the separator closing piece i.
  template <class InBase>
  end_run head_part(InBase&& in_base, std::span<const node_id> head, const std::vector<node_id>& frontier,
                    bool closing, node_id head_closing) {
    ++stamp_;
    walked_last_ = head.back();
    middle_lo_ = head_closing + 1;  // everything above piece i is in the stage
    middle_hi_ = static_cast<node_id>(g_.size() - 1);
    end_run out;
    for (node_id v : head) mark(v, in_stage);
    std::uint64_t start = base;
    enter_nodes(head, [&](node_id v) { return consumers_outside(v); }, out.kept_added, out.params, start);
    nodes_walked_ += frontier.size();
    for (node_id u : frontier) {
      std::uint32_t waiting = 0;
      for (node_id s : g_.successors(u)) waiting += (in_base(s) || in_v(s)) ? 1 : 0;
      frontier_start(u, waiting, start, out.released);
    }
    out.start = start - base;

    if (closing) mark(head_closing, recomputed);
    for (std::size_t k = head.size(); k-- > 0;)
      if (head[k] != head_closing) decide(head[k]);
    std::uint64_t live = base, forward = 0;
    for (node_id v : head) forward_step(v, live, forward);
    out.forward = effect(live, forward, true);
    for (node_id x : head)
      if (has(x, recomputed)) set_release(x);
    release_[head_closing] = never;  // the whole pieces release it

    recompute_and_backward(head, out, [&] {
      if (!reads_output(g_.reads(head_closing))) unmark(head_closing, alive);
    });
    return out;
  }

  // The tail: pieces j − 1 (whole) and the stage's nodes in piece j, above the
  // whole pieces closed by `middle_closing`.
  end_run tail_part(std::span<const node_id> tail, node_id middle_closing) {
    ++stamp_;
    walked_last_ = tail.back();
    middle_lo_ = middle_closing;  // the only node of the stage below the tail that a tail node reads
    middle_hi_ = middle_closing;
    end_run out;
    for (node_id v : tail) mark(v, in_stage);
    std::uint64_t start = base;
    enter_nodes(tail, [&](node_id v) { return consumers_outside(v); }, out.kept_added, out.params, start);
    out.start = start - base;

    for (std::size_t k = tail.size(); k-- > 0;) decide(tail[k]);
    out.closing_recomputed = needed(middle_closing);
    if (out.closing_recomputed) mark(middle_closing, recomputed);
    std::uint64_t live = base, forward = 0;
    for (node_id v : tail) forward_step(v, live, forward);
    out.forward = effect(live, forward, true);
    for (node_id x : tail)
      if (has(x, recomputed)) set_release(x);
    if (out.closing_recomputed) {
      set_release(middle_closing);
      mark(middle_closing, alive);  // recomputed by the whole pieces
    }

    recompute_and_backward(tail, out, [] {});
    return out;
  }

  // The last two phases of an end run, each measured from `base`; `between`
  // runs after the recomputation. Ends the run (no whole pieces in the stage).
  template <class Between>
  void recompute_and_backward(std::span<const node_id> nodes, end_run& out, Between&& between) {
    std::uint64_t cur = base, peak = 0;
    const bool any = recompute_phase(nodes, cur, peak, out.recompute_time);
    out.recompute = effect(cur, peak, any);
    between();
    cur = base;
    peak = 0;
    for (std::size_t k = nodes.size(); k-- > 0;) backward_step(nodes[k], cur, peak);
    out.backward = effect(cur, peak, true);
    middle_lo_ = 1;
    middle_hi_ = 0;
  }

  // Pieces first..last for the stages of one source: all runs start at the
  // same piece, so each is the run below it with one piece on top, kept as
  // they are first needed (O(1) a stage instead of run_of's O(log)).
  const piece_run& run_from(std::uint32_t source, std::uint32_t first, std::uint32_t last, bool closing) {
    if (from_.source != source || from_.first != first) {
      from_.source = source;
      from_.first = first;
      from_.runs.clear();
    }
    while (first + from_.runs.size() <= last) {
      const std::uint32_t k = first + static_cast<std::uint32_t>(from_.runs.size());
      std::array<piece_run, 2> next;
      for (bool c : {false, true}) {
        const piece_run& single = runs_[0][k][c];
        next[c] = k == first ? single : single.above(from_.runs.back()[single.opening_recomputed]);
      }
      from_.runs.push_back(next);
    }
    return from_.runs[last - first][closing];
  }

  // Runs piece k as a whole piece of a stage whose backward recomputes (or
  // not) the separator closing it, with the same steps evaluate() takes.
  piece_run summarize(std::uint32_t k, bool closing) {
    ++stamp_;
    const auto& pc = pieces_.pieces[k];
    const node_id opening = pieces_.pieces[k - 1].last;
    walked_last_ = pc.last;
    middle_lo_ = opening;
    middle_hi_ = pc.last;
    piece_run m;
    std::uint64_t live = base, forward = 0;
    for (node_id v = pc.first; v <= pc.last; ++v)
      if (!g_.is_input(v)) forward_step(v, live, forward);
    m.forward = effect(live, forward, true);

    if (closing) mark(pc.last, recomputed);
    for (node_id v = pc.last; v-- > pc.first;)
      if (!g_.is_input(v) && needed(v)) mark(v, recomputed);
    const bool opening_needed = needed(opening);
    m.opening_recomputed = opening_needed;
    if (opening_needed) {
      mark(opening, recomputed);
      set_release(opening);
      mark(opening, alive);
    }
    for (node_id v = pc.first; v < pc.last; ++v)
      if (has(v, recomputed)) set_release(v);

    std::uint64_t cur = base, peak = 0;
    bool any = false;
    for (node_id v = pc.first; v <= pc.last; ++v) {
      if (g_.is_input(v) || !has(v, recomputed)) continue;
      recompute_step(v, cur, peak);
      m.recompute_time += g_.time(v);
      any = true;
    }
    m.recompute = effect(cur, peak, any);

    // The next piece has taken the closing separator's gradient buffer and,
    // unless its own backward reads it, released its recomputed value.
    mark(pc.last, grad);
    if (closing && !reads_output(g_.reads(pc.last))) unmark(pc.last, alive);
    cur = base;
    peak = 0;
    for (node_id v = pc.last + 1; v-- > pc.first;)
      if (!g_.is_input(v)) backward_step(v, cur, peak);
    m.backward = effect(cur, peak, true);
    middle_lo_ = 1;
    middle_hi_ = 0;
    return m;
  }

  const series_decomposition& pieces_;
  std::uint64_t resident_ = 0, total_params_ = 0;
  std::vector<std::uint64_t> params_before_piece_;
  std::vector<std::vector<std::array<piece_run, 2>>> runs_;  // empty: no summaries
  struct head_memo {
    std::uint32_t source = no_state, piece = 0;
    std::size_t size = 0;
    end_run run;
  };
  struct runs_from_memo {
    std::uint32_t source = no_state, first = 0;
    std::vector<std::array<piece_run, 2>> runs;  // [last − first][closing]
  };
  runs_from_memo from_;
  std::array<head_memo, 2> heads_;                 // by whether the whole pieces recompute the head's closing
  std::vector<std::pair<end_run, bool>> tails_;    // by target state; second: computed
  std::vector<walked_run> walked_;                 // by stage size, for the walk's current stage
};

}  // namespace remat::detail
