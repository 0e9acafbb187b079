#include "models/plot/plots.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "engine/status_macros.h"
#include "models/nn/positional_encoding.h"
#include "models/plot/svg.h"

namespace dagrad::plot {

std::string LossCurves(const std::vector<models::MetricsRow>& rows) {
  Series loss{"train"}, eval_loss{"held-out"}, train_acc{"train"}, eval_acc{"held-out"};
  for (const models::MetricsRow& r : rows) {
    loss.x.push_back(r.step), loss.y.push_back(r.loss);
    eval_loss.x.push_back(r.step), eval_loss.y.push_back(r.eval_loss);
    train_acc.x.push_back(r.step), train_acc.y.push_back(r.train_accuracy);
    eval_acc.x.push_back(r.step), eval_acc.y.push_back(r.eval_accuracy);
  }
  return RenderSvg(
      900, 340,
      {Panel::Line({"loss", "step", "cross-entropy", {loss, eval_loss}}, 0, 20, 450, 320),
       Panel::Line({"token accuracy", "step", "accuracy", {train_acc, eval_acc}}, 450, 20, 450,
                   320)},
      "training");
}

namespace {

// CheckWeights: each layer's weights are float32 (H, L, L) with one label
// per position, or none.
absl::Status CheckWeights(const std::vector<Tensor>& weights,
                          const std::vector<std::string>& labels) {
  for (size_t l = 0; l < weights.size(); ++l) {
    const Tensor& w = weights[l];
    const Shape& s = w.shape();
    if (w.dtype() != DType::kFloat32 || s.rank() != 3 || s[1] != s[2] ||
        (!labels.empty() && static_cast<int64_t>(labels.size()) != s[1])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "AttentionHeatmaps: layer ", l, "'s weights must be float32 (H, L, L) with ",
          labels.empty() ? "" : absl::StrCat(labels.size(), " labels' "), "L, got ",
          DTypeName(w.dtype()), " ", s.ToString()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> AttentionHeatmaps(const std::vector<Tensor>& weights,
                                              const std::vector<std::string>& labels,
                                              const std::string& title) {
  DAGRAD_RETURN_IF_ERROR(CheckWeights(weights, labels));
  const double cell = 230;
  int64_t heads = 0;
  std::vector<Panel> panels;
  for (size_t l = 0; l < weights.size(); ++l) {
    const Tensor& w = weights[l];
    heads = std::max(heads, w.shape()[0]);
    const int len = static_cast<int>(w.shape()[1]);
    for (int64_t h = 0; h < w.shape()[0]; ++h) {
      Heatmap m{.title = absl::StrCat("layer ", l, ", head ", h), .rows = len, .cols = len};
      m.values.assign(w.data<float>() + h * len * len, w.data<float>() + (h + 1) * len * len);
      m.row_labels = m.col_labels = labels;
      m.row_axis = "query", m.col_axis = "key";
      panels.push_back(Panel::Map(std::move(m), h * cell, 30 + l * cell, cell, cell));
    }
  }
  return RenderSvg(cell * heads, 30 + cell * weights.size(), panels, title);
}

absl::StatusOr<std::string> PositionalEncoding(int64_t max_len, int64_t dim) {
  Graph g;
  Value table = models::SinusoidalTable(g, max_len, dim);
  Executor exec(g);
  DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile({table}));
  DAGRAD_ASSIGN_OR_RETURN(auto out, exec.Run(*plan, {}));
  const float* p = out[0].data<float>();
  Heatmap m{.title = absl::StrCat("P (", max_len, " positions x ", dim, " dims)"),
            .rows = static_cast<int>(max_len), .cols = static_cast<int>(dim),
            .values = std::vector<double>(p, p + max_len * dim), .min = -1, .max = 1,
            .row_axis = "position", .col_axis = "encoding dimension"};
  // Columns 6-9, as d2l plots them; the last four of a narrower table.
  const int64_t first = std::max<int64_t>(0, std::min<int64_t>(6, dim - 4));
  const int64_t last = std::min<int64_t>(first + 4, dim) - 1;
  LineChart curves{absl::StrCat("columns ", first, "-", last,
                                first == 6 ? " (as d2l plots them)" : ""),
                   "position", "value", {}};
  for (int64_t c = first; c <= last; ++c) {
    Series s{absl::StrCat("col ", c)};
    for (int64_t i = 0; i < max_len; ++i) {
      s.x.push_back(i);
      s.y.push_back(p[i * dim + c]);
    }
    curves.series.push_back(std::move(s));
  }
  return RenderSvg(980, 380,
                   {Panel::Map(m, 0, 30, 480, 340), Panel::Line(curves, 500, 30, 480, 340)},
                   "sinusoidal positional encoding");
}

}  // namespace dagrad::plot
