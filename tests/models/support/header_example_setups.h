// The setups the examples of the models layer's headers (models/, the nn
// layers, the GPT, the trainers, the plots) run in (tests/support/
// header_examples.h says how): what an example uses and does not declare.
// Default is a graph `g` with the inputs the nn layers' examples take
// (B = 2, T = 5, S = 7, E = 8), layers made for them, and logits with their
// targets; the others hold what a trainer's example needs on disk (a corpus,
// a saved GPT, a run directory) or give a name another meaning. A block
// names its setup on its first line ("// setup: SavedGpt").

#ifndef DAGRAD_TESTS_MODELS_SUPPORT_HEADER_EXAMPLE_SETUPS_H_
#define DAGRAD_TESTS_MODELS_SUPPORT_HEADER_EXAMPLE_SETUPS_H_

#include <sys/stat.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "engine/graph.h"
#include "engine/io/checkpoint.h"
#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"
#include "engine/status_macros.h"
#include "models/dagrad.h"
#include "models/evaluate.h"
#include "models/fit.h"
#include "models/generator.h"
#include "models/gpt/gpt.h"
#include "models/gpt/gpt_trainer.h"
#include "models/gpt/text_task.h"
#include "models/gpt/token_sampler.h"
#include "models/gpt/tokenizer.h"
#include "models/gpt2/hf_checkpoint.h"
#include "models/gpt2/fine_tune.h"
#include "models/gpt2/hf_config.h"
#include "models/gpt2/hf_export.h"
#include "models/language_model.h"
#include "models/lm_trainer.h"
#include "models/nn/nn.h"
#include "models/plot/plots.h"
#include "models/plot/svg.h"
#include "models/run_directory.h"
#include "models/run_outputs.h"
#include "models/stop_signals.h"
#include "models/example_graphs.h"
#include "models/parallel_job.h"
#include "models/toy/tasks.h"
#include "models/toy/toy_trainer.h"
#include "models/trainer.h"
#include "tests/support/header_examples.h"

namespace dagrad::examples {

using namespace ::dagrad::models;  // NOLINT: the examples name them unqualified
using namespace ::dagrad::nn;      // NOLINT
using namespace ::dagrad::plot;    // NOLINT

constexpr int64_t B = 2, T = 5, S = 7, E = 8, H = 4, Dh = 2;

absl::Status MakeDirectories(std::initializer_list<const char*> dirs);

struct Default {
  Graph g;
  Value x = g.Input("setup_x", DType::kFloat32, {B, T, E});
  Value h = x;
  Value memory = g.Input("setup_memory", DType::kFloat32, {B, 3, E});
  Value lengths = g.Input("setup_lengths", DType::kInt64, {B});
  Value tokens = g.Input("setup_tokens", DType::kInt64, {B, T});
  Value qkv = g.Input("setup_qkv", DType::kFloat32, {B, T, 3 * E});
  Value keys = g.Input("setup_keys", DType::kFloat32, {B, H, S, Dh});
  Value queries = g.Input("setup_queries", DType::kFloat32, {B, H, T, Dh});
  // Logits of 8 rows of 3 positions over 5 classes, and their targets.
  Value logits = Tanh(g.Parameter("setup_logits", {8, 3, 5}, Initializer::Normal(0.0, 1.0)));
  Value targets = g.Input("setup_targets", DType::kInt64, {8, 3});
  Value loss = CrossEntropy(logits, targets);
  Tensor global_targets = *Tensor::Zeros(DType::kInt64, {8, 3});
  std::shared_ptr<Communicator> comm = SingleProcessCommunicator();
  nn::Embedding wte;
  nn::TransformerBlock block;
  uint64_t seed = 1;
  int64_t step = 3;

