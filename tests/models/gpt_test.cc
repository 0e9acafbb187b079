// models::Gpt against its PyTorch reference (tools/reference/gpt.py), through
// the goldens of tools/goldens/gpt.py: logits, loss and every gradient (the
// tied weight's included), checkpoints both ways, and a float64 gradcheck.

#include "models/gpt/gpt.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "engine/io/checkpoint.h"
#include "engine/io/safetensors.h"
#include "engine/status_macros.h"
#include "models/toy/transformer.h"
#include "ops/autodiff/autodiff.h"
#include "ops/loss.h"
#include "ops/reduce.h"
#include "tests/support/gpt_fixtures.h"
#include "tests/autodiff/support/gradcheck.h"
#include "tests/support/test_util.h"

namespace dagrad::models {
namespace {

using ::dagrad::testing::AsDoubles;

const std::string kGoldens = testing::GptGoldens();
using ::dagrad::testing::MaxRelativeError;

const Tensor& Find(const SafetensorsFile& f, const std::string& name) {
  static const Tensor kEmpty;
  const Tensor* t = f.Find(name);
  EXPECT_NE(t, nullptr) << "no tensor " << name;
  return t ? *t : kEmpty;
}

// A model loaded from a checkpoint, with logits, loss and gradients for the
// golden input.
struct Loaded {
  Graph g;
  Gpt model;
  Value tokens, targets, logits, loss;
  std::vector<Value> grads;
  std::unique_ptr<Executor> exec;
};

absl::Status Load(const std::string& checkpoint, Loaded& m) {
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile ckpt, ReadCheckpoint(checkpoint));
  DAGRAD_ASSIGN_OR_RETURN(GptConfig config,
                          GptConfig::FromMetadata(ckpt.metadata));
  DAGRAD_ASSIGN_OR_RETURN(m.model, Gpt::Create(m.g, config));
  m.tokens = m.g.Input("tokens", DType::kInt64, {3, 6});
  m.targets = m.g.Input("targets", DType::kInt64, {3, 6});
  m.logits = m.model(m.tokens);
  m.loss = CrossEntropy(m.logits, m.targets);
  DAGRAD_ASSIGN_OR_RETURN(m.grads, Gradients(m.loss, m.model.parameters()));
  DAGRAD_RETURN_IF_ERROR(m.g.status());
  m.exec = std::make_unique<Executor>(m.g);
  return AssignVariables(*m.exec, m.model.parameters(), ckpt, checkpoint);
}

absl::StatusOr<std::vector<Tensor>> RunGolden(
    Loaded& m, const std::vector<Value>& fetches) {
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile in,
                          ReadSafetensors(kGoldens + "input.safetensors"));
  DAGRAD_ASSIGN_OR_RETURN(auto plan, m.exec->Compile(fetches));
  return m.exec->Run(*plan, {{m.tokens, *in.Find("tokens")},
                             {m.targets, *in.Find("targets")}});
}

TEST(Gpt, MatchesReferenceLogitsLossAndEveryGradient) {
  Loaded m;
  ASSERT_OK(Load(kGoldens + "model.safetensors", m));
  std::vector<Value> fetches = {m.logits, m.loss};
  fetches.insert(fetches.end(), m.grads.begin(), m.grads.end());
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, RunGolden(m, fetches));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile want,
                       ReadSafetensors(kGoldens + "expected.safetensors"));
  EXPECT_LE(MaxRelativeError(out[0], Find(want, "logits")), 1e-4);
  EXPECT_LE(MaxRelativeError(out[1], Find(want, "loss")), 1e-4);
  const nn::NamedParameters named = m.model.named_parameters();
  ASSERT_EQ(named.size(), m.grads.size());
  for (size_t i = 0; i < named.size(); ++i) {
    EXPECT_LE(
        MaxRelativeError(out[2 + i], Find(want, "grad." + named[i].first)),
        1e-4)
        << named[i].first;
  }
  // Every reference gradient has a dagrad twin: the tied head is no extra
  // parameter.
  EXPECT_EQ(want.tensors.size(), 3 + named.size());
}

