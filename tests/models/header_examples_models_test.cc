// The examples of models/*.h (but the nn layers', which
// tests/models/nn_layers_test.cc runs) and of the umbrella header models/dagrad.h,
// line for line, run (tests/support/header_examples.h says how they are kept in
// step with the headers).
#include <sys/stat.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "models/dagrad.h"
#include "models/example_graphs.h"
#include "models/parallel_job.h"
#include "models/plot/plots.h"
#include "models/plot/svg.h"
#include "tests/support/header_examples.h"

namespace dagrad::models {
namespace {

constexpr int64_t B = 2, T = 5, S = 7, E = 128, H = 4;

HEADER_EXAMPLE(ModelsPositionalEncoding) {
  Graph g;
  constexpr int64_t Dh = 8;
  Value x = g.Input("x", DType::kFloat32, {B, T, E});
  Value pe = SinusoidalTable(g, /*max_len=*/T, /*dim=*/E);   // (T, E)
  Value x1 = AddSinusoidal(x, /*dropout=*/0.1);              // x + P[:T], dropout
  EXPECT_EQ(pe.shape(), Shape({T, E}));
  EXPECT_EQ(x1.shape(), x.shape());
  Value keys = g.Input("keys", DType::kFloat32, {B, H, S, Dh});
  Value queries = g.Input("queries", DType::kFloat32, {B, H, T, Dh});
  Value k = ApplyRotary(keys);                  // (B, H, S, Dh), positions 0..S-1
  Value q = ApplyRotary(queries, 10000, S - T); // (B, H, T, Dh), positions S-T..S-1
  EXPECT_EQ(q.shape(), queries.shape());
  EXPECT_EQ(k.shape(), keys.shape());
  return g.status();
}

HEADER_EXAMPLE(ModelsTasks) {
  const uint64_t seed = 1;
  const int64_t step = 3;
  DAGRAD_ASSIGN_OR_RETURN(TaskGenerator gen,
      TaskGenerator::Create({.task = Task::kReverse, .vocab = 16, .seq_len = 32}, seed));
  DAGRAD_ASSIGN_OR_RETURN(TaskBatch b, gen.Batch(/*index=*/step, /*batch_size=*/64));
  EXPECT_EQ(b.tokens.shape(), Shape({64, 32}));
  return absl::OkStatus();
}

// Each row's argmax is class 2 of 4; the targets are right, wrong, ignored.
HEADER_EXAMPLE(ModelsTrainerCounts) {
  Graph g;
  Value logits = g.Input("logits", DType::kFloat32, {1, 3, 4});
  Value targets = g.Input("targets", DType::kInt64, {1, 3});
  Value counts = TokenCounts(logits, targets);   // (2,) float64
  Value stats = EvalStats(CrossEntropy(logits, targets), logits, targets);
  Executor exec(g);
  DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile({counts, stats}));
  DAGRAD_ASSIGN_OR_RETURN(Tensor l, Tensor::FromVector<float>({1, 3, 4}, {0, 0, 1, 0, 0, 0, 1, 0,
                                                                          0, 0, 1, 0}));
  DAGRAD_ASSIGN_OR_RETURN(Tensor t, Tensor::FromVector<int64_t>({1, 3}, {2, 0, kIgnoreIndex}));
  DAGRAD_ASSIGN_OR_RETURN(auto out, exec.Run(*plan, {{logits, l}, {targets, t}}));
  EXPECT_EQ(out[0].data<double>()[0], 1);  // correct
  EXPECT_EQ(out[0].data<double>()[1], 2);  // counted
  const EvalResult e = EvalResultOf(out[1]);
  EXPECT_EQ(e.accuracy, 0.5);
  // Cross-entropy of the two counted rows: log(3 + e) - 1 and log(3 + e).
  EXPECT_NEAR(e.loss, std::log(3 + std::exp(1.0)) - 0.5, 1e-6);
  return g.status();
}

HEADER_EXAMPLE(ModelsToyTrainer) {
  TrainConfig config{.model = {.vocab = 8, .seq_len = 6, .dim = 16, .heads = 2, .layers = 1,
                               .ffn = 32, .dropout = 0.0},
                     .run = {.batch = 4, .steps = 2, .warmup = 1}, .eval_size = 8};
  DAGRAD_ASSIGN_OR_RETURN(auto trainer, ToyTrainer::Create(config));
  while (trainer->step() < config.run.steps) {
    DAGRAD_ASSIGN_OR_RETURN(StepResult r, trainer->Step());
  }
  DAGRAD_ASSIGN_OR_RETURN(EvalResult e, trainer->Evaluate());
  EXPECT_GT(e.loss, 0);
  if (mkdir("run", 0755) != 0) return absl::InternalError("mkdir run");
  DAGRAD_RETURN_IF_ERROR(trainer->SaveCheckpoint(
      "run/ckpt.safetensors", {.keep_previous_as = "run/ckpt.prev.safetensors"}));
  DAGRAD_RETURN_IF_ERROR(trainer->LoadCheckpoint("run/ckpt.safetensors"));
  return absl::OkStatus();
}

// A user's schedule drives the trainer; a value it should not return
// stops the step that asked for it.
HEADER_EXAMPLE(ModelsRunSchedule) {
  TrainConfig config{.model = {.vocab = 8, .seq_len = 6, .dim = 16, .heads = 2, .layers = 1,
                               .ffn = 32, .dropout = 0.0},
                     .run = {.batch = 4, .steps = 3,
                             .lr_schedule = [](int64_t s) { return s < 3 ? 0.25 * s : -1.0; }},
                     .eval_size = 8};
  const int64_t step = 2;
  DAGRAD_ASSIGN_OR_RETURN(const double lr, LearningRate(config.run.Schedule(), step));
  EXPECT_EQ(lr, 0.5);
  EXPECT_EQ(config.run.ToMetadata()["lr_decay"], "custom");
  DAGRAD_ASSIGN_OR_RETURN(auto trainer, ToyTrainer::Create(config));
  DAGRAD_ASSIGN_OR_RETURN(StepResult first, trainer->Step());
  EXPECT_EQ(first.lr, 0.25);
  DAGRAD_ASSIGN_OR_RETURN(StepResult second, trainer->Step());
  EXPECT_EQ(second.lr, 0.5);
  const absl::Status third = trainer->Step().status();
  EXPECT_EQ(third.message(),
            "the learning-rate schedule's value at step 3 must be finite and >= 0, got -1");
  EXPECT_EQ(trainer->step(), 2);
  return absl::OkStatus();
}

HEADER_EXAMPLE(ModelsRunDirectory) {
  TrainConfig config{.model = {.vocab = 8, .seq_len = 6, .dim = 16, .heads = 2, .layers = 1,
                               .ffn = 32, .dropout = 0.0},
                     .run = {.batch = 4, .steps = 1, .warmup = 1}, .eval_size = 8};
  DAGRAD_ASSIGN_OR_RETURN(auto toy, ToyTrainer::Create(config));
  Trainer& trainer = *toy;
  if (mkdir("runs", 0755) != 0 || mkdir("runs/gpt", 0755) != 0) return absl::InternalError("mkdir");
  RunDirectory files("runs/gpt");
  DAGRAD_RETURN_IF_ERROR(files.StartMetrics());
  DAGRAD_RETURN_IF_ERROR(files.SaveCheckpoint(trainer));
  std::string warning;
  DAGRAD_ASSIGN_OR_RETURN(std::string from, files.LoadCheckpoint(trainer, &warning));
  EXPECT_EQ(from, "runs/gpt/checkpoint.safetensors");
  return absl::OkStatus();
}

HEADER_EXAMPLE(ModelsRunOutputs) {
  TrainConfig config{.model = {.vocab = 8, .seq_len = 6, .dim = 16, .heads = 2, .layers = 1,
                               .ffn = 32, .dropout = 0.0},
                     .run = {.batch = 4, .steps = 2, .warmup = 1}, .eval_size = 8};
  DAGRAD_ASSIGN_OR_RETURN(auto trainer, ToyTrainer::Create(config));
  if (mkdir("runs", 0755) != 0 || mkdir("runs/gpt", 0755) != 0) return absl::InternalError("mkdir");
  DAGRAD_ASSIGN_OR_RETURN(FitResult fit, Fit(*trainer, {.dir = "runs/gpt"}));
  DAGRAD_ASSIGN_OR_RETURN(RunOutputs outputs,
                          WriteRunOutputs(*trainer, "runs/gpt", fit.rows, {.title = "gpt"}));
  std::cout << outputs.Summary();   // "wrote to runs/gpt/: model.safetensors ..."
  EXPECT_EQ(outputs.written[0], "model.safetensors");
  return absl::OkStatus();
}

HEADER_EXAMPLE(ModelsStopSignals) {
  FitOptions options{.dir = "runs/x", .stop_requested = StopOnSignals()};
  EXPECT_FALSE(options.stop_requested());
  return absl::OkStatus();
}

// A job of one rank, over a communicator of one process.
HEADER_EXAMPLE(ModelsParallelJob) {
  std::shared_ptr<Communicator> comm = SingleProcessCommunicator();
  Job job{comm, comm->rank(), comm->size()};
  DAGRAD_RETURN_IF_ERROR(CheckSameConfig(job, {{"dim", "128"}, {"lr", "0.001"}}));
  const bool stop = AgreedStopSignal(job, StopSignal()) != 0;   // models/stop_signals.h
  EXPECT_FALSE(stop);
  return absl::OkStatus();
}

HEADER_EXAMPLE(ModelsExampleGraphs) {
  Graph g;
  DAGRAD_ASSIGN_OR_RETURN(ExampleGraph mha, BuildExample("mha", g, nn::AttentionPath::kComposed));
  DAGRAD_ASSIGN_OR_RETURN(std::string dot, ToDot(g, {mha.loss}));
  EXPECT_NE(dot.find("digraph"), std::string::npos);
  return absl::OkStatus();
}

// A Hugging Face GPT-2 directory, the test data's tiny one.
HEADER_EXAMPLE(ModelsReadModelFile) {
  std::filesystem::create_directories("models");
  std::filesystem::copy(std::string(DAGRAD_TEST_DATA_DIR) + "/hf_gpt2_tiny", "models/gpt2");
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile gpt2, ReadModelFile("models/gpt2"));
  EXPECT_EQ(ModelKind(gpt2.metadata), "gpt2");
  return absl::OkStatus();
}

