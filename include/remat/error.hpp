#pragma once

/// \file
/// Exceptions for malformed input. Expected outcomes (an infeasible budget, a
/// solver cap reached) are reported in result values, never thrown.

#include <remat/config.hpp>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

namespace remat {

/// Base of every exception remat throws on bad input.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A graph breaks a documented precondition: a cycle, a dangling input, a
/// duplicate name, a negative or overflowing size, no nodes at all.
/// `node()` names the offending node where there is one (empty otherwise).
class invalid_graph : public error {
 public:
  explicit invalid_graph(const std::string& what, std::string node = {})
      : error(what), node_(std::move(node)) {}
  const std::string& node() const noexcept { return node_; }

 private:
  std::string node_;
};

/// A file could not be read. The message reads `file:line:column: reason`
/// (column omitted when 0), like a compiler diagnostic.
class parse_error : public error {
 public:
  parse_error(std::string file, std::size_t line, std::size_t column, std::string reason)
      : error(compose(file, line, column, reason)),
        file_(std::move(file)),
        line_(line),
        column_(column),
        reason_(std::move(reason)) {}

  const std::string& file() const noexcept { return file_; }
  std::size_t line() const noexcept { return line_; }
  std::size_t column() const noexcept { return column_; }
  const std::string& reason() const noexcept { return reason_; }

 private:
  static std::string compose(const std::string& file, std::size_t line, std::size_t column,
                             const std::string& reason) {
    std::string where = file.empty() ? std::string("<input>") : file;
    if (line > 0) where += ":" + std::to_string(line);
    if (line > 0 && column > 0) where += ":" + std::to_string(column);
    return where + ": " + reason;
  }

  std::string file_;
  std::size_t line_;
  std::size_t column_;
  std::string reason_;
};

/// A schedule cannot be executed: `step()` is the index of the first offending
/// step (the schedule's length when it ends too early), `node()` its node name.
class invalid_schedule : public error {
 public:
  invalid_schedule(std::size_t step, std::string node, const std::string& reason)
      : error("step " + std::to_string(step) + (node.empty() ? "" : " ('" + node + "')") + ": " +
              reason),
        step_(step),
        node_(std::move(node)) {}

  std::size_t step() const noexcept { return step_; }
  const std::string& node() const noexcept { return node_; }

 private:
  std::size_t step_;
  std::string node_;
};

}  // namespace remat
