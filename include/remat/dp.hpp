#pragma once

/// \file
/// Dynamic programmes over increasing sequences of lower sets (Kusumoto et al.,
/// NeurIPS 2019), with a cost model that knows what each backward reads, and
/// figures equal to the simulator's to the byte.
///
/// A plan is a chain ∅ = L₀ ⊂ L₁ ⊂ … ⊂ L_k = V of lower sets; stage i holds
/// V_i = L_i \ L_{i-1} and the schedule is schedule_from_stages (see
/// schedule.hpp for what is kept, recomputed and freed). Design note: the
/// builder frees a value kept from the forward only after the backwards of all
/// its consumers (and its own when it reads its output), so the memory while
/// stage i runs is exactly M_{i-1} + c(L_{i-1}, L_i), where M is the bytes kept
/// by earlier stages and c depends on the two lower sets only. A label
/// (kept bytes M, peak so far P, recompute time R) per lower set, pruned to its
/// Pareto front, then makes the programme exact:
///
/// * memory objective: least peak, then least recompute;
/// * time objective: least recompute with every stage within a byte budget;
/// * frontier: every (peak, recompute) pair no other plan beats on both. Its
///   three-dimensional labels are settled per state in batches (a sort and a
///   staircase, O(N log N) for N labels), after plans sampled along the
///   frontier with two-dimensional labels have pruned those that cannot
///   reach it.
///
/// Families of lower sets:
/// * `exact`: all lower sets, generated on demand by reverse search from each
///   state, pruned by bounds that only grow as a stage grows (the bytes of
///   recomputed values read by a backward, the kept bytes not yet released,
///   the forward peak; and for the time objective the recompute time). States
///   are keyed by (piece, lower set of the piece) using decompose_series.
///   A stage across whole pieces costs O(1) once the head of its source and
///   the tail of its target are known (stage_evaluator), a stage within a few
///   pieces O(|stage| + edges at it), and its target state is found by a
///   running XOR of node keys; so the work is O(Σ_L |supersets(L)| · deg)
///   plus the labels: the number of lower sets is the driver (see
///   lower_sets.hpp).
/// * `prefix`: the prefixes of the id order (stages are id intervals): exact on
///   linear graphs, an approximation elsewhere. O(n · |stage| · (|stage| + deg)).
/// * `principal`: Kusumoto's approximate family {∅} ∪ {↓v} ∪ {V}, all
///   comparable pairs. O(n² · (n + m)).

#include <algorithm>
#include <array>
#include <cmath>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "detail/block_vector.hpp"
#include "bounds.hpp"
#include "graph.hpp"
#include "lower_sets.hpp"
#include "node_set.hpp"
#include "schedule.hpp"
#include "simulate.hpp"
#include "solution.hpp"
#include "units.hpp"

namespace remat {

enum class objective { memory, time };

enum class dp_family { exact, prefix, principal };

struct dp_options {
  objective goal = objective::memory;
  /// Time objective: no step may exceed this many bytes. Memory objective:
  /// plans above it are not explored (an upper bound speeds the search).
  std::uint64_t budget = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t max_states = std::uint64_t{1} << 22;
  std::uint64_t max_transitions = std::uint64_t{1} << 32;
  std::chrono::milliseconds time_limit{0};  ///< 0: none
  /// Keep the whole Pareto front of (peak, recompute) at the end (pareto.hpp).
  bool keep_frontier = false;
  /// Memory objective: return a least-peak plan without minimising its
  /// recompute (skips the label phase; used to bound other searches).
  bool peak_only = false;
  /// The label phase stops past this many labels and falls back to the
  /// least-kept plan (see dp_result).
  std::uint64_t max_labels = std::uint64_t{1} << 23;
  /// Only chains that keep gradient sums bit-for-bit (gradient_order_constraints):
  /// then a plan never changes a single bit of the gradients.
  bool preserve_gradient_order = true;
};

/// One point of the Pareto frontier with the stage assignment that reaches it
/// and the execution order it runs in (empty: the graph's id order).
struct frontier_point {
  std::uint64_t peak = 0;
  double recompute = 0;
  std::vector<std::uint32_t> stage_of;
  std::vector<node_id> order;
  /// False for a sampled point whose budget's labels outgrew their cap or the
  /// time limit: a least-kept plan within the budget, its recompute not the
  /// least (pareto.hpp).
  bool least_recompute = true;
};

/// How many budgets a frontier is sampled at, from the least peak to the peak
/// of the least-recompute plan (dp_result::sampled, pareto.hpp).
inline constexpr std::uint64_t frontier_sample_count = 24;

struct dp_result {
  solution result;
  std::vector<frontier_point> frontier;  ///< when options.keep_frontier, by increasing peak
  bool complete = false;                 ///< the family was fully explored
  bool labels_capped = false;            ///< the label phase stopped at max_labels or the time limit (no frontier)
  /// When options.keep_frontier: the least recompute at evenly spaced budgets
  /// (sample_frontier), each point optimal for its budget; what a caller
  /// can show when the labels are capped. Unsorted, may repeat a point.
  std::vector<frontier_point> sampled;
  bool sampled_all = false;  ///< every budget got its plan (the two-dimensional labels fit)
};

namespace detail {

/// (peak, recompute) of complete plans, by rising peak and falling recompute.
using known_points = std::vector<std::pair<std::uint64_t, double>>;

/// Plans sampled along a frontier (dp_engine::sample_frontier).
struct frontier_sampling {
  std::vector<frontier_point> plans;  ///< in the order sampled
  known_points staircase;             ///< their figures, by rising peak and falling recompute
  bool all = false;                   ///< every budget got its least-recompute plan
  bool timed_out = false;             ///< the time limit ended the sampling
};

/// Recompute times summed in different orders differ in their last bits; a
/// frontier point must save more than that over the point before it.
inline bool saves_recompute(double candidate, double best) noexcept {
  return std::isinf(best) ? candidate < best : candidate < best - 1e-12 * best;
}

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

  /// Consumer counts a caller that grows stages node by node keeps up to date
  /// anyway; given them, evaluate() does not walk the consumers of every stage
  /// and frontier node again (on DenseNet blocks that walk was half its time).
  struct consumer_counts {
    std::span<const std::uint32_t> outside;   ///< per stage node: consumers outside L ∪ V
    std::span<const std::uint32_t> in_base;   ///< per frontier node: consumers in L
    std::span<const std::uint32_t> in_stage;  ///< per frontier node: consumers in V
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
    std::uint64_t live = 0, forward = 0;
    for (node_id v : stage) forward_step(v, live, forward);
    for (node_id x : stage)
      if (has(x, recomputed)) set_release(x);

