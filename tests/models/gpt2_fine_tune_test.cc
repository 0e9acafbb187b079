// CreateGpt2FineTuner (models/gpt2/fine_tune.h) on the fixture that
// transformers wrote (tests/data/hf_gpt2_tiny) and a small English text:
// it starts from the directory's weights (its first evaluation is
// EvaluateModel's of those weights on the same windows), lowers the
// validation loss, trains with config.json's dropouts or the one given,
// resumes exactly through Fit (dropout masks included), and its saved model
// exports with WriteHfGpt2 to a directory of the same logits. Also
// TokenTextData's windows, hand-worked, and LmTrainConfig::initial's
// refusal of weights that do not fit.

#include "models/gpt2/fine_tune.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/io/checkpoint.h"
#include "engine/io/file_io.h"
#include "models/evaluate.h"
#include "models/fit.h"
#include "models/gpt/text_task.h"
#include "models/gpt/tokenizer.h"
#include "models/gpt2/gpt2.h"
#include "models/gpt2/hf_checkpoint.h"
#include "models/gpt2/hf_export.h"
#include "nlohmann/json.hpp"
#include "tests/support/cli_runner.h"
#include "tests/support/gpt_fixtures.h"
#include "tests/support/test_util.h"

namespace dagrad::models {
namespace {

using ::dagrad::testing::FreshDir;
using ::dagrad::testing::HfGpt2Tiny;
using ::dagrad::testing::SameBits;

constexpr int64_t kSeqLen = 16;

// A text of a few sentences, repeated: enough tokens for a window in each
// split, and regular enough that a few steps learn something.
std::string TextFile(const std::string& name) {
  std::string text;
  for (int i = 0; i < 24; ++i) {
    text += "The quick brown fox jumps over the lazy dog. A cat sat on the mat and slept.\n";
  }
  const std::string path = FreshDir(name) + "/text.txt";
  EXPECT_TRUE(WriteFileAtomically(path, text).ok());
  return path;
}

// Tune: the fixture tuned on `text` in windows of seq_len.
Gpt2FineTune Tune(const std::string& text, int64_t seq_len) {
  return {.hf_dir = HfGpt2Tiny(), .text_path = text, .seq_len = seq_len};
}

LmTrainConfig Config(int64_t steps) {
  return {.run = {.batch = 4, .steps = steps, .lr = 3e-3, .warmup = 0, .seed = 7}};
}

TEST(TokenTextData, SplitsTokensAndCutsHandWorkedWindows) {
  std::vector<int64_t> ids(40);
  for (int64_t i = 0; i < 40; ++i) ids[i] = 100 + i;
  ASSERT_OK_AND_ASSIGN(TokenTextData d, TokenTextData::FromTokens(ids, 3, "ids"));
  EXPECT_EQ(d.train().size(), 36u);  // 90% of 40
  EXPECT_EQ(d.validation(), std::vector<int64_t>({136, 137, 138, 139}));
  EXPECT_EQ(d.validation_windows(), 1);  // (4 - 1) / 3
  ASSERT_OK_AND_ASSIGN(TokenBatch v, d.Validation(0, 1));
  EXPECT_EQ(testing::AsDoubles(v.tokens), std::vector<double>({136, 137, 138}));
  EXPECT_EQ(testing::AsDoubles(v.targets), std::vector<double>({137, 138, 139}));
  ASSERT_OK_AND_ASSIGN(TokenBatch b, d.TrainBatch(1, 1, 5));
  for (int64_t i = 0; i < 5; ++i) {  // consecutive tokens, each target the next
    const int64_t* t = b.tokens.data<int64_t>() + 3 * i;
    const int64_t* y = b.targets.data<int64_t>() + 3 * i;
    EXPECT_GE(t[0], 100);
    EXPECT_LE(y[2], 135);
    EXPECT_EQ(t[1], t[0] + 1);
    EXPECT_EQ(y[0], t[0] + 1);
    EXPECT_EQ(y[2], t[2] + 1);
  }
}

TEST(TokenTextData, RefusesTooFewTokensAndNegativeIds) {
  EXPECT_STATUS(TokenTextData::FromTokens(std::vector<int64_t>(40, 1), 4, "t.txt").status(),
                absl::StatusCode::kInvalidArgument, "t.txt: only 40 tokens");
  EXPECT_STATUS(TokenTextData::FromTokens({}, 4, "e.txt").status(),
                absl::StatusCode::kInvalidArgument, "e.txt: the text has no tokens");
  std::vector<int64_t> ids(50, 1);
  ids[7] = -3;
  EXPECT_STATUS(TokenTextData::FromTokens(ids, 4, "n.txt").status(),
                absl::StatusCode::kInvalidArgument, "n.txt: token 7 has the negative id -3");
}

// Step 0's evaluation is EvaluateModel's loss of the directory's weights
// on the same windows: the weights were loaded, not drawn.
TEST(Gpt2FineTune, StartsFromTheDirectorysWeights) {
  const std::string text = TextFile("start");
  ASSERT_OK_AND_ASSIGN(auto trainer, CreateGpt2FineTuner(Tune(text, kSeqLen), Config(4)));
  ASSERT_OK_AND_ASSIGN(EvalResult before, trainer->Evaluate());

  ASSERT_OK_AND_ASSIGN(Gpt2Tokenizer tokenizer, Gpt2Tokenizer::LoadDirectory(HfGpt2Tiny()));
  ASSERT_OK_AND_ASSIGN(TokenTextData data,
                       TokenTextData::FromTokens(tokenizer.Encode(ReadFile(text).value()),
                                                 kSeqLen, text));
  ASSERT_OK_AND_ASSIGN(TokenBatch windows, data.Validation(0, data.validation_windows()));
  SafetensorsFile in;
  in.tensors.emplace_back("tokens", windows.tokens);
  in.tensors.emplace_back("targets", windows.targets);
  ASSERT_OK_AND_ASSIGN(HfGpt2Files files, ReadHfGpt2(HfGpt2Tiny()));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile out, EvaluateModel(files.weights, HfGpt2Tiny(), in, "in"));
  EXPECT_NEAR(before.loss, testing::AsDoubles(*out.Find("loss"))[0], 1e-5);
}

TEST(Gpt2FineTune, AFewStepsLowerTheValidationLoss) {
  ASSERT_OK_AND_ASSIGN(auto trainer,
                       CreateGpt2FineTuner(Tune(TextFile("lower"), kSeqLen), Config(8)));
  ASSERT_OK_AND_ASSIGN(EvalResult before, trainer->Evaluate());
  for (int i = 0; i < 8; ++i) ASSERT_OK(trainer->Step().status());
  ASSERT_OK_AND_ASSIGN(EvalResult after, trainer->Evaluate());
  EXPECT_LT(after.loss, before.loss - 0.1);
}

// Stopped after step 3 and resumed by Fit, the run ends with the
// parameters of the run that was never stopped, its dropout masks too.
TEST(Gpt2FineTune, ResumeThroughFitEqualsTheUninterruptedRun) {
  Gpt2FineTune tune = Tune(TextFile("resume"), kSeqLen);
  tune.dropout = 0.1;
  ASSERT_OK_AND_ASSIGN(auto whole, CreateGpt2FineTuner(tune, Config(6)));
  ASSERT_OK_AND_ASSIGN(FitResult a, Fit(*whole, {.dir = FreshDir("whole"), .eval_every = 3}));
  const std::string dir = FreshDir("stopped");
  ASSERT_OK_AND_ASSIGN(auto first, CreateGpt2FineTuner(tune, Config(6)));
  ASSERT_OK_AND_ASSIGN(FitResult s, Fit(*first, {.dir = dir, .eval_every = 3, .stop_after = 3}));
  EXPECT_EQ(s.end, FitEnd::kStopAfter);
  ASSERT_OK_AND_ASSIGN(auto second, CreateGpt2FineTuner(tune, Config(6)));
  ASSERT_OK_AND_ASSIGN(FitResult b, Fit(*second, {.dir = dir, .eval_every = 3, .resume = true}));
  EXPECT_EQ(b.end, FitEnd::kComplete);
  EXPECT_EQ(b.final_eval.loss, a.final_eval.loss);
  ASSERT_OK_AND_ASSIGN(SafetensorsFile wa, whole->Weights());
  ASSERT_OK_AND_ASSIGN(SafetensorsFile wb, second->Weights());
  ASSERT_EQ(wa.tensors.size(), wb.tensors.size());
  for (size_t i = 0; i < wa.tensors.size(); ++i) {
    EXPECT_TRUE(SameBits(wa.tensors[i].second, wb.tensors[i].second)) << wa.tensors[i].first;
  }
}

// "Fine-tune then export": the saved model is a gpt2 model file, and the
// directory WriteHfGpt2 makes of it gives the saved model's logits.
TEST(Gpt2FineTune, SavedModelExportsToADirectoryOfTheSameLogits) {
  const std::string text = TextFile("export");
  ASSERT_OK_AND_ASSIGN(auto trainer, CreateGpt2FineTuner(Tune(text, kSeqLen), Config(3)));
  for (int i = 0; i < 3; ++i) ASSERT_OK(trainer->Step().status());
  const std::string dir = FreshDir("export_out");
  const std::string saved = dir + "/model.safetensors";
  ASSERT_OK(trainer->SaveModel(saved));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile model, ReadCheckpoint(saved));
  ASSERT_OK(WriteHfGpt2(model, saved, HfGpt2Tiny(), dir + "/hf"));
  ASSERT_OK_AND_ASSIGN(HfGpt2Files exported, ReadHfGpt2(dir + "/hf"));

