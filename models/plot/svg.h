// models/plot/svg.h
//
// Small, dependency-free SVG charts (dagrad::plot): line charts (loss and
// accuracy curves, positional-encoding columns) and grids of heatmaps
// (attention weights per layer and head, the positional-encoding table);
// models/plot/plots.h draws a training run's with them. Output is
// deterministic for the same data.
//
//   // setup: Plots
//   LineChart chart{.title = "loss", .x_label = "step", .y_label = "cross-entropy"};
//   chart.series.push_back({"train", xs, ys});
//   std::string svg = RenderSvg(840, 320, {Panel::Line(chart, 0, 0, 840, 320)});

#ifndef DAGRAD_MODELS_PLOT_SVG_H_
#define DAGRAD_MODELS_PLOT_SVG_H_

#include <string>
#include <utility>
#include <vector>

namespace dagrad::plot {

struct Series {
  std::string name;
  std::vector<double> x, y;
};

struct LineChart {
  std::string title, x_label, y_label;
  std::vector<Series> series;
};

struct Heatmap {
  std::string title;
  int rows = 0, cols = 0;
  std::vector<double> values;  // row-major rows x cols
  std::vector<std::string> row_labels, col_labels;  // empty: none drawn
  double min = 0, max = 1;     // colour scale range
  std::string row_axis, col_axis;
};

// Panel places one chart in the picture.
struct Panel {
  static Panel Line(LineChart c, double x, double y, double w, double h) {
    Panel p;
    p.line = std::move(c);
    p.is_line = true;
    p.x = x, p.y = y, p.w = w, p.h = h;
    return p;
  }
  static Panel Map(Heatmap m, double x, double y, double w, double h) {
    Panel p;
    p.map = std::move(m);
    p.x = x, p.y = y, p.w = w, p.h = h;
    return p;
  }
  bool is_line = false;
  LineChart line;
  Heatmap map;
  double x = 0, y = 0, w = 0, h = 0;
};

// RenderSvg draws the panels on a width x height canvas, with an optional
// title across the top.
std::string RenderSvg(double width, double height, const std::vector<Panel>& panels,
                      const std::string& title = "");

// XmlEscape escapes &, <, >, " and ' for SVG text and attributes.
std::string XmlEscape(const std::string& text);

}  // namespace dagrad::plot

#endif  // DAGRAD_MODELS_PLOT_SVG_H_
