// The models on the fused attention op against the same models on the
// composed subgraph (nn::AttentionPath): nn::MultiheadAttention under each
// of its options, the toy transformer and the GPT give the same outputs,
// losses and gradients (to 1e-5 in float32, 1e-12 in float64), training
// steps give the same losses, and the GPT generates the same tokens with
// and without its KV cache. Parameters are the same in both: initializers
// draw by parameter path, and the paths do not depend on the path taken.
// Dropout is 0 here: every dropout node's stream is its node id, which
// differs between the two graphs (attention_composed_test.cc checks the
// op's dropout against the composed one's on a shared stream).

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "models/gpt/gpt.h"
#include "models/generator.h"
#include "models/nn/attention.h"
#include "models/toy/toy_trainer.h"
#include "models/toy/transformer.h"
#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/loss.h"
#include "ops/reduce.h"
#include "tests/support/gpt_fixtures.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using nn::AttentionPath;

// A model's graph for one path: what to compare and how to feed it.
struct BuiltMha {
  std::vector<Value> fetches;
  Feeds feeds;
};
using BuildFn = std::function<BuiltMha(Graph&, AttentionPath)>;

// Grads appends the gradients of `loss` with respect to every parameter
// and `inputs` to `b`'s fetches.
void AddGradients(Graph& g, Value loss, std::vector<Value> inputs, BuiltMha& b) {
  for (const Value& p : g.Parameters()) inputs.push_back(p);
  auto grads = Gradients(loss, inputs);
  ASSERT_OK(grads.status());
  b.fetches.push_back(loss);
  for (const Value& grad : *grads) b.fetches.push_back(grad);
}

// ExpectSamePaths builds the model on both paths and compares every fetch.
void ExpectSamePaths(const BuildFn& build, double tolerance) {
  std::vector<std::vector<Tensor>> out;
  for (AttentionPath path : {AttentionPath::kFused, AttentionPath::kComposed}) {
    Graph g;
    BuiltMha b = build(g, path);
    ASSERT_OK(g.status());
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, RunOnce(g, b.fetches, b.feeds));
    out.push_back(std::move(got));
  }
  ASSERT_EQ(out[0].size(), out[1].size());
  for (size_t i = 0; i < out[0].size(); ++i) {
    EXPECT_LE(MaxRelativeError(out[0][i], out[1][i]), tolerance) << "fetch " << i;
  }
}

struct MhaSetup {
  std::string name;
  nn::MultiheadAttentionOptions options;
  int64_t T, S;
  bool self, masks;
};
// gtest prints a parameter by its name (else byte by byte, padding too).
void PrintTo(const MhaSetup& s, std::ostream* os) { *os << s.name; }

BuiltMha BuildMha(Graph& g, AttentionPath path, const MhaSetup& s, DType d) {
  nn::MultiheadAttentionOptions o = s.options;
  o.attention = path;
  o.dtype = d;
  auto mha = nn::MultiheadAttention::Create(g, "mha", o);
  if (!mha.ok()) {
    ADD_FAILURE() << mha.status();
    return {};
  }
  const int64_t B = 2, E = o.embed_dim;
  auto dims = [&](int64_t L, int64_t w) {
    return o.batch_first ? Shape({B, L, w}) : Shape({L, B, w});
  };
  BuiltMha b;
  auto input = [&](const std::string& name, DType dtype, const Shape& shape, Tensor value) {
    Value v = g.Input(name, dtype, shape);
    b.feeds.push_back({v, std::move(value)});
    return v;
  };
  Value q = input("q", d, dims(s.T, E), Random(d, dims(s.T, E), 1, -2, 2));
  Value k = s.self ? q : input("k", d, dims(s.S, o.kdim ? o.kdim : E),
                               Random(d, dims(s.S, o.kdim ? o.kdim : E), 2, -2, 2));
  Value v = s.self ? q : input("v", d, dims(s.S, o.vdim ? o.vdim : E),
                               Random(d, dims(s.S, o.vdim ? o.vdim : E), 3));
  nn::AttentionMask mask;
  if (s.masks) {
    mask.valid_lens = input("lens", DType::kInt64, {B}, T<int64_t>({B}, {s.S - 1, 2}));
    mask.bias = input("bias", d, {s.T, s.S}, Random(d, {s.T, s.S}, 4));
    mask.keep = input("keep", DType::kBool, {B, 1, 1, s.S},
                      T<bool>({B, 1, 1, s.S}, std::vector<bool>(B * s.S, true)));
    mask.causal = true;
  }
  Value y = (*mha)(q, k, v, mask).output;
  Value r = input("r", d, y.shape(), Random(d, y.shape(), 5));
  std::vector<Value> inputs = {q};
  if (!s.self) inputs = {q, k, v};
  if (s.masks) inputs.push_back(mask.bias);
  b.fetches.push_back(y);
  AddGradients(g, Sum(y * r), inputs, b);
  return b;
}

class MhaPaths : public ::testing::TestWithParam<MhaSetup> {};

TEST_P(MhaPaths, Float32) {
  ExpectSamePaths([](Graph& g, AttentionPath p) {
    return BuildMha(g, p, GetParam(), DType::kFloat32);
  }, 1e-5);
}
TEST_P(MhaPaths, Float64) {
  ExpectSamePaths([](Graph& g, AttentionPath p) {
    return BuildMha(g, p, GetParam(), DType::kFloat64);
  }, 1e-12);
}

