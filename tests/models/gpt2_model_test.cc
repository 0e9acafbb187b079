// models::Gpt2 loaded from a Hugging Face directory (models/gpt2/) against
// what transformers computes on it (tests/data/hf_gpt2_tiny, made by
// transformers 5.17): logits, HF's shifted loss and every gradient under
// HF's names, the greedy continuation through the KV cache, bf16, fp16
// and sharded weights, dagrad's own checkpoint of the model, and GPT-2
// 124M's shapes; other configurations (odd head counts, each activation,
// n_inner, bf16 weights) against the float64 model, itself checked against
// transformers and by finite differences.

#include "models/gpt2/gpt2.h"

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "engine/io/checkpoint.h"
#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"
#include "engine/status_macros.h"
#include "models/evaluate.h"
#include "models/generator.h"
#include "models/gpt2/hf_checkpoint.h"
#include "nlohmann/json.hpp"
#include "ops/autodiff/autodiff.h"
#include "ops/loss.h"
#include "ops/shape_ops.h"
#include "tests/autodiff/support/gradcheck.h"
#include "tests/support/cli_runner.h"
#include "tests/support/gpt_fixtures.h"
#include "tests/support/test_util.h"

namespace dagrad::models {
namespace {

using ::dagrad::testing::AsDoubles;
using ::dagrad::testing::FreshDir;
using ::dagrad::testing::MaxRelativeError;
using ::dagrad::testing::HfGpt2Tiny;
using ::dagrad::testing::HfGpt2TinyWeights;
using ::dagrad::testing::MaxAbsDifference;

const SafetensorsFile& Expected() {
  static const SafetensorsFile* expected =
      new SafetensorsFile(ReadSafetensors(HfGpt2Tiny() + "/forward_backward.safetensors").value());
  return *expected;
}

const Tensor& Want(const std::string& name) {
  const Tensor* t = Expected().Find(name);
  EXPECT_NE(t, nullptr) << name;
  static const Tensor kEmpty;
  return t ? *t : kEmpty;
}

// What the model of a directory computes on the fixture's input_ids:
// logits, HF's loss (logits[:, :-1] predict labels[:, 1:]) and the
// gradients of the parameters, named.
struct Computed {
  Tensor logits, loss;
  std::vector<std::pair<std::string, Tensor>> grads;
};

absl::StatusOr<Computed> ComputeModel(const Gpt2Config& config, const SafetensorsFile& weights,
                                      const Tensor& input_ids, const Tensor& input_labels) {
  Graph g;
  DAGRAD_ASSIGN_OR_RETURN(Gpt2 model, Gpt2::Create(g, config));
  const int64_t T = input_ids.shape()[1];
  Value ids = g.Input("input_ids", DType::kInt64, input_ids.shape());
  Value labels = g.Input("labels", DType::kInt64, input_ids.shape());
  Value logits = model.Logits(ids);
  Value loss = CrossEntropy(Slice(logits, 1, 0, T - 1), Slice(labels, 1, 1, T));
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> grads, Gradients(loss, model.parameters()));
  DAGRAD_RETURN_IF_ERROR(g.status());
  Executor exec(g);
  DAGRAD_RETURN_IF_ERROR(AssignVariables(exec, model.parameters(), weights, "weights"));
  std::vector<Value> fetches = {logits, loss};
  fetches.insert(fetches.end(), grads.begin(), grads.end());
  DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile(fetches));
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                          exec.Run(*plan, {{ids, input_ids}, {labels, input_labels}}));
  Computed c{.logits = out[0], .loss = out[1]};
  const nn::NamedParameters named = model.named_parameters();
  for (size_t i = 0; i < named.size(); ++i) c.grads.emplace_back(named[i].first, out[2 + i]);
  return c;
}

