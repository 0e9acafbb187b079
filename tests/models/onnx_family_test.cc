// ExportOnnxFamily (ops/onnx/export_family.h): a model exported from a
// ShapeFamily's declaration of its symbolic sizes runs under ONNX Runtime at
// sizes it was not built at and gives dagrad's logits there; a fixed size
// equal to the first size tried moves the export to other sizes; a size
// derived from a symbol other than as itself is refused, naming the node.

#ifdef DAGRAD_HAVE_ONNX

#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/executor.h"
#include "engine/io/checkpoint.h"
#include "engine/status_macros.h"
#include "models/gpt/gpt.h"
#include "models/nn/nn.h"
#include "models/toy/transformer.h"
#include "ops/elementwise.h"
#include "ops/fill.h"
#include "ops/onnx/export_family.h"
#include "ops/reduce.h"
#include "ops/sampling.h"
#include "ops/shape_ops.h"
#include "tests/models/support/ort.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

const ShapeFamilyOptions kTokens = {.inputs = {{"tokens", DType::kInt64, {"batch", "sequence"}}},
                                    .bounds = {{"batch", 64}, {"sequence", 8}}};

// ExpectOrtMatches exports `logits` of tokens over kTokens and checks ONNX
// Runtime's logits against dagrad's at each (batch, sequence) of `sizes`.
void ExpectOrtMatches(Graph& g, const std::function<Value(Value)>& logits,
                      const std::vector<std::pair<int64_t, int64_t>>& sizes,
                      const std::string& name, const ShapeFamilyOptions& family = kTokens) {
  const std::string runner = OrtRunner();
  if (runner.empty()) GTEST_SKIP() << "onnxruntime-node is not installed (tools/setup.sh --onnx)";
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(SafetensorsFile weights, CollectVariables(exec, g.Variables()));
  const std::string model = testing::NewTempDir("family_" + name) + "/model.onnx";
  auto build = [&](Graph&, const Binding& b) -> absl::StatusOr<Specialized> {
    return Specialized{.fetches = {logits(b.input("tokens"))}};
  };
  const absl::Status exported =
      ExportOnnxFamily(g, family, build, model, {.variables = &weights, .output_names = {"logits"}});
  ASSERT_TRUE(exported.ok()) << exported;
  for (auto [B, T] : sizes) {
    const Tensor tokens = RandomInts({B, T}, B * 10 + T, 0, 11);
    Value in = g.Input("check_" + std::to_string(B) + "_" + std::to_string(T), DType::kInt64,
                       {B, T});
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, RunOnce(g, {logits(in)}, {{in, tokens}}));
    ASSERT_OK_AND_ASSIGN(SafetensorsFile got, RunOrt(runner, model, {.tensors = {{"tokens", tokens}}}));
    ASSERT_NE(got.Find("logits"), nullptr);
    ExpectAllClose(*got.Find("logits"), AsDoubles(want[0]), 1e-5, 1e-6,
                   name + " at " + std::to_string(B) + " x " + std::to_string(T));
  }
}

// ExpectEmbedThenLinearMatches: ExpectOrtMatches of an Embedding (11, 4)
// and a Linear of `outputs`, whose weight's fixed size may coincide with a
// symbol's.
void ExpectEmbedThenLinearMatches(int64_t outputs,
                                  const std::vector<std::pair<int64_t, int64_t>>& sizes,
                                  const std::string& name, const ShapeFamilyOptions& family = kTokens) {
  Graph g;
  ASSERT_OK_AND_ASSIGN(nn::Embedding embed, nn::Embedding::Create(g, "embed", {.num_embeddings = 11,
                                                                              .embedding_dim = 4}));
  ASSERT_OK_AND_ASSIGN(nn::Linear head, nn::Linear::Create(g, "head", {.in_features = 4,
                                                                       .out_features = outputs}));
  ExpectOrtMatches(g, [&](Value t) { return head(embed(t)); }, sizes, name, family);
}

TEST(OnnxFamily, TheGptRunsAtOtherSizes) {
  Graph g;
  ASSERT_OK_AND_ASSIGN(models::Gpt gpt, models::Gpt::Create(g, {.vocab = 11, .block_size = 8, .dim = 8,
                                                         .heads = 2, .layers = 2}));
  ExpectOrtMatches(g, [&](Value t) { return gpt.Logits(t); }, {{1, 1}, {3, 8}, {6, 2}}, "gpt");
}

