// Byte-level text training for models::Gpt: the data split and batches
// (models/gpt/text_task.h), decay of matrices only, and GptTrainer (learning,
// exact resume, checkpoints that `dagrad generate` reads).

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <string>

#include "engine/io/checkpoint.h"
#include "models/gpt/gpt_trainer.h"
#include "models/gpt/text_task.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "tests/support/cli_runner.h"
#include "tests/support/gpt_fixtures.h"
#include "tests/support/test_util.h"

namespace dagrad::models {
namespace {

using ::dagrad::testing::WriteCorpus;

TEST(TextData, SplitsNinetyTenAndTargetsAreTheNextBytes) {
  ASSERT_OK_AND_ASSIGN(
      TextData d,
      TextData::FromBytes(std::string("abcdefghij", 10) + std::string(90, 'x'),
                          4, "mem"));
  EXPECT_EQ(d.train().size(), 90u);
  EXPECT_EQ(d.validation(), std::string(10, 'x'));
  ASSERT_OK_AND_ASSIGN(TokenBatch b, d.TrainBatch(3, 1, 16));
  for (int64_t i = 0; i < 16 * 4; ++i) {
    if (i % 4 < 3)
      EXPECT_EQ(b.targets.data<int64_t>()[i], b.tokens.data<int64_t>()[i + 1]);
  }
  ASSERT_OK_AND_ASSIGN(TokenBatch again, d.TrainBatch(3, 1, 16));
  ASSERT_OK_AND_ASSIGN(TokenBatch other, d.TrainBatch(3, 2, 16));
  EXPECT_EQ(testing::AsDoubles(again.tokens), testing::AsDoubles(b.tokens));
  EXPECT_NE(testing::AsDoubles(other.tokens), testing::AsDoubles(b.tokens));
  EXPECT_EQ(d.validation_windows(), 2);  // (10 - 1) / 4 windows
  ASSERT_OK_AND_ASSIGN(TokenBatch val, d.Validation(0, 2));
  EXPECT_EQ(val.tokens.shape(), Shape({2, 4}));
  EXPECT_STATUS(d.Validation(1, 2).status(), absl::StatusCode::kOutOfRange,
                "validation windows [1, 1 + 2) are not within the split's 2 windows");
  EXPECT_EQ(d.Validation(0, 0).status().code(), absl::StatusCode::kOutOfRange);
}

TEST(TextData, BinaryBytesAreTokens) {
  std::string bytes(200, '\0');
  for (int i = 0; i < 200; ++i) bytes[i] = static_cast<char>(255 - i % 256);
  ASSERT_OK_AND_ASSIGN(TextData d, TextData::FromBytes(bytes, 3, "bin"));
  ASSERT_OK_AND_ASSIGN(TokenBatch b, d.Validation(1, 1));
  EXPECT_EQ(b.tokens.data<int64_t>()[0], 255 - 183);  // byte 180 + 3 of the file
}

TEST(TextData, Errors) {
  EXPECT_STATUS(TextData::FromBytes("", 4, "e.txt").status(),
                absl::StatusCode::kInvalidArgument, "e.txt: the file is empty");
  // 10 * seq_len + 1 bytes leave the validation split (the last 10%) a window.
  EXPECT_STATUS(TextData::FromBytes(std::string(40, 'a'), 4, "s.txt").status(),
                absl::StatusCode::kInvalidArgument, "s.txt: only 40 bytes");
  EXPECT_STATUS(TextData::FromBytes(std::string(40, 'a'), 4, "s.txt").status(),
                absl::StatusCode::kInvalidArgument, "needs at least 41");
  EXPECT_TRUE(TextData::FromBytes(std::string(41, 'a'), 4, "ok").ok());
  EXPECT_EQ(TextData::Load("/nonexistent/corpus.txt", 4).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(DecayMatrices, DecaysMatricesOnly) {
  // With a zero gradient, AdamW's update is the decay alone: p *= 1 - lr*wd.
  Graph g;
  Value w = g.Parameter("w", {2, 2}, Initializer::Ones());
  Value b = g.Parameter("b", {2}, Initializer::Ones());
  Value loss = Scale(Sum(w) + Sum(b), 0.0);
  ASSERT_OK_AND_ASSIGN(
      TrainingStep ts,
      BuildTrainingStep(loss, DecayMatrices({w, b}, 0.5), {.kind = OptimizerKind::kAdamW}));
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({loss}, ts.updates));
  ASSERT_OK(exec.Run(*plan, {{ts.lr, Tensor::Scalar<double>(0.1)},
                             {ts.step, Tensor::Scalar<double>(1)}})
                .status());
  ASSERT_OK_AND_ASSIGN(auto values, exec.Compile({w, b}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, exec.Run(*values, {}));
  testing::ExpectAllClose(out[0], {0.95, 0.95, 0.95, 0.95}, 1e-6, 1e-7,
                          "matrix decayed");
  testing::ExpectAllClose(out[1], {1, 1}, 0, 0, "bias not decayed");
}

TextTrainConfig SmallConfig(const std::string& data) {
  TextTrainConfig c{.model = {.block_size = 16, .dim = 16, .heads = 2, .layers = 1},
                    .data = data,
                    .eval_windows = 8};
  c.run.batch = 8;
  c.run.steps = 12;
  c.run.lr = 3e-3;
  return c;
}

TEST(GptTrainer, LearnsAndResumesExactly) {
  const std::string data = WriteCorpus("gpt_trainer", 40);
  const TextTrainConfig c = SmallConfig(data);
  ASSERT_OK_AND_ASSIGN(auto full, GptTrainer::Create(c));
  ASSERT_OK_AND_ASSIGN(const EvalResult initial, full->Evaluate());
  EXPECT_NEAR(initial.loss, std::log(256.0), 0.2);  // GPT-2 init: near uniform
  std::vector<double> losses;
  while (full->step() < c.run.steps) {
    ASSERT_OK_AND_ASSIGN(StepResult r, full->Step());
    losses.push_back(r.loss);
  }
  ASSERT_OK_AND_ASSIGN(const EvalResult trained, full->Evaluate());
  EXPECT_LT(trained.loss, initial.loss - 0.3);
  EXPECT_GT(trained.accuracy, initial.accuracy);
  // Stopped at step 5, saved, loaded into a fresh trainer: the same steps.
  const std::string ckpt =
      testing::FreshDir("gpt_trainer_ckpt") + "/ckpt.safetensors";
  ASSERT_OK_AND_ASSIGN(auto first, GptTrainer::Create(c));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(first->Step().ok());
  ASSERT_OK(first->SaveCheckpoint(ckpt));
  ASSERT_OK_AND_ASSIGN(auto resumed, GptTrainer::Create(c));
  ASSERT_OK(resumed->LoadCheckpoint(ckpt));
  EXPECT_EQ(resumed->step(), 5);
  for (int64_t s = 5; s < c.run.steps; ++s) {
    ASSERT_OK_AND_ASSIGN(StepResult r, resumed->Step());
    EXPECT_EQ(r.loss, losses[s]) << "step " << r.step;
  }
  TextTrainConfig other = c;
  other.run.lr = 1e-3;
  ASSERT_OK_AND_ASSIGN(auto mismatched, GptTrainer::Create(other));
  EXPECT_STATUS(mismatched->LoadCheckpoint(ckpt),
                absl::StatusCode::kFailedPrecondition,
                "lr: checkpoint 0.003, this run 0.001");
}

// WindowByWindowLoss is the oracle of Evaluate: the trained weights, saved
// and loaded into a Gpt of batch 1, run on each of the first `windows`
// validation windows, with the cross-entropy worked out here in double
// from the logits.
void WindowByWindowLoss(GptTrainer& t, int64_t windows, double* loss) {
  const std::string saved = testing::FreshDir("gpt_eval_oracle") + "/model.safetensors";
  ASSERT_OK(t.SaveModel(saved));
  const int64_t T = t.config().model.block_size;
  Graph g;
  ASSERT_OK_AND_ASSIGN(Gpt gpt, Gpt::Create(g, t.config().model));
  Value tokens = g.Input("tokens", DType::kInt64, {1, T});
  Value logits = gpt(tokens);
  Executor exec(g);
  ASSERT_OK(LoadVariables(exec, gpt.parameters(), saved).status());
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({logits}));
  const std::string& text = t.data().validation();
  ASSERT_LT(windows * T, static_cast<int64_t>(text.size()));
  double sum = 0;
  for (int64_t w = 0; w < windows; ++w) {
    ASSERT_OK_AND_ASSIGN(Tensor window, Tensor::Zeros(DType::kInt64, {1, T}));
    for (int64_t i = 0; i < T; ++i) {
      window.data<int64_t>()[i] = static_cast<unsigned char>(text[w * T + i]);
    }
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, exec.Run(*plan, {{tokens, window}}));
    const float* z = out[0].data<float>();
    for (int64_t i = 0; i < T; ++i, z += 256) {
      double max = z[0], norm = 0;
      for (int v = 1; v < 256; ++v) max = std::max<double>(max, z[v]);
      for (int v = 0; v < 256; ++v) norm += std::exp(z[v] - max);
      const int target = static_cast<unsigned char>(text[w * T + i + 1]);
      sum += max + std::log(norm) - z[target];
    }
  }
  *loss = sum / static_cast<double>(windows * T);
}

TEST(GptTrainer, EvaluatesTheWholeSplitWithTheLastPartialBatch) {
  // 400 x 86 bytes: a validation split of 3440, 214 windows of 16 (more
  // than the 64 once scored) = 53 batches of 4 and a last one of 2.
  TextTrainConfig c = SmallConfig(WriteCorpus("gpt_eval_whole", 400));
  c.run.batch = 4;
  c.eval_windows = 0;
  ASSERT_OK_AND_ASSIGN(auto t, GptTrainer::Create(c));
  for (int i = 0; i < 3; ++i) ASSERT_OK(t->Step().status());
  ASSERT_EQ(t->eval_windows(), 214);
  ASSERT_OK_AND_ASSIGN(const EvalResult whole, t->Evaluate());
  double oracle = 0;
  WindowByWindowLoss(*t, 214, &oracle);
  EXPECT_NEAR(whole.loss, oracle, 1e-4);
}

TEST(GptTrainer, EvalWindowsCapsTheWindowsScored) {
  TextTrainConfig c = SmallConfig(WriteCorpus("gpt_eval_cap", 40));
  c.run.batch = 3;
  c.eval_windows = 5;  // a batch of 3 and one of 2
  ASSERT_OK_AND_ASSIGN(auto t, GptTrainer::Create(c));
  for (int i = 0; i < 2; ++i) ASSERT_OK(t->Step().status());
  ASSERT_EQ(t->eval_windows(), 5);
  ASSERT_OK_AND_ASSIGN(const EvalResult first, t->Evaluate());
  double oracle = 0;
  WindowByWindowLoss(*t, 5, &oracle);
  EXPECT_NEAR(first.loss, oracle, 1e-4);
  c.eval_windows = -1;
  EXPECT_STATUS(GptTrainer::Create(c).status(), absl::StatusCode::kInvalidArgument,
                "eval_windows must be >= 0 (0: the whole validation split), got -1");
}

TEST(GptTrainer, SampleStartsWithThePrompt) {
  TextTrainConfig c = SmallConfig(WriteCorpus("gpt_sample", 20));
  c.run.steps = 2;
  ASSERT_OK_AND_ASSIGN(auto t, GptTrainer::Create(c));
  ASSERT_OK_AND_ASSIGN(std::string text, t->Sample("the ", 30, {.seed = 2}));
  EXPECT_EQ(text.size(), 34u);
  EXPECT_EQ(text.substr(0, 4), "the ");
}

// A run started from a model file begins at its weights: the model's sizes
// come from the file (the config's are replaced), its dropout from the
// config, and before any step the trainer holds exactly the file's tensors.
TEST(GptTrainer, StartsFromAModelFile) {
  const std::string dir = testing::FreshDir("gpt_start_from_file");
  TextTrainConfig c = SmallConfig(WriteCorpus("gpt_start_from_file_data", 40));
  ASSERT_OK_AND_ASSIGN(auto trained, GptTrainer::Create(c));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(trained->Step().ok());
  ASSERT_OK(trained->SaveModel(dir + "/model.safetensors"));
  ASSERT_OK_AND_ASSIGN(const SafetensorsFile saved, ReadCheckpoint(dir + "/model.safetensors"));
  TextTrainConfig from = SmallConfig(c.data);
  from.model.dim = 32;  // replaced by the file's 16
  from.model.dropout = 0.25;
  ASSERT_OK(StartFromModelFile(from, dir + "/model.safetensors"));
  EXPECT_EQ(from.model.dim, 16);
  EXPECT_EQ(from.model.dropout, 0.25);
  ASSERT_OK_AND_ASSIGN(auto started, GptTrainer::Create(from));
  ASSERT_OK_AND_ASSIGN(const SafetensorsFile weights, started->Weights());
  std::map<std::string, std::vector<double>> held;
  for (const auto& [name, tensor] : weights.tensors) held[name] = testing::AsDoubles(tensor);
  ASSERT_EQ(held.size(), saved.tensors.size());
  for (const auto& [name, tensor] : saved.tensors) {
    EXPECT_EQ(held[name], testing::AsDoubles(tensor)) << name;
  }
  EXPECT_STATUS(StartFromModelFile(from, dir + "/missing.safetensors"),
                absl::StatusCode::kNotFound, "missing.safetensors");
  GptConfig words = c.model;
  words.vocab = 300;
  Graph g;
  ASSERT_OK_AND_ASSIGN(Gpt gpt, Gpt::Create(g, words));
  Executor exec(g);
  ASSERT_OK(SaveVariables(exec, gpt.parameters(), words.ToMetadata(), dir + "/words.safetensors"));
  EXPECT_STATUS(StartFromModelFile(from, dir + "/words.safetensors"),
                absl::StatusCode::kInvalidArgument, "vocab is 300; a text run's tokens are the 256 bytes");
}

}  // namespace
}  // namespace dagrad::models