// Compute: the model of the directory `dir` on the fixture's input.
absl::StatusOr<Computed> Compute(const std::string& dir) {
  DAGRAD_ASSIGN_OR_RETURN(HfGpt2Files files, ReadHfGpt2(dir));
  return ComputeModel(files.config, files.weights, Want("input_ids"), Want("labels"));
}

// FromFile: the logits, loss and grad.<name> tensors of a file, as
// Computed (those of the fixture, and of EvaluateModel).
Computed FromFile(const SafetensorsFile& f) {
  Computed c{.logits = *f.Find("logits"), .loss = *f.Find("loss")};
  for (const auto& [name, tensor] : f.tensors) {
    if (absl::StartsWith(name, "grad.")) c.grads.emplace_back(name.substr(5), tensor);
  }
  return c;
}

Computed Transformers() { return FromFile(Expected()); }

// ExpectClose checks the targets: logits within 1e-5, loss within 1e-6,
// every gradient within 1e-4 of the largest of `want`'s, and no gradient
// missing on either side.
void ExpectClose(const Computed& got, const Computed& want) {
  EXPECT_LE(MaxAbsDifference(got.logits, want.logits), 1e-5);
  EXPECT_LE(MaxAbsDifference(got.loss, want.loss), 1e-6);
  ASSERT_EQ(got.grads.size(), want.grads.size());
  std::map<std::string, const Tensor*> wanted;
  for (const auto& [name, tensor] : want.grads) wanted[name] = &tensor;
  for (const auto& [name, grad] : got.grads) {
    ASSERT_EQ(wanted.count(name), 1u) << name;
    EXPECT_LE(MaxRelativeError(grad, *wanted[name]), 1e-4) << name;
  }
}

TEST(Gpt2Model, MatchesTransformersLogitsLossAndEveryGradient) {
  ASSERT_OK_AND_ASSIGN(Computed c, Compute(HfGpt2Tiny()));
  ExpectClose(c, Transformers());  // the tied head's gradient is in wte's
}

SafetensorsFile Converted(SafetensorsFile f, DType dtype) {
  for (auto& [name, tensor] : f.tensors) tensor = ConvertFloats(tensor, dtype).value();
  return f;
}

// The float64 model, the reference for the configurations the fixture
// does not cover, is itself checked against transformers.
TEST(Gpt2Model, Float64ReferenceMatchesTransformers) {
  ASSERT_OK_AND_ASSIGN(HfGpt2Files files, ReadHfGpt2(HfGpt2Tiny()));
  files.config.dtype = DType::kFloat64;
  ASSERT_OK_AND_ASSIGN(Computed c, ComputeModel(files.config,
                                                Converted(files.weights, DType::kFloat64),
                                                Want("input_ids"), Want("labels")));
  ExpectClose(c, Transformers());
}

// A configuration the transformers fixture lacks (odd heads, n_inner,
// layer_norm_epsilon 1e-3, the exact GELU) against the PyTorch GPT-2 of
// tools/goldens/gpt2.py, itself checked against the fixture there.
TEST(Gpt2Model, MatchesPyTorchGpt2InAnotherConfiguration) {
  const std::string dir = std::string(DAGRAD_TEST_DATA_DIR) + "/goldens/gpt2_odd";
  ASSERT_OK_AND_ASSIGN(SafetensorsFile want, ReadSafetensors(dir + "/forward_backward.safetensors"));
  ASSERT_OK_AND_ASSIGN(HfGpt2Files files, ReadHfGpt2(dir));
  ASSERT_OK_AND_ASSIGN(Computed got, ComputeModel(files.config, files.weights,
                                                  *want.Find("input_ids"), *want.Find("labels")));
  ExpectClose(got, FromFile(want));
}

// RandomWeights: every parameter of `config`'s model uniform in [-0.5,
// 0.5), stored as `dtype`.
SafetensorsFile RandomWeights(const Gpt2Config& config, uint64_t seed, DType dtype) {
  Graph scratch;
  SafetensorsFile f;
  for (const auto& [name, value] : Gpt2::Create(scratch, config)->named_parameters()) {
    f.tensors.emplace_back(name, testing::Random(dtype, value.shape(), seed++, -0.5, 0.5));
  }
  return f;
}

