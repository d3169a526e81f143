#pragma once

// Self-contained SVG pictures (no scripts, no external fonts) for the CLI: the
// document frame, plot frames with axes, and the line/step chart.

#include <algorithm>
#include <cmath>
#include <cstdint>
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

/// Drawn under a label, a white outline keeps it legible over lines and areas.
inline constexpr const char* halo = "stroke=\"white\" stroke-width=\"3\" paint-order=\"stroke\"";

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

/// A binary unit for an axis of bytes: values are divided by `divisor`.
struct byte_unit {
  double divisor = 1;
  std::string name = "B";
};

/// The largest binary unit in which `largest` is at least 1.
inline byte_unit unit_for(std::uint64_t largest) {
  byte_unit u;
  for (const char* name : {"KiB", "MiB", "GiB", "TiB"}) {
    if (static_cast<double>(largest) < u.divisor * 1024) break;
    u.divisor *= 1024;
    u.name = name;
  }
  return u;
}

/// The opening of a document with a white background and a bold title.
inline std::string open_document(double width, double height, const std::string& title) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"16\" y=\"24\" font-size=\"15\" font-weight=\"bold\">{2}</text>\n",
      width, height, escape(title));
}

inline std::string close_document() { return "</svg>\n"; }

/// A plot area on the page and the data ranges it shows.
struct frame {
  double left = 0, top = 0, width = 0, height = 0;
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;

  double px(double x) const { return left + (x - x0) / (x1 - x0) * width; }
  double py(double y) const { return top + height - (y - y0) / (y1 - y0) * height; }
};

/// Grid lines, tick labels, the frame's border and the axis labels.
inline std::string axes(const frame& f, const std::string& x_label, const std::string& y_label) {
  std::string out;
  // A tick at zero reached by adding steps can come out as -1e-17: print 0.
  auto value = [](double t, double low, double high) { return std::abs(t) < (high - low) * 1e-9 ? 0.0 : t; };
  for (double t : ticks(f.x0, f.x1)) {
    out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#e5e5e5\"/>\n", f.px(t), f.top,
                       f.top + f.height);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:g}</text>\n", f.px(t), f.top + f.height + 16,
                       value(t, f.x0, f.x1));
  }
  for (double t : ticks(f.y0, f.y1)) {
    out += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#e5e5e5\"/>\n", f.left, f.py(t),
                       f.left + f.width);
    out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:g}</text>\n", f.left - 6, f.py(t) + 4,
                       value(t, f.y0, f.y1));
  }
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n", f.left, f.top,
                     f.width, f.height);
  out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", f.left + f.width / 2,
                     f.top + f.height + 34, escape(x_label));
  out += fmt::format("<text transform=\"translate({:.1f} {:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
                     f.left - 52, f.top + f.height / 2, escape(y_label));
  return out;
}

/// A dashed reference line across a frame at data coordinate `at`, labelled
/// at its end.
inline std::string reference_line(const frame& f, bool vertical, double at, const std::string& label,
                                  const std::string& color) {
  if (vertical) {
    const double x = f.px(at);
    const bool right_half = x > f.left + f.width / 2;
    return fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"{3}\" stroke-width=\"1.5\" "
                       "stroke-dasharray=\"6 4\"/>\n<text x=\"{4:.1f}\" y=\"{5}\" fill=\"{3}\"{6} {7}>{8}</text>\n",
                       x, f.top, f.top + f.height, color, right_half ? x - 4 : x + 4, f.top + 14,
                       right_half ? " text-anchor=\"end\"" : "", halo, escape(label));
  }
  const double y = f.py(at);
  return fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"{3}\" stroke-width=\"1.5\" "
                     "stroke-dasharray=\"6 4\"/>\n<text x=\"{4:.1f}\" y=\"{5:.1f}\" fill=\"{3}\" {6}>{7}</text>\n",
                     f.left, y, f.left + f.width, color, f.left + 4, y - 4, halo, escape(label));
}

