// The values the examples of the models layer's headers promise (the
// trainers' schedules, checkpoints and non-finite policy, a saved GPT's
// logits and generation, the plots): the examples themselves run as
// HeaderExample.models_*, extracted from the headers; these check what they
// give.

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "engine/executor.h"
#include "engine/io/checkpoint.h"
#include "models/evaluate.h"
#include "models/generator.h"
#include "models/gpt/gpt.h"
#include "models/gpt/text_task.h"
#include "models/language_model.h"
#include "models/plot/plots.h"
#include "models/plot/svg.h"
#include "models/run_directory.h"
#include "models/toy/toy_trainer.h"
#include "models/trainer.h"
#include "ops/elementwise.h"
#include "ops/fill.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "tests/support/test_util.h"

namespace dagrad::models {
namespace {

TrainConfig ToyConfig(int64_t steps) {
  return {.model = {.vocab = 8, .seq_len = 6, .dim = 16, .heads = 2, .layers = 1, .ffn = 32,
                    .dropout = 0.0},
          .run = {.batch = 4, .steps = steps, .warmup = 1}, .eval_size = 8};
}

// A fresh directory under the test's temporary one.
std::string FreshDir(const std::string& name) {
  return testing::NewTempDir("documented_values_" + name);
}

// A user's schedule drives the trainer; a value it should not return stops
// the step that asked for it.
TEST(DocumentedValues, ACustomScheduleDrivesTheTrainer) {
  TrainConfig config = ToyConfig(3);
  config.run.lr_schedule = [](int64_t s) { return s < 3 ? 0.25 * s : -1.0; };
  ASSERT_OK_AND_ASSIGN(const double lr, LearningRate(config.run.Schedule(), 2));
  EXPECT_EQ(lr, 0.5);
  EXPECT_EQ(config.run.ToMetadata()["lr_decay"], "custom");
  ASSERT_OK_AND_ASSIGN(auto trainer, ToyTrainer::Create(config));
  ASSERT_OK_AND_ASSIGN(StepResult first, trainer->Step());
  EXPECT_EQ(first.lr, 0.25);
  ASSERT_OK_AND_ASSIGN(StepResult second, trainer->Step());
  EXPECT_EQ(second.lr, 0.5);
  EXPECT_EQ(trainer->Step().status().message(),
            "the learning-rate schedule's value at step 3 must be finite and >= 0, got -1");
  EXPECT_EQ(trainer->step(), 2);
}

TEST(DocumentedValues, RunConfigMetadata) {
  TextTrainConfig config{.model = {.block_size = 16, .dim = 16, .heads = 2, .layers = 1},
                         .data = "input.txt"};
  config.run.optimizer.beta2 = 0.99;
  std::map<std::string, std::string> m = config.run.ToMetadata();
  EXPECT_EQ(m["lr"], "0.001");
  EXPECT_EQ(m["beta2"], "0.99");
  EXPECT_EQ(m["optimizer"], "adamw");
}

TEST(DocumentedValues, RunDirectoryLoadsWhatItSaved) {
  const std::string dir = FreshDir("run_directory");
  ASSERT_OK_AND_ASSIGN(auto trainer, ToyTrainer::Create(ToyConfig(1)));
  RunDirectory files(dir);
  ASSERT_OK(files.StartMetrics());
  ASSERT_OK(files.SaveCheckpoint(*trainer));
  std::string warning;
  ASSERT_OK_AND_ASSIGN(std::string from, files.LoadCheckpoint(*trainer, &warning));
  EXPECT_EQ(from, dir + "/checkpoint.safetensors");
}

TEST(DocumentedValues, NonFiniteStepsAndRefusals) {
  NonFiniteSteps skips(NonFinitePolicy::kSkip, 8);
  ASSERT_OK(skips.NonFinite(3, std::nan(""), 1));
  EXPECT_EQ(skips.total(), 1);
  Graph g;
  Value w = g.Variable("w", {2}, Initializer::Zeros());
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(Tensor nan, Tensor::FromVector<float>({2}, {1, std::nanf("")}));
  ASSERT_OK(exec.Assign(w, nan));
  const std::string path = FreshDir("nonfinite") + "/nan.safetensors";
  const absl::Status refused = SaveFiniteVariables(exec, {w}, {}, path);
  EXPECT_TRUE(absl::IsFailedPrecondition(refused)) << refused;
  EXPECT_TRUE(IsNonFiniteRefusal(refused));
  EXPECT_FALSE(IsNonFiniteRefusal(absl::FailedPreconditionError("a FIFO")));
}

TEST(DocumentedValues, TrainingStateRestoresTheStep) {
  Graph g;
  std::vector<Value> vars = {g.Parameter("w", {2}, Initializer::Ones())};
  Executor exec(g);
  NonFiniteSteps skips;
  const std::string path = FreshDir("state") + "/state.safetensors";
  TrainingState state{"toy-train-state/1", TrainConfig().ToMetadata()};
  ASSERT_OK(state.Save(exec, vars, 5, skips, path, {}));
  ASSERT_OK_AND_ASSIGN(int64_t step, state.Load(exec, vars, skips, path));
  EXPECT_EQ(step, 5);
}

// Uniform logits over 5 classes: the mean loss of every row is log(5).
TEST(DocumentedValues, BatchShareMeanLoss) {
  Graph g;
  std::shared_ptr<Communicator> comm = SingleProcessCommunicator();
  Value logits = Fill(g, {8, 3, 5}, 0, DType::kFloat32);
  Value targets = g.Input("targets", DType::kInt64, {8, 3});
  ASSERT_OK_AND_ASSIGN(Tensor global_targets, Tensor::Zeros(DType::kInt64, {8, 3}));
  ASSERT_OK_AND_ASSIGN(BatchShare share, BatchShare::Create(8, {.communicator = comm}));
  Value loss = share.MeanLoss(g, logits, targets);
  Executor exec(g, {.communicator = comm});
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({loss}));
  ASSERT_OK_AND_ASSIGN(Tensor my_targets, share.Rows(global_targets));
  Feeds feeds = {{targets, my_targets}};
  share.FeedWeight(global_targets, feeds);
  ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, feeds, share.Training(1)));
  EXPECT_EQ(share.rows(), 8);
  EXPECT_NEAR(out[0].data<float>()[0], std::log(5.0), 1e-6);
}

