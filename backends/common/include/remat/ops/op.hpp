#pragma once

/// \file
/// The op model both runtimes run: which ops there are, what one node's op
/// is (its output shape, parameter layout and kernel geometry), and the one
/// parser that checks every node against the op reference (docs/zoo.md).

#include <remat/config.hpp>

#include <cstdint>
#include <span>
#include <vector>

#include <remat/graph/costs.hpp>
#include <remat/graph/graph.hpp>

#include "batch_norm.hpp"
#include "convolution.hpp"
#include "pooling.hpp"
#include "upsample.hpp"

namespace remat::ops {

/// The ops the runtimes run.
enum class op_kind : std::uint8_t {
  input,
  conv2d,
  conv_transpose2d,
  batch_norm,
  relu,
  sigmoid,
  max_pool,
  avg_pool,
  adaptive_avg_pool,
  upsample_bilinear,
  add,
  concat,
  linear,
  dropout,
  flatten,
  slice,
  softmax_cross_entropy,
  mse_loss,
};

/// What parse_op read from one node: its op, output shape, parameter
/// layout and the geometry its kernels take. Only the fields of its op are set.
struct op_info {
  op_kind kind = op_kind::input;
  std::vector<std::int64_t> shape;  ///< output shape
  bool labels = false;              ///< an i64 input (class labels)
  std::uint64_t weight_elements = 0;  ///< parameters: weights first,
  std::uint64_t bias_elements = 0;    ///< then the bias (batch norm: gamma, then beta)
  backward_reads needs = backward_reads::none;  ///< what its backward kernel reads
  /// conv2d; for conv_transpose2d, the convolution it is the adjoint of (its
  /// input is the op's output, its output the op's input, the same weights).
  conv2d_geometry conv;
  pool_geometry pool;         ///< max_pool, avg_pool, adaptive_avg_pool
  upsample_geometry upsample; ///< upsample_bilinear
  batch_norm_geometry norm;   ///< batch_norm
  double eps = 1e-5;          ///< batch_norm
  double momentum = 0.1;      ///< batch_norm
  std::int64_t rows = 0, in_features = 0, out_features = 0;  ///< linear
  double p = 0;               ///< dropout
  /// concat: dims before / after axis 1; softmax_cross_entropy: rows are
  /// samples, inner the positions per sample (1, or H·W for a per-pixel loss)
  std::int64_t outer = 0, inner = 0;
  std::vector<std::int64_t> channels;    ///< concat: each operand's extent along axis 1
  std::vector<std::int64_t> in_dims, begin, end;  ///< slice
  std::int64_t classes = 0;   ///< softmax_cross_entropy
  double loss_weight = 1;     ///< losses: the seed gradient of the loss

  /// Output elements.
  std::uint64_t elements() const noexcept {
    std::uint64_t n = 1;
    for (std::int64_t d : shape) n *= static_cast<std::uint64_t>(d);
    return n;
  }
  std::uint64_t parameter_elements() const noexcept { return weight_elements + bias_elements; }
};

/// Parses node v of g. \throws remat::error naming the node: an op the runtimes
/// do not run, a missing or ill-typed attribute, an unsupported attribute
/// value (e.g. concat along an axis other than 1, f16), operands or a `shape`
/// that disagree with the op, output or parameter bytes that disagree with
/// the shape, or a backward that would need a value the graph's `reads` does
/// not keep. \pre ops[u] holds the parsed operands of v. O(attributes + rank).
op_info parse_op(const graph& g, node_id v, std::span<const op_info> ops);

}  // namespace remat::ops
