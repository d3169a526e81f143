// The engine executor: the core's engine walk (runtime/engine.hpp) over device
// buffers, the engine's kernels issued on one stream.

#include <cuda_runtime.h>

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <remat/error.hpp>
#include <remat/runtime/execution.hpp>

#include "check.cuh"
#include "remat/cuda/engine_executor.hpp"

namespace remat::cuda {
namespace {

void set_pool_attribute(cudaMemPool_t pool, cudaMemPoolAttr attribute, std::uint64_t value) {
  REMAT_CUDA_TRY(cudaMemPoolSetAttribute(pool, attribute, &value));
}

std::uint64_t pool_attribute(cudaMemPool_t pool, cudaMemPoolAttr attribute) {
  std::uint64_t value = 0;
  REMAT_CUDA_TRY(cudaMemPoolGetAttribute(pool, attribute, &value));
  return value;
}

}  // namespace

struct engine_executor::device_state {
  engine_schedule plan;
  engine_executor_options options;
  detail::device_buffer arena;
  detail::owned<cudaMemPool_t, cudaMemPoolDestroy> pool;
  detail::owned<cudaStream_t, cudaStreamDestroy> own_stream;
  cudaStream_t stream = nullptr;
  detail::owned<cudaEvent_t, cudaEventDestroy> started, finished;
  std::vector<void*> pointer;  // storage::pool, by buffer
  std::uint64_t allocated = 0, allocated_high = 0;
  held_buffers held_after;

  void* address(std::size_t b) const noexcept {
    return options.storage == storage::arena ? arena.get(plan.layout.buffers[b].offset) : pointer[b];
  }

  void acquired(std::size_t b) {
    if (options.storage != storage::pool) return;
    const buffer_lifetime& buffer = plan.layout.buffers[b];
    // Zero-byte buffers still get an address of their own.
    const cudaError_t status = cudaMallocAsync(&pointer[b], std::max<std::uint64_t>(buffer.bytes, 1), pool.get(), stream);
    if (status == cudaSuccess) {
      allocated += buffer.bytes;
      allocated_high = std::max(allocated_high, allocated);
      return;
    }
    (void)cudaGetLastError();
    pointer[b] = nullptr;
    const std::string where = "node '" + plan.g.node_name(buffer.node) + "' (step " +
                              std::to_string(buffer.first_step) + ", " +
                              std::string(to_string(plan.steps[buffer.first_step].kind)) + "): " +
                              detail::what_it_holds(buffer.category);
    if (status != cudaErrorMemoryAllocation) throw error(static_cast<int>(status), "cudaMallocAsync for " + where);
    const auto [free, total] = detail::free_and_total();
    throw out_of_memory(where, buffer.bytes, free, total);
  }

  void released(std::size_t b) {
    if (options.storage != storage::pool) return;
    REMAT_CUDA_TRY(cudaFreeAsync(pointer[b], stream));
    pointer[b] = nullptr;
    allocated -= plan.layout.buffers[b].bytes;
  }

