#pragma once

/// \file
/// network_builder: a network written op by op, in the order its forward pass
/// runs, becomes a remat::graph whose every node carries its op attributes,
/// output shape, output and parameter bytes, what its backward reads, and
/// roofline estimates of its forward and backward time.
///
/// The ops and their attributes are the contract with executors; docs/zoo.md
/// ("Op reference") states it in full. Tensors are NCHW (or N×F), operands are
/// recorded in call order, and every node gets the attributes `shape` and
/// `dtype`.
///
/// Time estimates are max(FLOPs / peak FLOP/s, bytes moved / bandwidth) for the
/// builder's device profile. Forward moves each operand once, the output once
/// and the parameters once; backward reads the output gradient and the values
/// the node's backward reads, writes a gradient per non-input operand, and reads
/// the parameters and writes their gradients. Backward FLOPs are twice forward
/// for conv2d, linear and matmul (gradients of the input and of the weights),
/// equal to forward otherwise. Workspace is 0.

#include <remat/config.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <remat/error.hpp>
#include <remat/graph/costs.hpp>
#include <remat/graph/graph.hpp>
#include <remat/zoo/device.hpp>

namespace remat::zoo {

/// A tensor shape, outermost dimension first.
using shape = std::vector<std::int64_t>;

/// Number of elements of a tensor of shape `dims` (1 for a scalar shape []).
inline std::uint64_t elements(const shape& dims) noexcept {
  std::uint64_t n = 1;
  for (std::int64_t d : dims) n *= static_cast<std::uint64_t>(d);
  return n;
}

/// A value produced by a network_builder: its node and what it holds.
struct tensor {
  std::size_t node = 0;  ///< index for node_spec::inputs
  shape dims;            ///< output shape
  dtype type = dtype::f32;
};

/// Two sizes, height first.
using hw = std::array<std::int64_t, 2>;

/// A 2-D convolution, as torch.nn.Conv2d takes it (in_channels comes from the input).
struct conv2d_options {
  std::int64_t out_channels = 1;
  hw kernel{1, 1};
  hw stride{1, 1};
  hw padding{0, 0};
  hw dilation{1, 1};
  std::int64_t groups = 1;
  bool bias = false;
};

/// A 2-D transposed convolution, as torch.nn.ConvTranspose2d takes it (groups
/// and dilation 1).
struct conv_transpose2d_options {
  std::int64_t out_channels = 1;
  hw kernel{1, 1};
  hw stride{1, 1};
  hw padding{0, 0};
  hw output_padding{0, 0};  ///< added to one side of the output; below the stride
  bool bias = false;
};

/// A pooling window, as torch.nn.MaxPool2d / AvgPool2d take it.
struct pool_options {
  hw kernel{1, 1};
  hw stride{1, 1};
  hw padding{0, 0};
  hw dilation{1, 1};               ///< max_pool only
  bool ceil_mode = false;
  bool count_include_pad = true;   ///< avg_pool only
};

namespace detail {

// torch's pooling_output_shape: with ceil_mode the last window must start
// inside the input or its left padding.
inline std::int64_t window_output(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                                  std::int64_t padding, std::int64_t dilation, bool ceil_mode) noexcept {
  const std::int64_t span = in + 2 * padding - dilation * (kernel - 1) - 1;
  if (span < 0) return 0;
  std::int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + padding) --out;
  return out;
}

inline attribute_value pair_attr(const hw& v) { return std::vector<std::int64_t>{v[0], v[1]}; }

}  // namespace detail

/// Builds a network op by op. Each op method checks its operands' shapes,
/// computes the output shape, parameters and costs, and returns the output.
/// Names must be unique (checked by build()).
/// \throws remat::error on a shape that does not fit the op, naming the node.
class network_builder {
 public:
  /// A network whose values and parameters are of element type `type` (f32,
  /// f16 or bf16), with times estimated for `device`.
  explicit network_builder(std::string graph_name, dtype type = dtype::f32,
                           device_profile device = profile("h100"))
      : builder_(std::move(graph_name)), type_(type), device_(std::move(device)) {
    if (type == dtype::i64) throw error("networks are built in f32, f16 or bf16, not i64");
  }

