#pragma once

/// \file
/// remat's graph file format (docs/graph-format.md): read and write.
///
/// Reading checks everything and reports the first problem as a parse_error
/// `file:line:column: reason` (truncated JSON, wrong types, unknown fields,
/// unknown operand names, negative or overflowing sizes, cycles). Writing is
/// deterministic, one node per line; writing what was read from a file remat
/// wrote gives back the same bytes.

#include <remat/config.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <remat/error.hpp>
#include <remat/graph/graph.hpp>
#include <remat/io/json_location.hpp>

namespace remat::io {

inline constexpr int graph_format_version = 1;

namespace detail {

using nlohmann::json;

/// Containers nested deeper than this are refused while reading: remat's files
/// need 5 levels, and no later walk over a document can then recurse deeply.
inline constexpr std::size_t max_json_depth = 64;

// `s` cut to about `limit` bytes (at a character boundary), so that no message
// grows with the input.
inline std::string clip(std::string_view s, std::size_t limit = 60) {
  if (s.size() <= limit) return std::string(s);
  while (limit > 0 && (static_cast<unsigned char>(s[limit]) & 0xC0) == 0x80) --limit;
  return std::string(s.substr(0, limit)) + "...";
}

// `s` as a JSON string. Bytes that are not UTF-8 (possible only in a graph
// made in code) become U+FFFD rather than an exception after a long search.
inline std::string quote(const std::string& s) {
  return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
}

// Builds the document as json::parse does, but stops at the first problem
// with its byte offset instead of throwing: a syntax error, a number past the
// largest double, nesting deeper than max_json_depth, a key given twice (which
// would silently keep one of its values).
class document_builder : public nlohmann::json_sax<json> {
 public:
  struct problem {
    std::size_t offset;
    std::string reason;
  };

  // `cursor` follows the parser through `text` (see tracking_iterator).
  document_builder(const char* const* cursor, const char* text) : cursor_(cursor), text_(text) {}

  bool null() override { return value(nullptr); }
  bool boolean(bool b) override { return value(b); }
  bool number_integer(number_integer_t n) override { return value(n); }
  bool number_unsigned(number_unsigned_t n) override { return value(n); }
  bool number_float(number_float_t x, const string_t&) override { return value(x); }
  bool string(string_t& s) override { return value(s); }
  bool binary(binary_t& b) override { return value(json::binary(b)); }
  bool start_object(std::size_t) override { return open(json::object()); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    json& object = *open_.back();
    if (object.contains(k)) return stop(offset(), "duplicate key '" + clip(k) + "'");
    member_ = &object[k];
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    // "[json.exception.parse_error.101] parse error at line 1, column 5: reason",
    // "[json.exception.out_of_range.406] number overflow parsing '1e309'"
    std::string reason = e.what();
    if (auto cut = reason.find("] "); cut != std::string::npos) reason.erase(0, cut + 2);
    if (reason.starts_with("parse error"))
      if (auto cut = reason.find(": "); cut != std::string::npos) reason.erase(0, cut + 2);
    return stop(position > 0 ? position - 1 : 0, clip(reason, 200));
  }

  const std::optional<problem>& failure() const noexcept { return problem_; }
  json document() && { return std::move(root_); }

 private:
  // Offset of the character the parser read last.
  std::size_t offset() const {
    const auto read = static_cast<std::size_t>(*cursor_ - text_);
    return read > 0 ? read - 1 : 0;
  }

  json* place(json v) {
    if (open_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json& parent = *open_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return &parent.back();
    }
    *member_ = std::move(v);
    return member_;
  }
  bool value(json v) {
    place(std::move(v));
    return true;
  }
  bool open(json container) {
    if (open_.size() == max_json_depth)
      return stop(offset(), "JSON nested deeper than " + std::to_string(max_json_depth) + " levels");
    open_.push_back(place(std::move(container)));
    return true;
  }
  bool close() {
    open_.pop_back();
    return true;
  }
  bool stop(std::size_t at, std::string reason) {
    problem_ = problem{at, std::move(reason)};
    return false;
  }

