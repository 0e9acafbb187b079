#include "engine/view/viewer_html.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "engine/view/internal/viewer_assets.h"
#include "nlohmann/json.hpp"

namespace dagrad {
namespace {

// InScript makes text safe inside a <script> element: "</" would end it
// early, and "<\/" means the same in JavaScript strings and JSON.
std::string InScript(absl::string_view text) {
  return absl::StrReplaceAll(text, {{"</", "<\\/"}, {"<!--", "<\\!--"}});
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
      InScript(model_json), "</script>\n<script>", InScript(view_assets::kElkJs),
      "</script>\n<script>", InScript(view_assets::kViewerJs), "</script>\n</body></html>\n");
}

}  // namespace dagrad
