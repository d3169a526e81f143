// The executor: the core's schedule walk (execution.hpp) over device buffers,
// each step's kernels enqueued on the model's stream.

#include <cuda_runtime.h>

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <remat/error.hpp>
#include <remat/ops/labels.hpp>
#include <remat/runtime/execution.hpp>

#include "check.cuh"
#include "elements.hpp"
#include "kernels.cuh"
#include "model_state.cuh"
#include "remat/cuda/executor.hpp"

namespace remat::cuda {
namespace {

constexpr std::size_t none = std::numeric_limits<std::size_t>::max();

}  // namespace

template <class T>
struct executor<T>::device_state {
  device_state(model<T>& m, schedule s, const executor_options& o);
  ~device_state();

  T* at(std::size_t buffer) const noexcept {
    return options.storage == storage::arena ? arena.get<T>(plan.layout.buffers[buffer].offset)
                                             : static_cast<T*>(pool_pointer[buffer]);
  }
  void enqueue(const step_options& o);
  void release_pool_buffer(std::size_t b);

  typename model<T>::device_state& m;
  schedule steps;
  simulation simulated;
  device_plan plan;
  executor_options options;
  detail::device_buffer arena, scratch;
  detail::owned<cudaMemPool_t, cudaMemPoolDestroy> pool;
  detail::owned<cudaEvent_t, cudaEventDestroy> started, finished;
  detail::owned<T*, cudaFreeHost> loss_values;  // pinned: one per loss node
  std::vector<node_id> loss_nodes;
  std::vector<std::size_t> loss_slot;        // by node
  std::vector<void*> pool_pointer;           // by buffer, storage::pool
  std::vector<std::size_t> held_gradients;   // storage::pool: parameter gradients kept past a step
  std::vector<std::size_t> parameter_gradient_buffer;  // by node
  std::uint64_t taken = 0;
  step_report pending;
  bool enqueued = false, ran = false;
};

template <class T>
executor<T>::device_state::device_state(model<T>& model_, schedule s, const executor_options& o)
    : m(model_.state()), steps(std::move(s)), options(o) {
  const graph& g = m.host.network();
  simulated = simulate(g, steps);
  plan = plan_device(g, m.host.ops(), steps, sizeof(T));
  const std::uint64_t free_before = detail::free_and_total().first;

  if (options.storage == storage::arena && !steps.empty()) {
    const buffer_lifetime* peak_holder = nullptr;
    const step& at_peak = steps[simulated.peak_step];
    for (const buffer_lifetime& b : plan.layout.buffers)
      if (b.first_step == simulated.peak_step && b.node == at_peak.node) peak_holder = &b;
    arena = detail::device_buffer(
        plan.layout.arena_bytes,
        "the arena for the " + std::to_string(steps.size()) + "-step schedule of '" + g.name() + "' (simulated peak " +
            std::to_string(simulated.peak_bytes) + " bytes at step " + std::to_string(simulated.peak_step) + ", " +
            std::string(to_string(at_peak.kind)) + " of '" + g.node_name(at_peak.node) + "'" +
            (peak_holder ? ", which allocates " + detail::what_it_holds(peak_holder->category) : std::string()) + ")");
  } else if (options.storage == storage::pool) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t raw = nullptr;
    REMAT_CUDA_TRY(cudaMemPoolCreate(&raw, &props));
    pool.reset(raw);
    // Keep what a step freed for the next one: no trip to the driver once warm.
    std::uint64_t keep = std::numeric_limits<std::uint64_t>::max();
    REMAT_CUDA_TRY(cudaMemPoolSetAttribute(raw, cudaMemPoolAttrReleaseThreshold, &keep));
    pool_pointer.assign(plan.layout.buffers.size(), nullptr);
  }
  scratch = detail::device_buffer(plan.scratch_bytes(), "the kernel scratch of '" + g.name() + "'");

  cudaEvent_t raw_event = nullptr;
  REMAT_CUDA_TRY(cudaEventCreate(&raw_event));
  started.reset(raw_event);
  REMAT_CUDA_TRY(cudaEventCreate(&raw_event));
  finished.reset(raw_event);

