#include "models/run_outputs.h"


#include "absl/strings/str_cat.h"
#include "engine/dot/dot.h"
#include "engine/io/file_io.h"
#include "engine/status_macros.h"
#include "engine/view/trace.h"
#include "engine/view/view_model.h"
#include "engine/view/viewer_html.h"
#include "models/plot/plots.h"

namespace dagrad::models {
namespace {

// GraphDots writes forward.dot and train_step.dot.
absl::Status GraphDots(Trainer& t, const std::string& dir, const std::string& title) {
  DAGRAD_ASSIGN_OR_RETURN(std::string forward,
                          ToDot(t.graph(), {t.logits(), t.loss()},
                                {.title = title + ": forward", .losses = {t.loss()}}));
  DAGRAD_RETURN_IF_ERROR(WriteDotFile(dir + "/forward.dot", forward));
  std::vector<Value> roots = t.training_step().updates;
  roots.push_back(t.loss());
  DAGRAD_ASSIGN_OR_RETURN(
      std::string step,
      ToDot(t.graph(), roots,
            {.title = title + ": training step (forward, backward, optimizer)",
             .losses = {t.loss()}}));
  return WriteDotFile(dir + "/train_step.dot", step);
}

// GraphView writes graph.html, the training step in the viewer, or notes
// why not (a build without its layout engine).
absl::Status GraphView(Trainer& t, const std::string& title, RunOutputs& out) {
  if (absl::Status available = ViewerAvailable(); !available.ok()) {
    absl::StrAppend(&out.note, out.note.empty() ? "" : "\n",
                    "graph.html is not written: ", available.message());
    return absl::OkStatus();
  }
  std::vector<Value> roots = t.training_step().updates;
  roots.push_back(t.loss());
  DAGRAD_RETURN_IF_ERROR(WriteViewerPage(
      t.graph(), roots,
      {.title = title + ": training step (forward, backward, optimizer)",
       .losses = {t.loss()},
       .plan = &t.train_plan().info(),
       .profile = &t.train_plan().profile()},
      out.dir + "/graph.html"));
  out.written.push_back("graph.html");
  return absl::OkStatus();
}

// WriteTrace writes the training plan's profiled step to `path`.
absl::Status WriteTrace(Trainer& t, const std::string& path) {
  DAGRAD_ASSIGN_OR_RETURN(std::string trace, ChromeTraceJson(t.graph(), t.train_plan().info(),
                                                             t.train_plan().profile()));
  return WriteFileAtomically(path, trace);
}

// RenderForward draws forward.dot as forward.svg when it may (see
// RunOutputsOptions::layers and Graphviz's presence), else notes why not.
absl::Status RenderForward(int64_t layers, RunOutputs& out) {
  if (layers > kMaxDrawnLayers) {
    out.note = absl::StrCat("forward.svg is not drawn for more than ", kMaxDrawnLayers,
                            " layers (Graphviz would take minutes for ", layers,
                            "); forward.dot holds the graph");
    return absl::OkStatus();
  }
  absl::Status rendered =
      RenderDot(out.dir + "/forward.dot", "svg", out.dir + "/forward.svg");
  if (rendered.ok()) {
    out.written.push_back("forward.svg");
  } else if (absl::IsUnavailable(rendered)) {
    out.note = absl::StrCat("forward.svg is not drawn: ", rendered.message(),
                            "; forward.dot holds the graph");
  } else {
    return rendered;
  }
  return absl::OkStatus();
}

}  // namespace

std::string RunOutputs::Summary() const {
  std::string s = absl::StrCat("wrote to ", dir, "/:");
  for (const std::string& name : written) absl::StrAppend(&s, " ", name);
  absl::StrAppend(&s, "\n");
  if (!note.empty()) absl::StrAppend(&s, note, "\n");
  return s;
}

absl::StatusOr<RunOutputs> WriteRunOutputs(Trainer& trainer, const std::string& dir,
                                           const std::vector<MetricsRow>& rows,
                                           const RunOutputsOptions& options) {
  auto stopped = [&options] {
    return options.stop && options.stop()
               ? absl::CancelledError("stopped while writing the outputs")
               : absl::OkStatus();
  };
  RunOutputs out{.dir = dir, .written = {"model.safetensors", "checkpoint.safetensors"}};
  DAGRAD_RETURN_IF_ERROR(trainer.SaveModel(dir + "/model.safetensors"));
  DAGRAD_RETURN_IF_ERROR(stopped());
  if (PathExists(RunDirectory(dir).previous_checkpoint_path())) {
    out.written.push_back("checkpoint.prev.safetensors");
  }
  out.written.insert(out.written.end(), {"metrics.csv", "loss.svg"});
  // The curves of the rows as metrics.csv holds them (rounded to its
  // digits): a run resumed from the file draws the picture of one never
  // stopped.
  DAGRAD_ASSIGN_OR_RETURN(const std::vector<MetricsRow> as_written,
                          ParseMetrics(FormatMetrics(rows)));
  DAGRAD_RETURN_IF_ERROR(WriteFileAtomically(dir + "/loss.svg", plot::LossCurves(as_written)));
  DAGRAD_ASSIGN_OR_RETURN(auto pictures, trainer.Pictures());
  for (const auto& [name, svg] : pictures) {
    DAGRAD_RETURN_IF_ERROR(WriteFileAtomically(dir + "/" + name, svg));
    out.written.push_back(name);
    DAGRAD_RETURN_IF_ERROR(stopped());
  }
  DAGRAD_RETURN_IF_ERROR(GraphDots(trainer, dir, options.title));
  out.written.insert(out.written.end(), {"forward.dot", "train_step.dot"});
  DAGRAD_RETURN_IF_ERROR(stopped());
  // A stop signal reaches Graphviz too (Ctrl-C signals the process group):
  // a stop first, then the drawing's own error.
  const absl::Status rendered = RenderForward(options.layers, out);
  DAGRAD_RETURN_IF_ERROR(stopped());
  DAGRAD_RETURN_IF_ERROR(rendered);
  DAGRAD_RETURN_IF_ERROR(GraphView(trainer, options.title, out));
  if (!options.trace.empty()) DAGRAD_RETURN_IF_ERROR(WriteTrace(trainer, options.trace));
  return out;
}

}  // namespace dagrad::models
