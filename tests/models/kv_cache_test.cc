// The KV cache of nn:: layers (nn::KvCache, models/nn/attention.h): a
// MultiheadAttention or a causal TransformerBlock run on the last positions
// of a sequence, attending to the cached keys and values of the first,
// gives the rows the whole sequence's causal forward gives (the invariant
// generation rests on), unkept slots are ignored whatever they hold, and a
// user's model of nn::TransformerBlocks generates the same tokens with the
// cache as without it (models::Generator).

#include <memory>
#include <string>
#include <vector>

#include "engine/executor.h"
#include "engine/io/checkpoint.h"
#include "engine/status_macros.h"
#include "models/generator.h"
#include "models/nn/nn.h"
#include "ops/elementwise.h"
#include "ops/fill.h"
#include "ops/matmul.h"
#include "ops/shape_ops.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using nn::KvCache;

constexpr int64_t B = 2, T1 = 3, T2 = 4, E = 8, H = 2;

// Cached runs `layer` on x's first T1 positions beside 2 unkept slots of
// `junk` (B, H, 2, E / H), then on the last T2 with the first's keys and values as the past;
// it returns the two outputs joined, (B, T1 + T2, E). The positions it
// gives (read by rotary layers) are the tokens', not the slots'.
template <typename Layer>
Value Cached(Graph& g, const Layer& layer, Value x, Value junk) {
  KvCache first{.past_keys = junk, .past_values = Scale(junk, -3.0),
                .keep = Fill(g, {2}, 0, DType::kBool),
                .positions = Arange(g, 0, T1, 1, DType::kInt64)};
  Value head = layer(Slice(x, 1, 0, T1), first);
  KvCache second{.past_keys = first.keys, .past_values = first.values,
                 .keep = Fill(g, {T1}, 1, DType::kBool),
                 .positions = Arange(g, T1, T1 + T2, 1, DType::kInt64)};
  Value tail = layer(Slice(x, 1, T1, T1 + T2), second);
  return Concat({head, tail}, 1);
}

void ExpectCachedEqualsWhole(Graph& g, Value x, Value junk, Value whole, Value cached) {
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                       RunOnce(g, {whole, cached},
                               {{x, Random(DType::kFloat64, {B, T1 + T2, E}, 1)},
                                {junk, Random(DType::kFloat64, {B, H, 2, E / H}, 2, -9, 9)}}));
  ExpectAllClose(out[1], AsDoubles(out[0]), 1e-12, 1e-12, "cached rows");
}

class KvCachePaths : public ::testing::TestWithParam<nn::AttentionPath> {};

TEST_P(KvCachePaths, AttentionOverTheCacheGivesTheWholeSequencesRows) {
  for (bool rotary : {false, true}) {
    SCOPED_TRACE(rotary ? "rotary" : "no positional encoding");
    Graph g;
    ASSERT_OK_AND_ASSIGN(nn::MultiheadAttention mha,
                         nn::MultiheadAttention::Create(
                             g, "mha", {.embed_dim = E, .num_heads = H, .rotary = rotary,
                                        .dtype = DType::kFloat64, .attention = GetParam()}));
    Value x = g.Input("x", DType::kFloat64, {B, T1 + T2, E});
    Value junk = g.Input("junk", DType::kFloat64, {B, H, 2, E / H});
    Value whole = mha(x, x, x, {.causal = true}).output;
    auto layer = [&](Value part, KvCache& cache) { return mha(part, cache).output; };
    ExpectCachedEqualsWhole(g, x, junk, whole, Cached(g, layer, x, junk));
  }
}

TEST_P(KvCachePaths, CausalBlocksOverTheCacheGiveTheWholeSequencesRows) {
  for (bool norm_first : {false, true}) {
    Graph g;
    ASSERT_OK_AND_ASSIGN(
        nn::TransformerBlock block,
        nn::TransformerBlock::Create(g, "block", {.d_model = E, .nhead = H, .dim_feedforward = 16,
                                                  .dropout = 0.0, .norm_first = norm_first,
                                                  .causal = true, .dtype = DType::kFloat64,
                                                  .attention = GetParam()}));
    Value x = g.Input("x", DType::kFloat64, {B, T1 + T2, E});
    Value junk = g.Input("junk", DType::kFloat64, {B, H, 2, E / H});
    auto layer = [&](Value part, KvCache& cache) { return block(part, {.cache = &cache}); };
    ExpectCachedEqualsWhole(g, x, junk, block(x), Cached(g, layer, x, junk));
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, KvCachePaths,
                         ::testing::Values(nn::AttentionPath::kFused,
                                           nn::AttentionPath::kComposed));

TEST(KvCacheErrors, NameWhatACacheCannotServe) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {B, 1, E});
  Value past = g.Input("past", DType::kFloat32, {B, H, 3, E / H});
  KvCache cache{.past_keys = past, .past_values = past, .keep = Fill(g, {3}, 1, DType::kBool)};
  ASSERT_OK_AND_ASSIGN(nn::MultiheadAttention rotary,
                       nn::MultiheadAttention::Create(g, "rot", {.embed_dim = E, .num_heads = H,
                                                                 .rotary = true}));
  EXPECT_STATUS(rotary(x, cache).output.status(), absl::StatusCode::kInvalidArgument,
                "a rotary layer's KV cache needs the new tokens' positions");
  KvCache float_positions = cache;
  float_positions.positions = Fill(g, {1}, 3, DType::kFloat32);
  EXPECT_STATUS(rotary(x, float_positions).output.status(), absl::StatusCode::kInvalidArgument,
                "needs int64 positions (1), got float32 (1,)");
  ASSERT_OK_AND_ASSIGN(nn::MultiheadAttention sequence_first,
                       nn::MultiheadAttention::Create(g, "seq", {.embed_dim = E, .num_heads = H,
                                                                 .batch_first = false}));
  EXPECT_STATUS(sequence_first(x, cache).output.status(), absl::StatusCode::kInvalidArgument,
                "a KV cache needs batch_first");
  ASSERT_OK_AND_ASSIGN(nn::TransformerBlock encoder,
                       nn::TransformerBlock::Create(g, "enc", {.d_model = E, .nhead = H}));
  EXPECT_STATUS(encoder(x, {.cache = &cache}).status(), absl::StatusCode::kInvalidArgument,
                "a KV cache needs a causal block");
  ASSERT_OK_AND_ASSIGN(nn::MultiheadAttention mha,
                       nn::MultiheadAttention::Create(g, "mha", {.embed_dim = E, .num_heads = H}));
  KvCache int_keep = cache;
  int_keep.keep = Fill(g, {3}, 1, DType::kInt64);
  EXPECT_STATUS(mha(x, int_keep).output.status(), absl::StatusCode::kInvalidArgument,
                "keep be bool (3), got (2, 2, 3, 4) and int64 (3,)");
  KvCache no_past{.keep = cache.keep};
  EXPECT_STATUS(mha(x, no_past).output.status(), absl::StatusCode::kInvalidArgument,
                "needs past_keys, past_values and keep");
  KvCache wrong_heads = cache;
  wrong_heads.past_keys = wrong_heads.past_values = g.Input("p1", DType::kFloat32, {B, 1, 3, 8});
  EXPECT_FALSE(mha(x, wrong_heads).output.ok());
}

