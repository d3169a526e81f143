#pragma once

/// \file
/// The exact programme over general plans (schedule_from_kept_stages: a chain
/// of lower sets, a kept set, and each stage recomputing lazily or eagerly),
/// in the graph's id order, for graphs of up to 64 computed nodes. `exact`
/// runs it after its stage programme on graphs of up to 16, so that its
/// `optimal` there covers the general family, which holds stage plans and
/// kept-set plans alike.
///
/// The state is a lower set L (the stages so far) and the values of L the
/// plan keeps, K. What the next stage costs (the peak of its forward, and of
/// its backward in the better of the two modes) depends on L, the next lower
/// set and K alone: the builder recomputes in execution order and frees what
/// a stage recomputed before the next stage's backward. So the least peak is
/// a bottleneck shortest path over (L, K), searched cheapest first.
///
/// Two states with the same L, the same kept boundary values (those with a
/// consumer outside L) and the same values a later stage's recompute can
/// reach (the missing boundary values and their missing ancestors) differ in
/// every later step only by the bytes of the kept values off the boundary,
/// which all of those steps hold. A state is dropped when another with that
/// key is no higher both in peak so far and in those bytes.
///
/// States are settled lowest bound first: the larger of the peak so far and
/// what every later step holds at least (the resident bytes, those kept
/// bytes, and the largest per-op floor of a node still to come,
/// analysis/bounds.hpp). A state or kept subset whose bound reaches `below`
/// is cut; keeping more never lowers that bound nor the forward's peak, so
/// the kept subsets of a stage are tried depth first and a cut subset takes
/// its supersets with it.
///
/// Complexity: exponential (every kept subset of every stage may be tried);
/// O(labels · lower sets · 2^|stage| · (n + m + recomputes)), bounded by
/// `max_labels`, `max_lower_sets` and the time budget, whose work meter it
/// charges. It proves graphs of up to about 12 computed nodes within a
/// second (docs/results-solvers.md), and is the ground truth the tests hold
/// `exact` to.

#include <remat/config.hpp>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <optional>
#include <queue>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <remat/analysis/bounds.hpp>
#include <remat/analysis/lower_sets.hpp>
#include <remat/graph/graph.hpp>
#include <remat/graph/node_set.hpp>
#include <remat/plan/plan.hpp>
#include <remat/plan/schedule.hpp>
#include <remat/solvers/common.hpp>
#include <remat/time_budget.hpp>

namespace remat {

/// The most computed nodes solve_general_dp takes (its sets are 64-bit masks).
inline constexpr std::size_t general_dp_max_nodes = 64;

struct general_dp_options {
  /// Only plans peaking below this are searched for: an incumbent's peak,
  /// which the search then proves least when it finds nothing below it.
  std::uint64_t below = no_budget;
  std::uint64_t max_labels = std::uint64_t{1} << 18;  ///< states kept before it stops
  std::uint64_t max_lower_sets = std::uint64_t{1} << 12;
  /// Lower sets closed under gradient_order_constraints, as `exact`'s.
  bool preserve_gradient_order = true;
  time_budget time;
};

struct general_dp_result {
  /// The search ended: `best` is the least-peak general plan below
  /// `options.below`, or there is none.
  bool complete = false;
  std::optional<plan> best;  ///< method "general-dp"; stage_of, kept and stage_modes set
  std::uint64_t peak = 0;    ///< best's peak, as the programme reckons it (= the simulator's)
  std::uint64_t labels = 0, transitions = 0, lower_sets = 0;
  std::string stopped_by;  ///< when not complete: what stopped it
};

namespace detail {

using node_mask = std::uint64_t;

template <class F>
void for_each_bit(node_mask m, F&& f) {
  while (m != 0) {
    f(static_cast<std::size_t>(std::countr_zero(m)));
    m &= m - 1;
  }
}

/// What one stage of a general plan costs, by the simulator's rules
/// (plan/simulate.hpp) and the builder's steps (schedule_from_kept_stages in
/// the id order), from the state the stages before it leave.
class general_stage_costs {
 public:
  explicit general_stage_costs(const graph& g)
      : g_(g), position_(identity(g.size())), operands_(g, position_, true), index_(g.size(), 0),
        live_(g.size(), 0), release_(g, operands_), gradient_(g.size(), 0), born_(g.size(), SIZE_MAX),
        last_use_(g.size(), 0) {
    for (node_id v = 0; v < g.size(); ++v)
      if (!g.is_input(v)) {
        index_[v] = computed_.size();
        computed_.push_back(v);
      }
    if (computed_.size() > general_dp_max_nodes) return;
    preds_.assign(computed_.size(), 0);
    succs_.assign(computed_.size(), 0);
    for (std::size_t i = 0; i < computed_.size(); ++i) {
      for (node_id p : g.predecessors(computed_[i]))
        if (!g.is_input(p)) preds_[i] |= node_mask{1} << index_[p];
      for (node_id s : g.successors(computed_[i])) succs_[i] |= node_mask{1} << index_[s];
      // A sink whose backward does not read its output is freed at once, kept or not.
      if (succs_[i] != 0 || reads_output(g.reads(computed_[i]))) keepable_ |= node_mask{1} << i;
    }
    all_ = computed_.size() == 64 ? ~node_mask{0} : (node_mask{1} << computed_.size()) - 1;
  }

