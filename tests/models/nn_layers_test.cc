// The dagrad::nn layers (models/nn/*.h) as their headers' examples use them,
// with the shapes and PyTorch's parameter names they give, the errors of
// Create and of a layer used before Create. (The examples themselves run as
// HeaderExample.models_nn_*, extracted from the headers.)

#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "engine/status_macros.h"
#include "models/nn/nn.h"
#include "models/toy/transformer.h"
#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> Names(const nn::NamedParameters& named) {
  std::vector<std::string> names;
  for (const auto& [name, p] : named) names.push_back(name);
  return names;
}

// Shapes checks that every Value is ok and has the shape listed for it.
void ExpectShapes(std::initializer_list<std::pair<Value, Shape>> values) {
  for (const auto& [v, shape] : values) {
    ASSERT_OK(v.status());
    EXPECT_EQ(v.shape().ToString(), shape.ToString()) << v.path();
  }
}

absl::Status LayersExamples(Graph& g, Value x, Value tokens, Value h) {
  DAGRAD_ASSIGN_OR_RETURN(nn::Linear fc,
      nn::Linear::Create(g, "fc", {.in_features = 4, .out_features = 3}));
  Value y = fc(x);   // x (B, 4) -> y (B, 3); parameters "fc/weight", "fc/bias"
  DAGRAD_ASSIGN_OR_RETURN(nn::Embedding emb,
      nn::Embedding::Create(g, "tok_emb", {.num_embeddings = 16, .embedding_dim = 8}));
  Value e = emb(tokens);   // tokens int64 (B, T) -> e (B, T, 8)
  DAGRAD_ASSIGN_OR_RETURN(nn::LayerNorm ln,
      nn::LayerNorm::Create(g, "ln_f", {.normalized_shape = 8}));
  Value n = ln(h);   // (B, T, 8); parameters "ln_f/weight", "ln_f/bias"
  DAGRAD_ASSIGN_OR_RETURN(nn::Dropout drop, nn::Dropout::Create(g, "drop", 0.1));
  Value d = drop(h);   // same shape as h
  DAGRAD_ASSIGN_OR_RETURN(nn::Mlp mlp,
      nn::Mlp::Create(g, "mlp", {.in_features = 8, .hidden_features = 32,
                                 .activation = nn::Activation::kGeluTanh}));
  Value m = mlp(h);   // (B, T, 8); parameters "mlp/fc1/weight", ..., "mlp/fc2/bias"
  ExpectShapes({{y, {2, 3}}, {e, {2, 5, 8}}, {n, {2, 5, 8}}, {d, {2, 5, 8}}, {m, {2, 5, 8}}});
  EXPECT_EQ(fc.weight().path(), "fc/weight");
  EXPECT_EQ(ln.bias().path(), "ln_f/bias");
  EXPECT_THAT(Names(mlp.named_parameters()),
              ElementsAre("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"));
  return absl::OkStatus();
}

TEST(NnLayers, Layers) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2, 4});
  Value tokens = g.Input("tokens", DType::kInt64, {2, 5});
  Value h = g.Input("h", DType::kFloat32, {2, 5, 8});
  ASSERT_OK(LayersExamples(g, x, tokens, h));
}

absl::Status AttentionExamples(Graph& g, Value x, Value lengths, Value memory) {
  DAGRAD_ASSIGN_OR_RETURN(nn::MultiheadAttention mha,
      nn::MultiheadAttention::Create(g, "self_attn", {.embed_dim = 8, .num_heads = 2}));
  nn::AttentionOutput y =
      mha(x, x, x, {.valid_lens = lengths}, nn::AttentionWeights::kPerHead);
  // x (B, T, 8): y.output (B, T, 8); y.weights (B, 2, T, T), before dropout
  nn::AttentionOutput z = mha(x, memory, memory);   // cross-attention, memory (B, S, 8)
  ExpectShapes({{y.output, {2, 5, 8}}, {y.weights, {2, 2, 5, 5}}, {z.output, {2, 5, 8}}});
  EXPECT_THAT(Names(mha.named_parameters()),
              ElementsAre("in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"));
  return absl::OkStatus();
}