  loss_slot.assign(g.size(), none);
  for (node_id v = 0; v < g.size(); ++v) {
    const ops::op_kind k = m.host.op(v).kind;
    if (k != ops::op_kind::softmax_cross_entropy && k != ops::op_kind::mse_loss) continue;
    loss_slot[v] = loss_nodes.size();
    loss_nodes.push_back(v);
  }
  T* raw_losses = nullptr;
  REMAT_CUDA_TRY(cudaMallocHost(&raw_losses, std::max<std::size_t>(loss_nodes.size(), 1) * sizeof(T)));
  loss_values.reset(raw_losses);

  parameter_gradient_buffer.assign(g.size(), none);
  for (std::size_t b = 0; b < plan.layout.buffers.size(); ++b)
    if (plan.layout.buffers[b].category == memory_category::parameter_gradients)
      parameter_gradient_buffer[plan.layout.buffers[b].node] = b;
  taken = detail::taken_since(free_before);
}

template <class T>
executor<T>::device_state::~device_state() {
  (void)cudaStreamSynchronize(m.stream.get());
  if (options.storage == storage::pool) {
    for (void* p : pool_pointer)
      if (p) (void)cudaFreeAsync(p, m.stream.get());
    (void)cudaStreamSynchronize(m.stream.get());
  }
}

template <class T>
void executor<T>::device_state::release_pool_buffer(std::size_t b) {
  REMAT_CUDA_TRY(cudaFreeAsync(pool_pointer[b], m.stream.get()));
  pool_pointer[b] = nullptr;
}

// One step's kernels, called back by the schedule walk.
template <class T>
class step_kernels {
 public:
  using state = typename executor<T>::device_state;

  step_kernels(state& self, const schedule_walk& walk, const step_options& options)
      : self_(self),
        m_(self.m),
        g_(self.m.host.network()),
        walk_(walk),
        options_(options),
        stream_(self.m.stream.get()),
        reduction_(self.scratch.template get<double>(self.plan.gradient_scratch_bytes)) {}

  void acquired(std::size_t b) {
    if (self_.options.storage != storage::pool) return;
    const buffer_lifetime& buffer = self_.plan.layout.buffers[b];
    const cudaError_t status = cudaMallocAsync(&self_.pool_pointer[b], buffer.bytes, self_.pool.get(), stream_);
    if (status == cudaSuccess) return;
    (void)cudaGetLastError();
    self_.pool_pointer[b] = nullptr;
    const std::string where = "node '" + g_.node_name(buffer.node) + "' (step " + std::to_string(buffer.first_step) +
                              ", " + std::string(to_string(self_.steps[buffer.first_step].kind)) + "): " +
                              detail::what_it_holds(buffer.category);
    if (status != cudaErrorMemoryAllocation) throw error(static_cast<int>(status), "cudaMallocAsync for " + where);
    const auto [free, total] = detail::free_and_total();
    throw out_of_memory(where, buffer.bytes, free, total);
  }

  void released(std::size_t b) {
    if (self_.options.storage == storage::pool) self_.release_pool_buffer(b);
  }