// A user's causal model of nn:: layers, as tools/examples/gpt.cc writes
// one: Logits is ForwardCached without a cache.
class BlocksLm : public models::LanguageModel {
 public:
  static constexpr int64_t kVocab = 13, kLen = 9, kLayers = 2;
  absl::Status Init(Graph& g) {
    DAGRAD_ASSIGN_OR_RETURN(wte_, nn::Embedding::Create(g, "wte", {.num_embeddings = kVocab,
                                                                   .embedding_dim = E}));
    DAGRAD_ASSIGN_OR_RETURN(wpe_, nn::Embedding::Create(g, "wpe", {.num_embeddings = kLen,
                                                                   .embedding_dim = E}));
    for (int l = 0; l < kLayers; ++l) {
      DAGRAD_ASSIGN_OR_RETURN(blocks_[l], nn::TransformerBlock::Create(g, "h" + std::to_string(l),
          {.d_model = E, .nhead = H, .dim_feedforward = 16, .dropout = 0.0, .norm_first = true,
           .causal = true}));
    }
    parameters_ = g.Parameters();
    return absl::OkStatus();
  }
  Value Logits(Value tokens, Value) const override {
    return ForwardCached(tokens, Arange(*tokens.graph(), 0, tokens.dim(1), 1, DType::kInt64), {});
  }
  Value ForwardCached(Value tokens, Value positions,
                      absl::Span<KvCache> cache) const override {
    Value x = wte_(tokens) + wpe_(positions);
    for (int l = 0; l < kLayers; ++l) {
      x = blocks_[l](x, {.cache = cache.empty() ? nullptr : &cache[l]});
    }
    return MatMul(x, wte_.weight(), {.transpose_b = true});
  }
  std::optional<models::KvCacheShape> kv_cache() const override {
    return models::KvCacheShape{.layers = kLayers, .heads = H, .head_dim = E / H};
  }
  int64_t vocab() const override { return kVocab; }
  int64_t max_len() const override { return kLen; }
  bool causal() const override { return true; }
  const std::vector<Value>& parameters() const override { return parameters_; }
  std::map<std::string, std::string> Metadata() const override { return {{"model", "blocks"}}; }

 private:
  nn::Embedding wte_, wpe_;
  nn::TransformerBlock blocks_[kLayers];
  std::vector<Value> parameters_;
};

TEST(KvCacheGeneration, AModelOfBlocksGeneratesTheSameWithAndWithoutTheCache) {
  auto build = [](Graph& g) -> absl::StatusOr<std::unique_ptr<models::LanguageModel>> {
    auto model = std::make_unique<BlocksLm>();
    DAGRAD_RETURN_IF_ERROR(model->Init(g));
    return model;
  };
  Graph g;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<models::LanguageModel> model, models::BuildModel(build, g));
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(SafetensorsFile weights, CollectVariables(exec, model->parameters()));
  ASSERT_OK_AND_ASSIGN(auto gen, models::Generator::Create(build, weights));
  ASSERT_TRUE(gen->model().kv_cache().has_value());
  // 12 tokens after 3: the window (9) fills, then slides.
  for (models::SamplingOptions sampling : {models::SamplingOptions{.temperature = 0},
                                          models::SamplingOptions{.temperature = 1, .seed = 5}}) {
    models::GenerateOptions options{.tokens = 12, .sampling = sampling};
    ASSERT_OK_AND_ASSIGN(std::vector<int64_t> cached, gen->Generate({4, 1, 7}, options));
    options.kv_cache = false;
    ASSERT_OK_AND_ASSIGN(std::vector<int64_t> recomputed, gen->Generate({4, 1, 7}, options));
    EXPECT_EQ(cached, recomputed) << "temperature " << sampling.temperature;
  }
}

}  // namespace
}  // namespace dagrad::testing
