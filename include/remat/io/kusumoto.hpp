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

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
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

// Tokens and the line they are on, read in place: nothing is allocated ahead
// of what the text holds. A whole line on request (the JSON attribute line may
// hold spaces).
class token_reader {
 public:
  token_reader(std::string_view text, std::string source) : text_(text), source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& reason) const { fail_at(line_, reason); }
  [[noreturn]] void fail_at(std::size_t line, const std::string& reason) const {
    throw parse_error(source_, line, 0, reason);
  }

  bool at_end() {
    skip_space();
    return pos_ == text_.size();
  }

  /// The line the next token starts on (the last line at the end).
  std::size_t line() {
    skip_space();
    return line_;
  }

  /// Bytes not read yet.
  std::size_t remaining() const noexcept { return text_.size() - pos_; }

  /// Appended to the message of a truncated file.
  void note_on_truncation(std::string note) { truncation_note_ = std::move(note); }

  std::string_view token(const char* what) {
    if (at_end()) fail(std::string("truncated file: expected ") + what + truncation_note_);
    const std::size_t start = pos_;
    while (pos_ < text_.size() && !std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    return text_.substr(start, pos_ - start);
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

  /// The rest of the current line if it has text, else the next non-blank line, without
  /// its trailing white space: the writer ends the line with "\n" alone, so a reader that kept
  /// a '\r' or a blank would read back another line than it wrote.
  std::string_view rest_of_line(const char* what) {
    if (at_end()) fail(std::string("truncated file: expected ") + what + truncation_note_);
    std::size_t end = text_.find('\n', pos_);
    if (end == std::string_view::npos) end = text_.size();
    std::string_view out = text_.substr(pos_, end - pos_);
    while (std::isspace(static_cast<unsigned char>(out.back()))) out.remove_suffix(1);
    pos_ = end;
    return out;
  }

 private:
  void skip_space() {
    for (; pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])); ++pos_)
      if (text_[pos_] == '\n') ++line_;
  }

  std::string_view text_;
  std::string source_;
  std::string truncation_note_;
  std::size_t pos_ = 0, line_ = 1;
};

