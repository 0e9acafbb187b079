// Generation (models/generator.h) with models::Gpt and with any causal
// LanguageModel: greedy output equals the reference's
// (tools/goldens/gpt.py), the KV cache changes nothing, also after the
// window slides, and sampling is seeded.

#include <cmath>
#include <string>
#include <vector>

#include "engine/io/checkpoint.h"
#include "engine/io/safetensors.h"
#include "models/generator.h"
#include "models/gpt/gpt.h"
#include "models/toy/transformer.h"
#include "ops/fill.h"
#include "ops/shape_ops.h"
#include "tests/support/gpt_fixtures.h"
#include "tests/support/test_util.h"

namespace dagrad::models {
namespace {

using ::dagrad::testing::AsDoubles;

const std::string kGoldenDir = testing::GptGoldens();

TEST(GptGenerate, GreedyEqualsReferenceWithAndWithoutCache) {
  ASSERT_OK_AND_ASSIGN(auto gen,
                       Generator::Load(kGoldenDir + "model.safetensors"));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile in,
                       ReadSafetensors(kGoldenDir + "input.safetensors"));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile want,
                       ReadSafetensors(kGoldenDir + "expected.safetensors"));
  const Tensor& tokens = *in.Find("tokens");
  const Tensor& greedy =
      *want.Find("greedy");  // (3, 6 + 12): past block_size 8
  const int64_t T = tokens.shape()[1], total = greedy.shape()[1];
  // Prompt and output overflow the window: the last total - block_size
  // tokens come after it slid, where the cache is rebuilt for every token.
  ASSERT_LT(T, gen->model().max_len());
  ASSERT_GT(total, gen->model().max_len() + 4);
  for (int64_t b = 0; b < tokens.shape()[0]; ++b) {
    const int64_t* row = tokens.data<int64_t>() + b * T;
    const int64_t* expected = greedy.data<int64_t>() + b * total;
    for (bool cache : {true, false}) {
      ASSERT_OK_AND_ASSIGN(std::vector<int64_t> got,
                           gen->Generate(std::vector<int64_t>(row, row + T),
                                         {.tokens = total - T,
                                          .sampling = {.temperature = 0},
                                          .kv_cache = cache}));
      EXPECT_EQ(got, std::vector<int64_t>(expected + T, expected + total))
          << "row " << b << (cache ? " with" : " without") << " the cache";
    }
  }
}

TEST(GptGenerate, CacheEqualsRecomputingTheWindowWhenSampling) {
  ASSERT_OK_AND_ASSIGN(auto gen,
                       Generator::Load(kGoldenDir + "model.safetensors"));
  const std::vector<int64_t> prompt = {72, 105};
  for (uint64_t seed : {1, 2}) {
    GenerateOptions options{
        .tokens = 30,
        .sampling = {.temperature = 0.9, .top_k = 20, .seed = seed}};
    ASSERT_OK_AND_ASSIGN(std::vector<int64_t> cached,
                         gen->Generate(prompt, options));
    options.kv_cache = false;
    ASSERT_OK_AND_ASSIGN(std::vector<int64_t> recomputed,
                         gen->Generate(prompt, options));
    EXPECT_EQ(cached, recomputed) << "seed " << seed;
    ASSERT_OK_AND_ASSIGN(std::vector<int64_t> again,
                         gen->Generate(prompt, options));
    EXPECT_EQ(again, recomputed) << "a seed reproduces its sample";
  }
}

// The invariant the cache rests on: the last T2 tokens attending to the
// keys and values of the first T1 (a past) give the full forward's last T2
// rows of logits.
TEST(GptGenerate, ForwardWithPastContinuesTheSequence) {
  Graph g;
  ASSERT_OK_AND_ASSIGN(
      Gpt model,
      Gpt::Create(
          g,
          {.vocab = 11, .block_size = 7, .dim = 8, .heads = 2, .layers = 2}));
  const int64_t B = 2, T1 = 3, T2 = 4;
  Value all = g.Input("tokens", DType::kInt64, {B, T1 + T2});
  Value full = model(all);
  GptOutputs first = model.Forward(Slice(all, 1, 0, T1));
  const Value kept = Fill(g, {T1}, 1, DType::kBool);
  std::vector<nn::KvCache> cache;
  for (size_t l = 0; l < first.keys.size(); ++l) {
    cache.push_back({.past_keys = first.keys[l], .past_values = first.values[l], .keep = kept});
  }
  Value rest = model.ForwardCached(Slice(all, 1, T1, T1 + T2),
                                   Arange(g, T1, T1 + T2, 1, DType::kInt64),
                                   absl::MakeSpan(cache));
  Tensor ids = testing::RandomInts({B, T1 + T2}, 5, 0, 11);
  ASSERT_OK_AND_ASSIGN(
      std::vector<Tensor> out,
      testing::RunOnce(g, {Slice(full, 1, T1, T1 + T2), rest}, {{all, ids}}));
  testing::ExpectAllClose(out[1], AsDoubles(out[0]), 1e-5, 1e-6,
                          "continued logits");
}

