#pragma once

// The pictures of `remat explain`: the memory timeline of a training step by
// category, and the graph under a plan (kept / recomputed / freed values,
// recompute segments outlined, repeated blocks collapsed).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/core.h>

#include <remat/report/explain.hpp>
#include <remat/units.hpp>

#include "svg.hpp"

namespace remat::cli::svg {

inline std::string part_color(memory_part p) {
  switch (p) {
    case memory_part::parameters: return "#7f7f7f";
    case memory_part::optimizer_state: return "#c7c7c7";
    case memory_part::parameter_gradients: return "#c49c94";
    case memory_part::inputs: return "#9ecae1";
    case memory_part::activations: return "#2ca02c";
    case memory_part::recomputed: return "#ff7f0e";
    case memory_part::gradients: return "#9467bd";
    case memory_part::workspace: return "#e377c2";
  }
  return "#000000";
}

inline std::string fate_color(node_fate f) {
  switch (f) {
    case node_fate::input: return "#c6dbef";
    case node_fate::kept: return "#74c476";
    case node_fate::recomputed: return "#fdae6b";
    case node_fate::dropped: return "#f4f4f4";
  }
  return "#ffffff";
}

inline std::string fate_label(node_fate f) {
  switch (f) {
    case node_fate::input: return "graph input (resident)";
    case node_fate::kept: return "kept for the backward";
    case node_fate::recomputed: return "freed, recomputed in the backward";
    case node_fate::dropped: return "freed after the forward";
  }
  return "";
}

/// One plan of a picture and its title.
struct plan_panel {
  std::string title;
  const plan_memory* memory = nullptr;
};

namespace detail {

// The first step that belongs to the backward phase (a recompute or a backward).
inline std::size_t backward_start(const schedule& steps) {
  for (std::size_t i = 0; i < steps.size(); ++i)
    if (steps[i].kind != step_kind::compute && steps[i].kind != step_kind::free) return i;
  return steps.size();
}

// Samples of a timeline no denser than one per pixel: each sample stands for
// a run of steps [first, last] and shows its step of most bytes by `weight`,
// so no peak disappears.
template <class Weight>
std::vector<std::tuple<std::size_t, std::size_t, std::size_t>> samples(std::size_t steps, double pixels, Weight&& weight) {
  const auto per_sample = static_cast<std::size_t>(std::max(1.0, std::ceil(static_cast<double>(steps) / pixels)));
  std::vector<std::tuple<std::size_t, std::size_t, std::size_t>> out;
  for (std::size_t first = 0; first < steps; first += per_sample) {
    const std::size_t last = std::min(steps, first + per_sample) - 1;
    std::size_t best = first;
    for (std::size_t i = first; i <= last; ++i)
      if (weight(i) > weight(best)) best = i;
    out.emplace_back(first, last, best);
  }
  return out;
}

// Stacked areas of `parts` over a timeline, in frame f (x = step, y = bytes / unit).
inline std::string stacked_areas(const frame& f, const plan_memory& m, const std::vector<memory_part>& parts, double unit) {
  const std::size_t n = m.figures.timeline.size();
  auto stacked = [&](std::size_t i) {
    std::uint64_t sum = 0;
    for (memory_part p : parts) sum += m.at(i)[p];
    return sum;
  };
  const auto picked = samples(n, f.width, stacked);
  std::string out;
  std::vector<double> below(picked.size(), 0.0);
  for (memory_part p : parts) {
    std::vector<double> above(picked.size());
    bool any = false;
    for (std::size_t j = 0; j < picked.size(); ++j) {
      const std::uint64_t bytes = m.at(std::get<2>(picked[j]))[p];
      any = any || bytes > 0;
      above[j] = below[j] + static_cast<double>(bytes) / unit;
    }
    if (any) {
      std::string path;
      for (std::size_t j = 0; j < picked.size(); ++j)
        path += fmt::format("{}{:.1f},{:.1f} L{:.1f},{:.1f}", j == 0 ? "M" : " L", f.px(static_cast<double>(std::get<0>(picked[j]))),
                            f.py(above[j]), f.px(static_cast<double>(std::get<1>(picked[j]) + 1)), f.py(above[j]));
      for (std::size_t j = picked.size(); j-- > 0;)
        path += fmt::format(" L{:.1f},{:.1f} L{:.1f},{:.1f}", f.px(static_cast<double>(std::get<1>(picked[j]) + 1)),
                            f.py(below[j]), f.px(static_cast<double>(std::get<0>(picked[j]))), f.py(below[j]));
      out += fmt::format("<path d=\"{} Z\" fill=\"{}\" stroke=\"none\"/>\n", path, part_color(p));
    }
    below = std::move(above);
  }
  return out;
}

}  // namespace detail

/// The memory of every step of each plan, stacked by what it is for: above,
/// all training memory on one scale; below, only what a plan changes (values
/// kept and recomputed, activation gradients, workspace) on its own scale.
/// Dashed lines: the per-op floor and the budget. Steps beyond one per pixel
/// are sampled by their largest.
inline std::string memory_timeline(const std::string& title, const graph& g, const std::vector<plan_panel>& panels,
                                   std::uint64_t floor_bytes, std::optional<std::uint64_t> budget) {
  const double left = 84, gap = 70, right = 24;
  const double panel_width = std::clamp((1280 - left - right - gap * static_cast<double>(panels.size() - 1)) /
                                            static_cast<double>(panels.size()),
                                        300.0, 560.0);
  const double width = left + right + panel_width * static_cast<double>(panels.size()) +
                       gap * static_cast<double>(panels.size() - 1);
  const double top_row = 78, top_height = 260, bottom_row = top_row + top_height + 90, bottom_height = 180;
  const double height = bottom_row + bottom_height + 96;

  std::uint64_t highest = floor_bytes, highest_changing = 0;
  std::vector<memory_part> all_parts(std::begin(memory_parts), std::end(memory_parts)), changing, present;
  for (memory_part p : all_parts)
    if (plan_dependent(p)) changing.push_back(p);
  for (const plan_panel& panel : panels) {
    highest = std::max(highest, panel.memory->peak_bytes());
    for (std::size_t i = 0; i < panel.memory->figures.timeline.size(); ++i) {
      const training_memory at = panel.memory->at(i);
      std::uint64_t sum = 0;
      for (memory_part p : changing) sum += at[p];
      highest_changing = std::max(highest_changing, sum);
    }
  }
  if (budget) highest = std::max(highest, *budget);
  for (memory_part p : all_parts)
    for (const plan_panel& panel : panels)
      if (std::any_of(panel.memory->figures.timeline.begin(), panel.memory->figures.timeline.end(),
                      [&](const memory_breakdown& b) { return training_memory{b, panel.memory->optimizer_state}[p] > 0; })) {
        present.push_back(p);
        break;
      }
  const byte_unit unit = unit_for(highest), changing_unit = unit_for(std::max<std::uint64_t>(highest_changing, 1));

  std::string out = open_document(width, height, title);
  out += fmt::format("<text x=\"16\" y=\"44\" fill=\"#444\">Memory while each step of one training step runs, "
                     "stacked by what it holds ({}). Steps: compute, free, recompute and backward steps in order.</text>\n",
                     g.name());
  for (std::size_t k = 0; k < panels.size(); ++k) {
    const plan_memory& m = *panels[k].memory;
    const double x = left + static_cast<double>(k) * (panel_width + gap);
    const auto steps = static_cast<double>(std::max<std::size_t>(m.figures.timeline.size(), 1));
    frame full{x, top_row, panel_width, top_height, 0, steps, 0, static_cast<double>(highest) * 1.18 / unit.divisor};
    frame part{x, bottom_row, panel_width, bottom_height, 0, steps, 0,
               static_cast<double>(std::max<std::uint64_t>(highest_changing, 1)) * 1.18 / changing_unit.divisor};
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-weight=\"bold\">{}: peak {}</text>\n", x, top_row - 10,
                       escape(panels[k].title), format_bytes(m.peak_bytes()));
    out += axes(full, "step", k == 0 ? "training memory (" + unit.name + ")" : "");
    out += detail::stacked_areas(full, m, all_parts, unit.divisor);
    out += reference_line(full, false, static_cast<double>(floor_bytes) / unit.divisor, "per-op floor", "#333333");
    if (budget) out += reference_line(full, false, static_cast<double>(*budget) / unit.divisor, "budget", "#d62728");
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-weight=\"bold\">{}: values and gradients only</text>\n", x,
                       bottom_row - 10, escape(panels[k].title));
    out += axes(part, "step", k == 0 ? "what a plan changes (" + changing_unit.name + ")" : "");
    out += detail::stacked_areas(part, m, changing, changing_unit.divisor);
    const double turn = static_cast<double>(detail::backward_start(m.p.steps));
    for (const frame* f : {&full, &part})
      out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#333\" stroke-dasharray=\"2 3\"/>\n"
                         "<text x=\"{3:.1f}\" y=\"{4}\" text-anchor=\"end\" fill=\"#333\" font-size=\"11\">forward</text>"
                         "<text x=\"{5:.1f}\" y=\"{4}\" fill=\"#333\" font-size=\"11\">backward</text>\n",
                         f->px(turn), f->top, f->top + f->height, f->px(turn) - 4, f->top + 13, f->px(turn) + 4);
    const double peak_x = full.px(static_cast<double>(m.figures.peak_step) + 0.5);
    const double peak_y = full.py(static_cast<double>(m.peak_bytes()) / unit.divisor);
    out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\"/>\n",
                       peak_x, peak_y);
    const bool right_half = peak_x > x + panel_width / 2;
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#d62728\"{}>peak, step {}</text>\n",
                       right_half ? peak_x - 8 : peak_x + 8, peak_y - 8, right_half ? " text-anchor=\"end\"" : "",
                       m.figures.peak_step);
  }
  double legend_x = left;
  const double legend_y = height - 22;
  for (memory_part p : present) {
    out += legend_entry(legend_x, legend_y, part_color(p), std::string(to_string(p)));
    legend_x += 30 + text_width(std::string(to_string(p)));
  }
  return out + close_document();
}

