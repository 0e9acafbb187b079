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
#include "models/plot/plots.h"

namespace dagrad::cli {

absl::Status TrainOutputs::WriteLossSvg() const {
  return WriteFileAtomically(path("loss.svg"), plot::LossCurves(rows_));
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
  std::vector<std::string> labels;
  for (int64_t t : sample.tokens) labels.push_back(absl::StrCat(t));
  DAGRAD_RETURN_IF_ERROR(WriteFileAtomically(
      path("attention.svg"),
      plot::AttentionHeatmaps(sample.weights, labels,
                              "attention weights for a held-out sequence (row: query, column: "
                              "key)")));
  DAGRAD_RETURN_IF_ERROR(stopped());
  DAGRAD_ASSIGN_OR_RETURN(const std::string encoding,
                          plot::PositionalEncoding(c.model.seq_len, c.model.dim));
  DAGRAD_RETURN_IF_ERROR(WriteFileAtomically(path("positional_encoding.svg"), encoding));
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