// Draws `n` tokens (draws 0..n-1) from `logits`, counted per token.
std::vector<int> Counts(const std::vector<float>& logits, const SamplingOptions& options, int n) {
  std::vector<int> counts(logits.size());
  auto sampler = TokenSampler::Create(static_cast<int64_t>(logits.size()), options);
  EXPECT_TRUE(sampler.ok()) << sampler.status();
  for (int i = 0; sampler.ok() && i < n; ++i) {
    absl::StatusOr<int64_t> t = (*sampler)->Sample(logits, i);
    EXPECT_TRUE(t.ok()) << t.status();
    if (t.ok()) ++counts[*t];
  }
  return counts;
}

TEST(TokenSampler, GreedyTopKAndTemperature) {
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f), -10.0f};
  EXPECT_EQ(Counts({1, 3, 3, 2}, {.temperature = 0}, 1), (std::vector<int>{0, 1, 0, 0}))
      << "greedy: the first maximum";
  EXPECT_EQ(Counts(logits, {.top_k = 1, .seed = 4}, 20)[0], 20) << "top_k 1 is greedy";
  const int n = 20000;
  const std::vector<int> counts = Counts(logits, {.temperature = 1, .top_k = 3, .seed = 9}, n);
  // top_k = 3 drops token 3; 0, 1, 2 keep their probabilities 0.5, 0.3, 0.2.
  EXPECT_EQ(counts[3], 0);
  EXPECT_NEAR(counts[0] / double(n), 0.5, 0.02);
  EXPECT_NEAR(counts[1] / double(n), 0.3, 0.02);
  EXPECT_NEAR(counts[2] / double(n), 0.2, 0.02);
  // A higher temperature flattens: token 3 appears.
  EXPECT_GT(Counts(logits, {.temperature = 5, .seed = 9}, 2000)[3], 0);
  EXPECT_STATUS(TokenSampler::Create(4, {.temperature = -1}).status(),
                absl::StatusCode::kInvalidArgument, "temperature");
  EXPECT_STATUS(TokenSampler::Create(4, {.top_k = -1}).status(),
                absl::StatusCode::kInvalidArgument, "top_k");
  ASSERT_OK_AND_ASSIGN(auto sampler, TokenSampler::Create(4, {}));
  EXPECT_STATUS(sampler->Sample({1, 2}, 0).status(), absl::StatusCode::kInvalidArgument,
                "expected 4 logits, got 2");
}

// Ties with the k-th largest logit are kept, as Hugging Face's
// TopKLogitsWarper (scores < the k-th are removed) keeps them: top_k 2 of
// 1, 3, 3, 3, 0 draws tokens 1, 2 and 3 alike (it drew 1 and 2 only).
TEST(TokenSampler, TopKKeepsTiesWithTheKth) {
  const int n = 9000;
  const std::vector<int> counts = Counts({1, 3, 3, 3, 0}, {.temperature = 1, .top_k = 2, .seed = 7}, n);
  EXPECT_EQ(counts[0] + counts[4], 0);
  for (int id : {1, 2, 3}) EXPECT_NEAR(counts[id] / double(n), 1.0 / 3, 0.03) << id;
}

