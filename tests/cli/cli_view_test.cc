// The viewer's CLI: `dagrad dot --html` writes the page, `dagrad train
// --profile --trace=FILE` the profiled step as a Chrome trace, and --trace
// without --profile is a usage error.

#include <filesystem>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "engine/io/file_io.h"
#include "engine/view/viewer_html.h"
#include "models/run_outputs.h"
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
  // models::kRunFileNames, which a trace may not be named, lists what the run wrote.
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    EXPECT_TRUE(name == "step.json" || absl::c_linear_search(models::kRunFileNames, name)) << name;
  }
}

// A --trace that the run's end could not write, or that would write over
// one of its files, was found after the whole run (or not at all).
TEST(CliView, ATraceThatCannotBeWrittenIsRefusedBeforeTraining) {
  const std::string dir = FreshDir("trace_refused");
  ASSERT_OK(WriteFileAtomically(dir + "/metrics.csv", "step\n"));
  const struct {
    std::string trace, error;
  } cases[] = {
      {dir + "/model.safetensors", "would write over the run's own model.safetensors (--out="},
      {dir + "/missing/t.json", "its folder '" + dir + "/missing' does not exist"},
      {dir, "is a directory"},
      // A device, and a folder that is a file, were found only at the end.
      {"/dev/full", "is not a file, which the trace would replace"},
      {dir + "/metrics.csv/t.json", "its folder '" + dir + "/metrics.csv' is not a directory"},
  };
  for (const auto& c : cases) {
    const CliResult r =
        RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir, " --profile --trace=", c.trace));
    EXPECT_EQ(r.code, 2) << c.trace;
    EXPECT_THAT(r.err, HasSubstr(absl::StrCat("--trace=", c.trace))) << c.trace;
    EXPECT_THAT(r.err, HasSubstr(c.error)) << c.trace;
    EXPECT_FALSE(std::filesystem::exists(dir + "/checkpoint.safetensors")) << c.trace;
  }
}

TEST(CliView, DotRefusesToWriteOverItsModel) {
  const std::string dir = FreshDir("dot_over_model");
  ASSERT_EQ(RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir)).code, 0);
  const std::string onnx = dir + "/toy.onnx";
  if (RunDagrad(absl::StrCat("export --checkpoint=", dir, "/model.safetensors --out=", onnx)).code != 0) {
    GTEST_SKIP() << "built without ONNX";
  }
  ASSERT_OK_AND_ASSIGN(const std::string before, ReadFile(onnx));
  const CliResult r = RunDagrad(absl::StrCat("dot --model=", onnx, " --out=", onnx));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("--out=", onnx, " would write over ", onnx, " (--model)")));
  EXPECT_EQ(*ReadFile(onnx), before);
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