TEST(Gpt, ParameterNamesAreTheReferenceStateDictWithTheHeadOnce) {
  ASSERT_OK_AND_ASSIGN(SafetensorsFile ckpt,
                       ReadCheckpoint(kGoldens + "model.safetensors"));
  Graph g;
  ASSERT_OK_AND_ASSIGN(
      Gpt model,
      Gpt::Create(g, {.block_size = 8, .dim = 16, .heads = 2, .layers = 2}));
  const nn::NamedParameters named = model.named_parameters();
  ASSERT_EQ(named.size(), ckpt.tensors.size());
  for (const auto& [name, value] : named) {
    const Tensor* t = ckpt.Find(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->shape(), value.shape()) << name;
  }
  EXPECT_EQ(named.front().first, "transformer.wte.weight");
  EXPECT_EQ(named[2].first, "transformer.h.0.ln_1.weight");
  EXPECT_EQ(named.back().first, "transformer.ln_f.bias");
  EXPECT_EQ(g.Parameters().size(), named.size());  // lm_head declares nothing
}

TEST(Gpt, CheckpointRoundTripKeepsTheLogitsAndTheLayout) {
  Loaded m;
  ASSERT_OK(Load(kGoldens + "model.safetensors", m));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> before, RunGolden(m, {m.logits}));
  const std::string path = testing::NewTempDir("gpt_roundtrip") + "/model.safetensors";
  ASSERT_OK(SaveVariables(*m.exec, m.model.parameters(),
                          m.model.config().ToMetadata(), path));
  // The file holds exactly the reference checkpoint's tensors and metadata
  // keys.
  ASSERT_OK_AND_ASSIGN(SafetensorsFile saved, ReadCheckpoint(path));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile golden,
                       ReadCheckpoint(kGoldens + "model.safetensors"));
  ASSERT_EQ(saved.tensors.size(), golden.tensors.size());
  for (const auto& [name, tensor] : golden.tensors) {
    ASSERT_NE(saved.Find(name), nullptr) << name;
    EXPECT_EQ(MaxRelativeError(*saved.Find(name), tensor), 0) << name;
  }
  for (const auto& [key, value] : golden.metadata)
    EXPECT_EQ(saved.metadata[key], value) << key;
  Loaded reloaded;
  ASSERT_OK(Load(path, reloaded));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> after,
                       RunGolden(reloaded, {reloaded.logits}));
  EXPECT_EQ(MaxRelativeError(after[0], before[0]), 0);
}

// The reference loads dagrad's checkpoint and gives dagrad's logits, when
// PyTorch is installed (tools/goldens/gpt.py --check).
TEST(Gpt, ReferenceLoadsDagradCheckpoint) {
  if (std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "no PyTorch at /usr/bin/python3";
  }
  Loaded m;
  ASSERT_OK(Load(kGoldens + "model.safetensors", m));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> logits, RunGolden(m, {m.logits}));
  const std::string dir = testing::NewTempDir("gpt_for_torch");
  ASSERT_OK(SaveVariables(*m.exec, m.model.parameters(),
                          m.model.config().ToMetadata(),
                          dir + "/gpt_for_torch.safetensors"));
  SafetensorsFile out;
  out.tensors.push_back({"logits", logits[0]});
  ASSERT_OK(WriteSafetensors(dir + "/gpt_logits.safetensors", out));
  const std::string script =
      std::string(DAGRAD_TEST_DATA_DIR) + "/../../tools/goldens/gpt.py";
  EXPECT_EQ(std::system(absl::StrCat("/usr/bin/python3 ", script, " --check ",
                                     dir, "/gpt_for_torch.safetensors ", dir,
                                     "/gpt_logits.safetensors")
                            .c_str()),
            0);
}

TEST(Gpt, TiedWeightGradientIsTheSumOfBothUses) {
  // The golden test checks the sum against PyTorch; this one shows both uses
  // reach the one parameter: rows never looked up still get the head's part.
  Graph g;
  ASSERT_OK_AND_ASSIGN(
      Gpt model,
      Gpt::Create(
          g, {.vocab = 5, .block_size = 3, .dim = 4, .heads = 1, .layers = 1}));
  Value tokens = g.Input("tokens", DType::kInt64, {1, 3});
  Value loss = Sum(model(tokens));
  const Value wte = model.parameters()[0];
  ASSERT_OK_AND_ASSIGN(std::vector<Value> grad, Gradients(loss, {wte}));
  Tensor ids = testing::T<int64_t>({1, 3}, {1, 1, 3});
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                       testing::RunOnce(g, {grad[0]}, {{tokens, ids}}));
  // Rows 0, 2 and 4 are never looked up: their gradient is the head's use
  // alone, which is nonzero (every row scores every position).
  const std::vector<double> v = AsDoubles(out[0]);
  double unused = 0;
  for (int row : {0, 2, 4}) {
    for (int j = 0; j < 4; ++j) unused += std::abs(v[row * 4 + j]);
  }
  EXPECT_GT(unused, 0);
}

