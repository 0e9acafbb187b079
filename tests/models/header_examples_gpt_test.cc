// The examples of models/gpt/gpt.h, generator.h, gpt_trainer.h, text_task.h,
// token_sampler.h, trainer.h and of nn::Linear::Tied, line for line, run (tests/support/header_examples.h).

#include <sys/stat.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "engine/io/checkpoint.h"
#include "engine/status_macros.h"
#include "models/evaluate.h"
#include "models/fit.h"
#include "models/gpt/gpt.h"
#include "models/language_model.h"
#include "models/lm_trainer.h"
#include "models/generator.h"
#include "models/gpt/gpt_trainer.h"
#include "models/gpt/text_task.h"
#include "models/gpt/token_sampler.h"
#include "models/toy/toy_trainer.h"
#include "models/trainer.h"
#include "ops/autodiff/optimizer.h"
#include "ops/fill.h"
#include "ops/loss.h"
#include "tests/support/header_examples.h"

namespace dagrad::models {
namespace {

// SaveUntrainedGpt writes run/model.safetensors: a small GPT at its
// initialisation, with its metadata, as `dagrad train` would save one.
absl::Status SaveUntrainedGpt() {
  Graph g;
  DAGRAD_ASSIGN_OR_RETURN(Gpt gpt, Gpt::Create(g, {.block_size = 8, .dim = 8, .heads = 2,
                                                   .layers = 1}));
  Executor exec(g);
  if (mkdir("run", 0755) != 0) return absl::InternalError("mkdir run");
  return SaveVariables(exec, gpt.parameters(), gpt.Metadata(), "run/model.safetensors");
}

// WriteCorpus writes `name` (a few KB of text) in the example's directory.
void WriteCorpus(const std::string& name) {
  std::ofstream out(name);
  for (int i = 0; i < 80; ++i) out << "the quick brown fox jumps over the lazy dog.\n";
}

HEADER_EXAMPLE(ModelsGpt) {
  Graph g;
  Value targets = g.Input("targets", DType::kInt64, {8, 64});
  GptConfig config{.block_size = 64, .dim = 128, .heads = 4, .layers = 4};
  DAGRAD_ASSIGN_OR_RETURN(Gpt model, Gpt::Create(g, config));
  Value tokens = g.Input("tokens", DType::kInt64, {8, 64});
  Value logits = model(tokens);                       // (8, 64, 256)
  Value loss = CrossEntropy(logits, targets);         // targets -100 ignored
  EXPECT_EQ(logits.shape(), Shape({8, 64, 256}));
  Value token = g.Input("token", DType::kInt64, {8, 1});
  Value pos = Fill(g, {1}, 3, DType::kInt64);
  KvPast cache;
  for (int l = 0; l < 4; ++l) {
    cache.keys.push_back(g.Input(absl::StrCat("k", l), DType::kFloat32, {8, 4, 3, 32}));
    cache.values.push_back(g.Input(absl::StrCat("v", l), DType::kFloat32, {8, 4, 3, 32}));
  }
  cache.keep = Fill(g, {3}, 1, DType::kBool);
  GptOutputs out = model.Forward(token, {.positions = pos, .past = &cache});
  // out.logits (B, 1, vocab); out.keys[l], out.values[l] (B, H, 1, Dh)
  EXPECT_EQ(out.logits.shape(), Shape({8, 1, 256}));
  EXPECT_EQ(out.keys[3].shape(), Shape({8, 4, 1, 32}));
  EXPECT_TRUE(loss.ok());
  return g.status();
}

HEADER_EXAMPLE(ModelsLinearTied) {
  Graph g;
  DAGRAD_ASSIGN_OR_RETURN(nn::Embedding wte,
                          nn::Embedding::Create(g, "wte", {.num_embeddings = 5, .embedding_dim = 3}));
  DAGRAD_ASSIGN_OR_RETURN(nn::Linear head,
      nn::Linear::Tied(g, "lm_head", wte.weight()));   // (V, D): x (B, T, D) -> (B, T, V)
  EXPECT_EQ(head(g.Input("x", DType::kFloat32, {2, 4, 3})).shape(), Shape({2, 4, 5}));
  EXPECT_EQ(g.Parameters().size(), 1u);
  return g.status();
}

HEADER_EXAMPLE(ModelsTextTaskAndTrainer) {
  WriteCorpus("corpus.txt");
  DAGRAD_ASSIGN_OR_RETURN(TextData data, TextData::Load("corpus.txt", 64));
  DAGRAD_ASSIGN_OR_RETURN(TokenBatch b, data.TrainBatch(/*seed=*/0, /*index=*/1, 32));
  // b.tokens, b.targets int64 (32, 64)
  EXPECT_EQ(b.tokens.shape(), Shape({32, 64}));
  TextTrainConfig config{.model = {.block_size = 16, .dim = 16, .heads = 2, .layers = 1},
                         .data = "corpus.txt"};
  config.run.batch = 4;
  config.run.steps = 2;
  DAGRAD_ASSIGN_OR_RETURN(auto trainer, GptTrainer::Create(config));
  while (trainer->step() < config.run.steps) {
    DAGRAD_ASSIGN_OR_RETURN(StepResult r, trainer->Step());  // r.loss: nats per byte
  }
  DAGRAD_ASSIGN_OR_RETURN(EvalResult val, trainer->Evaluate());
  DAGRAD_ASSIGN_OR_RETURN(std::string text, trainer->Sample("The ", 200, {.seed = 1}));
  EXPECT_EQ(text.size(), 204u);
  EXPECT_GT(val.loss, 0);
  DAGRAD_RETURN_IF_ERROR(trainer->SaveModel("model.safetensors"));
  return absl::OkStatus();
}

// models::Fit over a GPT trainer, resumable: a second call continues the
// first's run directory.
HEADER_EXAMPLE(ModelsFit) {
  WriteCorpus("input.txt");
  if (mkdir("runs", 0755) != 0 || mkdir("runs/gpt", 0755) != 0) return absl::InternalError("mkdir");
  TextTrainConfig config{.model = {.block_size = 16, .dim = 16, .heads = 2, .layers = 1},
                         .data = "input.txt", .eval_windows = 4};
  config.run.batch = 4;
  config.run.steps = 3;
  for (bool resume : {false, true}) {
    DAGRAD_ASSIGN_OR_RETURN(auto trainer, models::GptTrainer::Create(config));
    DAGRAD_ASSIGN_OR_RETURN(models::FitResult fit,
                            models::Fit(*trainer, {.dir = "runs/gpt", .resume = resume}));
    if (fit.end == models::FitEnd::kComplete) std::printf("val %.4f\n", fit.final_eval.loss);
    EXPECT_EQ(fit.rows.size(), 1u);  // step 3's, the last
  }
  return absl::OkStatus();
}

HEADER_EXAMPLE(ModelsTrainer) {
  WriteCorpus("corpus.txt");
  TextTrainConfig config{.model = {.block_size = 16, .dim = 16, .heads = 2, .layers = 1},
                         .data = "corpus.txt"};
  config.run.batch = 4;
  config.run.steps = 2;
  const int64_t steps = config.run.steps;
  DAGRAD_ASSIGN_OR_RETURN(std::unique_ptr<GptTrainer> gpt, GptTrainer::Create(config));
  std::unique_ptr<Trainer> t = std::move(gpt);
  while (t->step() < steps) {
    DAGRAD_ASSIGN_OR_RETURN(StepResult r, t->Step());
  }
  DAGRAD_ASSIGN_OR_RETURN(EvalResult e, t->Evaluate());
  EXPECT_GT(e.loss, 0);
  return absl::OkStatus();
}

HEADER_EXAMPLE(ModelsNonFiniteRefusal) {
  TrainConfig config{.model = {.vocab = 8, .seq_len = 6, .dim = 16, .heads = 2, .layers = 1,
                               .ffn = 32, .dropout = 0.0},
                     .run = {.batch = 4, .steps = 1, .warmup = 1}, .eval_size = 8};
  DAGRAD_ASSIGN_OR_RETURN(auto trainer, ToyTrainer::Create(config));
  DAGRAD_RETURN_IF_ERROR(std::system("mkdir -p run") == 0 ? absl::OkStatus()
                                                          : absl::InternalError("mkdir"));
  absl::Status st = trainer->SaveCheckpoint("run/ckpt.safetensors");
  if (IsNonFiniteRefusal(st)) st = absl::AbortedError(st.message());  // diverged
  DAGRAD_RETURN_IF_ERROR(st);
  // A NaN is refused, and the refusal is marked; other errors are not.
  Graph g;
  Value w = g.Variable("w", {2}, Initializer::Zeros());
  Executor exec(g);
  DAGRAD_ASSIGN_OR_RETURN(Tensor nan, Tensor::FromVector<float>({2}, {1, std::nanf("")}));
  DAGRAD_RETURN_IF_ERROR(exec.Assign(w, nan));
  const absl::Status refused = SaveFiniteVariables(exec, {w}, {}, "run/nan.safetensors");
  EXPECT_TRUE(absl::IsFailedPrecondition(refused)) << refused;
  EXPECT_TRUE(IsNonFiniteRefusal(refused));
  EXPECT_FALSE(IsNonFiniteRefusal(absl::FailedPreconditionError("a FIFO")));
  return absl::OkStatus();
}

HEADER_EXAMPLE(ModelsTrainerNonFiniteSteps) {
  const double loss = std::nan(""), norm = 1;
  const int64_t step = 3;
  NonFiniteSteps skips(NonFinitePolicy::kSkip, 8);
  if (UpdateSkipped(loss, norm)) {
    DAGRAD_RETURN_IF_ERROR(skips.NonFinite(step, loss, norm));  // skipped
  } else {
    skips.Finite();
  }
  EXPECT_EQ(skips.total(), 1);
  return absl::OkStatus();
}

HEADER_EXAMPLE(ModelsTrainingState) {
  Graph g;
  std::vector<Value> vars = {g.Parameter("w", {2}, Initializer::Ones())};
  Executor exec(g);
  NonFiniteSteps skips;
  const std::string path = "state.safetensors";
  TrainConfig config;
  TrainingState state{"toy-train-state/1", config.ToMetadata()};
  DAGRAD_RETURN_IF_ERROR(state.Save(exec, vars, 5, skips, path, {}));
  DAGRAD_ASSIGN_OR_RETURN(int64_t step, state.Load(exec, vars, skips, path));
  EXPECT_EQ(step, 5);
  return absl::OkStatus();
}

HEADER_EXAMPLE(ModelsRunConfig) {
  models::TextTrainConfig config{.model = {.block_size = 16, .dim = 16, .heads = 2, .layers = 1},
                                 .data = "input.txt"};
  config.run.steps = 2000;
  config.run.optimizer.beta2 = 0.99;
  DAGRAD_RETURN_IF_ERROR(config.run.Validate());
  std::map<std::string, std::string> m = config.run.ToMetadata();  // "lr" -> "0.001", ...
  EXPECT_EQ(m["lr"], "0.001");
  EXPECT_EQ(m["beta2"], "0.99");
  EXPECT_EQ(m["optimizer"], "adamw");
  return absl::OkStatus();
}

HEADER_EXAMPLE(ModelsBatchShare) {
  Graph g;
  std::shared_ptr<Communicator> comm = SingleProcessCommunicator();  // one rank: all 8 rows
  Value logits = Fill(g, {8, 3, 5}, 0, DType::kFloat32);  // uniform over 5 classes
  Value targets = g.Input("targets", DType::kInt64, {8, 3});
  DAGRAD_ASSIGN_OR_RETURN(Tensor global_targets, Tensor::Zeros(DType::kInt64, {8, 3}));
  DAGRAD_ASSIGN_OR_RETURN(BatchShare share, BatchShare::Create(8, {.communicator = comm}));
  Value loss = share.MeanLoss(g, logits, targets);  // in the scope "loss"
  Executor exec(g, {.communicator = comm});
  DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile({loss}));
  DAGRAD_ASSIGN_OR_RETURN(Tensor my_targets, share.Rows(global_targets));
  Feeds feeds = {{targets, my_targets}};
  share.FeedWeight(global_targets, feeds);
  DAGRAD_ASSIGN_OR_RETURN(auto out, exec.Run(*plan, feeds, share.Training(/*step=*/1)));
  EXPECT_EQ(share.rows(), 8);
  EXPECT_NEAR(out[0].data<float>()[0], std::log(5.0), 1e-6);
  return g.status();
}

HEADER_EXAMPLE(ModelsTokenSampler) {
  std::vector<float> logits(256, 0.0f);
  logits[42] = 20;
  DAGRAD_ASSIGN_OR_RETURN(auto sampler,
      TokenSampler::Create(256, {.temperature = 0.8, .top_k = 40, .seed = 1}));
  DAGRAD_ASSIGN_OR_RETURN(int64_t next, sampler->Sample(logits, /*draw=*/0));
  EXPECT_EQ(next, 42);
  return absl::OkStatus();
}

// A checkpoint of any model the library knows, loaded by its metadata.
HEADER_EXAMPLE(ModelsLanguageModel) {
  DAGRAD_RETURN_IF_ERROR(SaveUntrainedGpt());
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile file, ReadCheckpoint("run/model.safetensors"));
  Graph g;
  DAGRAD_ASSIGN_OR_RETURN(std::unique_ptr<LanguageModel> model,
                          LoadLanguageModel(g, file, "run/model.safetensors"));
  Value logits = model->Logits(g.Input("tokens", DType::kInt64, {2, 8}));
  EXPECT_EQ(logits.shape(), Shape({2, 8, 256}));
  EXPECT_TRUE(model->causal());
  return g.status();
}