    std::uint64_t backward = 0;
    recompute_phase(stage, cur, backward, out.recompute);
    for (std::size_t k = stage.size(); k-- > 0;) backward_step(stage[k], cur, backward);
    out.peak = std::max(resident_ + forward, backward > released ? backward - released : 0);
    return out;
  }

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

struct dp_label {
  std::uint64_t kept;
  std::uint64_t peak;
  double recompute;
  std::uint32_t state;      // the lower set it belongs to
  std::uint32_t previous;   // label it extends (npos for the start)
};

/// The label programme shared by the three families.
class dp_engine {
 public:
  static constexpr std::uint32_t npos = std::numeric_limits<std::uint32_t>::max();

  dp_engine(const graph& g, const dp_options& options)
      : g_(g), options_(options), pieces_(decompose_series(g)),
        constraints_(options.preserve_gradient_order ? gradient_order_constraints(g) : precedence{}),
        evaluator_(g, pieces_), walker_(g, &constraints_),
        start_time_(std::chrono::steady_clock::now()) {
    computed_before_.assign(g.size() + 1, 0);
    params_before_.assign(g.size() + 1, 0);
    for (node_id v = 0; v < g.size(); ++v) {
      computed_before_[v + 1] = computed_before_[v] + (g.is_input(v) ? 0 : 1);
      params_before_[v + 1] = params_before_[v] + g.params(v);
    }
    total_computed_ = computed_before_[g.size()];
    // A random key per computed node; a lower set's key is the XOR of its
    // members', so a stage's target is found from the walk's running XOR
    // without building its set (the candidates are then checked exactly).
    key_of_.assign(g.size(), 0);
    key_before_.assign(g.size() + 1, 0);
    std::uint64_t seed = 0x9e3779b97f4a7c15ULL;
    for (node_id v = 0; v < g.size(); ++v) {
      if (!g.is_input(v)) key_of_[v] = splitmix64(seed);
      key_before_[v + 1] = key_before_[v] ^ key_of_[v];
    }
    resident_ = g.param_bytes() + g.input_bytes();
    buckets_.resize(total_computed_ + 1);
  }

  /// Phase 1: creates the lower sets reachable with every stage within
  /// `bound`, evaluates each stage once and keeps it. Returns false when a cap
  /// or the time limit stopped it.
  bool enumerate(dp_family family, std::uint64_t bound) {
    bound_ = bound;
    const std::uint32_t start = intern(0, node_set(piece_size(0)));
    min_kept_[start] = 0;
    std::vector<std::vector<node_id>> principal;
    if (family == dp_family::principal && (principal = principal_sets()).empty()) return false;
    for (std::size_t size = 0; size < total_computed_; ++size) {
      for (std::size_t k = 0; k < buckets_[size].size(); ++k) {
        const std::uint32_t s = buckets_[size][k];
        if (min_kept_[s] == unreachable) continue;
        const bool ok = family == dp_family::principal ? expand_principal(s, principal)
                                                       : expand_walk(s, family == dp_family::prefix);
        if (!ok) return false;
      }
    }
    return true;
  }

  /// The final lower set (every computed node), if it was reached.
  std::optional<std::uint32_t> final_state() {
    const auto last = static_cast<std::uint32_t>(pieces_.pieces.size() - 1);
    for (std::uint32_t id = first_with_key(key_before_[g_.size()]); id != npos; id = same_key_next_[id]) {
      const state& st = states_[id];
      if (st.piece == last && st.count == piece_size(last) - inputs_in(last))
        return min_kept_[id] == unreachable ? std::nullopt : std::optional<std::uint32_t>(id);
    }
    return std::nullopt;
  }

  /// Phase 2: the least peak of any chain of kept stages, in one backward
  /// pass. A chain run from a state holding K kept bytes peaks at K plus a
  /// part that depends on the chain only: max(p₁, k₁ + the part of the rest),
  /// rising with the rest's part, so the least part of each state composes
  /// from the least parts of its successors (stage costs do not depend on what
  /// was kept, only on how much).
  std::uint64_t least_peak(std::uint32_t final) const { return least_rests(final, unreachable)[0]; }

  /// Per state, the least r over chains of stages within `budget` from it to
  /// `final` (unreachable if none): such a chain run from a state holding K
  /// kept bytes peaks at K + r.
  std::vector<std::uint64_t> least_rests(std::uint32_t final, std::uint64_t budget) const {
    std::vector<std::uint64_t> rest(states_.size(), unreachable);
    rest[final] = 0;
    // a stage's target is expanded after its source, so its stages come later
    for (auto t = transitions_.rbegin(); t != transitions_.rend(); ++t)
      if (rest[t->to] != unreachable && t->peak <= budget)
        rest[t->from] = std::min(rest[t->from], std::max(t->peak, t->kept_added + rest[t->to]));
    return rest;
  }

  /// The states of a least-kept-bytes chain within `budget` (empty if none).
  std::vector<std::uint32_t> least_kept_path(std::uint64_t budget, std::uint32_t final) {
    std::vector<std::uint64_t> best(states_.size(), unreachable);
    std::vector<std::uint32_t> via(states_.size(), npos);
    best[0] = 0;
    for (const transition& t : transitions_)
      if (best[t.from] != unreachable && best[t.from] + t.peak <= budget && best[t.from] + t.kept_added < best[t.to]) {
        best[t.to] = best[t.from] + t.kept_added;
        via[t.to] = t.from;
      }
    if (best[final] == unreachable) return {};
    std::vector<std::uint32_t> chain{final};
    while (chain.back() != 0) chain.push_back(via[chain.back()]);
    std::reverse(chain.begin(), chain.end());
    return chain;
  }

  /// The figures of a chain of states (the stages between them).
  std::pair<std::uint64_t, double> chain_figures(const std::vector<std::uint32_t>& chain) const {
    std::uint64_t kept = 0, peak = 0;
    double recompute = 0;
    std::size_t k = 0;
    for (const transition& t : transitions_) {
      if (k + 1 >= chain.size()) break;
      if (t.from == chain[k] && t.to == chain[k + 1]) {
        peak = std::max(peak, kept + t.peak);
        kept += t.kept_added;
        recompute += t.recompute;
        ++k;
      }
    }
    return {peak, recompute};
  }

