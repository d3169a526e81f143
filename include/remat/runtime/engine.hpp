#pragma once

/// \file
/// The engine binding: how an engine that has its own kernels runs them under
/// a remat schedule. The engine supplies one forward and one backward kernel
/// call per node; remat walks the schedule, owns every activation, gradient,
/// parameter gradient and workspace buffer, recomputes and frees as the plan
/// says, and keeps the ledger (runtime/execution.hpp's schedule_walk). What
/// stays with the engine: its parameters, its graph inputs (data and labels),
/// its losses and its optimizer.
///
/// The contract (docs/engine-binding.md):
/// - forward_call: read `inputs` (operand values, in the graph's operand
///   order), write the node's whole value into `output` (g.bytes(node) bytes).
///   The same node may be called again with `recompute` set and must then
///   produce the same value without side effects the first call made (running
///   statistics, loss bookkeeping).
/// - backward_call: read `output_gradient` and only what g.reads(node) names
///   (`inputs`, `output`; the others are null: those buffers may be freed
///   already); for each operand position write (`contribution::write`: the
///   buffer holds garbage) or add (`contribution::add`) its gradient
///   contribution into `input_gradients[k]`; write the parameter gradient.
///   With `seed` set the node is a sink and `output_gradient` holds garbage:
///   the engine writes the loss's seed (d loss / d output) there first.
/// - `workspace` is valid during the call only; `stream` is the backend's
///   (a cudaStream_t on CUDA, null on the CPU) and kernels are issued on it.
///
/// The walk calls the engine from one thread, in schedule order.

#include <remat/config.hpp>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <remat/error.hpp>
#include <remat/graph/graph.hpp>
#include <remat/plan/schedule.hpp>
#include <remat/plan/simulate.hpp>
#include <remat/runtime/execution.hpp>
#include <remat/runtime/layout.hpp>

namespace remat {

/// One compute or recompute step, as the engine's forward kernel sees it.
struct forward_call {
  node_id node = 0;             ///< remat's id
  std::size_t original = 0;     ///< the node's index in the engine's graph (graph::original_index)
  std::size_t step_index = 0;
  bool recompute = false;       ///< false for the node's one compute step of the training step
  std::span<const void* const> inputs;  ///< operand values, in operand order
  void* output = nullptr;               ///< g.bytes(node) bytes
  void* workspace = nullptr;            ///< g.workspace(node) bytes (null when 0)
  std::uint64_t workspace_bytes = 0;
  void* stream = nullptr;               ///< the backend's stream (cudaStream_t), null on the CPU
};

/// One backward step, as the engine's backward kernel sees it.
struct backward_call {
  node_id node = 0;
  std::size_t original = 0;
  std::size_t step_index = 0;
  /// Operand values when g.reads(node) includes the inputs, else all null.
  std::span<const void* const> inputs;
  /// The node's value when g.reads(node) includes the output, else null.
  const void* output = nullptr;
  void* output_gradient = nullptr;  ///< d loss / d output, g.bytes(node) bytes
  bool seed = false;                ///< a sink: output_gradient is uninitialised, the engine seeds it
  /// Per operand position: where its contribution goes (null for graph inputs).
  std::span<void* const> input_gradients;
  std::span<const contribution> how;  ///< per operand position: none, write or add
  void* parameter_gradient = nullptr; ///< g.params(node) bytes to write, null when 0
  void* workspace = nullptr;          ///< g.backward_workspace(node) bytes (null when 0)
  std::uint64_t workspace_bytes = 0;
  void* stream = nullptr;
};

/// What an engine supplies: a forward and a backward kernel call per node.
/// Exceptions it throws propagate out of the executor's run.
template <class E>
concept engine = requires(E& e, const forward_call& f, const backward_call& b) {
  e.forward(f);
  e.backward(b);
};

/// A non-owning reference to any engine, for executors compiled apart from
/// the engine (a library, a .cu file). Cheap to copy; the engine must outlive it.
class engine_ref {
 public:
  template <engine E>
    requires(!std::same_as<std::remove_cvref_t<E>, engine_ref>)
  engine_ref(E& e) noexcept  // NOLINT(google-explicit-constructor): any engine converts
      : self_(std::addressof(e)),
        forward_([](void* self, const forward_call& f) { static_cast<E*>(self)->forward(f); }),
        backward_([](void* self, const backward_call& b) { static_cast<E*>(self)->backward(b); }) {}

