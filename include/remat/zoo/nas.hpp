#pragma once

/// \file
/// CIFAR networks of searched cells, as the DARTS code base builds them
/// (`NetworkCIFAR` in quark0/darts, cnn/model.py and cnn/operations.py): a
/// 3×3 stem, `cells` cells with reduction cells at 1/3 and 2/3 of the depth,
/// an optional auxiliary head after the second reduction cell, global average
/// pooling and a linear classifier. The cells follow the genotypes the DARTS
/// code base publishes for NASNet-A, AmoebaNet-A and DARTS (second order,
/// `DARTS_V2`).
///
/// Node names follow the PyTorch module paths (`cells.3._ops.0.op.1`); the
/// sum that makes intermediate state k of cell i is `cells.i.add<k>`. Identity
/// skip connections add no node, and drop-path (a training-time regularizer
/// that keeps shapes) is left out.

#include <remat/config.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <remat/error.hpp>
#include <remat/graph/graph.hpp>
#include <remat/zoo/device.hpp>
#include <remat/zoo/network_builder.hpp>

namespace remat::zoo {

/// The ops of the DARTS search space that the published genotypes use.
enum class nas_op : std::uint8_t {
  max_pool_3x3,
  avg_pool_3x3,
  skip_connect,
  sep_conv_3x3,
  sep_conv_5x5,
  sep_conv_7x7,
  dil_conv_3x3,
  dil_conv_5x5,
  conv_7x1_1x7,
};

/// One cell topology: each intermediate state k = 2, 3, ... is the sum of two
/// ops, each applied to an earlier state (0 and 1 are the cell's two inputs);
/// the cell's output concatenates the states listed in `*_concat`.
struct genotype {
  struct edge {
    nas_op op;
    int from;
  };
  std::string name;
  std::vector<edge> normal;
  std::vector<int> normal_concat;
  std::vector<edge> reduce;
  std::vector<int> reduce_concat;
};

/// The genotypes `NASNet`, `AmoebaNet` and `DARTS_V2` of quark0/darts
/// (cnn/genotypes.py), named "nasnet", "amoebanet" and "darts".
inline const std::vector<genotype>& genotypes() {
  using o = nas_op;
  static const std::vector<genotype> all = [] {
    std::vector<genotype> g(3);
    g[0].name = "nasnet";
    g[0].normal = {{o::sep_conv_5x5, 1}, {o::sep_conv_3x3, 0}, {o::sep_conv_5x5, 0}, {o::sep_conv_3x3, 0},
                   {o::avg_pool_3x3, 1}, {o::skip_connect, 0}, {o::avg_pool_3x3, 0}, {o::avg_pool_3x3, 0},
                   {o::sep_conv_3x3, 1}, {o::skip_connect, 1}};
    g[0].normal_concat = {2, 3, 4, 5, 6};
    g[0].reduce = {{o::sep_conv_5x5, 1}, {o::sep_conv_7x7, 0}, {o::max_pool_3x3, 1}, {o::sep_conv_7x7, 0},
                   {o::avg_pool_3x3, 1}, {o::sep_conv_5x5, 0}, {o::skip_connect, 3}, {o::avg_pool_3x3, 2},
                   {o::sep_conv_3x3, 2}, {o::max_pool_3x3, 1}};
    g[0].reduce_concat = {4, 5, 6};
    g[1].name = "amoebanet";
    g[1].normal = {{o::avg_pool_3x3, 0}, {o::max_pool_3x3, 1}, {o::sep_conv_3x3, 0}, {o::sep_conv_5x5, 2},
                   {o::sep_conv_3x3, 0}, {o::avg_pool_3x3, 3}, {o::sep_conv_3x3, 1}, {o::skip_connect, 1},
                   {o::skip_connect, 0}, {o::avg_pool_3x3, 1}};
    g[1].normal_concat = {4, 5, 6};
    g[1].reduce = {{o::avg_pool_3x3, 0}, {o::sep_conv_3x3, 1}, {o::max_pool_3x3, 0}, {o::sep_conv_7x7, 2},
                   {o::sep_conv_7x7, 0}, {o::avg_pool_3x3, 1}, {o::max_pool_3x3, 0}, {o::max_pool_3x3, 1},
                   {o::conv_7x1_1x7, 0}, {o::sep_conv_3x3, 5}};
    g[1].reduce_concat = {3, 4, 6};
    g[2].name = "darts";
    g[2].normal = {{o::sep_conv_3x3, 0}, {o::sep_conv_3x3, 1}, {o::sep_conv_3x3, 0}, {o::sep_conv_3x3, 1},
                   {o::sep_conv_3x3, 1}, {o::skip_connect, 0}, {o::skip_connect, 0}, {o::dil_conv_3x3, 2}};
    g[2].normal_concat = {2, 3, 4, 5};
    g[2].reduce = {{o::max_pool_3x3, 0}, {o::max_pool_3x3, 1}, {o::skip_connect, 2}, {o::max_pool_3x3, 1},
                   {o::max_pool_3x3, 0}, {o::skip_connect, 2}, {o::skip_connect, 2}, {o::max_pool_3x3, 1}};
    g[2].reduce_concat = {2, 3, 4, 5};
    return g;
  }();
  return all;
}

/// The genotype called `name`. \throws remat::error naming the known ones.
inline const genotype& find_genotype(std::string_view name) {
  for (const genotype& g : genotypes())
    if (g.name == name) return g;
  std::string known;
  for (const genotype& g : genotypes()) known += (known.empty() ? "" : ", ") + g.name;
  throw error("unknown cell genotype '" + std::string(name) + "' (known: " + known + ")");
}

/// A NetworkCIFAR-style network of searched cells.
struct nas_options {
  std::string cell = "darts";     ///< genotype name: nasnet, amoebanet, darts
  std::int64_t channels = 36;     ///< C: channels of each op in the first stage (the stem has 3·C)
  std::int64_t cells = 20;        ///< number of cells ("layers"); reductions at cells/3 and 2·cells/3
  std::int64_t batch = 64;
  std::int64_t height = 32;
  std::int64_t width = 32;
  std::int64_t classes = 10;
  bool auxiliary = false;         ///< the auxiliary head after cell 2·cells/3 (needs an 8×8 map there)
  double auxiliary_weight = 0.4;  ///< its loss weight
};

namespace detail {

// Writes NetworkCIFAR's modules into a network_builder.
class nas_writer {
 public:
  explicit nas_writer(network_builder& b) : b_(b) {}

