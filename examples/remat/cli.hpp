#pragma once

// Shared pieces of the remat command-line tool: loading inputs, printing
// aligned "label  value" reports for people and JSON for scripts.

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <remat/io/load.hpp>
#include <remat/remat.hpp>

namespace remat::cli {

/// A report printed as aligned rows, or as one JSON object with --json.
class report {
 public:
  void row(std::string label, std::string text, nlohmann::json value) {
    rows_.emplace_back(std::move(label), std::move(text));
    json_[rows_.back().first] = std::move(value);
  }
  /// A row whose label varies (say, with the method) under a fixed JSON key.
  void row(std::string label, std::string text, nlohmann::json value, const std::string& key) {
    rows_.emplace_back(std::move(label), std::move(text));
    json_[key] = std::move(value);
  }
  void hidden(const std::string& key, nlohmann::json value) { json_[key] = std::move(value); }
  void print(bool as_json) const {
    if (as_json) {
      fmt::print("{}\n", json_.dump(2));
      return;
    }
    std::size_t width = 0;
    for (const auto& [label, text] : rows_) width = std::max(width, label.size());
    for (const auto& [label, text] : rows_) fmt::print("{:<{}}  {}\n", label, width, text);
  }

 private:
  std::vector<std::pair<std::string, std::string>> rows_;
  nlohmann::json json_ = nlohmann::json::object();
};

/// The files one command writes. Each path is checked when the command starts
/// (before any search): it must not be an input or another output, and a
/// temporary file is created beside it, so a missing directory or a
/// read-only place fails at once. Texts are written to the temporaries and
/// renamed into place only when every one is written: a failed command leaves
/// nothing behind, and no reader ever sees half a file.
class output_files {
 public:
  output_files() = default;
  output_files(const output_files&) = delete;
  output_files& operator=(const output_files&) = delete;
  ~output_files() {
    for (const pending& p : files_) std::filesystem::remove(p.temporary, ignored_);
  }

  /// Reserves `path` for `option` (e.g. "--dot"); an empty path reserves nothing.
  /// \throws remat::error when the path cannot be written or names an input.
  void reserve(const std::string& option, const std::string& path, const std::vector<std::string>& inputs) {
    if (path.empty()) return;
    namespace fs = std::filesystem;
    for (const std::string& input : inputs)
      if (same_file(path, input)) throw error(option + ": '" + path + "' is an input of this command; refusing to overwrite it");
    for (const pending& p : files_)
      if (same_file(path, p.path)) throw error(option + ": '" + path + "' is already the output of " + p.option);
    std::error_code ec;
    if (fs::is_directory(path, ec)) throw error(option + ": '" + path + "' is a directory");
    const fs::path parent = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
    if (!fs::is_directory(parent, ec)) throw error(option + ": cannot write '" + path + "': no directory '" + parent.string() + "'");
    std::string temporary = (parent / ("." + fs::path(path).filename().string() + ".XXXXXX")).string();
    const int fd = ::mkstemp(temporary.data());
    if (fd < 0) throw error(option + ": cannot write '" + path + "': " + std::strerror(errno));
    // mkstemp makes the file private; give it the mode a plain create would.
    const ::mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(fd, 0666 & ~mask);
    ::close(fd);
    files_.push_back({option, path, temporary, {}});
  }

  /// The text `path` will hold; `path` must have been reserved.
  void set(const std::string& path, std::string text) {
    for (pending& p : files_)
      if (p.path == path) p.text = std::move(text);
  }

  /// Writes every file, or none. \throws remat::error naming the file that failed.
  void commit() {
    for (const pending& p : files_) {
      std::ofstream out(p.temporary, std::ios::binary | std::ios::trunc);
      out << p.text;
      out.close();
      if (!out) throw error(p.option + ": cannot write '" + p.path + "'");
    }
    for (pending& p : files_) {
      std::error_code ec;
      std::filesystem::rename(p.temporary, p.path, ec);
      if (ec) throw error(p.option + ": cannot write '" + p.path + "': " + ec.message());
      p.temporary.clear();
    }
    files_.clear();
  }

 private:
  struct pending {
    std::string option, path;
    std::filesystem::path temporary;
    std::string text;
  };

  static bool same_file(const std::string& a, const std::string& b) {
    std::error_code ec;
    if (std::filesystem::equivalent(a, b, ec)) return true;
    const auto canonical_a = std::filesystem::weakly_canonical(a, ec);
    const auto canonical_b = std::filesystem::weakly_canonical(b, ec);
    return !ec && canonical_a == canonical_b;
  }

