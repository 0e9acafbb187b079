// The init options of the dagrad::nn layers reach their parameters (read
// back from an executor), and GPT-2's scheme (models::Gpt2Std, InitGpt2)
// gives each parameter the std that nanoGPT's _init_weights gives it:
//
//   def _init_weights(self, module):             # nanoGPT, model.py
//       if isinstance(module, nn.Linear):
//           torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
//           if module.bias is not None: torch.nn.init.zeros_(module.bias)
//       elif isinstance(module, nn.Embedding):
//           torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
//   for pn, p in self.named_parameters():        # GPT.__init__
//       if pn.endswith('c_proj.weight'):
//           torch.nn.init.normal_(p, mean=0.0, std=0.02/math.sqrt(2 * config.n_layer))
//
// LayerNorms keep PyTorch's ones and zeros.

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "engine/executor.h"
#include "engine/random_tensor.h"
#include "models/gpt/gpt.h"
#include "models/nn/nn.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

std::vector<double> Read(Executor& exec, Value v) {
  absl::StatusOr<Tensor> t = exec.Read(v);
  EXPECT_TRUE(t.ok()) << v.path() << ": " << t.status();
  return t.ok() ? AsDoubles(*t) : std::vector<double>{};
}

// ExpectFilled checks that every element of `v` is `value`.
void ExpectFilled(Executor& exec, Value v, double value) {
  const std::vector<double> x = Read(exec, v);
  ASSERT_FALSE(x.empty()) << v.path();
  EXPECT_EQ(x, std::vector<double>(x.size(), value)) << v.path();
}

// ExpectStd checks a zero-mean normal sample's std within 5 standard errors
// (the std's is std / sqrt(2 n)) and its mean within 5 of the mean's.
void ExpectStd(Executor& exec, Value v, double std) {
  const std::vector<double> x = Read(exec, v);
  ASSERT_FALSE(x.empty()) << v.path();
  const double n = x.size();
  double sum = 0, sq = 0;
  for (double e : x) {
    sum += e;
    sq += e * e;
  }
  EXPECT_NEAR(sum / n, 0.0, 5 * std / std::sqrt(n)) << v.path();
  EXPECT_NEAR(std::sqrt(sq / n), std, 5 * std / std::sqrt(2 * n)) << v.path();
}

TEST(NnInit, MultiheadAttentionOptionsReachTheParameters) {
  Graph g;
  ASSERT_OK_AND_ASSIGN(nn::MultiheadAttention packed,
                       nn::MultiheadAttention::Create(g, "packed", {
                           .embed_dim = 8, .num_heads = 2, .add_bias_kv = true,
                           .in_proj_weight_init = Initializer::Constant(0.125),
                           .in_proj_bias_init = Initializer::Constant(0.25),
                           .out_proj_weight_init = Initializer::Constant(0.375),
                           .out_proj_bias_init = Initializer::Constant(0.5),
                           .bias_kv_init = Initializer::Constant(0.625)}));
  ASSERT_OK_AND_ASSIGN(nn::MultiheadAttention split,
                       nn::MultiheadAttention::Create(g, "split", {
                           .embed_dim = 8, .num_heads = 2, .kdim = 4, .vdim = 6,
                           .in_proj_weight_init = Initializer::Constant(0.75)}));
  Executor exec(g);
  // Values a float32 holds exactly.
  const std::vector<double> want = {0.125, 0.25, 0.625, 0.625, 0.375, 0.5};
  const nn::NamedParameters named = packed.named_parameters();
  ASSERT_EQ(named.size(), want.size());
  for (size_t i = 0; i < named.size(); ++i) ExpectFilled(exec, named[i].second, want[i]);
  for (const auto& [name, p] : split.named_parameters()) {
    if (absl::EndsWith(name, "proj_weight")) ExpectFilled(exec, p, 0.75);
    if (absl::EndsWith(name, "bias")) ExpectFilled(exec, p, 0.0);  // PyTorch's default
  }
}

