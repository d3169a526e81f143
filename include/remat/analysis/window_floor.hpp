#pragma once

/// \file
/// The window floor: a lower bound on the peak of every schedule that plays
/// out, step by step, which backwards of a window of nodes are done and which
/// of its largest values are held, where the per-op, cut and backward-order
/// floors look at one backward, two, or the gradients alone.
///
/// A window is up to 64 computed nodes consecutive in the id order, B, and
/// the up to 6 largest values among them, W. A state is (D, H): the
/// backwards of B done and the values of W held. Every schedule, read only
/// through B and W, is a path of such states whose steps are
///   - a compute of w ∈ W: its operands in W held, those outside W charged
///     for that step;
///   - a free of w ∈ W;
///   - a backward of v ∈ B once its consumers in B are done: what it reads
///     held (in W) or charged (outside W), with its parameter gradient,
///     workspace, output gradient and a gradient buffer per operand;
/// and the other steps leave the state alone. Between steps a state holds the
/// resident bytes, H, and the gradients D alone implies: a done backward
/// implies its descendants' (their parameter gradients exist), and a node's
/// gradient is pending when a consumer's backward is implied done and a
/// backward of B it precedes is not. Each step is charged only bytes the
/// schedule holds at it, so the least over paths of the largest step is a
/// bound (a bottleneck shortest path, searched cheapest first). A search
/// stopped by its work limit still bounds: every path passes a state not yet
/// settled, priced at least as the one being expanded.
///
/// It lifts where a window's values cannot be held together with the
/// gradients its backwards leave pending, nor recomputed under them without
/// holding their operands: on DARTS's reduction cells, whose preprocessing
/// reads the widest values of the network. Which windows: those around the
/// nodes the caller names (schedule_bound_for: where the plan peaks).
///
/// Complexity per window: O(S · (b + p)) for S states reached, b = |B| and p
/// the nodes whose gradients B can imply pending; S is at most the upper sets
/// of B times 2^|W|, and the work limit stops the search before that.
/// Deterministic: the limit counts work, not time.

#include <remat/config.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <queue>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <remat/analysis/lower_sets.hpp>
#include <remat/graph/graph.hpp>

