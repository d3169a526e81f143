#pragma once

/// \file
/// Graphviz DOT output of a graph, and of a plan: kept, recomputed and dropped
/// tensors are drawn differently, so `dot -Tsvg` shows what a plan does.

#include <remat/config.hpp>

#include <cstddef>
#include <string>

#include <remat/graph/graph.hpp>
#include <remat/plan/schedule.hpp>
#include <remat/units.hpp>

namespace remat::io {

namespace detail {

inline std::string dot_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

inline std::string dot_quote(const std::string& s) { return "\"" + dot_escape(s) + "\""; }

inline std::string dot_style(node_fate fate) {
  switch (fate) {
    case node_fate::input: return "shape=box, style=filled, fillcolor=\"#cfe2f3\"";
    case node_fate::kept: return "style=filled, fillcolor=\"#93c47d\"";
    case node_fate::recomputed: return "style=\"filled,dashed\", fillcolor=\"#f6b26b\"";
    case node_fate::dropped: return "style=dotted, fontcolor=\"#666666\"";
  }
  return "";
}

inline std::string write_dot(const graph& g, const std::vector<node_fate>* fates) {
  std::string out = "digraph " + dot_quote(g.name().empty() ? "remat" : g.name()) + " {\n";
  out += "  rankdir=TB;\n  node [shape=ellipse, fontname=\"Helvetica\", fontsize=10];\n";
  for (std::size_t v = 0; v < g.size(); ++v) {
    // "\n" is DOT's line break inside a label, so only the names are escaped.
    const std::string label = dot_escape(g.node_name(v)) + "\\n" + dot_escape(g.op(v)) + " " + format_bytes(g.bytes(v));
    out += "  n" + std::to_string(v) + " [label=\"" + label + "\"";
    if (fates) out += ", " + dot_style((*fates)[v]);
    else if (g.is_input(v)) out += ", shape=box";
    out += "];\n";
  }
  for (std::size_t v = 0; v < g.size(); ++v)
    for (node_id s : g.successors(v)) out += "  n" + std::to_string(v) + " -> n" + std::to_string(s) + ";\n";
  if (fates) {
    out += "  subgraph cluster_legend {\n    label=\"plan\"; fontname=\"Helvetica\"; fontsize=10;\n";
    out += "    legend_kept [label=\"kept\", " + dot_style(node_fate::kept) + "];\n";
    out += "    legend_recomputed [label=\"recomputed\", " + dot_style(node_fate::recomputed) + "];\n";
    out += "    legend_dropped [label=\"dropped\", " + dot_style(node_fate::dropped) + "];\n";
    out += "  }\n";
  }
  return out + "}\n";
}

}  // namespace detail

/// DOT text of the graph: one node per op, labelled with name, op and bytes.
inline std::string write_dot(const graph& g) { return detail::write_dot(g, nullptr); }

/// DOT text of the graph under a plan: kept tensors filled green, recomputed
/// ones orange and dashed, dropped ones dotted, inputs as boxes.
inline std::string write_dot(const graph& g, const schedule& steps) {
  const std::vector<node_fate> fates = node_fates(g, steps);
  return detail::write_dot(g, &fates);
}

}  // namespace remat::io