TEST(Gpt, GradcheckWholeModelFloat64) {
  ASSERT_OK(testing::GradCheck(
      [](testing::CaseBuilder& b) {
        auto model = Gpt::Create(b.graph(), {.vocab = 7,
                                             .block_size = 4,
                                             .dim = 4,
                                             .heads = 2,
                                             .layers = 2,
                                             .dtype = DType::kFloat64});
        if (!model.ok()) return b.Out(b.graph().Error(model.status()));
        Value tokens = b.Input("tokens", DType::kInt64, {2, 4}, 0, 7);
        Value targets = b.Input("targets", DType::kInt64, {2, 4}, 0, 7);
        b.Out((*model)(tokens));
        b.Out(CrossEntropy((*model)(tokens), targets));
      },
      {}, /*training=*/false, /*seed=*/15));
}

TEST(Gpt, ConfigErrors) {
  EXPECT_STATUS(GptConfig({.dim = 6, .heads = 4}).Validate(),
                absl::StatusCode::kInvalidArgument, "not divisible");
  EXPECT_STATUS(GptConfig({.vocab = 1}).Validate(),
                absl::StatusCode::kInvalidArgument, "vocab");
  auto meta = GptConfig{}.ToMetadata();
  EXPECT_TRUE(GptConfig::FromMetadata(meta).ok());
  meta["model"] = "toy";
  EXPECT_STATUS(GptConfig::FromMetadata(meta).status(),
                absl::StatusCode::kInvalidArgument, "expected gpt");
  meta["model"] = "gpt";
  meta["dim"] = "x";
  EXPECT_STATUS(GptConfig::FromMetadata(meta).status(),
                absl::StatusCode::kInvalidArgument, "'dim' is not an integer");
  Graph g;
  ASSERT_OK_AND_ASSIGN(
      Gpt model,
      Gpt::Create(g, {.block_size = 4, .dim = 4, .heads = 1, .layers = 1}));
  EXPECT_THAT(
      std::string(
          model(g.Input("t", DType::kInt64, {1, 5})).status().message()),
      ::testing::HasSubstr("T <= block_size 4"));
}

// A checkpoint's metadata may claim more layers than it holds: a 200-byte
// file saying layers=100000000 made generate, eval and export build that
// many layers (bad_alloc, or the OOM killer). Both models' configs check
// that the last layer was saved before anything is built.
TEST(Gpt, ACheckpointClaimingMoreLayersThanItHoldsIsRefused) {
  const Tensor one = Tensor::Scalar(1.0f);
  SafetensorsFile gpt{.tensors = {{"transformer.h.0.ln_1.weight", one}},
                      .metadata = GptConfig{.layers = 3}.ToMetadata()};
  EXPECT_STATUS(GptConfig::FromCheckpoint(gpt, "g.safetensors").status(),
                absl::StatusCode::kInvalidArgument,
                "g.safetensors: the metadata says layers=3, but the file holds no tensor "
                "transformer.h.2.*");
  gpt.tensors.push_back({"transformer.h.2.ln_1.weight", one});
  // With the last layer there, the file is checked against the whole model.
  EXPECT_STATUS(GptConfig::FromCheckpoint(gpt, "g.safetensors").status(),
                absl::StatusCode::kInvalidArgument, "missing (variables with no tensor): ");
  gpt.metadata["dim"] = "x";
  EXPECT_STATUS(GptConfig::FromCheckpoint(gpt, "g.safetensors").status(),
                absl::StatusCode::kInvalidArgument, "g.safetensors: checkpoint metadata");

  SafetensorsFile toy{.tensors = {{"encoder.layers.0.norm1.weight", one}},
                      .metadata = ToyConfig{.layers = 1000}.ToMetadata()};
  EXPECT_STATUS(ToyConfig::FromCheckpoint(toy, "t.safetensors").status(),
                absl::StatusCode::kInvalidArgument,
                "t.safetensors: the metadata says layers=1000, but the file holds no "
                "tensor encoder.layers.999.*");
  // Past the bound on layers, the count is refused before the tensors are looked at.
  toy.metadata["layers"] = "100000000";
  EXPECT_STATUS(ToyConfig::FromCheckpoint(toy, "t.safetensors").status(),
                absl::StatusCode::kInvalidArgument,
                "t.safetensors: model config: layers must be <= 1024, got 100000000");
}

}  // namespace
}  // namespace dagrad::models