namespace remat {

/// Work before a window's search stops with the state it is expanding as
/// its bound: per state settled, a unit per node of the window and per
/// gradient it can imply; per state stored, 16. Enough to complete the
/// window around DARTS's first reduction cell (docs/results-solvers.md,
/// "The window floor").
inline constexpr std::uint64_t window_floor_work = std::uint64_t{1} << 26;

/// The window floor over the windows searched.
struct window_floor {
  std::uint64_t bytes = 0;  ///< no schedule's peak is below this
  node_id first = 0;        ///< the window that sets it: nodes [first, last] of the id order
  node_id last = 0;
  bool complete = false;    ///< that window's search completed; else its work limit stopped it
  /// When complete: the window's nodes in the reverse of the order its best
  /// path runs their backwards, a topological order of them.
  std::vector<node_id> order;
  std::size_t windows = 0;  ///< windows searched
  std::size_t states = 0;   ///< states reached, over all windows
  std::uint64_t work = 0;   ///< work units spent, over all windows
};

/// What the floor says, for messages.
inline std::string describe_window_floor(const graph& g, const window_floor& floor) {
  return "every schedule, followed through the backwards and largest values of the nodes from '" +
         g.node_name(floor.first) + "' to '" + g.node_name(floor.last) + "', has a step this large";
}

namespace detail {

struct window_state_key {
  std::uint64_t done;
  std::uint32_t held;
  friend bool operator==(const window_state_key&, const window_state_key&) = default;
};

struct window_state_hash {
  std::size_t operator()(const window_state_key& k) const noexcept {
    std::uint64_t h = (k.done ^ (std::uint64_t{k.held} << 7 | k.held >> 25)) * 0x9E3779B97F4A7C15ULL;
    return static_cast<std::size_t>(h ^ h >> 31);
  }
};

// The window floor of one window: the computed nodes `window` (ascending,
// at most 64), within `max_work`. With `constraints`, a backward also waits
// for those of the nodes after it there (for an order, not a bound: it holds
// only for the schedules that keep them).
inline window_floor window_floor_in(const graph& g, const std::vector<node_id>& window, std::uint64_t max_work,
                                    const precedence* constraints = nullptr) {
  using mask = std::uint64_t;
  const std::size_t n = g.size(), b = window.size();
  constexpr std::size_t max_held = 6;
  window_floor out;
  out.windows = 1;
  if (b == 0) return out;
  out.first = window.front();
  out.last = window.back();
  std::vector<int> in_window(n, -1);
  for (std::size_t i = 0; i < b; ++i) in_window[window[i]] = static_cast<int>(i);

  // W: the largest values of the window, ties to the earlier node.
  std::vector<std::size_t> by_size(b);
  for (std::size_t i = 0; i < b; ++i) by_size[i] = i;
  std::stable_sort(by_size.begin(), by_size.end(),
                   [&](std::size_t x, std::size_t y) { return g.bytes(window[x]) > g.bytes(window[y]); });
  by_size.resize(std::min(b, max_held));
  std::sort(by_size.begin(), by_size.end());
  const std::vector<std::size_t>& tracked = by_size;
  std::vector<int> in_tracked(n, -1);
  for (std::size_t j = 0; j < tracked.size(); ++j) in_tracked[window[tracked[j]]] = static_cast<int>(j);

  // Window nodes among each node's ancestors-or-self and descendants-or-self.
  std::vector<mask> above(n, 0), below(n, 0);
  for (node_id v = 0; v < n; ++v) {
    if (in_window[v] >= 0) above[v] |= mask{1} << in_window[v];
    for (node_id p : g.predecessors(v)) above[v] |= above[p];
  }
  for (node_id v = n; v-- > 0;) {
    if (in_window[v] >= 0) below[v] |= mask{1} << in_window[v];
    for (node_id s : g.successors(v)) below[v] |= below[s];
  }
  // A node's gradient is pending under D when a consumer's backward is
  // implied done (a window node at or above the consumer is in D) and the
  // node's own is not (a window node at or below it is out of D).
  struct gradient {
    mask opened_by, closed_by;
    std::uint64_t bytes;
  };
  std::vector<gradient> gradients;
  std::vector<mask> opened_by(n, 0);
  std::vector<std::pair<mask, std::uint64_t>> parameter_gradients;  // by the window nodes that imply them
  for (node_id x = 0; x < n; ++x) {
    if (g.is_input(x)) continue;
    for (node_id s : g.successors(x)) opened_by[x] |= above[s];
    if (opened_by[x] != 0 && below[x] != 0) gradients.push_back({opened_by[x], below[x], g.bytes(x)});
    if (g.params(x) != 0 && above[x] != 0) {
      auto same = std::ranges::find(parameter_gradients, above[x], &std::pair<mask, std::uint64_t>::first);
      if (same == parameter_gradients.end()) parameter_gradients.emplace_back(above[x], g.params(x));
      else same->second += g.params(x);
    }
  }
  auto pending = [&](node_id x, mask done) {
    return !g.is_input(x) && (done & opened_by[x]) != 0 && (~done & below[x]) != 0;
  };
  const std::uint64_t resident = g.param_bytes() + g.input_bytes();
  auto resting = [&](mask done, std::uint32_t held) {
    std::uint64_t bytes = resident;
    for (const gradient& x : gradients)
      if ((done & x.opened_by) != 0 && (~done & x.closed_by) != 0) bytes += x.bytes;
    for (const auto& [implied_by, bytes_of] : parameter_gradients)
      if ((done & implied_by) != 0) bytes += bytes_of;
    for (std::size_t j = 0; j < tracked.size(); ++j)
      if ((held >> j) & 1U) bytes += g.bytes(window[tracked[j]]);
    return bytes;
  };

  // Per window node: consumers in the window, tracked operands, and the
  // bytes of computed operands outside W (charged when they must be there).
  std::vector<mask> consumers(b, 0);
  std::vector<std::uint32_t> tracked_operands(b, 0);
  std::vector<std::uint64_t> untracked_operands(b, 0);
  std::vector<std::vector<node_id>> operands(b);
  for (std::size_t i = 0; i < b; ++i) {
    const node_id v = window[i];
    for (node_id s : g.successors(v))
      if (in_window[s] >= 0) consumers[i] |= mask{1} << in_window[s];
    if (constraints != nullptr && !constraints->empty())
      for (node_id s : constraints->after[v])
        if (in_window[s] >= 0) consumers[i] |= mask{1} << in_window[s];
    for (node_id p : g.predecessors(v))
      if (!g.is_input(p) && std::find(operands[i].begin(), operands[i].end(), p) == operands[i].end())
        operands[i].push_back(p);
    for (node_id p : operands[i]) {
      if (in_tracked[p] >= 0) tracked_operands[i] |= std::uint32_t{1} << in_tracked[p];
      else untracked_operands[i] += g.bytes(p);
    }
  }
  const mask all = b == 64 ? ~mask{0} : (mask{1} << b) - 1;

  // States in creation order, found through an open-addressing table of
  // their indices (+1; 0 is empty), doubled at half load. A state's label:
  // the least largest step of a path reaching it, the state it came from and
  // the backward it took there (b when another step).
  struct record {
    window_state_key key;
    std::uint64_t cost;
    std::uint32_t from;
    std::uint32_t backward;
    bool settled;
  };
  std::vector<record> states;
  std::vector<std::uint32_t> slots(1 << 12, 0);
  const window_state_hash hash;
  auto slot_of = [&](window_state_key k) {
    std::size_t i = hash(k) & (slots.size() - 1);
    while (slots[i] != 0 && !(states[slots[i] - 1].key == k)) i = (i + 1) & (slots.size() - 1);
    return i;
  };
  using entry = std::pair<std::uint64_t, std::uint32_t>;  // (cost, state): ties to the older state
  std::priority_queue<entry, std::vector<entry>, std::greater<>> open;
  std::uint32_t at = 0;
  auto reach = [&](window_state_key k, std::uint64_t cost, std::uint32_t backward) {
    std::size_t slot = slot_of(k);
    if (slots[slot] == 0) {
      if (2 * (states.size() + 1) > slots.size()) {
        std::vector<std::uint32_t>(slots.size() * 2, 0).swap(slots);
        for (std::size_t i = 0; i < states.size(); ++i) slots[slot_of(states[i].key)] = static_cast<std::uint32_t>(i + 1);
        slot = slot_of(k);
      }
      states.push_back({k, cost, at, backward, false});
      slots[slot] = static_cast<std::uint32_t>(states.size());
      out.work += 16;
      ++out.states;
    } else {
      record& r = states[slots[slot] - 1];
      if (r.settled || r.cost <= cost) return;
      r.cost = cost;
      r.from = at;
      r.backward = backward;
    }
    open.emplace(cost, slots[slot] - 1);
  };
  const auto no_backward = static_cast<std::uint32_t>(b);
  reach({0, 0}, 0, no_backward);
  while (!open.empty()) {
    const std::uint64_t cost = open.top().first;
    at = open.top().second;
    open.pop();
    if (states[at].settled || states[at].cost != cost) continue;
    states[at].settled = true;
    const window_state_key now = states[at].key;
    out.bytes = cost;
    if (now.done == all) {
      out.complete = true;
      for (std::uint32_t k = at; k != 0; k = states[k].from)
        if (states[k].backward < b) out.order.push_back(window[states[k].backward]);
      return out;  // backwards last to first: the reverse of the path's order
    }
    if (out.work > max_work) return out;  // `cost` still bounds: see the file comment
    out.work += b + gradients.size() + parameter_gradients.size();
    const std::uint64_t rest = resting(now.done, now.held);
    for (std::size_t j = 0; j < tracked.size(); ++j) {
      const std::size_t i = tracked[j];
      const node_id w = window[i];
      const std::uint32_t bit = std::uint32_t{1} << j;
      if (now.held & bit) {
        reach({now.done, now.held & ~bit}, cost, no_backward);  // a free: the next state's memory is less
        continue;
      }
      if ((now.done >> i) & 1U) continue;  // nothing reads it after its own backward
      if ((tracked_operands[i] & now.held) != tracked_operands[i]) continue;
      reach({now.done, now.held | bit}, std::max(cost, rest + g.bytes(w) + g.workspace(w) + untracked_operands[i]), no_backward);
    }
    for (std::size_t i = 0; i < b; ++i) {
      const node_id v = window[i];
      if (((now.done >> i) & 1U) || (consumers[i] & now.done) != consumers[i]) continue;
      const backward_reads reads = g.reads(v);
      std::uint64_t step = rest + g.params(v) + g.backward_workspace(v);
      if (reads_inputs(reads)) {
        if ((tracked_operands[i] & now.held) != tracked_operands[i]) continue;
        step += untracked_operands[i];
      }
      if (reads_output(reads)) {
        if (in_tracked[v] < 0) step += g.bytes(v);
        else if (!((now.held >> in_tracked[v]) & 1U)) continue;
      }
      // Its output gradient (or seed) and a gradient buffer per operand,
      // where the state does not count them already.
      if (!pending(v, now.done)) step += g.bytes(v);
      for (node_id p : operands[i])
        if (!pending(p, now.done)) step += g.bytes(p);
      reach({now.done | mask{1} << i, now.held}, std::max(cost, step), static_cast<std::uint32_t>(i));
    }
  }
  return out;  // unreachable: the window's full done set is reached
}

// g's computed nodes in id order, and each node's place among them.
struct computed_run {
  std::vector<node_id> nodes;
  std::vector<std::size_t> position;
};

inline computed_run computed_run_of(const graph& g) {
  computed_run run{{}, std::vector<std::size_t>(g.size(), 0)};
  for (node_id v = 0; v < g.size(); ++v)
    if (!g.is_input(v)) {
      run.position[v] = run.nodes.size();
      run.nodes.push_back(v);
    }
  return run;
}

// The window of `width` computed nodes around v, starting 3/8 of it (24 of
// 64) before v in the id order (fewer on a smaller graph).
inline std::vector<node_id> window_around(const computed_run& run, node_id v, std::size_t width = 64) {
  const std::size_t lead = width * 3 / 8;
  const std::size_t at = run.position[v], size = run.nodes.size();
  const std::size_t start = std::min(at > lead ? at - lead : 0, size > width ? size - width : 0);
  return {run.nodes.begin() + static_cast<std::ptrdiff_t>(start),
          run.nodes.begin() + static_cast<std::ptrdiff_t>(std::min(size, start + width))};
}

}  // namespace detail

/// The work limit window_floor_of takes by default on g: 2¹⁶ units per
/// computed node, at most window_floor_work, so that a small graph's bound
/// costs no more than its plan's search.
inline std::uint64_t window_floor_work_for(const graph& g) noexcept {
  std::uint64_t computed = 0;
  for (node_id v = 0; v < g.size(); ++v) computed += !g.is_input(v);
  return std::min(window_floor_work, computed << 16);
}

/// The window floor over windows around `near`: for each node named, the 64
/// computed nodes starting 24 before it in the id order (fewer on a smaller
/// graph), each searched within `max_work` work units (by default
/// window_floor_work_for(g)); the highest bound.
/// Complexity: see the file comment, per window.
inline window_floor window_floor_of(const graph& g, std::span<const node_id> near,
                                    std::optional<std::uint64_t> max_work = std::nullopt) {
  const std::uint64_t work_per_window = max_work ? *max_work : window_floor_work_for(g);
  const detail::computed_run run = detail::computed_run_of(g);
  window_floor out;
  std::vector<node_id> firsts;  // of the windows searched
  for (node_id v : near) {
    if (v >= g.size()) continue;
    const std::vector<node_id> window = detail::window_around(run, v);
    if (window.empty() || std::ranges::find(firsts, window.front()) != firsts.end()) continue;
    firsts.push_back(window.front());
    const window_floor here = detail::window_floor_in(g, window, work_per_window);
    const std::size_t windows = out.windows + 1, states = out.states + here.states;
    const std::uint64_t work = out.work + here.work;
    if (here.bytes > out.bytes) out = here;
    out.windows = windows;
    out.states = states;
    out.work = work;
  }
  return out;
}

/// The window floor of one window alone, the `width` (at most 64) computed
/// nodes around `near`, starting 3/8 of them before it in the id order
/// (fewer on a smaller graph), within window_floor_work_for(g) units. With
/// `preserve_gradient_order` its paths keep gradient_order_constraints: its
/// `order` then keeps them, and its `bytes` bounds only the schedules that
/// do. Where a plan peaks for want of a better order in that window,
/// window_floor_order(g, window) may peak lower.
inline window_floor window_floor_around(const graph& g, node_id near, std::size_t width,
                                        bool preserve_gradient_order) {
  if (near >= g.size() || g.is_input(near) || width == 0 || width > 64) return {};
  const std::vector<node_id> window = detail::window_around(detail::computed_run_of(g), near, width);
  const precedence constraints = preserve_gradient_order ? gradient_order_constraints(g) : precedence{};
  return detail::window_floor_in(g, window, window_floor_work_for(g), &constraints);
}

/// A topological order of all of g's nodes: the inputs, then the computed
/// nodes in id order but for `window`'s, which run as its best path runs
/// their backwards (reversed). Empty when its search did not complete. No
/// path between two nodes of a window leaves it, so the order is
/// topological.
inline std::vector<node_id> window_floor_order(const graph& g, const window_floor& window) {
  if (!window.complete || window.order.empty()) return {};
  std::vector<node_id> order;
  order.reserve(g.size());
  for (node_id v = 0; v < g.size(); ++v)
    if (g.is_input(v)) order.push_back(v);
  bool placed = false;
  for (node_id v = 0; v < g.size(); ++v) {
    if (g.is_input(v)) continue;
    if (v < window.first || v > window.last) {
      order.push_back(v);
    } else if (!placed) {
      order.insert(order.end(), window.order.begin(), window.order.end());
      placed = true;
    }
  }
  if (order.size() != g.size()) return {};  // not this graph's window
  return order;
}

/// The same for the whole graph, when one window holds every computed node
/// and its search completes within window_floor_work_for(g) units; else
/// empty. Where that floor is the least peak, a plan in this order can meet
/// it. With `preserve_gradient_order`, the path keeps
/// gradient_order_constraints (so its floor may be higher).
inline std::vector<node_id> window_floor_order(const graph& g, bool preserve_gradient_order) {
  const detail::computed_run run = detail::computed_run_of(g);
  if (run.nodes.empty() || run.nodes.size() > 64) return {};
  return window_floor_order(g, window_floor_around(g, run.nodes.front(), 64, preserve_gradient_order));
}

}  // namespace remat
