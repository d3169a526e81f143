#pragma once

/// \file
/// What every runtime does while it runs a schedule, whatever its kernels and
/// wherever its memory lives: which buffer of the arena layout each step
/// allocates and drops, which operand gradients a backward writes and which it
/// adds to, and the memory ledger of live bytes. The CPU and CUDA executors
/// both run schedules through schedule_walk, so they allocate, accumulate and
/// account identically by construction.
///
/// The rules (docs/cpu-runtime.md, "The executor"):
/// - a compute or recompute step holds its output buffer (and the graph's
///   declared workspace, during the step only); a free step drops the value;
/// - a backward step holds a seed gradient when its node is a sink, a gradient
///   buffer for each non-input operand that has none yet, its parameter
///   gradient and its declared workspace; its own gradient dies with it;
/// - each operand's first gradient contribution is written in place, later
///   ones are computed aside in full and then added, so contributions sum in
///   the order the schedule runs the consumers' backwards;
/// - every buffer is acquired at the step the layout says it is born, released
///   after the step the layout says it dies, and never overlaps another live
///   buffer; the ledger is recorded once per step when everything the step
///   holds is allocated (for a free step, after the free).

#include <remat/config.hpp>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include <remat/graph/graph.hpp>
#include <remat/plan/schedule.hpp>
#include <remat/runtime/layout.hpp>

namespace remat {

/// How a backward step delivers one operand's gradient contribution.
enum class contribution : std::uint8_t {
  none,   ///< a graph input: no gradient is computed
  write,  ///< the operand's first contribution: written into its gradient buffer
  add,    ///< a later one: computed aside in full, then added to the buffer
};

/// The buffers (indices into arena_layout::buffers) one backward step works on.
struct backward_buffers {
  /// v's gradient: for a sink a fresh seed, which the runtime fills with the
  /// loss weight; otherwise what v's consumers accumulated.
  std::size_t output_gradient = 0;
  bool seed = false;                        ///< v is a sink
  std::vector<contribution> how;            ///< per operand position
  std::vector<std::size_t> gradient;        ///< per operand position: its gradient buffer (unset for none)
  std::optional<std::size_t> parameter_gradient;  ///< when v has parameters
};

/// What a runtime supplies to schedule_walk::run. `acquired(b)` and
/// `released(b)` tell it a buffer's memory starts and stops being live (an
/// allocator per buffer allocates and frees there; an arena has nothing to
/// do). `forward(i, s, b)` runs step i, a compute or recompute, into buffer b;
/// `backward(i, s, buffers)` runs a backward step.
template <class R>
concept schedule_runtime = requires(R& r, std::size_t i, const step& s, std::size_t b, const backward_buffers& bb) {
  r.acquired(b);
  r.released(b);
  r.forward(i, s, b);
  r.backward(i, s, bb);
};

/// A schedule_runtime from two callables, for runtimes whose buffers all live
/// in one arena (nothing to do when a buffer is acquired or released).
template <class Forward, class Backward>
struct arena_runtime {
  Forward forward;
  Backward backward;
  void acquired(std::size_t) const noexcept {}
  void released(std::size_t) const noexcept {}
};

/// One run of a schedule over its arena layout, driving a memory_ledger.
class schedule_walk {
 public:
  static constexpr std::size_t none = std::numeric_limits<std::size_t>::max();

  /// \pre `layout` was made from buffer_lifetimes(g, steps) (sizes may be
  /// rescaled), and the ledger is fresh. The references must outlive run().
  schedule_walk(const graph& g, const schedule& steps, const arena_layout& layout, memory_ledger& ledger)
      : g_(g), steps_(steps), layout_(layout), ledger_(ledger) {}