namespace detail {

// A box of the graph picture: one node, a module (nodes sharing a name
// prefix), or a run of identical consecutive modules drawn once.
struct unit {
  std::vector<node_id> nodes;  // the first instance's nodes, ascending
  std::vector<node_id> all;    // every node drawn by the box
  std::string label;
  std::string parent;          // the name prefix of the module's parent
  std::size_t repeats = 1;
  bool single = true;
};

inline std::vector<std::string> name_parts(const std::string& name) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  for (std::size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', begin)) {
    parts.push_back(name.substr(begin, dot - begin));
    begin = dot + 1;
  }
  parts.push_back(name.substr(begin));
  return parts;
}

inline std::string join(const std::vector<std::string>& parts, std::size_t count) {
  std::string out;
  for (std::size_t i = 0; i < count; ++i) out += (i ? "." : "") + parts[i];
  return out;
}

// `text` shortened to `most` characters by dropping its beginning, which
// names what is common to its neighbours.
inline std::string elide_left(const std::string& text, std::size_t most) {
  if (text.size() <= most) return text;
  return "…" + text.substr(text.size() - (most - 1));
}

// Modules by dotted name: a prefix whose nodes number more than `largest` is
// split into its children, recursively; a name with no further parts is a node
// of its own. Units come in the order of their first node.
inline void split_by_name(const graph& g, const std::vector<node_id>& nodes, std::size_t depth, std::size_t largest,
                          std::vector<unit>& out) {
  std::vector<std::string> keys;
  std::map<std::string, std::vector<node_id>> children;
  std::map<std::string, bool> leaf;
  for (node_id v : nodes) {
    const std::vector<std::string> parts = name_parts(g.node_name(v));
    const bool is_leaf = parts.size() <= depth + 1;
    const std::string key = is_leaf ? g.node_name(v) : join(parts, depth + 1);
    auto [it, fresh] = children.try_emplace(key);
    if (fresh) keys.push_back(key);
    it->second.push_back(v);
    leaf[key] = leaf[key] || is_leaf;
  }
  for (const std::string& key : keys) {
    const std::vector<node_id>& members = children[key];
    if (members.size() > largest && !leaf[key]) {
      split_by_name(g, members, depth + 1, largest, out);
      continue;
    }
    unit u;
    u.nodes = members;
    u.all = members;
    u.label = key;
    u.parent = join(name_parts(key), depth);
    u.single = members.size() == 1;
    out.push_back(std::move(u));
  }
}

