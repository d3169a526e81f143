#pragma once

/// \file
/// The lower-set programme's states and stages: every lower set reachable
/// within a bound (a state, keyed by decompose_series' piece and its part of
/// it) and every stage between two of them, evaluated once by the
/// stage_evaluator. The three families differ only in which supersets a state
/// expands to: all of them by reverse search (`exact`), the next id prefixes
/// (`prefix`) or the principal lower sets (`principal`). dp_engine.hpp runs
/// the labels over this graph.

#include <remat/config.hpp>

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


#include <remat/analysis/bounds.hpp>
#include <remat/analysis/lower_sets.hpp>
#include <remat/detail/block_vector.hpp>
#include <remat/graph/graph.hpp>
#include <remat/graph/node_set.hpp>
#include <remat/plan/solution.hpp>
#include <remat/solvers/dp_options.hpp>
#include <remat/solvers/stage_evaluator.hpp>

namespace remat::detail {

/// The states and evaluated stages of one family within one bound; caps and
/// the time budget come from dp_options. Reusable: dp_engine keeps one and
/// runs its label phases over it as often as it likes.
class stage_graph {
 public:
  static constexpr std::uint32_t npos = std::numeric_limits<std::uint32_t>::max();

  stage_graph(const graph& g, const dp_options& options)
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
    backward_ = options.floors ? *options.floors : backward_floors(g);
    rest_from_piece_.assign(pieces_.pieces.size() + 1, 0);
    for (std::size_t k = pieces_.pieces.size(); k-- > 0;) {
      std::uint64_t most = rest_from_piece_[k + 1];
      for (node_id v = pieces_.pieces[k].first; v <= pieces_.pieces[k].last; ++v)
        most = std::max(most, backward_.beside_operands[v] + backward_.operand_values[v]);
      rest_from_piece_[k] = most;
    }
  }

