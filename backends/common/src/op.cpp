#include "remat/ops/op.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <remat/detail/checked.hpp>
#include <remat/error.hpp>

namespace remat::ops {
namespace {

using std::int64_t;

constexpr std::string_view supported =
    "conv2d, conv_transpose2d, batch_norm, relu, sigmoid, max_pool, avg_pool, adaptive_avg_pool, "
    "upsample_bilinear, add, concat, linear, dropout, flatten, slice, softmax_cross_entropy, mse_loss";

std::string text(std::span<const int64_t> dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// Reads and checks one node's attributes; every failure names the node.
class node_reader {
 public:
  node_reader(const graph& g, node_id v) : g_(g), v_(v) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw error("node '" + g_.node_name(v_) + "' (" + g_.op(v_) + "): " + what);
  }

  const attribute_value* find(std::string_view key) const {
    const auto it = g_.attrs(v_).find(key);
    return it == g_.attrs(v_).end() ? nullptr : &it->second;
  }

  int64_t integer(std::string_view key) const {
    const attribute_value* a = find(key);
    if (!a) fail("attribute '" + std::string(key) + "' is missing");
    if (const auto* i = std::get_if<int64_t>(a)) return *i;
    if (const auto* d = std::get_if<double>(a); d && std::floor(*d) == *d && std::abs(*d) < 9e15)
      return static_cast<int64_t>(*d);
    fail("attribute '" + std::string(key) + "' must be an integer");
  }

  int64_t integer_or(std::string_view key, int64_t fallback) const { return find(key) ? integer(key) : fallback; }

  double real_or(std::string_view key, double fallback) const {
    const attribute_value* a = find(key);
    if (!a) return fallback;
    if (const auto* d = std::get_if<double>(a)) return *d;
    if (const auto* i = std::get_if<int64_t>(a)) return static_cast<double>(*i);
    fail("attribute '" + std::string(key) + "' must be a number");
  }

  bool flag_or(std::string_view key, bool fallback) const {
    const int64_t f = integer_or(key, fallback ? 1 : 0);
    if (f != 0 && f != 1) fail("attribute '" + std::string(key) + "' must be 0 or 1, got " + std::to_string(f));
    return f == 1;
  }

  std::vector<int64_t> integers(std::string_view key, std::size_t count) const {
    const attribute_value* a = find(key);
    if (!a) fail("attribute '" + std::string(key) + "' is missing");
    const auto* list = std::get_if<std::vector<int64_t>>(a);
    if (!list || (count != 0 && list->size() != count))
      fail("attribute '" + std::string(key) + "' must be a list of " +
           (count ? std::to_string(count) + " integers" : std::string("integers")));
    return *list;
  }

  std::vector<int64_t> integers_or(std::string_view key, std::vector<int64_t> fallback) const {
    return find(key) ? integers(key, fallback.size()) : fallback;
  }

  std::string string(std::string_view key) const {
    const attribute_value* a = find(key);
    if (!a) fail("attribute '" + std::string(key) + "' is missing");
    const auto* s = std::get_if<std::string>(a);
    if (!s) fail("attribute '" + std::string(key) + "' must be a string");
    return *s;
  }

 private:
  const graph& g_;
  node_id v_;
};

// torch's pooling_output_shape (docs/zoo.md).
int64_t pooled_extent(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation, bool ceil_mode) {
  const int64_t span = in + 2 * pad - dilation * (kernel - 1) - 1;
  if (span < 0) return 0;
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

void check_window(const node_reader& r, const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride,
                  const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation) {
  for (int i = 0; i < 2; ++i)
    if (kernel[static_cast<std::size_t>(i)] < 1 || stride[static_cast<std::size_t>(i)] < 1 ||
        padding[static_cast<std::size_t>(i)] < 0 || dilation[static_cast<std::size_t>(i)] < 1)
      r.fail("kernel, stride and dilation must be positive and padding non-negative");
}

// A transposed convolution's output extent, (in − 1)·stride − 2·padding +
// kernel + output_padding, refused when it is below 1 or past 64 bits.
int64_t transposed_extent(const node_reader& r, int64_t in, int64_t kernel, int64_t stride, int64_t padding,
                          int64_t extra) {
  using remat::detail::checked_add;
  using remat::detail::checked_mul;
  const auto u = [](int64_t v) { return static_cast<std::uint64_t>(v); };
  const auto grown = checked_mul(u(in - 1), u(stride));
  const auto with_kernel = grown ? checked_add(*grown, u(kernel)) : std::nullopt;
  const auto reach = with_kernel ? checked_add(*with_kernel, u(extra)) : std::nullopt;
  const auto trimmed = checked_mul(u(padding), 2);
  if (!reach || !trimmed || *reach > u(std::numeric_limits<int64_t>::max()))
    r.fail("the output extent of an input extent of " + std::to_string(in) + " does not fit 64 bits");
  if (*reach <= *trimmed) r.fail("an input extent of " + std::to_string(in) + " is too small for the padding");
  return static_cast<int64_t>(*reach - *trimmed);
}

// A convolution's optional in_channels attribute agrees with its operand's channels.
void check_in_channels(const node_reader& r, int64_t channels) {
  if (r.integer_or("in_channels", channels) != channels)
    r.fail("in_channels is " + std::to_string(r.integer("in_channels")) + " but its operand has " +
           std::to_string(channels) + " channels");
}

}  // namespace

op_info parse_op(const graph& g, node_id v, std::span<const op_info> ops) {
  const node_reader r(g, v);
  op_info o;
  const std::string& name = g.op(v);

  // Shape, dtype and bytes: the contract every node shares.
  o.shape = r.integers("shape", 0);
  if (o.shape.empty()) r.fail("shape must have at least one dimension");
  for (int64_t d : o.shape)
    if (d < 1) r.fail("shape " + text(o.shape) + " has a dimension below 1");
  const std::string dtype = r.string("dtype");
  const bool input = g.is_input(v);
  if (dtype == "i64") {
    if (!input) r.fail("only graph inputs (class labels) may be i64");
    o.labels = true;
  } else if (dtype != "f32") {
    r.fail("dtype '" + dtype + "' is not supported (the CPU runtime runs f32, and float64 for checks)");
  }
  const std::uint64_t element_size = o.labels ? 8 : 4;
  if (o.elements() * element_size != g.bytes(v))
    r.fail("shape " + text(o.shape) + " of " + dtype + " is " + std::to_string(o.elements() * element_size) +
           " bytes, the graph says " + std::to_string(g.bytes(v)));
  if (input) {
    o.kind = op_kind::input;
    if (g.params(v) != 0) r.fail("a graph input cannot own parameters");
    return o;
  }

  const auto operands = g.inputs(v);
  auto operand = [&](std::size_t k) -> const op_info& { return ops[operands[k]]; };
  auto arity = [&](std::size_t lo, std::size_t hi) {
    if (operands.size() < lo || operands.size() > hi)
      r.fail("takes " + (lo == hi ? std::to_string(lo) : std::to_string(lo) + " or more") + " operand(s), got " +
             std::to_string(operands.size()));
    for (std::size_t k = 0; k < operands.size(); ++k)
      if (operand(k).labels && !(name == "softmax_cross_entropy" && k == 1))
        r.fail("operand '" + g.node_name(operands[k]) + "' holds i64 labels, which only a loss's second operand may take");
  };
  auto expect_shape = [&](const std::vector<int64_t>& expected) {
    if (expected != o.shape)
      r.fail("shape " + text(o.shape) + " disagrees with the op's output for its operands, " + text(expected));
  };
  auto rank_of = [&](std::size_t k, std::size_t rank) {
    if (operand(k).shape.size() != rank)
      r.fail("needs a rank-" + std::to_string(rank) + " operand, got " + text(operand(k).shape));
  };

  if (name == "conv2d") {
    o.kind = op_kind::conv2d;
    o.needs = backward_reads::inputs;
    arity(1, 1);
    rank_of(0, 4);
    const auto& x = operand(0).shape;
    const auto kernel = r.integers("kernel", 2), stride = r.integers("stride", 2);
    const auto padding = r.integers("padding", 2), dilation = r.integers_or("dilation", {1, 1});
    check_window(r, kernel, stride, padding, dilation);
    conv2d_geometry& c = o.conv;
    c.n = x[0], c.c = x[1], c.h = x[2], c.w = x[3];
    c.k = r.integer("out_channels");
    c.groups = r.integer_or("groups", 1);
    check_in_channels(r, c.c);
    if (c.k < 1 || c.groups < 1 || c.c % c.groups != 0 || c.k % c.groups != 0)
      r.fail("groups (" + std::to_string(c.groups) + ") must divide in_channels (" + std::to_string(c.c) +
             ") and out_channels (" + std::to_string(c.k) + ")");
    c.kh = kernel[0], c.kw = kernel[1], c.sh = stride[0], c.sw = stride[1];
    c.ph = padding[0], c.pw = padding[1], c.dh = dilation[0], c.dw = dilation[1];
    if (pooled_extent(c.h, c.kh, c.sh, c.ph, c.dh, false) < 1 || pooled_extent(c.w, c.kw, c.sw, c.pw, c.dw, false) < 1)
      r.fail("input " + text(x) + " is smaller than the dilated kernel");
    expect_shape({c.n, c.k, c.oh(), c.ow()});
    o.weight_elements = static_cast<std::uint64_t>(c.k * (c.c / c.groups) * c.kh * c.kw);
    o.bias_elements = r.flag_or("bias", false) ? static_cast<std::uint64_t>(c.k) : 0;
  } else if (name == "conv_transpose2d") {
    o.kind = op_kind::conv_transpose2d;
    o.needs = backward_reads::inputs;
    arity(1, 1);
    rank_of(0, 4);
    const auto& x = operand(0).shape;
    const auto kernel = r.integers("kernel", 2), stride = r.integers("stride", 2);
    const auto padding = r.integers("padding", 2), extra = r.integers_or("output_padding", {0, 0});
    check_window(r, kernel, stride, padding, {1, 1});
    if (r.integer_or("groups", 1) != 1 || r.integers_or("dilation", {1, 1}) != std::vector<int64_t>{1, 1})
      r.fail("conv_transpose2d is supported with groups 1 and dilation 1 only");
    for (std::size_t i = 0; i < 2; ++i)
      if (extra[i] < 0 || extra[i] >= stride[i]) r.fail("output_padding must be non-negative and below the stride");
    check_in_channels(r, x[1]);
    // The convolution this op is the adjoint of runs from the op's output back to its input.
    conv2d_geometry& c = o.conv;
    c.n = x[0], c.k = x[1], c.c = r.integer("out_channels");
    if (c.c < 1) r.fail("out_channels must be positive");
    c.kh = kernel[0], c.kw = kernel[1], c.sh = stride[0], c.sw = stride[1], c.ph = padding[0], c.pw = padding[1];
    c.h = transposed_extent(r, x[2], c.kh, c.sh, c.ph, extra[0]);
    c.w = transposed_extent(r, x[3], c.kw, c.sw, c.pw, extra[1]);
    expect_shape({c.n, c.c, c.h, c.w});
    o.weight_elements = static_cast<std::uint64_t>(c.k * c.c * c.kh * c.kw);
    o.bias_elements = r.flag_or("bias", false) ? static_cast<std::uint64_t>(c.c) : 0;
  } else if (name == "upsample_bilinear") {
    o.kind = op_kind::upsample_bilinear;
    arity(1, 1);
    rank_of(0, 4);
    const auto& x = operand(0).shape;
    const auto size = r.integers("size", 2);
    if (size[0] < 1 || size[1] < 1) r.fail("size must be positive");
    upsample_geometry& u = o.upsample;
    u.n = x[0], u.c = x[1], u.h = x[2], u.w = x[3], u.oh = size[0], u.ow = size[1];
    u.align_corners = r.flag_or("align_corners", false);
    expect_shape({u.n, u.c, u.oh, u.ow});
  } else if (name == "batch_norm") {
    o.kind = op_kind::batch_norm;
    o.needs = backward_reads::inputs;
    arity(1, 1);
    const auto& x = operand(0).shape;
    if (x.size() < 2) r.fail("needs an operand of rank 2 or more, got " + text(x));
    expect_shape(x);
    o.norm.n = x[0];
    o.norm.c = x[1];
    o.norm.spatial = 1;
    for (std::size_t d = 2; d < x.size(); ++d) o.norm.spatial *= x[d];
    if (r.integer_or("num_features", o.norm.c) != o.norm.c)
      r.fail("num_features disagrees with the operand's " + std::to_string(o.norm.c) + " channels");
    if (o.norm.n * o.norm.spatial < 2)
      r.fail("training-mode batch norm needs more than one value per channel, got " + text(x));
    o.eps = r.real_or("eps", 1e-5);
    o.momentum = r.real_or("momentum", 0.1);
    if (!(o.eps > 0) || !(o.momentum >= 0 && o.momentum <= 1)) r.fail("eps must be positive and momentum in [0, 1]");
    o.weight_elements = o.bias_elements = static_cast<std::uint64_t>(o.norm.c);
  } else if (name == "relu" || name == "sigmoid") {
    o.kind = name == "relu" ? op_kind::relu : op_kind::sigmoid;
    o.needs = backward_reads::output;
    arity(1, 1);
    expect_shape(operand(0).shape);
  } else if (name == "max_pool" || name == "avg_pool") {
    const bool max = name == "max_pool";
    o.kind = max ? op_kind::max_pool : op_kind::avg_pool;
    o.needs = max ? backward_reads::inputs : backward_reads::none;
    arity(1, 1);
    rank_of(0, 4);
    const auto& x = operand(0).shape;
    const auto kernel = r.integers("kernel", 2), stride = r.integers_or("stride", kernel);
    const auto padding = r.integers_or("padding", {0, 0});
    const auto dilation = max ? r.integers_or("dilation", {1, 1}) : std::vector<int64_t>{1, 1};
    if (!max && r.find("dilation")) r.fail("avg_pool takes no dilation");
    check_window(r, kernel, stride, padding, dilation);
    for (std::size_t i = 0; i < 2; ++i)
      if (2 * padding[i] > kernel[i])
        r.fail("padding must be at most half the kernel (as torch requires), got " + text(padding) + " for kernel " +
               text(kernel));
    const bool ceil = r.flag_or("ceil_mode", false);
    pool_geometry& p = o.pool;
    p.n = x[0], p.c = x[1], p.h = x[2], p.w = x[3];
    p.kh = kernel[0], p.kw = kernel[1], p.sh = stride[0], p.sw = stride[1];
    p.ph = padding[0], p.pw = padding[1], p.dh = dilation[0], p.dw = dilation[1];
    p.count_include_pad = max || r.flag_or("count_include_pad", true);
    p.oh = pooled_extent(p.h, p.kh, p.sh, p.ph, p.dh, ceil);
    p.ow = pooled_extent(p.w, p.kw, p.sw, p.pw, p.dw, ceil);
    if (p.oh < 1 || p.ow < 1) r.fail("input " + text(x) + " is smaller than the window");
    expect_shape({p.n, p.c, p.oh, p.ow});
  } else if (name == "adaptive_avg_pool") {
    o.kind = op_kind::adaptive_avg_pool;
    arity(1, 1);
    rank_of(0, 4);
    const auto& x = operand(0).shape;
    const auto size = r.integers("output_size", 2);
    if (size[0] < 1 || size[1] < 1) r.fail("output_size must be positive");
    pool_geometry& p = o.pool;
    p.n = x[0], p.c = x[1], p.h = x[2], p.w = x[3], p.oh = size[0], p.ow = size[1];
    expect_shape({p.n, p.c, p.oh, p.ow});
  } else if (name == "add") {
    o.kind = op_kind::add;
    arity(2, SIZE_MAX);
    for (std::size_t k = 0; k < operands.size(); ++k) expect_shape(operand(k).shape);
  } else if (name == "concat") {
    o.kind = op_kind::concat;
    arity(2, SIZE_MAX);
    if (r.integer_or("axis", 1) != 1) r.fail("concat is supported along axis 1 only, got axis " + std::to_string(r.integer("axis")));
    std::vector<int64_t> expected = operand(0).shape;
    if (expected.size() < 2) r.fail("needs operands of rank 2 or more");
    expected[1] = 0;
    for (std::size_t k = 0; k < operands.size(); ++k) {
      std::vector<int64_t> dims = operand(k).shape;
      if (dims.size() != expected.size()) r.fail("operands differ in rank");
      o.channels.push_back(dims[1]);
      expected[1] += dims[1];
      dims[1] = expected[1];
      if (!std::equal(dims.begin() + 2, dims.end(), expected.begin() + 2) || dims[0] != expected[0])
        r.fail("operands differ outside axis 1: " + text(operand(0).shape) + " and " + text(operand(k).shape));
    }
    expect_shape(expected);
    o.outer = expected[0];
    o.inner = 1;
    for (std::size_t d = 2; d < expected.size(); ++d) o.inner *= expected[d];
  } else if (name == "linear") {
    o.kind = op_kind::linear;
    o.needs = backward_reads::inputs;
    arity(1, 1);
    rank_of(0, 2);
    o.rows = operand(0).shape[0];
    o.in_features = operand(0).shape[1];
    o.out_features = r.integer("out_features");
    if (r.integer_or("in_features", o.in_features) != o.in_features)
      r.fail("in_features disagrees with its operand " + text(operand(0).shape));
    if (o.out_features < 1) r.fail("out_features must be positive");
    expect_shape({o.rows, o.out_features});
    o.weight_elements = static_cast<std::uint64_t>(o.in_features * o.out_features);
    o.bias_elements = r.flag_or("bias", true) ? static_cast<std::uint64_t>(o.out_features) : 0;
  } else if (name == "dropout") {
    o.kind = op_kind::dropout;
    arity(1, 1);
    expect_shape(operand(0).shape);
    o.p = r.real_or("p", 0.5);
    if (!(o.p >= 0 && o.p < 1)) r.fail("dropout probability must be in [0, 1)");
  } else if (name == "flatten") {
    o.kind = op_kind::flatten;
    arity(1, 1);
    if (r.integer_or("start_dim", 1) != 1) r.fail("flatten is supported from dim 1 only");
    const auto& x = operand(0).shape;
    if (x.size() < 2) r.fail("needs an operand of rank 2 or more");
    int64_t features = 1;
    for (std::size_t d = 1; d < x.size(); ++d) features *= x[d];
    expect_shape({x[0], features});
  } else if (name == "slice") {
    o.kind = op_kind::slice;
    arity(1, 1);
    o.in_dims = operand(0).shape;
    o.begin = r.integers("begin", o.in_dims.size());
    o.end = r.integers("end", o.in_dims.size());
    std::vector<int64_t> expected(o.in_dims.size());
    for (std::size_t d = 0; d < expected.size(); ++d) {
      if (o.begin[d] < 0 || o.end[d] > o.in_dims[d] || o.begin[d] >= o.end[d])
        r.fail("slice [" + std::to_string(o.begin[d]) + ", " + std::to_string(o.end[d]) + ") is empty or outside dimension " +
               std::to_string(d) + " of " + text(o.in_dims));
      expected[d] = o.end[d] - o.begin[d];
    }
    expect_shape(expected);
  } else if (name == "softmax_cross_entropy") {
    o.kind = op_kind::softmax_cross_entropy;
    o.needs = backward_reads::inputs;
    arity(2, 2);
    const auto& logits = operand(0).shape;
    if (logits.size() < 2) r.fail("needs logits of rank 2 or more, got " + text(logits));
    std::vector<int64_t> positions = logits;
    positions.erase(positions.begin() + 1);
    if (!operand(1).labels || operand(1).shape != positions || !g.is_input(operands[1]))
      r.fail("its second operand must be an i64 graph input of shape " + text(positions));
    o.rows = logits[0];
    o.classes = logits[1];
    o.inner = 1;
    for (std::size_t d = 2; d < logits.size(); ++d) o.inner *= logits[d];
    o.loss_weight = r.real_or("loss_weight", 1.0);
    expect_shape({1});
  } else if (name == "mse_loss") {
    o.kind = op_kind::mse_loss;
    o.needs = backward_reads::inputs;
    arity(2, 2);
    if (operand(0).shape != operand(1).shape)
      r.fail("operands differ in shape: " + text(operand(0).shape) + " and " + text(operand(1).shape));
    o.loss_weight = r.real_or("loss_weight", 1.0);
    expect_shape({1});
  } else {
    r.fail("op '" + name + "' is not supported by the CPU runtime (supported: " + std::string(supported) + ")");
  }

  if (o.parameter_elements() * 4 != g.params(v))
    r.fail("the op has " + std::to_string(o.parameter_elements()) + " f32 parameters (" +
           std::to_string(o.parameter_elements() * 4) + " bytes), the graph says " + std::to_string(g.params(v)) +
           " bytes");
  if ((reads_inputs(o.needs) && !reads_inputs(g.reads(v))) || (reads_output(o.needs) && !reads_output(g.reads(v))))
    r.fail("its backward reads " + std::string(to_string(o.needs)) + ", but the graph keeps only " +
           std::string(to_string(g.reads(v))) + " for it");
  return o;
}

}  // namespace remat::ops