// AttentionPath's examples: the composed path by option, and its names.
TEST(NnLayers, AttentionPath) {
  using nn::AttentionPath, nn::MultiheadAttention, nn::ParseAttentionPath;
  Graph g;
  absl::StatusOr<AttentionPath> path = ParseAttentionPath("composed");
  auto composed = MultiheadAttention::Create(
      g, "composed", {.embed_dim = 8, .num_heads = 2, .attention = AttentionPath::kComposed});
  ASSERT_OK(path.status());
  EXPECT_EQ(*path, AttentionPath::kComposed);
  EXPECT_EQ(nn::AttentionPathName(*path), "composed");
  EXPECT_EQ(*ParseAttentionPath("fused"), AttentionPath::kFused);
  EXPECT_STATUS(ParseAttentionPath("flash").status(), absl::StatusCode::kInvalidArgument,
                "attention must be fused or composed, got 'flash'");
  ASSERT_OK(composed.status());
  EXPECT_EQ(composed->options().attention, AttentionPath::kComposed);
}

// The converters' examples, with B = 2, H = 4, T = 5, S = 7, E = 8.
absl::Status AttentionMaskExamples(Graph& g, Value q, Value k, Value v) {
  using nn::AttentionOutput, nn::AttentionWeights, nn::KeepFromKeyPaddingMask,
      nn::BiasFromAttnMask, nn::BiasFromKeyPaddingMask;
  const int64_t H = 4;
  DAGRAD_ASSIGN_OR_RETURN(
      nn::MultiheadAttention mha,
      nn::MultiheadAttention::Create(g, "mha", {.embed_dim = 8, .num_heads = H}));
  {
    Value kpm = g.Input("kpm", DType::kBool, {2, 7});
    Value am = g.Input("am", DType::kFloat32, {8, 5, 7});
    AttentionOutput y = mha(q, k, v, {.keep = KeepFromKeyPaddingMask(kpm),
                                      .bias = BiasFromAttnMask(am, H)},
                            AttentionWeights::kPerHead);
    Value keep = KeepFromKeyPaddingMask(kpm);   // kpm bool (2, 7) -> (2, 1, 1, 7)
    ExpectShapes({{y.output, {2, 5, 8}}, {y.weights, {2, 4, 5, 7}}, {keep, {2, 1, 1, 7}}});
  }
  Value kpm = g.Input("kpm_float", DType::kFloat32, {2, 7});
  Value am = g.Input("am_float", DType::kFloat32, {8, 5, 7});
  Value bias = BiasFromAttnMask(am, 4);        // am float (8, 5, 7) -> (2, 4, 5, 7)
  mha(q, k, v, {.bias = bias + BiasFromKeyPaddingMask(kpm)});  // both masks
  ExpectShapes({{bias, {2, 4, 5, 7}},
                {mha(q, k, v, {.bias = bias + BiasFromKeyPaddingMask(kpm)}).output, {2, 5, 8}}});
  return absl::OkStatus();
}

// SplitPackedHeads and AttendHeads, with B = 2, T = 5, E = 8, 2 heads.
TEST(NnLayers, AttentionCore) {
  using nn::HeadsQkv, nn::HeadsAttention, nn::SplitPackedHeads, nn::AttendHeads;
  Graph g;
  Value qkv = g.Input("qkv", DType::kFloat32, {2, 5, 24});
  HeadsQkv h = SplitPackedHeads(qkv, 2);      // qkv (B, T, 24): h.q (B, 2, T, 4)
  HeadsAttention a = AttendHeads(h.q, h.k, h.v, {.causal = true}, 0.5, 0.0);
  // a.merged (B, T, 8), a.weights (B, 2, T, T)
  ExpectShapes({{h.q, {2, 2, 5, 4}}, {h.k, {2, 2, 5, 4}}, {h.v, {2, 2, 5, 4}},
                {a.merged, {2, 5, 8}}, {a.weights, {2, 2, 5, 5}}});
  EXPECT_FALSE(SplitPackedHeads(g.Input("bad", DType::kFloat32, {2, 5, 20}), 2).q.ok());
}

TEST(NnLayers, AttentionMasks) {
  Graph g;
  ASSERT_OK(AttentionMaskExamples(g, g.Input("q", DType::kFloat32, {2, 5, 8}),
                                  g.Input("k", DType::kFloat32, {2, 7, 8}),
                                  g.Input("v", DType::kFloat32, {2, 7, 8})));
}

