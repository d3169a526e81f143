#pragma once

// Reduced versions of the zoo's families, small enough to train on a CPU in
// milliseconds, built with the zoo's own network_builder and block writers so
// that they use exactly the ops, attributes and backward reads of the full
// models: VGG (convolutions with bias, max pools, adaptive pooling to 2×2,
// dropout in the classifier), ResNet (7×7/2 stem, bottleneck blocks with and
// without a projection shortcut), DenseNet (zoo::detail::densenet itself),
// Inception v3 (A, B, C, D, E blocks, asymmetric kernels, an auxiliary loss of
// weight 0.4, odd sizes under stride 2) and DARTS (zoo::write_nas_network:
// separable and dilated depthwise convolutions, FactorizedReduce with its
// slice, the auxiliary head), U-Net (transposed convolutions, cropped skips,
// a per-pixel loss) and PSPNet (dilation, pyramid pooling, bilinear
// upsampling, two per-pixel losses).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <remat/error.hpp>
#include <remat/graph/graph.hpp>
#include <remat/zoo/models.hpp>
#include <remat/zoo/nas.hpp>
#include <remat/zoo/network_builder.hpp>

namespace remat::test {

struct reduced_options {
  std::int64_t batch = 2;
  std::int64_t classes = 5;
};

inline graph reduced_vgg(const reduced_options& o = {}) {
  using zoo::detail::conv;
  using zoo::detail::pool;
  zoo::network_builder b("vgg-reduced");
  zoo::tensor x = b.input("input", {o.batch, 3, 20, 20});
  const zoo::tensor labels = b.labels("labels", o.batch);
  x = b.relu("features.1", b.conv2d("features.0", x, conv(8, 3, 1, 1, true)));
  x = b.max_pool("features.2", x, pool(2, 2));
  x = b.relu("features.4", b.conv2d("features.3", x, conv(16, 3, 1, 1, true)));
  x = b.relu("features.6", b.conv2d("features.5", x, conv(16, 3, 1, 1, true)));
  x = b.max_pool("features.7", x, pool(2, 2));
  x = b.flatten("flatten", b.adaptive_avg_pool("avgpool", x, 2, 2));  // 5×5 → 2×2: overlapping windows
  x = b.relu("classifier.1", b.linear("classifier.0", x, 32));
  x = b.linear("classifier.3", b.dropout("classifier.2", x, 0.5), 32);
  x = b.dropout("classifier.5", b.relu("classifier.4", x), 0.5);
  b.softmax_cross_entropy("loss", b.linear("classifier.6", x, o.classes), labels);
  return std::move(b).build();
}

inline graph reduced_resnet(const reduced_options& o = {}) {
  using zoo::detail::conv;
  using zoo::detail::pool;
  zoo::network_builder b("resnet-reduced");
  zoo::tensor x = b.input("input", {o.batch, 3, 32, 32});
  const zoo::tensor labels = b.labels("labels", o.batch);
  x = b.relu("relu", b.batch_norm("bn1", b.conv2d("conv1", x, conv(8, 7, 2, 3))));
  x = b.max_pool("maxpool", x, pool(3, 2, 1));
  x = zoo::detail::resnet_block(b, "layer1.0", x, 4, 1, true);   // 8 → 16 channels: projection shortcut
  x = zoo::detail::resnet_block(b, "layer2.0", x, 8, 2, true);   // strided
  x = zoo::detail::resnet_block(b, "layer2.1", x, 8, 1, true);   // identity shortcut
  x = zoo::detail::resnet_block(b, "layer3.0", x, 8, 2, false);  // a BasicBlock too
  zoo::detail::classify(b, b.adaptive_avg_pool("avgpool", x, 1, 1), labels, o.classes, "fc");
  return std::move(b).build();
}

inline graph reduced_densenet(const reduced_options& o = {}) {
  zoo::network_builder b("densenet-reduced");
  zoo::detail::densenet(b, {o.batch, 32, 32, o.classes}, 4, {3, 2}, 8);
  return std::move(b).build();
}

// Inception v3's five block kinds at a fraction of their width, on 63×63 images.
inline graph reduced_inception(const reduced_options& o = {}) {
  using zoo::detail::basic_conv;
  using zoo::detail::conv;
  using zoo::detail::pool;
  zoo::network_builder b("inception-reduced");
  zoo::tensor x = b.input("input", {o.batch, 3, 63, 63});
  const zoo::tensor labels = b.labels("labels", o.batch);
  x = basic_conv(b, "Conv2d_1a_3x3", x, conv(8, 3, 2));  // 63 → 31
  x = basic_conv(b, "Conv2d_2a_3x3", x, conv(8, 3));     // 29
  x = b.max_pool("maxpool1", x, pool(3, 2));             // 14

  {  // InceptionA
    const std::string at = "Mixed_5b";
    const zoo::tensor b1 = basic_conv(b, at + ".branch1x1", x, conv(8, 1));
    zoo::tensor b5 = basic_conv(b, at + ".branch5x5_1", x, conv(6, 1));
    b5 = basic_conv(b, at + ".branch5x5_2", b5, conv(8, 5, 1, 2));
    zoo::tensor b3 = basic_conv(b, at + ".branch3x3dbl_1", x, conv(8, 1));
    b3 = basic_conv(b, at + ".branch3x3dbl_2", b3, conv(12, 3, 1, 1));
    b3 = basic_conv(b, at + ".branch3x3dbl_3", b3, conv(12, 3, 1, 1));
    const zoo::tensor bp = basic_conv(b, at + ".branch_pool", zoo::detail::avg_pool_3x3(b, at + ".avg_pool", x), conv(4, 1));
    x = b.concat(at + ".concat", {b1, b5, b3, bp});
  }
  {  // InceptionB: 14 → 6
    const std::string at = "Mixed_6a";
    const zoo::tensor b3 = basic_conv(b, at + ".branch3x3", x, conv(16, 3, 2));
    zoo::tensor bd = basic_conv(b, at + ".branch3x3dbl_1", x, conv(8, 1));
    bd = basic_conv(b, at + ".branch3x3dbl_2", bd, conv(12, 3, 1, 1));
    bd = basic_conv(b, at + ".branch3x3dbl_3", bd, conv(12, 3, 2));
    x = b.concat(at + ".concat", {b3, bd, b.max_pool(at + ".max_pool", x, pool(3, 2))});
  }
  {  // InceptionC: 1×7 and 7×1
    const std::string at = "Mixed_6b";
    const zoo::tensor b1 = basic_conv(b, at + ".branch1x1", x, conv(12, 1));
    zoo::tensor b7 = basic_conv(b, at + ".branch7x7_1", x, conv(8, 1));
    b7 = basic_conv(b, at + ".branch7x7_2", b7, conv(8, {1, 7}, {0, 3}));
    b7 = basic_conv(b, at + ".branch7x7_3", b7, conv(12, {7, 1}, {3, 0}));
    zoo::tensor bd = basic_conv(b, at + ".branch7x7dbl_1", x, conv(8, 1));
    bd = basic_conv(b, at + ".branch7x7dbl_2", bd, conv(8, {7, 1}, {3, 0}));
    bd = basic_conv(b, at + ".branch7x7dbl_3", bd, conv(12, {1, 7}, {0, 3}));
    const zoo::tensor bp = basic_conv(b, at + ".branch_pool", zoo::detail::avg_pool_3x3(b, at + ".avg_pool", x), conv(12, 1));
    x = b.concat(at + ".concat", {b1, b7, bd, bp});
  }
  {  // the auxiliary classifier, loss weight 0.4
    zoo::tensor aux = b.avg_pool("AuxLogits.avg_pool", x, pool(3, 2));  // 6 → 2
    aux = basic_conv(b, "AuxLogits.conv0", aux, conv(8, 1));
    aux = basic_conv(b, "AuxLogits.conv1", aux, conv(16, 2));
    aux = b.flatten("AuxLogits.flatten", b.adaptive_avg_pool("AuxLogits.adaptive_avg_pool", aux, 1, 1));
    b.softmax_cross_entropy("aux_loss", b.linear("AuxLogits.fc", aux, o.classes), labels, 0.4);
  }
  {  // InceptionD: 6 → 2
    const std::string at = "Mixed_7a";
    zoo::tensor b3 = basic_conv(b, at + ".branch3x3_1", x, conv(8, 1));
    b3 = basic_conv(b, at + ".branch3x3_2", b3, conv(16, 3, 2));
    zoo::tensor b7 = basic_conv(b, at + ".branch7x7x3_1", x, conv(8, 1));
    b7 = basic_conv(b, at + ".branch7x7x3_2", b7, conv(8, {1, 7}, {0, 3}));
    b7 = basic_conv(b, at + ".branch7x7x3_3", b7, conv(8, {7, 1}, {3, 0}));
    b7 = basic_conv(b, at + ".branch7x7x3_4", b7, conv(8, 3, 2));
    x = b.concat(at + ".concat", {b3, b7, b.max_pool(at + ".max_pool", x, pool(3, 2))});
  }
  {  // InceptionE: split branches concatenated twice
    const std::string at = "Mixed_7b";
    const zoo::tensor b1 = basic_conv(b, at + ".branch1x1", x, conv(16, 1));
    const zoo::tensor b3 = basic_conv(b, at + ".branch3x3_1", x, conv(12, 1));
    const zoo::tensor b3cat = b.concat(at + ".branch3x3_concat",
                                       {basic_conv(b, at + ".branch3x3_2a", b3, conv(12, {1, 3}, {0, 1})),
                                        basic_conv(b, at + ".branch3x3_2b", b3, conv(12, {3, 1}, {1, 0}))});
    zoo::tensor bd = basic_conv(b, at + ".branch3x3dbl_1", x, conv(12, 1));
    bd = basic_conv(b, at + ".branch3x3dbl_2", bd, conv(12, 3, 1, 1));
    const zoo::tensor bdcat = b.concat(at + ".branch3x3dbl_concat",
                                       {basic_conv(b, at + ".branch3x3dbl_3a", bd, conv(12, {1, 3}, {0, 1})),
                                        basic_conv(b, at + ".branch3x3dbl_3b", bd, conv(12, {3, 1}, {1, 0}))});
    const zoo::tensor bp = basic_conv(b, at + ".branch_pool", zoo::detail::avg_pool_3x3(b, at + ".avg_pool", x), conv(8, 1));
    x = b.concat(at + ".concat", {b1, b3cat, bdcat, bp});
  }
  x = b.dropout("dropout", b.adaptive_avg_pool("avgpool", x, 1, 1), 0.5);
  zoo::detail::classify(b, x, labels, o.classes, "fc");
  return std::move(b).build();
}

// DARTS_V2 cells (NetworkCIFAR), C = 4: three cells (a normal cell, both
// reductions) with the auxiliary head, or two (the reductions only, no head:
// small enough for the exact lower-set DP, which gives up on a normal cell).
inline graph reduced_darts(const reduced_options& o = {}, std::int64_t cells = 3) {
  zoo::network_builder b(cells == 3 ? "darts-reduced" : "darts-reduced-" + std::to_string(cells));
  zoo::nas_options n;
  n.cell = "darts";
  n.channels = 4;
  n.cells = cells;
  n.auxiliary = cells == 3;
  n.batch = o.batch;
  n.height = n.width = 32;
  n.classes = o.classes;
  zoo::write_nas_network(b, n);
  return std::move(b).build();
}

// U-Net with two levels of 4 and 8 channels on a 60×60 map: up-convolutions,
// cropped skips, the per-pixel loss (zoo::detail::unet itself).
inline graph reduced_unet(const reduced_options& o = {}) {
  zoo::network_builder b("unet-reduced");
  zoo::detail::unet(b, {o.batch, 60, 60, o.classes}, 4, 2);
  return std::move(b).build();
}

// PSPNet on a ResNet of one, one, two and one bottlenecks with a stem of 4
// channels on a 33×33 map: dilation, the pyramid (bins larger than the 5×5
// map included), bilinear upsampling with aligned corners, two per-pixel
// losses (zoo::detail::pspnet itself).
inline graph reduced_pspnet(const reduced_options& o = {}) {
  zoo::network_builder b("pspnet-reduced");
  zoo::detail::pspnet(b, {o.batch, 33, 33, o.classes}, {1, 1, 2, 1}, 4);
  return std::move(b).build();
}

/// The reduced network of a family: vgg, resnet, densenet, inception, darts,
/// darts-2 (two reduction cells), unet, pspnet.
inline graph reduced_model(std::string_view family, const reduced_options& o = {}) {
  if (family == "vgg") return reduced_vgg(o);
  if (family == "resnet") return reduced_resnet(o);
  if (family == "densenet") return reduced_densenet(o);
  if (family == "inception") return reduced_inception(o);
  if (family == "darts") return reduced_darts(o);
  if (family == "darts-2") return reduced_darts(o, 2);
  if (family == "unet") return reduced_unet(o);
  if (family == "pspnet") return reduced_pspnet(o);
  throw error("no reduced model for family '" + std::string(family) + "'");
}

inline const std::vector<std::string>& reduced_families() {
  static const std::vector<std::string> all{"vgg", "resnet", "densenet", "inception", "darts", "darts-2", "unet",
                                           "pspnet"};
  return all;
}

}  // namespace remat::test
