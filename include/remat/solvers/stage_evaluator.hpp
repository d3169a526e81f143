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
class stage_evaluator {
 public:
  stage_evaluator(const graph& g, const series_decomposition& pieces, bool summarize_pieces = true)
      : g_(g), pieces_(pieces), mark_(g.size(), 0), pending_(g.size(), 0),
        release_(g.size(), 0), last_consumer_(g.size(), 0) {
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
  };
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
    ++stamp_;
    middle_lo_ = 1;
    middle_hi_ = 0;
    walked_last_ = stage.back();
    for (node_id v : stage) mark(v, in_stage);
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

    std::uint64_t backward = 0;
    recompute_phase(stage, cur, backward, out.recompute);
    for (std::size_t k = stage.size(); k-- > 0;) backward_step(stage[k], cur, backward);
    out.peak = std::max(resident_ + forward, backward > released ? backward - released : 0);
    return out;
  }

  /// Stage and frontier nodes walked so far, a measure of the work done
  /// (time_budget::charge).
  std::uint64_t nodes_walked() const noexcept { return nodes_walked_; }

 private:
  enum : std::uint8_t { in_stage = 1, kept = 2, alive = 4, grad = 8, recomputed = 16 };
  static constexpr std::uint64_t never = std::numeric_limits<std::uint64_t>::max();
  // Effects are measured from a high base so that falls below the start stay representable.
  static constexpr std::uint64_t base = std::uint64_t{1} << 62;

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
  const series_decomposition& pieces_;
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
  node_id middle_lo_ = 1, middle_hi_ = 0;
};

}  // namespace remat::detail