TEST(NnLayers, Attention) {
  Graph g;
  ASSERT_OK(AttentionExamples(g, g.Input("x", DType::kFloat32, {2, 5, 8}),
                              g.Input("lengths", DType::kInt64, {2}),
                              g.Input("memory", DType::kFloat32, {2, 3, 8})));
}

absl::Status TransformerExample(Graph& g, Value x, Value lengths) {
  DAGRAD_ASSIGN_OR_RETURN(nn::TransformerBlock block,
      nn::TransformerBlock::Create(g, "h/0", {.d_model = 8, .nhead = 2,
                                              .dim_feedforward = 32,
                                              .activation = nn::Activation::kGelu,
                                              .norm_first = true, .causal = true}));
  Value y = block(x);                        // x (B, T, 8) -> (B, T, 8)
  Value z = block(x, {.mask = {.valid_lens = lengths}});   // padded keys masked
  nn::NamedParameters named = block.named_parameters();
  // {{"self_attn.in_proj_weight", w}, ..., {"norm2.bias", b}}
  ExpectShapes({{y, {2, 5, 8}}, {z, {2, 5, 8}}});
  EXPECT_THAT(Names(named),
              ElementsAre("self_attn.in_proj_weight", "self_attn.in_proj_bias",
                          "self_attn.out_proj.weight", "self_attn.out_proj.bias",
                          "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
                          "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"));
  EXPECT_EQ(named.front().second.path(), "h/0/self_attn/in_proj_weight");
  return absl::OkStatus();
}

TEST(NnLayers, TransformerBlock) {
  Graph g;
  ASSERT_OK(TransformerExample(g, g.Input("x", DType::kFloat32, {2, 5, 8}),
                               g.Input("lengths", DType::kInt64, {2})));
}

absl::Status SequentialExample(Graph& g, Value x) {
  DAGRAD_ASSIGN_OR_RETURN(nn::Sequential net, nn::Sequential::Create(g, "net"));
  DAGRAD_RETURN_IF_ERROR(net.Append<nn::Linear>({.in_features = 2, .out_features = 16}));
  net.Append([](Value h) { return Relu(h); });
  DAGRAD_RETURN_IF_ERROR(net.Append<nn::Linear>({.in_features = 16, .out_features = 1}));
  Value y = net(x);   // x (B, 2) -> (B, 1); named_parameters "0.weight", ..., "2.bias"
  ExpectShapes({{y, {3, 1}}});
  EXPECT_THAT(Names(net.named_parameters()),
              ElementsAre("0.weight", "0.bias", "2.weight", "2.bias"));
  return absl::OkStatus();
}

TEST(NnLayers, Sequential) {
  Graph g;
  ASSERT_OK(SequentialExample(g, g.Input("x", DType::kFloat32, {3, 2})));
}

class Gpt {
 public:
  absl::Status Init(Graph& g) {
    DAGRAD_ASSIGN_OR_RETURN(wte_, nn::Embedding::Create(g, "wte",
        {.num_embeddings = 65, .embedding_dim = 32}));
    DAGRAD_ASSIGN_OR_RETURN(block_, nn::TransformerBlock::Create(g, "h/0",
        {.d_model = 32, .nhead = 4, .dim_feedforward = 128, .dropout = 0.0,
         .activation = nn::Activation::kGelu, .norm_first = true, .causal = true}));
    DAGRAD_ASSIGN_OR_RETURN(ln_f_, nn::LayerNorm::Create(g, "ln_f",
        {.normalized_shape = 32}));
    return absl::OkStatus();
  }
  Value operator()(Value tokens) const { return ln_f_(block_(wte_(tokens))); }

 private:
  nn::Embedding wte_;
  nn::TransformerBlock block_;
  nn::LayerNorm ln_f_;
};