  void network(const genotype& cells_genotype, const nas_options& o) {
    if (o.cells < 1 || o.channels < 1 || o.classes < 1) throw error("a NAS network needs cells, channels and classes >= 1");
    const tensor images = b_.input("input", {o.batch, 3, o.height, o.width});
    const tensor labels = b_.labels("labels", o.batch);
    tensor x = b_.conv2d("stem.0", images, conv(3 * o.channels, {3, 3}, 1, {1, 1}));
    x = b_.batch_norm("stem.1", x);
    tensor s0 = x, s1 = x;
    std::int64_t c = o.channels;
    bool reduction_prev = false;
    for (std::int64_t i = 0; i < o.cells; ++i) {
      const bool reduction = i == o.cells / 3 || i == 2 * o.cells / 3;
      if (reduction) c *= 2;
      tensor out = cell("cells." + std::to_string(i), cells_genotype, s0, s1, c, reduction, reduction_prev);
      reduction_prev = reduction;
      s0 = std::move(s1);
      s1 = std::move(out);
      if (i == 2 * o.cells / 3 && o.auxiliary) auxiliary_head(s1, labels, o);
    }
    tensor pooled = b_.adaptive_avg_pool("global_pooling", s1, 1, 1);
    tensor logits = b_.linear("classifier", b_.flatten("flatten", pooled), o.classes);
    b_.softmax_cross_entropy("loss", logits, labels);
  }

 private:
  static conv2d_options conv(std::int64_t out, hw kernel, std::int64_t stride, hw padding, hw dilation = {1, 1},
                             std::int64_t groups = 1) {
    conv2d_options c;
    c.out_channels = out;
    c.kernel = kernel;
    c.stride = {stride, stride};
    c.padding = padding;
    c.dilation = dilation;
    c.groups = groups;
    return c;
  }

