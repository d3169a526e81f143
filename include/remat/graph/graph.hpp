#pragma once

/// \file
/// remat::graph, the compact graph every solver works on, and graph_builder,
/// which makes one node by node (as file readers do); make_graph.hpp makes
/// one from any type modelling remat::dag plus a remat::cost_model.
///
/// A remat::graph is immutable and validated: it has at least one node, no
/// cycle, no dangling operand, unique names, finite non-negative times whose
/// forward plus backward total is finite, and sizes whose worst-case sum
/// (every value and its gradient, every parameter and its gradient, the
/// largest workspace) fits 64 bits, so no later sum over it can overflow.
/// Node ids are topologically numbered (operands before consumers); where the
/// input order already was topological it is kept.

#include <remat/config.hpp>

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include <remat/detail/checked.hpp>
#include <remat/error.hpp>
#include <remat/graph/concepts.hpp>
#include <remat/graph/costs.hpp>

namespace remat {

using node_id = std::uint32_t;

/// Op attributes (kernel sizes, strides, the output shape, a dtype...): what an
/// executor needs and solvers ignore.
using attribute_value = std::variant<std::int64_t, double, std::string, std::vector<std::int64_t>>;
using attributes = std::map<std::string, attribute_value, std::less<>>;

/// One node as a builder receives it. Operands are indices of earlier or later
/// specs in the same builder (order matters to executors; repeats are allowed).
struct node_spec {
  std::string name;  ///< unique; "n<index>" when left empty
  std::string op;    ///< "input" marks a resident graph input
  std::vector<std::size_t> inputs;
  std::uint64_t bytes = 0;                       ///< output bytes
  double time = 0;                               ///< forward time, seconds
  std::uint64_t params = 0;                      ///< parameter bytes owned by the node
  std::uint64_t workspace = 0;                   ///< transient bytes while its forward runs
  std::optional<std::uint64_t> backward_workspace;  ///< defaults to workspace
  std::optional<double> backward_time;              ///< defaults to 2 × time
  std::optional<backward_reads> reads;              ///< defaults to default_backward_reads(op)
  attributes attrs;
};

class graph_builder;

/// A validated, topologically numbered computation graph in CSR form.
class graph {
 public:
  graph() = default;