  std::vector<int64_t> ids(2 * kSeqLen);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i * 37 % 512);
  SafetensorsFile in;
  in.tensors.emplace_back("tokens", *Tensor::FromVector<int64_t>({2, kSeqLen}, ids));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile a, EvaluateModel(model, saved, in, "in"));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile b, EvaluateModel(exported.weights, dir + "/hf", in, "in"));
  EXPECT_TRUE(SameBits(*b.Find("logits"), *a.Find("logits")));
  ASSERT_OK_AND_ASSIGN(HfGpt2Files original, ReadHfGpt2(HfGpt2Tiny()));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile c, EvaluateModel(original.weights, HfGpt2Tiny(), in, "in"));
  EXPECT_FALSE(SameBits(*b.Find("logits"), *c.Find("logits")));  // it was tuned
}

// WithDropouts: a copy of the fixture whose config.json has the dropouts
// 0.05 (attn), 0.2 (embd) and 0.3 (resid).
std::string WithDropouts() {
  const std::string dir = FreshDir("with_dropouts");
  for (const char* file : {"model.safetensors", "vocab.json", "merges.txt"}) {
    std::filesystem::copy_file(HfGpt2Tiny() + "/" + file, dir + "/" + file);
  }
  nlohmann::json config = nlohmann::json::parse(ReadFile(HfGpt2Tiny() + "/config.json").value());
  config.update({{"attn_pdrop", 0.05}, {"embd_pdrop", 0.2}, {"resid_pdrop", 0.3}});
  EXPECT_TRUE(WriteFileAtomically(dir + "/config.json", config.dump()).ok());
  return dir;
}