  void forward(std::size_t, const step& s, std::size_t out) {
    const node_id v = s.node;
    const ops::op_info& o = m_.host.op(v);
    const auto operands = g_.inputs(v);
    const std::size_t count = o.elements();
    const T* const w = m_.parameters[v];
    const T* const bias = o.bias_elements ? w + o.weight_elements : nullptr;
    const bool first = s.kind == step_kind::compute;
    T* const y = self_.at(out);
    in_.clear();
    for (node_id p : operands) in_.push_back(m_.host.op(p).labels ? nullptr : value_of(p));
    const T* const x = in_[0];
    switch (o.kind) {
      case ops::op_kind::conv2d:
        m_.convolve(v, x, w, y);
        if (bias) kernels::add_channel_bias(stream_, o.conv.n, o.conv.k, o.conv.oh() * o.conv.ow(), bias, y);
        break;
      case ops::op_kind::conv_transpose2d:
        m_.convolve_adjoint(v, w, x, y);
        if (bias) kernels::add_channel_bias(stream_, o.conv.n, o.conv.c, o.conv.h * o.conv.w, bias, y);
        break;
      case ops::op_kind::batch_norm:
        // Running statistics once per training step: a recompute leaves them alone.
        kernels::batch_norm_forward(stream_, o.norm, o.eps, o.momentum, x, w, w + o.weight_elements, y,
                                    first ? m_.running_mean[v] : nullptr, first ? m_.running_var[v] : nullptr,
                                    reduction_);
        break;
      case ops::op_kind::relu: kernels::relu_forward(stream_, count, x, y); break;
      case ops::op_kind::sigmoid: kernels::sigmoid_forward(stream_, count, x, y); break;
      case ops::op_kind::max_pool: kernels::max_pool_forward(stream_, o.pool, x, y); break;
      case ops::op_kind::avg_pool: kernels::avg_pool_forward(stream_, o.pool, x, y); break;
      case ops::op_kind::adaptive_avg_pool: kernels::adaptive_avg_pool_forward(stream_, o.pool, x, y); break;
      case ops::op_kind::upsample_bilinear: kernels::upsample_bilinear_forward(stream_, o.upsample, x, y); break;
      case ops::op_kind::add:
        // Left to right, as the CPU sums: ((a0 + a1) + a2) + ...
        kernels::add(stream_, count, in_[0], in_[1], y);
        for (std::size_t k = 2; k < in_.size(); ++k) kernels::accumulate(stream_, count, in_[k], y);
        break;
      case ops::op_kind::concat:
        for (std::size_t k = 0; k < in_.size(); ++k) {
          const auto block = elements::concat_operand(o.outer, o.inner, o.channels, k);
          REMAT_CUDA_TRY(cudaMemcpy2DAsync(y + block.offset, block.pitch * sizeof(T), in_[k], block.width * sizeof(T),
                                           block.width * sizeof(T), block.rows, cudaMemcpyDeviceToDevice, stream_));
        }
        break;
      case ops::op_kind::linear:
        m_.linear_forward(v, x, w, y);
        if (bias) kernels::add_channel_bias(stream_, o.rows, o.out_features, 1, bias, y);
        break;
      case ops::op_kind::dropout:
        kernels::dropout(stream_, count, o.p, ops::dropout_key{m_.host.seed(), options_.step, v}, x, y);
        break;
      case ops::op_kind::flatten:
        REMAT_CUDA_TRY(cudaMemcpyAsync(y, x, count * sizeof(T), cudaMemcpyDeviceToDevice, stream_));
        break;
      case ops::op_kind::slice: kernels::slice_forward(stream_, elements::slice_geometry_of(o), count, x, y); break;
      case ops::op_kind::softmax_cross_entropy:
        kernels::softmax_cross_entropy_forward(stream_, o.rows, o.classes, o.inner, x, m_.labels[operands[1]],
                                               reduction_, y);
        break;
      case ops::op_kind::mse_loss:
        kernels::mse_loss_forward(stream_, m_.host.op(operands[0]).elements(), x, in_[1], reduction_, y);
        break;
      case ops::op_kind::input: REMAT_ASSERT(false); break;
    }
    // The loss goes to pinned host memory in stream order: read after the step, never waited for here.
    if (first && self_.loss_slot[v] != none)
      REMAT_CUDA_TRY(cudaMemcpyAsync(self_.loss_values.get() + self_.loss_slot[v], y, sizeof(T),
                                     cudaMemcpyDeviceToHost, stream_));
  }