// A user's data and model through LmTrainer and Fit: here the windows of
// a counting sequence, and a GPT built by the user's function.
HEADER_EXAMPLE(ModelsLmTrainer) {
  auto MyBatch = [](uint64_t step, int64_t rows) -> absl::StatusOr<TokenBatch> {
    std::vector<int64_t> x(rows * 64), y(rows * 64);
    for (size_t i = 0; i < x.size(); ++i) x[i] = (step + i) % 256, y[i] = (step + i + 1) % 256;
    TokenBatch b;
    DAGRAD_ASSIGN_OR_RETURN(b.tokens, Tensor::FromVector<int64_t>({rows, 64}, x));
    DAGRAD_ASSIGN_OR_RETURN(b.targets, Tensor::FromVector<int64_t>({rows, 64}, y));
    return b;
  };
  auto MyVal = [&](int64_t first, int64_t count) { return MyBatch(1000 + first, count); };
  auto build_my_model = [](Graph& g) -> absl::StatusOr<std::unique_ptr<LanguageModel>> {
    DAGRAD_ASSIGN_OR_RETURN(Gpt gpt, Gpt::Create(g, {.block_size = 64, .dim = 8, .heads = 2,
                                                     .layers = 1}));
    return std::make_unique<Gpt>(std::move(gpt));
  };
  if (mkdir("runs", 0755) != 0 || mkdir("runs/mine", 0755) != 0) return absl::InternalError("mkdir");
  LmData data{.train = [&](uint64_t step, int64_t batch) { return MyBatch(step, batch); },
              .validation = [&](int64_t first, int64_t count) { return MyVal(first, count); },
              .validation_windows = 10, .window = 64};
  DAGRAD_ASSIGN_OR_RETURN(auto trainer, LmTrainer::Create(build_my_model, data,
                                                          {.run = {.batch = 8, .steps = 20}}));
  DAGRAD_ASSIGN_OR_RETURN(FitResult fit, Fit(*trainer, {.dir = "runs/mine"}));
  EXPECT_EQ(fit.end, FitEnd::kComplete);
  EXPECT_EQ(fit.step, 20);
  return absl::OkStatus();
}

