// tools/cli/view_command.h
//
// The viewer's part of the CLI: `dagrad dot --html` writes the graph `dot`
// would draw as the interactive viewer's page (engine/view/viewer_html.h)
// instead of DOT, and `dagrad train --profile --trace=FILE` writes the
// profiled training step as a Chrome trace (models/run_outputs.h).
//
//   dagrad dot --model=toy --backward --html --out=toy.html
//   dagrad train --task=reverse --steps=50 --profile --trace=step.json --out=runs/r

#ifndef DAGRAD_TOOLS_CLI_VIEW_COMMAND_H_
#define DAGRAD_TOOLS_CLI_VIEW_COMMAND_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/dot/dot.h"
#include "engine/graph.h"
#include "tools/cli/command.h"

namespace dagrad::cli {

// HtmlRequested is --html's value.
bool HtmlRequested();

// WriteViewerPage writes `roots` of `g` and what they depend on, compiled
// on the CPU to show the plan's arena buffers, as the viewer's page at
// `out`; returns the exit code. Without the layout engine in the build it
// fails saying how to install it.
int WriteViewerPage(const Command& cmd, Graph& g, const std::vector<Value>& roots,
                    const DotOptions& options, const std::string& out);

// TraceFlag is --trace's value; CheckTraceFlag refuses it without
// --profile (InvalidArgument).
std::string TraceFlag();
absl::Status CheckTraceFlag(bool profile);

}  // namespace dagrad::cli

#endif  // DAGRAD_TOOLS_CLI_VIEW_COMMAND_H_