// Odd head counts and widths, each activation, a custom n_inner, and
// bfloat16 weights: float32 within the targets of the float64 model on
// the same weights.
TEST(Gpt2Model, OtherConfigurationsMatchTheFloat64Reference) {
  const std::vector<Gpt2Config> configs = {
      {.vocab = 50, .positions = 12, .dim = 30, .heads = 5, .layers = 3, .inner = 70,
       .activation = "gelu"},
      {.vocab = 33, .positions = 9, .dim = 21, .heads = 7, .layers = 1},
      {.vocab = 40, .positions = 16, .dim = 16, .heads = 1, .layers = 2, .activation = "relu"},
  };
  uint64_t seed = 1;
  for (const Gpt2Config& config : configs) {
    for (DType stored : {DType::kFloat32, DType::kBFloat16}) {
      SCOPED_TRACE(absl::StrCat(config.dim, "/", config.heads, " ", DTypeName(stored)));
      const SafetensorsFile weights = RandomWeights(config, seed += 100, stored);
      const Tensor ids = testing::RandomInts({2, config.positions}, seed, 0, config.vocab);
      Tensor labels = testing::RandomInts({2, config.positions}, seed + 1, 0, config.vocab);
      for (int t = 0; t < 3; ++t) labels.data<int64_t>()[config.positions + t] = -100;
      ASSERT_OK_AND_ASSIGN(Computed got, ComputeModel(config, weights, ids, labels));
      Gpt2Config reference = config;
      reference.dtype = DType::kFloat64;
      ASSERT_OK_AND_ASSIGN(Computed want, ComputeModel(reference,
                                                       Converted(weights, DType::kFloat64),
                                                       ids, labels));
      ExpectClose(got, want);
    }
  }
}

TEST(Gpt2Model, GradcheckWholeModelFloat64) {
  ASSERT_OK(testing::GradCheck(
      [](testing::CaseBuilder& b) {
        auto model = Gpt2::Create(b.graph(), {.vocab = 7, .positions = 4, .dim = 6, .heads = 3,
                                              .layers = 2, .inner = 5,
                                              .dtype = DType::kFloat64});
        if (!model.ok()) return b.Out(b.graph().Error(model.status()));
        Value tokens = b.Input("tokens", DType::kInt64, {2, 4}, 0, 7);
        Value targets = b.Input("targets", DType::kInt64, {2, 4}, 0, 7);
        b.Out(CrossEntropy(model->Logits(tokens), targets));
      },
      {}, /*training=*/false, /*seed=*/3));
}

TEST(Gpt2Model, ParametersAreHfStateDictInOrderWithConv1DLayout) {
  Graph g;
  ASSERT_OK_AND_ASSIGN(HfGpt2 hf, LoadHfGpt2(g, HfGpt2Tiny()));
  const nn::NamedParameters named = hf.model->named_parameters();
  ASSERT_EQ(named.size(), hf.weights.tensors.size());
  for (const auto& [name, value] : named) {
    const Tensor* t = hf.weights.Find(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->shape(), value.shape()) << name;
  }
  EXPECT_EQ(named[0].first, "transformer.wte.weight");
  EXPECT_EQ(named[4].first, "transformer.h.0.attn.c_attn.weight");
  EXPECT_EQ(named[4].second.shape(), Shape({64, 192}));  // (in, out), as stored
  EXPECT_EQ(named.back().first, "transformer.ln_f.bias");
  EXPECT_EQ(g.Parameters().size(), named.size());  // lm_head declares nothing
}