  void backward(std::size_t, const step& s, const backward_buffers& bb) {
    const node_id v = s.node;
    const ops::op_info& o = m_.host.op(v);
    const auto operands = g_.inputs(v);
    const std::size_t count = o.elements();
    const T* const w = m_.parameters[v];
    aside_used_ = 0;
    T* const dy = self_.at(bb.output_gradient);
    if (bb.seed) kernels::fill(stream_, count, static_cast<T>(o.loss_weight), dy);
    // Only what the graph says this backward reads.
    in_.clear();
    for (node_id p : operands)
      in_.push_back(reads_inputs(g_.reads(v)) && !m_.host.op(p).labels ? value_of(p) : nullptr);
    const T* const x = in_[0];
    const T* const own = reads_output(g_.reads(v)) ? self_.at(walk_.value(v)) : nullptr;
    dst_.clear();
    aside_.clear();
    for (std::size_t k = 0; k < operands.size(); ++k) {
      switch (bb.how[k]) {
        case contribution::none: dst_.push_back(nullptr); break;
        case contribution::write: dst_.push_back(self_.at(bb.gradient[k])); break;
        case contribution::add:
          dst_.push_back(carve(m_.host.op(operands[k]).elements()));
          aside_.emplace_back(k, dst_.back());
          break;
      }
    }
    T* const dw = bb.parameter_gradient ? self_.at(*bb.parameter_gradient) : nullptr;
    T* const db = o.bias_elements && dw ? dw + o.weight_elements : nullptr;
    T* const dx = dst_[0];
    switch (o.kind) {
      case ops::op_kind::conv2d:
        m_.convolution_filter_gradient(v, x, dy, dw);
        if (dx) m_.convolve_adjoint(v, w, dy, dx);
        if (db) kernels::channel_sum(stream_, o.conv.n, o.conv.k, o.conv.oh() * o.conv.ow(), dy, reduction_, db);
        break;
      case ops::op_kind::conv_transpose2d:
        // The adjoint convolution's input is this op's output gradient, its output gradient this op's input.
        m_.convolution_filter_gradient(v, dy, x, dw);
        if (dx) m_.convolve(v, dy, w, dx);
        if (db) kernels::channel_sum(stream_, o.conv.n, o.conv.c, o.conv.h * o.conv.w, dy, reduction_, db);
        break;
      case ops::op_kind::batch_norm:
        kernels::batch_norm_backward(stream_, o.norm, o.eps, x, w, dy, dx, dw, dw + o.weight_elements, reduction_);
        break;
      case ops::op_kind::relu:
        if (dx) kernels::relu_backward(stream_, count, own, dy, dx);
        break;
      case ops::op_kind::sigmoid:
        if (dx) kernels::sigmoid_backward(stream_, count, own, dy, dx);
        break;
      case ops::op_kind::max_pool:
        if (dx) kernels::max_pool_backward(stream_, o.pool, x, dy, dx);
        break;
      case ops::op_kind::avg_pool:
        if (dx) kernels::avg_pool_backward(stream_, o.pool, dy, dx);
        break;
      case ops::op_kind::adaptive_avg_pool:
        if (dx) kernels::adaptive_avg_pool_backward(stream_, o.pool, dy, dx);
        break;
      case ops::op_kind::upsample_bilinear:
        if (dx) kernels::upsample_bilinear_backward(stream_, o.upsample, dy, dx);
        break;
      case ops::op_kind::add:
        for (T* d : dst_)
          if (d) REMAT_CUDA_TRY(cudaMemcpyAsync(d, dy, count * sizeof(T), cudaMemcpyDeviceToDevice, stream_));
        break;
      case ops::op_kind::concat:
        for (std::size_t k = 0; k < dst_.size(); ++k) {
          if (!dst_[k]) continue;
          const auto block = elements::concat_operand(o.outer, o.inner, o.channels, k);
          REMAT_CUDA_TRY(cudaMemcpy2DAsync(dst_[k], block.width * sizeof(T), dy + block.offset, block.pitch * sizeof(T),
                                           block.width * sizeof(T), block.rows, cudaMemcpyDeviceToDevice, stream_));
        }
        break;
      case ops::op_kind::linear:
        m_.linear_backward(v, x, w, dy, dx, dw);
        if (db) kernels::channel_sum(stream_, o.rows, o.out_features, 1, dy, reduction_, db);
        break;
      case ops::op_kind::dropout:
        if (dx) kernels::dropout(stream_, count, o.p, ops::dropout_key{m_.host.seed(), options_.step, v}, dy, dx);
        break;
      case ops::op_kind::flatten:
        if (dx) REMAT_CUDA_TRY(cudaMemcpyAsync(dx, dy, count * sizeof(T), cudaMemcpyDeviceToDevice, stream_));
        break;
      case ops::op_kind::slice:
        if (dx) kernels::slice_backward(stream_, elements::slice_geometry_of(o), count, m_.host.op(operands[0]).elements(), dy, dx);
        break;
      case ops::op_kind::softmax_cross_entropy:
        if (dx)
          kernels::softmax_cross_entropy_backward(stream_, o.rows, o.classes, o.inner, x, m_.labels[operands[1]], dy,
                                                  reduction_, dx);
        break;
      case ops::op_kind::mse_loss:
        kernels::mse_loss_backward(stream_, m_.host.op(operands[0]).elements(), x, in_[1], dy, dx, dst_[1]);
        break;
      case ops::op_kind::input: REMAT_ASSERT(false); break;
    }
    // Later contributions, each computed in full aside, added in schedule order.
    for (const auto& [k, aside] : aside_)
      kernels::accumulate(stream_, m_.host.op(operands[k]).elements(), aside, self_.at(bb.gradient[k]));
  }