  /// Phase 1: creates the lower sets reachable with every stage within
  /// `bound`, evaluates each stage once and keeps it. Returns false when a cap
  /// or the time limit stopped it.
  bool enumerate(dp_family family, std::uint64_t bound) {
    bound_ = bound;
    const std::uint32_t start = intern(0, node_set(piece_size(0)));
    // Every step holds the resident bytes: a bound below them admits no plan,
    // not even the empty one of a graph of inputs alone.
    min_kept_[start] = resident_ <= bound ? 0 : unreachable;
    std::vector<std::vector<node_id>> principal;
    if (family == dp_family::principal && (principal = principal_sets()).empty()) return false;
    for (std::size_t size = 0; size < total_computed_; ++size) {
      for (std::size_t k = 0; k < buckets_[size].size(); ++k) {
        const std::uint32_t s = buckets_[size][k];
        if (min_kept_[s] == unreachable) continue;
        // Only the start can fail here: every other state was reached by a stage that passed.
        if (cannot_finish(s, min_kept_[s])) {
          ++stats_.pruned;
          continue;
        }
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

  dp_stats stats() {
    stats_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time_).count();
    stats_.lower_sets = states_.size();
    return stats_;
  }

  protected:
  struct state {
    std::uint32_t piece;
    node_set local;
    std::uint64_t key = 0;    // XOR of its members' keys
    std::uint32_t count = 0;  // members in `piece`
    std::uint64_t params_in = 0;
    std::vector<node_id> frontier;
  };
  // What every plan through a state holds at some later backward (cannot_finish).
  struct finish_floor {
    std::uint64_t rest = 0;     // the most backward_floors holds at a node outside L_s (0: none)
    std::uint64_t leaving = 0;  // kept values of L_s whose consumers are all outside it
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

  // Work units a stage, label or principal set costs, and a node the
  // evaluator walks, charged every 256 steps (time_budget::charge;
  // calibrated in docs/algorithms.md).
  static constexpr std::uint64_t step_work = 30, node_work = 10;
  std::uint64_t work_since_charge() {
    const std::uint64_t walked = evaluator_.nodes_walked();
    const std::uint64_t units = 256 * step_work + (walked - walked_charged_) * node_work;
    walked_charged_ = walked;
    return units;
  }

  // The time limit alone (the label phase creates no states or stages). Sticky:
  // once the enumeration ran out of time, the labels do not start.
  bool time_is_up() {
    if (!stats_.time_limit_reached && (++clock_checks_ & 255) == 0 && options_.time.charge(work_since_charge()))
      stats_.time_limit_reached = true;
    return stats_.time_limit_reached;
  }

  bool out_of_budget() {
    if (states_.size() > options_.max_states || stats_.transitions + stats_.skipped > options_.max_transitions) {
      stats_.cap_reached = true;
      return true;
    }
    if ((++clock_checks_ & 255) == 0 && options_.time.charge(work_since_charge())) {
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
    children_.emplace_back();
    min_kept_.push_back(unreachable);
    finish_floors_.push_back(floor_after(states_.back()));
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

  // Keeps one evaluated stage when it fits the bound from the source's least kept bytes.
  // `stage_key`: XOR of the stage's node keys.
  // `known`: the target if the caller has looked it up, else npos.
  // Returns the target, or npos when the stage was dropped before it was looked up.
  std::uint32_t record(std::uint32_t from, const std::vector<node_id>& stage, std::uint64_t stage_key,
                       const stage_cost& cost, std::uint32_t known = npos) {
    ++stats_.transitions;
    const std::uint64_t kept = min_kept_[from];
    if (kept + cost.peak > bound_) return npos;
    const std::uint32_t to = known != npos ? known : find_target(from, stage, stage_key);
    if (cannot_finish(to, kept + cost.kept_added)) return to;
    transitions_.push_back({from, to, cost.kept_added, cost.peak, cost.recompute});
    min_kept_[to] = std::min(min_kept_[to], kept + cost.kept_added);
    return to;
  }

  // The state P ∪ {a} when it is known to exist (else npos). A walk reaches
  // each target by adding its largest stage node to the target one step
  // before, so the states found that way are remembered per state: most
  // lookups then scan a few entries instead of hashing the stage's key and
  // comparing sets.
  std::uint32_t child_of(std::uint32_t parent, node_id a) const {
    for (const auto& [node, child] : children_[parent])
      if (node == a) return child;
    return npos;
  }
  void add_child(std::uint32_t parent, node_id a, std::uint32_t child) { children_[parent].push_back({a, child}); }

  // Whether no plan that reaches s holding `kept` bytes fits the bound.
  // Every kept value of L_s with a consumer in L_s lives through the later
  // stages, whose backwards come first; so does every value L_s keeps for
  // later stages, until its consumers' backwards, except those whose
  // consumers are all outside L_s (`leaving`). So at the backward of any node
  // v outside L_s every plan holds the resident bytes, the kept bytes less
  // those, and what backward_floors says v's backward holds besides values of
  // L_s (which may be kept).
  bool cannot_finish(std::uint32_t s, std::uint64_t kept) const {
    const finish_floor& f = finish_floors_[s];
    return f.rest > 0 && kept - std::min(f.leaving, kept) + resident_ + f.rest > bound_;
  }

  finish_floor floor_after(const state& st) const {
    const auto& pc = pieces_.pieces[st.piece];
    finish_floor out;
    out.rest = rest_from_piece_[st.piece + 1];
    for (node_id v = pc.first; v <= pc.last; ++v) {
      if (g_.is_input(v) || st.local.contains(v - pc.first)) continue;
      std::uint64_t held = backward_.beside_operands[v];
      if (reads_inputs(g_.reads(v)))
        for (node_id p : g_.predecessors(v))
          if (!g_.is_input(p) && !in_state(st, p)) held += g_.bytes(p);
      out.rest = std::max(out.rest, held);
    }
    for (node_id u : st.frontier) {
      if (reads_output(g_.reads(u))) continue;
      const auto consumers = g_.successors(u);
      if (std::none_of(consumers.begin(), consumers.end(), [&](node_id c) { return in_state(st, c); }))
        out.leaving += g_.bytes(u);
    }
    return out;
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
    // What the stage's backward holds when it starts (stage_evaluator's
    // stage_node_start and frontier_start), less the kept bytes of L and the
    // stage's parameters: resident bytes, later parameter gradients, gradient
    // buffers of nodes with a consumer outside L ∪ V, kept stage values that
    // live into the backward. Not monotone in V, so it skips evaluations, not
    // subtrees.
    std::uint64_t held = resident_ + (g_.param_bytes() - params_in), params_in_stage = 0;
    for (node_id u : frontier) held += g_.bytes(u);
    auto start_of = [&](node_id v, std::uint32_t consumers_outside) -> std::uint64_t {
      const std::size_t consumers = g_.successors(v).size();
      const bool reads_own = reads_output(g_.reads(v));
      const bool kept = consumers_outside > 0 || (consumers == 0 && reads_own);
      std::uint64_t bytes = consumers_outside > 0 ? g_.bytes(v) : 0;  // its gradient buffer
      if (kept && (reads_own || consumers_outside < consumers)) bytes += g_.bytes(v);
      return bytes;
    };
    struct undo_entry {
      std::uint64_t released, read_dropped, forward, live, held, params_in_stage;
    };
    std::vector<node_id> stage;
    std::vector<std::uint32_t> targets;  // per stage prefix: the state L ∪ prefix, npos if not known
    std::vector<std::uint64_t> prefix_ids;  // per stage prefix: an id unique over the enumeration
    std::vector<node_id> least_reads;       // per stage node: its least predecessor in the stage
    std::vector<undo_entry> undo;
    std::uint64_t read_dropped = 0, forward = 0, live = 0, stage_key = 0;
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
    stage_evaluator::consumer_counts counts{outside, base_consumers_, stage_consumers, 0, {}, {}};

    node_id next_prefix = pc.first;
    if (prefix_only)
      while (next_prefix <= pc.last && (g_.is_input(next_prefix) || in_base(next_prefix))) ++next_prefix;

    bool ok = true;
    auto enter = [&](node_id a) {
      const bool in_order = !prefix_only || a == (stage.empty() ? next_prefix : next_after(stage.back()));
      undo.push_back({released, read_dropped, forward, live, held, params_in_stage});
      const std::uint32_t parent = targets.empty() ? s : targets.back();
      targets.push_back(npos);
      prefix_ids.push_back(++prefixes_entered_);
      least_reads.push_back(stage_evaluator::no_node);
      stage.push_back(a);
      stage_key ^= key_of_[a];
      params_in_stage += g_.params(a);
      // forward, incrementally: a is the largest node of the stage
      forward = std::max(forward, live + g_.bytes(a) + g_.workspace(a));
      live += g_.bytes(a);
      outside[a] = static_cast<std::uint32_t>(g_.successors(a).size());
      held += start_of(a, outside[a]);
      const bool a_kept = !g_.successors(a).empty() || reads_output(g_.reads(a));
      for (node_id p : g_.predecessors(a)) {
        if (g_.is_input(p)) continue;
        if (in_base(p)) {
          // p was counted as released (no consumer in L) until its first consumer joins the stage.
          if (stage_consumers[p]++ == 0 && released_at_start(p, in_base)) released -= g_.bytes(p);
          // its gradient buffer waits for no consumer outside L ∪ V any more
          if (base_consumers_[p] + stage_consumers[p] == g_.successors(p).size()) held -= g_.bytes(p);
          continue;
        }
        least_reads.back() = std::min(least_reads.back(), p);
        held = held - start_of(p, outside[p]) + start_of(p, outside[p] - 1);
        if (--outside[p] == 0) {  // p stops being kept: it dies after a, and becomes recomputed if read
          live -= g_.bytes(p);
          if (g_.read_by_backward(p)) read_dropped += g_.bytes(p);
        }
      }
      if (!a_kept) live -= g_.bytes(a);
      if (!in_order) return false;
      const std::uint64_t lower = std::max(resident_ + min_kept - released + read_dropped, resident_ + min_kept + forward);
      if (lower > bound_) {
        ++stats_.pruned;
        return false;  // the walker calls leave(a), which restores
      }
      // The backward holds what it started with and every dropped value it
      // reads once the recomputation ends.
      if (min_kept + held - params_in_stage + read_dropped - released > bound_) {
        ++stats_.skipped;
        if (out_of_budget()) ok = false;  // a long run of skips still meets the caps and limits
        return true;
      }
      // Existing targets let the evaluator reuse the tails of long stages.
      std::uint32_t known = parent != npos ? child_of(parent, a) : npos;
      const bool remembered = known != npos;
      if (!remembered) known = existing_target(s, stage, stage_key);
      counts.forward = forward;
      counts.prefix_ids = prefix_ids;
      counts.least_stage_read = least_reads;
      const stage_cost cost = evaluator_.evaluate(in_base, stage, frontier, params_in, &counts, s, known);
      const std::uint32_t to = record(s, stage, stage_key, cost, known);
      targets.back() = to != npos ? to : known;
      if (!remembered && parent != npos && targets.back() != npos) add_child(parent, a, targets.back());
      if (out_of_budget()) ok = false;
      return true;
    };
    auto leave = [&](node_id a) {
      targets.pop_back();
      prefix_ids.pop_back();
      least_reads.pop_back();
      stage_key ^= key_of_[a];
      held = undo.back().held;
      params_in_stage = undo.back().params_in_stage;
      restore(a, in_base, stage, undo, released, read_dropped, forward, live);
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
               std::uint64_t& released, std::uint64_t& read_dropped, std::uint64_t& forward, std::uint64_t& live) {
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
  backward_floor backward_;
  std::vector<std::uint64_t> rest_from_piece_;  // per piece: the most backward_floors holds at a node from it on
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
  std::vector<std::vector<std::pair<node_id, std::uint32_t>>> children_;  // per state: (a, state ∪ {a}) found so far
  std::vector<std::vector<std::uint32_t>> buckets_;
  std::vector<std::uint64_t> min_kept_;
  std::vector<finish_floor> finish_floors_;  // per state
  block_vector<transition> transitions_;
  std::uint64_t bound_ = unreachable;
  std::vector<std::uint32_t> outside_;
  std::vector<std::uint32_t> stage_consumers_;
  std::vector<std::uint32_t> base_consumers_;  // per frontier node of the state expanded: consumers in it
  std::uint64_t clock_checks_ = 0;
  std::uint64_t walked_charged_ = 0;
  std::uint64_t prefixes_entered_ = 0;  // stage prefixes the walks entered, for their ids
  dp_stats stats_;
};

}  // namespace remat::detail
