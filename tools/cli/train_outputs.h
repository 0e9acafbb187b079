// tools/cli/train_outputs.h
//
// What `dagrad train` writes to its output directory at the end of a run,
// beside what models::Fit keeps there (checkpoints and metrics.csv,
// models/run_directory.h): the final model, the loss curves, attention
// heatmaps, the positional encoding, and the DOT of the forward pass and
// of the whole training step. Every file is written atomically (temporary
// file, fsync, rename).

#ifndef DAGRAD_TOOLS_CLI_TRAIN_OUTPUTS_H_
#define DAGRAD_TOOLS_CLI_TRAIN_OUTPUTS_H_

#include <functional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "models/toy/toy_trainer.h"
#include "models/run_directory.h"

namespace dagrad::cli {

class TrainOutputs {
 public:
  // `rows`: metrics.csv's (models::FitResult::rows).
  TrainOutputs(std::string dir, std::vector<models::MetricsRow> rows)
      : dir_(std::move(dir)), rows_(std::move(rows)) {}

  std::string previous_checkpoint_path() const {
    return models::RunDirectory(dir_).previous_checkpoint_path();
  }

  // WriteLossSvg writes loss.svg: the training and held-out loss and
  // accuracy of the rows so far.
  absl::Status WriteLossSvg() const;
  // WriteAll writes the model and every picture and graph. Between files it
  // asks `stop` (when given) and returns Cancelled once it says true; the
  // files written so far are whole.
  absl::Status WriteAll(models::ToyTrainer& trainer, const std::function<bool()>& stop = {});
  void PrintSummary(std::ostream& out) const;
  // SetWritten names the files PrintSummary lists (WriteAll sets them).
  void SetWritten(std::vector<std::string> names) { written_ = std::move(names); }
  // RenderForward draws forward.dot as forward.svg, adding it to the files
  // written, when Graphviz is there and the model of `layers` layers is
  // small enough for it to finish soon; else PrintSummary says why not.
  absl::Status RenderForward(int64_t layers);

 private:
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  std::string dir_;
  std::vector<models::MetricsRow> rows_;
  std::vector<std::string> written_;
  std::string note_;  // PrintSummary's last line, when not empty
};

}  // namespace dagrad::cli

#endif  // DAGRAD_TOOLS_CLI_TRAIN_OUTPUTS_H_
