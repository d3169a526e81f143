#pragma once

/// \file
/// Loading a graph file whatever its format: remat JSON (starts with '{') or
/// Kusumoto et al.'s text IR (starts with a number).

#include <remat/config.hpp>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <system_error>

#include <remat/error.hpp>
#include <remat/graph/graph.hpp>
#include <remat/io/json.hpp>
#include <remat/io/kusumoto.hpp>
#include <remat/units.hpp>

namespace remat::io {

/// The largest graph or plan file remat reads, far above any real graph's.
inline constexpr std::size_t max_text_bytes = std::size_t{4} << 30;

/// The whole file as text. \throws remat::error when it cannot be read.
inline std::string read_text_file(const std::filesystem::path& path) {
  // A directory opens as a stream that reads nothing, which would be reported
  // as an empty file.
  // A device such as /dev/zero never ends; pipes and files do, but a pipe
  // can still run on, so at most max_text_bytes are read.
  std::error_code ignored;
  if (std::filesystem::is_directory(path, ignored)) throw error("'" + path.string() + "' is a directory");
  if (std::filesystem::is_character_file(path, ignored) || std::filesystem::is_block_file(path, ignored))
    throw error("'" + path.string() + "' is a device, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error("cannot open '" + path.string() + "': " + std::strerror(errno));
  std::string text;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    if (text.size() + static_cast<std::size_t>(in.gcount()) > max_text_bytes)
      throw error("'" + path.string() + "' is larger than " + format_bytes(max_text_bytes) + ", more than remat reads");
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) throw error("cannot read '" + path.string() + "'");
  return text;
}

enum class graph_format { json, kusumoto };

/// Loads a graph, detecting its format from its first character unless told.
/// A remat JSON graph without a name takes the file's stem.
/// \throws remat::error / parse_error naming the file and line.
inline graph load_graph(const std::filesystem::path& path, std::optional<graph_format> format = std::nullopt) {
  const std::string text = read_text_file(path);
  const std::string source = path.string();
  if (!format) {
    const std::size_t first = text.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) throw parse_error(source, 1, 0, "empty file: expected a graph");
    if (text[first] == '{') format = graph_format::json;
    else if (std::isdigit(static_cast<unsigned char>(text[first]))) format = graph_format::kusumoto;
    else
      throw parse_error(source, io::location_of_offset(text, first).line, 0,
                        "not a graph file: expected remat JSON ('{') or Kusumoto IR (a number)");
  }
  graph g = *format == graph_format::json ? read_graph_json(text, source) : read_kusumoto(text, source);
  if (g.name().empty()) g.set_name(path.stem().string());
  return g;
}

}  // namespace remat::io
