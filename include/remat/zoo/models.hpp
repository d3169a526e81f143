#pragma once

/// \file
/// The model zoo: the 18 networks of the Optimal Gradient Checkpointing
/// benchmark (Feng & Huang, CVPR 2021) as op-level graphs, at the batch and
/// input sizes of its table by default, and GoogLeNet, U-Net and PSPNet at
/// the sizes of Kusumoto et al.'s published graphs (batch 32 at 224², 8 at
/// 572², 1 at 713²).
///
/// The ImageNet models follow torchvision's definitions (torchvision/models/
/// alexnet.py, vgg.py, resnet.py, densenet.py, inception.py, googlenet.py) in training mode;
/// their parameter counts equal torchvision's `num_params` exactly. The CIFAR-10
/// models are DARTS-code-base `NetworkCIFAR`s (nas.hpp). Node names are the
/// PyTorch module paths; docs/zoo.md lists what was built and how it was checked.

#include <remat/config.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <remat/error.hpp>
#include <remat/graph/graph.hpp>
#include <remat/zoo/device.hpp>
#include <remat/zoo/nas.hpp>
#include <remat/zoo/network_builder.hpp>

namespace remat::zoo {

/// What the zoo knows about one model.
struct model_info {
  std::string name;    ///< "resnet50"
  std::string family;  ///< "resnet"
  std::int64_t batch = 0;   ///< default batch size (the OGC table's)
  std::int64_t height = 0;  ///< default input height
  std::int64_t width = 0;   ///< default input width
  std::int64_t classes = 0;
  std::uint64_t published_parameters = 0;  ///< the reference parameter count
  std::uint64_t published_rounding = 1;    ///< that count is given to the nearest multiple of this
  std::string counted;  ///< which parameters the published count includes
  std::string source;   ///< where the architecture and the count come from
};

/// How to build a model: zero sizes take the model's defaults.
struct build_options {
  std::int64_t batch = 0;
  std::int64_t height = 0;
  std::int64_t width = 0;
  dtype type = dtype::f32;     ///< f32, f16 or bf16 (values and parameters)
  std::string device = "h100"; ///< device profile for time estimates
};

namespace detail {

inline conv2d_options conv(std::int64_t out, std::int64_t kernel, std::int64_t stride = 1, std::int64_t padding = 0,
                           bool bias = false) {
  conv2d_options c;
  c.out_channels = out;
  c.kernel = {kernel, kernel};
  c.stride = {stride, stride};
  c.padding = {padding, padding};
  c.bias = bias;
  return c;
}

// An asymmetric kernel (Inception's 1×7, 7×1, 1×3, 3×1), stride 1, no bias.
inline conv2d_options conv(std::int64_t out, hw kernel, hw padding) {
  conv2d_options c;
  c.out_channels = out;
  c.kernel = kernel;
  c.padding = padding;
  return c;
}

inline pool_options pool(std::int64_t kernel, std::int64_t stride, std::int64_t padding = 0) {
  pool_options p;
  p.kernel = {kernel, kernel};
  p.stride = {stride, stride};
  p.padding = {padding, padding};
  return p;
}

struct model_sizes {
  std::int64_t batch, height, width, classes;
};

// Flattens pooled features, applies the classifier and the loss.
inline void classify(network_builder& b, const tensor& features, const tensor& labels, std::int64_t classes,
                     const std::string& fc) {
  tensor logits = b.linear(fc, b.flatten("flatten", features), classes);
  b.softmax_cross_entropy("loss", logits, labels);
}

inline void alexnet(network_builder& b, const model_sizes& s) {
  tensor x = b.input("input", {s.batch, 3, s.height, s.width});
  const tensor labels = b.labels("labels", s.batch);
  x = b.relu("features.1", b.conv2d("features.0", x, conv(64, 11, 4, 2, true)));
  x = b.max_pool("features.2", x, pool(3, 2));
  x = b.relu("features.4", b.conv2d("features.3", x, conv(192, 5, 1, 2, true)));
  x = b.max_pool("features.5", x, pool(3, 2));
  x = b.relu("features.7", b.conv2d("features.6", x, conv(384, 3, 1, 1, true)));
  x = b.relu("features.9", b.conv2d("features.8", x, conv(256, 3, 1, 1, true)));
  x = b.relu("features.11", b.conv2d("features.10", x, conv(256, 3, 1, 1, true)));
  x = b.max_pool("features.12", x, pool(3, 2));
  x = b.flatten("flatten", b.adaptive_avg_pool("avgpool", x, 6, 6));
  x = b.linear("classifier.1", b.dropout("classifier.0", x, 0.5), 4096);
  x = b.dropout("classifier.3", b.relu("classifier.2", x), 0.5);
  x = b.relu("classifier.5", b.linear("classifier.4", x, 4096));
  b.softmax_cross_entropy("loss", b.linear("classifier.6", x, s.classes), labels);
}

// torchvision's configurations A, B, D, E: channels, 0 for a 2×2 max pool.
inline void vgg(network_builder& b, const model_sizes& s, const std::vector<std::int64_t>& config) {
  tensor x = b.input("input", {s.batch, 3, s.height, s.width});
  const tensor labels = b.labels("labels", s.batch);
  int index = 0;
  for (std::int64_t channels : config) {
    const std::string at = "features." + std::to_string(index);
    if (channels == 0) {
      x = b.max_pool(at, x, pool(2, 2));
      index += 1;
    } else {
      x = b.conv2d(at, x, conv(channels, 3, 1, 1, true));
      x = b.relu("features." + std::to_string(index + 1), x);
      index += 2;
    }
  }
  x = b.flatten("flatten", b.adaptive_avg_pool("avgpool", x, 7, 7));
  x = b.relu("classifier.1", b.linear("classifier.0", x, 4096));
  x = b.linear("classifier.3", b.dropout("classifier.2", x, 0.5), 4096);
  x = b.dropout("classifier.5", b.relu("classifier.4", x), 0.5);
  b.softmax_cross_entropy("loss", b.linear("classifier.6", x, s.classes), labels);
}

// A 3×3 convolution whose padding keeps the map's size at stride 1.
inline conv2d_options dilated3x3(std::int64_t out, std::int64_t stride, std::int64_t dilation) {
  conv2d_options c = conv(out, 3, stride, dilation);
  c.dilation = {dilation, dilation};
  return c;
}

// BasicBlock (two 3×3) or Bottleneck (1×1, strided 3×3, 1×1 ×4: ResNet v1.5);
// `dilation` for the Bottleneck's 3×3, as torchvision's replace_stride_with_dilation.
inline tensor resnet_block(network_builder& b, const std::string& at, const tensor& x, std::int64_t planes,
                           std::int64_t stride, bool bottleneck, std::int64_t dilation = 1) {
  const std::int64_t expansion = bottleneck ? 4 : 1;
  tensor y;
  if (bottleneck) {
    y = b.relu(at + ".relu1", b.batch_norm(at + ".bn1", b.conv2d(at + ".conv1", x, conv(planes, 1))));
    y = b.relu(at + ".relu2",
               b.batch_norm(at + ".bn2", b.conv2d(at + ".conv2", y, dilated3x3(planes, stride, dilation))));
    y = b.batch_norm(at + ".bn3", b.conv2d(at + ".conv3", y, conv(planes * expansion, 1)));
  } else {
    y = b.relu(at + ".relu1", b.batch_norm(at + ".bn1", b.conv2d(at + ".conv1", x, conv(planes, 3, stride, 1))));
    y = b.batch_norm(at + ".bn2", b.conv2d(at + ".conv2", y, conv(planes, 3, 1, 1)));
  }
  tensor identity = x;
  if (stride != 1 || x.dims[1] != planes * expansion)
    identity = b.batch_norm(at + ".downsample.1",
                            b.conv2d(at + ".downsample.0", x, conv(planes * expansion, 1, stride)));
  return b.relu(at + ".relu_out", b.add(at + ".add", {y, identity}));
}

inline void resnet(network_builder& b, const model_sizes& s, const std::vector<int>& blocks, bool bottleneck) {
  tensor x = b.input("input", {s.batch, 3, s.height, s.width});
  const tensor labels = b.labels("labels", s.batch);
  x = b.relu("relu", b.batch_norm("bn1", b.conv2d("conv1", x, conv(64, 7, 2, 3))));
  x = b.max_pool("maxpool", x, pool(3, 2, 1));
  for (std::size_t stage = 0; stage < blocks.size(); ++stage) {
    const std::int64_t planes = std::int64_t{64} << stage;
    for (int i = 0; i < blocks[stage]; ++i)
      x = resnet_block(b, "layer" + std::to_string(stage + 1) + "." + std::to_string(i), x, planes,
                       stage > 0 && i == 0 ? 2 : 1, bottleneck);
  }
  classify(b, b.adaptive_avg_pool("avgpool", x, 1, 1), labels, s.classes, "fc");
}

// DenseNet-BC as torchvision builds it without memory_efficient: every dense
// layer concatenates all earlier feature maps of its block anew.
inline void densenet(network_builder& b, const model_sizes& s, std::int64_t growth, const std::vector<int>& blocks,
                     std::int64_t init_features) {
  const std::int64_t bn_size = 4;
  tensor x = b.input("input", {s.batch, 3, s.height, s.width});
  const tensor labels = b.labels("labels", s.batch);
  x = b.conv2d("features.conv0", x, conv(init_features, 7, 2, 3));
  x = b.relu("features.relu0", b.batch_norm("features.norm0", x));
  x = b.max_pool("features.pool0", x, pool(3, 2, 1));
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const std::string block = "features.denseblock" + std::to_string(i + 1);
    std::vector<tensor> features{x};
    for (int j = 1; j <= blocks[i]; ++j) {
      const std::string at = block + ".denselayer" + std::to_string(j);
      const tensor in = features.size() == 1 ? features[0] : b.concat(at + ".concat", features);
      tensor y = b.relu(at + ".relu1", b.batch_norm(at + ".norm1", in));
      y = b.conv2d(at + ".conv1", y, conv(bn_size * growth, 1));
      y = b.relu(at + ".relu2", b.batch_norm(at + ".norm2", y));
      features.push_back(b.conv2d(at + ".conv2", y, conv(growth, 3, 1, 1)));
    }
    x = b.concat(block + ".concat", features);
    if (i + 1 < blocks.size()) {
      const std::string at = "features.transition" + std::to_string(i + 1);
      x = b.relu(at + ".relu", b.batch_norm(at + ".norm", x));
      x = b.conv2d(at + ".conv", x, conv(x.dims[1] / 2, 1));
      x = b.avg_pool(at + ".pool", x, pool(2, 2));
    }
  }
  x = b.relu("relu", b.batch_norm("features.norm5", x));
  classify(b, b.adaptive_avg_pool("avgpool", x, 1, 1), labels, s.classes, "classifier");
}

// Inception v3's BasicConv2d: convolution without bias, batch norm (eps 0.001), ReLU.
inline tensor basic_conv(network_builder& b, const std::string& at, const tensor& x, const conv2d_options& c) {
  return b.relu(at + ".relu", b.batch_norm(at + ".bn", b.conv2d(at + ".conv", x, c), 0.001));
}

inline tensor avg_pool_3x3(network_builder& b, const std::string& at, const tensor& x) {
  return b.avg_pool(at, x, pool(3, 1, 1));
}

inline tensor inception_a(network_builder& b, const std::string& at, const tensor& x, std::int64_t pool_features) {
  const tensor b1 = basic_conv(b, at + ".branch1x1", x, conv(64, 1));
  tensor b5 = basic_conv(b, at + ".branch5x5_1", x, conv(48, 1));
  b5 = basic_conv(b, at + ".branch5x5_2", b5, conv(64, 5, 1, 2));
  tensor b3 = basic_conv(b, at + ".branch3x3dbl_1", x, conv(64, 1));
  b3 = basic_conv(b, at + ".branch3x3dbl_2", b3, conv(96, 3, 1, 1));
  b3 = basic_conv(b, at + ".branch3x3dbl_3", b3, conv(96, 3, 1, 1));
  const tensor bp = basic_conv(b, at + ".branch_pool", avg_pool_3x3(b, at + ".avg_pool", x), conv(pool_features, 1));
  return b.concat(at + ".concat", {b1, b5, b3, bp});
}

inline tensor inception_b(network_builder& b, const std::string& at, const tensor& x) {
  const tensor b3 = basic_conv(b, at + ".branch3x3", x, conv(384, 3, 2));
  tensor bd = basic_conv(b, at + ".branch3x3dbl_1", x, conv(64, 1));
  bd = basic_conv(b, at + ".branch3x3dbl_2", bd, conv(96, 3, 1, 1));
  bd = basic_conv(b, at + ".branch3x3dbl_3", bd, conv(96, 3, 2));
  const tensor bp = b.max_pool(at + ".max_pool", x, pool(3, 2));
  return b.concat(at + ".concat", {b3, bd, bp});
}

inline tensor inception_c(network_builder& b, const std::string& at, const tensor& x, std::int64_t c7) {
  const tensor b1 = basic_conv(b, at + ".branch1x1", x, conv(192, 1));
  tensor b7 = basic_conv(b, at + ".branch7x7_1", x, conv(c7, 1));
  b7 = basic_conv(b, at + ".branch7x7_2", b7, conv(c7, {1, 7}, {0, 3}));
  b7 = basic_conv(b, at + ".branch7x7_3", b7, conv(192, {7, 1}, {3, 0}));
  tensor bd = basic_conv(b, at + ".branch7x7dbl_1", x, conv(c7, 1));
  bd = basic_conv(b, at + ".branch7x7dbl_2", bd, conv(c7, {7, 1}, {3, 0}));
  bd = basic_conv(b, at + ".branch7x7dbl_3", bd, conv(c7, {1, 7}, {0, 3}));
  bd = basic_conv(b, at + ".branch7x7dbl_4", bd, conv(c7, {7, 1}, {3, 0}));
  bd = basic_conv(b, at + ".branch7x7dbl_5", bd, conv(192, {1, 7}, {0, 3}));
  const tensor bp = basic_conv(b, at + ".branch_pool", avg_pool_3x3(b, at + ".avg_pool", x), conv(192, 1));
  return b.concat(at + ".concat", {b1, b7, bd, bp});
}

inline tensor inception_d(network_builder& b, const std::string& at, const tensor& x) {
  tensor b3 = basic_conv(b, at + ".branch3x3_1", x, conv(192, 1));
  b3 = basic_conv(b, at + ".branch3x3_2", b3, conv(320, 3, 2));
  tensor b7 = basic_conv(b, at + ".branch7x7x3_1", x, conv(192, 1));
  b7 = basic_conv(b, at + ".branch7x7x3_2", b7, conv(192, {1, 7}, {0, 3}));
  b7 = basic_conv(b, at + ".branch7x7x3_3", b7, conv(192, {7, 1}, {3, 0}));
  b7 = basic_conv(b, at + ".branch7x7x3_4", b7, conv(192, 3, 2));
  const tensor bp = b.max_pool(at + ".max_pool", x, pool(3, 2));
  return b.concat(at + ".concat", {b3, b7, bp});
}

inline tensor inception_e(network_builder& b, const std::string& at, const tensor& x) {
  const tensor b1 = basic_conv(b, at + ".branch1x1", x, conv(320, 1));
  const tensor b3 = basic_conv(b, at + ".branch3x3_1", x, conv(384, 1));
  const tensor b3a = basic_conv(b, at + ".branch3x3_2a", b3, conv(384, {1, 3}, {0, 1}));
  const tensor b3b = basic_conv(b, at + ".branch3x3_2b", b3, conv(384, {3, 1}, {1, 0}));
  const tensor b3cat = b.concat(at + ".branch3x3_concat", {b3a, b3b});
  tensor bd = basic_conv(b, at + ".branch3x3dbl_1", x, conv(448, 1));
  bd = basic_conv(b, at + ".branch3x3dbl_2", bd, conv(384, 3, 1, 1));
  const tensor bda = basic_conv(b, at + ".branch3x3dbl_3a", bd, conv(384, {1, 3}, {0, 1}));
  const tensor bdb = basic_conv(b, at + ".branch3x3dbl_3b", bd, conv(384, {3, 1}, {1, 0}));
  const tensor bdcat = b.concat(at + ".branch3x3dbl_concat", {bda, bdb});
  const tensor bp = basic_conv(b, at + ".branch_pool", avg_pool_3x3(b, at + ".avg_pool", x), conv(192, 1));
  return b.concat(at + ".concat", {b1, b3cat, bdcat, bp});
}

// Inception v3 in training mode with its auxiliary classifier (loss weight 0.4,
// as PyTorch's fine-tuning tutorial weighs it); transform_input off.
inline void inception_v3(network_builder& b, const model_sizes& s) {
  tensor x = b.input("input", {s.batch, 3, s.height, s.width});
  const tensor labels = b.labels("labels", s.batch);
  x = basic_conv(b, "Conv2d_1a_3x3", x, conv(32, 3, 2));
  x = basic_conv(b, "Conv2d_2a_3x3", x, conv(32, 3));
  x = basic_conv(b, "Conv2d_2b_3x3", x, conv(64, 3, 1, 1));
  x = b.max_pool("maxpool1", x, pool(3, 2));
  x = basic_conv(b, "Conv2d_3b_1x1", x, conv(80, 1));
  x = basic_conv(b, "Conv2d_4a_3x3", x, conv(192, 3));
  x = b.max_pool("maxpool2", x, pool(3, 2));
  x = inception_a(b, "Mixed_5b", x, 32);
  x = inception_a(b, "Mixed_5c", x, 64);
  x = inception_a(b, "Mixed_5d", x, 64);
  x = inception_b(b, "Mixed_6a", x);
  x = inception_c(b, "Mixed_6b", x, 128);
  x = inception_c(b, "Mixed_6c", x, 160);
  x = inception_c(b, "Mixed_6d", x, 160);
  x = inception_c(b, "Mixed_6e", x, 192);
  tensor aux = b.avg_pool("AuxLogits.avg_pool", x, pool(5, 3));
  aux = basic_conv(b, "AuxLogits.conv0", aux, conv(128, 1));
  aux = basic_conv(b, "AuxLogits.conv1", aux, conv(768, 5));
  aux = b.flatten("AuxLogits.flatten", b.adaptive_avg_pool("AuxLogits.adaptive_avg_pool", aux, 1, 1));
  b.softmax_cross_entropy("aux_loss", b.linear("AuxLogits.fc", aux, s.classes), labels, 0.4);
  x = inception_d(b, "Mixed_7a", x);
  x = inception_e(b, "Mixed_7b", x);
  x = inception_e(b, "Mixed_7c", x);
  x = b.dropout("dropout", b.adaptive_avg_pool("avgpool", x, 1, 1), 0.5);
  classify(b, x, labels, s.classes, "fc");
}

// GoogLeNet's (Inception v1's) block as torchvision builds it: the "5×5"
// branch uses a 3×3 convolution (torchvision keeps that for its weights) and
// the pool branch a 3×3 max pool with ceil mode.
inline tensor inception_v1(network_builder& b, const std::string& at, const tensor& x, std::int64_t ch1x1,
                           std::int64_t ch3x3red, std::int64_t ch3x3, std::int64_t ch5x5red, std::int64_t ch5x5,
                           std::int64_t pool_proj) {
  const tensor b1 = basic_conv(b, at + ".branch1", x, conv(ch1x1, 1));
  tensor b2 = basic_conv(b, at + ".branch2.0", x, conv(ch3x3red, 1));
  b2 = basic_conv(b, at + ".branch2.1", b2, conv(ch3x3, 3, 1, 1));
  tensor b3 = basic_conv(b, at + ".branch3.0", x, conv(ch5x5red, 1));
  b3 = basic_conv(b, at + ".branch3.1", b3, conv(ch5x5, 3, 1, 1));
  pool_options p = pool(3, 1, 1);
  p.ceil_mode = true;
  const tensor b4 = basic_conv(b, at + ".branch4.1", b.max_pool(at + ".branch4.0", x, p), conv(pool_proj, 1));
  return b.concat(at + ".concat", {b1, b2, b3, b4});
}

// GoogLeNet's auxiliary classifier, its loss weighted 0.3 as in Szegedy et al.
inline void googlenet_aux(network_builder& b, const std::string& at, const std::string& loss, const tensor& x,
                          const tensor& labels, std::int64_t classes) {
  tensor a = basic_conv(b, at + ".conv", b.adaptive_avg_pool(at + ".avgpool", x, 4, 4), conv(128, 1));
  a = b.relu(at + ".relu", b.linear(at + ".fc1", b.flatten(at + ".flatten", a), 1024));
  a = b.linear(at + ".fc2", b.dropout(at + ".dropout", a, 0.7), classes);
  b.softmax_cross_entropy(loss, a, labels, 0.3);
}

// GoogLeNet (Inception v1) in training mode with both auxiliary classifiers;
// transform_input off.
inline void googlenet(network_builder& b, const model_sizes& s) {
  tensor x = b.input("input", {s.batch, 3, s.height, s.width});
  const tensor labels = b.labels("labels", s.batch);
  pool_options down = pool(3, 2);
  down.ceil_mode = true;
  x = basic_conv(b, "conv1", x, conv(64, 7, 2, 3));
  x = b.max_pool("maxpool1", x, down);
  x = basic_conv(b, "conv2", x, conv(64, 1));
  x = basic_conv(b, "conv3", x, conv(192, 3, 1, 1));
  x = b.max_pool("maxpool2", x, down);
  x = inception_v1(b, "inception3a", x, 64, 96, 128, 16, 32, 32);
  x = inception_v1(b, "inception3b", x, 128, 128, 192, 32, 96, 64);
  x = b.max_pool("maxpool3", x, down);
  x = inception_v1(b, "inception4a", x, 192, 96, 208, 16, 48, 64);
  googlenet_aux(b, "aux1", "aux1_loss", x, labels, s.classes);
  x = inception_v1(b, "inception4b", x, 160, 112, 224, 24, 64, 64);
  x = inception_v1(b, "inception4c", x, 128, 128, 256, 24, 64, 64);
  x = inception_v1(b, "inception4d", x, 112, 144, 288, 32, 64, 64);
  googlenet_aux(b, "aux2", "aux2_loss", x, labels, s.classes);
  x = inception_v1(b, "inception4e", x, 256, 160, 320, 32, 128, 128);
  pool_options last = pool(2, 2);
  last.ceil_mode = true;
  x = b.max_pool("maxpool4", x, last);
  x = inception_v1(b, "inception5a", x, 256, 160, 320, 32, 128, 128);
  x = inception_v1(b, "inception5b", x, 384, 192, 384, 48, 128, 128);
  x = b.dropout("dropout", b.adaptive_avg_pool("avgpool", x, 1, 1), 0.2);
  classify(b, x, labels, s.classes, "fc");
}

// Two valid 3×3 convolutions with bias, each followed by a ReLU (U-Net's step).
inline tensor unet_double(network_builder& b, const std::string& at, const tensor& x, std::int64_t channels) {
  const tensor y = b.relu(at + ".relu1", b.conv2d(at + ".conv1", x, conv(channels, 3, 1, 0, true)));
  return b.relu(at + ".relu2", b.conv2d(at + ".conv2", y, conv(channels, 3, 1, 0, true)));
}

// The centre of `skip` at `like`'s height and width (U-Net's crop before concatenation).
inline tensor centre_crop(network_builder& b, const std::string& at, const tensor& skip, const tensor& like) {
  const std::int64_t top = (skip.dims[2] - like.dims[2]) / 2, left = (skip.dims[3] - like.dims[3]) / 2;
  return b.slice(at, skip, {0, 0, top, left},
                 {skip.dims[0], skip.dims[1], top + like.dims[2], left + like.dims[3]});
}

// U-Net as Ronneberger et al. (2015) draw it: valid 3×3 convolutions, 2×2 max
// pools, 2×2 up-convolutions that halve the channels, cropped skip
// connections concatenated before the up-convolved map, dropout at the end of
// the contracting path, a 1×1 convolution to the classes and a per-pixel loss.
// `width` channels at the first level, doubling over `levels` levels (64 and 4 in the paper).
inline void unet(network_builder& b, const model_sizes& s, std::int64_t width = 64, int levels = 4) {
  tensor x = b.input("input", {s.batch, 1, s.height, s.width});
  std::vector<tensor> skips;
  for (int level = 1; level <= levels; ++level) {
    const std::string at = "down" + std::to_string(level);
    x = unet_double(b, at, x, width << (level - 1));
    skips.push_back(x);
    x = b.max_pool("pool" + std::to_string(level), x, pool(2, 2));
  }
  x = b.dropout("bottom.dropout", unet_double(b, "bottom", x, width << levels), 0.5);
  for (int level = levels; level >= 1; --level) {
    const std::string at = "up" + std::to_string(level);
    const std::int64_t channels = width << (level - 1);
    conv_transpose2d_options up;
    up.out_channels = channels;
    up.kernel = {2, 2};
    up.stride = {2, 2};
    up.bias = true;
    const tensor upsampled = b.conv_transpose2d(at + ".upconv", x, up);
    const tensor skip = centre_crop(b, at + ".crop", skips[static_cast<std::size_t>(level - 1)], upsampled);
    x = unet_double(b, at, b.concat(at + ".concat", {skip, upsampled}), channels);
  }
  const tensor logits = b.conv2d("head", x, conv(s.classes, 1, 1, 0, true));
  b.softmax_cross_entropy("loss", logits, b.labels("labels", {s.batch, logits.dims[2], logits.dims[3]}));
}

// PSPNet (Zhao et al., 2017) as the authors' PyTorch code (hszhao/semseg)
// builds it, on torchvision's ResNet-101 with the strides of layer3 and layer4
// replaced by dilation (output stride 8): a pyramid pooling module over bins
// 1, 2, 3 and 6, a 3×3 head, bilinear upsampling to the input, and an
// auxiliary head on layer3 weighted 0.4. Two changes: dropout is element-wise,
// and the 1×1 bin's convolution has a bias instead of a batch norm, which at
// batch 1 would normalise a single value per channel (PyTorch refuses that).
// `blocks` per ResNet stage ({3, 4, 23, 3}: ResNet-101) and the stem's
// `width` (64), which sets every other width in proportion.
inline void pspnet(network_builder& b, const model_sizes& s, const std::vector<int>& blocks, std::int64_t width = 64) {
  tensor x = b.input("input", {s.batch, 3, s.height, s.width});
  const tensor labels = b.labels("labels", {s.batch, s.height, s.width});
  x = b.relu("backbone.relu", b.batch_norm("backbone.bn1", b.conv2d("backbone.conv1", x, conv(width, 7, 2, 3))));
  x = b.max_pool("backbone.maxpool", x, pool(3, 2, 1));
  tensor layer3;
  std::int64_t dilation = 1;
  for (std::size_t stage = 0; stage < blocks.size(); ++stage) {
    const std::int64_t planes = width << stage;
    const std::int64_t previous = dilation;
    if (stage >= 2) dilation *= 2;
    for (int i = 0; i < blocks[stage]; ++i)
      x = resnet_block(b, "backbone.layer" + std::to_string(stage + 1) + "." + std::to_string(i), x, planes,
                       stage == 1 && i == 0 ? 2 : 1, true, i == 0 ? previous : dilation);
    if (stage == 2) layer3 = x;
  }
  const std::int64_t h = x.dims[2], w = x.dims[3];
  std::vector<tensor> pyramid{x};
  const std::int64_t bins[] = {1, 2, 3, 6};
  for (std::size_t i = 0; i < 4; ++i) {
    const std::string at = "ppm.features." + std::to_string(i);
    tensor y = b.adaptive_avg_pool(at + ".0", x, bins[i], bins[i]);
    y = bins[i] == 1 ? b.conv2d(at + ".1", y, conv(8 * width, 1, 1, 0, true))
                     : b.batch_norm(at + ".2", b.conv2d(at + ".1", y, conv(8 * width, 1)));
    y = b.relu(at + ".3", y);
    pyramid.push_back(b.upsample_bilinear(at + ".upsample", y, h, w, true));
  }
  tensor y = b.concat("ppm.concat", pyramid);
  y = b.relu("cls.2", b.batch_norm("cls.1", b.conv2d("cls.0", y, conv(8 * width, 3, 1, 1))));
  y = b.conv2d("cls.4", b.dropout("cls.3", y, 0.1), conv(s.classes, 1, 1, 0, true));
  y = b.upsample_bilinear("upsample", y, s.height, s.width, true);
  b.softmax_cross_entropy("loss", y, labels);
  tensor a = b.relu("aux.2", b.batch_norm("aux.1", b.conv2d("aux.0", layer3, conv(4 * width, 3, 1, 1))));
  a = b.conv2d("aux.4", b.dropout("aux.3", a, 0.1), conv(s.classes, 1, 1, 0, true));
  a = b.upsample_bilinear("aux.upsample", a, s.height, s.width, true);
  b.softmax_cross_entropy("aux_loss", a, labels, 0.4);
}

inline void nas_cifar(network_builder& b, const model_sizes& s, const char* cell, std::int64_t cells) {
  nas_options o;
  o.cell = cell;
  o.channels = 36;
  o.cells = cells;
  o.auxiliary = true;
  o.batch = s.batch;
  o.height = s.height;
  o.width = s.width;
  o.classes = s.classes;
  write_nas_network(b, o);
}

struct model_entry {
  model_info info;
  void (*write)(network_builder&, const model_sizes&);
};

inline model_info describe(std::string name, std::string family, std::int64_t batch, std::int64_t size,
                           std::int64_t classes, std::uint64_t published, std::uint64_t rounding, std::string counted,
                           std::string source) {
  model_info m;
  m.name = std::move(name);
  m.family = std::move(family);
  m.batch = batch;
  m.height = size;
  m.width = size;
  m.classes = classes;
  m.published_parameters = published;
  m.published_rounding = rounding;
  m.counted = std::move(counted);
  m.source = std::move(source);
  return m;
}

inline const std::vector<model_entry>& registry() {
  using b_t = network_builder;
  using s_t = model_sizes;
  static const std::vector<model_entry> all = [] {
    const std::string all_params = "all parameters";
    const std::string tv = "torchvision.models.";
    // DARTS' width C = 36 throughout; the depth is the one at which DARTS'
    // port of each genotype has the paper's parameter count (docs/zoo.md).
    const std::string nas_counted = "all parameters except the auxiliary head (as DARTS' count_parameters_in_MB)";
    std::vector<model_entry> m;
    m.push_back({describe("alexnet", "alexnet", 1024, 224, 1000, 61100840, 1, all_params, tv + "alexnet"),
                 [](b_t& b, const s_t& s) { alexnet(b, s); }});
    m.push_back({describe("vgg11", "vgg", 64, 224, 1000, 132863336, 1, all_params, tv + "vgg11 (no batch norm)"),
                 [](b_t& b, const s_t& s) { vgg(b, s, {64, 0, 128, 0, 256, 256, 0, 512, 512, 0, 512, 512, 0}); }});
    m.push_back({describe("vgg13", "vgg", 64, 224, 1000, 133047848, 1, all_params, tv + "vgg13 (no batch norm)"),
                 [](b_t& b, const s_t& s) {
                   vgg(b, s, {64, 64, 0, 128, 128, 0, 256, 256, 0, 512, 512, 0, 512, 512, 0});
                 }});
    m.push_back({describe("vgg16", "vgg", 64, 224, 1000, 138357544, 1, all_params, tv + "vgg16 (no batch norm)"),
                 [](b_t& b, const s_t& s) {
                   vgg(b, s, {64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0, 512, 512, 512, 0});
                 }});
    m.push_back({describe("vgg19", "vgg", 64, 224, 1000, 143667240, 1, all_params, tv + "vgg19 (no batch norm)"),
                 [](b_t& b, const s_t& s) {
                   vgg(b, s, {64, 64, 0, 128, 128, 0, 256, 256, 256, 256, 0, 512, 512, 512, 512, 0, 512, 512, 512, 512, 0});
                 }});
    m.push_back({describe("resnet18", "resnet", 256, 224, 1000, 11689512, 1, all_params, tv + "resnet18"),
                 [](b_t& b, const s_t& s) { resnet(b, s, {2, 2, 2, 2}, false); }});
    m.push_back({describe("resnet34", "resnet", 128, 224, 1000, 21797672, 1, all_params, tv + "resnet34"),
                 [](b_t& b, const s_t& s) { resnet(b, s, {3, 4, 6, 3}, false); }});
    m.push_back({describe("resnet50", "resnet", 64, 224, 1000, 25557032, 1, all_params, tv + "resnet50 (v1.5)"),
                 [](b_t& b, const s_t& s) { resnet(b, s, {3, 4, 6, 3}, true); }});
    m.push_back({describe("resnet101", "resnet", 32, 224, 1000, 44549160, 1, all_params, tv + "resnet101 (v1.5)"),
                 [](b_t& b, const s_t& s) { resnet(b, s, {3, 4, 23, 3}, true); }});
    m.push_back({describe("resnet152", "resnet", 16, 224, 1000, 60192808, 1, all_params, tv + "resnet152 (v1.5)"),
                 [](b_t& b, const s_t& s) { resnet(b, s, {3, 8, 36, 3}, true); }});
    m.push_back({describe("densenet121", "densenet", 32, 224, 1000, 7978856, 1, all_params, tv + "densenet121"),
                 [](b_t& b, const s_t& s) { densenet(b, s, 32, {6, 12, 24, 16}, 64); }});
    m.push_back({describe("densenet161", "densenet", 16, 224, 1000, 28681000, 1, all_params, tv + "densenet161"),
                 [](b_t& b, const s_t& s) { densenet(b, s, 48, {6, 12, 36, 24}, 96); }});
    m.push_back({describe("densenet169", "densenet", 32, 224, 1000, 14149480, 1, all_params, tv + "densenet169"),
                 [](b_t& b, const s_t& s) { densenet(b, s, 32, {6, 12, 32, 32}, 64); }});
    m.push_back({describe("densenet201", "densenet", 16, 224, 1000, 20013928, 1, all_params, tv + "densenet201"),
                 [](b_t& b, const s_t& s) { densenet(b, s, 32, {6, 12, 48, 32}, 64); }});
    m.push_back({describe("inception-v3", "inception", 32, 300, 1000, 27161264, 1,
                          "all parameters, auxiliary classifier included",
                          tv + "inception_v3 (training mode, aux_logits=True)"),
                 [](b_t& b, const s_t& s) { inception_v3(b, s); }});
    m.push_back({describe("nasnet-cifar10", "nasnet", 64, 32, 10, 3300000, 100000, nas_counted,
                          "DARTS NetworkCIFAR, genotype NASNet, C=36, 18 cells, auxiliary head; NASNet-A 3.3M"),
                 [](b_t& b, const s_t& s) { nas_cifar(b, s, "nasnet", 18); }});
    m.push_back({describe("amoebanet-cifar10", "amoebanet", 64, 32, 10, 3200000, 100000, nas_counted,
                          "DARTS NetworkCIFAR, genotype AmoebaNet, C=36, 21 cells, auxiliary head; AmoebaNet-A 3.2M"),
                 [](b_t& b, const s_t& s) { nas_cifar(b, s, "amoebanet", 21); }});
    m.push_back({describe("darts-cifar10", "darts", 64, 32, 10, 3300000, 100000, nas_counted,
                          "DARTS NetworkCIFAR, genotype DARTS_V2, C=36, 20 cells, auxiliary head; DARTS 3.3M"),
                 [](b_t& b, const s_t& s) { nas_cifar(b, s, "darts", 20); }});
    // Kusumoto et al.'s networks beside the OGC table, at their published graphs' sizes.
    m.push_back({describe("googlenet", "inception", 32, 224, 1000, 13004888, 1,
                          "all parameters, both auxiliary classifiers included",
                          tv + "googlenet (training mode, aux_logits=True); Kusumoto et al.'s GoogLeNet, batch 32"),
                 [](b_t& b, const s_t& s) { googlenet(b, s); }});
    // Neither paper counts parameters: the counts are those of the PyTorch
    // modules bench/pytorch_baseline.py checks the graphs against.
    m.push_back({describe("unet", "unet", 8, 572, 2, 31030658, 1, all_params,
                          "U-Net of Ronneberger et al. (2015, Fig. 1), one input channel, two classes; "
                          "Kusumoto et al.'s U-Net, batch 8"),
                 [](b_t& b, const s_t& s) { unet(b, s); }});
    m.push_back({describe("pspnet", "pspnet", 1, 713, 19, 67947878, 1, "all parameters, auxiliary head included",
                          "PSPNet of Zhao et al. (2017; hszhao/semseg) on torchvision.models.resnet101 with "
                          "dilation, 19 classes (Cityscapes); Kusumoto et al.'s PSPNet, batch 1"),
                 [](b_t& b, const s_t& s) { pspnet(b, s, {3, 4, 23, 3}); }});
    return m;
  }();
  return all;
}

inline const model_entry& find_entry(std::string_view name) {
  for (const model_entry& e : registry())
    if (e.info.name == name) return e;
  std::string known;
  for (const model_entry& e : registry()) known += (known.empty() ? "" : ", ") + e.info.name;
  throw error("unknown model '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace detail

/// The zoo's models: the OGC table's, in its order, then GoogLeNet, U-Net and PSPNet.
inline const std::vector<model_info>& models() {
  static const std::vector<model_info> all = [] {
    std::vector<model_info> out;
    for (const detail::model_entry& e : detail::registry()) out.push_back(e.info);
    return out;
  }();
  return all;
}

/// The model called `name`. \throws remat::error listing the known models.
inline const model_info& find_model(std::string_view name) { return detail::find_entry(name).info; }

/// Builds model `name` as a training graph (inputs `input` and `labels`, loss
/// `loss`, and `aux_loss` for models with an auxiliary classifier, `aux1_loss`
/// and `aux2_loss` for GoogLeNet's two), named
/// after the model. \throws remat::error for an unknown model, device or an
/// input too small for the network, naming the node.
/// Complexity: linear in the number of nodes (a few thousand at most).
inline graph build(std::string_view name, const build_options& options = {}) {
  const detail::model_entry& e = detail::find_entry(name);
  if (options.batch < 0 || options.height < 0 || options.width < 0)
    throw error("batch and image sizes must be positive");
  detail::model_sizes s{options.batch ? options.batch : e.info.batch, options.height ? options.height : e.info.height,
                        options.width ? options.width : e.info.width, e.info.classes};
  network_builder b(e.info.name, options.type, profile(options.device));
  e.write(b, s);
  return std::move(b).build();
}

}  // namespace remat::zoo
