// tools/cli/train_outputs.h
//
// What `dagrad train` writes to its output directory: metrics.csv (kept
// consistent across --resume), the checkpoint, the final model, the loss
// curves, attention heatmaps, the positional encoding, and the DOT of the
// forward pass and of the whole training step. Every file is written
// atomically (temporary file, fsync, rename).

#ifndef DAGRAD_TOOLS_CLI_TRAIN_OUTPUTS_H_
#define DAGRAD_TOOLS_CLI_TRAIN_OUTPUTS_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "models/toy_trainer.h"

namespace dagrad::cli {

struct MetricsRow {
  int64_t step = 0;
  double loss = 0;            // mean training loss since the previous row
  double train_accuracy = 0;  // mean training token accuracy since then
  double eval_accuracy = 0;   // held-out token accuracy at this step
  double lr = 0;
  double elapsed = 0;         // seconds since the run started (wall clock)
};

class TrainOutputs {
 public:
  explicit TrainOutputs(std::string dir) : dir_(std::move(dir)) {}

  std::string checkpoint_path() const { return dir_ + "/checkpoint.safetensors"; }

  // StartMetrics begins a fresh metrics.csv.
  absl::Status StartMetrics();
  // ResumeMetrics keeps the rows of an existing metrics.csv up to `step`
  // (the checkpoint's), so the file reads as one uninterrupted run.
  absl::Status ResumeMetrics(int64_t step);
  absl::Status AppendMetrics(const MetricsRow& row);
  // elapsed_before is the elapsed time of the last kept row on resume.
  double elapsed_before() const { return elapsed_before_; }

  // WriteAll writes the model and every picture and graph.
  absl::Status WriteAll(models::ToyTrainer& trainer);
  void PrintSummary(std::ostream& out) const;

 private:
  absl::Status WriteMetrics() const;
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  std::string dir_;
  std::vector<MetricsRow> rows_;
  double elapsed_before_ = 0;
  std::vector<std::string> written_;
};

// FormatMetrics renders rows as metrics.csv text (header included).
std::string FormatMetrics(const std::vector<MetricsRow>& rows);
// ParseMetrics reads metrics.csv text; DataLoss naming the line when bad.
absl::StatusOr<std::vector<MetricsRow>> ParseMetrics(const std::string& text);

}  // namespace dagrad::cli

#endif  // DAGRAD_TOOLS_CLI_TRAIN_OUTPUTS_H_