  // Frees every pool buffer still held (in stream order) and forgets what the
  // last run kept.
  void drop_all() {
    if (options.storage == storage::pool)
      for (std::size_t b = 0; b < pointer.size(); ++b)
        if (pointer[b]) released(b);
    held_after.forget();
  }
};

engine_executor::engine_executor(graph g, schedule steps, const engine_executor_options& options)
    : state_(std::make_unique<device_state>()) {
  device_state& s = *state_;
  s.plan = engine_schedule(std::move(g), std::move(steps), options.alignment, options.record_timeline);
  s.options = options;
  s.held_after = held_buffers(s.plan.g.size());
  const engine_schedule& p = s.plan;

  if (device_count() == 0)
    throw error(static_cast<int>(cudaErrorNoDevice), "the engine executor needs a CUDA device: " + no_device_reason());
  if (options.stream) {
    s.stream = static_cast<cudaStream_t>(options.stream);
  } else {
    cudaStream_t raw = nullptr;
    REMAT_CUDA_TRY(cudaStreamCreateWithFlags(&raw, cudaStreamNonBlocking));
    s.own_stream.reset(raw);
    s.stream = raw;
  }
  cudaEvent_t raw_event = nullptr;
  REMAT_CUDA_TRY(cudaEventCreate(&raw_event));
  s.started.reset(raw_event);
  REMAT_CUDA_TRY(cudaEventCreate(&raw_event));
  s.finished.reset(raw_event);

  if (options.storage == storage::arena) {
    const step& at_peak = p.steps[p.simulated.peak_step];
    s.arena = detail::device_buffer(
        p.layout.arena_bytes, "the arena for the " + std::to_string(p.steps.size()) + "-step schedule of '" +
                                  p.g.name() + "' (simulated peak " + std::to_string(p.simulated.peak_bytes) +
                                  " bytes at step " + std::to_string(p.simulated.peak_step) + ", " +
                                  std::string(to_string(at_peak.kind)) + " of '" + p.g.node_name(at_peak.node) + "')");
  } else {
    int device = 0;
    REMAT_CUDA_TRY(cudaGetDevice(&device));
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t raw = nullptr;
    REMAT_CUDA_TRY(cudaMemPoolCreate(&raw, &props));
    s.pool.reset(raw);
    // Keep what a run freed for the next one: no trip to the driver once warm.
    set_pool_attribute(raw, cudaMemPoolAttrReleaseThreshold, std::numeric_limits<std::uint64_t>::max());
    s.pointer.assign(p.layout.buffers.size(), nullptr);
  }
}

engine_executor::~engine_executor() {
  if (!state_) return;
  try {
    state_->drop_all();
  } catch (...) {  // a destructor cannot report; the pool's destruction frees the rest
  }
  (void)cudaStreamSynchronize(state_->stream);
}

engine_report engine_executor::run(engine_ref e, std::span<const void* const> input_values) {
  device_state& s = *state_;
  const engine_schedule& p = s.plan;
  check_input_values(p.g, input_values);
  s.drop_all();
  engine_report report;
  report.free_before = detail::free_and_total().first;
  s.allocated_high = 0;
  if (s.options.storage == storage::pool) {
    REMAT_CUDA_TRY(cudaStreamSynchronize(s.stream));  // the high-water marks reset after the frees above
    set_pool_attribute(s.pool.get(), cudaMemPoolAttrUsedMemHigh, 0);
    set_pool_attribute(s.pool.get(), cudaMemPoolAttrReservedMemHigh, 0);
  }

  memory_ledger ledger(p.g.param_bytes(), p.g.input_bytes(), s.options.record_timeline);
  schedule_walk walk(p.g, p.steps, p.layout, ledger);
  try {
    REMAT_CUDA_TRY(cudaEventRecord(s.started.get(), s.stream));
    run_engine(walk, p.g, p.layout, s, input_values, e, s.stream);
    REMAT_CUDA_TRY(cudaEventRecord(s.finished.get(), s.stream));
    REMAT_CUDA_TRY(cudaEventSynchronize(s.finished.get()));
  } catch (...) {
    (void)cudaStreamSynchronize(s.stream);
    // The walk's live buffers are exactly those acquired and not released.
    if (s.options.storage == storage::pool)
      for (std::size_t b : walk.live())
        if (s.pointer[b]) {
          (void)cudaFreeAsync(s.pointer[b], s.stream);
          s.pointer[b] = nullptr;
        }
    (void)cudaStreamSynchronize(s.stream);
    s.allocated = 0;
    throw;
  }
  s.held_after.record(p.layout, walk.live());

  float ms = 0;
  REMAT_CUDA_TRY(cudaEventElapsedTime(&ms, s.started.get(), s.finished.get()));
  report.seconds = ms / 1000.0;
  report.take_ledger(ledger);
  if (s.options.storage == storage::pool) {
    report.allocated_high = s.allocated_high;
    report.pool_used_high = pool_attribute(s.pool.get(), cudaMemPoolAttrUsedMemHigh);
    report.pool_reserved_high = pool_attribute(s.pool.get(), cudaMemPoolAttrReservedMemHigh);
  } else {
    report.allocated_high = p.layout.arena_bytes;
  }
  report.free_after = detail::free_and_total().first;
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

void* engine_executor::stream() const noexcept { return state_->stream; }
const graph& engine_executor::network() const noexcept { return state_->plan.g; }
const schedule& engine_executor::steps() const noexcept { return state_->plan.steps; }
const simulation& engine_executor::simulated() const noexcept { return state_->plan.simulated; }
const arena_layout& engine_executor::layout() const noexcept { return state_->plan.layout; }

}  // namespace remat::cuda