  const char* const* cursor_;
  const char* text_;
  json root_;
  std::vector<json*> open_;  // the containers being filled, outermost first
  json* member_ = nullptr;   // the object member the next value goes to
  std::optional<problem> problem_;
};

// Fails at a path of the document, naming its line.
class json_reader {
 public:
  json_reader(std::string_view text, std::string source) : text_(text), source_(std::move(source)) {}

  [[noreturn]] void fail(const json_path& path, const std::string& reason) const {
    const text_location where = locate(text_, path);
    throw parse_error(source_, where.line, where.column, reason);
  }

  json parse() const {
    if (text_.find_first_not_of(" \t\r\n") == std::string_view::npos)
      throw parse_error(source_, 1, 0, "empty file: expected a JSON document");
    const char* cursor = text_.data();
    document_builder builder(&cursor, text_.data());
    json::sax_parse(tracking_iterator{text_.data(), &cursor}, tracking_iterator{text_.data() + text_.size(), &cursor},
                    &builder);
    if (const auto& problem = builder.failure()) {
      const text_location where = location_of_offset(text_, problem->offset);
      const bool truncated = problem->offset + 1 >= text_.size();
      throw parse_error(source_, where.line, where.column, (truncated ? "truncated JSON: " : "") + problem->reason);
    }
    return std::move(builder).document();
  }

  std::uint64_t get_bytes(const json& value, const json_path& path, const std::string& what) const {
    if (value.is_number_unsigned()) return value.get<std::uint64_t>();
    if (value.is_number_integer()) {
      fail(path, what + " must be a non-negative integer, got " + value.dump());
    }
    if (value.is_number_float()) {
      const double d = value.get<double>();
      if (d >= 18446744073709551616.0) fail(path, what + " does not fit in 64 bits (" + value.dump() + ")");
      fail(path, what + " must be an integer number of bytes, got " + value.dump());
    }
    fail(path, what + " must be an integer, got " + type_name(value));
  }

  double get_time(const json& value, const json_path& path, const std::string& what) const {
    if (!value.is_number()) fail(path, what + " must be a number, got " + type_name(value));
    const double d = value.get<double>();
    if (!std::isfinite(d) || d < 0) fail(path, what + " must be a finite non-negative number, got " + value.dump());
    return d;
  }

  const std::string& get_string(const json& value, const json_path& path, const std::string& what) const {
    if (!value.is_string()) fail(path, what + " must be a string, got " + type_name(value));
    return value.get_ref<const std::string&>();
  }

  static std::string type_name(const json& value) {
    if (value.is_number_float()) return "a number with a fraction";
    if (value.is_number()) return "a number";
    if (value.is_array()) return "an array";
    if (value.is_object()) return "an object";
    if (value.is_null()) return "null";
    return std::string("a ") + value.type_name();
  }

  /// A value as messages show it: a scalar as written (a long string cut
  /// short), an array or object by its type alone.
  static std::string describe(const json& value) {
    if (value.is_array() || value.is_object()) return type_name(value);
    if (value.is_string()) return quote(clip(value.get_ref<const std::string&>()));
    return value.dump();
  }

