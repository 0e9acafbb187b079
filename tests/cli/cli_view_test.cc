// The viewer's CLI: `dagrad dot --html` writes the page, `dagrad train
// --profile --trace=FILE` the profiled step as a Chrome trace, and --trace
// without --profile is a usage error.

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "engine/io/file_io.h"
#include "engine/view/viewer_html.h"
#include "nlohmann/json.hpp"
#include "tests/support/cli_runner.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using ::testing::HasSubstr;

TEST(CliView, DotHtmlWritesTheGraphsPageOrSaysHowToInstallTheViewer) {
  const std::string page = FreshDir("view") + "/toy.html";
  const CliResult r = RunDagrad("dot --model=toy --backward --html --out=" + page);
  if (!ViewerAvailable().ok()) {
    EXPECT_EQ(r.code, 2);
    EXPECT_THAT(r.err, HasSubstr("tools/setup.sh"));
    return;
  }
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string html = *ReadFile(page);
  EXPECT_THAT(html, HasSubstr("<script type=\"application/json\" id=\"dagrad-model\">"));
  EXPECT_THAT(html, HasSubstr("\"role\":\"gradient\""));
  EXPECT_THAT(html, HasSubstr("\"buffers\":["));
}

TEST(CliView, TrainWritesTheProfiledStepAsATrace) {
  const std::string dir = FreshDir("trace");
  const CliResult r =
      RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir, " --profile --trace=", dir, "/step.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json trace = nlohmann::json::parse(*ReadFile(dir + "/step.json"));
  ASSERT_TRUE(trace["traceEvents"].is_array());
  int ops = 0;
  for (const nlohmann::json& e : trace["traceEvents"]) ops += e["ph"] == "X" && e["tid"] == 1;
  EXPECT_GT(ops, 0);
}

TEST(CliView, TraceWithoutProfileIsAUsageError) {
  const std::string dir = FreshDir("trace_no_profile");
  const CliResult r = RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir, " --trace=", dir, "/t.json"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--trace needs --profile"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/model.safetensors"));
}

}  // namespace
}  // namespace dagrad::testing
