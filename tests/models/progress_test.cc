// What the CLI used to do itself, now the library's:
// models::ProgressPrinter (models/progress.h; stdout is not a terminal under
// ctest, so it writes a line per metrics row, not the bar),
// and models::TextCodecFor (models/text_codec.h).

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/gpt/gpt.h"
#include "models/gpt/tokenizer.h"
#include "models/progress.h"
#include "models/text_codec.h"
#include "tests/support/gpt_fixtures.h"

namespace dagrad::models {
namespace {

using ::testing::HasSubstr;

TEST(ProgressPrinter, PrintsRowsAndResumesAfterTheCallbacksAlreadySet) {
  std::vector<std::string> order;
  ProgressPrinter progress(300);
  FitOptions options = progress.Attach(
      {.on_step = [&](const FitProgress&) { order.push_back("step"); },
       .on_row = [&](const MetricsRow&) { order.push_back("row"); },
       .on_resume = [&](const FitResume&) { order.push_back("resume"); }});
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  options.on_step({.step = {.step = 19, .loss = 2.5}, .steps_per_second = 10});
  options.on_row({.step = 20, .loss = 1.23456, .train_accuracy = 0.5});
  options.on_resume({.path = "run/checkpoint.safetensors", .step = 300, .warning = "damaged"});
  const std::string out = ::testing::internal::GetCapturedStdout();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(order, (std::vector<std::string>{"step", "row", "resume"}));
  // (300 - 20) steps at 10 steps/s: 28 s left.
  EXPECT_THAT(out, HasSubstr("step 20/300  loss 1.2346  acc 0.500  10.0 steps/s  28s left\n"));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("step 19/300")));  // no bar off a terminal
  EXPECT_THAT(out, HasSubstr("resumed from run/checkpoint.safetensors at step 300\n"
                             "checkpoint is at step 300 of 300: nothing to train"));
  EXPECT_EQ(err, "damaged\n");
}

TEST(ProgressPrinter, AProcessThatIsNotTheWriterPrintsNothing) {
  ProgressPrinter progress(10);
  FitOptions options = progress.Attach({.writer = false});
  EXPECT_FALSE(options.on_row);
  EXPECT_FALSE(options.on_resume);
}

TEST(TextCodec, AModelFileIsByteLevel) {
  absl::StatusOr<TextCodec> codec = TextCodecFor("runs/text/model.safetensors");
  ASSERT_TRUE(codec.ok()) << codec.status();
  EXPECT_EQ(codec->encode("Hi\xff"), (std::vector<int64_t>{72, 105, 255}));
  absl::StatusOr<std::string> text = codec->decode({72, 105, 255});
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "Hi\xff");
}

TEST(TextCodec, ADirectoryUsesItsTokenizerAndRefusesIdsItLacks) {
  const std::string dir = ::dagrad::testing::HfGpt2Tiny();
  absl::StatusOr<TextCodec> codec = TextCodecFor(dir);
  ASSERT_TRUE(codec.ok()) << codec.status();
  absl::StatusOr<Gpt2Tokenizer> tokenizer = Gpt2Tokenizer::LoadDirectory(dir);
  ASSERT_TRUE(tokenizer.ok());
  const std::string text = "Hello world, it was the best of times";
  EXPECT_EQ(codec->encode(text), tokenizer->Encode(text));
  absl::StatusOr<std::string> back = codec->decode(codec->encode(text));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, text);
  EXPECT_FALSE(codec->decode({1 << 30}).ok());
  EXPECT_FALSE(TextCodecFor(std::string(DAGRAD_TEST_DATA_DIR)).ok());  // no vocab.json there
}

}  // namespace
}  // namespace dagrad::models
