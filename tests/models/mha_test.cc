// MultiheadAttention: parity with torch.nn.MultiheadAttention goldens
// (outputs, weights, gradients of inputs and parameters), the seed
// notebooks' cases and the classic bugs (finite-difference checks of the
// whole subgraph: the multi_head_attention case, model_cases.cc).

#include <cmath>
#include <set>

#include "engine/executor.h"
#include "models/nn/attention.h"
#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/op_util.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"
#include "ops/softmax.h"
#include "tests/support/golden.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using nn::AttentionMask;
using nn::AttentionOutput;
using nn::AttentionWeights;
using nn::MultiheadAttention;

// Module-relative state_dict name of a parameter under scope "mha".
std::string StateName(const Value& p) {
  std::string name = p.path().substr(std::string("mha/").size());
  std::replace(name.begin(), name.end(), '/', '.');
  return name;
}

// How a parity case passes the golden's masks: a set of these flags, each
// naming a golden input and the dagrad converter it goes through.
enum MaskFlag : int {
  kKeyPadding = 1,        // bool key_padding_mask -> keep (KeepFromKeyPaddingMask)
  kKeyPaddingFloat = 2,   // float key_padding_mask -> bias (BiasFromKeyPaddingMask)
  kLengths = 4,           // lengths -> valid_lens
  kCausal = 8,            // causal = true (the golden's attn_mask is the causal one)
  kAttnMaskBool = 16,     // bool attn_mask -> keep (KeepFromAttnMask)
  kAttnMaskFloat = 32,    // float attn_mask -> bias (BiasFromAttnMask)
};

struct ParityCase {
  const char* name;
  int masks = 0;  // MaskFlags
};

void PrintTo(const ParityCase& c, std::ostream* os) { *os << c.name << " masks " << c.masks; }

class MhaParity : public ::testing::TestWithParam<ParityCase> {};

std::string ParityName(const ::testing::TestParamInfo<ParityCase>& info) {
  static const char* const kFlags[] = {"key_padding", "key_padding_float", "lengths",
                                       "causal", "attn_mask_bool", "attn_mask_float"};
  std::string name = info.param.name;
  for (int i = 0; i < 6; ++i) {
    if (info.param.masks & (1 << i)) name += std::string("_") + kFlags[i];
  }
  return name;
}

Value Both(Value a, Value b, Value (*combine)(Value, Value)) {
  return a.is_null() ? b : combine(a, b);
}

