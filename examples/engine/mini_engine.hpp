#pragma once

// "mini": a small training engine with its own graph type and its own
// kernels, bound to remat (docs/engine-binding.md walks through it).
//
// mini knows nothing of remat. It has
// - a network of layers (input, labels, dense, relu, add, softmax cross
//   entropy) in creation order, each naming its operands;
// - parameters it owns (dense weights [in x out], then bias [out]);
// - host kernels, and (mini_cuda.cuh) device kernels of the same ops;
// - its own plain training step that keeps every value (reference_step).
//
// The binding is the rest of this file: an adapter (graph_view, costs) that
// turns a network into a remat::graph, and host_engine, which answers remat's
// forward and backward calls with mini's kernels.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <remat/graph/make_graph.hpp>
#include <remat/runtime/engine.hpp>

namespace mini {

// ---- the engine, as it exists ----------------------------------------------

enum class op : std::uint8_t { input, labels, dense, relu, add, softmax_cross_entropy };

struct layer {
  std::string name;
  mini::op op = op::input;
  std::vector<int> operands;
  int rows = 0;      // batch rows of the output
  int features = 0;  // per row (classes for labels' values; 1 for the loss)
};

class network {
 public:
  int input(std::string name, int rows, int features) { return push({std::move(name), op::input, {}, rows, features}); }
  int labels(std::string name, int rows, int classes) { return push({std::move(name), op::labels, {}, rows, classes}); }
  int dense(std::string name, int x, int features) {
    return push({std::move(name), op::dense, {x}, layers_.at(x).rows, features});
  }
  int relu(std::string name, int x) { return push({std::move(name), op::relu, {x}, layers_.at(x).rows, layers_[x].features}); }
  int add(std::string name, int a, int b) {
    if (layers_.at(a).rows != layers_.at(b).rows || layers_[a].features != layers_[b].features)
      throw std::invalid_argument("mini: add '" + name + "' of differently shaped operands");
    return push({std::move(name), op::add, {a, b}, layers_[a].rows, layers_[a].features});
  }
  int loss(std::string name, int logits, int labels) {
    if (layers_.at(labels).op != op::labels || layers_[labels].features != layers_.at(logits).features)
      throw std::invalid_argument("mini: loss '" + name + "' needs labels over its logits' classes");
    return push({std::move(name), op::softmax_cross_entropy, {logits, labels}, 1, 1});
  }

  const std::vector<layer>& layers() const noexcept { return layers_; }
  const layer& at(std::size_t i) const { return layers_.at(i); }
  std::size_t size() const noexcept { return layers_.size(); }

  // Elements of layer i's output.
  std::size_t elements(std::size_t i) const {
    return static_cast<std::size_t>(layers_[i].rows) * static_cast<std::size_t>(layers_[i].features);
  }
  int in_features(std::size_t i) const { return layers_[static_cast<std::size_t>(layers_[i].operands[0])].features; }
  std::size_t parameter_elements(std::size_t i) const {
    if (layers_[i].op != op::dense) return 0;
    return static_cast<std::size_t>(in_features(i) + 1) * static_cast<std::size_t>(layers_[i].features);
  }

  // Parameters of layer i: weights [in x out] then bias [out].
  std::vector<float>& parameters(std::size_t i) { return parameters_.at(i); }
  const std::vector<float>& parameters(std::size_t i) const { return parameters_.at(i); }

  // LeCun-uniform weights (variance 1/in: residual sums stay bounded), zero bias.
  void initialise(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    parameters_.assign(layers_.size(), {});
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      if (layers_[i].op != op::dense) continue;
      const int in = in_features(i);
      parameters_[i].assign(parameter_elements(i), 0.0f);
      std::uniform_real_distribution<float> w(-std::sqrt(3.0f / static_cast<float>(in)),
                                              std::sqrt(3.0f / static_cast<float>(in)));
      for (std::size_t k = 0; k < static_cast<std::size_t>(in) * static_cast<std::size_t>(layers_[i].features); ++k)
        parameters_[i][k] = w(rng);
    }
  }

 private:
  int push(layer l) {
    for (int o : l.operands)
      if (o < 0 || static_cast<std::size_t>(o) >= layers_.size())
        throw std::invalid_argument("mini: layer '" + l.name + "' reads an unknown layer");
    layers_.push_back(std::move(l));
    parameters_.emplace_back();
    return static_cast<int>(layers_.size()) - 1;
  }

