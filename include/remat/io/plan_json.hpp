#pragma once

/// \file
/// Plan files (docs/graph-format.md): a plan is written with its schedule and
/// the simulator's figures; a plan is read from explicit steps, from a list of
/// kept tensors, or from stages (lists of node names), all by node name.

#include <remat/config.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <queue>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <remat/error.hpp>
#include <remat/graph/graph.hpp>
#include <remat/io/json.hpp>
#include <remat/plan/plan.hpp>
#include <remat/plan/schedule.hpp>
#include <remat/plan/simulate.hpp>

namespace remat::io {

/// Writes a plan for `g` with the figures `sim` gives for it.
inline std::string write_plan_json(const graph& g, const plan& p, const simulation& sim) {
  using nlohmann::json;
  json doc = json::object();
  doc["format"] = "remat-plan";
  doc["version"] = 1;
  doc["graph"] = g.name();
  doc["method"] = p.method;
  doc["figures"] = {{"peak_bytes", sim.peak_bytes},
                    {"peak_step", sim.peak_step},
                    {"forward_time", sim.forward_time},
                    {"recompute_time", sim.recompute_time},
                    {"backward_time", sim.backward_time},
                    {"overhead", sim.overhead()}};
  if (p.kept.universe() == g.size()) {
    json kept = json::array();
    p.kept.for_each([&](std::size_t v) {
      if (!g.is_input(v)) kept.push_back(g.node_name(v));
    });
    doc["kept"] = std::move(kept);
  }
  if (p.stage_of.size() == g.size()) {
    // Each stage lists its nodes in the order the plan runs them, so the
    // stages alone rebuild the same schedule.
    const std::vector<node_id> sequence = remat::detail::execution_sequence(g, p.order);
    json stages = json::array();
    std::vector<std::uint32_t> numbers;
    for (std::size_t v = 0; v < g.size(); ++v)
      if (!g.is_input(v)) numbers.push_back(p.stage_of[v]);
    std::sort(numbers.begin(), numbers.end());
    numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
    for (std::uint32_t number : numbers) {
      json stage = json::array();
      for (node_id v : sequence)
        if (!g.is_input(v) && p.stage_of[v] == number) stage.push_back(g.node_name(v));
      stages.push_back(std::move(stage));
    }
    doc["stages"] = std::move(stages);
  }
  json steps = json::array();
  for (const step& s : p.steps) steps.push_back(json::array({to_string(s.kind), g.node_name(s.node)}));
  doc["steps"] = std::move(steps);
  return doc.dump(1) + "\n";
}

namespace detail {

// The execution order the stages are listed in: empty (the id order) when each
// stage lists its nodes by ascending id, else the topological order closest to
// the listing (Kahn's algorithm taking the earliest listed ready node; graph
// inputs first), so a listing that puts a node before its operand still runs.
inline std::vector<node_id> listed_order(const graph& g, const nlohmann::json& stages,
                                         const std::vector<std::uint32_t>& stage_of) {
  std::vector<std::size_t> rank(g.size(), 0);
  std::size_t next = g.size();  // inputs keep ranks below every listed node
  bool ascending = true;
  for (std::size_t v = 0; v < g.size(); ++v)
    if (g.is_input(v)) rank[v] = v;
  for (const auto& stage : stages) {
    node_id previous = 0;
    bool first = true;
    for (const auto& name : stage) {
      const node_id v = *g.find(name.get<std::string>());
      if (!first && v < previous) ascending = false;
      previous = v;
      first = false;
      rank[v] = next++;
    }
  }
  if (ascending) return {};
  std::vector<std::size_t> waiting(g.size());
  using entry = std::pair<std::pair<std::uint32_t, std::size_t>, node_id>;  // (stage, listed rank), node
  std::priority_queue<entry, std::vector<entry>, std::greater<>> ready;
  auto key = [&](node_id v) { return std::pair(g.is_input(v) ? 0 : stage_of[v] + 1, rank[v]); };
  for (std::size_t v = 0; v < g.size(); ++v) {
    waiting[v] = g.predecessors(v).size();
    if (waiting[v] == 0) ready.push({key(static_cast<node_id>(v)), static_cast<node_id>(v)});
  }
  std::vector<node_id> order;
  order.reserve(g.size());
  while (!ready.empty()) {
    const node_id v = ready.top().second;
    ready.pop();
    order.push_back(v);
    for (node_id s : g.successors(v))
      if (--waiting[s] == 0) ready.push({key(s), s});
  }
  return order;
}

}  // namespace detail

/// Reads a plan for `g`. It uses "steps" when present, else builds the schedule
/// from "kept" (schedule_from_kept) or "stages" (schedule_from_stages, each
/// stage run in the order it lists its nodes; see detail::listed_order).
/// \throws parse_error naming the line of the first problem.
inline plan read_plan_json(std::string_view text, const graph& g, const std::string& source = "<input>") {
  using nlohmann::json;
  const detail::json_reader reader(text, source);
  const json doc = reader.parse();
  if (!doc.is_object()) reader.fail({}, "a remat plan must be a JSON object");
  if (doc.contains("format") && doc["format"] != "remat-plan")
    reader.fail({"format"}, "format must be \"remat-plan\", got " + doc["format"].dump());
  if (doc.contains("version") && doc["version"] != 1)
    reader.fail({"version"}, "unsupported plan version " + doc["version"].dump() + " (this remat reads version 1)");
  auto node = [&](const json& value, const json_path& path) {
    const std::string& name = reader.get_string(value, path, "a node name");
    const auto id = g.find(name);
    if (!id) reader.fail(path, "'" + name + "' is not a node of graph '" + g.name() + "'");
    return *id;
  };
  plan p;
  if (doc.contains("method")) p.method = reader.get_string(doc["method"], {"method"}, "method");
  if (doc.contains("steps")) {
    const json& steps = doc["steps"];
    if (!steps.is_array()) reader.fail({"steps"}, "steps must be an array of [kind, node] pairs");
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const json& s = steps[i];
      if (!s.is_array() || s.size() != 2) reader.fail({"steps", i}, "each step must be a [kind, node] pair");
      const std::string& kind = reader.get_string(s[0], {"steps", i, std::size_t{0}}, "a step kind");
      step_kind k;
      if (kind == "compute") k = step_kind::compute;
      else if (kind == "recompute") k = step_kind::recompute;
      else if (kind == "free") k = step_kind::free;
      else if (kind == "backward") k = step_kind::backward;
      else reader.fail({"steps", i, std::size_t{0}}, "step kind must be compute, recompute, free or backward, got '" + kind + "'");
      p.steps.push_back({k, node(s[1], {"steps", i, std::size_t{1}})});
    }
    if (doc.contains("kept")) {
      p.kept = node_set(g.size());
      for (std::size_t i = 0; i < doc["kept"].size(); ++i) p.kept.insert(node(doc["kept"][i], {"kept", i}));
    }
    return p;
  }
  if (doc.contains("kept")) {
    const json& kept = doc["kept"];
    if (!kept.is_array()) reader.fail({"kept"}, "kept must be an array of node names");
    node_set keep(g.size());
    for (std::size_t i = 0; i < kept.size(); ++i) keep.insert(node(kept[i], {"kept", i}));
    return plan::from_kept(g, std::move(keep), p.method.empty() ? "kept" : p.method);
  }
  if (doc.contains("stages")) {
    const json& stages = doc["stages"];
    if (!stages.is_array()) reader.fail({"stages"}, "stages must be an array of arrays of node names");
    std::vector<std::uint32_t> stage_of(g.size(), UINT32_MAX);
    for (std::size_t i = 0; i < stages.size(); ++i) {
      if (!stages[i].is_array()) reader.fail({"stages", i}, "each stage must be an array of node names");
      for (std::size_t k = 0; k < stages[i].size(); ++k) {
        const node_id v = node(stages[i][k], {"stages", i, k});
        if (stage_of[v] != UINT32_MAX) reader.fail({"stages", i, k}, "'" + g.node_name(v) + "' is in two stages");
        stage_of[v] = static_cast<std::uint32_t>(i);
      }
    }
    for (std::size_t v = 0; v < g.size(); ++v)
      if (!g.is_input(v) && stage_of[v] == UINT32_MAX) reader.fail({"stages"}, "'" + g.node_name(v) + "' is in no stage");
    try {
      return plan::from_stages(g, stage_of, p.method.empty() ? "stages" : p.method, detail::listed_order(g, stages, stage_of));
    } catch (const error& e) {
      reader.fail({"stages"}, e.what());
    }
  }
  reader.fail({}, "a plan needs \"steps\", \"kept\" or \"stages\"");
}

}  // namespace remat::io