HEADER_EXAMPLE(ModelsTransformer) {
  Graph g;
  Value tokens = g.Input("tokens", DType::kInt64, {B, 32});
  Value lengths = g.Input("lengths", DType::kInt64, {B});
  ToyConfig config{.vocab = 16, .seq_len = 32, .dim = 128, .heads = 4,
                   .layers = 2, .ffn = 512, .dropout = 0.1};
  DAGRAD_ASSIGN_OR_RETURN(ToyTransformer model, ToyTransformer::Create(g, config));
  ToyOutputs out = model(tokens, lengths);   // out.logits (B, T, vocab)
  EXPECT_EQ(out.logits.shape(), Shape({B, 32, 16}));
  return g.status();
}

HEADER_EXAMPLE(Umbrella) {
  dagrad::Graph g;
  dagrad::Value x = g.Input("x", dagrad::DType::kFloat32, {4, 3});
  dagrad::Value w = g.Parameter("w", {2, 3}, dagrad::Initializer::Ones());
  dagrad::Value loss = dagrad::Mean(dagrad::Relu(dagrad::Linear(x, w)));
  EXPECT_EQ(loss.shape(), Shape({}));
  return g.status();
}

}  // namespace
}  // namespace dagrad::models

namespace dagrad::nn {
namespace {

constexpr int64_t B = 2, T = 5, S = 7, E = 8, H = 4;

HEADER_EXAMPLE(NnAttentionPorting) {
  Graph g;
  DAGRAD_ASSIGN_OR_RETURN(MultiheadAttention mha,
                          MultiheadAttention::Create(g, "attn", {.embed_dim = E, .num_heads = H}));
  Value q = g.Input("q", DType::kFloat32, {B, T, E});
  Value k = g.Input("k", DType::kFloat32, {B, S, E}), v = k;
  Value kpm = g.Input("kpm", DType::kBool, {B, S});
  Value am = g.Input("am", DType::kFloat32, {B * H, T, S});
  AttentionOutput y = mha(q, k, v, {.keep = KeepFromKeyPaddingMask(kpm),
                                    .bias = BiasFromAttnMask(am, H)},
                          AttentionWeights::kPerHead);
  EXPECT_EQ(y.weights.shape(), Shape({B, H, T, S}));
  return g.status();
}

HEADER_EXAMPLE(NnMaskConverters) {
  Graph g;
  DAGRAD_ASSIGN_OR_RETURN(MultiheadAttention mha,
                          MultiheadAttention::Create(g, "attn", {.embed_dim = 8, .num_heads = 4}));
  Value q = g.Input("q", DType::kFloat32, {2, 5, 8});
  Value k = g.Input("k", DType::kFloat32, {2, 7, 8}), v = k;
  Value kpm = g.Input("kpm", DType::kBool, {2, 7});
  Value am = g.Input("am", DType::kFloat32, {8, 5, 7});
  Value keep = KeepFromKeyPaddingMask(kpm);   // kpm bool (2, 7) -> (2, 1, 1, 7)
  EXPECT_EQ(keep.shape(), Shape({2, 1, 1, 7}));
  Value float_kpm = Cast(kpm, DType::kFloat32);
  {
    Value kpm = float_kpm;
    Value bias = BiasFromAttnMask(am, 4);        // am float (8, 5, 7) -> (2, 4, 5, 7)
    mha(q, k, v, {.bias = bias + BiasFromKeyPaddingMask(kpm)});  // both masks
    EXPECT_EQ(bias.shape(), Shape({2, 4, 5, 7}));
  }
  return g.status();
}

}  // namespace
}  // namespace dagrad::nn

