#pragma once

/// \file
/// Where a runtime puts every buffer of a schedule, and what it holds at every
/// step. Shared by all backends (no device code here).
///
/// - buffer_lifetimes: every value instance (computed or recomputed), activation
///   gradient, parameter gradient and workspace a schedule allocates, with the
///   steps it is alive for ([first, last], inclusive) and its bytes. "Alive at a
///   step" means exactly what the simulator counts for that step
///   (docs/cost-model.md), so the bytes alive at step i sum, with parameters and
///   inputs, to simulate(g, steps).timeline[i].total().
/// - assign_offsets: one offset per buffer in a single arena such that buffers
///   alive at a common step never overlap ("greedy by size" with best fit,
///   Pisarchyk & Lee, "Efficient Memory Management for Deep Neural Net
///   Inference", 2020).
/// - memory_ledger: the accounting a runtime keeps while it runs: live bytes by
///   the simulator's categories at every step, and the peak.

#include <remat/config.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include <remat/graph/graph.hpp>
#include <remat/plan/schedule.hpp>
#include <remat/plan/simulate.hpp>

namespace remat {

/// What a buffer holds: the simulator's categories of non-resident memory.
enum class memory_category : std::uint8_t {
  activations,          ///< a value from a compute step
  recomputed,           ///< a value from a recompute step
  gradients,            ///< an activation gradient (a seed gradient included)
  parameter_gradients,  ///< a node's parameter gradient (alive to the end)
  workspace,            ///< a step's transient workspace
};

inline constexpr std::string_view to_string(memory_category c) noexcept {
  switch (c) {
    case memory_category::activations: return "activations";
    case memory_category::recomputed: return "recomputed";
    case memory_category::gradients: return "gradients";
    case memory_category::parameter_gradients: return "parameter_gradients";
    case memory_category::workspace: return "workspace";
  }
  return "?";
}

/// One buffer of a schedule. Its identity is (first_step, category, node): a
/// step allocates at most one buffer of each category per node.
struct buffer_lifetime {
  memory_category category = memory_category::activations;
  node_id node = 0;            ///< whose value, gradient, parameter gradient or workspace
  std::size_t first_step = 0;  ///< the step that allocates it
  std::size_t last_step = 0;   ///< the last step it is alive during (inclusive)
  std::uint64_t bytes = 0;
  std::uint64_t offset = 0;    ///< in the arena; set by assign_offsets
};

/// The buffers `steps` allocates on `g`, in the order the steps allocate them.
/// A value is alive from its (re)compute step to the step before its free (to
/// the last step when never freed); a workspace and a seed gradient during
/// their step only; an operand's gradient from the first backward that writes
/// it through its owner's backward; a parameter gradient from its node's
/// backward to the last step. Zero-byte parameter gradients and workspaces are
/// left out. \pre simulate(g, steps) accepts the schedule (plan_arena checks
/// it). Complexity: O(steps + m).
inline std::vector<buffer_lifetime> buffer_lifetimes(const graph& g, const schedule& steps) {
  constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
  const std::size_t n = g.size();
  const std::size_t end = steps.empty() ? 0 : steps.size() - 1;
  std::vector<buffer_lifetime> out;
  out.reserve(3 * steps.size());
  std::vector<std::size_t> open_value(n, none), open_gradient(n, none);
  auto open = [&](memory_category c, node_id v, std::size_t first, std::size_t last, std::uint64_t bytes) {
    buffer_lifetime b;
    b.category = c;
    b.node = v;
    b.first_step = first;
    b.last_step = last;
    b.bytes = bytes;
    out.push_back(b);
    return out.size() - 1;
  };
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const node_id v = steps[i].node;
    switch (steps[i].kind) {
      case step_kind::compute:
      case step_kind::recompute:
        open_value[v] = open(steps[i].kind == step_kind::compute ? memory_category::activations
                                                                 : memory_category::recomputed,
                             v, i, end, g.bytes(v));
        if (g.workspace(v) > 0) open(memory_category::workspace, v, i, i, g.workspace(v));
        break;
      case step_kind::free:
        REMAT_ASSERT(open_value[v] != none && i > 0);
        out[open_value[v]].last_step = i - 1;  // the free step itself no longer holds it
        open_value[v] = none;
        break;
      case step_kind::backward:
        if (g.successors(v).empty()) open(memory_category::gradients, v, i, i, g.bytes(v));
        for (node_id p : g.predecessors(v))
          if (!g.is_input(p) && open_gradient[p] == none)
            open_gradient[p] = open(memory_category::gradients, p, i, end, g.bytes(p));
        if (g.params(v) > 0) open(memory_category::parameter_gradients, v, i, end, g.params(v));
        if (g.backward_workspace(v) > 0) open(memory_category::workspace, v, i, i, g.backward_workspace(v));
        if (open_gradient[v] != none) out[open_gradient[v]].last_step = i;  // dies with its backward
        break;
    }
  }
  return out;
}

