#include "remat/ops/host_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <utility>

#include <remat/error.hpp>

#include "remat/ops/random.hpp"

namespace remat::ops {
namespace {

// Stream ids that keep parameter and input draws apart from dropout masks,
// whose stream is the training step.
constexpr std::uint64_t init_stream = ~std::uint64_t{0};
constexpr std::uint64_t input_stream = ~std::uint64_t{1};

}  // namespace

template <class T>
host_model<T>::host_model(graph g, std::uint64_t seed) : graph_(std::move(g)), seed_(seed) {
  const std::size_t n = graph_.size();
  ops_.resize(n);
  params_.resize(n);
  running_mean_.resize(n);
  running_var_.resize(n);
  inputs_.resize(n);
  labels_.resize(n);
  for (node_id v = 0; v < n; ++v) {
    ops_[v] = parse_op(graph_, v, ops_);
    const op_info& o = ops_[v];
    if (o.kind == op_kind::input) {
      if (o.labels) {
        labels_[v].assign(o.elements(), 0);
        input_bytes_ += o.elements() * sizeof(std::int64_t);
      } else {
        inputs_[v].assign(o.elements(), T(0));
        input_bytes_ += o.elements() * sizeof(T);
      }
      continue;
    }
    std::vector<T>& p = params_[v];
    p.resize(o.parameter_elements());
    parameter_bytes_ += p.size() * sizeof(T);
    if (o.kind == op_kind::batch_norm) {
      std::fill(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(o.weight_elements), T(1));
      std::fill(p.begin() + static_cast<std::ptrdiff_t>(o.weight_elements), p.end(), T(0));
      running_mean_[v].assign(static_cast<std::size_t>(o.norm.c), T(0));
      running_var_[v].assign(static_cast<std::size_t>(o.norm.c), T(1));
    } else if (!p.empty()) {
      // torch's fan-in: a transposed convolution's weight [in, out, kh, kw] has out·kh·kw.
      const double fan_in = o.kind == op_kind::conv2d
                                ? static_cast<double>(o.conv.c / o.conv.groups * o.conv.kh * o.conv.kw)
                            : o.kind == op_kind::conv_transpose2d
                                ? static_cast<double>(o.conv.c * o.conv.kh * o.conv.kw)
                                : static_cast<double>(o.in_features);
      const double bound = 1.0 / std::sqrt(fan_in);
      for (std::size_t i = 0; i < p.size(); ++i)
        p[i] = static_cast<T>((2 * unit_interval(random_bits(seed_, init_stream, v, i)) - 1) * bound);
    }
  }
}

template <class T>
void host_model<T>::set_input(std::string_view name, std::span<const T> values) {
  const auto v = graph_.find(name);
  if (!v || !graph_.is_input(*v) || ops_[*v].labels)
    throw error("'" + std::string(name) + "' is not a floating-point graph input");
  if (values.size() != inputs_[*v].size())
    throw error("input '" + std::string(name) + "' takes " + std::to_string(inputs_[*v].size()) + " values, got " +
                std::to_string(values.size()));
  std::copy(values.begin(), values.end(), inputs_[*v].begin());
}

template <class T>
void host_model<T>::set_labels(std::string_view name, std::span<const std::int64_t> labels) {
  const auto v = graph_.find(name);
  if (!v || !graph_.is_input(*v) || !ops_[*v].labels) throw error("'" + std::string(name) + "' is not an i64 graph input");
  if (labels.size() != labels_[*v].size())
    throw error("input '" + std::string(name) + "' takes " + std::to_string(labels_[*v].size()) + " labels, got " +
                std::to_string(labels.size()));
  std::copy(labels.begin(), labels.end(), labels_[*v].begin());
}

template <class T>
void host_model<T>::randomize_inputs(std::uint64_t seed) {
  for (node_id v = 0; v < graph_.size(); ++v) {
    if (!graph_.is_input(v)) continue;
    if (!ops_[v].labels) {
      for (std::size_t i = 0; i < inputs_[v].size(); ++i)
        inputs_[v][i] = static_cast<T>(2 * unit_interval(random_bits(seed, input_stream, v, i)) - 1);
      continue;
    }
    std::uint64_t classes = 0;
    for (node_id s : graph_.successors(v))
      if (ops_[s].kind == op_kind::softmax_cross_entropy) {
        classes = static_cast<std::uint64_t>(ops_[s].classes);
        break;
      }
    for (std::size_t i = 0; i < labels_[v].size(); ++i)
      labels_[v][i] = classes ? static_cast<std::int64_t>(random_bits(seed, input_stream, v, i) % classes) : 0;
  }
}

template class host_model<float>;
template class host_model<double>;

}  // namespace remat::ops