TEST(NnLayers, MembersFilledInLater) {
  Graph g;
  Gpt gpt;
  ASSERT_OK(gpt.Init(g));
  Value tokens = g.Input("tokens", DType::kInt64, {2, 6});
  Value y = gpt(tokens);
  ExpectShapes({{y, {2, 6, 32}}});
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({y}));
  ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, {{tokens, RandomInts({2, 6}, 1, 0, 65)}}));
  for (double v : AsDoubles(out[0])) ASSERT_TRUE(std::isfinite(v));
}

TEST(Nn, LayerUsedBeforeCreateIsAnError) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2, 4});
  EXPECT_STATUS(nn::Linear()(x).status(), absl::StatusCode::kFailedPrecondition,
                "Linear applied before Create");
  EXPECT_STATUS(nn::TransformerBlock()(x).status(), absl::StatusCode::kFailedPrecondition,
                "TransformerBlock");
  EXPECT_STATUS(nn::MultiheadAttention()(x, x, x).output.status(),
                absl::StatusCode::kFailedPrecondition, "MultiheadAttention");
  EXPECT_EQ(nn::Dropout()(x), x);  // p = 0: the identity
}

TEST(Nn, CreateRejectsBadOptions) {
  Graph g;
  EXPECT_STATUS(nn::Linear::Create(g, "fc/w.b", {.in_features = 2, .out_features = 2}).status(),
                absl::StatusCode::kInvalidArgument, "without '.'");
  EXPECT_STATUS(nn::Linear::Create(g, "a//b", {.in_features = 2, .out_features = 2}).status(),
                absl::StatusCode::kInvalidArgument, "non-empty segments");
  EXPECT_STATUS(nn::Linear::Create(g, "fc", {.in_features = 0, .out_features = 2}).status(),
                absl::StatusCode::kInvalidArgument, "sizes must be >= 1, got 0");
  EXPECT_STATUS(
      nn::Embedding::Create(g, "e", {.num_embeddings = 3, .embedding_dim = 2,
                                     .dtype = DType::kInt64}).status(),
      absl::StatusCode::kInvalidArgument, "dtype must be float32 or float64");
  EXPECT_STATUS(nn::LayerNorm::Create(g, "ln", {.normalized_shape = 4, .eps = 0}).status(),
                absl::StatusCode::kInvalidArgument, "eps must be a finite number > 0");
  EXPECT_STATUS(nn::Dropout::Create(g, "drop", 1.5).status(), absl::StatusCode::kInvalidArgument,
                "dropout must be in [0, 1)");
  EXPECT_STATUS(nn::TransformerBlock::Create(g, "blk", {.d_model = 6, .nhead = 4}).status(),
                absl::StatusCode::kInvalidArgument, "not divisible by num_heads 4");
}

TEST(Nn, BlockChecksItsMemory) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {1, 3, 4});
  ASSERT_OK_AND_ASSIGN(auto enc,
                       nn::TransformerBlock::Create(g, "enc", {.d_model = 4, .nhead = 2}));
  ASSERT_OK_AND_ASSIGN(
      auto dec,
      nn::TransformerBlock::Create(g, "dec",
                                   {.d_model = 4, .nhead = 2, .cross_attention = true}));
  EXPECT_STATUS(dec(x).status(), absl::StatusCode::kInvalidArgument,
                "cross-attention needs a memory");
  EXPECT_STATUS(enc(x, {.memory = x}).status(), absl::StatusCode::kInvalidArgument,
                "without cross_attention");
  EXPECT_EQ(Names(dec.named_parameters()).back(), "norm3.bias");
}

TEST(Nn, ToyTransformerHasTheReferenceStateDictNames) {
  Graph g;
  ASSERT_OK_AND_ASSIGN(auto model,
                       models::ToyTransformer::Create(g, {.vocab = 8, .seq_len = 4, .dim = 8,
                                                          .heads = 2, .layers = 1, .ffn = 16}));
  EXPECT_THAT(
      Names(model.named_parameters()),
      ElementsAre("embedding.weight", "encoder.layers.0.self_attn.in_proj_weight",
                  "encoder.layers.0.self_attn.in_proj_bias",
                  "encoder.layers.0.self_attn.out_proj.weight",
                  "encoder.layers.0.self_attn.out_proj.bias", "encoder.layers.0.linear1.weight",
                  "encoder.layers.0.linear1.bias", "encoder.layers.0.linear2.weight",
                  "encoder.layers.0.linear2.bias", "encoder.layers.0.norm1.weight",
                  "encoder.layers.0.norm1.bias", "encoder.layers.0.norm2.weight",
                  "encoder.layers.0.norm2.bias", "head.weight", "head.bias"));
  EXPECT_EQ(model.parameters(), g.Parameters());
}