  static pool_options pool3(std::int64_t stride, bool count_include_pad) {
    pool_options p;
    p.kernel = {3, 3};
    p.stride = {stride, stride};
    p.padding = {1, 1};
    p.count_include_pad = count_include_pad;
    return p;
  }

  tensor cell(const std::string& at, const genotype& g, const tensor& s0, const tensor& s1, std::int64_t c,
              bool reduction, bool reduction_prev) {
    std::vector<tensor> states;
    states.push_back(reduction_prev ? factorized_reduce(at + ".preprocess0", s0, c)
                                    : relu_conv_bn(at + ".preprocess0", s0, c));
    states.push_back(relu_conv_bn(at + ".preprocess1", s1, c));
    const std::vector<genotype::edge>& edges = reduction ? g.reduce : g.normal;
    for (std::size_t k = 0; k + 1 < edges.size(); k += 2) {
      std::vector<tensor> terms;
      for (std::size_t e = k; e < k + 2; ++e) {
        const auto from = static_cast<std::size_t>(edges[e].from);
        const std::int64_t stride = reduction && from < 2 ? 2 : 1;
        terms.push_back(apply(at + "._ops." + std::to_string(e), edges[e].op, states[from], c, stride));
      }
      states.push_back(b_.add(at + ".add" + std::to_string(states.size()), terms));
    }
    std::vector<tensor> outputs;
    for (int k : reduction ? g.reduce_concat : g.normal_concat) outputs.push_back(states[static_cast<std::size_t>(k)]);
    return b_.concat(at + ".concat", outputs);
  }

  tensor apply(const std::string& at, nas_op op, const tensor& x, std::int64_t c, std::int64_t stride) {
    switch (op) {
      case nas_op::max_pool_3x3: return b_.max_pool(at, x, pool3(stride, true));
      case nas_op::avg_pool_3x3: return b_.avg_pool(at, x, pool3(stride, false));
      case nas_op::skip_connect: return stride == 1 ? x : factorized_reduce(at, x, c);
      case nas_op::sep_conv_3x3: return sep_conv(at, x, c, 3, stride);
      case nas_op::sep_conv_5x5: return sep_conv(at, x, c, 5, stride);
      case nas_op::sep_conv_7x7: return sep_conv(at, x, c, 7, stride);
      case nas_op::dil_conv_3x3: return dil_conv(at, x, c, 3, stride);
      case nas_op::dil_conv_5x5: return dil_conv(at, x, c, 5, stride);
      case nas_op::conv_7x1_1x7: {
        tensor y = b_.relu(at + ".0", x);
        conv2d_options wide = conv(c, {1, 7}, 1, {0, 3});
        wide.stride = {1, stride};
        y = b_.conv2d(at + ".1", y, wide);
        conv2d_options tall = conv(c, {7, 1}, 1, {3, 0});
        tall.stride = {stride, 1};
        y = b_.conv2d(at + ".2", y, tall);
        return b_.batch_norm(at + ".3", y);
      }
    }
    throw error("unknown NAS op");
  }

  // ReLU, 1×1 convolution, batch norm.
  tensor relu_conv_bn(const std::string& at, const tensor& x, std::int64_t c) {
    tensor y = b_.relu(at + ".op.0", x);
    y = b_.conv2d(at + ".op.1", y, conv(c, {1, 1}, 1, {0, 0}));
    return b_.batch_norm(at + ".op.2", y);
  }

  // Halves the map with two 1×1 stride-2 convolutions, the second shifted by
  // one pixel (x[:, :, 1:, 1:]), each making half of the channels.
  tensor factorized_reduce(const std::string& at, const tensor& x, std::int64_t c) {
    if (c % 2 != 0) throw error("node '" + at + "': FactorizedReduce needs an even channel count, got " + std::to_string(c));
    // Its two halves only line up on an even map (as in PyTorch, where torch.cat fails).
    if (x.dims[2] % 2 != 0 || x.dims[3] % 2 != 0)
      throw error("node '" + at + "': FactorizedReduce needs an even map, got " + std::to_string(x.dims[2]) + "×" +
                  std::to_string(x.dims[3]) + " (image sizes must be divisible by 4)");
    const tensor r = b_.relu(at + ".relu", x);
    const tensor a = b_.conv2d(at + ".conv_1", r, conv(c / 2, {1, 1}, 2, {0, 0}));
    const shape& d = r.dims;
    const tensor shifted = b_.slice(at + ".slice", r, {0, 0, 1, 1}, d);
    const tensor b = b_.conv2d(at + ".conv_2", shifted, conv(c / 2, {1, 1}, 2, {0, 0}));
    return b_.batch_norm(at + ".bn", b_.concat(at + ".concat", {a, b}));
  }