  std::vector<layer> layers_;
  std::vector<std::vector<float>> parameters_;
};

// mini's host kernels. `accumulate` adds into the destination instead of
// overwriting it. Rows are the batch.
namespace host {

// y[r][o] = b[o] + sum_i x[r][i] w[i][o]
inline void dense_forward(int rows, int in, int out, const float* x, const float* w, float* y) {
  const float* b = w + static_cast<std::size_t>(in) * out;
  for (int r = 0; r < rows; ++r) {
    float* yr = y + static_cast<std::size_t>(r) * out;
    for (int o = 0; o < out; ++o) yr[o] = b[o];
    for (int i = 0; i < in; ++i) {
      const float xi = x[static_cast<std::size_t>(r) * in + i];
      const float* wi = w + static_cast<std::size_t>(i) * out;
      for (int o = 0; o < out; ++o) yr[o] += xi * wi[o];
    }
  }
}

// dx = dy wᵀ (written or added), dw = xᵀ dy, db = column sums of dy.
inline void dense_backward(int rows, int in, int out, const float* x, const float* w, const float* dy, float* dx,
                           bool accumulate, float* dw) {
  if (dx)
    for (int r = 0; r < rows; ++r)
      for (int i = 0; i < in; ++i) {
        const float* wi = w + static_cast<std::size_t>(i) * out;
        const float* dyr = dy + static_cast<std::size_t>(r) * out;
        float s = 0;
        for (int o = 0; o < out; ++o) s += dyr[o] * wi[o];
        float& d = dx[static_cast<std::size_t>(r) * in + i];
        d = accumulate ? d + s : s;
      }
  if (dw) {
    float* db = dw + static_cast<std::size_t>(in) * out;
    std::memset(dw, 0, sizeof(float) * static_cast<std::size_t>(in + 1) * static_cast<std::size_t>(out));
    for (int r = 0; r < rows; ++r) {
      const float* dyr = dy + static_cast<std::size_t>(r) * out;
      for (int i = 0; i < in; ++i) {
        const float xi = x[static_cast<std::size_t>(r) * in + i];
        float* dwi = dw + static_cast<std::size_t>(i) * out;
        for (int o = 0; o < out; ++o) dwi[o] += xi * dyr[o];
      }
      for (int o = 0; o < out; ++o) db[o] += dyr[o];
    }
  }
}

inline void relu_forward(std::size_t n, const float* x, float* y) {
  for (std::size_t k = 0; k < n; ++k) y[k] = x[k] > 0 ? x[k] : 0.0f;
}
// Reads its output: y > 0 exactly where x > 0.
inline void relu_backward(std::size_t n, const float* y, const float* dy, float* dx, bool accumulate) {
  for (std::size_t k = 0; k < n; ++k) {
    const float g = y[k] > 0 ? dy[k] : 0.0f;
    dx[k] = accumulate ? dx[k] + g : g;
  }
}

inline void add_forward(std::size_t n, const float* a, const float* b, float* y) {
  for (std::size_t k = 0; k < n; ++k) y[k] = a[k] + b[k];
}
inline void pass_gradient(std::size_t n, const float* dy, float* dx, bool accumulate) {
  for (std::size_t k = 0; k < n; ++k) dx[k] = accumulate ? dx[k] + dy[k] : dy[k];
}

// Row-wise softmax of logits into `probabilities`; returns the mean negative
// log-likelihood of the labels.
inline float softmax_cross_entropy_forward(int rows, int classes, const float* logits, const std::int32_t* labels,
                                           float* probabilities) {
  double total = 0;
  for (int r = 0; r < rows; ++r) {
    const float* z = logits + static_cast<std::size_t>(r) * classes;
    float* p = probabilities + static_cast<std::size_t>(r) * classes;
    float top = z[0];
    for (int c = 1; c < classes; ++c) top = std::max(top, z[c]);
    float sum = 0;
    for (int c = 0; c < classes; ++c) sum += (p[c] = std::exp(z[c] - top));
    for (int c = 0; c < classes; ++c) p[c] /= sum;
    total -= std::log(std::max(p[labels[r]], 1e-30f));
  }
  return static_cast<float>(total / rows);
}
// dz = seed * (softmax(z) - onehot(label)) / rows
inline void softmax_cross_entropy_backward(int rows, int classes, const float* logits, const std::int32_t* labels,
                                           float seed, float* probabilities, float* dz, bool accumulate) {
  (void)softmax_cross_entropy_forward(rows, classes, logits, labels, probabilities);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < classes; ++c) {
      const std::size_t k = static_cast<std::size_t>(r) * classes + c;
      const float g = seed * (probabilities[k] - (labels[r] == c ? 1.0f : 0.0f)) / static_cast<float>(rows);
      dz[k] = accumulate ? dz[k] + g : g;
    }
}

}  // namespace host

