#pragma once

// Shared pieces of the remat command-line tool: loading inputs, printing
// aligned "label  value" reports for people and JSON for scripts.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

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

/// Writes a whole file. \throws remat::error when it cannot.
inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw error("cannot write '" + path + "'");
  out << text;
  if (!out) throw error("cannot write '" + path + "'");
}

inline std::string percent(double fraction) { return fmt::format("{:.1f}%", 100.0 * fraction); }

inline std::string bytes_with_exact(std::uint64_t bytes) {
  return fmt::format("{} ({} bytes)", format_bytes(bytes), bytes);
}

/// Where a step is, in words: "step 412, backward of 'conv1'".
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