  // Depthwise-separable convolution applied twice (the first one strided).
  tensor sep_conv(const std::string& at, const tensor& x, std::int64_t c, std::int64_t k, std::int64_t stride) {
    const std::int64_t in = x.dims[1];
    const std::int64_t p = k / 2;
    tensor y = b_.relu(at + ".op.0", x);
    y = b_.conv2d(at + ".op.1", y, conv(in, {k, k}, stride, {p, p}, {1, 1}, in));
    y = b_.conv2d(at + ".op.2", y, conv(in, {1, 1}, 1, {0, 0}));
    y = b_.batch_norm(at + ".op.3", y);
    y = b_.relu(at + ".op.4", y);
    y = b_.conv2d(at + ".op.5", y, conv(in, {k, k}, 1, {p, p}, {1, 1}, in));
    y = b_.conv2d(at + ".op.6", y, conv(c, {1, 1}, 1, {0, 0}));
    return b_.batch_norm(at + ".op.7", y);
  }

  // Dilated (2) depthwise convolution, then a pointwise one.
  tensor dil_conv(const std::string& at, const tensor& x, std::int64_t c, std::int64_t k, std::int64_t stride) {
    const std::int64_t in = x.dims[1];
    tensor y = b_.relu(at + ".op.0", x);
    y = b_.conv2d(at + ".op.1", y, conv(in, {k, k}, stride, {k - 1, k - 1}, {2, 2}, in));
    y = b_.conv2d(at + ".op.2", y, conv(c, {1, 1}, 1, {0, 0}));
    return b_.batch_norm(at + ".op.3", y);
  }

  // AuxiliaryHeadCIFAR, which assumes an 8×8 input.
  void auxiliary_head(const tensor& x, const tensor& labels, const nas_options& o) {
    const std::string at = "auxiliary_head.features.";
    tensor y = b_.relu(at + "0", x);
    pool_options p;
    p.kernel = {5, 5};
    p.stride = {3, 3};
    p.count_include_pad = false;
    y = b_.avg_pool(at + "1", y, p);
    y = b_.conv2d(at + "2", y, conv(128, {1, 1}, 1, {0, 0}));
    y = b_.relu(at + "4", b_.batch_norm(at + "3", y));
    y = b_.conv2d(at + "5", y, conv(768, {2, 2}, 1, {0, 0}));
    y = b_.relu(at + "7", b_.batch_norm(at + "6", y));
    if (y.dims[2] != 1 || y.dims[3] != 1)
      throw error("the auxiliary head needs an 8×8 map after cell " + std::to_string(2 * o.cells / 3) + ", got " +
                  std::to_string(x.dims[2]) + "×" + std::to_string(x.dims[3]) +
                  " (use 32×32 images, or leave the auxiliary head out)");
    tensor logits = b_.linear("auxiliary_head.classifier", b_.flatten("auxiliary_head.flatten", y), o.classes);
    b_.softmax_cross_entropy("aux_loss", logits, labels, o.auxiliary_weight);
  }

  network_builder& b_;
};

}  // namespace detail

/// Writes the network `o` describes into `b` (inputs `input` and `labels`,
/// losses `loss` and, with the auxiliary head, `aux_loss`).
/// \throws remat::error for an unknown genotype, sizes below 1, or an image
/// too small for its reductions or for the auxiliary head.
/// Complexity: O(cells) nodes, about 30 to 60 per cell.
inline void write_nas_network(network_builder& b, const nas_options& o) {
  detail::nas_writer(b).network(find_genotype(o.cell), o);
}

}  // namespace remat::zoo
