#pragma once

/// \file
/// Graph generators for scale: chains, random layered DAGs, stacks of NAS
/// cells and Transformer block stacks. Each is a deterministic function of its
/// options (random choices come from std::mt19937_64, whose output the C++
/// standard fixes, turned into numbers by this file's own arithmetic), and
/// each node carries the same attributes, bytes and roofline times as the
/// zoo's models (network_builder.hpp).

#include <remat/config.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <remat/error.hpp>
#include <remat/graph/graph.hpp>
#include <remat/zoo/device.hpp>
#include <remat/zoo/nas.hpp>
#include <remat/zoo/network_builder.hpp>

namespace remat::zoo {

/// A chain: input → linear → relu → linear → relu → ... (`length` ops), no loss.
struct chain_options {
  std::int64_t length = 100;       ///< computed nodes
  std::int64_t batch = 64;
  std::int64_t features = 1024;    ///< width of the input and, for a uniform chain, of every op
  std::int64_t max_features = 0;   ///< above `features`: each linear's width is drawn from [features, max_features]
  std::uint64_t seed = 0;          ///< for the drawn widths
  dtype type = dtype::f32;
  std::string device = "h100";
};

/// A random layered DAG: `layers` layers of `width` nodes after the input.
/// Node j of layer l takes each node of layer l - d as an operand with
/// probability density^d (at least one from layer l - 1). One operand makes a
/// `linear` or a `relu` (even odds), several an `add`; the sinks are summed
/// into a softmax cross-entropy loss.
struct random_dag_options {
  std::int64_t layers = 10;
  std::int64_t width = 4;
  double density = 0.5;            ///< in (0, 1]
  std::uint64_t seed = 0;
  std::int64_t batch = 64;
  std::int64_t features = 1024;    ///< every node's output is batch × features
  dtype type = dtype::f32;
  std::string device = "h100";
};

/// A NetworkCIFAR stack of any number of cells (nas.hpp).
struct nas_stack_options {
  nas_options network;             ///< cells, genotype, width C, sizes, auxiliary head
  dtype type = dtype::f32;
  std::string device = "h100";
};

/// A stack of pre-norm Transformer blocks over token embeddings, with a
/// per-token classifier and loss: each block is
/// x + proj(attention(ln_1(x))), then x + mlp(ln_2(x)) with a GELU MLP.
struct transformer_options {
  std::int64_t layers = 12;
  std::int64_t batch = 8;
  std::int64_t sequence = 512;
  std::int64_t hidden = 768;
  std::int64_t heads = 12;         ///< must divide hidden
  std::int64_t mlp_ratio = 4;
  std::int64_t classes = 1000;     ///< per-token classes of the head
  double dropout = 0.1;            ///< 0 leaves the dropout nodes out
  dtype type = dtype::f32;
  std::string device = "h100";
};

namespace detail {

// A uniform double in [0, 1) from the top 53 bits.
inline double unit(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

inline std::int64_t pick(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi) {
  return lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
}

inline void require_positive(std::int64_t value, const char* what) {
  if (value < 1) throw error(std::string(what) + " must be at least 1, got " + std::to_string(value));
}

}  // namespace detail

/// \throws remat::error on a size below 1 or max_features below features.
/// Complexity: O(length).
inline graph chain(const chain_options& o) {
  detail::require_positive(o.length, "length");
  detail::require_positive(o.batch, "batch");
  detail::require_positive(o.features, "features");
  if (o.max_features != 0 && o.max_features < o.features)
    throw error("max_features (" + std::to_string(o.max_features) + ") is below features (" +
                std::to_string(o.features) + ")");
  const bool uniform = o.max_features == 0 || o.max_features == o.features;
  std::mt19937_64 rng(o.seed);
  network_builder b(uniform ? "chain" : "chain-heterogeneous", o.type, profile(o.device));
  tensor x = b.input("input", {o.batch, o.features});
  for (std::int64_t k = 0; k < o.length; ++k) {
    const std::string at = "layers." + std::to_string(k / 2);
    if (k % 2 == 0)
      x = b.linear(at + ".fc", x, uniform ? o.features : detail::pick(rng, o.features, o.max_features));
    else
      x = b.relu(at + ".relu", x);
  }
  return std::move(b).build();
}

/// \throws remat::error on a size below 1 or a density outside (0, 1].
/// Complexity: O(layers² · width²) edge draws.
inline graph random_dag(const random_dag_options& o) {
  detail::require_positive(o.layers, "layers");
  detail::require_positive(o.width, "width");
  detail::require_positive(o.batch, "batch");
  detail::require_positive(o.features, "features");
  if (!(o.density > 0 && o.density <= 1)) throw error("density must be in (0, 1], got " + std::to_string(o.density));
  std::mt19937_64 rng(o.seed);
  network_builder b("random-dag", o.type, profile(o.device));
  const tensor input = b.input("input", {o.batch, o.features});
  const tensor labels = b.labels("labels", o.batch);
  std::vector<std::vector<tensor>> layer{{input}};
  std::vector<std::vector<bool>> consumed{{false}};
  for (std::int64_t l = 1; l <= o.layers; ++l) {
    std::vector<tensor> current;
    for (std::int64_t j = 0; j < o.width; ++j) {
      std::vector<tensor> operands;
      std::vector<std::pair<std::size_t, std::size_t>> from;
      double p = o.density;
      for (std::size_t k = layer.size(); k-- > 0; p *= o.density)
        for (std::size_t i = 0; i < layer[k].size(); ++i)
          if (detail::unit(rng) < p) from.emplace_back(k, i);
      const std::size_t last = layer.size() - 1;
      bool from_last = false;
      for (const auto& [k, i] : from) from_last = from_last || k == last;
      if (!from_last) from.emplace_back(last, static_cast<std::size_t>(detail::pick(rng, 0, static_cast<std::int64_t>(layer[last].size()) - 1)));
      for (const auto& [k, i] : from) {
        operands.push_back(layer[k][i]);
        consumed[k][i] = true;
      }
      const std::string name = "nodes." + std::to_string(l) + "." + std::to_string(j);
      if (operands.size() > 1)
        current.push_back(b.add(name + ".add", operands));
      else if (detail::unit(rng) < 0.5)
        current.push_back(b.linear(name + ".fc", operands[0], o.features));
      else
        current.push_back(b.relu(name + ".relu", operands[0]));
    }
    layer.push_back(std::move(current));
    consumed.emplace_back(static_cast<std::size_t>(o.width), false);
  }
  std::vector<tensor> sinks;
  for (std::size_t k = 1; k < layer.size(); ++k)
    for (std::size_t i = 0; i < layer[k].size(); ++i)
      if (!consumed[k][i]) sinks.push_back(layer[k][i]);
  const tensor out = sinks.size() == 1 ? sinks[0] : b.add("sum", sinks);
  b.softmax_cross_entropy("loss", out, labels);
  return std::move(b).build();
}

/// \throws remat::error as write_nas_network does. Complexity: O(cells); a
/// 10⁵-node stack takes about a second.
inline graph nas_stack(const nas_stack_options& o) {
  network_builder b("nas-" + o.network.cell + "-" + std::to_string(o.network.cells), o.type, profile(o.device));
  write_nas_network(b, o.network);
  return std::move(b).build();
}

/// \throws remat::error on a size below 1 or heads not dividing hidden.
/// Complexity: O(layers), about 26 nodes per block.
inline graph transformer(const transformer_options& o) {
  detail::require_positive(o.layers, "layers");
  detail::require_positive(o.batch, "batch");
  detail::require_positive(o.sequence, "sequence");
  detail::require_positive(o.hidden, "hidden");
  detail::require_positive(o.heads, "heads");
  detail::require_positive(o.mlp_ratio, "mlp_ratio");
  detail::require_positive(o.classes, "classes");
  if (o.hidden % o.heads != 0)
    throw error("heads (" + std::to_string(o.heads) + ") must divide hidden (" + std::to_string(o.hidden) + ")");
  if (!(o.dropout >= 0 && o.dropout < 1)) throw error("dropout must be in [0, 1)");
  const std::int64_t tokens = o.batch * o.sequence, head_dim = o.hidden / o.heads;
  network_builder b("transformer-" + std::to_string(o.layers), o.type, profile(o.device));
  const tensor embeddings = b.input("input", {o.batch, o.sequence, o.hidden});
  const tensor labels = b.labels("labels", tokens);
  auto drop = [&](const std::string& name, const tensor& t) { return o.dropout > 0 ? b.dropout(name, t, o.dropout) : t; };
  // [tokens, hidden] -> [batch, heads, sequence, head_dim], or its transpose for keys.
  auto split_heads = [&](const std::string& at, const tensor& t, bool transpose) {
    const tensor split = b.reshape(at + "_split", t, {o.batch, o.sequence, o.heads, head_dim});
    return b.permute(at + "_heads", split, transpose ? shape{0, 2, 3, 1} : shape{0, 2, 1, 3});
  };
  tensor x = b.reshape("tokens", embeddings, {tokens, o.hidden});
  for (std::int64_t i = 0; i < o.layers; ++i) {
    const std::string at = "blocks." + std::to_string(i) + ".";
    const tensor a = b.layer_norm(at + "ln_1", x);
    const tensor q = split_heads(at + "attn.q", b.linear(at + "attn.q", a, o.hidden), false);
    const tensor k = split_heads(at + "attn.k", b.linear(at + "attn.k", a, o.hidden), true);
    const tensor v = split_heads(at + "attn.v", b.linear(at + "attn.v", a, o.hidden), false);
    const tensor scores = b.matmul(at + "attn.scores", q, k, 1.0 / std::sqrt(static_cast<double>(head_dim)));
    const tensor probs = drop(at + "attn.attn_dropout", b.softmax(at + "attn.softmax", scores));
    tensor context = b.matmul(at + "attn.context", probs, v);
    context = b.reshape(at + "attn.merge", b.permute(at + "attn.merge_heads", context, {0, 2, 1, 3}), {tokens, o.hidden});
    const tensor attended = drop(at + "attn.resid_dropout", b.linear(at + "attn.proj", context, o.hidden));
    x = b.add(at + "add_1", {x, attended});
    tensor m = b.linear(at + "mlp.fc", b.layer_norm(at + "ln_2", x), o.mlp_ratio * o.hidden);
    m = b.linear(at + "mlp.proj", b.gelu(at + "mlp.gelu", m), o.hidden);
    x = b.add(at + "add_2", {x, drop(at + "mlp.dropout", m)});
  }
  const tensor logits = b.linear("head", b.layer_norm("ln_f", x), o.classes);
  b.softmax_cross_entropy("loss", logits, labels);
  return std::move(b).build();
}

}  // namespace remat::zoo