TEST(NnInit, TransformerBlockOptionsReachEverySublayer) {
  Graph g;
  ASSERT_OK_AND_ASSIGN(nn::TransformerBlock block,
                       nn::TransformerBlock::Create(g, "block", {
                           .d_model = 8, .nhead = 2, .dim_feedforward = 16,
                           .cross_attention = true,
                           .weight_init = Initializer::Constant(1.5),
                           .residual_weight_init = Initializer::Constant(2.5),
                           .bias_init = Initializer::Constant(3.5),
                           .norm_weight_init = Initializer::Constant(4.5),
                           .norm_bias_init = Initializer::Constant(5.5)}));
  Executor exec(g);
  int checked = 0;
  for (const auto& [name, p] : block.named_parameters()) {
    double want = 1.5;
    if (absl::StartsWith(name, "norm")) {
      want = absl::EndsWith(name, "weight") ? 4.5 : 5.5;
    } else if (absl::EndsWith(name, "bias")) {
      want = 3.5;
    } else if (name == "self_attn.out_proj.weight" || name == "multihead_attn.out_proj.weight" ||
               name == "linear2.weight") {
      want = 2.5;
    }
    ExpectFilled(exec, p, want);
    ++checked;
  }
  EXPECT_EQ(checked, 18);  // 2 attentions of 4, 2 linears of 2, 3 norms of 2
}

TEST(NnInit, WeightInitStandsForTheResidualsWhenTheyHaveNone) {
  Graph g;
  ASSERT_OK_AND_ASSIGN(nn::TransformerBlock block,
                       nn::TransformerBlock::Create(g, "block", {
                           .d_model = 8, .nhead = 2, .dim_feedforward = 16,
                           .weight_init = Initializer::Constant(0.25)}));
  Executor exec(g);
  for (const auto& [name, p] : block.named_parameters()) {
    if (absl::StartsWith(name, "norm")) {
      ExpectFilled(exec, p, absl::EndsWith(name, "weight") ? 1.0 : 0.0);
    } else if (absl::EndsWith(name, "weight")) {
      ExpectFilled(exec, p, 0.25);
    }
  }
}

TEST(NnInit, LayerNormAndMlpOptions) {
  Graph g;
  ASSERT_OK_AND_ASSIGN(nn::LayerNorm ln, nn::LayerNorm::Create(g, "ln", {
                           .normalized_shape = 4, .weight_init = Initializer::Constant(2),
                           .bias_init = Initializer::Constant(-1)}));
  ASSERT_OK_AND_ASSIGN(nn::Mlp mlp, nn::Mlp::Create(g, "mlp", {
                           .in_features = 4, .hidden_features = 8,
                           .weight_init = Initializer::Constant(0.75),
                           .bias_init = Initializer::Zeros()}));
  Executor exec(g);
  ExpectFilled(exec, ln.weight(), 2);
  ExpectFilled(exec, ln.bias(), -1);
  ExpectFilled(exec, mlp.fc1().weight(), 0.75);
  ExpectFilled(exec, mlp.fc2().weight(), 0.75);
  ExpectFilled(exec, mlp.fc1().bias(), 0);
  ExpectFilled(exec, mlp.fc2().bias(), 0);
}

TEST(NnInit, BadInitializersAreErrors) {
  Graph g;
  EXPECT_STATUS(nn::MultiheadAttention::Create(g, "a", {
                    .embed_dim = 8, .num_heads = 2,
                    .out_proj_weight_init = Initializer::Normal(0, -1)}).status(),
                absl::StatusCode::kInvalidArgument, "stddev >= 0");
  EXPECT_STATUS(nn::TransformerBlock::Create(g, "b", {
                    .d_model = 8, .nhead = 2,
                    .bias_init = Initializer::XavierUniform()}).status(),
                absl::StatusCode::kInvalidArgument, "rank >= 2");
}