/// Roughly how wide `text` is at font size 12 (DejaVu Sans averages about
/// 0.58 em per character), for placing labels inside a frame.
inline double text_width(const std::string& text) { return 7.0 * static_cast<double>(text.size()); }

/// A legend entry: a colour swatch and its label.
inline std::string legend_entry(double x, double y, const std::string& color, const std::string& label) {
  return fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"12\" height=\"12\" fill=\"{}\" stroke=\"#555\" "
                     "stroke-width=\"0.5\"/><text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
                     x, y - 10, color, x + 17, y, escape(label));
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

/// A vertical dashed line at x (a floor, a budget).
struct guide {
  double x;
  std::string label, color;
};

/// A line/step chart with axes, ticks, a legend, labelled marks and guides.
inline std::string chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                         const std::vector<series>& lines, const std::vector<mark>& marks = {},
                         const std::vector<guide>& guides = {}, double width = 760, double height = 460) {
  frame f{80, 56, width - 80 - 24, height - 56 - 64};
  double x0 = 1e300, x1 = -1e300, y1 = -1e300;
  auto cover = [&](double x, double y) {
    x0 = std::min(x0, x), x1 = std::max(x1, x), y1 = std::max(y1, y);
  };
  for (const auto& s : lines)
    for (auto [x, y] : s.points) cover(x, y);
  for (const auto& m : marks) cover(m.x, m.y);
  for (const auto& g : guides) cover(g.x, 0);
  if (x0 > x1) x0 = 0, x1 = 1;
  if (y1 <= 0) y1 = 1;
  // A span of at least 2% of the values keeps ticks readable when every point
  // has nearly the same x.
  const double pad = std::max((x1 - x0) * 0.05, std::max(std::abs(x0), std::abs(x1)) * 0.01 + 1e-12);
  f.x0 = x0 - pad, f.x1 = x1 + pad, f.y0 = 0, f.y1 = y1 * 1.12;
  std::string out = open_document(width, height, title) + axes(f, x_label, y_label);
  for (const auto& g : guides) out += reference_line(f, true, g.x, g.label, g.color);
  // The legend sits above the frame, right-aligned, clear of marks and guides.
  double legend_x = f.left + f.width;
  for (const auto& s : lines) legend_x -= 30 + text_width(s.label);
  const double legend_y = f.top - 8;
  for (const auto& s : lines) {
    std::string path;
    for (std::size_t i = 0; i < s.points.size(); ++i) {
      auto [x, y] = s.points[i];
      if (i > 0 && s.step) path += fmt::format(" L{:.1f},{:.1f}", f.px(x), f.py(s.points[i - 1].second));
      path += fmt::format("{}{:.1f},{:.1f}", i == 0 ? "M" : " L", f.px(x), f.py(y));
    }
    out += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", path, s.color);
    if (s.markers)
      for (auto [x, y] : s.points)
        out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", f.px(x), f.py(y), s.color);
    out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"14\" height=\"4\" fill=\"{}\"/>", legend_x, legend_y - 5,
                       s.color);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", legend_x + 20, legend_y, escape(s.label));
    legend_x += 30 + text_width(s.label);
  }
  for (std::size_t i = 0; i < marks.size(); ++i) {
    const mark& m = marks[i];
    // Marks at the same place would write over each other: stack their labels.
    std::size_t same = 0;
    for (std::size_t k = 0; k < i; ++k)
      same += std::abs(f.px(marks[k].x) - f.px(m.x)) < 40 && std::abs(f.py(marks[k].y) - f.py(m.y)) < 14;
    const bool flip = f.px(m.x) + 9 + text_width(m.label) > f.left + f.width;
    out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2.5\"/>\n",
                       f.px(m.x), f.py(m.y), 6 + 3 * same, m.color);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"{}\"{} {}>{}</text>\n", flip ? f.px(m.x) - 9 : f.px(m.x) + 9,
                       f.py(m.y) - 8 - 15 * static_cast<double>(same), m.color, flip ? " text-anchor=\"end\"" : "",
                       halo, escape(m.label));
  }
  return out + close_document();
}

}  // namespace remat::cli::svg
