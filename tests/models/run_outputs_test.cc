// models::WriteRunOutputs (models/run_outputs.h): what a finished run
// leaves beside Fit's files, the library-level twin of the files
// `dagrad train` lists (tests/cli/cli_test.cc).

#include "models/run_outputs.h"

#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "engine/dot/dot.h"
#include "engine/io/file_io.h"
#include "engine/view/viewer_html.h"
#include "models/fit.h"
#include "models/gpt/gpt_trainer.h"
#include "models/toy/toy_trainer.h"

namespace dagrad::models {
namespace {

using ::dagrad::testing::NewTempDir;

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

std::unique_ptr<ToyTrainer> FittedToy(const std::string& dir, int64_t layers = 1) {
  TrainConfig c;
  c.model = {.vocab = 8, .seq_len = 6, .dim = 16, .heads = 2, .layers = layers, .ffn = 32,
             .dropout = 0.0};
  c.run = {.batch = 4, .steps = 2, .warmup = 1};
  c.eval_size = 8;
  absl::StatusOr<std::unique_ptr<ToyTrainer>> t = ToyTrainer::Create(c);
  EXPECT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(Fit(**t, {.dir = dir, .eval_every = 1}).ok());
  return *std::move(t);
}

TEST(RunOutputs, WritesEveryFileItListsInTheOrderOfTheSummary) {
  const std::string dir = NewTempDir("outputs");
  auto t = FittedToy(dir);
  absl::StatusOr<RunOutputs> out = WriteRunOutputs(*t, dir, {}, {.title = "toy", .layers = 1});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<std::string> want = {"model.safetensors", "checkpoint.safetensors",
                                   "checkpoint.prev.safetensors", "metrics.csv", "loss.svg",
                                   "attention.svg", "positional_encoding.svg", "forward.dot",
                                   "train_step.dot"};
  if (!DotProgram().empty()) want.push_back("forward.svg");
  if (ViewerAvailable().ok()) want.push_back("graph.html");
  EXPECT_EQ(out->written, want);
  for (const std::string& name : out->written) {
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + name)) << name;
  }
  EXPECT_THAT(out->Summary(), StartsWith(absl::StrCat("wrote to ", dir, "/: model.safetensors ")));
}

TEST(RunOutputs, AStopBetweenFilesIsCancelledWithTheFilesSoFarWhole) {
  const std::string dir = NewTempDir("outputs");
  auto t = FittedToy(dir);
  absl::StatusOr<RunOutputs> out =
      WriteRunOutputs(*t, dir, {}, {.title = "toy", .stop = [] { return true; }});
  EXPECT_TRUE(absl::IsCancelled(out.status())) << out.status();
  EXPECT_TRUE(std::filesystem::exists(dir + "/model.safetensors"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/loss.svg"));
}

TEST(RunOutputs, ALargeModelKeepsItsDotAndSaysWhyItIsNotDrawn) {
  const std::string dir = NewTempDir("outputs");
  auto t = FittedToy(dir);
  absl::StatusOr<RunOutputs> out =
      WriteRunOutputs(*t, dir, {}, {.title = "toy", .layers = kMaxDrawnLayers + 1});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->written, Contains("train_step.dot"));
  EXPECT_THAT(out->written, Not(Contains("forward.svg")));
  EXPECT_THAT(out->note, HasSubstr("forward.svg is not drawn for more than 12 layers"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/forward.svg"));
  EXPECT_THAT(out->Summary(), HasSubstr("\nforward.svg is not drawn"));
  // The viewer has no size limit: graph.html is there whenever it is built in.
  EXPECT_EQ(std::filesystem::exists(dir + "/graph.html"), ViewerAvailable().ok());
}

TEST(RunOutputs, ATraceOfARunThatWasNotProfiledIsRefused) {
  const std::string dir = NewTempDir("outputs");
  auto t = FittedToy(dir);
  absl::StatusOr<RunOutputs> out =
      WriteRunOutputs(*t, dir, {}, {.title = "toy", .trace = dir + "/trace.json"});
  EXPECT_TRUE(absl::IsFailedPrecondition(out.status())) << out.status();
  EXPECT_THAT(out.status().message(), HasSubstr("--profile"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/trace.json"));
}

TEST(RunOutputs, AGptDrawsItsAttentionOnTheFirstValidationWindow) {
  const std::string dir = NewTempDir("outputs");
  const std::string data = dir + "/data.txt";
  ASSERT_TRUE(WriteFileAtomically(data, std::string(400, 'a') + std::string(100, 'b')).ok());
  TextTrainConfig c;
  c.data = data;
  c.model = {.block_size = 8, .dim = 16, .heads = 2, .layers = 1, .dropout = 0};
  c.run.batch = 4;
  c.run.steps = 1;
  absl::StatusOr<std::unique_ptr<GptTrainer>> t = GptTrainer::Create(c);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_TRUE(Fit(**t, {.dir = dir}).ok());
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> pictures = (*t)->Pictures();
  ASSERT_TRUE(pictures.ok()) << pictures.status();
  ASSERT_EQ(pictures->size(), 1u);
  EXPECT_EQ((*pictures)[0].first, "attention.svg");
  EXPECT_THAT((*pictures)[0].second, HasSubstr("causal attention on the first validation window"));
}

}  // namespace
}  // namespace dagrad::models
