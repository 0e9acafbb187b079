#include "models/plot/svg.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dagrad::plot {
namespace {

constexpr const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                    "#9467bd", "#8c564b", "#e377c2", "#17becf"};

// Viridis, sampled at 9 points and interpolated.
std::string Viridis(double t) {
  static const double stops[9][3] = {{68, 1, 84},    {71, 44, 122},  {59, 81, 139},
                                     {44, 113, 142}, {33, 144, 141}, {39, 173, 129},
                                     {92, 200, 99},  {170, 220, 50}, {253, 231, 37}};
  t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0) * 8;
  const int i = std::min(7, static_cast<int>(t));
  const double f = t - i;
  int rgb[3];
  for (int c = 0; c < 3; ++c) {
    rgb[c] = static_cast<int>(std::lround(stops[i][c] + f * (stops[i + 1][c] - stops[i][c])));
  }
  return absl::StrFormat("#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

// NiceTicks returns about n round tick values covering [lo, hi].
std::vector<double> NiceTicks(double lo, double hi, int n) {
  if (!(hi > lo)) return {lo};
  const double raw = (hi - lo) / n;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) {
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  }
  return ticks;
}

std::string Text(double x, double y, const std::string& s, const char* anchor = "middle",
                 int size = 11, const char* extra = "") {
  return absl::StrFormat(
      "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" text-anchor=\"%s\" %s>%s</text>\n", x, y,
      size, anchor, extra, XmlEscape(s));
}

// DrawLegend draws the legend box on the right, at the end away from where
// the curves finish: low when the first series ends above `middle`.
std::string DrawLegend(const LineChart& c, double right, double top, double bottom,
                       double middle) {
  std::string out;
  bool ends_low = false;
  if (!c.series.empty() && !c.series[0].y.empty()) {
    ends_low = c.series[0].y.back() < middle;
  }
  const double legend_height = 14.0 * c.series.size();
  const double legend_top = ends_low ? top + 10 : bottom - 8 - legend_height;
  absl::StrAppendFormat(&out,
                        "<rect x=\"%.1f\" y=\"%.1f\" width=\"112\" height=\"%.1f\" "
                        "fill=\"white\" fill-opacity=\"0.85\" stroke=\"#bbb\"/>\n",
                        right - 116, legend_top - 4, legend_height + 6);
  for (size_t k = 0; k < c.series.size(); ++k) {
    const double ly = legend_top + 8 + 14 * k;
    absl::StrAppendFormat(&out,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                          "stroke-width=\"2\"/>\n",
                          right - 110, ly - 4, right - 92, ly - 4, kPalette[k % 8]);
    absl::StrAppend(&out, Text(right - 88, ly, c.series[k].name, "start", 10));
  }
  return out;
}

// DrawSeries draws a series as lines through its finite points, broken
// where a value is not finite (a NaN row of metrics.csv), and a dot for a
// point with no finite neighbour (a run of one row), which a line of one
// point would not show.
template <typename Px, typename Py>
std::string DrawSeries(const Series& s, const char* color, Px px, Py py) {
  std::string out;
  std::vector<std::pair<double, double>> run;
  auto flush = [&] {
    if (run.size() == 1) {
      absl::StrAppendFormat(&out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n",
                            run[0].first, run[0].second, color);
    } else if (run.size() > 1) {
      std::string points;
      for (const auto& [x, y] : run) absl::StrAppendFormat(&points, "%.1f,%.1f ", x, y);
      absl::StrAppendFormat(&out,
                            "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" "
                            "points=\"%s\"/>\n",
                            color, points);
    }
    run.clear();
  };
  for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
    if (std::isfinite(s.y[i])) {
      run.emplace_back(px(s.x[i]), py(s.y[i]));
    } else {
      flush();
    }
  }
  flush();
  return out;
}

