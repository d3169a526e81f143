#pragma once

/// \file
/// remat::ops::host_model: a remat::graph made runnable, in host memory. It
/// parses and checks every node (parse_op), and holds what lives across
/// training steps: parameters (weights then bias, per node), batch-norm
/// running statistics, and the graph inputs' data. The CPU runtime trains it
/// in place (cpu::model); the CUDA runtime uploads it, so both start from the
/// same bits for one graph and seed.

#include <remat/config.hpp>

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include <remat/graph/graph.hpp>

#include "op.hpp"

namespace remat::ops {

/// A graph made runnable, with its parameters, batch-norm running statistics
/// and input data in host memory. T is float or double (double: the checking
/// mode; every byte figure then counts 8 bytes per element).
template <class T>
class host_model {
 public:
  /// Parses every node (parse_op) and initializes parameters from `seed`:
  /// convolution and linear weights and biases uniform in ±1/√fan_in (torch's
  /// default), batch-norm gamma 1 and beta 0, running mean 0 and variance 1;
  /// input data zero. \throws remat::error naming the first bad node.
  /// O(nodes + parameters).
  explicit host_model(graph g, std::uint64_t seed = 0);

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
  /// by the executors against the loss that reads them: check_labels).
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

extern template class host_model<float>;
extern template class host_model<double>;

}  // namespace remat::ops