  dtype type() const noexcept { return type_; }
  const device_profile& device() const noexcept { return device_; }
  /// Parameter elements of all ops so far.
  std::uint64_t parameter_count() const noexcept { return parameters_; }
  /// Nodes so far.
  std::size_t size() const noexcept { return builder_.size(); }

  /// A graph input of the network's element type (op `input`).
  tensor input(std::string name, shape dims) {
    check_dims(name, dims);
    return source(std::move(name), std::move(dims), type_);
  }

  /// Class labels, one i64 per sample (op `input`, shape [batch]).
  tensor labels(std::string name, std::int64_t batch) { return labels(std::move(name), shape{batch}); }

  /// Class labels of any shape: [N] per sample, [N, H, W] per pixel (op `input`, i64).
  tensor labels(std::string name, shape dims) {
    check_dims(name, dims);
    return source(std::move(name), std::move(dims), dtype::i64);
  }

  /// `conv2d`: params out·in/groups·kh·kw (+ out with bias); reads its input.
  tensor conv2d(std::string name, const tensor& x, const conv2d_options& o) {
    require_rank(name, x, 4);
    const std::int64_t in = x.dims[1];
    if (o.groups < 1 || in % o.groups != 0 || o.out_channels % o.groups != 0 || o.out_channels < 1)
      fail(name, "groups (" + std::to_string(o.groups) + ") must divide in_channels (" + std::to_string(in) +
                     ") and out_channels (" + std::to_string(o.out_channels) + ")");
    check_window(name, o.kernel, o.stride, o.padding, o.dilation);
    const std::int64_t oh = detail::window_output(x.dims[2], o.kernel[0], o.stride[0], o.padding[0], o.dilation[0], false);
    const std::int64_t ow = detail::window_output(x.dims[3], o.kernel[1], o.stride[1], o.padding[1], o.dilation[1], false);
    shape out{x.dims[0], o.out_channels, oh, ow};
    check_output(name, x, out);
    const std::uint64_t per_output = static_cast<std::uint64_t>(in / o.groups * o.kernel[0] * o.kernel[1]);
    const std::uint64_t weights = static_cast<std::uint64_t>(o.out_channels) * per_output;
    const double flops = 2.0 * static_cast<double>(elements(out)) * static_cast<double>(per_output) +
                         (o.bias ? static_cast<double>(elements(out)) : 0.0);
    attributes a;
    a["in_channels"] = in;
    a["out_channels"] = o.out_channels;
    a["kernel"] = detail::pair_attr(o.kernel);
    a["stride"] = detail::pair_attr(o.stride);
    a["padding"] = detail::pair_attr(o.padding);
    a["dilation"] = detail::pair_attr(o.dilation);
    a["groups"] = o.groups;
    a["bias"] = std::int64_t{o.bias ? 1 : 0};
    return emit(std::move(name), "conv2d", {x}, std::move(out),
                weights + (o.bias ? static_cast<std::uint64_t>(o.out_channels) : 0), backward_reads::inputs,
                flops, 2 * flops, std::move(a));
  }