  std::vector<pending> files_;
  std::error_code ignored_;
};

// Accepts whole numbers of at least `least`, saying so in one line otherwise
// (CLI11's own number checks print their bounds as huge doubles).
inline CLI::Validator whole_number(std::int64_t least) {
  const std::string what = least > 0 ? "a positive whole number" : "a non-negative whole number";
  return CLI::Validator(
      [least, what](std::string& text) -> std::string {
        std::size_t used = 0;
        long long value = 0;
        try {
          value = std::stoll(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != text.size() || value < least) return "expected " + what + ", got '" + text + "'";
        return {};
      },
      least > 0 ? "POSITIVE" : "NONNEGATIVE");
}

/// Checks a number of seconds (--time-limit and the like): finite, positive
/// (or zero when `zero_allowed`) and at most 10^7 s (116 days), so it converts
/// to milliseconds exactly and never reads as "no limit".
inline CLI::Validator seconds_check(bool zero_allowed) {
  return CLI::Validator(
      [zero_allowed](std::string& text) -> std::string {
        const std::string what = zero_allowed ? "a number of seconds from 0 to 10000000"
                                              : "a number of seconds above 0, at most 10000000";
        std::size_t used = 0;
        double value = 0;
        try {
          value = std::stod(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != text.size() || !(value >= 0) || (value == 0 && !zero_allowed) || value > 1e7)
          return "expected " + what + ", got '" + text + "'";
        return {};
      },
      zero_allowed ? "SECONDS>=0" : "SECONDS>0");
}

/// The options `plan` and `explain` share over exact's general plans: the
/// local search's work units and the recompute its plans may take.
inline void add_general_plan_options(CLI::App* cmd, double& general_work, double& max_recompute) {
  cmd->add_option("--general-work", general_work,
                  "work units of the local search over general plans exact runs first past 16 computed nodes "
                  "(0: stage plans only)")
      ->check(CLI::Range(0.0, 1.8e19))
      ->capture_default_str();
  cmd->add_option("--max-recompute", max_recompute,
                  "forward passes exact's general plans may recompute (0: no limit; a stage plan recomputes at most 1)")
      ->check(CLI::Range(0.0, 1e9));
}

/// Seconds (checked by seconds_check) as whole milliseconds, rounded up so a
/// positive limit never becomes zero.
inline std::chrono::milliseconds to_milliseconds(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(seconds * 1000)));
}

// A gap or saving above zero never reads as 0.0%: below a tenth of a percent
// it keeps two significant digits.
inline std::string percent(double fraction) {
  const double p = 100.0 * fraction;
  return p > 0 && p < 0.1 ? fmt::format("{:.2g}%", p) : fmt::format("{:.1f}%", p);
}

/// Live progress of a search on one line of stderr (solve_options::progress):
/// elapsed time, best peak so far, bound and gap, shown once a search has run
/// a second, and only on a terminal.
class progress_line {
 public:
  static bool wanted() { return isatty(STDERR_FILENO) != 0; }
  void operator()(const search_progress& p) {
    if (p.seconds < 1.0) return;
    std::string line = fmt::format("  {:.1f} s, {:.3g} work units", p.seconds, static_cast<double>(p.work));
    if (p.best_peak > 0) line += ", best peak " + format_bytes(p.best_peak);
    if (p.lower_bound > 0) line += ", bound " + format_bytes(p.lower_bound);
    if (p.best_peak > 0 && p.lower_bound > 0)
      line += ", gap " + percent(static_cast<double>(p.best_peak) / static_cast<double>(p.lower_bound) - 1.0);
    fmt::print(stderr, "\r{:<{}}", line, shown_);
    shown_ = std::max(shown_, line.size());
    std::fflush(stderr);
  }
  /// Wipes the line (when one was shown).
  void clear() {
    if (shown_ > 0) fmt::print(stderr, "\r{:<{}}\r", "", shown_);
    shown_ = 0;
  }