// What makes two modules look the same: their ops, fates and internal edges.
inline std::vector<std::string> signature(const graph& g, const unit& u, const std::vector<node_fate>& fates) {
  std::vector<std::string> sig;
  for (std::size_t i = 0; i < u.nodes.size(); ++i) {
    std::string s = g.op(u.nodes[i]) + "/" + std::string(to_string(fates[u.nodes[i]]));
    for (node_id p : g.predecessors(u.nodes[i])) {
      const auto at = std::lower_bound(u.nodes.begin(), u.nodes.end(), p);
      if (at != u.nodes.end() && *at == p) s += "<" + std::to_string(at - u.nodes.begin());
    }
    sig.push_back(std::move(s));
  }
  return sig;
}

// Consecutive siblings that look the same become one box drawn with "×k".
inline std::vector<unit> collapse_repeats(const graph& g, std::vector<unit> units, const std::vector<node_fate>& fates) {
  std::vector<unit> out;
  std::vector<std::string> last;
  for (unit& u : units) {
    std::vector<std::string> sig = signature(g, u, fates);
    if (!out.empty() && !g.is_input(u.nodes.front()) && out.back().parent == u.parent && sig == last) {
      unit& run = out.back();
      run.all.insert(run.all.end(), u.all.begin(), u.all.end());
      ++run.repeats;
      const std::vector<std::string> parts = name_parts(u.label);
      run.label = run.label.substr(0, run.label.find(" … ")) + " … " + parts.back();
      continue;
    }
    last = std::move(sig);
    out.push_back(std::move(u));
  }
  return out;
}

