// engine/view/viewer_html.h
//
// ViewerHtml: one self-contained HTML page (no network: every script and
// style is inside it) that draws a graph's view model (view_model.h)
// interactively. Its layout engine is elkjs (Eclipse Layout Kernel, EPL-2.0),
// bundled into dagrad when it is built (tools/cmake/viewer.cmake). The page
// opens with the name scopes collapsed to the top level; a click on a scope
// expands it (repeated blocks, layers/0..N, fold into one group until
// opened); hovering or selecting a node shows its op, dtype, shape, bytes,
// scope, inputs and outputs; search finds nodes by name, op or scope;
// selecting a forward node highlights the gradient nodes made for it and
// the other way round; optimizer updates are marked; with a plan, a panel
// draws each arena buffer's lifetime over the schedule and the peak; with
// a profile, nodes and collapsed scopes are shaded by time, scopes showing
// their totals.
//
//   DAGRAD_ASSIGN_OR_RETURN(std::string json, ViewModelJson(g, {loss}));
//   if (ViewerAvailable().ok()) {
//     DAGRAD_ASSIGN_OR_RETURN(std::string html, ViewerHtml(json));
//     DAGRAD_RETURN_IF_ERROR(WriteFileAtomically("graph.html", html));
//   }

#ifndef DAGRAD_ENGINE_VIEW_VIEWER_HTML_H_
#define DAGRAD_ENGINE_VIEW_VIEWER_HTML_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/graph.h"
#include "engine/view/view_model.h"

namespace dagrad {

// ViewerAvailable is OK when this build embeds the layout engine, else
// FailedPrecondition saying how to install it (bash tools/setup.sh, then
// rebuild).
absl::Status ViewerAvailable();

// ElkVersion is the embedded elkjs's version, "" without it.
std::string ElkVersion();

// ViewerHtml returns the page for `model_json`, a ViewModelJson document.
// Errors: ViewerAvailable's; InvalidArgument when `model_json` is not a
// JSON object.
absl::StatusOr<std::string> ViewerHtml(absl::string_view model_json);

// WriteViewerPage writes the page of `roots` (ViewModelJson with `options`)
// to `path`, atomically. Without options.plan it compiles `roots` on the
// CPU so that the page shows the arena buffers an executor allocates for
// them; a graph that does not compile is drawn without them, and *note
// (when given) says why. Errors: ViewerAvailable's, ViewModelJson's and
// the file's.
//
//   if (ViewerAvailable().ok()) {
//     DAGRAD_RETURN_IF_ERROR(WriteViewerPage(g, {loss}, {.title = "loss"}, "loss.html"));
//   }
absl::Status WriteViewerPage(Graph& g, absl::Span<const Value> roots, ViewOptions options,
                             const std::string& path, std::string* note = nullptr);

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_VIEW_VIEWER_HTML_H_