// A GPT of block size 7 (dagrad train --seq_len=7) was refused: its small
// fixed sizes (q, k and v's 3, the heads, the slices' bounds) and the
// position table's 7 took every sequence size that batch's first size, 5,
// left. Batch now moves out of the way, and a permutation's axes are no
// sizes.
TEST(OnnxFamily, AGptOfBlockSizeSevenRunsAtOtherSizes) {
  Graph g;
  ASSERT_OK_AND_ASSIGN(models::Gpt gpt, models::Gpt::Create(g, {.vocab = 11, .block_size = 7,
                                                                .dim = 16, .heads = 4, .layers = 1}));
  const ShapeFamilyOptions family = {.inputs = kTokens.inputs,
                                     .bounds = {{"batch", 64}, {"sequence", 7}}};
  ExpectOrtMatches(g, [&](Value t) { return gpt.Logits(t); }, {{1, 1}, {5, 7}, {2, 3}}, "gpt7",
                   family);
}

TEST(OnnxFamily, TheToyTransformerRunsAtOtherSizes) {
  Graph g;
  ASSERT_OK_AND_ASSIGN(models::ToyTransformer toy, models::ToyTransformer::Create(g, {}));
  ExpectOrtMatches(g, [&](Value t) { return toy.Logits(t); }, {{1, 3}, {5, 8}}, "toy");
}

// A sequence bounded by 5 beside a Linear of 5 outputs was refused: its
// first size, 5 at its bound, coincided, and only larger sizes were tried.
// The tightest bound now takes the smallest sizes (sequence 2, batch 5),
// and a symbol moves down as well as up.
TEST(OnnxFamily, ATightBoundTakesTheSmallSizes) {
  const ShapeFamilyOptions five = {.inputs = kTokens.inputs, .bounds = {{"batch", 64}, {"sequence", 5}}};
  ExpectEmbedThenLinearMatches(5, {{1, 1}, {5, 5}, {7, 3}}, "tight", five);
}

// A slice from a negative start counts from the end at every size (its
// start resolved at the size exported was written: (3, 5) at 3 x 9).
TEST(OnnxFamily, ANegativeStartCountsFromTheEndAtEverySize) {
  Graph g;
  auto last = [](Value t) { return Slice(t, 1, -1, std::numeric_limits<int64_t>::max()); };
  ExpectOrtMatches(g, last, {{1, 1}, {3, 8}, {2, 5}}, "slice_last");
}

// A Linear of 2 outputs: batch = 2, the first size tried, would make the
// weight's 2 the batch; the export moves to other sizes.
TEST(OnnxFamily, AFixedSizeEqualToTheFirstTriedMovesTheSizes) {
  ExpectEmbedThenLinearMatches(2, {{2, 2}, {7, 5}}, "coincidence");
}

// The header's example, as written there.
TEST(OnnxFamily, HeaderExample) {
  Graph g;
  absl::StatusOr<std::unique_ptr<models::LanguageModel>> built =
      models::Gpt::Builder({.vocab = 11, .block_size = 8, .dim = 8, .heads = 2, .layers = 1})(g);
  ASSERT_OK(built.status());
  const std::unique_ptr<models::LanguageModel>& model = *built;
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(SafetensorsFile weights, CollectVariables(exec, g.Variables()));
  const std::string cwd = std::filesystem::current_path();
  std::filesystem::current_path(testing::NewTempDir("family_header"));
  auto example = [&]() -> absl::Status {
    DAGRAD_RETURN_IF_ERROR(ExportOnnxFamily(
        g, {.inputs = {{"tokens", DType::kInt64, {"batch", "sequence"}}},
            .bounds = {{"batch", 64}, {"sequence", 8}}},
        [&](Graph&, const Binding& b) -> absl::StatusOr<Specialized> {
          return Specialized{.fetches = {model->Logits(b.input("tokens"))}};
        },
        "model.onnx", {.variables = &weights, .output_names = {"logits"}}));
    return absl::OkStatus();
  };
  const absl::Status st = example();
  EXPECT_TRUE(st.ok()) << st;
  EXPECT_TRUE(std::filesystem::exists("model.onnx"));
  std::filesystem::current_path(cwd);
}