struct placed_unit {
  double x = 0, y = 0, w = 0, h = 0;
};

}  // namespace detail

/// How a graph picture draws a plan.
struct graph_picture_options {
  std::size_t node_level = 60;    ///< graphs up to this many nodes: one box per node
  std::size_t largest_module = 64;  ///< split name prefixes with more nodes into their children
  std::size_t rows_per_column = 24;
};

namespace detail {

// One plan's graph, laid out in layers top to bottom (longest path from the
// inputs), wrapped into columns of `rows_per_column` layers. Returns the SVG
// fragment and its size; (x, y) is the top left corner.
inline std::string graph_panel(const graph& g, const plan_panel& panel, double x0, double y0,
                               const graph_picture_options& o, double& width, double& height) {
  const std::vector<node_fate> fates = node_fates(g, panel.memory->p.steps);
  const bool node_level = g.size() <= o.node_level;
  std::vector<unit> units;
  if (node_level) {
    for (node_id v = 0; v < g.size(); ++v) units.push_back({{v}, {v}, g.node_name(v), "", 1, true});
  } else {
    std::vector<node_id> all(g.size());
    std::iota(all.begin(), all.end(), node_id{0});
    split_by_name(g, all, 0, o.largest_module, units);
    std::sort(units.begin(), units.end(), [](const unit& a, const unit& b) { return a.nodes.front() < b.nodes.front(); });
    units = collapse_repeats(g, std::move(units), fates);
  }
  const std::size_t n = units.size();
  std::vector<std::size_t> unit_of(g.size());
  for (std::size_t k = 0; k < n; ++k)
    for (node_id v : units[k].all) unit_of[v] = k;
  std::vector<std::vector<std::size_t>> preds(n), succs(n);
  for (node_id v = 0; v < g.size(); ++v)
    for (node_id s : g.successors(v))
      if (unit_of[v] != unit_of[s]) {
        preds[unit_of[s]].push_back(unit_of[v]);
        succs[unit_of[v]].push_back(unit_of[s]);
      }
  for (auto* lists : {&preds, &succs})
    for (auto& l : *lists) {
      std::sort(l.begin(), l.end());
      l.erase(std::unique(l.begin(), l.end()), l.end());
    }

  // Longest-path layers (Kahn); boxes left on a cycle of modules go below.
  std::vector<std::size_t> layer(n, 0), pending(n);
  std::vector<std::size_t> ready;
  for (std::size_t k = 0; k < n; ++k)
    if ((pending[k] = preds[k].size()) == 0) ready.push_back(k);
  std::vector<char> done(n, 0);
  std::size_t deepest = 0;
  while (!ready.empty()) {
    const std::size_t k = ready.back();
    ready.pop_back();
    done[k] = 1;
    for (std::size_t p : preds[k]) layer[k] = std::max(layer[k], layer[p] + 1);
    deepest = std::max(deepest, layer[k]);
    for (std::size_t s : succs[k])
      if (--pending[s] == 0) ready.push_back(s);
  }
  for (std::size_t k = 0; k < n; ++k)
    if (!done[k]) layer[k] = ++deepest;
  // Graph inputs sit just above their first consumer.
  for (std::size_t k = 0; k < n; ++k)
    if (preds[k].empty() && !succs[k].empty()) {
      std::size_t first = layer[succs[k].front()];
      for (std::size_t s : succs[k]) first = std::min(first, layer[s]);
      layer[k] = first > 0 ? first - 1 : 0;
    }
  std::size_t layers = 0;
  for (std::size_t k = 0; k < n; ++k) layers = std::max(layers, layer[k] + 1);

  std::vector<std::vector<std::size_t>> rows(layers);
  for (std::size_t k = 0; k < n; ++k) rows[layer[k]].push_back(k);

  const double box_w = node_level ? 156 : 270, box_h = node_level ? 34 : 40, gap_x = 18,
               row_h = box_h + (node_level ? 22 : 16), col_gap = 56;
  const std::size_t columns = (layers + o.rows_per_column - 1) / o.rows_per_column;
  const std::size_t per_column = (layers + columns - 1) / columns;
  // Each box goes under the mean centre of its operands in the same column;
  // a row keeps that order without overlap, centred where its boxes wanted to be.
  std::vector<double> centre(n, 0);
  std::vector<placed_unit> box(n);
  double column_x = x0;
  height = 0;
  for (std::size_t c = 0; c < columns; ++c) {
    const std::size_t first_row = c * per_column, end_row = std::min(layers, first_row + per_column);
    double low = 1e300, high = -1e300;
    for (std::size_t r = first_row; r < end_row; ++r) {
      std::vector<std::pair<double, std::size_t>> wanted;
      double next = 0;
      for (std::size_t k : rows[r]) {
        double sum = 0;
        std::size_t count = 0;
        for (std::size_t p : preds[k])
          if (layer[p] < r && layer[p] >= first_row) sum += centre[p], ++count;
        const double want = count ? sum / static_cast<double>(count) : next;
        wanted.emplace_back(want, k);
        next = want + box_w + gap_x;
      }
      std::stable_sort(wanted.begin(), wanted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      double shift = 0;
      for (std::size_t i = 0; i < wanted.size(); ++i) {
        const std::size_t k = wanted[i].second;
        centre[k] = i == 0 ? wanted[i].first : std::max(wanted[i].first, centre[wanted[i - 1].second] + box_w + gap_x);
        shift += wanted[i].first - centre[k];
      }
      shift /= static_cast<double>(std::max<std::size_t>(wanted.size(), 1));
      for (const auto& [want, k] : wanted) {
        centre[k] += shift;
        low = std::min(low, centre[k] - box_w / 2);
        high = std::max(high, centre[k] + box_w / 2);
      }
    }
    for (std::size_t r = first_row; r < end_row; ++r) {
      for (std::size_t k : rows[r])
        box[k] = {column_x + centre[k] - box_w / 2 - low, y0 + static_cast<double>(r - first_row) * row_h, box_w, box_h};
      height = std::max(height, static_cast<double>(r - first_row + 1) * row_h);
    }
    column_x += (high - low) + col_gap;
  }
  width = column_x - col_gap - x0;

  std::string out;
  // Recompute segments: connected groups of recomputed nodes, outlined.
  if (node_level) {
    std::vector<std::size_t> component(g.size(), SIZE_MAX);
    std::size_t segments = 0;
    for (node_id v = 0; v < g.size(); ++v) {
      if (fates[v] != node_fate::recomputed || component[v] != SIZE_MAX) continue;
      std::vector<node_id> stack{v}, members;
      component[v] = segments;
      while (!stack.empty()) {
        const node_id u = stack.back();
        stack.pop_back();
        members.push_back(u);
        auto visit = [&](node_id w) {
          if (fates[w] == node_fate::recomputed && component[w] == SIZE_MAX) {
            component[w] = segments;
            stack.push_back(w);
          }
        };
        for (node_id w : g.predecessors(u)) visit(w);
        for (node_id w : g.successors(u)) visit(w);
      }
      ++segments;
      std::map<std::size_t, std::tuple<double, double, double, double>> outline;  // column -> bounds
      for (node_id u : members) {
        const placed_unit& b = box[unit_of[u]];
        const auto column = layer[unit_of[u]] / per_column;
        auto [it, fresh] = outline.try_emplace(column, b.x, b.y, b.x + b.w, b.y + b.h);
        auto& [bx0, by0, bx1, by1] = it->second;
        bx0 = std::min(bx0, b.x), by0 = std::min(by0, b.y), bx1 = std::max(bx1, b.x + b.w), by1 = std::max(by1, b.y + b.h);
      }
      std::uint64_t bytes = 0;
      for (node_id u : members) bytes += g.bytes(u);
      for (const auto& [column, bounds] : outline) {
        const auto& [bx0, by0, bx1, by1] = bounds;
        out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" rx=\"8\" fill=\"#fff5eb\" "
                           "stroke=\"#e6550d\" stroke-width=\"1.5\" stroke-dasharray=\"5 3\"/>\n",
                           bx0 - 7, by0 - 7, bx1 - bx0 + 14, by1 - by0 + 14);
        out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#a63603\" font-size=\"10\" {}>segment {}: "
                           "{} recomputed, {}</text>\n",
                           bx0 - 6, by1 + 18, halo, segments, members.size(), format_bytes(bytes));
      }
    }
  }
  // Edges within a column are curves. Edges between columns become one stub
  // under each source and one above each target, naming the other end.
  auto column_of = [&](std::size_t k) { return layer[k] / per_column; };
  auto ends = [&](const std::vector<std::size_t>& others, std::size_t k) {
    std::vector<std::size_t> far;
    for (std::size_t other : others)
      if (column_of(other) != column_of(k)) far.push_back(other);
    if (far.size() == 1) return elide_left(units[far.front()].label, 30);
    return far.empty() ? std::string() : fmt::format("{} boxes", far.size());
  };
  for (std::size_t k = 0; k < n; ++k) {
    const placed_unit& a = box[k];
    const double ax = a.x + a.w / 2, ay = a.y + a.h, stub_x = a.x + a.w * 0.7;
    if (const std::string to = ends(succs[k], k); !to.empty())
      out += fmt::format("<path d=\"M{0:.1f},{1:.1f} L{0:.1f},{2:.1f}\" stroke=\"#8a8a8a\" stroke-width=\"1.2\" "
                         "marker-end=\"url(#arrow)\"/><text x=\"{3:.1f}\" y=\"{2:.1f}\" font-size=\"9\" fill=\"#555\">"
                         "to {4}</text>\n",
                         stub_x, ay, ay + 14, stub_x + 5, escape(to));
    if (const std::string from = ends(preds[k], k); !from.empty())
      out += fmt::format("<path d=\"M{0:.1f},{1:.1f} L{0:.1f},{2:.1f}\" stroke=\"#8a8a8a\" stroke-width=\"1.2\" "
                         "marker-end=\"url(#arrow)\"/><text x=\"{3:.1f}\" y=\"{4:.1f}\" font-size=\"9\" fill=\"#555\">"
                         "from {5}</text>\n",
                         stub_x, a.y - 14, a.y - 2, stub_x + 5, a.y - 5, escape(from));
    for (std::size_t s : succs[k]) {
      if (column_of(s) != column_of(k)) continue;
      const placed_unit& b = box[s];
      const double bx = b.x + b.w / 2, by = b.y;
      const double bend = std::max(18.0, std::abs(by - ay) / 3);
      out += fmt::format("<path d=\"M{:.1f},{:.1f} C{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\" fill=\"none\" "
                         "stroke=\"#8a8a8a\" stroke-width=\"1.2\" marker-end=\"url(#arrow)\"/>\n",
                         ax, ay, ax, ay + bend, bx, by - bend, bx, by - 2);
    }
  }
  for (std::size_t k = 0; k < n; ++k) {
    const unit& u = units[k];
    const placed_unit& b = box[k];
    if (node_level) {
      const node_id v = u.nodes.front();
      const bool freed = fates[v] == node_fate::dropped;
      out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{}\" height=\"{}\" rx=\"5\" fill=\"{}\" stroke=\"{}\"{}/>\n",
                         b.x, b.y, b.w, b.h, fate_color(fates[v]), freed ? "#999" : "#444",
                         freed ? " stroke-dasharray=\"3 2\"" : "");
      out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-weight=\"bold\">{}</text>\n",
                         b.x + b.w / 2, b.y + 14, escape(elide_left(g.node_name(v), 22)));
      out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"10\" fill=\"#333\">{} · {}</text>\n",
                         b.x + b.w / 2, b.y + 28, escape(g.op(v)), format_bytes(g.bytes(v)));
      continue;
    }
    const bool input = u.single && g.is_input(u.nodes.front());
    out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{}\" height=\"{}\" rx=\"5\" fill=\"{}\" stroke=\"#444\"/>\n",
                       b.x, b.y, b.w, b.h, input ? fate_color(node_fate::input) : "#ffffff");
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-weight=\"bold\" font-size=\"11\">{}</text>\n", b.x + 6,
                       b.y + 15, escape(elide_left(u.label, u.repeats > 1 ? 34 : 40)));
    if (u.repeats > 1)
      out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-weight=\"bold\" font-size=\"11\" text-anchor=\"end\" "
                         "fill=\"#08519c\">×{}</text>\n",
                         b.x + b.w - 6, b.y + 15, u.repeats);
    std::uint64_t kept = 0;
    std::size_t recomputed = 0;
    for (node_id v : u.all) {
      kept += fates[v] == node_fate::kept ? g.bytes(v) : 0;
      recomputed += fates[v] == node_fate::recomputed;
    }
    const std::string note = input ? format_bytes(g.bytes(u.nodes.front()))
                                   : fmt::format("kept {}{}", format_bytes(kept),
                                                 recomputed ? fmt::format(", {} rec.", recomputed) : "");
    const double chips = std::min(150.0, b.w - 18 - 0.85 * text_width(note));
    const double chip = std::min(9.0, chips / static_cast<double>(u.nodes.size()));
    for (std::size_t i = 0; i < u.nodes.size(); ++i)
      out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"12\" fill=\"{}\" stroke=\"#666\" "
                         "stroke-width=\"0.4\"/>\n",
                         b.x + 6 + static_cast<double>(i) * chip, b.y + 22, std::max(chip - 1, 0.8), fate_color(fates[u.nodes[i]]));
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" fill=\"#333\">{}</text>\n",
                       b.x + 12 + chip * static_cast<double>(u.nodes.size()), b.y + 32, escape(note));
  }
  return out;
}

}  // namespace detail

