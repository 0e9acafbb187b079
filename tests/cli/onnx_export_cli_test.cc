// `dagrad export` (tools/cli/export_command.cc): writes the model, or fails
// with one line and exit code 2 and leaves no file, also in a build without
// ONNX (DAGRAD_ONNX=OFF), where it says so.

#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/cli_runner.h"

namespace dagrad::testing {
namespace {

const std::string kToyCheckpoint = std::string(DAGRAD_TEST_DATA_DIR) + "/toy_eval/model.safetensors";

TEST(CliExport, WritesTheModelOrFailsWithoutAFile) {
  const std::string dir = FreshDir("export");
  const std::string out = dir + "/model.onnx";
  const CliResult r = RunDagrad("export --checkpoint=" + kToyCheckpoint + " --out=" + out);
#ifdef DAGRAD_HAVE_ONNX
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr("wrote " + out));
  EXPECT_GT(std::filesystem::file_size(out), 0u);
#else
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, ::testing::HasSubstr("dagrad was built without ONNX"));
  EXPECT_FALSE(std::filesystem::exists(out));
#endif
  const std::string missing_out = dir + "/missing.onnx";
  const CliResult bad =
      RunDagrad("export --checkpoint=" + dir + "/no_such.safetensors --out=" + missing_out);
  EXPECT_EQ(bad.code, 2);
  EXPECT_FALSE(std::filesystem::exists(missing_out));
  const CliResult usage = RunDagrad("export --checkpoint=" + kToyCheckpoint);
  EXPECT_EQ(usage.code, 2);
  EXPECT_THAT(usage.err, ::testing::HasSubstr("--out is required"));
}

}  // namespace
}  // namespace dagrad::testing