 private:
  std::size_t shown_ = 0;
};

inline std::string bytes_with_exact(std::uint64_t bytes) {
  return fmt::format("{} ({} bytes)", format_bytes(bytes), bytes);
}

/// Where a step is, in words: "step 412, backward of 'conv1'".
/// Where the per-op floor is set: "backward of 'c'", with the gradient
/// buffers every schedule holds there when there are any.
inline std::string describe_floor(const graph& g, const op_floor& floor) {
  std::string out = fmt::format("{} of '{}'", floor.backward ? "backward" : "forward", g.node_name(floor.node));
  if (floor.pending_gradients > 0)
    out += fmt::format(", with at least {} of other gradients pending in every schedule",
                       format_bytes(floor.pending_gradients));
  return out;
}

inline std::string describe_cut_floor(const graph& g, const cut_floor& cut) {
  if (cut.after)
    return fmt::format("the values the backward of '{}' reads: held across the backward of '{}' or recomputed "
                       "after it, beside the gradients pending in between",
                       g.node_name(cut.node), g.node_name(*cut.after));
  return fmt::format("the values the backward of '{}' reads: held across its last consumer's backward or "
                     "recomputed beside its pending gradients",
                     g.node_name(cut.node));
}

inline std::string describe_step(const graph& g, const schedule& steps, std::size_t i) {
  if (i >= steps.size()) return fmt::format("step {}", i);
  return fmt::format("step {}, {} of '{}'", i, to_string(steps[i].kind), g.node_name(steps[i].node));
}

/// Adds the standard figures of a simulated plan to a report.
inline void add_figures(report& out, const graph& g, const plan& p, const simulation& sim,
                        const simulation& regular) {
  out.row("method", p.method, p.method);
  const double cut = regular.peak_bytes > 0
                         ? 1.0 - static_cast<double>(sim.peak_bytes) / static_cast<double>(regular.peak_bytes)
                         : 0.0;
  out.row("peak", fmt::format("{}  ({} {} than regular training, {})", bytes_with_exact(sim.peak_bytes),
                              percent(cut < 0 ? -cut : cut), cut < 0 ? "more" : "less", format_bytes(regular.peak_bytes)),
          sim.peak_bytes);
  out.hidden("regular_peak", regular.peak_bytes);
  out.hidden("memory_cut", cut);
  out.row("peak at", describe_step(g, p.steps, sim.peak_step), sim.peak_step);
  out.row("peak holds",
          fmt::format("activations {}, recomputed {}, gradients {}, parameter gradients {}, parameters {}, "
                      "inputs {}, workspace {}",
                      format_bytes(sim.at_peak.activations), format_bytes(sim.at_peak.recomputed),
                      format_bytes(sim.at_peak.gradients), format_bytes(sim.at_peak.parameter_gradients),
                      format_bytes(sim.at_peak.parameters), format_bytes(sim.at_peak.inputs),
                      format_bytes(sim.at_peak.workspace)),
          {{"activations", sim.at_peak.activations},
           {"recomputed", sim.at_peak.recomputed},
           {"gradients", sim.at_peak.gradients},
           {"parameter_gradients", sim.at_peak.parameter_gradients},
           {"parameters", sim.at_peak.parameters},
           {"inputs", sim.at_peak.inputs},
           {"workspace", sim.at_peak.workspace}});
  out.row("recompute", fmt::format("{:.6g} s over {} steps  (overhead {} of forward + backward)",
                                   sim.recompute_time, sim.recompute_steps, percent(sim.overhead())),
          sim.recompute_time);
  out.hidden("overhead", sim.overhead());
  out.hidden("forward_time", sim.forward_time);
  out.hidden("backward_time", sim.backward_time);
  std::size_t kept = 0, recomputed = 0, computed = 0;
  for (node_fate f : node_fates(g, p.steps)) {
    kept += f == node_fate::kept;
    recomputed += f == node_fate::recomputed;
    computed += f != node_fate::input;
  }
  out.row("tensors", fmt::format("{} kept, {} recomputed, {} dropped, of {}", kept, recomputed,
                                 computed - kept - recomputed, computed),
          {{"kept", kept}, {"recomputed", recomputed}, {"computed", computed}});
}

// Each command registers itself on the app; the callback runs it.
void add_info_command(CLI::App& app);
void add_plan_command(CLI::App& app);
void add_simulate_command(CLI::App& app);
void add_pareto_command(CLI::App& app);
void add_explain_command(CLI::App& app);
void add_zoo_command(CLI::App& app);  // cmd_zoo.cpp
void add_gen_command(CLI::App& app);  // cmd_zoo.cpp

}  // namespace remat::cli