// Nucleus sampling keeps the fewest most likely tokens whose probabilities
// reach top_p, renormalised: of 0.5, 0.3, 0.15, 0.05, top_p 0.7 keeps the
// first two (0.5 < 0.7 <= 0.8), drawn 0.625 : 0.375, as Hugging Face's
// TopPLogitsWarper (which drops the ascending cumulative sums <= 1 - top_p:
// 0.05, 0.2) does.
TEST(TokenSampler, TopPKeepsTheNucleus) {
  const std::vector<float> logits = {std::log(0.15f), std::log(0.5f), std::log(0.05f),
                                     std::log(0.3f)};
  const int n = 20000;
  const std::vector<int> counts = Counts(logits, {.top_p = 0.7, .seed = 3}, n);
  EXPECT_EQ(counts[0] + counts[2], 0);
  EXPECT_NEAR(counts[1] / double(n), 0.625, 0.02);
  EXPECT_NEAR(counts[3] / double(n), 0.375, 0.02);
  EXPECT_EQ(Counts(logits, {.top_p = 0.9, .seed = 3}, n)[2], 0) << "0.95 before token 2";
  EXPECT_GT(Counts(logits, {.top_p = 0.96, .seed = 3}, n)[2], 0) << "0.95 < 0.96 keeps it";
  EXPECT_EQ(Counts(logits, {.top_p = 0.01, .seed = 3}, 50)[1], 50) << "a tiny top_p is greedy";
  EXPECT_EQ(Counts(logits, {.top_p = 1e-50, .seed = 3}, 50)[1], 50) << "below float's least";
  EXPECT_EQ(Counts(logits, {.top_k = 1, .top_p = 0.9, .seed = 3}, 50)[1], 50) << "top_k first";
  for (double bad : {0.0, -0.5, 1.5, std::nan("")}) {
    EXPECT_STATUS(TokenSampler::Create(4, {.top_p = bad}).status(),
                  absl::StatusCode::kInvalidArgument, "top_p must be in (0, 1]");
  }
}

// A temperature near 0 draws the greedy token: logits / 1e-45 overflowed
// to inf and Softmax made NaN, refused by Multinomial (`dagrad generate
// --temperature=1e-45`). Large logits overflow at larger temperatures.
TEST(TokenSampler, ATemperatureNearZeroIsGreedy) {
  const std::vector<float> logits = {1, 3, 2.5f, -1e30f};
  for (double t : {1e-45, 1e-30, 1e-6}) {
    EXPECT_EQ(Counts(logits, {.temperature = t, .seed = 2}, 10), (std::vector<int>{0, 10, 0, 0}))
        << "temperature " << t;
  }
  EXPECT_EQ(Counts({3e38f, 3.1e38f}, {.temperature = 0.5}, 10), (std::vector<int>{0, 10}));
}

// A huge temperature draws the kept tokens alike: 1 / 1e300 rounded to a
// float scale of 0, and top_k's -inf logits times 0 made NaN, refused by
// Multinomial (`dagrad generate --temperature=1e300 --top_k=3`).
TEST(TokenSampler, AHugeTemperatureDrawsTheKeptTokensAlike) {
  const int n = 9000;
  const std::vector<int> counts =
      Counts({1, 3, 2.5f, -1e30f}, {.temperature = 1e300, .top_k = 3, .seed = 5}, n);
  EXPECT_EQ(counts[3], 0);
  for (int id : {0, 1, 2}) EXPECT_NEAR(counts[id] / double(n), 1.0 / 3, 0.03) << id;
}

// A seed reproduces a sample byte for byte, and another seed draws another.
TEST(TokenSampler, ASeedReproducesItsSample) {
  ASSERT_OK_AND_ASSIGN(auto gen, Generator::Load(kGoldenDir + "model.safetensors"));
  auto sample = [&](uint64_t seed) {
    absl::StatusOr<std::vector<int64_t>> out = gen->Generate(
        BytesToTokens("Hi"),
        {.tokens = 40, .sampling = {.temperature = 1.0, .top_k = 50, .seed = seed}});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? TokensToBytes(*out) : std::string();
  };
  const std::string a = sample(7);
  EXPECT_EQ(a.size(), 40u);
  EXPECT_EQ(sample(7), a);
  EXPECT_NE(sample(8), a);
}

TEST(GptGenerate, Errors) {
  ASSERT_OK_AND_ASSIGN(auto gen,
                       Generator::Load(kGoldenDir + "model.safetensors"));
  EXPECT_STATUS(gen->Generate({}, {}).status(),
                absl::StatusCode::kInvalidArgument, "empty");
  EXPECT_STATUS(gen->Generate({300}, {}).status(),
                absl::StatusCode::kInvalidArgument, "outside [0, 256)");
  EXPECT_STATUS(Generator::Load(kGoldenDir + "input.safetensors").status(),
                absl::StatusCode::kInvalidArgument, "'model' is missing");
  EXPECT_EQ(TokensToBytes(BytesToTokens(std::string("a\xff\0b", 4))),
            std::string("a\xff\0b", 4));
}