// SavedDropouts: the dropouts in the metadata of the trainer's model file.
std::vector<std::string> SavedDropouts(LmTrainer& trainer) {
  const std::string path = FreshDir("saved_dropouts") + "/model.safetensors";
  EXPECT_TRUE(trainer.SaveModel(path).ok());
  absl::StatusOr<SafetensorsFile> saved = ReadCheckpoint(path);
  if (!saved.ok()) return {};
  std::vector<std::string> values;
  for (const char* key : {"attn_pdrop", "embd_pdrop", "resid_pdrop"}) {
    values.push_back(saved->metadata[key]);
  }
  return values;
}

// The model trains with config.json's dropouts, or all three the one
// given, which acts: one step with it moves the weights elsewhere.
TEST(Gpt2FineTune, TrainsWithTheConfigsDropoutsOrTheOneGiven) {
  Gpt2FineTune tune = Tune(TextFile("dropouts"), kSeqLen);
  tune.hf_dir = WithDropouts();
  ASSERT_OK_AND_ASSIGN(auto from_config, CreateGpt2FineTuner(tune, Config(1)));
  EXPECT_EQ(SavedDropouts(*from_config), (std::vector<std::string>{"0.05", "0.2", "0.3"}));
  tune.dropout = 0.25;
  ASSERT_OK_AND_ASSIGN(auto given, CreateGpt2FineTuner(tune, Config(1)));
  EXPECT_EQ(SavedDropouts(*given), (std::vector<std::string>{"0.25", "0.25", "0.25"}));
  tune.dropout = 1.5;
  EXPECT_STATUS(CreateGpt2FineTuner(tune, Config(1)).status(), absl::StatusCode::kInvalidArgument,
                "fine-tuning: dropout must be in [0, 1), got p = 1.5");

  tune.hf_dir = HfGpt2Tiny();  // no dropout
  tune.dropout = std::nullopt;
  ASSERT_OK_AND_ASSIGN(auto plain, CreateGpt2FineTuner(tune, Config(1)));
  tune.dropout = 0.3;
  ASSERT_OK_AND_ASSIGN(auto dropped, CreateGpt2FineTuner(tune, Config(1)));
  ASSERT_OK(plain->Step().status());
  ASSERT_OK(dropped->Step().status());
  ASSERT_OK_AND_ASSIGN(SafetensorsFile a, plain->Weights());
  ASSERT_OK_AND_ASSIGN(SafetensorsFile b, dropped->Weights());
  EXPECT_FALSE(SameBits(*a.Find("transformer.wte.weight"), *b.Find("transformer.wte.weight")));
}