namespace dagrad::plot {
namespace {

HEADER_EXAMPLE(PlotSvg) {
  const std::vector<double> xs = {1, 2, 3}, ys = {2.0, 1.5, 1.2};
  LineChart chart{.title = "loss", .x_label = "step", .y_label = "cross-entropy"};
  chart.series.push_back({"train", xs, ys});
  std::string svg = RenderSvg(840, 320, {Panel::Line(chart, 0, 0, 840, 320)});
  EXPECT_NE(svg.find("cross-entropy"), std::string::npos);
  return absl::OkStatus();
}

HEADER_EXAMPLE(PlotPlots) {
  models::FitResult fit;
  fit.rows = {{.step = 10, .loss = 2.0}, {.step = 20, .loss = 1.0}};
  DAGRAD_ASSIGN_OR_RETURN(Tensor layer,
                          Tensor::FromVector<float>({1, 3, 3}, std::vector<float>(9, 1.0f / 3)));
  const std::vector<Tensor> weights = {layer};
  std::string curves = plot::LossCurves(fit.rows);   // models::FitResult's rows
  std::string heads = plot::AttentionHeatmaps(weights, {"a", "b", "c"}, "attention");
  DAGRAD_ASSIGN_OR_RETURN(std::string table, plot::PositionalEncoding(32, 16));
  EXPECT_NE(heads.find("layer 0, head 0"), std::string::npos);
  return absl::OkStatus();
}

}  // namespace
}  // namespace dagrad::plot
