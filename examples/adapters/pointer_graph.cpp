// Adapting an in-house framework's graph to remat.
//
// The framework below ("tiny") stores its network the way many engines do:
// heap-allocated nodes that point to their operands, owned by a Network in
// creation order. Nothing in it knows about remat. The adapter is a view that
// numbers the nodes once and answers remat's two questions (how many nodes,
// which consumers) through free functions found by argument-dependent lookup,
// plus a cost model read from the nodes' own fields. docs/adapting-your-graph.md
// walks through it.

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <remat/remat.hpp>

// ---- the framework, as it exists ------------------------------------------
namespace tiny {

struct Node {
  std::string name;
  std::string kind;                 // "Input", "Conv", "ReLU", "Add", "Loss"
  std::vector<Node*> operands;      // what it reads
  std::int64_t output_elements = 0; // float32 elements it produces
  std::int64_t weight_elements = 0;
  double estimated_ms = 0;
};

class Network {
 public:
  Node* add(std::string name, std::string kind, std::vector<Node*> operands, std::int64_t elements,
            std::int64_t weights, double ms) {
    nodes_.push_back(std::make_unique<Node>(Node{std::move(name), std::move(kind), std::move(operands),
                                                 elements, weights, ms}));
    return nodes_.back().get();
  }
  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }

 private:
  std::vector<std::unique_ptr<Node>> nodes_;
};

}  // namespace tiny

// ---- the adapter -------------------------------------------------------------
namespace tiny_remat {

// A view giving every node a dense id (its position) and listing consumers,
// which the framework does not store (it stores operands).
class graph_view {
 public:
  explicit graph_view(const tiny::Network& net) : net_(net), consumers_(net.nodes().size()) {
    for (std::size_t i = 0; i < net.nodes().size(); ++i) id_.emplace(net.nodes()[i].get(), i);
    for (std::size_t i = 0; i < net.nodes().size(); ++i)
      for (const tiny::Node* operand : net.nodes()[i]->operands) consumers_[id_.at(operand)].push_back(i);
  }
  const tiny::Node& node(std::size_t v) const { return *net_.nodes()[v]; }
  std::size_t id_of(const tiny::Node* n) const { return id_.at(n); }
  std::size_t size() const { return net_.nodes().size(); }
  const std::vector<std::size_t>& consumers(std::size_t v) const { return consumers_[v]; }

 private:
  const tiny::Network& net_;
  std::unordered_map<const tiny::Node*, std::size_t> id_;
  std::vector<std::vector<std::size_t>> consumers_;
};

// remat finds these by argument-dependent lookup.
std::size_t num_nodes(const graph_view& g) { return g.size(); }
const std::vector<std::size_t>& successors(const graph_view& g, std::size_t v) { return g.consumers(v); }
// Optional: operands in call order, so executors see add(a, b) as written.
std::vector<std::size_t> predecessors(const graph_view& g, std::size_t v) {
  std::vector<std::size_t> out;
  for (const tiny::Node* operand : g.node(v).operands) out.push_back(g.id_of(operand));
  return out;
}

// The cost model: sizes and times from the framework's own fields.
struct costs {
  const graph_view& g;
  std::uint64_t bytes(std::size_t v) const { return static_cast<std::uint64_t>(g.node(v).output_elements) * 4; }
  double time(std::size_t v) const { return g.node(v).estimated_ms / 1000.0; }
  std::uint64_t params(std::size_t v) const { return static_cast<std::uint64_t>(g.node(v).weight_elements) * 4; }
  std::string name(std::size_t v) const { return g.node(v).name; }
  std::string op(std::size_t v) const {
    const std::string& k = g.node(v).kind;
    if (k == "Input") return "input";
    if (k == "Conv") return "conv2d";
    if (k == "ReLU") return "relu";
    if (k == "Add") return "add";
    return "cross_entropy";
  }
};

static_assert(remat::bidirectional_dag<graph_view>);
static_assert(remat::cost_model<costs>);

}  // namespace tiny_remat

int main() {
  // A small residual network: 6 blocks of conv -> relu -> conv -> add(skip) -> relu.
  tiny::Network net;
  const std::int64_t act = 64 * 64 * 56 * 56;  // batch 64, 64 channels, 56x56
  tiny::Node* x = net.add("image", "Input", {}, act, 0, 0);
  tiny::Node* h = net.add("stem", "Conv", {x}, act, 64 * 64 * 9, 1.2);
  for (int b = 0; b < 6; ++b) {
    const std::string p = "block" + std::to_string(b) + ".";
    tiny::Node* c1 = net.add(p + "conv1", "Conv", {h}, act, 64 * 64 * 9, 1.2);
    tiny::Node* r1 = net.add(p + "relu1", "ReLU", {c1}, act, 0, 0.1);
    tiny::Node* c2 = net.add(p + "conv2", "Conv", {r1}, act, 64 * 64 * 9, 1.2);
    tiny::Node* sum = net.add(p + "add", "Add", {c2, h}, act, 0, 0.1);
    h = net.add(p + "relu2", "ReLU", {sum}, act, 0, 0.1);
  }
  net.add("loss", "Loss", {h}, 1, 0, 0.05);

  const tiny_remat::graph_view view(net);
  const remat::graph g = remat::make_graph(view, tiny_remat::costs{view}, {.name = "tiny-resnet"});

  const remat::simulation regular = remat::simulate(g, remat::plan_none(g).steps);
  const remat::plan sqrt_plan = remat::plan_sqrt(g);
  const remat::simulation planned = remat::simulate(g, sqrt_plan.steps);
  std::printf("%s: %zu nodes, %zu edges\n", g.name().c_str(), g.size(), g.num_edges());
  std::printf("regular training peak: %s\n", remat::format_bytes(regular.peak_bytes).c_str());
  std::printf("sqrt(n) plan peak:     %s (%.1f%% less), recompute overhead %.1f%%\n",
              remat::format_bytes(planned.peak_bytes).c_str(),
              100.0 * (1.0 - static_cast<double>(planned.peak_bytes) / static_cast<double>(regular.peak_bytes)),
              100.0 * planned.overhead());
  std::printf("per-op floor:          %s\n", remat::format_bytes(remat::per_op_floor(g).bytes).c_str());
  return 0;
}