  /// `conv_transpose2d`: the adjoint of a conv2d with the same kernel, stride
  /// and padding; output (H − 1)·s − 2p + k + output_padding. Params
  /// in·out·kh·kw (+ out with bias); reads its input.
  tensor conv_transpose2d(std::string name, const tensor& x, const conv_transpose2d_options& o) {
    require_rank(name, x, 4);
    if (o.out_channels < 1) fail(name, "out_channels must be positive");
    check_window(name, o.kernel, o.stride, o.padding, {1, 1});
    for (int i = 0; i < 2; ++i)
      if (o.output_padding[i] < 0 || o.output_padding[i] >= o.stride[i])
        fail(name, "output_padding must be non-negative and below the stride");
    const std::int64_t in = x.dims[1];
    shape out{x.dims[0], o.out_channels,
              (x.dims[2] - 1) * o.stride[0] - 2 * o.padding[0] + o.kernel[0] + o.output_padding[0],
              (x.dims[3] - 1) * o.stride[1] - 2 * o.padding[1] + o.kernel[1] + o.output_padding[1]};
    check_output(name, x, out);
    // Every input element meets every tap of every output channel once.
    const auto per_input = static_cast<std::uint64_t>(o.out_channels * o.kernel[0] * o.kernel[1]);
    const std::uint64_t weights = static_cast<std::uint64_t>(in) * per_input;
    const double flops = 2.0 * static_cast<double>(elements(x.dims)) * static_cast<double>(per_input) +
                         (o.bias ? static_cast<double>(elements(out)) : 0.0);
    attributes a;
    a["in_channels"] = in;
    a["out_channels"] = o.out_channels;
    a["kernel"] = detail::pair_attr(o.kernel);
    a["stride"] = detail::pair_attr(o.stride);
    a["padding"] = detail::pair_attr(o.padding);
    a["output_padding"] = detail::pair_attr(o.output_padding);
    a["bias"] = std::int64_t{o.bias ? 1 : 0};
    return emit(std::move(name), "conv_transpose2d", {x}, std::move(out),
                weights + (o.bias ? static_cast<std::uint64_t>(o.out_channels) : 0), backward_reads::inputs, flops,
                2 * flops, std::move(a));
  }

  /// `upsample_bilinear` of an N×C×H×W map to oh × ow (attrs size,
  /// align_corners), as torch.nn.functional.interpolate(mode="bilinear");
  /// reads nothing.
  tensor upsample_bilinear(std::string name, const tensor& x, std::int64_t oh, std::int64_t ow,
                           bool align_corners = false) {
    require_rank(name, x, 4);
    if (oh < 1 || ow < 1) fail(name, "output size must be positive");
    attributes a;
    a["size"] = std::vector<std::int64_t>{oh, ow};
    a["align_corners"] = std::int64_t{align_corners ? 1 : 0};
    shape out{x.dims[0], x.dims[1], oh, ow};
    const double flops = 8.0 * static_cast<double>(elements(out));
    return emit(std::move(name), "upsample_bilinear", {x}, std::move(out), 0, backward_reads::none, flops, flops,
                std::move(a));
  }

  /// `batch_norm` in training mode over channel dim 1: params 2·C (weight,
  /// bias); running mean and variance are buffers (attr `buffers`, 2·C
  /// elements), not parameters. Reads its input.
  tensor batch_norm(std::string name, const tensor& x, double eps = 1e-5, double momentum = 0.1) {
    require_rank_at_least(name, x, 2);
    const std::int64_t c = x.dims[1];
    attributes a;
    a["num_features"] = c;
    a["eps"] = eps;
    a["momentum"] = momentum;
    a["buffers"] = 2 * c;
    const double flops = 8.0 * static_cast<double>(elements(x.dims));
    return emit(std::move(name), "batch_norm", {x}, x.dims, 2 * static_cast<std::uint64_t>(c),
                backward_reads::inputs, flops, flops, std::move(a));
  }

  /// `relu`: reads its output.
  tensor relu(std::string name, const tensor& x) {
    return elementwise(std::move(name), "relu", x, 1.0, backward_reads::output);
  }

  /// `sigmoid`: reads its output.
  tensor sigmoid(std::string name, const tensor& x) {
    return elementwise(std::move(name), "sigmoid", x, 4.0, backward_reads::output);
  }

  /// `max_pool`: attrs kernel, stride, padding, dilation, ceil_mode; reads its
  /// input and its output (the argmax is recovered from both).
  tensor max_pool(std::string name, const tensor& x, const pool_options& o) {
    const shape out = pooled(name, x, o, o.dilation);
    attributes a;
    a["kernel"] = detail::pair_attr(o.kernel);
    a["stride"] = detail::pair_attr(o.stride);
    a["padding"] = detail::pair_attr(o.padding);
    a["dilation"] = detail::pair_attr(o.dilation);
    a["ceil_mode"] = std::int64_t{o.ceil_mode ? 1 : 0};
    const double flops = static_cast<double>(elements(out) * static_cast<std::uint64_t>(o.kernel[0] * o.kernel[1]));
    return emit(std::move(name), "max_pool", {x}, out, 0, backward_reads::both, flops, flops, std::move(a));
  }