// A user's causal model: the GPT's function behind the interface alone,
// without a KV cache, so that the generator recomputes the window.
class WrappedGpt : public LanguageModel {
 public:
  explicit WrappedGpt(Gpt gpt) : gpt_(std::move(gpt)) {}
  int64_t vocab() const override { return gpt_.vocab(); }
  int64_t max_len() const override { return gpt_.max_len(); }
  bool causal() const override { return true; }
  Value Logits(Value tokens, Value lengths) const override { return gpt_(tokens); }
  const std::vector<Value>& parameters() const override { return gpt_.parameters(); }
  std::map<std::string, std::string> Metadata() const override { return {{"model", "mine"}}; }

 private:
  Gpt gpt_;
};

TEST(Generator, AnyCausalModelContinuesAsTheReferenceDoes) {
  ASSERT_OK_AND_ASSIGN(SafetensorsFile file, ReadCheckpoint(kGoldenDir + "model.safetensors"));
  ASSERT_OK_AND_ASSIGN(const GptConfig config,
                       GptConfig::FromCheckpoint(file, kGoldenDir + "model.safetensors"));
  auto build = [&](Graph& g) -> absl::StatusOr<std::unique_ptr<LanguageModel>> {
    absl::StatusOr<Gpt> gpt = Gpt::Create(g, config);
    if (!gpt.ok()) return gpt.status();
    return std::make_unique<WrappedGpt>(*std::move(gpt));
  };
  ASSERT_OK_AND_ASSIGN(auto gen, Generator::Create(build, file));
  EXPECT_FALSE(gen->model().kv_cache().has_value());
  ASSERT_OK_AND_ASSIGN(SafetensorsFile in, ReadSafetensors(kGoldenDir + "input.safetensors"));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile want, ReadSafetensors(kGoldenDir + "expected.safetensors"));
  const Tensor& tokens = *in.Find("tokens");
  const Tensor& greedy = *want.Find("greedy");
  const int64_t T = tokens.shape()[1], total = greedy.shape()[1];
  const int64_t* row = tokens.data<int64_t>();
  ASSERT_OK_AND_ASSIGN(std::vector<int64_t> got,
                       gen->Generate(std::vector<int64_t>(row, row + T),
                                     {.tokens = total - T, .sampling = {.temperature = 0}}));
  EXPECT_EQ(got, std::vector<int64_t>(greedy.data<int64_t>() + T, greedy.data<int64_t>() + total));
}

TEST(Generator, RefusesABuilderThatGivesNoModelOrABrokenGraph) {
  auto none = [](Graph&) -> absl::StatusOr<std::unique_ptr<LanguageModel>> { return nullptr; };
  EXPECT_STATUS(Generator::Create(none, SafetensorsFile{}).status(),
                absl::StatusCode::kInvalidArgument, "the model builder returned no model");
  auto broken = [](Graph& g) -> absl::StatusOr<std::unique_ptr<LanguageModel>> {
    absl::StatusOr<Gpt> gpt = Gpt::Create(g, {.block_size = 4, .dim = 8, .heads = 2, .layers = 1});
    if (!gpt.ok()) return gpt.status();
    Reshape(g.Input("x", DType::kFloat32, {2, 3}), {5});  // an error in the builder's graph
    return std::make_unique<Gpt>(*std::move(gpt));
  };
  EXPECT_STATUS(Generator::Create(broken, SafetensorsFile{}).status(),
                absl::StatusCode::kInvalidArgument, "reshape");
}

TEST(Generator, RefusesAModelThatIsNotCausal) {
  auto build = [](Graph& g) -> absl::StatusOr<std::unique_ptr<LanguageModel>> {
    absl::StatusOr<ToyTransformer> toy = ToyTransformer::Create(g, ToyConfig{});
    if (!toy.ok()) return toy.status();
    return std::make_unique<ToyTransformer>(*std::move(toy));
  };
  EXPECT_STATUS(Generator::Create(build, SafetensorsFile{}).status(),
                absl::StatusCode::kInvalidArgument,
                "generation continues causal models only; this one (model=toy)");
}

}  // namespace
}  // namespace dagrad::models
