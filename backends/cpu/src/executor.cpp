#include "remat/cpu/executor.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>

#include <remat/config.hpp>
#include <remat/error.hpp>

namespace remat::cpu {
namespace {

constexpr std::size_t none = std::numeric_limits<std::size_t>::max();

// The buffers a runtime holds while it runs, checked against the layout: each
// is acquired at the step the layout says it is born, released after the step
// the layout says it dies, and never overlaps another live buffer in the arena.
class live_buffers {
 public:
  live_buffers(const arena_layout& layout, memory_ledger& ledger) : layout_(layout), ledger_(ledger) {}

  std::size_t acquire(std::size_t step, memory_category c, node_id v) {
    const std::optional<std::size_t> b = layout_.find(step, c, v);
    REMAT_ASSERT(b.has_value());
    REMAT_ASSERT(apart_from_live(layout_.buffers[*b]));
    live_.push_back(*b);
    ledger_.acquire(c, layout_.buffers[*b].bytes);
    return *b;
  }

  /// True when `mine` shares no byte with a live buffer.
  bool apart_from_live(const buffer_lifetime& mine) const noexcept {
    for (std::size_t other : live_) {
      const buffer_lifetime& o = layout_.buffers[other];
      if (mine.bytes != 0 && o.bytes != 0 && mine.offset < o.offset + o.bytes && o.offset < mine.offset + mine.bytes)
        return false;
    }
    return true;
  }

  /// Drops buffer b, whose last step of life was `last`.
  void release(std::size_t b, [[maybe_unused]] std::size_t last) {
    REMAT_ASSERT(layout_.buffers[b].last_step == last);
    const auto it = std::find(live_.begin(), live_.end(), b);
    REMAT_ASSERT(it != live_.end());
    *it = live_.back();
    live_.pop_back();
    ledger_.release(layout_.buffers[b].category, layout_.buffers[b].bytes);
  }