  absl::Status Prepare();
  absl::Status Finish() { return g.status(); }
};

// Default, with x of 4 features, (B, 4), for a Linear(4, 3).
struct Features4 : Default {
  Value x = g.Input("setup_x4", DType::kFloat32, {B, 4});
};

// Default, with x of 2 features, (B, 2), for a net taking 2.
struct Features2 : Default {
  Value x = g.Input("setup_x2", DType::kFloat32, {B, 2});
};

// Default, with a 4-head attention layer `mha` (E = 8), queries (B, T, E),
// keys and values (B, S, E), PyTorch's masks: a key padding mask `kpm`
// (B, S) and an attention mask `am` (B * H, T, S).
struct Masks : Default {
  MultiheadAttention mha;
  Value q = g.Input("setup_q", DType::kFloat32, {B, T, E});
  Value k = g.Input("setup_k", DType::kFloat32, {B, S, E}), v = k;
  Value kpm = g.Input("setup_kpm", DType::kBool, {B, S});
  Value am = g.Input("setup_am", DType::kFloat32, {B * H, T, S});
  absl::Status Prepare();
};

// Masks, with a float key padding mask (a bias: 0 or -inf).
struct FloatMasks : Masks {
  Value kpm = g.Input("setup_kpm_float", DType::kFloat32, {B, S});
};

// Default, with `h` the packed q, k, v split into 2 heads.
struct SplitHeads : Default {
  HeadsQkv h = SplitPackedHeads(qkv, 2);
};

// Default, with a 2-head attention layer `mha` (E = 8), `h` the packed
// q, k, v split into its heads, and a KV cache's past of 3 slots, the
// last not kept: past_k, past_v (B, 2, 3, 4), kept bool (3).
struct Cache : Default {
  MultiheadAttention mha;
  HeadsQkv h = SplitPackedHeads(qkv, 2);
  Value past_k = g.Input("setup_past_k", DType::kFloat32, {B, 2, 3, 4});
  Value past_v = g.Input("setup_past_v", DType::kFloat32, {B, 2, 3, 4});
  Value kept = g.Input("setup_kept", DType::kBool, {3});
  absl::Status Prepare();
};

// Default, with a GPT's shapes: targets (8, 64).
struct GptShapes : Default {
  Value targets = g.Input("setup_gpt_targets", DType::kInt64, {8, 64});
};

// A GPT `model` (4 layers of 4 heads of 32) and the KV cache of 3 positions
// its Forward takes for the next `token` at `pos`, one nn::KvCache a layer.
struct GptCache : Default {
  Gpt model;
  Value token = g.Input("setup_token", DType::kInt64, {8, 1});
  Value pos = Fill(g, {1}, 3, DType::kInt64);
  std::vector<nn::KvCache> cache;
  absl::Status Prepare();
};

// A GPT saved untrained at run/model.safetensors, with its metadata, as
// `dagrad train` saves one, and input.safetensors, tokens to evaluate.
struct SavedGpt : NoSetup {
  absl::Status Prepare();
};

// A text corpus (corpus.txt, and the same as input.txt), the runs/gpt
// directory, and a small GPT's training configuration over it.
struct TextRun : NoSetup {
  TextTrainConfig config{.model = {.block_size = 16, .dim = 16, .heads = 2, .layers = 1},
                         .data = "input.txt", .eval_windows = 4};
  int64_t steps = 2, step = 2;
  bool resume = false;
  absl::Status Prepare();
};

// A toy trainer, one step trained, and the run/ and runs/gpt directories.
struct ToyRun : NoSetup {
  TrainConfig config{.model = {.vocab = 8, .seq_len = 6, .dim = 16, .heads = 2, .layers = 1,
                               .ffn = 32, .dropout = 0.0},
                     .run = {.batch = 4, .steps = 2, .warmup = 1}, .eval_size = 8};
  absl::StatusOr<std::unique_ptr<ToyTrainer>> created = ToyTrainer::Create(config);
  std::unique_ptr<ToyTrainer> trainer = created.ok() ? std::move(*created) : nullptr;
  absl::Status Prepare();
};

// ToyRun, with the trainer by reference.
struct ToyRunReference : ToyRun {
  Trainer& trainer = *ToyRun::trainer;   // ToyTrainer::Create of this config succeeds
};

// A training state's parts: the variables, their executor, the skip count.
struct State : NoSetup {
  Graph g;
  std::vector<Value> vars = {g.Parameter("w", {2}, Initializer::Ones())};
  Executor exec{g};
  NonFiniteSteps skips;
  TrainConfig config;
  std::string path = "state.safetensors";
};

// A step's loss (NaN) and gradient norm.
struct NonFinite : NoSetup {
  double loss = std::nan(""), norm = 1;
  int64_t step = 3;
};

// Logits of one row as TokenSampler takes them: token 42 by far the likeliest.
struct SamplerLogits : NoSetup {
  std::vector<float> logits = std::vector<float>(256, 0.0f);
  SamplerLogits() { logits[42] = 20; }
};

// A user's data (windows of a counting sequence) and model (a small GPT),
// and the runs/mine directory.
struct UserModel : NoSetup {
  absl::StatusOr<TokenBatch> MyBatch(uint64_t step, int64_t rows);
  absl::StatusOr<TokenBatch> MyVal(int64_t first, int64_t count) {
    return MyBatch(1000 + first, count);
  }
  std::function<absl::StatusOr<std::unique_ptr<LanguageModel>>(Graph&)> build_my_model =
      [](Graph& g) -> absl::StatusOr<std::unique_ptr<LanguageModel>> {
    DAGRAD_ASSIGN_OR_RETURN(Gpt gpt, Gpt::Create(g, {.block_size = 64, .dim = 8, .heads = 2,
                                                     .layers = 1}));
    return std::make_unique<Gpt>(std::move(gpt));
  };
  absl::Status Prepare() { return MakeDirectories({"runs", "runs/mine"}); }
};

// A fit's rows, attention weights of one layer of 3 heads, and a series.
struct Plots : NoSetup {
  FitResult fit{.rows = {{.step = 10, .loss = 2.0}, {.step = 20, .loss = 1.0}}};
  std::vector<Tensor> weights = {
      *Tensor::FromVector<float>({1, 3, 3}, std::vector<float>(9, 1.0f / 3))};
  std::vector<double> xs = {1, 2, 3}, ys = {2.0, 1.5, 1.2};
};

// The tiny Hugging Face GPT-2 of the test data, copied to gpt2/ and
// models/gpt2/ (and its weights saved as a dagrad model file,
// runs/x/model.safetensors): its directory `dir`, its config.json text
// `json`, its tokenizer, and a text (corpus.txt) of a few thousand bytes.
struct Gpt2Files : NoSetup {
  std::string dir = "gpt2";
  std::string json;
  std::string text;
  Gpt2Tokenizer tokenizer =
      Gpt2Tokenizer::LoadDirectory(std::string(DAGRAD_TEST_DATA_DIR) + "/hf_gpt2_tiny").value();
  absl::Status Prepare();
};

inline absl::Status MakeDirectories(std::initializer_list<const char*> dirs) {
  for (const char* dir : dirs) {
    if (mkdir(dir, 0755) != 0) return absl::InternalError(absl::StrCat("mkdir ", dir));
  }
  return absl::OkStatus();
}

inline absl::Status Default::Prepare() {
  DAGRAD_ASSIGN_OR_RETURN(wte, nn::Embedding::Create(g, "setup_wte",
                                                     {.num_embeddings = 5, .embedding_dim = 3}));
  DAGRAD_ASSIGN_OR_RETURN(block, nn::TransformerBlock::Create(g, "setup_block",
                                                              {.d_model = E, .nhead = 2}));
  return g.status();
}

inline absl::Status Masks::Prepare() {
  DAGRAD_RETURN_IF_ERROR(Default::Prepare());
  DAGRAD_ASSIGN_OR_RETURN(mha, MultiheadAttention::Create(g, "setup_mha",
                                                          {.embed_dim = E, .num_heads = H}));
  return g.status();
}

inline absl::Status Cache::Prepare() {
  DAGRAD_RETURN_IF_ERROR(Default::Prepare());
  DAGRAD_ASSIGN_OR_RETURN(mha, MultiheadAttention::Create(g, "setup_cache_mha",
                                                          {.embed_dim = E, .num_heads = 2}));
  return g.status();
}

inline absl::Status GptCache::Prepare() {
  DAGRAD_ASSIGN_OR_RETURN(model, Gpt::Create(g, {.block_size = 64, .dim = 128, .heads = 4,
                                                 .layers = 4}));
  const Value keep = Fill(g, {3}, 1, DType::kBool);
  for (int l = 0; l < 4; ++l) {
    cache.push_back(
        {.past_keys = g.Input(absl::StrCat("setup_k", l), DType::kFloat32, {8, 4, 3, 32}),
         .past_values = g.Input(absl::StrCat("setup_v", l), DType::kFloat32, {8, 4, 3, 32}),
         .keep = keep});
  }
  return g.status();
}

inline absl::Status SavedGpt::Prepare() {
  Graph g;
  DAGRAD_ASSIGN_OR_RETURN(Gpt gpt, Gpt::Create(g, {.block_size = 8, .dim = 8, .heads = 2,
                                                   .layers = 1}));
  Executor exec(g);
  DAGRAD_RETURN_IF_ERROR(MakeDirectories({"run"}));
  DAGRAD_RETURN_IF_ERROR(
      SaveVariables(exec, gpt.parameters(), gpt.Metadata(), "run/model.safetensors"));
  DAGRAD_ASSIGN_OR_RETURN(Tensor tokens, Tensor::FromVector<int64_t>({1, 3}, {72, 105, 33}));
  return WriteSafetensors("input.safetensors", {{{"tokens", tokens}}, {}});
}

inline absl::Status TextRun::Prepare() {
  for (const char* name : {"corpus.txt", "input.txt"}) {
    std::ofstream out(name);
    for (int i = 0; i < 80; ++i) out << "the quick brown fox jumps over the lazy dog.\n";
    if (!out) return absl::InternalError(absl::StrCat("writing ", name));
  }
  config.run.batch = 4;
  config.run.steps = steps;
  return MakeDirectories({"runs", "runs/gpt"});
}

inline absl::Status ToyRun::Prepare() {
  DAGRAD_RETURN_IF_ERROR(created.status());
  DAGRAD_RETURN_IF_ERROR(trainer->Step().status());
  return MakeDirectories({"run", "runs", "runs/gpt"});
}

inline absl::Status Gpt2Files::Prepare() {
  const std::string data = std::string(DAGRAD_TEST_DATA_DIR) + "/hf_gpt2_tiny";
  std::error_code ec;
  std::filesystem::create_directories("models", ec);
  for (const char* to : {"gpt2", "models/gpt2"}) std::filesystem::copy(data, to, ec);
  if (ec) return absl::InternalError(absl::StrCat("copying ", data, ": ", ec.message()));
  DAGRAD_ASSIGN_OR_RETURN(json, ReadFile("gpt2/config.json"));
  for (int i = 0; i < 40; ++i) text += "It was the best of times, it was the worst of times.\n";
  DAGRAD_RETURN_IF_ERROR(WriteFileAtomically("corpus.txt", text));
  DAGRAD_ASSIGN_OR_RETURN(HfGpt2Files files, ReadHfGpt2("gpt2"));
  DAGRAD_RETURN_IF_ERROR(MakeDirectories({"runs", "runs/x"}));
  return WriteSafetensors("runs/x/model.safetensors", files.weights);
}

inline absl::StatusOr<TokenBatch> UserModel::MyBatch(uint64_t step, int64_t rows) {
  std::vector<int64_t> x(rows * 64), y(rows * 64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (step + i) % 256, y[i] = (step + i + 1) % 256;
  TokenBatch b;
  DAGRAD_ASSIGN_OR_RETURN(b.tokens, Tensor::FromVector<int64_t>({rows, 64}, x));
  DAGRAD_ASSIGN_OR_RETURN(b.targets, Tensor::FromVector<int64_t>({rows, 64}, y));
  return b;
}

}  // namespace dagrad::examples

#endif  // DAGRAD_TESTS_MODELS_SUPPORT_HEADER_EXAMPLE_SETUPS_H_