// The gradients of one plain training step, by layer (parameters), and its loss.
struct step_result {
  float loss = 0;
  std::vector<std::vector<float>> parameter_gradients;
};

// mini's own training step: every value kept, backward in reverse creation
// order. `data[i]` is layer i's value for inputs (floats) and labels (int32).
inline step_result reference_step(const network& net, const std::vector<const void*>& data) {
  const std::size_t n = net.size();
  std::vector<std::vector<float>> value(n), grad(n);
  step_result out;
  out.parameter_gradients.resize(n);
  auto x_of = [&](int i) { return net.at(static_cast<std::size_t>(i)).op == op::input ? static_cast<const float*>(data[static_cast<std::size_t>(i)]) : value[static_cast<std::size_t>(i)].data(); };
  for (std::size_t i = 0; i < n; ++i) {
    const layer& l = net.at(i);
    if (l.op == op::input || l.op == op::labels) continue;
    value[i].assign(net.elements(i), 0.0f);
    grad[i].assign(net.elements(i), 0.0f);
    switch (l.op) {
      case op::dense: host::dense_forward(l.rows, net.in_features(i), l.features, x_of(l.operands[0]), net.parameters(i).data(), value[i].data()); break;
      case op::relu: host::relu_forward(net.elements(i), x_of(l.operands[0]), value[i].data()); break;
      case op::add: host::add_forward(net.elements(i), x_of(l.operands[0]), x_of(l.operands[1]), value[i].data()); break;
      case op::softmax_cross_entropy: {
        const layer& z = net.at(static_cast<std::size_t>(l.operands[0]));
        std::vector<float> p(net.elements(static_cast<std::size_t>(l.operands[0])));
        value[i][0] = host::softmax_cross_entropy_forward(z.rows, z.features, x_of(l.operands[0]),
                                                          static_cast<const std::int32_t*>(data[static_cast<std::size_t>(l.operands[1])]), p.data());
        out.loss += value[i][0];
        grad[i][0] = 1.0f;
        break;
      }
      default: break;
    }
  }
  for (std::size_t i = n; i-- > 0;) {
    const layer& l = net.at(i);
    if (l.op == op::input || l.op == op::labels) continue;
    auto dx_of = [&](int k) { return net.at(static_cast<std::size_t>(k)).op == op::input || net.at(static_cast<std::size_t>(k)).op == op::labels ? nullptr : grad[static_cast<std::size_t>(k)].data(); };
    switch (l.op) {
      case op::dense:
        out.parameter_gradients[i].assign(net.parameter_elements(i), 0.0f);
        host::dense_backward(l.rows, net.in_features(i), l.features, x_of(l.operands[0]), net.parameters(i).data(),
                             grad[i].data(), dx_of(l.operands[0]), true, out.parameter_gradients[i].data());
        break;
      case op::relu:
        if (float* dx = dx_of(l.operands[0])) host::relu_backward(net.elements(i), value[i].data(), grad[i].data(), dx, true);
        break;
      case op::add:
        for (int k : l.operands)
          if (float* dx = dx_of(k)) host::pass_gradient(net.elements(i), grad[i].data(), dx, true);
        break;
      case op::softmax_cross_entropy: {
        const layer& z = net.at(static_cast<std::size_t>(l.operands[0]));
        std::vector<float> p(net.elements(static_cast<std::size_t>(l.operands[0])));
        if (float* dz = dx_of(l.operands[0]))
          host::softmax_cross_entropy_backward(z.rows, z.features, x_of(l.operands[0]),
                                               static_cast<const std::int32_t*>(data[static_cast<std::size_t>(l.operands[1])]),
                                               grad[i][0], p.data(), dz, true);
        break;
      }
      default: break;
    }
  }
  return out;
}