TEST_P(MhaParity, MatchesTorchOutputsAndGradients) {
  const ParityCase pc = GetParam();
  ASSERT_OK_AND_ASSIGN(GoldenCase golden, LoadGolden("mha", pc.name));
  const auto& attrs = golden.attrs;
  const int64_t E = attrs["E"], H = attrs["H"];
  const bool self_attn = attrs["self_attn"];
  const bool need_weights = attrs["need_weights"];
  Graph g;
  ASSERT_OK_AND_ASSIGN(
      MultiheadAttention mha,
      MultiheadAttention::Create(g, "mha",
                                 {.embed_dim = E, .num_heads = H, .kdim = attrs["kdim"],
                                  .vdim = attrs["vdim"],
                                  .add_bias_kv = attrs.value("add_bias_kv", false),
                                  .add_zero_attn = attrs.value("add_zero_attn", false),
                                  .batch_first = attrs.value("batch_first", true)}));
  const Tensor& qv = golden.inputs.at("query");
  Value query = g.Input("query", DType::kFloat32, qv.shape());
  Value key = query, value = query;
  Feeds feeds = {{query, qv}};
  if (!self_attn) {
    key = g.Input("key", DType::kFloat32, golden.inputs.at("key").shape());
    value = g.Input("value", DType::kFloat32, golden.inputs.at("value").shape());
    feeds.push_back({key, golden.inputs.at("key")});
    feeds.push_back({value, golden.inputs.at("value")});
  }
  AttentionMask mask;
  auto feed_input = [&](const std::string& name) {
    const Tensor& t = golden.inputs.at(name);
    Value v = g.Input(name, t.dtype(), t.shape());
    feeds.push_back({v, t});
    return v;
  };
  if (pc.masks & kKeyPadding) {
    mask.keep = nn::KeepFromKeyPaddingMask(feed_input("key_padding_mask"));
  }
  if (pc.masks & kKeyPaddingFloat) {
    mask.bias = nn::BiasFromKeyPaddingMask(feed_input("key_padding_mask"));
  }
  if (pc.masks & kLengths) mask.valid_lens = feed_input("lengths");
  if (pc.masks & kCausal) mask.causal = true;
  if (pc.masks & kAttnMaskBool) {
    mask.keep = Both(mask.keep, nn::KeepFromAttnMask(feed_input("attn_mask"), H), LogicalAnd);
  }
  if (pc.masks & kAttnMaskFloat) {
    mask.bias = Both(mask.bias, nn::BiasFromAttnMask(feed_input("attn_mask"), H), Add);
  }
  const AttentionWeights mode = !need_weights         ? AttentionWeights::kNone
                                : attrs["average"] ? AttentionWeights::kAveraged
                                                     : AttentionWeights::kPerHead;
  AttentionOutput y = mha(query, key, value, mask, mode);
  ASSERT_OK(y.output.status());
  Value r = feed_input("r");
  std::vector<Value> wrt = mha.parameters();
  wrt.push_back(query);
  if (!self_attn) {
    wrt.push_back(key);
    wrt.push_back(value);
  }
  ASSERT_OK_AND_ASSIGN(auto grads, Gradients(Sum(y.output * r), wrt));
  std::vector<Value> fetches = {y.output};
  for (const Value& gr : grads) fetches.push_back(gr);
  if (need_weights) fetches.push_back(y.weights);

  Executor exec(g);
  for (const Value& p : mha.parameters()) ASSERT_OK(exec.Assign(p, golden.inputs.at(StateName(p))));
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile(fetches));
  ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, feeds));
  ExpectParity(out[0], golden.outputs.at("output"), "output");
  const size_t n_params = mha.parameters().size();
  for (size_t i = 0; i < n_params; ++i) {
    const std::string name = StateName(mha.parameters()[i]);
    ExpectParity(out[1 + i], golden.outputs.at("grad." + name), "grad." + name);
  }
  ExpectParity(out[1 + n_params], golden.outputs.at("grad.query"), "grad.query");
  if (!self_attn) {
    ExpectParity(out[2 + n_params], golden.outputs.at("grad.key"), "grad.key");
    ExpectParity(out[3 + n_params], golden.outputs.at("grad.value"), "grad.value");
  }
  if (need_weights) ExpectParity(out.back(), golden.outputs.at("weights"), "weights");
}

const ParityCase kBaseCases[] = {
    {"self_attention"}, {"cross_attention"}, {"kdim_vdim"},
    {"key_padding", kKeyPadding}, {"key_padding", kLengths},
    {"causal", kCausal}, {"causal", kAttnMaskBool},
    {"mask_3d_per_head", kAttnMaskBool}, {"additive_bias", kAttnMaskFloat},
    {"weights_per_head", kKeyPadding}, {"weights_averaged", kLengths}};
INSTANTIATE_TEST_SUITE_P(Torch, MhaParity, ::testing::ValuesIn(kBaseCases), ParityName);

// add_bias_kv, add_zero_attn and batch_first, alone and with every kind of
// mask (the goldens' generator lists what each case holds).
const ParityCase kOptionCases[] = {
    {"bias_kv"}, {"zero_attn"}, {"bias_kv_zero_attn"}, {"seq_first"}, {"seq_first_self"},
    {"float_mask_3d", kAttnMaskFloat},
    {"float_key_padding", kKeyPaddingFloat},
    {"bias_kv_key_padding", kKeyPadding},
    {"bias_kv_key_padding", kLengths},
    {"zero_attn_float_key_padding", kKeyPaddingFloat},
    {"bias_kv_zero_attn_causal", kCausal},
    {"bias_kv_zero_attn_causal", kAttnMaskBool},
    {"bias_kv_bool_mask_2d", kAttnMaskBool | kKeyPadding},
    {"zero_attn_bool_mask_3d", kAttnMaskBool},
    {"bias_kv_float_mask_2d", kAttnMaskFloat | kKeyPadding},
    {"zero_attn_float_mask_3d_kdim_vdim", kAttnMaskFloat | kKeyPadding},
    {"all_options_seq_first", kAttnMaskBool | kKeyPadding},
    {"all_options_seq_first", kAttnMaskBool | kLengths},
    {"bias_kv_lengths_per_query", kLengths},
    {"bias_kv_lengths_per_query", kAttnMaskBool},
    {"seq_first_bias_kv_float_mask_3d", kAttnMaskFloat}};
INSTANTIATE_TEST_SUITE_P(TorchOptions, MhaParity, ::testing::ValuesIn(kOptionCases),
                         ParityName);