 private:
  const T* value_of(node_id p) const { return g_.is_input(p) ? m_.inputs[p] : self_.at(walk_.value(p)); }

  T* carve(std::uint64_t elements) {
    T* p = self_.scratch.template get<T>(aside_used_);
    aside_used_ += aligned(elements * sizeof(T));
    REMAT_ASSERT(aside_used_ <= self_.plan.gradient_scratch_bytes);
    return p;
  }

  state& self_;
  typename model<T>::device_state& m_;
  const graph& g_;
  const schedule_walk& walk_;
  const step_options& options_;
  cudaStream_t stream_;
  double* reduction_;
  std::uint64_t aside_used_ = 0;
  std::vector<const T*> in_;
  std::vector<T*> dst_;
  std::vector<std::pair<std::size_t, T*>> aside_;  // (operand position, its contribution)
};

template <class T>
void executor<T>::device_state::enqueue(const step_options& o) {
  const graph& g = m.host.network();
  const cudaStream_t stream = m.stream.get();
  ops::check_labels(g, m.host.ops(), [&](node_id v) { return m.host.labels(v); });
  if (options.storage == storage::pool) {
    for (std::size_t b : held_gradients) release_pool_buffer(b);
    held_gradients.clear();
  }

  pending = step_report{};
  pending.workspace_bytes = m.memory.convolution_workspace + m.memory.gemm_workspace;
  pending.scratch_bytes = plan.scratch_bytes();
  REMAT_CUDA_TRY(cudaEventRecord(started.get(), stream));

  memory_ledger ledger(m.host.parameter_bytes(), m.host.input_bytes(), o.record_timeline);
  schedule_walk walk(g, steps, plan.layout, ledger);
  step_kernels<T> kernels_of_step(*this, walk, o);
  walk.run(kernels_of_step);

  // SGD on every parameter, from the gradients still held.
  if (o.learning_rate != 0)
    for (node_id v = 0; v < g.size(); ++v)
      if (parameter_gradient_buffer[v] != none)
        kernels::sgd(stream, m.host.op(v).parameter_elements(), static_cast<T>(o.learning_rate),
                     at(parameter_gradient_buffer[v]), m.parameters[v]);

  if (options.storage == storage::pool)
    // Values the schedule never frees go now; parameter gradients stay readable until the next step.
    for (std::size_t b : walk.live()) {
      if (plan.layout.buffers[b].category == memory_category::parameter_gradients) held_gradients.push_back(b);
      else release_pool_buffer(b);
    }
  REMAT_CUDA_TRY(cudaEventRecord(finished.get(), stream));

  pending.peak_bytes = ledger.peak_bytes();
  pending.peak_step = ledger.peak_step();
  pending.at_peak = ledger.at_peak();
  pending.timeline = ledger.timeline();
  enqueued = true;
}

template <class T>
executor<T>::executor(model<T>& m, schedule steps, const executor_options& options)
    : state_(std::make_unique<device_state>(m, std::move(steps), options)) {}

template <class T>
executor<T>::~executor() = default;

template <class T>
step_report executor<T>::run(const step_options& options) {
  device_state& s = *state_;
  const std::uint64_t free_before = detail::free_and_total().first;
  if (s.options.storage == storage::pool) {
    const std::uint64_t zero = 0;
    REMAT_CUDA_TRY(cudaMemPoolSetAttribute(s.pool.get(), cudaMemPoolAttrUsedMemHigh, const_cast<std::uint64_t*>(&zero)));
    REMAT_CUDA_TRY(
        cudaMemPoolSetAttribute(s.pool.get(), cudaMemPoolAttrReservedMemHigh, const_cast<std::uint64_t*>(&zero)));
  }
  enqueue(options);
  step_report r = wait();
  r.free_before = free_before;
  return r;
}