  void forward(const forward_call& f) const { forward_(self_, f); }
  void backward(const backward_call& b) const { backward_(self_, b); }

 private:
  void* self_;
  void (*forward_)(void*, const forward_call&);
  void (*backward_)(void*, const backward_call&);
};

/// Where a runtime keeps each buffer of an arena layout while it is alive:
/// `acquired(b)` / `released(b)` as in schedule_runtime, `address(b)` the
/// buffer's first byte while it is alive (a host or device address).
template <class M>
concept buffer_memory = requires(M& m, std::size_t b) {
  m.acquired(b);
  m.released(b);
  { m.address(b) } -> std::convertible_to<void*>;
};

/// A schedule ready for an engine executor: checked by the simulator and laid
/// out. \throws invalid_schedule naming the step and node for a schedule the
/// simulator rejects; remat::error for an alignment that is not a power of
/// two. Complexity: that of simulate and assign_offsets.
struct engine_schedule {
  graph g;
  schedule steps;
  simulation simulated;
  arena_layout layout;

  engine_schedule() = default;
  engine_schedule(graph network, schedule s, std::uint64_t alignment, bool record_timeline)
      : g(std::move(network)), steps(std::move(s)) {
    simulate_options check;
    check.record_timeline = record_timeline;
    simulated = simulate(g, steps, check);
    layout = assign_offsets(buffer_lifetimes(g, steps), steps.size(), alignment);
  }
};

/// What an engine run holds when it ends, by node: the buffers of values the
/// schedule never frees and of parameter gradients (indices into the
/// layout's buffers), until the next run.
class held_buffers {
 public:
  static constexpr std::size_t none = std::numeric_limits<std::size_t>::max();

  explicit held_buffers(std::size_t nodes = 0) : value_(nodes, none), parameter_gradient_(nodes, none) {}

  void forget() noexcept {
    std::fill(value_.begin(), value_.end(), none);
    std::fill(parameter_gradient_.begin(), parameter_gradient_.end(), none);
  }
  /// Takes the walk's live buffers after a complete run.
  void record(const arena_layout& layout, const std::vector<std::size_t>& live) {
    for (std::size_t b : live) {
      const buffer_lifetime& buffer = layout.buffers[b];
      if (buffer.category == memory_category::parameter_gradients) parameter_gradient_[buffer.node] = b;
      if (buffer.category == memory_category::activations || buffer.category == memory_category::recomputed)
        value_[buffer.node] = b;
    }
  }
  /// The buffer of v's value or parameter gradient, or none.
  std::size_t value(node_id v) const noexcept { return v < value_.size() ? value_[v] : none; }
  std::size_t parameter_gradient(node_id v) const noexcept {
    return v < parameter_gradient_.size() ? parameter_gradient_[v] : none;
  }

 private:
  std::vector<std::size_t> value_, parameter_gradient_;
};

/// What one engine run held, as every engine executor reports it. peak_bytes,
/// peak_step, at_peak and timeline are the ledger (the engine's parameters and
/// inputs at the graph's bytes plus the buffers held, by the simulator's
/// categories): equal to simulate(g, steps)'s.
struct engine_report {
  std::uint64_t peak_bytes = 0;
  std::size_t peak_step = 0;
  memory_breakdown at_peak;
  std::vector<memory_breakdown> timeline;
  /// With one allocation per buffer: most bytes of buffers allocated at once
  /// (summed at the allocation calls); with an arena, the arena's size.
  std::uint64_t allocated_high = 0;
  double seconds = 0;  ///< the run's time, as the executor measures it

