#pragma once

/// \file
/// Plan files (docs/graph-format.md): a plan is written with its schedule and
/// the simulator's figures; a plan is read from explicit steps, from a list of
/// kept tensors, or from stages (lists of node names), all by node name.

#include <remat/config.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
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

/// What makes a plan fit a graph: its node names, each node's operands in
/// call order, sizes and parameter bytes, and which nodes are inputs; not
/// times, ops or the graph's own name, so a re-timed graph takes the same plans.
/// Reads "<nodes>:<16 hex digits>", whatever order the file lists nodes in.
inline std::string graph_fingerprint(const graph& g) {
  // FNV-1a per node, mixed (splitmix64's finaliser) and summed so that node
  // order does not matter; strings carry their length, so fields cannot run together.
  auto mix = [](std::uint64_t h) {
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
    return h ^ (h >> 31);
  };
  std::uint64_t digest = 0;
  for (node_id v = 0; v < g.size(); ++v) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    auto add_number = [&](std::uint64_t x) {
      for (int i = 0; i < 8; ++i, x >>= 8) h = (h ^ (x & 0xff)) * 0x100000001b3ULL;
    };
    auto add_string = [&](std::string_view s) {
      add_number(s.size());
      for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
    };
    add_string(g.node_name(v));
    add_number(g.is_input(v) ? 1 : 0);
    add_number(g.bytes(v));
    add_number(g.params(v));
    add_number(g.inputs(v).size());
    for (node_id p : g.inputs(v)) add_string(g.node_name(p));
    digest += mix(h);
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(digest));
  return std::to_string(g.size()) + ":" + hex;
}

/// Writes a plan for `g` with the figures `sim` gives for it.
inline std::string write_plan_json(const graph& g, const plan& p, const simulation& sim) {
  using nlohmann::json;
  json doc = json::object();
  doc["format"] = "remat-plan";
  doc["version"] = 1;
  doc["graph"] = g.name();
  doc["graph_fingerprint"] = graph_fingerprint(g);
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
  // Names that are not UTF-8 (possible only in a graph made in code) are
  // written with U+FFFD rather than thrown on after a long search.
  return doc.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
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
    reader.fail({"format"}, "format must be \"remat-plan\", got " + detail::json_reader::describe(doc["format"]));
  if (doc.contains("version") && doc["version"] != 1)
    reader.fail({"version"}, doc["version"].is_number()
                                 ? "unsupported plan version " + doc["version"].dump() + " (this remat reads version 1)"
                                 : "plan version must be a number, got " + detail::json_reader::describe(doc["version"]));
  // A plan names its graph; node names alone would let a plan for another
  // graph with the same names through.
  std::string planned_for;
  if (doc.contains("graph")) planned_for = reader.get_string(doc["graph"], {"graph"}, "graph");
  if (!planned_for.empty() && !g.name().empty() && planned_for != g.name())
    reader.fail({"graph"}, "this plan is for graph '" + detail::clip(planned_for) + "', not for graph '" + g.name() + "'");
  if (doc.contains("graph_fingerprint")) {
    const std::string& planned = reader.get_string(doc["graph_fingerprint"], {"graph_fingerprint"}, "graph_fingerprint");
    if (const std::string actual = graph_fingerprint(g); planned != actual)
      reader.fail({"graph_fingerprint"},
                  "this plan is for a graph with other node names, operands or sizes (" +
                      (planned_for.empty() ? "" : "graph '" + detail::clip(planned_for) + "', ") + "graph_fingerprint " +
                      detail::clip(planned) + "), not for graph '" + g.name() + "' (" + actual + ")");
  }
  auto node = [&](const json& value, const json_path& path) {
    const std::string& name = reader.get_string(value, path, "a node name");
    const auto id = g.find(name);
    if (!id) reader.fail(path, "'" + detail::clip(name) + "' is not a node of graph '" + g.name() + "'");
    return *id;
  };
  auto kept = [&] {
    const json& names = doc["kept"];
    if (!names.is_array()) reader.fail({"kept"}, "kept must be an array of node names");
    node_set out(g.size());
    for (std::size_t i = 0; i < names.size(); ++i) out.insert(node(names[i], {"kept", i}));
    return out;
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
      else reader.fail({"steps", i, std::size_t{0}}, "step kind must be compute, recompute, free or backward, got '" + detail::clip(kind) + "'");
      p.steps.push_back({k, node(s[1], {"steps", i, std::size_t{1}})});
    }
    if (doc.contains("kept")) p.kept = kept();
    return p;
  }
  if (doc.contains("kept")) return plan::from_kept(g, kept(), p.method.empty() ? "kept" : p.method);
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