TEST(MhaParityCoverage, EveryGoldenCaseIsTested) {
  std::set<std::string> tested;
  for (const ParityCase& c : kBaseCases) tested.insert(c.name);
  for (const ParityCase& c : kOptionCases) tested.insert(c.name);
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> names, GoldenCaseNames("mha"));
  for (const std::string& name : names) EXPECT_TRUE(tested.count(name)) << name;
}

// ---- the seed notebooks ----------------------------------------------------------

TEST(MhaNotebooks, D2lValidLensCrossAndSelfAttention) {
  // num_hiddens 100, 5 heads, batch 2, 4 queries, 6 key-value pairs,
  // valid_lens [3, 2].
  Graph g;
  ASSERT_OK_AND_ASSIGN(MultiheadAttention mha,
                       MultiheadAttention::Create(g, "mha", {.embed_dim = 100, .num_heads = 5}));
  Value x = g.Input("x", DType::kFloat32, {2, 4, 100});
  Value y = g.Input("y", DType::kFloat32, {2, 6, 100});
  Value lens = g.Input("valid_lens", DType::kInt64, {2});
  AttentionOutput cross = mha(x, y, y, {.valid_lens = lens}, AttentionWeights::kPerHead);
  AttentionOutput self = mha(x, x, x, {.valid_lens = lens});
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {cross.output, cross.weights, self.output},
                                         {{x, Random(DType::kFloat32, {2, 4, 100}, 1)},
                                          {y, Random(DType::kFloat32, {2, 6, 100}, 2)},
                                          {lens, T<int64_t>({2}, {3, 2})}}));
  EXPECT_EQ(out[0].shape(), Shape({2, 4, 100}));
  EXPECT_EQ(out[2].shape(), Shape({2, 4, 100}));
  // Keys past each valid length get exactly zero weight; rows sum to 1.
  const float* w = out[1].data<float>();
  for (int b = 0; b < 2; ++b) {
    const int valid = b == 0 ? 3 : 2;
    for (int row = 0; row < 5 * 4; ++row) {
      const float* r = w + (b * 20 + row) * 6;
      double sum = 0;
      for (int s = 0; s < 6; ++s) {
        if (s >= valid) EXPECT_EQ(r[s], 0.0f);
        sum += r[s];
      }
      EXPECT_NEAR(sum, 1.0, 1e-6);
    }
  }
}

TEST(MhaNotebooks, ExpandedZeroOneMaskWithAFullyMaskedSequence) {
  // mask (3, 1, 1, 2) = [[0,1],[0,0],[1,0]] expanded to (3, 8, 2, 2); x (3, 2, 128),
  // 8 heads. The middle sequence is fully masked: zeros before the out
  // projection, so its output is the out-projection bias.
  Graph g;
  ASSERT_OK_AND_ASSIGN(MultiheadAttention mha,
                       MultiheadAttention::Create(g, "mha", {.embed_dim = 128, .num_heads = 8}));
  Value x = g.Input("x", DType::kFloat32, {3, 2, 128});
  Value m = g.Input("mask", DType::kFloat32, {3, 1, 1, 2});
  Value keep = BroadcastTo(Greater(m, ScalarLike(m, 0.5)), Shape({3, 8, 2, 2}));
  AttentionOutput y = mha(x, x, x, {.keep = keep}, AttentionWeights::kPerHead);
  ASSERT_OK_AND_ASSIGN(auto grads, Gradients(Sum(y.output), {x, mha.parameters()[0]}));
  Executor exec(g);
  const Tensor bias = Random(DType::kFloat32, {128}, 5);
  ASSERT_OK(exec.Assign(mha.parameters().back(), bias));  // out_proj.bias
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({y.output, y.weights, grads[0], grads[1]}));
  ASSERT_OK_AND_ASSIGN(auto out,
                       exec.Run(*plan, {{x, Random(DType::kFloat32, {3, 2, 128}, 4)},
                                        {m, T<float>({3, 1, 1, 2}, {0, 1, 0, 0, 1, 0})}}));
  EXPECT_EQ(out[0].shape(), Shape({3, 2, 128}));
  const float* o = out[0].data<float>();
  for (int t = 0; t < 2; ++t) {
    for (int e = 0; e < 128; ++e) EXPECT_EQ(o[(1 * 2 + t) * 128 + e], bias.data<float>()[e]);
  }
  const float* w = out[1].data<float>();
  for (int i = 0; i < 8 * 2 * 2; ++i) EXPECT_EQ(w[1 * 32 + i], 0.0f) << "weights of sequence 1";
  for (const Tensor& grad : {out[2], out[3]}) {
    for (double v : AsDoubles(grad)) ASSERT_TRUE(std::isfinite(v));
  }
  // Sequence 0 may attend only key 1, sequence 2 only key 0.
  EXPECT_EQ(w[0 * 32 + 0], 0.0f);
  EXPECT_EQ(w[0 * 32 + 1], 1.0f);
  EXPECT_EQ(w[2 * 32 + 0], 1.0f);
}