// EvaluateModel (`dagrad eval`) on the weights as a checkpoint: its targets
// are aligned with the logits, so HF's labels shifted left (the last -100)
// give HF's loss and gradients.
TEST(Gpt2Model, EvaluateModelWithShiftedTargetsGivesTransformersResults) {
  ASSERT_OK_AND_ASSIGN(HfGpt2Files files, ReadHfGpt2(HfGpt2Tiny()));
  const Tensor& labels = Want("labels");
  const int64_t B = labels.shape()[0], T = labels.shape()[1];
  std::vector<int64_t> targets(B * T, -100);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t + 1 < T; ++t) {
      targets[b * T + t] = labels.data<int64_t>()[b * T + t + 1];
    }
  }
  SafetensorsFile in;
  in.tensors.emplace_back("tokens", Want("input_ids"));
  in.tensors.emplace_back("targets", *Tensor::FromVector<int64_t>({B, T}, targets));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile out, EvaluateModel(files.weights, HfGpt2Tiny(), in, "in"));
  ExpectClose(FromFile(out), Transformers());
}

TEST(Gpt2Model, GreedyEqualsTransformersWithTheKvCache) {
  ASSERT_OK_AND_ASSIGN(std::string text, ReadFile(HfGpt2Tiny() + "/greedy40.json"));
  const nlohmann::json greedy = nlohmann::json::parse(text);
  const auto prompt = greedy["prompt"].get<std::vector<int64_t>>();
  const auto want = greedy["greedy"].get<std::vector<int64_t>>();
  ASSERT_OK_AND_ASSIGN(HfGpt2Files files, ReadHfGpt2(HfGpt2Tiny()));
  ASSERT_OK_AND_ASSIGN(auto gen, Generator::Create(Gpt2::Builder(files.config), files.weights));
  ASSERT_TRUE(gen->model().kv_cache().has_value());
  for (bool cache : {true, false}) {
    ASSERT_OK_AND_ASSIGN(
        std::vector<int64_t> more,
        gen->Generate(prompt, {.tokens = static_cast<int64_t>(want.size() - prompt.size()),
                               .sampling = {.temperature = 0},
                               .kv_cache = cache}));
    std::vector<int64_t> got = prompt;
    got.insert(got.end(), more.begin(), more.end());
    EXPECT_EQ(got, want) << (cache ? "with" : "without") << " the cache";
  }
}

// CopyWith writes a directory of the fixture's config.json and `weights`
// (model.safetensors, or shards and their index).
std::string CopyWith(const std::string& name, const SafetensorsFile& weights, int shards = 1) {
  const std::string dir = FreshDir(name);
  std::filesystem::copy_file(HfGpt2Tiny() + "/config.json", dir + "/config.json");
  if (shards == 1) {
    EXPECT_TRUE(WriteSafetensors(dir + "/model.safetensors", weights).ok());
    return dir;
  }
  std::vector<SafetensorsFile> parts(shards);
  nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", nlohmann::json::object()}};
  for (size_t i = 0; i < weights.tensors.size(); ++i) {
    const std::string shard = absl::StrCat("model-0000", i % shards + 1, "-of-0000", shards,
                                           ".safetensors");
    parts[i % shards].tensors.push_back(weights.tensors[i]);
    index["weight_map"][weights.tensors[i].first] = shard;
  }
  for (int s = 0; s < shards; ++s) {
    EXPECT_TRUE(WriteSafetensors(
        absl::StrCat(dir, "/model-0000", s + 1, "-of-0000", shards, ".safetensors"), parts[s])
                    .ok());
  }
  testing::WriteBytes(dir + "/model.safetensors.index.json", index.dump());
  return dir;
}

TEST(Gpt2Model, ShardedWeightsGiveTransformersLogits) {
  ASSERT_OK_AND_ASSIGN(Computed c, Compute(CopyWith("gpt2_sharded", HfGpt2TinyWeights(), 3)));
  EXPECT_LE(MaxAbsDifference(c.logits, Want("logits")), 1e-5);
}

