// models::LmTrainer (models/lm_trainer.h): a user's causal model trains
// through the library's trainer and loop, resumes exactly, and what does
// not fit is refused naming why.

#include "models/lm_trainer.h"

#include <stdlib.h>

#include <cmath>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/fit.h"
#include "models/nn/nn.h"
#include "models/toy/transformer.h"
#include "tests/support/test_util.h"

namespace dagrad::models {
namespace {

using ::dagrad::testing::NewTempDir;

using ::testing::HasSubstr;

constexpr int64_t kVocab = 5, kWindow = 6;

// A bigram model: each position's logits from its own token alone, so it
// is causal; it can learn "next = (token + 1) mod 5" exactly.
class Bigram : public LanguageModel {
 public:
  static absl::StatusOr<std::unique_ptr<LanguageModel>> Build(Graph& g) {
    auto m = std::make_unique<Bigram>();
    absl::StatusOr<nn::Embedding> table =
        nn::Embedding::Create(g, "table", {.num_embeddings = kVocab, .embedding_dim = kVocab});
    if (!table.ok()) return table.status();
    m->table_ = *table;
    m->parameters_ = g.Parameters();
    return m;
  }
  int64_t vocab() const override { return kVocab; }
  int64_t max_len() const override { return kWindow; }
  bool causal() const override { return true; }
  Value Logits(Value tokens, Value) const override { return table_(tokens); }
  const std::vector<Value>& parameters() const override { return parameters_; }
  std::map<std::string, std::string> Metadata() const override { return {{"model", "bigram"}}; }

 private:
  nn::Embedding table_;
  std::vector<Value> parameters_;
};

// Rows counting up mod 5 from a start the step draws.
TokenBatch Counting(int64_t rows, uint64_t seed) {
  std::vector<int64_t> x, y;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t t = 0; t < kWindow; ++t) {
      const int64_t v = static_cast<int64_t>((seed * 7 + r * 3 + t) % kVocab);
      x.push_back(v);
      y.push_back((v + 1) % kVocab);
    }
  }
  return {*Tensor::FromVector<int64_t>({rows, kWindow}, x),
          *Tensor::FromVector<int64_t>({rows, kWindow}, y)};
}

LmData CountingData() {
  return {.train = [](uint64_t step, int64_t batch) { return Counting(batch, step); },
          .validation = [](int64_t first, int64_t count) { return Counting(count, 1000 + first); },
          .validation_windows = 7,
          .window = kWindow};
}

LmTrainConfig LmConfig() {
  return {.run = {.batch = 4, .steps = 40, .lr = 0.1, .warmup = 0}};
}

TEST(LmTrainer, AUsersModelLearnsThroughFit) {
  ASSERT_OK_AND_ASSIGN(auto t, LmTrainer::Create(Bigram::Build, CountingData(), LmConfig()));
  ASSERT_OK_AND_ASSIGN(const EvalResult before, t->Evaluate());
  ASSERT_OK_AND_ASSIGN(const FitResult fit, Fit(*t, {.dir = NewTempDir("lm"), .eval_every = 20}));
  ASSERT_EQ(fit.end, FitEnd::kComplete);
  EXPECT_GT(before.loss, 1.0);             // about ln 5 = 1.6 at N(0, 1) init
  EXPECT_LT(fit.final_eval.loss, 0.2);     // the rule is learnt
  EXPECT_EQ(fit.final_eval.accuracy, 1.0);
  // 7 validation windows at batch 4: a full batch and a last one of 3, each
  // weighed by its tokens; the same as one pass over all 7 in the rows.
  EXPECT_EQ(t->eval_windows(), 7);
}

// Window i of Windowed's validation is Counting(1, 1000 + i), however the
// windows are batched.
LmData Windowed() {
  LmData data = CountingData();
  data.validation = [](int64_t first, int64_t count) {
    std::vector<int64_t> x, y;
    for (int64_t i = first; i < first + count; ++i) {
      const TokenBatch b = Counting(1, 1000 + i);
      x.insert(x.end(), b.tokens.data<int64_t>(), b.tokens.data<int64_t>() + kWindow);
      y.insert(y.end(), b.targets.data<int64_t>(), b.targets.data<int64_t>() + kWindow);
    }
    return TokenBatch{*Tensor::FromVector<int64_t>({count, kWindow}, x),
                      *Tensor::FromVector<int64_t>({count, kWindow}, y)};
  };
  return data;
}