  /// Phase 3: Pareto labels (kept, peak, recompute) within `budget`; returns
  /// the final state's front. In three dimensions, a label is dropped when a
  /// plan in `known` beats everything it can still become. `known_recompute`:
  /// the recompute of a plan known to fit the budget (labels that cannot
  /// beat it are dropped, ties kept).
  std::vector<dp_label> labels_within(std::uint64_t budget, std::uint32_t final, bool two_dimensional,
                                      const known_points& known = {},
                                      double known_recompute = std::numeric_limits<double>::infinity()) {
    two_dimensional_ = two_dimensional;
    labels_capped_ = false;
    // Backward over the kept stages: the largest kept bytes from which each
    // state can still finish within the budget, and the least recompute left.
    const std::size_t count = states_.size();
    std::vector<std::uint64_t> most_kept(count, 0);
    std::vector<char> finishes(count, 0);
    std::vector<double> least_left(count, std::numeric_limits<double>::infinity());
    finishes[final] = 1;
    most_kept[final] = unreachable;
    least_left[final] = 0;
    for (std::size_t k = transitions_.size(); k-- > 0;) {
      const transition& t = transitions_[k];
      if (!finishes[t.to] || t.peak > budget || most_kept[t.to] < t.kept_added) continue;
      const std::uint64_t here = std::min(budget - t.peak, most_kept[t.to] - t.kept_added);
      if (!finishes[t.from] || here > most_kept[t.from]) most_kept[t.from] = here;
      finishes[t.from] = 1;
      least_left[t.from] = std::min(least_left[t.from], t.recompute + least_left[t.to]);
    }
    // Up to flat_kept[s] kept bytes, a state still finishes with its least
    // recompute left (over stages that reach it). Labels there differ only in
    // recompute, so one of them dominates every label at s that recomputes
    // more, whatever it keeps: where memory is slack (the cheap tail of a
    // ResNet) the Pareto fronts collapse to a point.
    std::vector<std::uint64_t> flat_kept(count, 0);
    std::vector<char> flat(count, 0);
    flat[final] = 1;
    flat_kept[final] = unreachable;
    for (std::size_t k = transitions_.size(); k-- > 0;) {
      const transition& t = transitions_[k];
      if (!flat[t.to] || t.peak > budget || flat_kept[t.to] < t.kept_added ||
          t.recompute + least_left[t.to] != least_left[t.from])
        continue;
      const std::uint64_t here = std::min(budget - t.peak, flat_kept[t.to] - t.kept_added);
      if (!flat[t.from] || here > flat_kept[t.from]) flat_kept[t.from] = here;
      flat[t.from] = 1;
    }
    std::vector<double> flat_best(count, std::numeric_limits<double>::infinity());
    // Three dimensions: from a state holding K kept bytes, every way to finish
    // peaks at K + least_rest or more, so a label's peak may be raised to
    // that without changing what any completion of it peaks at. Labels below
    // that line then differ only in kept bytes and recompute, and dominate
    // each other far more often.
    const std::vector<std::uint64_t> least_rest =
        two_dimensional ? std::vector<std::uint64_t>{} : least_rests(final, budget);
    // Any complete plan bounds the recompute: follow the least-kept stages.
    std::vector<std::uint64_t> kept(count, unreachable);
    std::vector<double> spent(count, 0);
    kept[0] = 0;
    for (const transition& t : transitions_) {
      if (kept[t.from] == unreachable || kept[t.from] + t.peak > budget || kept[t.from] > most_kept[t.from]) continue;
      const std::uint64_t next = kept[t.from] + t.kept_added;
      if (next < kept[t.to] || (next == kept[t.to] && spent[t.from] + t.recompute < spent[t.to])) {
        kept[t.to] = next;
        spent[t.to] = spent[t.from] + t.recompute;
      }
    }
    const double recompute_bound =
        std::min(known_recompute, kept[final] == unreachable ? std::numeric_limits<double>::infinity() : spent[final]);

    labels_.clear();
    fronts_.assign(count, {});
    pending_.assign(two_dimensional ? 0 : count, {});
    pending_total_ = 0;
    push_label(0, {0, 0, 0, 0, npos});
    for (const transition& t : transitions_) {
      if (!two_dimensional && !pending_[t.from].empty()) settle(t.from);
      if (fronts_[t.from].empty() || !finishes[t.to]) continue;
      const std::vector<std::uint32_t>& front = fronts_[t.from];  // push_label only touches t.to ≠ t.from
      auto first = front.begin(), last = front.end();
      if (two_dimensional) {
        // The staircase rises in kept bytes and falls in recompute, and each
        // test that drops a label cuts one end of it: search for the rest. A
        // flat label dominates by more than rounding (the two may finish on
        // different stages).
        first = std::partition_point(first, last, [&](std::uint32_t i) {
          const double r = labels_[i].recompute;
          return saves_recompute(flat_best[t.from], r) ||
                 r + t.recompute + least_left[t.to] > recompute_bound * (1 + 1e-12) + 1e-300;
        });
        last = std::partition_point(first, last, [&](std::uint32_t i) {
          const std::uint64_t k = labels_[i].kept;
          return k + t.peak <= budget && k + t.kept_added <= most_kept[t.to];
        });
      }
      for (auto at = first; at != last; ++at) {
        const std::uint32_t i = *at;
        const dp_label x = labels_[i];
        const std::uint64_t next_kept = x.kept + t.kept_added;
        std::uint64_t peak = std::max(x.peak, x.kept + t.peak);
        if (!two_dimensional && least_rest[t.to] != unreachable) peak = std::max(peak, next_kept + least_rest[t.to]);
        const double recompute = x.recompute + t.recompute;
        if (peak > budget || next_kept > most_kept[t.to]) continue;
        if (!two_dimensional && beaten(known, peak, recompute + least_left[t.to])) continue;
        // A label that cannot beat a known complete plan is dropped; ties are kept
        // (they may have the lower peak the tie-break prefers).
        if (recompute + least_left[t.to] > recompute_bound * (1 + 1e-12) + 1e-300) continue;
        if (two_dimensional) {
          if (saves_recompute(flat_best[t.to], recompute)) continue;
          if (flat[t.to] && next_kept <= flat_kept[t.to]) flat_best[t.to] = std::min(flat_best[t.to], recompute);
        }
        push_label(t.to, {next_kept, peak, recompute, t.to, i});
        if (time_is_up()) break;  // a three-dimensional push can settle a front of thousands
      }
      if (labels_.size() + pending_total_ > options_.max_labels || time_is_up()) {
        labels_capped_ = true;
        return {};
      }
    }
    if (!two_dimensional && !pending_[final].empty()) settle(final);
    std::vector<dp_label> out;
    for (std::uint32_t i : fronts_[final]) out.push_back(labels_[i]);
    stats_.labels = labels_.size();
    return out;
  }