TEST(OnnxFamily, ASizeDerivedFromASymbolIsRefusedByName) {
  Graph g;
  auto drop_last = [](Graph&, const Binding& b) -> absl::StatusOr<Specialized> {
    Value t = b.input("tokens");
    return Specialized{.fetches = {Slice(t, 1, 0, t.dim(1) - 1)}};
  };
  EXPECT_STATUS(SerializeOnnxFamily(g, kTokens, drop_last, {}).status(),
                absl::StatusCode::kInvalidArgument, "depends on the sizes other than as a symbol");
  auto mean = [](Graph&, const Binding& b) -> absl::StatusOr<Specialized> {
    Value t = Cast(b.input("tokens"), DType::kFloat32);
    return Specialized{.fetches = {Scale(t, 1.0 / t.dim(1))}};
  };
  EXPECT_STATUS(SerializeOnnxFamily(g, kTokens, mean, {}).status(),
                absl::StatusCode::kInvalidArgument, "attribute");
  const ShapeFamilyOptions tight = {.inputs = {{"x", DType::kFloat32, {"n"}}},
                                    .bounds = {{"n", 2}}};
  EXPECT_STATUS(SerializeOnnxFamily(g, tight, drop_last, {}).status(),
                absl::StatusCode::kInvalidArgument, "symbol 'n' of input 'x' needs a bound >= 3");
}

// A size derived from one symbol that equals another's at the first sizes
// tried and again when both move by one (sequence + 3 = batch: 2 + 3 = 5,
// then 3 + 3 = 6) is refused too: each check moves one symbol alone. It
// was exported, and ONNX Runtime gave other shapes at other sizes.
TEST(OnnxFamily, ADerivedSizeEqualToAnotherSymbolIsRefused) {
  Graph g;
  const ShapeFamilyOptions family = {.inputs = {{"x", DType::kFloat32, {"batch", "sequence"}}},
                                     .bounds = {{"batch", 64}, {"sequence", 8}}};
  auto widen = [](Graph&, const Binding& b) -> absl::StatusOr<Specialized> {
    const int64_t B = b.size("batch"), T = b.size("sequence");
    Value y = Concat({b.input("x"), Fill(*b.input("x").graph(), {B, 3}, 1.0)}, 1);  // (B, T + 3)
    return Specialized{.fetches = {BroadcastTo(Sum(y, {1}, true), Shape({B, T + 3}))}};
  };
  EXPECT_STATUS(SerializeOnnxFamily(g, family, widen, {}).status(),
                absl::StatusCode::kInvalidArgument, "depends on the sizes other than as a symbol");
}

// ExpectFamilyMatchesOrt exports `build` over `family` (float32 inputs)
// and checks ONNX Runtime's "out" against the family's own run at each
// binding of `sizes` (each input's dims with its symbols' sizes).
void ExpectFamilyMatchesOrt(const ShapeFamilyOptions& family, const SpecializeFn& build,
                            const std::vector<std::map<std::string, int64_t>>& sizes,
                            Graph& g, const std::string& name) {
  const std::string runner = OrtRunner();
  if (runner.empty()) GTEST_SKIP() << "onnxruntime-node is not installed (tools/setup.sh --onnx)";
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(SafetensorsFile weights, CollectVariables(exec, g.Variables()));
  const std::string model = testing::NewTempDir("family_" + name) + "/model.onnx";
  ASSERT_OK(ExportOnnxFamily(g, family, build, model,
                             {.variables = &weights, .output_names = {"out"}}));
  ASSERT_OK_AND_ASSIGN(auto runs, ShapeFamily::Create(g, exec, family, build));
  for (const auto& binding : sizes) {
    NamedFeeds feeds;
    SafetensorsFile in;
    for (const FamilyInput& input : family.inputs) {
      dagrad::Dims dims;
      for (const Dim& d : input.dims) dims.push_back(d.symbol.empty() ? d.size : binding.at(d.symbol));
      feeds.push_back({input.name, Random(DType::kFloat32, Shape(dims), feeds.size() + 7)});
      in.tensors.push_back(feeds.back());
    }
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, runs->Run(feeds));
    ASSERT_OK_AND_ASSIGN(SafetensorsFile got, RunOrt(runner, model, in));
    ASSERT_NE(got.Find("out"), nullptr);
    ASSERT_EQ(got.Find("out")->shape(), want[0].shape()) << name;
    ExpectAllClose(*got.Find("out"), AsDoubles(want[0]), 1e-5, 1e-6, name);
  }
}

