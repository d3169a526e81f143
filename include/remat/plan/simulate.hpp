#pragma once

/// \file
/// The simulator: walks any schedule and gives its exact peak bytes, where the
/// peak happens, its forward, recompute and backward time, and a per-step
/// memory timeline by category. It is the one source of memory and time
/// figures: every solver's claims are checked against it.
///
/// Memory model (docs/cost-model.md has the full statement):
/// - parameters and graph inputs are resident for the whole step;
/// - `compute v` / `recompute v` need every operand alive, allocate v's output,
///   and hold v's workspace while they run;
/// - `backward v` needs every consumer's backward done (v's gradient is then
///   complete), the values its backward reads, and allocates: the seed gradient
///   when v is a sink, each operand's gradient buffer not yet allocated, v's
///   parameter gradient (kept to the end of the step) and its backward
///   workspace while it runs; v's gradient dies right after;
/// - `free v` drops v's value.
/// The memory of a step is everything alive while it runs; the peak is the
/// largest over all steps.

#include <remat/config.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <remat/error.hpp>
#include <remat/graph/graph.hpp>
#include <remat/plan/schedule.hpp>

namespace remat {

/// Bytes alive by category.
struct memory_breakdown {
  std::uint64_t parameters = 0;           ///< resident weights
  std::uint64_t inputs = 0;               ///< resident graph inputs
  std::uint64_t activations = 0;          ///< values from compute steps, still alive
  std::uint64_t recomputed = 0;           ///< values from recompute steps, still alive
  std::uint64_t gradients = 0;            ///< activation gradient buffers
  std::uint64_t parameter_gradients = 0;  ///< parameter gradients accumulated so far
  std::uint64_t workspace = 0;            ///< the running step's workspace

  std::uint64_t total() const noexcept {
    return parameters + inputs + activations + recomputed + gradients + parameter_gradients +
           workspace;
  }
  friend bool operator==(const memory_breakdown&, const memory_breakdown&) = default;
};

/// What a schedule costs.
struct simulation {
  std::uint64_t peak_bytes = 0;  ///< largest memory of any step
  std::size_t peak_step = 0;     ///< first step reaching it
  memory_breakdown at_peak;      ///< its categories
  double forward_time = 0;       ///< sum over compute steps
  double recompute_time = 0;     ///< sum over recompute steps
  double backward_time = 0;      ///< sum over backward steps
  std::size_t recompute_steps = 0;
  /// Memory while each step runs (empty unless requested).
  std::vector<memory_breakdown> timeline;

