#pragma once

// Small graphs with hand-picked sizes, used by tests whose expected figures
// were worked out by hand (see the comments next to each expectation).

#include <cstdint>
#include <string>
#include <vector>

#include <remat/graph/graph.hpp>

namespace remat::test {

struct spec {
  std::string name, op;
  std::vector<std::string> inputs;
  std::uint64_t bytes;
  backward_reads reads = backward_reads::none;
  std::uint64_t params = 0;
  double time = 1;
};

inline graph build(const std::string& name, const std::vector<spec>& specs) {
  graph_builder b(name);
  std::vector<std::string> names;
  for (const spec& s : specs) names.push_back(s.name);
  for (const spec& s : specs) {
    node_spec n;
    n.name = s.name;
    n.op = s.op;
    n.bytes = s.bytes;
    n.params = s.params;
    n.time = s.op == "input" ? 0 : s.time;
    n.reads = s.reads;
    for (const std::string& in : s.inputs)
      for (std::size_t i = 0; i < names.size(); ++i)
        if (names[i] == in) n.inputs.push_back(i);
    b.add(std::move(n));
  }
  return std::move(b).build();
}

// x(input 10) -> a(100) -> b(200) -> c(50); each reads its input; a has 10 parameter bytes.
inline graph chain() {
  using enum backward_reads;
  return build("chain", {{"x", "input", {}, 10},
                         {"a", "conv2d", {"x"}, 100, inputs, 10, 1},
                         {"b", "conv2d", {"a"}, 200, inputs, 0, 2},
                         {"c", "loss", {"b"}, 50, inputs, 0, 3}});
}

// x -> a; a -> b (relu) and a -> c (conv); d = add(b, c); e = loss(d).
inline graph diamond() {
  using enum backward_reads;
  return build("diamond", {{"x", "input", {}, 10},
                           {"a", "conv2d", {"x"}, 100, inputs, 16, 1},
                           {"b", "relu", {"a"}, 200, output, 0, 1},
                           {"c", "conv2d", {"a"}, 300, inputs, 32, 1},
                           {"d", "add", {"b", "c"}, 40, none, 0, 1},
                           {"e", "loss", {"d"}, 8, inputs, 0, 1}});
}

// a = conv(x); b = relu(a); c = conv(b); d = add(c, b) (the skip); e = loss(d).
inline graph residual() {
  using enum backward_reads;
  return build("residual", {{"x", "input", {}, 10},
                            {"a", "conv2d", {"x"}, 100, inputs, 4, 1},
                            {"b", "relu", {"a"}, 100, output, 0, 1},
                            {"c", "conv2d", {"b"}, 100, inputs, 4, 1},
                            {"d", "add", {"c", "b"}, 100, none, 0, 1},
                            {"e", "loss", {"d"}, 8, inputs, 0, 1}});
}

// DenseNet-like: a = conv(x); b = relu(a); c = conv(b); k = concat(b, c); e = loss(k).
inline graph concat_block() {
  using enum backward_reads;
  return build("concat", {{"x", "input", {}, 10},
                          {"a", "conv2d", {"x"}, 100, inputs, 4, 1},
                          {"b", "relu", {"a"}, 100, output, 0, 1},
                          {"c", "conv2d", {"b"}, 50, inputs, 2, 1},
                          {"k", "concat", {"b", "c"}, 150, none, 0, 1},
                          {"e", "loss", {"k"}, 8, inputs, 0, 1}});
}

}  // namespace remat::test