  /// `avg_pool`: attrs kernel, stride, padding, ceil_mode, count_include_pad; reads nothing.
  tensor avg_pool(std::string name, const tensor& x, const pool_options& o) {
    const shape out = pooled(name, x, o, {1, 1});
    attributes a;
    a["kernel"] = detail::pair_attr(o.kernel);
    a["stride"] = detail::pair_attr(o.stride);
    a["padding"] = detail::pair_attr(o.padding);
    a["ceil_mode"] = std::int64_t{o.ceil_mode ? 1 : 0};
    a["count_include_pad"] = std::int64_t{o.count_include_pad ? 1 : 0};
    const double flops = static_cast<double>(elements(out) * static_cast<std::uint64_t>(o.kernel[0] * o.kernel[1]));
    return emit(std::move(name), "avg_pool", {x}, out, 0, backward_reads::none, flops, flops, std::move(a));
  }

  /// `adaptive_avg_pool` to an oh × ow map: attr output_size; reads nothing.
  tensor adaptive_avg_pool(std::string name, const tensor& x, std::int64_t oh, std::int64_t ow) {
    require_rank(name, x, 4);
    if (oh < 1 || ow < 1) fail(name, "output size must be positive");
    attributes a;
    a["output_size"] = std::vector<std::int64_t>{oh, ow};
    const double flops = static_cast<double>(elements(x.dims));
    return emit(std::move(name), "adaptive_avg_pool", {x}, {x.dims[0], x.dims[1], oh, ow}, 0,
                backward_reads::none, flops, flops, std::move(a));
  }

  /// `add` of two or more operands of one shape (a repeated operand counts
  /// twice); reads nothing.
  tensor add(std::string name, const std::vector<tensor>& xs) {
    if (xs.size() < 2) fail(name, "add needs at least two operands");
    for (const tensor& t : xs)
      if (t.dims != xs[0].dims) fail(name, "add operands differ in shape: " + text(xs[0].dims) + " and " + text(t.dims));
    const double flops = static_cast<double>(xs.size() - 1) * static_cast<double>(elements(xs[0].dims));
    return emit(std::move(name), "add", xs, xs[0].dims, 0, backward_reads::none, flops, flops, {});
  }

  /// `concat` of two or more operands along the channel axis (attr axis = 1);
  /// reads nothing.
  tensor concat(std::string name, const std::vector<tensor>& xs) {
    if (xs.size() < 2) fail(name, "concat needs at least two operands");
    shape out = xs[0].dims;
    if (out.size() < 2) fail(name, "concat needs operands of rank 2 or more");
    for (std::size_t i = 1; i < xs.size(); ++i) {
      shape rest = xs[i].dims;
      if (rest.size() != out.size()) fail(name, "concat operands differ in rank");
      rest[1] = out[1];
      if (rest != out)
        fail(name, "concat operands differ outside axis 1: " + text(xs[0].dims) + " and " + text(xs[i].dims));
      out[1] += xs[i].dims[1];
    }
    attributes a;
    a["axis"] = std::int64_t{1};
    return emit(std::move(name), "concat", xs, std::move(out), 0, backward_reads::none, 0, 0, std::move(a));
  }