  std::size_t size() const noexcept { return computed_.size(); }
  node_mask all() const noexcept { return all_; }
  node_mask keepable() const noexcept { return keepable_; }
  node_id node(std::size_t i) const noexcept { return computed_[i]; }
  std::size_t index(node_id v) const noexcept { return index_[v]; }
  node_mask preds(std::size_t i) const noexcept { return preds_[i]; }

  /// Values of L with a consumer outside it.
  node_mask boundary(node_mask L) const noexcept {
    node_mask b = 0;
    for_each_bit(L, [&](std::size_t i) {
      if (succs_[i] & ~L) b |= node_mask{1} << i;
    });
    return b;
  }

  std::uint64_t bytes_of(node_mask m) const noexcept {
    std::uint64_t sum = 0;
    for_each_bit(m, [&](std::size_t i) { sum += g_.bytes(computed_[i]); });
    return sum;
  }

  /// The peak of the forward of stage Lp \ L, with K (⊆ Lp, keepable) kept.
  std::uint64_t forward(node_mask L, node_mask Lp, node_mask K) const noexcept {
    const node_mask stage = Lp & ~L;
    std::uint64_t mem = g_.param_bytes() + g_.input_bytes() + bytes_of(K & L) + bytes_of(boundary(L) & ~K);
    std::uint64_t peak = 0;
    for_each_bit(stage, [&](std::size_t i) {
      const node_id v = computed_[i];
      peak = std::max(peak, mem + g_.bytes(v) + g_.workspace(v));
      mem += g_.bytes(v);
      for (node_id p : operands_(v)) {
        if (g_.is_input(p)) continue;
        const std::size_t j = index_[p];
        if ((K >> j & 1) || (succs_[j] & ~Lp) != 0) continue;
        // Its last consumer in the stage run: the stages before hold none of
        // a value still alive, so it is the stage's highest.
        if (63 - std::countl_zero(succs_[j] & stage) == static_cast<int>(i)) mem -= g_.bytes(p);
      }
      if (succs_[i] == 0 && !((K >> i & 1) && reads_output(g_.reads(v)))) mem -= g_.bytes(v);
    });
    return peak;
  }