// Whether `s` is well-formed UTF-8 (no overlong forms, surrogates or code
// points past U+10FFFF): names end up in JSON, which holds nothing else.
inline bool is_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t tail = 0;
    unsigned char low = 0x80, high = 0xBF;  // the first continuation byte's range
    if (c >= 0xC2 && c <= 0xDF) {
      tail = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      tail = 2;
      if (c == 0xE0) low = 0xA0;   // overlong
      if (c == 0xED) high = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      tail = 3;
      if (c == 0xF0) low = 0x90;   // overlong
      if (c == 0xF4) high = 0x8F;  // past U+10FFFF
    } else {
      return false;
    }
    if (s.size() - i - 1 < tail) return false;
    for (std::size_t k = 1; k <= tail; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if (k == 1 ? (d < low || d > high) : (d < 0x80 || d > 0xBF)) return false;
    }
    i += tail + 1;
  }
  return true;
}

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
  // The counts size nothing: what they count is stored as it is read, so a
  // header promising more than the file holds ends at its last line. Such a
  // header is named there: a variable line takes at least 6 bytes with its
  // line break ("0 1 _"), a block at least 16 ("backward 0 0 T x").
  if (const std::size_t left = in.remaining(); n > left / 6 || m > left / 16 || 6 * n + 16 * m > left)
    in.note_on_truncation(" (the header's N = " + std::to_string(n) + " and M = " + std::to_string(m) +
                          " cannot fit in the " + std::to_string(left) + (left == 1 ? " byte" : " bytes") + " after it)");

  struct variable {
    std::uint64_t bytes = 0;
    std::string name;
    std::int64_t producer = -1;
    std::size_t line = 0;
  };
  std::vector<variable> vars;
  for (std::uint64_t i = 0; i < n; ++i) {
    variable v;
    v.line = in.line();
    const std::uint64_t id = in.number("a variable id");
    if (id != i) in.fail("variable lines must come in id order: expected id " + std::to_string(i) + ", got " + std::to_string(id));
    v.bytes = in.number("the variable's bytes");
    v.name = std::string(in.token("the variable's name"));
    if (!detail::is_utf8(v.name)) in.fail("variable " + std::to_string(i) + "'s name is not valid UTF-8");
    vars.push_back(std::move(v));
  }

  struct function {
    std::vector<std::uint64_t> inputs;
    std::uint64_t output = 0;
    std::string type, attrs;
    bool reads_inputs = false, reads_output = false;
  };
  const std::uint64_t half = m / 2;
  std::vector<function> functions;
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
    const std::size_t counts_line = in.line();
    const std::uint64_t k = in.number("the block's input count");
    const std::uint64_t p = in.number("the block's output count");
    if (forward && p != 1)
      in.fail_at(counts_line, "forward block " + std::to_string(b) + " must have exactly one output, has " + std::to_string(p));
    function& f = forward ? functions.emplace_back() : functions[b - half];
    for (std::uint64_t i = 0; i < k; ++i) {
      const std::uint64_t id = read_var("input variable");
      const std::string_view tag = in.token("an input tag");
      if (forward) {
        f.inputs.push_back(id);
      } else if (tag == "input") {
        if (!(vars[id].producer < 0 && !vars[id].name.empty() && vars[id].name.front() == '/')) f.reads_inputs = true;
      } else if (tag == "output") {
        f.reads_output = true;
      } else if (tag != "gradient") {
        in.fail("backward input tag must be 'gradient', 'input' or 'output', got '" + std::string(tag) + "'");
      }
    }
    for (std::uint64_t i = 0; i < p; ++i) {
      const std::uint64_t id = read_var("output variable");
      if (!forward) continue;
      if (vars[id].producer >= 0) in.fail("variable " + std::to_string(id) + " is produced by two forward functions");
      vars[id].producer = static_cast<std::int64_t>(b);
      f.output = id;
    }
    const std::size_t type_line = in.line();
    const std::string_view type = in.token("the function type");
    if (!detail::is_utf8(type)) in.fail("the function type is not valid UTF-8");
    const std::string_view attrs = in.rest_of_line("the attribute line");
    if (!detail::is_utf8(attrs)) in.fail("the attribute line is not valid UTF-8");
    if (forward) {
      f.type = type;
      f.attrs = attrs;
    } else if (type != f.type) {
      in.fail_at(type_line, "backward block " + std::to_string(b) + " is a " + std::string(type) +
                                " but pairs with forward block " + std::to_string(b - half) + ", a " + f.type);
    }
  }
  if (!in.at_end()) in.fail("unexpected text after the last block");

  kusumoto_stats counted;
  counted.variables = n;
  counted.functions = half;
  graph_builder builder;
  auto node_name = [&](std::uint64_t i) {
    return detail::is_plain_token(vars[i].name) ? vars[i].name : "v" + std::to_string(i);
  };
  std::vector<std::int64_t> node_of(n, -1);
  std::vector<char> charged(n, 0);
  for (std::uint64_t i = 0; i < n; ++i) {
    const bool parameter = vars[i].producer < 0 && !vars[i].name.empty() && vars[i].name.front() == '/';
    if (parameter) {
      ++counted.parameters;
      continue;
    }
    node_spec s;
    s.name = node_name(i);
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
    // Name the variable line of the node at fault (of its last copy, for a duplicate name).
    std::size_t line = 0;
    for (std::uint64_t i = 0; i < n; ++i)
      if (node_of[i] >= 0 && node_name(i) == e.node()) line = vars[i].line;
    in.fail_at(line, e.what());
  }
}

/// Writes `g` in Kusumoto et al.'s format: a variable per node (named by the
/// node's name when that is a plain token, else "_"), then a parameter
/// variable "/<name>/W" for each node with parameter bytes; a forward and a
/// backward block per non-input node, in id order. Times and workspaces are
/// not part of the format and are lost. Throws `invalid_graph` naming the node
/// for what the format cannot hold and would read back as something else: an op
/// that is not one token, an "ir_attrs" string that is not one trimmed line, or
/// parameter bytes on an input (the IR attaches parameters to functions only).
inline std::string write_kusumoto(const graph& g) {
  for (std::size_t v = 0; v < g.size(); ++v) {
    auto refuse = [&](const std::string& why) {
      throw invalid_graph("cannot write node '" + g.node_name(v) + "' in the Kusumoto IR: " + why, g.node_name(v));
    };
    if (g.is_input(v)) {
      if (g.params(v) > 0) refuse("it is an input with parameter bytes");
      continue;
    }
    const std::string function = detail::function_of_op(g.op(v));
    const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
    if (function.empty() || std::ranges::any_of(function, space) || !detail::is_utf8(function))
      refuse("its op is not one token");
    if (auto it = g.attrs(v).find("ir_attrs"); it != g.attrs(v).end() && std::holds_alternative<std::string>(it->second)) {
      const std::string& attrs = std::get<std::string>(it->second);
      if (attrs.empty() || space(attrs.front()) || space(attrs.back()) || attrs.find('\n') != std::string::npos ||
          !detail::is_utf8(attrs))
        refuse("its ir_attrs is not one UTF-8 line without white space at either end");
    }
  }
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
      // With no operand to tag (a parameter's tag does not count), the node's
      // own output tagged "input" keeps the read for the reader.
      if (g.predecessors(v).empty()) inputs.push_back(std::to_string(v) + " input");
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