// Bounds written as constants were wrong at other sizes: a slice of a
// table to the sequence's length (ONNX Runtime refused other lengths), a
// fixed prefix that the first sizes tried clamped (exported as "to the
// end"), and TopK's k equal to a symbol. A bound that is a symbol's size
// is now read at run time, and a fixed one written as given.
TEST(OnnxFamily, SliceBoundsAndTopKFollowTheirSymbols) {
  const ShapeFamilyOptions bt = {.inputs = {{"x", DType::kFloat32, {"batch", "sequence"}}},
                                 .bounds = {{"batch", 64}, {"sequence", 8}}};
  Graph g;
  const Value pos = g.Variable("pos", {8, 4}, Initializer::Normal(0.0, 1.0));
  ExpectFamilyMatchesOrt(
      bt,
      [pos](Graph&, const Binding& b) -> absl::StatusOr<Specialized> {
        return Specialized{.fetches = {Sum(b.input("x"), {0}) +
                                       Sum(Slice(pos, 0, 0, b.size("sequence")), {1})}};
      },
      {{{"batch", 2}, {"sequence", 3}}, {{"batch", 3}, {"sequence", 7}}}, g, "pos_slice");
  ExpectFamilyMatchesOrt(
      bt,
      [](Graph&, const Binding& b) -> absl::StatusOr<Specialized> {
        return Specialized{.fetches = {Slice(b.input("x"), 1, 0, 3)}};
      },
      {{{"batch", 2}, {"sequence", 2}}, {{"batch", 2}, {"sequence", 6}}}, g, "prefix");
  const ShapeFamilyOptions scores = {
      .inputs = {{"x", DType::kFloat32, {"batch", 12}}, {"w", DType::kFloat32, {"sequence"}}},
      .bounds = {{"batch", 64}, {"sequence", 8}}};
  ExpectFamilyMatchesOrt(
      scores,
      [](Graph&, const Binding& b) -> absl::StatusOr<Specialized> {
        return Specialized{.fetches = {Sum(TopK(b.input("x"), b.size("sequence"), 1).values, {1}) +
                                       Sum(b.input("w"))}};
      },
      {{{"batch", 2}, {"sequence", 2}}, {{"batch", 3}, {"sequence", 6}}}, g, "topk");
}

// A declaration ShapeFamily::Create refuses is refused by the export too
// (an unused bound and max_plans 0 exported).
TEST(OnnxFamily, RefusesTheDeclarationsShapeFamilyRefuses) {
  Graph g;
  auto same = [](Graph&, const Binding& b) -> absl::StatusOr<Specialized> {
    return Specialized{.fetches = {b.input("tokens")}};
  };
  ShapeFamilyOptions unused = kTokens;
  unused.bounds["width"] = 9;
  EXPECT_STATUS(SerializeOnnxFamily(g, unused, same, {}).status(),
                absl::StatusCode::kInvalidArgument, "no input uses 'width'");
  ShapeFamilyOptions no_plans = kTokens;
  no_plans.max_plans = 0;
  EXPECT_STATUS(SerializeOnnxFamily(g, no_plans, same, {}).status(),
                absl::StatusCode::kInvalidArgument, "max_plans 0 < 1");
}

// An error the graph recorded before (another build's) is not the export's.
TEST(OnnxFamily, AnEarlierErrorInTheGraphIsNotTheExports) {
  Graph g;
  ASSERT_FALSE(Reshape(g.Input("other", DType::kFloat32, {4, 3}), {5}).ok());
  auto twice = [](Graph&, const Binding& b) -> absl::StatusOr<Specialized> {
    return Specialized{.fetches = {Scale(Cast(b.input("tokens"), DType::kFloat32), 2.0)}};
  };
  const absl::Status exported = SerializeOnnxFamily(g, kTokens, twice, {}).status();
  EXPECT_TRUE(exported.ok()) << exported;
}

// A huge bound is no list of that many sizes to try.
TEST(OnnxFamily, AHugeBoundOnACoincidingSymbolExports) {
  ExpectEmbedThenLinearMatches(
      5, {{3, 4}}, "huge_bound",
      {.inputs = {{"tokens", DType::kInt64, {"batch", "sequence"}}},
       .bounds = {{"batch", int64_t{1} << 62}, {"sequence", 8}}});
}

}  // namespace
}  // namespace dagrad::testing

#endif  // DAGRAD_HAVE_ONNX