  std::size_t num_nodes() const noexcept { return bytes_.size(); }
  std::size_t size() const noexcept { return bytes_.size(); }
  /// Number of distinct producer → consumer pairs.
  std::size_t num_edges() const noexcept { return succ_.size(); }
  const std::string& name() const noexcept { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  /// Distinct consumers of v, ascending.
  std::span<const node_id> successors(std::size_t v) const noexcept {
    return {succ_.data() + succ_offset_[v], succ_.data() + succ_offset_[v + 1]};
  }
  /// Distinct operands of v, ascending.
  std::span<const node_id> predecessors(std::size_t v) const noexcept {
    return {pred_.data() + pred_offset_[v], pred_.data() + pred_offset_[v + 1]};
  }
  /// Operands of v in call order, repeats included (what an executor passes).
  std::span<const node_id> inputs(std::size_t v) const noexcept {
    return {in_.data() + in_offset_[v], in_.data() + in_offset_[v + 1]};
  }

  const std::string& node_name(std::size_t v) const noexcept { return names_[v]; }
  const std::string& op(std::size_t v) const noexcept { return ops_[v]; }
  std::uint64_t bytes(std::size_t v) const noexcept { return bytes_[v]; }
  double time(std::size_t v) const noexcept { return time_[v]; }
  std::uint64_t params(std::size_t v) const noexcept { return params_[v]; }
  std::uint64_t workspace(std::size_t v) const noexcept { return workspace_[v]; }
  std::uint64_t backward_workspace(std::size_t v) const noexcept { return backward_workspace_[v]; }
  double backward_time(std::size_t v) const noexcept { return backward_time_[v]; }
  backward_reads reads(std::size_t v) const noexcept { return reads_[v]; }
  const attributes& attrs(std::size_t v) const noexcept { return attrs_[v]; }
  /// True for graph inputs: resident, never computed, freed or differentiated.
  bool is_input(std::size_t v) const noexcept { return is_input_[v] != 0; }
  /// Index the node had when it was added (builder order / adapter id).
  std::size_t original_index(std::size_t v) const noexcept { return original_[v]; }

  /// The node called `node_name`, if any.
  std::optional<node_id> find(std::string_view node_name) const {
    auto it = by_name_.find(std::string(node_name));
    if (it == by_name_.end()) return std::nullopt;
    return it->second;
  }

  /// The node whose backward needs the value of operand u (reads its inputs),
  /// or u's own backward (reads its output): does anything in backward read u?
  bool read_by_backward(std::size_t u) const noexcept {
    if (reads_output(reads_[u])) return true;
    for (node_id s : successors(u))
      if (reads_inputs(reads_[s])) return true;
    return false;
  }

  /// Sum of output bytes over non-input nodes.
  std::uint64_t activation_bytes() const noexcept { return activation_bytes_; }
  /// Sum of output bytes over graph inputs.
  std::uint64_t input_bytes() const noexcept { return input_bytes_; }
  /// Sum of parameter bytes.
  std::uint64_t param_bytes() const noexcept { return param_bytes_; }
  /// Sum of forward times over non-input nodes.
  double forward_time() const noexcept { return forward_time_; }
  /// Sum of backward times over non-input nodes.
  double total_backward_time() const noexcept { return backward_time_total_; }

 private:
  friend class graph_builder;

  std::string name_;
  std::vector<std::uint64_t> succ_offset_, pred_offset_, in_offset_;
  std::vector<node_id> succ_, pred_, in_;
  std::vector<std::string> names_, ops_;
  std::vector<std::uint64_t> bytes_, params_, workspace_, backward_workspace_;
  std::vector<double> time_, backward_time_;
  std::vector<backward_reads> reads_;
  std::vector<attributes> attrs_;
  std::vector<std::uint8_t> is_input_;
  std::vector<std::size_t> original_;
  std::unordered_map<std::string, node_id> by_name_;
  std::uint64_t activation_bytes_ = 0, input_bytes_ = 0, param_bytes_ = 0;
  double forward_time_ = 0, backward_time_total_ = 0;
};

/// Collects node specs and validates them into a remat::graph.
class graph_builder {
 public:
  explicit graph_builder(std::string graph_name = {}) : name_(std::move(graph_name)) {}

  /// Adds a node; returns its index for use in other specs' `inputs`.
  std::size_t add(node_spec spec) {
    specs_.push_back(std::move(spec));
    return specs_.size() - 1;
  }
  std::size_t size() const noexcept { return specs_.size(); }
  node_spec& operator[](std::size_t i) { return specs_[i]; }

  /// Validates and builds. \throws invalid_graph naming the offending node(s).
  /// Complexity: O((n + m) log n).
  graph build() && {
    const std::size_t n = specs_.size();
    if (n == 0) throw invalid_graph("graph has no nodes");
    if (n > std::numeric_limits<node_id>::max())
      throw invalid_graph("graph has " + std::to_string(n) + " nodes; remat supports at most " +
                          std::to_string(std::numeric_limits<node_id>::max()));

    for (std::size_t i = 0; i < n; ++i)
      if (specs_[i].name.empty()) specs_[i].name = "n" + std::to_string(i);
    std::unordered_map<std::string, std::size_t> index;
    index.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      auto [it, inserted] = index.emplace(specs_[i].name, i);
      if (!inserted)
        throw invalid_graph("duplicate node name '" + specs_[i].name + "' (nodes " +
                                std::to_string(it->second) + " and " + std::to_string(i) + ")",
                            specs_[i].name);
    }
    for (std::size_t i = 0; i < n; ++i) check_node(i);

    const std::vector<std::size_t> order = topological_order();
    check_sizes(order);
    check_time_totals(order);
    return assemble(order, std::move(index));
  }

 private:
  [[noreturn]] void fail(std::size_t i, const std::string& what) const {
    throw invalid_graph("node '" + specs_[i].name + "': " + what, specs_[i].name);
  }

  void check_node(std::size_t i) const {
    const node_spec& s = specs_[i];
    for (std::size_t in : s.inputs)
      if (in >= specs_.size())
        fail(i, "input " + std::to_string(in) + " does not name a node (the graph has " +
                    std::to_string(specs_.size()) + " nodes)");
    if (s.op == "input" && !s.inputs.empty()) fail(i, "a graph input cannot have inputs");
    if (!std::isfinite(s.time) || s.time < 0)
      fail(i, "time must be a finite non-negative number");
    if (s.backward_time && (!std::isfinite(*s.backward_time) || *s.backward_time < 0))
      fail(i, "backward time must be a finite non-negative number");
  }