 private:
  std::string_view text_;
  std::string source_;
};

inline attributes read_attributes(const json_reader& reader, const json& object, json_path path) {
  if (!object.is_object()) reader.fail(path, "attrs must be an object, got " + json_reader::type_name(object));
  attributes out;
  for (const auto& [key, value] : object.items()) {
    path.emplace_back(key);
    const std::string name = "attribute '" + clip(key) + "'";
    auto too_big = [](const json& number) {
      return number.is_number_unsigned() &&
             number.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    };
    if (too_big(value)) reader.fail(path, name + " does not fit a 64-bit signed integer");
    if (value.is_number_integer()) {
      out.emplace(key, value.get<std::int64_t>());
    } else if (value.is_number_float()) {
      out.emplace(key, value.get<double>());
    } else if (value.is_string()) {
      out.emplace(key, value.get<std::string>());
    } else if (value.is_array()) {
      std::vector<std::int64_t> list;
      for (std::size_t i = 0; i < value.size(); ++i) {
        if (!value[i].is_number_integer() || too_big(value[i])) {
          path.emplace_back(i);
          reader.fail(path, name + (too_big(value[i]) ? " does not fit a 64-bit signed integer" : " must be a list of integers"));
        }
        list.push_back(value[i].get<std::int64_t>());
      }
      out.emplace(key, std::move(list));
    } else {
      reader.fail(path, name + " must be an integer, a number, a string or a list of integers");
    }
    path.pop_back();
  }
  return out;
}

inline json attribute_to_json(const attribute_value& value) {
  return std::visit([](const auto& v) { return json(v); }, value);
}

}  // namespace detail

/// Reads a graph in remat's JSON format. `source` names the file in errors.
/// \throws parse_error naming the line of the first problem.
inline graph read_graph_json(std::string_view text, const std::string& source = "<input>") {
  using detail::json;
  const detail::json_reader reader(text, source);
  const json doc = reader.parse();
  if (!doc.is_object()) reader.fail({}, "a remat graph must be a JSON object, got " + detail::json_reader::type_name(doc));

  for (const auto& [key, value] : doc.items())
    if (key != "format" && key != "version" && key != "name" && key != "nodes")
      reader.fail({key}, "unknown top-level field '" + detail::clip(key) + "' (expected format, version, name, nodes)");
  if (doc.contains("format") && doc["format"] != "remat-graph")
    reader.fail({"format"}, "format must be \"remat-graph\", got " + detail::json_reader::describe(doc["format"]));
  if (!doc.contains("version")) reader.fail({}, "missing field 'version' (this remat reads version 1)");
  const json& version = doc["version"];
  if (!version.is_number_integer())
    reader.fail({"version"}, "version must be an integer, got " + detail::json_reader::describe(version) +
                                 " (this remat reads version 1)");
  if (version.get<std::int64_t>() != graph_format_version)
    reader.fail({"version"}, "unsupported version " + version.dump() + " (this remat reads version 1)");
  std::string name;
  if (doc.contains("name")) name = reader.get_string(doc["name"], {"name"}, "name");
  if (!doc.contains("nodes")) reader.fail({}, "missing field 'nodes'");
  const json& nodes = doc["nodes"];
  if (!nodes.is_array()) reader.fail({"nodes"}, "nodes must be an array, got " + detail::json_reader::type_name(nodes));
  if (nodes.empty()) reader.fail({"nodes"}, "the graph has no nodes");

  graph_builder builder(name);
  std::unordered_map<std::string, std::size_t> index;
  index.reserve(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const json& node = nodes[i];
    const json_path at{"nodes", i};
    if (!node.is_object()) reader.fail(at, "node " + std::to_string(i) + " must be an object");
    auto field = [&](const char* key) {
      json_path p = at;
      p.emplace_back(std::string(key));
      return p;
    };
    node_spec s;
    if (!node.contains("name")) reader.fail(at, "node " + std::to_string(i) + " has no name");
    s.name = reader.get_string(node["name"], field("name"), "name");
    if (s.name.empty()) reader.fail(field("name"), "node names must not be empty");
    const std::string label = "node '" + s.name + "': ";
    for (const auto& [key, value] : node.items()) {
      if (key == "name") continue;
      const json_path p = field(key.c_str());
      if (key == "op") s.op = reader.get_string(value, p, label + "op");
      else if (key == "inputs") {
        if (!value.is_array()) reader.fail(p, label + "inputs must be an array of node names");
      } else if (key == "bytes") s.bytes = reader.get_bytes(value, p, label + "bytes");
      else if (key == "time") s.time = reader.get_time(value, p, label + "time");
      else if (key == "params") s.params = reader.get_bytes(value, p, label + "params");
      else if (key == "workspace") s.workspace = reader.get_bytes(value, p, label + "workspace");
      else if (key == "backward_workspace") s.backward_workspace = reader.get_bytes(value, p, label + "backward_workspace");
      else if (key == "backward_time") s.backward_time = reader.get_time(value, p, label + "backward_time");
      else if (key == "backward_reads") {
        const auto reads = parse_backward_reads(reader.get_string(value, p, label + "backward_reads"));
        if (!reads)
          reader.fail(p, label + "backward_reads must be \"none\", \"inputs\", \"output\" or \"both\", got " +
                             detail::json_reader::describe(value));
        s.reads = *reads;
      } else if (key == "attrs") s.attrs = detail::read_attributes(reader, value, p);
      else
        reader.fail(p, label + "unknown field '" + detail::clip(key) +
                           "' (expected op, inputs, bytes, time, params, workspace, backward_workspace, "
                           "backward_time, backward_reads, attrs)");
    }
    if (!node.contains("op")) reader.fail(at, label + "missing field 'op'");
    if (s.op.empty()) reader.fail(field("op"), label + "op must not be empty");
    if (!node.contains("bytes")) reader.fail(at, label + "missing field 'bytes'");
    if (!node.contains("time") && s.op != "input") reader.fail(at, label + "missing field 'time'");
    auto [it, inserted] = index.emplace(s.name, i);
    if (!inserted)
      reader.fail(field("name"), "duplicate node name '" + s.name + "' (also node " + std::to_string(it->second) + ")");
    builder.add(std::move(s));
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!nodes[i].contains("inputs")) continue;
    const json& inputs = nodes[i]["inputs"];
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      const json_path p{"nodes", i, "inputs", k};
      const std::string& operand = reader.get_string(inputs[k], p, "node '" + builder[i].name + "': input");
      auto it = index.find(operand);
      if (it == index.end()) reader.fail(p, "node '" + builder[i].name + "': input '" + detail::clip(operand) + "' does not name a node");
      builder[i].inputs.push_back(it->second);
    }
  }
  try {
    return std::move(builder).build();
  } catch (const invalid_graph& e) {
    json_path at{"nodes"};
    if (auto it = index.find(e.node()); it != index.end()) at.emplace_back(it->second);
    reader.fail(at, e.what());
  }
}

