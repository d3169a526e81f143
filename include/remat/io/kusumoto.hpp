#pragma once

/// \file
/// Kusumoto et al.'s computational-graph text format (NeurIPS 2019; spec in
/// docs/graph-format.md): read and write.
///
/// Mapping to remat: every variable produced by a forward function is a node
/// whose op is the function type (Convolution2DFunction -> conv2d, ReLU -> relu,
/// ...; unknown types are kept verbatim); a variable no function produces is a
/// graph input, or a parameter when its name starts with '/'. A parameter's
/// bytes are charged to the first function that consumes it. What a backward
/// reads comes from its block's `input` / `output` tags. The format carries no
/// time: by default a function costs 10 when its type starts with "Conv" and
/// 1 otherwise (the seed scheduler's rule), backward twice that.

#include <remat/config.hpp>

#include <cctype>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <remat/error.hpp>
#include <remat/graph/graph.hpp>

namespace remat::io {

/// Counts as the file states them.
struct kusumoto_stats {
  std::size_t variables = 0;   ///< variable lines (N)
  std::size_t functions = 0;   ///< forward functions (M / 2)
  std::size_t edges = 0;       ///< forward input -> output pairs, parameters included
  std::size_t parameters = 0;  ///< variables folded into their consumer's parameter bytes
  std::size_t inputs = 0;      ///< variables that became graph inputs
};

/// How times are assigned to functions (the format has none).
struct kusumoto_options {
  double conv_time = 10;   ///< function types starting with "Conv"
  double other_time = 1;   ///< everything else
};

namespace detail {

inline constexpr std::pair<std::string_view, std::string_view> chainer_ops[] = {
    {"Convolution2DFunction", "conv2d"},   {"Deconvolution2DFunction", "deconv2d"},
    {"LinearFunction", "linear"},          {"ReLU", "relu"},
    {"Sigmoid", "sigmoid"},                {"Tanh", "tanh"},
    {"MaxPooling2D", "max_pool"},          {"AveragePooling2D", "avg_pool"},
    {"Concat", "concat"},                  {"Add", "add"},
    {"BatchNormalization", "batch_norm"},  {"Dropout", "dropout"},
    {"SoftmaxCrossEntropy", "softmax_cross_entropy"}, {"Reshape", "reshape"},
    {"LocalResponseNormalization", "lrn"},
};

inline std::string op_of_function(std::string_view type) {
  for (const auto& [function, op] : chainer_ops)
    if (function == type) return std::string(op);
  return std::string(type);
}

inline std::string function_of_op(std::string_view op) {
  for (const auto& [function, name] : chainer_ops)
    if (name == op) return std::string(function);
  return std::string(op);
}

// Tokens with the line they came from; a whole line on request (the JSON
// attribute line may hold spaces).
class token_reader {
 public:
  token_reader(std::string_view text, std::string source) : source_(std::move(source)) {
    std::size_t start = 0;
    while (start <= text.size()) {
      std::size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      std::string_view line = text.substr(start, end - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      lines_.push_back(line);
      start = end + 1;
    }
  }

  [[noreturn]] void fail(const std::string& reason) const {
    throw parse_error(source_, line_ + 1 > lines_.size() ? lines_.size() : line_ + 1, 0, reason);
  }

  bool at_end() {
    skip_space();
    return line_ >= lines_.size();
  }

  std::string_view token(const char* what) {
    skip_space();
    if (line_ >= lines_.size()) {
      line_ = lines_.size() - 1;
      fail(std::string("truncated file: expected ") + what);
    }
    const std::string_view line = lines_[line_];
    std::size_t end = column_;
    while (end < line.size() && !std::isspace(static_cast<unsigned char>(line[end]))) ++end;
    std::string_view out = line.substr(column_, end - column_);
    column_ = end;
    return out;
  }

  std::uint64_t number(const char* what) {
    const std::string_view t = token(what);
    std::uint64_t value = 0;
    if (!t.empty() && t.front() == '-') fail(std::string(what) + " must not be negative, got " + std::string(t));
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
    if (ec == std::errc::result_out_of_range) fail(std::string(what) + " does not fit in 64 bits: " + std::string(t));
    if (ec != std::errc() || end != t.data() + t.size())
      fail(std::string("expected ") + what + " (an integer), got '" + std::string(t) + "'");
    return value;
  }

  /// The rest of the current line if it has text, else the next non-blank line.
  std::string_view rest_of_line(const char* what) {
    skip_space();
    if (line_ >= lines_.size()) {
      line_ = lines_.size() - 1;
      fail(std::string("truncated file: expected ") + what);
    }
    std::string_view out = lines_[line_].substr(column_);
    ++line_;
    column_ = 0;
    return out;
  }

 private:
  void skip_space() {
    while (line_ < lines_.size()) {
      const std::string_view line = lines_[line_];
      while (column_ < line.size() && std::isspace(static_cast<unsigned char>(line[column_]))) ++column_;
      if (column_ < line.size()) return;
      ++line_;
      column_ = 0;
    }
  }

  std::string source_;
  std::vector<std::string_view> lines_;
  std::size_t line_ = 0, column_ = 0;
};

inline bool is_plain_token(std::string_view name) {
  if (name.empty() || name == "_" || name.front() == '/') return false;
  for (char c : name)
    if (std::isspace(static_cast<unsigned char>(c))) return false;
  return true;
}

}  // namespace detail

/// Reads a graph in Kusumoto et al.'s text format. \throws parse_error naming
/// the line of the first problem (wrong counts, bad ids, a truncated file,
/// a variable produced twice, blocks out of order, a cycle).
inline graph read_kusumoto(std::string_view text, const std::string& source = "<input>",
                           const kusumoto_options& options = {}, kusumoto_stats* stats = nullptr) {
  detail::token_reader in(text, source);
  if (in.at_end()) in.fail("empty file: expected 'N M' (variable and function counts)");
  const std::uint64_t n = in.number("the variable count N");
  const std::uint64_t m = in.number("the function count M");
  if (m % 2 != 0) in.fail("the function count M must be even (forward blocks, then their backward blocks), got " + std::to_string(m));
  if (n > (std::uint64_t{1} << 31)) in.fail("too many variables: " + std::to_string(n));

  struct variable {
    std::uint64_t bytes = 0;
    std::string name;
    std::int64_t producer = -1;
  };
  std::vector<variable> vars(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t id = in.number("a variable id");
    if (id != i) in.fail("variable lines must come in id order: expected id " + std::to_string(i) + ", got " + std::to_string(id));
    vars[i].bytes = in.number("the variable's bytes");
    vars[i].name = std::string(in.token("the variable's name"));
  }

  struct function {
    std::vector<std::uint64_t> inputs;
    std::uint64_t output = 0;
    std::string type, attrs;
    bool reads_inputs = false, reads_output = false;
  };
  const std::uint64_t half = m / 2;
  std::vector<function> functions(half);
  auto read_var = [&](const char* what) {
    const std::uint64_t id = in.number(what);
    if (id >= n) in.fail(std::string(what) + " " + std::to_string(id) + " is not a variable (N = " + std::to_string(n) + ")");
    return id;
  };
  for (std::uint64_t b = 0; b < m; ++b) {
    const bool forward = b < half;
    const std::string_view direction = in.token("'forward' or 'backward'");
    if (direction != (forward ? "forward" : "backward"))
      in.fail("block " + std::to_string(b) + " must be '" + (forward ? "forward" : "backward") + "', got '" + std::string(direction) + "'");
    const std::uint64_t k = in.number("the block's input count");
    const std::uint64_t p = in.number("the block's output count");
    function& f = functions[forward ? b : b - half];
    std::vector<std::pair<std::uint64_t, std::string>> tagged;
    for (std::uint64_t i = 0; i < k; ++i) {
      const std::uint64_t id = read_var("input variable");
      tagged.emplace_back(id, std::string(in.token("an input tag")));
    }
    std::vector<std::uint64_t> outputs;
    for (std::uint64_t i = 0; i < p; ++i) outputs.push_back(read_var("output variable"));
    const std::string type(in.token("the function type"));
    const std::string attrs(in.rest_of_line("the attribute line"));
    if (forward) {
      if (p != 1) in.fail("forward block " + std::to_string(b) + " must have exactly one output, has " + std::to_string(p));
      for (auto& [id, tag] : tagged) f.inputs.push_back(id);
      f.output = outputs[0];
      f.type = type;
      f.attrs = attrs;
      if (vars[f.output].producer >= 0)
        in.fail("variable " + std::to_string(f.output) + " is produced by two forward functions");
      vars[f.output].producer = static_cast<std::int64_t>(b);
    } else {
      if (type != f.type)
        in.fail("backward block " + std::to_string(b) + " is a " + type + " but pairs with forward block " +
                std::to_string(b - half) + ", a " + f.type);
      for (auto& [id, tag] : tagged) {
        if (tag == "input" && !(vars[id].producer < 0 && !vars[id].name.empty() && vars[id].name.front() == '/'))
          f.reads_inputs = true;
        else if (tag == "output") f.reads_output = true;
        else if (tag != "input" && tag != "gradient")
          in.fail("backward input tag must be 'gradient', 'input' or 'output', got '" + tag + "'");
      }
    }
  }
  if (!in.at_end()) in.fail("unexpected text after the last block");

  kusumoto_stats counted;
  counted.variables = n;
  counted.functions = half;
  graph_builder builder;
  std::vector<std::int64_t> node_of(n, -1);
  std::vector<char> charged(n, 0);
  for (std::uint64_t i = 0; i < n; ++i) {
    const bool parameter = vars[i].producer < 0 && !vars[i].name.empty() && vars[i].name.front() == '/';
    if (parameter) {
      ++counted.parameters;
      continue;
    }
    node_spec s;
    s.name = detail::is_plain_token(vars[i].name) ? vars[i].name : "v" + std::to_string(i);
    s.bytes = vars[i].bytes;
    if (vars[i].producer < 0) {
      s.op = "input";
      ++counted.inputs;
    }
    node_of[i] = static_cast<std::int64_t>(builder.add(std::move(s)));
  }
  for (const function& f : functions) {
    node_spec& s = builder[static_cast<std::size_t>(node_of[f.output])];
    s.op = detail::op_of_function(f.type);
    s.time = f.type.rfind("Conv", 0) == 0 ? options.conv_time : options.other_time;
    s.reads = f.reads_inputs ? (f.reads_output ? backward_reads::both : backward_reads::inputs)
                             : (f.reads_output ? backward_reads::output : backward_reads::none);
    if (f.attrs != "{}") s.attrs.emplace("ir_attrs", f.attrs);
    counted.edges += f.inputs.size();
    for (std::uint64_t id : f.inputs) {
      if (node_of[id] >= 0) {
        s.inputs.push_back(static_cast<std::size_t>(node_of[id]));
      } else if (!charged[id]) {
        charged[id] = 1;
        s.params += vars[id].bytes;
      }
    }
  }
  if (stats) *stats = counted;
  try {
    return std::move(builder).build();
  } catch (const invalid_graph& e) {
    throw parse_error(source, 0, 0, e.what());
  }
}

/// Writes `g` in Kusumoto et al.'s format: a variable per node (named by the
/// node's name when that is a plain token, else "_"), then a parameter
/// variable "/<name>/W" for each node with parameter bytes; a forward and a
/// backward block per non-input node, in id order. Times and workspaces are
/// not part of the format and are lost.
inline std::string write_kusumoto(const graph& g) {
  std::vector<std::size_t> param_var(g.size(), 0);
  std::size_t variables = g.size();
  for (std::size_t v = 0; v < g.size(); ++v)
    if (g.params(v) > 0) param_var[v] = variables++;
  std::size_t functions = 0;
  for (std::size_t v = 0; v < g.size(); ++v) functions += g.is_input(v) ? 0 : 1;

  std::string out = std::to_string(variables) + " " + std::to_string(2 * functions) + "\n";
  for (std::size_t v = 0; v < g.size(); ++v)
    out += std::to_string(v) + " " + std::to_string(g.bytes(v)) + " " +
           (detail::is_plain_token(g.node_name(v)) ? g.node_name(v) : "_") + "\n";
  for (std::size_t v = 0; v < g.size(); ++v)
    if (g.params(v) > 0) {
      std::string pname = g.node_name(v);
      for (char& c : pname)
        if (std::isspace(static_cast<unsigned char>(c))) c = '_';
      out += std::to_string(param_var[v]) + " " + std::to_string(g.params(v)) + " /" + pname + "/W\n";
    }
  auto type_and_attrs = [&](std::size_t v) {
    std::string attrs = "{}";
    if (auto it = g.attrs(v).find("ir_attrs"); it != g.attrs(v).end() && std::holds_alternative<std::string>(it->second))
      attrs = std::get<std::string>(it->second);
    return detail::function_of_op(g.op(v)) + "\n" + attrs + "\n";
  };
  for (std::size_t v = 0; v < g.size(); ++v) {
    if (g.is_input(v)) continue;
    const bool has_param = g.params(v) > 0;
    out += "forward\n" + std::to_string(g.inputs(v).size() + (has_param ? 1 : 0)) + " 1\n";
    for (node_id p : g.inputs(v)) out += std::to_string(p) + " _\n";
    if (has_param) out += std::to_string(param_var[v]) + " _\n";
    out += std::to_string(v) + "\n" + type_and_attrs(v);
  }
  for (std::size_t v = 0; v < g.size(); ++v) {
    if (g.is_input(v)) continue;
    const bool has_param = g.params(v) > 0;
    std::vector<std::string> inputs{std::to_string(v) + " gradient"};
    if (reads_inputs(g.reads(v))) {
      for (node_id p : g.predecessors(v)) inputs.push_back(std::to_string(p) + " input");
      if (has_param) inputs.push_back(std::to_string(param_var[v]) + " input");
    }
    if (reads_output(g.reads(v))) inputs.push_back(std::to_string(v) + " output");
    std::vector<std::string> outputs;
    for (node_id p : g.predecessors(v))
      if (!g.is_input(p)) outputs.push_back(std::to_string(p));
    if (has_param) outputs.push_back(std::to_string(param_var[v]));
    out += "backward\n" + std::to_string(inputs.size()) + " " + std::to_string(outputs.size()) + "\n";
    for (const auto& line : inputs) out += line + "\n";
    for (const auto& line : outputs) out += line + "\n";
    out += type_and_attrs(v);
  }
  return out;
}

}  // namespace remat::io