TEST(DocumentedValues, RewriteForPrecisionReplacesTheLoss) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {4, 8});
  Value targets = g.Input("targets", DType::kInt64, {4});
  Value w = g.Parameter("w", {3, 8}, Initializer::XavierUniform());
  Value logits = Linear(Tanh(x), w);
  Value loss = CrossEntropy(logits, targets);
  const Value before = loss;
  ASSERT_OK(RewriteForPrecision(Precision::kBFloat16, {&loss, &logits}));
  EXPECT_NE(loss, before);
}

// A GPT saved untrained: its logits by LoadLanguageModel and EvaluateModel,
// and Generate's tokens, each seen by on_token in order.
TEST(DocumentedValues, ASavedGptEvaluatedAndSampled) {
  const std::string path = FreshDir("saved_gpt") + "/model.safetensors";
  {
    Graph g;
    ASSERT_OK_AND_ASSIGN(Gpt gpt, Gpt::Create(g, {.block_size = 8, .dim = 8, .heads = 2,
                                                  .layers = 1}));
    Executor exec(g);
    ASSERT_OK(SaveVariables(exec, gpt.parameters(), gpt.Metadata(), path));
  }
  ASSERT_OK_AND_ASSIGN(SafetensorsFile file, ReadCheckpoint(path));
  Graph g;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LanguageModel> model, LoadLanguageModel(g, file, path));
  EXPECT_EQ(model->Logits(g.Input("tokens", DType::kInt64, {2, 8})).shape(), Shape({2, 8, 256}));
  EXPECT_TRUE(model->causal());
  ASSERT_OK_AND_ASSIGN(Tensor tokens, Tensor::FromVector<int64_t>({1, 3}, {72, 105, 33}));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile out,
                       EvaluateModel(file, path, {{{"tokens", tokens}}, {}}, "input"));
  EXPECT_EQ(out.Find("logits")->shape(), Shape({1, 3, 256}));
  ASSERT_OK_AND_ASSIGN(auto gen, Generator::Load(path));
  GenerateOptions options{.tokens = 20, .sampling = {.seed = 1}};
  ASSERT_OK_AND_ASSIGN(std::vector<int64_t> printed,
                       gen->Generate(BytesToTokens("Copyright "), options));
  EXPECT_EQ(printed.size(), 20u);
  size_t seen = 0;
  options.on_token = [&](int64_t t) { EXPECT_EQ(t, printed[seen++]); };
  ASSERT_OK_AND_ASSIGN(std::vector<int64_t> again,
                       gen->Generate(BytesToTokens("Copyright "), options));
  EXPECT_EQ(seen, printed.size());
  EXPECT_EQ(again, printed);
}

// Each row's argmax is class 2 of 4; the targets are right, wrong, ignored.
TEST(DocumentedValues, TokenCountsAndEvalStats) {
  Graph g;
  Value logits = g.Input("logits", DType::kFloat32, {1, 3, 4});
  Value targets = g.Input("targets", DType::kInt64, {1, 3});
  Value counts = TokenCounts(logits, targets);
  Value stats = EvalStats(CrossEntropy(logits, targets), logits, targets);
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({counts, stats}));
  ASSERT_OK_AND_ASSIGN(Tensor l, Tensor::FromVector<float>({1, 3, 4}, {0, 0, 1, 0, 0, 0, 1, 0,
                                                                      0, 0, 1, 0}));
  ASSERT_OK_AND_ASSIGN(Tensor t, Tensor::FromVector<int64_t>({1, 3}, {2, 0, kIgnoreIndex}));
  ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, {{logits, l}, {targets, t}}));
  EXPECT_EQ(out[0].data<double>()[0], 1);  // correct
  EXPECT_EQ(out[0].data<double>()[1], 2);  // counted
  const EvalResult e = EvalResultOf(out[1]);
  EXPECT_EQ(e.accuracy, 0.5);
  // Cross-entropy of the two counted rows: log(3 + e) - 1 and log(3 + e).
  EXPECT_NEAR(e.loss, std::log(3 + std::exp(1.0)) - 0.5, 1e-6);
}

TEST(DocumentedValues, AttentionHeatmapsNameEachHead) {
  ASSERT_OK_AND_ASSIGN(Tensor layer,
                       Tensor::FromVector<float>({1, 3, 3}, std::vector<float>(9, 1.0f / 3)));
  ASSERT_OK_AND_ASSIGN(const std::string heads,
                       plot::AttentionHeatmaps({layer}, {"a", "b", "c"}, "attention"));
  EXPECT_NE(heads.find("layer 0, head 0"), std::string::npos);
}

TEST(DocumentedValues, SvgHoldsItsLabels) {
  plot::LineChart chart{.title = "loss", .x_label = "step", .y_label = "cross-entropy"};
  chart.series.push_back({"train", {1, 2, 3}, {2.0, 1.5, 1.2}});
  const std::string svg = plot::RenderSvg(840, 320, {plot::Panel::Line(chart, 0, 0, 840, 320)});
  EXPECT_NE(svg.find("cross-entropy"), std::string::npos);
}

}  // namespace
}  // namespace dagrad::models
