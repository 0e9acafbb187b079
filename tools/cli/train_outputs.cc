#include "tools/cli/train_outputs.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/dot/dot.h"
#include "engine/executor.h"
#include "engine/io/file_io.h"
#include "engine/status_macros.h"
#include "models/nn/positional_encoding.h"
#include "tools/cli/svg_plot.h"

namespace dagrad::cli {
namespace {

absl::Status LossSvg(const std::vector<models::MetricsRow>& rows, const std::string& path) {
  Series loss{"train"}, eval_loss{"held-out"}, train_acc{"train"}, eval_acc{"held-out"};
  for (const models::MetricsRow& r : rows) {
    loss.x.push_back(r.step), loss.y.push_back(r.loss);
    eval_loss.x.push_back(r.step), eval_loss.y.push_back(r.eval_loss);
    train_acc.x.push_back(r.step), train_acc.y.push_back(r.train_accuracy);
    eval_acc.x.push_back(r.step), eval_acc.y.push_back(r.eval_accuracy);
  }
  const std::string svg = RenderSvg(
      900, 340,
      {Panel::Line({"loss", "step", "cross-entropy", {loss, eval_loss}}, 0, 20, 450, 320),
       Panel::Line({"token accuracy", "step", "accuracy", {train_acc, eval_acc}}, 450, 20, 450,
                   320)},
      "training");
  return WriteFileAtomically(path, svg);
}

absl::Status AttentionSvg(const models::AttentionSample& sample, int64_t heads,
                          const std::string& path) {
  std::vector<std::string> labels;
  for (int64_t t : sample.tokens) labels.push_back(absl::StrCat(t));
  const int layers = static_cast<int>(sample.weights.size());
  const double cell = 230;
  std::vector<Panel> panels;
  for (int l = 0; l < layers; ++l) {
    const Tensor& w = sample.weights[l];
    const int len = static_cast<int>(w.shape()[1]);
    for (int64_t h = 0; h < heads; ++h) {
      Heatmap m;
      m.title = absl::StrCat("layer ", l, ", head ", h);
      m.rows = m.cols = len;
      m.values.assign(w.data<float>() + h * len * len, w.data<float>() + (h + 1) * len * len);
      m.row_labels = m.col_labels = labels;
      m.row_axis = "query";
      m.col_axis = "key";
      panels.push_back(Panel::Map(std::move(m), h * cell, 30 + l * cell, cell, cell));
    }
  }
  return WriteFileAtomically(
      path, RenderSvg(cell * heads, 30 + cell * layers, panels,
                      "attention weights for a held-out sequence (row: query, column: key)"));
}

absl::Status PositionalEncodingSvg(int64_t max_len, int64_t dim, const std::string& path) {
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
  LineChart curves{"columns 6-9 (as d2l plots them)", "position", "value", {}};
  for (int64_t c = std::min<int64_t>(6, dim - 1); c < std::min<int64_t>(10, dim); ++c) {
    Series s{absl::StrCat("col ", c)};
    for (int64_t i = 0; i < max_len; ++i) {
      s.x.push_back(i);
      s.y.push_back(p[i * dim + c]);
    }
    curves.series.push_back(std::move(s));
  }
  return WriteFileAtomically(path, RenderSvg(980, 380,
                                             {Panel::Map(m, 0, 30, 480, 340),
                                              Panel::Line(curves, 500, 30, 480, 340)},
                                             "sinusoidal positional encoding"));
}

}  // namespace

absl::Status TrainOutputs::WriteLossSvg() const { return LossSvg(rows_, path("loss.svg")); }


absl::Status TrainOutputs::WriteAll(models::ToyTrainer& trainer,
                                    const std::function<bool()>& stop) {
  auto stopped = [&stop] {
    return stop && stop() ? absl::CancelledError("stopped while writing the outputs")
                          : absl::OkStatus();
  };
  const models::TrainConfig& c = trainer.config();
  DAGRAD_RETURN_IF_ERROR(trainer.SaveModel(path("model.safetensors")));
  DAGRAD_RETURN_IF_ERROR(stopped());
  DAGRAD_RETURN_IF_ERROR(WriteLossSvg());
  DAGRAD_ASSIGN_OR_RETURN(models::AttentionSample sample, trainer.SampleAttention(0));
  DAGRAD_RETURN_IF_ERROR(AttentionSvg(sample, c.model.heads, path("attention.svg")));
  DAGRAD_RETURN_IF_ERROR(stopped());
  DAGRAD_RETURN_IF_ERROR(
      PositionalEncodingSvg(c.model.seq_len, c.model.dim, path("positional_encoding.svg")));
  DAGRAD_RETURN_IF_ERROR(stopped());
  const Graph& g = trainer.graph();
  DAGRAD_ASSIGN_OR_RETURN(
      std::string forward,
      ToDot(g, {trainer.logits(), trainer.loss()},
            {.title = "toy transformer: forward", .losses = {trainer.loss()}}));
  DAGRAD_RETURN_IF_ERROR(WriteDotFile(path("forward.dot"), forward));
  std::vector<Value> step_roots = trainer.training_step().updates;
  step_roots.push_back(trainer.loss());
  DAGRAD_ASSIGN_OR_RETURN(
      std::string step_dot,
      ToDot(g, step_roots,
            {.title = "toy transformer: training step (forward, backward, Adam)",
             .losses = {trainer.loss()}}));
  DAGRAD_RETURN_IF_ERROR(WriteDotFile(path("train_step.dot"), step_dot));
  DAGRAD_RETURN_IF_ERROR(stopped());
  written_ = {"model.safetensors", "checkpoint.safetensors", "metrics.csv", "loss.svg",
              "attention.svg",     "positional_encoding.svg", "forward.dot", "train_step.dot"};
  if (std::filesystem::exists(previous_checkpoint_path())) {
    written_.insert(written_.begin() + 2, "checkpoint.prev.safetensors");
  }
  return RenderForward(c.model.layers);
}

absl::Status TrainOutputs::RenderForward(int64_t layers) {
  // Graphviz's time grows much faster than the graph: 4 s for 16 layers,
  // over 10 minutes for 100, after the training has ended.
  constexpr int64_t kMaxDrawnLayers = 12;
  if (layers > kMaxDrawnLayers) {
    note_ = absl::StrCat("forward.svg is not drawn for more than ", kMaxDrawnLayers,
                         " layers (Graphviz would take minutes for ", layers,
                         "); forward.dot holds the graph");
    return absl::OkStatus();
  }
  absl::Status rendered = RenderDot(path("forward.dot"), "svg", path("forward.svg"));
  if (rendered.ok()) {
    written_.push_back("forward.svg");
  } else if (absl::IsUnavailable(rendered)) {
    note_ = absl::StrCat("forward.svg is not drawn: ", rendered.message(),
                         "; forward.dot holds the graph");
  } else {
    return rendered;
  }
  return absl::OkStatus();
}

void TrainOutputs::PrintSummary(std::ostream& out) const {
  out << "wrote to " << dir_ << "/:";
  for (const std::string& name : written_) out << " " << name;
  out << "\n";
  if (!note_.empty()) out << note_ << "\n";
}

}  // namespace dagrad::cli