/// Buffers with arena offsets.
struct arena_layout {
  std::vector<buffer_lifetime> buffers;  ///< as given, offsets set
  std::uint64_t arena_bytes = 0;         ///< the arena's size: the highest buffer end
  std::uint64_t live_peak = 0;  ///< most bytes alive at one step: no layout can be smaller
  std::uint64_t alignment = 1;  ///< every offset is a multiple of it

  /// arena_bytes / live_peak (1 when nothing is alive): the layout's overhead.
  double ratio() const noexcept {
    return live_peak == 0 ? 1.0 : static_cast<double>(arena_bytes) / static_cast<double>(live_peak);
  }

  /// The buffer step `step` allocates for `node` in `category`, if any.
  /// Complexity: O(buffers allocated at that step).
  std::optional<std::size_t> find(std::size_t step, memory_category category, node_id node) const {
    if (step + 1 >= first_index_.size()) return std::nullopt;
    for (std::size_t k = first_index_[step]; k < first_index_[step + 1]; ++k) {
      const buffer_lifetime& b = buffers[by_first_[k]];
      if (b.category == category && b.node == node) return by_first_[k];
    }
    return std::nullopt;
  }

 private:
  friend arena_layout assign_offsets(std::vector<buffer_lifetime>, std::size_t, std::uint64_t);
  std::vector<std::size_t> first_index_;  // CSR over first_step into by_first_
  std::vector<std::size_t> by_first_;
};

/// Places `buffers` (alive over steps [0, steps)) in one arena so that any two
/// alive at a common step occupy disjoint byte ranges, every offset a multiple
/// of `alignment` (a power of two; sizes are rounded up to it for placement).
/// Greedy by size with best fit: buffers are taken largest first (ties: earlier
/// first step, then input order, so the result is deterministic); each goes
/// into the smallest gap between the buffers already placed that overlap it in
/// time which fits it, or on top of them. Complexity: O(B² + B·k log k) time
/// for B buffers of which at most k overlap any one in time, O(B + steps)
/// memory. \throws remat::error if alignment is not a power of two or a buffer
/// does not end before step `steps`.
inline arena_layout assign_offsets(std::vector<buffer_lifetime> buffers, std::size_t steps,
                                   std::uint64_t alignment = 64) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    throw error("arena alignment must be a power of two, got " + std::to_string(alignment));
  for (const buffer_lifetime& b : buffers)
    if (b.first_step > b.last_step || b.last_step >= steps)
      throw error("buffer of node " + std::to_string(b.node) + " lives over steps [" + std::to_string(b.first_step) +
                  ", " + std::to_string(b.last_step) + "], outside a schedule of " + std::to_string(steps) + " steps");
  auto rounded = [&](std::uint64_t bytes) { return (bytes + alignment - 1) / alignment * alignment; };

  std::vector<std::size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (buffers[a].bytes != buffers[b].bytes) return buffers[a].bytes > buffers[b].bytes;
    if (buffers[a].first_step != buffers[b].first_step) return buffers[a].first_step < buffers[b].first_step;
    return a < b;
  });

  arena_layout layout;
  layout.alignment = alignment;
  std::vector<std::size_t> placed;
  placed.reserve(buffers.size());
  std::vector<std::pair<std::uint64_t, std::uint64_t>> overlapping;  // [offset, end) sorted by offset
  for (std::size_t index : order) {
    buffer_lifetime& b = buffers[index];
    const std::uint64_t size = rounded(b.bytes);
    overlapping.clear();
    for (std::size_t other : placed) {
      const buffer_lifetime& o = buffers[other];
      if (o.first_step <= b.last_step && b.first_step <= o.last_step && o.bytes > 0)
        overlapping.emplace_back(o.offset, o.offset + rounded(o.bytes));
    }
    std::sort(overlapping.begin(), overlapping.end());
    std::uint64_t top = 0, best = 0, best_gap = std::numeric_limits<std::uint64_t>::max();
    bool found = false;
    for (const auto& [offset, stop] : overlapping) {
      if (offset > top && offset - top >= size && offset - top < best_gap) {
        best = top;
        best_gap = offset - top;
        found = true;
      }
      top = std::max(top, stop);
    }
    b.offset = found ? best : top;
    layout.arena_bytes = std::max(layout.arena_bytes, b.offset + size);
    placed.push_back(index);
  }

  // Sweep: the most bytes alive at one step.
  std::vector<std::int64_t> delta(steps + 1, 0);
  for (const buffer_lifetime& b : buffers) {
    delta[b.first_step] += static_cast<std::int64_t>(b.bytes);
    delta[b.last_step + 1] -= static_cast<std::int64_t>(b.bytes);
  }
  std::int64_t alive = 0;
  for (std::size_t i = 0; i < steps; ++i) {
    alive += delta[i];
    layout.live_peak = std::max(layout.live_peak, static_cast<std::uint64_t>(alive));
  }

  layout.first_index_.assign(steps + 1, 0);
  for (const buffer_lifetime& b : buffers) ++layout.first_index_[b.first_step + 1];
  std::partial_sum(layout.first_index_.begin(), layout.first_index_.end(), layout.first_index_.begin());
  layout.by_first_.resize(buffers.size());
  std::vector<std::size_t> cursor(layout.first_index_.begin(), layout.first_index_.end() - 1);
  for (std::size_t k = 0; k < buffers.size(); ++k) layout.by_first_[cursor[buffers[k].first_step]++] = k;
  layout.buffers = std::move(buffers);
  return layout;
}