  /// The peak of the backward of stage Lp \ L, with K (⊆ Lp, keepable) kept.
  std::uint64_t backward(node_mask L, node_mask Lp, node_mask K, stage_recompute mode) {
    const node_mask stage = Lp & ~L;
    std::uint64_t mem = g_.param_bytes() + g_.input_bytes();
    for (std::size_t i = 0; i < computed_.size(); ++i) {
      const node_id v = computed_[i];
      live_[v] = gradient_[v] = 0;
      if (!(Lp >> i & 1)) {
        mem += g_.params(v);  // parameter gradients of the backwards done
        continue;
      }
      release_.set_pending(v, static_cast<std::size_t>(std::popcount(succs_[i] & Lp)));
      if (succs_[i] & ~Lp) {
        gradient_[v] = 1;
        mem += g_.bytes(v);
      }
      // A kept value is freed after its consumers' backwards unless its own reads it.
      const bool released = succs_[i] != 0 && (succs_[i] & Lp) == 0 && !reads_output(g_.reads(v));
      if ((K >> i & 1) && !released) {
        live_[v] = 1;
        mem += g_.bytes(v);
      }
    }
    steps_.clear();
    order_.clear();
    for_each_bit(stage, [&](std::size_t i) { order_.push_back(computed_[i]); });
    // The builder's steps for the stage, with its releases counted from the
    // consumers still to run in L' (schedule_from_kept_stages).
    stage_backward(g_, order_, mode == stage_recompute::eager, operands_, position_, live_, steps_,
                   [&](node_id v) { release_.after_backward(v, live_, steps_); }, scratch_);
    // The builder then moves the free of each recomputed value to right after
    // its last use (free_recomputed_at_last_use); the walk below frees it there.
    constexpr std::size_t none = SIZE_MAX;
    freed_after_.assign(steps_.size(), 0);
    moved_.assign(steps_.size(), 0);
    auto touch = [&](node_id x, std::size_t i) {
      if (born_[x] != none) last_use_[x] = i;
    };
    for (std::size_t i = 0; i < steps_.size(); ++i) {
      const step s = steps_[i];
      if (s.kind == step_kind::recompute) {
        for (node_id p : g_.predecessors(s.node))
          if (!g_.is_input(p)) touch(p, i);
        born_[s.node] = last_use_[s.node] = i;
      } else if (s.kind == step_kind::backward) {
        if (reads_inputs(g_.reads(s.node)))
          for (node_id p : g_.predecessors(s.node))
            if (!g_.is_input(p)) touch(p, i);
        if (reads_output(g_.reads(s.node))) touch(s.node, i);
      } else if (s.kind == step_kind::free && born_[s.node] != none) {
        freed_after_[last_use_[s.node]] += g_.bytes(s.node);
        moved_[i] = 1;
        born_[s.node] = none;
      }
    }

    std::uint64_t peak = 0;
    for (std::size_t i = 0; i < steps_.size(); ++i) {
      const step s = steps_[i];
      const node_id v = s.node;
      switch (s.kind) {
        case step_kind::compute:
        case step_kind::recompute:
          peak = std::max(peak, mem + g_.bytes(v) + g_.workspace(v));
          mem += g_.bytes(v);
          break;
        case step_kind::free:
          if (!moved_[i]) mem -= g_.bytes(v);
          break;
        case step_kind::backward: {
          std::uint64_t fresh = g_.successors(v).empty() ? g_.bytes(v) : 0;
          for (node_id p : g_.predecessors(v))
            if (!g_.is_input(p) && !gradient_[p]) {
              gradient_[p] = 1;
              fresh += g_.bytes(p);
            }
          peak = std::max(peak, mem + fresh + g_.params(v) + g_.backward_workspace(v));
          mem = mem + fresh - g_.bytes(v) + g_.params(v);
          gradient_[v] = 0;
          break;
        }
      }
      mem -= freed_after_[i];
    }
    return peak;
  }

 private:
  static std::vector<std::uint32_t> identity(std::size_t n) {
    std::vector<std::uint32_t> out(n);
    for (std::size_t v = 0; v < n; ++v) out[v] = static_cast<std::uint32_t>(v);
    return out;
  }