template <class T>
void executor<T>::enqueue(const step_options& options) {
  device_state& s = *state_;
  try {
    s.enqueue(options);
  } catch (...) {
    // Leave nothing half-done: drain the stream and return what a pool step held.
    (void)cudaStreamSynchronize(s.m.stream.get());
    if (s.options.storage == storage::pool) {
      for (void*& p : s.pool_pointer)
        if (p) (void)cudaFreeAsync(std::exchange(p, nullptr), s.m.stream.get());
      s.held_gradients.clear();
      (void)cudaStreamSynchronize(s.m.stream.get());
    }
    s.enqueued = false;
    throw;
  }
}

template <class T>
step_report executor<T>::wait() {
  device_state& s = *state_;
  if (!s.enqueued) throw remat::error("executor::wait: no step was enqueued");
  REMAT_CUDA_TRY(cudaEventSynchronize(s.finished.get()));
  s.enqueued = false;
  s.ran = true;
  step_report r = std::move(s.pending);
  float milliseconds = 0;
  REMAT_CUDA_TRY(cudaEventElapsedTime(&milliseconds, s.started.get(), s.finished.get()));
  r.seconds = milliseconds * 1e-3;
  for (std::size_t k = 0; k < s.loss_nodes.size(); ++k) {
    const double value = static_cast<double>(s.loss_values.get()[k]);
    r.losses.emplace_back(s.loss_nodes[k], value);
    r.loss += s.m.host.op(s.loss_nodes[k]).loss_weight * value;
  }
  if (s.options.storage == storage::pool) {
    REMAT_CUDA_TRY(cudaMemPoolGetAttribute(s.pool.get(), cudaMemPoolAttrUsedMemHigh, &r.pool_used_high));
    REMAT_CUDA_TRY(cudaMemPoolGetAttribute(s.pool.get(), cudaMemPoolAttrReservedMemHigh, &r.pool_reserved_high));
  }
  r.free_after = detail::free_and_total().first;
  return r;
}

template <class T>
std::size_t executor<T>::capture_step(const step_options& options) {
  device_state& s = *state_;
  if (s.options.storage != storage::arena) throw remat::error("capture_step needs storage::arena");
  const cudaStream_t stream = s.m.stream.get();
  REMAT_CUDA_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  cudaGraph_t raw = nullptr;
  try {
    s.enqueue(options);
  } catch (...) {
    (void)cudaStreamEndCapture(stream, &raw);
    if (raw) (void)cudaGraphDestroy(raw);
    s.enqueued = false;
    throw;
  }
  s.enqueued = false;
  REMAT_CUDA_TRY(cudaStreamEndCapture(stream, &raw));
  const detail::owned<cudaGraph_t, cudaGraphDestroy> captured(raw);
  std::size_t nodes = 0;
  REMAT_CUDA_TRY(cudaGraphGetNodes(raw, nullptr, &nodes));
  return nodes;
}

template <class T>
const schedule& executor<T>::steps() const noexcept {
  return state_->steps;
}
template <class T>
const simulation& executor<T>::simulated() const noexcept {
  return state_->simulated;
}
template <class T>
const device_plan& executor<T>::plan() const noexcept {
  return state_->plan;
}
template <class T>
std::uint64_t executor<T>::device_taken() const noexcept {
  return state_->taken;
}

template <class T>
std::vector<T> executor<T>::parameter_gradient(node_id v) const {
  const device_state& s = *state_;
  if (!s.ran || v >= s.parameter_gradient_buffer.size() || s.parameter_gradient_buffer[v] == none) return {};
  std::vector<T> out(s.m.host.op(v).parameter_elements());
  s.m.download(out.data(), s.at(s.parameter_gradient_buffer[v]), out.size() * sizeof(T));
  return out;
}

template class executor<float>;

}  // namespace remat::cuda