// 16-bit weights load widened into float32 parameters: the logits are
// those of the rounded weights, within the rounding's reach of float32's
// (bf16 keeps 8 bits, fp16 11).
TEST(Gpt2Model, Bf16AndFp16WeightsLoadWithinTheirPrecision) {
  const double max_logit = MaxAbsDifference(Want("logits"), *Tensor::Zeros(DType::kFloat32,
                                                                           Want("logits").shape()));
  for (auto [dtype, bound] : {std::pair{DType::kBFloat16, 1e-2}, {DType::kFloat16, 1e-3}}) {
    const SafetensorsFile weights = Converted(HfGpt2TinyWeights(), dtype);
    ASSERT_OK_AND_ASSIGN(Computed c, Compute(CopyWith("gpt2_16bit", weights)));
    const double error = MaxAbsDifference(c.logits, Want("logits")) / max_logit;
    EXPECT_LE(error, bound) << DTypeName(dtype);
    EXPECT_GT(error, 0) << DTypeName(dtype) << ": the weights were not rounded";
  }
}

// F64 weights load as transformers loads them, rounded to float32: the
// fixture's float32 weights widened give its logits (they were refused,
// blaming config.json).
TEST(Gpt2Model, Float64WeightsLoadRoundedToFloat32) {
  const SafetensorsFile weights = Converted(HfGpt2TinyWeights(), DType::kFloat64);
  ASSERT_OK_AND_ASSIGN(Computed c, Compute(CopyWith("gpt2_f64", weights)));
  EXPECT_LE(MaxAbsDifference(c.logits, Want("logits")), 1e-5);
}

// The weights saved as dagrad's checkpoint (metadata model=gpt2) rebuild
// the model through LoadLanguageModel, as `dagrad eval` and `generate` do.
TEST(Gpt2Model, SavedCheckpointReloadsThroughLoadLanguageModel) {
  ASSERT_OK_AND_ASSIGN(HfGpt2Files files, ReadHfGpt2(HfGpt2Tiny()));
  const std::string path = FreshDir("gpt2_ckpt") + "/model.safetensors";
  ASSERT_OK(WriteCheckpoint(path, files.weights));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile ckpt, ReadCheckpoint(path));
  Graph g;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LanguageModel> model, LoadLanguageModel(g, ckpt, path));
  EXPECT_EQ(model->Metadata(), files.config.ToMetadata());
  Value ids = g.Input("ids", DType::kInt64, Want("input_ids").shape());
  Value logits = model->Logits(ids);
  Executor exec(g);
  ASSERT_OK(AssignVariables(exec, model->parameters(), ckpt, path));
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({logits}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, exec.Run(*plan, {{ids, Want("input_ids")}}));
  EXPECT_LE(MaxAbsDifference(out[0], Want("logits")), 1e-5);
}

TEST(Gpt2Model, Gpt2SmallShapeBuildsAndRunsWithRandomWeights) {
  const Gpt2Config small;  // GPT-2 124M: 768 wide, 12 layers and heads
  ASSERT_EQ(small.vocab, 50257);
  ASSERT_EQ(small.positions, 1024);
  Graph g;
  ASSERT_OK_AND_ASSIGN(Gpt2 model, Gpt2::Create(g, small));
  int64_t count = 0;
  for (const Value& p : model.parameters()) count += p.shape().num_elements();
  EXPECT_EQ(count, 124439808);  // GPT2LMHeadModel("gpt2")'s num_parameters()
  Value ids = g.Input("ids", DType::kInt64, {1, 3});
  Value logits = model.Logits(ids);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                       testing::RunOnce(g, {logits},
                                        {{ids, *Tensor::FromVector<int64_t>({1, 3}, {0, 50256, 7})}}));
  EXPECT_EQ(out[0].shape(), Shape({1, 3, 50257}));
  for (double v : AsDoubles(out[0])) ASSERT_TRUE(std::isfinite(v));
}

}  // namespace
}  // namespace dagrad::models