  /// Complete plans along the frontier within `budget`, cheaply: the least
  /// recompute (two-dimensional labels) at `samples` budgets from the least
  /// peak up to the peak of the least-recompute plan. Where a budget's labels
  /// outgrow their cap or the time limit, `stand_in` decides: take a
  /// least-kept plan within it, marked as not proven least recompute, and go
  /// on (unless the time is up), or end the sampling there.
  frontier_sampling sample_frontier(std::uint32_t final, std::uint64_t budget, std::uint64_t samples, bool stand_in) {
    frontier_sampling out;
    constexpr double none = std::numeric_limits<double>::infinity();
    // Adds the plan for `within` (`fits`: the recompute of a plan known to fit
    // it); false when the sampling ends.
    auto sample = [&](std::uint64_t within, double fits) {
      const std::vector<dp_label> front = labels_within(within, final, true, {}, fits);
      out.timed_out = stats_.time_limit_reached;
      if (!front.empty()) {
        const dp_label best = *std::min_element(front.begin(), front.end(), [](const auto& x, const auto& y) {
          return x.recompute != y.recompute ? x.recompute < y.recompute : x.peak < y.peak;
        });
        out.plans.push_back({best.peak, best.recompute, stages_of(best), {}});
        return true;
      }
      out.all = false;
      if (!stand_in) return false;
      const std::vector<std::uint32_t> chain = least_kept_path(within, final);
      if (chain.empty()) return false;
      const auto [peak, recompute] = chain_figures(chain);
      out.plans.push_back({peak, recompute, stages_of_chain(chain), {}, false});
      return !out.timed_out;
    };
    const std::uint64_t low = least_peak(final);
    out.all = low <= budget;
    if (out.all && sample(low, none)) {
      double fits = out.plans.back().recompute;  // the least-peak plan fits every budget above it
      if (sample(budget, none)) {
        const std::uint64_t high = out.plans.back().peak;
        // Rising budgets: a plan within the last one fits the next, so its
        // recompute bounds the next one's labels.
        for (std::uint64_t i = 1; i < samples && high > low; ++i) {
          if (!sample(low + (high - low) / samples * i, fits)) break;
          fits = out.plans.back().recompute;
        }
      }
    }
    known_points figures;
    for (const frontier_point& p : out.plans) figures.emplace_back(p.peak, p.recompute);
    std::sort(figures.begin(), figures.end());
    for (const auto& point : figures)
      if (out.staircase.empty() || point.second < out.staircase.back().second) out.staircase.push_back(point);
    return out;
  }

  /// The stage assignment a label was reached by.
  std::vector<std::uint32_t> stages_of(const dp_label& label) const {
    std::vector<std::uint32_t> chain{label.state};
    for (std::uint32_t l = label.previous; l != npos; l = labels_[l].previous) chain.push_back(labels_[l].state);
    std::reverse(chain.begin(), chain.end());
    return stages_of_chain(chain);
  }

  /// The stage assignment of a chain of states.
  std::vector<std::uint32_t> stages_of_chain(const std::vector<std::uint32_t>& chain) const {
    std::vector<std::uint32_t> stage_of(g_.size(), 0);
    for (std::size_t k = 1; k < chain.size(); ++k) {
      const state& now = states_[chain[k]];
      const state& before = states_[chain[k - 1]];
      for (node_id v = 0; v < g_.size(); ++v)
        if (!g_.is_input(v) && in_state(now, v) && !in_state(before, v)) stage_of[v] = static_cast<std::uint32_t>(k - 1);
    }
    return stage_of;
  }

  solve_stats stats() {
    stats_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time_).count();
    stats_.lower_sets = states_.size();
    return stats_;
  }