  // Kahn's algorithm, smallest index first, so an already topological order is kept.
  std::vector<std::size_t> topological_order() const {
    const std::size_t n = specs_.size();
    std::vector<std::vector<std::size_t>> consumers(n);
    std::vector<std::size_t> pending(n, 0);
    for (std::size_t v = 0; v < n; ++v) {
      std::vector<std::size_t> ops = specs_[v].inputs;
      std::sort(ops.begin(), ops.end());
      ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
      pending[v] = ops.size();
      for (std::size_t u : ops) consumers[u].push_back(v);
    }
    std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
    for (std::size_t v = 0; v < n; ++v)
      if (pending[v] == 0) ready.push(v);
    std::vector<std::size_t> order;
    order.reserve(n);
    while (!ready.empty()) {
      std::size_t v = ready.top();
      ready.pop();
      order.push_back(v);
      for (std::size_t s : consumers[v])
        if (--pending[s] == 0) ready.push(s);
    }
    if (order.size() != n) report_cycle(pending);
    return order;
  }

  // Every node left with pending operands is on or behind a cycle; walk operand
  // links among them until a node repeats, which closes a cycle.
  [[noreturn]] void report_cycle(const std::vector<std::size_t>& pending) const {
    std::size_t start = 0;
    while (pending[start] == 0) ++start;
    std::vector<std::size_t> path;
    std::vector<std::size_t> position(specs_.size(), SIZE_MAX);
    std::size_t v = start;
    while (position[v] == SIZE_MAX) {
      position[v] = path.size();
      path.push_back(v);
      for (std::size_t u : specs_[v].inputs)
        if (pending[u] != 0) {
          v = u;
          break;
        }
    }
    std::vector<std::size_t> cycle(path.begin() + static_cast<std::ptrdiff_t>(position[v]),
                                   path.end());
    std::reverse(cycle.begin(), cycle.end());  // operand -> consumer direction
    std::string text;
    const std::size_t shown = std::min<std::size_t>(cycle.size(), 12);
    for (std::size_t k = 0; k < shown; ++k) text += "'" + specs_[cycle[k]].name + "' -> ";
    if (shown < cycle.size()) text += "... (" + std::to_string(cycle.size() - shown) + " more) -> ";
    text += "'" + specs_[cycle[0]].name + "'";
    throw invalid_graph("the graph has a cycle: " + text, specs_[cycle[0]].name);
  }

  // The simulator's largest possible live set is every value plus its gradient,
  // every parameter plus its gradient, and one workspace; make sure it fits.
  void check_sizes(const std::vector<std::size_t>& order) const {
    std::uint64_t total = 0, widest_workspace = 0;
    for (std::size_t i : order) {
      const node_spec& s = specs_[i];
      const bool input = s.op == "input";
      auto value = detail::checked_mul(s.bytes, input ? 1 : 2);
      auto weights = detail::checked_mul(s.params, 2);
      std::optional<std::uint64_t> sum;
      if (value && weights)
        if (auto a = detail::checked_add(total, *value)) sum = detail::checked_add(*a, *weights);
      if (!sum)
        fail(i, "sizes overflow 64 bits: the bytes of all values, gradients and parameters up "
                "to this node exceed 18446744073709551615");
      total = *sum;
      widest_workspace = std::max({widest_workspace, s.workspace, s.backward_workspace.value_or(0)});
      if (!detail::checked_add(total, widest_workspace))
        fail(i, "sizes overflow 64 bits: workspace plus all values, gradients and parameters "
                "exceed 18446744073709551615");
    }
  }