/// The arena layout of a schedule: checks it with the simulator, then
/// buffer_lifetimes and assign_offsets. \throws invalid_schedule at the first
/// step the simulator rejects. Complexity: that of assign_offsets.
inline arena_layout plan_arena(const graph& g, const schedule& steps, std::uint64_t alignment = 64) {
  (void)simulate(g, steps);
  return assign_offsets(buffer_lifetimes(g, steps), steps.size(), alignment);
}

/// Live bytes by category while a runtime executes a schedule: it calls
/// acquire and release as it allocates and drops buffers and record once per
/// step, when everything the step holds is allocated (for a free step, after
/// the free). Parameters and inputs are resident and fixed at construction.
class memory_ledger {
 public:
  memory_ledger(std::uint64_t parameter_bytes, std::uint64_t input_bytes, bool keep_timeline = false)
      : keep_timeline_(keep_timeline) {
    live_.parameters = parameter_bytes;
    live_.inputs = input_bytes;
  }

  void acquire(memory_category c, std::uint64_t bytes) noexcept { slot(c) += bytes; }
  /// \pre at least `bytes` of category `c` are held.
  void release(memory_category c, std::uint64_t bytes) noexcept {
    REMAT_ASSERT(slot(c) >= bytes);
    slot(c) -= bytes;
  }

  /// Records the current live bytes as the memory of the next step.
  void record() {
    if (steps_ == 0 || live_.total() > peak_bytes_) {
      peak_bytes_ = live_.total();
      peak_step_ = steps_;
      at_peak_ = live_;
    }
    if (keep_timeline_) timeline_.push_back(live_);
    ++steps_;
  }

  const memory_breakdown& live() const noexcept { return live_; }
  std::uint64_t peak_bytes() const noexcept { return peak_bytes_; }
  /// The first recorded step reaching the peak.
  std::size_t peak_step() const noexcept { return peak_step_; }
  const memory_breakdown& at_peak() const noexcept { return at_peak_; }
  /// One entry per record() (empty unless keep_timeline).
  const std::vector<memory_breakdown>& timeline() const noexcept { return timeline_; }
  std::size_t steps() const noexcept { return steps_; }

 private:
  std::uint64_t& slot(memory_category c) noexcept {
    switch (c) {
      case memory_category::activations: return live_.activations;
      case memory_category::recomputed: return live_.recomputed;
      case memory_category::gradients: return live_.gradients;
      case memory_category::parameter_gradients: return live_.parameter_gradients;
      case memory_category::workspace: break;
    }
    return live_.workspace;
  }

  bool keep_timeline_;
  memory_breakdown live_;
  memory_breakdown at_peak_;
  std::uint64_t peak_bytes_ = 0;
  std::size_t peak_step_ = 0;
  std::size_t steps_ = 0;
  std::vector<memory_breakdown> timeline_;
};

}  // namespace remat
