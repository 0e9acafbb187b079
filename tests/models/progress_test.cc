// What the CLI used to do itself, now the library's:
// models::ProgressPrinter (models/progress.h; stdout is not a terminal under
// ctest, so it writes a line per metrics row, not the bar),
// models::TextCodecFor (models/text_codec.h) and models::ExampleSizesFor
// (models/language_model.h, the sizes `dagrad export` builds at).

#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/gpt/gpt.h"
#include "models/gpt/tokenizer.h"
#include "models/progress.h"
#include "models/text_codec.h"

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
  const std::string dir = std::string(DAGRAD_TEST_DATA_DIR) + "/hf_gpt2_tiny";
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

// The sizes are the smallest that are free: >= 2, not 2 or 3, no dim of a
// parameter, no axis size, and the batch not the sequence length.
TEST(ExampleSizes, AreTheSmallestSizesNoAxisOfTheModelHas) {
  Graph g;
  absl::StatusOr<Gpt> gpt = Gpt::Create(g, {.block_size = 16, .dim = 8, .heads = 2, .layers = 1});
  ASSERT_TRUE(gpt.ok()) << gpt.status();
  std::set<int64_t> taken = {2, 3};
  for (int64_t a : gpt->axis_sizes()) taken.insert(a);
  for (const Value& p : gpt->parameters()) {
    for (int64_t d : p.shape().dims()) taken.insert(d);
  }
  absl::StatusOr<ExampleSizes> sizes = ExampleSizesFor(*gpt);
  ASSERT_TRUE(sizes.ok()) << sizes.status();
  EXPECT_NE(sizes->batch, sizes->sequence);
  EXPECT_LE(sizes->sequence, 16);
  for (int64_t n = 2; n <= sizes->sequence; ++n) EXPECT_EQ(taken.count(n) > 0, n < sizes->sequence) << n;
  for (int64_t n = 2; n <= sizes->batch; ++n) {
    EXPECT_EQ(taken.count(n) > 0 || n == sizes->sequence, n < sizes->batch) << n;
  }
}

TEST(ExampleSizes, AModelWhoseDimsTakeEveryLengthIsRefused) {
  Graph g;  // positions 4: 2, 3 and 4 are all taken (heads 2, dim 4)
  absl::StatusOr<Gpt> gpt = Gpt::Create(g, {.block_size = 4, .dim = 4, .heads = 2, .layers = 1});
  ASSERT_TRUE(gpt.ok()) << gpt.status();
  absl::StatusOr<ExampleSizes> sizes = ExampleSizesFor(*gpt);
  ASSERT_FALSE(sizes.ok());
  EXPECT_THAT(sizes.status().message(), HasSubstr("every sequence length up to the model's 4"));
}

}  // namespace
}  // namespace dagrad::models