  private:
  struct state {
    std::uint32_t piece;
    node_set local;
    std::uint64_t key = 0;    // XOR of its members' keys
    std::uint32_t count = 0;  // members in `piece`
    std::uint64_t params_in = 0;
    std::vector<node_id> frontier;
  };
  struct transition {
    std::uint32_t from, to;
    std::uint64_t kept_added, peak;
    double recompute;
  };
  static constexpr std::uint64_t unreachable = std::numeric_limits<std::uint64_t>::max();
  static std::uint64_t splitmix64(std::uint64_t& x) noexcept {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::uint32_t first_with_key(std::uint64_t key) const {
    auto it = index_.find(key);
    return it == index_.end() ? npos : it->second;
  }

  std::size_t piece_size(std::uint32_t t) const {
    return pieces_.pieces[t].last - pieces_.pieces[t].first + 1;
  }
  bool in_state(const state& st, node_id u) const {
    const auto& pc = pieces_.pieces[st.piece];
    if (u < pc.first) return true;
    if (u > pc.last) return false;
    return st.local.contains(u - pc.first);
  }

  // The time limit alone (the label phase creates no states or stages). Sticky:
  // once the enumeration ran out of time, the labels do not start.
  bool time_is_up() {
    if (!stats_.time_limit_reached && options_.time_limit.count() > 0 && (++clock_checks_ & 255) == 0 &&
        std::chrono::steady_clock::now() - start_time_ > options_.time_limit)
      stats_.time_limit_reached = true;
    return stats_.time_limit_reached;
  }

  bool out_of_budget() {
    if (states_.size() > options_.max_states || stats_.transitions > options_.max_transitions) {
      stats_.cap_reached = true;
      return true;
    }
    if (options_.time_limit.count() > 0 && (++clock_checks_ & 255) == 0 &&
        std::chrono::steady_clock::now() - start_time_ > options_.time_limit) {
      stats_.time_limit_reached = true;
      return true;
    }
    return stats_.time_limit_reached;
  }

  // States are keyed by the piece holding their largest node and the part of
  // that piece they contain; a full piece is written as the empty part of the next.
  std::uint32_t intern(std::uint32_t piece, node_set local) {
    if (piece + 1 < pieces_.pieces.size() && local.count() == piece_size(piece) - inputs_in(piece)) {
      piece = piece + 1;
      local = node_set(piece_size(piece));
    }
    const auto& pc = pieces_.pieces[piece];
    std::uint64_t key = key_before_[pc.first];
    local.for_each([&](std::size_t i) { key ^= key_of_[pc.first + i]; });
    for (std::uint32_t id = first_with_key(key); id != npos; id = same_key_next_[id])
      if (states_[id].piece == piece && states_[id].local == local) return id;
    state st;
    st.piece = piece;
    st.local = std::move(local);
    st.key = key;
    st.count = static_cast<std::uint32_t>(st.local.count());
    st.params_in = params_before_[pc.first];
    st.local.for_each([&](std::size_t i) { st.params_in += g_.params(pc.first + i); });
    auto consider = [&](node_id u) {
      for (node_id s : g_.successors(u))
        if (!in_state(st, s)) {
          st.frontier.push_back(u);
          return;
        }
    };
    if (pc.first > 0) {
      for (std::size_t v = pc.first; v-- > 0;) {  // the separator closing the previous piece
        if (!g_.is_input(static_cast<node_id>(v))) {
          consider(static_cast<node_id>(v));
          break;
        }
      }
    }
    st.local.for_each([&](std::size_t i) { consider(static_cast<node_id>(pc.first + i)); });
    const auto id = static_cast<std::uint32_t>(states_.size());
    buckets_[cardinality(st)].push_back(id);
    states_.push_back(std::move(st));
    min_kept_.push_back(unreachable);
    auto [slot, fresh] = index_.try_emplace(key, id);
    same_key_next_.push_back(fresh ? npos : slot->second);
    slot->second = id;
    stats_.lower_sets = states_.size();
    return id;
  }

  std::size_t inputs_in(std::uint32_t piece) {
    if (inputs_in_piece_.empty()) {
      inputs_in_piece_.assign(pieces_.pieces.size(), 0);
      for (node_id v = 0; v < g_.size(); ++v)
        if (g_.is_input(v)) ++inputs_in_piece_[pieces_.piece_of[v]];
    }
    return inputs_in_piece_[piece];
  }

  std::size_t cardinality(const state& st) const {
    return computed_before_[pieces_.pieces[st.piece].first] + st.local.count();
  }

  // The state L ∪ V (V ascending and nonempty) among those with its key,
  // checked member by member; created when there is none.
  std::uint32_t find_target(std::uint32_t from, const std::vector<node_id>& stage, std::uint64_t stage_key) {
    const std::uint32_t known = existing_target(from, stage, stage_key);
    return known != npos ? known : target_of(states_[from], stage);
  }

  // The state L ∪ V if it exists, else npos.
  std::uint32_t existing_target(std::uint32_t from, const std::vector<node_id>& stage, std::uint64_t stage_key) {
    const state& base = states_[from];
    const std::uint32_t top = pieces_.piece_of[stage.back()];
    const auto& pc = pieces_.pieces[top];
    std::uint32_t expected = base.piece == top ? base.count : 0;
    for (std::size_t k = stage.size(); k-- > 0 && stage[k] >= pc.first;) ++expected;
    const bool full = top + 1 < pieces_.pieces.size() && expected == piece_size(top) - inputs_in(top);
    for (std::uint32_t id = first_with_key(base.key ^ stage_key); id != npos; id = same_key_next_[id]) {
      const state& c = states_[id];
      if (full) {
        if (c.piece == top + 1 && c.count == 0) return id;
        continue;
      }
      if (c.piece != top || c.count != expected) continue;
      bool same = base.piece != top || base.local.is_subset_of(c.local);
      for (std::size_t k = stage.size(); same && k-- > 0 && stage[k] >= pc.first;)
        same = c.local.contains(stage[k] - pc.first);
      if (same) return id;
    }
    return npos;
  }

  // The state L ∪ V, V ascending and nonempty.
  std::uint32_t target_of(const state& from, const std::vector<node_id>& stage) {
    const node_id top = stage.back();
    const std::uint32_t piece = pieces_.piece_of[top];
    const auto& pc = pieces_.pieces[piece];
    node_set local(piece_size(piece));
    if (piece == from.piece) local = from.local;
    for (node_id v : stage)
      if (v >= pc.first) local.insert(v - pc.first);
    return intern(piece, std::move(local));
  }

  // Two-dimensional fronts (kept, recompute) suffice for the memory objective
  // (every complete plan within the least peak has that peak) and the time
  // objective (the peak only has to stay within the budget); they are kept as a
  // staircase sorted by kept bytes with strictly falling recompute. The full
  // frontier needs the peak too, and uses a plain list.
  void push_label(std::uint32_t s, dp_label label) {
    auto& front = fronts_[s];
    if (two_dimensional_) {
      auto kept_less = [&](std::uint32_t i, std::uint64_t kept) { return labels_[i].kept < kept; };
      auto at = std::lower_bound(front.begin(), front.end(), label.kept, kept_less);
      // the label before (less kept) or at the same kept bytes may dominate
      if (at != front.end() && labels_[*at].kept == label.kept && labels_[*at].recompute <= label.recompute) return;
      if (at != front.begin() && labels_[*(at - 1)].recompute <= label.recompute) return;
      auto end = at;
      while (end != front.end() && labels_[*end].recompute >= label.recompute) ++end;
      const auto index = static_cast<std::uint32_t>(labels_.size());
      labels_.push_back(label);
      if (end == at) {
        front.insert(at, index);
      } else {
        *at = index;
        front.erase(at + 1, end);
      }
      return;
    }
    // Three dimensions: labels wait until the front is needed (or they
    // outnumber it), then are settled together.
    std::vector<dp_label>& pending = pending_[s];
    pending.push_back(label);
    ++pending_total_;
    if (pending.size() >= std::max<std::size_t>(4096, 2 * front.size())) settle(s);
  }

  // Whether a known plan peaks no higher than `peak` and recomputes less than
  // `recompute` by more than rounding: then a label that peaks and recomputes
  // at least that much cannot add a point to the frontier.
  static bool beaten(const known_points& known, std::uint64_t peak, double recompute) {
    const auto above = std::upper_bound(known.begin(), known.end(), peak,
                                        [](std::uint64_t p, const auto& point) { return p < point.first; });
    return above != known.begin() && std::prev(above)->second < recompute * (1 - 4e-12);
  }

  // The three-dimensional front of s from its front and the labels pending
  // there, as pushing them one by one would leave it: a label is dropped when
  // another keeps, peaks and recomputes no more (on a tie the earlier one
  // stays). Sorted by kept bytes, a label is dropped exactly when one before
  // it peaks and recomputes no more, which a staircase of (peak, recompute)
  // answers in O(log): O(N log N) for N labels instead of a scan of the front
  // per label, which took 97% of ResNet-50's frontier.
  void settle(std::uint32_t s) {
    struct candidate {
      dp_label label;
      std::uint32_t index;  // in labels_, or npos while pending
    };
    std::vector<std::uint32_t>& front = fronts_[s];
    std::vector<dp_label>& pending = pending_[s];
    std::vector<candidate> candidates;
    candidates.reserve(front.size() + pending.size());
    for (std::uint32_t i : front) candidates.push_back({labels_[i], i});
    for (const dp_label& l : pending) candidates.push_back({l, npos});
    pending_total_ -= pending.size();
    pending = {};
    std::stable_sort(candidates.begin(), candidates.end(), [](const candidate& x, const candidate& y) {
      if (x.label.kept != y.label.kept) return x.label.kept < y.label.kept;
      if (x.label.peak != y.label.peak) return x.label.peak < y.label.peak;
      return x.label.recompute < y.label.recompute;
    });
    std::map<std::uint64_t, double> staircase;  // peak → recompute, falling as the peak rises
    front.clear();
    for (const candidate& c : candidates) {
      const std::uint64_t peak = c.label.peak;
      const double recompute = c.label.recompute;
      const auto above = staircase.upper_bound(peak);
      if (above != staircase.begin() && std::prev(above)->second <= recompute) continue;
      const auto first = staircase.lower_bound(peak);
      auto last = first;
      while (last != staircase.end() && last->second >= recompute) ++last;
      staircase.emplace_hint(staircase.erase(first, last), peak, recompute);
      if (c.index != npos) {
        front.push_back(c.index);
      } else {
        front.push_back(static_cast<std::uint32_t>(labels_.size()));
        labels_.push_back(c.label);
      }
    }
  }

  // Keeps one evaluated stage when it fits the bound from the source's least kept bytes.
  // `stage_key`: XOR of the stage's node keys.
  // `known`: the target if the caller has looked it up, else npos.
  void record(std::uint32_t from, const std::vector<node_id>& stage, std::uint64_t stage_key, const stage_cost& cost,
              std::uint32_t known = npos) {
    ++stats_.transitions;
    const std::uint64_t kept = min_kept_[from];
    if (kept + cost.peak > bound_) return;
    const std::uint32_t to = known != npos ? known : find_target(from, stage, stage_key);
    transitions_.push_back({from, to, cost.kept_added, cost.peak, cost.recompute});
    min_kept_[to] = std::min(min_kept_[to], kept + cost.kept_added);
  }

  // Reverse search over the supersets of a state (or only the next prefix).
  bool expand_walk(std::uint32_t s, bool prefix_only) {
    const state& st = states_[s];
    const std::uint64_t min_kept = min_kept_[s];
    const std::vector<node_id> frontier = st.frontier;
    const std::uint32_t piece = st.piece;
    const node_set local = st.local;
    const std::uint64_t params_in = st.params_in;
    const auto& pc = pieces_.pieces[piece];
    auto in_base = [&](node_id u) {
      if (u < pc.first) return true;
      if (u > pc.last) return false;
      return local.contains(u - pc.first);
    };

    // Bounds that only grow as the stage grows: kept bytes of L still alive at
    // the stage's backward, bytes of dropped nodes a backward reads (all alive
    // when the recomputation ends), and the forward peak.
    std::uint64_t released = 0;
    for (node_id u : frontier)
      if (released_at_start(u, in_base)) released += g_.bytes(u);
    struct undo_entry {
      std::uint64_t released, read_dropped, forward, live;
      double read_dropped_time;
    };
    std::vector<node_id> stage;
    std::vector<undo_entry> undo;
    std::uint64_t read_dropped = 0, forward = 0, live = 0, stage_key = 0;
    double read_dropped_time = 0;
    std::vector<std::uint32_t>& outside = outside_;  // consumers outside L ∪ V, per stage node
    if (outside.size() < g_.size()) outside.resize(g_.size());
    std::vector<std::uint32_t>& stage_consumers = stage_consumers_;
    if (stage_consumers.size() < g_.size()) stage_consumers.resize(g_.size());
    if (base_consumers_.size() < g_.size()) base_consumers_.resize(g_.size());
    for (node_id u : frontier) {
      std::uint32_t in_l = 0;
      for (node_id s2 : g_.successors(u)) in_l += in_base(s2) ? 1 : 0;
      base_consumers_[u] = in_l;
    }
    const stage_evaluator::consumer_counts counts{outside, base_consumers_, stage_consumers};

    node_id next_prefix = pc.first;
    if (prefix_only)
      while (next_prefix <= pc.last && (g_.is_input(next_prefix) || in_base(next_prefix))) ++next_prefix;

    bool ok = true;
    auto enter = [&](node_id a) {
      const bool in_order = !prefix_only || a == (stage.empty() ? next_prefix : next_after(stage.back()));
      undo.push_back({released, read_dropped, forward, live, read_dropped_time});
      stage.push_back(a);
      stage_key ^= key_of_[a];
      // forward, incrementally: a is the largest node of the stage
      forward = std::max(forward, live + g_.bytes(a) + g_.workspace(a));
      live += g_.bytes(a);
      outside[a] = static_cast<std::uint32_t>(g_.successors(a).size());
      const bool a_kept = !g_.successors(a).empty() || reads_output(g_.reads(a));
      for (node_id p : g_.predecessors(a)) {
        if (g_.is_input(p)) continue;
        if (in_base(p)) {
          // p was counted as released (no consumer in L) until its first consumer joins the stage.
          if (stage_consumers[p]++ == 0 && released_at_start(p, in_base)) released -= g_.bytes(p);
          continue;
        }
        if (--outside[p] == 0) {  // p stops being kept: it dies after a, and becomes recomputed if read
          live -= g_.bytes(p);
          if (g_.read_by_backward(p)) {
            read_dropped += g_.bytes(p);
            read_dropped_time += g_.time(p);
          }
        }
      }
      if (!a_kept) live -= g_.bytes(a);
      if (!in_order) return false;
      const std::uint64_t lower = std::max(resident_ + min_kept - released + read_dropped, resident_ + min_kept + forward);
      if (lower > bound_) {
        ++stats_.pruned;
        return false;  // the walker calls leave(a), which restores
      }
      // Existing targets let the evaluator reuse the tails of long stages.
      const std::uint32_t known = existing_target(s, stage, stage_key);
      const stage_cost cost = evaluator_.evaluate(in_base, stage, frontier, params_in, &counts, s, known);
      record(s, stage, stage_key, cost, known);
      if (out_of_budget()) ok = false;
      return true;
    };
    auto leave = [&](node_id a) {
      stage_key ^= key_of_[a];
      restore(a, in_base, stage, undo, released, read_dropped, forward, live, read_dropped_time);
    };
    const node_id limit = static_cast<node_id>(g_.size() - 1);
    walker_.walk(in_base, pc.first, limit, enter, leave, [&] { return !ok; });
    return ok;
  }

  // A kept value of L with no consumer in L dies before the stage's backward
  // unless a consumer joins the stage (or it reads its own output).
  template <class InBase>
  bool released_at_start(node_id u, InBase&& in_base) const {
    if (reads_output(g_.reads(u))) return false;
    for (node_id s2 : g_.successors(u))
      if (in_base(s2)) return false;
    return true;
  }

  node_id next_after(node_id v) const {
    node_id u = v + 1;
    while (u < g_.size() && g_.is_input(u)) ++u;
    return u;
  }

  template <class InBase, class Undo>
  void restore(node_id a, InBase&& in_base, std::vector<node_id>& stage, std::vector<Undo>& undo,
               std::uint64_t& released, std::uint64_t& read_dropped, std::uint64_t& forward, std::uint64_t& live,
               double& read_dropped_time) {
    for (node_id p : g_.predecessors(a)) {
      if (g_.is_input(p)) continue;
      if (in_base(p)) {
        --stage_consumers_[p];
        continue;
      }
      ++outside_[p];
    }
    const Undo& u = undo.back();
    released = u.released;
    read_dropped = u.read_dropped;
    forward = u.forward;
    live = u.live;
    read_dropped_time = u.read_dropped_time;
    undo.pop_back();
    stage.pop_back();
  }

  // ↓v for every computed node, plus V; as sorted node lists. They hold up
  // to n²/2 ids, so past max_principal_ids (512 MiB) or the time limit the
  // list stops, empty, with the cap or the time limit flagged.
  static constexpr std::size_t max_principal_ids = std::size_t{1} << 27;
  std::vector<std::vector<node_id>> principal_sets() {
    std::vector<std::vector<node_id>> out;
    std::vector<char> seen(g_.size(), 0);
    std::size_t ids = 0;
    for (node_id v = 0; v < g_.size(); ++v) {
      if (out_of_budget()) return {};
      if (g_.is_input(v)) continue;
      std::fill(seen.begin(), seen.end(), 0);
      std::vector<node_id> stack{v}, set;
      seen[v] = 1;
      while (!stack.empty()) {
        const node_id u = stack.back();
        stack.pop_back();
        set.push_back(u);
        for (node_id p : g_.predecessors(u))
          if (!g_.is_input(p) && !seen[p]) {
            seen[p] = 1;
            stack.push_back(p);
          }
        if (!constraints_.empty())
          for (node_id p : constraints_.before[u])
            if (!seen[p]) {
              seen[p] = 1;
              stack.push_back(p);
            }
      }
      std::sort(set.begin(), set.end());
      ids += set.size();
      if (ids > max_principal_ids) {
        stats_.cap_reached = true;
        return {};
      }
      out.push_back(std::move(set));
    }
    std::vector<node_id> all;
    for (node_id v = 0; v < g_.size(); ++v)
      if (!g_.is_input(v)) all.push_back(v);
    out.push_back(std::move(all));
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.size() < b.size(); });
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  bool expand_principal(std::uint32_t s, const std::vector<std::vector<node_id>>& family) {
    const state st = states_[s];
    const auto& pc = pieces_.pieces[st.piece];
    auto in_base = [&](node_id u) {
      if (u < pc.first) return true;
      if (u > pc.last) return false;
      return st.local.contains(u - pc.first);
    };
    const std::size_t size = cardinality(st);
    std::vector<node_id> stage;
    for (const auto& set : family) {
      if (out_of_budget()) return false;
      if (set.size() <= size) continue;
      stage.clear();
      std::size_t inside = 0;
      for (node_id v : set) {
        if (in_base(v)) ++inside;
        else stage.push_back(v);
      }
      if (inside != size) continue;  // not a superset
      const stage_cost cost = evaluator_.evaluate(in_base, stage, st.frontier, st.params_in);
      std::uint64_t stage_key = 0;
      for (node_id v : stage) stage_key ^= key_of_[v];
      record(s, stage, stage_key, cost);
    }
    return true;
  }

