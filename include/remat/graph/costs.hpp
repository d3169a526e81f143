#pragma once

/// \file
/// Cost models: what each node's output weighs and what computing it costs,
/// kept apart from topology.
///
/// A cost model `c` for a graph gives, for every node id v:
///
/// | expression                | type                          | default when absent           |
/// | ------------------------- | ----------------------------- | ----------------------------- |
/// | `c.bytes(v)`              | integral (bytes of v's output) | required                     |
/// | `c.time(v)`               | convertible to double (seconds)| required                     |
/// | `c.params(v)`             | integral (parameter bytes)    | 0                             |
/// | `c.workspace(v)`          | integral (transient bytes)    | 0                             |
/// | `c.backward_workspace(v)` | integral                      | `c.workspace(v)`              |
/// | `c.backward_time(v)`      | convertible to double         | 2 × `c.time(v)`               |
/// | `c.reads(v)`              | `remat::backward_reads`       | by op, see default_backward_reads |
/// | `c.name(v)`, `c.op(v)`    | convertible to std::string    | "n<v>", "op"                  |
///
/// A node whose op is "input" is a graph input: resident for the whole step,
/// never computed, freed or differentiated.

#include <remat/config.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace remat {

/// Which forward tensors a node's backward reads besides its output gradient.
/// `inputs` means the values of all its operands, `output` its own value.
enum class backward_reads : std::uint8_t { none = 0, inputs = 1, output = 2, both = 3 };

inline constexpr bool reads_inputs(backward_reads r) noexcept {
  return (static_cast<unsigned>(r) & 1U) != 0;
}
inline constexpr bool reads_output(backward_reads r) noexcept {
  return (static_cast<unsigned>(r) & 2U) != 0;
}

inline constexpr std::string_view to_string(backward_reads r) noexcept {
  switch (r) {
    case backward_reads::none: return "none";
    case backward_reads::inputs: return "inputs";
    case backward_reads::output: return "output";
    case backward_reads::both: return "both";
  }
  return "both";
}

inline std::optional<backward_reads> parse_backward_reads(std::string_view s) noexcept {
  if (s == "none") return backward_reads::none;
  if (s == "inputs") return backward_reads::inputs;
  if (s == "output") return backward_reads::output;
  if (s == "both") return backward_reads::both;
  return std::nullopt;
}

/// What the backward of a well-known op reads, as autograd frameworks save it.
/// Unknown ops get `both`, the safe (never under-counting) answer.
inline backward_reads default_backward_reads(std::string_view op) noexcept {
  constexpr std::pair<std::string_view, backward_reads> table[] = {
      {"input", backward_reads::none},
      {"conv2d", backward_reads::inputs},
      {"conv", backward_reads::inputs},
      {"linear", backward_reads::inputs},
      {"matmul", backward_reads::inputs},
      {"mul", backward_reads::inputs},
      {"batch_norm", backward_reads::inputs},
      {"layer_norm", backward_reads::inputs},
      {"gelu", backward_reads::inputs},
      {"softmax_cross_entropy", backward_reads::inputs},
      {"cross_entropy", backward_reads::inputs},
      {"mse_loss", backward_reads::inputs},
      {"relu", backward_reads::output},
      {"sigmoid", backward_reads::output},
      {"tanh", backward_reads::output},
      {"softmax", backward_reads::output},
      {"max_pool", backward_reads::both},
      {"avg_pool", backward_reads::none},
      {"adaptive_avg_pool", backward_reads::none},
      {"add", backward_reads::none},
      {"concat", backward_reads::none},
      {"flatten", backward_reads::none},
      {"reshape", backward_reads::none},
      {"identity", backward_reads::none},
      {"dropout", backward_reads::none},
  };
  for (const auto& [name, reads] : table)
    if (name == op) return reads;
  return backward_reads::both;
}

/// The least a type must offer to serve as a cost model.
template <class C>
concept cost_model = requires(const C& c, std::size_t v) {
  { c.bytes(v) } -> std::convertible_to<std::uint64_t>;
  { c.time(v) } -> std::convertible_to<double>;
};

/// Two callables make a cost model: `remat::node_costs{bytes_of, time_of}`.
template <class Bytes, class Time>
struct node_costs {
  Bytes bytes_of;
  Time time_of;
  auto bytes(std::size_t v) const { return bytes_of(v); }
  auto time(std::size_t v) const { return time_of(v); }
};
template <class Bytes, class Time>
node_costs(Bytes, Time) -> node_costs<Bytes, Time>;

/// Costs held in arrays indexed by node id. `bytes` and `time` are required;
/// every other array may be left empty to take its default.
struct cost_arrays {
  std::vector<std::uint64_t> bytes_per_node;
  std::vector<double> time_per_node;
  std::vector<std::uint64_t> params_per_node;
  std::vector<std::string> names;
  std::vector<std::string> ops;
  std::vector<backward_reads> reads_per_node;

  std::uint64_t bytes(std::size_t v) const { return bytes_per_node.at(v); }
  double time(std::size_t v) const { return time_per_node.at(v); }
  std::uint64_t params(std::size_t v) const {
    return params_per_node.empty() ? 0 : params_per_node.at(v);
  }
  std::string name(std::size_t v) const {
    return names.empty() ? "n" + std::to_string(v) : names.at(v);
  }
  std::string op(std::size_t v) const { return ops.empty() ? std::string("op") : ops.at(v); }
  backward_reads reads(std::size_t v) const {
    return reads_per_node.empty() ? default_backward_reads(op(v)) : reads_per_node.at(v);
  }
};

}  // namespace remat