  const graph& g_;
  std::vector<std::uint32_t> position_;
  operands_in_order operands_;
  std::vector<node_id> computed_;
  std::vector<std::size_t> index_;
  std::vector<node_mask> preds_, succs_;
  node_mask keepable_ = 0, all_ = 0;
  std::vector<char> live_;
  backward_release release_;  // its pending counts set per stage
  std::vector<char> gradient_;
  schedule steps_;
  stage_scratch scratch_;
  std::vector<node_id> order_;
  std::vector<std::size_t> born_, last_use_;
  std::vector<std::uint64_t> freed_after_;
  std::vector<char> moved_;
};

}  // namespace detail

/// The least-peak general plan below `options.below` (see the file comment).
/// Graphs with more than general_dp_max_nodes computed nodes, or none, are
/// not searched (`complete` false, `stopped_by` says why).
inline general_dp_result solve_general_dp(const graph& g, const general_dp_options& options = {}) {
  using detail::node_mask;
  general_dp_result out;
  detail::general_stage_costs costs(g);
  const std::size_t c = costs.size();
  if (c == 0 || c > general_dp_max_nodes) {
    out.stopped_by = c == 0 ? "no computed node" : "more than " + std::to_string(general_dp_max_nodes) + " computed nodes";
    return out;
  }

  std::vector<node_mask> lower_sets;
  const precedence constraints = options.preserve_gradient_order ? gradient_order_constraints(g) : precedence{};
  lower_set_options walk;
  walk.max_count = options.max_lower_sets + 1;
  walk.constraints = &constraints;
  walk.time = options.time;
  const enumeration_status listed = enumerate_lower_sets(
      g,
      [&](const node_set& s) {
        node_mask m = 0;
        for (std::size_t i = 0; i < c; ++i)
          if (s.contains(costs.node(i))) m |= node_mask{1} << i;
        lower_sets.push_back(m);
        return true;
      },
      walk);
  out.lower_sets = lower_sets.size();
  if (listed != enumeration_status::complete) {
    out.stopped_by = listed == enumeration_status::cap_reached
                         ? "more than " + std::to_string(options.max_lower_sets) + " lower sets"
                         : std::string(options.time.spent_on());
    return out;
  }

  // What every step of the stages after L holds at least, besides the
  // resident bytes and the values kept off L's boundary: the largest forward
  // or backward floor of a node outside L (bounds.hpp; the values kept off
  // the boundary are none of the operands, outputs or gradients it counts).
  const std::uint64_t resident = g.param_bytes() + g.input_bytes();
  std::vector<std::uint64_t> rest_floor(lower_sets.size(), 0);
  {
    const backward_floor at_backward = backward_floors(g);
    std::vector<std::uint64_t> own(c, 0);
    for (std::size_t i = 0; i < c; ++i) {
      const node_id v = costs.node(i);
      std::uint64_t forward = g.bytes(v) + g.workspace(v);
      for (node_id p : g.predecessors(v))
        if (!g.is_input(p)) forward += g.bytes(p);
      own[i] = std::max(forward, at_backward.beside_operands[v] + at_backward.operand_values[v]);
    }
    for (std::size_t k = 0; k < lower_sets.size(); ++k)
      detail::for_each_bit(costs.all() & ~lower_sets[k], [&](std::size_t i) { rest_floor[k] = std::max(rest_floor[k], own[i]); });
  }

  struct label {
    node_mask L, K;
    std::uint64_t peak, kept_inside;  // peak so far; bytes kept off the boundary
    std::uint32_t parent;
    stage_recompute mode;  // of the stage that ends at L
    bool dominated;
  };
  struct key {
    node_mask L, kept_boundary, reachable;
    bool operator==(const key&) const = default;
  };
  struct key_hash {
    std::size_t operator()(const key& k) const noexcept {
      std::uint64_t h = k.L * 0x9E3779B97F4A7C15ULL;
      h ^= (k.kept_boundary + 0x632BE59BD9B4E019ULL + (h << 6) + (h >> 2));
      h ^= (k.reachable + 0x8CB92BA72F3D8DD7ULL + (h << 6) + (h >> 2));
      return static_cast<std::size_t>(h);
    }
  };
  constexpr std::uint32_t root = UINT32_MAX;
  std::vector<label> labels;
  std::unordered_map<key, std::vector<std::uint32_t>, key_hash> by_key;
  using entry = std::pair<std::uint64_t, std::uint32_t>;  // least peak of a finish, label: lowest first, then oldest
  std::priority_queue<entry, std::vector<entry>, std::greater<>> open;

  auto key_of = [&](node_mask L, node_mask K) {
    const node_mask boundary = costs.boundary(L);
    node_mask reach = boundary & ~K, grown = reach;
    while (grown != 0) {
      node_mask next = 0;
      detail::for_each_bit(grown, [&](std::size_t i) { next |= costs.preds(i) & ~K & ~reach; });
      reach |= next;
      grown = next;
    }
    return std::pair{key{L, K & boundary, reach}, costs.bytes_of(K & L & ~boundary)};
  };
  // Adds a label unless one with its key is no worse on both counts.
  auto offer = [&](std::size_t set, node_mask K, std::uint64_t peak, std::uint32_t parent, stage_recompute mode) {
    const node_mask L = lower_sets[set];
    const auto [k, inside] = key_of(L, K);
    const std::uint64_t least = std::max(peak, resident + inside + rest_floor[set]);  // every finish peaks here or higher
    if (least >= options.below) return;
    std::vector<std::uint32_t>& same = by_key[k];
    for (std::uint32_t j : same)
      if (!labels[j].dominated && labels[j].peak <= peak && labels[j].kept_inside <= inside) return;
    for (std::uint32_t j : same)
      if (peak <= labels[j].peak && inside <= labels[j].kept_inside) labels[j].dominated = true;
    std::erase_if(same, [&](std::uint32_t j) { return labels[j].dominated; });
    same.push_back(static_cast<std::uint32_t>(labels.size()));
    open.push({least, static_cast<std::uint32_t>(labels.size())});
    labels.push_back({L, K, peak, inside, parent, mode, false});
  };

  offer(0, 0, 0, root, stage_recompute::lazy);  // lower_sets[0] is ∅
  const node_mask all = costs.all();
  std::uint64_t unit_work = 0;
  std::uint32_t found = root;
  bool stopped = false;
  while (!open.empty() && !stopped) {
    const std::uint32_t at = open.top().second;
    open.pop();
    const label from = labels[at];
    if (from.dominated) continue;
    if (from.L == all) {
      found = at;
      break;
    }
    for (std::size_t set = 0; set < lower_sets.size(); ++set) {
      const node_mask Lp = lower_sets[set];
      if ((Lp & from.L) != from.L || Lp == from.L) continue;
      const node_mask choice = Lp & ~from.L & costs.keepable();
      const node_mask boundary = costs.boundary(Lp);
      // Every subset of the stage's keepable values, depth first. Keeping
      // more never lowers the forward's peak, so a subset whose forward
      // reaches the bound cuts all its supersets.
      auto visit = [&](node_mask K) {
        ++out.transitions;
        unit_work += 100 * c;
        // Keeping more never lowers the forward's peak nor the bytes kept off
        // the boundary, so both cut the supersets of K too.
        const std::uint64_t forward = std::max(from.peak, costs.forward(from.L, Lp, K));
        if (forward >= options.below) return false;
        if (resident + costs.bytes_of(K & ~boundary) + rest_floor[set] >= options.below) return false;
        const std::uint64_t lazy = costs.backward(from.L, Lp, K, stage_recompute::lazy);
        const std::uint64_t eager = costs.backward(from.L, Lp, K, stage_recompute::eager);
        const std::uint64_t reached = std::max(forward, std::min(lazy, eager));
        if (reached < options.below)
          offer(set, K, reached, at, eager < lazy ? stage_recompute::eager : stage_recompute::lazy);
        if (unit_work >= 1 << 16) {
          stopped = stopped || options.time.charge(unit_work);
          unit_work = 0;
        }
        if (labels.size() > options.max_labels) stopped = true;
        return !stopped;
      };
      // K holds the choices below `rest`'s lowest bit; each frame adds one more or not.
      std::function<void(node_mask, node_mask)> grow = [&](node_mask K, node_mask rest) {
        while (rest != 0 && !stopped) {
          const node_mask bit = rest & (~rest + 1);
          rest &= rest - 1;
          if (visit(K | bit)) grow(K | bit, rest);
        }
      };
      if (visit(from.K)) grow(from.K, choice);
      if (stopped) break;
    }
  }
  options.time.charge(unit_work);
  out.labels = labels.size();
  if (stopped) {
    out.stopped_by = labels.size() > options.max_labels ? "its cap of " + std::to_string(options.max_labels) + " states"
                                                        : std::string(options.time.spent_on());
    return out;
  }
  out.complete = true;
  if (found == root) return out;

  std::vector<std::pair<node_mask, stage_recompute>> chain;  // lower sets, last first
  for (std::uint32_t k = found; labels[k].parent != root; k = labels[k].parent)
    chain.emplace_back(labels[k].L, labels[k].mode);
  std::reverse(chain.begin(), chain.end());
  plan p;
  p.method = "general-dp";
  p.stage_of.assign(g.size(), 0);
  p.kept = node_set(g.size());
  node_mask before = 0;
  for (std::size_t k = 0; k < chain.size(); ++k) {
    detail::for_each_bit(chain[k].first & ~before, [&](std::size_t i) {
      p.stage_of[costs.node(i)] = static_cast<std::uint32_t>(k);
    });
    p.stage_modes.push_back(chain[k].second);
    before = chain[k].first;
  }
  detail::for_each_bit(labels[found].K, [&](std::size_t i) { p.kept.insert(costs.node(i)); });
  p.steps = schedule_from_kept_stages(g, p.stage_of, p.kept, p.stage_modes);
  out.peak = labels[found].peak;
  out.best = std::move(p);
  return out;
}

}  // namespace remat