/// Writes `g` in remat's JSON format. Optional fields are written only when
/// they differ from their defaults (backward_reads is always written).
inline std::string write_graph_json(const graph& g) {
  using detail::json;
  using detail::quote;
  std::string out = "{\n  \"format\": \"remat-graph\",\n  \"version\": 1,\n  \"name\": ";
  out += quote(g.name());
  out += ",\n  \"nodes\": [\n";
  for (node_id v = 0; v < g.size(); ++v) {
    out += "    {\"name\": " + quote(g.node_name(v)) + ", \"op\": " + quote(g.op(v));
    if (!g.inputs(v).empty()) {
      out += ", \"inputs\": [";
      bool first = true;
      for (node_id p : g.inputs(v)) {
        out += (first ? "" : ", ") + quote(g.node_name(p));
        first = false;
      }
      out += "]";
    }
    out += ", \"bytes\": " + std::to_string(g.bytes(v));
    if (!(g.is_input(v) && g.time(v) == 0)) out += ", \"time\": " + json(g.time(v)).dump();
    if (g.params(v) != 0) out += ", \"params\": " + std::to_string(g.params(v));
    if (g.workspace(v) != 0) out += ", \"workspace\": " + std::to_string(g.workspace(v));
    if (g.backward_workspace(v) != g.workspace(v))
      out += ", \"backward_workspace\": " + std::to_string(g.backward_workspace(v));
    if (!g.is_input(v)) {
      if (g.backward_time(v) != 2 * g.time(v)) out += ", \"backward_time\": " + json(g.backward_time(v)).dump();
      out += ", \"backward_reads\": \"" + std::string(to_string(g.reads(v))) + "\"";
    }
    if (!g.attrs(v).empty()) {
      json attrs = json::object();
      for (const auto& [key, value] : g.attrs(v)) attrs[key] = detail::attribute_to_json(value);
      out += ", \"attrs\": " + attrs.dump(-1, ' ', false, json::error_handler_t::replace);
    }
    out += v + 1 < g.size() ? "},\n" : "}\n";
  }
  out += "  ]\n}\n";
  return out;
}

}  // namespace remat::io
