#include "remat/cpu/engine_executor.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <new>

#include <remat/config.hpp>
#include <remat/error.hpp>
#include <remat/runtime/execution.hpp>

namespace remat::cpu {

namespace {

constexpr std::size_t none = std::numeric_limits<std::size_t>::max();

struct aligned_delete {
  std::align_val_t alignment;
  void operator()(std::byte* p) const noexcept { ::operator delete(p, alignment); }
};
using aligned_bytes = std::unique_ptr<std::byte, aligned_delete>;

aligned_bytes allocate(std::uint64_t bytes, std::uint64_t alignment) {
  const auto a = static_cast<std::align_val_t>(alignment);
  // A zero-byte buffer still gets a distinct address the engine may be handed.
  return aligned_bytes(static_cast<std::byte*>(::operator new(std::max<std::uint64_t>(bytes, 1), a)),
                       aligned_delete{a});
}

}  // namespace

struct engine_executor::state {
  graph g;
  schedule steps;
  engine_executor_options options;
  simulation simulated;
  arena_layout layout;
  aligned_bytes arena{nullptr, aligned_delete{std::align_val_t{64}}};
  std::vector<aligned_bytes> held;  // storage::heap, by buffer
  std::uint64_t allocated = 0, allocated_high = 0;
  std::vector<std::size_t> kept;            // by node: its value's buffer after the last run
  std::vector<std::size_t> parameter_grad;  // by node

  void* address(std::size_t b) const noexcept {
    if (options.storage == engine_storage::arena) return arena.get() + layout.buffers[b].offset;
    return held[b].get();
  }
  void acquired(std::size_t b) {
    if (options.storage != engine_storage::heap) return;
    REMAT_ASSERT(!held[b]);
    held[b] = allocate(layout.buffers[b].bytes, options.alignment);
    allocated += layout.buffers[b].bytes;
    allocated_high = std::max(allocated_high, allocated);
  }
  void released(std::size_t b) noexcept {
    if (options.storage != engine_storage::heap) return;
    held[b].reset();
    allocated -= layout.buffers[b].bytes;
  }
  void drop_all() noexcept {
    for (std::size_t b = 0; b < held.size(); ++b)
      if (held[b]) released(b);
    std::fill(kept.begin(), kept.end(), none);
    std::fill(parameter_grad.begin(), parameter_grad.end(), none);
  }
};

engine_executor::engine_executor(graph g, schedule steps, const engine_executor_options& options)
    : state_(std::make_unique<state>()) {
  state& s = *state_;
  s.g = std::move(g);
  s.steps = std::move(steps);
  s.options = options;
  simulate_options check;
  check.record_timeline = options.record_timeline;
  s.simulated = simulate(s.g, s.steps, check);  // throws invalid_schedule naming the step
  s.layout = assign_offsets(buffer_lifetimes(s.g, s.steps), s.steps.size(), options.alignment);
  if (options.storage == engine_storage::arena) {
    s.arena = allocate(s.layout.arena_bytes, options.alignment);
  } else {
    s.held.resize(s.layout.buffers.size());
  }
  s.kept.assign(s.g.size(), none);
  s.parameter_grad.assign(s.g.size(), none);
}

engine_executor::~engine_executor() = default;
engine_executor::engine_executor(engine_executor&&) noexcept = default;
engine_executor& engine_executor::operator=(engine_executor&&) noexcept = default;

engine_report engine_executor::run(engine_ref e, std::span<const void* const> input_values) {
  state& s = *state_;
  check_input_values(s.g, input_values);
  s.drop_all();
  s.allocated_high = 0;

  const auto started = std::chrono::steady_clock::now();
  memory_ledger ledger(s.g.param_bytes(), s.g.input_bytes(), s.options.record_timeline);
  schedule_walk walk(s.g, s.steps, s.layout, ledger);
  try {
    run_engine(walk, s.g, s.layout, s, input_values, e, nullptr);
  } catch (...) {
    s.drop_all();
    throw;
  }
  for (std::size_t b : walk.live()) {
    const buffer_lifetime& buffer = s.layout.buffers[b];
    if (buffer.category == memory_category::parameter_gradients) s.parameter_grad[buffer.node] = b;
    if (buffer.category == memory_category::activations || buffer.category == memory_category::recomputed)
      s.kept[buffer.node] = b;
  }

  engine_report report;
  report.peak_bytes = ledger.peak_bytes();
  report.peak_step = ledger.peak_step();
  report.at_peak = ledger.at_peak();
  report.timeline = ledger.timeline();
  report.allocated_high = s.options.storage == engine_storage::heap ? s.allocated_high : s.layout.arena_bytes;
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return report;
}

void* engine_executor::parameter_gradient(node_id v) const noexcept {
  if (v >= state_->parameter_grad.size() || state_->parameter_grad[v] == none) return nullptr;
  return state_->address(state_->parameter_grad[v]);
}

const void* engine_executor::kept_value(node_id v) const noexcept {
  if (v >= state_->kept.size() || state_->kept[v] == none) return nullptr;
  return state_->address(state_->kept[v]);
}

const graph& engine_executor::network() const noexcept { return state_->g; }
const schedule& engine_executor::steps() const noexcept { return state_->steps; }
const simulation& engine_executor::simulated() const noexcept { return state_->simulated; }
const arena_layout& engine_executor::layout() const noexcept { return state_->layout; }

}  // namespace remat::cpu
