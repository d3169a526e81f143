#pragma once

// Graphs shaped like the seed networks (op-level conv/bn/relu blocks), for
// solver tests and benchmarks before and beside the model zoo.

#include <cstdint>
#include <string>
#include <vector>

#include <remat/graph/graph.hpp>

namespace remat::test {

class shape_builder {
 public:
  explicit shape_builder(std::string name) : b_(std::move(name)) {
    node_spec x;
    x.name = "input";
    x.op = "input";
    x.bytes = 1 << 20;
    b_.add(x);
  }
  std::size_t op(const std::string& op, std::vector<std::size_t> inputs, std::uint64_t bytes, double time,
                 std::uint64_t params = 0) {
    node_spec s;
    s.name = op + std::to_string(b_.size());
    s.op = op;
    s.inputs = std::move(inputs);
    s.bytes = bytes;
    s.time = time;
    s.params = params;
    s.reads = default_backward_reads(op);
    return b_.add(std::move(s));
  }
  // conv -> batch_norm -> relu
  std::size_t cbr(std::size_t in, std::uint64_t bytes, double time) {
    return op("relu", {op("batch_norm", {op("conv2d", {in}, bytes, time, 4096)}, bytes, time / 10, 64)}, bytes, time / 20);
  }
  graph finish(std::size_t last) {
    op("softmax_cross_entropy", {last}, 4, 1e-6);
    return std::move(b_).build();
  }

 private:
  graph_builder b_;
};

// ResNet-like: `blocks` bottleneck blocks (3 conv-bn(-relu) + add + relu), a
// strided projection shortcut every `stride_every` blocks.
inline graph resnet_like(std::size_t blocks, std::size_t stride_every = 8) {
  shape_builder s("resnet-like-" + std::to_string(blocks));
  std::uint64_t bytes = 64 << 20;
  std::size_t x = s.cbr(0, bytes, 1e-3);
  for (std::size_t b = 0; b < blocks; ++b) {
    const bool down = b > 0 && b % stride_every == 0;
    if (down) bytes /= 2;
    std::size_t h = s.cbr(x, bytes / 4, 2e-4);
    h = s.cbr(h, bytes / 4, 4e-4);
    h = s.op("batch_norm", {s.op("conv2d", {h}, bytes, 2e-4, 4096)}, bytes, 2e-5, 64);
    std::size_t skip = x;
    if (down) skip = s.op("batch_norm", {s.op("conv2d", {x}, bytes, 2e-4, 4096)}, bytes, 2e-5, 64);
    x = s.op("relu", {s.op("add", {h, skip}, bytes, 1e-5)}, bytes, 1e-5);
  }
  return s.finish(x);
}

// DenseNet-like: each layer concatenates every earlier output of its block.
inline graph densenet_like(std::size_t blocks, std::size_t layers_per_block) {
  shape_builder s("densenet-like");
  std::uint64_t growth = 4 << 20;
  std::size_t x = s.cbr(0, 16 * growth, 1e-3);
  for (std::size_t b = 0; b < blocks; ++b) {
    std::vector<std::size_t> features{x};
    for (std::size_t l = 0; l < layers_per_block; ++l) {
      const std::size_t cat = s.op("concat", features, growth * (features.size() + 4), 1e-5);
      std::size_t h = s.op("relu", {s.op("batch_norm", {cat}, growth * (features.size() + 4), 1e-5, 64)},
                           growth * (features.size() + 4), 1e-5);
      h = s.cbr(h, 4 * growth, 1e-4);
      features.push_back(s.op("conv2d", {h}, growth, 2e-4, 4096));
    }
    x = s.op("concat", features, growth * features.size(), 1e-5);
    x = s.op("avg_pool", {s.cbr(x, growth * features.size() / 2, 1e-4)}, growth * features.size() / 8, 1e-5);
  }
  return s.finish(x);
}

// Inception-like: blocks of four parallel branches of 1, 2, 3 conv-bn-relu and a pool branch.
inline graph inception_like(std::size_t blocks) {
  shape_builder s("inception-like");
  std::uint64_t bytes = 16 << 20;
  std::size_t x = s.cbr(0, 4 * bytes, 1e-3);
  for (std::size_t b = 0; b < blocks; ++b) {
    std::vector<std::size_t> outs;
    for (std::size_t depth = 1; depth <= 3; ++depth) {
      std::size_t h = x;
      for (std::size_t k = 0; k < depth; ++k) h = s.cbr(h, bytes, 2e-4);
      outs.push_back(h);
    }
    outs.push_back(s.cbr(s.op("avg_pool", {x}, 4 * bytes, 1e-5), bytes, 1e-4));
    x = s.op("concat", outs, 4 * bytes, 1e-5);
  }
  return s.finish(x);
}

// PSPNet-like: a ResNet-like backbone, then a pyramid pooling module (four
// parallel pool -> conv-bn-relu -> upsample branches) concatenated with the
// backbone features, and a conv-bn-relu head.
inline graph pspnet_like(std::size_t blocks) {
  shape_builder s("pspnet-like-" + std::to_string(blocks));
  std::uint64_t bytes = 64 << 20;
  std::size_t x = s.cbr(0, bytes, 1e-3);
  for (std::size_t b = 0; b < blocks; ++b) {
    std::size_t h = s.cbr(s.cbr(x, bytes / 4, 2e-4), bytes / 4, 4e-4);
    h = s.op("batch_norm", {s.op("conv2d", {h}, bytes, 2e-4, 4096)}, bytes, 2e-5, 64);
    x = s.op("relu", {s.op("add", {h, x}, bytes, 1e-5)}, bytes, 1e-5);
  }
  std::vector<std::size_t> pyramid{x};
  for (std::uint64_t scale : {1, 2, 3, 6}) {
    const std::size_t pooled = s.op("adaptive_avg_pool", {x}, scale * scale * (1 << 14), 1e-5);
    pyramid.push_back(s.op("upsample", {s.cbr(pooled, scale * scale * (1 << 12), 1e-5)}, bytes / 4, 1e-4));
  }
  x = s.op("concat", pyramid, 2 * bytes, 1e-5);
  return s.finish(s.cbr(x, bytes / 4, 4e-4));
}

}  // namespace remat::test