// Reference attention in double for one head: softmax(q kᵀ * scale) v.
std::vector<double> NaiveAttention(const std::vector<double>& q, const std::vector<double>& k,
                                   const std::vector<double>& v, int T, int S, int D,
                                   double scale) {
  std::vector<double> out(T * D, 0.0);
  for (int t = 0; t < T; ++t) {
    std::vector<double> s(S);
    double mx = -1e300, sum = 0;
    for (int j = 0; j < S; ++j) {
      for (int d = 0; d < D; ++d) s[j] += q[t * D + d] * k[j * D + d];
      s[j] *= scale;
      mx = std::max(mx, s[j]);
    }
    for (int j = 0; j < S; ++j) sum += s[j] = std::exp(s[j] - mx);
    for (int j = 0; j < S; ++j) {
      for (int d = 0; d < D; ++d) out[t * D + d] += s[j] / sum * v[j * D + d];
    }
  }
  return out;
}

class MhaScale : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(MhaScale, SingleAndMultiHeadWithAndWithoutScale) {
  const auto [heads, scaled] = GetParam();
  const int T = 3, E = 8, D = E / heads;
  Graph g;
  ASSERT_OK_AND_ASSIGN(
      MultiheadAttention mha,
      MultiheadAttention::Create(g, "mha", {.embed_dim = E, .num_heads = heads, .bias = false,
                                            .dtype = DType::kFloat64}));
  Value x = g.Input("x", DType::kFloat64, {1, T, E});
  std::optional<double> scale;
  if (!scaled) scale = 1.0;
  AttentionOutput y = mha(x, x, x, {}, AttentionWeights::kNone, scale);
  Executor exec(g);
  // Identity projections: q = k = v = x, and out = merged heads.
  std::vector<double> in_proj(3 * E * E, 0.0), eye(E * E, 0.0);
  for (int i = 0; i < E; ++i) {
    eye[i * E + i] = 1;
    for (int p = 0; p < 3; ++p) in_proj[(p * E + i) * E + i] = 1;
  }
  ASSERT_OK(exec.Assign(mha.parameters()[0], testing::T<double>({3 * E, E}, in_proj)));
  ASSERT_OK(exec.Assign(mha.parameters()[1], testing::T<double>({E, E}, eye)));
  const Tensor xv = Random(DType::kFloat64, {1, T, E}, 11, -2, 2);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({y.output}));
  ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, {{x, xv}}));
  const std::vector<double> xs = AsDoubles(xv);
  std::vector<double> want(T * E);
  for (int h = 0; h < heads; ++h) {
    std::vector<double> xh(T * D);
    for (int t = 0; t < T; ++t) {
      for (int d = 0; d < D; ++d) xh[t * D + d] = xs[t * E + h * D + d];
    }
    const auto o = NaiveAttention(xh, xh, xh, T, T, D, scaled ? 1 / std::sqrt(double(D)) : 1.0);
    for (int t = 0; t < T; ++t) {
      for (int d = 0; d < D; ++d) want[t * E + h * D + d] = o[t * D + d];
    }
  }
  ExpectAllClose(out[0], want, 1e-12, 1e-12, "attention");
}

INSTANTIATE_TEST_SUITE_P(Heads, MhaScale,
                         ::testing::Combine(::testing::Values(1, 4), ::testing::Bool()));