/// The graph under each plan, side by side: values kept for the backward,
/// recomputed, or freed after the forward; graph inputs. Up to
/// `node_level` nodes every node is a box and recompute segments (connected
/// recomputed nodes) are outlined; larger graphs draw one box per module
/// (dotted name prefix) with a chip per op, consecutive identical modules once.
inline std::string plan_graph(const std::string& title, const graph& g, const std::vector<plan_panel>& panels,
                              const graph_picture_options& o = {}) {
  const double margin = 24, top = 96, panel_gap = 60;
  std::string body;
  double x = margin, height = 0;
  for (const plan_panel& panel : panels) {
    double w = 0, h = 0;
    const fate_summary fates = summarize_fates(g, panel.memory->p.steps);
    const std::string fragment = detail::graph_panel(g, panel, x, top + 58, o, w, h);
    w = std::max(w, 330.0);
    body += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-weight=\"bold\" font-size=\"13\">{}</text>\n", x, top,
                        escape(panel.title));
    body += fmt::format("<text x=\"{:.1f}\" y=\"{}\" fill=\"#333\">{} kept ({}), {} recomputed, {} freed</text>\n", x,
                        top + 17, fates.kept, format_bytes(fates.kept_bytes), fates.recomputed, fates.freed);
    body += fmt::format("<text x=\"{:.1f}\" y=\"{}\" fill=\"#333\">peak {}, recompute {:.1f}% of forward + backward</text>\n",
                        x, top + 33, format_bytes(panel.memory->peak_bytes()), 100.0 * panel.memory->figures.overhead());
    body += fragment;
    x += w + panel_gap;
    height = std::max(height, h);
  }
  std::string legend;
  double legend_x = 16;
  for (node_fate f : {node_fate::kept, node_fate::recomputed, node_fate::dropped, node_fate::input}) {
    legend += legend_entry(legend_x, 50, fate_color(f), fate_label(f));
    legend_x += 34 + text_width(fate_label(f));
  }
  const std::string note =
      g.size() <= o.node_level
          ? std::string("Dashed outlines: recompute segments (connected recomputed ops, rebuilt from the kept values that "
                        "feed them).")
          : fmt::format("One box per module (dotted name prefix), one chip per op in the module's order; consecutive "
                        "modules alike in ops, edges and plan are drawn once (×k). {} nodes.",
                        g.size());
  const double width = std::max({x - panel_gap + margin, legend_x, 16 + 0.95 * text_width(note) + margin});
  std::string out = open_document(width, top + 58 + height + margin, title);
  out += "<defs><marker id=\"arrow\" viewBox=\"0 0 8 8\" refX=\"7\" refY=\"4\" markerWidth=\"7\" markerHeight=\"7\" "
         "orient=\"auto\"><path d=\"M0,0 L8,4 L0,8 z\" fill=\"#8a8a8a\"/></marker></defs>\n";
  out += legend + fmt::format("<text x=\"16\" y=\"72\" fill=\"#444\">{}</text>\n", escape(note));
  return out + body + close_document();
}

}  // namespace remat::cli::svg