absl::Status TiedExample(Graph& g, Value x) {
  DAGRAD_ASSIGN_OR_RETURN(nn::Embedding wte,
      nn::Embedding::Create(g, "wte", {.num_embeddings = 5, .embedding_dim = 3}));
  DAGRAD_ASSIGN_OR_RETURN(nn::Linear head,
      nn::Linear::Tied(g, "lm_head", wte.weight()));   // (V, D): x (B, T, D) -> (B, T, V)
  ExpectShapes({{head(x), {2, 4, 5}}});
  EXPECT_EQ(g.Parameters().size(), 1u);  // the head declares no parameter
  return absl::OkStatus();
}

// torch.nn.Embedding(5, 3, padding_idx): the padding row starts at zeros,
// its positions read it and pass it no gradient; a row loaded into it is
// read as well (and still gets none).
TEST(NnLayers, EmbeddingPaddingIdx) {
  for (int64_t padding_idx : {1, -4}) {  // -4 of 5 is row 1
    SCOPED_TRACE(padding_idx);
    Graph g;
    ASSERT_OK_AND_ASSIGN(nn::Embedding emb,
                         nn::Embedding::Create(g, "e", {.num_embeddings = 5, .embedding_dim = 3,
                                                        .dtype = DType::kFloat64,
                                                        .padding_idx = padding_idx}));
    Value ids = g.Input("ids", DType::kInt64, {2, 3});
    Value up = g.Input("up", DType::kFloat64, {2, 3, 3});
    Value out = emb(ids);
    ASSERT_OK_AND_ASSIGN(std::vector<Value> grads, Gradients(Sum(out * up), {emb.weight()}));
    const std::vector<int64_t> id = {1, 0, 1, 4, 1, 0};
    const Tensor up_values = Random(DType::kFloat64, {2, 3, 3}, 3);
    const Feeds feeds = {{ids, T<int64_t>({2, 3}, id)}, {up, up_values}};
    Executor exec(g);
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Plan> plan, exec.Compile({out, grads[0]}));
    for (double padding_value : {0.0, 7.0}) {
      if (padding_value != 0) {  // a loaded padding row
        ASSERT_OK_AND_ASSIGN(Tensor w, exec.Read(emb.weight()));
        for (int c = 0; c < 3; ++c) w.data<double>()[3 + c] = padding_value;
        ASSERT_OK(exec.Assign(emb.weight(), w));
      }
      ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, exec.Run(*plan, feeds));
      ASSERT_OK_AND_ASSIGN(Tensor w, exec.Read(emb.weight()));
      const double* wv = w.data<double>();
      for (int c = 0; c < 3; ++c) EXPECT_EQ(wv[3 + c], padding_value);
      std::vector<double> want_out, want_grad(15, 0.0);
      for (size_t p = 0; p < id.size(); ++p) {
        for (int c = 0; c < 3; ++c) {
          want_out.push_back(wv[id[p] * 3 + c]);
          if (id[p] != 1) want_grad[id[p] * 3 + c] += up_values.data<double>()[p * 3 + c];
        }
      }
      ExpectAllClose(got[0], want_out, 0, 0, "rows");
      ExpectAllClose(got[1], want_grad, 1e-15, 0, "d weight: none for the padding row");
    }
  }
  Graph g;
  for (int64_t bad : {5, -6}) {
    EXPECT_STATUS(nn::Embedding::Create(g, "e", {.num_embeddings = 5, .embedding_dim = 3,
                                                 .padding_idx = bad})
                      .status(),
                  absl::StatusCode::kInvalidArgument,
                  absl::StrCat("Embedding 'e': padding_idx must be in [-5, 5), got ", bad));
  }
}

TEST(NnLayers, LinearTied) {
  Graph g;
  ASSERT_OK(TiedExample(g, g.Input("x", DType::kFloat32, {2, 4, 3})));
}

}  // namespace
}  // namespace dagrad::testing
