#pragma once

/// \file
/// remat::cpu::model: a remat::graph made runnable on the CPU. It parses and
/// checks every node against the op reference (docs/zoo.md), and holds what
/// lives across training steps: parameters (weights then bias, per node),
/// batch-norm running statistics, and the graph inputs' data.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include <remat/graph/costs.hpp>
#include <remat/graph/graph.hpp>

#include "kernels.hpp"

namespace remat::cpu {

/// The ops the CPU runtime runs.
enum class op_kind : std::uint8_t {
  input,
  conv2d,
  batch_norm,
  relu,
  sigmoid,
  max_pool,
  avg_pool,
  adaptive_avg_pool,
  add,
  concat,
  linear,
  dropout,
  flatten,
  slice,
  softmax_cross_entropy,
  mse_loss,
};

/// What the runtime parsed from one node: its op, output shape, parameter
/// layout and the geometry its kernels take. Only the fields of its op are set.
struct op_info {
  op_kind kind = op_kind::input;
  std::vector<std::int64_t> shape;  ///< output shape
  bool labels = false;              ///< an i64 input (class labels)
  std::uint64_t weight_elements = 0;  ///< parameters: weights first,
  std::uint64_t bias_elements = 0;    ///< then the bias (batch norm: gamma, then beta)
  backward_reads needs = backward_reads::none;  ///< what its backward kernel reads
  conv2d_geometry conv;       ///< conv2d
  pool_geometry pool;         ///< max_pool, avg_pool, adaptive_avg_pool
  batch_norm_geometry norm;   ///< batch_norm
  double eps = 1e-5;          ///< batch_norm
  double momentum = 0.1;      ///< batch_norm
  std::int64_t rows = 0, in_features = 0, out_features = 0;  ///< linear
  double p = 0;               ///< dropout
  std::int64_t outer = 0, inner = 0;     ///< concat: dims before / after axis 1
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

/// Parses node v of g. \throws remat::error naming the node: an op the runtime
/// does not run, a missing or ill-typed attribute, an unsupported attribute
/// value (e.g. concat along an axis other than 1, f16), operands or a `shape`
/// that disagree with the op, output or parameter bytes that disagree with
/// the shape, or a backward that would need a value the graph's `reads` does
/// not keep. \pre ops[u] holds the parsed operands of v. O(attributes + rank).
op_info parse_op(const graph& g, node_id v, std::span<const op_info> ops);

/// A graph made runnable, with its parameters, batch-norm running statistics
/// and input data. T is float or double (double: the checking mode; every
/// byte figure then counts 8 bytes per element).
template <class T>
class model {
 public:
  /// Parses every node (parse_op) and initializes parameters from `seed`:
  /// convolution and linear weights and biases uniform in ±1/√fan_in (torch's
  /// default), batch-norm gamma 1 and beta 0, running mean 0 and variance 1;
  /// input data zero. \throws remat::error naming the first bad node.
  /// O(nodes + parameters).
  explicit model(graph g, std::uint64_t seed = 0);

  const graph& network() const noexcept { return graph_; }
  const op_info& op(node_id v) const noexcept { return ops_[v]; }
  /// Every node's parsed op, by node id.
  std::span<const op_info> ops() const noexcept { return ops_; }
  std::uint64_t seed() const noexcept { return seed_; }

  /// Node v's parameters, weights then bias (empty for ops without).
  std::span<T> parameters(node_id v) noexcept { return params_[v]; }
  std::span<const T> parameters(node_id v) const noexcept { return params_[v]; }
  /// A batch-norm node's running mean and variance (empty for other ops).
  std::span<const T> running_mean(node_id v) const noexcept { return running_mean_[v]; }
  std::span<const T> running_var(node_id v) const noexcept { return running_var_[v]; }
  std::span<T> running_mean(node_id v) noexcept { return running_mean_[v]; }
  std::span<T> running_var(node_id v) noexcept { return running_var_[v]; }

  /// Sets the data of the floating-point input called `name`.
  /// \throws remat::error when there is no such input or the size differs.
  void set_input(std::string_view name, std::span<const T> values);
  /// Sets the class labels of the i64 input called `name`. \throws remat::error
  /// when there is no such input or the size differs (label ranges are checked
  /// by the executor against the loss that reads them).
  void set_labels(std::string_view name, std::span<const std::int64_t> labels);
  /// Fills every input from `seed`: data uniform in [−1, 1), labels uniform
  /// over the classes of the first loss that reads them (0 if none does).
  void randomize_inputs(std::uint64_t seed);

  std::span<const T> input(node_id v) const noexcept { return inputs_[v]; }
  std::span<const std::int64_t> labels(node_id v) const noexcept { return labels_[v]; }

  /// Bytes of all parameters as stored (elements × sizeof(T)).
  std::uint64_t parameter_bytes() const noexcept { return parameter_bytes_; }
  /// Bytes of all input data as stored (labels at 8 bytes each).
  std::uint64_t input_bytes() const noexcept { return input_bytes_; }

 private:
  graph graph_;
  std::uint64_t seed_;
  std::vector<op_info> ops_;
  std::vector<std::vector<T>> params_, running_mean_, running_var_, inputs_;
  std::vector<std::vector<std::int64_t>> labels_;
  std::uint64_t parameter_bytes_ = 0, input_bytes_ = 0;
};

extern template class model<float>;
extern template class model<double>;

}  // namespace remat::cpu