  /// `linear` on an N×F input: params in·out (+ out with bias); reads its input.
  tensor linear(std::string name, const tensor& x, std::int64_t out_features, bool bias = true) {
    require_rank(name, x, 2);
    if (out_features < 1) fail(name, "out_features must be positive");
    const std::int64_t in = x.dims[1];
    shape out{x.dims[0], out_features};
    const double flops = 2.0 * static_cast<double>(x.dims[0]) * static_cast<double>(in) * static_cast<double>(out_features) +
                         (bias ? static_cast<double>(elements(out)) : 0.0);
    attributes a;
    a["in_features"] = in;
    a["out_features"] = out_features;
    a["bias"] = std::int64_t{bias ? 1 : 0};
    const auto params = static_cast<std::uint64_t>(in * out_features + (bias ? out_features : 0));
    return emit(std::move(name), "linear", {x}, std::move(out), params, backward_reads::inputs, flops, 2 * flops,
                std::move(a));
  }

  /// `dropout` with probability p (attr p); reads nothing: the executor
  /// regenerates the mask from a counter-based generator.
  tensor dropout(std::string name, const tensor& x, double p) {
    if (!(p >= 0 && p < 1)) fail(name, "dropout probability must be in [0, 1)");
    attributes a;
    a["p"] = p;
    const double flops = 2.0 * static_cast<double>(elements(x.dims));
    return emit(std::move(name), "dropout", {x}, x.dims, 0, backward_reads::none, flops, flops, std::move(a));
  }

  /// `flatten` from dim 1 (attr start_dim = 1): N×C×H×W becomes N×(C·H·W); reads nothing.
  tensor flatten(std::string name, const tensor& x) {
    require_rank_at_least(name, x, 2);
    attributes a;
    a["start_dim"] = std::int64_t{1};
    const auto features = static_cast<std::int64_t>(elements(x.dims) / static_cast<std::uint64_t>(x.dims[0]));
    return emit(std::move(name), "flatten", {x}, {x.dims[0], features}, 0, backward_reads::none, 0, 0, std::move(a));
  }

  /// `slice` x[begin[0]:end[0], begin[1]:end[1], ...] (attrs begin, end); reads nothing.
  tensor slice(std::string name, const tensor& x, const shape& begin, const shape& end) {
    if (begin.size() != x.dims.size() || end.size() != x.dims.size())
      fail(name, "slice bounds need one entry per dimension of " + text(x.dims));
    shape out(x.dims.size());
    for (std::size_t d = 0; d < out.size(); ++d) {
      if (begin[d] < 0 || end[d] > x.dims[d] || begin[d] >= end[d])
        fail(name, "slice [" + std::to_string(begin[d]) + ", " + std::to_string(end[d]) + ") is empty or outside dimension " +
                       std::to_string(d) + " of " + text(x.dims));
      out[d] = end[d] - begin[d];
    }
    attributes a;
    a["begin"] = begin;
    a["end"] = end;
    return emit(std::move(name), "slice", {x}, std::move(out), 0, backward_reads::none, 0, 0, std::move(a));
  }

  /// `softmax_cross_entropy` of N×K logits against N i64 labels, or of
  /// N×K×H×W logits against N×H×W labels (one class per pixel), the mean over
  /// every labelled position (shape [1]); attr loss_weight (1.0, or e.g. 0.4 for
  /// an auxiliary head). Reads its inputs.
  tensor softmax_cross_entropy(std::string name, const tensor& logits, const tensor& labels, double loss_weight = 1.0) {
    require_rank_at_least(name, logits, 2);
    shape positions = logits.dims;
    positions.erase(positions.begin() + 1);
    if (labels.type != dtype::i64 || labels.dims != positions)
      fail(name, "labels must be i64 of shape " + text(positions));
    attributes a;
    a["loss_weight"] = loss_weight;
    const double flops = 4.0 * static_cast<double>(elements(logits.dims));
    return emit(std::move(name), "softmax_cross_entropy", {logits, labels}, {1}, 0, backward_reads::inputs, flops, flops,
                std::move(a));
  }

  /// `layer_norm` over the last dimension D (attrs normalized_shape [D], eps):
  /// params 2·D; reads its input.
  tensor layer_norm(std::string name, const tensor& x, double eps = 1e-5) {
    require_rank_at_least(name, x, 1);
    const std::int64_t d = x.dims.back();
    attributes a;
    a["normalized_shape"] = std::vector<std::int64_t>{d};
    a["eps"] = eps;
    const double flops = 8.0 * static_cast<double>(elements(x.dims));
    return emit(std::move(name), "layer_norm", {x}, x.dims, 2 * static_cast<std::uint64_t>(d), backward_reads::inputs,
                flops, flops, std::move(a));
  }

