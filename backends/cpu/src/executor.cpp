#include "remat/cpu/executor.hpp"

#include <algorithm>
#include <chrono>
#include <limits>

#include <remat/config.hpp>
#include <remat/ops/element_buffers.hpp>
#include <remat/ops/labels.hpp>
#include <remat/runtime/execution.hpp>

#include "remat/cpu/kernels.hpp"

namespace remat::cpu {

using ops::dropout_key;
using ops::op_info;
using ops::op_kind;

namespace {

constexpr std::size_t none = std::numeric_limits<std::size_t>::max();

}  // namespace

template <class T>
executor<T>::executor(model<T>& m, schedule steps) : model_(&m), steps_(std::move(steps)) {
  const graph& g = m.network();
  simulated_ = simulate(g, steps_);
  layout_ = assign_offsets(ops::element_buffers(g, m.ops(), steps_, sizeof(T)), steps_.size(), 64);
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
    std::size_t need =
        o.kind == op_kind::conv2d || o.kind == op_kind::conv_transpose2d ? conv2d_scratch(o.conv) : 0;
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
  ops::check_labels(g, m.ops(), [&](node_id v) { return m.labels(v); });

  step_report report;
  memory_ledger ledger(m.parameter_bytes(), m.input_bytes(), options.record_timeline);
  schedule_walk walk(g, steps_, layout_, ledger);
  std::size_t scratch_used = 0, scratch_peak = 0;
  auto carve = [&](std::size_t elements) {
    T* p = scratch_.data() + scratch_used;
    scratch_used += elements;
    REMAT_ASSERT(scratch_used <= scratch_.size());
    scratch_peak = std::max(scratch_peak, scratch_used);
    return p;
  };
  auto operand_value = [&](node_id p) -> const T* {
    return g.is_input(p) ? m.input(p).data() : slot(walk.value(p));
  };

  std::vector<const T*> in;
  std::vector<T*> dst;
  std::vector<std::pair<std::size_t, T*>> pending;  // (operand position, its contribution in scratch)
  std::vector<double> batch_mean, batch_var;

  auto forward = [&](std::size_t i, const step& s, std::size_t out) {
    const node_id v = s.node;
    const op_info& o = m.op(v);
    const auto operands = g.inputs(v);
    const std::size_t count = o.elements();
    T* const w = m.parameters(v).data();
    const bool first = s.kind == step_kind::compute;
    scratch_used = 0;
    T* const y = slot(out);
    in.clear();
    for (node_id p : operands) in.push_back(m.op(p).labels ? nullptr : operand_value(p));
    const T* const x = in[0];
    switch (o.kind) {
      case op_kind::conv2d:
        conv2d_forward(o.conv, x, w, o.bias_elements ? w + o.weight_elements : nullptr, y,
                       std::span<T>(carve(conv2d_scratch(o.conv)), conv2d_scratch(o.conv)));
        break;
      case op_kind::conv_transpose2d:
        conv_transpose2d_forward(o.conv, x, w, o.bias_elements ? w + o.weight_elements : nullptr, y,
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
      case op_kind::upsample_bilinear: upsample_bilinear_forward(o.upsample, x, y); break;
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
        y[0] = static_cast<T>(
            softmax_cross_entropy_forward(o.rows, o.classes, o.inner, x, m.labels(operands[1]).data()));
        break;
      case op_kind::mse_loss: y[0] = static_cast<T>(mse_loss_forward(m.op(operands[0]).elements(), x, in[1])); break;
      case op_kind::input: REMAT_ASSERT(false); break;
    }
    if (first && (o.kind == op_kind::softmax_cross_entropy || o.kind == op_kind::mse_loss)) {
      report.losses.emplace_back(v, static_cast<double>(y[0]));
      report.loss += o.loss_weight * static_cast<double>(y[0]);
    }
    if (observe) observe(i, s, std::span<const T>(y, count));
  };

  auto backward = [&](std::size_t, const step& s, const backward_buffers& bb) {
    const node_id v = s.node;
    const op_info& o = m.op(v);
    const auto operands = g.inputs(v);
    const std::size_t count = o.elements();
    T* const w = m.parameters(v).data();
    scratch_used = 0;
    T* const dy = slot(bb.output_gradient);
    if (bb.seed) std::fill(dy, dy + count, static_cast<T>(o.loss_weight));
    // Only what the graph says this backward reads.
    in.clear();
    for (node_id p : operands)
      in.push_back(reads_inputs(g.reads(v)) && !m.op(p).labels ? operand_value(p) : nullptr);
    const T* const x = in[0];
    const T* const own = reads_output(g.reads(v)) ? slot(walk.value(v)) : nullptr;
    dst.clear();
    pending.clear();
    for (std::size_t k = 0; k < operands.size(); ++k) {
      switch (bb.how[k]) {
        case contribution::none: dst.push_back(nullptr); break;
        case contribution::write: dst.push_back(slot(bb.gradient[k])); break;
        case contribution::add:
          dst.push_back(carve(m.op(operands[k]).elements()));
          pending.emplace_back(k, dst.back());
          break;
      }
    }
    T* const dw = bb.parameter_gradient ? slot(*bb.parameter_gradient) : nullptr;
    T* const db = o.bias_elements && dw ? dw + o.weight_elements : nullptr;
    T* const dx = dst[0];
    switch (o.kind) {
      case op_kind::conv2d:
        conv2d_backward(o.conv, x, w, dy, dx, dw, db, std::span<T>(carve(conv2d_scratch(o.conv)), conv2d_scratch(o.conv)));
        break;
      case op_kind::conv_transpose2d:
        conv_transpose2d_backward(o.conv, x, w, dy, dx, dw, db,
                                  std::span<T>(carve(conv2d_scratch(o.conv)), conv2d_scratch(o.conv)));
        break;
      case op_kind::batch_norm: batch_norm_backward(o.norm, x, w, o.eps, dy, dx, dw, dw + o.weight_elements); break;
      case op_kind::relu: if (dx) relu_backward(count, own, dy, dx); break;
      case op_kind::sigmoid: if (dx) sigmoid_backward(count, own, dy, dx); break;
      case op_kind::max_pool: if (dx) max_pool_backward(o.pool, x, dy, dx); break;
      case op_kind::avg_pool: if (dx) avg_pool_backward(o.pool, dy, dx); break;
      case op_kind::adaptive_avg_pool: if (dx) adaptive_avg_pool_backward(o.pool, dy, dx); break;
      case op_kind::upsample_bilinear: if (dx) upsample_bilinear_backward(o.upsample, dy, dx); break;
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
        if (dx)
          softmax_cross_entropy_backward(o.rows, o.classes, o.inner, x, m.labels(operands[1]).data(), dy[0], dx);
        break;
      case op_kind::mse_loss: mse_loss_backward(m.op(operands[0]).elements(), x, in[1], dy[0], dx, dst[1]); break;
      case op_kind::input: REMAT_ASSERT(false); break;
    }
    for (const auto& [k, aside] : pending) {
      T* const gradient = slot(bb.gradient[k]);
      const std::size_t elements = m.op(operands[k]).elements();
      for (std::size_t e = 0; e < elements; ++e) gradient[e] += aside[e];
    }
  };
  arena_runtime kernels{forward, backward};
  walk.run(kernels);

  // SGD on every parameter, from the gradients still in the arena.
  ran_ = true;
  if (options.learning_rate != 0) {
    const T rate = static_cast<T>(options.learning_rate);
    for (node_id v = 0; v < g.size(); ++v) {
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