  const graph& g_;
  dp_options options_;
  series_decomposition pieces_;
  precedence constraints_;
  stage_evaluator evaluator_;
  ideal_walker walker_;
  std::chrono::steady_clock::time_point start_time_;
  std::vector<std::uint64_t> computed_before_, params_before_;
  std::size_t total_computed_ = 0;
  std::uint64_t resident_ = 0;
  std::vector<std::size_t> inputs_in_piece_;
  std::vector<state> states_;
  std::vector<std::uint64_t> key_of_, key_before_;
  std::unordered_map<std::uint64_t, std::uint32_t> index_;  // key → last state with it
  std::vector<std::uint32_t> same_key_next_;                // the state before it with the same key
  std::vector<std::vector<std::uint32_t>> buckets_;
  std::vector<std::uint64_t> min_kept_;
  block_vector<transition> transitions_;
  std::uint64_t bound_ = unreachable;
  bool two_dimensional_ = true;
  bool labels_capped_ = false;

 public:
  bool labels_capped() const noexcept { return labels_capped_; }

 private:
  block_vector<dp_label> labels_;
  std::vector<std::vector<std::uint32_t>> fronts_;
  std::vector<std::vector<dp_label>> pending_;  // three-dimensional labels not yet settled, per state
  std::uint64_t pending_total_ = 0;
  std::vector<std::uint32_t> outside_;
  std::vector<std::uint32_t> stage_consumers_;
  std::vector<std::uint32_t> base_consumers_;  // per frontier node of the state expanded: consumers in it
  std::uint64_t clock_checks_ = 0;
  solve_stats stats_;
};

}  // namespace detail