  /// `matmul` of a [..., M, K] and b [..., K, N] with equal leading dimensions,
  /// times `scale` (attr scale): [..., M, N]. Reads its inputs.
  tensor matmul(std::string name, const tensor& a, const tensor& b, double scale = 1.0) {
    require_rank_at_least(name, a, 2);
    if (a.dims.size() != b.dims.size() || !std::equal(a.dims.begin(), a.dims.end() - 2, b.dims.begin()) ||
        a.dims[a.dims.size() - 1] != b.dims[b.dims.size() - 2])
      fail(name, "matmul shapes do not fit: " + text(a.dims) + " × " + text(b.dims));
    shape out = a.dims;
    out.back() = b.dims.back();
    const double flops = 2.0 * static_cast<double>(elements(out)) * static_cast<double>(a.dims.back());
    attributes attrs;
    attrs["scale"] = scale;
    return emit(std::move(name), "matmul", {a, b}, std::move(out), 0, backward_reads::inputs, flops, 2 * flops,
                std::move(attrs));
  }

  /// `softmax` over the last dimension (attr dim, the last axis); reads its output.
  tensor softmax(std::string name, const tensor& x) {
    require_rank_at_least(name, x, 1);
    attributes a;
    a["dim"] = static_cast<std::int64_t>(x.dims.size()) - 1;
    const double flops = 5.0 * static_cast<double>(elements(x.dims));
    return emit(std::move(name), "softmax", {x}, x.dims, 0, backward_reads::output, flops, flops, std::move(a));
  }

  /// `gelu` (exact, erf form); reads its input.
  tensor gelu(std::string name, const tensor& x) {
    return elementwise(std::move(name), "gelu", x, 8.0, backward_reads::inputs);
  }

  /// `reshape` to `dims` (same element count; the `shape` attr is the target); reads nothing.
  tensor reshape(std::string name, const tensor& x, shape dims) {
    check_dims(name, dims);
    if (elements(dims) != elements(x.dims)) fail(name, "cannot reshape " + text(x.dims) + " to " + text(dims));
    return emit(std::move(name), "reshape", {x}, std::move(dims), 0, backward_reads::none, 0, 0, {});
  }

  /// `permute` of the dimensions (attr dims: output dim i is input dim dims[i]); reads nothing.
  tensor permute(std::string name, const tensor& x, const shape& dims) {
    shape sorted = dims;
    std::sort(sorted.begin(), sorted.end());
    bool permutation = sorted.size() == x.dims.size();
    for (std::size_t i = 0; permutation && i < sorted.size(); ++i) permutation = sorted[i] == static_cast<std::int64_t>(i);
    if (!permutation) fail(name, "permute needs a permutation of the " + std::to_string(x.dims.size()) + " dimensions");
    shape out(dims.size());
    for (std::size_t i = 0; i < dims.size(); ++i) out[i] = x.dims[static_cast<std::size_t>(dims[i])];
    attributes a;
    a["dims"] = dims;
    return emit(std::move(name), "permute", {x}, std::move(out), 0, backward_reads::none, 0, 0, std::move(a));
  }

  /// Validates and returns the graph. \throws invalid_graph (a duplicate name).
  graph build() && { return std::move(builder_).build(); }

 private:
  [[noreturn]] static void fail(const std::string& name, const std::string& what) {
    throw error("node '" + name + "': " + what);
  }

  static std::string text(const shape& dims) {
    std::string s = "[";
    for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
    return s + "]";
  }

  static void check_dims(const std::string& name, const shape& dims) {
    for (std::int64_t d : dims)
      if (d < 1) fail(name, "shape " + text(dims) + " has a dimension below 1");
  }

  static void require_rank(const std::string& name, const tensor& x, std::size_t rank) {
    if (x.dims.size() != rank)
      fail(name, "needs a rank-" + std::to_string(rank) + " input, got " + text(x.dims));
  }