  // The simulator sums forward and backward times (a plan's plain time is
  // their sum): a total past the largest double would make every figure inf.
  // One running sum of both bounds each total.
  void check_time_totals(const std::vector<std::size_t>& order) const {
    const std::string of = name_.empty() ? "the graph" : "graph '" + name_ + "'";
    double total = 0;
    for (std::size_t i : order) {
      const node_spec& s = specs_[i];
      if (s.op == "input") continue;
      const double backward = s.backward_time.value_or(2 * s.time);
      if (!std::isfinite(backward))
        fail(i, "backward time (by default twice the time) is past the largest double");
      total += s.time + backward;
      if (!std::isfinite(total))
        fail(i, "forward and backward times of " + of + " sum past the largest double at this node");
    }
  }

  graph assemble(const std::vector<std::size_t>& order,
                 std::unordered_map<std::string, std::size_t> index) {
    const std::size_t n = specs_.size();
    std::vector<node_id> new_id(n);
    for (std::size_t k = 0; k < n; ++k) new_id[order[k]] = static_cast<node_id>(k);

    graph g;
    g.name_ = std::move(name_);
    g.names_.resize(n);
    g.ops_.resize(n);
    g.bytes_.resize(n);
    g.params_.resize(n);
    g.workspace_.resize(n);
    g.backward_workspace_.resize(n);
    g.time_.resize(n);
    g.backward_time_.resize(n);
    g.reads_.resize(n);
    g.attrs_.resize(n);
    g.is_input_.resize(n);
    g.original_.resize(n);

    std::vector<std::vector<node_id>> preds(n), succs(n);
    g.in_offset_.assign(1, 0);
    for (std::size_t k = 0; k < n; ++k) {
      node_spec& s = specs_[order[k]];
      for (std::size_t in : s.inputs) g.in_.push_back(new_id[in]);
      g.in_offset_.push_back(g.in_.size());
      std::vector<node_id> ps(g.in_.end() - static_cast<std::ptrdiff_t>(s.inputs.size()), g.in_.end());
      std::sort(ps.begin(), ps.end());
      ps.erase(std::unique(ps.begin(), ps.end()), ps.end());
      for (node_id p : ps) succs[p].push_back(static_cast<node_id>(k));
      preds[k] = std::move(ps);

      const bool input = s.op == "input";
      g.is_input_[k] = input ? 1 : 0;
      g.bytes_[k] = s.bytes;
      g.params_[k] = s.params;
      g.workspace_[k] = s.workspace;
      g.backward_workspace_[k] = s.backward_workspace.value_or(s.workspace);
      g.time_[k] = s.time;
      g.backward_time_[k] = s.backward_time.value_or(2 * s.time);
      g.reads_[k] = input ? backward_reads::none : s.reads.value_or(default_backward_reads(s.op));
      g.original_[k] = order[k];
      g.names_[k] = std::move(s.name);
      g.ops_[k] = std::move(s.op);
      g.attrs_[k] = std::move(s.attrs);
      if (input) {
        g.input_bytes_ += g.bytes_[k];
      } else {
        g.activation_bytes_ += g.bytes_[k];
        g.forward_time_ += g.time_[k];
        g.backward_time_total_ += g.backward_time_[k];
      }
      g.param_bytes_ += g.params_[k];
    }
    auto flatten = [](std::vector<std::vector<node_id>>& lists, std::vector<std::uint64_t>& offset,
                      std::vector<node_id>& flat) {
      offset.assign(1, 0);
      for (auto& list : lists) {
        flat.insert(flat.end(), list.begin(), list.end());
        offset.push_back(flat.size());
      }
    };
    flatten(preds, g.pred_offset_, g.pred_);
    flatten(succs, g.succ_offset_, g.succ_);
    g.by_name_.reserve(n);
    for (auto& [node_name, i] : index) g.by_name_.emplace(node_name, new_id[i]);
    specs_.clear();
    return g;
  }

  std::string name_;
  std::vector<node_spec> specs_;
};

/// Node v of g as a builder takes it, costs, reads and attributes included;
/// its operands are left for the caller, who numbers them in its own builder.
inline node_spec node_spec_of(const graph& g, node_id v) {
  node_spec s;
  s.name = g.node_name(v);
  s.op = g.op(v);
  s.bytes = g.bytes(v);
  s.time = g.time(v);
  s.params = g.params(v);
  s.workspace = g.workspace(v);
  s.backward_workspace = g.backward_workspace(v);
  s.backward_time = g.backward_time(v);
  s.reads = g.reads(v);
  s.attrs = g.attrs(v);
  return s;
}

}  // namespace remat