  void take_ledger(const memory_ledger& ledger) {
    peak_bytes = ledger.peak_bytes();
    peak_step = ledger.peak_step();
    at_peak = ledger.at_peak();
    timeline = ledger.timeline();
  }
};

/// Checks that `input_values` has one entry per node of `g` and a non-null
/// address for every graph input. \throws remat::error naming the first
/// graph input without one, or the size mismatch. O(n).
inline void check_input_values(const graph& g, std::span<const void* const> input_values) {
  if (input_values.size() != g.size())
    throw error("engine run on '" + g.name() + "': " + std::to_string(input_values.size()) +
                " input addresses for a graph of " + std::to_string(g.size()) +
                " nodes (give one per node, by remat id; only graph inputs' are read)");
  for (node_id v = 0; v < g.size(); ++v)
    if (g.is_input(v) && input_values[v] == nullptr)
      throw error("engine run on '" + g.name() + "': graph input '" + g.node_name(v) + "' (node " +
                  std::to_string(v) + ") has no address");
}

/// Runs the walk's schedule once through `e`: graph inputs at
/// `input_values[v]`, every other buffer where `memory` places it, kernels
/// on `stream`. \pre `walk` was made over `g` and `layout` (plan_arena(g,
/// steps) or the same buffers at other offsets) with a fresh ledger, and
/// check_input_values passed. Afterwards walk.live() lists the buffers still
/// held (kept values, parameter gradients). Complexity: schedule_walk::run
/// plus, per step, O(operands) and, for a step with a workspace, one
/// layout lookup.
template <engine E, buffer_memory M>
void run_engine(schedule_walk& walk, const graph& g, const arena_layout& layout, M& memory,
                std::span<const void* const> input_values, E& e, void* stream) {
  struct bound_runtime {
    schedule_walk& walk;
    const graph& g;
    const arena_layout& layout;
    M& memory;
    std::span<const void* const> input_values;
    E& e;
    void* stream;
    std::vector<const void*> in{};
    std::vector<void*> gradients{};

    const void* value(node_id p) const {
      return g.is_input(p) ? input_values[p] : memory.address(walk.value(p));
    }
    void* workspace(std::size_t i, node_id v) const {
      const std::optional<std::size_t> b = layout.find(i, memory_category::workspace, v);
      return b ? memory.address(*b) : nullptr;
    }

    void acquired(std::size_t b) { memory.acquired(b); }
    void released(std::size_t b) { memory.released(b); }

    void forward(std::size_t i, const step& s, std::size_t out) {
      in.clear();
      for (node_id p : g.inputs(s.node)) in.push_back(value(p));
      forward_call f;
      f.node = s.node;
      f.original = g.original_index(s.node);
      f.step_index = i;
      f.recompute = s.kind == step_kind::recompute;
      f.inputs = in;
      f.output = memory.address(out);
      f.workspace_bytes = g.workspace(s.node);
      f.workspace = f.workspace_bytes > 0 ? workspace(i, s.node) : nullptr;
      f.stream = stream;
      e.forward(f);
    }

    void backward(std::size_t i, const step& s, const backward_buffers& bb) {
      const node_id v = s.node;
      const backward_reads r = g.reads(v);
      in.clear();
      for (node_id p : g.inputs(v)) in.push_back(reads_inputs(r) ? value(p) : nullptr);
      gradients.clear();
      for (std::size_t k = 0; k < bb.how.size(); ++k)
        gradients.push_back(bb.how[k] == contribution::none ? nullptr : memory.address(bb.gradient[k]));
      backward_call c;
      c.node = v;
      c.original = g.original_index(v);
      c.step_index = i;
      c.inputs = in;
      c.output = reads_output(r) ? memory.address(walk.value(v)) : nullptr;
      c.output_gradient = memory.address(bb.output_gradient);
      c.seed = bb.seed;
      c.input_gradients = gradients;
      c.how = bb.how;
      c.parameter_gradient = bb.parameter_gradient ? memory.address(*bb.parameter_gradient) : nullptr;
      c.workspace_bytes = g.backward_workspace(v);
      c.workspace = c.workspace_bytes > 0 ? workspace(i, v) : nullptr;
      c.stream = stream;
      e.backward(c);
    }
  };
  bound_runtime runtime{walk, g, layout, memory, input_values, e, stream};
  walk.run(runtime);
}

}  // namespace remat