/// Runs the lower-set programme over `family` for `options.goal`. The plan is a
/// stage plan whose claimed peak and recompute equal the simulator's. Phases:
/// every stage reachable within `options.budget` is evaluated once; for the
/// memory objective the least peak comes from one backward pass over those
/// stages; the least recompute within the peak (or the
/// budget) comes from Pareto labels. Status: optimal (the family was fully
/// explored), feasible (a cap or the time limit stopped it; the plan is the
/// best among the stages evaluated), infeasible (no plan within the budget; for
/// the time objective `smallest_feasible_budget` says what would work).
inline dp_result solve_dp(const graph& g, dp_family family, const dp_options& options = {}) {
  // For the memory objective the search is bounded: runs with bounds growing
  // from the per-op floor by a quarter each time until one reaches a plan.
  // Tight bounds prune most stages, so the failed runs are cheap and the last
  // one explores little more than the optimum needs.
  if (options.goal == objective::memory && !options.keep_frontier &&
      options.budget == std::numeric_limits<std::uint64_t>::max()) {
    const auto start = std::chrono::steady_clock::now();
    std::uint64_t bound = per_op_floor(g).bytes;
    solve_stats spent;
    for (;;) {
      dp_options bounded = options;
      bounded.budget = bound;
      if (options.time_limit.count() > 0) {  // the rounds share one time limit
        const auto spent_ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
        bounded.time_limit = std::max(std::chrono::milliseconds(1), options.time_limit - spent_ms);
      }
      dp_result r = solve_dp(g, family, bounded);
      spent.lower_sets += r.result.stats.lower_sets;
      spent.transitions += r.result.stats.transitions;
      spent.pruned += r.result.stats.pruned;
      if (r.result.status != solve_status::infeasible || !r.complete) {
        const double seconds = spent.seconds + r.result.stats.seconds;
        r.result.stats.lower_sets = spent.lower_sets;
        r.result.stats.transitions = spent.transitions;
        r.result.stats.pruned = spent.pruned;
        r.result.stats.seconds = seconds;
        return r;
      }
      spent.seconds += r.result.stats.seconds;
      const std::uint64_t grown = bound + bound / 4 + 1;
      bound = grown < bound ? std::numeric_limits<std::uint64_t>::max() : grown;
    }
  }
  detail::dp_engine engine(g, options);
  dp_result out;
  solution& sol = out.result;
  out.complete = engine.enumerate(family, options.budget);
  const std::optional<std::uint32_t> final = engine.final_state();
  if (!final) {
    sol.status = out.complete ? solve_status::infeasible : solve_status::stopped;
    sol.stats = engine.stats();
    // What is infeasible is the family's plans: a kept-set plan may still fit.
    const std::string none = family == dp_family::exact    ? "no stage plan"
                             : family == dp_family::prefix ? "no plan of id-interval stages"
                                                           : "no plan of principal lower sets";
    if (out.complete && options.goal == objective::time &&
        options.budget != std::numeric_limits<std::uint64_t>::max()) {
      dp_options loose = options;
      loose.goal = objective::memory;
      loose.budget = std::numeric_limits<std::uint64_t>::max();
      const dp_result least = solve_dp(g, family, loose);
      sol.smallest_feasible_budget = least.result.claimed_peak;
      sol.message = none + " peaks within the budget; the smallest feasible budget for one is " +
                    format_bytes(least.result.claimed_peak) + " (" + std::to_string(least.result.claimed_peak) +
                    " bytes)";
    } else if (!out.complete) {
      sol.message = "stopped by a cap or the time limit before any complete plan was found";
    } else {
      sol.message = none + " peaks within the budget";
    }
    return out;
  }
  std::uint64_t budget = options.budget;
  if (options.goal == objective::memory) budget = engine.least_peak(*final);
  const std::string method_name = family == dp_family::exact    ? "exact"
                                  : family == dp_family::prefix ? "chain"
                                                                : "approx";
  const bool frontier = options.keep_frontier;
  std::vector<detail::dp_label> front;
  if (frontier) {
    detail::frontier_sampling samples = engine.sample_frontier(*final, options.budget, frontier_sample_count, false);
    out.sampled = std::move(samples.plans);
    out.sampled_all = samples.all;
    front = engine.labels_within(options.budget, *final, false, samples.staircase);
  } else if (!(options.peak_only && options.goal == objective::memory)) {
    front = engine.labels_within(budget, *final, true);
  }
  if (front.empty()) {
    // No labels (peak only, or the label cap): a least-kept plan within the budget.
    const std::vector<std::uint32_t> chain = engine.least_kept_path(budget, *final);
    const auto [peak, recompute] = engine.chain_figures(chain);
    sol.claimed_peak = peak;
    sol.claimed_recompute = recompute;
    sol.best = plan::from_stages(g, engine.stages_of_chain(chain), method_name);
    if (engine.labels_capped()) {
      const std::string why = engine.stats().time_limit_reached ? "time limit reached" : "label cap reached";
      if (options.goal == objective::time)
        sol.message = why + ": a plan within the budget, recompute not minimised";
      else if (out.complete)
        sol.message = "least peak proven; recompute not minimised among least-peak plans (" + why + ")";
      else
        sol.message = why + ": the least peak over the stages found, not proven; recompute not minimised";
    }
  } else {
    auto better = [&](const detail::dp_label& x, const detail::dp_label& y) {
      if (options.goal == objective::memory)
        return x.peak != y.peak ? x.peak < y.peak : x.recompute < y.recompute;
      return x.recompute != y.recompute ? x.recompute < y.recompute : x.peak < y.peak;
    };
    const detail::dp_label best = *std::min_element(front.begin(), front.end(), better);
    sol.claimed_peak = best.peak;
    sol.claimed_recompute = best.recompute;
    sol.best = plan::from_stages(g, engine.stages_of(best), method_name);
  }
  sol.figures = simulate(g, sol.best.steps);
  sol.status = out.complete ? solve_status::optimal : solve_status::feasible;
  if (!out.complete && sol.message.empty())
    sol.message = "stopped by a cap or the time limit: the best plan over the stages found, not proven";
  if (engine.labels_capped() && options.goal == objective::time) sol.status = solve_status::feasible;
  if (options.keep_frontier) {
    std::vector<detail::dp_label> sorted = front;
    std::sort(sorted.begin(), sorted.end(), [](const auto& x, const auto& y) {
      return x.peak != y.peak ? x.peak < y.peak : x.recompute < y.recompute;
    });
    double best_recompute = std::numeric_limits<double>::infinity();
    for (const auto& l : sorted)
      if (detail::saves_recompute(l.recompute, best_recompute)) {
        best_recompute = l.recompute;
        out.frontier.push_back({l.peak, l.recompute, engine.stages_of(l), {}});
      }
  }
  out.labels_capped = engine.labels_capped();
  sol.stats = engine.stats();
  return out;
}

}  // namespace remat
