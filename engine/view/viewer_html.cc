#include "engine/view/viewer_html.h"

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "engine/executor.h"
#include "engine/io/file_io.h"
#include "engine/status_macros.h"
#include "engine/view/internal/viewer_assets.h"
#include "nlohmann/json.hpp"

namespace dagrad {
namespace {

// InScript makes JavaScript safe inside a <script> element: "</" would end
// it early, and "<\/" means the same in strings and regular expressions.
std::string InScript(absl::string_view text) {
  return absl::StrReplaceAll(text, {{"</", "<\\/"}, {"<!--", "<\\!--"}});
}

// JsonInScript does so for JSON, whose "<" can only be in a string, where
// "\u003c" is the same character: no "</script" or "<!--" is left, and
// JSON.parse reads it (it refuses "<\!--").
std::string JsonInScript(absl::string_view json) {
  return absl::StrReplaceAll(json, {{"<", "\\u003c"}});
}

}  // namespace

absl::Status ViewerAvailable() {
  if (view_assets::kElkJs[0] != '\0') return absl::OkStatus();
  return absl::FailedPreconditionError(
      "the graph viewer's layout engine (elkjs) was not installed when dagrad was built: run "
      "`bash tools/setup.sh` (it runs npm install in tools/viewer), then build again");
}

std::string ElkVersion() { return view_assets::kElkVersion; }

absl::StatusOr<std::string> ViewerHtml(absl::string_view model_json) {
  if (absl::Status available = ViewerAvailable(); !available.ok()) return available;
  if (!nlohmann::json::accept(model_json.begin(), model_json.end()) || model_json.empty() ||
      model_json.front() != '{') {
    return absl::InvalidArgumentError("ViewerHtml: the view model is not a JSON object");
  }
  return absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta name=\"generator\" content=\"dagrad (layout: elkjs ", view_assets::kElkVersion,
      ", EPL-2.0)\">\n<title>dagrad graph</title>\n<style>", view_assets::kViewerCss,
      "</style>\n</head><body>\n<script type=\"application/json\" id=\"dagrad-model\">",
      JsonInScript(model_json), "</script>\n<script>", InScript(view_assets::kElkJs),
      "</script>\n<script>", InScript(view_assets::kViewerJs), "</script>\n</body></html>\n");
}

absl::Status WriteViewerPage(Graph& g, absl::Span<const Value> roots, ViewOptions options,
                             const std::string& path, std::string* note) {
  DAGRAD_RETURN_IF_ERROR(ViewerAvailable());
  std::unique_ptr<Plan> plan;
  if (options.plan == nullptr) {
    Executor exec(g);
    absl::StatusOr<std::unique_ptr<Plan>> compiled =
        exec.Compile(std::vector<Value>(roots.begin(), roots.end()), {});
    if (compiled.ok()) plan = *std::move(compiled);
    if (!compiled.ok() && note != nullptr) {
      *note = absl::StrCat("the graph does not compile, so the page shows no memory: ",
                           compiled.status().message());
    }
    options.plan = plan ? &plan->info() : nullptr;
  }
  DAGRAD_ASSIGN_OR_RETURN(const std::string model, ViewModelJson(g, roots, options));
  DAGRAD_ASSIGN_OR_RETURN(const std::string html, ViewerHtml(model));
  return WriteFileAtomically(path, html);
}

}  // namespace dagrad