std::string DrawLine(const LineChart& c, double x0, double y0, double w, double h) {
  std::string out;
  const double left = x0 + 58, right = x0 + w - 12, top = y0 + 26, bottom = y0 + h - 40;
  double xmin = 1e300, xmax = -1e300, ymin = 1e300, ymax = -1e300;
  for (const Series& s : c.series) {
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.y[i])) continue;
      xmin = std::min(xmin, s.x[i]), xmax = std::max(xmax, s.x[i]);
      ymin = std::min(ymin, s.y[i]), ymax = std::max(ymax, s.y[i]);
    }
  }
  if (xmin > xmax) xmin = 0, xmax = 1, ymin = 0, ymax = 1;
  if (xmax == xmin) xmax = xmin + 1;
  if (ymax == ymin) ymax = ymin + 1;
  const double pad = 0.05 * (ymax - ymin);
  ymin -= pad, ymax += pad;
  auto px = [&](double v) { return left + (v - xmin) / (xmax - xmin) * (right - left); };
  auto py = [&](double v) { return bottom - (v - ymin) / (ymax - ymin) * (bottom - top); };
  absl::StrAppend(&out, Text(x0 + w / 2, y0 + 16, c.title, "middle", 13, "font-weight=\"bold\""));
  absl::StrAppendFormat(&out,
                        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
                        "stroke=\"#444\"/>\n",
                        left, top, right - left, bottom - top);
  for (double t : NiceTicks(ymin, ymax, 5)) {
    absl::StrAppendFormat(&out,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
                          left, py(t), right, py(t));
    absl::StrAppend(&out, Text(left - 4, py(t) + 4, absl::StrFormat("%g", t), "end", 10));
  }
  for (double t : NiceTicks(xmin, xmax, 6)) {
    absl::StrAppend(&out, Text(px(t), bottom + 14, absl::StrFormat("%g", t), "middle", 10));
  }
  absl::StrAppend(&out, Text((left + right) / 2, bottom + 30, c.x_label));
  absl::StrAppend(&out, Text(x0 + 14, (top + bottom) / 2, c.y_label, "middle", 11,
                             absl::StrFormat("transform=\"rotate(-90 %.1f %.1f)\"", x0 + 14,
                                             (top + bottom) / 2)
                                 .c_str()));
  for (size_t k = 0; k < c.series.size(); ++k) {
    absl::StrAppend(&out, DrawSeries(c.series[k], kPalette[k % 8], px, py));
  }
  absl::StrAppend(&out, DrawLegend(c, right, top, bottom, (ymin + ymax) / 2));
  return out;
}

std::string DrawMap(const Heatmap& m, double x0, double y0, double w, double h) {
  std::string out;
  const bool rl = !m.row_labels.empty(), cl = !m.col_labels.empty();
  const double left = x0 + (rl ? 34 : 8) + (m.row_axis.empty() ? 0 : 14);
  const double top = y0 + 22 + (cl ? 12 : 0);
  const double bottom = y0 + h - 8 - (m.col_axis.empty() ? 0 : 14);
  const double right = x0 + w - 8;
  const double cw = (right - left) / std::max(1, m.cols), ch = (bottom - top) / std::max(1, m.rows);
  absl::StrAppend(&out, Text(x0 + w / 2, y0 + 13, m.title, "middle", 11, "font-weight=\"bold\""));
  const double span = m.max > m.min ? m.max - m.min : 1;
  for (int r = 0; r < m.rows; ++r) {
    for (int c = 0; c < m.cols; ++c) {
      const double v = m.values[static_cast<size_t>(r) * m.cols + c];
      absl::StrAppendFormat(&out,
                            "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
                            "fill=\"%s\"><title>%s</title></rect>\n",
                            left + c * cw, top + r * ch, cw + 0.05, ch + 0.05,
                            Viridis((v - m.min) / span), absl::StrFormat("%.4g", v));
    }
  }
  const int label_size = static_cast<int>(std::clamp(std::min(cw, ch) * 0.8, 5.0, 10.0));
  for (int r = 0; rl && r < m.rows; ++r) {
    absl::StrAppend(&out, Text(left - 3, top + (r + 0.5) * ch + label_size / 3.0,
                               m.row_labels[r], "end", label_size));
  }
  for (int c = 0; cl && c < m.cols; ++c) {
    absl::StrAppend(&out, Text(left + (c + 0.5) * cw, top - 3, m.col_labels[c], "middle",
                               label_size));
  }
  if (!m.col_axis.empty()) absl::StrAppend(&out, Text((left + right) / 2, y0 + h - 6, m.col_axis, "middle", 10));
  if (!m.row_axis.empty()) {
    const double cy = (top + bottom) / 2;
    absl::StrAppend(&out, Text(x0 + 10, cy, m.row_axis, "middle", 10,
                               absl::StrFormat("transform=\"rotate(-90 %.1f %.1f)\"", x0 + 10, cy)
                                   .c_str()));
  }
  return out;
}

}  // namespace

std::string XmlEscape(const std::string& text) {
  std::string out;
  for (unsigned char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (ch >= 0x20 || ch == '\n') out += static_cast<char>(ch);
    }
  }
  return out;
}

std::string RenderSvg(double width, double height, const std::vector<Panel>& panels,
                      const std::string& title) {
  std::string out = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
      width, height, width, height);
  if (!title.empty()) {
    absl::StrAppend(&out, Text(width / 2, 18, title, "middle", 15, "font-weight=\"bold\""));
  }
  for (const Panel& p : panels) {
    absl::StrAppend(&out, p.is_line ? DrawLine(p.line, p.x, p.y, p.w, p.h)
                                    : DrawMap(p.map, p.x, p.y, p.w, p.h));
  }
  absl::StrAppend(&out, "</svg>\n");
  return out;
}

}  // namespace dagrad::plot