 private:
  const arena_layout& layout_;
  memory_ledger& ledger_;
  std::vector<std::size_t> live_;
};

}  // namespace

template <class T>
executor<T>::executor(model<T>& m, schedule steps) : model_(&m), steps_(std::move(steps)) {
  const graph& g = m.network();
  simulated_ = simulate(g, steps_);
  // The core lays out the graph's bytes; this runtime stores sizeof(T) per element.
  std::vector<buffer_lifetime> buffers = buffer_lifetimes(g, steps_);
  for (buffer_lifetime& b : buffers) {
    const op_info& o = m.op(b.node);
    if (b.category == memory_category::parameter_gradients) b.bytes = o.parameter_elements() * sizeof(T);
    else if (b.category != memory_category::workspace) b.bytes = o.elements() * sizeof(T);
  }
  layout_ = assign_offsets(std::move(buffers), steps_.size(), 64);
  arena_.assign(layout_.arena_bytes / sizeof(T), T(0));

  parameter_gradient_buffer_.assign(g.size(), none);
  for (std::size_t b = 0; b < layout_.buffers.size(); ++b)
    if (layout_.buffers[b].category == memory_category::parameter_gradients)
      parameter_gradient_buffer_[layout_.buffers[b].node] = b;

  // Kernel scratch: im2col columns, plus one gradient-sized area per operand
  // position that may have to be added into an existing gradient.
  for (node_id v = 0; v < g.size(); ++v) {
    const op_info& o = m.op(v);
    if (o.kind == op_kind::input) continue;
    std::size_t need = o.kind == op_kind::conv2d ? conv2d_scratch(o.conv) : 0;
    for (node_id p : g.inputs(v))
      if (!g.is_input(p)) need += m.op(p).elements();
    scratch_elements_ = std::max(scratch_elements_, need);
  }
  scratch_.assign(scratch_elements_, T(0));
}

template <class T>
T* executor<T>::slot(std::size_t buffer) noexcept {
  return arena_.data() + layout_.buffers[buffer].offset / sizeof(T);
}

template <class T>
std::span<const T> executor<T>::parameter_gradient(node_id v) const noexcept {
  if (!ran_ || v >= parameter_gradient_buffer_.size() || parameter_gradient_buffer_[v] == none) return {};
  const buffer_lifetime& b = layout_.buffers[parameter_gradient_buffer_[v]];
  return {arena_.data() + b.offset / sizeof(T), model_->op(v).parameter_elements()};
}

template <class T>
step_report executor<T>::run(const step_options& options, const value_observer& observe) {
  const auto started = std::chrono::steady_clock::now();
  model<T>& m = *model_;
  const graph& g = m.network();
  const std::size_t n = g.size();

  for (node_id v = 0; v < n; ++v) {
    const op_info& o = m.op(v);
    if (o.kind != op_kind::softmax_cross_entropy) continue;
    for (std::int64_t label : m.labels(g.inputs(v)[1]))
      if (label < 0 || label >= o.classes)
        throw error("node '" + g.node_name(v) + "' (softmax_cross_entropy): label " + std::to_string(label) +
                    " of '" + g.node_name(g.inputs(v)[1]) + "' is outside [0, " + std::to_string(o.classes) + ")");
  }

  step_report report;
  memory_ledger ledger(m.parameter_bytes(), m.input_bytes(), options.record_timeline);
  live_buffers live(layout_, ledger);
  std::vector<T*> value(n, nullptr);
  std::vector<std::size_t> value_buffer(n, none), gradient_buffer(n, none);
  std::vector<char> gradient_written(n, 0);
  std::size_t scratch_used = 0, scratch_peak = 0;
  auto carve = [&](std::size_t elements) {
    T* p = scratch_.data() + scratch_used;
    scratch_used += elements;
    REMAT_ASSERT(scratch_used <= scratch_.size());
    scratch_peak = std::max(scratch_peak, scratch_used);
    return p;
  };
  auto operand_value = [&](node_id p) -> const T* {
    if (g.is_input(p)) return m.input(p).data();
    REMAT_ASSERT(value[p] != nullptr);
    return value[p];
  };

  std::vector<const T*> in;
  std::vector<T*> dst;
  std::vector<std::pair<std::size_t, T*>> pending;  // (operand position, its contribution in scratch)
  std::vector<double> batch_mean, batch_var;

  for (std::size_t i = 0; i < steps_.size(); ++i) {
    const step s = steps_[i];
    const node_id v = s.node;
    const op_info& o = m.op(v);
    const auto operands = g.inputs(v);
    const std::size_t count = o.elements();
    T* const w = m.parameters(v).data();
    scratch_used = 0;

    if (s.kind == step_kind::free) {
      live.release(value_buffer[v], i - 1);
      value[v] = nullptr;
      value_buffer[v] = none;
      ledger.record();
      continue;
    }

    if (s.kind == step_kind::compute || s.kind == step_kind::recompute) {
      const bool first = s.kind == step_kind::compute;
      const std::size_t out_buffer = live.acquire(i, first ? memory_category::activations : memory_category::recomputed, v);
      const std::size_t workspace = g.workspace(v) > 0 ? live.acquire(i, memory_category::workspace, v) : none;
      ledger.record();
      T* const y = slot(out_buffer);
      in.clear();
      for (node_id p : operands) in.push_back(m.op(p).labels ? nullptr : operand_value(p));
      const T* const x = in[0];
      switch (o.kind) {
        case op_kind::conv2d:
          conv2d_forward(o.conv, x, w, o.bias_elements ? w + o.weight_elements : nullptr, y,
                         std::span<T>(carve(conv2d_scratch(o.conv)), conv2d_scratch(o.conv)));
          break;
        case op_kind::batch_norm:
          batch_mean.resize(static_cast<std::size_t>(o.norm.c));
          batch_var.resize(static_cast<std::size_t>(o.norm.c));
          batch_norm_forward(o.norm, x, w, w + o.weight_elements, o.eps, y, batch_mean.data(), batch_var.data());
          // Once per training step: a recompute normalizes with the same batch
          // statistics but leaves the running ones alone.
          if (first)
            batch_norm_update_running(o.norm.c, o.norm.n * o.norm.spatial, batch_mean.data(), batch_var.data(),
                                      o.momentum, m.running_mean(v).data(), m.running_var(v).data());
          break;
        case op_kind::relu: relu_forward(count, x, y); break;
        case op_kind::sigmoid: sigmoid_forward(count, x, y); break;
        case op_kind::max_pool: max_pool_forward(o.pool, x, y); break;
        case op_kind::avg_pool: avg_pool_forward(o.pool, x, y); break;
        case op_kind::adaptive_avg_pool: adaptive_avg_pool_forward(o.pool, x, y); break;
        case op_kind::add: add_forward(count, std::span<const T* const>(in), y); break;
        case op_kind::concat: concat_forward(o.outer, o.inner, std::span<const std::int64_t>(o.channels),
                                             std::span<const T* const>(in), y); break;
        case op_kind::linear:
          linear_forward(o.rows, o.in_features, o.out_features, x, w, o.bias_elements ? w + o.weight_elements : nullptr, y);
          break;
        case op_kind::dropout: dropout_forward(count, o.p, dropout_key{m.seed(), options.step, v}, x, y); break;
        case op_kind::flatten: std::copy(x, x + count, y); break;
        case op_kind::slice: slice_forward<T>(o.in_dims, o.begin, o.end, x, y); break;
        case op_kind::softmax_cross_entropy:
          y[0] = static_cast<T>(softmax_cross_entropy_forward(o.rows, o.classes, x, m.labels(operands[1]).data()));
          break;
        case op_kind::mse_loss: y[0] = static_cast<T>(mse_loss_forward(m.op(operands[0]).elements(), x, in[1])); break;
        case op_kind::input: REMAT_ASSERT(false); break;
      }
      if (workspace != none) live.release(workspace, i);
      value[v] = y;
      value_buffer[v] = out_buffer;
      if (first && (o.kind == op_kind::softmax_cross_entropy || o.kind == op_kind::mse_loss)) {
        report.losses.emplace_back(v, static_cast<double>(y[0]));
        report.loss += o.loss_weight * static_cast<double>(y[0]);
      }
      if (observe) observe(i, s, std::span<const T>(y, count));
      continue;
    }

    // Backward: allocate what the simulator allocates, then run the kernel.
    const bool sink = g.successors(v).empty();
    const std::size_t seed = sink ? live.acquire(i, memory_category::gradients, v) : none;
    for (node_id p : g.predecessors(v))
      if (!g.is_input(p) && gradient_buffer[p] == none) {
        gradient_buffer[p] = live.acquire(i, memory_category::gradients, p);
        gradient_written[p] = 0;
      }
    const std::size_t parameter_gradient = g.params(v) > 0 ? live.acquire(i, memory_category::parameter_gradients, v) : none;
    const std::size_t workspace = g.backward_workspace(v) > 0 ? live.acquire(i, memory_category::workspace, v) : none;
    ledger.record();

    T* dy = nullptr;
    if (sink) {
      dy = slot(seed);
      std::fill(dy, dy + count, static_cast<T>(o.loss_weight));
    } else {
      dy = slot(gradient_buffer[v]);
    }
    // Only what the graph says this backward reads.
    in.clear();
    for (node_id p : operands)
      in.push_back(reads_inputs(g.reads(v)) && !m.op(p).labels ? operand_value(p) : nullptr);
    const T* const x = in[0];
    const T* const own = reads_output(g.reads(v)) ? value[v] : nullptr;
    // The first contribution to a gradient is written in place; later ones
    // are computed in full into scratch, then added.
    dst.clear();
    pending.clear();
    for (std::size_t k = 0; k < operands.size(); ++k) {
      const node_id p = operands[k];
      if (g.is_input(p)) {
        dst.push_back(nullptr);
      } else if (!gradient_written[p]) {
        gradient_written[p] = 1;
        dst.push_back(slot(gradient_buffer[p]));
      } else {
        dst.push_back(carve(m.op(p).elements()));
        pending.emplace_back(k, dst.back());
      }
    }
    T* const dw = parameter_gradient != none ? slot(parameter_gradient) : nullptr;
    T* const db = o.bias_elements && dw ? dw + o.weight_elements : nullptr;
    T* const dx = dst[0];
    switch (o.kind) {
      case op_kind::conv2d:
        conv2d_backward(o.conv, x, w, dy, dx, dw, db, std::span<T>(carve(conv2d_scratch(o.conv)), conv2d_scratch(o.conv)));
        break;
      case op_kind::batch_norm: batch_norm_backward(o.norm, x, w, o.eps, dy, dx, dw, dw + o.weight_elements); break;
      case op_kind::relu: if (dx) relu_backward(count, own, dy, dx); break;
      case op_kind::sigmoid: if (dx) sigmoid_backward(count, own, dy, dx); break;
      case op_kind::max_pool: if (dx) max_pool_backward(o.pool, x, dy, dx); break;
      case op_kind::avg_pool: if (dx) avg_pool_backward(o.pool, dy, dx); break;
      case op_kind::adaptive_avg_pool: if (dx) adaptive_avg_pool_backward(o.pool, dy, dx); break;
      case op_kind::add:
        for (T* d : dst)
          if (d) std::copy(dy, dy + count, d);
        break;
      case op_kind::concat:
        concat_backward(o.outer, o.inner, std::span<const std::int64_t>(o.channels), dy, std::span<T* const>(dst));
        break;
      case op_kind::linear:
        linear_backward(o.rows, o.in_features, o.out_features, x, w, dy, dx, dw, db);
        break;
      case op_kind::dropout: if (dx) dropout_backward(count, o.p, dropout_key{m.seed(), options.step, v}, dy, dx); break;
      case op_kind::flatten: if (dx) std::copy(dy, dy + count, dx); break;
      case op_kind::slice: if (dx) slice_backward<T>(o.in_dims, o.begin, o.end, dy, dx); break;
      case op_kind::softmax_cross_entropy:
        if (dx) softmax_cross_entropy_backward(o.rows, o.classes, x, m.labels(operands[1]).data(), dy[0], dx);
        break;
      case op_kind::mse_loss: mse_loss_backward(m.op(operands[0]).elements(), x, in[1], dy[0], dx, dst[1]); break;
      case op_kind::input: REMAT_ASSERT(false); break;
    }
    for (const auto& [k, contribution] : pending) {
      T* const gradient = slot(gradient_buffer[operands[k]]);
      const std::size_t elements = m.op(operands[k]).elements();
      for (std::size_t e = 0; e < elements; ++e) gradient[e] += contribution[e];
    }
    if (workspace != none) live.release(workspace, i);
    if (sink) {
      live.release(seed, i);
    } else {
      live.release(gradient_buffer[v], i);
      gradient_buffer[v] = none;
    }
  }

  // SGD on every parameter, from the gradients still in the arena.
  ran_ = true;
  if (options.learning_rate != 0) {
    const T rate = static_cast<T>(options.learning_rate);
    for (node_id v = 0; v < n; ++v) {
      const std::span<T> p = m.parameters(v);
      const std::span<const T> grad = parameter_gradient(v);
      for (std::size_t k = 0; k < grad.size(); ++k) p[k] -= rate * grad[k];
    }
  }

  report.peak_bytes = ledger.peak_bytes();
  report.peak_step = ledger.peak_step();
  report.at_peak = ledger.at_peak();
  report.timeline = ledger.timeline();
  report.scratch_bytes = scratch_peak * sizeof(T);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return report;
}

template class executor<float>;
template class executor<double>;

}  // namespace remat::cpu