// The std per parameter of a nanoGPT model with n_layer = 2, derived by
// hand from _init_weights (banner): 0.02, c_proj weights 0.02 / sqrt(4),
// biases 0, LayerNorm weights untouched.
TEST(InitGpt2, StdPerNameIsNanoGptS) {
  struct Row {
    std::string name;
    Shape shape;
    std::optional<double> want;
  };
  const std::vector<Row> table = {
      {"transformer.wte.weight", {65, 64}, 0.02},
      {"transformer.wpe.weight", {32, 64}, 0.02},
      {"transformer.h.0.ln_1.weight", {64}, std::nullopt},
      {"transformer.h.0.ln_1.bias", {64}, 0.0},
      {"transformer.h.0.attn.c_attn.weight", {192, 64}, 0.02},
      {"transformer.h.0.attn.c_attn.bias", {192}, 0.0},
      {"transformer.h.0.attn.c_proj.weight", {64, 64}, 0.01},
      {"transformer.h.0.attn.c_proj.bias", {64}, 0.0},
      {"transformer.h.1.mlp.c_fc.weight", {256, 64}, 0.02},
      {"transformer.h.1.mlp.c_proj.weight", {64, 256}, 0.01},
      {"transformer.ln_f.weight", {64}, std::nullopt},
      // torch.nn's and timm's names for the same projections.
      {"h.0.self_attn.in_proj_weight", {192, 64}, 0.02},
      {"h.0.self_attn.in_proj_bias", {192}, 0.0},
      {"h.0.self_attn.out_proj.weight", {64, 64}, 0.01},
      {"h.0.linear1.weight", {256, 64}, 0.02},
      {"h.0.linear2.weight", {64, 256}, 0.01},
      {"blocks.0.mlp.fc2.weight", {64, 256}, 0.01},
  };
  for (const Row& row : table) {
    const std::optional<double> got = models::Gpt2Std(row.name, row.shape, 2);
    ASSERT_EQ(got.has_value(), row.want.has_value()) << row.name;
    if (got) EXPECT_NEAR(*got, *row.want, 1e-15) << row.name;
  }
}

TEST(InitGpt2, OneCallInitialisesAModelOfNnLayers) {
  constexpr int64_t kLayers = 2, E = 64;
  Graph g;
  ASSERT_OK_AND_ASSIGN(nn::Embedding wte,
                       nn::Embedding::Create(g, "wte", {.num_embeddings = 100,
                                                        .embedding_dim = E}));
  std::vector<nn::TransformerBlock> blocks;
  for (int64_t l = 0; l < kLayers; ++l) {
    ASSERT_OK_AND_ASSIGN(blocks.emplace_back(),
                         nn::TransformerBlock::Create(g, "h/" + std::to_string(l),
                                                      {.d_model = E, .nhead = 4,
                                                       .dim_feedforward = 4 * E,
                                                       .norm_first = true}));
  }
  Executor exec(g);
  ASSERT_OK(models::InitGpt2(exec, g.Parameters(), kLayers));
  const double proj = 0.02 / std::sqrt(2.0 * kLayers);
  ExpectStd(exec, wte.weight(), 0.02);
  for (const nn::TransformerBlock& block : blocks) {
    for (const auto& [name, p] : block.named_parameters()) {
      if (absl::StartsWith(name, "norm")) {
        ExpectFilled(exec, p, absl::EndsWith(name, "weight") ? 1.0 : 0.0);
      } else if (absl::EndsWith(name, "bias")) {
        ExpectFilled(exec, p, 0.0);
      } else if (name == "self_attn.out_proj.weight" || name == "linear2.weight") {
        ExpectStd(exec, p, proj);
      } else {
        ExpectStd(exec, p, 0.02);
      }
    }
  }
}

TEST(InitGpt2, AgreesWithModelsGpt) {
  // models::Gpt is built with GPT-2's init; every parameter's sample std
  // is the table's.
  Graph g;
  ASSERT_OK_AND_ASSIGN(models::Gpt gpt,
                       models::Gpt::Create(g, {.block_size = 64, .dim = 64, .layers = 3}));
  Executor exec(g);
  for (const auto& [name, p] : gpt.named_parameters()) {
    const std::optional<double> sd = models::Gpt2Std(name, p.shape(), 3);
    if (!sd) {
      ExpectFilled(exec, p, 1.0);
    } else if (*sd == 0) {
      ExpectFilled(exec, p, 0.0);
    } else {
      ExpectStd(exec, p, *sd);
    }
  }
}

TEST(InitGpt2, Errors) {
  Graph g;
  Value w = g.Parameter("w", {4, 4}, Initializer::Zeros());
  Executor exec(g);
  EXPECT_STATUS(models::InitGpt2(exec, {w}, 0), absl::StatusCode::kInvalidArgument,
                "layers must be >= 1");
  Graph other;
  Value v = other.Parameter("v", {4, 4}, Initializer::Zeros());
  EXPECT_STATUS(models::InitGpt2(exec, {w, v}, 1), absl::StatusCode::kInvalidArgument,
                "not a variable of this executor");
  ExpectFilled(exec, w, 0.0);  // the error came before any write
}

}  // namespace
}  // namespace dagrad::testing
