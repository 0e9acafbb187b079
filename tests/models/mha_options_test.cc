// MultiheadAttention's PyTorch options beyond the goldens (mha_test.cc
// holds the parity with torch for each of them): add_bias_kv's parameters
// and initialisation, the padding of masks for appended keys, the errors of
// sequence-first inputs and of the float-mask converters, and
// (finite-difference checks of add_bias_kv, add_zero_attn and batch_first
// are configs of the multi_head_attention case, model_cases.cc).

#include <cmath>

#include "models/nn/attention.h"
#include "ops/elementwise.h"
#include "ops/shape_ops.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using nn::AttentionOutput;
using nn::AttentionWeights;
using nn::MultiheadAttention;

TEST(MhaErrors, SequenceFirstInputsAndAppendedKeysMasks) {
  Graph g;
  ASSERT_OK_AND_ASSIGN(MultiheadAttention seq_first,
                       MultiheadAttention::Create(g, "seq", {.embed_dim = 8, .num_heads = 2,
                                                             .batch_first = false}));
  Value q = g.Input("q", DType::kFloat32, {3, 2, 8});  // (T, B, E)
  Value kv = g.Input("kv", DType::kFloat32, {4, 3, 8});  // batch 3 != 2
  EXPECT_STATUS(seq_first(q, kv, kv).output.status(), absl::StatusCode::kInvalidArgument,
                "expected query (T, B, 8), key (S, B, 8), value (S, B, 8), got (3, 2, 8), "
                "(4, 3, 8), (4, 3, 8)");
  ASSERT_OK_AND_ASSIGN(MultiheadAttention appended,
                       MultiheadAttention::Create(g, "app", {.embed_dim = 8, .num_heads = 2,
                                                             .add_zero_attn = true}));
  Value x = g.Input("x", DType::kFloat32, {2, 3, 8});
  Value keep = g.Input("keep", DType::kBool, {2, 1, 1, 5});
  EXPECT_STATUS(appended(x, x, x, {.keep = keep}).output.status(),
                absl::StatusCode::kInvalidArgument,
                "mask keep (2, 1, 1, 5) must have S = 3 or 1 keys on its last axis");
  Value bias = g.Input("bias", DType::kFloat32, {3, 2});
  EXPECT_STATUS(appended(x, x, x, {.bias = bias}).output.status(),
                absl::StatusCode::kInvalidArgument, "mask bias (3, 2) must have S = 3");
  Value lens = g.Input("lens", DType::kFloat32, {2});
  EXPECT_STATUS(appended(x, x, x, {.valid_lens = lens}).output.status(),
                absl::StatusCode::kInvalidArgument,
                "valid_lens must be int32/int64 (2) or (2, 3), got float32 (2,)");
}

TEST(MhaErrors, MaskConvertersNameDtypeAndShape) {
  Graph g;
  auto status = [](Value v) { return v.status(); };
  EXPECT_STATUS(status(nn::BiasFromAttnMask(g.Input("a", DType::kBool, {5, 7}), 4)),
                absl::StatusCode::kInvalidArgument,
                "attn_mask must be float32/float64 (T, S) or (B*4, T, S), got bool (5, 7)");
  EXPECT_STATUS(status(nn::BiasFromAttnMask(g.Input("b", DType::kFloat32, {6, 5, 7}), 4)),
                absl::StatusCode::kInvalidArgument, "got float32 (6, 5, 7)");
  EXPECT_STATUS(status(nn::BiasFromAttnMask(g.Input("c", DType::kFloat32, {1, 8, 5, 7}), 4)),
                absl::StatusCode::kInvalidArgument, "got float32 (1, 8, 5, 7)");
  EXPECT_STATUS(status(nn::BiasFromKeyPaddingMask(g.Input("d", DType::kBool, {2, 7}))),
                absl::StatusCode::kInvalidArgument,
                "key_padding_mask must be float32/float64 (B, S), got bool (2, 7)");
  EXPECT_STATUS(status(nn::BiasFromKeyPaddingMask(g.Input("e", DType::kFloat64, {7}))),
                absl::StatusCode::kInvalidArgument, "got float64 (7,)");
  EXPECT_STATUS(status(nn::BiasFromAttnMask(g.Input("zero_heads", DType::kFloat32, {8, 5, 7}), 0)),
                absl::StatusCode::kInvalidArgument,
                "num_heads must be >= 1 to split an attn_mask by, got 0");
  EXPECT_STATUS(status(nn::KeepFromAttnMask(g.Input("negative_heads", DType::kBool, {8, 5, 7}), -2)),
                absl::StatusCode::kInvalidArgument,
                "num_heads must be >= 1 to split an attn_mask by, got -2");
  Value per_head = nn::BiasFromAttnMask(g.Input("f", DType::kFloat32, {8, 5, 7}), 4);
  ASSERT_OK(per_head.status());
  EXPECT_EQ(per_head.shape(), Shape({2, 4, 5, 7}));
  Value shared = nn::BiasFromAttnMask(g.Input("h", DType::kFloat64, {5, 7}), 4);
  ASSERT_OK(shared.status());
  EXPECT_EQ(shared.shape(), Shape({5, 7}));
  Value padding = nn::BiasFromKeyPaddingMask(g.Input("i", DType::kFloat32, {2, 7}));
  ASSERT_OK(padding.status());
  EXPECT_EQ(padding.shape(), Shape({2, 1, 1, 7}));
}