// HandLoss is the mean cross-entropy of the bigram model with `table`
// (kVocab, kVocab) over the first `windows` of Windowed's validation,
// window by window, in double: logits[t] = table[token t].
double HandLoss(const Tensor& table, int64_t windows) {
  const std::vector<double> w = testing::AsDoubles(table);
  double sum = 0;
  for (int64_t i = 0; i < windows; ++i) {
    const TokenBatch b = Counting(1, 1000 + i);
    for (int64_t t = 0; t < kWindow; ++t) {
      const double* row = &w[b.tokens.data<int64_t>()[t] * kVocab];
      double z = 0;
      for (int64_t v = 0; v < kVocab; ++v) z += std::exp(row[v]);
      sum += std::log(z) - row[b.targets.data<int64_t>()[t]];
    }
  }
  return sum / static_cast<double>(windows * kWindow);
}

// 7 windows at batch 4 run as 4 + 3, and 5 as 4 + 1, unpadded: the loss is
// the mean over exactly the windows scored.
TEST(LmTrainer, APartialLastBatchScoresItsWindowsAlone) {
  for (int64_t windows : {0, 5}) {
    LmTrainConfig config = LmConfig();
    config.eval_windows = windows;
    ASSERT_OK_AND_ASSIGN(auto t, LmTrainer::Create(Bigram::Build, Windowed(), config));
    for (int i = 0; i < 3; ++i) ASSERT_OK(t->Step().status());
    ASSERT_OK_AND_ASSIGN(const EvalResult got, t->Evaluate());
    ASSERT_OK_AND_ASSIGN(const SafetensorsFile weights, t->Weights());
    ASSERT_NE(weights.Find("table.weight"), nullptr);
    EXPECT_NEAR(got.loss, HandLoss(*weights.Find("table.weight"), t->eval_windows()), 1e-5)
        << windows << " windows";
  }
}

TEST(LmTrainer, AResumedRunEqualsTheUninterruptedOne) {
  ASSERT_OK_AND_ASSIGN(auto whole, LmTrainer::Create(Bigram::Build, CountingData(), LmConfig()));
  ASSERT_OK_AND_ASSIGN(const FitResult want,
                       Fit(*whole, {.dir = NewTempDir("lm"), .eval_every = 10}));
  const std::string dir = NewTempDir("lm");
  ASSERT_OK_AND_ASSIGN(auto first, LmTrainer::Create(Bigram::Build, CountingData(), LmConfig()));
  ASSERT_OK_AND_ASSIGN(const FitResult stopped,
                       Fit(*first, {.dir = dir, .eval_every = 10, .stop_after = 20}));
  EXPECT_EQ(stopped.end, FitEnd::kStopAfter);
  ASSERT_OK_AND_ASSIGN(auto second, LmTrainer::Create(Bigram::Build, CountingData(), LmConfig()));
  ASSERT_OK_AND_ASSIGN(const FitResult rest,
                       Fit(*second, {.dir = dir, .eval_every = 10, .resume = true}));
  EXPECT_EQ(rest.final_eval.loss, want.final_eval.loss);
}

TEST(LmTrainer, RefusesWhatDoesNotFit) {
  auto toy = [](Graph& g) -> absl::StatusOr<std::unique_ptr<LanguageModel>> {
    absl::StatusOr<ToyTransformer> m = ToyTransformer::Create(g, {.vocab = kVocab, .seq_len = 8});
    if (!m.ok()) return m.status();
    return std::make_unique<ToyTransformer>(*std::move(m));
  };
  EXPECT_STATUS(LmTrainer::Create(toy, CountingData(), LmConfig()).status(),
                absl::StatusCode::kInvalidArgument, "this one is not causal");
  LmData long_windows = CountingData();
  long_windows.window = kWindow + 1;
  EXPECT_STATUS(LmTrainer::Create(Bigram::Build, long_windows, LmConfig()).status(),
                absl::StatusCode::kInvalidArgument, "max_len 6, the data's windows 7");
  LmData no_validation = CountingData();
  no_validation.validation = nullptr;
  EXPECT_STATUS(LmTrainer::Create(Bigram::Build, no_validation, LmConfig()).status(),
                absl::StatusCode::kInvalidArgument, "needs both a train and a validation");
  auto none = [](Graph&) -> absl::StatusOr<std::unique_ptr<LanguageModel>> { return nullptr; };
  EXPECT_STATUS(LmTrainer::Create(none, CountingData(), LmConfig()).status(),
                absl::StatusCode::kInvalidArgument, "the model builder returned no model");
  EXPECT_STATUS(LmTrainer::Create(ModelBuilder(), CountingData(), LmConfig()).status(),
                absl::StatusCode::kInvalidArgument, "the model builder is empty");
  LmTrainConfig bad = LmConfig();
  bad.eval_windows = -1;
  EXPECT_STATUS(LmTrainer::Create(Bigram::Build, CountingData(), bad).status(),
                absl::StatusCode::kInvalidArgument, "eval_windows must be >= 0");
}

}  // namespace
}  // namespace dagrad::models