  static void require_rank_at_least(const std::string& name, const tensor& x, std::size_t rank) {
    if (x.dims.size() < rank)
      fail(name, "needs an input of rank " + std::to_string(rank) + " or more, got " + text(x.dims));
  }

  static void check_window(const std::string& name, const hw& kernel, const hw& stride, const hw& padding,
                           const hw& dilation) {
    for (int i = 0; i < 2; ++i)
      if (kernel[i] < 1 || stride[i] < 1 || padding[i] < 0 || dilation[i] < 1)
        fail(name, "kernel, stride and dilation must be positive and padding non-negative");
  }

  static void check_output(const std::string& name, const tensor& x, const shape& out) {
    for (std::int64_t d : out)
      if (d < 1) fail(name, "input " + text(x.dims) + " is too small: the output would be " + text(out));
  }

  shape pooled(const std::string& name, const tensor& x, const pool_options& o, const hw& dilation) const {
    require_rank(name, x, 4);
    check_window(name, o.kernel, o.stride, o.padding, dilation);
    shape out{x.dims[0], x.dims[1],
              detail::window_output(x.dims[2], o.kernel[0], o.stride[0], o.padding[0], dilation[0], o.ceil_mode),
              detail::window_output(x.dims[3], o.kernel[1], o.stride[1], o.padding[1], dilation[1], o.ceil_mode)};
    check_output(name, x, out);
    return out;
  }

  tensor elementwise(std::string name, std::string op, const tensor& x, double flops_per_element, backward_reads reads) {
    const double flops = flops_per_element * static_cast<double>(elements(x.dims));
    return emit(std::move(name), std::move(op), {x}, x.dims, 0, reads, flops, flops, {});
  }

  tensor source(std::string name, shape dims, dtype type) {
    node_spec s;
    s.name = std::move(name);
    s.op = "input";
    s.bytes = elements(dims) * size_of(type);
    s.reads = backward_reads::none;
    s.attrs["shape"] = dims;
    s.attrs["dtype"] = std::string(to_string(type));
    const std::size_t index = builder_.add(std::move(s));
    return tensor{index, std::move(dims), type};
  }

  tensor emit(std::string name, std::string op, const std::vector<tensor>& operands, shape out,
              std::uint64_t param_elements, backward_reads reads, double flops, double backward_flops,
              attributes attrs) {
    node_spec s;
    s.name = std::move(name);
    s.op = std::move(op);
    s.bytes = elements(out) * size_of(type_);
    s.params = param_elements * size_of(type_);
    s.reads = reads;
    double operand_bytes = 0, gradient_bytes = 0;
    for (const tensor& t : operands) {
      s.inputs.push_back(t.node);
      const node_spec& operand = builder_[t.node];
      operand_bytes += static_cast<double>(operand.bytes);
      if (operand.op != "input") gradient_bytes += static_cast<double>(operand.bytes);
    }
    const double peak = device_.flops(type_);
    const double bandwidth = device_.bandwidth;
    const double out_bytes = static_cast<double>(s.bytes);
    const double param_bytes = static_cast<double>(s.params);
    s.time = std::max(flops / peak, (operand_bytes + out_bytes + param_bytes) / bandwidth);
    const double read_bytes = (reads_inputs(reads) ? operand_bytes : 0) + (reads_output(reads) ? out_bytes : 0);
    s.backward_time = std::max(backward_flops / peak,
                               (out_bytes + read_bytes + gradient_bytes + 2 * param_bytes) / bandwidth);
    attrs["shape"] = out;
    attrs["dtype"] = std::string(to_string(type_));
    s.attrs = std::move(attrs);
    parameters_ += param_elements;
    const std::size_t index = builder_.add(std::move(s));
    return tensor{index, std::move(out), type_};
  }

  graph_builder builder_;
  dtype type_;
  device_profile device_;
  std::uint64_t parameters_ = 0;
};

}  // namespace remat::zoo
