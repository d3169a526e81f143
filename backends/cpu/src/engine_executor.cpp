#include "remat/cpu/engine_executor.hpp"

#include <algorithm>
#include <chrono>
#include <new>

#include <remat/config.hpp>
#include <remat/error.hpp>
#include <remat/runtime/execution.hpp>

namespace remat::cpu {

namespace {

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
  engine_schedule plan;
  engine_executor_options options;
  aligned_bytes arena{nullptr, aligned_delete{std::align_val_t{64}}};
  std::vector<aligned_bytes> held;  // storage::heap, by buffer
  std::uint64_t allocated = 0, allocated_high = 0;
  held_buffers held_after;

  void* address(std::size_t b) const noexcept {
    if (options.storage == engine_storage::arena) return arena.get() + plan.layout.buffers[b].offset;
    return held[b].get();
  }
  void acquired(std::size_t b) {
    if (options.storage != engine_storage::heap) return;
    REMAT_ASSERT(!held[b]);
    held[b] = allocate(plan.layout.buffers[b].bytes, options.alignment);
    allocated += plan.layout.buffers[b].bytes;
    allocated_high = std::max(allocated_high, allocated);
  }
  void released(std::size_t b) noexcept {
    if (options.storage != engine_storage::heap) return;
    held[b].reset();
    allocated -= plan.layout.buffers[b].bytes;
  }
  void drop_all() noexcept {
    for (std::size_t b = 0; b < held.size(); ++b)
      if (held[b]) released(b);
    held_after.forget();
  }
};

engine_executor::engine_executor(graph g, schedule steps, const engine_executor_options& options)
    : state_(std::make_unique<state>()) {
  state& s = *state_;
  s.plan = engine_schedule(std::move(g), std::move(steps), options.alignment, options.record_timeline);
  s.options = options;
  if (options.storage == engine_storage::arena) {
    s.arena = allocate(s.plan.layout.arena_bytes, options.alignment);
  } else {
    s.held.resize(s.plan.layout.buffers.size());
  }
  s.held_after = held_buffers(s.plan.g.size());
}

engine_executor::~engine_executor() = default;
engine_executor::engine_executor(engine_executor&&) noexcept = default;
engine_executor& engine_executor::operator=(engine_executor&&) noexcept = default;

engine_report engine_executor::run(engine_ref e, std::span<const void* const> input_values) {
  state& s = *state_;
  const engine_schedule& p = s.plan;
  check_input_values(p.g, input_values);
  s.drop_all();
  s.allocated_high = 0;

  const auto started = std::chrono::steady_clock::now();
  memory_ledger ledger(p.g.param_bytes(), p.g.input_bytes(), s.options.record_timeline);
  schedule_walk walk(p.g, p.steps, p.layout, ledger);
  try {
    run_engine(walk, p.g, p.layout, s, input_values, e, nullptr);
  } catch (...) {
    s.drop_all();
    throw;
  }
  s.held_after.record(p.layout, walk.live());

  engine_report report;
  report.take_ledger(ledger);
  report.allocated_high = s.options.storage == engine_storage::heap ? s.allocated_high : p.layout.arena_bytes;
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return report;
}

void* engine_executor::parameter_gradient(node_id v) const noexcept {
  const std::size_t b = state_->held_after.parameter_gradient(v);
  return b == held_buffers::none ? nullptr : state_->address(b);
}

const void* engine_executor::kept_value(node_id v) const noexcept {
  const std::size_t b = state_->held_after.value(v);
  return b == held_buffers::none ? nullptr : state_->address(b);
}

const graph& engine_executor::network() const noexcept { return state_->plan.g; }
const schedule& engine_executor::steps() const noexcept { return state_->plan.steps; }
const simulation& engine_executor::simulated() const noexcept { return state_->plan.simulated; }
const arena_layout& engine_executor::layout() const noexcept { return state_->plan.layout; }

}  // namespace remat::cpu