TEST(MhaBugs, KeysAndValuesUseTheirOwnProjections) {
  // With W_k = 0 every score is 0, so the weights are uniform whatever the
  // query; with W_v = 0 and b_v = c the output is out_proj(c). Projecting
  // keys or values with W_q (a bug in two of the notebooks) breaks both.
  const int64_t E = 4, S = 3;
  Graph g;
  ASSERT_OK_AND_ASSIGN(MultiheadAttention mha,
                       MultiheadAttention::Create(g, "mha", {.embed_dim = E, .num_heads = 2}));
  Value x = g.Input("x", DType::kFloat32, {1, S, E});
  AttentionOutput y = mha(x, x, x, {}, AttentionWeights::kPerHead);
  Executor exec(g);
  std::vector<float> w(3 * E * E, 0.0f), b(3 * E, 0.0f);
  for (int i = 0; i < E * E; ++i) w[i] = 0.1f * (i % 7) + 0.3f;  // W_q: anything non-zero
  for (int i = 0; i < E; ++i) b[2 * E + i] = 1.0f + i;           // b_v = c
  ASSERT_OK(exec.Assign(mha.parameters()[0], T<float>({3 * E, E}, w)));
  ASSERT_OK(exec.Assign(mha.parameters()[1], T<float>({3 * E}, b)));
  std::vector<float> eye(E * E, 0.0f);
  for (int i = 0; i < E; ++i) eye[i * E + i] = 1.0f;
  ASSERT_OK(exec.Assign(mha.parameters()[2], T<float>({E, E}, eye)));
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({y.output, y.weights}));
  ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, {{x, Random(DType::kFloat32, {1, S, E}, 3)}}));
  for (double v : AsDoubles(out[1])) EXPECT_NEAR(v, 1.0 / S, 1e-7);
  std::vector<double> want;
  for (int s = 0; s < S; ++s) {
    for (int i = 0; i < E; ++i) want.push_back(1.0 + i);
  }
  ExpectAllClose(out[0], want, 1e-6, 0, "output = out_proj(b_v)");
}

TEST(MhaErrors, ConfigAndInputs) {
  Graph g;
  EXPECT_STATUS(MultiheadAttention::Create(g, "a", {.embed_dim = 10, .num_heads = 3}).status(),
                absl::StatusCode::kInvalidArgument,
                "multi_head_attention 'a': embed_dim 10 is not divisible by num_heads 3");
  EXPECT_STATUS(MultiheadAttention::Create(g, "b", {.embed_dim = 8, .num_heads = 0}).status(),
                absl::StatusCode::kInvalidArgument, "must be >= 1");
  EXPECT_STATUS(
      MultiheadAttention::Create(g, "c", {.embed_dim = 8, .num_heads = 2, .dropout = 1.0}).status(),
      absl::StatusCode::kInvalidArgument, "dropout must be in [0, 1)");
  ASSERT_OK_AND_ASSIGN(MultiheadAttention mha,
                       MultiheadAttention::Create(g, "mha", {.embed_dim = 8, .num_heads = 2}));
  Value x = g.Input("x", DType::kFloat32, {2, 3, 8});
  Value wrong = g.Input("wrong", DType::kFloat32, {2, 3, 6});
  EXPECT_STATUS(mha(x, wrong, wrong).output.status(), absl::StatusCode::kInvalidArgument,
                "expected query (B, T, 8), key (B, S, 8), value (B, S, 8), got (2, 3, 8), "
                "(2, 3, 6), (2, 3, 6)");
  Value bad_keep = g.Input("keep", DType::kFloat32, {2, 1, 1, 3});
  EXPECT_FALSE(mha(x, x, x, {.keep = bad_keep}).output.ok());
}

// ---- finite differences through the whole subgraph ----------------------------


// The KV-cache invariant: the last T queries of a causal, rotary
// self-attention, run against all S keys, give the last T rows of the whole
// sequence's output (queries rotate from position S - T, the causal offset).
TEST(MhaValues, RotaryQueriesContinueTheKeysSequence) {
  constexpr int64_t S = 5, T = 2, E = 8;
  Graph g;
  ASSERT_OK_AND_ASSIGN(
      MultiheadAttention mha,
      MultiheadAttention::Create(
          g, "mha", {.embed_dim = E, .num_heads = 2, .rotary = true, .dtype = DType::kFloat64}));
  Value x = g.Input("x", DType::kFloat64, {1, S, E});
  Value whole = mha(x, x, x, {.causal = true}).output;   // (1, S, E)
  Value last = Slice(x, 1, S - T, S);                     // (1, T, E)
  Value continued = mha(last, x, x, {.causal = true}).output;
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {Slice(whole, 1, S - T, S), continued},
                                         {{x, Random(DType::kFloat64, {1, S, E}, 5)}}));
  ExpectAllClose(out[1], AsDoubles(out[0]), 1e-12, 1e-12, "last T rows");
}

}  // namespace
}  // namespace dagrad::testing