// EvaluateModel on a saved GPT and a file of inputs.
HEADER_EXAMPLE(ModelsEvaluate) {
  DAGRAD_RETURN_IF_ERROR(SaveUntrainedGpt());
  DAGRAD_ASSIGN_OR_RETURN(Tensor tokens, Tensor::FromVector<int64_t>({1, 3}, {72, 105, 33}));
  DAGRAD_RETURN_IF_ERROR(WriteSafetensors("input.safetensors", {{{"tokens", tokens}}, {}}));
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile ckpt, ReadCheckpoint("run/model.safetensors"));
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile in, ReadSafetensors("input.safetensors"));
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile out,
      EvaluateModel(ckpt, "run/model.safetensors", in, "input.safetensors"));
  const Tensor* logits = out.Find("logits");            // (B, T, vocab)
  EXPECT_EQ(logits->shape(), Shape({1, 3, 256}));
  return absl::OkStatus();
}

HEADER_EXAMPLE(ModelsGenerator) {
  DAGRAD_RETURN_IF_ERROR(SaveUntrainedGpt());
  DAGRAD_ASSIGN_OR_RETURN(auto gen, Generator::Load("run/model.safetensors"));
  const std::string prompt = "Copyright ";
  DAGRAD_ASSIGN_OR_RETURN(std::vector<int64_t> more,
      gen->Generate(BytesToTokens(prompt),
                    {.tokens = 200, .sampling = {.temperature = 0.8, .top_k = 40, .seed = 1}}));
  std::cout << prompt << TokensToBytes(more);
  EXPECT_EQ(more.size(), 200u);
  // GenerateOptions::on_token: each token as it is drawn, in order.
  GenerateOptions options{
      .tokens = 20,
      .sampling = {.seed = 1},
      .on_token = [](int64_t t) { std::cout << TokensToBytes({t}) << std::flush; }
  };
  DAGRAD_ASSIGN_OR_RETURN(std::vector<int64_t> printed,
                          gen->Generate(BytesToTokens(prompt), options));
  size_t seen = 0;
  options.on_token = [&](int64_t t) { EXPECT_EQ(t, printed[seen++]); };
  DAGRAD_ASSIGN_OR_RETURN(std::vector<int64_t> again, gen->Generate(BytesToTokens(prompt), options));
  EXPECT_EQ(seen, printed.size());
  EXPECT_EQ(again, printed);
  return absl::OkStatus();
}

}  // namespace
}  // namespace dagrad::models