TEST(Gpt2FineTune, RefusesInitialWeightsThatDoNotFitNamingTheTensor) {
  ASSERT_OK_AND_ASSIGN(HfGpt2Files files, ReadHfGpt2(HfGpt2Tiny()));
  auto weights = std::make_shared<SafetensorsFile>(files.weights);
  weights->tensors.erase(weights->tensors.begin());
  const std::string missing = files.weights.tensors.front().first;
  LmTrainConfig config = Config(1);
  config.initial = weights;
  config.initial_source = "pretrained.safetensors";
  LmData data{.train = [](uint64_t, int64_t) { return absl::StatusOr<TokenBatch>(); },
              .validation = [](int64_t, int64_t) { return absl::StatusOr<TokenBatch>(); },
              .validation_windows = 1,
              .window = kSeqLen};
  absl::Status s = LmTrainer::Create(Gpt2::Builder(files.config), data, config).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("pretrained.safetensors"));
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr(missing));
}

TEST(Gpt2FineTune, RefusesWindowsLongerThanThePositionsAndAShortText) {
  const std::string text = TextFile("errors");
  EXPECT_STATUS(CreateGpt2FineTuner(Tune(text, 65), Config(1)).status(),
                absl::StatusCode::kInvalidArgument, "seq_len must be in [1, 64]");
  const std::string short_text = FreshDir("short") + "/short.txt";
  ASSERT_OK(WriteFileAtomically(short_text, "Too short."));
  EXPECT_STATUS(CreateGpt2FineTuner(Tune(short_text, kSeqLen), Config(1)).status(),
                absl::StatusCode::kInvalidArgument, short_text + ": only");
}

}  // namespace
}  // namespace dagrad::models