INSTANTIATE_TEST_SUITE_P(
    Attention, MhaPaths,
    ::testing::Values(
        MhaSetup{"self_packed", {.embed_dim = 16, .num_heads = 4}, 6, 6, true, false},
        MhaSetup{"self_masks", {.embed_dim = 16, .num_heads = 2}, 6, 6, true, true},
        MhaSetup{"cross_kdim_vdim",
                 {.embed_dim = 16, .num_heads = 2, .kdim = 5, .vdim = 7}, 3, 8, false, true},
        MhaSetup{"rotary_self", {.embed_dim = 16, .num_heads = 2, .rotary = true}, 5, 5, true,
                 true},
        MhaSetup{"rotary_cache", {.embed_dim = 16, .num_heads = 2, .rotary = true}, 2, 7, false,
                 true},
        MhaSetup{"bias_kv_zero_attn",
                 {.embed_dim = 16, .num_heads = 2, .add_bias_kv = true, .add_zero_attn = true},
                 4, 6, false, true},
        MhaSetup{"sequence_first", {.embed_dim = 16, .num_heads = 4, .batch_first = false}, 5,
                 5, true, true},
        MhaSetup{"dropout_in_eval", {.embed_dim = 16, .num_heads = 2, .dropout = 0.5}, 4, 4,
                 true, true}),
    [](const ::testing::TestParamInfo<MhaSetup>& info) { return info.param.name; });

TEST(AttentionPaths, ToyTransformerLossAndGradients) {
  ExpectSamePaths([](Graph& g, AttentionPath path) {
    auto model = models::ToyTransformer::Create(
        g, {.vocab = 11, .seq_len = 9, .dim = 16, .heads = 4, .layers = 2, .ffn = 32,
            .dropout = 0.0, .attention = path});
    BuiltMha b;
    if (!model.ok()) {
      ADD_FAILURE() << model.status();
      return b;
    }
    Value tokens = g.Input("tokens", DType::kInt64, {3, 9});
    Value lengths = g.Input("lengths", DType::kInt64, {3});
    Value targets = g.Input("targets", DType::kInt64, {3, 9});
    b.feeds = {{tokens, RandomInts({3, 9}, 1, 0, 11)},
               {lengths, T<int64_t>({3}, {9, 4, 1})},
               {targets, RandomInts({3, 9}, 2, 0, 11)}};
    Value logits = (*model)(tokens, lengths).logits;
    b.fetches.push_back(logits);
    AddGradients(g, CrossEntropy(logits, targets), {}, b);
    return b;
  }, 1e-5);
}

TEST(AttentionPaths, GptLossAndGradients) {
  ExpectSamePaths([](Graph& g, AttentionPath path) {
    auto model = models::Gpt::Create(
        g, {.vocab = 13, .block_size = 10, .dim = 16, .heads = 2, .layers = 2,
            .dtype = DType::kFloat64, .attention = path});
    BuiltMha b;
    if (!model.ok()) {
      ADD_FAILURE() << model.status();
      return b;
    }
    Value tokens = g.Input("tokens", DType::kInt64, {2, 10});
    Value targets = g.Input("targets", DType::kInt64, {2, 10});
    b.feeds = {{tokens, RandomInts({2, 10}, 3, 0, 13)}, {targets, RandomInts({2, 10}, 4, 0, 13)}};
    Value logits = (*model)(tokens);
    b.fetches.push_back(logits);
    AddGradients(g, CrossEntropy(logits, targets), {}, b);
    return b;
  }, 1e-12);
}

// Three Adam steps of the toy trainer on its task: the same losses.
TEST(AttentionPaths, ToyTrainingSteps) {
  std::vector<std::vector<double>> losses;
  for (AttentionPath path : {AttentionPath::kFused, AttentionPath::kComposed}) {
    models::TrainConfig c;
    c.model = {.vocab = 8, .seq_len = 8, .dim = 16, .heads = 2, .layers = 1, .ffn = 32,
               .dropout = 0.0, .attention = path};
    c.run.batch = 4;
    c.run.steps = 3;
    ASSERT_OK_AND_ASSIGN(auto trainer, models::ToyTrainer::Create(c));
    losses.emplace_back();
    for (int i = 0; i < 3; ++i) {
      ASSERT_OK_AND_ASSIGN(models::StepResult r, trainer->Step());
      losses.back().push_back(r.loss);
    }
  }
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(losses[0][i], losses[1][i], 1e-5 * losses[1][i]);
}

// The reference's model (tools/goldens/gpt.py) generates the same tokens on
// both paths, with its KV cache (Attention on (B, H, P + 1, Dh) keys) and
// without, greedy and sampled, past the window.
TEST(AttentionPaths, GptGeneratesTheSameTokens) {
  const std::string model = GptGoldens() + "model.safetensors";
  std::vector<std::vector<int64_t>> runs;
  for (AttentionPath path : {AttentionPath::kFused, AttentionPath::kComposed}) {
    ASSERT_OK_AND_ASSIGN(auto gen, models::Generator::Load(model, CpuDevice(), {.attention = path}));
    for (bool cache : {true, false}) {
      for (double temperature : {0.0, 0.8}) {
        ASSERT_OK_AND_ASSIGN(std::vector<int64_t> tokens,
                             gen->Generate({72, 105, 32},
                                           {.tokens = 20,
                                            .sampling = {.temperature = temperature, .seed = 5},
                                            .kv_cache = cache}));
        runs.push_back(tokens);
      }
    }
  }
  // runs[i] is greedy for even i, sampled for odd i.
  for (size_t i = 2; i < runs.size(); ++i) EXPECT_EQ(runs[i], runs[i % 2]) << "run " << i;
  EXPECT_NE(runs[0], runs[1]) << "sampling draws other tokens than greedy decoding";
}

}  // namespace
}  // namespace dagrad::testing
