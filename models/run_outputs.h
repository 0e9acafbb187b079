// models/run_outputs.h
//
// WriteRunOutputs: what a finished training run leaves in its directory
// beside Fit's files (checkpoints and metrics.csv, models/run_directory.h),
// so that a program using the library gets what `dagrad train` writes.
// model.safetensors holds the trained parameters with the model's metadata
// (what `dagrad eval`, `dagrad generate` and the PyTorch references load);
// loss.svg draws metrics.csv's training and held-out loss and accuracy;
// the trainer's Pictures follow (attention heatmaps, ...); forward.dot and
// train_step.dot hold the forward graph and the whole training step
// (forward, backward, optimizer) as Graphviz DOT; forward.svg is drawn
// from forward.dot by Graphviz when it is there and the model is small
// enough for it to finish soon (else RunOutputs::note says why not);
// graph.html is the training step (forward, backward, optimizer) with its
// plan's arena buffers and, when the run was profiled, each op's time, in
// the interactive viewer (engine/view/viewer_html.h), for every model size
// (a build without the viewer's layout engine notes why it is missing);
// with RunOutputsOptions::trace, the profiled step's Chrome trace.
// Every file is written atomically (temporary file, fsync, rename).
//
//   // setup: ToyRun
//   DAGRAD_ASSIGN_OR_RETURN(FitResult fit, Fit(*trainer, {.dir = "runs/gpt"}));
//   DAGRAD_ASSIGN_OR_RETURN(RunOutputs outputs,
//                           WriteRunOutputs(*trainer, "runs/gpt", fit.rows, {.title = "gpt"}));
//   std::cout << outputs.Summary();   // "wrote to runs/gpt/: model.safetensors ..."

#ifndef DAGRAD_MODELS_RUN_OUTPUTS_H_
#define DAGRAD_MODELS_RUN_OUTPUTS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "models/run_directory.h"
#include "models/trainer.h"

namespace dagrad::models {

struct RunOutputsOptions {
  std::string title;  // names the model in the graphs' titles ("gpt")
  // The model's layers: forward.svg is drawn for at most kMaxDrawnLayers
  // (Graphviz's time grows much faster than the graph: 4 s for 16 layers,
  // over 10 minutes for 100); 0: not known, drawn.
  int64_t layers = 0;
  // trace: when not empty, the path (absolute, or relative to the working
  // directory) to write the training plan's last profiled step to as a
  // Chrome trace (engine/view/trace.h); the plan must have been profiled
  // (RunConfig::profile, --profile), else FailedPrecondition.
  std::string trace;
  // Asked between files: once it says true, WriteRunOutputs returns
  // Cancelled, every file written so far whole.
  std::function<bool()> stop;
};

inline constexpr int64_t kMaxDrawnLayers = 12;

// What WriteRunOutputs wrote: the directory's files of the run (Fit's
// included; kRunFileNames, models/run_directory.h, lists them all) in the
// order a reader wants them, and why forward.svg is not among them, when it
// is not.
struct RunOutputs {
  std::string dir;
  std::vector<std::string> written;
  std::string note;

  // Summary: "wrote to DIR/: FILE ...", and the note on a line of its own.
  std::string Summary() const;
};

// WriteRunOutputs writes the files above to `dir` for the trained
// `trainer`, with loss.svg drawn from `rows` (FitResult::rows). Errors:
// the trainer's (a NaN or Inf in the model, refused by SaveModel), the
// file system's, Graphviz's failure on forward.dot, FailedPrecondition for
// a trace of an unprofiled run, Cancelled from options.stop.
absl::StatusOr<RunOutputs> WriteRunOutputs(Trainer& trainer, const std::string& dir,
                                           const std::vector<MetricsRow>& rows,
                                           const RunOutputsOptions& options = {});

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_RUN_OUTPUTS_H_
