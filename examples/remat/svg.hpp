#pragma once

// Self-contained SVG charts (no scripts, no external fonts) for the CLI.

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <fmt/core.h>

namespace remat::cli::svg {

inline std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

/// Round tick values covering [low, high].
inline std::vector<double> ticks(double low, double high, int target = 6) {
  if (!(high > low)) high = low + 1;
  const double raw = (high - low) / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  std::vector<double> out;
  for (double t = std::ceil(low / step) * step; t <= high + step * 1e-9; t += step) out.push_back(t);
  return out;
}

struct series {
  std::string label, color;
  std::vector<std::pair<double, double>> points;
  bool step = false;    ///< draw as a staircase (frontiers)
  bool markers = true;
};

struct mark {
  double x, y;
  std::string label, color;
};

/// A line/step chart with axes, ticks, a legend and optional labelled marks.
inline std::string chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                         const std::vector<series>& lines, const std::vector<mark>& marks = {},
                         double width = 760, double height = 460) {
  const double left = 80, right = 24, top = 48, bottom = 64;
  double x0 = 1e300, x1 = -1e300, y0 = 0, y1 = -1e300;
  for (const auto& s : lines)
    for (auto [x, y] : s.points) {
      x0 = std::min(x0, x), x1 = std::max(x1, x);
      y1 = std::max(y1, y);
    }
  for (const auto& m : marks) x0 = std::min(x0, m.x), x1 = std::max(x1, m.x), y1 = std::max(y1, m.y);
  if (x0 > x1) x0 = 0, x1 = 1;
  if (y1 <= y0) y1 = y0 + 1;
  const double pad = (x1 - x0) * 0.05 + 1e-12;
  x0 -= pad, x1 += pad, y1 *= 1.08;
  const double pw = width - left - right, ph = height - top - bottom;
  auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * pw; };
  auto py = [&](double y) { return top + ph - (y - y0) / (y1 - y0) * ph; };
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"24\" font-size=\"15\" font-weight=\"bold\">{3}</text>\n",
      width, height, left, escape(title));
  for (double t : ticks(x0, x1)) {
    out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#e5e5e5\"/>\n", px(t), top, top + ph);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:g}</text>\n", px(t), top + ph + 18, t);
  }
  for (double t : ticks(y0, y1)) {
    out += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#e5e5e5\"/>\n", left, py(t), left + pw);
    out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:g}</text>\n", left - 6, py(t) + 4, t);
  }
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n", left, top, pw, ph);
  out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", left + pw / 2, height - 18, escape(x_label));
  out += fmt::format("<text transform=\"translate(18 {:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n", top + ph / 2,
                     escape(y_label));
  double legend_y = top + 14;
  for (const auto& s : lines) {
    std::string path;
    for (std::size_t i = 0; i < s.points.size(); ++i) {
      auto [x, y] = s.points[i];
      if (i > 0 && s.step) path += fmt::format(" L{:.1f},{:.1f}", px(x), py(s.points[i - 1].second));
      path += fmt::format("{}{:.1f},{:.1f}", i == 0 ? "M" : " L", px(x), py(y));
    }
    out += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", path, s.color);
    if (s.markers)
      for (auto [x, y] : s.points)
        out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", px(x), py(y), s.color);
    out += fmt::format("<rect x=\"{}\" y=\"{:.1f}\" width=\"14\" height=\"4\" fill=\"{}\"/>", left + pw - 200, legend_y - 5, s.color);
    out += fmt::format("<text x=\"{}\" y=\"{:.1f}\">{}</text>\n", left + pw - 180, legend_y, escape(s.label));
    legend_y += 16;
  }
  for (const auto& m : marks) {
    out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"6\" fill=\"none\" stroke=\"{}\" stroke-width=\"2.5\"/>\n",
                       px(m.x), py(m.y), m.color);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"{}\">{}</text>\n", px(m.x) + 9, py(m.y) - 8, m.color,
                       escape(m.label));
  }
  return out + "</svg>\n";
}

}  // namespace remat::cli::svg