  double total_time() const noexcept { return forward_time + recompute_time + backward_time; }
  /// Recompute time as a fraction of a plain forward + backward.
  double overhead() const noexcept {
    const double plain = forward_time + backward_time;
    return plain > 0 ? recompute_time / plain : 0.0;
  }
};

struct simulate_options {
  bool record_timeline = false;
};

/// Simulates `steps` on `g`. \throws invalid_schedule at the first step that
/// cannot run (an operand or read value not alive, a value computed twice, a
/// recompute before the first compute, a free of a dead value, a backward whose
/// gradient is incomplete or that runs twice, a step on a graph input) or, with
/// step = steps.size(), when some node's backward never runs (it names the
/// highest such node: the backward that would have run next) or some node is
/// never computed (the lowest).
/// Complexity: O(steps + m).
inline simulation simulate(const graph& g, const schedule& steps, const simulate_options& options = {}) {
  const std::size_t n = g.size();
  enum class state : std::uint8_t { never, computed, recomputed, freed };
  std::vector<state> value(n, state::never);
  std::vector<std::size_t> freed_at(n, 0);
  std::vector<char> grad_alive(n, 0), done(n, 0), first_compute(n, 0);

  simulation sim;
  memory_breakdown mem;
  mem.parameters = g.param_bytes();
  mem.inputs = g.input_bytes();
  if (options.record_timeline) sim.timeline.reserve(steps.size());

  auto name = [&](node_id v) { return g.node_name(v); };
  auto alive = [&](node_id v) { return value[v] == state::computed || value[v] == state::recomputed; };
  auto why_dead = [&](node_id v) {
    if (value[v] == state::freed) return "freed at step " + std::to_string(freed_at[v]);
    return std::string("never computed");
  };
  // `total` is mem.total(), kept beside it: most steps raise no peak, and
  // the breakdown is built only for those that do (or for the timeline).
  std::uint64_t total = mem.total();
  // A step whose memory is `mem` plus allocations adding `extra` bytes.
  auto record = [&](std::size_t i, std::uint64_t extra, auto&& during) {
    const std::uint64_t bytes = total + extra;
    if (i == 0 || bytes > sim.peak_bytes) {
      sim.peak_bytes = bytes;
      sim.peak_step = i;
      sim.at_peak = during();
    }
    if (options.record_timeline) sim.timeline.push_back(during());
  };
  auto not_alive = [&](std::size_t i, node_id v, node_id x, const char* role) {
    return invalid_schedule(i, name(v), std::string(role) + " '" + name(x) + "' is not alive (" + why_dead(x) + ")");
  };

  for (std::size_t i = 0; i < steps.size(); ++i) {
    const step s = steps[i];
    if (s.node >= n)
      throw invalid_schedule(i, "", "node id " + std::to_string(s.node) + " does not exist");
    const node_id v = s.node;
    if (g.is_input(v))
      throw invalid_schedule(i, name(v), std::string(to_string(s.kind)) +
                                             " of a graph input; inputs are resident and are never "
                                             "computed, freed or differentiated");
    switch (s.kind) {
      case step_kind::compute:
      case step_kind::recompute: {
        const bool first = s.kind == step_kind::compute;
        if (first && first_compute[v])
          throw invalid_schedule(i, name(v), "computed a second time; later evaluations must be recompute steps");
        if (!first && !first_compute[v])
          throw invalid_schedule(i, name(v), "recompute before the first compute");
        if (alive(v)) throw invalid_schedule(i, name(v), "evaluated while its value is still alive");
        for (node_id p : g.predecessors(v))
          if (!g.is_input(p) && !alive(p)) [[unlikely]]
            throw not_alive(i, v, p, "operand");
        record(i, g.bytes(v) + g.workspace(v), [&] {
          memory_breakdown during = mem;
          during.workspace = g.workspace(v);
          (first ? during.activations : during.recomputed) += g.bytes(v);
          return during;
        });
        (first ? mem.activations : mem.recomputed) += g.bytes(v);
        total += g.bytes(v);
        value[v] = first ? state::computed : state::recomputed;
        first_compute[v] = 1;
        if (first) sim.forward_time += g.time(v);
        else {
          sim.recompute_time += g.time(v);
          ++sim.recompute_steps;
        }
        break;
      }
      case step_kind::free: {
        if (!alive(v)) throw invalid_schedule(i, name(v), "freed while not alive (" + why_dead(v) + ")");
        (value[v] == state::computed ? mem.activations : mem.recomputed) -= g.bytes(v);
        total -= g.bytes(v);
        value[v] = state::freed;
        freed_at[v] = i;
        // Less than the step before it held: never a peak (a free cannot be
        // the first step), only a point of the timeline.
        if (options.record_timeline) sim.timeline.push_back(mem);
        break;
      }
      case step_kind::backward: {
        if (done[v]) throw invalid_schedule(i, name(v), "backward ran a second time");
        for (node_id c : g.successors(v))
          if (!done[c])
            throw invalid_schedule(i, name(v), "backward before its gradient is complete: consumer '" +
                                                   name(c) + "' has not run its backward yet");
        if (reads_inputs(g.reads(v)))
          for (node_id p : g.predecessors(v))
            if (!g.is_input(p) && !alive(p)) [[unlikely]]
              throw not_alive(i, v, p, "backward reads operand");
        if (reads_output(g.reads(v)) && !alive(v))
          throw invalid_schedule(i, name(v), "backward reads its own output, which is not alive (" +
                                                 why_dead(v) + ")");
        const bool sink = g.successors(v).empty();
        std::uint64_t new_gradients = sink ? g.bytes(v) : 0;
        for (node_id p : g.predecessors(v))
          if (!g.is_input(p) && !grad_alive[p]) {
            grad_alive[p] = 1;
            new_gradients += g.bytes(p);
          }
        record(i, new_gradients + g.params(v) + g.backward_workspace(v), [&] {
          memory_breakdown during = mem;
          during.gradients += new_gradients;
          during.parameter_gradients += g.params(v);
          during.workspace = g.backward_workspace(v);
          return during;
        });
        mem.gradients += new_gradients;
        mem.gradients -= g.bytes(v);  // v's own gradient dies with its backward
        mem.parameter_gradients += g.params(v);
        total += new_gradients + g.params(v);
        total -= g.bytes(v);
        grad_alive[v] = 0;
        done[v] = 1;
        sim.backward_time += g.backward_time(v);
        break;
      }
    }
  }
  for (std::size_t i = n; i-- > 0;) {  // name the backward that would run next
    const auto v = static_cast<node_id>(i);
    if (!g.is_input(v) && !done[v])
      throw invalid_schedule(steps.size(), name(v), "the schedule ends before this node's backward");
  }
  // A backward that reads nothing can run on a value never computed; a
  // training step still computes every node (its loss, its statistics).
  for (node_id v = 0; v < n; ++v)
    if (!g.is_input(v) && !first_compute[v])
      throw invalid_schedule(steps.size(), name(v), "the schedule never computes this node");
  if (steps.empty()) {
    sim.peak_bytes = mem.total();
    sim.at_peak = mem;
  }
  return sim;
}

}  // namespace remat