TEST(MhaOptions, BiasKvParametersAreNamedShapedAndXavierNormal) {
  constexpr int64_t E = 1024;
  Graph g;
  ASSERT_OK_AND_ASSIGN(MultiheadAttention mha,
                       MultiheadAttention::Create(g, "mha", {.embed_dim = E, .num_heads = 8,
                                                             .add_bias_kv = true}));
  std::vector<std::string> paths;
  for (const Value& p : mha.parameters()) paths.push_back(p.path());
  EXPECT_EQ(paths, (std::vector<std::string>{"mha/in_proj_weight", "mha/in_proj_bias",
                                             "mha/bias_k", "mha/bias_v", "mha/out_proj/weight",
                                             "mha/out_proj/bias"}));
  const Value bias_k = mha.parameters()[2], bias_v = mha.parameters()[3];
  EXPECT_EQ(bias_k.shape(), Shape({1, 1, E}));
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {bias_k, bias_v}, {}));
  // xavier_normal_ on (1, 1, E): N(0, 2 / (fan_in + fan_out)) = N(0, 1/E).
  for (const Tensor& t : out) {
    double sum = 0, sum_sq = 0;
    for (double v : AsDoubles(t)) {
      sum += v;
      sum_sq += v * v;
    }
    EXPECT_NEAR(sum / E, 0.0, 4.0 / E);                        // 4 standard errors
    EXPECT_NEAR(std::sqrt(sum_sq / E), 1.0 / std::sqrt(E), 0.1 / std::sqrt(E));
  }
  EXPECT_FALSE(AsDoubles(out[0]) == AsDoubles(out[1])) << "bias_k and bias_v drawn apart";
}

TEST(MhaOptions, AppendedKeysPadMasksThatBroadcastOverKeys) {
  // A bias (T, 1) and a keep (B, 1, 1, 1) broadcast over the S keys; padded
  // for the appended keys they act as their explicit (T, S) and (B, 1, 1, S)
  // forms do.
  constexpr int64_t B = 2, T = 3, S = 4, E = 4;  // T shadows testing::T
  Graph g;
  ASSERT_OK_AND_ASSIGN(
      MultiheadAttention mha,
      MultiheadAttention::Create(g, "mha", {.embed_dim = E, .num_heads = 2,
                                            .dtype = DType::kFloat64, .add_bias_kv = true,
                                            .add_zero_attn = true}));
  Value q = g.Input("q", DType::kFloat64, {B, T, E});
  Value kv = g.Input("kv", DType::kFloat64, {B, S, E});
  Value bias = g.Input("bias", DType::kFloat64, {T, 1});
  Value keep = g.Input("keep", DType::kBool, {B, 1, 1, 1});
  AttentionOutput narrow = mha(q, kv, kv, {.keep = keep, .bias = bias}, AttentionWeights::kPerHead);
  AttentionOutput wide = mha(q, kv, kv,
                             {.keep = BroadcastTo(keep, Shape({B, 1, 1, S})),
                              .bias = BroadcastTo(bias, Shape({T, S}))},
                             AttentionWeights::kPerHead);
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {narrow.weights, wide.weights},
                                         {{q, Random(DType::kFloat64, {B, T, E}, 1)},
                                          {kv, Random(DType::kFloat64, {B, S, E}, 2)},
                                          {bias, Random(DType::kFloat64, {T, 1}, 3)},
                                          {keep, testing::T<bool>({B, 1, 1, 1}, {true, false})}}));
  EXPECT_EQ(out[0].shape(), Shape({B, 2, T, S + 2}));
  ExpectAllClose(out[0], AsDoubles(out[1]), 0, 0, "weights");
  // Batch 1 keeps none of its S keys: all its weight is on the two appended.
  const std::vector<double> w = AsDoubles(out[0]);
  for (int64_t row = 0; row < 2 * T; ++row) {
    const double* r = &w[(2 * T + row) * (S + 2)];
    for (int64_t s = 0; s < S; ++s) EXPECT_EQ(r[s], 0.0);
    EXPECT_NEAR(r[S] + r[S + 1], 1.0, 1e-12);
  }
}

// ---- finite differences ---------------------------------------------------------


}  // namespace
}  // namespace dagrad::testing
