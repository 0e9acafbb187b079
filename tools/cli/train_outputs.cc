#include "tools/cli/train_outputs.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "engine/dot/dot.h"
#include "engine/executor.h"
#include "engine/io/file_io.h"
#include "engine/status_macros.h"
#include "models/nn/positional_encoding.h"
#include "tools/cli/svg_plot.h"

namespace dagrad::cli {
namespace {

constexpr char kHeader[] =
    "step,loss,train_accuracy,eval_loss,eval_accuracy,lr,skipped,elapsed_s";
// The headers before the eval_loss column, and before the skipped column;
// such files read with eval_loss = NaN and skipped = 0.
constexpr char kHeaderNoEvalLoss[] = "step,loss,train_accuracy,eval_accuracy,lr,skipped,elapsed_s";
constexpr char kHeaderNoSkipped[] = "step,loss,train_accuracy,eval_accuracy,lr,elapsed_s";
constexpr char kWindowFile[] = "metrics_window.csv";
constexpr char kWindowHeader[] = "step,steps,loss_sum,accuracy_sum,skipped";

absl::Status LossSvg(const std::vector<MetricsRow>& rows, const std::string& path) {
  Series loss{"train"}, eval_loss{"held-out"}, train_acc{"train"}, eval_acc{"held-out"};
  for (const MetricsRow& r : rows) {
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

std::string FormatMetrics(const std::vector<MetricsRow>& rows) {
  std::string out = absl::StrCat(kHeader, "\n");
  for (const MetricsRow& r : rows) {
    absl::StrAppendFormat(&out, "%d,%.6f,%.6f,%.6f,%.6f,%.8g,%d,%.3f\n", r.step, r.loss,
                          r.train_accuracy, r.eval_loss, r.eval_accuracy, r.lr, r.skipped,
                          r.elapsed);
  }
  return out;
}

absl::StatusOr<std::vector<MetricsRow>> ParseMetrics(const std::string& text) {
  std::vector<MetricsRow> rows;
  int line_no = 0;
  absl::string_view header;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    ++line_no;
    if (line_no == 1) {
      header = line;
      if (line != kHeader && line != kHeaderNoEvalLoss && line != kHeaderNoSkipped) {
        return absl::DataLossError("metrics.csv: unexpected header");
      }
      continue;
    }
    std::vector<absl::string_view> f = absl::StrSplit(line, ',');
    if (header == kHeaderNoSkipped && f.size() == 6) f.insert(f.begin() + 5, "0");
    if (header != kHeader && f.size() == 7) f.insert(f.begin() + 3, "nan");
    MetricsRow r;
    if (f.size() != 8 || !absl::SimpleAtoi(f[0], &r.step) || !absl::SimpleAtod(f[1], &r.loss) ||
        !absl::SimpleAtod(f[2], &r.train_accuracy) || !absl::SimpleAtod(f[3], &r.eval_loss) ||
        !absl::SimpleAtod(f[4], &r.eval_accuracy) || !absl::SimpleAtod(f[5], &r.lr) ||
        !absl::SimpleAtoi(f[6], &r.skipped) || !absl::SimpleAtod(f[7], &r.elapsed)) {
      return absl::DataLossError(absl::StrCat("metrics.csv line ", line_no, " is malformed"));
    }
    rows.push_back(r);
  }
  return rows;
}

absl::StatusOr<std::string> TrainOutputs::LoadCheckpoint(models::Trainer& trainer,
                                                          std::string* warning) {
  warning->clear();
  const absl::Status latest = trainer.LoadCheckpoint(checkpoint_path());
  if (latest.ok()) {
    next_save_ = NextSave::kRotate;
    return checkpoint_path();
  }
  if (absl::IsFailedPrecondition(latest)) return latest;
  const absl::Status previous = trainer.LoadCheckpoint(previous_checkpoint_path());
  if (absl::IsNotFound(previous)) return latest;
  if (!previous.ok()) {
    return absl::Status(previous.code(),
                        absl::StrCat(latest.message(), "; and the previous checkpoint: ",
                                     previous.message()));
  }
  *warning = absl::StrCat(latest.message(), "; resuming from ", previous_checkpoint_path(),
                          " at step ", trainer.step());
  next_save_ = NextSave::kOverwrite;
  return previous_checkpoint_path();
}

absl::Status TrainOutputs::SaveCheckpoint(models::Trainer& trainer) {
  AtomicWriteOptions options;
  if (next_save_ == NextSave::kRotate) options.keep_previous_as = previous_checkpoint_path();
  if (next_save_ == NextSave::kStartOver) {
    if (::unlink(previous_checkpoint_path().c_str()) != 0 && errno != ENOENT) {
      return absl::ErrnoToStatus(errno, absl::StrCat("cannot remove the earlier run's '",
                                                     previous_checkpoint_path(), "'"));
    }
  }
  DAGRAD_RETURN_IF_ERROR(trainer.SaveCheckpoint(checkpoint_path(), options));
  next_save_ = NextSave::kRotate;
  return absl::OkStatus();
}

void MetricsWindow::Add(const models::StepResult& r) {
  step = r.step;
  if (r.skipped) {
    ++skipped;
    return;
  }
  ++steps;
  loss_sum += r.loss;
  accuracy_sum += r.accuracy;
}

namespace {

std::string FormatWindow(const MetricsWindow& w) {
  // %.17g: the sums read back to the same doubles.
  return absl::StrFormat("%s\n%d,%d,%.17g,%.17g,%d\n", kWindowHeader, w.step, w.steps, w.loss_sum,
                         w.accuracy_sum, w.skipped);
}

absl::StatusOr<MetricsWindow> ParseWindow(absl::string_view text) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  MetricsWindow w;
  std::vector<absl::string_view> f;
  if (lines.size() == 2 && lines[0] == kWindowHeader) f = absl::StrSplit(lines[1], ',');
  if (f.size() != 5 || !absl::SimpleAtoi(f[0], &w.step) || !absl::SimpleAtoi(f[1], &w.steps) ||
      !absl::SimpleAtod(f[2], &w.loss_sum) || !absl::SimpleAtod(f[3], &w.accuracy_sum) ||
      !absl::SimpleAtoi(f[4], &w.skipped)) {
    return absl::DataLossError(absl::StrCat(kWindowFile, " is malformed"));
  }
  return w;
}

}  // namespace

absl::Status TrainOutputs::StartMetrics() {
  rows_.clear();
  window_ = {};
  DropSavedWindow();  // a previous run's
  return WriteMetrics();
}

absl::Status TrainOutputs::ResumeMetrics(int64_t step) {
  DAGRAD_ASSIGN_OR_RETURN(std::string text, ReadFile(path("metrics.csv")));
  DAGRAD_ASSIGN_OR_RETURN(rows_, ParseMetrics(text));
  rows_.erase(std::remove_if(rows_.begin(), rows_.end(),
                             [step](const MetricsRow& r) { return r.step > step; }),
              rows_.end());
  elapsed_before_ = rows_.empty() ? 0 : rows_.back().elapsed;
  // A window saved at another step belongs to an older stop: the run has
  // since written rows past it.
  window_ = {};
  if (absl::StatusOr<std::string> saved = ReadFile(path(kWindowFile)); saved.ok()) {
    DAGRAD_ASSIGN_OR_RETURN(MetricsWindow w, ParseWindow(*saved));
    if (w.step == step) window_ = w;
  }
  return WriteMetrics();
}

absl::Status TrainOutputs::AppendRow(int64_t step, const models::EvalResult& eval, double lr,
                                     double elapsed) {
  const MetricsWindow& w = window_;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  rows_.push_back({.step = step,
                   .loss = w.steps ? w.loss_sum / w.steps : nan,
                   .train_accuracy = w.steps ? w.accuracy_sum / w.steps : nan,
                   .eval_loss = eval.loss,
                   .eval_accuracy = eval.accuracy,
                   .lr = lr,
                   .skipped = w.skipped,
                   .elapsed = elapsed});
  window_ = {};
  return WriteMetrics();
}

absl::Status TrainOutputs::SaveWindow() const {
  return WriteFileAtomically(path(kWindowFile), FormatWindow(window_));
}

void TrainOutputs::DropSavedWindow() const {
  std::error_code ec;
  std::filesystem::remove(path(kWindowFile), ec);  // absent is fine
}

absl::Status TrainOutputs::WriteLossSvg() const { return LossSvg(rows_, path("loss.svg")); }

absl::Status TrainOutputs::WriteMetrics() const {
  return WriteFileAtomically(path("metrics.csv"), FormatMetrics(rows_));
}

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