// SGD on every dense layer from gradients found by `gradient_of(layer)`.
template <class GradientOf>
void sgd(network& net, float rate, GradientOf gradient_of) {
  for (std::size_t i = 0; i < net.size(); ++i) {
    if (net.at(i).op != op::dense) continue;
    const float* g = gradient_of(i);
    std::vector<float>& p = net.parameters(i);
    for (std::size_t k = 0; k < p.size(); ++k) p[k] -= rate * g[k];
  }
}

// ---- the binding ----------------------------------------------------------

// remat's view of a network: dense ids (creation order), consumers and
// operands, found by argument-dependent lookup.
class graph_view {
 public:
  explicit graph_view(const network& net) : net_(net), consumers_(net.size()) {
    for (std::size_t i = 0; i < net.size(); ++i)
      for (int o : net.at(i).operands) consumers_[static_cast<std::size_t>(o)].push_back(i);
  }
  const network& net() const noexcept { return net_; }
  const std::vector<std::size_t>& consumers(std::size_t v) const { return consumers_[v]; }

 private:
  const network& net_;
  std::vector<std::vector<std::size_t>> consumers_;
};

inline std::size_t num_nodes(const graph_view& g) { return g.net().size(); }
inline const std::vector<std::size_t>& successors(const graph_view& g, std::size_t v) { return g.consumers(v); }
inline std::vector<std::size_t> predecessors(const graph_view& g, std::size_t v) {
  return {g.net().at(v).operands.begin(), g.net().at(v).operands.end()};
}

// Bytes from mini's shapes (f32 values, int32 labels); times from flop
// counts at a nominal rate; what each backward reads, as mini's kernels do.
struct costs {
  const network& net;
  std::uint64_t bytes(std::size_t v) const { return net.elements(v) * 4; }
  double time(std::size_t v) const {
    const layer& l = net.at(v);
    const double flops = l.op == op::dense ? 2.0 * static_cast<double>(net.elements(v)) * net.in_features(v)
                                           : static_cast<double>(net.elements(v));
    return flops * 1e-9;
  }
  std::uint64_t params(std::size_t v) const { return net.parameter_elements(v) * 4; }
  // The loss keeps its softmax in a workspace, in its forward and its backward.
  std::uint64_t workspace(std::size_t v) const {
    const layer& l = net.at(v);
    return l.op == op::softmax_cross_entropy ? net.elements(static_cast<std::size_t>(l.operands[0])) * 4 : 0;
  }
  remat::backward_reads reads(std::size_t v) const {
    switch (net.at(v).op) {
      case op::dense:
      case op::softmax_cross_entropy: return remat::backward_reads::inputs;
      case op::relu: return remat::backward_reads::output;
      default: return remat::backward_reads::none;
    }
  }
  std::string name(std::size_t v) const { return net.at(v).name; }
  std::string op(std::size_t v) const {
    switch (net.at(v).op) {
      case op::input:
      case op::labels: return "input";
      case op::dense: return "linear";
      case op::relu: return "relu";
      case op::add: return "add";
      case op::softmax_cross_entropy: return "cross_entropy";
    }
    return "op";
  }
};

inline remat::graph to_remat(const network& net, std::string name) {
  const graph_view view(net);
  return remat::make_graph(view, costs{net}, {.name = std::move(name)});
}

// The addresses of a network's inputs and labels by remat id, as the
// executors take them: data[i] is layer i's.
inline std::vector<const void*> input_values(const remat::graph& g, const std::vector<const void*>& data) {
  std::vector<const void*> out(g.size(), nullptr);
  for (remat::node_id v = 0; v < g.size(); ++v)
    if (g.is_input(v)) out[v] = data.at(g.original_index(v));
  return out;
}

// remat's forward and backward calls, answered with mini's host kernels.
class host_engine {
 public:
  explicit host_engine(const network& net) : net_(&net) {}

  // The loss of the last training step (from the loss's compute step).
  float loss() const noexcept { return loss_; }
  // Forward calls with `recompute` set, this step.
  std::size_t recomputes() const noexcept { return recomputes_; }
  void reset_counts() noexcept { recomputes_ = 0; }