  /// Runs every step, calling back into `runtime`. Exceptions from the runtime
  /// propagate. O(steps + m) plus O(live buffers) per acquisition (the overlap
  /// check) plus the runtime's own work.
  template <schedule_runtime R>
  void run(R& runtime) {
    const std::size_t n = g_.size();
    value_.assign(n, none);
    gradient_.assign(n, none);
    written_.assign(n, 0);
    live_.clear();
    backward_buffers bb;
    for (std::size_t i = 0; i < steps_.size(); ++i) {
      const step s = steps_[i];
      const node_id v = s.node;
      if (s.kind == step_kind::free) {
        release(runtime, value_[v], i - 1);
        value_[v] = none;
        ledger_.record();
        continue;
      }
      if (s.kind == step_kind::compute || s.kind == step_kind::recompute) {
        const std::size_t out = acquire(runtime, i,
                                        s.kind == step_kind::compute ? memory_category::activations
                                                                     : memory_category::recomputed,
                                        v);
        const std::size_t workspace = g_.workspace(v) > 0 ? acquire(runtime, i, memory_category::workspace, v) : none;
        ledger_.record();
        runtime.forward(i, s, out);
        if (workspace != none) release(runtime, workspace, i);
        value_[v] = out;
        continue;
      }

      bb.seed = g_.successors(v).empty();
      if (bb.seed) bb.output_gradient = acquire(runtime, i, memory_category::gradients, v);
      for (node_id p : g_.predecessors(v))
        if (!g_.is_input(p) && gradient_[p] == none) {
          gradient_[p] = acquire(runtime, i, memory_category::gradients, p);
          written_[p] = 0;
        }
      bb.parameter_gradient = g_.params(v) > 0 ? std::optional<std::size_t>(acquire(
                                                     runtime, i, memory_category::parameter_gradients, v))
                                               : std::nullopt;
      const std::size_t workspace =
          g_.backward_workspace(v) > 0 ? acquire(runtime, i, memory_category::workspace, v) : none;
      ledger_.record();
      if (!bb.seed) bb.output_gradient = gradient_[v];
      bb.how.clear();
      bb.gradient.clear();
      for (node_id p : g_.inputs(v)) {
        if (g_.is_input(p)) {
          bb.how.push_back(contribution::none);
          bb.gradient.push_back(none);
          continue;
        }
        bb.how.push_back(written_[p] ? contribution::add : contribution::write);
        bb.gradient.push_back(gradient_[p]);
        written_[p] = 1;
      }
      runtime.backward(i, s, bb);
      if (workspace != none) release(runtime, workspace, i);
      release(runtime, bb.output_gradient, i);
      if (!bb.seed) gradient_[v] = none;
    }
  }

  /// The buffer holding v's value now (during run, while v is alive).
  std::size_t value(node_id v) const noexcept {
    REMAT_ASSERT(value_[v] != none);
    return value_[v];
  }

  /// The buffers alive now; after run, those the schedule never frees (values
  /// kept to the end, parameter gradients).
  const std::vector<std::size_t>& live() const noexcept { return live_; }

  /// True when `mine` shares no byte with a buffer alive now.
  bool apart_from_live(const buffer_lifetime& mine) const noexcept {
    for (std::size_t other : live_) {
      const buffer_lifetime& o = layout_.buffers[other];
      if (mine.bytes != 0 && o.bytes != 0 && mine.offset < o.offset + o.bytes && o.offset < mine.offset + mine.bytes)
        return false;
    }
    return true;
  }

 private:
  template <class R>
  std::size_t acquire(R& runtime, std::size_t step_index, memory_category c, node_id v) {
    const std::optional<std::size_t> b = layout_.find(step_index, c, v);
    REMAT_ASSERT(b.has_value());
    REMAT_ASSERT(apart_from_live(layout_.buffers[*b]));
    live_.push_back(*b);
    ledger_.acquire(c, layout_.buffers[*b].bytes);
    runtime.acquired(*b);
    return *b;
  }

  // Drops buffer b, whose last step of life was `last`.
  template <class R>
  void release(R& runtime, std::size_t b, [[maybe_unused]] std::size_t last) {
    REMAT_ASSERT(layout_.buffers[b].last_step == last);
    const auto it = std::find(live_.begin(), live_.end(), b);
    REMAT_ASSERT(it != live_.end());
    *it = live_.back();
    live_.pop_back();
    ledger_.release(layout_.buffers[b].category, layout_.buffers[b].bytes);
    runtime.released(b);
  }

  const graph& g_;
  const schedule& steps_;
  const arena_layout& layout_;
  memory_ledger& ledger_;
  std::vector<std::size_t> value_, gradient_;
  std::vector<char> written_;
  std::vector<std::size_t> live_;
};

}  // namespace remat
