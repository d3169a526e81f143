#include "remat/cuda/plan.hpp"

#include <algorithm>
#include <vector>

#include <remat/ops/element_buffers.hpp>
#include <remat/plan/simulate.hpp>

namespace remat::cuda {

std::uint64_t reduction_doubles(const graph& g, std::span<const ops::op_info> ops, node_id v) {
  const ops::op_info& o = ops[v];
  auto per_channel = [](std::int64_t channels, std::int64_t count, std::int64_t sums, std::int64_t statistics) {
    return static_cast<std::uint64_t>(channels * (sums * reduction_chunks(count) + statistics));
  };
  switch (o.kind) {
    // Partials of Σx, Σx², Σdy, Σdy·x, then mean, variance, 1/√(var + eps), Σ dy, Σ dy·x̂ per channel.
    case ops::op_kind::batch_norm: return per_channel(o.norm.c, o.norm.n * o.norm.spatial, 4, 5);
    case ops::op_kind::conv2d:
      return o.bias_elements ? per_channel(o.conv.k, o.conv.n * o.conv.oh() * o.conv.ow(), 1, 0) : 0;
    case ops::op_kind::conv_transpose2d:
      return o.bias_elements ? per_channel(o.conv.c, o.conv.n * o.conv.h * o.conv.w, 1, 0) : 0;
    case ops::op_kind::linear: return o.bias_elements ? per_channel(o.out_features, o.rows, 1, 0) : 0;
    // Per position: max, Σ exp, loss (more than a per-pixel loss's reduction partials).
    case ops::op_kind::softmax_cross_entropy: return 3 * static_cast<std::uint64_t>(o.rows * o.inner);
    case ops::op_kind::mse_loss: return per_channel(1, static_cast<std::int64_t>(ops[g.inputs(v)[0]].elements()), 1, 0);
    default: return 0;
  }
}

device_plan plan_device(const graph& g, std::span<const ops::op_info> ops, const schedule& steps,
                        std::size_t element_size) {
  (void)simulate(g, steps);
  device_plan plan;
  plan.layout = assign_offsets(ops::element_buffers(g, ops, steps, element_size), steps.size(), device_alignment);
  // Only an operand consumed at two or more positions can receive a second
  // contribution, which is computed aside; any of its positions may be the later one.
  std::vector<std::uint32_t> positions(g.size(), 0);
  for (node_id v = 0; v < g.size(); ++v)
    for (node_id p : g.inputs(v)) ++positions[p];
  std::uint64_t doubles = 0;
  for (node_id v = 0; v < g.size(); ++v) {
    if (g.is_input(v)) continue;
    std::uint64_t aside = 0;
    for (node_id p : g.inputs(v))
      if (!g.is_input(p) && positions[p] >= 2) aside += aligned(ops[p].elements() * element_size);
    plan.gradient_scratch_bytes = std::max(plan.gradient_scratch_bytes, aside);
    doubles = std::max(doubles, reduction_doubles(g, ops, v));
  }
  plan.reduction_scratch_bytes = aligned(doubles * sizeof(double));
  return plan;
}

}  // namespace remat::cuda
