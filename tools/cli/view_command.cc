// The viewer's part of the CLI (tools/cli/view_command.h).

#include "tools/cli/view_command.h"

#include <iostream>
#include <memory>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "engine/io/file_io.h"
#include "engine/view/view_model.h"
#include "engine/view/viewer_html.h"

ABSL_FLAG(bool, html, false,
          "dot: write --out as the interactive viewer's self-contained HTML page instead of DOT");
ABSL_FLAG(std::string, trace, "",
          "train: with --profile, write the profiled training step as a Chrome trace JSON "
          "(Perfetto, chrome://tracing) to this file");

namespace dagrad::cli {

bool HtmlRequested() { return absl::GetFlag(FLAGS_html); }

std::string TraceFlag() { return absl::GetFlag(FLAGS_trace); }

absl::Status CheckTraceFlag(bool profile) {
  if (TraceFlag().empty() || profile) return absl::OkStatus();
  return absl::InvalidArgumentError("--trace needs --profile (the trace is the profiled step)");
}

int WriteViewerPage(const Command& cmd, Graph& g, const std::vector<Value>& roots,
                    const DotOptions& options, const std::string& out) {
  if (absl::Status available = ViewerAvailable(); !available.ok()) return Failure(cmd, available);
  Executor exec(g);
  absl::StatusOr<std::unique_ptr<Plan>> plan = exec.Compile(roots, {});
  if (!plan.ok()) {
    std::cout << "the graph does not compile, so the page shows no memory: "
              << plan.status().message() << "\n";
  }
  absl::StatusOr<std::string> model =
      ViewModelJson(g, roots,
                    {.title = options.title,
                     .losses = options.losses,
                     .plan = plan.ok() ? &(*plan)->info() : nullptr});
  if (!model.ok()) return Failure(cmd, model.status());
  absl::StatusOr<std::string> html = ViewerHtml(*model);
  if (!html.ok()) return Failure(cmd, html.status());
  if (absl::Status st = WriteFileAtomically(out, *html); !st.ok()) return Failure(cmd, st);
  std::cout << "wrote " << out << "\n";
  return kExitOk;
}

}  // namespace dagrad::cli