  void forward(const remat::forward_call& f) {
    const network& net = *net_;
    const layer& l = net.at(f.original);
    const auto* x = static_cast<const float*>(f.inputs[0]);
    auto* y = static_cast<float*>(f.output);
    if (f.recompute) ++recomputes_;
    switch (l.op) {
      case op::dense:
        host::dense_forward(l.rows, net.in_features(f.original), l.features, x, net.parameters(f.original).data(), y);
        break;
      case op::relu: host::relu_forward(net.elements(f.original), x, y); break;
      case op::add: host::add_forward(net.elements(f.original), x, static_cast<const float*>(f.inputs[1]), y); break;
      case op::softmax_cross_entropy: {
        const layer& z = net.at(static_cast<std::size_t>(l.operands[0]));
        y[0] = host::softmax_cross_entropy_forward(z.rows, z.features, x, static_cast<const std::int32_t*>(f.inputs[1]),
                                                   static_cast<float*>(f.workspace));
        if (!f.recompute) loss_ = y[0];
        break;
      }
      default: throw std::logic_error("mini: remat asked to compute graph input '" + l.name + "'");
    }
  }

  void backward(const remat::backward_call& c) {
    const network& net = *net_;
    const layer& l = net.at(c.original);
    auto* dy = static_cast<float*>(c.output_gradient);
    if (c.seed) dy[0] = 1.0f;  // d loss / d loss
    auto dx = [&](std::size_t k) { return static_cast<float*>(c.input_gradients[k]); };
    auto adds = [&](std::size_t k) { return c.how[k] == remat::contribution::add; };
    switch (l.op) {
      case op::dense:
        host::dense_backward(l.rows, net.in_features(c.original), l.features, static_cast<const float*>(c.inputs[0]),
                             net.parameters(c.original).data(), dy, dx(0), adds(0),
                             static_cast<float*>(c.parameter_gradient));
        break;
      case op::relu:
        if (dx(0)) host::relu_backward(net.elements(c.original), static_cast<const float*>(c.output), dy, dx(0), adds(0));
        break;
      case op::add:
        for (std::size_t k = 0; k < 2; ++k)
          if (dx(k)) host::pass_gradient(net.elements(c.original), dy, dx(k), adds(k));
        break;
      case op::softmax_cross_entropy: {
        const layer& z = net.at(static_cast<std::size_t>(l.operands[0]));
        if (dx(0))
          host::softmax_cross_entropy_backward(z.rows, z.features, static_cast<const float*>(c.inputs[0]),
                                               static_cast<const std::int32_t*>(c.inputs[1]), dy[0],
                                               static_cast<float*>(c.workspace), dx(0), adds(0));
        break;
      }
      default: throw std::logic_error("mini: remat asked to differentiate graph input '" + l.name + "'");
    }
  }

 private:
  const network* net_;
  float loss_ = 0;
  std::size_t recomputes_ = 0;
};

static_assert(remat::engine<host_engine>);

// A residual MLP: input -> dense -> relu, then `blocks` of
// dense -> relu -> dense -> add(skip) -> relu, then a classifier and the loss.
inline network residual_mlp(int rows, int features, int width, int blocks, int classes) {
  network net;
  const int x = net.input("x", rows, features);
  const int y = net.labels("labels", rows, classes);
  int h = net.relu("stem.relu", net.dense("stem", x, width));
  for (int b = 0; b < blocks; ++b) {
    const std::string p = "block" + std::to_string(b) + ".";
    const int a = net.relu(p + "relu1", net.dense(p + "dense1", h, width));
    const int s = net.add(p + "add", net.dense(p + "dense2", a, width), h);
    h = net.relu(p + "relu2", s);
  }
  net.loss("loss", net.dense("classifier", h, classes), y);
  return net;
}

// A learnable batch: each row's features are its class's centre plus noise.
struct batch {
  std::vector<float> x;
  std::vector<std::int32_t> labels;
};
inline batch make_batch(int rows, int features, int classes, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.5f);
  std::uniform_int_distribution<int> pick(0, classes - 1);
  batch out;
  out.x.resize(static_cast<std::size_t>(rows) * static_cast<std::size_t>(features));
  out.labels.resize(static_cast<std::size_t>(rows));
  for (int r = 0; r < rows; ++r) {
    const int c = pick(rng);
    out.labels[static_cast<std::size_t>(r)] = c;
    for (int f = 0; f < features; ++f)
      out.x[static_cast<std::size_t>(r) * features + f] = (f % classes == c ? 2.0f : 0.0f) + noise(rng);
  }
  return out;
}

}  // namespace mini
